//! `limitlab serve` as a process, driven over TCP: Redis's protocol limits and error texts, RESP3,
//! AUTH/HELLO, the clock commands, the redis crate, and robustness against garbage and connection
//! floods. Where Redis has an answer, the same bytes go to a private redis-server and the replies
//! must be equal.
use crate::common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use common::{LimitlabServe, RedisServer};

/// Sends `bytes`, closes our side, and reads everything the server sends until it closes.
fn exchange(port: u16, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(bytes).expect("send");
    let _ = s.shutdown(Shutdown::Write);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

/// Reads one whole RESP reply from `s` (for tests that keep a connection open).
fn read_reply(s: &mut std::io::BufReader<TcpStream>) -> limitlab_emulator::Reply {
    limitlab_server::client::read_reply(s).expect("a reply")
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).replace('\r', "\\r").replace('\n', "\\n")
}

/// Byte sequences whose replies (and whether the connection closes) must equal Redis 7.0's.
const PROTOCOL_CASES: &[&[u8]] = &[
    b"PING\r\n",
    b"*abc\r\n",
    b"*3000000000\r\n",
    b"*1\r\n$-1\r\n",
    b"*1\r\n$600000000\r\n",
    b"*1\r\nx3\r\nPING\r\n",
    b"*0\r\nPING\r\n",
    b"*-5\r\nPING\r\n",
    b"set \"a b\r\nPING\r\n",
    b"\r\n\r\nPING\r\n",
    b"*1\r\n$4\r\nPINGxxPING\r\n",
    b"*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n*1\r\n$1x\r\n",
    b"*1\n$4\nPING\n",
    b"PING\nPING\n",
    b"*1\r\n$ 4\r\nPING\r\n",
    b"*+1\r\n$4\r\nPING\r\n",
    b"*01\r\n$4\r\nPING\r\n",
    b"*1\r\n$04\r\nPING\r\n",
    b"ping a\x00b\r\nPING\r\n",
    b"*2147483648\r\n",
    b"*2147483647\r\n",
    b"*1\r\n$536870912\r\n",
    b"*1\r\n$536870913\r\n",
    b"echo 'a b' \"c\\x41\"\r\nset k v\r\nget k\r\n",
    b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
    b"*2\r\n$3\r\nGET\r\n$1\r\nk",
    b"HELLO 4\r\nHELLO x\r\nHELLO 2 SETNAME a b\r\nHELLO 2 AUTH\r\nHELLO 3 foo\r\nHELLO 2 SETNAME \"a b\"\r\n",
    b"AUTH x\r\nAUTH a b c\r\nAUTH\r\n",
    b"QUIT\r\nPING\r\n",
    b"QUIT x\r\n",
    b"RESET x\r\nSELECT 3\r\nSET k 1\r\nRESET\r\nGET k\r\n",
    b"MULTI\r\nRESET\r\nEXEC\r\n",
    b"MULTI\r\nSET a 1\r\nNOSUCH\r\nEXEC\r\n",
    b"CLUSTER INFO\r\nCLUSTER\r\nCLUSTER FOO\r\nCLUSTER KEYSLOT\r\nASKING\r\nREADONLY\r\nREADWRITE\r\n",
    b"SHUTDOWN ABORT\r\nSHUTDOWN BOGUS\r\n",
];

/// The same, on servers started with `--requirepass secret`.
const AUTH_CASES: &[&[u8]] = &[
    b"PING\r\n",
    b"FOO\r\n",
    b"GET\r\n",
    b"GET a\r\n",
    b"QUIT\r\n",
    b"RESET\r\n",
    b"AUTH\r\n",
    b"AUTH x\r\n",
    b"AUTH secret\r\nPING\r\n",
    b"AUTH default secret\r\nPING\r\n",
    b"AUTH a b c\r\n",
    b"AUTH nobody secret\r\n",
    b"HELLO 3\r\n",
    b"HELLO 3 AUTH default bad\r\n",
    b"*11\r\n",
    b"*10\r\n",
    b"*1\r\n$16385\r\n",
    b"*1\r\n$16384\r\n",
    b"AUTH secret\r\n*1\r\n$16385\r\n",
    b"ASKING\r\nCLUSTER INFO\r\nSHUTDOWN\r\n",
    b"AUTH secret\r\nRESET\r\nPING\r\n",
    b"AUTH x y\r\n",
    b"EVAL \"return 1\" 0\r\nSELECT 1\r\nMULTI\r\n",
];

