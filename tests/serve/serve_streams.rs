//! Streams with consumer groups across `limitlab serve` and a private redis-server 7.0: DUMP payloads
//! (RDB type STREAM_LISTPACKS_2 with groups, pending entries and consumers) restoring both ways,
//! blocked XREAD/XREADGROUP served by XADD with Redis's reply bytes (RESP2 and RESP3), ended by a
//! deleted key or a destroyed group with Redis's errors, and timed out by the virtual clock.
use crate::common;

use common::conn::Conn;
use common::{LimitlabServe, RedisServer};
use limitlab_emulator::Reply;

/// A stream with a deleted entry, big and negative integers, entries with other fields than the
/// node's first, two groups (one with a NOACK read and a moved last ID), pending entries of several
/// consumers and a consumer with none, built by the same commands on both servers.
const SETUP: &[&[&str]] = &[
    &["XADD", "x", "100-1", "a", "1"],
    &["XADD", "x", "101-1", "b", "1"],
    &["XADD", "x", "102-1", "c", "-70000", "d", "12345678901234"],
    &["XADD", "x", "103-1", "e", "1"],
    &["XADD", "x", "104-1", "f", "1"],
    &["XADD", "x", "18446744073709551-7", "g", "some longer value that is compressed? no, not quite"],
    &["XGROUP", "CREATE", "x", "g1", "0"],
    &["XGROUP", "CREATE", "x", "g2", "0", "ENTRIESREAD", "0"],
    &["XREADGROUP", "GROUP", "g1", "Alice", "COUNT", "1", "STREAMS", "x", ">"],
    &["XREADGROUP", "GROUP", "g1", "Bob", "COUNT", "1", "STREAMS", "x", ">"],
    &["XREADGROUP", "GROUP", "g1", "Bob", "NOACK", "COUNT", "1", "STREAMS", "x", ">"],
    &["XREADGROUP", "GROUP", "g2", "Charlie", "COUNT", "4", "STREAMS", "x", ">"],
    &["XGROUP", "SETID", "x", "g1", "101-1"],
    &["XREADGROUP", "GROUP", "g1", "Dave", "COUNT", "3", "STREAMS", "x", ">"],
    &["XGROUP", "CREATECONSUMER", "x", "g2", "Erin"],
    &["XDEL", "x", "103-1"],
];

fn setup(c: &mut Conn) {
    for line in SETUP {
        let r = c.call(line);
        assert!(!r.is_error(), "{line:?}: {r:?}");
    }
}

fn bytes(r: Reply) -> Vec<u8> {
    match r {
        Reply::Bulk(b) => b,
        other => panic!("not a bulk string: {other:?}"),
    }
}

/// Redis's DUMP of a stream with groups restores in serve and serve DUMPs the same bytes again; serve's
/// DUMP restores in Redis; both ways XINFO STREAM FULL (with the times the payload carries) and
/// XPENDING agree.
#[test]
fn stream_dumps_with_consumer_groups_cross_between_serve_and_redis() {
    let Some(redis) = RedisServer::start_or_skip("stream_dumps_with_consumer_groups_cross_between_serve_and_redis")
    else {
        return;
    };
    let serve = LimitlabServe::start(&[]);
    let (mut ours, mut theirs) = (Conn::open(serve.port()), Conn::open(redis.port()));
    setup(&mut ours);
    setup(&mut theirs);
    let from_theirs = bytes(theirs.call(&["DUMP", "x"]));
    let from_ours = bytes(ours.call(&["DUMP", "x"]));
    // Only the delivery and seen times (8 bytes each, little endian) can differ.
    assert_eq!(from_ours.len(), from_theirs.len());
    assert_eq!(ours.call_bytes(&[b"RESTORE", b"fromredis", b"0", &from_theirs]), Reply::ok());
    assert_eq!(bytes(ours.call(&["DUMP", "fromredis"])), from_theirs, "serve re-DUMPs Redis's payload as is");
    assert_eq!(theirs.call_bytes(&[b"RESTORE", b"fromserve", b"0", &from_ours]), Reply::ok());
    for (a, b) in [("x", "fromserve"), ("fromredis", "x")] {
        for cmd in [&["XINFO", "STREAM", "", "FULL"][..], &["XINFO", "GROUPS", ""], &["XPENDING", "", "g1"]] {
            let mut on_ours = cmd.to_vec();
            let mut on_theirs = cmd.to_vec();
            let at = cmd.iter().position(|s| s.is_empty()).unwrap();
            on_ours[at] = a;
            on_theirs[at] = b;
            assert_eq!(ours.call(&on_ours), theirs.call(&on_theirs), "{on_ours:?} on serve, {on_theirs:?} on Redis");
        }
    }
    // A payload with a flipped byte is refused as Redis refuses it (its checksum).
    let mut bad = from_theirs.clone();
    let n = bad.len();
    bad[n - 20] ^= 0x40;
    assert_eq!(
        ours.call_bytes(&[b"RESTORE", b"bad", b"0", &bad]),
        theirs.call_bytes(&[b"RESTORE", b"bad", b"0", &bad])
    );
}

