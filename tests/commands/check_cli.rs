//! `limitlab check` on every fixture spec in tests/fixtures/: the verdicts a careful reviewer gives
//! (the broken ones fail for the right reason, with evidence), the output formats, the exit status,
//! determinism and the replayable traces of failures.
use crate::common;

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
const BROKEN: [(&str, &[&str], &str); 18] = [
    // The dynamic limit's key is sent as "" (raw): slot 0, beside the counter's slot.
    ("upstash_dynamic_limit", &["cluster", "refusals"], "(slot 0): CROSSSLOT on Redis Cluster"),
    // Two processes each spend the room they last heard of: up to twice the limit between syncs,
    // on top of the fixed window's doubling at a boundary. (clock_skew no longer takes it: the same
    // 21 in a window are admitted with every caller on time, so it is overshoot's alone.)
    ("batched_counter", &["overshoot"], "worst 4.00 in boundary_burst"),
    // Each of these libraries counts a refused request too (INCRBY before the comparison, as the
    // library's own script does): a refused request of cost 4 uses up the units that a request of
    // cost 1 would still have had. A property of the library, judged as one.
    ("escaping_key", &["refusals", "cluster"], "the refusal used up"),
    // (And, explored with callers off the server's clock: a lagging caller is told to retry when
    // its own window ends, where the server's next window already holds usage.)
    ("fixed_window_no_ttl", &["ttl", "clock_skew"], "with no TTL"),
    // (Found by the exploration of skewed callers: a request of cost 0 still HSETs the window it
    // computed, so one from a clock ahead, in the window's last ms, stores the next window; the
    // callers on time are then counted in it and lose what was left of theirs.)
    ("function_fixed_window", &["peek"], "it took 9 unit(s)"),
    // (Found by the exploration: a request of cost 0 on an idle subject runs INCRBY 0, whose count
    // equals the cost, so the "first hit" PEXPIRE starts a window there: twice the limit then fits
    // around its end. The exploration shrinks it to a missing key,
    // the cost-0 call at the fill's ms, and the measurement half a window and a window later.)
    ("rate_limit_redis", &["refusals", "peek"], "the refusal used up"),
    ("rlflex_consume", &["refusals"], "the refusal used up"),
    // rate-limiter-flexible's `reward` after the window that took the points has ended opens the
    // next window below zero; its consume script counts refusals, as above.
    ("rlflex_lifecycle", &["lifecycle", "peek", "refusals"], "the refund gave back 2 unit(s) too many"),
    // The in-memory block itself is right; the consume script counts refusals, as above.
    ("rlflex_memory_block", &["refusals", "peek"], "the refusal used up"),
    // RateLimiterUnion spends every limiter's points, refused or not: starvation per minute, and a
    // retry_after that only covers the limiters that refused.
    ("rlflex_union", &["false_rejections", "peek", "refusals", "retry_after", "headers"], "under sustained overload"),
    ("scg_token_bucket_seconds", &["overshoot", "clock_skew"], "above the bound 1.999"),
    ("sliding_log_counts_refusals", &["false_rejections", "retry_after", "clock_skew"], "under sustained overload"),
    ("sliding_log_off_by_one", &["overshoot", "remaining", "clock_skew"], "worst 1.10"),
    ("sliding_window_crossslot", &["cluster"], "CROSSSLOT"),
    ("sliding_window_short_ttl", &["ttl"], "expired while it was still needed"),
    ("upstash_fixed_window", &["refusals"], "the refusal used up"),
    // @upstash/ratelimit's sliding window answers -1 on a refusal, which its client reads as
    // remaining 0, though a request of cost 1 may still fit.
    ("upstash_sliding_window", &["remaining"], "remaining 0 after this request (refused)"),
    // The bucket refills only once a caller's clock passes its last update, but the wait it tells
    // a caller behind that update is counted from the caller's own clock: too early by the lag.
    ("valkey_token_bucket", &["clock_skew"], "was refused too"),
];

