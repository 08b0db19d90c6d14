//! DUMP/RESTORE payloads crossing between `limitlab serve` and a private redis-server 7.0, the
//! random-member commands' reply shapes, and glob matching that stays fast on patterns of many stars.
use crate::common;

use common::{LimitlabServe, RedisServer};
use limitlab_emulator::clock::Stopwatch;
use redis::{Connection, Value};

fn conn(port: u16) -> Connection {
    redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap().get_connection().unwrap()
}

fn run(c: &mut Connection, line: &[&str]) -> Value {
    let mut cmd = redis::cmd(line[0]);
    for a in &line[1..] {
        cmd.arg(*a);
    }
    cmd.query(c).unwrap_or_else(|e| Value::SimpleString(format!("error: {e}")))
}

/// One key of every type in every encoding Redis 7.0 DUMPs, built by the same commands on both servers.
const SETUP: &[&[&str]] = &[
    &["SET", "int", "12345"],
    &["SET", "bigint", "-9223372036854775808"],
    &["SET", "short", "hello"],
    &["SET", "numstr", "007"],
    &["RPUSH", "list", "a", "1", "-70000", "hello world", "12345678901"],
    &["SADD", "intset", "1", "-5", "70000", "9000000000"],
    &["SADD", "htset", "x", "1", "yy"],
    &["HSET", "lphash", "f1", "v1", "n", "-4000", "big", "9223372036854775808"],
    &["ZADD", "lpzset", "1", "a", "2.5", "b", "-3", "c", "inf", "d", "1e300", "e"],
];

/// Keys whose DUMP is the same bytes on both servers (hashtable encodings iterate in an order of
/// their own: those are compared by contents only).
const SAME_BYTES: &[&str] =
    &["int", "bigint", "short", "numstr", "long", "list", "biglist", "intset", "lphash", "lpzset", "slzset"];

/// The contents of `key`, in a form that does not depend on iteration order.
fn contents(c: &mut Connection, key: &str) -> String {
    let t: String = redis::cmd("TYPE").arg(key).query(c).unwrap();
    let v = match t.as_str() {
        "string" => run(c, &["GET", key]),
        "list" => run(c, &["LRANGE", key, "0", "-1"]),
        "set" => {
            let mut m: Vec<String> = redis::cmd("SMEMBERS").arg(key).query(c).unwrap();
            m.sort();
            return format!("set {m:?}");
        }
        "hash" => {
            let mut m: Vec<(String, String)> = redis::cmd("HGETALL").arg(key).query(c).unwrap();
            m.sort();
            return format!("hash {m:?}");
        }
        "zset" => run(c, &["ZRANGE", key, "0", "-1", "WITHSCORES"]),
        other => Value::SimpleString(other.to_string()),
    };
    format!("{t} {v:?}")
}

fn setup(c: &mut Connection) {
    for line in SETUP {
        run(c, line);
    }
    run(c, &["SET", "long", &"abc".repeat(100)]);
    let many: Vec<String> = (0..2000).map(|i| format!("element-{i}")).collect();
    let mut rpush = vec!["RPUSH", "biglist"];
    rpush.extend(many.iter().map(String::as_str));
    run(c, &rpush);
    let mut zadd = vec!["ZADD".to_string(), "slzset".to_string()];
    for i in 0..200 {
        zadd.push(format!("{}", i as f64 / 4.0));
        zadd.push(format!("m{i}"));
    }
    run(c, &zadd.iter().map(String::as_str).collect::<Vec<_>>());
    let mut hset = vec!["HSET".to_string(), "hthash".to_string()];
    for i in 0..600 {
        hset.push(format!("f{i}"));
        hset.push(format!("v{i}"));
    }
    run(c, &hset.iter().map(String::as_str).collect::<Vec<_>>());
}

fn dump(c: &mut Connection, key: &str) -> Vec<u8> {
    redis::cmd("DUMP").arg(key).query(c).unwrap()
}

