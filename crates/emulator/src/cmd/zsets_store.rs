//! Sorted-set algebra and stores: ZUNION/ZINTER/ZDIFF and their STORE forms, ZINTERCARD and
//! ZRANGESTORE, with Redis 7.0's option parsing, check order and error texts
//! (`zunionInterDiffGenericCommand`).
//!
//! Inputs may be sorted sets or plain sets (each member scoring 1). As in Redis, the inputs are
//! taken smallest first (a stable sort by cardinality) for union and intersection, which fixes the
//! order in which weighted scores are summed, and so the last bits of a float result. A stored result
//! is built member by member, which gives the encoding Redis ends with (listpack up to 128 members
//! of at most 64 bytes, else skiplist); an empty result deletes the destination.
use super::zsets::{parse_score, scored};
use crate::command_spec::flags::*;
use crate::command_spec::{arg_i64, eq_ic, numkeys_keys, CommandSpec, KeySpec, SYNTAX};
use crate::core::Core;
use crate::keyspace::{Value, ZSet, WRONGTYPE};
use crate::reply::Reply;
use crate::tri;
use rustc_hash::FxHashMap;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "zunionstore",
        arity: -4,
        flags: WRITE | DENYOOM,
        keys: KeySpec::movable(dest_keys),
        handler: zunionstore,
    },
    CommandSpec {
        name: "zinterstore",
        arity: -4,
        flags: WRITE | DENYOOM,
        keys: KeySpec::movable(dest_keys),
        handler: zinterstore,
    },
    CommandSpec {
        name: "zdiffstore",
        arity: -4,
        flags: WRITE | DENYOOM,
        keys: KeySpec::movable(dest_keys),
        handler: zdiffstore,
    },
    CommandSpec { name: "zunion", arity: -3, flags: READONLY, keys: KeySpec::movable(source_keys), handler: zunion },
    CommandSpec { name: "zinter", arity: -3, flags: READONLY, keys: KeySpec::movable(source_keys), handler: zinter },
    CommandSpec { name: "zdiff", arity: -3, flags: READONLY, keys: KeySpec::movable(source_keys), handler: zdiff },
    CommandSpec {
        name: "zintercard",
        arity: -3,
        flags: READONLY,
        keys: KeySpec::movable(source_keys),
        handler: zintercard,
    },
    CommandSpec { name: "zrangestore", arity: -5, flags: WRITE | DENYOOM, keys: KeySpec::TWO, handler: zrangestore },
];

fn dest_keys<'a>(a: &[&'a [u8]]) -> Vec<&'a [u8]> {
    numkeys_keys(a, true)
}
fn source_keys<'a>(a: &[&'a [u8]]) -> Vec<&'a [u8]> {
    numkeys_keys(a, false)
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, PartialEq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

/// One input: its members and scores in the order Redis iterates them, and its weight.
struct Source {
    members: Vec<(Vec<u8>, f64)>,
    index: FxHashMap<Vec<u8>, f64>,
    weight: f64,
}

impl Source {
    fn find(&self, m: &[u8]) -> Option<f64> {
        self.index.get(m).copied()
    }
}

fn zunionstore(core: &mut Core, a: &[&[u8]]) -> Reply {
    generic(core, a, 2, Some(a[1]), Op::Union, false)
}
fn zinterstore(core: &mut Core, a: &[&[u8]]) -> Reply {
    generic(core, a, 2, Some(a[1]), Op::Inter, false)
}
fn zdiffstore(core: &mut Core, a: &[&[u8]]) -> Reply {
    generic(core, a, 2, Some(a[1]), Op::Diff, false)
}
fn zunion(core: &mut Core, a: &[&[u8]]) -> Reply {
    generic(core, a, 1, None, Op::Union, false)
}
fn zinter(core: &mut Core, a: &[&[u8]]) -> Reply {
    generic(core, a, 1, None, Op::Inter, false)
}
fn zdiff(core: &mut Core, a: &[&[u8]]) -> Reply {
    generic(core, a, 1, None, Op::Diff, false)
}
fn zintercard(core: &mut Core, a: &[&[u8]]) -> Reply {
    generic(core, a, 1, None, Op::Inter, true)
}

/// Reads an input key: a sorted set, a set (scores 1), missing (empty), or WRONGTYPE.
fn load(core: &mut Core, key: &[u8]) -> Result<Vec<(Vec<u8>, f64)>, Reply> {
    let now = core.now_ms();
    match core.db.get(key, now) {
        None => Ok(Vec::new()),
        Some(e) => match &e.value {
            Value::ZSet(z) => Ok(z.iter().map(|(m, s)| (m.to_vec(), s)).collect()),
            Value::Set(s) => Ok(s.ordered().into_iter().map(|m| (m.to_vec(), 1.0)).collect()),
            _ => Err(Reply::err(WRONGTYPE)),
        },
    }
}

/// `zunionInterAggregate`: a sum of +inf and -inf is 0.
fn aggregate(target: &mut f64, val: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *target += val;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => {
            if val < *target {
                *target = val
            }
        }
        Aggregate::Max => {
            if val > *target {
                *target = val
            }
        }
    }
}

