//! Parallel runs from the binary: `sweep` over seeds, `compare --jobs`, `run --jobs/--stats`. The
//! output never depends on the number of threads, and a sweep's runs are the same runs `run`
//! makes seed by seed.
use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn limitlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_limitlab")).args(args).output().expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(args: &[&str]) -> Output {
    let out = limitlab(args);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    out
}

/// A small scenario with random timing, so seeds differ.
fn scenario() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("limitlab-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("poisson.toml");
    std::fs::write(
        &path,
        r#"name = "poisson"
description = "three users, Poisson traffic above the limit"
limit = 5
window_ms = 1000
algorithms = ["fixed_window", "sliding_window", "seed_token_bucket"]
seed = 3

[traffic]
kind = "poisson"
rate = 21.0
duration_ms = 4000
key = "u"
keys = 3
"#,
    )
    .unwrap();
    path
}

#[test]
fn a_sweep_is_the_same_whatever_the_thread_count_and_matches_run_seed_by_seed() {
    let file = scenario();
    let f = file.to_str().unwrap();
    let one = ok(&["sweep", f, "--seeds", "10..16", "--jobs", "1", "--json"]).stdout;
    let many = ok(&["sweep", f, "--seeds", "10..=15", "--jobs", "4", "--json"]).stdout;
    assert_eq!(text(&one), text(&many));
    let r: Value = serde_json::from_slice(&one).unwrap();
    assert_eq!(r["first_seed"], 10);
    assert_eq!(r["seeds"], 6);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 6 * 3);

    // Every run is what `run --seed` reports for that seed.
    for seed in [10u64, 13] {
        let single: Value =
            serde_json::from_slice(&ok(&["run", f, "--seed", &seed.to_string(), "--json"]).stdout).unwrap();
        for res in single["results"].as_array().unwrap() {
            let alg = res["algorithm"].as_str().unwrap();
            let m = &res["metrics"];
            let x = runs.iter().find(|x| x["seed"] == seed && x["algorithm"] == alg).unwrap();
            for k in ["calls", "allowed_units", "overshoot", "false_allows", "false_rejections"] {
                assert_eq!(x[k], m[k], "seed {seed} {alg} {k}");
            }
        }
    }

    // The summary rows are the mean, min and max of the runs.
    for row in r["rows"].as_array().unwrap() {
        let alg = row["algorithm"].as_str().unwrap();
        let fa: Vec<f64> = runs.iter().filter(|x| x["algorithm"] == alg).map(|x| x["false_allows"].as_f64().unwrap()).collect();
        let (min, max) = fa.iter().fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        assert_eq!(row["false_allows"]["min"].as_f64(), Some(min), "{alg}");
        assert_eq!(row["false_allows"]["max"].as_f64(), Some(max), "{alg}");
        let mean = fa.iter().sum::<f64>() / fa.len() as f64;
        assert!((row["false_allows"]["mean"].as_f64().unwrap() - mean).abs() < 1e-9, "{alg}");
        assert_eq!(row["runs"], 6);
    }
    // Seeds do change the traffic.
    let calls: std::collections::BTreeSet<u64> = runs.iter().map(|x| x["calls"].as_u64().unwrap()).collect();
    assert!(calls.len() > 1, "{calls:?}");

    let t = text(&ok(&["sweep", f, "--seeds", "10..12"]).stdout);
    assert!(t.starts_with("Sweep, poisson: three users, Poisson traffic above the limit (limit 5 per 1,000 ms), seeds 10 to 11 (2 runs per script)\n"), "{t}");
    assert!(t.contains("\nfixed_window ") && t.contains("\nseed_token_bucket "), "{t}");
}

#[test]
fn sweep_errors_are_user_errors() {
    let file = scenario();
    let f = file.to_str().unwrap();
    for (seeds, needle) in [("5..5", "B must be above A"), ("x", "is not a seed"), ("0..9999999", "at most")] {
        let out = limitlab(&["sweep", f, "--seeds", seeds]);
        assert_eq!(out.status.code(), Some(2), "{seeds}");
        let e = text(&out.stderr);
        assert!(e.contains(needle) && !e.contains("panicked"), "{seeds}: {e}");
    }
    let out = limitlab(&["sweep", "no/such/file.toml", "--seeds", "1..3"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn compare_is_byte_identical_whatever_the_thread_count() {
    let a = ok(&["compare", "--no-timing", "--jobs", "1"]).stdout;
    let b = ok(&["compare", "--no-timing", "--jobs", "3"]).stdout;
    let c = ok(&["compare", "--no-timing"]).stdout;
    assert_eq!(text(&a), text(&b));
    assert_eq!(text(&a), text(&c));
    let j1 = ok(&["compare", "--no-timing", "--json", "--jobs", "1"]).stdout;
    let j4 = ok(&["compare", "--no-timing", "--json", "--jobs", "4"]).stdout;
    assert_eq!(text(&j1), text(&j4));
}

#[test]
fn run_reports_the_same_on_any_thread_count_and_stats_go_to_stderr() {
    let file = scenario();
    let f = file.to_str().unwrap();
    let plain = ok(&["run", f]);
    let one = ok(&["run", f, "--jobs", "1"]);
    let stats = ok(&["run", f, "--jobs", "2", "--stats"]);
    assert_eq!(text(&plain.stdout), text(&one.stdout));
    assert_eq!(text(&plain.stdout), text(&stats.stdout));
    let e = text(&stats.stderr);
    assert!(e.starts_with("stats: 3 script(s) x "), "{e}");
    assert!(e.contains(" s wall") && e.contains("on 2 thread(s)"), "{e}");
    if std::path::Path::new("/proc/self/status").exists() {
        assert!(e.contains("peak RSS ") && e.contains(" MB (VmHWM)") && e.contains(" s CPU"), "{e}");
    }
    assert!(text(&plain.stderr).is_empty());
}
