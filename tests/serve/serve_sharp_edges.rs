//! `limitlab serve`'s sharp edges: SIGINT/SIGTERM stop it after the command under way (a script
//! still running is killed), with one line and exit status 0; the virtual clock refuses to move before the epoch,
//! CLOCK.SET and CLOCK.ADVANCE alike; a script's call of a Redis command the emulator lacks says
//! so, while a command Redis lacks keeps Redis's own error.
use crate::common;

use std::time::Duration;

use common::LimitlabServe;

fn conn(port: u16) -> redis::Connection {
    let c = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
    let conn = c.get_connection_with_timeout(Duration::from_secs(30)).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    conn
}

fn call(c: &mut redis::Connection, args: &[&str]) -> redis::RedisResult<redis::Value> {
    redis::cmd(args[0]).arg(&args[1..]).query(c)
}

/// The signal arrives while a script runs (another client sees BUSY): the script is killed (it
/// would never end), its client gets the kill's error or a closed connection, never a hang, and the
/// server prints one line and exits 0.
fn stops_a_running_script(sig: &str, name: &str) {
    let mut serve = LimitlabServe::start(&[]);
    let port = serve.port();
    let mut other = conn(port);
    call(&mut other, &["CONFIG", "SET", "busy-reply-threshold", "20"]).unwrap();
    let script = std::thread::spawn(move || {
        let mut c = conn(port);
        redis::cmd("EVAL").arg("local i = 0 while true do i = i + 1 end").arg(0).query::<i64>(&mut c)
    });
    common::wait_for(
        "the script to be running (BUSY for another client)",
        || matches!(call(&mut other, &["PING"]), Err(e) if e.code() == Some("BUSY")),
    );
    common::signal_pid(serve.pid(), sig);
    match script.join().unwrap() {
        Err(e) if e.is_io_error() || e.to_string().contains("Script killed") => {}
        other => panic!("the script's client got {other:?}"),
    }
    let status = serve.wait_exit(Duration::from_secs(60)).expect("the server exits");
    assert!(status.success(), "exit status {status:?}, stderr: {}", serve.stderr());
    assert_eq!(serve.rest_of_stdout(), format!("received {name}, stopped after the command under way\n"));
}

#[test]
fn sigint_kills_a_running_script_and_exits_0() {
    stops_a_running_script("INT", "SIGINT");
}

#[test]
fn sigterm_kills_a_running_script_and_exits_0() {
    stops_a_running_script("TERM", "SIGTERM");
}

#[test]
fn the_clock_never_moves_before_the_epoch() {
    let serve = LimitlabServe::start(&["--at", "5000"]);
    let mut c = conn(serve.port());
    let refused = "invalid unix time in milliseconds, must not be negative";
    for args in [&["CLOCK.ADVANCE", "-99999999999"][..], &["CLOCK.ADVANCE", "-5001"], &["CLOCK.SET", "-1"]] {
        let e = call(&mut c, args).expect_err("refused");
        assert_eq!((e.code(), e.detail()), (Some("ERR"), Some(refused)), "{args:?}");
    }
    assert_eq!(redis::cmd("CLOCK.GET").query::<i64>(&mut c).unwrap(), 5000, "refused moves leave the clock");
    redis::cmd("CLOCK.ADVANCE").arg(-5000).query::<()>(&mut c).unwrap();
    assert_eq!(redis::cmd("CLOCK.GET").query::<i64>(&mut c).unwrap(), 0);
}

#[test]
fn a_redis_command_the_emulator_lacks_is_not_unknown() {
    let serve = LimitlabServe::start(&[]);
    let mut c = conn(serve.port());
    let e = call(&mut c, &["EVAL", "return redis.call('lastsave')", "0"]).expect_err("an error");
    assert!(
        e.to_string().contains("Redis command 'lastsave' called from script is not implemented by limitlab's emulator"),
        "{e}"
    );
    // A command Redis 7.0 lacks as well (WAITAOF came in 7.2): Redis's own error.
    let e = call(&mut c, &["EVAL", "return redis.call('waitaof', 0, 0, 0)", "0"]).expect_err("an error");
    assert!(e.to_string().contains("Unknown Redis command called from script"), "{e}");
}
