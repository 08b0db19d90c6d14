//! `limitlab attack`: the worst cases it finds with a fixed seed and a modest budget (at least 1.95
//! for the sliding window counter, 2.0 for the fixed window, about 2 for a token bucket of capacity
//! L, never above 1.0 for the sliding log), byte-identical output and files from run to run, traces
//! that `limitlab run` replays to the same figures, and errors without panics.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn limitlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_limitlab")).args(args).output().expect("the binary runs")
}

/// A scratch directory of this test process.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("limitlab-attack-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs an attack (limit 100 per second, budget 300, seed 7) with JSON output into `dir`.
fn attack(script: &str, dir: &Path, extra: &[&str]) -> Value {
    let d = dir.to_str().unwrap();
    let mut args = vec![
        "attack",
        "--script",
        script,
        "--limit",
        "100",
        "--window",
        "1000",
        "--budget",
        "300",
        "--seed",
        "7",
        "--iterations",
        "200",
        "--out",
        d,
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = limitlab(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script}: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{script}: {e}"))
}

fn overshoot(r: &Value) -> f64 {
    r["results"][0]["overshoot"].as_f64().unwrap()
}

#[test]
fn the_worst_cases_reach_the_known_bounds() {
    let dir = scratch("bounds");
    // (script, at least, at most)
    let cases = [
        ("sliding_window", 1.95, 2.0),
        ("fixed_window", 2.0, 2.0),
        ("token_bucket", 1.95, 2.0),
        ("gcra", 1.95, 2.0),
        ("sliding_log", 1.0, 1.0),
        ("seed_sliding_window", 1.95, 2.0),
        ("seed_fixed_window", 2.0, 2.0),
        ("seed_token_bucket", 1.95, 2.0),
        ("seed_sliding_log", 1.0, 1.0),
    ];
    for (script, lo, hi) in cases {
        let r = attack(script, &dir, &[]);
        let o = overshoot(&r);
        assert!(o >= lo && o <= hi, "{script}: overshoot {o}, expected {lo} to {hi}");
        for g in r["results"].as_array().unwrap() {
            assert_eq!(g["model_agrees"], Value::Bool(true), "{script}: {g}");
            assert!(g["requests"].as_u64().unwrap() <= 300, "{script}: over budget");
            assert_eq!(g["retry_wrong"].as_u64(), Some(0), "{script}: {g}");
        }
        let fr = &r["results"][1];
        assert_eq!(fr["goal"], "false_rejections");
        if script.ends_with("sliding_log") {
            assert_eq!(fr["false_rejections"].as_u64(), Some(0), "{script}: an exact log never falsely rejects");
        } else {
            assert!(fr["false_rejection_rate"].as_f64().unwrap() > 0.3, "{script}: {fr}");
        }
    }
    // A token bucket's capacity sets the burst: capacity 150 at rate 100 per second gives 2.49.
    let r = attack("token_bucket", &dir, &["--burst", "150"]);
    assert_eq!(overshoot(&r), 2.49);
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    let dir = scratch("determinism");
    let d = dir.to_str().unwrap();
    let args = [
        "attack",
        "--script",
        "sliding_window",
        "--limit",
        "50",
        "--window",
        "1000",
        "--budget",
        "150",
        "--seed",
        "3",
        "--iterations",
        "150",
        "--out",
        d,
    ];
    let files = [
        "attack_sliding_window_overshoot.csv",
        "attack_sliding_window_overshoot.toml",
        "attack_sliding_window_false_rejections.csv",
        "attack_sliding_window_false_rejections.toml",
        "attack_sliding_window.svg",
        "attack_sliding_window.png",
    ];
    let first = limitlab(&args);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let saved: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(dir.join(f)).unwrap()).collect();
    let second = limitlab(&args);
    assert_eq!(String::from_utf8_lossy(&first.stdout), String::from_utf8_lossy(&second.stdout));
    for (f, before) in files.iter().zip(saved) {
        assert!(!before.is_empty(), "{f} is empty");
        assert!(std::fs::read(dir.join(f)).unwrap() == before, "{f} differs between runs");
    }
    let text = String::from_utf8_lossy(&first.stdout);
    assert!(
        text.starts_with("limitlab attack: sliding_window, limit 50 per 1000 ms, budget 150 requests, seed 3\n"),
        "{text}"
    );
    assert!(text.contains("Highest overshoot: 1.98 (99 admitted in the 1000 ms from "), "{text}");
    // Another seed runs its own search, and still finds the worst case.
    let other = limitlab(&[&args[..10], &["4"], &args[11..]].concat());
    let text = String::from_utf8_lossy(&other.stdout);
    assert!(text.contains("seed 4\n") && text.contains("Highest overshoot: 1.98 "), "{text}");
}

#[test]
fn saved_patterns_replay_with_run() {
    let dir = scratch("replay");
    for script in ["fixed_window", "sliding_window"] {
        let r = attack(script, &dir, &[]);
        for g in r["results"].as_array().unwrap() {
            let scenario = g["scenario"].as_str().unwrap();
            assert!(g["trace"].as_str().unwrap().ends_with(".csv"));
            let out = limitlab(&["run", scenario, "--json"]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let run: Value = serde_json::from_slice(&out.stdout).unwrap();
            let m = &run["results"][0]["metrics"];
            assert_eq!(run["results"][0]["algorithm"], script);
            for (a, b) in [
                ("max_in_window", "max_in_window"),
                ("false_rejections", "false_rejections"),
                ("false_allows", "false_allows"),
                ("requests", "calls"),
                ("admitted", "allowed_units"),
            ] {
                assert_eq!(g[a], m[b], "{script} {}: {a}", g["goal"]);
            }
        }
    }
}

#[test]
fn bad_arguments_are_errors_not_panics() {
    let dir = scratch("errors");
    let d = dir.to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["--script", "leaky", "--limit", "10", "--window", "1000"],
            "unknown algorithm `leaky`; valid names: fixed_window",
        ),
        (&["--script", "fixed_window", "--limit", "0", "--window", "1000"], "command line: field `--limit`"),
        (&["--script", "fixed_window", "--limit", "10", "--window", "1000", "--budget", "0"], "field `budget`"),
        (
            &["--script", "fixed_window", "--limit", "10", "--window", "1000", "--burst", "5"],
            "command line: field `--burst`",
        ),
    ];
    for (args, want) in cases {
        let all = [&["attack"][..], args, &["--out", d]].concat();
        let out = limitlab(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(out.stdout.is_empty());
    }
}

/// The example committed under simulations/ replays to the figures docs/accuracy.md quotes.
#[test]
fn the_committed_example_replays() {
    let root = env!("CARGO_MANIFEST_DIR");
    for (file, max_in_window, false_rejections) in
        [("attack_sliding_window_overshoot.toml", 199, 0), ("attack_sliding_window_false_rejections.toml", 100, 100)]
    {
        let path = format!("{root}/simulations/{file}");
        let out = limitlab(&["run", &path, "--json"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let run: Value = serde_json::from_slice(&out.stdout).unwrap();
        let m = &run["results"][0]["metrics"];
        assert_eq!(m["max_in_window"].as_u64(), Some(max_in_window), "{file}");
        assert_eq!(m["false_rejections"].as_u64(), Some(false_rejections), "{file}");
    }
}
