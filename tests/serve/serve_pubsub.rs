//! What one connection's command delivers to another: blocked clients (BLPOP) timed out by the
//! virtual clock or served by a push, Pub/Sub messages and keyspace notifications, byte for byte
//! as a private redis-server sends them in RESP2 and RESP3.
use crate::common;

use common::conn::Conn;
use common::{LimitlabServe, RedisServer};
use limitlab_emulator::Reply;

fn bulk(s: &str) -> Reply {
    Reply::Bulk(s.as_bytes().to_vec())
}

#[test]
fn blpop_times_out_when_the_virtual_clock_passes_its_deadline_and_is_served_by_a_push() {
    let serve = LimitlabServe::start(&[]);
    let (mut a, mut b) = (Conn::open(serve.port()), Conn::open(serve.port()));
    // Nothing to pop: the client waits; 1.5 s of virtual time is not its 2 s timeout.
    a.send(&["BLPOP", "q", "2"]);
    b.wait_blocked(1);
    assert_eq!(b.call(&["CLOCK.ADVANCE", "1500"]), Reply::ok());
    assert_eq!(b.call(&["LLEN", "q"]), Reply::Int(0));
    b.wait_blocked(1);
    b.call(&["CLOCK.ADVANCE", "600"]);
    assert_eq!(a.read(), Reply::NilArray);
    b.wait_blocked(0);

    // Blocked again (no timeout): a push serves it after the push's own reply, first blocked first.
    a.send(&["BLPOP", "q", "other", "0"]);
    b.wait_blocked(1);
    let mut c = Conn::open(serve.port());
    c.send(&["BRPOP", "q", "0"]);
    b.wait_blocked(2);
    assert_eq!(b.call(&["RPUSH", "q", "x", "y"]), Reply::Int(2));
    assert_eq!(a.read(), Reply::Array(vec![bulk("q"), bulk("x")]));
    assert_eq!(c.read(), Reply::Array(vec![bulk("q"), bulk("y")]));
    // A served client takes requests again.
    assert_eq!(a.call(&["PING"]), Reply::Status("PONG".into()));

    // Inside MULTI a blocking command answers at once, and the queued push serves waiters after EXEC.
    c.send(&["BLPOP", "q", "0"]);
    b.wait_blocked(1);
    b.call(&["MULTI"]);
    b.call(&["BLPOP", "none", "0"]);
    b.call(&["LPUSH", "q", "z"]);
    assert_eq!(b.call(&["EXEC"]), Reply::Array(vec![Reply::NilArray, Reply::Int(1)]));
    assert_eq!(c.read(), Reply::Array(vec![bulk("q"), bulk("z")]));

    // CLIENT UNBLOCK ... ERROR.
    let id = match a.call(&["CLIENT", "ID"]) {
        Reply::Int(n) => n.to_string(),
        other => panic!("{other:?}"),
    };
    a.send(&["BLPOP", "q", "0"]);
    b.wait_blocked(1);
    assert_eq!(b.call(&["CLIENT", "UNBLOCK", &id, "ERROR"]), Reply::Int(1));
    assert_eq!(a.read(), Reply::Error("UNBLOCKED client unblocked via CLIENT UNBLOCK".into()));
    assert_eq!(b.call(&["CLIENT", "UNBLOCK", &id]), Reply::Int(0));
}

#[test]
fn a_subscriber_receives_expired_when_the_virtual_clock_passes_a_keys_deadline() {
    let serve = LimitlabServe::start(&[]);
    let (mut sub, mut c) = (Conn::open(serve.port()), Conn::open(serve.port()));
    assert_eq!(c.call(&["CONFIG", "SET", "notify-keyspace-events", "Ex"]), Reply::ok());
    assert_eq!(
        sub.call(&["SUBSCRIBE", "__keyevent@0__:expired"]),
        Reply::Array(vec![bulk("subscribe"), bulk("__keyevent@0__:expired"), Reply::Int(1)])
    );
    assert_eq!(c.call(&["SET", "k", "v", "PX", "500"]), Reply::ok());
    c.call(&["CLOCK.ADVANCE", "1000"]);
    // No command touched the key: the clock's move expired it.
    assert_eq!(sub.read(), Reply::Array(vec![bulk("message"), bulk("__keyevent@0__:expired"), bulk("k")]));
    assert_eq!(c.call(&["EXISTS", "k"]), Reply::Int(0));
}

/// A subscriber's transcript: (un)subscriptions, messages from another connection, the Pub/Sub-mode
/// replies, ended by a PING whose reply is known.
fn pubsub_transcript(port: u16, resp3: bool) -> Vec<u8> {
    let mut sub = Conn::open(port);
    let mut p = Conn::open(port);
    p.call(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    p.call(&["DEL", "k", "l"]);
    if resp3 {
        sub.send(&["HELLO", "3"]);
        sub.read();
    }
    sub.send(&["SUBSCRIBE", "ch1", "ch2"]);
    sub.send(&["PSUBSCRIBE", "c*", "__key*__:*"]);
    sub.send(&["PING", "sync"]);
    let end: &[u8] = if resp3 { b"$4\r\nsync\r\n" } else { b"*2\r\n$4\r\npong\r\n$4\r\nsync\r\n" };
    let mut out = sub.bytes_until(end);
    assert_eq!(p.call(&["PUBLISH", "ch1", "hello"]), Reply::Int(2));
    assert_eq!(p.call(&["PUBLISH", "other", "x"]), Reply::Int(0));
    assert_eq!(
        p.call(&["PUBSUB", "NUMSUB", "ch1", "nope"]),
        Reply::Array(vec![bulk("ch1"), Reply::Int(1), bulk("nope"), Reply::Int(0)])
    );
    assert_eq!(p.call(&["PUBSUB", "NUMPAT"]), Reply::Int(2));
    p.call(&["SET", "k", "v"]);
    p.call(&["RPUSH", "l", "a"]);
    p.call(&["LPOP", "l"]);
    sub.send(&["GET", "k"]);
    sub.send(&["UNSUBSCRIBE", "ch2", "ch1"]);
    sub.send(&["UNSUBSCRIBE"]);
    sub.send(&["PUNSUBSCRIBE", "c*", "nope"]);
    sub.send(&["PUNSUBSCRIBE"]);
    sub.send(&["PING", "done"]);
    out.extend(sub.bytes_until(b"$4\r\ndone\r\n"));
    p.call(&["CONFIG", "SET", "notify-keyspace-events", ""]);
    out
}

#[test]
fn pubsub_messages_are_redis_bytes_in_resp2_and_resp3() {
    let Some(redis) = RedisServer::start_or_skip("pubsub_messages_are_redis_bytes_in_resp2_and_resp3") else {
        return;
    };
    let serve = LimitlabServe::start(&[]);
    for resp3 in [false, true] {
        let ours = pubsub_transcript(serve.port(), resp3);
        let theirs = pubsub_transcript(redis.port(), resp3);
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs),
            "RESP{}",
            if resp3 { 3 } else { 2 }
        );
    }
}
