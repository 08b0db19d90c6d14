//! List commands (LPUSH, RPOP with count, LRANGE, LTRIM, LREM, ...) with Redis 7.0's replies, check
//! order and error texts. A list left empty is deleted, as in Redis.
use std::collections::VecDeque;

use crate::command_spec::flags::*;
use crate::command_spec::{arg_i64, eq_ic, CommandSpec, KeySpec, SYNTAX};
use crate::core::Core;
use crate::keyspace::Value;
use crate::reply::Reply;
use crate::settings::notify::{GENERIC, LIST};
use crate::tri;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "lpush", arity: -3, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: lpush },
    CommandSpec { name: "rpush", arity: -3, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: rpush },
    CommandSpec { name: "lpushx", arity: -3, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: lpushx },
    CommandSpec { name: "rpushx", arity: -3, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: rpushx },
    CommandSpec { name: "lpop", arity: -2, flags: WRITE, keys: KeySpec::ONE, handler: lpop },
    CommandSpec { name: "rpop", arity: -2, flags: WRITE, keys: KeySpec::ONE, handler: rpop },
    CommandSpec { name: "llen", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: llen },
    CommandSpec { name: "lrange", arity: 4, flags: READONLY, keys: KeySpec::ONE, handler: lrange },
    CommandSpec { name: "ltrim", arity: 4, flags: WRITE, keys: KeySpec::ONE, handler: ltrim },
    CommandSpec { name: "lindex", arity: 3, flags: READONLY, keys: KeySpec::ONE, handler: lindex },
    CommandSpec { name: "lrem", arity: 4, flags: WRITE, keys: KeySpec::ONE, handler: lrem },
    CommandSpec { name: "lset", arity: 4, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: lset },
    CommandSpec { name: "linsert", arity: 5, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: linsert },
    CommandSpec { name: "lpos", arity: -3, flags: READONLY, keys: KeySpec::ONE, handler: lpos },
    CommandSpec { name: "lmove", arity: 5, flags: WRITE | DENYOOM, keys: KeySpec::TWO, handler: lmove },
    CommandSpec { name: "rpoplpush", arity: 3, flags: WRITE | DENYOOM, keys: KeySpec::TWO, handler: rpoplpush },
    CommandSpec {
        name: "lmpop",
        arity: -4,
        flags: WRITE | MOVABLE_KEYS,
        keys: KeySpec::movable(lmpop_keys),
        handler: lmpop,
    },
];

/// LMPOP's keys: `numkeys` at 1, then the keys.
fn lmpop_keys<'a>(args: &[&'a [u8]]) -> Vec<&'a [u8]> {
    crate::command_spec::numkeys_keys(args, false)
}

type List = VecDeque<Vec<u8>>;

fn pick_list(v: &mut Value) -> Option<&mut List> {
    match v {
        Value::List(l) => Some(l),
        _ => None,
    }
}

/// The list under `key`: `Ok(None)` when missing, WRONGTYPE for another type.
fn list_of<'a>(core: &'a mut Core, key: &[u8]) -> Result<Option<&'a mut List>, Reply> {
    let now = core.now_ms();
    core.db.typed(key, now, pick_list).map_err(Reply::err)
}

/// Deletes `key` once its list is empty (called after a removal left `empty` true).
fn drop_if_empty(core: &mut Core, key: &[u8], empty: bool) {
    if empty {
        let now = core.now_ms();
        core.db.remove(key, now);
        core.notify(GENERIC, "del", key);
    }
}

/// The event of a push at the head or the tail.
fn push_event(front: bool) -> &'static str {
    if front {
        "lpush"
    } else {
        "rpush"
    }
}

/// The event of a pop from the head or the tail.
fn pop_event(front: bool) -> &'static str {
    if front {
        "lpop"
    } else {
        "rpop"
    }
}