fn compare_cases(serve: u16, redis: u16, cases: &[&[u8]]) {
    let mut diffs = Vec::new();
    for case in cases {
        let (ours, theirs) = (exchange(serve, case), exchange(redis, case));
        if ours != theirs {
            diffs.push(format!("  sent {}\n    redis: {}\n    serve: {}", show(case), show(&theirs), show(&ours)));
        }
    }
    assert!(diffs.is_empty(), "{} of {} exchanges differ from Redis:\n{}", diffs.len(), cases.len(), diffs.join("\n"));
}

#[test]
fn protocol_errors_and_connection_commands_match_redis() {
    let Some(redis) = RedisServer::start_or_skip("protocol_errors_and_connection_commands_match_redis") else {
        return;
    };
    let serve = LimitlabServe::start(&[]);
    compare_cases(serve.port(), redis.port(), PROTOCOL_CASES);
}

#[test]
fn authentication_matches_redis() {
    if !common::require_binaries("authentication_matches_redis", &["redis-server"]) {
        return;
    }
    // The helper's readiness check needs PING before AUTH: the password is set once it is up.
    let redis = RedisServer::start();
    let set = exchange(redis.port(), b"CONFIG SET requirepass secret\r\n");
    assert_eq!(set, b"+OK\r\n");
    let serve = LimitlabServe::start(&["--requirepass", "secret"]);
    compare_cases(serve.port(), redis.port(), AUTH_CASES);
    // HELLO with AUTH and SETNAME in one go: the reply names the server, and the name is kept.
    let out = exchange(serve.port(), b"HELLO 3 AUTH default secret SETNAME app\r\nPING\r\n");
    let text = show(&out);
    assert!(
        text.starts_with("%7\\r\\n$6\\r\\nserver\\r\\n$5\\r\\nredis\\r\\n$7\\r\\nversion\\r\\n$6\\r\\n7.0.15"),
        "{text}"
    );
    assert!(text.ends_with("+PONG\\r\\n"), "{text}");
}

/// HELLO's reply with its client id replaced by 0 (ids differ between servers).
fn without_hello_id(b: &[u8]) -> String {
    let mut s = show(b);
    let tag = "$2\\r\\nid\\r\\n:";
    let mut from = 0;
    while let Some(at) = s[from..].find(tag) {
        let start = from + at + tag.len();
        let end = start + s[start..].find('\\').unwrap();
        s = format!("{}0{}", &s[..start], &s[end..]);
        from = start;
    }
    s
}

#[test]
fn resp3_replies_match_redis() {
    let Some(redis) = RedisServer::start_or_skip("resp3_replies_match_redis") else { return };
    let serve = LimitlabServe::start(&[]);
    let session: &[u8] = b"HELLO 3\r\n\
        SET s 1\r\nGET s\r\nGET missing\r\nINCR s\r\n\
        HSET h a 1\r\nHGETALL h\r\nHGETALL nohash\r\nHMGET h a b\r\n\
        SADD set x\r\nSMEMBERS set\r\nSMEMBERS noset\r\nSISMEMBER set x\r\n\
        ZADD z 1.5 a 2 b\r\nZSCORE z a\r\nZSCORE z nope\r\nZINCRBY z 0.25 a\r\nZRANGE z 0 -1 WITHSCORES\r\n\
        ZRANGE z 0 -1\r\nZRANGEBYSCORE z -inf +inf WITHSCORES\r\nZMSCORE z a b c\r\n\
        EVAL \"return {double=3.5}\" 0\r\nEVAL \"return {map={a=1}}\" 0\r\nEVAL \"return true\" 0\r\n\
        EVAL \"return false\" 0\r\nEVAL \"redis.setresp(3); return redis.call('hgetall', 'h')\" 0\r\n\
        EVAL \"return {1, false, 'x'}\" 0\r\nEVAL \"return redis.call('zscore', 'z', 'a')\" 0\r\n\
        LPOP nolist\r\nLRANGE nolist 0 -1\r\nTTL s\r\nEXISTS s h\r\nMULTI\r\nZSCORE z a\r\nHGETALL h\r\nEXEC\r\n\
        HELLO 2\r\nHGETALL h\r\nZSCORE z a\r\nGET missing\r\nQUIT\r\n";
    let (ours, theirs) = (exchange(serve.port(), session), exchange(redis.port(), session));
    assert_eq!(without_hello_id(&ours), without_hello_id(&theirs));
}

