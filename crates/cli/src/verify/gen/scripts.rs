//! Calls of scripts and functions: Lua snippets by EVAL and EVALSHA, the shipped scripts with
//! their parameters, and Redis 7 function libraries (FUNCTION LOAD, FCALL).
use rand::{Rng, RngCore};

use super::state::{Family, Gen, B, FAMILIES};
use super::values::{FLOATS, HASH_FLOATS};
use crate::verify::model::Fx;
use crate::verify::Command;
use limitlab_engine::backend::Script;
use limitlab_engine::limiter::{Algorithm, Flavor, Variant};

/// A digest no script has (EVALSHA and SCRIPT EXISTS on it are deterministic anywhere).
pub const JUNK_SHA: &str = "ffffffffffffffffffffffffffffffffffffffff";

/// Whether a snippet may run on a shared server: it reaches nothing outside the run's own keys
/// (PUBLISH reaches other clients' subscribers, and ACL users without channels are refused it).
fn shared_safe(body: &str) -> bool {
    !body.contains("'publish'")
}

/// Lua snippets for EVAL/EVALSHA beyond the shipped scripts: conversions, errors, the libraries.
/// Bodies are fixed (so a shared server's script cache grows by at most this many entries).
struct Snippet {
    body: &'static str,
    /// How many keys it reads from KEYS.
    keys: usize,
    /// What its ARGV hold.
    argv: ArgvKind,
    compiles: bool,
}

#[derive(Clone, Copy)]
enum ArgvKind {
    None,
    /// Any value (returned as bulk strings only).
    Value,
    /// Short ASCII (may be echoed in an error or status reply).
    Ascii,
    /// Numbers.
    Number,
    /// Increments that keep a hash a listpack.
    HashFloat,
    Json,
}

