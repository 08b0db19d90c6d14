//! Bad values get an error naming where they are and why (issue 36, item 9): a window out of
//! range at its line as `policy.window_ms`, a flag's value blamed on the flag, a negative trace
//! time at its line, a name longer than reports and file names can use.
use std::path::Path;
use std::process::Command;

use super::common::TempDir;

/// Runs limitlab in `dir`; (exit status, stderr).
fn fails(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_limitlab")).current_dir(dir).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn shipped(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts").join(name)).unwrap()
}

#[test]
fn values_out_of_range_are_named_with_their_file_line_and_reason() {
    let dir = TempDir::new("input-errors");
    let d = &dir.0;
    std::fs::write(d.join("sliding_window.lua"), shipped("sliding_window.lua")).unwrap();
    std::fs::write(d.join("fixed_window.lua"), shipped("fixed_window.lua")).unwrap();

    // A window too long for the script's arithmetic: the window's line, not `limit`.
    let sw = shipped("sliding_window.toml").replace("window_ms = 1000\n", "window_ms = 100000000000000\n");
    std::fs::write(d.join("sw.toml"), &sw).unwrap();
    let line = 1 + sw.lines().position(|l| l.starts_with("window_ms = 100000000000000")).unwrap();
    assert_eq!(
        fails(d, &["check", "sw.toml"]),
        (
            Some(2),
            format!(
                "limitlab: sw.toml:{line}: field `policy.window_ms`: limit * window_ms must not exceed 2^50: with \
                 limit 100, window_ms is at most 11258999068426\n"
            )
        )
    );
    // A window beyond every script's range, in a spec without a model.
    let user = shipped("fixed_window.toml")
        .replace("window_ms = 1000\n", "window_ms = 1000000000000000\n")
        .replace("model = \"fixed_window\"", "# no model");
    std::fs::write(d.join("fw.toml"), &user).unwrap();
    let line = 1 + user.lines().position(|l| l.starts_with("window_ms = 1000000000000000")).unwrap();
    assert_eq!(
        fails(d, &["check", "fw.toml"]),
        (
            Some(2),
            format!(
                "limitlab: fw.toml:{line}: field `policy.window_ms`: must be at most 999999999999999, got \
                 1000000000000000\n"
            )
        )
    );

    // A flag's value is the flag's mistake.
    assert_eq!(
        fails(d, &["check", "fixed_window", "--limit", "0"]),
        (
            Some(2),
            "limitlab: command line: field `--limit`: 0 is not an integer from 1 to 999999999999999 (for \
             fixed_window)\n"
                .to_string()
        )
    );

    // A negative trace time.
    std::fs::write(d.join("neg.csv"), "time,key\n1,a\n-1,b\n").unwrap();
    std::fs::write(
        d.join("neg.toml"),
        "name = \"neg\"\nlimit = 10\nwindow_ms = 1000\nalgorithms = [\"fixed_window\"]\n[traffic]\nkind = \"trace\"\npath = \"neg.csv\"\n",
    )
    .unwrap();
    assert_eq!(
        fails(d, &["run", "neg.toml"]),
        (
            Some(2),
            "limitlab: neg.csv:3: time `-1` is negative (before 1970-01-01); times count from the epoch, from 0\n"
                .to_string()
        )
    );

    // A 10 MB name, in a spec and in a scenario.
    let fw = shipped("fixed_window.toml");
    let long = "x".repeat(10_000_000);
    std::fs::write(d.join("long.toml"), fw.replace("name = \"fixed_window\"", &format!("name = \"{long}\""))).unwrap();
    let line = 1 + fw.lines().position(|l| l.starts_with("name = ")).unwrap();
    assert_eq!(
        fails(d, &["check", "long.toml"]),
        (
            Some(2),
            format!(
                "limitlab: long.toml:{line}: field `name`: is 10000000 bytes long; at most 200 (reports and file \
                 names use it)\n"
            )
        )
    );
    let uniform =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("simulations/uniform.toml")).unwrap();
    let line = 1 + uniform.lines().position(|l| l.starts_with("name = ")).unwrap();
    std::fs::write(d.join("long_scenario.toml"), uniform.replace("name = \"uniform\"", &format!("name = \"{long}\"")))
        .unwrap();
    assert_eq!(
        fails(d, &["run", "long_scenario.toml"]),
        (
            Some(2),
            format!(
                "limitlab: long_scenario.toml:{line}: field `name`: is 10000000 bytes long; at most 200 (reports \
                 and file names use it)\n"
            )
        )
    );
}
