//! `limitlab serve` as a master: a replica that attaches with SYNC gets an RDB snapshot a real
//! redis-server loads, then the writes as Redis 7.0.15 propagates them, byte for byte; a real
//! redis-server started with `--replicaof` follows it.
use crate::common;

use common::conn::Conn;
use common::{LimitlabServe, RedisServer, TempDir};
use limitlab_emulator::Reply;

/// The dataset of both the snapshot test and the replica test: every type, TTLs, several
/// databases, a function library.
fn fill(c: &mut Conn) {
    for cmd in [
        &["SET", "s:int", "12345"][..],
        &["SET", "s:raw", "hello"],
        &["SET", "s:long", &"abcdefgh".repeat(40)],
        &["SET", "s:ttl", "v", "PX", "3600000"],
        &["HSET", "h", "f1", "v1", "f2", "2"],
        &["RPUSH", "l", "a", "b", "3"],
        &["SADD", "set:int", "1", "2", "3"],
        &["SADD", "set:str", "x", "y"],
        &["ZADD", "z", "1", "one", "2.5", "two"],
        &["SELECT", "3"],
        &["SET", "in3", "x"],
        &["SELECT", "0"],
        &["FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return 1 end)"],
    ] {
        let r = c.call(cmd);
        assert!(!r.is_error(), "{cmd:?}: {r:?}");
    }
}

/// What `port` holds of [`fill`]'s keys, read back with the reading commands.
fn contents(port: u16) -> Vec<String> {
    let mut c = Conn::open(port);
    let mut out = Vec::new();
    for cmd in [
        &["GET", "s:int"][..],
        &["GET", "s:raw"],
        &["GET", "s:long"],
        &["GET", "s:ttl"],
        &["HGETALL", "h"],
        &["LRANGE", "l", "0", "-1"],
        &["SMEMBERS", "set:int"],
        &["SCARD", "set:str"],
        &["SISMEMBER", "set:str", "y"],
        &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        &["OBJECT", "ENCODING", "s:int"],
        &["OBJECT", "ENCODING", "set:int"],
        &["OBJECT", "ENCODING", "z"],
        &["FUNCTION", "LIST"],
        &["SELECT", "3"],
        &["GET", "in3"],
        &["SELECT", "0"],
    ] {
        out.push(format!("{cmd:?} -> {:?}", c.call(cmd)));
    }
    let pttl = c.call(&["PTTL", "s:ttl"]);
    assert!(matches!(pttl, Reply::Int(t) if t > 3_000_000), "s:ttl keeps its deadline: {pttl:?}");
    out
}

#[test]
fn sync_sends_a_snapshot_that_redis_server_loads() {
    let serve = LimitlabServe::start(&["--clock", "wall"]);
    let mut c = Conn::open(serve.port());
    fill(&mut c);
    let (headers, rdb) = Conn::open(serve.port()).attach(b"SYNC\r\n");
    assert!(headers.iter().all(|h| h.is_empty()), "SYNC sends the bulk at once: {headers:?}");
    assert!(rdb.starts_with(b"REDIS0010"), "{:?}", &rdb[..9.min(rdb.len())]);

    let Some(redis) = RedisServer::start_or_skip("sync_sends_a_snapshot_that_redis_server_loads") else { return };
    let want = contents_of_fill(redis.port());
    drop(redis);
    let dir = TempDir::new("serve-sync-rdb");
    std::fs::write(dir.0.join("dump.rdb"), &rdb).expect("write dump.rdb");
    let loaded = RedisServer::start_with(&["--dir", dir.path(), "--dbfilename", "dump.rdb"]);
    assert_eq!(contents(loaded.port()), want, "the snapshot loads in redis-server as the same dataset");
    assert_eq!(contents(serve.port()), want);
}

/// [`contents`] of a fresh redis-server after [`fill`]: what the snapshot must load as.
fn contents_of_fill(port: u16) -> Vec<String> {
    fill(&mut Conn::open(port));
    contents(port)
}

