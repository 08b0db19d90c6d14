//! `limitlab bench`: every engine decides exactly as the reference model (the benchmark times the
//! right thing), the output has its tables and columns, the real-Redis columns fill in against a
//! server (and leave no key behind) and say why when there is none. Throughput itself is never
//! asserted: it is measured.
use crate::common;

use std::process::{Command, Output};

use common::RedisServer;
use serde_json::Value;

fn limitlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_limitlab")).args(args).output().expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `bench` with `--json` and parses the report; the run must succeed.
fn bench_json(args: &[&str]) -> Value {
    let mut all = vec!["bench", "--quick", "--json"];
    all.extend_from_slice(args);
    let out = limitlab(&all);
    assert!(out.status.success(), "{all:?}: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("bench --json prints JSON")
}

/// Asserts that a measurement ran calls, compared them all, and found no difference.
fn assert_checked(m: &Value, what: &str) {
    assert!(m["calls"].as_u64().unwrap() > 0, "{what}: {m}");
    assert!(m["per_sec"].as_f64().unwrap() > 0.0, "{what}: {m}");
    let c = &m["check"];
    assert!(c["compared"].as_u64().unwrap() > 0, "{what}: {m}");
    assert_eq!(c["differ"].as_u64(), Some(0), "{what}: decisions differ from the reference: {m}");
}

const NAMES: [&str; 9] = [
    "fixed_window",
    "sliding_window",
    "sliding_log",
    "token_bucket",
    "gcra",
    "seed_fixed_window",
    "seed_sliding_window",
    "seed_sliding_log",
    "seed_token_bucket",
];

#[test]
fn every_script_on_the_emulator_and_natively_decides_as_its_reference() {
    let r = bench_json(&["--no-redis", "--log-sizes", "10,100"]);
    let scripts = r["scripts"].as_array().unwrap();
    let names: Vec<&str> = scripts.iter().map(|s| s["algorithm"].as_str().unwrap()).collect();
    assert_eq!(names, NAMES);
    for s in scripts {
        let name = s["algorithm"].as_str().unwrap();
        assert_checked(&s["native"], &format!("{name} native"));
        assert_checked(&s["emulator"], &format!("{name} emulator"));
        // The emulator's decisions cover its warm-up and timed calls.
        let e = &s["emulator"];
        assert_eq!(
            e["check"]["compared"].as_u64().unwrap(),
            e["calls"].as_u64().unwrap() + r["sizes"]["warmup"].as_u64().unwrap()
        );
        // The workload refuses some calls and admits most: both paths of every script are timed.
        let allowed = e["check"]["allowed"].as_u64().unwrap() as f64 / e["check"]["compared"].as_u64().unwrap() as f64;
        assert!((0.7..0.95).contains(&allowed), "{name}: {allowed}");
        assert!(s["redis_single"].is_null() && s["redis_server_usec"].is_null());
        assert_eq!(s["redis_pipelined"].as_array().unwrap().len(), 0);
    }
    assert_eq!(r["redis"]["source"], "none");
    assert!(r["redis"]["note"].as_str().unwrap().contains("--no-redis"));

    let logs = r["sliding_log"].as_array().unwrap();
    assert_eq!(logs.iter().map(|l| l["l"].as_u64().unwrap()).collect::<Vec<_>>(), [10, 100]);
    // The skiplist's work per decision (counted, not timed) grows with L, but far slower than L:
    // O(log L), not O(L).
    let steps: Vec<f64> = logs.iter().map(|l| l["zset_steps_per_call"].as_f64().unwrap()).collect();
    assert!(steps[0] > 0.0 && steps[1] > steps[0] && steps[1] < 3.0 * steps[0], "{steps:?}");
    assert!(logs.iter().all(|l| l["commands_per_sec"].as_f64().unwrap() > 0.0));
    for l in logs {
        for engine in ["native", "emulator", "seed_emulator"] {
            let m = &l[engine];
            assert_checked(m, &format!("L = {} {engine}", l["l"]));
            // The log stays full and every call is admitted (one entry leaves as one arrives).
            assert_eq!(m["check"]["allowed"], m["check"]["compared"], "{engine}: {m}");
        }
    }
    assert!(r["machine"]["cores"].as_u64().unwrap() >= 1);
}

#[test]
fn text_output_has_both_tables_and_every_column() {
    let out = limitlab(&[
        "bench",
        "--quick",
        "--no-redis",
        "--only",
        "fixed_window,seed_sliding_log",
        "--log-sizes",
        "10,100",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    let lines: Vec<&str> = s.lines().collect();
    assert!(lines[0].starts_with("Machine: ") && lines[0].contains(" cores, "), "{s}");
    assert!(lines[0].contains("no real Redis") && lines[0].contains("Quick run"), "{s}");
    assert_eq!(lines[1], "");
    assert_eq!(lines[2], "Decisions per second, one engine at a time");
    for col in [
        "Script",
        "Native (Rust)",
        "Emulator",
        "Redis, 1 connection",
        "Redis, pipeline 16",
        "Redis, pipeline 64",
        "Emulator / Redis",
        "Emulator / pipelined",
        "Native / emulator",
        "Emulator, direct",
        "Spec path / direct",
    ] {
        assert!(lines[3].contains(col), "missing column {col}: {}", lines[3]);
    }
    assert!(lines[5].starts_with("fixed_window ") && lines[6].starts_with("seed_sliding_log "), "{s}");
    // Without a server the Redis cells and ratios are dashes; native / emulator is a ratio.
    let cells: Vec<&str> = lines[5].split_whitespace().collect();
    assert_eq!(cells.len(), 11, "{}", lines[5]);
    assert_eq!(&cells[3..8], ["-", "-", "-", "-", "-"]);
    assert!(cells[8].ends_with('x'), "{}", lines[5]);
    // The spec path against the hand-written path: a rate and their ratio.
    assert!(cells[9].chars().all(|c| c.is_ascii_digit() || c == ','), "{}", lines[5]);
    assert!(cells[10].parse::<f64>().is_ok_and(|r| r > 0.0), "{}", lines[5]);
    assert!(s.contains("Redis columns empty: no real Redis (--no-redis)."), "{s}");
    assert!(s.contains("Checked: every engine's decisions equal the reference model's"), "{s}");
    assert!(s.contains("\nSliding log, log full: decisions per second against its size L\n"), "{s}");
    assert!(s.contains("From L = 10 to 100: the log is 10 times longer"), "{s}");

    let md = limitlab(&["bench", "--quick", "--no-redis", "--only", "gcra", "--log-sizes", "10", "--markdown"]);
    let md = text(&md.stdout);
    assert!(
        md.contains("### Decisions per second, one engine at a time\n\n| Script | Native (Rust) | Emulator |"),
        "{md}"
    );
    assert!(md.contains("\n| gcra | "), "{md}");
    // Without a sliding log among the scripts there is no size table.
    assert!(!md.contains("Sliding log, log full"), "{md}");
}

#[test]
fn a_real_redis_fills_the_redis_columns_and_is_left_clean() {
    let Some(server) = RedisServer::start_or_skip("a_real_redis_fills_the_redis_columns_and_is_left_clean") else {
        return;
    };
    let r = bench_json(&[
        "--redis",
        &server.url(),
        "--only",
        "fixed_window,sliding_log,seed_sliding_window,seed_token_bucket",
        "--pipeline",
        "4,16",
        "--log-sizes",
        "10,100",
    ]);
    assert_eq!(r["redis"]["source"], "url");
    assert!(r["redis"]["version"].as_str().is_some_and(|v| v.starts_with("7.")), "{}", r["redis"]);
    assert!(r["redis"]["note"].is_null());
    assert_eq!(r["pipelines"], serde_json::json!([4, 16]));
    for s in r["scripts"].as_array().unwrap() {
        let name = s["algorithm"].as_str().unwrap();
        assert_checked(&s["redis_single"], &format!("{name} redis"));
        // The server's own time inside EVALSHA was read from INFO commandstats.
        assert!(s["redis_server_usec"].as_f64().is_some_and(|u| u > 0.0), "{name}: {}", s["redis_server_usec"]);
        let p = s["redis_pipelined"].as_array().unwrap();
        assert_eq!(p.iter().map(|p| p["depth"].as_u64().unwrap()).collect::<Vec<_>>(), [4, 16]);
        for x in p {
            assert_checked(&x["measure"], &format!("{name} pipeline {}", x["depth"]));
        }
    }
    for l in r["sliding_log"].as_array().unwrap() {
        assert_eq!(l["redis_pipelined"]["depth"], 16);
        assert_checked(&l["redis_pipelined"]["measure"], "sliding log on redis");
    }
    // Every key the run wrote is gone.
    let client = redis::Client::open(server.url()).unwrap();
    let mut c = client.get_connection().unwrap();
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 0, "the benchmark left keys behind");
}

#[test]
fn bad_arguments_are_user_errors() {
    for (args, needle) in [
        (&["bench", "--pipeline", "1"][..], "--pipeline"),
        (&["bench", "--log-sizes", "0"][..], "--log-sizes"),
        (&["bench", "--only", "leaky"][..], "unknown algorithm `leaky`"),
    ] {
        let out = limitlab(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let e = text(&out.stderr);
        assert!(e.contains(needle) && !e.contains("panicked"), "{args:?}: {e}");
        assert!(out.stdout.is_empty());
    }
    // A --redis URL that cannot be reached is an error, not an empty column.
    let out = limitlab(&["bench", "--quick", "--redis", "redis://127.0.0.1:1", "--only", "gcra"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).contains("127.0.0.1:1"), "{}", text(&out.stderr));
}

/// `--script` takes a spec or a name, repeatable, as on every other command (the README says a spec
/// goes wherever a built-in name goes); `--only` is the same list comma-separated.
#[test]
fn script_takes_a_users_spec_as_on_the_other_commands() {
    let r = bench_json(&[
        "--no-redis",
        "--script",
        "tests/fixtures/upstash_fixed_window.toml",
        "--script",
        "gcra",
        "--log-sizes",
        "10",
    ]);
    let names: Vec<&str> = r["scripts"].as_array().unwrap().iter().map(|s| s["algorithm"].as_str().unwrap()).collect();
    assert_eq!(names, ["upstash_fixed_window", "gcra"]);
    let out = limitlab(&["bench", "--quick", "--no-redis", "--script", "tests/fixtures/nope.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--script"), "{}", text(&out.stderr));
}
