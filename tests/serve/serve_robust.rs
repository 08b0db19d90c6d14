//! No client reaches a panic or a freeze of `limitlab serve`: SHUTDOWN NOSAVE while a script is busy
//! stops it cleanly; DEBUG is refused unless `--enable-debug-command` allows it (Redis's text, byte
//! for byte); SIGTERM stops a server held by DEBUG SLEEP or a script that never ends; CONFIG SET
//! maxclients is applied, and CONFIG SET port / bind are refused rather than answered OK with
//! nothing moved.
use crate::common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use common::conn::Conn;
use common::{LimitlabServe, RedisServer};
use limitlab_emulator::Reply;

/// Headroom over the one second the design promises (10 ms sleep slices, a kill at the script's next
/// count-hook tick), for a loaded machine: what these tests tell apart is stopping at all (before,
/// a sleep of up to an hour or a script that never ends held the server).
const STOP_WITHIN: Duration = Duration::from_secs(5);

fn assert_no_panic(serve: &LimitlabServe) {
    let err = serve.stderr();
    assert!(!err.contains("panicked"), "serve panicked:\n{err}");
}

/// The system call the server's main thread (the one running commands) is in: its number, or
/// `running` when it is on a CPU.
fn main_thread_syscall(pid: u32) -> String {
    let s = std::fs::read_to_string(format!("/proc/{pid}/syscall")).unwrap_or_default();
    s.split_whitespace().next().unwrap_or("").to_string()
}

fn in_sleep(pid: u32) -> bool {
    let call = main_thread_syscall(pid);
    let mut sleeps = vec![libc::SYS_clock_nanosleep.to_string()];
    #[cfg(target_arch = "x86_64")]
    sleeps.push(libc::SYS_nanosleep.to_string());
    sleeps.contains(&call)
}

/// Sends SIGTERM and returns how long the server took to exit; panics past [`STOP_WITHIN`].
fn terminate(serve: &mut LimitlabServe) -> Duration {
    let t = Instant::now();
    common::signal_pid(serve.pid(), "TERM");
    let status = serve.wait_exit(STOP_WITHIN);
    let took = t.elapsed();
    assert!(
        status.is_some(),
        "serve still runs {} s after SIGTERM; stderr:\n{}",
        STOP_WITHIN.as_secs(),
        serve.stderr()
    );
    eprintln!("serve stopped {} ms after SIGTERM", took.as_millis());
    took
}

/// SHUTDOWN NOSAVE from another client while a script runs long (read-only or writing, with a
/// request pipelined after it): the server exits, nobody gets a reply, and nothing panics.
#[test]
fn shutdown_nosave_during_a_busy_script_exits_without_a_panic() {
    for script in ["local i = 0 while true do i = i + 1 end", "redis.call('set', 'k', 'v') while true do end"] {
        let mut serve = LimitlabServe::start(&[]);
        let mut a = Conn::open(serve.port());
        let mut b = Conn::open(serve.port());
        assert_eq!(a.call(&["CONFIG", "SET", "busy-reply-threshold", "20"]), Reply::ok());
        a.send(&["EVAL", script, "0"]);
        common::wait_for(
            "the script to be busy",
            || matches!(b.call(&["PING"]), Reply::Error(e) if e.starts_with("BUSY")),
        );
        b.send_all(&[&["SHUTDOWN", "NOSAVE"], &["PING"]]);
        assert!(b.closed(), "SHUTDOWN NOSAVE answers nothing");
        assert!(a.closed(), "the script's caller gets no reply");
        assert!(serve.wait_exit(Duration::from_secs(30)).is_some(), "serve exits after SHUTDOWN NOSAVE");
        assert_no_panic(&serve);
    }
}

