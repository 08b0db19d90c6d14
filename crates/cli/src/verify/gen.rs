//! The case generator: random command sequences over the emulator's command table and random calls
//! of every shipped script, each command annotated with the effects [`super::model`] checks.
//!
//! A case is a short session (1 to [`MAX_COMMANDS`] commands) on a handful of logical keys. Each key
//! leans towards one type (string, hash, sorted set, list, set, HyperLogLog, stream, or a limiter's
//! key; bit commands go to the string keys), so most
//! commands hit a key of their own type and some hit another (WRONGTYPE paths). Arguments come from
//! small pools of edge values (integer limits, float spellings, empty strings, binary bytes,
//! spaces) mixed with random numbers; one command in twenty is mangled (an argument dropped or an
//! extra one added) to walk arity and syntax errors. On a private server cases also load Redis 7
//! function libraries and call their functions (FCALL, FCALL_RO, FUNCTION LIST/STATS/DELETE/FLUSH).
//! Transactions come up in every case: MULTI queues what follows until an EXEC or DISCARD, WATCH
//! names some of the keys (which later commands touch or not), and the errors around them are sent
//! too; on a private server the case also moves between databases (SELECT, SWAPDB, MOVE, FLUSHDB).
//!
//! What is left out, and why (the comparison must be byte-exact on a server whose clock runs):
//! `TIME` (the wall clock), `XADD` with an automatic `*` ID (the server's clock), `MEMORY USAGE` of a
//! stream (the model estimates it), `RANDOMKEY` (random), `OBJECT IDLETIME` (time since last access),
//! `SCAN`, `KEYS` and `DBSIZE` on shared servers (other people's keys; KEYS walks them all and
//! blocks the server meanwhile), `FLUSHALL`/`FLUSHDB`/`SCRIPT FLUSH`
//! on shared servers (never on a server limitlab did not start), `SELECT`, `SWAPDB`, `MOVE` and
//! `COPY .. DB n` with a database that exists on shared servers (the URL may name a database, and
//! the run's keys must stay in it; private servers get all of them), `WAIT` for replicas outside a
//! transaction for more than 1 ms (it blocks), `SCRIPT DEBUG YES|SYNC` (a debugging session), Lua's `math.random`
//! (Redis keeps its stream across calls for the server's lifetime), functions on shared servers
//! (libraries are global, outside any key prefix), `PUBLISH`, `CONFIG`, `CLIENT NO-EVICT` and
//! `SORT`/`SORT_RO` on shared servers (other clients' subscribers; server settings; commands an
//! ACL user limited to its own keys, without `@dangerous`, is refused), `FUNCTION DUMP` and `FUNCTION LIST` of several
//! libraries (Redis orders them by a dict seeded at random per process), `MEMORY USAGE` of skiplists, hashtable sets and
//! of expired keys, lex ranges over a possible skiplist, and TTLs shorter than 100 s (they could expire mid-case on the server while the
//! emulator's clock stands still); [`super::model`] has the rules that keep the rest exact. `KEYS`, `SMEMBERS` and `SCAN` replies are compared
//! after sorting (their order follows Redis's hash tables); hashes are kept small and their values
//! short, so they stay listpacks whose order (insertion order) is compared exactly.
use rand::{Rng, RngCore};

use super::model::{Fx, Model, TtlKind, TtlRead};
use super::{Arg, Case, Command};
use limitlab_engine::backend::Script;
use limitlab_engine::limiter::{Algorithm, Flavor, Variant};

/// The most commands in one case.
pub const MAX_COMMANDS: usize = 24;

/// A digest no script has (EVALSHA and SCRIPT EXISTS on it are deterministic anywhere).
pub const JUNK_SHA: &str = "ffffffffffffffffffffffffffffffffffffffff";

/// What a key leans towards holding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    String,
    Hash,
    Zset,
    List,
    Set,
    /// A limiter's subject key (`rate:{u1}`), for the shipped scripts.
    Limiter,
    /// A HyperLogLog (a string in Redis's HLL representation).
    Hll,
    Stream,
}

const FAMILIES: [Family; 7] = [Family::String, Family::Hash, Family::Zset, Family::List, Family::Set, Family::Hll, Family::Stream];

/// Values for strings, list elements and set/zset members: edge spellings of numbers, blanks,
/// binary and long strings. Only values are ever non-ASCII (so no error text echoes a non-UTF-8
/// byte back, which the redis crate could not read).
const VALUES: &[&[u8]] = &[
    b"",
    b"a",
    b"b",
    b"hello",
    b"Hello World",
    b"0",
    b"1",
    b"-1",
    b"7",
    b"42",
    b"100",
    b"-100",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"9223372036854775808",
    b"3.14",
    b"-0.5",
    b"1e3",
    b"1e-5",
    b"inf",
    b"-inf",
    b"+inf",
    b"nan",
    b" 1",
    b"1 ",
    b"0x1f",
    b"010",
    b"+5",
    b"00",
    b"-0",
    b"1.0",
    b"1.",
    b".5",
    b"1e400",
    b"\x00\xff\x01",
    b"ab\r\nc",
    b"h\xc3\xa9llo",
    b"12345678901234567890",
    b"a b c",
    b"\"q\"",
    b"'",
    b"\\",
    b"0.1",
    b"17179869184",
    b"-17179869185",
    b"4294967296",
    b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
];

/// Short ASCII values: hash fields' values (a hash stays a listpack, in insertion order), and any
/// argument that might be echoed in an error.
const SHORT: &[&str] = &[
    "",
    "a",
    "b",
    "v",
    "hello",
    "0",
    "1",
    "-1",
    "2",
    "10",
    "42",
    "-7",
    "3.5",
    "1e3",
    "inf",
    "-inf",
    "nan",
    "9223372036854775807",
    "-9223372036854775808",
    "1.5",
    "x y",
    "0.1",
    "5.0e3",
    "abc",
    "17179869184",
];

const INTS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "-2",
    "3",
    "5",
    "10",
    "-10",
    "100",
    "-100",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "x",
    "1.5",
    "",
    " 1",
    "+1",
    "01",
    "-0",
];

const INCRS: &[&str] = &["1", "-1", "0", "5", "100", "-100", "9223372036854775807", "-9223372036854775808", "a", "1.5", ""];

/// Increments for hash fields: a value past 64 bytes (HINCRBYFLOAT prints 1e308 in full) turns the
/// hash into a hashtable, whose order Redis randomises per process.
const HASH_FLOATS: &[&str] = &[
    "1",
    "1.5",
    "-2.5",
    "0.1",
    "-0",
    "1e10",
    "-1e-300",
    "inf",
    "-inf",
    "+inf",
    "nan",
    "abc",
    "3",
    "1.0000000000000001",
    "0x10",
    " 1",
    "",
    "5.0e3",
    "17179869184",
    "0.3333333333333333",
];

const FLOATS: &[&str] = &[
    "1",
    "1.5",
    "-2.5",
    "0.1",
    "-0",
    "1e10",
    "1e308",
    "1e309",
    "-1e-300",
    "inf",
    "-inf",
    "+inf",
    "nan",
    "abc",
    "3",
    "1.0000000000000001",
    "0x10",
    " 1",
    "",
    "5.0e3",
    "17179869184",
    "0.3333333333333333",
];

const FIELDS: &[&str] = &["f1", "f2", "f3", "a", "b", "n", "w", "c", "p", "t", "tok", "ts", ""];

const MEMBERS: &[&str] = &["a", "b", "c", "d", "m1", "m2", "0", "1", "-1", "10", "1:1", "x y", "", "zz"];

const SCORES: &[&str] = &[
    "0",
    "1",
    "-1",
    "1.5",
    "-2.5",
    "2",
    "3",
    "1e10",
    "inf",
    "-inf",
    "+inf",
    "nan",
    "abc",
    "0.1",
    "1e-300",
    "9007199254740993",
    "-0",
    "(1",
];

