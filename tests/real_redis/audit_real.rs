//! `limitlab audit` on a private Redis, a three-master Redis Cluster (with a slot half migrated:
//! MOVED and ASK) and a TLS server, each loaded with the same mix of rate-limit keys
//! (`limitlab_cli::audit::demo::Mix::small`: fixed windows with TTLs, token buckets, sliding logs of
//! 5, 50 and 200 entries, keys without TTL, untagged two-window keys, day-long TTLs on one-second
//! windows, unrelated keys). Every key is read in full (the sample is larger than any pattern),
//! so counts, patterns, memory and findings are exact.
//!
//! Read-only, proved three ways: the audit runs as an ACL user allowed only the read commands it
//! sends (`limitlab_cli::audit::scan::READ_COMMANDS`); `INFO commandstats` after it lists nothing else;
//! every key's DUMP and PEXPIRETIME (the absolute expiry PTTL counts down to) are the same before
//! and after.
//!
//! The tests start their own servers; without redis-server they print why and pass, unless `CI`
//! is set.
use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Output};

use limitlab_cli::audit::demo::{load, load_each, Mix};
use limitlab_cli::audit::scan::READ_COMMANDS;
use limitlab_emulator::cluster::key_slot;
use redis::ConnectionLike;

const PASSWORD: &str = "s3cret-Audit-pw";

fn limitlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_limitlab")).args(args).output().expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn server_ms(c: &mut dyn ConnectionLike) -> i64 {
    let (s, us): (i64, i64) = redis::cmd("TIME").query(c).unwrap();
    s * 1000 + us / 1000
}

/// Every key of one node: its DUMP and PEXPIRETIME (on a cluster node, each after ASKING, which a
/// node importing a slot needs to answer for the keys it already holds).
fn snapshot(port: u16) -> BTreeMap<Vec<u8>, (Vec<u8>, i64)> {
    snapshot_of(port, false)
}

fn snapshot_of(port: u16, cluster: bool) -> BTreeMap<Vec<u8>, (Vec<u8>, i64)> {
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap().get_connection().unwrap();
    let mut out = BTreeMap::new();
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<Vec<u8>>) =
            redis::cmd("SCAN").arg(cursor).arg("COUNT").arg(1000).query(&mut c).unwrap();
        for k in keys {
            let ask = |c: &mut redis::Connection| {
                if cluster {
                    let _: () = redis::cmd("ASKING").query(c).unwrap();
                }
            };
            ask(&mut c);
            let dump: Vec<u8> = redis::cmd("DUMP").arg(&k).query(&mut c).unwrap();
            ask(&mut c);
            let at: i64 = redis::cmd("PEXPIRETIME").arg(&k).query(&mut c).unwrap();
            out.insert(k, (dump, at));
        }
        if next == 0 {
            return out;
        }
        cursor = next;
    }
}

fn reset_stats(port: u16) {
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap().get_connection().unwrap();
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut c).unwrap();
}

/// The commands `INFO commandstats` lists on one node.
fn commands_run(port: u16) -> BTreeSet<String> {
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap().get_connection().unwrap();
    let info: String = redis::cmd("INFO").arg("commandstats").query(&mut c).unwrap();
    info.lines()
        .filter_map(|l| l.strip_prefix("cmdstat_"))
        .filter_map(|l| l.split(':').next())
        .map(String::from)
        .collect()
}

/// What the set-up and the check themselves run, besides the audit.
const ADMIN: &[&str] = &["config|resetstat", "info", "auth"];

fn assert_read_only(port: u16) {
    for cmd in commands_run(port) {
        assert!(READ_COMMANDS.contains(&cmd.as_str()) || ADMIN.contains(&cmd.as_str()), "port {port} ran `{cmd}`");
    }
}

