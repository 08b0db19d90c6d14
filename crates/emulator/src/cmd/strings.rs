//! String commands: GET, SET and its options, the SET shortcuts, MGET/MSET, GETEX/GETSET/GETDEL, APPEND,
//! ranges, LCS and the integer and float counters, with Redis 7.0's replies and checks in Redis's order.
use crate::command_spec::flags::*;
use crate::command_spec::{arg_i64, eq_ic, CommandSpec, KeySpec, NOT_INTEGER, SYNTAX};
use crate::core::Core;
use crate::keyspace::{parse_canonical_i64, RStr, Value, WRONGTYPE};
use crate::longdouble;
use crate::reply::{Reply, ReplySink};
use crate::tri;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "get", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: get },
    CommandSpec { name: "set", arity: -3, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: set },
    CommandSpec { name: "setnx", arity: 3, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: setnx },
    CommandSpec { name: "setex", arity: 4, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: setex },
    CommandSpec { name: "psetex", arity: 4, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: psetex },
    CommandSpec { name: "getex", arity: -2, flags: WRITE, keys: KeySpec::ONE, handler: getex },
    CommandSpec { name: "getset", arity: 3, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: getset },
    CommandSpec { name: "getdel", arity: 2, flags: WRITE, keys: KeySpec::ONE, handler: getdel },
    CommandSpec { name: "mget", arity: -2, flags: READONLY, keys: KeySpec::ALL, handler: mget },
    CommandSpec { name: "mset", arity: -3, flags: WRITE | DENYOOM, keys: KeySpec::PAIRS, handler: mset },
    CommandSpec { name: "msetnx", arity: -3, flags: WRITE | DENYOOM, keys: KeySpec::PAIRS, handler: msetnx },
    CommandSpec { name: "append", arity: 3, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: append },
    CommandSpec { name: "strlen", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: strlen },
    CommandSpec { name: "getrange", arity: 4, flags: READONLY, keys: KeySpec::ONE, handler: getrange },
    CommandSpec { name: "substr", arity: 4, flags: READONLY, keys: KeySpec::ONE, handler: getrange },
    CommandSpec { name: "setrange", arity: 4, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: setrange },
    CommandSpec { name: "lcs", arity: -3, flags: READONLY, keys: KeySpec::TWO, handler: lcs },
    CommandSpec { name: "incr", arity: 2, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: incr },
    CommandSpec { name: "decr", arity: 2, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: decr },
    CommandSpec { name: "incrby", arity: 3, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: incrby },
    CommandSpec { name: "decrby", arity: 3, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: decrby },
    CommandSpec { name: "incrbyfloat", arity: 3, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: incrbyfloat },
];

/// Redis's default `proto-max-bulk-len`: APPEND and SETRANGE refuse to grow a string past it.
const PROTO_MAX_BULK_LEN: u64 = 512 * 1024 * 1024;
const TOO_BIG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

/// Reads a string value: `Ok(None)` when missing, WRONGTYPE for other types.
pub(crate) fn read_str(core: &mut Core, key: &[u8]) -> Result<Option<Vec<u8>>, Reply> {
    let now = core.now_ms();
    match core.db.get(key, now) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::Str(s) => Ok(Some(s.to_bytes())),
            _ => Err(Reply::err(WRONGTYPE)),
        },
    }
}

fn get(core: &mut Core, a: &[&[u8]]) -> Reply {
    let mut out = None;
    get_to(core, a, &mut out);
    out.expect("get_to writes a reply")
}

/// GET through a [`ReplySink`] (`redis.call` pushes the value straight onto the Lua stack, without
/// a copy of its own: an integer's digits are written on the stack).
pub(super) fn get_to(core: &mut Core, a: &[&[u8]], out: &mut dyn ReplySink) {
    let now = core.now_ms();
    match core.db.get(a[1], now).map(|e| &e.value) {
        None => out.bulk(None),
        Some(Value::Str(s)) => s.with_bytes(|b| out.bulk(Some(b))),
        Some(_) => out.reply(Reply::err(WRONGTYPE)),
    }
}

/// Which expire option of SET/GETEX was given (Redis keeps only the last of repeated identical ones).
#[derive(Clone, Copy, PartialEq, Debug)]
enum ExpireKind {
    Ex,
    Px,
    ExAt,
    PxAt,
}

/// Options of SET (and GETEX, which takes only the expire ones and PERSIST).
#[derive(Default)]
struct SetOpts<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    expire: Option<(ExpireKind, &'a [u8])>,
}

