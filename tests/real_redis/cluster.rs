//! The shipped scripts on a real three-master Redis Cluster, against the emulator in cluster mode.
//!
//! The harness (`common::RedisCluster`, over `limitlab_engine::backend::private`) builds the cluster from
//! `redis-server` nodes on loopback ports. Without it these tests print why and pass, unless `CI` is set.
use crate::common;

use common::RedisCluster;
use limitlab::sim::{self, Progress};
use limitlab_cli::verify::against_redis::first_divergence;
use limitlab_emulator::clock::{Micros, DEFAULT_START};
use limitlab_emulator::cluster::key_slot;
use limitlab_emulator::Reply;
use limitlab_engine::backend::emulated::EmulatedBackend;
use limitlab_engine::backend::real::{RealOptions, RealRedis};
use limitlab_engine::backend::{Backend, Script};
use limitlab_engine::limiter::{Limiter, Params, Variant};
use limitlab_engine::traffic::Arrival;

/// Calls by many subjects (spread over every master's slots), with bursts and idle gaps.
fn arrivals(subjects: usize, n: usize) -> Vec<Arrival> {
    let mut t = DEFAULT_START.0 * 1000;
    (0..n)
        .map(|i| {
            t += match i % 7 {
                0 => 0,
                3 => 900_000,
                _ => 37_000,
            };
            Arrival {
                at: Micros(t),
                key: format!("user{}", (i * 7) % subjects),
                cost: 1 + (i % 3) as u64,
                phase: String::new(),
                op: limitlab_engine::traffic::Op::Request,
            }
        })
        .collect()
}

fn connect(c: &RedisCluster) -> RealRedis {
    RealRedis::connect(&c.url(), RealOptions::default()).expect("connects to the cluster")
}

/// Keys per node, read on each node directly.
fn dbsizes(c: &RedisCluster) -> Vec<i64> {
    c.ports()
        .iter()
        .map(|p| {
            let client = redis::Client::open(format!("redis://127.0.0.1:{p}/")).unwrap();
            let mut conn = client.get_connection().unwrap();
            redis::cmd("DBSIZE").query::<i64>(&mut conn).unwrap()
        })
        .collect()
}

#[test]
fn every_shipped_script_decides_as_on_the_emulator_in_cluster_mode() {
    let Some(cluster) = RedisCluster::start_or_skip("cluster scripts") else { return };
    let mut real = connect(&cluster);
    assert!(real.is_cluster(), "{} is a cluster node", cluster.url());
    assert_eq!(real.masters().len(), 3, "{:?}", real.masters());
    assert!(real.describe().contains("cluster, 3 masters"), "{}", real.describe());
    let arrivals = arrivals(12, 600);
    for v in Variant::ALL {
        let params = if v.takes_burst() { Params::new(4, 10_000).with_burst(6) } else { Params::new(4, 10_000) };
        let limiter = Limiter::new(v, params).unwrap();
        let mut emu = EmulatedBackend::default();
        emu.emu.set_cluster(true);
        emu.set_time_ms(DEFAULT_START.0);
        let emulated = sim::run(&limiter, &mut emu, &arrivals, Progress::Off).unwrap();
        let on_cluster = sim::run(&limiter, &mut real, &arrivals, Progress::Off)
            .unwrap_or_else(|e| panic!("{v} on the cluster: {e}"));
        assert_eq!(first_divergence(&emulated, &on_cluster), None, "{v}: the cluster decided differently");
        assert!(emulated.records.iter().any(|r| !r.decision.allowed), "{v}: the traffic should be refused sometimes");
        // The subjects' keys are spread over the masters, and cleanup finds them on every one.
        let sizes = dbsizes(&cluster);
        assert!(sizes.iter().filter(|&&n| n > 0).count() >= 2, "{v}: keys on one master only: {sizes:?}");
        let removed = real.cleanup().unwrap();
        assert_eq!(removed, sizes.iter().sum::<i64>() as u64, "{v}: every key of the run is removed");
        assert_eq!(dbsizes(&cluster), [0, 0, 0], "{v}: nothing left behind");
    }
}

