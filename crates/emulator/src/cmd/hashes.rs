//! Hash commands (HSET, HGET, HINCRBY, HGETALL, ...) with Redis 7.0's replies, check order and error texts.
//!
//! Small hashes keep insertion order, as Redis's listpack encoding does, so HGETALL/HKEYS/HVALS of a
//! hash with at most 512 short fields come out exactly as Redis sends them.
use crate::command_spec::flags::*;
use crate::command_spec::{arg_i64, CommandSpec, KeySpec, NOT_FLOAT};
use crate::core::Core;
use crate::keyspace::{parse_canonical_i64, Hash, Value};
use crate::longdouble::{self, IncrFloatError};
use crate::reply::{Reply, ReplySink};
use crate::tri;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "hget", arity: 3, flags: READONLY, keys: KeySpec::ONE, handler: hget },
    CommandSpec { name: "hset", arity: -4, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: hset },
    CommandSpec { name: "hmset", arity: -4, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: hmset },
    CommandSpec { name: "hsetnx", arity: 4, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: hsetnx },
    CommandSpec { name: "hmget", arity: -3, flags: READONLY, keys: KeySpec::ONE, handler: hmget },
    CommandSpec { name: "hincrby", arity: 4, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: hincrby },
    CommandSpec { name: "hincrbyfloat", arity: 4, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: hincrbyfloat },
    CommandSpec { name: "hgetall", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: hgetall },
    CommandSpec { name: "hkeys", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: hkeys },
    CommandSpec { name: "hvals", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: hvals },
    CommandSpec { name: "hdel", arity: -3, flags: WRITE, keys: KeySpec::ONE, handler: hdel },
    CommandSpec { name: "hlen", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: hlen },
    CommandSpec { name: "hexists", arity: 3, flags: READONLY, keys: KeySpec::ONE, handler: hexists },
    CommandSpec { name: "hstrlen", arity: 3, flags: READONLY, keys: KeySpec::ONE, handler: hstrlen },
    CommandSpec { name: "hrandfield", arity: -2, flags: READONLY, keys: KeySpec::ONE, handler: hrandfield },
];

/// HRANDFIELD key [count [WITHVALUES]] (`hrandfieldCommand`): the arguments are checked before the
/// key; a negative count may repeat fields; WITHVALUES nests `[field, value]` pairs under RESP3.
fn hrandfield(core: &mut Core, a: &[&[u8]]) -> Reply {
    let args = tri!(super::sets::rand_with_args(a, "withvalues"));
    let resp3 = core.resp3;
    super::sets::with_rng(core, |core, rng| {
        let h = match hash_of(core, a[1]) {
            Err(e) => return e,
            Ok(None) if args.is_none() => return Reply::Nil,
            Ok(None) => return Reply::Array(Vec::new()),
            Ok(Some(h)) => h,
        };
        let Some((count, with)) = args else {
            return Reply::Bulk(h.fields[rng.below(h.len())].0.to_vec());
        };
        if count == 0 {
            return Reply::Array(Vec::new());
        }
        let picks = super::sets::rand_positions(rng, h.len(), count);
        let mut out = Vec::with_capacity(picks.len() * (1 + with as usize));
        for i in picks {
            let (f, v) = &h.fields[i];
            let f = Reply::Bulk(f.to_vec());
            match (with, resp3) {
                (false, _) => out.push(f),
                (true, false) => out.extend([f, Reply::Bulk(v.to_vec())]),
                (true, true) => out.push(Reply::Array(vec![f, Reply::Bulk(v.to_vec())])),
            }
        }
        Reply::Array(out)
    })
}

fn pick_hash(v: &mut Value) -> Option<&mut Hash> {
    match v {
        Value::Hash(h) => Some(h),
        _ => None,
    }
}

/// The hash under `key`: `Ok(None)` when missing, WRONGTYPE for another type.
fn hash_of<'a>(core: &'a mut Core, key: &[u8]) -> Result<Option<&'a mut Hash>, Reply> {
    let now = core.now_ms();
    core.db.typed(key, now, pick_hash).map_err(Reply::err)
}

