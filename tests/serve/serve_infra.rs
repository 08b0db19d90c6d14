//! What the server says about itself and refuses for its state: INFO's counters, COMMAND's table
//! (the commands serve runs, with Redis's entries and key finding), CLIENT LIST's protocol, and the
//! checks Redis makes before running or queueing a command (maxmemory, min-replicas-to-write, a
//! replica's states, commands a transaction may not hold), compared with a private redis-server.
use crate::common;

use std::time::Duration;

use common::conn::Conn;
use common::{LimitlabServe, RedisServer};
use limitlab_emulator::Reply;

/// Steps whose replies must be Redis's, in order, on one connection (with a second one for the
/// settings a test changes while the first is in MULTI).
const STATE_CHECKS: &[(u8, &str)] = &[
    (0, "MULTI"),
    (0, "MULTI"),
    (0, "WATCH x"),
    (0, "SET a 1"),
    (0, "SAVE"),
    (0, "EXEC"),
    (1, "CONFIG SET maxmemory 1"),
    (0, "SET a 1"),
    (0, "GET a"),
    (0, "MULTI"),
    (0, "GET a"),
    (0, "DISCARD"),
    (0, "DEL a"),
    (1, "CONFIG SET maxmemory 0"),
    (0, "MULTI"),
    (0, "SET x 1"),
    (0, "GET x"),
    (1, "CONFIG SET maxmemory 1"),
    (0, "EXEC"),
    (1, "CONFIG SET maxmemory 0"),
    (0, "MULTI"),
    (0, "GET x"),
    (0, "PING"),
    (1, "CONFIG SET maxmemory 1"),
    (0, "EXEC"),
    (1, "CONFIG SET maxmemory 0"),
    (1, "CONFIG SET min-replicas-to-write 2"),
    (0, "SET y 1"),
    (0, "GET y"),
    (0, "MULTI"),
    (0, "INCR y"),
    (0, "EXEC"),
    (1, "CONFIG SET min-replicas-to-write 0"),
    (0, "MULTI"),
    (0, "INCR y"),
    (1, "CONFIG SET min-replicas-to-write 2"),
    (0, "EXEC"),
    (1, "CONFIG SET min-replicas-to-write 0"),
    (0, "REPLICAOF 127.0.0.1 notaport"),
    (0, "REPLICAOF 127.0.0.1 1"),
    (0, "SET y 2"),
    (0, "GET y"),
    (0, "CONFIG SET replica-serve-stale-data no"),
    (0, "GET y"),
    (0, "PING"),
    (0, "REPLICAOF NO ONE"),
    (0, "CONFIG SET replica-serve-stale-data yes"),
    (0, "SET y 3"),
    (0, "COMMAND GETKEYS EVAL x 0"),
    (0, "COMMAND GETKEYS EVAL x 2 a b c"),
    (0, "COMMAND GETKEYS EVAL x 5 a"),
    (0, "COMMAND GETKEYS FCALL f 1 k"),
    (0, "COMMAND GETKEYS SORT a STORE b"),
    (0, "COMMAND GETKEYS ZUNIONSTORE d 2 a b"),
    (0, "COMMAND GETKEYS MEMORY USAGE k"),
    (0, "COMMAND GETKEYS CONFIG GET x"),
    (0, "COMMAND GETKEYS nosuch x"),
    (0, "COMMAND GETKEYS GET"),
    (0, "COMMAND GETKEYSANDFLAGS SET a b"),
    (0, "COMMAND GETKEYSANDFLAGS SET a b EX 1 get"),
    (0, "COMMAND GETKEYSANDFLAGS BITFIELD a GET u8 0"),
    (0, "COMMAND GETKEYSANDFLAGS BITFIELD a SET u8 0 1"),
    (0, "COMMAND INFO get eval nosuch"),
    (0, "COMMAND DOCS get"),
];

