//! The `limitlab` binary: parse the command line, run it, map errors to exit codes.
use std::process::ExitCode;

use clap::Parser;
use limitlab::cli::{exit_code, execute, Cli};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match execute(cli, &mut out).map_err(anyhow::Error::new) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let code = e.downcast_ref::<limitlab::Error>().map_or(1, exit_code);
            eprintln!("limitlab: {e:#}");
            ExitCode::from(code as u8)
        }
    }
}