fn audit_json(url: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["audit", "--redis", url, "--json", "--rate", "1000000"];
    args.extend_from_slice(extra);
    let out = limitlab(&args);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
    assert!(err.is_empty(), "nothing on stderr when it is not a terminal: {err}");
    let s = text(&out.stdout);
    assert!(!s.contains(PASSWORD), "the password is printed:\n{s}");
    serde_json::from_str(&s).expect("JSON")
}

fn patterns(v: &serde_json::Value) -> BTreeMap<String, serde_json::Value> {
    v["patterns"].as_array().unwrap().iter().map(|p| (p["pattern"].as_str().unwrap().to_string(), p.clone())).collect()
}

fn warnings(v: &serde_json::Value) -> BTreeSet<(String, String)> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "warning")
        .map(|f| (f["kind"].as_str().unwrap().to_string(), f["pattern"].as_str().unwrap().to_string()))
        .collect()
}

/// Subjects of the two-window keys whose two keys hash to different slots.
fn crossing_subjects(mix: &Mix, minute: i64) -> u64 {
    (0..mix.two_window_subjects)
        .filter(|i| {
            key_slot(format!("sw:user{i}:{minute}").as_bytes())
                != key_slot(format!("sw:user{i}:{}", minute - 1).as_bytes())
        })
        .count() as u64
}

