//! The rate-limiter scripts on a real `redis-server`, call for call against their Rust references.
//!
//! Each test starts its own `redis-server` with `tests/common`'s helper (free loopback port, ready on
//! PING). Without one the tests print why and pass, unless the environment variable `CI` is set, where
//! a missing server is a failure.
//!
//! A real server expires keys on its own wall clock while the scripts read `now_ms` from ARGV, so
//! two regimes are used:
//! - long windows (minutes to hours): no TTL can run out during the test, so the reference models
//!   run on the server's own clock (read with TIME around every call) and every key's PTTL is
//!   checked against the model's deadline, to the millisecond the call took;
//! - any windows, with the models on a frozen server clock and each script run behind a shim that
//!   adds 10^9 ms to every TTL it sets, so decisions are compared for arbitrary parameters without
//!   expiry getting in the way (no script reads a TTL, so longer TTLs change no decision).
//!
//! Both drive every script with seeded random calls over three subjects, including lagging clocks
//! (skew), costs of 0 and above the capacity; a failure prints the seed and the call.
use crate::common;

use std::time::Instant;

use common::RedisServer;
use limitlab_emulator::Reply;
use limitlab_engine::limiter::{Flavor, Limiter, Params, Variant};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A private server from the shared helper, or `None` (after saying why) when there is no `redis-server`.
fn start_server() -> Option<RedisServer> {
    RedisServer::start_or_skip("the real-Redis limiter tests")
}

fn connect(server: &RedisServer) -> redis::Connection {
    let client = redis::Client::open(server.url()).expect("client");
    client.get_connection().expect("connection")
}

/// A redis-rs value as the emulator's [`Reply`], which is what `Limiter::parse_reply` reads.
fn to_reply(v: &redis::Value) -> Reply {
    match v {
        redis::Value::Nil => Reply::Nil,
        redis::Value::Int(i) => Reply::Int(*i),
        redis::Value::BulkString(b) => Reply::Bulk(b.clone()),
        redis::Value::SimpleString(s) => Reply::Status(s.clone()),
        redis::Value::Okay => Reply::ok(),
        redis::Value::Array(a) => Reply::Array(a.iter().map(to_reply).collect()),
        redis::Value::ServerError(e) => Reply::Error(match e.details() {
            Some(d) => format!("{} {d}", e.code()),
            None => e.code().to_string(),
        }),
        other => panic!("unexpected RESP2 value {other:?}"),
    }
}

fn error_text(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(c), Some(d)) => format!("{c} {d}"),
        _ => e.to_string(),
    }
}

/// TIME as milliseconds.
fn ms(v: &redis::Value) -> i64 {
    match v {
        redis::Value::Array(a) => {
            let num = |x: &redis::Value| match x {
                redis::Value::BulkString(b) => std::str::from_utf8(b).unwrap().parse::<i64>().unwrap(),
                other => panic!("TIME field {other:?}"),
            };
            num(&a[0]) * 1000 + num(&a[1]) / 1000
        }
        other => panic!("TIME reply {other:?}"),
    }
}

