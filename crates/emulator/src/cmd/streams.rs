//! Stream commands: XADD (auto IDs from the emulator's clock, explicit and `<ms>-*` IDs, NOMKSTREAM,
//! MAXLEN/MINID with `=`/`~` and LIMIT), XTRIM, XLEN, XRANGE/XREVRANGE (COUNT, exclusive `(` IDs) and
//! XDEL, parsed in Redis 7.0's order with its error texts; the value is
//! [`crate::keyspace::Stream`].
use crate::command_spec::flags::*;
use crate::command_spec::{arg_i64, eq_ic, CommandSpec, KeySpec, SYNTAX};
use crate::core::Core;
use crate::keyspace::{c_sign_and_digits, parse_canonical_i64, Stream, StreamId, Trim, Value};
use crate::reply::Reply;
use crate::settings::notify;
use crate::tri;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "xadd", arity: -5, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: xadd },
    CommandSpec { name: "xtrim", arity: -4, flags: WRITE, keys: KeySpec::ONE, handler: xtrim },
    CommandSpec { name: "xlen", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: xlen },
    CommandSpec { name: "xrange", arity: -4, flags: READONLY, keys: KeySpec::ONE, handler: xrange },
    CommandSpec { name: "xrevrange", arity: -4, flags: READONLY, keys: KeySpec::ONE, handler: xrevrange },
    CommandSpec { name: "xdel", arity: -3, flags: WRITE, keys: KeySpec::ONE, handler: xdel },
];

pub(crate) const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";
const NOT_GREATER: &str = "ERR The ID specified in XADD is equal or smaller than the target stream top item";

/// Redis's `string2ull`: a canonical non-negative integer, or what `strtoull` accepts in base 10
/// (leading spaces, a sign, leading zeros; a minus negates modulo 2^64), the whole string, no overflow.
fn string2ull(s: &[u8]) -> Option<u64> {
    if let Some(v) = parse_canonical_i64(s) {
        return (v >= 0).then_some(v as u64);
    }
    let (neg, digits) = c_sign_and_digits(s);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Redis's `streamGenericParseIDOrReply`: `-`, `+` (refused when `strict`), `<ms>`, `<ms>-<seq>`, and
/// with `star` the `<ms>-*` form. Returns the ID and whether a sequence was given.
pub(crate) fn parse_id(arg: &[u8], missing_seq: u64, strict: bool, star: bool) -> Result<(StreamId, bool), Reply> {
    let invalid = || Reply::err(INVALID_ID);
    if arg.len() > 127 {
        return Err(invalid());
    }
    let buf = &arg[..arg.iter().position(|&c| c == 0).unwrap_or(arg.len())];
    if strict && (buf == b"-" || buf == b"+") {
        return Err(invalid());
    }
    if buf == b"-" {
        return Ok((StreamId::MIN, true));
    }
    if buf == b"+" {
        return Ok((StreamId::MAX, true));
    }
    let (ms_part, seq_part) = match buf.iter().position(|&c| c == b'-') {
        Some(d) => (&buf[..d], Some(&buf[d + 1..])),
        None => (buf, None),
    };
    let ms = string2ull(ms_part).ok_or_else(invalid)?;
    match seq_part {
        Some(b"*") if star => Ok((StreamId { ms, seq: 0 }, false)),
        Some(sp) => Ok((StreamId { ms, seq: string2ull(sp).ok_or_else(invalid)? }, true)),
        None => Ok((StreamId { ms, seq: missing_seq }, true)),
    }
}

/// XADD's and XTRIM's options (`streamParseAddOrTrimArgsOrReply`).
struct AddTrimArgs {
    /// Where the ID is (XADD).
    idpos: usize,
    /// The given ID and whether its sequence was given; None for `*`.
    id: Option<(StreamId, bool)>,
    trim: Option<Trim>,
    approx: bool,
    /// Entries a trim may remove (0: no bound).
    limit: u64,
    no_mkstream: bool,
}

fn parse_add_trim(a: &[&[u8]], xadd: bool) -> Result<AddTrimArgs, Reply> {
    let mut p = AddTrimArgs { idpos: 0, id: None, trim: None, approx: false, limit: 0, no_mkstream: false };
    let mut limit: i64 = 0;
    let mut limit_given = false;
    let both = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
    let mut i = 2;
    while i < a.len() {
        let moreargs = a.len() - 1 - i;
        let opt = a[i];
        if xadd && opt == b"*" {
            break;
        } else if (eq_ic(opt, "maxlen") || eq_ic(opt, "minid")) && moreargs > 0 {
            if p.trim.is_some() {
                return Err(Reply::err(both));
            }
            p.approx = false;
            let next = a[i + 1];
            if moreargs >= 2 && next == b"~" {
                p.approx = true;
                i += 1;
            } else if moreargs >= 2 && next == b"=" {
                i += 1;
            }
            if eq_ic(opt, "maxlen") {
                let n = arg_i64(a[i + 1])?;
                if n < 0 {
                    return Err(Reply::err("ERR The MAXLEN argument must be >= 0."));
                }
                p.trim = Some(Trim::MaxLen(n as u64));
            } else {
                let (id, _) = parse_id(a[i + 1], 0, true, false)?;
                p.trim = Some(Trim::MinId(id));
            }
            i += 1;
        } else if eq_ic(opt, "limit") && moreargs > 0 {
            limit = arg_i64(a[i + 1])?;
            if limit < 0 {
                return Err(Reply::err("ERR The LIMIT argument must be >= 0."));
            }
            limit_given = true;
            i += 1;
        } else if xadd && eq_ic(opt, "nomkstream") {
            p.no_mkstream = true;
        } else if xadd {
            p.id = Some(parse_id(opt, 0, true, true)?);
            break;
        } else {
            return Err(Reply::err(SYNTAX));
        }
        i += 1;
    }
    if limit != 0 && p.trim.is_none() {
        return Err(Reply::err("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"));
    }
    if !xadd && p.trim.is_none() {
        return Err(Reply::err("ERR syntax error, XTRIM must be called with a trimming strategy"));
    }
    if limit_given {
        if !p.approx {
            return Err(Reply::err("ERR syntax error, LIMIT cannot be used without the special ~ option"));
        }
        p.limit = limit as u64;
    } else if p.approx {
        p.limit = 100 * crate::keyspace::stream::NODE_MAX_ENTRIES;
    }
    p.idpos = i;
    Ok(p)
}

/// The stream at `key`: Ok(None) when missing, WRONGTYPE for other types.
pub(crate) fn stream_mut<'a>(core: &'a mut Core, key: &[u8]) -> Result<Option<&'a mut Stream>, Reply> {
    let now = core.now_ms();
    core.db.typed(key, now, |v| if let Value::Stream(s) = v { Some(&mut **s) } else { None }).map_err(Reply::err)
}