/// The seed's sliding window with its two counters passed as KEYS (rather than derived from
/// KEYS[1] inside the script): in a cluster both must be in one slot.
const TWO_KEY_SLIDING_WINDOW: &str = "
local limit = tonumber(ARGV[1])
local w = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local current = tonumber(redis.call('GET', KEYS[1]) or 0)
local previous = tonumber(redis.call('GET', KEYS[2]) or 0)
local est = previous * (1 - (now % w) / w) + current
if est < limit then
  if redis.call('INCR', KEYS[1]) == 1 then redis.call('PEXPIRE', KEYS[1], w * 2) end
  return 1
end
return 0
";

fn two_key_call(b: &mut dyn Backend, subject: &str, now_ms: i64) -> Reply {
    let w = 1000;
    let win = now_ms / w;
    let cur = format!("{}{subject}:{win}", b.key_prefix());
    let prev = format!("{}{subject}:{}", b.key_prefix(), win - 1);
    let args = ["3".to_string(), w.to_string(), now_ms.to_string()];
    let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    b.eval(&Script::new(TWO_KEY_SLIDING_WINDOW), &[cur.as_bytes(), prev.as_bytes()], &argv).unwrap()
}

#[test]
fn multi_key_scripts_need_hash_tags_on_the_cluster_and_in_the_emulator_alike() {
    let Some(cluster) = RedisCluster::start_or_skip("cluster CROSSSLOT") else { return };
    let mut real = connect(&cluster);
    let mut emu = EmulatedBackend::default();
    emu.emu.set_cluster(true);
    let crossslot = Reply::err("CROSSSLOT Keys in request don't hash to the same slot");

    // Without a hash tag the two window keys land in different slots.
    let t = DEFAULT_START.0 + 1500;
    let (a, b) = (format!("rate:user42:{}", t / 1000), format!("rate:user42:{}", t / 1000 - 1));
    assert_ne!(key_slot(a.as_bytes()), key_slot(b.as_bytes()), "the untagged keys must span slots");
    assert_eq!(two_key_call(&mut real, "rate:user42", t), crossslot);
    assert_eq!(two_key_call(&mut emu, "rate:user42", t), crossslot);

    // With one, every call runs, and both sides decide alike.
    for i in 0..12 {
        let now = t + i * 150;
        let on_cluster = two_key_call(&mut real, "rate:{user42}", now);
        let emulated = two_key_call(&mut emu, "rate:{user42}", now);
        assert_eq!(on_cluster, emulated, "call {i} at {now}");
        assert!(matches!(on_cluster, Reply::Int(0 | 1)), "{on_cluster:?}");
    }
    assert!(real.cleanup().unwrap() >= 2);
    assert_eq!(dbsizes(&cluster), [0, 0, 0]);
}

#[test]
fn plain_commands_are_routed_and_cross_slot_ones_refused() {
    let Some(cluster) = RedisCluster::start_or_skip("cluster commands") else { return };
    let mut real = connect(&cluster);
    let p = real.key_prefix().to_string();
    let k = |s: &str| format!("{p}{s}");
    // Keys on different masters, each routed to its owner.
    for i in 0..20 {
        let key = k(&format!("n{i}"));
        assert_eq!(real.command(&[b"SET", key.as_bytes(), b"1"]).unwrap(), Reply::ok());
    }
    // The redis crate splits an MGET over slots by itself; a RENAME it cannot split, so the node
    // refuses it.
    let (x, y) = (k("{a}x"), k("{b}y"));
    assert_eq!(real.command(&[b"SET", x.as_bytes(), b"1"]).unwrap(), Reply::ok());
    assert_eq!(
        real.command(&[b"RENAME", x.as_bytes(), y.as_bytes()]).unwrap(),
        Reply::err("CROSSSLOT Keys in request don't hash to the same slot")
    );
    assert_eq!(
        real.command(&[b"MGET", x.as_bytes(), y.as_bytes()]).unwrap(),
        Reply::Array(vec![Reply::bulk("1"), Reply::Nil])
    );
    let (x, y) = (k("{a}x"), k("{a}y"));
    assert_eq!(real.command(&[b"MSET", x.as_bytes(), b"1", y.as_bytes(), b"2"]).unwrap(), Reply::ok());
    assert_eq!(real.cleanup().unwrap(), 22);
}
