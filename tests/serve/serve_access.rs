//! Who may do what, and who sees what: ACL users (their rules, AUTH, NOPERM errors for commands,
//! keys and channels, from scripts too, the ACL log), MONITOR, CLIENT TRACKING invalidations and
//! CLIENT PAUSE, compared byte for byte with a private redis-server where Redis's replies do not
//! depend on time or on its hash seed (the order of single commands in described rules and of
//! ACL CAT is one, and differs between two runs of Redis itself).
use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{LimitlabServe, RedisServer};

/// A connection that sends commands and reads replies as raw RESP bytes.
struct Conn {
    r: BufReader<TcpStream>,
}

impl Conn {
    fn open(port: u16) -> Conn {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Conn { r: BufReader::new(s) }
    }

    fn send(&mut self, args: &[&str]) {
        let mut b = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            b.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            b.extend_from_slice(a.as_bytes());
            b.extend_from_slice(b"\r\n");
        }
        self.r.get_mut().write_all(&b).expect("send");
    }

    fn line(&mut self) -> Vec<u8> {
        let mut l = Vec::new();
        self.r.read_until(b'\n', &mut l).expect("a line");
        assert!(l.ends_with(b"\r\n"), "cut line {:?}", String::from_utf8_lossy(&l));
        l
    }

    /// One RESP2/RESP3 value, as the bytes that carry it.
    fn read(&mut self) -> Vec<u8> {
        let mut out = self.line();
        let n = || std::str::from_utf8(&out[1..out.len() - 2]).unwrap().parse::<i64>().unwrap();
        match out[0] {
            b'$' | b'=' | b'!' => {
                let len = n();
                if len >= 0 {
                    let mut body = vec![0u8; len as usize + 2];
                    self.r.read_exact(&mut body).expect("a bulk body");
                    out.extend_from_slice(&body);
                }
            }
            b'*' | b'~' | b'>' | b'%' => {
                let items = if out[0] == b'%' { n() * 2 } else { n() };
                for _ in 0..items.max(0) {
                    let item = self.read();
                    out.extend_from_slice(&item);
                }
            }
            _ => {}
        }
        out
    }

    fn call(&mut self, args: &[&str]) -> Vec<u8> {
        self.send(args);
        self.read()
    }

    /// Waits until INFO says `n` clients are blocked.
    fn wait_blocked(&mut self, n: usize) {
        let want = format!("blocked_clients:{n}\r\n");
        for _ in 0..2000 {
            if String::from_utf8_lossy(&self.call(&["INFO", "clients"])).contains(&want) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("never {n} blocked clients");
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `steps` (connection index, command) on a fresh connection set of each server and asserts
/// that every reply is the same bytes.
fn same_replies(serve: u16, redis: u16, conns: usize, steps: &[(usize, &[&str])]) {
    let mut ours: Vec<Conn> = (0..conns).map(|_| Conn::open(serve)).collect();
    let mut theirs: Vec<Conn> = (0..conns).map(|_| Conn::open(redis)).collect();
    for (i, args) in steps {
        let (a, b) = (ours[*i].call(args), theirs[*i].call(args));
        assert_eq!(text(&a), text(&b), "reply to {args:?} on connection {i}");
    }
}

#[test]
fn acl_rules_auth_and_refusals_reply_as_redis_does() {
    let Some(redis) = RedisServer::start_or_skip("acl_rules_auth_and_refusals_reply_as_redis_does") else { return };
    let serve = LimitlabServe::start(&[]);
    let steps: &[(usize, &[&str])] = &[
        (0, &["ACL", "WHOAMI"]),
        (0, &["ACL", "LIST"]),
        (0, &["ACL", "SETUSER", "u1", "on", "nopass", "+get", "~a*"]),
        (
            0,
            &["ACL", "SETUSER", "u2", "on", ">pw", "+@all", "-@dangerous", "~a*", "&ch*", "(+set ~b*)", "(%R~r* +get)"],
        ),
        (0, &["ACL", "SETUSER", "u3", "on", "nopass", "+@all", "-client|kill", "allkeys", "allchannels"]),
        (
            0,
            &[
                "ACL",
                "SETUSER",
                "u4",
                "reset",
                "skip-sanitize-payload",
                "#34344e4d60c2b6d639b7bd22e18f2b0b91bc34bf0ac5f9952744435093cfb4e6",
            ],
        ),
        (0, &["ACL", "LIST"]),
        (0, &["ACL", "USERS"]),
        (0, &["ACL", "GETUSER", "u2"]),
        (0, &["ACL", "GETUSER", "u4"]),
        (0, &["ACL", "GETUSER", "nobody"]),
        // Refused modifiers leave the user as it was (here: not created).
        (0, &["ACL", "SETUSER", "u5", "+nosuch"]),
        (0, &["ACL", "SETUSER", "u5", "badrule"]),
        (0, &["ACL", "SETUSER", "a b"]),
        (0, &["ACL", "SETUSER", "u5", "+config|get|x"]),
        (0, &["ACL", "SETUSER", "u5", "#abc"]),
        (0, &["ACL", "SETUSER", "u5", "(+get"]),
        (0, &["ACL", "SETUSER", "u5", "allkeys", "~b*"]),
        (0, &["ACL", "SETUSER", "u5", "allchannels", "&b*"]),
        (0, &["ACL", "SETUSER", "u5", ">a", "<b"]),
        (0, &["ACL", "GETUSER", "u5"]),
        (0, &["ACL", "DELUSER", "default"]),
        (0, &["ACL", "CAT", "nosuch"]),
        (0, &["ACL", "GENPASS", "0"]),
        (0, &["ACL", "LOG", "nope"]),
        (0, &["ACL", "DRYRUN", "u2", "get", "b"]),
        (0, &["ACL", "DRYRUN", "u2", "set", "b", "1"]),
        (0, &["ACL", "DRYRUN", "u2", "flushall"]),
        (0, &["ACL", "DRYRUN", "u2", "publish", "foo", "1"]),
        (0, &["ACL", "DRYRUN", "nobody", "get", "b"]),
        (0, &["ACL", "DRYRUN", "u2", "nocmd"]),
        (0, &["ACL", "DRYRUN", "u2", "get"]),
        (0, &["ACL", "LOAD"]),
        (0, &["ACL", "HELP"]),
        (0, &["ACL", "FOO"]),
        // Authentication.
        (1, &["AUTH", "u2", "wrong"]),
        (1, &["AUTH", "nobody", "x"]),
        (1, &["AUTH", "x"]),
        (1, &["AUTH", "u2", "pw"]),
        (1, &["ACL", "WHOAMI"]),
        (1, &["GET", "a1"]),
        (1, &["GET", "b1"]),
        (1, &["SET", "b1", "v"]),
        (1, &["GET", "r1"]),
        (1, &["SET", "r1", "v"]),
        (1, &["FLUSHALL"]),
        (1, &["CLIENT", "KILL", "TYPE", "master"]),
        (1, &["PUBLISH", "x", "1"]),
        (1, &["PUBLISH", "ch1", "1"]),
        (1, &["EVAL", "return redis.call('get','zz')", "0"]),
        (1, &["EVAL", "return redis.pcall('get','zz')", "0"]),
        (1, &["EVAL", "return redis.call('flushall')", "0"]),
        (1, &["EVAL", "return redis.acl_check_cmd('get','a1')", "0"]),
        (1, &["EVAL", "return redis.acl_check_cmd('get','zz')", "0"]),
        (1, &["EVAL", "return redis.acl_check_cmd('nosuch')", "0"]),
        (1, &["MULTI"]),
        (1, &["GET", "zz"]),
        (1, &["SET", "a1", "1"]),
        (1, &["EXEC"]),
        (1, &["SUBSCRIBE", "x"]),
        (1, &["PSUBSCRIBE", "ch*"]),
        (1, &["PSUBSCRIBE", "c*"]),
        // The ACL is checked before the Pub/Sub context.
        (1, &["SET", "zz", "1"]),
        (1, &["RESET"]),
        (1, &["ACL", "WHOAMI"]),
        // Rules changed between MULTI and EXEC.
        (2, &["AUTH", "u3", "x"]),
        (2, &["MULTI"]),
        (2, &["SET", "k", "1"]),
        (0, &["ACL", "SETUSER", "u3", "-set"]),
        (2, &["EXEC"]),
        (2, &["CLIENT", "KILL", "TYPE", "master"]),
        // requirepass is the default user's password.
        (0, &["CONFIG", "SET", "requirepass", "secret"]),
        (0, &["ACL", "GETUSER", "default"]),
        (3, &["GET", "a"]),
        (3, &["AUTH", "wrong"]),
        (3, &["AUTH", "secret"]),
        (3, &["GET", "a"]),
        (0, &["CONFIG", "SET", "requirepass", ""]),
        // (Not ACL LIST: u3's two single-command rules come in Redis's hash order.)
        (0, &["ACL", "GETUSER", "default"]),
        (0, &["ACL", "DELUSER", "u1", "u2", "nobody"]),
        (0, &["ACL", "USERS"]),
    ];
    same_replies(serve.port(), redis.port(), 4, steps);
}

/// The ACL log's entries as Redis writes them, their age and client line aside.
fn log_entries(c: &mut Conn) -> Vec<String> {
    let raw = text(&c.call(&["ACL", "LOG"]));
    let parts: Vec<&str> = raw.split("\r\n").collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < parts.len() {
        if parts[i] == "count" {
            // count :N reason $ r context $ c object $ o username $ u
            let f = |k: usize| parts.get(i + k).copied().unwrap_or("");
            out.push(format!("{} {} {} {} {}", f(1), f(4), f(8), f(12), f(16)));
        }
        i += 1;
    }
    out
}

#[test]
fn the_acl_log_records_what_redis_records() {
    let Some(redis) = RedisServer::start_or_skip("the_acl_log_records_what_redis_records") else { return };
    let serve = LimitlabServe::start(&[]);
    let mut logs = Vec::new();
    for port in [serve.port(), redis.port()] {
        let (mut admin, mut user) = (Conn::open(port), Conn::open(port));
        admin.call(&["ACL", "SETUSER", "lim", "on", ">p", "+get", "+set", "+eval", "+publish", "~k*", "resetchannels"]);
        user.call(&["AUTH", "lim", "nope"]);
        user.call(&["AUTH", "lim", "p"]);
        user.call(&["GET", "zz"]);
        user.call(&["GET", "zz"]);
        user.call(&["DEL", "k1"]);
        user.call(&["PUBLISH", "c", "m"]);
        user.call(&["EVAL", "return redis.pcall('set','x','1')", "0"]);
        logs.push(log_entries(&mut admin));
        assert_eq!(text(&admin.call(&["ACL", "LOG", "RESET"])), "+OK\r\n");
        assert_eq!(text(&admin.call(&["ACL", "LOG"])), "*0\r\n");
    }
    assert_eq!(logs[0].len(), 5, "{:?}", logs[0]);
    assert_eq!(logs[0], logs[1]);
}

/// A MONITOR line with its time and the client's port replaced by placeholders.
fn normalized_monitor(raw: &[u8]) -> String {
    let t = text(raw);
    let mut out = String::new();
    for line in t.split_inclusive("\r\n") {
        // +<secs>.<micros> [<db> <addr>] args
        let Some((_, rest)) = line.split_once(' ') else {
            out.push_str(line);
            continue;
        };
        let (place, args) = rest.split_once("] ").unwrap_or((rest, ""));
        let place = match place.split_once(' ') {
            Some((db, addr)) if addr != "lua" => format!("{db} ADDR"),
            _ => place.to_string(),
        };
        out.push_str(&format!("+T {place}] {args}"));
    }
    out
}

#[test]
fn monitor_shows_commands_as_redis_does() {
    let Some(redis) = RedisServer::start_or_skip("monitor_shows_commands_as_redis_does") else { return };
    let serve = LimitlabServe::start(&[]);
    let mut seen = Vec::new();
    for port in [serve.port(), redis.port()] {
        let (mut mon, mut c) = (Conn::open(port), Conn::open(port));
        assert_eq!(text(&mon.call(&["MONITOR"])), "+OK\r\n");
        let steps: &[&[&str]] = &[
            &["SET", "a", "1"],
            &["SET", "x y", "a\"b\n\x01"],
            &["GET", "nokey"],
            &["EVAL", "redis.call('set','k',1) return redis.call('get','k')", "0"],
            &["MULTI"],
            &["INCR", "a"],
            &["EXEC"],
            &["AUTH", "u", "p"],
            &["CONFIG", "GET", "maxmemory"],
            &["SELECT", "3"],
            &["GETX"],
            &["GET"],
            &["PING"],
        ];
        for s in steps {
            c.call(s);
        }
        // Ten of the thirteen are shown (not CONFIG GET, an admin command, nor the two refused
        // before they ran), with the script's two calls.
        let mut lines = Vec::new();
        for _ in 0..12 {
            lines.extend(mon.read());
        }
        // The monitor itself may not touch keys; its own PING is shown after its reply.
        let mut own = mon.call(&["GET", "a"]);
        own.extend(mon.call(&["PING"]));
        lines.extend(mon.read());
        let list = text(&c.call(&["CLIENT", "LIST"]));
        assert!(list.contains("flags=O"), "{list}");
        assert_eq!(text(&mon.call(&["RESET"])), "+RESET\r\n");
        let list = text(&c.call(&["CLIENT", "LIST"]));
        assert!(!list.contains("flags=O"), "{list}");
        seen.push((text(&own), normalized_monitor(&lines)));
    }
    assert_eq!(seen[0].0, seen[1].0);
    assert_eq!(seen[0].1, seen[1].1);
    assert!(seen[0].1.contains("+T [0 lua] \"set\" \"k\" \"1\""), "{}", seen[0].1);
}

#[test]
fn tracking_invalidations_arrive_as_redis_sends_them() {
    let Some(redis) = RedisServer::start_or_skip("tracking_invalidations_arrive_as_redis_sends_them") else { return };
    let serve = LimitlabServe::start(&[]);
    let mut seen = Vec::new();
    for port in [serve.port(), redis.port()] {
        let (mut redir, mut tracker, mut writer, mut r3) =
            (Conn::open(port), Conn::open(port), Conn::open(port), Conn::open(port));
        let id = text(&redir.call(&["CLIENT", "ID"]));
        let id = id.trim_start_matches(':').trim_end().to_string();
        let mut got = Vec::new();
        got.extend(redir.call(&["SUBSCRIBE", "__redis__:invalidate"]));
        got.extend(tracker.call(&["CLIENT", "TRACKING", "on", "REDIRECT", &id]));
        got.extend(tracker.call(&["GET", "a"]));
        writer.call(&["SET", "b", "1"]);
        writer.call(&["SET", "a", "1"]);
        got.extend(redir.read());
        got.extend(tracker.call(&["CLIENT", "TRACKING", "off"]));
        got.extend(
            tracker.call(&["CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", &id, "PREFIX", "p:", "PREFIX", "q:"]),
        );
        writer.call(&["MSET", "p:1", "1", "q:1", "1", "r:1", "1", "p:2", "2"]);
        got.extend(redir.read());
        got.extend(redir.read());
        got.extend(tracker.call(&["CLIENT", "TRACKINGINFO"]));
        got.extend(tracker.call(&["CLIENT", "GETREDIR"]));
        got.extend(tracker.call(&["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p"]));
        got.extend(tracker.call(&["CLIENT", "TRACKING", "on", "OPTIN"]));
        got.extend(tracker.call(&["CLIENT", "CACHING", "yes"]));
        // RESP3: pushes on the same connection, after the reply of the command that caused them.
        // (HELLO's reply holds the connection's id, which differs.)
        let _ = r3.call(&["HELLO", "3"]);
        got.extend(r3.call(&["CLIENT", "TRACKING", "on"]));
        got.extend(r3.call(&["HSET", "h", "f", "1"]));
        got.extend(r3.call(&["HGET", "h", "f"]));
        got.extend(r3.call(&["HDEL", "h", "f"]));
        got.extend(r3.read());
        got.extend(r3.call(&["GET", "g"]));
        writer.call(&["SET", "g", "1"]);
        got.extend(r3.call(&["PING"]));
        got.extend(r3.call(&["FLUSHALL"]));
        got.extend(r3.read());
        got.extend(r3.call(&["CLIENT", "TRACKINGINFO"]));
        got.extend(r3.call(&["RESET"]));
        got.extend(r3.call(&["CLIENT", "TRACKINGINFO"]));
        // (The redirect's CLIENT ID depends on the connections made before.)
        seen.push(text(&got).replace(&format!(":{id}\r\n"), ":ID\r\n"));
    }
    assert_eq!(seen[0], seen[1]);
    assert!(seen[0].contains("__redis__:invalidate\r\n*1\r\n$1\r\na\r\n"), "{}", seen[0]);
}

#[test]
fn client_pause_holds_writes_until_unpause() {
    let Some(redis) = RedisServer::start_or_skip("client_pause_holds_writes_until_unpause") else { return };
    let serve = LimitlabServe::start(&[]);
    let mut seen = Vec::new();
    for port in [serve.port(), redis.port()] {
        let (mut admin, mut w, mut r) = (Conn::open(port), Conn::open(port), Conn::open(port));
        let mut got = Vec::new();
        got.extend(admin.call(&["CLIENT", "PAUSE", "abc"]));
        got.extend(admin.call(&["CLIENT", "PAUSE", "-1"]));
        got.extend(admin.call(&["CLIENT", "PAUSE", "10", "sometimes"]));
        got.extend(admin.call(&["CLIENT", "PAUSE", "100000", "WRITE"]));
        w.send(&["SET", "k", "v"]);
        admin.wait_blocked(1);
        // Reads go on; a wrong number of arguments is answered at once.
        got.extend(r.call(&["GET", "k"]));
        got.extend(r.call(&["SET", "k"]));
        got.extend(admin.call(&["CLIENT", "UNPAUSE"]));
        got.extend(w.read());
        admin.wait_blocked(0);
        got.extend(r.call(&["GET", "k"]));
        seen.push(text(&got));
    }
    assert_eq!(seen[0], seen[1]);
    assert!(seen[0].ends_with("+OK\r\n$1\r\nv\r\n"), "{}", seen[0]);
}

#[test]
fn a_pause_ends_when_the_virtual_clock_passes_it() {
    let serve = LimitlabServe::start(&[]);
    let (mut admin, mut w) = (Conn::open(serve.port()), Conn::open(serve.port()));
    assert_eq!(text(&admin.call(&["CLIENT", "PAUSE", "1000", "WRITE"])), "+OK\r\n");
    w.send(&["INCR", "n"]);
    admin.wait_blocked(1);
    // CLOCK.ADVANCE is the server's own command, never paused.
    assert_eq!(text(&admin.call(&["CLOCK.ADVANCE", "999"])), "+OK\r\n");
    admin.wait_blocked(1);
    assert_eq!(text(&admin.call(&["GET", "n"])), "$-1\r\n");
    assert_eq!(text(&admin.call(&["CLOCK.ADVANCE", "1"])), "+OK\r\n");
    assert_eq!(text(&w.read()), ":1\r\n");
    admin.wait_blocked(0);
}
