//! Set commands (SADD, SREM, SCARD, SISMEMBER, SMISMEMBER, SMEMBERS, SPOP, SRANDMEMBER, SMOVE, the
//! SINTER/SUNION/SDIFF family and SINTERCARD) with Redis 7.0's replies.
//!
//! Sets of integers stay intset-encoded (sorted) as in Redis, so SMEMBERS of such a set is in
//! ascending numeric order; other sets have no defined order.
use crate::command_spec::flags::*;
use crate::command_spec::{arg_i64, eq_ic, CommandSpec, KeySpec, SYNTAX};
use crate::core::Core;
use crate::keyspace::rng::Rng;
use crate::keyspace::{SetValue, Value, WRONGTYPE};
use crate::reply::Reply;
use crate::tri;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "sadd", arity: -3, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: sadd },
    CommandSpec { name: "srem", arity: -3, flags: WRITE, keys: KeySpec::ONE, handler: srem },
    CommandSpec { name: "scard", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: scard },
    CommandSpec { name: "sismember", arity: 3, flags: READONLY, keys: KeySpec::ONE, handler: sismember },
    CommandSpec { name: "smismember", arity: -3, flags: READONLY, keys: KeySpec::ONE, handler: smismember },
    CommandSpec { name: "smembers", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: smembers },
    CommandSpec { name: "spop", arity: -2, flags: WRITE, keys: KeySpec::ONE, handler: spop },
    CommandSpec { name: "srandmember", arity: -2, flags: READONLY, keys: KeySpec::ONE, handler: srandmember },
    CommandSpec { name: "smove", arity: 4, flags: WRITE, keys: KeySpec::TWO, handler: smove },
    CommandSpec { name: "sinter", arity: -2, flags: READONLY, keys: KeySpec::ALL, handler: sinter },
    CommandSpec { name: "sinterstore", arity: -3, flags: WRITE | DENYOOM, keys: KeySpec::ALL, handler: sinterstore },
    CommandSpec { name: "sunion", arity: -2, flags: READONLY, keys: KeySpec::ALL, handler: sunion },
    CommandSpec { name: "sunionstore", arity: -3, flags: WRITE | DENYOOM, keys: KeySpec::ALL, handler: sunionstore },
    CommandSpec { name: "sdiff", arity: -2, flags: READONLY, keys: KeySpec::ALL, handler: sdiff },
    CommandSpec { name: "sdiffstore", arity: -3, flags: WRITE | DENYOOM, keys: KeySpec::ALL, handler: sdiffstore },
    CommandSpec {
        name: "sintercard",
        arity: -3,
        flags: READONLY,
        keys: KeySpec::movable(card_keys),
        handler: sintercard,
    },
];

fn card_keys<'a>(a: &[&'a [u8]]) -> Vec<&'a [u8]> {
    crate::command_spec::numkeys_keys(a, false)
}

fn pick_set(v: &mut Value) -> Option<&mut SetValue> {
    match v {
        Value::Set(s) => Some(s),
        _ => None,
    }
}

/// The set under `key`: `Ok(None)` when missing, WRONGTYPE for another type.
fn set_of<'a>(core: &'a mut Core, key: &[u8]) -> Result<Option<&'a mut SetValue>, Reply> {
    let now = core.now_ms();
    core.db.typed(key, now, pick_set).map_err(Reply::err)
}

/// SADD: a new set takes the encoding its first member calls for (intset for an integer).
fn sadd(core: &mut Core, a: &[&[u8]]) -> Reply {
    let members = &a[2..];
    match tri!(set_of(core, a[1])) {
        Some(s) => Reply::Int(members.iter().filter(|m| s.insert(m)).count() as i64),
        None => {
            let mut s = SetValue::for_first(members[0]);
            let added = members.iter().filter(|m| s.insert(m)).count() as i64;
            core.db.set(a[1], Value::Set(Box::new(s)), None);
            Reply::Int(added)
        }
    }
}

/// SREM deletes the key once the set is empty.
fn srem(core: &mut Core, a: &[&[u8]]) -> Reply {
    let Some(s) = tri!(set_of(core, a[1])) else { return Reply::Int(0) };
    let mut removed = 0;
    for m in &a[2..] {
        if s.remove(m) {
            removed += 1;
            if s.is_empty() {
                break;
            }
        }
    }
    if s.is_empty() {
        let now = core.now_ms();
        core.db.remove(a[1], now);
    }
    Reply::Int(removed)
}