/// The body of LPUSH/RPUSH/LPUSHX/RPUSHX: pushes each element in turn; replies with the new length
/// (0 for the X forms on a missing key).
fn push(core: &mut Core, a: &[&[u8]], front: bool, only_existing: bool) -> Reply {
    let elems = &a[2..];
    let add = |l: &mut List| {
        for e in elems {
            if front {
                l.push_front(e.to_vec());
            } else {
                l.push_back(e.to_vec());
            }
        }
        l.len() as i64
    };
    let n = match tri!(list_of(core, a[1])) {
        Some(l) => add(l),
        None if only_existing => return Reply::Int(0),
        None => {
            let mut l = VecDeque::with_capacity(elems.len());
            let n = add(&mut l);
            core.db.set(a[1], Value::List(l), None);
            n
        }
    };
    core.notify(LIST, push_event(front), a[1]);
    Reply::Int(n)
}

fn lpush(core: &mut Core, a: &[&[u8]]) -> Reply {
    push(core, a, true, false)
}
fn rpush(core: &mut Core, a: &[&[u8]]) -> Reply {
    push(core, a, false, false)
}
fn lpushx(core: &mut Core, a: &[&[u8]]) -> Reply {
    push(core, a, true, true)
}
fn rpushx(core: &mut Core, a: &[&[u8]]) -> Reply {
    push(core, a, false, true)
}

/// LPOP/RPOP (`popGenericCommand`): more than one extra argument is an arity error; the count is
/// checked before the key (any non-integer or negative count gets the "must be positive" text);
/// with a count a missing key is a nil array and a count of 0 an empty array.
fn pop(core: &mut Core, a: &[&[u8]], front: bool) -> Reply {
    if a.len() > 3 {
        return super::arity_error(if front { "lpop" } else { "rpop" });
    }
    let count = match a.get(2) {
        None => None,
        Some(c) => match crate::keyspace::parse_canonical_i64(c) {
            Some(n) if n >= 0 => Some(n as usize),
            _ => return Reply::err("ERR value is out of range, must be positive"),
        },
    };
    let Some(l) = tri!(list_of(core, a[1])) else {
        return if count.is_some() { Reply::NilArray } else { Reply::Nil };
    };
    let take = |l: &mut List| if front { l.pop_front() } else { l.pop_back() };
    let reply = match count {
        None => take(l).map_or(Reply::Nil, Reply::Bulk),
        Some(n) => {
            let n = n.min(l.len());
            let mut out = Vec::with_capacity(n);
            for _ in 0..n {
                if let Some(e) = take(l) {
                    out.push(Reply::Bulk(e));
                }
            }
            Reply::Array(out)
        }
    };
    let empty = l.is_empty();
    if count != Some(0) {
        core.notify(LIST, pop_event(front), a[1]);
    }
    drop_if_empty(core, a[1], empty);
    reply
}

fn lpop(core: &mut Core, a: &[&[u8]]) -> Reply {
    pop(core, a, true)
}
fn rpop(core: &mut Core, a: &[&[u8]]) -> Reply {
    pop(core, a, false)
}

fn llen(core: &mut Core, a: &[&[u8]]) -> Reply {
    Reply::Int(tri!(list_of(core, a[1])).map_or(0, |l| l.len() as i64))
}

/// Resolves Redis's `start`/`stop` (negative counts from the end) against a list of `len` elements
/// into an inclusive index range, or `None` when it selects nothing.
fn clamp_range(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { len.saturating_add(start) } else { start };
    let mut stop = if stop < 0 { len.saturating_add(stop) } else { stop };
    if start < 0 {
        start = 0;
    }
    if start > stop || start >= len {
        return None;
    }
    if stop >= len {
        stop = len - 1;
    }
    Some((start as usize, stop as usize))
}

/// LRANGE parses both indexes before looking at the key.
fn lrange(core: &mut Core, a: &[&[u8]]) -> Reply {
    let start = tri!(arg_i64(a[2]));
    let stop = tri!(arg_i64(a[3]));
    let Some(l) = tri!(list_of(core, a[1])) else { return Reply::Array(Vec::new()) };
    match clamp_range(start, stop, l.len()) {
        None => Reply::Array(Vec::new()),
        Some((s, e)) => Reply::Array(l.range(s..=e).map(|x| Reply::Bulk(x.clone())).collect()),
    }
}

