//! `limitlab race` and `limitlab skew`: the non-atomic limiter over-admits more with more servers
//! and more latency while the Lua script never does; skewed callers' clocks change what the
//! scripts admit while the TIME-reading variants do not notice; both reports are deterministic.
use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn limitlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_limitlab")).args(args).output().expect("the binary runs")
}

fn scratch_file(name: &str, body: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("limitlab-race-skew-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

fn json(args: &[&str]) -> Value {
    let out = limitlab(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

const RACE: &str = r#"name = "race"
description = "test"
limit = 50
window_ms = 1000
seed = 2
servers = [1, 8, 32]
latency_us = [100, 20000]
jitter = 0.5
decide_us = 50

[traffic]
kind = "poisson"
rate = 40.0
duration_ms = 3000
"#;

#[test]
fn the_race_grows_with_servers_and_latency_for_get_incr_only() {
    let path = scratch_file("race.toml", RACE);
    let p = path.to_str().unwrap();
    let r = json(&["race", p, "--json"]);
    let rows = r["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    let over = |i: usize, mode: &str| rows[i][mode]["over_admitted"].as_u64().unwrap();
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(over(i, "lua"), 0, "{row}");
        assert!(row["lua"]["worst_window"].as_u64().unwrap() <= 50, "{row}");
    }
    // One server at 40/s never races; 32 servers 20 ms away race the most.
    assert_eq!(over(0, "non_atomic") + over(1, "non_atomic"), 0);
    assert!(over(3, "non_atomic") > over(2, "non_atomic"), "latency: {rows:?}");
    assert!(over(5, "non_atomic") > over(3, "non_atomic"), "servers: {rows:?}");
    assert!(rows[5]["non_atomic"]["worst_window"].as_u64().unwrap() > 50);
    // WATCH/MULTI never admits on a stale count; contention costs it aborted EXECs instead, more with
    // more servers and more latency.
    let aborted = |i: usize| rows[i]["watch"]["exec_aborted"].as_u64().unwrap();
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(over(i, "watch"), 0, "{row}");
        assert!(row["watch"]["worst_window"].as_u64().unwrap() <= 50, "{row}");
    }
    assert!(aborted(5) > aborted(4) && aborted(5) > aborted(3), "{rows:?}");
    assert!(rows[5]["watch"]["gave_up"].as_u64().unwrap() > 0, "{rows:?}");
    // Text output, twice: identical.
    let a = limitlab(&["race", p]);
    let b = limitlab(&["race", p]);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
    let text = String::from_utf8_lossy(&a.stdout);
    assert!(
        text.contains("GET+INCR admitted") && text.contains("WATCH/MULTI admitted") && text.contains("20 ms"),
        "{text}"
    );
}

const SKEW: &str = r#"name = "skew"
description = "test"
limit = 20
window_ms = 1000
seed = 4
servers = 4
skews_ms = [0, 400]

[traffic]
kind = "poisson"
rate = 60.0
duration_ms = 5000
"#;

#[test]
fn skew_moves_the_callers_clocks_and_not_time() {
    let path = scratch_file("skew.toml", SKEW);
    let p = path.to_str().unwrap();
    let r = json(&["skew", p, "--json"]);
    let rows = r["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 10, "five scripts, two skews");
    for pair in rows.chunks(2) {
        let (zero, skewed) = (&pair[0], &pair[1]);
        let name = zero["algorithm"].as_str().unwrap();
        assert_eq!(zero["callers_clocks"], zero["redis_time"], "{name}: one clock either way at skew 0");
        assert_eq!(skewed["redis_time"], zero["redis_time"], "{name}: TIME ignores the callers' clocks");
        assert_eq!(skewed["callers_clocks"]["errors"].as_u64(), Some(0), "{name}");
        assert_ne!(skewed["callers_clocks"], zero["callers_clocks"], "{name}: skew changes what is admitted");
    }
    let log = &rows[4];
    assert_eq!(log["algorithm"], "sliding_log");
    assert_eq!(log["callers_clocks"]["false_allows"].as_u64(), Some(0), "exact on one clock");
    assert!(rows[5]["callers_clocks"]["false_allows"].as_u64().unwrap() > 0, "not exact on skewed clocks");
    let a = limitlab(&["skew", p, "--markdown"]);
    let b = limitlab(&["skew", p, "--markdown"]);
    assert_eq!(a.stdout, b.stdout);
    assert!(String::from_utf8_lossy(&a.stdout).contains("| algorithm | skew (±ms) |"));
}

#[test]
fn bad_files_are_errors_not_panics() {
    let bad = scratch_file("bad.toml", &RACE.replace("jitter = 0.5", "jitter = 2.0"));
    let out = limitlab(&["race", bad.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("field `jitter`") && !stderr.contains("panicked"), "{stderr}");
    let bad = scratch_file("bad_skew.toml", &SKEW.replace("servers = 4", "servers = 0"));
    let out = limitlab(&["skew", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("field `servers`"));
}

/// `race --help` names all three limiters its table has rows for, WATCH/MULTI included.
#[test]
fn race_help_names_the_watch_multi_rows() {
    let out = limitlab(&["race", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for what in ["GET+INCR", "WATCH/MULTI", "Lua script"] {
        assert!(help.contains(what), "race --help does not mention {what}:\n{help}");
    }
}

/// `compare`'s speed table says why its figures are below `bench`'s (a newcomer sees both).
#[test]
fn compare_says_why_its_speed_is_below_bench() {
    let out = limitlab(&["compare"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let speed = text.split("Speed: decisions per second").nth(1).expect("a speed table");
    assert!(speed.contains("`limitlab bench` times warm calls alone"), "{speed}");
}