/// The mix's patterns and findings, exactly (`extra_keys`: keys of patterns outside the mix).
fn assert_mix(v: &serde_json::Value, mix: &Mix, minute: i64, extra_keys: u64) {
    assert_eq!(v["keys"], mix.keys() + extra_keys, "{v:#}");
    let p = patterns(v);
    let get = |k: &str| p.get(k).unwrap_or_else(|| panic!("no pattern {k} in {:?}", p.keys().collect::<Vec<_>>()));
    let fw = get("fw:{*}:*");
    assert_eq!(fw["keys"], 250);
    assert_eq!(fw["types"]["string"], 250);
    assert_eq!(fw["no_ttl"], 0);
    assert_eq!(fw["window_ms"], 60_000);
    assert_eq!(fw["subjects"], 200);
    assert_eq!(fw["memory_error_bytes"], 0);
    assert!(fw["ttl_max_ms"].as_i64().unwrap() <= 120_000);
    let tb = get("tb:{*}");
    assert_eq!(
        (tb["keys"].as_u64(), tb["types"]["hash"].as_u64(), tb["subjects"].as_u64()),
        (Some(100), Some(100), Some(100))
    );
    assert_eq!(tb["encodings"]["listpack"], 100);
    let sl = get("sl:{*}");
    assert_eq!(sl["keys"], 30);
    assert_eq!(sl["types"]["zset"], 30);
    // Sizes are read only with --sizes (ZCARD resets a key's LRU clock).
    let sizes = (sl["size_min"].as_u64(), sl["size_median"].as_u64(), sl["size_max"].as_u64());
    if v["sizes_read"] == true {
        assert_eq!(sizes, (Some(5), Some(50), Some(200)));
    } else {
        assert_eq!(sizes, (None, None, None));
        assert_eq!(v["lru_touched"], 0);
    }
    assert_eq!(sl["encodings"]["listpack"], 20);
    assert_eq!(sl["encodings"]["skiplist"], 10);
    let rl = get("rl:user*");
    assert_eq!((rl["keys"].as_u64(), rl["no_ttl"].as_u64(), rl["subjects"].as_u64()), (Some(40), Some(40), Some(40)));
    assert_eq!(rl["ttl_max_ms"], serde_json::Value::Null);
    let sw = get("sw:user*:*");
    assert_eq!(
        (sw["keys"].as_u64(), sw["subjects"].as_u64(), sw["window_ms"].as_u64()),
        (Some(40), Some(20), Some(60_000))
    );
    let crossing = crossing_subjects(mix, minute);
    assert!(crossing > 0);
    assert_eq!(sw["cross_slot_subjects"], crossing);
    let day = get("day:{*}:*");
    assert_eq!((day["keys"].as_u64(), day["window_ms"].as_u64()), (Some(10), Some(1000)));
    assert!(day["ttl_max_ms"].as_i64().unwrap() > 86_000_000);
    assert_eq!(get("session:*")["keys"], 5);
    assert_eq!(get("cache:page:home")["no_ttl"], 1);
    assert_eq!(get("config")["no_ttl"], 1);
    // Sessions, a cached page and a config key are no limiter's: no subjects, no limiter advice,
    // one finding that lists them.
    for other in ["session:*", "cache:page:home", "config"] {
        assert_eq!(
            (get(other)["limiter"].as_bool(), get(other)["subjects"].as_u64()),
            (Some(false), Some(0)),
            "{other}"
        );
    }
    for limiter in ["fw:{*}:*", "tb:{*}", "sl:{*}", "rl:user*", "sw:user*:*", "day:{*}:*"] {
        assert_eq!(get(limiter)["limiter"], true, "{limiter}");
    }
    let others: Vec<&serde_json::Value> =
        v["findings"].as_array().unwrap().iter().filter(|f| f["kind"] == "other_keys").collect();
    assert_eq!(others.len(), 1, "{v:#}");
    assert_eq!(others[0]["severity"], "info");
    let summary = others[0]["summary"].as_str().unwrap();
    assert!(summary.contains(" patterns do not look like a rate limiter's"), "{summary}");
    for other in ["session:*: 5 keys (string)", "cache:page:home: 1 key (string)", "config: 1 key (string)"] {
        assert!(others[0]["evidence"].as_array().unwrap().iter().any(|e| e == other), "{other}: {:#}", others[0]);
    }
    assert!(v["findings"].as_array().unwrap().iter().all(|f| f["kind"] == "other_keys"
        || !["session:*", "cache:page:home", "config"].contains(&f["pattern"].as_str().unwrap())));
    let want: BTreeSet<(String, String)> =
        [("no_ttl", "rl:user*"), ("long_ttl", "day:{*}:*"), ("sliding_log", "sl:{*}"), ("cross_slot", "sw:user*:*")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
    assert_eq!(warnings(v), want);
}

#[test]
fn audit_of_a_private_redis_is_exact_and_read_only() {
    let Some(server) = common::RedisServer::start_or_skip("audit_of_a_private_redis_is_exact_and_read_only") else {
        return;
    };
    let port = server.port();
    let mut admin = redis::Client::open(server.url()).unwrap().get_connection().unwrap();
    let now = server_ms(&mut admin);
    let mix = Mix::small();
    load(&mut admin, &mix, now).unwrap();
    let minute = now / 60_000;
    common::acl_user(port, "auditor", PASSWORD, READ_COMMANDS);
    let before = snapshot(port);
    assert_eq!(before.len() as u64, mix.keys());
    reset_stats(port);

    let url = format!("redis://auditor:{PASSWORD}@127.0.0.1:{port}/");
    let v = audit_json(&url, &[]);
    assert_eq!(v["target"], format!("redis://auditor:***@127.0.0.1:{port}/"));
    assert_eq!(v["cluster"], false);
    assert_mix(&v, &mix, minute, 0);
    // Memory: every key was read, so the figure is MEMORY USAGE summed.
    let fw_memory: u64 = before
        .keys()
        .filter(|k| k.starts_with(b"fw:"))
        .map(|k| redis::cmd("MEMORY").arg("USAGE").arg(k).query::<u64>(&mut admin).unwrap())
        .sum();
    assert_eq!(patterns(&v)["fw:{*}:*"]["memory_bytes"], fw_memory);

    assert_read_only(port);
    assert_eq!(snapshot(port), before, "the keyspace changed");

    // The text report, --match and --strict.
    let out = limitlab(&["audit", "--redis", &url, "--rate", "1000000", "--strict"]);
    let s = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{s}{}", text(&out.stderr));
    assert!(
        s.starts_with(&format!(
            "limitlab audit of redis://auditor:***@127.0.0.1:{port}/ (standalone), MATCH *: 477 keys"
        )),
        "{s}"
    );
    assert!(s.contains("WARN no_ttl") && s.contains("WARN cross_slot") && s.contains("what to do:"), "{s}");
    // The evidence reads as a sentence, and sizes group their thousands as the counts do.
    assert!(s.contains("0 of 40 keys have a hash tag\n"), "{s}");
    let words: Vec<&str> = s.split_whitespace().collect();
    for w in words.windows(2).filter(|w| w[1] == "KB" || w[1] == "MB") {
        let digits = w[0].chars().take_while(char::is_ascii_digit).count();
        assert!(digits <= 3, "{} {} is not grouped by thousands:\n{s}", w[0], w[1]);
    }
    assert!(!s.contains(PASSWORD) && !text(&out.stderr).contains(PASSWORD));
    assert!(s.contains("; no key's LRU clock touched (sizes not read: --sizes reads them)\n"), "{s}");
    let out = limitlab(&["audit", "--redis", &url, "--match", "fw:*", "--strict", "--markdown"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("| fw:{*}:* | 250 |"), "{}", text(&out.stdout));

    // A sample smaller than the pattern: memory extrapolated, with a bound.
    let v = audit_json(&url, &["--sample", "20", "--match", "fw:*"]);
    let fw = &patterns(&v)["fw:{*}:*"];
    assert_eq!(fw["sampled"], 20);
    let est = fw["memory_bytes"].as_u64().unwrap();
    let bound = fw["memory_error_bytes"].as_u64().unwrap();
    assert!(est.abs_diff(fw_memory) <= bound.max(1) * 2, "{est} ± {bound} against {fw_memory}");
    // ... and never called exact: the table and the memory finding say it was sampled, and from how many.
    for sample in ["20", "1"] {
        let out = limitlab(&["audit", "--redis", &url, "--sample", sample, "--match", "fw:*"]);
        let s = text(&out.stdout);
        let row = s.lines().find(|l| l.starts_with("fw:{*}:*")).unwrap_or_else(|| panic!("{s}"));
        assert!(!row.contains("exact") && !row.contains("all read"), "{row}");
        assert!(row.contains(&format!(" (sampled {sample})")), "{row}");
        assert!(!s.contains("every key read"), "{s}");
        assert!(s.contains(&format!(" (95%, sampled: {sample} of 250 keys)")), "{s}");
    }

    // --sizes: the sizes, and the keys whose LRU clock it reset, said loudly.
    let v = audit_json(&url, &["--sizes"]);
    assert_eq!(v["sizes_read"], true);
    assert_mix(&v, &mix, minute, 0);
    let out = limitlab(&["audit", "--redis", &url, "--sizes", "--match", "sl:*"]);
    assert!(
        text(&out.stdout).contains(
            "\nWARNING: --sizes reset the LRU clock (OBJECT IDLETIME) of the 30 keys whose size it read: they now look \
             recently used to eviction and to the next audit\n"
        ),
        "{}",
        text(&out.stdout)
    );

    // A wrong password: the error names the server, never the password.
    let out = limitlab(&["audit", "--redis", &format!("redis://auditor:wrong-{PASSWORD}@127.0.0.1:{port}/")]);
    assert_eq!(out.status.code(), Some(3));
    let err = text(&out.stderr);
    assert!(err.contains("127.0.0.1") && err.contains("authentication failed") && !err.contains(PASSWORD), "{err}");

    // A user allowed less than the audit needs is refused by the server, and the audit says so.
    common::acl_user(port, "lesser", PASSWORD, &["scan", "type", "dbsize", "time", "info"]);
    let out = limitlab(&["audit", "--redis", &format!("redis://lesser:{PASSWORD}@127.0.0.1:{port}/")]);
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out.stderr).contains("NOPERM"), "{}", text(&out.stderr));
    assert_eq!(snapshot(port), before);
}