/// LTRIM keeps `start..=stop`, deleting the key when nothing remains.
fn ltrim(core: &mut Core, a: &[&[u8]]) -> Reply {
    let start = tri!(arg_i64(a[2]));
    let stop = tri!(arg_i64(a[3]));
    let Some(l) = tri!(list_of(core, a[1])) else { return Reply::ok() };
    match clamp_range(start, stop, l.len()) {
        None => l.clear(),
        Some((s, e)) => {
            l.truncate(e + 1);
            l.drain(..s);
        }
    }
    let empty = l.is_empty();
    core.notify(LIST, "ltrim", a[1]);
    drop_if_empty(core, a[1], empty);
    // Touched even when nothing was trimmed.
    core.touch(a[1]);
    Reply::ok()
}

/// LINDEX looks at the key before parsing the index (a missing key answers nil whatever the index).
fn lindex(core: &mut Core, a: &[&[u8]]) -> Reply {
    let Some(l) = tri!(list_of(core, a[1])) else { return Reply::Nil };
    let i = tri!(arg_i64(a[2]));
    match resolve_index(i, l.len()) {
        Some(i) => Reply::Bulk(l[i].clone()),
        None => Reply::Nil,
    }
}

/// A single index (negative from the end) into a list of `len`, if it falls inside.
fn resolve_index(i: i64, len: usize) -> Option<usize> {
    let i = if i < 0 { (len as i64).checked_add(i)? } else { i };
    if i >= 0 && (i as u64) < len as u64 {
        Some(i as usize)
    } else {
        None
    }
}

/// LREM: `count > 0` removes the first `count` matches from the head, `count < 0` the last ones from
/// the tail, 0 all of them; one pass over the list either way.
fn lrem(core: &mut Core, a: &[&[u8]]) -> Reply {
    let count = tri!(arg_i64(a[2]));
    let elem = a[3];
    let Some(l) = tri!(list_of(core, a[1])) else { return Reply::Int(0) };
    let mut removed: u64 = 0;
    if count < 0 {
        // The lowest position among the last |count| matches: everything matching from there on goes.
        let want = count.unsigned_abs();
        let mut from = l.len();
        let mut found = 0u64;
        for (i, x) in l.iter().enumerate().rev() {
            if x.as_slice() == elem {
                from = i;
                found += 1;
                if found == want {
                    break;
                }
            }
        }
        let mut i = 0usize;
        l.retain(|x| {
            let gone = i >= from && x.as_slice() == elem;
            i += 1;
            removed += gone as u64;
            !gone
        });
    } else {
        let limit = if count == 0 { u64::MAX } else { count as u64 };
        l.retain(|x| {
            let gone = removed < limit && x.as_slice() == elem;
            removed += gone as u64;
            !gone
        });
    }
    let empty = l.is_empty();
    if removed > 0 {
        core.notify(LIST, "lrem", a[1]);
        drop_if_empty(core, a[1], empty);
    }
    Reply::Int(removed as i64)
}

/// LSET looks at the key ("no such key") before parsing the index.
fn lset(core: &mut Core, a: &[&[u8]]) -> Reply {
    let Some(l) = tri!(list_of(core, a[1])) else { return Reply::err("ERR no such key") };
    let i = tri!(arg_i64(a[2]));
    match resolve_index(i, l.len()) {
        Some(i) => {
            l[i] = a[3].to_vec();
            core.touch(a[1]);
            core.notify(LIST, "lset", a[1]);
            Reply::ok()
        }
        None => Reply::err("ERR index out of range"),
    }
}

/// LINSERT key BEFORE|AFTER pivot element: the new length, -1 without the pivot, 0 without the key.
fn linsert(core: &mut Core, a: &[&[u8]]) -> Reply {
    let after = if eq_ic(a[2], "after") {
        true
    } else if eq_ic(a[2], "before") {
        false
    } else {
        return Reply::err(SYNTAX);
    };
    let Some(l) = tri!(list_of(core, a[1])) else { return Reply::Int(0) };
    match l.iter().position(|x| x.as_slice() == a[3]) {
        None => Reply::Int(-1),
        Some(p) => {
            l.insert(if after { p + 1 } else { p }, a[4].to_vec());
            let n = l.len() as i64;
            core.notify(LIST, "linsert", a[1]);
            Reply::Int(n)
        }
    }
}