fn scard(core: &mut Core, a: &[&[u8]]) -> Reply {
    Reply::Int(tri!(set_of(core, a[1])).map_or(0, |s| s.len() as i64))
}

fn sismember(core: &mut Core, a: &[&[u8]]) -> Reply {
    Reply::Int(tri!(set_of(core, a[1])).is_some_and(|s| s.contains(a[2])) as i64)
}

fn smismember(core: &mut Core, a: &[&[u8]]) -> Reply {
    let s = tri!(set_of(core, a[1]));
    Reply::Array(a[2..].iter().map(|m| Reply::Int(s.as_ref().is_some_and(|s| s.contains(m)) as i64)).collect())
}

/// SMEMBERS replies with a set (RESP3) in Redis's iteration order.
fn smembers(core: &mut Core, a: &[&[u8]]) -> Reply {
    match tri!(set_of(core, a[1])) {
        None => Reply::Set(Vec::new()),
        Some(s) => Reply::Set(s.ordered().into_iter().map(|m| Reply::Bulk(m.to_vec())).collect()),
    }
}

/// The members of a set as replies, in Redis's iteration order, as a RESP3 set.
fn set_reply(s: &SetValue) -> Reply {
    Reply::Set(s.ordered().into_iter().map(|m| Reply::Bulk(m.to_vec())).collect())
}

/// SPOP key [count] (`spopCommand`, `spopWithCountCommand`): without a count a nil for a missing key;
/// with one the count is checked first, then the key, and the reply is a set (the whole set when the
/// count covers it, which deletes the key).
fn spop(core: &mut Core, a: &[&[u8]]) -> Reply {
    with_rng(core, |core, rng| spop_with(core, a, rng))
}

/// Runs `f` with the selected database's random stream, taken out of it for the while (so that the
/// stream and a value of the database can be borrowed at once).
pub(crate) fn with_rng<R>(core: &mut Core, f: impl FnOnce(&mut Core, &Rng) -> R) -> R {
    let rng = std::mem::take(&mut core.db.rng);
    let r = f(core, &rng);
    core.db.rng = rng;
    r
}

fn spop_with(core: &mut Core, a: &[&[u8]], rng: &Rng) -> Reply {
    if a.len() > 3 {
        return Reply::err(SYNTAX);
    }
    let count = match a.get(2) {
        None => None,
        Some(c) => match arg_i64(c) {
            Ok(n) if n >= 0 => Some(n as u64),
            Ok(_) => return Reply::err("ERR value is out of range, must be positive"),
            Err(e) => return e,
        },
    };
    let now = core.now_ms();
    let Some(entry) = core.db.get_mut(a[1], now) else {
        return if count.is_some() { Reply::Set(Vec::new()) } else { Reply::Nil };
    };
    let Value::Set(s) = &mut entry.value else { return Reply::err(WRONGTYPE) };
    let reply = match count {
        None => Reply::Bulk(s.pop_random(rng).unwrap_or_default()),
        Some(0) => return Reply::Set(Vec::new()),
        Some(n) if n >= s.len() as u64 => {
            let r = set_reply(s);
            core.db.remove(a[1], now);
            return r;
        }
        Some(n) => Reply::Set((0..n).filter_map(|_| s.pop_random(rng)).map(Reply::Bulk).collect()),
    };
    if let Some(Value::Set(s)) = core.db.get_mut(a[1], now).map(|e| &e.value) {
        if s.is_empty() {
            core.db.remove(a[1], now);
        }
    }
    reply
}

/// SRANDMEMBER key [count] (`srandmemberWithCountCommand`): a negative count may repeat members,
/// a positive one never does (and is capped at the set's size); both reply with an array.
fn srandmember(core: &mut Core, a: &[&[u8]]) -> Reply {
    with_rng(core, |core, rng| srandmember_with(core, a, rng))
}

