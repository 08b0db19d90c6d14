//! Sorted-set commands (Redis 7.0 `t_zset.c`): ZADD and ZINCRBY with every option, ZREM, ZCARD, ZSCORE,
//! ZMSCORE, ZCOUNT, ZLEXCOUNT, the ZRANGE family (by rank, score or lex, forward or reverse, LIMIT,
//! WITHSCORES), ZREMRANGEBY{SCORE,RANK,LEX}, ZPOPMIN/ZPOPMAX and ZRANK/ZREVRANK, with Redis's argument
//! checks in Redis's order, so the same bad call gets the same error.
use crate::command_spec::flags::*;
use crate::command_spec::{arg_i64, eq_ic, parse_f64, CommandSpec, KeySpec, NOT_FLOAT, SYNTAX};
use crate::core::Core;
use crate::keyspace::{LexBound, LexRange, ScoreRange, Value, ZRef, ZSet, WRONGTYPE};
use crate::reply::Reply;
use crate::tri;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "zadd", arity: -4, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: zadd },
    CommandSpec { name: "zincrby", arity: 4, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: zincrby },
    CommandSpec { name: "zrem", arity: -3, flags: WRITE, keys: KeySpec::ONE, handler: zrem },
    CommandSpec { name: "zcard", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: zcard },
    CommandSpec { name: "zscore", arity: 3, flags: READONLY, keys: KeySpec::ONE, handler: zscore },
    CommandSpec { name: "zmscore", arity: -3, flags: READONLY, keys: KeySpec::ONE, handler: zmscore },
    CommandSpec { name: "zcount", arity: 4, flags: READONLY, keys: KeySpec::ONE, handler: zcount },
    CommandSpec { name: "zlexcount", arity: 4, flags: READONLY, keys: KeySpec::ONE, handler: zlexcount },
    CommandSpec { name: "zrange", arity: -4, flags: READONLY, keys: KeySpec::ONE, handler: zrange },
    CommandSpec { name: "zrevrange", arity: -4, flags: READONLY, keys: KeySpec::ONE, handler: zrevrange },
    CommandSpec { name: "zrangebyscore", arity: -4, flags: READONLY, keys: KeySpec::ONE, handler: zrangebyscore },
    CommandSpec { name: "zrevrangebyscore", arity: -4, flags: READONLY, keys: KeySpec::ONE, handler: zrevrangebyscore },
    CommandSpec { name: "zrangebylex", arity: -4, flags: READONLY, keys: KeySpec::ONE, handler: zrangebylex },
    CommandSpec { name: "zrevrangebylex", arity: -4, flags: READONLY, keys: KeySpec::ONE, handler: zrevrangebylex },
    CommandSpec { name: "zremrangebyscore", arity: 4, flags: WRITE, keys: KeySpec::ONE, handler: zremrangebyscore },
    CommandSpec { name: "zremrangebyrank", arity: 4, flags: WRITE, keys: KeySpec::ONE, handler: zremrangebyrank },
    CommandSpec { name: "zremrangebylex", arity: 4, flags: WRITE, keys: KeySpec::ONE, handler: zremrangebylex },
    CommandSpec { name: "zpopmin", arity: -2, flags: WRITE, keys: KeySpec::ONE, handler: zpopmin },
    CommandSpec { name: "zpopmax", arity: -2, flags: WRITE, keys: KeySpec::ONE, handler: zpopmax },
    CommandSpec { name: "zrank", arity: 3, flags: READONLY, keys: KeySpec::ONE, handler: zrank },
    CommandSpec { name: "zrevrank", arity: 3, flags: READONLY, keys: KeySpec::ONE, handler: zrevrank },
    CommandSpec {
        name: "zmpop",
        arity: -4,
        flags: WRITE | MOVABLE_KEYS,
        keys: KeySpec::movable(zmpop_keys_of),
        handler: zmpop,
    },
];

const NOT_FLOAT_RANGE: &str = "ERR min or max is not a float";
const NOT_LEX_RANGE: &str = "ERR min or max not valid string range item";
const NAN_RESULT: &str = "ERR resulting score is not a number (NaN)";
const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";

// ---- argument parsing ----------------------------------------------------------------------------

/// A score for ZADD/ZINCRBY, as `getDoubleFromObject` reads it: the whole argument must be a `strtod`
/// number with no leading space, not NaN, and not out of range (an overflow to ±inf or an underflow to
/// 0 is an error; `inf` spelled out is fine).
pub(crate) fn parse_score(b: &[u8]) -> Option<f64> {
    let v = parse_number(b)?;
    let unsigned = b.strip_prefix(b"-").or_else(|| b.strip_prefix(b"+")).unwrap_or(b);
    if v.is_infinite() && !(unsigned.eq_ignore_ascii_case(b"inf") || unsigned.eq_ignore_ascii_case(b"infinity")) {
        return None;
    }
    if v == 0.0 && mantissa_has_nonzero_digit(unsigned) {
        return None;
    }
    Some(v)
}

/// True when the digits before the exponent are not all zero (so a result of 0 was an underflow).
fn mantissa_has_nonzero_digit(u: &[u8]) -> bool {
    if u.len() > 1 && u[0] == b'0' && (u[1] | 0x20) == b'x' {
        u[2..].iter().take_while(|c| (**c | 0x20) != b'p').any(|c| c.is_ascii_hexdigit() && *c != b'0')
    } else {
        u.iter().take_while(|c| (**c | 0x20) != b'e').any(|c| (b'1'..=b'9').contains(c))
    }
}