/// LPOS key element [RANK r] [COUNT n] [MAXLEN m] (`lposCommand`): options are checked before the
/// key. RANK is read as a plain integer: i64::MIN stays negative once negated (as in Redis's C), and
/// then every match counts.
fn lpos(core: &mut Core, a: &[&[u8]]) -> Reply {
    let (mut rank, mut count, mut maxlen) = (1i64, None::<i64>, 0i64);
    let mut j = 3;
    while j < a.len() {
        let more = j + 1 < a.len();
        if eq_ic(a[j], "rank") && more {
            rank = tri!(arg_i64(a[j + 1]));
            if rank == 0 {
                return Reply::err(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                );
            }
        } else if eq_ic(a[j], "count") && more {
            match arg_i64(a[j + 1]) {
                Ok(n) if n >= 0 => count = Some(n),
                _ => return Reply::err("ERR COUNT can't be negative"),
            }
        } else if eq_ic(a[j], "maxlen") && more {
            match arg_i64(a[j + 1]) {
                Ok(n) if n >= 0 => maxlen = n,
                _ => return Reply::err("ERR MAXLEN can't be negative"),
            }
        } else {
            return Reply::err(SYNTAX);
        }
        j += 2;
    }
    let from_tail = rank < 0;
    if from_tail {
        rank = rank.wrapping_neg();
    }
    let Some(l) = tri!(list_of(core, a[1])) else {
        return if count.is_some() { Reply::Array(Vec::new()) } else { Reply::Nil };
    };
    let len = l.len() as i64;
    let (mut matches, mut out) = (0i64, Vec::new());
    for index in 0..len {
        if maxlen != 0 && index >= maxlen {
            break;
        }
        let at = if from_tail { len - index - 1 } else { index };
        if l[at as usize].as_slice() != a[2] {
            continue;
        }
        matches += 1;
        if matches >= rank {
            out.push(Reply::Int(at));
            match count {
                None => break,
                Some(c) if c != 0 && matches - rank + 1 >= c => break,
                _ => {}
            }
        }
    }
    match count {
        Some(_) => Reply::Array(out),
        None => out.pop().unwrap_or(Reply::Nil),
    }
}

/// `LEFT` or `RIGHT` (`getListPositionFromObjectOrReply`): true for the head.
fn side(b: &[u8]) -> Result<bool, Reply> {
    if eq_ic(b, "left") {
        Ok(true)
    } else if eq_ic(b, "right") {
        Ok(false)
    } else {
        Err(Reply::err(SYNTAX))
    }
}

/// LMOVE source destination LEFT|RIGHT LEFT|RIGHT.
fn lmove(core: &mut Core, a: &[&[u8]]) -> Reply {
    let from = tri!(side(a[3]));
    let to = tri!(side(a[4]));
    move_generic(core, a[1], a[2], from, to)
}

/// RPOPLPUSH source destination: LMOVE source destination RIGHT LEFT.
fn rpoplpush(core: &mut Core, a: &[&[u8]]) -> Reply {
    move_generic(core, a[1], a[2], false, true)
}

