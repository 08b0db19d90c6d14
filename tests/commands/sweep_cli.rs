//! Parallel runs from the binary: `sweep` over seeds, `compare --jobs`, `run --jobs/--stats`. The
//! output never depends on the number of threads, and a sweep's runs are the same runs `run`
//! makes seed by seed, promises (retry_after, headers) judged alike for a user's spec.
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
        let fa: Vec<f64> =
            runs.iter().filter(|x| x["algorithm"] == alg).map(|x| x["false_allows"].as_f64().unwrap()).collect();
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
    assert!(
        t.starts_with(
            "Sweep, poisson: three users, Poisson traffic above the limit (limit 5 per 1,000 ms), seeds 10 to 11 (2 runs per script)\n"
        ),
        "{t}"
    );
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
    assert!(e.contains(" s wall") && e.contains(", 2 thread(s) per script"), "{e}");
    if std::path::Path::new("/proc/self/status").exists() {
        assert!(e.contains("peak RSS ") && e.contains(" MB (VmHWM)") && e.contains(" s CPU"), "{e}");
    }
    assert!(text(&plain.stderr).is_empty());
}

/// A fixed window opened by the first hit (reply `{hits, pttl}`) and a spec of it whose wait is the
/// key's PTTL plus `off` ms: exact with 1, 1 ms short with 0 (Redis keeps a key through the ms its
/// expiry names), which `check` fails on retry_after.
fn counter_spec(name: &str, off: i64) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("limitlab-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("counter.lua"),
        "local hits = redis.call('INCRBY', KEYS[1], ARGV[2])\n\
         if hits == tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end\n\
         return {hits, redis.call('PTTL', KEYS[1])}\n",
    )
    .unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "name = \"{name}\"\nfamily = \"fixed_window\"\n\n[policy]\nlimit = 10\nwindow_ms = 1000\n\n\
             [scripts]\nmain = \"counter.lua\"\n\n[vars]\noff = {off}\n\n\
             [[call]]\nname = \"r\"\nscript = \"main\"\nkeys = [\"c:{{${{subject}}}}\"]\nargs = [\"${{window_ms}}\", \"${{cost}}\"]\n\n\
             [decision]\nallowed = \"r[1] <= limit\"\nremaining = \"max(limit - r[1], 0)\"\n\
             retry_after_ms = \"cost <= limit and r[2] + off or nil\"\nreset_ms = \"r[2] + off\"\n"
        ),
    )
    .unwrap();
    path
}

#[test]
fn a_sweep_judges_a_users_spec_as_run_and_check_do() {
    let file = scenario();
    let f = file.to_str().unwrap();
    let (short, exact) = (counter_spec("pttl_short", 0), counter_spec("pttl_exact", 1));
    let (short, exact) = (short.to_str().unwrap(), exact.to_str().unwrap());
    let scripts = ["--script", short, "--script", exact, "--script", "fixed_window"];
    let r: Value =
        serde_json::from_slice(&ok(&[&["sweep", f, "--seeds", "3..6", "--json"][..], &scripts].concat()).stdout)
            .unwrap();
    let rows = r["rows"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|x| x["algorithm"].as_str().unwrap()).collect();
    assert_eq!(names, ["pttl_short", "pttl_exact", "fixed_window"]);
    // The totals are the sums of what `run --seed` judges, seed by seed.
    for (i, row) in rows.iter().enumerate() {
        let mut sums = [0u64; 4];
        for seed in 3..6 {
            let single: Value = serde_json::from_slice(
                &ok(&[&["run", f, "--seed", &seed.to_string(), "--json"][..], &scripts].concat()).stdout,
            )
            .unwrap();
            let m = &single["results"][i]["metrics"];
            for (s, k) in sums.iter_mut().zip(["retry_checked", "retry_wrong", "headers_checked", "headers_wrong"]) {
                *s += m[k].as_u64().unwrap();
            }
        }
        let got: Vec<u64> = ["retry_checked", "retry_wrong", "headers_checked", "headers_wrong"]
            .iter()
            .map(|k| row[*k].as_u64().unwrap())
            .collect();
        assert_eq!(got, sums, "{}", names[i]);
        assert!(sums[0] > 0 && sums[2] > 0, "{}: judged, not `-`", names[i]);
    }
    // check's verdict: the short wait is wrong every time, the exact one and the built-in never.
    assert_eq!(rows[0]["retry_wrong"], rows[0]["retry_checked"]);
    assert!(rows[0]["headers_wrong"].as_u64() > Some(0));
    for row in &rows[1..] {
        assert_eq!((row["retry_wrong"].as_u64(), row["headers_wrong"].as_u64()), (Some(0), Some(0)), "{row}");
    }
    let t = text(&ok(&[&["sweep", f, "--seeds", "3..6"][..], &scripts].concat()).stdout);
    let line = t.lines().find(|l| l.starts_with("pttl_short ")).unwrap();
    let n = rows[0]["retry_checked"].as_u64().unwrap();
    assert!(line.contains(&format!("{n} of {n}")), "{line}");
    assert!(!line.split_whitespace().any(|c| c == "-"), "{line}");
}