#[test]
fn audit_of_a_cluster_with_a_slot_in_migration() {
    let Some(cluster) = common::RedisCluster::start_or_skip("audit_of_a_cluster_with_a_slot_in_migration") else {
        return;
    };
    let client = redis::cluster::ClusterClient::new(vec![cluster.url()]).unwrap();
    let mut conn = client.get_connection().unwrap();
    let now = server_ms(&mut conn);
    let mix = Mix::small();
    load_each(&mut conn, &mix, now).unwrap();
    // Ten keys in one slot, five of them migrated to another node, the slot still half-way.
    let mig: Vec<String> = (0..10).map(|i| format!("mig:{{m}}:{i}")).collect();
    for k in &mig {
        let _: () = redis::cmd("SET").arg(k).arg("1").arg("PX").arg(600_000).query(&mut conn).unwrap();
    }
    let slot = key_slot(b"mig:{m}:0");
    let node = |p: u16| redis::Client::open(format!("redis://127.0.0.1:{p}/")).unwrap().get_connection().unwrap();
    let ports = cluster.ports().to_vec();
    let owner = *ports
        .iter()
        .find(|&&p| redis::cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(slot).query::<u64>(&mut node(p)).unwrap() == 10)
        .expect("the slot's owner");
    let other = *ports.iter().find(|&&p| p != owner).unwrap();
    let id = |p: u16| redis::cmd("CLUSTER").arg("MYID").query::<String>(&mut node(p)).unwrap();
    let _: () =
        redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg("IMPORTING").arg(id(owner)).query(&mut node(other)).unwrap();
    let _: () =
        redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg("MIGRATING").arg(id(other)).query(&mut node(owner)).unwrap();
    let _: () = redis::cmd("MIGRATE")
        .arg("127.0.0.1")
        .arg(other)
        .arg("")
        .arg(0)
        .arg(5000)
        .arg("KEYS")
        .arg(&mig[..5])
        .query(&mut node(owner))
        .unwrap();

    for &p in &ports {
        common::acl_user(p, "auditor", PASSWORD, READ_COMMANDS);
    }
    let before: Vec<_> = ports.iter().map(|&p| snapshot_of(p, true)).collect();
    for &p in &ports {
        reset_stats(p);
    }
    let url = format!("redis://auditor:{PASSWORD}@127.0.0.1:{}/", ports[0]);
    let v = audit_json(&url, &[]);
    assert_eq!(v["cluster"], true);
    assert_eq!(v["masters"].as_array().unwrap().len(), 3);
    assert_mix(&v, &mix, now / 60_000, 10);
    let m = &patterns(&v)["mig:{*}:*"];
    assert_eq!(
        (m["keys"].as_u64(), m["types"]["string"].as_u64(), m["no_ttl"].as_u64()),
        (Some(10), Some(10), Some(0))
    );
    assert_eq!(m["sampled"], 10);
    for (i, &p) in ports.iter().enumerate() {
        assert_read_only(p);
        assert_eq!(snapshot_of(p, true), before[i], "node {p} changed");
    }
    // The migration was left as it was.
    let s: String = redis::cmd("CLUSTER").arg("NODES").query(&mut node(owner)).unwrap();
    assert!(s.contains(&format!("[{slot}->-")), "{s}");
}