/// The same scenario on both servers: what the blocked reader receives, byte for byte.
fn blocked_reads(port: u16, resp3: bool) -> Vec<Reply> {
    let (mut a, mut b) = (Conn::open(port), Conn::open(port));
    if resp3 {
        assert!(!a.call(&["HELLO", "3"]).is_error());
    }
    let mut got = Vec::new();
    b.call(&["DEL", "s", "t"]);
    // XREAD on two keys, one missing: an XADD to the missing one serves it.
    a.call(&["XADD", "s", "1-1", "f", "v"]);
    a.send_bytes(&[b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"t", b"$", b"$"]);
    b.wait_blocked(1);
    b.call(&["XADD", "t", "2-1", "g", "w", "h", "x"]);
    got.push(a.read());
    // A group reader is served by the first XADD after its group's last ID; COUNT bounds the read.
    b.call(&["XGROUP", "CREATE", "s", "grp", "$"]);
    a.send_bytes(&[b"XREADGROUP", b"GROUP", b"grp", b"alice", b"COUNT", b"1", b"BLOCK", b"0", b"STREAMS", b"s", b">"]);
    b.wait_blocked(1);
    b.call(&["MULTI"]);
    b.call(&["XADD", "s", "3-1", "a", "1"]);
    b.call(&["XADD", "s", "3-2", "a", "2"]);
    b.call(&["EXEC"]);
    got.push(a.read());
    got.push(b.call(&["XPENDING", "s", "grp"]));
    got.push(b.call(&["XINFO", "GROUPS", "s"]));
    // The stream deleted, or its group destroyed, under a group reader: Redis's errors.
    b.call(&["XGROUP", "SETID", "s", "grp", "$"]);
    a.send_bytes(&[b"XREADGROUP", b"GROUP", b"grp", b"bob", b"BLOCK", b"0", b"STREAMS", b"s", b">"]);
    b.wait_blocked(1);
    b.call(&["XGROUP", "DESTROY", "s", "grp"]);
    got.push(a.read());
    b.call(&["XGROUP", "CREATE", "s", "grp", "$"]);
    a.send_bytes(&[b"XREADGROUP", b"GROUP", b"grp", b"bob", b"BLOCK", b"0", b"STREAMS", b"s", b">"]);
    b.wait_blocked(1);
    b.call(&["DEL", "s"]);
    got.push(a.read());
    // In MULTI, BLOCK is ignored: a nil reply at once.
    b.call(&["XGROUP", "CREATE", "s", "grp", "$", "MKSTREAM"]);
    a.call(&["MULTI"]);
    a.call(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    a.call(&["XREADGROUP", "GROUP", "grp", "c", "BLOCK", "0", "STREAMS", "s", ">"]);
    got.push(a.call(&["EXEC"]));
    // A short timeout with nothing to read: the nil reply.
    got.push(a.call(&["XREAD", "BLOCK", "20", "STREAMS", "s", "$"]));
    got
}

#[test]
fn blocked_stream_readers_get_redis_replies() {
    let Some(redis) = RedisServer::start_or_skip("blocked_stream_readers_get_redis_replies") else { return };
    let serve = LimitlabServe::start(&["--clock", "wall"]);
    for resp3 in [false, true] {
        assert_eq!(blocked_reads(serve.port(), resp3), blocked_reads(redis.port(), resp3), "resp3: {resp3}");
    }
}

#[test]
fn blocked_stream_readers_time_out_when_the_virtual_clock_passes_their_deadline() {
    let serve = LimitlabServe::start(&[]);
    let (mut a, mut b) = (Conn::open(serve.port()), Conn::open(serve.port()));
    assert_eq!(b.call(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]), Reply::ok());
    for read in [
        &[&b"XREAD"[..], b"BLOCK", b"2000", b"STREAMS", b"s", b"$"][..],
        &[b"XREADGROUP", b"GROUP", b"g", b"c", b"BLOCK", b"2000", b"STREAMS", b"s", b">"],
    ] {
        a.send_bytes(read);
        b.wait_blocked(1);
        assert_eq!(b.call(&["CLOCK.ADVANCE", "1500"]), Reply::ok());
        b.wait_blocked(1);
        b.call(&["CLOCK.ADVANCE", "600"]);
        assert_eq!(a.read(), Reply::NilArray);
        b.wait_blocked(0);
    }
    // A reader with no timeout waits through any advance and is served by an XADD.
    a.send_bytes(&[b"XREADGROUP", b"GROUP", b"g", b"c", b"BLOCK", b"0", b"STREAMS", b"s", b">"]);
    b.wait_blocked(1);
    b.call(&["CLOCK.ADVANCE", "100000"]);
    b.wait_blocked(1);
    b.call(&["XADD", "s", "5-1", "f", "v"]);
    let bulk = |s: &str| Reply::Bulk(s.as_bytes().to_vec());
    assert_eq!(
        a.read(),
        Reply::Array(vec![Reply::Array(vec![
            bulk("s"),
            Reply::Array(vec![Reply::Array(vec![bulk("5-1"), Reply::Array(vec![bulk("f"), bulk("v")])])])
        ])])
    );
    // The consumer was created by the served read and its pending entry carries the virtual time.
    let Reply::Array(pending) = b.call(&["XPENDING", "s", "g", "-", "+", "10"]) else { panic!() };
    assert_eq!(pending.len(), 1);
    b.call(&["CLOCK.ADVANCE", "250"]);
    let Reply::Array(pending) = b.call(&["XPENDING", "s", "g", "-", "+", "10"]) else { panic!() };
    let Reply::Array(entry) = &pending[0] else { panic!() };
    assert_eq!(entry[..2], [bulk("5-1"), bulk("c")]);
    assert_eq!(entry[2], Reply::Int(250), "idle time on the virtual clock");
}