/// `lmoveGenericCommand`: the source's type, then a missing source (nil), then the destination's type;
/// the element goes to the destination (created if missing; the same list rotates), and both keys
/// are touched.
fn move_generic(core: &mut Core, src: &[u8], dst: &[u8], from_head: bool, to_head: bool) -> Reply {
    if tri!(list_of(core, src)).is_none() {
        return Reply::Nil;
    }
    tri!(list_of(core, dst));
    let l = tri!(list_of(core, src)).expect("checked above");
    let Some(elem) = (if from_head { l.pop_front() } else { l.pop_back() }) else { return Reply::Nil };
    let put = |l: &mut List, e: Vec<u8>| if to_head { l.push_front(e) } else { l.push_back(e) };
    if src == dst {
        // The list rotates: it never empties, and keeps its TTL.
        put(l, elem.clone());
        core.touch(src);
        core.notify(LIST, push_event(to_head), dst);
        core.notify(LIST, pop_event(from_head), src);
        return Reply::Bulk(elem);
    }
    let empty = l.is_empty();
    // The element leaves the source before it reaches the destination, which may be created.
    if empty {
        let now = core.now_ms();
        core.db.remove(src, now);
    }
    match tri!(list_of(core, dst)) {
        Some(l) => put(l, elem.clone()),
        None => {
            let mut l = VecDeque::new();
            put(&mut l, elem.clone());
            core.db.set(dst, Value::List(l), None);
        }
    }
    core.notify(LIST, push_event(to_head), dst);
    core.notify(LIST, pop_event(from_head), src);
    if empty {
        core.notify(GENERIC, "del", src);
    }
    core.touch(src);
    core.touch(dst);
    Reply::Bulk(elem)
}

/// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]: pops from the first non-empty list.
fn lmpop(core: &mut Core, a: &[&[u8]]) -> Reply {
    let m = tri!(super::blocking::parse_mpop(a, 1, ("left", "right")));
    mpop(core, &a[m.first..m.first + m.n], !m.right, m.count)
}

/// The body of LMPOP (and of BLMPOP when a list has elements): the first key holding a list gives
/// up to `count` elements, `[key, [elements]]`; a key of another type before it is WRONGTYPE; no
/// list at all is a nil array.
pub(crate) fn mpop(core: &mut Core, keys: &[&[u8]], front: bool, count: usize) -> Reply {
    for key in keys {
        let Some(l) = tri!(list_of(core, key)) else { continue };
        if l.is_empty() {
            continue;
        }
        let n = count.min(l.len());
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            if let Some(e) = if front { l.pop_front() } else { l.pop_back() } {
                out.push(Reply::Bulk(e));
            }
        }
        let empty = l.is_empty();
        core.notify(LIST, pop_event(front), key);
        drop_if_empty(core, key, empty);
        return Reply::Array(vec![Reply::Bulk(key.to_vec()), Reply::Array(out)]);
    }
    Reply::NilArray
}

/// Pops one element for BLPOP/BRPOP from the list at `key`, if it holds one: `[key, element]`.
pub(crate) fn pop_one(core: &mut Core, key: &[u8], front: bool) -> Result<Option<Reply>, Reply> {
    let Some(l) = list_of(core, key)? else { return Ok(None) };
    let Some(e) = (if front { l.pop_front() } else { l.pop_back() }) else { return Ok(None) };
    let empty = l.is_empty();
    core.notify(LIST, pop_event(front), key);
    drop_if_empty(core, key, empty);
    Ok(Some(Reply::Array(vec![Reply::Bulk(key.to_vec()), Reply::Bulk(e)])))
}

/// Whether `key` holds a non-empty list (`Err` for another type), for the blocking commands.
pub(crate) fn has_elements(core: &mut Core, key: &[u8]) -> Result<bool, Reply> {
    Ok(list_of(core, key)?.is_some_and(|l| !l.is_empty()))
}

/// LMOVE/RPOPLPUSH's body, for BLMOVE/BRPOPLPUSH.
pub(crate) fn lmove_keys(core: &mut Core, src: &[u8], dst: &[u8], from_head: bool, to_head: bool) -> Reply {
    move_generic(core, src, dst, from_head, to_head)
}

