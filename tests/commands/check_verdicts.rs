//! `check`'s verdicts on limiters written for issue 35's findings (tests/fixtures/verdicts/, our
//! own scripts in the style of the libraries named there): every check line says what it judged, a
//! PASS over nothing is a SKIP, a check fails only for what its own stimulus causes, spec mistakes
//! are bad input, and every Lua state runs under a budget.
use crate::common;

use std::path::Path;
use std::process::{Command, Output};

fn limitlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_limitlab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("limitlab runs")
}

fn verdicts(stem: &str) -> String {
    format!("{}/tests/fixtures/verdicts/{stem}.toml", env!("CARGO_MANIFEST_DIR"))
}

/// The JSON report and the exit status.
fn report(spec: &str, more: &[&str]) -> (serde_json::Value, Option<i32>) {
    let mut args = vec!["check", spec, "--json", "--no-save", "--no-timing"];
    args.extend_from_slice(more);
    let out = limitlab(&args);
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{spec}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    (v, out.status.code())
}

fn check<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no {name}: {v:#}"))
}

fn status(v: &serde_json::Value, name: &str) -> String {
    check(v, name)["status"].as_str().unwrap().to_string()
}

/// Every judged check carries its coverage; none passes over 0 cases.
fn assert_coverage(v: &serde_json::Value, what: &str) {
    for c in v["checks"].as_array().unwrap() {
        let st = c["status"].as_str().unwrap();
        if st == "info" {
            continue;
        }
        let cov = &c["coverage"];
        let cases = cov["cases"].as_u64().unwrap_or_else(|| panic!("{what}: {} has no coverage: {c:#}", c["name"]));
        if st == "pass" {
            assert!(cases > 0, "{what}: {} passed over 0 cases: {c:#}", c["name"]);
            assert!(!cov["dimensions"].as_array().unwrap().is_empty(), "{what}: {c:#}");
        }
    }
}