fn srandmember_with(core: &mut Core, a: &[&[u8]], rng: &Rng) -> Reply {
    if a.len() > 3 {
        return Reply::err(SYNTAX);
    }
    let count = match a.get(2) {
        None => None,
        Some(c) => Some(tri!(rand_count(c))),
    };
    let now = core.now_ms();
    let Some(entry) = core.db.get_mut(a[1], now) else {
        return if count.is_some() { Reply::Array(Vec::new()) } else { Reply::Nil };
    };
    let Value::Set(s) = &entry.value else { return Reply::err(WRONGTYPE) };
    let Some(count) = count else { return s.random(rng).map_or(Reply::Nil, |m| Reply::Bulk(m.to_vec())) };
    let bulk = |m: &[u8]| Reply::Bulk(m.to_vec());
    if count == 0 {
        return Reply::Array(Vec::new());
    }
    if count < 0 || count == 1 {
        return Reply::Array((0..count.unsigned_abs()).filter_map(|_| s.random(rng).map(bulk)).collect());
    }
    let count = count as usize;
    if count >= s.len() {
        return Reply::Array(s.ordered().into_iter().map(bulk).collect());
    }
    Reply::Array(
        distinct_indexes(rng, s.len(), count)
            .into_iter()
            .filter_map(|i| s.members.get_index(i))
            .map(|m| bulk(m))
            .collect(),
    )
}

/// The count of SRANDMEMBER, HRANDFIELD and ZRANDMEMBER: any integer but `i64::MIN` (Redis reads
/// it in `-LONG_MAX..=LONG_MAX`).
pub(crate) fn rand_count(c: &[u8]) -> Result<i64, Reply> {
    match arg_i64(c)? {
        i64::MIN => Err(Reply::err(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        )),
        n => Ok(n),
    }
}

/// HRANDFIELD's and ZRANDMEMBER's arguments after the key (`hrandfieldCommand`): `None` without a
/// count; else the count and whether `word` (WITHVALUES, WITHSCORES) follows it. The count is read
/// first, then the syntax, then (with the word) a count whose doubled reply length would overflow.
pub(crate) fn rand_with_args(a: &[&[u8]], word: &str) -> Result<Option<(i64, bool)>, Reply> {
    let Some(c) = a.get(2) else { return Ok(None) };
    let count = rand_count(c)?;
    if a.len() > 4 || (a.len() == 4 && !eq_ic(a[3], word)) {
        return Err(Reply::err(SYNTAX));
    }
    let with = a.len() == 4;
    if with && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return Err(Reply::err("ERR value is out of range"));
    }
    Ok(Some((count, with)))
}

/// The positions a random pick with `count` takes out of `len` items (`len > 0`, `count != 0`): a
/// negative count draws `-count` positions that may repeat; a positive one draws distinct positions,
/// at most `len` (all of them, in order, when it covers them).
pub(crate) fn rand_positions(rng: &Rng, len: usize, count: i64) -> Vec<usize> {
    if count < 0 || count == 1 {
        return (0..count.unsigned_abs()).map(|_| rng.below(len)).collect();
    }
    if count as u64 >= len as u64 {
        return (0..len).collect();
    }
    distinct_indexes(rng, len, count as usize)
}

/// `count` distinct positions out of `0..len`, drawn uniformly: by rejection when few are wanted,
/// otherwise by removing random ones from all of them (Redis's CASE 3 and CASE 4).
pub(crate) fn distinct_indexes(rng: &Rng, len: usize, count: usize) -> Vec<usize> {
    if count * 3 > len {
        let mut all: Vec<usize> = (0..len).collect();
        while all.len() > count {
            let i = rng.below(all.len());
            all.swap_remove(i);
        }
        all
    } else {
        let mut picked = rustc_hash::FxHashSet::default();
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let i = rng.below(len);
            if picked.insert(i) {
                out.push(i);
            }
        }
        out
    }
}