/// One bound of a score range, as `zslParseRange` reads it: a plain `strtod` that must reach the end of
/// the C string (so leading spaces pass, an empty string is 0, an overflow is ±inf), and is not NaN.
fn parse_bound(b: &[u8]) -> Option<(f64, bool)> {
    let (b, ex) = match b.first() {
        Some(b'(') => (&b[1..], true),
        _ => (b, false),
    };
    // strtod sees a C string: it stops at the first NUL byte.
    let b = match b.iter().position(|&c| c == 0) {
        Some(i) => &b[..i],
        None => b,
    };
    if b.is_empty() {
        return Some((0.0, ex));
    }
    let start = b.iter().position(|c| !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))?;
    parse_number(&b[start..]).map(|v| (v, ex))
}

/// A whole-argument `strtod` without the ERANGE checks: plain decimal text (the usual case: timestamps,
/// counters) goes straight to Rust's parser, whose grammar accepts exactly what `strtod` does on those
/// characters; anything else (`inf`, hex, stray bytes) takes the general, allocating path.
#[inline]
fn parse_number(b: &[u8]) -> Option<f64> {
    // A plain integer of up to 15 digits (timestamps, counts) is exact in a double: no parser needed.
    let digits = b.strip_prefix(b"-").unwrap_or(b);
    if !digits.is_empty() && digits.len() <= 15 && digits.iter().all(u8::is_ascii_digit) {
        let v = digits.iter().fold(0i64, |v, &c| v * 10 + i64::from(c - b'0')) as f64;
        return Some(if digits.len() < b.len() { -v } else { v });
    }
    match b {
        b"-inf" => return Some(f64::NEG_INFINITY),
        b"inf" | b"+inf" => return Some(f64::INFINITY),
        _ => {}
    }
    if !b.is_empty() && b.iter().all(|c| matches!(c, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')) {
        std::str::from_utf8(b).ok()?.parse::<f64>().ok()
    } else {
        parse_f64(b)
    }
}

/// A score range from its `min` and `max` arguments.
fn parse_score_range(min: &[u8], max: &[u8]) -> Result<ScoreRange, Reply> {
    match (parse_bound(min), parse_bound(max)) {
        (Some((min, min_ex)), Some((max, max_ex))) => Ok(ScoreRange { min, max, min_ex, max_ex }),
        _ => Err(Reply::err(NOT_FLOAT_RANGE)),
    }
}

/// One end of a lex range (`zslParseLexRangeItem`); `+` and `-` are compared as C strings.
fn parse_lex_bound(b: &[u8]) -> Option<LexBound> {
    match b.first()? {
        b'+' if b.len() == 1 || b[1] == 0 => Some(LexBound::Max),
        b'-' if b.len() == 1 || b[1] == 0 => Some(LexBound::Min),
        b'(' => Some(LexBound::Excl(b[1..].to_vec())),
        b'[' => Some(LexBound::Incl(b[1..].to_vec())),
        _ => None,
    }
}

fn parse_lex_range(min: &[u8], max: &[u8]) -> Result<LexRange, Reply> {
    match (parse_lex_bound(min), parse_lex_bound(max)) {
        (Some(min), Some(max)) => Ok(LexRange { min, max }),
        _ => Err(Reply::err(NOT_LEX_RANGE)),
    }
}

// ---- key access ------------------------------------------------------------------------------------

/// The sorted set at `key` for reading: `Ok(None)` when missing, WRONGTYPE for other types.
pub(super) fn read<'a>(core: &'a mut Core, key: &[u8]) -> Result<Option<&'a ZSet>, Reply> {
    let now = core.now_ms();
    match core.db.get(key, now) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::ZSet(z) => Ok(Some(z)),
            _ => Err(Reply::err(WRONGTYPE)),
        },
    }
}

/// The sorted set at `key` for writing.
fn write<'a>(core: &'a mut Core, key: &[u8]) -> Result<Option<&'a mut ZSet>, Reply> {
    let now = core.now_ms();
    match core.db.get_mut(key, now) {
        None => Ok(None),
        Some(e) => match &mut e.value {
            Value::ZSet(z) => Ok(Some(z)),
            _ => Err(Reply::err(WRONGTYPE)),
        },
    }
}

/// Deletes `key` when a write left its sorted set empty (Redis never keeps an empty zset).
fn delete_if_empty(core: &mut Core, key: &[u8], empty: bool) {
    if empty {
        let now = core.now_ms();
        core.db.remove(key, now);
    }
}

/// Appends a member, and its score when asked, to a range reply.
#[inline]
fn emit(out: &mut Vec<Reply>, z: &ZSet, r: ZRef, withscores: bool) {
    out.push(Reply::Bulk(z.member_at(r).to_vec()));
    if withscores {
        out.push(Reply::Double(z.score_at(r)));
    }
}

// ---- ZADD / ZINCRBY ------------------------------------------------------------------------------

pub(crate) fn zadd(core: &mut Core, a: &[&[u8]]) -> Reply {
    zadd_generic(core, a, false)
}

fn zincrby(core: &mut Core, a: &[&[u8]]) -> Reply {
    zadd_generic(core, a, true)
}

/// Counts kept by one ZADD call.
#[derive(Default)]
struct AddCounts {
    added: i64,
    updated: i64,
    processed: i64,
    /// The last score written (what ZINCRBY and ZADD INCR reply).
    score: f64,
}

/// The ZADD option flags.
#[derive(Clone, Copy, Default)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    incr: bool,
}

