//! A script that runs long on `limitlab serve`, as on Redis 7.0: once it has run past
//! `busy-reply-threshold`, the other clients get `BUSY`, SCRIPT KILL / FUNCTION KILL stop a script
//! that has not written (UNKILLABLE once it has), FUNCTION STATS names the function running,
//! SHUTDOWN NOSAVE stops the server, and the script's own connection keeps its pipelined requests
//! for afterwards. Every exchange is made with a private redis-server too, and the replies must be
//! the same.
use crate::common;

use std::time::Duration;

use common::conn::Conn;
use common::{LimitlabServe, RedisServer};
use limitlab_emulator::Reply;

/// Asks PING on `c` until the answer is BUSY (the script has passed the threshold).
fn wait_busy(c: &mut Conn) -> Reply {
    let mut last = Reply::Nil;
    common::wait_for("the script to reach busy-reply-threshold", || {
        last = c.call(&["PING"]);
        matches!(&last, Reply::Error(e) if e.starts_with("BUSY"))
    });
    last
}

/// FUNCTION STATS's reply (RESP2: maps as flat arrays) with its `duration_ms` made 0 (it differs
/// from run to run).
fn without_duration(r: Reply) -> Reply {
    match r {
        Reply::Array(a) => {
            let mut out: Vec<Reply> = Vec::with_capacity(a.len());
            for v in a {
                let after_name = matches!(out.last(), Some(Reply::Bulk(b)) if b == b"duration_ms");
                out.push(if after_name { Reply::Int(0) } else { without_duration(v) });
            }
            Reply::Array(out)
        }
        other => other,
    }
}

/// A read-only script that loops: BUSY for others (new connections too), the wrong KILL refused,
/// SCRIPT KILL accepted, the caller's error, its pipelined PING answered afterwards.
fn read_only_script_killed(port: u16) -> Vec<Reply> {
    let mut a = Conn::open(port);
    let mut b = Conn::open(port);
    // A connection that says nothing until the script has run long.
    let mut quiet = Conn::open(port);
    let mut t = vec![a.call(&["CONFIG", "SET", "busy-reply-threshold", "50"])];
    t.push(b.call(&["SCRIPT", "KILL"]));
    // The script and a PING in one pipeline: the PING waits for the script's end.
    a.send_all(&[&["EVAL", "local i = 0 while true do i = i + 1 end", "0"], &["PING"]]);
    t.push(wait_busy(&mut b));
    t.push(quiet.call(&["PING"]));
    let mut fresh = Conn::open(port);
    t.push(fresh.call(&["GET", "x"]));
    t.push(fresh.call(&["NOSUCH"]));
    t.push(b.call(&["FUNCTION", "KILL"]));
    t.push(b.call(&["FUNCTION", "STATS"]));
    t.push(b.call(&["SHUTDOWN"]));
    t.push(b.call(&["SHUTDOWN", "ABORT"]));
    t.push(b.call(&["SCRIPT", "KILL"]));
    t.push(a.read());
    t.push(a.read());
    t.push(b.call(&["PING"]));
    t.push(b.call(&["SCRIPT", "KILL"]));
    t.push(fresh.call(&["PING"]));
    t
}

#[test]
fn a_long_script_gets_busy_replies_and_script_kill_as_on_redis() {
    let serve = LimitlabServe::start(&[]);
    let ours = read_only_script_killed(serve.port());
    assert!(
        matches!(&ours[11], Reply::Error(e) if e.starts_with("ERR Script killed by user with SCRIPT KILL... script: ")
            && e.ends_with(", on @user_script:1.")),
        "{ours:?}"
    );
    assert_eq!(ours[12], Reply::Status("PONG".into()));
    assert_eq!(ours[13], Reply::Status("PONG".into()));
    if let Some(redis) = RedisServer::start_or_skip("a_long_script_gets_busy_replies_and_script_kill_as_on_redis") {
        assert_eq!(ours, read_only_script_killed(redis.port()));
    }
}

/// A script that wrote cannot be killed; SHUTDOWN without NOSAVE is refused; SHUTDOWN NOSAVE stops
/// the server, with no reply.
fn written_script_and_shutdown(port: u16) -> Vec<Reply> {
    let mut a = Conn::open(port);
    let mut b = Conn::open(port);
    let mut t = vec![a.call(&["CONFIG", "SET", "lua-time-limit", "50"])];
    a.send(&["EVAL", "redis.call('set', KEYS[1], 'y') while true do end", "1", "x"]);
    t.push(wait_busy(&mut b));
    t.push(b.call(&["SCRIPT", "KILL"]));
    t.push(b.call(&["FUNCTION", "KILL"]));
    t.push(b.call(&["SHUTDOWN", "SAVE"]));
    b.send(&["SHUTDOWN", "NOSAVE"]);
    assert!(b.closed(), "SHUTDOWN NOSAVE closes the connection");
    assert!(a.closed(), "the script's caller gets no reply");
    t
}

#[test]
fn a_script_that_wrote_is_unkillable_and_shutdown_nosave_stops_the_server() {
    let mut serve = LimitlabServe::start(&[]);
    let ours = written_script_and_shutdown(serve.port());
    assert!(matches!(&ours[2], Reply::Error(e) if e.starts_with("UNKILLABLE ")), "{ours:?}");
    assert!(serve.wait_exit(Duration::from_secs(30)).is_some(), "serve exits after SHUTDOWN NOSAVE");
    if let Some(redis) =
        RedisServer::start_or_skip("a_script_that_wrote_is_unkillable_and_shutdown_nosave_stops_the_server")
    {
        assert_eq!(ours, written_script_and_shutdown(redis.port()));
    }
}

/// A function that loops: its own BUSY text, SCRIPT KILL refused, FUNCTION STATS naming it,
/// FUNCTION KILL accepted.
fn function_killed(port: u16) -> Vec<Reply> {
    let mut a = Conn::open(port);
    let mut b = Conn::open(port);
    let mut t = vec![a.call(&["CONFIG", "SET", "busy-reply-threshold", "50"])];
    let lib = "#!lua name=spinlib\nredis.register_function('spin', function()\n  local a = 1 while true do a = a + 1 end\nend)";
    t.push(a.call(&["FUNCTION", "LOAD", "REPLACE", lib]));
    a.send(&["FCALL", "spin", "0"]);
    t.push(wait_busy(&mut b));
    t.push(b.call(&["SCRIPT", "KILL"]));
    t.push(without_duration(b.call(&["FUNCTION", "STATS"])));
    t.push(b.call(&["FUNCTION", "KILL"]));
    t.push(a.read());
    t.push(b.call(&["FUNCTION", "KILL"]));
    t.push(a.call(&["PING"]));
    t
}

#[test]
fn a_long_function_is_named_by_function_stats_and_killed_by_function_kill_as_on_redis() {
    let serve = LimitlabServe::start(&[]);
    let ours = function_killed(serve.port());
    assert_eq!(
        ours[6],
        Reply::Error("ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:3.".into()),
        "{ours:?}"
    );
    if let Some(redis) =
        RedisServer::start_or_skip("a_long_function_is_named_by_function_stats_and_killed_by_function_kill_as_on_redis")
    {
        assert_eq!(ours, function_killed(redis.port()));
    }
}