const SCORE_BOUNDS: &[&str] = &["-inf", "+inf", "inf", "(1", "1", "(1.5", "2", "0", "10", "(inf", "-1", "(-inf", "x", "[1", "1e1", ""];

const LEX_BOUNDS: &[&str] = &["-", "+", "[a", "(a", "[b", "(c", "[m", "(z", "a", "[", "(", "[1", ""];

const INDEXES: &[&str] = &["0", "1", "-1", "2", "-2", "3", "10", "-10", "100", "-100", "9223372036854775807", "x"];

const PATTERNS: &[&str] = &["*", "k*", "k?", "rate:*", "*{u1}*", "[a-k]*", "k[12]", "nomatch*", "\\*", "*1*", "?"];

/// Relative seconds: long enough to outlast a case, zero and negatives (delete), and errors.
const SECS: &[&str] = &[
    "100",
    "1000",
    "86400",
    "31536000",
    "0",
    "-1",
    "-100",
    "abc",
    "1.5",
    "",
    "9223372036854775807",
    "9223372036854775",
    "-9223372036854775808",
];
/// Relative ms that are whole seconds (a `TTL` reads them exactly).
const MS_SECS: &[&str] = &["100000", "86400000"];
/// Relative ms that are not whole seconds.
const MS_ODD: &[&str] = &["100500", "123456789"];
/// Relative ms that delete or fail.
const MS_OTHER: &[&str] = &["0", "-1", "x", "9223372036854775807", "-9223372036854775808"];
/// Absolute seconds, far in the past or the future.
const ABS_SECS: &[&str] = &["4102444800", "4102444801", "1", "1000000000", "0", "-1", "x"];
const ABS_MS: &[&str] = &["4102444800000", "4102444800123", "1", "1000000000000", "0", "-5"];

/// A long ASCII argument: Redis cuts echoed arguments in error texts at 128 bytes.
const ECHOED_LONG: &str = "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz0123456789";