/// `zaddGenericCommand`. ZINCRBY is ZADD with INCR forced on (so `ZINCRBY key nx m` is a syntax error,
/// as in Redis, because `nx` is taken as an option).
fn zadd_generic(core: &mut Core, a: &[&[u8]], incr_cmd: bool) -> Reply {
    let mut f = AddFlags { incr: incr_cmd, ..AddFlags::default() };
    let mut ch = false;
    let mut i = 2;
    while i < a.len() {
        let o = a[i];
        if eq_ic(o, "nx") {
            f.nx = true;
        } else if eq_ic(o, "xx") {
            f.xx = true;
        } else if eq_ic(o, "ch") {
            ch = true;
        } else if eq_ic(o, "incr") {
            f.incr = true;
        } else if eq_ic(o, "gt") {
            f.gt = true;
        } else if eq_ic(o, "lt") {
            f.lt = true;
        } else {
            break;
        }
        i += 1;
    }
    let pairs = &a[i..];
    if pairs.is_empty() || pairs.len() % 2 != 0 {
        return Reply::err(SYNTAX);
    }
    if f.nx && f.xx {
        return Reply::err("ERR XX and NX options at the same time are not compatible");
    }
    if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        return Reply::err("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if f.incr && pairs.len() > 2 {
        return Reply::err("ERR INCR option supports a single increment-element pair");
    }
    // Every score is checked before anything is written: the command runs fully or not at all.
    if pairs.chunks_exact(2).any(|p| parse_score(p[0]).is_none()) {
        return Reply::err(NOT_FLOAT);
    }
    let key = a[1];
    let counts = match tri!(write(core, key)) {
        Some(z) => tri!(zadd_into(z, pairs, f)),
        None if f.xx => AddCounts::default(),
        None => {
            let mut z = ZSet::new();
            let c = tri!(zadd_into(&mut z, pairs, f));
            core.db.set(key, Value::ZSet(Box::new(z)), None);
            c
        }
    };
    if f.incr {
        if counts.processed > 0 {
            Reply::Double(counts.score)
        } else {
            Reply::Nil
        }
    } else {
        Reply::Int(if ch { counts.added + counts.updated } else { counts.added })
    }
}

/// Applies validated score-member pairs (`zsetAdd` for each).
fn zadd_into(z: &mut ZSet, pairs: &[&[u8]], f: AddFlags) -> Result<AddCounts, Reply> {
    let mut c = AddCounts::default();
    for p in pairs.chunks_exact(2) {
        let score = parse_score(p[0]).unwrap_or(0.0);
        let m = p[1];
        match z.find(m) {
            Some(r) => {
                if f.nx {
                    continue;
                }
                let cur = z.score_at(r);
                let mut s = score;
                if f.incr {
                    s += cur;
                    if s.is_nan() {
                        return Err(Reply::err(NAN_RESULT));
                    }
                }
                if (f.lt && s >= cur) || (f.gt && s <= cur) {
                    continue;
                }
                if s != cur {
                    z.set_score(r, s);
                    c.updated += 1;
                }
                c.score = s;
                c.processed += 1;
            }
            None if f.xx => {}
            None => {
                z.insert_new(m, score);
                c.added += 1;
                c.score = score;
                c.processed += 1;
            }
        }
    }
    Ok(c)
}

// ---- single-member reads and removal -------------------------------------------------------------

fn zrem(core: &mut Core, a: &[&[u8]]) -> Reply {
    let key = a[1];
    let Some(z) = tri!(write(core, key)) else { return Reply::Int(0) };
    let mut removed = 0;
    for m in &a[2..] {
        if z.remove(m) {
            removed += 1;
            if z.is_empty() {
                break;
            }
        }
    }
    let empty = z.is_empty();
    delete_if_empty(core, key, empty);
    Reply::Int(removed)
}

fn zcard(core: &mut Core, a: &[&[u8]]) -> Reply {
    Reply::Int(tri!(read(core, a[1])).map_or(0, |z| z.len() as i64))
}

fn zscore(core: &mut Core, a: &[&[u8]]) -> Reply {
    match tri!(read(core, a[1])).and_then(|z| z.score(a[2])) {
        Some(s) => Reply::Double(s),
        None => Reply::Nil,
    }
}

fn zmscore(core: &mut Core, a: &[&[u8]]) -> Reply {
    let z = tri!(read(core, a[1]));
    Reply::Array(a[2..].iter().map(|m| z.and_then(|z| z.score(m)).map_or(Reply::Nil, Reply::Double)).collect())
}

fn zrank(core: &mut Core, a: &[&[u8]]) -> Reply {
    rank_generic(core, a, false)
}

fn zrevrank(core: &mut Core, a: &[&[u8]]) -> Reply {
    rank_generic(core, a, true)
}

/// ZRANK/ZREVRANK: O(log n) through the skiplist spans.
fn rank_generic(core: &mut Core, a: &[&[u8]], rev: bool) -> Reply {
    let Some(z) = tri!(read(core, a[1])) else { return Reply::Nil };
    match z.rank(a[2]) {
        Some(r) if rev => Reply::Int((z.len() - 1 - r) as i64),
        Some(r) => Reply::Int(r as i64),
        None => Reply::Nil,
    }
}

// ---- counts --------------------------------------------------------------------------------------

fn zcount(core: &mut Core, a: &[&[u8]]) -> Reply {
    let range = tri!(parse_score_range(a[2], a[3]));
    Reply::Int(tri!(read(core, a[1])).map_or(0, |z| z.count_in_range(&range) as i64))
}

fn zlexcount(core: &mut Core, a: &[&[u8]]) -> Reply {
    let range = tri!(parse_lex_range(a[2], a[3]));
    Reply::Int(tri!(read(core, a[1])).map_or(0, |z| z.count_in_lex(&range)))
}

