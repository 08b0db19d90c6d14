//! The `limitlab` binary: parse the command line, run it, map errors to exit codes.
use std::process::ExitCode;

use clap::Parser;
use limitlab::cli::{execute, exit_code, Cli};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match execute(cli, &mut out).map_err(anyhow::Error::new) {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that stops early (`limitlab compare | head`) is not a failure.
        Err(e) if matches!(e.downcast_ref::<limitlab::Error>(), Some(limitlab::Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe) => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            let code = e.downcast_ref::<limitlab::Error>().map_or(1, exit_code);
            eprintln!("limitlab: {e:#}");
            ExitCode::from(code as u8)
        }
    }
}