/// Checks against the server's state, EXEC's with its queued commands', and COMMAND's key finding
/// give Redis's replies, step by step.
#[test]
fn state_checks_and_key_finding_match_redis() {
    let Some(redis) = RedisServer::start_or_skip("state_checks_and_key_finding_match_redis") else { return };
    let serve = LimitlabServe::start(&["--clock", "wall"]);
    let (mut r, mut r2) = (Conn::open(redis.port()), Conn::open(redis.port()));
    let (mut s, mut s2) = (Conn::open(serve.port()), Conn::open(serve.port()));
    for (who, line) in STATE_CHECKS {
        let (theirs, ours) = if *who == 0 { (r.line(line), s.line(line)) } else { (r2.line(line), s2.line(line)) };
        assert_eq!(ours, theirs, "{line}");
    }
}

/// The value of `field` in an INFO reply.
fn info_field(info: &str, field: &str) -> Option<String> {
    info.lines().find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
}

/// INFO counts commands (calls, rejected and failed ones), error replies by code, connections,
/// expired keys and cached scripts; CONFIG RESETSTAT starts them again; `tcp_port` and CONFIG GET
/// port are the port serve listens on.
#[test]
fn info_counts_what_commands_do() {
    let serve = LimitlabServe::start(&["--clock", "wall"]);
    let mut c = Conn::open(serve.port());
    let port = serve.port().to_string();
    assert_eq!(info_field(&c.text("INFO server"), "tcp_port"), Some(port.clone()));
    assert_eq!(
        c.line("CONFIG GET port"),
        Reply::Array(vec![Reply::Bulk(b"port".to_vec()), Reply::Bulk(port.into_bytes())])
    );
    c.line("CONFIG RESETSTAT");
    c.line("SET k v");
    c.line("GET k");
    c.line("GET");
    c.line("LPUSH k x");
    c.line("NOSUCH");
    c.call(&["SCRIPT", "LOAD", "return 1"]);
    c.line("SET e v PX 1");
    std::thread::sleep(Duration::from_millis(5));
    c.line("GET e");
    let stats = c.text("INFO commandstats");
    assert!(stats.contains("cmdstat_get:calls=2,usec="), "{stats}");
    assert!(stats.contains(",rejected_calls=1,failed_calls=0\r\n"), "{stats}");
    assert!(stats.contains("cmdstat_lpush:calls=1,") && stats.contains("rejected_calls=0,failed_calls=1"), "{stats}");
    assert!(stats.contains("cmdstat_script|load:calls=1,"), "{stats}");
    assert!(stats.contains("cmdstat_config|resetstat:calls=1,"), "{stats}");
    let errors = c.text("INFO errorstats");
    assert!(
        errors.contains("errorstat_ERR:count=2\r\n") && errors.contains("errorstat_WRONGTYPE:count=1\r\n"),
        "{errors}"
    );
    let all = c.text("INFO everything");
    assert_eq!(info_field(&all, "total_error_replies").as_deref(), Some("3"));
    assert_eq!(info_field(&all, "expired_keys").as_deref(), Some("1"));
    assert_eq!(info_field(&all, "number_of_cached_scripts").as_deref(), Some("1"));
    let processed: u64 = info_field(&all, "total_commands_processed").unwrap().parse().unwrap();
    assert!(processed >= 8, "{processed}");
    let default = c.text("INFO");
    assert!(!default.contains("cmdstat_") && default.contains("errorstat_ERR"), "{default}");
    c.line("CONFIG RESETSTAT");
    let stats = c.text("INFO commandstats");
    assert!(!stats.contains("cmdstat_get"), "{stats}");
    assert_eq!(info_field(&c.text("INFO stats"), "total_error_replies").as_deref(), Some("0"));
    let before: u64 = info_field(&c.text("INFO stats"), "total_connections_received").unwrap().parse().unwrap();
    drop(Conn::open(serve.port()));
    let mut c2 = Conn::open(serve.port());
    let after: u64 = info_field(&c2.text("INFO stats"), "total_connections_received").unwrap().parse().unwrap();
    assert_eq!(after, before + 2);
}