fn hget(core: &mut Core, a: &[&[u8]]) -> Reply {
    match tri!(hash_of(core, a[1])).and_then(|h| h.get(a[2])) {
        Some(v) => Reply::Bulk(v.to_vec()),
        None => Reply::Nil,
    }
}

/// Writes the field/value pairs `a[2..]` into the hash at `a[1]` (created if missing); returns how
/// many fields were new. The caller has checked the pair count.
fn set_pairs(core: &mut Core, a: &[&[u8]]) -> Result<i64, Reply> {
    let mut created = 0;
    let pairs = a[2..].chunks_exact(2);
    match hash_of(core, a[1])? {
        Some(h) => {
            for p in pairs {
                created += h.set_bytes(p[0], p[1]) as i64;
            }
        }
        None => {
            let mut h = Hash::default();
            for p in pairs {
                created += h.set_bytes(p[0], p[1]) as i64;
            }
            core.db.set(a[1], Value::Hash(h), None);
        }
    }
    Ok(created)
}

/// HSET and HMSET check the pair count before the key's type (`addReplyErrorArity`).
fn hset(core: &mut Core, a: &[&[u8]]) -> Reply {
    if a.len() % 2 == 1 {
        return super::arity_error("hset");
    }
    let added = tri!(set_pairs(core, a));
    core.touch(a[1]);
    Reply::Int(added)
}

fn hmset(core: &mut Core, a: &[&[u8]]) -> Reply {
    if a.len() % 2 == 1 {
        return super::arity_error("hmset");
    }
    tri!(set_pairs(core, a));
    core.touch(a[1]);
    Reply::ok()
}

fn hsetnx(core: &mut Core, a: &[&[u8]]) -> Reply {
    match tri!(hash_of(core, a[1])) {
        Some(h) => {
            if h.get(a[2]).is_some() {
                return Reply::Int(0);
            }
            h.set(a[2], a[3].to_vec());
        }
        None => {
            let mut h = Hash::default();
            h.set(a[2], a[3].to_vec());
            core.db.set(a[1], Value::Hash(h), None);
        }
    }
    Reply::Int(1)
}

fn hmget(core: &mut Core, a: &[&[u8]]) -> Reply {
    let mut out = None;
    hmget_to(core, a, &mut out);
    out.expect("hmget_to writes a reply")
}

/// HMGET through a [`ReplySink`] (`redis.call` pushes the values straight onto the Lua stack).
pub(super) fn hmget_to(core: &mut Core, a: &[&[u8]], out: &mut dyn ReplySink) {
    let fields = &a[2..];
    match hash_of(core, a[1]) {
        Err(e) => out.reply(e),
        Ok(h) => out.bulks(fields.len(), &mut fields.iter().map(|f| h.as_ref().and_then(|h| h.get(f)))),
    }
}

/// HINCRBY: the increment is parsed before the key's type is checked; a stored value must be a
/// canonical integer.
fn hincrby(core: &mut Core, a: &[&[u8]]) -> Reply {
    let incr = tri!(arg_i64(a[3]));
    let field = a[2];
    match tri!(hash_of(core, a[1])) {
        Some(h) => {
            let cur = match h.get(field) {
                None => 0,
                Some(v) => match parse_canonical_i64(v) {
                    Some(i) => i,
                    None => return Reply::err("ERR hash value is not an integer"),
                },
            };
            let Some(n) = cur.checked_add(incr) else {
                return Reply::err("ERR increment or decrement would overflow");
            };
            h.set_int(field, n);
            // Touched even by an increment of 0.
            core.touch(a[1]);
            Reply::Int(n)
        }
        None => {
            let mut h = Hash::default();
            h.set_int(field, incr);
            core.db.set(a[1], Value::Hash(h), None);
            core.touch(a[1]);
            Reply::Int(incr)
        }
    }
}

const INCR_NOT_FINITE: &str = "ERR value is NaN or Infinity";

/// HINCRBYFLOAT, in Redis 7.0's order: the increment must parse as a long double ("not a valid
/// float") and be finite ("NaN or Infinity") before the key's type is looked at; then the stored
/// value must parse ("hash value is not a float") and the sum be finite. The arithmetic and the
/// printing are C `long double`'s, as in Redis (see [`longdouble`]).
fn hincrbyfloat(core: &mut Core, a: &[&[u8]]) -> Reply {
    let reply = hincrbyfloat_body(core, a);
    if !reply.is_error() {
        core.touch(a[1]);
    }
    reply
}