/// `proto-max-bulk-len` and `client-query-buffer-limit` set by CONFIG SET: a longer bulk length
/// is a protocol error, and a request whose big argument outgrows the query buffer closes the
/// connection without a reply, after the replies to the requests before it; a CONFIG SET applies to
/// the requests pipelined after it. Each exchange is compared with Redis byte for byte (every one
/// ends with the server closing the connection).
#[test]
fn request_limits_match_redis() {
    let Some(redis) = RedisServer::start_or_skip("request_limits_match_redis") else { return };
    let serve = LimitlabServe::start(&[]);
    let bulk = |n: usize, fill: u8| {
        let mut v = format!("*2\r\n$4\r\nECHO\r\n${n}\r\n").into_bytes();
        v.extend(std::iter::repeat_n(fill, n));
        v.extend_from_slice(b"\r\n");
        v
    };
    let setup = b"CONFIG SET proto-max-bulk-len 1mb\r\nCONFIG SET client-query-buffer-limit 1mb\r\n\
        CONFIG SET proto-max-bulk-len 1000\r\nCONFIG SET client-query-buffer-limit 0\r\n\
        CONFIG GET proto-max-bulk-len\r\nCONFIG GET client-query-buffer-limit\r\nQUIT\r\n";
    let cases: Vec<Vec<u8>> = vec![
        setup.to_vec(),
        b"PING\r\n*1\r\n$1048577\r\n".to_vec(),
        [b"PING\r\n".to_vec(), bulk(1024 * 1024, b'x'), b"PING\r\n".to_vec()].concat(),
        [bulk(1_000_000, b'y'), b"QUIT\r\n".to_vec()].concat(),
        [
            b"CONFIG SET proto-max-bulk-len 2mb\r\nCONFIG SET client-query-buffer-limit 4mb\r\n".to_vec(),
            bulk(1_500_000, b'z'),
            b"CONFIG SET proto-max-bulk-len 1mb\r\nCONFIG SET client-query-buffer-limit 1mb\r\n".to_vec(),
            b"*1\r\n$1048577\r\n".to_vec(),
        ]
        .concat(),
    ];
    for case in &cases {
        let (ours, theirs) = (exchange_until_closed(serve.port(), case), exchange_until_closed(redis.port(), case));
        let short = |b: &[u8]| show(&b[..b.len().min(300)]);
        assert!(ours == theirs, "sent {}\n  redis: {}\n  serve: {}", short(case), short(&theirs), short(&ours));
    }
}

/// Sends `bytes` and reads until the server closes, our side staying open (Redis drops what it
/// has not sent when it reads the end of the stream).
fn exchange_until_closed(port: u16, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut writer = s.try_clone().expect("clone");
    let bytes = bytes.to_vec();
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(&bytes);
    });
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let _ = sender.join();
    out
}