/// `LEFT`/`RIGHT` for BLMOVE (true for the head).
pub(crate) fn parse_side(b: &[u8]) -> Result<bool, Reply> {
    side(b)
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
    const NOT_INT: &str = "ERR value is not an integer or out of range";
    const POSITIVE: &str = "ERR value is out of range, must be positive";

    #[test]
    fn push_pop_range() {
        let mut e = Emulator::new();
        assert_eq!(run(&mut e, "LPUSH l a b c"), Reply::Int(3));
        assert_eq!(run(&mut e, "RPUSH l d e"), Reply::Int(5));
        assert_eq!(run(&mut e, "LRANGE l 0 -1"), bulks(&["c", "b", "a", "d", "e"]));
        assert_eq!(run(&mut e, "LRANGE l -2 100"), bulks(&["d", "e"]));
        assert_eq!(run(&mut e, "LRANGE l -100 1"), bulks(&["c", "b"]));
        assert_eq!(run(&mut e, "LRANGE l 3 2"), bulks(&[]));
        assert_eq!(run(&mut e, "LRANGE l 5 10"), bulks(&[]));
        assert_eq!(run(&mut e, "LINDEX l -1"), Reply::bulk("e"));
        assert_eq!(run(&mut e, "LINDEX l 5"), Reply::Nil);
        assert_eq!(run(&mut e, "LPOP l 2"), bulks(&["c", "b"]));
        assert_eq!(run(&mut e, "RPOP l 0"), bulks(&[]));
        assert_eq!(run(&mut e, "RPOP l"), Reply::bulk("e"));
        assert_eq!(run(&mut e, "RPOP l 10"), bulks(&["d", "a"]));
        assert_eq!(run(&mut e, "EXISTS l"), Reply::Int(0));
        assert_eq!(run(&mut e, "LPOP l"), Reply::Nil);
        assert_eq!(run(&mut e, "LPOP l 1"), Reply::NilArray);
        assert_eq!(run(&mut e, "LPOP l 0"), Reply::NilArray);
        assert_eq!(run(&mut e, "LPUSHX l a"), Reply::Int(0));
        assert_eq!(run(&mut e, "RPUSH l a"), Reply::Int(1));
        assert_eq!(run(&mut e, "RPUSHX l b c"), Reply::Int(3));
        assert_eq!(run(&mut e, "LLEN l"), Reply::Int(3));
        assert_eq!(run(&mut e, "LLEN nokey"), Reply::Int(0));
    }

    #[test]
    fn trim_rem_set_insert() {
        let mut e = Emulator::new();
        run(&mut e, "RPUSH l x a x b x c x");
        assert_eq!(run(&mut e, "LREM l 2 x"), Reply::Int(2));
        assert_eq!(run(&mut e, "LRANGE l 0 -1"), bulks(&["a", "b", "x", "c", "x"]));
        run(&mut e, "RPUSH l x");
        assert_eq!(run(&mut e, "LREM l -2 x"), Reply::Int(2));
        assert_eq!(run(&mut e, "LRANGE l 0 -1"), bulks(&["a", "b", "x", "c"]));
        assert_eq!(run(&mut e, "LINSERT l before x y"), Reply::Int(5));
        assert_eq!(run(&mut e, "LINSERT l AFTER x z"), Reply::Int(6));
        assert_eq!(run(&mut e, "LINSERT l after nope z"), Reply::Int(-1));
        assert_eq!(run(&mut e, "LINSERT nokey after x z"), Reply::Int(0));
        assert_eq!(run(&mut e, "LINSERT l middle x z"), err("ERR syntax error"));
        assert_eq!(run(&mut e, "LRANGE l 0 -1"), bulks(&["a", "b", "y", "x", "z", "c"]));
        assert_eq!(run(&mut e, "LSET l -1 C"), Reply::ok());
        assert_eq!(run(&mut e, "LSET l 6 C"), err("ERR index out of range"));
        assert_eq!(run(&mut e, "LSET nokey 0 C"), err("ERR no such key"));
        assert_eq!(run(&mut e, "LTRIM l 1 -2"), Reply::ok());
        assert_eq!(run(&mut e, "LRANGE l 0 -1"), bulks(&["b", "y", "x", "z"]));
        assert_eq!(run(&mut e, "LREM l 0 y"), Reply::Int(1));
        assert_eq!(run(&mut e, "LTRIM l 5 10"), Reply::ok());
        assert_eq!(run(&mut e, "EXISTS l"), Reply::Int(0));
        run(&mut e, "RPUSH l a a");
        assert_eq!(run(&mut e, "LREM l 0 a"), Reply::Int(2));
        assert_eq!(run(&mut e, "EXISTS l"), Reply::Int(0));
    }

    /// LMPOP and, without a server, BLPOP/BLMPOP: Redis 7.0.15's replies and errors in its order.
    #[test]
    fn lmpop_and_blocking_forms_without_a_server() {
        let mut e = Emulator::new();
        run(&mut e, "RPUSH b 1 2 3");
        run(&mut e, "SET s v");
        let pair = |k: &str, v: &[&str]| Reply::Array(vec![Reply::bulk(k), bulks(v)]);
        assert_eq!(run(&mut e, "LMPOP 2 a b LEFT COUNT 2"), pair("b", &["1", "2"]));
        assert_eq!(run(&mut e, "LMPOP 1 b RIGHT COUNT 10"), pair("b", &["3"]));
        assert_eq!(run(&mut e, "LMPOP 1 b LEFT"), Reply::NilArray);
        assert_eq!(run(&mut e, "LMPOP 2 a s LEFT"), err(WT));
        assert_eq!(run(&mut e, "LMPOP 0 a LEFT"), err("ERR numkeys should be greater than 0"));
        assert_eq!(run(&mut e, "LMPOP 2 a LEFT"), err("ERR syntax error"));
        assert_eq!(run(&mut e, "LMPOP 1 a LEFT COUNT 0"), err("ERR count should be greater than 0"));
        assert_eq!(run(&mut e, "LMPOP 1 a LEFT COUNT 1 COUNT 1"), err("ERR syntax error"));
        assert_eq!(run(&mut e, "BLMPOP x 1 a LEFT"), err("ERR timeout is not a float or out of range"));
        assert_eq!(run(&mut e, "BLMPOP x 0 a LEFT"), err("ERR numkeys should be greater than 0"));
        assert_eq!(run(&mut e, "BLPOP a -1"), err("ERR timeout is negative"));
        assert_eq!(run(&mut e, "BLPOP a 0x7FFFFFFFFFFFFF"), err("ERR timeout is negative"));
        assert_eq!(run(&mut e, "BLPOP s 0"), err(WT));
        // No server to wake it: nothing to pop answers the timeout reply at once.
        assert_eq!(run(&mut e, "BLPOP a 0"), Reply::NilArray);
        assert_eq!(run(&mut e, "BRPOPLPUSH a b 0"), Reply::Nil);
        run(&mut e, "RPUSH a x");
        assert_eq!(run(&mut e, "BRPOPLPUSH a s 0"), err(WT));
        assert_eq!(run(&mut e, "BLMOVE a b RIGHT LEFT 0.5"), Reply::bulk("x"));
    }

    #[test]
    fn errors() {
        let mut e = Emulator::new();
        run(&mut e, "SET s v");
        assert_eq!(run(&mut e, "LPOP s abc"), err(POSITIVE));
        assert_eq!(run(&mut e, "LPOP nokey -1"), err(POSITIVE));
        assert_eq!(run(&mut e, "LPOP s 0"), err(WT));
        assert_eq!(run(&mut e, "LPOP l 1 2"), err("ERR wrong number of arguments for 'lpop' command"));
        assert_eq!(run(&mut e, "RPOP l 1 2"), err("ERR wrong number of arguments for 'rpop' command"));
        assert_eq!(run(&mut e, "LINDEX s abc"), err(WT));
        assert_eq!(run(&mut e, "LINDEX nokey abc"), Reply::Nil);
        assert_eq!(run(&mut e, "LRANGE s a b"), err(NOT_INT));
        assert_eq!(run(&mut e, "LTRIM nokey a 1"), err(NOT_INT));
        assert_eq!(run(&mut e, "LREM s a x"), err(NOT_INT));
        assert_eq!(run(&mut e, "LSET s a x"), err(WT));
        assert_eq!(run(&mut e, "LPUSH s a"), err(WT));
        assert_eq!(run(&mut e, "LPUSHX s a"), err(WT));
        assert_eq!(run(&mut e, "LLEN s"), err(WT));
    }
}
