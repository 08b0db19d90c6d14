//! MEMORY USAGE of every key the limiter scripts create, on the emulator's model and on a real
//! Redis 7.0: each script (production and seed) at limits of 10, 100, 1,000 and 10,000 per minute,
//! the same calls on both, compared key by key with `SAMPLES 0`.
//!
//! The calls come at the seed's pace (the limit in 50 s of a minute). Keys are measured twice: when
//! the first window has just filled (a sorted set of 10,000 members is then still rehashing its
//! dict on a real server) and after three windows, when every script refuses calls and the logs
//! slide. Exact encodings (integers, listpack hashes and sorted sets) must match to the byte; a
//! skiplist within 5% (its node levels are random on a real server; the model uses their expected
//! size). A table of both figures is printed.
//!
//! The test starts its own `redis-server`; without one it prints why and passes, unless `CI` is set.
use crate::common;

use limitlab_cli::report::memory::{fill_times, with_long_ttls};
use limitlab_emulator::clock::{Millis, VirtualClock, DEFAULT_START};
use limitlab_emulator::{Emulator, Reply};
use limitlab_engine::limiter::{subject_key, Limiter, Params, Variant};

const WINDOW_MS: u64 = 60_000;
const LIMITS: [u64; 4] = [10, 100, 1_000, 10_000];
const TOLERANCE: f64 = 0.05;

fn to_reply(v: redis::Value) -> Reply {
    match v {
        redis::Value::Int(i) => Reply::Int(i),
        redis::Value::Nil => Reply::Nil,
        redis::Value::BulkString(b) => Reply::Bulk(b),
        redis::Value::Array(a) => Reply::Array(a.into_iter().map(to_reply).collect()),
        redis::Value::SimpleString(s) => Reply::Status(s),
        redis::Value::Okay => Reply::Status("OK".into()),
        redis::Value::ServerError(e) => Reply::Error(format!("{} {}", e.code(), e.details().unwrap_or_default())),
        other => panic!("unexpected reply {other:?}"),
    }
}

/// One measured key.
struct Row {
    script: &'static str,
    limit: u64,
    point: &'static str,
    key: String,
    encoding: String,
    model: i64,
    real: i64,
}

/// Runs `times` on both sides (the real server pipelined), checking the replies agree.
fn drive(
    emu: &mut Emulator,
    conn: &mut redis::Connection,
    limiter: &Limiter,
    real_sha: &str,
    key: &str,
    times: &[i64],
) {
    let sha = limiter.sha1().to_string();
    // KEYS and ARGV through the script's spec: its key template makes `rate:{<subject>}`.
    let subject = key.trim_start_matches("rate:{").trim_end_matches('}');
    let (mut k, mut a) = (Vec::new(), Vec::new());
    for chunk in times.chunks(1000) {
        let mut pipe = redis::pipe();
        let mut expected = Vec::with_capacity(chunk.len());
        for &t in chunk {
            limiter.render_single("", subject, t, 1, &mut k, &mut a).expect("the spec renders");
            assert_eq!(k[0], key);
            emu.clock().set_millis(Millis(t));
            let kb: Vec<&[u8]> = k.iter().map(|s| s.as_bytes()).collect();
            let ab: Vec<&[u8]> = a.iter().map(|s| s.as_bytes()).collect();
            expected.push(emu.evalsha(sha.as_bytes(), &kb, &ab));
            pipe.cmd("EVALSHA").arg(real_sha).arg(k.len()).arg(&k).arg(&a);
        }
        let got: Vec<redis::Value> = pipe.query(conn).expect("pipelined EVALSHA");
        for ((g, e), t) in got.into_iter().zip(expected).zip(chunk) {
            assert_eq!(to_reply(g), e, "{} at now_ms {t}: real and emulated replies differ", limiter.name());
        }
    }
}

