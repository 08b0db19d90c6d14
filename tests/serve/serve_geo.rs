//! The GEO commands against a private redis-server 7.0.15: the same sessions sent to both, the
//! replies compared byte for byte (scores, positions in `%.17Lf`, four-decimal distances, the order
//! of a search's results, error texts), in RESP2 and RESP3.
use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{LimitlabServe, RedisServer};

/// Sends `bytes` (which end with QUIT) and reads everything until the server closes. Our side
/// stays open: Redis drops the replies it has not sent yet when it reads the end of the stream.
pub(crate) fn exchange(port: u16, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut writer = s.try_clone().expect("clone");
    let bytes = bytes.to_vec();
    // Written from another thread: the replies are read while the commands are still going out.
    let sender = std::thread::spawn(move || writer.write_all(&bytes));
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let _ = sender.join();
    out
}

/// Commands as RESP arrays (arguments split on spaces), ending with QUIT.
pub(crate) fn session(lines: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines.iter().map(String::as_str).chain(["QUIT"]) {
        let parts: Vec<&str> = line.split(' ').filter(|p| !p.is_empty()).collect();
        out.extend_from_slice(format!("*{}\r\n", parts.len()).as_bytes());
        for p in parts {
            out.extend_from_slice(format!("${}\r\n{p}\r\n", p.len()).as_bytes());
        }
    }
    out
}

/// The first difference between two replies, as text around it.
pub(crate) fn first_difference(ours: &[u8], theirs: &[u8]) -> String {
    let at = ours.iter().zip(theirs).position(|(a, b)| a != b).unwrap_or(ours.len().min(theirs.len()));
    let from = at.saturating_sub(200);
    let show = |b: &[u8]| String::from_utf8_lossy(&b[from..(at + 200).min(b.len())]).replace("\r\n", "\\r\\n");
    format!("at byte {at}:\n  redis: {}\n  serve: {}", show(theirs), show(ours))
}

pub(crate) fn assert_same(serve: u16, redis: u16, lines: &[String]) {
    let bytes = session(lines);
    let (ours, theirs) = (exchange(serve, &bytes), exchange(redis, &bytes));
    assert!(ours == theirs, "replies differ from Redis {}", first_difference(&ours, &theirs));
}

const FIXED: &[&str] = &[
    "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
    "GEOADD Sicily 13.361389 38.115556 Palermo",
    "GEOADD Sicily CH 13.361389 38.115557 Palermo",
    "GEOADD Sicily NX XX 1 1 a",
    "GEOADD Sicily XX 1 1 a",
    "GEOADD Sicily NX CH 1 1 a",
    "GEOADD Sicily 1 1",
    "GEOADD Sicily CH CH CH",
    "GEOADD Sicily GT 1 1 a",
    "GEOADD Sicily 200 100 x",
    "GEOADD Sicily 1 nan x",
    "GEOADD Sicily 1 inf x",
    "GEOADD Sicily -180 -85.05112878 sw 180 85.05112878 ne",
    "GEOADD Sicily 180 85.05112879 ne2",
    "GEOPOS Sicily Palermo Catania nonexist sw ne a",
    "GEOPOS nokey a b",
    "GEOPOS Sicily",
    "GEODIST Sicily Palermo Catania",
    "GEODIST Sicily Palermo Catania km",
    "GEODIST Sicily Palermo Catania MI",
    "GEODIST Sicily Palermo Catania ft",
    "GEODIST Sicily Palermo Catania furlong",
    "GEODIST Sicily Palermo Catania km x",
    "GEODIST Sicily Palermo nonexist",
    "GEODIST nokey a b",
    "GEOHASH Sicily Palermo Catania nonexist sw ne a",
    "ZRANGE Sicily 0 -1 WITHSCORES",
    "SET str 1",
    "GEOADD str 1 1 a",
    "GEOPOS str a",
    "GEOSEARCH str FROMMEMBER a BYRADIUS 1 km",
    "GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD WITHHASH",
    "GEORADIUS Sicily 15 37 200 km DESC WITHDIST",
    "GEORADIUS Sicily 15 37 200 km COUNT 1",
    "GEORADIUS Sicily 15 37 200 km COUNT 1 ANY",
    "GEORADIUS Sicily 15 37 200 km COUNT 0",
    "GEORADIUS Sicily 15 37 200 km COUNT x",
    "GEORADIUS Sicily 15 37 200 km COUNT",
    "GEORADIUS Sicily 15 37 200 km ANY",
    "GEORADIUS Sicily 15 37 200 furlong",
    "GEORADIUS Sicily 15 37 -1 km",
    "GEORADIUS Sicily 15 37 x km",
    "GEORADIUS Sicily 15 37 200 km STORE dst",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEORADIUS Sicily 15 37 200 km STOREDIST dst",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEORADIUS Sicily 15 37 200 km STORE dst WITHDIST",
    "GEORADIUS_RO Sicily 15 37 200 km STORE dst",
    "GEORADIUS Sicily 15 37 1 km STORE dst",
    "EXISTS dst",
    "GEORADIUS nokey 15 37 1 km",
    "GEORADIUSBYMEMBER Sicily Palermo 200 km WITHDIST",
    "GEORADIUSBYMEMBER Sicily nonexist 200 km",
    "GEORADIUSBYMEMBER nokey nonexist x km",
    "GEORADIUSBYMEMBER_RO Sicily Palermo 200 km WITHDIST ASC",
    "GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 200 km WITHDIST WITHCOORD ASC",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km WITHDIST ASC COUNT 1",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX -1 400 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 y km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km BYBOX 1 1 km",
    "GEOSEARCH Sicily FROMMEMBER Palermo FROMLONLAT 15 37 BYRADIUS 1 km",
    "GEOSEARCH Sicily BYRADIUS 1 km",
    "geoSearch Sicily FROMLONLAT 15 37 WITHDIST",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km STORE dst",
    "GEOSEARCH Sicily FROMMEMBER x BYRADIUS 1 km",
    "GEOSEARCHSTORE dst Sicily FROMMEMBER Palermo BYRADIUS 200 km STOREDIST",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEOSEARCHSTORE dst Sicily FROMMEMBER Palermo BYRADIUS 200 km WITHDIST",
    "GEOSEARCHSTORE dst nokey FROMMEMBER Palermo BYRADIUS 1 m",
    "EXISTS dst",
    "GEOSEARCH Sicily FROMLONLAT 0 0 BYRADIUS 20000 km ASC WITHDIST",
];