/// A DUMP from Redis 7.0 restores in serve, and serve's restores in Redis, with the same contents,
/// for every type and encoding; where Redis's bytes are determined, serve's DUMP is those bytes.
#[test]
fn dump_payloads_cross_between_serve_and_redis() {
    let Some(redis) = RedisServer::start_or_skip("dump_payloads_cross_between_serve_and_redis") else { return };
    let serve = LimitlabServe::start(&[]);
    let (mut ours, mut theirs) = (conn(serve.port()), conn(redis.port()));
    setup(&mut ours);
    setup(&mut theirs);
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut theirs).unwrap();
    assert_eq!(keys.len(), SETUP.len() + 4, "{keys:?}");
    for key in &keys {
        let (from_ours, from_theirs) = (dump(&mut ours, key), dump(&mut theirs, key));
        if SAME_BYTES.contains(&key.as_str()) {
            let at = from_ours.iter().zip(&from_theirs).position(|(a, b)| a != b);
            assert!(
                from_ours == from_theirs,
                "DUMP {key}: {} bytes against Redis's {}, first difference at {at:?}",
                from_ours.len(),
                from_theirs.len()
            );
        }
        let copy = format!("{key}:copy");
        for (c, payload) in [(&mut ours, &from_theirs), (&mut theirs, &from_ours)] {
            let ok: String = redis::cmd("RESTORE").arg(&copy).arg(0).arg(payload).query(c).unwrap();
            assert_eq!(ok, "OK");
        }
        let want = contents(&mut theirs, key);
        assert_eq!(contents(&mut ours, &copy), want, "Redis's DUMP {key} restored in serve");
        assert_eq!(contents(&mut theirs, &copy), want, "serve's DUMP {key} restored in Redis");
    }
}

/// RESTORE's and DUMP's errors and options answer as Redis's, byte for byte.
#[test]
fn restore_errors_and_options_match_redis() {
    let Some(redis) = RedisServer::start_or_skip("restore_errors_and_options_match_redis") else { return };
    let serve = LimitlabServe::start(&[]);
    let (mut ours, mut theirs) = (conn(serve.port()), conn(redis.port()));
    run(&mut theirs, &["SET", "k", "v"]);
    let good = dump(&mut theirs, "k");
    let mut bad_crc = good.clone();
    let n = bad_crc.len();
    bad_crc[n - 1] ^= 1;
    let mut newer = good.clone();
    newer[n - 10] = 11;
    // A correct footer over a body that is not an object.
    let garbage = {
        let mut ours_conn = conn(serve.port());
        run(&mut ours_conn, &["SET", "tmp", "x"]);
        let mut p = dump(&mut ours_conn, "tmp");
        p[0] = 99;
        p
    };
    let cases: Vec<Vec<Vec<u8>>> = vec![
        vec![b"DUMP".to_vec(), b"nokey".to_vec()],
        vec![b"RESTORE".to_vec(), b"k".to_vec(), b"0".to_vec(), good.clone()],
        vec![b"RESTORE".to_vec(), b"k2".to_vec(), b"-1".to_vec(), good.clone()],
        vec![b"RESTORE".to_vec(), b"k2".to_vec(), b"x".to_vec(), good.clone()],
        vec![b"RESTORE".to_vec(), b"k2".to_vec(), b"0".to_vec(), bad_crc],
        vec![b"RESTORE".to_vec(), b"k2".to_vec(), b"0".to_vec(), newer],
        vec![b"RESTORE".to_vec(), b"k2".to_vec(), b"0".to_vec(), b"short".to_vec()],
        vec![b"RESTORE".to_vec(), b"k2".to_vec(), b"0".to_vec(), garbage.clone()],
        vec![b"RESTORE".to_vec(), b"k2".to_vec(), b"0".to_vec(), good.clone(), b"BOGUS".to_vec()],
        vec![b"RESTORE".to_vec(), b"k2".to_vec(), b"0".to_vec(), good.clone(), b"IDLETIME".to_vec(), b"-1".to_vec()],
        vec![b"RESTORE".to_vec(), b"k2".to_vec(), b"0".to_vec(), good.clone(), b"FREQ".to_vec(), b"256".to_vec()],
        vec![
            b"RESTORE".to_vec(),
            b"k2".to_vec(),
            b"0".to_vec(),
            good.clone(),
            b"IDLETIME".to_vec(),
            b"5".to_vec(),
            b"FREQ".to_vec(),
            b"5".to_vec(),
        ],
        vec![b"RESTORE".to_vec(), b"k".to_vec(), b"0".to_vec(), good.clone(), b"REPLACE".to_vec()],
        vec![b"RESTORE".to_vec(), b"k3".to_vec(), b"1".to_vec(), good.clone(), b"ABSTTL".to_vec()],
        vec![b"EXISTS".to_vec(), b"k3".to_vec()],
        vec![b"RESTORE".to_vec(), b"k".to_vec(), b"1".to_vec(), good.clone(), b"ABSTTL".to_vec(), b"REPLACE".to_vec()],
        vec![b"EXISTS".to_vec(), b"k".to_vec()],
        vec![
            b"RESTORE".to_vec(),
            b"k4".to_vec(),
            b"100000".to_vec(),
            good.clone(),
            b"IDLETIME".to_vec(),
            b"1000".to_vec(),
        ],
        vec![b"OBJECT".to_vec(), b"IDLETIME".to_vec(), b"k4".to_vec()],
        vec![b"GET".to_vec(), b"k4".to_vec()],
    ];
    run(&mut ours, &["SET", "k", "v"]);
    for case in &cases {
        let send = |c: &mut Connection| {
            let mut cmd = redis::cmd(std::str::from_utf8(&case[0]).unwrap());
            for a in &case[1..] {
                cmd.arg(a.as_slice());
            }
            match cmd.query::<Value>(c) {
                Ok(v) => format!("{v:?}"),
                Err(e) => format!("error {e}"),
            }
        };
        assert_eq!(send(&mut ours), send(&mut theirs), "{:?}", String::from_utf8_lossy(&case.concat()));
    }
    let pttl = |c: &mut Connection| -> i64 { redis::cmd("PTTL").arg("k4").query(c).unwrap() };
    assert!((99_000..=100_000).contains(&pttl(&mut ours)));
}