/// The stream events each command publishes, in Redis's order.
fn stream_events(port: u16) -> Vec<Reply> {
    let (mut sub, mut c) = (Conn::open(port), Conn::open(port));
    c.call(&["FLUSHALL"]);
    c.call(&["CONFIG", "SET", "notify-keyspace-events", "Et"]);
    sub.call(&["PSUBSCRIBE", "__keyevent@*"]);
    for line in [
        &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"][..],
        &["XGROUP", "CREATECONSUMER", "s", "g", "bob"],
        &["XADD", "s", "1-1", "f", "v"],
        &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"],
        &["XGROUP", "SETID", "s", "g", "0"],
        &["XSETID", "s", "5-5"],
        &["XCLAIM", "s", "g", "carol", "0", "1-1"],
        &["XAUTOCLAIM", "s", "g", "dave", "0", "0"],
        &["XACK", "s", "g", "1-1"],
        &["XGROUP", "DELCONSUMER", "s", "g", "nobody"],
        &["XGROUP", "DELCONSUMER", "s", "g", "bob"],
        &["XGROUP", "DESTROY", "s", "g"],
        &["XADD", "s", "MAXLEN", "0", "6-1", "f", "v"],
        &["XDEL", "s", "1-1"],
    ] {
        assert!(!c.call(line).is_error(), "{line:?}");
    }
    c.call(&["PUBLISH", "__keyevent@0__:end", "s"]);
    let mut got = Vec::new();
    loop {
        let m = sub.read();
        let end = matches!(&m, Reply::Array(v) if v.get(2) == Some(&Reply::Bulk(b"__keyevent@0__:end".to_vec())));
        got.push(m);
        if end {
            break;
        }
    }
    c.call(&["CONFIG", "SET", "notify-keyspace-events", ""]);
    got
}

#[test]
fn stream_commands_publish_redis_keyspace_events() {
    let Some(redis) = RedisServer::start_or_skip("stream_commands_publish_redis_keyspace_events") else { return };
    let serve = LimitlabServe::start(&[]);
    let ours = stream_events(serve.port());
    assert!(ours.len() > 10, "{ours:?}");
    assert_eq!(ours, stream_events(redis.port()));
}