/// The replies Redis 7.0 sends as verbatim strings under RESP3 (`=LEN\r\ntxt:...`): INFO, CLIENT
/// INFO, CLIENT LIST, LOLWUT, MEMORY DOCTOR, and scripts that call them or return a `txt`
/// verbatim_string table; bulk strings under RESP2. Sessions whose texts are the same on both
/// servers are compared byte for byte; INFO and CLIENT INFO/LIST, whose texts differ, by their
/// type and format.
#[test]
fn resp3_verbatim_strings_match_redis() {
    let Some(redis) = RedisServer::start_or_skip("resp3_verbatim_strings_match_redis") else { return };
    let serve = LimitlabServe::start(&[]);
    let session: &[u8] = b"HELLO 3\r\nFLUSHALL\r\nLOLWUT\r\nLOLWUT VERSION 7 1 2\r\nLOLWUT VERSION x\r\n\
        MEMORY DOCTOR\r\nINFO nosuchsection\r\nCLIENT LIST ID 999999\r\n\
        EVAL \"return redis.call('info','nosuch')\" 0\r\n\
        EVAL \"redis.setresp(3); return redis.call('info','nosuch')\" 0\r\n\
        EVAL \"redis.setresp(3); local v = redis.call('lolwut'); return v['verbatim_string']['format']\" 0\r\n\
        EVAL \"redis.setresp(3); return redis.call('lolwut')\" 0\r\n\
        EVAL \"return {verbatim_string={format='txt',string='ab'}}\" 0\r\n\
        MULTI\r\nLOLWUT\r\nINFO nosuchsection\r\nEXEC\r\n\
        HELLO 2\r\nFLUSHALL\r\nLOLWUT\r\nMEMORY DOCTOR\r\nINFO nosuchsection\r\n\
        EVAL \"redis.setresp(3); return redis.call('lolwut')\" 0\r\nQUIT\r\n";
    let (ours, theirs) = (exchange(serve.port(), session), exchange(redis.port(), session));
    assert_eq!(show(&without_hello_id(&ours).into_bytes()), show(&without_hello_id(&theirs).into_bytes()));
    for (command, field) in [("INFO server", "# Server"), ("CLIENT INFO", "id="), ("CLIENT LIST", "id=")] {
        let out =
            exchange(serve.port(), format!("HELLO 3\r\n{command}\r\nHELLO 2\r\n{command}\r\nQUIT\r\n").as_bytes());
        let text = show(&out);
        let resp3 = format!("\\r\\ntxt:{field}");
        assert!(text.contains(&resp3) && text.contains("\\r\\n="), "{command} under RESP3: {text}");
        // Under RESP2 the same text is a bulk string.
        let second = &text[text.rfind("\\r\\n$").expect("a bulk string under RESP2")..];
        assert!(second.contains(field) && !second.contains("txt:"), "{command} under RESP2: {text}");
    }
}

#[test]
fn clock_commands_move_time_for_keys_and_scripts() {
    let serve = LimitlabServe::start(&["--at", "1700000000000"]);
    let client = redis::Client::open(serve.url()).unwrap();
    let mut c = client.get_connection().unwrap();
    let now: i64 = redis::cmd("CLOCK.GET").query(&mut c).unwrap();
    assert_eq!(now, 1_700_000_000_000);
    let time: (String, String) = redis::cmd("TIME").query(&mut c).unwrap();
    assert_eq!(time, ("1700000000".to_string(), "0".to_string()));
    let _: () = redis::cmd("SET").arg("k").arg("v").arg("PX").arg(1000).query(&mut c).unwrap();
    let _: () = redis::cmd("CLOCK.ADVANCE").arg(999).query(&mut c).unwrap();
    let v: Option<String> = redis::cmd("GET").arg("k").query(&mut c).unwrap();
    assert_eq!(v.as_deref(), Some("v"));
    let pttl: i64 = redis::cmd("PTTL").arg("k").query(&mut c).unwrap();
    assert_eq!(pttl, 1);
    // As in Redis, a key lives through its deadline's millisecond and is gone after it.
    let _: () = redis::cmd("CLOCK.ADVANCE").arg(1).query(&mut c).unwrap();
    let (v, pttl): (Option<String>, i64) = redis::pipe().get("k").pttl("k").query(&mut c).unwrap();
    assert_eq!((v.as_deref(), pttl), (Some("v"), 0));
    let _: () = redis::cmd("CLOCK.ADVANCE").arg(1).query(&mut c).unwrap();
    let v: Option<String> = redis::cmd("GET").arg("k").query(&mut c).unwrap();
    assert_eq!(v, None, "the key expired once the clock passed its deadline");
    let _: () = redis::cmd("CLOCK.SET").arg(1_800_000_000_123i64).query(&mut c).unwrap();
    let t: Vec<String> = redis::Script::new("return redis.call('TIME')").invoke(&mut c).unwrap();
    assert_eq!(t, vec!["1800000000".to_string(), "123000".to_string()]);
    // Another connection sees the same clock.
    let mut c2 = client.get_connection().unwrap();
    let now: i64 = redis::cmd("CLOCK.GET").query(&mut c2).unwrap();
    assert_eq!(now, 1_800_000_000_123);
    let e = redis::cmd("CLOCK.ADVANCE").arg("x").query::<()>(&mut c2).unwrap_err();
    assert!(e.to_string().contains("value is not an integer or out of range"), "{e}");
}