fn xadd(core: &mut Core, a: &[&[u8]]) -> Reply {
    let p = tri!(parse_add_trim(a, true));
    let field_pos = p.idpos + 1;
    if a.len() < field_pos + 2 || (a.len() - field_pos) % 2 == 1 {
        return super::arity_error("xadd");
    }
    if let Some((id, true)) = p.id {
        if id == StreamId::MIN {
            return Reply::err("ERR The ID specified in XADD must be greater than 0-0");
        }
    }
    let key = a[1];
    let now = core.now_ms();
    if tri!(stream_mut(core, key)).is_none() {
        if p.no_mkstream {
            return Reply::Nil;
        }
        core.db.set(key, Value::Stream(Box::default()), None);
    }
    let s = tri!(stream_mut(core, key)).expect("present");
    if s.last_id == StreamId::MAX {
        return Reply::err("ERR The stream has exhausted the last possible ID, unable to add more items");
    }
    let last = s.last_id;
    let id = match p.id {
        Some((id, true)) => id,
        Some((id, false)) => {
            if last.ms == id.ms {
                match last.incr() {
                    Some(n) if n.ms == id.ms => n,
                    _ => return Reply::err(NOT_GREATER),
                }
            } else {
                id
            }
        }
        None => {
            let ms = now.max(0) as u64;
            if ms > last.ms {
                StreamId { ms, seq: 0 }
            } else {
                last.incr().expect("not exhausted")
            }
        }
    };
    let fields: Vec<(&[u8], &[u8])> = a[field_pos..].chunks_exact(2).map(|kv| (kv[0], kv[1])).collect();
    if s.append(id, &fields).is_err() {
        return Reply::err(NOT_GREATER);
    }
    let trimmed = p.trim.map_or(0, |how| s.trim(how, p.approx, p.limit));
    core.touch(key);
    core.notify(notify::STREAM, "xadd", key);
    if trimmed > 0 {
        core.notify(notify::STREAM, "xtrim", key);
    }
    Reply::Bulk(id.to_bytes())
}

fn xtrim(core: &mut Core, a: &[&[u8]]) -> Reply {
    let p = tri!(parse_add_trim(a, false));
    let key = a[1];
    let Some(s) = tri!(stream_mut(core, key)) else { return Reply::Int(0) };
    let how = p.trim.expect("XTRIM has a strategy");
    let n = s.trim(how, p.approx, p.limit);
    if n > 0 {
        core.touch(key);
    }
    Reply::Int(n as i64)
}