/// Subcommand and option names that do not exist: Redis echoes them (cut, with CR/LF as spaces).
const BAD_NAMES: &[&str] = &["nope", "a\nb", "x\r\ny", ECHOED_LONG, ""];

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
    Snippet { body: "return redis.pcall('client', 'setname', ARGV[1])", keys: 0, argv: ArgvKind::Ascii, compiles: true },
    Snippet { body: "return redis.pcall('config', 'get', 'maxmemory')", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.pcall('client', ARGV[1])", keys: 0, argv: ArgvKind::Ascii, compiles: true },
    Snippet { body: "return redis.acl_check_cmd('watch', KEYS[1])", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.acl_check_cmd('client', ARGV[1])", keys: 0, argv: ArgvKind::Ascii, compiles: true },
    Snippet { body: "return redis.call('multi')", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.pcall('publish', 'ch', ARGV[1])", keys: 0, argv: ArgvKind::Value, compiles: true },
    Snippet { body: "return redis.call('lpos', KEYS[1], ARGV[1], 'COUNT', 0)", keys: 1, argv: ArgvKind::Value, compiles: true },
    Snippet { body: "return redis.call('zunion', 2, KEYS[1], KEYS[1], 'WITHSCORES')", keys: 1, argv: ArgvKind::None, compiles: true },
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
    Snippet { body: "return {1, 2.5, 'x', false, true, {3, 'y', {}}, -0.9}", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.call('HGETALL', KEYS[1])", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return {err = 'My Error'}", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.error_reply(ARGV[1])", keys: 0, argv: ArgvKind::Ascii, compiles: true },
    Snippet { body: "return redis.status_reply(ARGV[1])", keys: 0, argv: ArgvKind::Ascii, compiles: true },
    Snippet { body: "return tonumber(ARGV[1])", keys: 0, argv: ArgvKind::Number, compiles: true },
    Snippet { body: "local t = {} for i = 1, #ARGV do t[i] = ARGV[i] .. '!' end return t", keys: 0, argv: ArgvKind::Value, compiles: true },
    Snippet { body: "return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "redis.call('DEL', KEYS[1]) return redis.call('EXISTS', KEYS[1])", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return cjson.encode({tonumber(ARGV[1]) or ARGV[1], true})", keys: 0, argv: ArgvKind::Ascii, compiles: true },
    Snippet { body: "return cjson.decode(ARGV[1])", keys: 0, argv: ArgvKind::Json, compiles: true },
    Snippet { body: "return cjson.encode(cjson.decode(ARGV[1]))", keys: 0, argv: ArgvKind::Json, compiles: true },
    Snippet { body: "return bit.band(tonumber(ARGV[1]) or 0, 255)", keys: 0, argv: ArgvKind::Number, compiles: true },
    Snippet { body: "return bit.tohex(tonumber(ARGV[1]) or 0)", keys: 0, argv: ArgvKind::Number, compiles: true },
    Snippet { body: "return struct.pack('>i4', tonumber(ARGV[1]) or 0)", keys: 0, argv: ArgvKind::Number, compiles: true },
    Snippet { body: "return cmsgpack.unpack(cmsgpack.pack({1, 'a', true, 2.5}))", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.sha1hex(ARGV[1])", keys: 0, argv: ArgvKind::Value, compiles: true },
    Snippet { body: "redis.setresp(3) return redis.call('HGETALL', KEYS[1])", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "redis.setresp(3) return redis.call('ZSCORE', KEYS[1], 'a')", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.call('NOSUCH')", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.call('GET')", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.pcall('LPUSH', KEYS[1], 'x')", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "error('boom')", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "error({err = 'ERR custom'})", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return 1 +", keys: 0, argv: ArgvKind::None, compiles: false },
    Snippet { body: "return string.format('%.17g', tonumber(ARGV[1]) or 0)", keys: 0, argv: ArgvKind::Number, compiles: true },
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
    Snippet { body: "local m = redis.call('SMEMBERS', KEYS[1]) table.sort(m) return m", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.call('TYPE', KEYS[1])", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.call('HINCRBYFLOAT', KEYS[1], 'f1', ARGV[1])", keys: 1, argv: ArgvKind::HashFloat, compiles: true },
    Snippet { body: "redis.setresp(3) return redis.call('HMGET', KEYS[1], 'w', 'n', 'c')", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet {
        body: "local n = 0 for i = 1, math.min(tonumber(ARGV[1]) or 0, 1000) do n = n + i end return n",
        keys: 0,
        argv: ArgvKind::Number,
        compiles: true,
    },
    Snippet { body: "return redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])", keys: 1, argv: ArgvKind::Number, compiles: true },
    Snippet { body: "return #KEYS + #ARGV * 100", keys: 2, argv: ArgvKind::Value, compiles: true },
    Snippet { body: "return redis.call('SET', KEYS[1], ARGV[1], 'PX', 100500)", keys: 1, argv: ArgvKind::Value, compiles: true },
    Snippet {
        body: "return {redis.call('MSET', KEYS[1], 1, KEYS[2], 2), redis.call('MGET', KEYS[1], KEYS[2])}",
        keys: 2,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet { body: "return redis.call('HMGET', KEYS[1], 'w', 'n', 'c')", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return {tostring(1e15), tostring(0.1), 1e15, 2^53, -2^63}", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.call('OBJECT', 'ENCODING', KEYS[1])", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "local t = {} t[1] = 1 t[3] = 3 return t", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.call('ECHO', ARGV[1])", keys: 0, argv: ArgvKind::Value, compiles: true },
    Snippet {
        body: "redis.call('SET', KEYS[1], tonumber(ARGV[1]) or 0) return redis.call('GET', KEYS[1])",
        keys: 1,
        argv: ArgvKind::Number,
        compiles: true,
    },
    Snippet { body: "return redis.call('ZINCRBY', KEYS[1], tonumber(ARGV[1]) or 1, 'm')", keys: 1, argv: ArgvKind::Number, compiles: true },
    Snippet {
        body: "redis.setresp(3) return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')",
        keys: 1,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet { body: "return redis.pcall('HSET', KEYS[1])", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet {
        body: "local ok, e = pcall(redis.call, 'INCR', KEYS[1]) return {tostring(ok), type(e) == 'table' and e.err or e}",
        keys: 1,
        argv: ArgvKind::None,
        compiles: true,
    },
    Snippet { body: "return {1, nil, 3}", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return {1.9, -1.9, 0.5, -0.5, 1e300}", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return {double = 3.14}", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "redis.setresp(3) return {double = 3.14}", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "redis.setresp(3) return {map = {a = 1}}", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "redis.setresp(3) return {true, false, {set = {x = true}}}", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return {string.byte(ARGV[1], 1, -1)}", keys: 0, argv: ArgvKind::Value, compiles: true },
    Snippet { body: "return {struct.unpack('<i2', ARGV[1] .. 'xx')}", keys: 0, argv: ArgvKind::Value, compiles: true },
    Snippet { body: "return cmsgpack.pack(tonumber(ARGV[1]) or ARGV[1])", keys: 0, argv: ArgvKind::Number, compiles: true },
    Snippet { body: "return cjson.encode({tonumber(ARGV[1]) or 0})", keys: 0, argv: ArgvKind::Number, compiles: true },
    Snippet { body: "return string.format('%q', ARGV[1])", keys: 0, argv: ArgvKind::Value, compiles: true },
    Snippet { body: "return redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL', 'GET')", keys: 1, argv: ArgvKind::Value, compiles: true },
    Snippet { body: "return redis.call('LRANGE', KEYS[1], 0, -1)", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.call('HINCRBY', KEYS[1], ARGV[1], 1)", keys: 1, argv: ArgvKind::Ascii, compiles: true },
    Snippet { body: "return redis.call('GETRANGE', KEYS[1], ARGV[1], -1)", keys: 1, argv: ArgvKind::Number, compiles: true },
    Snippet { body: "return type(redis.call('GET', KEYS[1]))", keys: 1, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return math.huge", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return {math.floor(-0.5), math.fmod(7, -3), 7 % -3, 2^63, -(2^63)}", keys: 0, argv: ArgvKind::None, compiles: true },
    Snippet { body: "return redis.call('INCRBYFLOAT', KEYS[1], ARGV[1])", keys: 1, argv: ArgvKind::Number, compiles: true },
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

/// Builds one [`Command`].
struct B {
    args: Vec<Arg>,
    fx: Vec<Fx>,
}

impl B {
    fn new(name: &str) -> B {
        B { args: vec![Arg::Lit(name.as_bytes().to_vec())], fx: Vec::new() }
    }
    fn lit(mut self, s: impl AsRef<[u8]>) -> B {
        self.args.push(Arg::Lit(s.as_ref().to_vec()));
        self
    }
    fn key(mut self, k: &str) -> B {
        self.args.push(Arg::Key(k.to_string()));
        self
    }
    fn fx(mut self, f: Fx) -> B {
        self.fx.push(f);
        self
    }
    fn build(self) -> Command {
        Command { args: self.args, fx: self.fx }
    }
}

/// The generator's state for one case.
struct Gen<'a, R: RngCore> {
    rng: &'a mut R,
    private: bool,
    keys: Vec<(String, Family)>,
    model: Model,
    /// Digests loaded in this case, for EVALSHA.
    loaded: Vec<String>,
    /// The limiter scripts' `now`: moves mostly forward, sometimes back (clock skew).
    now: u64,
    /// A MULTI was sent and no EXEC or DISCARD since (the next commands are queued).
    in_multi: bool,
    /// The last key WATCHed (with its family), until the next EXEC or DISCARD: commands pick it more
    /// often, so that watched keys do get touched (or left alone) before EXEC.
    watched: Option<(String, Family)>,
    /// The next command is one of the watched key's family, on the watched key.
    touch_next: bool,
    /// [`Gen::key`] answers the watched key (for the command after a WATCH).
    force_watched: bool,
}

/// One random case. `private`: the server is ours, flushed before every case (DBSIZE, SCAN,
/// FLUSHALL and SCRIPT FLUSH become fair game).
pub fn case<R: RngCore>(rng: &mut R, private: bool) -> Case {
    let n = match rng.random_range(0..10) {
        0 => 1,
        1..=3 => rng.random_range(2..6),
        _ => rng.random_range(6..=MAX_COMMANDS),
    };
    let mut keys: Vec<(String, Family)> = (1..=4)
        .map(|i| {
            let f = FAMILIES[rng.random_range(0..FAMILIES.len())];
            (format!("k{i}"), f)
        })
        .collect();
    keys.push(("rate:{u1}".into(), Family::Limiter));
    keys.push(("rate:{u2}".into(), Family::Limiter));
    let now = match rng.random_range(0..4) {
        0 => rng.random_range(0..1_000_000),
        1 => 999_999_999_000_000 + rng.random_range(0..999_999),
        _ => 1_704_067_200_000 + rng.random_range(0..86_400_000),
    };
    let mut g = Gen {
        rng,
        private,
        keys,
        model: Model::new(private),
        loaded: Vec::new(),
        now,
        in_multi: false,
        watched: None,
        touch_next: false,
        force_watched: false,
    };
    let mut commands = Vec::with_capacity(n);
    let mut tries = 0;
    while commands.len() < n && tries < n * 20 {
        tries += 1;
        let mut c = g.command();
        if g.rng.random_range(0..20) == 0 {
            g.mangle(&mut c);
        }
        // Inside EXEC a string that an earlier command of the transaction stored from its own
        // arguments (SET, GETSET, INCRBYFLOAT, ...) is also held by the queued command: Redis's
        // OBJECT REFCOUNT reads 2 until EXEC ends. The emulator does not model the queue's references.
        if g.in_multi && c.args.len() > 1 && c.name() == "object" && c.args[1] == Arg::Lit(b"REFCOUNT".to_vec()) {
            continue;
        }
        if g.model.allows(&c.fx) {
            g.model.apply(&c.fx);
            commands.push(c);
        }
    }
    Case { commands }
}

impl<R: RngCore> Gen<'_, R> {
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.rng.random_range(0..xs.len())]
    }

    fn chance(&mut self, percent: u32) -> bool {
        self.rng.random_range(0..100) < percent
    }

    /// A key that leans towards `f` (85%), or any key.
    fn key(&mut self, f: Family) -> String {
        if let Some((k, wf)) = &self.watched {
            if *wf == f && (self.force_watched || self.rng.random_range(0..100) < 40) {
                return k.clone();
            }
        }
        let matching: Vec<&String> = self.keys.iter().filter(|(_, kf)| *kf == f).map(|(k, _)| k).collect();
        if !matching.is_empty() && self.rng.random_range(0..100) < 85 {
            return matching[self.rng.random_range(0..matching.len())].clone();
        }
        self.keys[self.rng.random_range(0..self.keys.len())].0.clone()
    }

    fn value(&mut self) -> Vec<u8> {
        if self.chance(15) {
            return self.rng.random_range(-1000i64..100_000).to_string().into_bytes();
        }
        self.pick(VALUES).to_vec()
    }

    fn short(&mut self) -> String {
        if self.chance(15) {
            return self.rng.random_range(-1000i64..1000).to_string();
        }
        self.pick(SHORT).to_string()
    }

    fn int(&mut self) -> String {
        if self.chance(25) {
            return self.rng.random_range(-20i64..20).to_string();
        }
        self.pick(INTS).to_string()
    }

    fn member(&mut self) -> String {
        if self.chance(20) {
            return format!("m{}", self.rng.random_range(0..40));
        }
        self.pick(MEMBERS).to_string()
    }

    fn score(&mut self) -> String {
        if self.chance(30) {
            return self.rng.random_range(-5i64..20).to_string();
        }
        self.pick(SCORES).to_string()
    }

    fn index(&mut self) -> String {
        if self.chance(30) {
            return self.rng.random_range(-6i64..8).to_string();
        }
        self.pick(INDEXES).to_string()
    }

    /// Drops the last argument or adds one at the end, for arity and syntax errors. Nothing moves:
    /// a literal shifted into a key's place would be a key outside the case's prefix (on a shared
    /// server, someone else's). The added argument is sent behind the prefix for the same reason
    /// (it may land where a key is read: `DEL k1 x`). A mangled command may no longer load its
    /// script, so it loses its [`Fx::Load`]; every other effect is a "may", which stays true.
    fn mangle(&mut self, c: &mut Command) {
        // COMMAND INFO or DOCS without a name describes every command: Redis's are more than the
        // emulator's.
        if c.name() == "command" {
            return;
        }
        c.fx.retain(|f| !matches!(f, Fx::Load(_)));
        // `DISCARD x` is refused and the transaction goes on (`EXEC x` does end it).
        if c.name() == "discard" {
            c.fx.retain(|f| !matches!(f, Fx::Transaction(false)));
        }
        if c.args.len() > 1 && self.chance(50) {
            c.args.pop();
        } else {
            let extra = self.pick(&["x", "1", "EX", "NX", "WITHSCORES", "LIMIT", "", "-1", "a\r\nb", ECHOED_LONG]);
            // Where the command's key spec puts a key (`DEL k1 x`, `MSET k1 v x`), the extra one is a
            // key too, under the case's prefix: a server reads it as a key, and on a shared server
            // every key a run names must be its own (an ACL user limited to `ll:*` would be refused).
            let at = c.args.len() as i32;
            let is_key = limitlab_emulator::cmd::lookup(c.name().as_bytes()).is_some_and(|spec| {
                let k = spec.keys;
                let last = if k.last < 0 { at + 1 + k.last } else { k.last };
                k.first > 0 && at >= k.first && at <= last && (at - k.first) % k.step.max(1) == 0
            });
            c.args.push(if is_key { Arg::Key(extra.to_string()) } else { Arg::Lit(extra.as_bytes().to_vec()) });
        }
    }

    fn command(&mut self) -> Command {
        // A transaction in progress ends now and then; transactions and WATCH come up in any case,
        // switches between databases on private servers only.
        if self.in_multi && self.chance(20) {
            return self.end_transaction();
        }
        // Right after a WATCH, often a command on the watched key: a write touches it (or, if it
        // changes nothing, may not), a read never does.
        if std::mem::take(&mut self.touch_next) && !self.in_multi && self.chance(60) {
            if let Some((_, f)) = self.watched.clone() {
                self.force_watched = true;
                let c = match f {
                    Family::String => self.string_cmd(),
                    Family::Hash => self.hash_cmd(),
                    Family::Zset => self.zset_cmd(),
                    Family::List => self.list_cmd(),
                    Family::Set => self.set_cmd(),
                    Family::Limiter => self.limiter_cmd(),
                    Family::Hll => self.hll_cmd(),
                    Family::Stream => self.stream_cmd(),
                };
                self.force_watched = false;
                return c;
            }
        }
        // After a WATCH, a transaction soon follows (a few commands in between may touch the keys).
        if !self.in_multi && self.watched.is_some() && self.chance(30) {
            self.in_multi = true;
            return B::new("MULTI").fx(Fx::Transaction(true)).build();
        }
        if self.chance(8) {
            return self.transaction_cmd();
        }
        if self.private && self.chance(5) {
            return self.database_cmd();
        }
        match self.rng.random_range(0..100) {
            0..=14 => self.string_cmd(),
            15..=25 => self.keys_cmd(),
            26..=34 => self.hash_cmd(),
            35..=45 => self.zset_cmd(),
            46..=53 => self.list_cmd(),
            54..=59 => self.set_cmd(),
            60..=63 => self.bits_cmd(),
            64..=65 => self.hll_cmd(),
            66..=68 => self.stream_cmd(),
            69..=71 => self.server_cmd(),
            72..=82 => self.snippet_cmd(),
            83..=88 if self.private => self.function_cmd(),
            _ => self.limiter_cmd(),
        }
    }

    // ---- TTL options -------------------------------------------------------------------------

    /// A `(option, value, kind)` for SET/GETEX-style expiry options.
    fn expiry_option(&mut self) -> (&'static str, String, TtlKind) {
        match self.rng.random_range(0..4) {
            0 => ("EX", self.pick(SECS).to_string(), TtlKind::Secs),
            1 => {
                let (v, kind) = self.rel_ms();
                ("PX", v, kind)
            }
            2 => ("EXAT", self.pick(ABS_SECS).to_string(), TtlKind::Abs),
            _ => ("PXAT", self.pick(ABS_MS).to_string(), TtlKind::Abs),
        }
    }

    fn rel_ms(&mut self) -> (String, TtlKind) {
        match self.rng.random_range(0..3) {
            0 => (self.pick(MS_SECS).to_string(), TtlKind::Secs),
            1 => (self.pick(MS_ODD).to_string(), TtlKind::Ms),
            _ => (self.pick(MS_OTHER).to_string(), TtlKind::Secs),
        }
    }

    // ---- families ----------------------------------------------------------------------------

    fn string_cmd(&mut self) -> Command {
        let k = self.key(Family::String);
        match self.rng.random_range(0..26) {
            0 | 1 => B::new("GET").key(&k).build(),
            2..=4 => {
                let v = self.value();
                let mut b = B::new("SET").key(&k).lit(v);
                let mut opts: Vec<Vec<u8>> = Vec::new();
                let mut fx = Vec::new();
                if self.chance(30) {
                    opts.push(self.pick(&[&b"NX"[..], b"XX", b"nx"]).to_vec());
                }
                if self.chance(20) {
                    opts.push(b"GET".to_vec());
                }
                if self.chance(50) {
                    if self.chance(15) {
                        opts.push(b"KEEPTTL".to_vec());
                    } else {
                        let (o, v, kind) = self.expiry_option();
                        opts.push(o.as_bytes().to_vec());
                        opts.push(v.into_bytes());
                        fx.push(Fx::Ttl(k.clone(), kind));
                    }
                }
                // Options in any order (pairs kept together), sometimes a conflicting extra.
                if opts.len() > 1 && self.chance(30) {
                    opts.swap(0, 1);
                }
                if self.chance(5) {
                    opts.push(self.pick(&[&b"NX"[..], b"KEEPTTL", b"EX", b"XX"]).to_vec());
                }
                for o in opts {
                    b = b.lit(o);
                }
                for f in fx {
                    b = b.fx(f);
                }
                b.build()
            }
            5 => B::new("SETNX").key(&k).lit(self.value()).build(),
            6 => {
                let s = self.pick(SECS);
                let v = self.value();
                B::new("SETEX").key(&k).lit(s).lit(v).fx(Fx::Ttl(k.clone(), TtlKind::Secs)).build()
            }
            7 => {
                let (ms, kind) = self.rel_ms();
                let v = self.value();
                B::new("PSETEX").key(&k).lit(ms).lit(v).fx(Fx::Ttl(k.clone(), kind)).build()
            }
            8 => {
                let mut b = B::new("GETEX").key(&k);
                if self.chance(70) {
                    if self.chance(20) {
                        b = b.lit("PERSIST");
                    } else {
                        let (o, v, kind) = self.expiry_option();
                        b = b.lit(o).lit(v).fx(Fx::Ttl(k.clone(), kind));
                    }
                }
                b.build()
            }
            9 => B::new("GETSET").key(&k).lit(self.value()).build(),
            10 => B::new("GETDEL").key(&k).build(),
            11 => {
                let mut b = B::new("MGET");
                for _ in 0..self.rng.random_range(1..4) {
                    let k = self.key(Family::String);
                    b = b.key(&k);
                }
                b.build()
            }
            12 | 13 => {
                let name = if self.chance(70) { "MSET" } else { "MSETNX" };
                let mut b = B::new(name);
                for _ in 0..self.rng.random_range(1..4) {
                    let k = self.key(Family::String);
                    let v = self.value();
                    b = b.key(&k).lit(v);
                }
                b.build()
            }
            14 => B::new("APPEND").key(&k).lit(self.value()).build(),
            15 => B::new("STRLEN").key(&k).build(),
            16 => {
                let name = if self.chance(80) { "GETRANGE" } else { "SUBSTR" };
                let (s, e) = (self.index(), self.index());
                B::new(name).key(&k).lit(s).lit(e).build()
            }
            17 => {
                let off = self.pick(&["0", "1", "3", "10", "100", "-1", "x", "536870912", "1000000000"]);
                let v = self.value();
                B::new("SETRANGE").key(&k).lit(off).lit(v).build()
            }
            18 => {
                let k2 = self.key(Family::String);
                let mut b = B::new("LCS").key(&k).key(&k2);
                if self.chance(30) {
                    b = b.lit("LEN");
                }
                if self.chance(40) {
                    b = b.lit("IDX");
                    if self.chance(50) {
                        let n = self.pick(&["0", "1", "2", "3", "-1", "x"]);
                        b = b.lit("MINMATCHLEN").lit(n);
                    }
                    if self.chance(50) {
                        b = b.lit("WITHMATCHLEN");
                    }
                }
                b.build()
            }
            19 | 20 => B::new(self.pick(&["INCR", "DECR"])).key(&k).build(),
            21 | 22 => {
                let name = self.pick(&["INCRBY", "DECRBY"]);
                let n = if self.chance(50) { self.pick(INCRS).to_string() } else { self.int() };
                B::new(name).key(&k).lit(n).build()
            }
            23 | 24 => {
                let f = self.pick(FLOATS);
                B::new("INCRBYFLOAT").key(&k).lit(f).build()
            }
            _ => {
                // A string built by APPEND or SETRANGE keeps the raw encoding.
                let v = self.short();
                B::new("SET").key(&k).lit(v).build()
            }
        }
    }

    fn keys_cmd(&mut self) -> Command {
        let f = self.pick(&FAMILIES);
        let k = self.key(f);
        match self.rng.random_range(0..24) {
            0 | 1 => {
                let name = self.pick(&["DEL", "UNLINK", "EXISTS", "TOUCH"]);
                let mut b = B::new(name).key(&k);
                for _ in 0..self.rng.random_range(0..3) {
                    let k2 = self.key(f);
                    b = b.key(&k2);
                }
                b.build()
            }
            2 | 3 => {
                let (name, v, kind) = match self.rng.random_range(0..4) {
                    0 => ("EXPIRE", self.pick(SECS).to_string(), TtlKind::Secs),
                    1 => {
                        let (v, kind) = self.rel_ms();
                        ("PEXPIRE", v, kind)
                    }
                    2 => ("EXPIREAT", self.pick(ABS_SECS).to_string(), TtlKind::Abs),
                    _ => ("PEXPIREAT", self.pick(ABS_MS).to_string(), TtlKind::Abs),
                };
                let mut b = B::new(name).key(&k).lit(v).fx(Fx::Ttl(k.clone(), kind));
                let mut opts = Vec::new();
                if self.chance(35) {
                    opts.push(self.pick(&["NX", "XX", "GT", "LT", "gt", "NX XX", "a\r\nb", ECHOED_LONG]));
                    if self.chance(15) {
                        opts.push(self.pick(&["XX", "GT", "LT"]));
                    }
                }
                // GT and LT compare the new deadline with the key's: two deadlines relative to "now"
                // compare by how much time passed between them, so with a relative one the key may
                // only have had an absolute TTL (or none).
                if kind != TtlKind::Abs && opts.iter().any(|o| o.eq_ignore_ascii_case("gt") || o.eq_ignore_ascii_case("lt")) {
                    b = b.fx(Fx::ReadTtl(k.clone(), TtlRead::Abs));
                }
                for o in opts {
                    b = b.lit(o);
                }
                b.build()
            }
            4 => B::new("TTL").key(&k).fx(Fx::ReadTtl(k.clone(), TtlRead::Secs)).build(),
            5 => B::new("PTTL").key(&k).fx(Fx::ReadTtl(k.clone(), TtlRead::Ms)).build(),
            6 => {
                let name = self.pick(&["EXPIRETIME", "PEXPIRETIME"]);
                B::new(name).key(&k).fx(Fx::ReadTtl(k.clone(), TtlRead::Abs)).build()
            }
            7 => B::new("PERSIST").key(&k).build(),
            8 | 9 => B::new("TYPE").key(&k).build(),
            10 | 11 => {
                let name = self.pick(&["RENAME", "RENAMENX"]);
                let k2 = self.key(f);
                B::new(name).key(&k).key(&k2).fx(Fx::CopyTtl { src: k.clone(), dst: k2.clone() }).build()
            }
            12 => {
                let k2 = self.key(f);
                let mut b = B::new("COPY").key(&k).key(&k2).fx(Fx::CopyTtl { src: k.clone(), dst: k2.clone() });
                if self.chance(40) {
                    b = b.lit("REPLACE");
                }
                if self.chance(15) {
                    let db =
                        if self.private { self.pick(&["0", "1", "2", "3", "15", "16", "-1", "x"]) } else { self.pick(&["16", "-1", "x"]) };
                    b = b.lit("DB").lit(db);
                }
                b.build()
            }
            // KEYS walks the whole keyspace (other clients' keys too) and blocks the server meanwhile:
            // private servers only.
            13 | 14 if self.private => {
                let p = self.pick(PATTERNS);
                let mut b = B::new("KEYS");
                b.args.push(Arg::Pattern(p.to_string()));
                b.build()
            }
            15..=17 => {
                let sub = self.pick(&["ENCODING", "ENCODING", "ENCODING", "REFCOUNT", "FREQ", "encoding", "NOPE"]);
                let sub = if self.chance(10) { self.pick(BAD_NAMES) } else { sub };
                B::new("OBJECT").lit(sub).key(&k).build()
            }
            18 if self.chance(50) => B::new("OBJECT").lit(self.pick(&["HELP", "help"])).build(),
            // SORT and SORT_RO are `@dangerous` to ACLs (GET reads keys by name), which users
            // limited to their keys are often refused: private servers only.
            18 if self.private => self.sort_cmd(),
            20 | 21 => {
                let mut b = B::new("MEMORY").lit("USAGE").key(&k).fx(Fx::Measure(k.clone()));
                if self.chance(20) {
                    b = b.lit("SAMPLES").lit(self.pick(&["0", "1", "5", "-1", "x"]));
                }
                b.build()
            }
            19 if self.private => {
                let mut b = B::new("SCAN").lit("0");
                if self.chance(60) {
                    b.args.push(Arg::Lit(b"MATCH".to_vec()));
                    b.args.push(Arg::Pattern(self.pick(PATTERNS).to_string()));
                }
                b = b.lit("COUNT").lit("1000");
                if self.chance(30) {
                    b = b.lit("TYPE").lit(self.pick(&["string", "hash", "zset", "list", "set", "nosuch"]));
                }
                b.build()
            }
            _ => B::new("EXISTS").key(&k).build(),
        }
    }

    fn hash_cmd(&mut self) -> Command {
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

    fn zset_cmd(&mut self) -> Command {
        let k = self.key(Family::Zset);
        match self.rng.random_range(0..32) {
            0..=4 => {
                let mut b = B::new("ZADD").key(&k);
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
                    b = b.fx(Fx::Unmeasurable(k.clone()));
                } else {
                    for _ in 0..self.rng.random_range(1..4) {
                        let (s, m) = (self.score(), self.member());
                        b = b.lit(s).lit(m);
                    }
                    if self.chance(3) {
                        b = b.lit("1").lit("x".repeat(70)).fx(Fx::Unmeasurable(k.clone()));
                    }
                }
                b.build()
            }
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
            14..=17 => {
                let mut b = B::new("ZRANGE").key(&k);
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
                        b = b.fx(Fx::LexRange(k.clone()));
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

    /// ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE, ZUNION, ZINTER, ZDIFF and ZINTERCARD over two or three
    /// keys (sorted sets or sets), with WEIGHTS, AGGREGATE, WITHSCORES and LIMIT. A stored result
    /// may be a skiplist (from a big input).
    fn zset_algebra(&mut self, k: &str) -> Command {
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

    /// SORT and SORT_RO. Only ALPHA sorting: a numeric sort of a value out of a double's range
    /// leaves Redis's `errno` at ERANGE, which fails every later numeric SORT until something
    /// resets it (not modelled). `BY nosort` only with STORE (a set's own order is its hash
    /// table's, unless stored); no BY pattern (ALPHA ties by pattern are in qsort's order). SORT
    /// converts a sorted set to a skiplist.
    fn sort_cmd(&mut self) -> Command {
        let f = self.pick(&[Family::List, Family::Set, Family::Zset, Family::List]);
        let k = self.key(f);
        let ro = self.chance(25);
        let mut b = B::new(if ro { "SORT_RO" } else { "SORT" }).key(&k).fx(Fx::Unmeasurable(k.clone()));
        let store = !ro && self.chance(30) || ro && self.chance(5);
        if self.chance(95) {
            b = b.lit("ALPHA");
        }
        if self.chance(40) {
            b = b.lit(self.pick(&["DESC", "ASC", "desc"]));
        }
        if self.chance(30) {
            let (o, c) = (self.pick(&["0", "1", "2", "-1", "10", "x"]), self.pick(&["0", "1", "2", "-1", "5"]));
            b = b.lit("LIMIT").lit(o).lit(c);
        }
        if store && self.chance(40) {
            b = b.lit("BY").lit("nosort");
        }
        for _ in 0..self.rng.random_range(0..3) {
            b = b.lit("GET");
            if self.chance(50) {
                b = b.lit("#");
            } else {
                b.args.push(Arg::Pattern(self.pick(&["k*", "*", "k*->a", "nomatch*", "k"]).to_string()));
            }
        }
        if store {
            let dst = self.key(Family::List);
            b = b.lit("STORE").key(&dst);
        }
        b.build()
    }

    fn list_cmd(&mut self) -> Command {
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

    fn set_cmd(&mut self) -> Command {
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

    /// Bitmaps and bitfields on the string keys: offsets stay small (a valid offset near the 512 MB
    /// limit would make both servers allocate it), with the invalid ones around the limit.
    fn bits_cmd(&mut self) -> Command {
        const OFFSETS: &[&str] = &["0", "1", "7", "8", "15", "63", "64", "100", "-1", "x", "", "4294967296", "01"];
        const BIT_TYPES: &[&str] = &["u1", "u8", "i8", "u16", "i5", "u63", "i64", "u64", "i65", "x8", "u0", "U8"];
        const FIELD_OFFSETS: &[&str] = &["0", "3", "8", "#0", "#1", "#7", "100", "-1", "#-1", "x", "#"];
        const FIELD_VALUES: &[&str] =
            &["0", "1", "-1", "100", "127", "128", "255", "256", "-129", "9223372036854775807", "-9223372036854775808", "x", "1.5"];
        let k = self.key(Family::String);
        let offset = |g: &mut Self| -> String {
            if g.chance(60) {
                g.rng.random_range(0i64..200).to_string()
            } else {
                g.pick(OFFSETS).to_string()
            }
        };
        let range = |g: &mut Self, b: B| -> B {
            let b = b.lit(g.index()).lit(g.index());
            if g.chance(40) {
                b.lit(g.pick(&["BIT", "BYTE", "bit", "nope"]))
            } else {
                b
            }
        };
        match self.rng.random_range(0..14) {
            0..=2 => {
                let (o, v) = (offset(self), self.pick(&["0", "1", "1", "2", "-1", "x"]));
                B::new("SETBIT").key(&k).lit(o).lit(v).build()
            }
            3 | 4 => {
                let o = offset(self);
                B::new("GETBIT").key(&k).lit(o).build()
            }
            5 | 6 => {
                let b = B::new("BITCOUNT").key(&k);
                if self.chance(60) {
                    range(self, b).build()
                } else {
                    b.build()
                }
            }
            7 | 8 => {
                let bit = self.pick(&["0", "1", "1", "0", "2", "x"]);
                let mut b = B::new("BITPOS").key(&k).lit(bit);
                match self.rng.random_range(0..3) {
                    0 => {}
                    1 => b = b.lit(self.index()),
                    _ => b = range(self, b),
                }
                b.build()
            }
            9 => {
                let op = self.pick(&["AND", "OR", "XOR", "NOT", "not", "NOR"]);
                let dest = self.key(Family::String);
                let mut b = B::new("BITOP").lit(op).key(&dest);
                for _ in 0..self.rng.random_range(1..4) {
                    let src = self.key(Family::String);
                    b = b.key(&src);
                }
                b.build()
            }
            _ => {
                let ro = self.chance(25);
                let mut b = B::new(if ro { "BITFIELD_RO" } else { "BITFIELD" }).key(&k);
                for _ in 0..self.rng.random_range(1..5) {
                    let ty = if self.chance(70) {
                        let bits = self.rng.random_range(1..=16);
                        format!("{}{bits}", self.pick(&["u", "i"]))
                    } else {
                        self.pick(BIT_TYPES).to_string()
                    };
                    let off =
                        if self.chance(60) { self.rng.random_range(0i64..120).to_string() } else { self.pick(FIELD_OFFSETS).to_string() };
                    let val =
                        if self.chance(50) { self.rng.random_range(-300i64..300).to_string() } else { self.pick(FIELD_VALUES).to_string() };
                    b = match self.rng.random_range(0..10) {
                        0..=3 => b.lit("GET").lit(ty).lit(off),
                        4 | 5 => b.lit("SET").lit(ty).lit(off).lit(val),
                        6 | 7 => b.lit("INCRBY").lit(ty).lit(off).lit(val),
                        8 => b.lit("OVERFLOW").lit(self.pick(&["WRAP", "SAT", "FAIL", "fail", "nope"])),
                        _ => b.lit(self.pick(&["GET", "SET", "FOO", "OVERFLOW"])),
                    };
                }
                b.build()
            }
        }
    }

    /// HyperLogLogs: PFADD of a few elements from a pool (or a few hundred, past the sparse limit),
    /// PFCOUNT of one to three keys, PFMERGE, and GET of the representation itself.
    fn hll_cmd(&mut self) -> Command {
        let k = self.key(Family::Hll);
        let element = |g: &mut Self| -> String {
            if g.chance(50) {
                format!("e{}", g.rng.random_range(0..2000))
            } else {
                g.member()
            }
        };
        match self.rng.random_range(0..12) {
            0..=3 => {
                let mut b = B::new("PFADD").key(&k);
                let n = if self.chance(4) { self.rng.random_range(200..900) } else { self.rng.random_range(0..5) };
                let base = self.rng.random_range(0..10_000);
                for i in 0..n {
                    b = if n > 5 { b.lit(format!("x{}", base + i)) } else { b.lit(element(self)) };
                }
                b.build()
            }
            4..=6 => {
                let mut b = B::new("PFCOUNT").key(&k);
                for _ in 0..self.rng.random_range(0..3) {
                    let other = self.key(Family::Hll);
                    b = b.key(&other);
                }
                b.build()
            }
            7 | 8 => {
                let dest = self.key(Family::Hll);
                let mut b = B::new("PFMERGE").key(&dest);
                for _ in 0..self.rng.random_range(0..3) {
                    let src = self.key(Family::Hll);
                    b = b.key(&src);
                }
                b.build()
            }
            9 => B::new("GET").key(&k).build(),
            10 => B::new("STRLEN").key(&k).build(),
            _ => B::new("OBJECT").lit("ENCODING").key(&k).build(),
        }
    }

    /// Streams with explicit IDs (an automatic `*` ID reads the server's clock, which the emulator's
    /// does not follow) and `<ms>-*`, trimming exact and approximate, ranges and deletes. MEMORY USAGE
    /// of a stream is only estimated, so every write marks the key unmeasurable.
    fn stream_cmd(&mut self) -> Command {
        const IDS: &[&str] = &["-", "+", "0", "0-0", "1", "1-1", "5", "5-*", "18446744073709551615", "x", "1-x", "(1", "(5-1", "("];
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

    /// MULTI, WATCH, UNWATCH, and the errors around them (EXEC or DISCARD without MULTI, MULTI or
    /// WATCH inside one, a command refused while queueing).
    fn transaction_cmd(&mut self) -> Command {
        let watch = |g: &mut Self| {
            let mut b = B::new(if g.chance(90) { "WATCH" } else { "watch" });
            for _ in 0..g.rng.random_range(1..=3) {
                let f = g.pick(&FAMILIES);
                let k = g.key(f);
                b = b.key(&k);
                g.watched = Some((k, f));
            }
            g.touch_next = true;
            b.build()
        };
        if !self.in_multi {
            match self.rng.random_range(0..20) {
                0..=6 => {
                    self.in_multi = true;
                    B::new(self.pick(&["MULTI", "MULTI", "multi"])).fx(Fx::Transaction(true)).build()
                }
                7..=15 => watch(self),
                16 => B::new("UNWATCH").build(),
                17 => B::new("EXEC").fx(Fx::Transaction(false)).build(),
                18 => B::new("DISCARD").fx(Fx::Transaction(false)).build(),
                _ => B::new("WAIT").lit(self.pick(&["0", "x", "-1"])).lit(self.pick(&["0", "5", "x", "-1"])).build(),
            }
        } else {
            match self.rng.random_range(0..10) {
                0 | 1 => watch(self),
                2 => B::new("MULTI").fx(Fx::Transaction(true)).build(),
                3 | 4 => B::new("UNWATCH").build(),
                // Refused while queueing: the transaction will abort.
                5 => B::new(self.pick(&["NOSUCHCMD", "nosuch"])).build(),
                6 => B::new(self.pick(&["GET", "SET", "HSET", "ZADD", "INCR"])).build(),
                // Does not block inside a transaction.
                // (1 ms: should shrinking leave it out of its MULTI, it blocks for that long.)
                7 => B::new("WAIT").lit(self.pick(&["0", "1", "2"])).lit("1").build(),
                _ => self.end_transaction(),
            }
        }
    }

    /// EXEC (mostly) or DISCARD.
    fn end_transaction(&mut self) -> Command {
        self.in_multi = false;
        self.watched = None;
        B::new(self.pick(&["EXEC", "EXEC", "EXEC", "exec", "DISCARD"])).fx(Fx::Transaction(false)).build()
    }

    /// The databases, on a private server: SELECT, SWAPDB, MOVE, FLUSHDB, DBSIZE (COPY .. DB n is
    /// with the key commands). Mostly databases 0 to 3, so that keys meet again.
    fn database_cmd(&mut self) -> Command {
        const DBS: &[&str] = &["0", "0", "1", "2", "3", "15"];
        const BAD_DBS: &[&str] = &["16", "-1", "x", "4294967296"];
        let db = |g: &mut Self| if g.chance(90) { g.pick(DBS) } else { g.pick(BAD_DBS) };
        match self.rng.random_range(0..12) {
            0..=3 => {
                let d = db(self);
                B::new("SELECT").lit(d).build()
            }
            4 | 5 => {
                let (a, b) = (db(self), db(self));
                B::new("SWAPDB").lit(a).lit(b).build()
            }
            6..=8 => {
                let f = self.pick(&FAMILIES);
                let k = self.key(f);
                let d = db(self);
                // (The model's TTL kinds are per key name, whatever the database: nothing to add.)
                B::new("MOVE").key(&k).lit(d).build()
            }
            9 if self.chance(40) => B::new("FLUSHDB").build(),
            _ => B::new("DBSIZE").fx(Fx::CountKeys).build(),
        }
    }

    fn server_cmd(&mut self) -> Command {
        if self.chance(35) {
            return self.client_server_cmd();
        }
        match self.rng.random_range(0..11) {
            10 => {
                // Unknown to Redis and to the emulator: the error echoes name and arguments.
                let mut b = B::new(self.pick(&["NOSUCHCMD", "no\nsuch", ECHOED_LONG]));
                for _ in 0..self.rng.random_range(0..3) {
                    b = b.lit(self.pick(BAD_NAMES));
                }
                b.build()
            }
            0 => B::new("PING").build(),
            1 => B::new("PING").lit(self.value()).build(),
            2 => B::new("ECHO").lit(self.value()).build(),
            // SELECT 0 (or COPY .. DB 0) on a server whose URL names another database would move
            // the session out of the database the cleanup looks at: shared servers only get
            // indexes that fail.
            3 => {
                let db = if self.private {
                    self.pick(&["0", "0", "1", "2", "15", "16", "-1", "x", "99999999999"])
                } else {
                    self.pick(&["16", "-1", "x", "99999999999"])
                };
                B::new("SELECT").lit(db).build()
            }
            4 | 5 if self.private => B::new("DBSIZE").fx(Fx::CountKeys).build(),
            6 if self.private && self.chance(30) => {
                let mut b = B::new(self.pick(&["FLUSHALL", "FLUSHDB"]));
                if self.chance(40) {
                    b = b.lit(self.pick(&["SYNC", "ASYNC", "x"]));
                }
                b.build()
            }
            7 => {
                let sub = self.pick(&["KILL", "HELP", "nope", "LOAD", "EXISTS", "DEBUG", "a\nb", ECHOED_LONG]);
                B::new("SCRIPT").lit(sub).build()
            }
            8 if self.private && self.chance(30) => {
                let mut b = B::new("SCRIPT").lit("FLUSH").fx(Fx::Unload);
                if self.chance(30) {
                    b = b.lit(self.pick(&["SYNC", "ASYNC", "x"]));
                }
                b.build()
            }
            _ => {
                let mut b = B::new("SCRIPT").lit("EXISTS");
                for _ in 0..self.rng.random_range(1..3) {
                    let sha = if !self.loaded.is_empty() && self.chance(60) { self.pick_loaded() } else { JUNK_SHA.to_string() };
                    if sha != JUNK_SHA {
                        b = b.fx(Fx::NeedLoaded(sha.clone()));
                    }
                    b = b.lit(sha);
                }
                b.build()
            }
        }
    }

    /// What clients send around their scripts: PUBLISH, CONFIG GET of one parameter, CLIENT
    /// SETNAME/GETNAME/NO-EVICT/HELP, COMMAND INFO and DOCS of commands without subcommands (a
    /// container's subcommands come in Redis's hash order), and their errors.
    ///
    /// On a shared server only what stays within the run's own connection and keys: no PUBLISH
    /// (other clients' subscribers would get it), no CONFIG and no CLIENT NO-EVICT (server
    /// settings; an ACL user without `@dangerous` is refused them).
    fn client_server_cmd(&mut self) -> Command {
        let pick = if self.private { self.rng.random_range(0..8) } else { self.pick(&[2, 3, 5, 6]) };
        match pick {
            0 => {
                let mut b = B::new("PUBLISH").lit(self.pick(&["ch", "rate:events"]));
                if self.chance(90) {
                    b = b.lit(self.value());
                }
                b.build()
            }
            1 => {
                let p = self.pick(&[
                    "maxmemory",
                    "maxmemory-policy",
                    "lua-time-limit",
                    "busy-reply-threshold",
                    "databases",
                    "cluster-enabled",
                    "MAXMEMORY",
                    "maxmemory-p*",
                    "databas?s",
                    "nosuch",
                    "hash-max-ziplist-entries",
                ]);
                B::new("CONFIG").lit("GET").lit(p).build()
            }
            2 => {
                let name = self.pick(&["limiter", "", "a b", "app-1", "x"]);
                B::new("CLIENT").lit("SETNAME").lit(name).build()
            }
            3 => B::new("CLIENT").lit(self.pick(&["GETNAME", "getname", "HELP", "NOPE", "SETINFO"])).build(),
            4 => B::new("CLIENT").lit("NO-EVICT").lit(self.pick(&["on", "OFF", "maybe"])).build(),
            5 | 6 => {
                let sub = self.pick(&["INFO", "DOCS", "info"]);
                let name =
                    self.pick(&["get", "set", "incrby", "pexpire", "zadd", "lpos", "sort", "zunionstore", "publish", "nosuch", "hmget"]);
                B::new("COMMAND").lit(sub).lit(name).build()
            }
            _ => B::new("CONFIG").lit(self.pick(&["HELP", "REWRITE", "NOPE", "GET"])).build(),
        }
    }

    /// Redis 7 functions (private servers only: libraries are global, not under the case's prefix):
    /// FUNCTION LOAD [REPLACE] of a few libraries (some that fail to load or clash), FCALL and
    /// FCALL_RO of their functions, LIST of one library, STATS, DELETE, FLUSH, RESTORE of a bad
    /// payload. Every library registers one function, so no reply depends on Redis's dict order.
    fn function_cmd(&mut self) -> Command {
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

    fn pick_loaded(&mut self) -> String {
        let i = self.rng.random_range(0..self.loaded.len());
        self.loaded[i].clone()
    }

    /// EVAL / EVAL_RO / EVALSHA of `body` with these keys and arguments; SCRIPT LOAD sometimes.
    fn script_call(&mut self, body: &str, compiles: bool, keys: &[String], argv: Vec<Vec<u8>>) -> Command {
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

    fn snippet_cmd(&mut self) -> Command {
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
    fn limiter_cmd(&mut self) -> Command {
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
    fn window(&mut self) -> u64 {
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
    fn limit(&mut self, v: Variant, window: u64) -> u64 {
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
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn cases_are_deterministic_and_safe() {
        for seed in 0..200u64 {
            let a = case(&mut ChaCha8Rng::seed_from_u64(seed), false);
            let b = case(&mut ChaCha8Rng::seed_from_u64(seed), false);
            assert_eq!(a.commands, b.commands, "seed {seed}");
            assert!(!a.commands.is_empty() && a.commands.len() <= MAX_COMMANDS);
            assert!(Model::check(false, a.commands.iter().map(|c| c.fx.as_slice())), "seed {seed}");
            for c in &a.commands {
                let name = c.name();
                assert!(!["flushall", "flushdb", "dbsize", "scan", "time", "randomkey", "swapdb", "move"].contains(&name.as_str()));
            }
        }
    }

    /// On a shared server nothing reaches past the run's keys and connection: no PUBLISH (in a
    /// script either), no CONFIG, no CLIENT NO-EVICT, no SORT. (What
    /// an ACL user limited to `~ll:*`, no channels and no `@dangerous` may run; tests/security.)
    #[test]
    fn shared_cases_stay_within_their_keys() {
        for seed in 0..3000u64 {
            for c in case(&mut ChaCha8Rng::seed_from_u64(seed), false).commands {
                let line = c.line().to_ascii_lowercase();
                let name = c.name();
                assert!(!["publish", "config", "sort", "sort_ro"].contains(&name.as_str()) && !line.contains("'publish'"), "{line}");
                assert!(!(name == "client" && line.contains("no-evict")), "{line}");
            }
        }
    }

    /// Every argument Redis reads as a key is one of the case's keys (sent behind its prefix), so
    /// a run on a shared server never touches a key of someone else's.
    #[test]
    fn keys_are_only_ever_the_cases_own() {
        use limitlab_emulator::cmd::{self, flags};
        for seed in 0..3000u64 {
            for private in [false, true] {
                for c in case(&mut ChaCha8Rng::seed_from_u64(seed), private).commands {
                    let args = c.materialise("P:");
                    let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                    let Some(spec) = cmd::lookup(refs[0]) else { continue };
                    let mut key_at: Vec<usize> = Vec::new();
                    if spec.has(flags::SCRIPTING) {
                        if spec.name.starts_with("eval") && refs.len() >= 3 {
                            // (More keys than arguments is refused before anything runs.)
                            if let Some(n) = std::str::from_utf8(refs[2]).ok().and_then(|s| s.parse::<usize>().ok()) {
                                if 3 + n <= refs.len() {
                                    key_at.extend(3..3 + n);
                                }
                            }
                        }
                    } else if spec.arity_ok(refs.len())
                        && !(spec.keys.step == 2 && refs.len() % 2 == 0)
                        && !(spec.name == "object" && refs[1].eq_ignore_ascii_case(b"help"))
                    {
                        // (OBJECT HELP takes no key.)
                        // (MSET with a key and no value is an arity error before any key is read.)
                        let keys = spec.keys.keys(&refs);
                        for (i, a) in refs.iter().enumerate().skip(1) {
                            if keys.iter().any(|k| std::ptr::eq(k.as_ptr(), a.as_ptr())) {
                                key_at.push(i);
                            }
                        }
                    }
                    for i in key_at {
                        assert!(matches!(c.args[i], Arg::Key(_)), "seed {seed}: argument {i} of `{}` is read as a key", c.line());
                    }
                }
            }
        }
    }

    /// The CI-sized run sees transactions of every outcome, and database switches.
    #[test]
    fn transactions_of_every_outcome_come_up() {
        use limitlab_emulator::{Emulator, Reply};
        let (mut ran, mut watch_aborted, mut exec_aborted, mut moved) = (0, 0, 0, 0);
        for i in 0..2000u64 {
            let case = crate::verify::case_of(20240101, i, true);
            let mut emu = Emulator::new();
            for c in &case.commands {
                let args = c.materialise("");
                let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                let r = emu.execute(&refs);
                match (c.name().as_str(), &r) {
                    ("exec", Reply::Array(_)) => ran += 1,
                    ("exec", Reply::NilArray) => watch_aborted += 1,
                    ("exec", Reply::Error(e)) if e.starts_with("EXECABORT") => exec_aborted += 1,
                    ("select" | "swapdb" | "move", r) if !r.is_error() => moved += 1,
                    _ => {}
                }
            }
        }
        println!("EXEC ran {ran}, aborted by WATCH {watch_aborted}, by EXECABORT {exec_aborted}; database switches {moved}");
        assert!(ran > 200 && watch_aborted > 20 && exec_aborted > 20 && moved > 200);
    }

    #[test]
    fn every_snippet_is_marked_right() {
        let mut emu = limitlab_emulator::Emulator::new();
        for s in SNIPPETS {
            let ok = emu.script_load(s.body.as_bytes()).is_ok();
            assert_eq!(ok, s.compiles, "{}", s.body);
        }
    }
}