// ---- the ZRANGE family -----------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Debug)]
enum RangeType {
    Auto,
    Rank,
    Score,
    Lex,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Direction {
    Auto,
    Forward,
    Reverse,
}

fn zrange(core: &mut Core, a: &[&[u8]]) -> Reply {
    zrange_generic(core, a, RangeType::Auto, Direction::Auto)
}
fn zrevrange(core: &mut Core, a: &[&[u8]]) -> Reply {
    zrange_generic(core, a, RangeType::Rank, Direction::Reverse)
}
fn zrangebyscore(core: &mut Core, a: &[&[u8]]) -> Reply {
    zrange_generic(core, a, RangeType::Score, Direction::Forward)
}
fn zrevrangebyscore(core: &mut Core, a: &[&[u8]]) -> Reply {
    zrange_generic(core, a, RangeType::Score, Direction::Reverse)
}
fn zrangebylex(core: &mut Core, a: &[&[u8]]) -> Reply {
    zrange_generic(core, a, RangeType::Lex, Direction::Forward)
}
fn zrevrangebylex(core: &mut Core, a: &[&[u8]]) -> Reply {
    zrange_generic(core, a, RangeType::Lex, Direction::Reverse)
}

/// A parsed range argument pair.
enum Range {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// ZRANGE's arguments, parsed.
struct RangeArgs {
    range: Range,
    reverse: bool,
    withscores: bool,
    offset: i64,
    limit: i64,
}

/// `zrangeGenericCommand`'s parsing: options first (an integer error in LIMIT stops the scan
/// there), then the option conflicts, then the range itself. `store` is ZRANGESTORE (no WITHSCORES).
fn parse_zrange(a: &[&[u8]], mut rtype: RangeType, mut dir: Direction, store: bool) -> Result<RangeArgs, Reply> {
    let (mut withscores, mut offset, mut limit) = (false, 0i64, -1i64);
    let mut j = 4;
    while j < a.len() {
        let o = a[j];
        let left = a.len() - j - 1;
        if !store && eq_ic(o, "withscores") {
            withscores = true;
        } else if eq_ic(o, "limit") && left >= 2 {
            offset = arg_i64(a[j + 1])?;
            limit = arg_i64(a[j + 2])?;
            j += 2;
        } else if dir == Direction::Auto && eq_ic(o, "rev") {
            dir = Direction::Reverse;
        } else if rtype == RangeType::Auto && eq_ic(o, "bylex") {
            rtype = RangeType::Lex;
        } else if rtype == RangeType::Auto && eq_ic(o, "byscore") {
            rtype = RangeType::Score;
        } else {
            return Err(Reply::err(SYNTAX));
        }
        j += 1;
    }
    let reverse = dir == Direction::Reverse;
    if rtype == RangeType::Auto {
        rtype = RangeType::Rank;
    }
    if limit != -1 && rtype == RangeType::Rank {
        return Err(Reply::err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && rtype == RangeType::Lex {
        return Err(Reply::err("ERR syntax error, WITHSCORES not supported in combination with BYLEX"));
    }
    // Reverse score and lex ranges are given as max, min.
    let (lo, hi) = if reverse && rtype != RangeType::Rank { (a[3], a[2]) } else { (a[2], a[3]) };
    let range = match rtype {
        RangeType::Score => Range::Score(parse_score_range(lo, hi)?),
        RangeType::Lex => Range::Lex(parse_lex_range(lo, hi)?),
        _ => Range::Rank(arg_i64(lo)?, arg_i64(hi)?),
    };
    Ok(RangeArgs { range, reverse, withscores, offset, limit })
}

/// The members a parsed range selects, flat, with scores when `withscores`.
fn run_zrange(z: &ZSet, p: RangeArgs, withscores: bool) -> Vec<Reply> {
    let RangeArgs { range, reverse, offset, limit, .. } = p;
    match range {
        Range::Rank(start, end) => range_by_rank(z, start, end, reverse, withscores),
        Range::Score(r) => {
            let first = if reverse { z.last_in_range(&r) } else { z.first_in_range(&r) };
            let in_range = |z: &ZSet, x: ZRef| {
                if reverse {
                    r.gte_min(z.score_at(x))
                } else {
                    r.lte_max(z.score_at(x))
                }
            };
            walk_limited(z, first, offset, limit, reverse, withscores, in_range)
        }
        Range::Lex(r) => {
            let first = if reverse { z.last_in_lex(&r) } else { z.first_in_lex(&r) };
            let in_range = |z: &ZSet, x: ZRef| {
                if reverse {
                    r.gte_min(z.member_at(x))
                } else {
                    r.lte_max(z.member_at(x))
                }
            };
            walk_limited(z, first, offset, limit, reverse, withscores, in_range)
        }
    }
}

/// ZRANGE and its older forms.
fn zrange_generic(core: &mut Core, a: &[&[u8]], rtype: RangeType, dir: Direction) -> Reply {
    let p = tri!(parse_zrange(a, rtype, dir, false));
    let withscores = p.withscores;
    let Some(z) = tri!(read(core, a[1])) else { return Reply::Array(Vec::new()) };
    let out = run_zrange(z, p, withscores);
    scored(core.resp3 && withscores, out)
}

/// ZRANGESTORE's selection: `a` is ZRANGE's layout (`a[1]` the source), the members and scores
/// that ZRANGE would reply.
pub(crate) fn zrange_collect(core: &mut Core, a: &[&[u8]], store: bool) -> Result<Vec<(Vec<u8>, f64)>, Reply> {
    let p = parse_zrange(a, RangeType::Auto, Direction::Auto, store)?;
    let Some(z) = read(core, a[1])? else { return Ok(Vec::new()) };
    let flat = run_zrange(z, p, true);
    let mut out = Vec::with_capacity(flat.len() / 2);
    let mut it = flat.into_iter();
    while let (Some(Reply::Bulk(m)), Some(Reply::Double(s))) = (it.next(), it.next()) {
        out.push((m, s));
    }
    Ok(out)
}

/// A flat `member, score, ...` list, nested as `[member, score]` pairs for a RESP3 caller.
pub(crate) fn scored(nest: bool, flat: Vec<Reply>) -> Reply {
    if !nest {
        return Reply::Array(flat);
    }
    let mut out = Vec::with_capacity(flat.len() / 2);
    let mut it = flat.into_iter();
    while let (Some(m), Some(s)) = (it.next(), it.next()) {
        out.push(Reply::Array(vec![m, s]));
    }
    Reply::Array(out)
}

/// Clamps Redis rank arguments (negative counts from the end) to 0-based `start..=end`, or `None` when
/// the range is empty.
fn clamp_ranks(len: usize, start: i64, end: i64) -> Option<(usize, usize)> {
    let llen = len as i64;
    let mut start = if start < 0 { llen.saturating_add(start) } else { start };
    let mut end = if end < 0 { llen.saturating_add(end) } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= llen {
        return None;
    }
    if end >= llen {
        end = llen - 1;
    }
    Some((start as usize, end as usize))
}

/// `genericZrangebyrankCommand`: O(log n) to the first member, then a walk.
fn range_by_rank(z: &ZSet, start: i64, end: i64, reverse: bool, withscores: bool) -> Vec<Reply> {
    let Some((start, end)) = clamp_ranks(z.len(), start, end) else { return Vec::new() };
    let n = end - start + 1;
    let mut out = Vec::with_capacity(if withscores { 2 * n } else { n });
    let mut x = if reverse {
        if start > 0 {
            z.by_rank(z.len() - start)
        } else {
            z.last()
        }
    } else if start > 0 {
        z.by_rank(start + 1)
    } else {
        z.first()
    };
    for _ in 0..n {
        let Some(r) = x else { break };
        emit(&mut out, z, r, withscores);
        x = if reverse { z.prev(r) } else { z.next(r) };
    }
    out
}

/// The walk of a score or lex range with LIMIT, as Redis's C loops `while (ln && offset--)` and
/// `while (ln && limit--)` do it: a negative offset skips everything, a negative limit means no limit.
fn walk_limited(
    z: &ZSet,
    first: Option<ZRef>,
    offset: i64,
    limit: i64,
    reverse: bool,
    withscores: bool,
    in_range: impl Fn(&ZSet, ZRef) -> bool,
) -> Vec<Reply> {
    let mut out = Vec::new();
    if offset > 0 && offset as u64 >= z.len() as u64 {
        return out;
    }
    let step = |x: ZRef| if reverse { z.prev(x) } else { z.next(x) };
    let mut x = first;
    let mut off = offset;
    while off != 0 {
        let Some(r) = x else { break };
        off = off.wrapping_sub(1);
        x = step(r);
    }
    let mut lim = limit;
    while lim != 0 {
        let Some(r) = x else { break };
        lim = lim.wrapping_sub(1);
        if !in_range(z, r) {
            break;
        }
        emit(&mut out, z, r, withscores);
        x = step(r);
    }
    out
}

// ---- range removal -------------------------------------------------------------------------------

fn zremrangebyscore(core: &mut Core, a: &[&[u8]]) -> Reply {
    let range = tri!(parse_score_range(a[2], a[3]));
    remove_generic(core, a[1], |z| z.remove_range_by_score(&range))
}

fn zremrangebylex(core: &mut Core, a: &[&[u8]]) -> Reply {
    let range = tri!(parse_lex_range(a[2], a[3]));
    remove_generic(core, a[1], |z| z.remove_range_by_lex(&range))
}

fn zremrangebyrank(core: &mut Core, a: &[&[u8]]) -> Reply {
    let start = tri!(arg_i64(a[2]));
    let end = tri!(arg_i64(a[3]));
    remove_generic(core, a[1], |z| match clamp_ranks(z.len(), start, end) {
        Some((s, e)) => z.remove_range_by_rank(s + 1, e + 1),
        None => 0,
    })
}

/// Runs a range removal on the set at `key` (0 when missing) and deletes the key if it empties.
fn remove_generic(core: &mut Core, key: &[u8], remove: impl FnOnce(&mut ZSet) -> usize) -> Reply {
    let Some(z) = tri!(write(core, key)) else { return Reply::Int(0) };
    let removed = remove(z);
    let empty = z.is_empty();
    delete_if_empty(core, key, empty);
    Reply::Int(removed as i64)
}

// ---- pops ----------------------------------------------------------------------------------------

fn zpopmin(core: &mut Core, a: &[&[u8]]) -> Reply {
    pop_generic(core, a, false)
}

fn zpopmax(core: &mut Core, a: &[&[u8]]) -> Reply {
    pop_generic(core, a, true)
}

/// `genericZpopCommand` for one key: the count is checked first, then the key's type, then a count of
/// 0 gives an empty array.
fn pop_generic(core: &mut Core, a: &[&[u8]], max: bool) -> Reply {
    if a.len() > 3 {
        return Reply::err(SYNTAX);
    }
    let count = match a.get(2) {
        Some(c) => match arg_i64(c) {
            Ok(n) if n >= 0 => n as u64,
            _ => return Reply::err(NOT_POSITIVE),
        },
        None => 1,
    };
    let key = a[1];
    let Some(z) = tri!(write(core, key)) else { return Reply::Array(Vec::new()) };
    let n = count.min(z.len() as u64) as usize;
    let mut out = Vec::with_capacity(2 * n);
    for _ in 0..n {
        let Some((m, s)) = z.pop(max) else { break };
        out.push(Reply::Bulk(m.to_vec()));
        out.push(Reply::Double(s));
    }
    let empty = z.is_empty();
    delete_if_empty(core, key, empty);
    // With an explicit count, a RESP3 caller gets [member, score] pairs.
    scored(core.resp3 && a.len() == 3, out)
}

/// ZMPOP's keys: `numkeys` at 1, then the keys.
fn zmpop_keys_of<'a>(args: &[&'a [u8]]) -> Vec<&'a [u8]> {
    crate::command_spec::numkeys_keys(args, false)
}

/// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count].
fn zmpop(core: &mut Core, a: &[&[u8]]) -> Reply {
    let m = tri!(super::blocking::parse_mpop(a, 1, ("min", "max")));
    zmpop_keys(core, &a[m.first..m.first + m.n], m.right, m.count)
}

/// The event of a pop of the lowest or highest members.
fn zpop_event(max: bool) -> &'static str {
    if max {
        "zpopmax"
    } else {
        "zpopmin"
    }
}

