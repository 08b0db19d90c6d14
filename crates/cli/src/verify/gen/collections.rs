//! Commands on the collection keys: hashes, sorted sets (with their set algebra), lists, sets and
//! streams.
use rand::{Rng, RngCore};

use super::state::{Family, Gen, B};
use super::values::{FIELDS, HASH_FLOATS, INCRS, LEX_BOUNDS, SCORE_BOUNDS};
use crate::verify::model::Fx;
use crate::verify::Command;

impl<R: RngCore> Gen<'_, R> {
    pub(super) fn hash_cmd(&mut self) -> Command {
        let k = self.key(Family::Hash);
        let field = |g: &mut Self| g.pick(FIELDS).to_string();
        match self.rng.random_range(0..17) {
            0 | 1 => {
                let f = field(self);
                B::new("HGET").key(&k).lit(f).build()
            }
            2..=4 => {
                let name = if self.chance(80) { "HSET" } else { "HMSET" };
                let mut b = B::new(name).key(&k);
                for _ in 0..self.rng.random_range(1..4) {
                    let (f, v) = (field(self), self.short());
                    b = b.lit(f).lit(v);
                }
                b.build()
            }
            5 => {
                let (f, v) = (field(self), self.short());
                B::new("HSETNX").key(&k).lit(f).lit(v).build()
            }
            6 => {
                let mut b = B::new("HMGET").key(&k);
                for _ in 0..self.rng.random_range(1..4) {
                    b = b.lit(field(self));
                }
                b.build()
            }
            7 | 8 => {
                let f = field(self);
                let n = if self.chance(50) { self.pick(INCRS).to_string() } else { self.int() };
                B::new("HINCRBY").key(&k).lit(f).lit(n).build()
            }
            9 => {
                let f = field(self);
                let x = self.pick(HASH_FLOATS);
                B::new("HINCRBYFLOAT").key(&k).lit(f).lit(x).build()
            }
            10 | 11 => B::new(self.pick(&["HGETALL", "HKEYS", "HVALS", "HLEN"])).key(&k).build(),
            12 => {
                let mut b = B::new("HDEL").key(&k);
                for _ in 0..self.rng.random_range(1..3) {
                    b = b.lit(field(self));
                }
                b.build()
            }
            13 | 14 => {
                let f = field(self);
                B::new(self.pick(&["HEXISTS", "HSTRLEN"])).key(&k).lit(f).build()
            }
            _ => B::new("HLEN").key(&k).build(),
        }
    }

    pub(super) fn zset_cmd(&mut self) -> Command {
        let k = self.key(Family::Zset);
        match self.rng.random_range(0..32) {
            0..=4 => self.zadd(&k),
            5 => {
                let (s, m) = (self.score(), self.member());
                B::new("ZINCRBY").key(&k).lit(s).lit(m).build()
            }
            6 => {
                let mut b = B::new("ZREM").key(&k);
                for _ in 0..self.rng.random_range(1..3) {
                    b = b.lit(self.member());
                }
                b.build()
            }
            7 => B::new("ZCARD").key(&k).build(),
            8 | 9 => {
                let m = self.member();
                B::new(self.pick(&["ZSCORE", "ZRANK", "ZREVRANK"])).key(&k).lit(m).build()
            }
            10 => {
                let mut b = B::new("ZMSCORE").key(&k);
                for _ in 0..self.rng.random_range(1..4) {
                    b = b.lit(self.member());
                }
                b.build()
            }
            11 | 12 => {
                let (a, z) = (self.pick(SCORE_BOUNDS), self.pick(SCORE_BOUNDS));
                B::new("ZCOUNT").key(&k).lit(a).lit(z).build()
            }
            13 => {
                let (a, z) = (self.pick(LEX_BOUNDS), self.pick(LEX_BOUNDS));
                B::new("ZLEXCOUNT").key(&k).lit(a).lit(z).fx(Fx::LexRange(k.clone())).build()
            }
            14..=17 => self.zrange(&k),
            18 => {
                let (a, z) = (self.index(), self.index());
                let mut b = B::new("ZREVRANGE").key(&k).lit(a).lit(z);
                if self.chance(40) {
                    b = b.lit("WITHSCORES");
                }
                b.build()
            }
            19 | 20 => {
                let name = self.pick(&["ZRANGEBYSCORE", "ZREVRANGEBYSCORE"]);
                let (a, z) = (self.pick(SCORE_BOUNDS), self.pick(SCORE_BOUNDS));
                let mut b = B::new(name).key(&k).lit(a).lit(z);
                if self.chance(40) {
                    b = b.lit("WITHSCORES");
                }
                if self.chance(30) {
                    let (o, c) = (self.index(), self.index());
                    b = b.lit("LIMIT").lit(o).lit(c);
                }
                b.build()
            }
            21 | 22 => {
                let name = self.pick(&["ZRANGEBYLEX", "ZREVRANGEBYLEX"]);
                let (a, z) = (self.pick(LEX_BOUNDS), self.pick(LEX_BOUNDS));
                let mut b = B::new(name).key(&k).lit(a).lit(z).fx(Fx::LexRange(k.clone()));
                if self.chance(30) {
                    let (o, c) = (self.index(), self.index());
                    b = b.lit("LIMIT").lit(o).lit(c);
                }
                b.build()
            }
            23 => {
                let (a, z) = (self.pick(SCORE_BOUNDS), self.pick(SCORE_BOUNDS));
                B::new("ZREMRANGEBYSCORE").key(&k).lit(a).lit(z).build()
            }
            24 => {
                let (a, z) = (self.index(), self.index());
                B::new("ZREMRANGEBYRANK").key(&k).lit(a).lit(z).build()
            }
            25 => {
                let (a, z) = (self.pick(LEX_BOUNDS), self.pick(LEX_BOUNDS));
                B::new("ZREMRANGEBYLEX").key(&k).lit(a).lit(z).fx(Fx::LexRange(k.clone())).build()
            }
            26 | 27 => self.zset_algebra(&k),
            28 if self.chance(50) => {
                // ZRANGESTORE: ZRANGE's arguments (no WITHSCORES), stored under another key.
                let dst = self.key(Family::Zset);
                let by = self.rng.random_range(0..3);
                let (a, z) = match by {
                    0 => (self.index(), self.index()),
                    1 => (self.pick(SCORE_BOUNDS).to_string(), self.pick(SCORE_BOUNDS).to_string()),
                    _ => (self.pick(LEX_BOUNDS).to_string(), self.pick(LEX_BOUNDS).to_string()),
                };
                let mut b = B::new("ZRANGESTORE").key(&dst).key(&k).lit(a).lit(z).fx(Fx::Unmeasurable(dst.clone()));
                match by {
                    1 => b = b.lit("BYSCORE"),
                    2 => b = b.lit("BYLEX").fx(Fx::LexRange(k.clone())),
                    _ => {}
                }
                if self.chance(30) {
                    b = b.lit("REV");
                }
                if self.chance(25) {
                    let (o, c) = (self.index(), self.index());
                    b = b.lit("LIMIT").lit(o).lit(c);
                }
                b.build()
            }
            _ => {
                let mut b = B::new(self.pick(&["ZPOPMIN", "ZPOPMAX"])).key(&k);
                if self.chance(50) {
                    b = b.lit(self.index());
                }
                b.build()
            }
        }
    }

    /// ZADD with any of its flags, a few members, or past 128 members (a skiplist).
    fn zadd(&mut self, k: &str) -> Command {
        let mut b = B::new("ZADD").key(k);
        for o in ["NX", "XX", "GT", "LT", "CH", "INCR"] {
            if self.chance(8) {
                b = b.lit(o);
            }
        }
        if self.chance(2) {
            // Past 128 members (or a long member) a listpack becomes a skiplist.
            for i in 0..130 {
                b = b.lit(i.to_string()).lit(format!("member{i}"));
            }
            b = b.fx(Fx::Unmeasurable(k.to_string()));
        } else {
            for _ in 0..self.rng.random_range(1..4) {
                let (s, m) = (self.score(), self.member());
                b = b.lit(s).lit(m);
            }
            if self.chance(3) {
                b = b.lit("1").lit("x".repeat(70)).fx(Fx::Unmeasurable(k.to_string()));
            }
        }
        b.build()
    }

    /// ZRANGE by index, score or lex, with its options.
    fn zrange(&mut self, k: &str) -> Command {
        let mut b = B::new("ZRANGE").key(k);
        let by = self.rng.random_range(0..3);
        let rev = self.chance(30);
        let (a, z) = match by {
            0 => (self.index(), self.index()),
            1 => (self.pick(SCORE_BOUNDS).to_string(), self.pick(SCORE_BOUNDS).to_string()),
            _ => (self.pick(LEX_BOUNDS).to_string(), self.pick(LEX_BOUNDS).to_string()),
        };
        b = b.lit(a).lit(z);
        let mut opts: Vec<&str> = Vec::new();
        match by {
            1 => opts.push("BYSCORE"),
            2 => {
                opts.push("BYLEX");
                b = b.fx(Fx::LexRange(k.to_string()));
            }
            _ => {}
        }
        if rev {
            opts.push("REV");
        }
        if self.chance(30) {
            opts.push("WITHSCORES");
        }
        if opts.len() > 1 && self.chance(30) {
            opts.swap(0, 1);
        }
        for o in opts {
            b = b.lit(o);
        }
        if self.chance(25) {
            let (o, c) = (self.index(), self.index());
            b = b.lit("LIMIT").lit(o).lit(c);
        }
        b.build()
    }

    /// ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE, ZUNION, ZINTER, ZDIFF and ZINTERCARD over two or three
    /// keys (sorted sets or sets), with WEIGHTS, AGGREGATE, WITHSCORES and LIMIT. A stored result
    /// may be a skiplist (from a big input).
    pub(super) fn zset_algebra(&mut self, k: &str) -> Command {
        let name = self.pick(&["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE", "ZUNION", "ZINTER", "ZDIFF", "ZINTERCARD"]);
        let n = self.rng.random_range(1..=3usize);
        let mut b = B::new(name);
        if name.ends_with("STORE") {
            let dst = self.key(Family::Zset);
            b = b.key(&dst).fx(Fx::Unmeasurable(dst.clone()));
        }
        // (Never more than the keys given: an option after them would be read as a key.)
        let count = if self.chance(10) { self.pick(&["0", "-1", "x"]).to_string() } else { n.to_string() };
        b = b.lit(count).key(k);
        for _ in 1..n {
            let f = if self.chance(70) { Family::Zset } else { Family::Set };
            let k2 = self.key(f);
            b = b.key(&k2);
        }
        if self.chance(40) {
            b = b.lit("WEIGHTS");
            for _ in 0..n {
                b = b.lit(self.pick(&["1", "2", "0.5", "-1", "0", "inf", "-inf", "0.1", "1e308", "x"]));
            }
        }
        if self.chance(30) {
            b = b.lit("AGGREGATE").lit(self.pick(&["SUM", "MIN", "MAX", "max", "AVG"]));
        }
        if self.chance(30) {
            b = b.lit("WITHSCORES");
        }
        if self.chance(20) {
            b = b.lit("LIMIT").lit(self.pick(&["0", "1", "2", "-1"]));
        }
        b.build()
    }

    pub(super) fn list_cmd(&mut self) -> Command {
        let k = self.key(Family::List);
        match self.rng.random_range(0..20) {
            0..=3 => {
                let name = self.pick(&["LPUSH", "RPUSH", "LPUSH", "RPUSH", "LPUSHX", "RPUSHX"]);
                let mut b = B::new(name).key(&k);
                for _ in 0..self.rng.random_range(1..5) {
                    b = b.lit(self.value());
                }
                b.build()
            }
            4 | 5 => {
                let mut b = B::new(self.pick(&["LPOP", "RPOP"])).key(&k);
                if self.chance(40) {
                    b = b.lit(self.pick(&["0", "1", "2", "3", "-1", "10", "x"]));
                }
                b.build()
            }
            6 => B::new("LLEN").key(&k).build(),
            7 | 8 => {
                let (a, z) = (self.index(), self.index());
                B::new("LRANGE").key(&k).lit(a).lit(z).build()
            }
            9 => {
                let (a, z) = (self.index(), self.index());
                B::new("LTRIM").key(&k).lit(a).lit(z).build()
            }
            10 => B::new("LINDEX").key(&k).lit(self.index()).build(),
            11 => {
                let (n, v) = (self.index(), self.value());
                B::new("LREM").key(&k).lit(n).lit(v).build()
            }
            12 => {
                let (i, v) = (self.index(), self.value());
                B::new("LSET").key(&k).lit(i).lit(v).build()
            }
            13 | 14 => {
                let w = self.pick(&["BEFORE", "AFTER", "after", "MIDDLE"]);
                let (p, v) = (self.value(), self.value());
                B::new("LINSERT").key(&k).lit(w).lit(p).lit(v).build()
            }
            16 | 17 => {
                let mut b = B::new("LPOS").key(&k).lit(self.value());
                for o in ["RANK", "COUNT", "MAXLEN"] {
                    if self.chance(35) {
                        let n = self.pick(&["0", "1", "2", "-1", "-2", "3", "10", "x", "-9223372036854775808"]);
                        b = b.lit(o).lit(n);
                    }
                }
                b.build()
            }
            18 => {
                let k2 = self.key(Family::List);
                let (from, to) = (self.pick(&["LEFT", "RIGHT", "left", "UP"]), self.pick(&["LEFT", "RIGHT", "right"]));
                B::new("LMOVE").key(&k).key(&k2).lit(from).lit(to).fx(Fx::CopyTtl { src: k.clone(), dst: k2 }).build()
            }
            19 => {
                let k2 = self.key(Family::List);
                B::new("RPOPLPUSH").key(&k).key(&k2).fx(Fx::CopyTtl { src: k.clone(), dst: k2 }).build()
            }
            _ => {
                let (a, z) = ("0", "-1");
                B::new("LRANGE").key(&k).lit(a).lit(z).build()
            }
        }
    }

    pub(super) fn set_cmd(&mut self) -> Command {
        let k = self.key(Family::Set);
        let member = |g: &mut Self| -> String {
            if g.chance(50) {
                g.rng.random_range(-5i64..30).to_string()
            } else {
                g.member()
            }
        };
        match self.rng.random_range(0..12) {
            0..=3 => {
                // A set that may be a hashtable is not measured: Redis's MEMORY USAGE counts the
                // buckets of both tables while an expansion is rehashed, and how many steps that
                // takes depends on which buckets are empty (siphash with a seed per process);
                // SAMPLES extrapolates from the first members in that same order.
                let mut b = B::new("SADD").key(&k);
                if self.chance(2) {
                    // Past 512 integers an intset becomes a hashtable.
                    for i in 0..514 {
                        b = b.lit(i.to_string());
                    }
                    b = b.fx(Fx::Unmeasurable(k.clone()));
                } else {
                    for _ in 0..self.rng.random_range(1..5) {
                        let m = member(self);
                        if m.parse::<i64>().is_err() {
                            b = b.fx(Fx::Unmeasurable(k.clone()));
                        }
                        b = b.lit(m);
                    }
                }
                b.build()
            }
            4 | 5 => {
                let mut b = B::new("SREM").key(&k);
                for _ in 0..self.rng.random_range(1..3) {
                    b = b.lit(member(self));
                }
                b.build()
            }
            6 => B::new("SCARD").key(&k).build(),
            7 => {
                let m = member(self);
                B::new("SISMEMBER").key(&k).lit(m).build()
            }
            8 => {
                let mut b = B::new("SMISMEMBER").key(&k);
                for _ in 0..self.rng.random_range(1..4) {
                    b = b.lit(member(self));
                }
                b.build()
            }
            11 if self.chance(50) => {
                let k2 = self.key(Family::Set);
                let mut b = B::new("SINTERCARD").lit(self.pick(&["2", "2", "1", "0", "x"])).key(&k).key(&k2);
                if self.chance(40) {
                    b = b.lit("LIMIT").lit(self.pick(&["0", "1", "2", "-1", "x"]));
                }
                b.build()
            }
            _ => B::new("SMEMBERS").key(&k).build(),
        }
    }

    /// Streams with explicit IDs (an automatic `*` ID reads the server's clock, which the emulator's
    /// does not follow) and `<ms>-*`, trimming exact and approximate, ranges and deletes. MEMORY USAGE
    /// of a stream is only estimated, so every write marks the key unmeasurable.
    pub(super) fn stream_cmd(&mut self) -> Command {
        const IDS: &[&str] =
            &["-", "+", "0", "0-0", "1", "1-1", "5", "5-*", "18446744073709551615", "x", "1-x", "(1", "(5-1", "("];
        let k = self.key(Family::Stream);
        let id = |g: &mut Self, star: bool| -> String {
            match g.rng.random_range(0..10) {
                0..=5 => format!("{}-{}", g.rng.random_range(0..30), g.rng.random_range(0..4)),
                6 | 7 if star => format!("{}-*", g.rng.random_range(0..30)),
                6 | 7 => g.rng.random_range(0..30).to_string(),
                _ => g.pick(IDS).to_string(),
            }
        };
        let trim = |g: &mut Self, mut b: B| -> B {
            if g.chance(50) {
                b = b.lit("MAXLEN");
                if g.chance(60) {
                    b = b.lit(g.pick(&["~", "=", "~"]));
                }
                b.lit(g.pick(&["0", "1", "3", "10", "-1", "x"]))
            } else {
                b = b.lit("MINID");
                if g.chance(60) {
                    b = b.lit(g.pick(&["~", "="]));
                }
                let min = id(g, false);
                b.lit(min)
            }
        };
        match self.rng.random_range(0..14) {
            0..=4 => {
                let mut b = B::new("XADD").key(&k).fx(Fx::Unmeasurable(k.clone()));
                if self.chance(10) {
                    b = b.lit("NOMKSTREAM");
                }
                if self.chance(20) {
                    b = trim(self, b);
                    if self.chance(20) {
                        b = b.lit("LIMIT").lit(self.pick(&["0", "1", "100", "-1"]));
                    }
                }
                let i = id(self, true);
                b = b.lit(i);
                if self.chance(5) {
                    // A big entry moves the stream to a new listpack node sooner.
                    b = b.lit("big").lit("y".repeat(self.rng.random_range(500..3000)));
                }
                for _ in 0..self.rng.random_range(1..3) {
                    let (f, v) = (self.pick(FIELDS), self.short());
                    b = b.lit(f).lit(v);
                }
                b.build()
            }
            5 => {
                // Many entries at once, so that trimming meets whole nodes.
                let n = self.rng.random_range(50..260);
                let body = "for i = 1, tonumber(ARGV[1]) do redis.call('XADD', KEYS[1], (tonumber(ARGV[2]) + i) .. '-1', 'f', i) end return redis.call('XLEN', KEYS[1])";
                let base = self.rng.random_range(0..1000).to_string();
                let keys = [k.clone()];
                let mut c = self.script_call(body, true, &keys, vec![n.to_string().into_bytes(), base.into_bytes()]);
                c.fx.push(Fx::Unmeasurable(k.clone()));
                c
            }
            6 | 7 => {
                let b = B::new("XTRIM").key(&k).fx(Fx::Unmeasurable(k.clone()));
                let mut b = trim(self, b);
                if self.chance(25) {
                    b = b.lit("LIMIT").lit(self.pick(&["0", "1", "50", "100", "150", "-1"]));
                }
                b.build()
            }
            8 => B::new("XLEN").key(&k).build(),
            9 | 10 => {
                let rev = self.chance(30);
                let (a, z) = (id(self, false), id(self, false));
                let (a, z) = if self.chance(50) {
                    (a, z)
                } else if rev {
                    ("+".into(), "-".into())
                } else {
                    ("-".into(), "+".into())
                };
                let mut b = B::new(if rev { "XREVRANGE" } else { "XRANGE" }).key(&k).lit(a).lit(z);
                if self.chance(50) {
                    b = b.lit("COUNT").lit(self.pick(&["0", "1", "2", "5", "-1", "x"]));
                }
                b.build()
            }
            11 | 12 => {
                let mut b = B::new("XDEL").key(&k).fx(Fx::Unmeasurable(k.clone()));
                for _ in 0..self.rng.random_range(1..4) {
                    let i = id(self, false);
                    b = b.lit(i);
                }
                b.build()
            }
            _ if self.chance(50) => B::new("TYPE").key(&k).build(),
            _ => B::new("OBJECT").lit("ENCODING").key(&k).build(),
        }
    }
}