/// The commands whose propagation is compared: rewrites (relative TTLs, SPOP, LMPOP, ZMPOP,
/// GETEX, GETDEL, INCRBYFLOAT), writes without effect, reads, a transaction over two databases and
/// scripts with one and several writes.
const SEQUENCE: &[&[&str]] = &[
    &["SET", "a", "1"],
    &["SET", "b", "x", "EX", "100"],
    &["SETEX", "b", "100", "y"],
    &["EXPIRE", "a", "100", "GT"],
    &["EXPIRE", "a", "100", "LT"],
    &["GETEX", "a", "PERSIST"],
    &["GETEX", "a"],
    &["GETDEL", "a"],
    &["GETDEL", "a"],
    &["INCRBYFLOAT", "f", "1.5"],
    &["HINCRBYFLOAT", "h", "f", "2.5"],
    &["SADD", "s", "m1"],
    &["SPOP", "s"],
    &["SADD", "s", "m2", "m3"],
    &["SPOP", "s", "5"],
    &["RPUSH", "l", "a", "b", "c"],
    &["LMPOP", "1", "l", "LEFT", "COUNT", "2"],
    &["ZADD", "z", "1", "a", "2", "b"],
    &["ZMPOP", "1", "z", "MAX", "COUNT", "5"],
    &["LLEN", "l"],
    &["DEL", "nokey"],
    &["MULTI"],
    &["SET", "t1", "1"],
    &["SELECT", "2"],
    &["SET", "t2", "2"],
    &["EXEC"],
    &["SELECT", "0"],
    &["EVAL", "redis.call('set', KEYS[1], 'v') return redis.call('get', KEYS[1])", "1", "one"],
    &[
        "EVAL",
        "redis.call('incr', KEYS[1]) redis.call('expire', KEYS[1], 50) redis.call('spop', KEYS[2])",
        "2",
        "c",
        "s",
    ],
    &["EXPIRE", "c", "-1"],
    // Stream reads of a group: new entries go as XCLAIMs (NOACK: XGROUP SETID), history and
    // empty reads as nothing (IDs explicit: `*` would depend on the moment).
    &["XADD", "st", "1-1", "f", "a"],
    &["XADD", "st", "1-2", "f", "b"],
    &["XADD", "st", "1-3", "f", "c"],
    &["XGROUP", "CREATE", "st", "g", "0"],
    &["MULTI"],
    &["XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "STREAMS", "st", ">"],
    &["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "st", ">"],
    &["EXEC"],
    &["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "st", "0"],
    &["XREADGROUP", "GROUP", "g", "c2", "STREAMS", "st", ">"],
    &["XADD", "st", "1-4", "f", "d"],
    &["XADD", "st", "1-5", "f", "e"],
    &["XREADGROUP", "GROUP", "g", "c2", "NOACK", "STREAMS", "st", ">"],
    &["XADD", "st2", "2-1", "f", "x"],
    &["XGROUP", "CREATE", "st2", "g", "0"],
    &["XADD", "st", "1-6", "f", "g"],
    &["XREADGROUP", "GROUP", "g", "c3", "COUNT", "1", "STREAMS", "st", "st2", ">", ">"],
    &["XADD", "st2", "2-2", "f", "y"],
    &["EVAL", "return redis.call('XREADGROUP', 'GROUP', 'g', 'c1', 'STREAMS', KEYS[1], '>')", "1", "st2"],
    // XCLAIM and XAUTOCLAIM go as one canonical XCLAIM per entry claimed or dropped (a deleted
    // entry's names its old consumer), or XGROUP SETID when only LASTID moved the group.
    &["XCLAIM", "st", "g", "c5", "0", "1-1", "1-2"],
    &["XDEL", "st", "1-3"],
    &["XCLAIM", "st", "g", "c5", "0", "1-3"],
    &["XCLAIM", "st", "g", "c5", "0", "1-1", "JUSTID", "LASTID", "9-9"],
    &["XCLAIM", "st", "g", "c5", "0", "1-99", "LASTID", "10-1"],
    &["XAUTOCLAIM", "st", "g", "c6", "0", "0-0", "COUNT", "10"],
    // redis.set_repl(redis.REPL_NONE): the commands themselves stay off the stream (XADD, SET's
    // rewrite), what a command sends on its own (the group read's XCLAIM) does not.
    &[
        "EVAL",
        "redis.set_repl(redis.REPL_NONE) redis.call('set', KEYS[1], 'v', 'EX', 100) \
         redis.call('xadd', KEYS[2], '11-1', 'f', 'v') redis.call('xreadgroup', 'GROUP', 'g', 'c9', 'STREAMS', KEYS[2], '>') \
         redis.set_repl(redis.REPL_ALL) redis.call('set', KEYS[3], 'v2')",
        "3",
        "rk",
        "st",
        "rk2",
    ],
    &["PUBLISH", "chan", "msg"],
    &["FLUSHDB"],
    &["SET", "end-marker", "1"],
];

/// The stream a server sends a replica attached with SYNC while [`SEQUENCE`] runs, with every
/// 13-digit number (a unix-ms deadline, which depends on the moment) replaced by `T`.
fn stream_of(port: u16) -> String {
    let mut replica = Conn::open(port);
    replica.attach(b"SYNC\r\n");
    let mut c = Conn::open(port);
    for cmd in SEQUENCE {
        let r = c.call(cmd);
        assert!(!r.is_error(), "{cmd:?}: {r:?}");
    }
    normalized(replica.bytes_until(b"$10\r\nend-marker\r\n$1\r\n1\r\n"))
}

/// A replication stream as text, keep-alive PINGs left out and every 13-digit number replaced by `T`.
fn normalized(bytes: Vec<u8>) -> String {
    // The keep-alive PINGs a master sends every `repl-ping-replica-period` seconds come when they
    // come: left out, as Redis's own test helper skips them.
    let text = String::from_utf8(bytes).expect("text").replace("*1\r\n$4\r\nping\r\n", "");
    let mut out = String::new();
    let mut digits = String::new();
    for ch in text.chars().chain(std::iter::once('\0')) {
        if ch.is_ascii_digit() {
            digits.push(ch);
            continue;
        }
        out.push_str(if digits.len() == 13 { "T" } else { &digits });
        digits.clear();
        if ch != '\0' {
            out.push(ch);
        }
    }
    out
}

/// The stream while blocked group readers are served by one XADD: a reader (c1, group g) and a
/// NOACK reader (c2, group g2, a consumer it creates), each served as a unit of its own.
fn served_stream_of(port: u16) -> String {
    let mut replica = Conn::open(port);
    replica.attach(b"SYNC\r\n");
    let mut c = Conn::open(port);
    for cmd in [
        &["XADD", "bs", "1-1", "f", "a"][..],
        &["XGROUP", "CREATE", "bs", "g", "$"],
        &["XGROUP", "CREATE", "bs", "g2", "$"],
    ] {
        let r = c.call(cmd);
        assert!(!r.is_error(), "{cmd:?}: {r:?}");
    }
    let mut b1 = Conn::open(port);
    b1.send(&["XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", "bs", ">"]);
    c.wait_blocked(1);
    let mut b2 = Conn::open(port);
    b2.send(&["XREADGROUP", "GROUP", "g2", "c2", "NOACK", "BLOCK", "0", "STREAMS", "bs", ">"]);
    c.wait_blocked(2);
    assert!(!c.call(&["XADD", "bs", "1-2", "f", "b"]).is_error());
    for b in [&mut b1, &mut b2] {
        let r = b.read();
        assert!(matches!(r, Reply::Array(_)), "{r:?}");
    }
    assert!(!c.call(&["SET", "end-marker", "1"]).is_error());
    normalized(replica.bytes_until(b"$10\r\nend-marker\r\n$1\r\n1\r\n"))
}

#[test]
fn served_group_readers_replicate_as_redis_byte_for_byte() {
    let Some(redis) = RedisServer::start_or_skip("served_group_readers_replicate_as_redis_byte_for_byte") else {
        return;
    };
    let serve = LimitlabServe::start(&[]);
    let want = served_stream_of(redis.port());
    let got = served_stream_of(serve.port());
    assert_eq!(got, want);
    assert!(want.contains("XCLAIM") && want.contains("CREATECONSUMER"), "{want}");
}

#[test]
fn the_replication_stream_is_redis_byte_for_byte() {
    let Some(redis) = RedisServer::start_or_skip("the_replication_stream_is_redis_byte_for_byte") else { return };
    let serve = LimitlabServe::start(&[]);
    let want = stream_of(redis.port());
    let got = stream_of(serve.port());
    let lines = |s: &str| s.split("\r\n").map(str::to_string).collect::<Vec<_>>();
    assert_eq!(lines(&got), lines(&want));
    // The deadlines themselves: SET ... EX 100 goes as PXAT the clock's time plus 100 s.
    assert!(want.contains("$4\r\nPXAT\r\n$13\r\nT\r\n"), "{want}");
    // The script under REPL_NONE: its group read's XCLAIM went, its SET did not.
    assert!(
        want.contains("$2\r\nc9\r\n") && want.contains("$3\r\nrk2\r\n") && !want.contains("$2\r\nrk\r\n"),
        "{want}"
    );
}

#[test]
fn the_virtual_clock_sets_the_propagated_deadlines() {
    let serve = LimitlabServe::start(&["--at", "1704067200000"]);
    let mut replica = Conn::open(serve.port());
    let (headers, _) = replica.attach(b"PSYNC ? -1\r\n");
    let h = String::from_utf8_lossy(&headers[0]).to_string();
    let parts: Vec<&str> = h.split(' ').collect();
    assert!(parts.len() == 3 && parts[0] == "+FULLRESYNC" && parts[1].len() == 40, "{h}");
    let mut c = Conn::open(serve.port());
    c.call(&["SET", "k", "v", "EX", "100"]);
    c.call(&["CLOCK.ADVANCE", "1000"]);
    c.call(&["EXPIRE", "k", "10"]);
    c.call(&["CLOCK.ADVANCE", "20000"]);
    // The key expired on the virtual clock: the active expire cycle sends its DEL.
    let got = replica.bytes_until(b"*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n");
    let want = "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n\
                *5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$4\r\nPXAT\r\n$13\r\n1704067300000\r\n\
                *3\r\n$9\r\nPEXPIREAT\r\n$1\r\nk\r\n$13\r\n1704067211000\r\n\
                *2\r\n$3\r\nDEL\r\n$1\r\nk\r\n";
    assert_eq!(String::from_utf8_lossy(&got), want);
}

#[test]
fn redis_server_replicates_from_serve() {
    if !common::require_binaries("redis_server_replicates_from_serve", &["redis-server"]) {
        return;
    }
    let serve = LimitlabServe::start(&["--clock", "wall"]);
    let mut c = Conn::open(serve.port());
    c.call(&["SET", "before", "1"]);
    let port = serve.port().to_string();
    let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &port]);
    common::wait_for("the replica's link to serve", || {
        matches!(Conn::open(replica.port()).call(&["INFO", "replication"]),
            Reply::Bulk(b) if String::from_utf8_lossy(&b).contains("master_link_status:up"))
    });
    let info = c.call(&["INFO", "replication"]);
    let Reply::Bulk(info) = info else { panic!("{info:?}") };
    let info = String::from_utf8_lossy(&info).to_string();
    assert!(
        info.contains("connected_slaves:1\r\n") && info.contains(&format!("port={},state=online", replica.port())),
        "{info}"
    );
    let role = c.call(&["ROLE"]);
    assert!(matches!(&role, Reply::Array(r) if r[0] == Reply::Bulk(b"master".to_vec())), "{role:?}");

    fill(&mut c);
    c.call(&["SET", "end-marker", "1"]);
    common::wait_for("the replica to get the writes", || {
        Conn::open(replica.port()).call(&["GET", "end-marker"]) == Reply::Bulk(b"1".to_vec())
    });
    assert_eq!(contents(replica.port()), contents(serve.port()));
    assert_eq!(Conn::open(replica.port()).call(&["GET", "before"]), Reply::Bulk(b"1".to_vec()));

    drop(replica);
    common::wait_for("serve to forget the replica", || {
        matches!(c.call(&["INFO", "replication"]),
            Reply::Bulk(b) if String::from_utf8_lossy(&b).contains("connected_slaves:0\r\n"))
    });
}

#[test]
fn a_replica_gets_keepalive_pings_and_is_listed() {
    let serve = LimitlabServe::start(&["--clock", "wall"]);
    let mut c = Conn::open(serve.port());
    assert_eq!(c.call(&["CONFIG", "SET", "repl-ping-replica-period", "1"]), Reply::ok());
    let mut replica = Conn::open(serve.port());
    replica.attach(b"SYNC\r\n");
    // Within the period (and a few ticks of the timer), a ping comes, without a SELECT first.
    let first = replica.bytes_until(b"\r\n");
    assert_eq!(first, b"*1\r\n");
    assert_eq!(replica.bytes_until(b"ping\r\n"), b"$4\r\nping\r\n");
    let list = c.call(&["CLIENT", "LIST"]);
    let Reply::Bulk(list) = list else { panic!("{list:?}") };
    let list = String::from_utf8_lossy(&list).to_string();
    assert_eq!(list.lines().filter(|l| l.contains(" flags=S ")).count(), 1, "{list}");
    // What the replica sends (REPLCONF ACK) gets no reply; the stream goes on.
    replica.write_raw(b"*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$1\r\n0\r\n");
    c.call(&["SET", "k", "v"]);
    let got = replica.bytes_until(b"$1\r\nk\r\n$1\r\nv\r\n");
    let text = String::from_utf8_lossy(&got).replace("*1\r\n$4\r\nping\r\n", "");
    assert_eq!(text, "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n");
}