/// KEYS with a pattern of many stars against long keys it cannot match answers within 100 ms (Redis's
/// "Regression for pattern matching very long nested loops"), and answers what Redis answers.
#[test]
fn keys_with_many_stars_answer_at_once() {
    let serve = LimitlabServe::start(&[]);
    let mut c = conn(serve.port());
    let long = "a".repeat(50_000);
    run(&mut c, &["SET", &long, "1"]);
    run(&mut c, &["SET", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "1"]);
    let pattern = format!("{}b", "a*".repeat(60));
    let watch = Stopwatch::start();
    let keys: Vec<String> = redis::cmd("KEYS").arg(&pattern).query(&mut c).unwrap();
    let took = watch.elapsed();
    assert!(keys.is_empty(), "{keys:?}");
    assert!(took < std::time::Duration::from_millis(100), "KEYS took {took:?}");
    let keys: Vec<String> = redis::cmd("KEYS").arg("a*a*a*a").query(&mut c).unwrap();
    assert_eq!(keys.len(), 2);
}

/// SPOP/SRANDMEMBER/HRANDFIELD/ZRANDMEMBER with counts: distinct members for a positive count, as
/// many as asked (repeats allowed) for a negative one, and Redis's reply types under RESP3.
#[test]
fn random_member_commands_keep_redis_shapes() {
    let Some(redis) = RedisServer::start_or_skip("random_member_commands_keep_redis_shapes") else { return };
    let serve = LimitlabServe::start(&[]);
    // Replies that do not depend on the draws: whole collections, empty ones, errors.
    let session: &[u8] = b"HELLO 3\r\nSADD s a\r\nHSET h f v\r\nZADD z 1.5 m\r\n\
        SPOP s 0\r\nSPOP nokey 3\r\nSRANDMEMBER s 5\r\nSRANDMEMBER s -2\r\nSRANDMEMBER nokey 3\r\nSRANDMEMBER s 1 2\r\n\
        SRANDMEMBER s -9223372036854775808\r\nSPOP s -1\r\nHRANDFIELD h 3 WITHVALUES\r\nHRANDFIELD h -2 WITHVALUES\r\n\
        HRANDFIELD nokey\r\nHRANDFIELD h 1 WITHVALUE\r\nHRANDFIELD h -9223372036854775807 WITHVALUES\r\n\
        ZRANDMEMBER z 2 WITHSCORES\r\nZRANDMEMBER z -2 WITHSCORES\r\nZRANDMEMBER nokey\r\nHELLO 2\r\n\
        ZRANDMEMBER z 2 WITHSCORES\r\nHRANDFIELD h -1 WITHVALUES\r\nSPOP s 5\r\nEXISTS s\r\nQUIT\r\n";
    let exchange = |port: u16| {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
        s.write_all(session).unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        let text = String::from_utf8_lossy(&out).into_owned();
        // HELLO's reply names the connection's id, which differs.
        text.split("$2\r\nid\r\n:").map(|p| p.split_once("\r\n").map_or(p, |x| x.1).to_string()).collect::<Vec<_>>()
    };
    assert_eq!(exchange(serve.port()), exchange(redis.port()));
    let mut c = conn(serve.port());
    let members: Vec<String> = (0..50).map(|i| format!("m{i}")).collect();
    let mut sadd = vec!["SADD", "big"];
    sadd.extend(members.iter().map(String::as_str));
    run(&mut c, &sadd);
    for count in [5, 45] {
        let got: Vec<String> = redis::cmd("SRANDMEMBER").arg("big").arg(count).query(&mut c).unwrap();
        let distinct: std::collections::HashSet<_> = got.iter().collect();
        assert_eq!((got.len(), distinct.len()), (count, count));
    }
    let got: Vec<String> = redis::cmd("SRANDMEMBER").arg("big").arg(-500).query(&mut c).unwrap();
    let distinct: std::collections::HashSet<_> = got.iter().collect();
    assert_eq!(got.len(), 500);
    assert_eq!(distinct.len(), 50, "500 draws out of 50 reach every member");
}
