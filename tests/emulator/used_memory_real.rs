//! The `used_memory` growth model (`limitlab_emulator::used_memory`, printed by `limitlab memory`
//! and `check`) against a private Redis 7.0.15: for every shipped script (the nine of `limitlab
//! memory`), 10,000 and 100,000 subjects are loaded into an empty server by running the script
//! for each (10 calls a subject at 10 per minute, the seed's pace), and the growth of `INFO
//! memory`'s `used_memory` must be within 2% of the model's, both over the whole keyspace and
//! extrapolated from one subject. A sliding log past 128 members (a skiplist, node levels random on
//! the server) is loaded at 3,000 subjects too (600,000 calls). 1,000,000 subjects: `benches/used_memory.sh`.
//!
//! The test starts its own `redis-server`; without one it prints why and passes, unless `CI` is set.
use crate::common;

use limitlab_cli::verify::used_memory::check;
use limitlab_engine::limiter::{Limiter, Params, Variant};

const TOLERANCE: f64 = 0.02;

fn run(server: &common::RedisServer, v: Variant, params: Params, subjects: u64, calls: u64) -> String {
    let limiter = Limiter::new(v, params).unwrap();
    let r = check(&server.url(), &limiter, subjects, calls, |_| {}).unwrap_or_else(|e| panic!("{v} at {subjects}: {e}"));
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

#[test]
fn used_memory_growth_of_every_shipped_script() {
    let Some(server) = common::RedisServer::start_or_skip("used_memory_growth_of_every_shipped_script") else { return };
    let params = Params::new(10, 60_000);
    let mut lines = Vec::new();
    for subjects in [10_000, 100_000] {
        for v in Variant::ALL {
            lines.push(run(&server, v, params, subjects, params.limit));
        }
    }
    // A sliding log of 200 members: a skiplist sorted set.
    {
        let v = Variant::ALL.iter().copied().find(|v| v.name() == "sliding_log").unwrap();
        lines.push(run(&server, v, Params::new(200, 60_000), 3_000, 200));
    }
    println!("{}", lines.join("\n"));
}