/// `genericZpopCommand` over several keys with a nested reply (ZMPOP, BZMPOP): the first existing
/// key gives up to `count` members, `[key, [[member, score], ...]]`; a key of another type before
/// it is WRONGTYPE; none is a nil array.
pub(crate) fn zmpop_keys(core: &mut Core, keys: &[&[u8]], max: bool, count: usize) -> Reply {
    for key in keys {
        let Some(z) = tri!(write(core, key)) else { continue };
        let n = count.min(z.len());
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let Some((m, s)) = z.pop(max) else { break };
            out.push(Reply::Array(vec![Reply::Bulk(m.to_vec()), Reply::Double(s)]));
        }
        let empty = z.is_empty();
        core.notify(crate::settings::notify::ZSET, zpop_event(max), key);
        if empty {
            delete_if_empty(core, key, empty);
            core.notify(crate::settings::notify::GENERIC, "del", key);
        }
        return Reply::Array(vec![Reply::Bulk(key.to_vec()), Reply::Array(out)]);
    }
    Reply::NilArray
}

/// One member for BZPOPMIN/BZPOPMAX from the set at `key`: `[key, member, score]` (a nil array when
/// it has none).
pub(crate) fn bzpop_one(core: &mut Core, key: &[u8], max: bool) -> Reply {
    let Some(z) = tri!(write(core, key)) else { return Reply::NilArray };
    let Some((m, s)) = z.pop(max) else { return Reply::NilArray };
    let empty = z.is_empty();
    core.notify(crate::settings::notify::ZSET, zpop_event(max), key);
    if empty {
        delete_if_empty(core, key, empty);
        core.notify(crate::settings::notify::GENERIC, "del", key);
    }
    Reply::Array(vec![Reply::Bulk(key.to_vec()), Reply::Bulk(m.to_vec()), Reply::Double(s)])
}