/// COMMAND lists exactly what serve runs: every command of the emulator and of the server itself
/// with Redis's entry (byte for byte), limitlab's CLOCK.* keyless, each listed name runs (none is
/// an unknown command), and COMMAND COUNT, INFO, DOCS and LIST agree.
#[test]
fn command_lists_what_serve_runs() {
    let Some(redis) = RedisServer::start_or_skip("command_lists_what_serve_runs") else { return };
    let serve = LimitlabServe::start(&[]);
    let (mut r, mut s) = (Conn::open(redis.port()), Conn::open(serve.port()));
    let Reply::Array(all) = s.line("COMMAND") else { panic!("COMMAND is an array") };
    let names: Vec<String> = all
        .iter()
        .map(|e| match e {
            Reply::Array(f) => match &f[0] {
                Reply::Bulk(b) => String::from_utf8(b.clone()).unwrap(),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(s.line("COMMAND COUNT"), Reply::Int(names.len() as i64));
    for own in ["hello", "auth", "reset", "quit", "clock.advance", "clock.set", "clock.get", "get", "eval", "multi"] {
        assert!(names.iter().any(|n| n == own), "{own} in {names:?}");
    }
    let Reply::Array(listed) = s.line("COMMAND LIST") else { panic!() };
    let top: Vec<&Reply> = listed.iter().filter(|n| !matches!(n, Reply::Bulk(b) if b.contains(&b'|'))).collect();
    assert_eq!(top.len(), names.len());
    for name in &names {
        let ours = s.call(&["COMMAND", "INFO", name]);
        assert_ne!(ours, Reply::Array(vec![Reply::Nil]), "{name}");
        if name.starts_with("clock.") {
            let Reply::Array(e) = &ours else { panic!() };
            let Reply::Array(f) = &e[0] else { panic!() };
            assert_eq!(&f[3..6], &[Reply::Int(0), Reply::Int(0), Reply::Int(0)], "{name} is keyless");
            assert_ne!(s.call(&["COMMAND", "DOCS", name]), Reply::Array(vec![]), "{name} has docs");
        } else {
            // Redis lists a container's subcommands in its hash table's order.
            assert_eq!(
                sorted_subcommands(ours.clone()),
                sorted_subcommands(r.call(&["COMMAND", "INFO", name])),
                "COMMAND INFO {name}"
            );
            let has_subcommands = matches!(&ours, Reply::Array(e) if matches!(&e[0], Reply::Array(f) if !matches!(f.get(9), Some(Reply::Array(v)) if v.is_empty())));
            if !has_subcommands {
                let docs = s.call(&["COMMAND", "DOCS", name]);
                assert_eq!(docs, r.call(&["COMMAND", "DOCS", name]), "COMMAND DOCS {name}");
            }
        }
        if ["quit", "shutdown", "reset", "debug", "monitor", "sync", "psync"].contains(&name.as_str()) {
            continue;
        }
        let mut probe = Conn::open(serve.port());
        if let Reply::Error(e) = probe.call(&[name]) {
            assert!(!e.starts_with("ERR unknown command"), "{name}: {e}");
        }
    }
}

/// A COMMAND INFO reply with each entry's subcommands in name order.
fn sorted_subcommands(r: Reply) -> Reply {
    let Reply::Array(mut entries) = r else { return r };
    for e in entries.iter_mut() {
        if let Reply::Array(f) = e {
            if let Some(Reply::Array(subs)) = f.get_mut(9) {
                subs.sort_by_key(|s| format!("{s:?}"));
            }
        }
    }
    Reply::Array(entries)
}

/// CLIENT INFO and LIST say `resp=3` after HELLO 3, and `age` counts from the connection's start.
#[test]
fn client_list_knows_the_protocol_and_age() {
    let serve = LimitlabServe::start(&["--clock", "wall"]);
    let mut old = Conn::open(serve.port());
    old.line("PING");
    std::thread::sleep(Duration::from_millis(2100));
    let mut c = Conn::open(serve.port());
    assert!(c.text("CLIENT INFO").contains(" resp=2"));
    c.line("HELLO 3");
    assert!(c.text("CLIENT INFO").contains(" resp=3"));
    let info = c.text("CLIENT INFO");
    assert!(info.contains(" age=0 "), "{info}");
    let list = old.text("CLIENT LIST");
    let mine = list.lines().find(|l| !l.contains("cmd=client|list")).expect("the other client");
    assert!(mine.contains(" resp=3"), "{list}");
    c.line("HELLO 2");
    assert!(c.text("CLIENT INFO").contains(" resp=2"));
}
