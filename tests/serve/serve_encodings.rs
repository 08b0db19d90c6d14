//! Encoding thresholds set by CONFIG SET (`hash-max-listpack-*`, `zset-max-listpack-*`,
//! `set-max-intset-entries`, `list-max-listpack-size` and the `ziplist` aliases) against a private
//! redis-server 7.0.15: OBJECT ENCODING, MEMORY USAGE and DUMP payloads compared byte for byte. A
//! value converts on the write that crosses a threshold, never on the CONFIG SET.
use crate::common;

use common::{LimitlabServe, RedisServer};

use super::serve_geo::assert_same;

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect()
}

#[test]
fn encoding_thresholds_follow_config_set_as_in_redis() {
    let Some(redis) = RedisServer::start_or_skip("encoding_thresholds_follow_config_set_as_in_redis") else {
        return;
    };
    let serve = LimitlabServe::start(&[]);
    let session = lines(
        "
        ZADD z 1 a 2 b 3 c
        CONFIG SET zset-max-listpack-entries 2
        OBJECT ENCODING z
        ZADD z 4 d
        OBJECT ENCODING z
        DUMP z
        ZADD z2 1 a 2 b
        OBJECT ENCODING z2
        MEMORY USAGE z2
        DUMP z2
        CONFIG SET zset-max-ziplist-entries 128
        CONFIG SET zset-max-listpack-value 3
        ZADD z3 1 abcd 2 a
        OBJECT ENCODING z3
        ZADD z4 1 a 2 abc
        OBJECT ENCODING z4
        ZADD z4 3 abcd
        OBJECT ENCODING z4
        ZRANGESTORE z5 z4 0 1
        OBJECT ENCODING z5
        CONFIG SET zset-max-listpack-value 64
        HSET h a 5
        CONFIG SET hash-max-listpack-value 1
        OBJECT ENCODING h
        HINCRBY h a 10
        OBJECT ENCODING h
        HSET h2 ab 1
        OBJECT ENCODING h2
        MEMORY USAGE h2
        CONFIG SET hash-max-ziplist-value 64
        CONFIG SET hash-max-listpack-entries 1
        HSET h3 a 1
        OBJECT ENCODING h3
        MEMORY USAGE h3
        HSET h3 b 1
        OBJECT ENCODING h3
        CONFIG SET hash-max-listpack-entries 512
        SADD s 1 2
        CONFIG SET set-max-intset-entries 2
        OBJECT ENCODING s
        DUMP s
        SADD s 3
        OBJECT ENCODING s
        SINTERSTORE s2 s s
        OBJECT ENCODING s2
        SADD s3 1
        OBJECT ENCODING s3
        DUMP s3
        CONFIG SET set-max-intset-entries 512
        CONFIG SET list-max-listpack-size 3
        RPUSH l a b c d e f g
        MEMORY USAGE l
        DUMP l
        CONFIG SET list-max-ziplist-size -1
        CONFIG GET list-max-listpack-size
        ",
    );
    let mut session = session;
    // Lists of many sizes under every kind of fill: DUMP shows each quicklist node's elements.
    for fill in ["-2", "-1", "-3", "-5", "-9", "0", "3", "100"] {
        session.push(format!("CONFIG SET list-max-listpack-size {fill}"));
        for (n, width) in [(150, 1), (120, 10), (200, 60), (90, 100), (60, 300), (20, 1000), (5, 5000)] {
            let elements: Vec<String> = (0..n).map(|i| format!("{}{i}", "x".repeat(width))).collect();
            session.push(format!("RPUSH big {}", elements.join(" ")));
            session.push("DUMP big".into());
            session.push("MEMORY USAGE big".into());
            session.push("DEL big".into());
        }
    }
    assert_same(serve.port(), redis.port(), &session);
}