fn measure(
    emu: &mut Emulator,
    conn: &mut redis::Connection,
    script: &'static str,
    limit: u64,
    point: &'static str,
    rows: &mut Vec<Row>,
) {
    let now = emu.core().now_ms();
    emu.core().db.purge_expired(now);
    let mut keys: Vec<Vec<u8>> = emu.core().db.map.keys().map(|k| k.to_vec()).collect();
    keys.sort();
    assert!(!keys.is_empty(), "{script} at {limit}: no keys");
    for k in keys {
        let model = match emu.execute(&[b"MEMORY", b"USAGE", &k, b"SAMPLES", b"0"]) {
            Reply::Int(n) => n,
            other => panic!("emulator MEMORY USAGE replied {other:?}"),
        };
        let real: Option<i64> =
            redis::cmd("MEMORY").arg("USAGE").arg(&k).arg("SAMPLES").arg(0).query(conn).expect("MEMORY USAGE");
        let real =
            real.unwrap_or_else(|| panic!("{script}: key {} missing on the real server", String::from_utf8_lossy(&k)));
        let encoding: String = redis::cmd("OBJECT").arg("ENCODING").arg(&k).query(conn).expect("OBJECT ENCODING");
        let emu_encoding = match emu.execute(&[b"OBJECT", b"ENCODING", &k]) {
            Reply::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("OBJECT ENCODING replied {other:?}"),
        };
        assert_eq!(emu_encoding, encoding, "{script} at {limit}: encodings differ");
        rows.push(Row { script, limit, point, key: String::from_utf8_lossy(&k).into_owned(), encoding, model, real });
    }
}

#[test]
fn memory_usage_of_every_script_key_matches_real_redis() {
    let Some(server) = common::RedisServer::start_or_skip("memory_usage_of_every_script_key_matches_real_redis") else {
        return;
    };
    let client = redis::Client::open(server.url()).expect("client");
    let mut conn = client.get_connection().expect("connection");
    let mut rows = Vec::new();
    for v in Variant::ALL {
        for limit in LIMITS {
            let params = Params::new(limit, WINDOW_MS);
            let limiter = Limiter::new(v, params).expect("valid parameters");
            let _: () = redis::cmd("FLUSHALL").query(&mut conn).expect("FLUSHALL");
            let real_sha: String =
                redis::cmd("SCRIPT").arg("LOAD").arg(with_long_ttls(limiter.script())).query(&mut conn).expect("LOAD");
            let mut emu = Emulator::with_clock(VirtualClock::starting_at(DEFAULT_START));
            emu.script_load(limiter.script().as_bytes()).expect("script compiles");
            let key = subject_key(&format!("m{limit}"));
            // Three windows at the seed's pace: the first `limit` calls fill the first window.
            let times = fill_times(params, DEFAULT_START.0, limit * 18 / 5);
            let (fill, rest) = times.split_at(limit as usize);
            drive(&mut emu, &mut conn, &limiter, &real_sha, &key, fill);
            measure(&mut emu, &mut conn, v.name(), limit, "filled", &mut rows);
            drive(&mut emu, &mut conn, &limiter, &real_sha, &key, rest);
            measure(&mut emu, &mut conn, v.name(), limit, "3 windows", &mut rows);
        }
    }

    println!(
        "{:<20} {:>6} {:<10} {:<24} {:<9} {:>10} {:>10} {:>8}",
        "script", "limit", "when", "key", "encoding", "model", "redis", "diff"
    );
    let mut failures = Vec::new();
    for r in &rows {
        let diff = (r.model - r.real) as f64 / r.real as f64;
        println!(
            "{:<20} {:>6} {:<10} {:<24} {:<9} {:>10} {:>10} {:>+7.2}%",
            r.script,
            r.limit,
            r.point,
            r.key,
            r.encoding,
            r.model,
            r.real,
            diff * 100.0
        );
        let exact = r.encoding != "skiplist";
        if (exact && r.model != r.real) || diff.abs() > TOLERANCE {
            failures.push(format!(
                "{} at limit {} ({}), key {} ({}): model {} vs real {}",
                r.script, r.limit, r.point, r.key, r.encoding, r.model, r.real
            ));
        }
    }
    assert!(failures.is_empty(), "MEMORY USAGE differs:\n{}", failures.join("\n"));
}
