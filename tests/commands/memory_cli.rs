//! `limitlab memory`: the table (every script, bytes per user, the total for N users, the seed's
//! figures beside at its setting), JSON, argument errors (exit 2, a message naming the option), and
//! with `--redis` the real server's figures beside the model's, its own keys removed afterwards.
use crate::common;

use std::process::{Command, Output};

fn limitlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_limitlab")).args(args).output().expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The cells of the table row whose first cell starts with `name ` (cells are separated by two or
/// more spaces in text output).
fn row(out: &str, name: &str) -> Vec<String> {
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("{name} (")))
        .unwrap_or_else(|| panic!("no row for {name} in\n{out}"));
    line.split("  ").map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect()
}

#[test]
fn default_is_the_seed_setting_with_its_figures() {
    let out = limitlab(&["memory"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    // The seed's fixed window and sliding window key a window index too: the title names the
    // subject, a note those keys.
    assert!(s.starts_with("Memory per user: limit 1,000 per 60,000 ms, 1,000 calls in the window, subject user42\n"));
    assert!(s.contains("\nseed_fixed_window's key: rate:{user42}:28401120.\n"), "{s}");
    // Exact figures (integers and listpacks); a real Redis 7.0.15 gives the same.
    // used_memory growth: a 32-byte dict entry (24 in MEMORY USAGE), 32 for the expires entry,
    // 16.8 bytes of buckets (two tables of 2^20 for a million keys); shared integers cost nothing.
    assert_eq!(
        row(&s, "fixed_window"),
        ["fixed_window (Fixed window)", "1", "88", "83.9 MB", "56", "53.4 MB", "145", "138.1 MB"]
    );
    assert_eq!(row(&s, "gcra"), ["gcra (GCRA)", "1", "56", "53.4 MB", "-", "-", "113", "107.6 MB"]);
    assert_eq!(
        row(&s, "seed_fixed_window"),
        ["seed_fixed_window (Fixed window)", "1", "72", "68.7 MB", "56", "53.4 MB", "113", "107.6 MB"]
    );
    assert_eq!(
        row(&s, "seed_token_bucket"),
        ["seed_token_bucket (Token bucket)", "1", "104", "99.2 MB", "72", "68.7 MB", "161", "153.3 MB"]
    );
    assert_eq!(row(&s, "sliding_window")[4..], ["56", "-", "145", "138.1 MB"]);
    // The sorted sets of 1,000 members: skiplists, near 94 KB and 118 KB.
    let log = row(&s, "sliding_log");
    assert_eq!(log[5], "87,913.5 MB");
    let bytes: u64 = log[2].replace(',', "").parse().unwrap();
    assert!((90_000..100_000).contains(&bytes), "{bytes}");
    assert!(s.contains("MB: 2^20 bytes, as the seed article counts"));
    // Nine scripts, and the same bytes on every run.
    for v in limitlab_engine::limiter::Variant::ALL {
        assert_eq!(row(&s, v.name()).len(), 8, "{v}");
    }
    assert_eq!(text(&limitlab(&["memory"]).stdout), s);
}

#[test]
fn users_and_limit_change_the_totals() {
    let out = limitlab(&["memory", "--users", "2000000", "--limit", "10/sec"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(s.starts_with("Memory per user: limit 10 per 1,000 ms, 10 calls in the window"), "{s}");
    assert!(s.contains("2,000,000 users"));
    assert!(s.contains("The seed article measured a limit of 1,000 per minute only"));
    // 88 bytes x 2,000,000 / 2^20.
    assert_eq!(row(&s, "fixed_window")[..4], ["fixed_window (Fixed window)", "1", "88", "167.8 MB"]);
    // Ten members: a listpack, exact.
    assert_eq!(row(&s, "seed_sliding_log")[2], "376");

    let out = limitlab(&["memory", "--users", "5", "--limit", "100/250ms", "--subject", "a-much-longer-subject-name"]);
    let s = text(&out.stdout);
    assert!(s.contains(", subject a-much-longer-subject-name\n"), "{s}");
    assert!(s.contains("\nseed_fixed_window's key: rate:{a-much-longer-subject-name}:"), "{s}");
    // A 33-byte key needs a 48-byte allocation instead of 16.
    assert_eq!(row(&s, "gcra")[2], "88");
}

#[test]
fn json_lists_each_key() {
    let out = limitlab(&["memory", "--json", "--users", "10"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["users"], 10);
    assert_eq!(v["limit"], 1000);
    assert_eq!(v["window_ms"], 60000);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 9);
    let fw = rows.iter().find(|r| r["algorithm"] == "seed_fixed_window").unwrap();
    assert_eq!(fw["keys"][0]["key"], "rate:{user42}:28401120");
    assert_eq!(fw["keys"][0]["bytes"], 72);
    assert_eq!(fw["total_bytes"], 720);
    assert_eq!(fw["seed_total_mb"], serde_json::Value::Null);
    assert_eq!(fw["seed_bytes_per_user"], 56);
    assert_eq!(fw["used_memory"]["keys_with_ttl"], 10);
    assert_eq!(fw["used_memory"]["main_table"], 8 * 16);
    assert_eq!(fw["used_memory"]["memory_usage_per_subject"], 72);
}

#[test]
fn argument_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&["--limit", "1000"], "limitlab: --limit: field `N/PERIOD`: `1000` has no `/`: expected N/sec, N/min, N/hour or N/<ms>ms, e.g. 1000/min or 100/250ms\n"),
        (&["--limit", "abc/min"], "limitlab: --limit: field `N/PERIOD`: `abc` is not a whole number of requests: expected N/sec, N/min, N/hour or N/<ms>ms, e.g. 1000/min or 100/250ms\n"),
        (&["--limit", "10/day"], "limitlab: --limit: field `N/PERIOD`: `day` is not a period: expected N/sec, N/min, N/hour or N/<ms>ms, e.g. 1000/min or 100/250ms\n"),
        (&["--limit", "0/min"], "limitlab: --limit: field `N/PERIOD`: the number of requests must be from 1 to 1000000, got 0\n"),
        (&["--limit", "10/0ms"], "limitlab: --limit: field `N/PERIOD`: `0ms`: the period in ms must be from 1 to 999999999999999\n"),
        (&["--users", "0"], "limitlab: --users: field `N`: must be from 1 to 1000000000, got 0\n"),
        (&["--subject", ""], "limitlab: --subject: field `NAME`: must be 1 to 1024 bytes long\n"),
        (&["--redis", "nonsense"], "limitlab: --redis: field `URL`: `nonsense` is not a Redis URL"),
    ];
    for (args, want) in cases {
        let mut all = vec!["memory"];
        all.extend_from_slice(args);
        let out = limitlab(&all);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(err.starts_with(want), "{args:?}:\n{err}\nwanted\n{want}");
    }
    // clap's own checks: a non-number for --users.
    let out = limitlab(&["memory", "--users", "many"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("invalid value 'many' for '--users <N>'"));
}

#[test]
fn real_redis_beside_the_model() {
    let Some(server) = common::RedisServer::start_or_skip("memory_cli real_redis_beside_the_model") else { return };
    let client = redis::Client::open(server.url()).expect("client");
    let mut conn = client.get_connection().expect("connection");
    let _: () = redis::cmd("SET").arg("someone:else").arg("1").query(&mut conn).unwrap();
    let out = limitlab(&["memory", "--limit", "200/min", "--redis", &server.url()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(s.contains("Real Redis: per user"), "{s}");
    for name in ["fixed_window", "gcra", "seed_fixed_window", "seed_token_bucket", "sliding_log", "seed_sliding_log"] {
        let r = row(&s, name);
        // Model per user, real per user, "+0.00%": at 200 members a sorted set is a skiplist, but
        // the model's expected node size is within 5% of any real draw.
        let model: f64 = r[2].replace(',', "").parse().unwrap();
        let real: f64 = r[8].replace(',', "").parse().unwrap();
        assert!((model - real).abs() / real <= 0.05, "{name}: {r:?}");
        if !name.contains("sliding_log") {
            assert_eq!(r[10], "+0.00%", "{name}: {r:?}");
        }
    }
    // Only the run's own keys were written, and they are gone.
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    assert_eq!(keys, ["someone:else"]);
}

/// A spec's row is labelled as the user's, and its own key is printed, not limitlab's.
#[test]
fn a_spec_shows_its_own_key_and_is_labelled_yours() {
    let spec = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/upstash_fixed_window.toml");
    let out = limitlab(&["memory", "--script", spec]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(
        s.starts_with("Memory per user: limit 1,000 per 60,000 ms, 1,000 calls in the window, subject user42\n"),
        "{s}"
    );
    assert!(!s.contains("rate:{user42}"), "{s}");
    assert!(s.contains("\nupstash_fixed_window's key: ratelimit:{user42}:28401120.\n"), "{s}");
    assert_eq!(row(&s, "upstash_fixed_window")[0], "upstash_fixed_window (your spec)");
    assert!(s.contains("\nRows marked (your spec) run your spec files.\n"), "{s}");
    // Beside a built-in one, whose key is limitlab's.
    let out = limitlab(&["memory", "--script", spec, "--script", "gcra"]);
    let s = text(&out.stdout);
    assert!(s.contains("\nRows named after an algorithm (fixed_window, ...) are limitlab's production scripts; rows marked (your spec) run your spec files.\n"), "{s}");
    assert!(!s.contains("gcra's key"), "{s}");
}