/// SMOVE src dst member (`smoveCommand`): a missing source answers 0 before the types are checked;
/// the same key answers whether the member is there.
fn smove(core: &mut Core, a: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    let src_type = core.db.get_mut(a[1], now).map(|e| matches!(e.value, Value::Set(_)));
    let dst_type = core.db.get_mut(a[2], now).map(|e| matches!(e.value, Value::Set(_)));
    let Some(src_is_set) = src_type else { return Reply::Int(0) };
    if !src_is_set || dst_type == Some(false) {
        return Reply::err(WRONGTYPE);
    }
    let member = a[3];
    if a[1] == a[2] {
        return Reply::Int(tri!(set_of(core, a[1])).is_some_and(|s| s.contains(member)) as i64);
    }
    let Some(src) = tri!(set_of(core, a[1])) else { return Reply::Int(0) };
    if !src.remove(member) {
        return Reply::Int(0);
    }
    if src.is_empty() {
        core.db.remove(a[1], now);
    }
    match tri!(set_of(core, a[2])) {
        Some(dst) => {
            dst.insert(member);
        }
        None => {
            let mut s = SetValue::for_first(member);
            s.insert(member);
            core.db.set(a[2], Value::Set(Box::new(s)), None);
        }
    }
    Reply::Int(1)
}

/// The sets under `keys` (`None` for a missing key), WRONGTYPE if any key holds another type: every
/// key's type is checked before any answer, as Redis's loops do.
fn sets_of(core: &mut Core, keys: &[&[u8]]) -> Result<Vec<Option<SetValue>>, Reply> {
    let now = core.now_ms();
    let mut out = Vec::with_capacity(keys.len());
    for k in keys {
        match core.db.get_mut(k, now) {
            None => out.push(None),
            Some(e) => match &e.value {
                Value::Set(s) => out.push(Some(SetValue::clone(s))),
                _ => return Err(Reply::err(WRONGTYPE)),
            },
        }
    }
    Ok(out)
}

#[derive(Clone, Copy, PartialEq)]
enum SetOp {
    Inter,
    Union,
    Diff,
}

/// The result of SINTER/SUNION/SDIFF over `keys`, built as Redis builds it (an intset that converts
/// as members come), or the error.
fn set_op(core: &mut Core, keys: &[&[u8]], op: SetOp) -> Result<SetValue, Reply> {
    let sets = sets_of(core, keys)?;
    let mut out = SetValue::new_intset();
    match op {
        SetOp::Inter => {
            if sets.iter().any(Option::is_none) {
                return Ok(out);
            }
            let mut sets: Vec<&SetValue> = sets.iter().flatten().collect();
            sets.sort_by_key(|s| s.len());
            for m in sets[0].ordered() {
                if sets[1..].iter().all(|o| o.members.contains(m)) {
                    out.insert(m);
                }
            }
        }
        SetOp::Union => {
            for s in sets.iter().flatten() {
                for m in s.ordered() {
                    out.insert(m);
                }
            }
        }
        SetOp::Diff => {
            let Some(Some(first)) = sets.first() else { return Ok(out) };
            for m in first.ordered() {
                if !sets[1..].iter().flatten().any(|o| o.members.contains(m)) {
                    out.insert(m);
                }
            }
        }
    }
    Ok(out)
}

fn set_op_reply(core: &mut Core, keys: &[&[u8]], op: SetOp) -> Reply {
    match set_op(core, keys, op) {
        Ok(s) => set_reply(&s),
        Err(e) => e,
    }
}

/// The STORE forms: the result replaces `dst` (deleted when the result is empty); the reply is its size.
fn set_op_store(core: &mut Core, a: &[&[u8]], op: SetOp) -> Reply {
    let s = tri!(set_op(core, &a[2..], op));
    let now = core.now_ms();
    let n = s.len() as i64;
    if s.is_empty() {
        core.db.remove(a[1], now);
    } else {
        core.db.set(a[1], Value::Set(Box::new(s)), None);
    }
    Reply::Int(n)
}

fn sinter(core: &mut Core, a: &[&[u8]]) -> Reply {
    set_op_reply(core, &a[1..], SetOp::Inter)
}
fn sunion(core: &mut Core, a: &[&[u8]]) -> Reply {
    set_op_reply(core, &a[1..], SetOp::Union)
}
fn sdiff(core: &mut Core, a: &[&[u8]]) -> Reply {
    set_op_reply(core, &a[1..], SetOp::Diff)
}
fn sinterstore(core: &mut Core, a: &[&[u8]]) -> Reply {
    set_op_store(core, a, SetOp::Inter)
}
fn sunionstore(core: &mut Core, a: &[&[u8]]) -> Reply {
    set_op_store(core, a, SetOp::Union)
}
fn sdiffstore(core: &mut Core, a: &[&[u8]]) -> Reply {
    set_op_store(core, a, SetOp::Diff)
}