/// Redis's `parseExtendedStringArgumentsOrReply`: options from `a[start..]`. An expire option may be
/// repeated (the last value wins) but not mixed with another expire option or KEEPTTL/PERSIST; NX and XX
/// exclude each other; only SET takes NX, XX, GET and KEEPTTL, only GETEX takes PERSIST.
fn parse_set_opts<'a>(a: &[&'a [u8]], start: usize, is_set: bool) -> Result<SetOpts<'a>, Reply> {
    let mut o = SetOpts::default();
    let mut i = start;
    while i < a.len() {
        let opt = a[i];
        let next = a.get(i + 1).copied();
        let kind = if eq_ic(opt, "ex") {
            Some(ExpireKind::Ex)
        } else if eq_ic(opt, "px") {
            Some(ExpireKind::Px)
        } else if eq_ic(opt, "exat") {
            Some(ExpireKind::ExAt)
        } else if eq_ic(opt, "pxat") {
            Some(ExpireKind::PxAt)
        } else {
            None
        };
        if is_set && eq_ic(opt, "nx") && !o.xx {
            o.nx = true;
        } else if is_set && eq_ic(opt, "xx") && !o.nx {
            o.xx = true;
        } else if is_set && eq_ic(opt, "get") {
            o.get = true;
        } else if is_set && eq_ic(opt, "keepttl") && !o.persist && o.expire.is_none() {
            o.keepttl = true;
        } else if !is_set && eq_ic(opt, "persist") && !o.keepttl && o.expire.is_none() {
            o.persist = true;
        } else if let (Some(k), Some(v)) = (kind, next) {
            if o.keepttl || o.persist || o.expire.is_some_and(|(prev, _)| prev != k) {
                return Err(Reply::err(SYNTAX));
            }
            o.expire = Some((k, v));
            i += 1;
        } else {
            return Err(Reply::err(SYNTAX));
        }
        i += 1;
    }
    Ok(o)
}

/// The error for a bad expire time, naming the command as Redis does.
fn invalid_expire(cmd: &str) -> Reply {
    Reply::Error(format!("ERR invalid expire time in '{cmd}' command"))
}

/// Redis's `getExpireMillisecondsOrReply`: the absolute expiry in unix ms of an EX/PX/EXAT/PXAT value.
/// The value must be a positive integer; seconds must not overflow when turned into ms, nor relative
/// times when added to the current time.
fn expire_ms(now: i64, kind: ExpireKind, v: &[u8], cmd: &str) -> Result<i64, Reply> {
    let n = arg_i64(v)?;
    let seconds = matches!(kind, ExpireKind::Ex | ExpireKind::ExAt);
    if n <= 0 || (seconds && n > i64::MAX / 1000) {
        return Err(invalid_expire(cmd));
    }
    let ms = if seconds { n * 1000 } else { n };
    let when = match kind {
        ExpireKind::Ex | ExpireKind::Px => ms.checked_add(now).ok_or_else(|| invalid_expire(cmd))?,
        ExpireKind::ExAt | ExpireKind::PxAt => ms,
    };
    if when <= 0 {
        return Err(invalid_expire(cmd));
    }
    Ok(when)
}

/// Redis's `setGenericCommand`: the expire time is checked first, then GET's type check, then NX/XX.
/// `ok`/`abort` are the replies on success and when NX/XX stops the write (SETNX uses 1 and 0).
fn set_generic(core: &mut Core, key: &[u8], val: &[u8], o: &SetOpts, cmd: &str, ok: Reply, abort: Reply) -> Reply {
    let now = core.now_ms();
    let when = match o.expire {
        Some((kind, v)) => Some(tri!(expire_ms(now, kind, v, cmd))),
        None => None,
    };
    // The plain SET is the hot path: one lookup, no reads of the old entry.
    if !(o.nx || o.xx || o.get || o.keepttl) {
        core.db.set(key, Value::Str(RStr::from_bytes(val)), when);
        if when.is_some_and(|t| t <= now) {
            core.db.remove(key, now);
        }
        core.touch(key);
        return ok;
    }
    let (found, old, old_ttl) = match core.db.get(key, now) {
        None => (false, None, None),
        Some(e) => {
            let old = match (&e.value, o.get) {
                (Value::Str(s), true) => Some(s.to_bytes()),
                (_, true) => return Reply::err(WRONGTYPE),
                _ => None,
            };
            (true, old, e.expire_at)
        }
    };
    let old_reply = || old.clone().map_or(Reply::Nil, Reply::Bulk);
    if (o.nx && found) || (o.xx && !found) {
        return if o.get { old_reply() } else { abort };
    }
    let expire_at = if o.keepttl { old_ttl } else { when };
    core.db.set(key, Value::Str(RStr::from_bytes(val)), expire_at);
    if when.is_some_and(|t| t <= now) {
        core.db.remove(key, now);
    }
    core.touch(key);
    if o.get {
        old_reply()
    } else {
        ok
    }
}