#[test]
fn wall_clock_follows_the_machine() {
    let serve = LimitlabServe::start(&["--clock", "wall"]);
    let mut c = redis::Client::open(serve.url()).unwrap().get_connection().unwrap();
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let now: i64 = redis::cmd("CLOCK.GET").query(&mut c).unwrap();
    let after = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    assert!(before <= now && now <= after, "{before} <= {now} <= {after}");
    let _: () = redis::cmd("CLOCK.ADVANCE").arg(3_600_000).query(&mut c).unwrap();
    let now: i64 = redis::cmd("CLOCK.GET").query(&mut c).unwrap();
    let after2 = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    assert!(now >= before + 3_600_000 && now <= after2 + 3_600_000, "advanced by an hour: {now}");
}

/// The fixed-window script limitlab ships, through the redis crate's EVALSHA (with its load on
/// NOSCRIPT), pipelined and not, with the window moved by CLOCK.ADVANCE.
#[test]
fn redis_crate_runs_a_limiter_through_a_window() {
    let serve = LimitlabServe::start(&[]);
    let mut c = redis::Client::open(serve.url()).unwrap().get_connection().unwrap();
    let script = redis::Script::new(
        "local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end \
         if n > tonumber(ARGV[1]) then return {0, redis.call('PTTL', KEYS[1])} end return {1, tonumber(ARGV[1]) - n}",
    );
    let mut allowed = 0;
    for _ in 0..15 {
        let r: (i64, i64) = script.key("rl:{u1}").arg(10).arg(1000).invoke(&mut c).unwrap();
        allowed += r.0;
    }
    assert_eq!(allowed, 10);
    let r: (i64, i64) = script.key("rl:{u1}").arg(10).arg(1000).invoke(&mut c).unwrap();
    assert_eq!(r, (0, 1000), "refused, retry after the whole window: the clock has not moved");
    let _: () = redis::cmd("CLOCK.ADVANCE").arg(1000).query(&mut c).unwrap();
    let r: (i64, i64) = script.key("rl:{u1}").arg(10).arg(1000).invoke(&mut c).unwrap();
    assert_eq!(r, (0, 0), "the counter's last millisecond");
    let _: () = redis::cmd("CLOCK.ADVANCE").arg(1).query(&mut c).unwrap();
    let r: (i64, i64) = script.key("rl:{u1}").arg(10).arg(1000).invoke(&mut c).unwrap();
    assert_eq!(r, (1, 9), "a new window");
    // A pipeline of 100 commands in one write.
    let mut p = redis::pipe();
    for i in 0..100 {
        p.cmd("INCRBY").arg("n").arg(i);
    }
    let v: Vec<i64> = p.query(&mut c).unwrap();
    assert_eq!(v.last(), Some(&4950));
}

