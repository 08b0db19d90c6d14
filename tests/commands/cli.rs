//! The `limitlab` binary: errors name the file, the field and the reason and exit non-zero without a
//! panic; `compare` prints the seed's table with its figures; output is byte-identical run to run.
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn limitlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_limitlab")).args(args).output().expect("the binary runs")
}

fn with_stdin(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_limitlab"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A scratch directory of this test process.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("limitlab-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes a scenario file and runs `limitlab run` on it; returns (path, exit code, stderr).
fn run_file(name: &str, body: &str) -> (String, i32, String) {
    let path = scratch(name).join(format!("{name}.toml"));
    std::fs::write(&path, body).unwrap();
    let out = limitlab(&["run", path.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing on stdout for a failed run");
    (path.display().to_string(), out.status.code().unwrap_or(-1), stderr)
}

const GOOD: &str = r#"name = "t"
description = "a test"
limit = 10
window_ms = 1000
algorithms = ["fixed_window", "seed_sliding_log"]

[traffic]
kind = "uniform"
rate = 20.0
duration_ms = 2000
"#;

#[test]
fn a_good_file_runs() {
    let path = scratch("good").join("good.toml");
    std::fs::write(&path, GOOD).unwrap();
    let out = limitlab(&["run", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(s.starts_with("scenario t: a test\nlimit 10 per 1000 ms, seed 0, 40 arrivals, 1 subject"), "{s}");
    assert!(s.lines().any(|l| l.starts_with("fixed_window ")), "{s}");
    assert!(s.lines().any(|l| l.starts_with("seed_sliding_log ")), "{s}");
}

#[test]
fn malformed_toml_names_the_file_and_line() {
    let (path, code, err) = run_file("malformed", &GOOD.replace("window_ms = 1000", "window_ms = = 1000"));
    assert_eq!(code, 2);
    assert!(err.starts_with(&format!("limitlab: {path}:4: ")), "{err}");
}

#[test]
fn an_unknown_algorithm_is_named_with_the_valid_ones() {
    let (path, code, err) = run_file("unknown", &GOOD.replace("\"fixed_window\"", "\"leaky_bucket\""));
    assert_eq!(code, 2);
    assert!(
        err.starts_with(&format!(
            "limitlab: {path}:5: field `algorithms`: unknown algorithm `leaky_bucket`; valid names: fixed_window, "
        )),
        "{err}"
    );
}

#[test]
fn a_zero_limit_and_a_negative_window_are_refused() {
    let (path, code, err) = run_file("zero", &GOOD.replace("limit = 10", "limit = 0"));
    assert_eq!(code, 2);
    assert_eq!(err, format!("limitlab: {path}:3: field `limit`: must be a positive integer, got 0\n"));
    let (path, code, err) = run_file("negative", &GOOD.replace("window_ms = 1000", "window_ms = -1000"));
    assert_eq!(code, 2);
    assert_eq!(err, format!("limitlab: {path}:4: field `window_ms`: must be a positive integer, got -1000\n"));
}

#[test]
fn unknown_fields_and_bad_traffic_are_refused() {
    let (path, code, err) = run_file("field", &format!("colour = \"red\"\n{GOOD}"));
    assert_eq!(code, 2);
    assert!(err.starts_with(&format!("limitlab: {path}:1: unknown field `colour`")), "{err}");
    let (path, code, err) = run_file("traffic", &GOOD.replace("rate = 20.0", "rate = 0.0"));
    assert_eq!(code, 2);
    assert!(err.starts_with(&format!("limitlab: {path}:7: [traffic]")) && err.contains("field `rate`"), "{err}");
}

#[test]
fn a_missing_file_is_named() {
    let out = limitlab(&["run", "no/such/scenario.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.starts_with("limitlab: no/such/scenario.toml: "), "{err}");
}

/// An I/O error is printed once: the path, then the OS's reason, never the reason twice (the error's
/// message already ends with its source, which the chain printer used to append again).
#[test]
fn an_io_error_prints_its_reason_once() {
    let out = limitlab(&["run", "/nonexistent.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr), "limitlab: /nonexistent.toml: No such file or directory (os error 2)\n");
    let dir = scratch("io-dir");
    let out = limitlab(&["run", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr), format!("limitlab: {}: Is a directory (os error 21)\n", dir.display()));
}

#[test]
fn bad_arguments_are_usage_errors() {
    let out = limitlab(&["run", "simulations/uniform.toml", "--json", "--markdown"]);
    assert_eq!(out.status.code(), Some(2));
    let out = limitlab(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    let out = limitlab(&["cli", "--at", "-5"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(!text(&out.stderr).contains("panicked"));
}

#[test]
fn compare_prints_the_seed_table_with_the_seed_figures_identically_every_time() {
    let a = limitlab(&["compare", "--no-timing"]);
    assert!(a.status.success(), "{}", text(&a.stderr));
    let s = text(&a.stdout);
    let row = |name: &str| {
        s.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} row in\n{s}")).to_string()
    };
    let cells =
        |l: String| l.split("  ").map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect::<Vec<_>>();
    assert!(s.starts_with("The boundary bug, measured: limit 100 per 1000 ms"), "{s}");
    assert_eq!(
        cells(row("seed_fixed_window")),
        ["seed_fixed_window (Fixed window)", "100", "100", "200", "200", "100 + 100 = 200"]
    );
    assert_eq!(
        cells(row("seed_sliding_log")),
        ["seed_sliding_log (Sliding log)", "100", "0", "100", "100", "100 + 0 = 100"]
    );
    assert_eq!(
        cells(row("seed_sliding_window")),
        ["seed_sliding_window (Sliding window)", "100", "2", "102", "102", "100 + 2 = 102"]
    );
    assert_eq!(
        cells(row("seed_token_bucket")),
        ["seed_token_bucket (Token bucket)", "101", "14", "115", "115", "101 + 14 = 115"]
    );
    for section in ["Accuracy, boundary_burst", "Accuracy, idle_then_burst", "Accuracy, uniform", "Memory per user"] {
        assert!(s.contains(section), "{section}");
    }
    assert!(!s.contains("Decisions/s"), "--no-timing leaves the wall clock out");
    let b = limitlab(&["compare", "--no-timing"]);
    assert_eq!(a.stdout, b.stdout, "byte-identical");

    let md = text(&limitlab(&["compare", "--no-timing", "--markdown"]).stdout);
    assert!(md.contains("| seed_token_bucket (Token bucket) | 101 | 14 | 115 | 115 | 101 + 14 = 115 |"), "{md}");
    let json: serde_json::Value =
        serde_json::from_slice(&limitlab(&["compare", "--no-timing", "--json"]).stdout).unwrap();
    let tb = json["boundary"].as_array().unwrap().iter().find(|r| r["algorithm"] == "seed_token_bucket").unwrap();
    assert_eq!(
        (tb["end_of_window"].as_u64(), tb["start_of_next"].as_u64(), tb["total"].as_u64()),
        (Some(101), Some(14), Some(115))
    );

    let timed = text(&limitlab(&["compare"]).stdout);
    assert!(timed.contains("Decisions/s (emulator)"), "{timed}");
}

#[test]
fn run_is_byte_identical_for_the_same_seed_in_every_format() {
    for fmt in [&[][..], &["--json"][..], &["--markdown"][..]] {
        let mut args = vec!["run", "simulations/uniform.toml", "--seed", "7"];
        args.extend_from_slice(fmt);
        let a = limitlab(&args);
        assert!(a.status.success(), "{}", text(&a.stderr));
        assert_eq!(a.stdout, limitlab(&args).stdout, "{fmt:?}");
    }
    let json: serde_json::Value =
        serde_json::from_slice(&limitlab(&["run", "simulations/boundary_burst.toml", "--json"]).stdout).unwrap();
    assert_eq!(json["scenario"], "boundary_burst");
    assert_eq!(json["results"].as_array().unwrap().len(), 9);
}

#[test]
fn cli_runs_redis_commands_on_the_emulator_at_the_given_time() {
    let out = with_stdin(&["cli", "--at", "1700000000000"], "SET a 1\nINCR a\nCLOCK.GET\nPING\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "OK\n2\n1700000000000\nPONG\n");
    let out = with_stdin(&["cli", "--cluster"], "MSET {a}x 1 {b}y 2\nCLOCK.GET\n");
    // redis-cli's raw mode ends an error reply with an empty line.
    assert_eq!(text(&out.stdout), "CROSSSLOT Keys in request don't hash to the same slot\n\n1704067200000\n");
}

#[test]
fn plot_writes_png_and_svg() {
    let dir = scratch("plot");
    let out = limitlab(&["plot", "--out", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let png = std::fs::read(dir.join("boundary_burst.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let svg = std::fs::read_to_string(dir.join("boundary_burst.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("seed_token_bucket"));
}