/// SINTERCARD numkeys key... [LIMIT n] (`sinterCardCommand`): the count, the options, then every
/// key's type (a missing key makes the answer 0, after the types are checked).
fn sintercard(core: &mut Core, a: &[&[u8]]) -> Reply {
    let n = match arg_i64(a[1]) {
        Ok(n) if n >= 1 => n as u64,
        _ => return Reply::err("ERR numkeys should be greater than 0"),
    };
    if n > (a.len() - 2) as u64 {
        return Reply::err("ERR Number of keys can't be greater than number of args");
    }
    let n = n as usize;
    let mut limit = 0i64;
    let mut j = 2 + n;
    while j < a.len() {
        if eq_ic(a[j], "limit") && j + 1 < a.len() {
            match arg_i64(a[j + 1]) {
                Ok(l) if l >= 0 => limit = l,
                _ => return Reply::err("ERR LIMIT can't be negative"),
            }
            j += 2;
        } else {
            return Reply::err(SYNTAX);
        }
    }
    let mut sets: Vec<Vec<Vec<u8>>> = Vec::with_capacity(n);
    let mut empty = false;
    for key in &a[2..2 + n] {
        match tri!(set_of(core, key)) {
            None => empty = true,
            Some(s) => sets.push(s.ordered().into_iter().map(<[u8]>::to_vec).collect()),
        }
    }
    if empty {
        return Reply::Int(0);
    }
    sets.sort_by_key(Vec::len);
    let others: Vec<rustc_hash::FxHashSet<&[u8]>> =
        sets[1..].iter().map(|s| s.iter().map(Vec::as_slice).collect()).collect();
    let mut count = 0i64;
    for m in &sets[0] {
        if others.iter().all(|o| o.contains(m.as_slice())) {
            count += 1;
            if limit != 0 && count >= limit {
                break;
            }
        }
    }
    Reply::Int(count)
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
    trait Sorted {
        fn sorted_by_len_then_bytes(self) -> Reply;
    }
    impl Sorted for Reply {
        fn sorted_by_len_then_bytes(self) -> Reply {
            let Reply::Array(mut v) = self else { return self };
            v.sort_by_key(|r| match r {
                Reply::Bulk(b) => (b.len(), b.clone()),
                _ => (0, Vec::new()),
            });
            Reply::Array(v)
        }
    }
    fn ints(v: &[i64]) -> Reply {
        Reply::Array(v.iter().map(|&i| Reply::Int(i)).collect())
    }
    const WT: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

    #[test]
    fn intset_order_and_deletion() {
        let mut e = Emulator::new();
        assert_eq!(run(&mut e, "SADD s 5 3 10 -1"), Reply::Int(4));
        assert_eq!(run(&mut e, "SMEMBERS s"), bulks(&["-1", "3", "5", "10"]));
        assert_eq!(run(&mut e, "SADD s 3 7"), Reply::Int(1));
        assert_eq!(run(&mut e, "SCARD s"), Reply::Int(5));
        assert_eq!(run(&mut e, "SISMEMBER s 3"), Reply::Int(1));
        assert_eq!(run(&mut e, "SISMEMBER s x"), Reply::Int(0));
        assert_eq!(run(&mut e, "SISMEMBER nokey x"), Reply::Int(0));
        assert_eq!(run(&mut e, "SMISMEMBER s 3 x 7"), ints(&[1, 0, 1]));
        assert_eq!(run(&mut e, "SMISMEMBER nokey a b"), ints(&[0, 0]));
        assert_eq!(run(&mut e, "SMEMBERS nokey"), bulks(&[]));
        assert_eq!(run(&mut e, "SREM s 3 x 5"), Reply::Int(2));
        assert_eq!(run(&mut e, "SMEMBERS s"), bulks(&["-1", "7", "10"]));
        assert_eq!(run(&mut e, "SREM s -1 7 10"), Reply::Int(3));
        assert_eq!(run(&mut e, "EXISTS s"), Reply::Int(0));
        assert_eq!(run(&mut e, "SREM nokey a"), Reply::Int(0));
        assert_eq!(run(&mut e, "SCARD nokey"), Reply::Int(0));
    }

    #[test]
    fn encodings() {
        let mut e = Emulator::new();
        let is_ht = |e: &mut Emulator, k: &str| match &e.core().db.map[k.as_bytes()].value {
            crate::keyspace::Value::Set(s) => s.hashtable,
            _ => unreachable!(),
        };
        run(&mut e, "SADD a 1 2");
        assert!(!is_ht(&mut e, "a"));
        run(&mut e, "SADD a 01");
        assert!(is_ht(&mut e, "a"));
        run(&mut e, "SADD b x");
        assert!(is_ht(&mut e, "b"));
        for i in 0..512 {
            run(&mut e, &format!("SADD c {i}"));
        }
        assert!(!is_ht(&mut e, "c"));
        run(&mut e, "SADD c 512");
        assert!(is_ht(&mut e, "c"));
    }

    /// SINTER/SUNION/SDIFF and their STORE forms, SMOVE's cases, SPOP and SRANDMEMBER's counts.
    #[test]
    fn algebra_moves_and_draws() {
        let mut e = Emulator::new();
        run(&mut e, "SADD a 3 1 2 x");
        run(&mut e, "SADD b 2 3 4");
        assert_eq!(run(&mut e, "SINTER a b"), bulks(&["3", "2"]).sorted_by_len_then_bytes());
        assert_eq!(run(&mut e, "SINTERSTORE d a b"), Reply::Int(2));
        assert_eq!(run(&mut e, "SMEMBERS d"), bulks(&["2", "3"]));
        assert_eq!(run(&mut e, "SUNIONSTORE d b nokey"), Reply::Int(3));
        assert_eq!(run(&mut e, "SMEMBERS d"), bulks(&["2", "3", "4"]));
        assert_eq!(run(&mut e, "SDIFF b a"), bulks(&["4"]));
        assert_eq!(run(&mut e, "SDIFF nokey a"), bulks(&[]));
        assert_eq!(run(&mut e, "SINTERSTORE d a nokey"), Reply::Int(0));
        assert_eq!(run(&mut e, "EXISTS d"), Reply::Int(0));
        run(&mut e, "SET str v");
        assert_eq!(run(&mut e, "SINTER nokey str"), Reply::Error(WT.into()));
        assert_eq!(run(&mut e, "SMOVE nokey str m"), Reply::Int(0));
        assert_eq!(run(&mut e, "SMOVE a str 1"), Reply::Error(WT.into()));
        assert_eq!(run(&mut e, "SMOVE a a 1"), Reply::Int(1));
        assert_eq!(run(&mut e, "SMOVE a c 1"), Reply::Int(1));
        assert_eq!(run(&mut e, "SMOVE a c 1"), Reply::Int(0));
        assert_eq!(run(&mut e, "SMEMBERS c"), bulks(&["1"]));
        assert_eq!(run(&mut e, "SPOP b 0"), bulks(&[]));
        assert_eq!(run(&mut e, "SPOP b -1"), Reply::err("ERR value is out of range, must be positive"));
        let Reply::Array(two) = run(&mut e, "SPOP b 2") else { panic!() };
        assert_eq!((two.len(), run(&mut e, "SCARD b")), (2, Reply::Int(1)));
        run(&mut e, "SPOP b");
        assert_eq!(run(&mut e, "EXISTS b"), Reply::Int(0));
        let Reply::Array(many) = run(&mut e, "SRANDMEMBER a -20") else { panic!() };
        assert_eq!(many.len(), 20);
        let Reply::Array(all) = run(&mut e, "SRANDMEMBER a 20") else { panic!() };
        assert_eq!(all.len(), 3);
    }

    #[test]
    fn wrong_type() {
        let mut e = Emulator::new();
        run(&mut e, "SET str v");
        for cmd in ["SADD str a", "SREM str a", "SCARD str", "SISMEMBER str a", "SMISMEMBER str a", "SMEMBERS str"] {
            assert_eq!(run(&mut e, cmd), Reply::Error(WT.into()), "{cmd}");
        }
    }
}