fn hincrbyfloat_body(core: &mut Core, a: &[&[u8]]) -> Reply {
    let (field, incr) = (a[2], a[3]);
    if !longdouble::is_valid_float(incr) {
        return Reply::err(NOT_FLOAT);
    }
    if is_inf_literal(incr) {
        return Reply::err(INCR_NOT_FINITE);
    }
    let hash = tri!(hash_of(core, a[1]));
    let cur: &[u8] = match &hash {
        Some(h) => h.get(field).map_or(b"0", |v| v),
        None => b"0",
    };
    let new = match longdouble::incr_by_float_checked(cur, incr) {
        Ok(v) => v,
        Err(IncrFloatError::BadCurrent) => return Reply::err(longdouble::HASH_NOT_FLOAT),
        Err(IncrFloatError::BadIncr) => return Reply::err(NOT_FLOAT),
        Err(IncrFloatError::NanOrInf) => return Reply::err(longdouble::NAN_OR_INF),
    };
    let reply = Reply::Bulk(new.clone());
    match hash {
        Some(h) => {
            h.set(field, new);
        }
        None => {
            let mut h = Hash::default();
            h.set(field, new);
            core.db.set(a[1], Value::Hash(h), None);
        }
    }
    reply
}

/// For an increment `string2ld` accepted: true when it is infinite. Only `[+-]inf` and
/// `[+-]infinity` (any case) qualify, since an overflowing literal such as `1e5000` is refused as
/// not a float; like `strtold`, the text ends at an embedded NUL.
fn is_inf_literal(b: &[u8]) -> bool {
    let b = b.split(|&c| c == 0).next().unwrap_or(b);
    let t = match b.first() {
        Some(b'+') | Some(b'-') => &b[1..],
        _ => b,
    };
    t.eq_ignore_ascii_case(b"inf") || t.eq_ignore_ascii_case(b"infinity")
}

/// Replies with the whole hash (HGETALL as a map, HKEYS/HVALS as arrays), in the hash's order.
fn hgetall(core: &mut Core, a: &[&[u8]]) -> Reply {
    match tri!(hash_of(core, a[1])) {
        None => Reply::Map(Vec::new()),
        Some(h) => {
            Reply::Map(h.fields.iter().map(|(f, v)| (Reply::Bulk(f.to_vec()), Reply::Bulk(v.to_vec()))).collect())
        }
    }
}

fn hkeys(core: &mut Core, a: &[&[u8]]) -> Reply {
    match tri!(hash_of(core, a[1])) {
        None => Reply::Array(Vec::new()),
        Some(h) => Reply::Array(h.fields.iter().map(|(f, _)| Reply::Bulk(f.to_vec())).collect()),
    }
}

fn hvals(core: &mut Core, a: &[&[u8]]) -> Reply {
    match tri!(hash_of(core, a[1])) {
        None => Reply::Array(Vec::new()),
        Some(h) => Reply::Array(h.fields.iter().map(|(_, v)| Reply::Bulk(v.to_vec())).collect()),
    }
}

/// HDEL removes fields one by one (each O(1) for a big hash) and deletes the key once empty.
fn hdel(core: &mut Core, a: &[&[u8]]) -> Reply {
    let Some(h) = tri!(hash_of(core, a[1])) else { return Reply::Int(0) };
    let mut deleted = 0;
    for f in &a[2..] {
        if h.remove(f) {
            deleted += 1;
            if h.is_empty() {
                break;
            }
        }
    }
    if h.is_empty() {
        let now = core.now_ms();
        core.db.remove(a[1], now);
    }
    Reply::Int(deleted)
}

fn hlen(core: &mut Core, a: &[&[u8]]) -> Reply {
    Reply::Int(tri!(hash_of(core, a[1])).map_or(0, |h| h.len() as i64))
}

fn hexists(core: &mut Core, a: &[&[u8]]) -> Reply {
    Reply::Int(tri!(hash_of(core, a[1])).is_some_and(|h| h.get(a[2]).is_some()) as i64)
}

