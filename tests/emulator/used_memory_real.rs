//! The `used_memory` growth model (`limitlab_emulator::used_memory`, printed by `limitlab memory`
//! and `check`) against a private Redis 7.0.15: subjects are loaded into an empty server by running
//! a script for each (10 calls a subject at 10 per minute, the seed's pace), and the growth of
//! `INFO memory`'s `used_memory` must be within 2% of the model's, both over the whole keyspace and
//! extrapolated from one subject.
//! - Every shipped script (the nine of `limitlab memory`) at 10,000 subjects.
//! - At 100,000 subjects (past the main dict's and the expires dict's 65,536-bucket step), one
//!   script per encoding of the state: an integer string (fixed window), a listpack hash (token
//!   bucket), a listpack sorted set (sliding log). The tables' growth does not depend on which
//!   script wrote the keys, only on their number and encoding, so the other six add time and no
//!   coverage; `benches/used_memory.sh` runs all nine at 1,000,000.
//! - A sliding log past 128 members (a skiplist, node levels random on the server) at 3,000
//!   subjects (600,000 calls).
//!
//! Each test starts its own `redis-server` (so the three run side by side); without one it prints
//! why and passes, unless `CI` is set.
use crate::common;

use limitlab_cli::verify::used_memory::check;
use limitlab_engine::limiter::{Limiter, Params, Variant};

/// How far the measured growth may be from the model's, as a share of it.
///
/// The measured spread (2026-12-07, the 2-core VM at load average 8.4 to 10.1 from other builds,
/// three runs of these three tests, the last two with two `yes > /dev/null` beside them):
/// - 10,000 subjects, all nine scripts: 0 bytes from the model in every run.
/// - 100,000 subjects (integer string, listpack hash, listpack sorted set): +16 to +24 bytes of
///   14.9 to 27.7 MB (0.0002%).
/// - the skiplist sliding log at 3,000 subjects (node levels drawn at random by the server):
///   64,762,400, 64,737,072 and 64,757,760 bytes against 64,754,536 (-0.027% to +0.012%).
///
/// The worst is 0.027%; 2% is 70 times that, and still below the smallest modelling mistake the
/// test exists to catch (one allocation's rounding missed, 8 bytes a key, is 5% of the 154 bytes a
/// fixed-window subject adds).
/// What moved readings by more under load were not spreads but leaks into the reading (a closed
/// connection's buffers, 40,968 bytes; the slow log's copies of slow EVALSHAs, 3.2%), which the
/// reader now waits out or empties (`limitlab_cli::verify::used_memory::settled_used_memory`).
const TOLERANCE: f64 = 0.02;

fn run(server: &common::RedisServer, v: Variant, params: Params, subjects: u64, calls: u64) -> String {
    let limiter = Limiter::new(v, params).unwrap();
    let r =
        check(&server.url(), &limiter, subjects, calls, |_| {}).unwrap_or_else(|e| panic!("{v} at {subjects}: {e}"));
    let line = format!(
        "{:<20} {:>8} subjects {:>8} keys: measured {:>11}, model {:>13.0} ({:+.2}%), from one subject {:>13.0} ({:+.2}%), MEMORY USAGE {:>11}",
        r.script,
        r.subjects,
        r.keys,
        r.measured,
        r.predicted,
        r.error() * 100.0,
        r.extrapolated,
        r.extrapolation_error() * 100.0,
        r.memory_usage
    );
    eprintln!("{line}");
    assert!(r.error().abs() <= TOLERANCE, "{line}");
    assert!(r.extrapolation_error().abs() <= TOLERANCE, "{line}");
    // The point of the model: the server spends more than MEMORY USAGE says.
    assert!(r.measured as u64 > r.memory_usage, "{line}");
    line
}

/// Runs `v` at `subjects` on a fresh private server of its own.
fn on_own_server(test: &str, v: Variant, params: Params, subjects: u64, calls: u64) -> Option<String> {
    // DEBUG from 127.0.0.1, so that the reading can wait out a dict's rehash (settled_used_memory).
    if !common::require_binaries(test, &["redis-server"]) {
        return None;
    }
    let server = common::RedisServer::start_with(&["--enable-debug-command", "local"]);
    Some(run(&server, v, params, subjects, calls))
}

#[test]
fn used_memory_growth_of_every_shipped_script_at_10_000_subjects() {
    let params = Params::new(10, 60_000);
    let Some(server) =
        common::RedisServer::start_or_skip("used_memory_growth_of_every_shipped_script_at_10_000_subjects")
    else {
        return;
    };
    let lines: Vec<String> = Variant::ALL.iter().map(|&v| run(&server, v, params, 10_000, params.limit)).collect();
    println!("{}", lines.join("\n"));
}

#[test]
fn used_memory_growth_at_100_000_subjects_for_each_encoding() {
    let params = Params::new(10, 60_000);
    for v in [Variant::FIXED_WINDOW, Variant::TOKEN_BUCKET, Variant::SLIDING_LOG] {
        let Some(line) =
            on_own_server("used_memory_growth_at_100_000_subjects_for_each_encoding", v, params, 100_000, params.limit)
        else {
            return;
        };
        println!("{line}");
    }
}

#[test]
fn used_memory_growth_of_a_skiplist_sliding_log() {
    // A sliding log of 200 members: a skiplist sorted set.
    if let Some(line) = on_own_server(
        "used_memory_growth_of_a_skiplist_sliding_log",
        Variant::SLIDING_LOG,
        Params::new(200, 60_000),
        3_000,
        200,
    ) {
        println!("{line}");
    }
}