fn set(core: &mut Core, a: &[&[u8]]) -> Reply {
    let o = tri!(parse_set_opts(a, 3, true));
    set_generic(core, a[1], a[2], &o, "set", Reply::ok(), Reply::Nil)
}

fn setnx(core: &mut Core, a: &[&[u8]]) -> Reply {
    let o = SetOpts { nx: true, ..SetOpts::default() };
    set_generic(core, a[1], a[2], &o, "setnx", Reply::Int(1), Reply::Int(0))
}

fn setex(core: &mut Core, a: &[&[u8]]) -> Reply {
    let o = SetOpts { expire: Some((ExpireKind::Ex, a[2])), ..SetOpts::default() };
    set_generic(core, a[1], a[3], &o, "setex", Reply::ok(), Reply::Nil)
}

fn psetex(core: &mut Core, a: &[&[u8]]) -> Reply {
    let o = SetOpts { expire: Some((ExpireKind::Px, a[2])), ..SetOpts::default() };
    set_generic(core, a[1], a[3], &o, "psetex", Reply::ok(), Reply::Nil)
}

/// GETEX: a missing key replies nil before the expire value is even checked; a past EXAT/PXAT deletes.
fn getex(core: &mut Core, a: &[&[u8]]) -> Reply {
    let o = tri!(parse_set_opts(a, 2, false));
    let key = a[1];
    let now = core.now_ms();
    let Some(e) = core.db.get_mut(key, now) else { return Reply::Nil };
    let Value::Str(s) = &e.value else { return Reply::err(WRONGTYPE) };
    let when = match o.expire {
        Some((kind, v)) => Some(tri!(expire_ms(now, kind, v, "getex"))),
        None => None,
    };
    let reply = Reply::Bulk(s.to_bytes());
    match when {
        Some(t) if t <= now => {
            core.db.remove(key, now);
        }
        Some(t) => e.expire_at = Some(t),
        None if o.persist && e.expire_at.is_some() => e.expire_at = None,
        None => return reply,
    }
    // A new deadline touches the key even when it is the one it had.
    core.touch(key);
    reply
}

/// GETSET: like SET with GET, so the TTL is cleared.
fn getset(core: &mut Core, a: &[&[u8]]) -> Reply {
    let old = tri!(read_str(core, a[1]));
    core.db.set(a[1], Value::Str(RStr::from_bytes(a[2])), None);
    core.touch(a[1]);
    old.map_or(Reply::Nil, Reply::Bulk)
}

fn getdel(core: &mut Core, a: &[&[u8]]) -> Reply {
    match tri!(read_str(core, a[1])) {
        Some(v) => {
            let now = core.now_ms();
            core.db.remove(a[1], now);
            Reply::Bulk(v)
        }
        None => Reply::Nil,
    }
}

/// MGET: keys holding other types read as nil.
fn mget(core: &mut Core, a: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    let mut out = Vec::with_capacity(a.len() - 1);
    for k in &a[1..] {
        out.push(match core.db.get(k, now) {
            Some(e) => match &e.value {
                Value::Str(s) => Reply::Bulk(s.to_bytes()),
                _ => Reply::Nil,
            },
            None => Reply::Nil,
        });
    }
    Reply::Array(out)
}

/// MSET: every key is overwritten and loses its TTL; a later duplicate wins.
fn mset(core: &mut Core, a: &[&[u8]]) -> Reply {
    if a.len() % 2 == 0 {
        return super::arity_error("mset");
    }
    for kv in a[1..].chunks_exact(2) {
        core.db.set(kv[0], Value::Str(RStr::from_bytes(kv[1])), None);
        core.touch(kv[0]);
    }
    Reply::ok()
}

/// MSETNX: sets nothing (and replies 0) if any key exists.
fn msetnx(core: &mut Core, a: &[&[u8]]) -> Reply {
    if a.len() % 2 == 0 {
        return super::arity_error("msetnx");
    }
    let now = core.now_ms();
    for kv in a[1..].chunks_exact(2) {
        if core.db.get(kv[0], now).is_some() {
            return Reply::Int(0);
        }
    }
    for kv in a[1..].chunks_exact(2) {
        core.db.set(kv[0], Value::Str(RStr::from_bytes(kv[1])), None);
        core.touch(kv[0]);
    }
    Reply::Int(1)
}

/// The bytes of a string value; integers are printed into `buf` (no allocation for the others).
fn str_view<'a>(s: &'a RStr, buf: &'a mut itoa::Buffer) -> &'a [u8] {
    match s {
        RStr::Raw(v) | RStr::Grown(v) | RStr::Exact(v) => v,
        RStr::Int(i) => buf.format(*i).as_bytes(),
    }
}