#[test]
fn audit_over_tls() {
    let Some(tls) = common::TlsServer::start_or_skip("audit_over_tls") else { return };
    let mut admin = redis::Client::open(tls.server.url()).unwrap().get_connection().unwrap();
    let now = server_ms(&mut admin);
    let mix = Mix::small();
    load(&mut admin, &mix, now).unwrap();
    common::acl_user(tls.server.port(), "auditor", PASSWORD, READ_COMMANDS);
    let url = format!("rediss://auditor:{PASSWORD}@127.0.0.1:{}/", tls.tls_port);
    let ca = tls.ca.to_string_lossy().into_owned();
    let v = audit_json(&url, &["--tls-ca", &ca]);
    assert_eq!(v["target"], format!("rediss://auditor:***@127.0.0.1:{}/", tls.tls_port));
    assert_mix(&v, &mix, now / 60_000, 0);
    // Without the CA the server's certificate is not trusted; plain text to the TLS port fails too.
    let out = limitlab(&["audit", "--redis", &url]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stdout));
    assert!(!text(&out.stderr).contains(PASSWORD));
    let out =
        limitlab(&["audit", "--redis", &format!("redis://127.0.0.1:{}/", tls.tls_port), "--redis-timeout-ms", "2000"]);
    assert_ne!(out.status.code(), Some(0));
    // --tls-ca reaches the other commands' --redis too: memory on the TLS port.
    let out = limitlab(&[
        "memory",
        "--users",
        "10",
        "--script",
        "fixed_window",
        "--redis",
        &format!("rediss://127.0.0.1:{}/", tls.tls_port),
        "--tls-ca",
        &ca,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("Real Redis"));
}