#[test]
fn every_check_line_states_its_coverage_and_none_passes_over_nothing() {
    // Item 7: retry_after is reported but nothing is ever refused: 0 values to judge is a SKIP.
    let (v, _) = report(&verdicts("never_refuses"), &[]);
    assert_eq!(status(&v, "retry_after"), "skip", "{v:#}");
    assert!(check(&v, "retry_after")["summary"].as_str().unwrap().contains("no case was judged"), "{v:#}");
    assert_coverage(&v, "never_refuses");
    for stem in ["rlflex_consume", "upstash_sliding_window", "limits_peek_clear", "kong_period_counter"] {
        let spec = format!("{}/tests/fixtures/{stem}.toml", env!("CARGO_MANIFEST_DIR"));
        let (v, _) = report(&spec, &[]);
        assert_coverage(&v, stem);
    }
    // The text line carries the same coverage.
    let out = limitlab(&["check", "tests/fixtures/rlflex_consume.toml", "--no-save", "--no-timing"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("PASS remaining")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains(" cases over patterns, times"), "{line}");
    assert!(text.lines().any(|l| l.starts_with("SKIP model             [0 cases]")), "{text}");
}

#[test]
fn clock_skew_does_not_take_the_overshoot_of_a_script_that_reads_the_servers_time() {
    // Item 1: the callers' clocks are never read; the early admissions are there with every caller
    // on time, so they are `overshoot`'s.
    let (v, _) = report(&verdicts("gcra_time"), &[]);
    assert_eq!(status(&v, "overshoot"), "fail", "{v:#}");
    assert_ne!(status(&v, "clock_skew"), "fail", "{v:#}");
}

#[test]
fn peek_asks_an_unused_subject_at_every_capacity() {
    // Item 2: a cost-0 call on a missing key writes it with EX 0, an error, at limit 10 as at 8.
    for limit in ["8", "10", "50"] {
        let (v, code) = report(&verdicts("setex_zero"), &["--limit", limit]);
        assert_eq!(code, Some(1), "{v:#}");
        assert_eq!(status(&v, "peek"), "fail", "limit {limit}: {v:#}");
        let ev = check(&v, "peek")["evidence"].to_string();
        assert!(ev.contains("0 units used") && ev.contains("error"), "limit {limit}: {ev}");
    }
}

#[test]
fn an_adapter_that_never_reads_cost_is_judged_with_requests_of_cost_1() {
    // Item 4: a per-request client cannot send weighted traffic.
    let (v, _) = report(&verdicts("kong_adapter"), &[]);
    assert_eq!(status(&v, "peek"), "skip", "{v:#}");
    assert_eq!(status(&v, "oversized"), "skip", "{v:#}");
    assert_eq!(status(&v, "overshoot"), "pass", "{v:#}");
}

#[test]
fn init_writes_limits_moving_and_sliding_windows_with_reset_meaning_the_next_unit() {
    // Item 5, on a package of our own laid out like `limits` (scripts of our own lines).
    let dir = common::TempDir::new("init-limits-reset");
    let site = Path::new(dir.path()).join("site-packages");
    let info = site.join("limits-5.8.0.dist-info");
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(info.join("METADATA"), "Metadata-Version: 2.1\nName: limits\nVersion: 5.8.0\n").unwrap();
    let lua = site.join("limits/resources/redis/lua_scripts");
    std::fs::create_dir_all(&lua).unwrap();
    for f in ["incr_expire", "acquire_moving_window", "moving_window", "acquire_sliding_window", "sliding_window"] {
        std::fs::write(lua.join(format!("{f}.lua")), "return redis.call('GET', KEYS[1])\n").unwrap();
    }
    let out_dir = format!("{}/out", dir.path());
    let out = limitlab(&["init", site.to_str().unwrap(), "--out", &out_dir]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    for (stem, unit) in
        [("limits_moving_window", true), ("limits_sliding_window", true), ("limits_fixed_window", false)]
    {
        let spec = std::fs::read_to_string(format!("{out_dir}/{stem}.toml")).unwrap();
        assert_eq!(spec.contains("\nreset_means = \"unit\"\n"), unit, "{stem}:\n{spec}");
    }
}

#[test]
fn an_adapter_that_loops_forever_ends_with_a_clear_error() {
    // Item 6.
    let started = std::time::Instant::now();
    let out = limitlab(&["check", &verdicts("loop_adapter"), "--no-save", "--script-budget", "2000000"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ran past its budget of loop iterations and calls") && err.contains("loop_adapter.lua"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    eprintln!("looping adapter stopped after {:?}", started.elapsed());
}

#[test]
fn ttl_sees_a_window_reset_by_expiry_at_any_limit() {
    // Item 8: INCR + PEXPIRE on the first hit is correct at limit 100 as at 10.
    for limit in ["10", "100"] {
        let (v, _) = report("tests/fixtures/rlflex_consume.toml", &["--limit", limit]);
        assert_eq!(status(&v, "ttl"), "pass", "limit {limit}: {v:#}");
        assert!(check(&v, "ttl")["summary"].as_str().unwrap().contains("resets its window by key expiry"), "{v:#}");
    }
}

#[test]
fn a_remaining_that_is_nil_for_a_decision_is_not_judged_as_minus_1() {
    // Item 9.
    let (v, _) = report(&verdicts("nil_remaining"), &[]);
    assert_eq!(status(&v, "remaining"), "pass", "{v:#}");
    assert!(!check(&v, "remaining")["evidence"].to_string().contains("-1 is outside"), "{v:#}");
}

#[test]
fn spec_mistakes_are_exit_2_with_file_line_and_what_was_expected() {
    // Item 10.
    let base = std::fs::read_to_string(verdicts("nil_remaining")).unwrap();
    let lua =
        std::fs::read_to_string(format!("{}/tests/fixtures/verdicts/nil_remaining.lua", env!("CARGO_MANIFEST_DIR")))
            .unwrap();
    let cases: [(&str, String, &str); 4] = [
        ("array", base.replace("allowed = \"r[1] == 1\"", "allowed = \"r\""), "x.toml:15: field `decision.allowed`"),
        ("empty", base.replace("nil_remaining.lua", "empty.lua"), "x.toml:8: field `scripts.main`"),
        ("noreturn", base.replace("nil_remaining.lua", "noreturn.lua"), "has no `return`"),
        ("cycle", format!("{base}[let]\na = \"b + 1\"\nb = \"a + 1\"\n"), "x.toml:18: field `let.a`"),
    ];
    for (tag, toml, want) in cases {
        let dir = common::TempDir::new(&format!("check-mistake-{tag}"));
        let d = Path::new(dir.path());
        std::fs::write(d.join("nil_remaining.lua"), &lua).unwrap();
        std::fs::write(d.join("empty.lua"), "-- nothing here\n").unwrap();
        std::fs::write(d.join("noreturn.lua"), "redis.call('INCR', KEYS[1]) -- return nothing\n").unwrap();
        std::fs::write(d.join("x.toml"), toml).unwrap();
        let out = limitlab(&["check", d.join("x.toml").to_str().unwrap(), "--no-save"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{tag}: {err}\n{}", String::from_utf8_lossy(&out.stdout));
        assert!(err.contains(want), "{tag}: {err}");
        assert!(out.stdout.is_empty(), "{tag}");
    }
}

#[test]
fn a_limit_of_10_to_the_15_is_refused_at_once_with_a_clear_error() {
    // Issue 36, item 5: memory that grows with the limit alone is refused before it is spent.
    let started = std::time::Instant::now();
    let out = limitlab(&["check", "fixed_window", "--limit", "999999999999999", "--no-save"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is above the 50000 that `check` judges") && err.contains("smaller --limit"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn a_cost_0_call_that_starts_a_window_is_found_by_exploring_what_fits_afterwards() {
    // Item 3: the fixed probes (a used subject, room at the instant) see nothing; the exploration
    // measures what the following traffic gets, and shrinks the case to a missing key.
    let dir = common::TempDir::new("check-valkey-peek");
    let out = limitlab(&["check", &verdicts("valkey_check"), "--json", "--no-timing", "--out", dir.path()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{v:#}");
    let p = check(&v, "peek");
    assert_eq!(p["status"], "fail", "{v:#}");
    let ev = p["evidence"].to_string();
    assert!(ev.contains("explored, shrunk to: 0 of 10 units used") && ev.contains("gave 10 unit(s) too many"), "{ev}");
    // The shrunk case's traffic is saved, and `run` replays it.
    let replay = p["replay"].as_str().unwrap_or_else(|| panic!("no replay: {p:#}"));
    assert!(Path::new(replay).exists(), "{replay}");
    let out = limitlab(&["run", replay, "--out", dir.path()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}