/// Whether `key` holds a non-empty sorted set (`Err` for another type), for the blocking commands.
pub(crate) fn has_members(core: &mut Core, key: &[u8]) -> Result<bool, Reply> {
    Ok(write(core, key)?.is_some_and(|z| !z.is_empty()))
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_integer_and_infinity_shortcuts_parse_as_the_general_path() {
        for t in [
            "0",
            "-0",
            "007",
            "1",
            "-1",
            "123456789012345",
            "-123456789012345",
            "1234567890123456",
            "-inf",
            "inf",
            "+inf",
            "1704067200000",
        ] {
            let (fast, general) = (parse_number(t.as_bytes()), crate::command_spec::parse_f64(t.as_bytes()));
            assert_eq!(fast.map(f64::to_bits), general.map(f64::to_bits), "{t}");
        }
    }
    use super::*;
    use crate::clock::VirtualClock;

    fn run(core: &mut Core, line: &str) -> Reply {
        let args: Vec<&[u8]> = line.split(' ').map(|s| s.as_bytes()).collect();
        crate::cmd::dispatch(core, &args).into_resp2()
    }
    fn bulk(s: &str) -> Reply {
        Reply::Bulk(s.as_bytes().to_vec())
    }
    fn arr(items: &[&str]) -> Reply {
        Reply::Array(items.iter().map(|s| bulk(s)).collect())
    }
    fn err(s: &str) -> Reply {
        Reply::Error(s.into())
    }
    fn core() -> Core {
        Core::new(VirtualClock::default())
    }

    #[test]
    fn score_parsing_matches_get_double_from_object() {
        assert_eq!(parse_score(b"0.1"), Some(0.1));
        assert_eq!(parse_score(b"inf"), Some(f64::INFINITY));
        assert_eq!(parse_score(b"-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score(b"0x10"), Some(16.0));
        assert_eq!(parse_score(b"1e-310"), Some(1e-310));
        assert_eq!(parse_score(b"0e5"), Some(0.0));
        assert_eq!(parse_score(b"1.e5"), Some(100000.0));
        assert_eq!(parse_score(b"-.5e-3"), Some(-0.0005));
        assert_eq!(parse_score(b"1700000000123"), Some(1700000000123.0));
        for bad in ["1e400", "1e-400", " 1", "1 ", "nan", "", "abc", "1e", "0x", "-", ".", "e5", "1e+", "--1", "1.2.3"]
        {
            assert_eq!(parse_score(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn bound_parsing_matches_zsl_parse_range() {
        assert_eq!(parse_bound(b""), Some((0.0, false)));
        assert_eq!(parse_bound(b"("), Some((0.0, true)));
        assert_eq!(parse_bound(b" 1"), Some((1.0, false)));
        assert_eq!(parse_bound(b"1e400"), Some((f64::INFINITY, false)));
        assert_eq!(parse_bound(b"(-inf"), Some((f64::NEG_INFINITY, true)));
        assert_eq!(parse_bound(b"1 "), None);
        assert_eq!(parse_bound(b"nan"), None);
        assert_eq!(parse_bound(b"(nan"), None);
        assert_eq!(parse_bound(b"  "), None);
    }

    #[test]
    fn zadd_options_and_errors() {
        let mut c = core();
        assert_eq!(run(&mut c, "ZADD z 0.1 a"), Reply::Int(1));
        assert_eq!(run(&mut c, "ZSCORE z a"), bulk("0.10000000000000001"));
        assert_eq!(run(&mut c, "ZADD z 1 a 2 b 3 c 4 d 5 e"), Reply::Int(4));
        assert_eq!(run(&mut c, "ZADD z GT CH 0 a 3 b 3 c 10 x"), Reply::Int(2));
        assert_eq!(run(&mut c, "ZADD z LT CH 0 a 3 b 3 c 10 y"), Reply::Int(2));
        assert_eq!(run(&mut c, "ZADD z XX GT 100 a 100 nope"), Reply::Int(0));
        assert_eq!(run(&mut c, "ZADD z XX LT INCR 1 a"), Reply::Nil);
        assert_eq!(run(&mut c, "ZADD z GT INCR -1 a"), Reply::Nil);
        assert_eq!(run(&mut c, "ZADD z GT INCR 1 a"), bulk("101"));
        assert_eq!(run(&mut c, "ZADD z INCR NX 1 a"), Reply::Nil);
        assert_eq!(run(&mut c, "ZADD z INCR +inf q"), bulk("inf"));
        assert_eq!(run(&mut c, "ZADD z INCR -inf q"), err("ERR resulting score is not a number (NaN)"));
        assert_eq!(run(&mut c, "ZINCRBY z -inf q"), err("ERR resulting score is not a number (NaN)"));
        assert_eq!(
            run(&mut c, "ZADD z NX XX GT 1 a"),
            err("ERR XX and NX options at the same time are not compatible")
        );
        assert_eq!(
            run(&mut c, "ZADD z NX GT 1 a"),
            err("ERR GT, LT, and/or NX options at the same time are not compatible")
        );
        assert_eq!(run(&mut c, "ZADD z NX GT 1 a 2"), err(SYNTAX));
        assert_eq!(run(&mut c, "ZADD z INCR 1 a 2 b"), err("ERR INCR option supports a single increment-element pair"));
        assert_eq!(run(&mut c, "ZADD z c 1 a"), err(SYNTAX));
        assert_eq!(run(&mut c, "ZADD z 1 a 1e400 b"), err(NOT_FLOAT));
        assert_eq!(run(&mut c, "ZADD z ch"), err("ERR wrong number of arguments for 'zadd' command"));
        assert_eq!(run(&mut c, "ZINCRBY z nx a"), err(SYNTAX));
        assert_eq!(run(&mut c, "ZINCRBY z abc a"), err(NOT_FLOAT));
        assert_eq!(run(&mut c, "ZADD nokey XX 1 a"), Reply::Int(0));
        assert_eq!(run(&mut c, "ZADD nokey XX INCR 1 a"), Reply::Nil);
        assert_eq!(run(&mut c, "EXISTS nokey"), Reply::Int(0));
        run(&mut c, "SET s x");
        assert_eq!(run(&mut c, "ZADD s x 1"), err(NOT_FLOAT));
        assert_eq!(run(&mut c, "ZADD s 1 a"), err(WRONGTYPE));
    }

    #[test]
    fn negative_zero_depends_on_encoding() {
        let mut c = core();
        assert_eq!(run(&mut c, "ZADD neg INCR -0 b"), bulk("-0"));
        assert_eq!(run(&mut c, "ZSCORE neg b"), bulk("0"));
        assert_eq!(run(&mut c, "ZINCRBY neg -0 b"), bulk("0"));
        let mut line = String::from("ZADD big");
        for i in 1..=129 {
            line.push_str(&format!(" {i} m{i}"));
        }
        assert_eq!(run(&mut c, &line), Reply::Int(129));
        assert_eq!(run(&mut c, "ZADD big -0 neg"), Reply::Int(1));
        assert_eq!(run(&mut c, "ZSCORE big neg"), bulk("-0"));
    }

    #[test]
    fn ranges_and_their_errors() {
        let mut c = core();
        run(&mut c, "ZADD z 1 a 2 b 3 c 4 d 5 e");
        assert_eq!(run(&mut c, "ZRANGE z 0 0 WITHSCORES"), arr(&["a", "1"]));
        assert_eq!(run(&mut c, "ZRANGE z -1 -1 WITHSCORES"), arr(&["e", "5"]));
        assert_eq!(run(&mut c, "ZRANGE z -100 100"), arr(&["a", "b", "c", "d", "e"]));
        assert_eq!(run(&mut c, "ZRANGE z 2 1"), arr(&[]));
        assert_eq!(run(&mut c, "ZREVRANGE z 0 1 WITHSCORES"), arr(&["e", "5", "d", "4"]));
        assert_eq!(run(&mut c, "ZRANGEBYSCORE z (2 4"), arr(&["c", "d"]));
        assert_eq!(run(&mut c, "ZRANGEBYSCORE z (3 (3"), arr(&[]));
        assert_eq!(run(&mut c, "ZREVRANGEBYSCORE z +inf -inf LIMIT 1 2 WITHSCORES"), arr(&["d", "4", "c", "3"]));
        assert_eq!(run(&mut c, "ZRANGE z 5 2 BYSCORE REV LIMIT 0 2"), arr(&["e", "d"]));
        assert_eq!(run(&mut c, "ZRANGEBYSCORE z -inf +inf LIMIT -1 2"), arr(&[]));
        assert_eq!(run(&mut c, "ZRANGEBYSCORE z -inf +inf LIMIT 3 -1"), arr(&["d", "e"]));
        assert_eq!(run(&mut c, "ZRANGE z 0 -1 LIMIT 0 -1"), arr(&["a", "b", "c", "d", "e"]));
        assert_eq!(
            run(&mut c, "ZRANGE z 0 -1 LIMIT 0 1"),
            err("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
        );
        assert_eq!(
            run(&mut c, "ZRANGE z - + BYLEX WITHSCORES"),
            err("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
        );
        assert_eq!(run(&mut c, "ZREVRANGE z 0 -1 REV"), err(SYNTAX));
        assert_eq!(run(&mut c, "ZRANGE z 0 -1 BYSCORE BYLEX"), err(SYNTAX));
        assert_eq!(run(&mut c, "ZRANGE z 0 -1 LIMIT a 1 foo"), err(crate::command_spec::NOT_INTEGER));
        assert_eq!(run(&mut c, "ZRANGE z 0 -1 foo LIMIT a 1"), err(SYNTAX));
        assert_eq!(run(&mut c, "ZRANGE z a b BYSCORE"), err(NOT_FLOAT_RANGE));
        assert_eq!(run(&mut c, "ZRANGE z a b BYLEX"), err(NOT_LEX_RANGE));
        assert_eq!(run(&mut c, "ZRANGE z [b (d BYLEX"), arr(&["b", "c"]));
        assert_eq!(run(&mut c, "ZCOUNT z (1 +inf"), Reply::Int(4));
        assert_eq!(run(&mut c, "ZLEXCOUNT z - +"), Reply::Int(5));
        assert_eq!(run(&mut c, "ZRANK z c"), Reply::Int(2));
        assert_eq!(run(&mut c, "ZREVRANK z c"), Reply::Int(2));
        assert_eq!(run(&mut c, "ZRANK z nope"), Reply::Nil);
        assert_eq!(run(&mut c, "ZRANGE nokey 0 -1"), arr(&[]));
    }

    #[test]
    fn removals_pops_and_key_deletion() {
        let mut c = core();
        run(&mut c, "ZADD z 1 a 2 b 3 c 4 d 5 e");
        assert_eq!(run(&mut c, "ZREM z a a zz"), Reply::Int(1));
        assert_eq!(run(&mut c, "ZREMRANGEBYSCORE z 100 0"), Reply::Int(0));
        assert_eq!(run(&mut c, "ZREMRANGEBYSCORE z (2 3"), Reply::Int(1));
        assert_eq!(run(&mut c, "ZREMRANGEBYRANK z -1 -1"), Reply::Int(1));
        assert_eq!(run(&mut c, "ZPOPMIN z 0"), arr(&[]));
        assert_eq!(run(&mut c, "ZPOPMIN z -1"), err(NOT_POSITIVE));
        assert_eq!(run(&mut c, "ZPOPMIN z a"), err(NOT_POSITIVE));
        assert_eq!(run(&mut c, "ZPOPMIN z 1 2"), err(SYNTAX));
        assert_eq!(run(&mut c, "ZPOPMAX z 5"), arr(&["d", "4", "b", "2"]));
        assert_eq!(run(&mut c, "EXISTS z"), Reply::Int(0));
        run(&mut c, "ZADD z 1 a 2 b");
        assert_eq!(run(&mut c, "ZREMRANGEBYSCORE z -inf +inf"), Reply::Int(2));
        assert_eq!(run(&mut c, "EXISTS z"), Reply::Int(0));
        assert_eq!(run(&mut c, "ZMSCORE nokey a b"), Reply::Array(vec![Reply::Nil, Reply::Nil]));
        assert_eq!(run(&mut c, "ZPOPMIN nokey"), arr(&[]));
        run(&mut c, "SET s x");
        assert_eq!(run(&mut c, "ZPOPMIN s 0"), err(WRONGTYPE));
        assert_eq!(run(&mut c, "ZCARD s"), err(WRONGTYPE));
        assert_eq!(run(&mut c, "ZRANGEBYSCORE s a b"), err(NOT_FLOAT_RANGE));
    }

    /// The sliding-log limiter's per-request commands against a 100,000-member key stay logarithmic.
    #[test]
    fn sliding_log_on_a_big_key_is_logarithmic() {
        let mut c = core();
        let mut line = String::from("ZADD log");
        for i in 0..100_000 {
            line.push_str(&format!(" {i} r{i}"));
        }
        assert_eq!(run(&mut c, &line), Reply::Int(100_000));
        let steps = |c: &mut Core| match &c.db.map[&b"log"[..]].value {
            Value::ZSet(z) => z.steps(),
            _ => unreachable!(),
        };
        for t in 0..500 {
            let before = steps(&mut c);
            assert_eq!(run(&mut c, &format!("ZREMRANGEBYSCORE log -inf {}", t)), Reply::Int(1));
            assert_eq!(run(&mut c, "ZCARD log"), Reply::Int(99_999));
            assert_eq!(run(&mut c, &format!("ZADD log {} n{t}", 100_000 + t)), Reply::Int(1));
            assert_eq!(run(&mut c, "ZRANGE log 0 0 WITHSCORES"), arr(&[&format!("r{}", t + 1), &format!("{}", t + 1)]));
            assert_eq!(run(&mut c, "ZRANGE log -1 -1"), arr(&[&format!("n{t}")]));
            let cost = steps(&mut c) - before;
            assert!(cost < 500, "request {t} visited {cost} nodes");
        }
    }
}