/// Lists every key with its PTTL.
const INSPECT: &str = "local out = {}
for _, k in ipairs(redis.call('KEYS', '*')) do
  out[#out + 1] = k
  out[#out + 1] = redis.call('PTTL', k)
end
return out";

/// Put before a script, shadows `redis` with a table whose `call` adds 10^9 ms to the TTLs of
/// PEXPIRE and SET ... PX, so that no key can expire on the server's wall clock during a test
/// (even a 1 ms TTL would, between two pipelined commands). Nothing else changes.
const LONG_TTL_SHIM: &str = "local redis = (function(real)
  local shim = setmetatable({}, {__index = real})
  shim.call = function(cmd, ...)
    local a = {...}
    if cmd == 'PEXPIRE' then a[2] = a[2] + 1000000000 end
    if cmd == 'SET' and a[3] == 'PX' then a[4] = a[4] + 1000000000 end
    return real.call(cmd, unpack(a))
  end
  return shim
end)(redis)
";

fn keyspace(v: &redis::Value) -> Vec<(String, i64)> {
    let redis::Value::Array(a) = v else { panic!("inspect reply {v:?}") };
    let mut out: Vec<(String, i64)> = a
        .chunks(2)
        .map(|kv| match kv {
            [redis::Value::BulkString(k), redis::Value::Int(t)] => (String::from_utf8(k.clone()).unwrap(), *t),
            other => panic!("inspect pair {other:?}"),
        })
        .collect();
    out.sort();
    out
}

/// The next newest time: mostly small steps, sometimes none, sometimes past whole windows;
/// `pressure` adds that many tenths of extra "none" (seed scripts always cost 1, so they need
/// denser traffic to be refused as often).
fn step(rng: &mut ChaCha8Rng, window: i64, pressure: u32) -> i64 {
    match rng.random_range(0..10 + pressure) {
        3..=5 => rng.random_range(1..=3),
        6..=7 => rng.random_range(0..=window),
        8 => window,
        9 => rng.random_range(0..=3 * window),
        _ => 0,
    }
}

fn random_cost(rng: &mut ChaCha8Rng, capacity: u64) -> u64 {
    match rng.random_range(0..10) {
        0 => 0,
        1 => capacity,
        2 => capacity + 1,
        3 => rng.random_range(1..=capacity),
        _ => 1,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Regime {
    /// Long windows; models on the server's clock; TTLs checked.
    ServerClock,
    /// Any windows; TTLs lengthened by 10^9 ms; models on a frozen clock.
    LongTtl,
}

fn random_params(rng: &mut ChaCha8Rng, v: Variant, regime: Regime) -> Params {
    let (limit, window) = match regime {
        // Shortest TTL: a token bucket's window / limit >= 100 s, far beyond the test's run time.
        Regime::ServerClock => {
            let limit = rng.random_range(1..=20u64);
            let window = if rng.random_bool(0.5) {
                limit * rng.random_range(2_000..=20_000) * 1000
            } else {
                rng.random_range(2_000_000..=20_000_000)
            };
            (limit, window)
        }
        Regime::LongTtl => {
            let limit = if rng.random_bool(0.1) { rng.random_range(13..=200) } else { rng.random_range(1..=12) };
            let windows = [1, 2, 3, 7, 10, 100, 999, 1000, 1001, 60_000];
            let window = if rng.random_bool(0.2) {
                rng.random_range(1..=5000)
            } else {
                windows[rng.random_range(0..windows.len())]
            };
            (limit, window)
        }
    };
    let p = Params::new(limit, window);
    if v.takes_burst() && rng.random_bool(0.6) {
        p.with_burst(rng.random_range(1..=limit + 10))
    } else {
        p
    }
}

/// What a run exercised, so a test that compares nothing cannot pass unnoticed.
#[derive(Default)]
struct Seen {
    allowed: usize,
    refused: usize,
    never_fits: usize,
    lagging: usize,
}

/// Runs `calls` random calls of `v` on the server and on its reference, asserting they agree.
fn drive(con: &mut redis::Connection, v: Variant, regime: Regime, seed: u64, calls: usize, seen: &mut Seen) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let params = random_params(&mut rng, v, regime);
    let limiter = Limiter::new(v, params).expect("valid parameters");
    let _: () = redis::cmd("FLUSHALL").query(con).expect("FLUSHALL");
    let sha: String = match regime {
        Regime::ServerClock => {
            let sha: String = redis::cmd("SCRIPT").arg("LOAD").arg(limiter.script()).query(con).expect("SCRIPT LOAD");
            assert_eq!(sha, limiter.sha1(), "{v}: SHA1");
            sha
        }
        Regime::LongTtl => {
            let shimmed = format!("{LONG_TTL_SHIM}{}", limiter.script());
            redis::cmd("SCRIPT").arg("LOAD").arg(shimmed).query(con).expect("SCRIPT LOAD")
        }
    };
    let mut model = limiter.reference().expect("a shipped script's model");
    let direct = limitlab_engine::limiter::direct::Direct::new(v, params).expect("valid parameters");
    let window = params.window_ms as i64;
    let mut newest: i64 = 1_704_067_200_000 + rng.random_range(0..=window.min(10_000_000));
    let mut slowest_call = 0;
    let (mut keys, mut args) = (Vec::new(), Vec::new());
    for i in 0..calls {
        newest += step(&mut rng, window, if v.takes_cost() { 0 } else { 10 });
        let lagging = rng.random_bool(0.1);
        let now = if lagging { newest - rng.random_range(1..=2 * window) } else { newest };
        let subject = ["rate:{a}", "rate:{b}", "rate:{c}"][rng.random_range(0..3)];
        let cost = if v.takes_cost() { random_cost(&mut rng, params.capacity()) } else { 1 };
        limiter.check_call(now, cost).expect("valid call");
        direct.write_keys_and_args(subject, now, cost, &mut keys, &mut args);

        let mut pipe = redis::pipe();
        pipe.cmd("TIME");
        pipe.cmd("EVALSHA").arg(&sha).arg(keys.len()).arg(&keys).arg(&args);
        pipe.cmd("EVAL").arg(INSPECT).arg(0);
        pipe.cmd("TIME");
        let out: Vec<redis::Value> = pipe.ignore_errors().query(con).expect("pipeline");
        let (t0, t1) = (ms(&out[0]), ms(&out[3]));
        slowest_call = slowest_call.max(t1 - t0);

        let server_ms = if regime == Regime::ServerClock { t0 } else { 0 };
        let want = model.decide_at(server_ms, subject, now, cost);
        let context = || {
            format!("{v} seed {seed} call {i} {params:?}: subject {subject} now {now} (newest {newest}) cost {cost}")
        };
        let got = direct.parse_reply(&to_reply(&out[1])).unwrap_or_else(|e| panic!("{}: {e}", context()));
        assert_eq!(got, want, "{}", context());
        seen.lagging += usize::from(lagging);
        match (got.allowed, v.flavor() == Flavor::Ours && got.never_fits()) {
            (true, _) => seen.allowed += 1,
            (false, true) => seen.never_fits += 1,
            (false, false) => seen.refused += 1,
        }

        let real = keyspace(&out[2]);
        let modelled = model.keys(server_ms);
        let names = |v: &[(String, i64)]| v.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        let model_names: Vec<String> = modelled.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(names(&real), model_names, "{}: keys", context());
        if regime == Regime::ServerClock {
            for ((key, pttl), (_, deadline)) in real.iter().zip(&modelled) {
                let deadline = deadline.unwrap_or_else(|| panic!("{}: {key} has no TTL in the model", context()));
                // Set at a server time within [t0, t1] of its call; read within [t0, t1] of this one.
                let (low, high) = (deadline - t1, deadline - t0 + slowest_call);
                assert!(
                    (low..=high).contains(pttl),
                    "{}: PTTL {key} = {pttl}, model deadline {deadline} gives {low}..={high}",
                    context()
                );
            }
        }
    }
}

#[test]
fn scripts_decide_exactly_as_their_references() {
    let Some(server) = start_server() else { return };
    let mut con = connect(&server);
    let started = Instant::now();
    for v in Variant::ALL {
        let mut seen = Seen::default();
        for seed in 0..4 {
            drive(&mut con, v, Regime::ServerClock, seed, 300, &mut seen);
        }
        for seed in 100..112 {
            drive(&mut con, v, Regime::LongTtl, seed, 300, &mut seen);
        }
        eprintln!(
            "{v}: {} allowed, {} refused, {} never fit, {} from a lagging clock",
            seen.allowed, seen.refused, seen.never_fits, seen.lagging
        );
        assert!(seen.allowed > 200 && seen.refused > 200 && seen.lagging > 100, "{v}: too few cases");
        if v.flavor() == Flavor::Ours {
            assert!(seen.never_fits > 50, "{v}: too few costs above the capacity");
        }
    }
    eprintln!("real-Redis limiter conformance took {:?}", started.elapsed());
}

#[test]
fn production_scripts_reject_bad_arguments_with_their_own_errors() {
    let Some(server) = start_server() else { return };
    let mut con = connect(&server);
    let eval = |con: &mut redis::Connection, v: Variant, keys: &[&str], args: &[&str]| -> String {
        let r: redis::RedisResult<redis::Value> =
            redis::cmd("EVAL").arg(v.script()).arg(keys.len()).arg(keys).arg(args).query(con);
        match r {
            Ok(value) => format!("{:?}", to_reply(&value)),
            Err(e) => error_text(&e),
        }
    };
    let range = |name: &str, lo: u8| format!("ERR invalid {name}: expected an integer from {lo} to 999999999999999");
    for v in Variant::ALL.into_iter().filter(|v| v.flavor() == Flavor::Ours) {
        let name = v.name();
        let k = ["rate:{u}"];
        assert_eq!(
            eval(&mut con, v, &[], &["1", "1000", "5"]),
            format!("ERR {name} takes exactly 1 key: the subject, e.g. rate:{{user42}}")
        );
        assert_eq!(
            eval(&mut con, v, &["rate:{u}", "rate:{u}:x"], &["1", "1000", "5"]),
            eval(&mut con, v, &[], &["1", "1000", "5"])
        );
        let usage = if v.takes_burst() {
            format!("ERR {name} takes ARGV limit window_ms now_ms [cost [burst]]")
        } else {
            format!("ERR {name} takes ARGV limit window_ms now_ms [cost]")
        };
        assert_eq!(eval(&mut con, v, &k, &["1", "1000"]), usage);
        assert_eq!(eval(&mut con, v, &k, &["1", "1000", "5", "1", "1", "1"]), usage);
        assert_eq!(eval(&mut con, v, &k, &["0", "1000", "5"]), range("limit", 1));
        assert_eq!(eval(&mut con, v, &k, &["1.5", "1000", "5"]), range("limit", 1));
        assert_eq!(eval(&mut con, v, &k, &["1", "-1000", "5"]), range("window_ms", 1));
        assert_eq!(eval(&mut con, v, &k, &["1", "0x10", "5"]), range("window_ms", 1));
        assert_eq!(eval(&mut con, v, &k, &["1", "1000", "1e3"]), range("now_ms", 0));
        assert_eq!(eval(&mut con, v, &k, &["1", "1000", "1000000000000000"]), range("now_ms", 0));
        assert_eq!(eval(&mut con, v, &k, &["1", "1000", " 5"]), range("now_ms", 0));
        assert_eq!(eval(&mut con, v, &k, &["1", "1000", "5", ""]), range("cost", 0));
        assert_eq!(eval(&mut con, v, &k, &["1", "1000", "5", "-1"]), range("cost", 0));
        if v.takes_burst() {
            assert_eq!(eval(&mut con, v, &k, &["1", "1000", "5", "1", "0"]), range("burst", 1));
            assert_eq!(
                eval(&mut con, v, &k, &["1", "1073741824", "5", "1", "1048577"]),
                "ERR invalid burst and window_ms: burst * window_ms must not exceed 2^50"
            );
        }
        // Nothing was written by any refused call.
        let n: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
        assert_eq!(n, 0, "{name} wrote on bad input");
    }
    assert_eq!(
        eval(&mut con, Variant::SLIDING_WINDOW, &["rate:{u}"], &["1048577", "1073741824", "5"]),
        "ERR invalid limit and window_ms: limit * window_ms must not exceed 2^50"
    );
    assert_eq!(
        eval(&mut con, Variant::GCRA, &["rate:{u}"], &["6007", "1000", "1704067200000"]),
        "ERR invalid now_ms for this limit: now_ms * limit / gcd(limit, window_ms) must not exceed 2^51"
    );
    // The same limits are accepted right at the bounds.
    let ok = eval(&mut con, Variant::SLIDING_WINDOW, &["rate:{u}"], &["1048576", "1073741824", "5"]);
    assert!(ok.starts_with("Array"), "{ok}");
}

#[test]
fn production_scripts_store_compact_values() {
    let Some(server) = start_server() else { return };
    let mut con = connect(&server);
    let key = "rate:{user42}";
    let now = 1_704_067_200_123i64;
    let expect = [
        (Variant::FIXED_WINDOW, "hash", "listpack"),
        (Variant::SLIDING_WINDOW, "hash", "listpack"),
        (Variant::SLIDING_LOG, "zset", "listpack"),
        (Variant::TOKEN_BUCKET, "hash", "listpack"),
        (Variant::GCRA, "string", "int"),
    ];
    for (v, ty, encoding) in expect {
        let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
        let limiter = limitlab_engine::limiter::direct::Direct::new(v, Params::new(1000, 60_000)).unwrap();
        for i in 0..100 {
            let (k, a) = limiter.keys_and_args(key, now + i * 7, 1);
            let r: redis::Value =
                redis::cmd("EVAL").arg(limiter.script()).arg(1).arg(&k).arg(&a).query(&mut con).unwrap();
            assert!(limiter.parse_reply(&to_reply(&r)).unwrap().allowed);
        }
        let t: String = redis::cmd("TYPE").arg(key).query(&mut con).unwrap();
        let e: String = redis::cmd("OBJECT").arg("ENCODING").arg(key).query(&mut con).unwrap();
        let bytes: i64 = redis::cmd("MEMORY").arg("USAGE").arg(key).arg("SAMPLES").arg(0).query(&mut con).unwrap();
        let keys: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
        eprintln!("{v}: {t} ({e}), {bytes} bytes after 100 requests");
        assert_eq!((t.as_str(), e.as_str(), keys), (ty, encoding, 1), "{v}");
    }
}
