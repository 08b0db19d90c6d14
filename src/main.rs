//! The `limitlab` binary: parse the command line, run it, map errors to exit codes.
use std::process::ExitCode;

use clap::Parser;
use limitlab_cli::cli::{execute, Cli};

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
            let code = e.downcast_ref::<limitlab::Error>().map_or(1, limitlab::Error::exit_code);
            eprintln!("limitlab: {}", one_line(&e));
            ExitCode::from(code as u8)
        }
    }
}

/// The error and its causes on one line, `error: cause: cause`, each text once. `{e:#}` would append
/// every source, but [`limitlab::Error`]'s messages already end with theirs (`Error::Io` prints
/// `PATH: SOURCE` and returns SOURCE as its source), which printed it twice; a cause the line already
/// ends with is left out.
fn one_line(e: &anyhow::Error) -> String {
    let mut line = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !line.ends_with(&cause) {
            line.push_str(": ");
            line.push_str(&cause);
        }
    }
    line
}