fn report(spec: &Path) -> (serde_json::Value, Option<i32>) {
    report_with(spec, &[])
}

/// [`report`] with more arguments (`--window 10000`).
fn report_with(spec: &Path, more: &[&str]) -> (serde_json::Value, Option<i32>) {
    let mut args = vec!["check", spec.to_str().unwrap(), "--json", "--no-save", "--no-timing"];
    args.extend_from_slice(more);
    let out = limitlab(&args);
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
        for n in [
            "errors",
            "overshoot",
            "false_rejections",
            "remaining",
            "granted",
            "refusals",
            "peek",
            "lifecycle",
            "oversized",
            "retry_after",
            "headers",
            "ttl",
            "clock_skew",
            "cluster",
            "memory",
        ] {
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
    let spec = "tests/fixtures/fixed_window_no_ttl.toml";
    let a = limitlab(&["check", spec, "--no-save", "--no-timing", "--seed", "3"]);
    let b = limitlab(&["check", spec, "--no-save", "--no-timing", "--seed", "3"]);
    assert_eq!(a.stdout, b.stdout);
    assert!(!a.stdout.is_empty());
    let j = limitlab(&["check", spec, "--no-save", "--no-timing", "--junit"]);
    let x = String::from_utf8(j.stdout).unwrap();
    assert!(x.starts_with("<?xml"), "{x}");
    assert_eq!(x.matches("<testcase ").count(), x.matches("</testcase>").count());
    // `ttl` (no TTL) and `clock_skew` (a lagging caller told to retry when its own window ends).
    assert_eq!(x.matches("<failure ").count(), 2, "{x}");
    assert!(x.contains("failures=\"2\""), "{x}");
    assert_eq!(j.status.code(), Some(1));
}

#[test]
fn bad_input_exits_2_with_file_line_and_field() {
    let dir = std::env::temp_dir().join(format!("limitlab_check_bad_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spec = dir.join("bad.toml");
    std::fs::write(&spec, "name = \"x\"\n[policy]\nlimit = 10\nwindow_ms = 1000\n[scripts]\nmain = \"x.lua\"\n")
        .unwrap();
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
    let out = limitlab(&[
        "check",
        "tests/fixtures/sliding_log_off_by_one.toml",
        "--no-timing",
        "--out",
        dir.to_str().unwrap(),
    ]);
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

/// A spec of its own in a fresh directory: `files` are (name, text).
fn spec_dir(tag: &str, files: &[(&str, &str)]) -> common::TempDir {
    let dir = common::TempDir::new(tag);
    for (name, text) in files {
        std::fs::write(Path::new(dir.path()).join(name), text).unwrap();
    }
    dir
}

/// A "limiter" that admits everything and counts, in the shape of a fixed window; the spec says no
/// family and no bound.
const ALLOW_ALL_LUA: &str =
    "local n = redis.call('INCR', KEYS[1])\nredis.call('PEXPIRE', KEYS[1], ARGV[1])\nreturn n\n";
const ALLOW_ALL_TOML: &str = r#"name = "allow_all"
[policy]
limit = 10
window_ms = 1000
[scripts]
main = "allow.lua"
[[call]]
name = "n"
script = "main"
keys = ["rl:{${subject}}"]
args = ["${window_ms}"]
[decision]
allowed = "1"
remaining = "max(limit - n, 0)"
"#;

fn statuses(v: &serde_json::Value) -> std::collections::BTreeMap<String, String> {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_string(), c["status"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn an_allow_all_limiter_without_a_family_fails_and_a_waiver_prints_its_reason() {
    let dir = spec_dir("check_allow_all", &[("allow.lua", ALLOW_ALL_LUA), ("allow.toml", ALLOW_ALL_TOML)]);
    let spec = format!("{}/allow.toml", dir.path());
    let (v, code) = report(Path::new(&spec));
    assert_eq!(code, Some(1), "{v:#}");
    let st = statuses(&v);
    assert_eq!(st["overshoot"], "fail", "judged against the default bound: {v:#}");
    assert_eq!(st["remaining"], "fail", "remaining 0, then admitted: {v:#}");
    assert_eq!(v["bound"], 2.0);
    assert!(v["bound_source"].as_str().unwrap().contains("the default"), "{v:#}");
    let remaining = v["checks"].as_array().unwrap().iter().find(|c| c["name"] == "remaining").unwrap();
    // It promises `remaining` and then admits more than that at the same ms.
    let ev = remaining["evidence"].as_array().unwrap();
    assert!(
        ev.iter().any(|e| e.as_str().unwrap().contains("after this request (admitted), but all ")),
        "{remaining:#}"
    );

    // Waived by name, with reasons: no failure left, and the reasons are printed.
    let waived = format!(
        "{ALLOW_ALL_TOML}[waive]\novershoot = \"a shadow limiter: it only counts\"\nremaining = \"remaining is informational here\"\n"
    );
    std::fs::write(Path::new(dir.path()).join("allow.toml"), waived).unwrap();
    let out = limitlab(&["check", &spec, "--no-save", "--no-timing"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let line = text.lines().find(|l| l.starts_with("WAIVE overshoot ")).unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains(" cases over patterns")
            && line.contains("] waived by the spec: a shadow limiter: it only counts (would fail: worst 4.00"),
        "{text}"
    );
    assert!(text.contains("2 waived"), "{text}");
    // A waiver must name a check and give a reason.
    std::fs::write(Path::new(dir.path()).join("allow.toml"), format!("{ALLOW_ALL_TOML}[waive]\novershot = \"typo\"\n"))
        .unwrap();
    let out = limitlab(&["check", &spec]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("field `waive.overshot`: no check is named `overshot`"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_runaway_script_stops_check_at_once_with_exit_2_and_its_line() {
    // An endless loop, and a table that grows until the emulator's memory cap.
    for (body, line, what) in [
        // (Each ends with a `return` it never reaches: a script with no `return` is a spec error.)
        ("local x = 0\nwhile true do x = x + 1 end\nreturn x\n", "loop.lua:2: while true", "budget"),
        (
            "local t = {}\nlocal i = 0\nwhile true do i = i + 1; t[i] = string.rep('x', 1024) .. i end\nreturn i\n",
            "loop.lua:3: while true",
            "bytes of Lua memory",
        ),
    ] {
        let toml = ALLOW_ALL_TOML.replace("allow.lua", "loop.lua").replace("allow_all", "runaway");
        let dir = spec_dir("check_runaway", &[("loop.lua", body), ("loop.toml", &toml)]);
        let started = std::time::Instant::now();
        let out =
            limitlab(&["check", &format!("{}/loop.toml", dir.path()), "--no-save", "--script-budget", "20000000"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("Script killed by limitlab") && err.contains(what) && err.contains(&line.to_string()),
            "{err}"
        );
        assert!(err.contains("no verdict on a script that does not finish"), "{err}");
        assert!(out.stdout.is_empty(), "no report: {}", String::from_utf8_lossy(&out.stdout));
        // Not a timing assertion on the machine's speed: one kill is one script call's budget,
        // and check stops at the first, instead of meeting it once per request.
        eprintln!("runaway ({line}) stopped after {:?}", started.elapsed());
    }
}

#[test]
fn a_script_or_adapter_that_does_not_compile_is_bad_input_said_once() {
    let toml = ALLOW_ALL_TOML.replace("allow.lua", "syn.lua");
    let adapter_toml = "name = \"ad\"\nadapter = \"ad.lua\"\n[policy]\nlimit = 10\nwindow_ms = 1000\n";
    let dir = spec_dir(
        "check_syntax",
        &[
            ("syn.lua", "local x = = 1\n"),
            ("syn.toml", &toml),
            ("ad.lua", "function request(req)\n  local x = = 1\nend\n"),
            ("ad.toml", adapter_toml),
        ],
    );
    for (spec, want) in
        [("syn.toml", "syn.toml:6: field `scripts.main`: "), ("ad.toml", "ad.toml:2: field `adapter`: ")]
    {
        let out = limitlab(&["check", &format!("{}/{spec}", dir.path()), "--no-save"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
        assert!(
            err.contains(want) && err.contains(":2: does not compile")
                || err.contains(want) && err.contains("syn.lua:1: does not compile"),
            "{spec}: {err}"
        );
        assert_eq!(err.matches("does not compile").count(), 1, "once: {err}");
        assert!(out.stdout.is_empty(), "{spec}: nothing judged");
    }
}

#[test]
fn a_script_without_keys_fails_cluster_and_an_oversized_cost_is_judged() {
    // The key name travels in ARGV: fine on one server, refused by most nodes of a cluster.
    let lua = "local n = redis.call('INCRBY', ARGV[1], ARGV[3])\nif n == tonumber(ARGV[3]) then redis.call('PEXPIRE', ARGV[1], ARGV[2]) end\nreturn n\n";
    let toml = r#"name = "keyless"
family = "fixed_window"
[policy]
limit = 10
window_ms = 1000
[scripts]
main = "k.lua"
[[call]]
name = "n"
script = "main"
args = ["rl:{${subject}}:${window_index}", "${window_ms}", "${cost}"]
[decision]
allowed = "n <= limit or cost > 0"
"#;
    let dir = spec_dir("check_keyless", &[("k.lua", lua), ("k.toml", toml)]);
    let (v, code) = report(Path::new(&format!("{}/k.toml", dir.path())));
    assert_eq!(code, Some(1));
    let st = statuses(&v);
    assert_eq!(st["cluster"], "fail", "{v:#}");
    let c = v["checks"].as_array().unwrap().iter().find(|c| c["name"] == "cluster").unwrap();
    assert!(c["evidence"][0].as_str().unwrap().contains("declares no KEYS but touches a key"), "{c:#}");
    // `cost > 0` admits everything, whatever its cost: the oversized requests are admitted.
    assert_eq!(st["oversized"], "fail", "{v:#}");
}

/// A copy of a fixture's spec in a fresh directory beside the fixtures' scripts, with `edit`
/// applied to its text.
fn fixture_copy(tag: &str, stem: &str, edit: impl Fn(&str) -> String) -> (common::TempDir, String) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let dir = common::TempDir::new(tag);
    for e in std::fs::read_dir(&fixtures).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "lua") {
            std::fs::copy(&p, Path::new(dir.path()).join(p.file_name().unwrap())).unwrap();
        }
    }
    let text = std::fs::read_to_string(fixtures.join(format!("{stem}.toml"))).unwrap();
    let spec = format!("{}/{stem}.toml", dir.path());
    std::fs::write(&spec, edit(&text)).unwrap();
    (dir, spec)
}

fn check_named<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no `{name}` check: {v:#}"))
}

#[test]
fn partial_grants_are_counted_at_what_they_granted() {
    let (v, code) = report(Path::new("tests/fixtures/redis_rate_allow_at_most.toml"));
    assert_eq!(code, Some(0), "{v:#}");
    let g = check_named(&v, "granted");
    assert_eq!(g["status"], "pass", "{g:#}");
    // The costs pattern asks for more than fits: some requests are granted part of their cost.
    let s = g["summary"].as_str().unwrap();
    let partial: u64 =
        s.split("; ").nth(1).and_then(|p| p.split_whitespace().next()).and_then(|n| n.parse().ok()).unwrap();
    assert!(partial > 0, "{s}");
    // The same limiter counted at its cost (no `granted`): an overshoot it does not have, and
    // oversized requests "admitted".
    let (_dir, spec) = fixture_copy("check_nogrant", "redis_rate_allow_at_most", |t| {
        t.lines().filter(|l| !l.starts_with("granted")).collect::<Vec<_>>().join("\n")
    });
    let (v, code) = report(Path::new(&spec));
    assert_eq!(code, Some(1), "{v:#}");
    let st = statuses(&v);
    assert_eq!(st["overshoot"], "fail", "{v:#}");
    assert_eq!(st["granted"], "skip", "{v:#}");
}

#[test]
fn reset_is_judged_by_what_the_spec_says_it_means() {
    // Python limits' moving-window reset time is when the oldest entry leaves: the next unit.
    // With a 10 s window the rounded `t` tells the meanings apart.
    let (v, code) = report_with(Path::new("tests/fixtures/limits_peek_clear.toml"), &["--window", "10000"]);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(statuses(&v)["headers"], "pass", "{v:#}");
    let (_dir, spec) =
        fixture_copy("check_reset_means", "limits_peek_clear", |t| t.replace("reset_means = \"unit\"\n", ""));
    let (v, code) = report_with(Path::new(&spec), &["--window", "10000"]);
    assert_eq!(code, Some(1), "{v:#}");
    let h = check_named(&v, "headers");
    assert_eq!(h["status"], "fail", "{v:#}");
    assert!(h["evidence"].to_string().contains("promised the whole quota back"), "{h:#}");
}

/// A fixed window whose request of cost 0 still takes a unit (`max(cost, 1)`): its peek is a write.
const PEEK_WRITES_LUA: &str = "local n = redis.call('INCRBY', KEYS[1], math.max(tonumber(ARGV[2]), 1))\nif n == math.max(tonumber(ARGV[2]), 1) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end\nreturn n\n";

#[test]
fn a_request_of_cost_0_must_only_read_and_lifecycle_calls_undo_exactly() {
    let toml = ALLOW_ALL_TOML
        .replace("allow.lua", "peek.lua")
        .replace("allow_all", "peek_writes")
        .replace("args = [\"${window_ms}\"]", "args = [\"${window_ms}\", \"${cost}\"]")
        .replace("allowed = \"1\"", "allowed = \"n <= limit\"")
        .replace("[policy]", "family = \"fixed_window\"\n[policy]");
    let dir = spec_dir("check_peek", &[("peek.lua", PEEK_WRITES_LUA), ("peek.toml", &toml)]);
    let (v, code) = report(Path::new(&format!("{}/peek.toml", dir.path())));
    assert_eq!(code, Some(1), "{v:#}");
    let p = check_named(&v, "peek");
    assert_eq!(p["status"], "fail", "{v:#}");
    assert!(p["evidence"].to_string().contains("the request of cost 0 used up room"), "{p:#}");
    // The fixture whose cost 0 goes to a read-only script passes it, with its reset and clear.
    let (v, _) = report(Path::new("tests/fixtures/limits_peek_clear.toml"));
    let st = statuses(&v);
    assert_eq!((st["peek"].as_str(), st["lifecycle"].as_str()), ("pass", "pass"), "{v:#}");
    assert!(check_named(&v, "lifecycle")["summary"].as_str().unwrap().contains("(reset, clear)"), "{v:#}");
    // rate-limiter-flexible's reward inside the window gives back exactly what was taken: only the
    // refund after the window is wrong.
    let (v, _) = report(Path::new("tests/fixtures/rlflex_lifecycle.toml"));
    let l = check_named(&v, "lifecycle");
    let ev = l["evidence"].as_array().unwrap();
    let (explored, probed): (Vec<_>, Vec<_>) =
        ev.iter().partition(|e| e.as_str().unwrap().contains("explored, shrunk to"));
    assert_eq!(probed.len(), 1, "{l:#}");
    assert!(probed[0].as_str().unwrap().contains("(+1000 ms)"), "{l:#}");
    // The exploration finds the same bug on its own, shrunk, with its trace.
    assert_eq!(explored.len(), 1, "{l:#}");
}

#[test]
fn several_policies_are_each_judged_and_bad_new_fields_are_exit_2() {
    let (v, _) = report(Path::new("tests/fixtures/rlflex_union.toml"));
    let o = check_named(&v, "overshoot");
    let ev = o["evidence"].to_string();
    assert!(ev.contains("steady_overload@minute:") && ev.contains("[minute: 100 per 60000 ms]"), "{o:#}");
    assert_eq!(o["status"], "pass", "{o:#}");
    // A per-minute counter that expires every second (the per-second window given by mistake)
    // passes the per-second policy and admits ten times the minute's limit: the minute's verdict.
    let (_dir, spec) = fixture_copy("check_union_minute", "rlflex_union", |t| {
        t.replace("args = [\"${cost}\", \"${minute_window_ms}\"]", "args = [\"${cost}\", \"${window_ms}\"]")
    });
    let (v, code) = report(Path::new(&spec));
    assert_eq!(code, Some(1));
    let o = check_named(&v, "overshoot");
    assert_eq!(o["status"], "fail", "{o:#}");
    assert!(o["summary"].as_str().unwrap().contains("[minute: 100 per 60000 ms], above the bound 2.000"), "{o:#}");
    for (edit, field) in [
        (("[[policy.and]]\nname = \"minute\"", "[[policy.and]]\nname = \"per minute\""), "policy.and[1].name"),
        (("family = \"fixed_window\"\n", "family = \"fixed_window\"\nreset_means = \"later\"\n"), "reset_means"),
        (("family = \"fixed_window\"\n", "family = \"fixed_window\"\nprocesses = 0\n"), "processes"),
    ] {
        let (_dir, spec) = fixture_copy("check_bad_fields", "rlflex_union", |t| t.replace(edit.0, edit.1));
        let out = limitlab(&["check", &spec, "--no-save"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{field}: {err}");
        assert!(err.contains(&format!("field `{field}`")) && err.contains("rlflex_union.toml:"), "{field}: {err}");
    }
    // An adapter defines its lifecycle in Lua, not as [[refund]] calls.
    let (_dir, spec) = fixture_copy("check_bad_refund", "rlflex_memory_block", |t| {
        format!("{t}\n[[refund]]\ncommand = \"DEL\"\nkeys = [\"x\"]\n")
    });
    let out = limitlab(&["check", &spec, "--no-save"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("an adapter defines refund(req)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// 10,000 per minute on the shipped fixed window: the patterns and the attack search are sized to
/// the policy's shape, not replayed request by request at the policy's length. What is asserted is
/// how many requests each pattern sent (as the report says), never a time, and the verdict.
#[test]
fn a_large_policy_is_checked_with_bounded_traffic_and_the_same_verdict() {
    let out = limitlab(&[
        "check",
        "fixed_window",
        "--limit",
        "10000",
        "--window",
        "60000",
        "--json",
        "--no-save",
        "--no-timing",
    ]);
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(out.status.code(), Some(0), "{v:#}");
    let t = &v["traffic"];
    assert_eq!(t["scaled"], true, "{t:#}");
    let count = |name: &str| {
        t["patterns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {t:#}"))["requests"]
            .as_u64()
            .unwrap()
    };
    // Every pattern is bounded: at full length they would send 40,000, 30,001, 240,000, about
    // 1,000,000, 20 and 80,000 requests.
    let cap = 10_000u64;
    let total: u64 = t["patterns"].as_array().unwrap().iter().map(|p| p["requests"].as_u64().unwrap()).sum();
    assert!(total <= 150_000, "{total} requests in all: {t:#}");
    assert!(count("steady_overload") <= 6 * cap, "{t:#}");
    assert!(count("under_limit") <= 5 * cap, "{t:#}");
    assert!(count("costs") <= 1_000, "{t:#}");
    assert_eq!(count("sparse"), 20);
    // The bursts still go past the capacity, on each side of the boundary and after the idle spell.
    assert!(count("boundary_burst") > 2 * cap && count("boundary_burst") <= 3 * cap, "{t:#}");
    assert!(count("idle_then_burst") > cap && count("idle_then_burst") <= 2 * cap, "{t:#}");
    // The search ran at a smaller limit and said so; its requests are bounded too.
    let s = &t["search"];
    assert_eq!(s["scaled"], true, "{s:#}");
    assert!(s["limit"].as_u64().unwrap() < cap, "{s:#}");
    assert!(s["requests"].as_u64().unwrap() <= 5_000_000, "{s:#}");
    assert!(s["confirmed"].as_u64().unwrap() <= 8 * cap, "{s:#}");
    // The verdict: a fixed window admits twice its limit across a boundary, and that is found.
    let checks = v["checks"].as_array().unwrap();
    let overshoot = checks.iter().find(|c| c["name"] == "overshoot").unwrap();
    assert_eq!(overshoot["status"], "pass");
    assert!(overshoot["summary"].as_str().unwrap().starts_with("worst 2.00"), "{overshoot:#}");
    assert!(overshoot["evidence"].to_string().contains("the attack search was narrowed"), "{overshoot:#}");
    assert!(checks.iter().all(|c| c["status"] != "fail"), "{v:#}");
    // The text report says the same, in one line.
    let text = limitlab(&["check", "fixed_window", "--limit", "10", "--window", "1000", "--no-save", "--no-timing"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("traffic: boundary_burst 40, idle_then_burst 31, steady_overload 240,"), "{text}");
}

/// The patterns of `fixture` at 10,000 per minute, sized by what one call of its script costs:
/// (the cost per call, the requests of each pattern, why they were shortened).
fn sized_at_10k(fixture: &str) -> (u64, Vec<(&'static str, usize)>, Option<String>) {
    use limitlab_engine::check::run;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(fixture);
    let spec = limitlab_engine::spec::Spec::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
    let limiter = limitlab_engine::limiter::limiter_with(std::sync::Arc::new(spec), Some(10_000), Some(60_000), None)
        .unwrap_or_else(|e| panic!("{e}"));
    let p = limiter.params();
    let origin = limitlab_engine::attack::origin_ms(p.window_ms);
    let per_call = run::cost_per_call(&limiter, &p, origin);
    let (patterns, why) = run::patterns_within(&p, origin, 0, per_call);
    (per_call, patterns.iter().map(|x| (x.name, x.arrivals.len())).collect(), why)
}

/// Cost-aware sizing: a script that reads its whole log when it refuses (limits' moving window) is
/// judged at 10,000 per minute with fewer requests than a script of constant cost at the same
/// policy, and what each check needs is kept: the bursts still send more than the capacity, the
/// steady overload a full window over the limit. A correctness test of the sizing, not of time.
#[test]
fn check_sizes_patterns_by_the_cost_of_a_call() {
    let (log_cost, log, why) = sized_at_10k("limits_moving_window.toml");
    let (flat_cost, flat, flat_why) = sized_at_10k("upstash_fixed_window.toml");
    assert_eq!(flat_cost, 1, "a counter costs one call");
    assert!(flat_why.is_none(), "{flat_why:?}");
    assert!(log_cost > 100, "a log of 10,000 stamps read per call: {log_cost}");
    let total = |v: &[(&str, usize)]| v.iter().map(|(_, n)| n).sum::<usize>();
    assert!(total(&log) < total(&flat) / 2, "{log:?} against {flat:?}");
    let why = why.expect("the moving window's patterns say why they were shortened");
    assert!(why.contains("a call costs") && why.contains("budget"), "{why}");
    let n = |v: &[(&str, usize)], name: &str| v.iter().find(|(x, _)| *x == name).map(|(_, n)| *n).unwrap_or(0);
    // The first burst alone is over the capacity; the steady overload is more than two windows at the limit.
    assert!(n(&log, "boundary_burst") > 10_000 && n(&log, "idle_then_burst") > 10_001, "{log:?}");
    assert!(n(&log, "steady_overload") > 20_000, "{log:?}");
    assert!(n(&log, "under_limit") > 0 && n(&log, "sparse") == 20, "{log:?}");
    // The same spec and seed size the same patterns.
    assert_eq!(sized_at_10k("limits_moving_window.toml").1, log);
}

/// A failure that judges one reply names the line of the script whose `return` made it, and the
/// line named is the file's own text at that line (JSON and text).
#[test]
fn a_failure_names_the_line_of_the_script_that_decided() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (stem, check, text) in [
        // @upstash/ratelimit's sliding window answers -1 on a refusal (remaining read as 0).
        ("upstash_sliding_window", "remaining", "return -1"),
        // The bucket's wait for a caller behind its last update, counted from the caller's clock.
        (
            "valkey_token_bucket",
            "clock_skew",
            "return {'false', text(level), tostring(ceil_div(need - level, limit)), reset}",
        ),
    ] {
        let (v, code) = report(&root.join(format!("tests/fixtures/{stem}.toml")));
        assert_eq!(code, Some(1), "{stem}");
        let c = check_named(&v, check);
        assert_eq!(c["status"], "fail", "{stem}: {c:#}");
        let d = &c["decided_at"];
        assert_eq!(d["text"], text, "{stem}: {c:#}");
        let file = d["file"].as_str().unwrap();
        assert!(file.ends_with(&format!("{stem}.lua")), "{file}");
        let line = d["line"].as_u64().unwrap() as usize;
        let body = std::fs::read_to_string(root.join(file)).unwrap();
        assert_eq!(body.lines().nth(line - 1).map(str::trim), Some(text), "{stem}: line {line}");
        // A case from a caller off the server's clock writes no replay (a trace cannot say so) and
        // says why; one on time does not say it.
        let ev = c["evidence"].to_string();
        let off = ev.contains(" ms behind)") || ev.contains(" ms ahead)");
        assert_eq!(ev.contains("no replay written"), off, "{stem}: {c:#}");
        assert!(off || check != "clock_skew", "{stem}: {c:#}");
        // Passing checks name nothing.
        for p in v["checks"].as_array().unwrap().iter().filter(|c| c["status"] != "fail") {
            assert!(p.get("decided_at").is_none(), "{stem}: {p:#}");
        }
    }
    let out = limitlab(&["check", "tests/fixtures/upstash_sliding_window.toml", "--no-save", "--no-timing"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("       decided at tests/fixtures/upstash_sliding_window.lua:"), "{text}");
}

/// `max_clock_lag` is a number of windows the explorations reach (0 to 2), and `weighted` a
/// boolean; anything else stops `check` with the file, the field and the reason.
#[test]
fn clock_lag_and_weighted_are_checked_where_they_are_read() {
    for (tag, edit, field, reason) in [
        ("check_lag3", "max_clock_lag = 3.0\n", "max_clock_lag", "from 0 to 2"),
        ("check_lagneg", "max_clock_lag = -1.0\n", "max_clock_lag", "from 0"),
        ("check_weighted", "weighted = \"yes\"\n", "weighted", "boolean"),
    ] {
        let (_dir, spec) =
            fixture_copy(tag, "upstash_fixed_window", |t| t.replacen("\n[policy]", &format!("\n{edit}[policy]"), 1));
        let out = limitlab(&["check", &spec, "--no-save"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{tag}: {err}");
        assert!(
            err.contains("upstash_fixed_window.toml") && err.contains(field) && err.contains(reason),
            "{tag}: {err}"
        );
    }
}