#[test]
fn quit_shutdown_and_max_clients() {
    let mut serve = LimitlabServe::start(&["--maxclients", "2"]);
    let a = TcpStream::connect(("127.0.0.1", serve.port())).unwrap();
    let mut ra = std::io::BufReader::new(a.try_clone().unwrap());
    (&a).write_all(b"PING\r\n").unwrap();
    assert_eq!(read_reply(&mut ra), limitlab_emulator::Reply::Status("PONG".into()));
    let b = TcpStream::connect(("127.0.0.1", serve.port())).unwrap();
    (&b).write_all(b"PING\r\n").unwrap();
    let mut rb = std::io::BufReader::new(b.try_clone().unwrap());
    assert_eq!(read_reply(&mut rb), limitlab_emulator::Reply::Status("PONG".into()));
    assert_eq!(exchange(serve.port(), b"PING\r\n"), b"-ERR max number of clients reached\r\n");
    drop((a, ra));
    // Once a client has gone, a new one is served (the server notices the close when it reads).
    let mut served = false;
    for _ in 0..200 {
        if exchange(serve.port(), b"PING\r\n") == b"+PONG\r\n" {
            served = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(served, "a slot freed by a closed connection is reused");
    (&b).write_all(b"SHUTDOWN NOSAVE\r\n").unwrap();
    let mut rest = Vec::new();
    let _ = rb.read_to_end(&mut rest);
    assert!(rest.is_empty(), "SHUTDOWN answers nothing: {}", show(&rest));
    let status = serve.wait_exit(Duration::from_secs(20)).expect("the server exits after SHUTDOWN");
    assert!(status.success(), "{status}; stderr: {}", serve.stderr());
}

/// A field of `/proc/PID/status` in kB (VmRSS: resident now; VmHWM: its peak).
fn status_kb(pid: u32, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn rss_kb(pid: u32) -> u64 {
    status_kb(pid, "VmRSS")
}

/// Waits (up to 30 s, a state polled, not a sleep relied on) for the server's RSS to come back
/// within 16 MB of `start` kB, asking the bystander `ask(n)`, `ask(n + 1)`, ... all along.
/// Returns the last RSS and the next number to ask.
fn rss_back_within_16_mb(pid: u32, start: u64, mut n: i64, ask: &mut dyn FnMut(i64)) -> (u64, i64) {
    let mut end = rss_kb(pid);
    for _ in 0..300 {
        if end <= start + 16 * 1024 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        ask(n);
        n += 1;
        end = rss_kb(pid);
    }
    (end, n)
}

/// Garbage, truncated frames, huge declared lengths and a thousand connections opened and dropped:
/// a client in the middle of its work sees none of it, the server does not panic, and its memory
/// comes back near where it started.
#[test]
fn garbage_and_connection_floods_harm_no_one() {
    let mut serve = LimitlabServe::start(&[]);
    let port = serve.port();
    let bystander = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut by = std::io::BufReader::new(bystander.try_clone().unwrap());
    let mut ask = |n: i64| {
        (&bystander).write_all(b"INCR bystander\r\n").unwrap();
        assert_eq!(read_reply(&mut by), limitlab_emulator::Reply::Int(n));
    };
    ask(1);
    // Warm up, then measure.
    for _ in 0..50 {
        exchange(port, b"SET warm 1\r\nGET warm\r\n");
    }
    let start = rss_kb(serve.pid());
    let mut rng = 0x2545F4914F6CDD1Du64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for i in 0..300 {
        let len = (next() % 2048) as usize;
        let mut junk: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if i % 3 == 0 {
            junk.insert(0, b'*');
        }
        exchange(port, &junk);
    }
    let truncated: &[&[u8]] = &[
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nab",
        b"*2\r\n$4\r\nECHO\r\n$536870912\r\nxx",
        b"*2147483647\r\n$1\r\na\r\n",
        b"*1\r\n$999999999999\r\n",
        b"*5\r",
        b"EVAL \"while true do end\" 0",
    ];
    for t in truncated {
        exchange(port, t);
    }
    ask(2);
    // A thousand connections, opened together, then dropped without a word or mid-request.
    let mut conns = Vec::new();
    for i in 0..1000 {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        if i % 2 == 0 {
            let _ = (&s).write_all(b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$100\r\npartial");
        }
        conns.push(s);
    }
    ask(3);
    drop(conns);
    // A large value, then deleted: its buffers are given back.
    let big = vec![b'x'; 8 << 20];
    let mut req = format!("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n${}\r\n", big.len()).into_bytes();
    req.extend_from_slice(&big);
    req.extend_from_slice(b"\r\nSTRLEN big\r\nDEL big\r\n");
    assert_eq!(exchange(port, &req), b"+OK\r\n:8388608\r\n:1\r\n");
    ask(4);
    // Every dropped connection is noticed and freed in time: wait (up to 30 s) for the memory to
    // come back within 16 MB of the start, asking the bystander all along.
    let (end, n) = rss_back_within_16_mb(serve.pid(), start, 5, &mut ask);
    assert!(serve.running(), "the server is alive; stderr: {}", serve.stderr());
    assert!(!serve.stderr().contains("panicked"), "{}", serve.stderr());
    ask(n);
    assert!(end <= start + 16 * 1024, "RSS went from {start} kB to {end} kB");
}

/// A reply of a million elements (LRANGE of a 69 MB list) is streamed: while its client has not
/// read a byte of it, another client is answered; it arrives whole, followed by the next
/// pipelined reply; the server's peak memory during it grows by less than twice the reply's
/// bytes (held as values and as bytes at once it grew by 3.6 times, `benches/huge_reply.sh`), and
/// its memory comes back afterwards.
#[test]
fn a_huge_reply_is_streamed_and_its_memory_given_back() {
    let serve = LimitlabServe::start(&[]);
    let port = serve.port();
    let n = 1_000_000u64;
    let fill = format!(
        "EVAL \"for i = 1, tonumber(ARGV[1]) do redis.call('RPUSH', KEYS[1], string.format('%060d', i)) end return redis.call('LLEN', KEYS[1])\" 1 big {n}\r\n"
    );
    assert_eq!(exchange(port, fill.as_bytes()), format!(":{n}\r\n").as_bytes());
    let bystander = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut by = std::io::BufReader::new(bystander.try_clone().unwrap());
    let mut ask = |want: i64| {
        (&bystander).write_all(b"INCR bystander\r\n").unwrap();
        assert_eq!(read_reply(&mut by), limitlab_emulator::Reply::Int(want));
    };
    ask(1);
    let before = rss_kb(serve.pid());
    // The peak from here on (writing 5 to clear_refs resets VmHWM to the current RSS).
    let reset = std::fs::write(format!("/proc/{}/clear_refs", serve.pid()), "5").is_ok();
    let mut reader = TcpStream::connect(("127.0.0.1", port)).unwrap();
    reader.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    reader.write_all(b"LRANGE big 0 -1\r\nPING\r\n").unwrap();
    // Nothing read yet: the server is stuck on a full socket for that client, not for this one.
    ask(2);
    ask(3);
    let mut r = std::io::BufReader::with_capacity(1 << 16, reader);
    let mut line = Vec::new();
    let mut next_line = |r: &mut std::io::BufReader<TcpStream>| {
        line.clear();
        std::io::BufRead::read_until(r, b'\n', &mut line).unwrap();
        line.clone()
    };
    assert_eq!(next_line(&mut r), format!("*{n}\r\n").as_bytes());
    for i in 1..=n {
        assert_eq!(next_line(&mut r), b"$60\r\n");
        let v = next_line(&mut r);
        assert_eq!(v, format!("{i:060}\r\n").as_bytes(), "element {i}");
    }
    assert_eq!(next_line(&mut r), b"+PONG\r\n");
    let reply_bytes = (n * 69 + 12) / 1024;
    if reset {
        let grew = status_kb(serve.pid(), "VmHWM").saturating_sub(before);
        assert!(grew < 2 * reply_bytes, "the peak grew by {grew} kB for a reply of {reply_bytes} kB");
    }
    // Its memory comes back (within 16 MB), the bystander answered all along.
    let (end, k) = rss_back_within_16_mb(serve.pid(), before, 4, &mut ask);
    assert!(end <= before + 16 * 1024, "RSS went from {before} kB to {end} kB");
    ask(k);
}

/// Case files left out of the redis-cli comparison, each with the reason.
const NOT_OVER_THE_NETWORK: &[(&str, &str)] = &[];

/// The lines of `tests/cases/NAME.txt` that are sent (comments dropped), each ending in `\n`.
fn case_files() -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut v = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "txt") {
            continue;
        }
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read(&p).unwrap();
        let body = text.strip_suffix(b"\n").unwrap_or(&text);
        let mut input = Vec::new();
        for l in body.split(|&b| b == b'\n').filter(|l| !l.starts_with(b"#")) {
            input.extend_from_slice(l);
            input.push(b'\n');
        }
        v.push((name, input));
    }
    v.sort();
    v
}

/// Pipes `input` through `PROGRAM ARGS...` and returns its stdout.
fn pipe(program: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
    use std::process::{Command, Stdio};
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let w = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    let _ = w.join();
    out.stdout
}

/// The output without redis-cli's `(0.65s)` lines.
fn without_timings(out: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    for l in out.split_inclusive(|&c| c == b'\n') {
        let t = l.strip_suffix(b"\n").unwrap_or(l);
        let timing = t.len() >= 5
            && t.starts_with(b"(")
            && t.ends_with(b"s)")
            && t[1..t.len() - 2].iter().all(|c| c.is_ascii_digit() || *c == b'.');
        if !timing {
            v.extend_from_slice(l);
        }
    }
    v
}

/// The first line where two outputs differ, for the failure message.
fn first_diff(a: &[u8], b: &[u8]) -> String {
    let (la, lb): (Vec<&[u8]>, Vec<&[u8]>) = (a.split(|&c| c == b'\n').collect(), b.split(|&c| c == b'\n').collect());
    for i in 0..la.len().max(lb.len()) {
        let (x, y) = (la.get(i).copied().unwrap_or(b"<end>"), lb.get(i).copied().unwrap_or(b"<end>"));
        if x != y {
            return format!(
                "output line {}: redis {:?} / serve {:?}",
                i + 1,
                String::from_utf8_lossy(x),
                String::from_utf8_lossy(y)
            );
        }
    }
    String::new()
}

/// Every conformance case file through `redis-cli` (piped, and `--no-raw`) against `limitlab serve`
/// and against a private redis-server: the outputs are byte-identical. `limitlab cli --no-raw -p`
/// against the same serve prints what `redis-cli --no-raw` prints.
#[test]
fn redis_cli_prints_the_same_against_serve_and_redis() {
    let Some(redis) =
        RedisServer::start_or_skip_needing("redis_cli_prints_the_same_against_serve_and_redis", &["redis-cli"])
    else {
        return;
    };
    let rp = redis.port().to_string();
    let mut failures = Vec::new();
    let mut files = 0;
    for (name, input) in case_files() {
        if NOT_OVER_THE_NETWORK.iter().any(|(n, _)| *n == name) {
            continue;
        }
        files += 1;
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis().to_string();
        for mode in [&[][..], &["--no-raw"][..]] {
            let serve = LimitlabServe::start(&["--at", &now]);
            let sp = serve.port().to_string();
            let reset = pipe("redis-cli", &["-p", &rp], b"FLUSHALL\nSCRIPT FLUSH\nFUNCTION FLUSH\n");
            assert_eq!(reset, b"OK\nOK\nOK\n");
            let real = pipe("redis-cli", &[&["-p", rp.as_str()][..], mode].concat(), &input);
            let ours = pipe("redis-cli", &[&["-p", sp.as_str()][..], mode].concat(), &input);
            // At a terminal redis-cli prints how long a command took when that was 0.5 s or more
            // (a WAIT with a timeout on Redis); serve answers WAIT at once on its virtual clock.
            let real = if mode.is_empty() { real } else { without_timings(&real) };
            if real != ours {
                failures.push(format!("{name} {mode:?}: {}", first_diff(&real, &ours)));
            }
            if mode == ["--no-raw"] {
                let serve2 = LimitlabServe::start(&["--at", &now]);
                let sp2 = serve2.port().to_string();
                let cli = pipe(env!("CARGO_BIN_EXE_limitlab"), &["cli", "--no-raw", "-p", &sp2], &input);
                if cli != ours {
                    failures.push(format!(
                        "{name}: limitlab cli --no-raw vs redis-cli --no-raw: {}",
                        first_diff(&ours, &cli)
                    ));
                }
            }
        }
    }
    assert!(files >= 10, "only {files} case files");
    assert!(failures.is_empty(), "{} differences:\n{}", failures.len(), failures.join("\n"));
}