const SNIPPETS: &[Snippet] = &[
    // Commands scripts may not call, and what acl_check_cmd says of them.
    Snippet { body: "return redis.pcall('subscribe', ARGV[1])", keys: 0, argv: ArgvKind::Ascii, compiles: true },
    Snippet {
        body: "return redis.pcall('client', 'setname', ARGV[1])",
        keys: 0,
        argv: ArgvKind::Ascii,
        compiles: true,
    },
    Snippet { body: "return redis.pcall('config', 'get', 'maxmemory')", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.pcall('client', ARGV[1])", keys: 0, argv: ArgvKind::Ascii, compiles: true },
    Snippet { body: "return redis.acl_check_cmd('watch', KEYS[1])", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.acl_check_cmd('client', ARGV[1])", keys: 0, argv: ArgvKind::Ascii, compiles: true },
    Snippet { body: "return redis.call('multi')", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.pcall('publish', 'ch', ARGV[1])", keys: 0, argv: ArgvKind::Value, compiles: true },
    Snippet {
        body: "return redis.call('lpos', KEYS[1], ARGV[1], 'COUNT', 0)",
        keys: 1,
        argv: ArgvKind::Value,
        compiles: true,
    },
    Snippet {
        body: "return redis.call('zunion', 2, KEYS[1], KEYS[1], 'WITHSCORES')",
        keys: 1,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet {
        body: "return string.match(redis.call('info', 'server'), 'redis_version:([^\\r]+)')",
        keys: 0,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet { body: "return redis.call('GET', KEYS[1])", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.call('SET', KEYS[1], ARGV[1])", keys: 1, argv: ArgvKind::Value, compiles: true },
    Snippet { body: "return redis.call('INCRBY', KEYS[1], ARGV[1])", keys: 1, argv: ArgvKind::Number, compiles: true },
    Snippet { body: "return redis.pcall('INCR', KEYS[1])", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet {
        body: "return {1, 2.5, 'x', false, true, {3, 'y', {}}, -0.9}",
        keys: 0,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet { body: "return redis.call('HGETALL', KEYS[1])", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return {err = 'My Error'}", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.error_reply(ARGV[1])", keys: 0, argv: ArgvKind::Ascii, compiles: true },
    Snippet { body: "return redis.status_reply(ARGV[1])", keys: 0, argv: ArgvKind::Ascii, compiles: true },
    Snippet { body: "return tonumber(ARGV[1])", keys: 0, argv: ArgvKind::Number, compiles: true },
    Snippet {
        body: "local t = {} for i = 1, #ARGV do t[i] = ARGV[i] .. '!' end return t",
        keys: 0,
        argv: ArgvKind::Value,
        compiles: true,
    },
    Snippet {
        body: "return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')",
        keys: 1,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet {
        body: "redis.call('DEL', KEYS[1]) return redis.call('EXISTS', KEYS[1])",
        keys: 1,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet {
        body: "return cjson.encode({tonumber(ARGV[1]) or ARGV[1], true})",
        keys: 0,
        argv: ArgvKind::Ascii,
        compiles: true,
    },
    Snippet { body: "return cjson.decode(ARGV[1])", keys: 0, argv: ArgvKind::Json, compiles: true },
    Snippet { body: "return cjson.encode(cjson.decode(ARGV[1]))", keys: 0, argv: ArgvKind::Json, compiles: true },
    Snippet { body: "return bit.band(tonumber(ARGV[1]) or 0, 255)", keys: 0, argv: ArgvKind::Number, compiles: true },
    Snippet { body: "return bit.tohex(tonumber(ARGV[1]) or 0)", keys: 0, argv: ArgvKind::Number, compiles: true },
    Snippet {
        body: "return struct.pack('>i4', tonumber(ARGV[1]) or 0)",
        keys: 0,
        argv: ArgvKind::Number,
        compiles: true,
    },
    Snippet {
        body: "return cmsgpack.unpack(cmsgpack.pack({1, 'a', true, 2.5}))",
        keys: 0,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet { body: "return redis.sha1hex(ARGV[1])", keys: 0, argv: ArgvKind::Value, compiles: true },
    Snippet {
        body: "redis.setresp(3) return redis.call('HGETALL', KEYS[1])",
        keys: 1,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet {
        body: "redis.setresp(3) return redis.call('ZSCORE', KEYS[1], 'a')",
        keys: 1,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet { body: "return redis.call('NOSUCH')", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.call('GET')", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.pcall('LPUSH', KEYS[1], 'x')", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "error('boom')", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "error({err = 'ERR custom'})", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return 1 +", keys: 0, argv: ArgvKind::None, compiles: false },
    Snippet {
        body: "return string.format('%.17g', tonumber(ARGV[1]) or 0)",
        keys: 0,
        argv: ArgvKind::Number,
        compiles: true,
    },
    Snippet { body: "return redis.call('EXPIRE', KEYS[1], 100)", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet {
        body: "local v = redis.call('GET', KEYS[1]) if v then return #v end return -1",
        keys: 1,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet {
        body: "return {redis.call('RPUSH', KEYS[1], ARGV[1]), redis.call('LRANGE', KEYS[1], 0, -1)}",
        keys: 1,
        argv: ArgvKind::Value,
        compiles: true,
    },
    Snippet {
        body: "local m = redis.call('SMEMBERS', KEYS[1]) table.sort(m) return m",
        keys: 1,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet { body: "return redis.call('TYPE', KEYS[1])", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet {
        body: "return redis.call('HINCRBYFLOAT', KEYS[1], 'f1', ARGV[1])",
        keys: 1,
        argv: ArgvKind::HashFloat,
        compiles: true,
    },
    Snippet {
        body: "redis.setresp(3) return redis.call('HMGET', KEYS[1], 'w', 'n', 'c')",
        keys: 1,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet {
        body: "local n = 0 for i = 1, math.min(tonumber(ARGV[1]) or 0, 1000) do n = n + i end return n",
        keys: 0,
        argv: ArgvKind::Number,
        compiles: true,
    },
    Snippet {
        body: "return redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])",
        keys: 1,
        argv: ArgvKind::Number,
        compiles: true,
    },
    Snippet { body: "return #KEYS + #ARGV * 100", keys: 2, argv: ArgvKind::Value, compiles: true },
    Snippet {
        body: "return redis.call('SET', KEYS[1], ARGV[1], 'PX', 100500)",
        keys: 1,
        argv: ArgvKind::Value,
        compiles: true,
    },
    Snippet {
        body: "return {redis.call('MSET', KEYS[1], 1, KEYS[2], 2), redis.call('MGET', KEYS[1], KEYS[2])}",
        keys: 2,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet {
        body: "return redis.call('HMGET', KEYS[1], 'w', 'n', 'c')",
        keys: 1,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet {
        body: "return {tostring(1e15), tostring(0.1), 1e15, 2^53, -2^63}",
        keys: 0,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet { body: "return redis.call('OBJECT', 'ENCODING', KEYS[1])", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "local t = {} t[1] = 1 t[3] = 3 return t", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.call('ECHO', ARGV[1])", keys: 0, argv: ArgvKind::Value, compiles: true },
    Snippet {
        body: "redis.call('SET', KEYS[1], tonumber(ARGV[1]) or 0) return redis.call('GET', KEYS[1])",
        keys: 1,
        argv: ArgvKind::Number,
        compiles: true,
    },
    Snippet {
        body: "return redis.call('ZINCRBY', KEYS[1], tonumber(ARGV[1]) or 1, 'm')",
        keys: 1,
        argv: ArgvKind::Number,
        compiles: true,
    },
    Snippet {
        body: "redis.setresp(3) return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')",
        keys: 1,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet { body: "return redis.pcall('HSET', KEYS[1])", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet {
        body:
            "local ok, e = pcall(redis.call, 'INCR', KEYS[1]) return {tostring(ok), type(e) == 'table' and e.err or e}",
        keys: 1,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet { body: "return {1, nil, 3}", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return {1.9, -1.9, 0.5, -0.5, 1e300}", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return {double = 3.14}", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "redis.setresp(3) return {double = 3.14}", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "redis.setresp(3) return {map = {a = 1}}", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet {
        body: "redis.setresp(3) return {true, false, {set = {x = true}}}",
        keys: 0,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet { body: "return {string.byte(ARGV[1], 1, -1)}", keys: 0, argv: ArgvKind::Value, compiles: true },
    Snippet { body: "return {struct.unpack('<i2', ARGV[1] .. 'xx')}", keys: 0, argv: ArgvKind::Value, compiles: true },
    Snippet {
        body: "return cmsgpack.pack(tonumber(ARGV[1]) or ARGV[1])",
        keys: 0,
        argv: ArgvKind::Number,
        compiles: true,
    },
    Snippet { body: "return cjson.encode({tonumber(ARGV[1]) or 0})", keys: 0, argv: ArgvKind::Number, compiles: true },
    Snippet { body: "return string.format('%q', ARGV[1])", keys: 0, argv: ArgvKind::Value, compiles: true },
    Snippet {
        body: "return redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL', 'GET')",
        keys: 1,
        argv: ArgvKind::Value,
        compiles: true,
    },
    Snippet { body: "return redis.call('LRANGE', KEYS[1], 0, -1)", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet {
        body: "return redis.call('HINCRBY', KEYS[1], ARGV[1], 1)",
        keys: 1,
        argv: ArgvKind::Ascii,
        compiles: true,
    },
    Snippet {
        body: "return redis.call('GETRANGE', KEYS[1], ARGV[1], -1)",
        keys: 1,
        argv: ArgvKind::Number,
        compiles: true,
    },
    Snippet { body: "return type(redis.call('GET', KEYS[1]))", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return math.huge", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet {
        body: "return {math.floor(-0.5), math.fmod(7, -3), 7 % -3, 2^63, -(2^63)}",
        keys: 0,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet {
        body: "return redis.call('INCRBYFLOAT', KEYS[1], ARGV[1])",
        keys: 1,
        argv: ArgvKind::Number,
        compiles: true,
    },
];

const JSON: &[&str] = &[
    "[1,2,\"x\"]",
    "{\"a\":1}",
    "[]",
    "{}",
    "[1.5,-0,1e300]",
    "\"s\"",
    "null",
    "[true,false,null]",
    "bad json",
    "[1,[2,[3]]]",
    "123456789012345678",
    "\"\\u00e9\"",
    "[",
    "",
];

/// Function libraries for FUNCTION LOAD (name, code): one function each; one fails to load, one
/// clashes with another's function, one replaces another's code under the same name.
const LIBRARIES: &[(&str, &str)] = &[
    ("vlib_incr", "#!lua name=vlib_incr\nredis.register_function('v_incr', function(keys, args) return redis.call('incrby', keys[1], args[1]) end)"),
    ("vlib_incr", "#!lua name=vlib_incr\nredis.register_function('v_incr2', function(keys, args) return redis.call('incrbyfloat', keys[1], args[1]) end)"),
    (
        "vlib_get",
        "#!lua name=vlib_get\nredis.register_function{function_name='v_get', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads'}",
    ),
    ("vlib_echo", "#!lua name=vlib_echo\nredis.register_function('v_echo', function(keys, args) return {keys, args, #keys, #args} end)"),
    ("vlib_err", "#!lua name=vlib_err\nlocal function f(keys, args)\n  error(args[1])\nend\nredis.register_function('v_err', f)"),
    ("vlib_pcall", "#!lua name=vlib_pcall\nredis.register_function('v_pcall', function(keys, args) return redis.pcall('hset', keys[1], args[1], args[2]) end)"),
    (
        "vlib_fw",
        "#!lua name=vlib_fw\nredis.register_function('v_fw', function(keys, args)\n  local n = redis.call('incr', keys[1])\n  if n == 1 then redis.call('pexpire', keys[1], args[2]) end\n  return {n <= tonumber(args[1]) and 1 or 0, n}\nend)",
    ),
    ("vlib_bad", "#!lua name=vlib_bad\nredis.call('set', 'x', 1)"),
    ("vlib_clash", "#!lua name=vlib_clash\nredis.register_function('v_incr', function() return 'clash' end)"),
    ("vlib_none", "#!lua name=vlib_none\nlocal x = 1"),
];

/// The functions those libraries register (and one none does).
const FUNCTIONS: &[&str] = &["v_incr", "v_incr2", "v_get", "v_echo", "v_err", "v_pcall", "v_fw", "v_nosuch"];

impl<R: RngCore> Gen<'_, R> {
    /// Redis 7 functions (private servers only: libraries are global, not under the case's prefix):
    /// FUNCTION LOAD [REPLACE] of a few libraries (some that fail to load or clash), FCALL and
    /// FCALL_RO of their functions, LIST of one library, STATS, DELETE, FLUSH, RESTORE of a bad
    /// payload. Every library registers one function, so no reply depends on Redis's dict order.
    pub(super) fn function_cmd(&mut self) -> Command {
        match self.rng.random_range(0..12) {
            0..=2 => {
                let (_, body) = self.pick(LIBRARIES);
                let mut b = B::new("FUNCTION").lit("LOAD");
                if self.chance(40) {
                    b = b.lit(self.pick(&["REPLACE", "replace", "BOGUS"]));
                }
                b.lit(body).build()
            }
            3..=7 => {
                let f = self.pick(FUNCTIONS);
                let name = if self.chance(10) { f.to_ascii_uppercase() } else { f.to_string() };
                let mut b = B::new(if self.chance(20) { "FCALL_RO" } else { "FCALL" }).lit(name);
                let nkeys = if f == "v_fw" { 1 } else { self.rng.random_range(0..3) };
                if self.chance(3) {
                    return b.lit(self.pick(&["-1", "x", "99"])).build();
                }
                b = b.lit(nkeys.to_string());
                for _ in 0..nkeys {
                    let fam = self.pick(&FAMILIES);
                    let k = self.key(fam);
                    b = b.key(&k).fx(Fx::AnyTtl(k.clone()));
                }
                if f == "v_fw" {
                    // limit, window (at least 100 s: every TTL it sets outlasts the case)
                    let limit = self.rng.random_range(1..5).to_string();
                    let window = self.pick(&["100000", "250000", "86400000"]);
                    return b.lit(limit).lit(window).build();
                }
                for _ in 0..self.rng.random_range(0..3) {
                    let a = if self.chance(50) { self.int() } else { self.short() };
                    b = b.lit(a);
                }
                b.build()
            }
            8 => {
                let (name, _) = self.pick(LIBRARIES);
                let mut b = B::new("FUNCTION").lit("LIST").lit("LIBRARYNAME").lit(name);
                if self.chance(50) {
                    b = b.lit("WITHCODE");
                }
                b.build()
            }
            9 => B::new("FUNCTION").lit(self.pick(&["STATS", "HELP", "KILL", "nope"])).build(),
            10 => {
                let (name, _) = self.pick(LIBRARIES);
                B::new("FUNCTION").lit("DELETE").lit(name).build()
            }
            _ => {
                if self.chance(50) {
                    B::new("FUNCTION").lit("FLUSH").build()
                } else {
                    B::new("FUNCTION").lit("RESTORE").lit(self.pick(&["x", "0123456789ab", ""])).build()
                }
            }
        }
    }

    pub(super) fn pick_loaded(&mut self) -> String {
        let i = self.rng.random_range(0..self.loaded.len());
        self.loaded[i].clone()
    }

    /// EVAL / EVAL_RO / EVALSHA of `body` with these keys and arguments; SCRIPT LOAD sometimes.
    pub(super) fn script_call(&mut self, body: &str, compiles: bool, keys: &[String], argv: Vec<Vec<u8>>) -> Command {
        let sha = Script::new(body).sha;
        let known = self.model.is_loaded(&sha) && (self.private || self.loaded.contains(&sha));
        let mode = self.rng.random_range(0..10);
        if mode == 0 {
            let mut b = B::new("SCRIPT").lit("LOAD").lit(body);
            if compiles {
                b = b.fx(Fx::Load(sha.clone()));
                if !self.in_multi {
                    self.loaded.push(sha);
                }
            }
            return b.build();
        }
        let (name, by_sha) = match mode {
            1..=3 if known => (if self.chance(85) { "EVALSHA" } else { "EVALSHA_RO" }, true),
            4 => ("EVAL_RO", false),
            _ => ("EVAL", false),
        };
        let mut b = B::new(name);
        // Redis reads numkeys before it compiles: a bad one loads nothing.
        let bad_numkeys = self.chance(3);
        if by_sha {
            let s = if self.chance(10) { sha.to_ascii_uppercase() } else { sha.clone() };
            b = b.lit(s).fx(Fx::NeedLoaded(sha.clone()));
        } else {
            b = b.lit(body);
            if compiles && !bad_numkeys {
                b = b.fx(Fx::Load(sha.clone()));
                if !self.in_multi {
                    self.loaded.push(sha);
                }
            }
        }
        let numkeys = if bad_numkeys { self.pick(&["-1", "x", "99"]).to_string() } else { keys.len().to_string() };
        b = b.lit(numkeys);
        for k in keys {
            b = b.key(k).fx(Fx::AnyTtl(k.clone()));
        }
        for a in argv {
            b = b.lit(a);
        }
        b.build()
    }

    pub(super) fn snippet_cmd(&mut self) -> Command {
        let mut s = &SNIPPETS[self.rng.random_range(0..SNIPPETS.len())];
        while !self.private && !shared_safe(s.body) {
            s = &SNIPPETS[self.rng.random_range(0..SNIPPETS.len())];
        }
        let mut keys = Vec::new();
        for _ in 0..s.keys {
            let f = self.pick(&FAMILIES);
            keys.push(self.key(f));
        }
        let n = match s.argv {
            ArgvKind::None => 0,
            _ => self.rng.random_range(1..=3),
        };
        let argv = (0..n)
            .map(|_| match s.argv {
                ArgvKind::Value => self.value(),
                ArgvKind::Ascii => self.short().into_bytes(),
                ArgvKind::Number => {
                    if self.chance(50) {
                        self.pick(FLOATS).as_bytes().to_vec()
                    } else {
                        self.int().into_bytes()
                    }
                }
                ArgvKind::Json => self.pick(JSON).as_bytes().to_vec(),
                ArgvKind::HashFloat => self.pick(HASH_FLOATS).as_bytes().to_vec(),
                ArgvKind::None => Vec::new(),
            })
            .collect();
        self.script_call(s.body, s.compiles, &keys, argv)
    }

    /// A call of one shipped script: mostly valid arguments (parameters chosen so that every TTL it
    /// sets is at least 100 s), sometimes an invalid one (which every production script refuses
    /// before writing anything) or a wrong number of keys or arguments.
    pub(super) fn limiter_cmd(&mut self) -> Command {
        let v = Variant::ALL[self.rng.random_range(0..Variant::ALL.len())];
        let key = self.key(Family::Limiter);
        // The next `now`: mostly forward, sometimes backwards (a lagging client), sometimes far.
        let window = self.window();
        let step = match self.rng.random_range(0..10) {
            0..=2 => 0,
            3..=5 => self.rng.random_range(1..=window.min(5_000)),
            6 => window,
            7 => self.rng.random_range(0..=3 * window.min(1 << 40)),
            8 => 0u64.wrapping_sub(self.rng.random_range(1..=window.min(5_000))),
            _ => self.rng.random_range(0..1000),
        };
        self.now = self.now.wrapping_add(step).min(limitlab_engine::limiter::MAX_ARG);
        let limit = self.limit(v, window);
        let mut argv: Vec<String> = vec![limit.to_string(), window.to_string(), self.now.to_string()];
        if v.takes_cost() && self.chance(85) {
            let cost = match self.rng.random_range(0..10) {
                0 => 0,
                1 => limit,
                2 => limit + 1,
                3 => self.rng.random_range(1..=limit.min(300)),
                4 => limitlab_engine::limiter::MAX_ARG,
                _ => 1,
            };
            // The sliding log adds one member per unit: keep allowed calls small.
            let cost = if v.algorithm() == Algorithm::SlidingLog && cost <= limit { cost.min(300) } else { cost };
            argv.push(cost.to_string());
            if v.takes_burst() && self.chance(50) {
                argv.push(self.rng.random_range(1..=limit * 3).to_string());
            }
        }
        let sliding_log = v.algorithm() == Algorithm::SlidingLog;
        let mut keys = vec![key];
        if self.chance(6) {
            // Invalid on purpose: production scripts refuse before any write; the seed's scripts
            // only see values that make no short TTL (no number, zero or negative windows).
            let i = self.rng.random_range(0..argv.len());
            argv[i] = self.pick(&["abc", "", "-1000", "0", "1.5", "1e3", "9999999999999999", " 5"]).to_string();
            if v.flavor() == Flavor::Seed && i == 0 {
                argv[i] = "abc".into();
            }
            if v.flavor() == Flavor::Seed && i == 1 && !matches!(argv[i].as_str(), "abc" | "" | "-1000" | "0") {
                argv[i] = "-1000".into();
            }
        } else if self.chance(3) {
            match self.rng.random_range(0..3) {
                0 => keys.clear(),
                1 => keys.push(self.key(Family::Limiter)),
                _ => argv.truncate(2),
            }
        }
        let argv = argv.into_iter().map(String::into_bytes).collect();
        let mut c = self.script_call(v.script(), true, &keys, argv);
        // A sliding log keeps up to `limit` members: past 128, a skiplist.
        if sliding_log {
            for k in &keys {
                c.fx.push(Fx::Unmeasurable(k.clone()));
            }
        }
        c
    }

    /// A window in ms: at least 100 s, so every TTL a script sets outlasts the case.
    pub(super) fn window(&mut self) -> u64 {
        match self.rng.random_range(0..6) {
            0 => 100_000,
            1 => 60 * 60_000,
            2 => self.rng.random_range(100_000..10_000_000),
            3 => 86_400_000 * self.rng.random_range(1..400),
            4 => self.rng.random_range(100_000..1_000_000_000_000),
            _ => 1_000_003,
        }
    }

    /// A limit for `window`: the token bucket and GCRA set TTLs as short as `window / limit`, so
    /// there the limit keeps that at 100 s or more.
    pub(super) fn limit(&mut self, v: Variant, window: u64) -> u64 {
        let max = match (v.flavor(), v.algorithm()) {
            (Flavor::Ours, Algorithm::TokenBucket | Algorithm::Gcra) => (window / 100_000).max(1),
            (_, Algorithm::SlidingLog) => 300,
            _ => 1_000_000,
        };
        match self.rng.random_range(0..4) {
            0 => 1,
            1 => self.rng.random_range(1..=max.min(10)),
            2 => self.rng.random_range(1..=max.min(1000)),
            _ => self.rng.random_range(1..=max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_snippet_is_marked_right() {
        let mut emu = limitlab_emulator::Emulator::new();
        for s in SNIPPETS {
            let ok = emu.script_load(s.body.as_bytes()).is_ok();
            assert_eq!(ok, s.compiles, "{}", s.body);
        }
    }
}
