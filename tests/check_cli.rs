//! `limitlab check` on every fixture spec in tests/fixtures/: the verdicts a careful reviewer gives
//! (the broken ones fail for the right reason, with evidence), the output formats, the exit status,
//! determinism and the replayable traces of failures.
mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

fn limitlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_limitlab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("limitlab runs")
}


/// (fixture file stem, the checks that must fail and nothing else, a phrase the first failing
/// check's evidence or summary must hold)
const BROKEN: [(&str, &[&str], &str); 6] = [
    ("fixed_window_no_ttl", &["ttl"], "with no TTL"),
    ("scg_token_bucket_seconds", &["overshoot"], "above the bound 1.999"),
    ("sliding_log_counts_refusals", &["false_rejections", "retry_after"], "under sustained overload"),
    ("sliding_log_off_by_one", &["overshoot"], "worst 1.10"),
    ("sliding_window_crossslot", &["cluster"], "CROSSSLOT"),
    ("sliding_window_short_ttl", &["ttl"], "expired while it was still needed"),
];

fn report(spec: &Path) -> (serde_json::Value, Option<i32>) {
    let out = limitlab(&["check", spec.to_str().unwrap(), "--json", "--no-save", "--no-timing"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", spec.display(), String::from_utf8_lossy(&out.stderr)));
    (v, out.status.code())
}

#[test]
fn every_fixture_gets_the_verdict_a_reviewer_would_give() {
    let all = common::fixture_specs();
    assert!(all.len() >= 13, "{} fixtures", all.len());
    for spec in &all {
        let stem = spec.file_stem().unwrap().to_str().unwrap();
        let (v, code) = report(spec);
        let checks = v["checks"].as_array().unwrap();
        let failed: BTreeSet<&str> =
            checks.iter().filter(|c| c["status"] == "fail").map(|c| c["name"].as_str().unwrap()).collect();
        let names: BTreeSet<&str> = checks.iter().map(|c| c["name"].as_str().unwrap()).collect();
        for n in ["errors", "overshoot", "false_rejections", "remaining", "retry_after", "headers", "ttl", "clock_skew", "cluster", "memory"] {
            assert!(names.contains(n), "{stem}: no `{n}` check");
        }
        match BROKEN.iter().find(|b| b.0 == stem) {
            Some((_, want, phrase)) => {
                assert_eq!(failed, want.iter().copied().collect::<BTreeSet<_>>(), "{stem}: {v:#}");
                assert_eq!(code, Some(1), "{stem}: a failed check exits 1");
                let first = checks.iter().find(|c| c["name"] == want[0]).unwrap();
                let text = format!("{} {}", first["summary"], first["evidence"]);
                assert!(text.contains(phrase), "{stem}: `{phrase}` not in {text}");
            }
            None => {
                assert!(failed.is_empty(), "{stem} should pass every check, failed {failed:?}: {v:#}");
                assert_eq!(code, Some(0), "{stem}");
            }
        }
    }
}

#[test]
fn the_shipped_scripts_pass_through_the_same_path() {
    for name in ["fixed_window", "gcra", "seed_sliding_log"] {
        let out = limitlab(&["check", name, "--limit", "10", "--window", "1000", "--no-save", "--no-timing"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{name}:\n{text}");
        assert!(text.contains("PASS overshoot"), "{text}");
    }
}

#[test]
fn the_crossslot_evidence_names_both_keys_and_their_slots() {
    let (v, _) = report(Path::new("tests/fixtures/sliding_window_crossslot.toml"));
    let c = v["checks"].as_array().unwrap().iter().find(|c| c["name"] == "cluster").unwrap();
    let e = c["evidence"][0].as_str().unwrap();
    assert!(e.contains("(slot ") && e.matches("`rl:").count() == 2, "{e}");
}

#[test]
fn same_seed_same_bytes_and_junit_for_ci() {
    let spec = "tests/fixtures/sliding_log_off_by_one.toml";
    let a = limitlab(&["check", spec, "--no-save", "--no-timing", "--seed", "3"]);
    let b = limitlab(&["check", spec, "--no-save", "--no-timing", "--seed", "3"]);
    assert_eq!(a.stdout, b.stdout);
    assert!(!a.stdout.is_empty());
    let j = limitlab(&["check", spec, "--no-save", "--no-timing", "--junit"]);
    let x = String::from_utf8(j.stdout).unwrap();
    assert!(x.starts_with("<?xml"), "{x}");
    assert_eq!(x.matches("<testcase ").count(), x.matches("</testcase>").count());
    assert_eq!(x.matches("<failure ").count(), 1, "{x}");
    assert!(x.contains("failures=\"1\""), "{x}");
    assert_eq!(j.status.code(), Some(1));
}

#[test]
fn bad_input_exits_2_with_file_line_and_field() {
    let dir = std::env::temp_dir().join(format!("limitlab_check_bad_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spec = dir.join("bad.toml");
    std::fs::write(&spec, "name = \"x\"\n[policy]\nlimit = 10\nwindow_ms = 1000\n[scripts]\nmain = \"x.lua\"\n").unwrap();
    let out = limitlab(&["check", spec.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:6: field `scripts.main`: cannot read"), "{err}");
    let out = limitlab(&["check", "no_such_limiter"]);
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_failure_leaves_a_trace_that_run_replays() {
    let dir = std::env::temp_dir().join(format!("limitlab_check_out_{}", std::process::id()));
    let out = limitlab(&["check", "tests/fixtures/sliding_log_off_by_one.toml", "--no-timing", "--out", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let scenario = dir.join("check_sliding_log_off_by_one_overshoot.toml");
    assert!(scenario.exists(), "{}", String::from_utf8_lossy(&out.stdout));
    let replay = limitlab(&["run", scenario.to_str().unwrap(), "--json"]);
    assert!(replay.status.success(), "{}", String::from_utf8_lossy(&replay.stderr));
    let v: serde_json::Value = serde_json::from_slice(&replay.stdout).unwrap();
    let m = &v["results"][0]["metrics"];
    assert_eq!(m["max_in_window"], 11, "{v:#}");
    std::fs::remove_dir_all(&dir).ok();
}