/// APPEND: creates the key (with the integer encoding when it fits) or appends, keeping the TTL.
fn append(core: &mut Core, a: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    let (key, tail) = (a[1], a[2]);
    match core.db.get_mut(key, now) {
        None => {
            core.db.set(key, Value::Str(RStr::from_bytes(tail)), None);
            core.touch(key);
            Reply::Int(tail.len() as i64)
        }
        Some(e) => {
            let Value::Str(s) = &mut e.value else { return Reply::err(WRONGTYPE) };
            if (s.len() as u64).saturating_add(tail.len() as u64) > PROTO_MAX_BULK_LEN {
                return Reply::err(TOO_BIG);
            }
            let newlen = s.len() + tail.len();
            let v = crate::object_size::make_room(s, newlen);
            v.extend_from_slice(tail);
            let n = v.len() as i64;
            core.touch(key);
            Reply::Int(n)
        }
    }
}

fn strlen(core: &mut Core, a: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    match core.db.get(a[1], now) {
        None => Reply::Int(0),
        Some(e) => match &e.value {
            Value::Str(s) => Reply::Int(s.len() as i64),
            _ => Reply::err(WRONGTYPE),
        },
    }
}

/// GETRANGE/SUBSTR: both indexes are parsed before the key is read; inclusive, negative from the end.
fn getrange(core: &mut Core, a: &[&[u8]]) -> Reply {
    let mut start = tri!(arg_i64(a[2]));
    let mut end = tri!(arg_i64(a[3]));
    let now = core.now_ms();
    let Some(e) = core.db.get(a[1], now) else { return Reply::Bulk(Vec::new()) };
    let Value::Str(s) = &e.value else { return Reply::err(WRONGTYPE) };
    let mut digits = itoa::Buffer::new();
    let bytes = str_view(s, &mut digits);
    let len = bytes.len() as i64;
    if start < 0 && end < 0 && start > end {
        return Reply::Bulk(Vec::new());
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        return Reply::Bulk(Vec::new());
    }
    Reply::Bulk(bytes[start as usize..=end as usize].to_vec())
}

/// SETRANGE: overwrites from `offset`, zero-padding; an empty value only reports the length.
fn setrange(core: &mut Core, a: &[&[u8]]) -> Reply {
    let offset = tri!(arg_i64(a[2]));
    if offset < 0 {
        return Reply::err("ERR offset is out of range");
    }
    let (key, val) = (a[1], a[3]);
    let total = (offset as u64).saturating_add(val.len() as u64);
    let now = core.now_ms();
    match core.db.get_mut(key, now) {
        None => {
            if val.is_empty() {
                return Reply::Int(0);
            }
            if total > PROTO_MAX_BULK_LEN {
                return Reply::err(TOO_BIG);
            }
            let mut v = vec![0u8; total as usize];
            v[offset as usize..].copy_from_slice(val);
            core.db.set(key, Value::Str(RStr::Exact(v)), None);
            core.touch(key);
            Reply::Int(total as i64)
        }
        Some(e) => {
            let Value::Str(s) = &mut e.value else { return Reply::err(WRONGTYPE) };
            if val.is_empty() {
                return Reply::Int(s.len() as i64);
            }
            if total > PROTO_MAX_BULK_LEN {
                return Reply::err(TOO_BIG);
            }
            let newlen = (total as usize).max(s.len());
            let v = crate::object_size::make_room(s, newlen);
            if v.len() < total as usize {
                v.resize(total as usize, 0);
            }
            v[offset as usize..total as usize].copy_from_slice(val);
            let n = v.len() as i64;
            core.touch(key);
            Reply::Int(n)
        }
    }
}