#[test]
fn geo_commands_match_redis() {
    let Some(redis) = RedisServer::start_or_skip("geo_commands_match_redis") else { return };
    let serve = LimitlabServe::start(&[]);
    let mut lines: Vec<String> = FIXED.iter().map(|l| l.to_string()).collect();
    assert_same(serve.port(), redis.port(), &lines);
    // The same under RESP3 (positions are doubles there), on fresh keys.
    lines.insert(0, "HELLO 3".into());
    lines.insert(1, "FLUSHALL".into());
    let bytes = session(&lines);
    let (ours, theirs) = (exchange(serve.port(), &bytes), exchange(redis.port(), &bytes));
    // HELLO's reply carries the client id, which differs: compare from the FLUSHALL on.
    let cut = |b: &[u8]| b[b.windows(5).position(|w| w == b"+OK\r\n").expect("FLUSHALL's OK")..].to_vec();
    let (ours, theirs) = (cut(&ours), cut(&theirs));
    assert!(ours == theirs, "RESP3 replies differ from Redis {}", first_difference(&ours, &theirs));
}

/// A small deterministic generator (xorshift), for positions all over the map.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (self.next() >> 11) as f64 / (1u64 << 53) as f64 * (hi - lo)
    }
    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[(self.next() % v.len() as u64) as usize]
    }
}

/// Random points (many near the antimeridian and the poles, where the search boxes wrap and
/// widen) and random searches of every shape, unit and option.
#[test]
fn random_geo_searches_match_redis() {
    let Some(redis) = RedisServer::start_or_skip("random_geo_searches_match_redis") else { return };
    let serve = LimitlabServe::start(&[]);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let n = 300;
    let mut lines = Vec::new();
    for i in 0..n {
        let mut lon = rng.uniform(-180.0, 180.0);
        let mut lat = rng.uniform(-85.05, 85.05);
        if rng.next() % 10 < 3 {
            lon = if rng.next() % 2 == 0 { 1.0 } else { -1.0 } * rng.uniform(170.0, 180.0);
        }
        if rng.next() % 10 < 2 {
            lat = if rng.next() % 2 == 0 { 1.0 } else { -1.0 } * rng.uniform(60.0, 85.05);
        }
        lines.push(format!("GEOADD pts {lon:.6} {lat:.6} m{i}"));
    }
    let options =
        ["", "WITHDIST", "WITHDIST WITHCOORD WITHHASH ASC", "DESC WITHDIST", "COUNT 5 WITHDIST", "COUNT 3 ANY"];
    for _ in 0..200 {
        let lon = rng.uniform(-180.0, 180.0);
        let lat = rng.uniform(-85.0, 85.0);
        let r = rng.pick(&["1", "10", "100", "500", "1000", "3000", "5000", "10000", "20000"]);
        let unit = rng.pick(&["km", "mi"]);
        let opts = rng.pick(&options);
        let w = rng.uniform(0.2, 2.0) * r.parse::<f64>().unwrap();
        lines.push(format!("GEOSEARCH pts FROMLONLAT {lon:.5} {lat:.5} BYRADIUS {r} {unit} {opts}"));
        lines.push(format!("GEOSEARCH pts FROMLONLAT {lon:.5} {lat:.5} BYBOX {r} {w:.3} {unit} {opts}"));
        lines.push(format!("GEOSEARCH pts FROMMEMBER m{} BYRADIUS {r} {unit} {opts}", rng.next() % n));
        lines.push(format!("GEODIST pts m{} m{} {unit}", rng.next() % n, rng.next() % n));
    }
    lines.push(format!("GEOPOS pts {}", (0..n).step_by(7).map(|i| format!("m{i}")).collect::<Vec<_>>().join(" ")));
    lines.push(format!("GEOHASH pts {}", (0..n).step_by(7).map(|i| format!("m{i}")).collect::<Vec<_>>().join(" ")));
    lines.push("GEORADIUS pts 10 10 3000 km STORE dst".into());
    lines.push("ZRANGE dst 0 -1 WITHSCORES".into());
    lines.push("OBJECT ENCODING dst".into());
    assert_same(serve.port(), redis.port(), &lines);
}