fn hstrlen(core: &mut Core, a: &[&[u8]]) -> Reply {
    Reply::Int(tri!(hash_of(core, a[1])).and_then(|h| h.get(a[2])).map_or(0, |v| v.len() as i64))
}

#[cfg(test)]
mod tests {
    use crate::{Emulator, Reply};

    fn run(e: &mut Emulator, line: &str) -> Reply {
        let args: Vec<&[u8]> = line.split(' ').map(|s| s.as_bytes()).collect();
        e.execute(&args).into_resp2()
    }
    fn bulks(v: &[&str]) -> Reply {
        Reply::Array(v.iter().map(|s| Reply::Bulk(s.as_bytes().to_vec())).collect())
    }
    fn err(s: &str) -> Reply {
        Reply::Error(s.into())
    }
    const WT: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

    #[test]
    fn set_get_and_order() {
        let mut e = Emulator::new();
        assert_eq!(run(&mut e, "HSET h a 1 b 2 c 3"), Reply::Int(3));
        assert_eq!(run(&mut e, "HSET h b 20 d 4"), Reply::Int(1));
        assert_eq!(run(&mut e, "HGETALL h"), bulks(&["a", "1", "b", "20", "c", "3", "d", "4"]));
        assert_eq!(run(&mut e, "HDEL h a zz c"), Reply::Int(2));
        assert_eq!(run(&mut e, "HKEYS h"), bulks(&["b", "d"]));
        assert_eq!(run(&mut e, "HVALS h"), bulks(&["20", "4"]));
        assert_eq!(run(&mut e, "HMSET h e 5"), Reply::ok());
        assert_eq!(run(&mut e, "HSETNX h e 6"), Reply::Int(0));
        assert_eq!(run(&mut e, "HSETNX h f 6"), Reply::Int(1));
        assert_eq!(run(&mut e, "HMGET h b x f"), Reply::Array(vec![Reply::bulk("20"), Reply::Nil, Reply::bulk("6")]));
        assert_eq!(run(&mut e, "HMGET nokey a b"), Reply::Array(vec![Reply::Nil, Reply::Nil]));
        assert_eq!(run(&mut e, "HLEN h"), Reply::Int(4));
        assert_eq!(run(&mut e, "HEXISTS h f"), Reply::Int(1));
        assert_eq!(run(&mut e, "HEXISTS h a"), Reply::Int(0));
        assert_eq!(run(&mut e, "HGET h a"), Reply::Nil);
        assert_eq!(run(&mut e, "HSTRLEN h b"), Reply::Int(2));
        assert_eq!(run(&mut e, "HDEL h b d e f"), Reply::Int(4));
        assert_eq!(run(&mut e, "EXISTS h"), Reply::Int(0));
        assert_eq!(run(&mut e, "HGETALL h"), Reply::Array(vec![]));
    }

    #[test]
    fn errors() {
        let mut e = Emulator::new();
        run(&mut e, "SET s v");
        assert_eq!(run(&mut e, "HSET h a"), err("ERR wrong number of arguments for 'hset' command"));
        assert_eq!(run(&mut e, "HSET h a 1 b"), err("ERR wrong number of arguments for 'hset' command"));
        assert_eq!(run(&mut e, "HMSET h a 1 b"), err("ERR wrong number of arguments for 'hmset' command"));
        assert_eq!(run(&mut e, "HSET s a 1 b"), err("ERR wrong number of arguments for 'hset' command"));
        assert_eq!(run(&mut e, "HSET s a 1"), err(WT));
        assert_eq!(run(&mut e, "HGET s a"), err(WT));
        assert_eq!(run(&mut e, "HINCRBY s a x"), err("ERR value is not an integer or out of range"));
        assert_eq!(run(&mut e, "HINCRBY s a 1"), err(WT));
        assert_eq!(run(&mut e, "HINCRBYFLOAT s a abc"), err("ERR value is not a valid float"));
        assert_eq!(run(&mut e, "HINCRBYFLOAT s a inf"), err("ERR value is NaN or Infinity"));
        assert_eq!(run(&mut e, "HINCRBYFLOAT s a 1"), err(WT));
        run(&mut e, "HSET h f abc big 9223372036854775807 inf inf");
        assert_eq!(run(&mut e, "HINCRBY h f 1"), err("ERR hash value is not an integer"));
        assert_eq!(run(&mut e, "HINCRBYFLOAT h f 1"), err("ERR hash value is not a float"));
        assert_eq!(run(&mut e, "HINCRBY h big 1"), err("ERR increment or decrement would overflow"));
        assert_eq!(run(&mut e, "HINCRBYFLOAT h inf 1"), err("ERR increment would produce NaN or Infinity"));
        assert_eq!(run(&mut e, "HINCRBYFLOAT h n nan"), err("ERR value is not a valid float"));
        assert_eq!(run(&mut e, "HINCRBYFLOAT h n 1e5000"), err("ERR value is not a valid float"));
        assert_eq!(run(&mut e, "HINCRBYFLOAT h n 1e-5000"), err("ERR value is not a valid float"));
        assert_eq!(run(&mut e, "HINCRBYFLOAT h n -Infinity"), err("ERR value is NaN or Infinity"));
    }