#[test]
fn audit_of_a_simulation_s_end_state() {
    let out = limitlab(&[
        "audit",
        "--emulator",
        "--scenario",
        "simulations/uniform.toml",
        "--script",
        "seed_fixed_window",
        "--json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v[0];
    assert!(r["target"]
        .as_str()
        .unwrap()
        .starts_with("the emulator after simulations/uniform.toml with seed_fixed_window"));
    let p = patterns(r);
    let fw = &p["rate:{*}:*"];
    assert!(fw["keys"].as_u64().unwrap() > 0);
    assert_eq!(fw["no_ttl"], 0);
    assert!(fw["window_ms"].as_u64().is_some(), "{fw}");
    assert!(warnings(r).is_empty(), "{:?}", warnings(r));
    // The same report on every run.
    let again = limitlab(&[
        "audit",
        "--emulator",
        "--scenario",
        "simulations/uniform.toml",
        "--script",
        "seed_fixed_window",
        "--json",
    ]);
    let strip = |s: &[u8]| -> String { text(s).lines().filter(|l| !l.contains("elapsed_s")).collect() };
    assert_eq!(strip(&again.stdout), strip(&out.stdout));
    // The sliding log leaves sorted sets: a warning, and --strict fails.
    let out = limitlab(&[
        "audit",
        "--emulator",
        "--scenario",
        "simulations/uniform.toml",
        "--script",
        "sliding_log",
        "--strict",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("WARN sliding_log"));
}

/// OBJECT IDLETIME of every key of `port`'s database 0 (reading it does not touch a key).
fn idle_times(port: u16) -> BTreeMap<Vec<u8>, u64> {
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap().get_connection().unwrap();
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
    keys.into_iter()
        .map(|k| {
            let idle: u64 = redis::cmd("OBJECT").arg("IDLETIME").arg(&k).query(&mut c).unwrap();
            (k, idle)
        })
        .collect()
}

/// An audit leaves every key's LRU clock as it was: keys idle for at least 2 s (the clock counts
/// whole seconds) are idle at least as long after it; a key it touched would read 0 or 1. With
/// `--sizes`, the keys whose size was read are exactly those reset, as many as the report says.
/// Keys from windows minutes old still tell their window (the long TTL is found); keys that are
/// no limiter's get no limiter advice; counts of one are singular.
#[test]
fn audit_leaves_lru_clocks_alone_and_judges_only_limiter_keys() {
    let Some(server) = common::RedisServer::start_or_skip("audit_leaves_lru_clocks_alone_and_judges_only_limiter_keys")
    else {
        return;
    };
    let port = server.port();
    let url = format!("redis://127.0.0.1:{port}/");
    let mut c = redis::Client::open(url.as_str()).unwrap().get_connection().unwrap();
    let now = server_ms(&mut c);
    // Window counters written 5 minutes ago with a day-long TTL, one sliding log, and others'.
    let old_minute = now / 60_000 - 5;
    for i in 0..3 {
        let _: () = redis::cmd("SET")
            .arg(format!("rate:{{u{i}}}:{old_minute}"))
            .arg(7)
            .arg("EX")
            .arg(86_400)
            .query(&mut c)
            .unwrap();
    }
    let _: () = redis::cmd("ZADD").arg("ratelog:{solo}").arg(1).arg("a").query(&mut c).unwrap();
    let _: () = redis::cmd("RPUSH").arg("queue:jobs").arg("a").arg("b").query(&mut c).unwrap();
    let _: () = redis::cmd("SADD").arg("tag:red").arg("x").query(&mut c).unwrap();
    let _: () = redis::cmd("SET").arg("config:mode").arg("fast").query(&mut c).unwrap();
    for i in 0..3 {
        let _: () = redis::cmd("HSET").arg(format!("session:{i:08x}-77aa")).arg("u").arg(1).query(&mut c).unwrap();
    }
    common::wait_for("every key idle for 2 s", || idle_times(port).values().all(|&i| i >= 2));
    let before = idle_times(port);
    assert_eq!(before.len(), 10);

    let out = limitlab(&["audit", "--redis", &url, "--rate", "1000000"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let after = idle_times(port);
    for (k, b) in &before {
        assert!(
            after[k] >= *b,
            "the audit touched {}: idle {b} s before, {} s after",
            String::from_utf8_lossy(k),
            after[k]
        );
    }
    let s = text(&out.stdout);
    assert!(
        s.starts_with(&format!(
            "limitlab audit of redis://127.0.0.1:{port}/ (standalone), MATCH *: 10 keys of 10 scanned"
        )),
        "{s}"
    );
    // The old windows are still read as minutes, and their day-long TTL found.
    assert!(s.contains("\nWARN long_ttl     rate:{*}:*: TTLs up to 24 h on keys of a 1 min window"), "{s}");
    // The sliding log: singular counts; no limiter advice to the queue, tags, config or sessions.
    assert!(s.contains("WARN sliding_log  ratelog:{*}: sliding logs: 1 sorted set, 72 bytes in all\n"), "{s}");
    assert!(s.contains("     - 1 of 1 key is a sorted set\n"), "{s}");
    assert!(s.contains("INFO memory       ratelog:{*}: 1 subject, 72 bytes each"), "{s}");
    assert!(s.contains("     - MEMORY USAGE of 1 key: 72 bytes (every key read)\n"), "{s}");
    assert!(s.contains("\nFindings: 3 warnings, 3 figures\n"), "{s}");
    assert!(!s.contains(" 1 keys") && !s.contains(" 1 subjects") && !s.contains(" 1 sorted sets"), "{s}");
    for other in ["queue:jobs", "tag:red", "config:mode", "session:*"] {
        assert!(!s.contains(&format!("WARN no_ttl       {other}")), "{other}: {s}");
        assert!(!s.contains(&format!("INFO memory       {other}")), "{other}: {s}");
    }
    assert!(s.contains("INFO other_keys   *: 6 keys in 4 patterns do not look like a rate limiter's"), "{s}");
    assert!(s.contains("     - queue:jobs: 1 key (list)\n"), "{s}");

    // --sizes: the sampled keys' sizes were read, and each such key's clock reset (idle 0 or 1 now).
    let v = audit_json(&url, &["--sizes"]);
    let after = idle_times(port);
    let reset: Vec<&Vec<u8>> = before.keys().filter(|k| after[*k] < 2).collect();
    assert_eq!(v["lru_touched"].as_u64(), Some(reset.len() as u64));
    assert_eq!(reset.len(), 10, "every key has a size command: {reset:?}");
}