/// `zunionInterDiffGenericCommand`: `numkeys` at `a[at]`, then the keys (looked up, WRONGTYPE
/// first), then the options; `cardinality_only` is ZINTERCARD.
fn generic(core: &mut Core, a: &[&[u8]], at: usize, dst: Option<&[u8]>, op: Op, cardinality_only: bool) -> Reply {
    let setnum = tri!(arg_i64(a[at]));
    if setnum < 1 {
        let name = String::from_utf8_lossy(a[0]).to_ascii_lowercase();
        return Reply::Error(format!("ERR at least 1 input key is needed for '{name}' command"));
    }
    if setnum as u64 > (a.len() - at - 1) as u64 {
        return Reply::err(SYNTAX);
    }
    let setnum = setnum as usize;
    let mut srcs = Vec::with_capacity(setnum);
    for key in &a[at + 1..at + 1 + setnum] {
        let members = tri!(load(core, key));
        srcs.push(Source { members, index: FxHashMap::default(), weight: 1.0 });
    }
    let (mut how, mut withscores, mut limit) = (Aggregate::Sum, false, 0i64);
    let mut j = at + 1 + setnum;
    while j < a.len() {
        let remaining = a.len() - j;
        if op != Op::Diff && !cardinality_only && remaining > setnum && eq_ic(a[j], "weights") {
            j += 1;
            for s in srcs.iter_mut() {
                match parse_score(a[j]) {
                    Some(w) => s.weight = w,
                    None => return Reply::err("ERR weight value is not a float"),
                }
                j += 1;
            }
        } else if op != Op::Diff && !cardinality_only && remaining >= 2 && eq_ic(a[j], "aggregate") {
            let v = a[j + 1];
            how = if eq_ic(v, "sum") {
                Aggregate::Sum
            } else if eq_ic(v, "min") {
                Aggregate::Min
            } else if eq_ic(v, "max") {
                Aggregate::Max
            } else {
                return Reply::err(SYNTAX);
            };
            j += 2;
        } else if dst.is_none() && !cardinality_only && eq_ic(a[j], "withscores") {
            withscores = true;
            j += 1;
        } else if cardinality_only && remaining >= 2 && eq_ic(a[j], "limit") {
            match arg_i64(a[j + 1]) {
                Ok(n) if n >= 0 => limit = n,
                _ => return Reply::err("ERR LIMIT can't be negative"),
            }
            j += 2;
        } else {
            return Reply::err(SYNTAX);
        }
    }
    if op != Op::Diff {
        srcs.sort_by_key(|s| s.members.len());
    }
    for s in srcs.iter_mut().skip(if op == Op::Union { usize::MAX } else { 1 }) {
        s.index = s.members.iter().cloned().collect();
    }
    let mut result = ZSet::new();
    let mut cardinality = 0i64;
    match op {
        Op::Inter => {
            if let Some((first, rest)) = srcs.split_first() {
                for (m, s) in &first.members {
                    let mut score = first.weight * s;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    let mut everywhere = true;
                    for other in rest {
                        match other.find(m) {
                            Some(v) => aggregate(&mut score, v * other.weight, how),
                            None => {
                                everywhere = false;
                                break;
                            }
                        }
                    }
                    if !everywhere {
                        continue;
                    }
                    if cardinality_only {
                        cardinality += 1;
                        if limit != 0 && cardinality >= limit {
                            break;
                        }
                    } else {
                        result.insert_new(m, score);
                    }
                }
            }
        }
        Op::Union => {
            let mut acc: FxHashMap<Vec<u8>, f64> = FxHashMap::default();
            let mut order: Vec<Vec<u8>> = Vec::new();
            for src in &srcs {
                for (m, s) in &src.members {
                    let mut score = src.weight * s;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    match acc.get_mut(m) {
                        Some(t) => aggregate(t, score, how),
                        None => {
                            acc.insert(m.clone(), score);
                            order.push(m.clone());
                        }
                    }
                }
            }
            for m in order {
                result.insert_new(&m, acc[&m]);
            }
        }
        Op::Diff => {
            if let Some((first, rest)) = srcs.split_first() {
                for (m, s) in &first.members {
                    if !rest.iter().any(|o| o.find(m).is_some()) {
                        result.insert_new(m, *s);
                    }
                }
            }
        }
    }
    if cardinality_only {
        return Reply::Int(cardinality);
    }
    match dst {
        Some(key) => store(core, key, result),
        None => {
            let mut out = Vec::with_capacity(result.len() * if withscores { 2 } else { 1 });
            for (m, s) in result.iter() {
                out.push(Reply::Bulk(m.to_vec()));
                if withscores {
                    out.push(Reply::Double(s));
                }
            }
            scored(core.resp3 && withscores, out)
        }
    }
}

/// Stores a result under `key` (replacing it and its TTL), or deletes `key` for an empty result;
/// replies the result's size.
fn store(core: &mut Core, key: &[u8], result: ZSet) -> Reply {
    let n = result.len() as i64;
    if n == 0 {
        let now = core.now_ms();
        if core.db.remove(key, now) {
            core.touch(key);
        }
    } else {
        core.db.set(key, Value::ZSet(Box::new(result)), None);
        core.touch(key);
    }
    Reply::Int(n)
}

/// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]: ZRANGE's parsing (no
/// WITHSCORES), its result stored.
fn zrangestore(core: &mut Core, a: &[&[u8]]) -> Reply {
    let pairs = tri!(super::zsets::zrange_collect(core, &a[1..], true));
    let mut result = ZSet::new();
    for (m, s) in pairs {
        result.insert_new(&m, s);
    }
    store(core, a[1], result)
}