    #[test]
    fn counters() {
        let mut e = Emulator::new();
        assert_eq!(run(&mut e, "HINCRBY h n 5"), Reply::Int(5));
        assert_eq!(run(&mut e, "HINCRBY h n -7"), Reply::Int(-2));
        assert_eq!(run(&mut e, "HINCRBYFLOAT h n 0.5"), Reply::bulk("-1.5"));
        assert_eq!(run(&mut e, "HINCRBYFLOAT h f 1.1"), Reply::bulk("1.1"));
        assert_eq!(run(&mut e, "HINCRBYFLOAT h f 2.2"), Reply::bulk("3.3"));
        assert_eq!(run(&mut e, "HINCRBYFLOAT h z -0"), Reply::bulk("0"));
        assert_eq!(run(&mut e, "HINCRBYFLOAT h x 0x10"), Reply::bulk("16"));
        assert_eq!(run(&mut e, "HINCRBYFLOAT h y 1e3"), Reply::bulk("1000"));
        assert_eq!(run(&mut e, "HGET h f"), Reply::bulk("3.3"));
        // Printed by Redis 7.0.15 (long double arithmetic, %.17Lf).
        assert_eq!(run(&mut e, "HINCRBYFLOAT h k -1.5e20"), Reply::bulk("-150000000000000000000"));
        assert_eq!(run(&mut e, "HINCRBYFLOAT h k 1e-5"), Reply::bulk("-150000000000000000000"));
        assert_eq!(run(&mut e, "HINCRBYFLOAT h l 12345678.123456789"), Reply::bulk("12345678.12345678899964696"));
        assert_eq!(run(&mut e, "HINCRBYFLOAT h l 1"), Reply::bulk("12345679.12345678899964696"));
    }

    #[test]
    fn encoding_flag_and_big_hdel() {
        let mut e = Emulator::new();
        for i in 0..512 {
            run(&mut e, &format!("HSET h f{i} v"));
        }
        let is_ht = |e: &mut Emulator| match &e.core().db.map[&b"h"[..]].value {
            crate::keyspace::Value::Hash(h) => h.hashtable,
            _ => unreachable!(),
        };
        assert!(!is_ht(&mut e));
        run(&mut e, "HSET h f512 v");
        assert!(is_ht(&mut e));
        let mut big: Vec<Vec<u8>> = vec![b"HSET".to_vec(), b"big".to_vec()];
        for i in 0..50_000 {
            big.push(format!("f{i}").into_bytes());
            big.push(b"v".to_vec());
        }
        assert_eq!(e.execute_owned(&big), Reply::Int(50_000));
        let mut del: Vec<Vec<u8>> = vec![b"HDEL".to_vec(), b"big".to_vec()];
        del.extend((0..49_999).map(|i| format!("f{i}").into_bytes()));
        assert_eq!(e.execute_owned(&del), Reply::Int(49_999));
        assert_eq!(run(&mut e, "HGETALL big"), bulks(&["f49999", "v"]));
        let mut e2 = Emulator::new();
        run(&mut e2, &format!("HSET h a {}", "x".repeat(65)));
        assert!(is_ht(&mut e2));
    }
}