/// LCS: the longest common subsequence of two strings, its length (LEN), or the matching ranges (IDX,
/// with MINMATCHLEN and WITHMATCHLEN), walked back from the end of the strings exactly as Redis does.
fn lcs(core: &mut Core, a: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    let mut strs: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    for (slot, key) in strs.iter_mut().zip([a[1], a[2]]) {
        if let Some(e) = core.db.get(key, now) {
            match &e.value {
                Value::Str(s) => *slot = s.to_bytes(),
                _ => return Reply::err("ERR The specified keys must contain string values"),
            }
        }
    }
    let (mut getlen, mut getidx, mut withmatchlen, mut minmatchlen) = (false, false, false, 0i64);
    let mut j = 3;
    while j < a.len() {
        let opt = a[j];
        if eq_ic(opt, "idx") {
            getidx = true;
        } else if eq_ic(opt, "len") {
            getlen = true;
        } else if eq_ic(opt, "withmatchlen") {
            withmatchlen = true;
        } else if eq_ic(opt, "minmatchlen") && j + 1 < a.len() {
            minmatchlen = tri!(arg_i64(a[j + 1])).max(0);
            j += 1;
        } else {
            return Reply::err(SYNTAX);
        }
        j += 1;
    }
    if getidx && getlen {
        return Reply::err("ERR If you want both the length and indexes, please just use IDX.");
    }
    let (sa, sb) = (&strs[0], &strs[1]);
    let (alen, blen) = (sa.len(), sb.len());
    let cells = (alen as u64 + 1) * (blen as u64 + 1);
    if cells.saturating_mul(4) > PROTO_MAX_BULK_LEN {
        return Reply::err("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
    }
    let w = blen + 1;
    let mut t = vec![0u32; cells as usize];
    for i in 1..=alen {
        for k in 1..=blen {
            t[i * w + k] = if sa[i - 1] == sb[k - 1] {
                t[(i - 1) * w + k - 1] + 1
            } else {
                t[(i - 1) * w + k].max(t[i * w + k - 1])
            };
        }
    }
    let total = t[alen * w + blen];
    if getlen {
        return Reply::Int(total as i64);
    }
    let mut result = vec![0u8; total as usize];
    let mut idx = total as usize;
    let mut matches = Vec::new();
    // A range is open when `ar_start != alen` (Redis's sentinel).
    let (mut ar_start, mut ar_end, mut br_start, mut br_end) = (alen, 0usize, 0usize, 0usize);
    let (mut i, mut k) = (alen, blen);
    while i > 0 && k > 0 {
        let mut emit = false;
        if sa[i - 1] == sb[k - 1] {
            result[idx - 1] = sa[i - 1];
            if ar_start == alen {
                ar_start = i - 1;
                ar_end = i - 1;
                br_start = k - 1;
                br_end = k - 1;
            } else if ar_start == i && br_start == k {
                ar_start -= 1;
                br_start -= 1;
            } else {
                emit = true;
            }
            if ar_start == 0 || br_start == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            k -= 1;
        } else {
            if t[(i - 1) * w + k] > t[i * w + k - 1] {
                i -= 1;
            } else {
                k -= 1;
            }
            if ar_start != alen {
                emit = true;
            }
        }
        let match_len = (ar_end as i64) - (ar_start as i64) + 1;
        if emit {
            if getidx && (minmatchlen == 0 || match_len >= minmatchlen) {
                let mut m = vec![
                    Reply::Array(vec![Reply::Int(ar_start as i64), Reply::Int(ar_end as i64)]),
                    Reply::Array(vec![Reply::Int(br_start as i64), Reply::Int(br_end as i64)]),
                ];
                if withmatchlen {
                    m.push(Reply::Int(match_len));
                }
                matches.push(Reply::Array(m));
            }
            ar_start = alen;
        }
    }
    if getidx {
        Reply::Map(vec![
            (Reply::Bulk(b"matches".to_vec()), Reply::Array(matches)),
            (Reply::Bulk(b"len".to_vec()), Reply::Int(total as i64)),
        ])
    } else {
        Reply::Bulk(result)
    }
}

/// Adds `by` to the integer at `key` (missing counts as 0), keeping its TTL.
pub(crate) fn incr_by(core: &mut Core, key: &[u8], by: i64) -> Reply {
    let now = core.now_ms();
    match core.db.get_mut(key, now) {
        None => {
            core.db.set(key, Value::Str(RStr::Int(by)), None);
            core.touch(key);
            Reply::Int(by)
        }
        Some(e) => {
            // The result is a new object (a shared one when small), never a COPY's own.
            e.unshared_int = None;
            let Value::Str(s) = &mut e.value else { return Reply::err(WRONGTYPE) };
            let cur = match s {
                RStr::Int(i) => *i,
                RStr::Raw(b) | RStr::Grown(b) | RStr::Exact(b) => match parse_canonical_i64(b) {
                    Some(i) => i,
                    None => return Reply::err(NOT_INTEGER),
                },
            };
            match cur.checked_add(by) {
                Some(n) => {
                    *s = RStr::Int(n);
                    core.touch(key);
                    Reply::Int(n)
                }
                None => Reply::err("ERR increment or decrement would overflow"),
            }
        }
    }
}

fn incr(core: &mut Core, a: &[&[u8]]) -> Reply {
    incr_by(core, a[1], 1)
}
fn decr(core: &mut Core, a: &[&[u8]]) -> Reply {
    incr_by(core, a[1], -1)
}
fn incrby(core: &mut Core, a: &[&[u8]]) -> Reply {
    let by = tri!(arg_i64(a[2]));
    incr_by(core, a[1], by)
}
fn decrby(core: &mut Core, a: &[&[u8]]) -> Reply {
    let by = tri!(arg_i64(a[2]));
    match by.checked_neg() {
        Some(n) => incr_by(core, a[1], n),
        None => Reply::err("ERR decrement would overflow"),
    }
}

/// INCRBYFLOAT: `long double` arithmetic (see [`longdouble`]); the result is stored as a plain string
/// (Redis stores the printed form, never the integer encoding) and the TTL is kept.
fn incrbyfloat(core: &mut Core, a: &[&[u8]]) -> Reply {
    let (key, by) = (a[1], a[2]);
    let now = core.now_ms();
    match core.db.get_mut(key, now) {
        None => match longdouble::incr_by_float(b"0", by) {
            Ok(v) => {
                core.db.set(key, Value::Str(RStr::Raw(v.clone())), None);
                core.touch(key);
                Reply::Bulk(v)
            }
            Err(e) => Reply::err(e),
        },
        Some(e) => {
            let Value::Str(s) = &mut e.value else { return Reply::err(WRONGTYPE) };
            let mut digits = itoa::Buffer::new();
            match longdouble::incr_by_float(str_view(s, &mut digits), by) {
                Ok(v) => {
                    *s = RStr::Raw(v.clone());
                    core.touch(key);
                    Reply::Bulk(v)
                }
                Err(e) => Reply::err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::VirtualClock;

    fn run(core: &mut Core, line: &str) -> Reply {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        crate::cmd::dispatch(core, &args)
    }
    fn bulk(s: &str) -> Reply {
        Reply::Bulk(s.as_bytes().to_vec())
    }
    fn err(s: &str) -> Reply {
        Reply::Error(s.into())
    }
    fn ttl(core: &mut Core, key: &str) -> Reply {
        run(core, &format!("TTL {key}"))
    }

    // The expected replies below were read from a real Redis 7.0.15 for the same commands.
    #[test]
    fn set_options() {
        let mut c = Core::new(VirtualClock::default());
        assert_eq!(run(&mut c, "SET k v EX 10 EX 20"), Reply::ok());
        assert_eq!(ttl(&mut c, "k"), Reply::Int(20));
        assert_eq!(run(&mut c, "SET k v EX abc EX 10"), Reply::ok());
        assert_eq!(run(&mut c, "SET k v KEEPTTL KEEPTTL"), Reply::ok());
        assert_eq!(ttl(&mut c, "k"), Reply::Int(10));
        for bad in [
            "EX 10 KEEPTTL",
            "KEEPTTL EX 10",
            "NX XX",
            "EX 10 PX 100",
            "PX 100 PXAT 100",
            "EX",
            "FOO",
            "GET EX 1 NX XX",
            "EX 0 FOO",
            "PERSIST",
        ] {
            assert_eq!(run(&mut c, &format!("SET k v {bad}")), err(SYNTAX), "{bad}");
        }
        assert_eq!(run(&mut c, "SET k v GET NX"), bulk("v"));
        assert_eq!(run(&mut c, "SET k v2 NX GET"), bulk("v"));
        assert_eq!(run(&mut c, "SET k v GET GET"), bulk("v"));
        let inv = err("ERR invalid expire time in 'set' command");
        for bad in ["EX 0", "EX -1", "PX 9223372036854775807", "EX 9223372036854775", "EX 9223372036854776"] {
            assert_eq!(run(&mut c, &format!("SET k v {bad}")), inv, "{bad}");
        }
        assert_eq!(run(&mut c, "SET k v EX abc"), err(NOT_INTEGER));
        assert_eq!(run(&mut c, "SET k v EXAT 1"), Reply::ok());
        assert_eq!(run(&mut c, "EXISTS k"), Reply::Int(0));
        assert_eq!(run(&mut c, "SET k v PXAT 9223372036854775807"), Reply::ok());
    }

    #[test]
    fn set_family_and_ttls() {
        let mut c = Core::new(VirtualClock::default());
        assert_eq!(run(&mut c, "SET n 5 EX 100"), Reply::ok());
        assert_eq!(run(&mut c, "INCR n"), Reply::Int(6));
        assert_eq!(ttl(&mut c, "n"), Reply::Int(100));
        assert_eq!(run(&mut c, "SET n 6"), Reply::ok());
        assert_eq!(ttl(&mut c, "n"), Reply::Int(-1));
        assert_eq!(run(&mut c, "SETNX n 7"), Reply::Int(0));
        assert_eq!(run(&mut c, "SETNX n2 7"), Reply::Int(1));
        assert_eq!(run(&mut c, "SETEX s 10 v"), Reply::ok());
        assert_eq!(ttl(&mut c, "s"), Reply::Int(10));
        assert_eq!(run(&mut c, "SETEX s 0 v"), err("ERR invalid expire time in 'setex' command"));
        assert_eq!(run(&mut c, "SETEX s abc v"), err(NOT_INTEGER));
        assert_eq!(run(&mut c, "PSETEX s 0 v"), err("ERR invalid expire time in 'psetex' command"));
        assert_eq!(run(&mut c, "PSETEX s 1500 v"), Reply::ok());
        assert_eq!(run(&mut c, "PTTL s"), Reply::Int(1500));
        assert_eq!(run(&mut c, "MSET a 1 b 2 c"), err("ERR wrong number of arguments for 'mset' command"));
        assert_eq!(run(&mut c, "MSETNX y 1 z"), err("ERR wrong number of arguments for 'msetnx' command"));
        assert_eq!(run(&mut c, "MSET a 1 b 2"), Reply::ok());
        assert_eq!(run(&mut c, "MSETNX a 1 z 2"), Reply::Int(0));
        assert_eq!(run(&mut c, "MSETNX y 1 z 2"), Reply::Int(1));
        assert_eq!(run(&mut c, "EXPIRE a 100"), Reply::Int(1));
        assert_eq!(run(&mut c, "GETSET a 11"), bulk("1"));
        assert_eq!(ttl(&mut c, "a"), Reply::Int(-1));
        assert_eq!(run(&mut c, "GETDEL a"), bulk("11"));
        assert_eq!(run(&mut c, "GETDEL a"), Reply::Nil);
        assert_eq!(run(&mut c, "EXPIRE b 100"), Reply::Int(1));
        assert_eq!(run(&mut c, "APPEND b xyz"), Reply::Int(4));
        assert_eq!(ttl(&mut c, "b"), Reply::Int(100));
        assert_eq!(run(&mut c, "STRLEN b"), Reply::Int(4));
        assert_eq!(run(&mut c, "STRLEN nokey"), Reply::Int(0));
        run(&mut c, "LPUSH l a");
        if run(&mut c, "TYPE l") == Reply::Status("list".into()) {
            assert_eq!(run(&mut c, "MGET b nokey l"), Reply::Array(vec![bulk("2xyz"), Reply::Nil, Reply::Nil]));
            assert_eq!(run(&mut c, "GETDEL l"), err(WRONGTYPE));
            assert_eq!(run(&mut c, "SET l v GET"), err(WRONGTYPE));
            assert_eq!(run(&mut c, "SET l v NX GET"), err(WRONGTYPE));
            assert_eq!(run(&mut c, "INCRBYFLOAT l xyz"), err(WRONGTYPE));
        }
    }

    #[test]
    fn getex_rules() {
        let mut c = Core::new(VirtualClock::default());
        run(&mut c, "SET k -1");
        assert_eq!(run(&mut c, "GETEX k EX 100"), bulk("-1"));
        assert_eq!(ttl(&mut c, "k"), Reply::Int(100));
        assert_eq!(run(&mut c, "GETEX k PERSIST"), bulk("-1"));
        assert_eq!(ttl(&mut c, "k"), Reply::Int(-1));
        assert_eq!(run(&mut c, "GETEX k PERSIST PERSIST"), bulk("-1"));
        assert_eq!(run(&mut c, "GETEX k EX 1 EX 2"), bulk("-1"));
        for bad in ["PX 5000 PERSIST", "EX 1 PX 2", "NX", "KEEPTTL", "GET", "EX"] {
            assert_eq!(run(&mut c, &format!("GETEX k {bad}")), err(SYNTAX), "{bad}");
        }
        assert_eq!(run(&mut c, "GETEX k EX 0"), err("ERR invalid expire time in 'getex' command"));
        assert_eq!(run(&mut c, "GETEX k EX abc"), err(NOT_INTEGER));
        assert_eq!(run(&mut c, "GETEX nokey EX 0"), Reply::Nil);
        assert_eq!(run(&mut c, "GETEX nokey FOO"), err(SYNTAX));
        assert_eq!(run(&mut c, "GETEX k EXAT 1"), bulk("-1"));
        assert_eq!(run(&mut c, "EXISTS k"), Reply::Int(0));
    }

    #[test]
    fn ranges() {
        let mut c = Core::new(VirtualClock::default());
        run(&mut c, "SET k hello");
        let cases = [
            ("0 -1", "hello"),
            ("1 2", "el"),
            ("-3 -1", "llo"),
            ("-1 -3", ""),
            ("5 10", ""),
            ("3 100", "lo"),
            ("-100 1", "he"),
        ];
        for (r, want) in cases {
            assert_eq!(run(&mut c, &format!("GETRANGE k {r}")), bulk(want), "{r}");
        }
        assert_eq!(run(&mut c, "GETRANGE k a 1"), err(NOT_INTEGER));
        assert_eq!(run(&mut c, "GETRANGE nokey a 1"), err(NOT_INTEGER));
        assert_eq!(run(&mut c, "GETRANGE nokey 0 -1"), bulk(""));
        assert_eq!(run(&mut c, "SUBSTR k 0 1"), bulk("he"));
        run(&mut c, "SET n 12345");
        assert_eq!(run(&mut c, "GETRANGE n 1 2"), bulk("23"));
        assert_eq!(run(&mut c, "SETRANGE k 6 xx"), Reply::Int(8));
        assert_eq!(run(&mut c, "GET k"), Reply::Bulk(b"hello\0xx".to_vec()));
        assert_eq!(run(&mut c, "SETRANGE k -1 x"), err("ERR offset is out of range"));
        assert_eq!(run(&mut c, "SETRANGE k a x"), err(NOT_INTEGER));
        assert_eq!(run(&mut c, "SETRANGE k 536870912 x"), err(TOO_BIG));
        assert_eq!(run(&mut c, "SETRANGE nokey 2 ab"), Reply::Int(4));
        assert_eq!(run(&mut c, "GET nokey"), Reply::Bulk(b"\0\0ab".to_vec()));
        assert_eq!(run(&mut c, "SETRANGE n 1 9"), Reply::Int(5));
        assert_eq!(run(&mut c, "GET n"), bulk("19345"));
    }

    #[test]
    fn lcs_matches_redis() {
        let mut c = Core::new(VirtualClock::default());
        assert_eq!(run(&mut c, "LCS a b"), bulk(""));
        run(&mut c, "MSET a ohmytext b mynewtext");
        assert_eq!(run(&mut c, "LCS a b"), bulk("mytext"));
        assert_eq!(run(&mut c, "LCS a b LEN"), Reply::Int(6));
        let r = |a: i64, b: i64| Reply::Array(vec![Reply::Int(a), Reply::Int(b)]);
        let want = Reply::Map(vec![
            (
                bulk("matches"),
                Reply::Array(vec![Reply::Array(vec![r(4, 7), r(5, 8)]), Reply::Array(vec![r(2, 3), r(0, 1)])]),
            ),
            (bulk("len"), Reply::Int(6)),
        ]);
        assert_eq!(run(&mut c, "LCS a b IDX"), want);
        assert_eq!(
            run(&mut c, "LCS a b IDX LEN"),
            err("ERR If you want both the length and indexes, please just use IDX.")
        );
    }

    #[test]
    fn int_views() {
        for i in [0, 7, -7, 1234567890, i64::MAX, i64::MIN] {
            let mut buf = itoa::Buffer::new();
            assert_eq!(str_view(&RStr::Int(i), &mut buf), i.to_string().as_bytes());
        }
    }

    #[test]
    fn counters() {
        let mut c = Core::new(VirtualClock::default());
        run(&mut c, "SET big 9223372036854775807");
        assert_eq!(run(&mut c, "INCR big"), err("ERR increment or decrement would overflow"));
        assert_eq!(run(&mut c, "INCRBY big -1"), Reply::Int(9223372036854775806));
        assert_eq!(run(&mut c, "DECRBY n -9223372036854775808"), err("ERR decrement would overflow"));
        assert_eq!(run(&mut c, "DECRBY n 9223372036854775808"), err(NOT_INTEGER));
        run(&mut c, "SET z 007");
        assert_eq!(run(&mut c, "INCR z"), err(NOT_INTEGER));
        assert_eq!(run(&mut c, "DECR nokey4"), Reply::Int(-1));
        run(&mut c, "SET f 10.5");
        assert_eq!(run(&mut c, "INCRBYFLOAT f 0.1"), bulk("10.6"));
        assert_eq!(run(&mut c, "INCRBYFLOAT f inf"), err("ERR increment would produce NaN or Infinity"));
        assert_eq!(run(&mut c, "INCRBYFLOAT f nan"), err("ERR value is not a valid float"));
        assert_eq!(run(&mut c, "INCRBYFLOAT f 0x10"), bulk("26.6"));
        run(&mut c, "SET k 12");
        run(&mut c, "APPEND k 3");
        assert_eq!(run(&mut c, "INCRBYFLOAT k 1"), bulk("124"));
        assert_eq!(run(&mut c, "INCR k"), Reply::Int(125));
        run(&mut c, "SET f 5 EX 100");
        assert_eq!(run(&mut c, "INCRBYFLOAT f 1.5"), bulk("6.5"));
        assert_eq!(ttl(&mut c, "f"), Reply::Int(100));
    }
}