/// What a client sees of DEBUG on a server started with Redis's defaults (`enable-debug-command no`),
/// with a password, before and after AUTH, and inside MULTI.
fn debug_refused(port: u16) -> Vec<Vec<u8>> {
    let mut c = Conn::open(port);
    let mut t = Vec::new();
    for args in [
        &["DEBUG", "SLEEP", "0"][..],
        &["DEBUG"],
        &["DEBUG", "HELP", "x", "y"],
        &["AUTH", "pw"],
        &["DEBUG", "SLEEP", "99999999999"],
        &["DEBUG", "NOSUCH"],
        &["MULTI"],
        &["DEBUG", "SLEEP", "0"],
        &["EXEC"],
        &["CONFIG", "GET", "enable-debug-command"],
        &["CONFIG", "SET", "enable-debug-command", "yes"],
        &["PING"],
    ] {
        t.push(c.call_raw(args));
    }
    t
}

/// The same while a script is busy: the refusal comes before BUSY, as Redis checks it first.
fn debug_refused_while_busy(port: u16) -> Vec<Vec<u8>> {
    let mut a = Conn::open(port);
    let mut b = Conn::open(port);
    assert_eq!(a.call(&["CONFIG", "SET", "busy-reply-threshold", "20"]), Reply::ok());
    a.send(&["EVAL", "while true do end", "0"]);
    common::wait_for("the script to be busy", || matches!(b.call(&["PING"]), Reply::Error(e) if e.starts_with("BUSY")));
    let mut t: Vec<Vec<u8>> =
        [&["DEBUG", "SLEEP", "0"][..], &["DEBUG"], &["MULTI"], &["DEBUG", "SLEEP", "0"], &["EXEC"]]
            .iter()
            .map(|args| b.call_raw(args))
            .collect();
    t.push(b.call_raw(&["SCRIPT", "KILL"]));
    t.push(a.read_raw());
    t
}

#[test]
fn debug_is_refused_unless_enabled_with_redis_text() {
    let serve = LimitlabServe::start(&["--requirepass", "pw"]);
    let ours = debug_refused(serve.port());
    let refused = format!("-{}\r\n", limitlab_server::DEBUG_REFUSED).into_bytes();
    assert_eq!(ours[0], refused, "{}", String::from_utf8_lossy(&ours[0]));
    assert_eq!(ours[4], refused, "DEBUG SLEEP 99999999999 is refused, not slept");
    assert_eq!(ours[11], b"+PONG\r\n");
    let busy = debug_refused_while_busy(LimitlabServe::start(&[]).port());
    assert_eq!(busy[0], refused, "{}", String::from_utf8_lossy(&busy[0]));
    if common::require_binaries("debug_is_refused_unless_enabled_with_redis_text", &["redis-server"]) {
        // Redis's default, said explicitly (whatever the launcher's configuration holds).
        let redis_default = RedisServer::start_with(&["--enable-debug-command", "no"]);
        assert_eq!(Conn::open(redis_default.port()).call(&["CONFIG", "SET", "requirepass", "pw"]), Reply::ok());
        let theirs = debug_refused(redis_default.port());
        let show = |v: &Vec<Vec<u8>>| v.iter().map(|r| String::from_utf8_lossy(r).into_owned()).collect::<Vec<_>>();
        assert_eq!(show(&ours), show(&theirs));
        let redis_busy = RedisServer::start_with(&["--enable-debug-command", "no"]);
        assert_eq!(show(&busy), show(&debug_refused_while_busy(redis_busy.port())));
    }
    // `yes` lets every connection run it; `local` those from 127.0.0.1 (the tests' own).
    for mode in ["yes", "local"] {
        let serve = LimitlabServe::start(&["--enable-debug-command", mode]);
        let mut c = Conn::open(serve.port());
        assert_eq!(c.call(&["DEBUG", "SLEEP", "0"]), Reply::ok(), "{mode}");
        assert_eq!(
            c.call(&["CONFIG", "GET", "enable-debug-command"]),
            Reply::Array(vec![Reply::bulk(b"enable-debug-command".to_vec()), Reply::bulk(mode.as_bytes().to_vec())])
        );
    }
}

