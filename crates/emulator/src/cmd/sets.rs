//! Set commands (SADD, SREM, SCARD, SISMEMBER, SMISMEMBER, SMEMBERS) with Redis 7.0's replies.
//!
//! Sets of integers stay intset-encoded (sorted) as in Redis, so SMEMBERS of such a set is in
//! ascending numeric order; other sets have no defined order.
use crate::command_spec::flags::*;
use crate::command_spec::{arg_i64, eq_ic, CommandSpec, KeySpec, SYNTAX};
use crate::core::Core;
use crate::keyspace::{SetValue, Value};
use crate::reply::Reply;
use crate::tri;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "sadd", arity: -3, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: sadd },
    CommandSpec { name: "srem", arity: -3, flags: WRITE, keys: KeySpec::ONE, handler: srem },
    CommandSpec { name: "scard", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: scard },
    CommandSpec { name: "sismember", arity: 3, flags: READONLY, keys: KeySpec::ONE, handler: sismember },
    CommandSpec { name: "smismember", arity: -3, flags: READONLY, keys: KeySpec::ONE, handler: smismember },
    CommandSpec { name: "smembers", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: smembers },
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
            core.db.set(a[1], Value::Set(s), None);
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

    #[test]
    fn wrong_type() {
        let mut e = Emulator::new();
        run(&mut e, "SET str v");
        for cmd in ["SADD str a", "SREM str a", "SCARD str", "SISMEMBER str a", "SMISMEMBER str a", "SMEMBERS str"] {
            assert_eq!(run(&mut e, cmd), Reply::Error(WT.into()), "{cmd}");
        }
    }
}
