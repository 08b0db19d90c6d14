//! Progress on stderr: shown at a terminal (a pseudo-terminal made by `script`), never when
//! stderr is piped or the report is JSON; piped runs stay silent and byte-identical.
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_limitlab");

fn limitlab(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("the binary runs")
}

const ATTACK: [&str; 9] =
    ["attack", "--script", "token_bucket", "--limit", "100", "--window", "1000", "--iterations", "300"];

#[test]
fn piped_runs_are_silent_and_byte_identical() {
    let dir = super::common::TempDir::new("progress-piped");
    let out = ["--out", dir.path()];
    let runs: [Vec<&str>; 4] = [
        [&ATTACK[..], &out[..]].concat(),
        vec!["sweep", "simulations/boundary_burst.toml", "--seeds", "1..30", "--jobs", "2"],
        vec!["run", "simulations/boundary_burst.toml"],
        [&["check", "gcra", "--no-timing"][..], &out[..]].concat(),
    ];
    for args in &runs {
        let first = limitlab(args);
        assert!(first.status.success(), "{args:?}: {}", String::from_utf8_lossy(&first.stderr));
        assert_eq!(String::from_utf8_lossy(&first.stderr), "", "{args:?}");
        let second = limitlab(args);
        assert_eq!(first.stdout, second.stdout, "{args:?}");
        assert!(second.stderr.is_empty(), "{args:?}");
    }
}

/// `script` runs the command on a pseudo-terminal; stdout goes to /dev/null, so what comes back is
/// stderr as a terminal shows it.
fn at_a_terminal(args: &[&str]) -> Option<String> {
    if Command::new("script").arg("--version").output().is_err() {
        println!("skipped: no `script` (util-linux) to make a pseudo-terminal");
        return None;
    }
    let line = format!("{BIN} {} >/dev/null", args.join(" "));
    let out = Command::new("script").args(["-qec", &line, "/dev/null"]).env("TERM", "xterm").output().unwrap();
    assert!(out.status.success(), "{line}: {}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn a_terminal_shows_progress_unless_the_report_is_json() {
    let dir = super::common::TempDir::new("progress-tty");
    let attack = [&ATTACK[..], &["--out", dir.path()][..]].concat();
    let Some(shown) = at_a_terminal(&attack) else { return };
    assert!(shown.contains("attack") && shown.contains("searching 300 patterns per goal"), "{shown:?}");
    let Some(json) = at_a_terminal(&[&attack[..], &["--json"][..]].concat()) else { return };
    assert_eq!(json, "", "progress with --json");
}