/// A connection to 127.0.0.1:`port` from source address 127.0.0.2: on loopback, and yet not a local
/// client for Redis, which takes only 127.0.0.1 and ::1 as local.
fn connect_from_127_0_0_2(port: u16) -> TcpStream {
    use std::os::fd::FromRawFd;
    let addr = |ip: [u8; 4], port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(ip) },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a new socket, bound and connected with sockaddr_in values that live across the calls;
    // its descriptor is handed to the TcpStream, which then owns it alone.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let stream = TcpStream::from_raw_fd(fd);
        let src = addr([127, 0, 0, 2], 0);
        let r = libc::bind(fd, (&src as *const libc::sockaddr_in).cast(), len);
        assert_eq!(r, 0, "bind 127.0.0.2: {}", std::io::Error::last_os_error());
        let dst = addr([127, 0, 0, 1], port);
        let r = libc::connect(fd, (&dst as *const libc::sockaddr_in).cast(), len);
        assert_eq!(r, 0, "connect: {}", std::io::Error::last_os_error());
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        stream
    }
}

/// DEBUG SLEEP 0 from 127.0.0.1 and from 127.0.0.2.
fn debug_from_two_addresses(port: u16) -> Vec<Vec<u8>> {
    let mut local = Conn::open(port);
    let mut t = vec![local.call_raw(&["DEBUG", "SLEEP", "0"])];
    let mut other = connect_from_127_0_0_2(port);
    other.write_all(b"*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$1\r\n0\r\n").unwrap();
    let mut r = std::io::BufReader::new(other);
    let mut line = Vec::new();
    std::io::BufRead::read_until(&mut r, b'\n', &mut line).unwrap();
    t.push(line);
    t
}

/// `--enable-debug-command local`: a connection from 127.0.0.1 runs DEBUG, one from another loopback
/// address is refused, as Redis decides.
#[test]
fn debug_local_allows_only_127_0_0_1_and_1() {
    let serve = LimitlabServe::start(&["--enable-debug-command", "local"]);
    let ours = debug_from_two_addresses(serve.port());
    assert_eq!(ours, vec![b"+OK\r\n".to_vec(), format!("-{}\r\n", limitlab_server::DEBUG_REFUSED).into_bytes()]);
    if common::require_binaries("debug_local_allows_only_127_0_0_1_and_1", &["redis-server"]) {
        // Without protected mode, which would turn the second connection away first (serve has none).
        let redis = RedisServer::start_with(&["--enable-debug-command", "local", "--protected-mode", "no"]);
        assert_eq!(ours, debug_from_two_addresses(redis.port()));
    }
}

/// A server held by `DEBUG SLEEP 99999999999` stops on SIGTERM.
#[test]
fn sigterm_stops_a_server_held_by_debug_sleep() {
    let mut serve = LimitlabServe::start(&["--enable-debug-command", "yes"]);
    let mut a = Conn::open(serve.port());
    a.send(&["DEBUG", "SLEEP", "99999999999"]);
    let pid = serve.pid();
    common::wait_for("serve to sleep", || in_sleep(pid));
    let took = terminate(&mut serve);
    assert!(took < STOP_WITHIN);
    assert_no_panic(&serve);
    assert!(serve.rest_of_stdout().contains("received SIGTERM"));
}

/// A script that never ends (read-only, or one that wrote and so cannot be killed by SCRIPT KILL),
/// before `busy-reply-threshold` and after it: SIGTERM stops the server.
#[test]
fn sigterm_stops_a_server_held_by_a_script() {
    for (script, threshold) in [
        ("local i = 0 while true do i = i + 1 end", None),
        ("redis.call('set', 'k', 'v') while true do end", None),
        ("redis.call('set', 'k', 'v') while true do end", Some("20")),
    ] {
        let mut serve = LimitlabServe::start(&[]);
        let mut a = Conn::open(serve.port());
        if let Some(ms) = threshold {
            assert_eq!(a.call(&["CONFIG", "SET", "busy-reply-threshold", ms]), Reply::ok());
        }
        let pid = serve.pid();
        a.send(&["EVAL", script, "0"]);
        if threshold.is_some() {
            let mut b = Conn::open(serve.port());
            common::wait_for("BUSY", || matches!(b.call(&["PING"]), Reply::Error(e) if e.starts_with("BUSY")));
        } else {
            // Nothing else is asked of the server: on a CPU, it runs the script.
            common::wait_for("the script to run", || main_thread_syscall(pid) == "running");
        }
        terminate(&mut serve);
        assert_no_panic(&serve);
    }
}

