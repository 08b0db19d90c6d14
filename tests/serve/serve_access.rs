//! Who may do what, and who sees what: ACL users (their rules, AUTH, NOPERM errors for commands,
//! keys and channels, from scripts too, the ACL log), MONITOR, CLIENT TRACKING invalidations and
//! CLIENT PAUSE, compared byte for byte with a private redis-server where Redis's replies do not
//! depend on time or on its hash seed (the order of single commands in described rules and of
//! ACL CAT is one, and differs between two runs of Redis itself).
use crate::common;

use common::conn::Conn;
use common::{LimitlabServe, RedisServer};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `steps` (connection index, command) on a fresh connection set of each server and asserts
/// that every reply is the same bytes.
fn same_replies(serve: u16, redis: u16, conns: usize, steps: &[(usize, &[&str])]) {
    let mut ours: Vec<Conn> = (0..conns).map(|_| Conn::open(serve)).collect();
    let mut theirs: Vec<Conn> = (0..conns).map(|_| Conn::open(redis)).collect();
    for (i, args) in steps {
        let (a, b) = (ours[*i].call_raw(args), theirs[*i].call_raw(args));
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
    let raw = text(&c.call_raw(&["ACL", "LOG"]));
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
        admin.call_raw(&[
            "ACL",
            "SETUSER",
            "lim",
            "on",
            ">p",
            "+get",
            "+set",
            "+eval",
            "+publish",
            "~k*",
            "resetchannels",
        ]);
        user.call_raw(&["AUTH", "lim", "nope"]);
        user.call_raw(&["AUTH", "lim", "p"]);
        user.call_raw(&["GET", "zz"]);
        user.call_raw(&["GET", "zz"]);
        user.call_raw(&["DEL", "k1"]);
        user.call_raw(&["PUBLISH", "c", "m"]);
        user.call_raw(&["EVAL", "return redis.pcall('set','x','1')", "0"]);
        logs.push(log_entries(&mut admin));
        assert_eq!(text(&admin.call_raw(&["ACL", "LOG", "RESET"])), "+OK\r\n");
        assert_eq!(text(&admin.call_raw(&["ACL", "LOG"])), "*0\r\n");
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
        assert_eq!(text(&mon.call_raw(&["MONITOR"])), "+OK\r\n");
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
            c.call_raw(s);
        }
        // Ten of the thirteen are shown (not CONFIG GET, an admin command, nor the two refused
        // before they ran), with the script's two calls.
        let mut lines = Vec::new();
        for _ in 0..12 {
            lines.extend(mon.read_raw());
        }
        // The monitor itself may not touch keys; its own PING is shown after its reply.
        let mut own = mon.call_raw(&["GET", "a"]);
        own.extend(mon.call_raw(&["PING"]));
        lines.extend(mon.read_raw());
        let list = text(&c.call_raw(&["CLIENT", "LIST"]));
        assert!(list.contains("flags=O"), "{list}");
        assert_eq!(text(&mon.call_raw(&["RESET"])), "+RESET\r\n");
        let list = text(&c.call_raw(&["CLIENT", "LIST"]));
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
        let id = text(&redir.call_raw(&["CLIENT", "ID"]));
        let id = id.trim_start_matches(':').trim_end().to_string();
        let mut got = Vec::new();
        got.extend(redir.call_raw(&["SUBSCRIBE", "__redis__:invalidate"]));
        got.extend(tracker.call_raw(&["CLIENT", "TRACKING", "on", "REDIRECT", &id]));
        got.extend(tracker.call_raw(&["GET", "a"]));
        writer.call_raw(&["SET", "b", "1"]);
        writer.call_raw(&["SET", "a", "1"]);
        got.extend(redir.read_raw());
        got.extend(tracker.call_raw(&["CLIENT", "TRACKING", "off"]));
        got.extend(
            tracker.call_raw(&["CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", &id, "PREFIX", "p:", "PREFIX", "q:"]),
        );
        writer.call_raw(&["MSET", "p:1", "1", "q:1", "1", "r:1", "1", "p:2", "2"]);
        got.extend(redir.read_raw());
        got.extend(redir.read_raw());
        got.extend(tracker.call_raw(&["CLIENT", "TRACKINGINFO"]));
        got.extend(tracker.call_raw(&["CLIENT", "GETREDIR"]));
        got.extend(tracker.call_raw(&["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p"]));
        got.extend(tracker.call_raw(&["CLIENT", "TRACKING", "on", "OPTIN"]));
        got.extend(tracker.call_raw(&["CLIENT", "CACHING", "yes"]));
        // RESP3: pushes on the same connection, after the reply of the command that caused them.
        // (HELLO's reply holds the connection's id, which differs.)
        let _ = r3.call_raw(&["HELLO", "3"]);
        got.extend(r3.call_raw(&["CLIENT", "TRACKING", "on"]));
        got.extend(r3.call_raw(&["HSET", "h", "f", "1"]));
        got.extend(r3.call_raw(&["HGET", "h", "f"]));
        got.extend(r3.call_raw(&["HDEL", "h", "f"]));
        got.extend(r3.read_raw());
        got.extend(r3.call_raw(&["GET", "g"]));
        writer.call_raw(&["SET", "g", "1"]);
        got.extend(r3.call_raw(&["PING"]));
        got.extend(r3.call_raw(&["FLUSHALL"]));
        got.extend(r3.read_raw());
        got.extend(r3.call_raw(&["CLIENT", "TRACKINGINFO"]));
        got.extend(r3.call_raw(&["RESET"]));
        got.extend(r3.call_raw(&["CLIENT", "TRACKINGINFO"]));
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
        got.extend(admin.call_raw(&["CLIENT", "PAUSE", "abc"]));
        got.extend(admin.call_raw(&["CLIENT", "PAUSE", "-1"]));
        got.extend(admin.call_raw(&["CLIENT", "PAUSE", "10", "sometimes"]));
        got.extend(admin.call_raw(&["CLIENT", "PAUSE", "100000", "WRITE"]));
        w.send(&["SET", "k", "v"]);
        admin.wait_blocked(1);
        // Reads go on; a wrong number of arguments is answered at once.
        got.extend(r.call_raw(&["GET", "k"]));
        got.extend(r.call_raw(&["SET", "k"]));
        got.extend(admin.call_raw(&["CLIENT", "UNPAUSE"]));
        got.extend(w.read_raw());
        admin.wait_blocked(0);
        got.extend(r.call_raw(&["GET", "k"]));
        seen.push(text(&got));
    }
    assert_eq!(seen[0], seen[1]);
    assert!(seen[0].ends_with("+OK\r\n$1\r\nv\r\n"), "{}", seen[0]);
}

#[test]
fn a_pause_ends_when_the_virtual_clock_passes_it() {
    let serve = LimitlabServe::start(&[]);
    let (mut admin, mut w) = (Conn::open(serve.port()), Conn::open(serve.port()));
    assert_eq!(text(&admin.call_raw(&["CLIENT", "PAUSE", "1000", "WRITE"])), "+OK\r\n");
    w.send(&["INCR", "n"]);
    admin.wait_blocked(1);
    // CLOCK.ADVANCE is the server's own command, never paused.
    assert_eq!(text(&admin.call_raw(&["CLOCK.ADVANCE", "999"])), "+OK\r\n");
    admin.wait_blocked(1);
    assert_eq!(text(&admin.call_raw(&["GET", "n"])), "$-1\r\n");
    assert_eq!(text(&admin.call_raw(&["CLOCK.ADVANCE", "1"])), "+OK\r\n");
    assert_eq!(text(&w.read_raw()), ":1\r\n");
    admin.wait_blocked(0);
}