fn xlen(core: &mut Core, a: &[&[u8]]) -> Reply {
    match tri!(stream_mut(core, a[1])) {
        Some(s) => Reply::Int(s.length as i64),
        None => Reply::Int(0),
    }
}

/// `streamParseIntervalIDOrReply`: `(` before an ID excludes it (strict parsing of the rest).
pub(crate) fn interval_id(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), Reply> {
    if arg.len() > 1 && arg[0] == b'(' {
        let (id, _) = parse_id(&arg[1..], missing_seq, true, false)?;
        Ok((id, true))
    } else {
        let (id, _) = parse_id(arg, missing_seq, false, false)?;
        Ok((id, false))
    }
}

fn xrange_generic(core: &mut Core, a: &[&[u8]], rev: bool) -> Reply {
    let (start_arg, end_arg) = if rev { (a[3], a[2]) } else { (a[2], a[3]) };
    let (mut start, start_ex) = tri!(interval_id(start_arg, 0));
    if start_ex {
        match start.incr() {
            Some(n) => start = n,
            None => return Reply::err("ERR invalid start ID for the interval"),
        }
    }
    let (mut end, end_ex) = tri!(interval_id(end_arg, u64::MAX));
    if end_ex {
        match end.decr() {
            Some(n) => end = n,
            None => return Reply::err("ERR invalid end ID for the interval"),
        }
    }
    let mut count: i64 = -1;
    let mut j = 4;
    while j < a.len() {
        if eq_ic(a[j], "count") && j + 1 < a.len() {
            count = tri!(arg_i64(a[j + 1])).max(0);
            j += 2;
        } else {
            return Reply::err(SYNTAX);
        }
    }
    let Some(s) = tri!(stream_mut(core, a[1])) else { return Reply::Array(Vec::new()) };
    if count == 0 {
        return Reply::NilArray;
    }
    let count = if count < 0 { 0 } else { count as usize };
    Reply::Array(s.range(start, end, count, rev).into_iter().map(entry_reply).collect())
}

/// An entry as XRANGE and the reading commands reply it: `[id, [field, value, ...]]`.
pub(crate) fn entry_reply(e: &crate::keyspace::stream::StreamEntry) -> Reply {
    let kv = e.fields.iter().flat_map(|(f, v)| [Reply::Bulk(f.clone()), Reply::Bulk(v.clone())]).collect();
    Reply::Array(vec![Reply::Bulk(e.id.to_bytes()), Reply::Array(kv)])
}

fn xrange(core: &mut Core, a: &[&[u8]]) -> Reply {
    xrange_generic(core, a, false)
}

fn xrevrange(core: &mut Core, a: &[&[u8]]) -> Reply {
    xrange_generic(core, a, true)
}

/// XDEL key id [id ...]: the key first (missing: 0), then every ID is checked before any is deleted.
fn xdel(core: &mut Core, a: &[&[u8]]) -> Reply {
    let key = a[1];
    if tri!(stream_mut(core, key)).is_none() {
        return Reply::Int(0);
    }
    let mut ids = Vec::with_capacity(a.len() - 2);
    for arg in &a[2..] {
        ids.push(tri!(parse_id(arg, 0, true, false)).0);
    }
    let s = tri!(stream_mut(core, key)).expect("present");
    let deleted = s.xdel(&ids);
    if deleted > 0 {
        core.touch(key);
    }
    Reply::Int(deleted as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_as_redis() {
        let id = |ms, seq| StreamId { ms, seq };
        assert_eq!(parse_id(b"5", 0, true, true), Ok((id(5, 0), true)));
        assert_eq!(parse_id(b"5-*", 0, true, true), Ok((id(5, 0), false)));
        assert_eq!(parse_id(b" 5", 0, true, true), Ok((id(5, 0), true)));
        assert_eq!(parse_id(b"+6", 0, true, true), Ok((id(6, 0), true)));
        assert_eq!(parse_id(b"007-01", 0, true, true), Ok((id(7, 1), true)));
        assert_eq!(parse_id(b"5", u64::MAX, false, false), Ok((id(5, u64::MAX), true)));
        assert_eq!(parse_id(b"-", 0, false, false), Ok((StreamId::MIN, true)));
        assert!(parse_id(b"-", 0, true, false).is_err());
        assert!(parse_id(b"-0", 0, true, true).is_err());
        assert!(parse_id(b"5-*", 0, true, false).is_err());
        assert!(parse_id(b"18446744073709551616", 0, true, true).is_err());
        assert_eq!(parse_id(b"5--03", 0, true, false), Ok((id(5, 0u64.wrapping_sub(3)), true)));
    }
}