/// Sends `bytes` on a new connection, closes its write side and reads to the end.
fn exchange(port: u16, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let _ = s.write_all(bytes);
    let _ = s.shutdown(Shutdown::Write);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

/// CONFIG SET maxclients 3 from one connection, then 5 more opened at once: the first two served,
/// the rest refused with Redis's text; INFO shows the new limit.
fn maxclients_applied(port: u16) -> (Vec<Reply>, Vec<Vec<u8>>) {
    let mut c = Conn::open(port);
    let mut t = vec![c.call(&["CONFIG", "SET", "maxclients", "0"]), c.call(&["CONFIG", "SET", "maxclients", "3"])];
    t.push(c.call(&["CONFIG", "GET", "maxclients"]));
    // Opened before any of them says a word; the server accepts them in this order.
    let held: Vec<TcpStream> = (0..5).map(|_| TcpStream::connect(("127.0.0.1", port)).expect("connect")).collect();
    let mut replies = vec![Vec::new(); held.len()];
    // The last three first, the first two still open: what a refused one gets is its whole stream
    // (nothing is sent on it, so no reset can discard the text).
    for i in (2..held.len()).rev() {
        let mut s = &held[i];
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let _ = s.shutdown(Shutdown::Write);
        let _ = s.read_to_end(&mut replies[i]);
    }
    for (i, s) in held.iter().enumerate().take(2) {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let _ = (&*s).write_all(b"PING\r\n");
        let mut r = std::io::BufReader::new(s);
        let _ = std::io::BufRead::read_until(&mut r, b'\n', &mut replies[i]);
    }
    let Reply::Bulk(info) = c.call(&["INFO", "clients"]) else { panic!("INFO is a bulk string") };
    let line = String::from_utf8_lossy(&info).lines().find(|l| l.starts_with("maxclients:")).map(str::to_string);
    t.push(Reply::Status(line.unwrap_or_default()));
    (t, replies)
}

#[test]
fn config_set_maxclients_is_applied_as_on_redis() {
    let serve = LimitlabServe::start(&[]);
    let (ours, replies) = maxclients_applied(serve.port());
    let refused = b"-ERR max number of clients reached\r\n".to_vec();
    assert_eq!(replies, vec![b"+PONG\r\n".to_vec(), b"+PONG\r\n".to_vec(), refused.clone(), refused.clone(), refused]);
    assert_eq!(ours[3], Reply::Status("maxclients:3".into()));
    assert_no_panic(&serve);
    if let Some(redis) = RedisServer::start_or_skip("config_set_maxclients_is_applied_as_on_redis") {
        assert_eq!((ours, replies), maxclients_applied(redis.port()));
    }
}

/// CONFIG SET port / bind cannot move serve's listener: refused with Redis's text for a parameter
/// fixed at startup, nothing changed, the server still where it was.
#[test]
fn config_set_port_and_bind_are_refused_not_silently_ignored() {
    let serve = LimitlabServe::start(&[]);
    let mut c = Conn::open(serve.port());
    let other = common::unused_port().to_string();
    for (name, value) in [("port", other.as_str()), ("bind", "127.0.0.2"), ("PORT", "0")] {
        assert_eq!(
            c.call(&["CONFIG", "SET", "maxclients", "50", name, value]),
            Reply::Error(format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - can't set immutable config"
            ))
        );
    }
    // All or nothing, as in Redis: maxclients was not changed either.
    assert_eq!(
        c.call(&["CONFIG", "GET", "maxclients"]),
        Reply::Array(vec![Reply::bulk(b"maxclients".to_vec()), Reply::bulk(b"10000".to_vec())])
    );
    assert_eq!(
        c.call(&["CONFIG", "GET", "port"]),
        Reply::Array(vec![Reply::bulk(b"port".to_vec()), Reply::bulk(serve.port().to_string().into_bytes())])
    );
    assert_eq!(exchange(serve.port(), b"PING\r\n"), b"+PONG\r\n");
}
