//! Keyspace commands: DEL, EXISTS, expiry and TTLs, TYPE, RENAME, KEYS, SCAN, OBJECT, TOUCH, RANDOMKEY
//! and COPY, with Redis 7.0's replies and checks in Redis's order.
use crate::command_spec::flags::*;
use crate::command_spec::{arg_i64, eq_ic, CommandSpec, KeySpec, SYNTAX};
use crate::core::Core;
use crate::keyspace::{glob_match, scan_hash, Entry, RStr, Value};
use crate::reply::Reply;
use crate::tri;

/// OBJECT's key is its third argument (`OBJECT ENCODING key`).
const OBJECT_KEY: KeySpec = KeySpec::at(2, 2, 1);

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "del", arity: -2, flags: WRITE, keys: KeySpec::ALL, handler: del },
    CommandSpec { name: "unlink", arity: -2, flags: WRITE, keys: KeySpec::ALL, handler: del },
    CommandSpec { name: "exists", arity: -2, flags: READONLY, keys: KeySpec::ALL, handler: exists },
    CommandSpec { name: "touch", arity: -2, flags: READONLY, keys: KeySpec::ALL, handler: exists },
    CommandSpec { name: "expire", arity: -3, flags: WRITE, keys: KeySpec::ONE, handler: expire },
    CommandSpec { name: "pexpire", arity: -3, flags: WRITE, keys: KeySpec::ONE, handler: pexpire },
    CommandSpec { name: "expireat", arity: -3, flags: WRITE, keys: KeySpec::ONE, handler: expireat },
    CommandSpec { name: "pexpireat", arity: -3, flags: WRITE, keys: KeySpec::ONE, handler: pexpireat },
    CommandSpec { name: "ttl", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: ttl },
    CommandSpec { name: "pttl", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: pttl },
    CommandSpec { name: "expiretime", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: expiretime },
    CommandSpec { name: "pexpiretime", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: pexpiretime },
    CommandSpec { name: "persist", arity: 2, flags: WRITE, keys: KeySpec::ONE, handler: persist },
    CommandSpec { name: "type", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: type_cmd },
    CommandSpec { name: "rename", arity: 3, flags: WRITE, keys: KeySpec::TWO, handler: rename },
    CommandSpec { name: "renamenx", arity: 3, flags: WRITE, keys: KeySpec::TWO, handler: renamenx },
    CommandSpec { name: "copy", arity: -3, flags: WRITE | DENYOOM, keys: KeySpec::TWO, handler: copy },
    CommandSpec { name: "keys", arity: 2, flags: READONLY, keys: KeySpec::NONE, handler: keys },
    CommandSpec { name: "scan", arity: -2, flags: READONLY, keys: KeySpec::NONE, handler: scan },
    CommandSpec { name: "randomkey", arity: 1, flags: READONLY, keys: KeySpec::NONE, handler: randomkey },
    CommandSpec { name: "object", arity: -2, flags: READONLY, keys: OBJECT_KEY, handler: object },
];

fn del(core: &mut Core, a: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    Reply::Int(a[1..].iter().filter(|k| core.db.remove(k, now)).count() as i64)
}

/// EXISTS and TOUCH: live keys, a repeated key counted each time.
fn exists(core: &mut Core, a: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    let touch = eq_ic(a[0], "touch");
    Reply::Int(
        a[1..]
            .iter()
            .filter(|k| if touch { core.db.get(k, now).is_some() } else { core.db.get_notouch(k, now).is_some() })
            .count() as i64,
    )
}

/// A C string's view of an argument: Redis prints some arguments with `%s`, which stops at a NUL.
fn c_str(b: &[u8]) -> std::borrow::Cow<'_, str> {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    let s = String::from_utf8_lossy(&b[..end]);
    // Errors are formatted on one line: Redis turns CR and LF into spaces.
    if s.contains(['\r', '\n']) {
        return s.replace(['\r', '\n'], " ").into();
    }
    s
}

/// The shared body of EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT (`expireGenericCommand`): options first,
/// then the number, then overflow checks, then the key; a time already past deletes the key (reply 1).
fn expire_generic(core: &mut Core, a: &[&[u8]], unit_ms: i64, absolute: bool, name: &str) -> Reply {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for o in &a[3..] {
        if eq_ic(o, "nx") {
            nx = true;
        } else if eq_ic(o, "xx") {
            xx = true;
        } else if eq_ic(o, "gt") {
            gt = true;
        } else if eq_ic(o, "lt") {
            lt = true;
        } else {
            return Reply::Error(format!("ERR Unsupported option {}", c_str(o)));
        }
    }
    if nx && (xx || gt || lt) {
        return Reply::err("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return Reply::err("ERR GT and LT options at the same time are not compatible");
    }
    let n = tri!(arg_i64(a[2]));
    let invalid = || Reply::Error(format!("ERR invalid expire time in '{name}' command"));
    let now = core.now_ms();
    let Some(ms) = n.checked_mul(unit_ms) else { return invalid() };
    let when = if absolute {
        ms
    } else {
        match ms.checked_add(now) {
            Some(t) => t,
            None => return invalid(),
        }
    };
    let key = a[1];
    let Some(e) = core.db.get_mut(key, now) else { return Reply::Int(0) };
    let cur = e.expire_at;
    if nx && cur.is_some() || xx && cur.is_none() {
        return Reply::Int(0);
    }
    // A key without a TTL counts as an infinite TTL for GT and LT.
    if gt && cur.is_none_or(|c| when <= c) {
        return Reply::Int(0);
    }
    if lt && cur.is_some_and(|c| when >= c) {
        return Reply::Int(0);
    }
    if when <= now {
        core.db.remove(key, now);
    } else {
        e.expire_at = Some(when);
    }
    // Touched even when the deadline stays the same.
    core.touch(key);
    Reply::Int(1)
}

fn expire(core: &mut Core, a: &[&[u8]]) -> Reply {
    expire_generic(core, a, 1000, false, "expire")
}
fn pexpire(core: &mut Core, a: &[&[u8]]) -> Reply {
    expire_generic(core, a, 1, false, "pexpire")
}
fn expireat(core: &mut Core, a: &[&[u8]]) -> Reply {
    expire_generic(core, a, 1000, true, "expireat")
}
fn pexpireat(core: &mut Core, a: &[&[u8]]) -> Reply {
    expire_generic(core, a, 1, true, "pexpireat")
}

/// The live key's expiry: `Err(-2)` when missing, `Ok(None)` without a TTL.
fn expiry_of(core: &mut Core, key: &[u8]) -> Result<Option<i64>, i64> {
    let now = core.now_ms();
    core.db.get_notouch(key, now).map(|e| e.expire_at).ok_or(-2)
}

/// TTL, PTTL, EXPIRETIME and PEXPIRETIME (`ttlGenericCommand`): -2 missing, -1 no TTL; seconds are
/// rounded to the nearest (`(ms + 500) / 1000`).
fn ttl_generic(core: &mut Core, key: &[u8], in_ms: bool, absolute: bool) -> Reply {
    let now = core.now_ms();
    match expiry_of(core, key) {
        Err(code) => Reply::Int(code),
        Ok(None) => Reply::Int(-1),
        Ok(Some(t)) => {
            let v = if absolute { t } else { (t - now).max(0) };
            // Widened: a deadline near i64::MAX still rounds as Redis reports it.
            Reply::Int(if in_ms { v } else { ((v as i128 + 500) / 1000) as i64 })
        }
    }
}

fn ttl(core: &mut Core, a: &[&[u8]]) -> Reply {
    ttl_generic(core, a[1], false, false)
}
fn pttl(core: &mut Core, a: &[&[u8]]) -> Reply {
    ttl_generic(core, a[1], true, false)
}
fn expiretime(core: &mut Core, a: &[&[u8]]) -> Reply {
    ttl_generic(core, a[1], false, true)
}
fn pexpiretime(core: &mut Core, a: &[&[u8]]) -> Reply {
    ttl_generic(core, a[1], true, true)
}

fn persist(core: &mut Core, a: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    match core.db.get_mut(a[1], now) {
        Some(e) if e.expire_at.is_some() => {
            e.expire_at = None;
            Reply::Int(1)
        }
        _ => Reply::Int(0),
    }
}

fn type_cmd(core: &mut Core, a: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    let name = core.db.get_notouch(a[1], now).map_or("none", |e| e.value.type_name());
    Reply::Status(name.into())
}

/// RENAME and RENAMENX (`renameGenericCommand`): a missing source is an error even when both names are
/// equal; equal names are otherwise a no-op; the value moves with its TTL and replaces the destination.
fn rename_generic(core: &mut Core, a: &[&[u8]], nx: bool) -> Reply {
    let (src, dst) = (a[1], a[2]);
    let now = core.now_ms();
    if core.db.get(src, now).is_none() {
        return Reply::err("ERR no such key");
    }
    let done = if nx { Reply::Int(1) } else { Reply::ok() };
    if src == dst {
        return if nx { Reply::Int(0) } else { done };
    }
    if nx && core.db.get(dst, now).is_some() {
        return Reply::Int(0);
    }
    if let Some(entry) = core.db.take(src, now) {
        core.db.put(dst, entry);
    }
    done
}

fn rename(core: &mut Core, a: &[&[u8]]) -> Reply {
    rename_generic(core, a, false)
}
fn renamenx(core: &mut Core, a: &[&[u8]]) -> Reply {
    rename_generic(core, a, true)
}

/// COPY source destination [DB n] [REPLACE]: copies value and TTL, into database `n` if given; 0 when
/// the source is missing or the destination exists without REPLACE. The database index is checked as
/// the options are read, before a later syntax error.
fn copy(core: &mut Core, a: &[&[u8]]) -> Reply {
    let mut replace = false;
    let src_db = core.selected;
    let mut db = src_db;
    let mut j = 3;
    while j < a.len() {
        if eq_ic(a[j], "replace") {
            replace = true;
        } else if eq_ic(a[j], "db") && j + 1 < a.len() {
            db = tri!(super::databases::arg_db(a[j + 1]));
            j += 1;
        } else {
            return Reply::err(SYNTAX);
        }
        j += 1;
    }
    if core.cluster && (src_db != 0 || db != 0) {
        return Reply::err("ERR Copying to another database is not allowed in cluster mode");
    }
    let (src, dst) = (a[1], a[2]);
    if db == src_db && src == dst {
        return Reply::err("ERR source and destination objects are the same");
    }
    let now = core.now_ms();
    let Some(mut entry) = core.db.get(src, now).cloned() else { return Reply::Int(0) };
    // The copy is a new object: a small integer in it is no longer the shared one.
    entry.unshared_int = match entry.value {
        Value::Str(RStr::Int(i)) if (0..10_000).contains(&i) => Some(i as u16),
        _ => None,
    };
    // `streamDup` allocates each listpack at its exact size.
    if let Value::Stream(s) = &mut entry.value {
        s.fit_allocations();
    }
    let target = core.db_at(db);
    if target.get(dst, now).is_some() && !replace {
        return Reply::Int(0);
    }
    target.put(dst, entry);
    core.touch_in(db, dst);
    Reply::Int(1)
}

/// A live key with its SCAN group: the top 63 bits of the stable [`scan_hash`].
type Slot<'a> = (u64, &'a crate::keyspace::SmallBytes, &'a Entry);

/// SCAN order: by group, then by bytes.
fn scan_cmp(x: &Slot, y: &Slot) -> std::cmp::Ordering {
    (x.0, x.1.as_slice()).cmp(&(y.0, y.1.as_slice()))
}

/// Live keys whose group is at least `from`, unordered (expired keys are reclaimed first).
fn live_keys(core: &mut Core, from: u64) -> Vec<Slot<'_>> {
    let now = core.now_ms();
    core.db.purge_expired(now);
    core.db
        .map
        .iter()
        .filter_map(|(k, e)| {
            let g = scan_hash(k) >> 1;
            (g >= from).then_some((g, k, e))
        })
        .collect()
}

/// One SCAN page: the first `count` keys in SCAN order from group `from` (plus any key sharing the last
/// one's group), and the cursor after them (0 at the end). O(n) selection, then a sort of the page only.
fn scan_page(core: &mut Core, from: u64, count: usize) -> (Vec<Slot<'_>>, u64) {
    let mut all = live_keys(core, from);
    if all.len() <= count {
        all.sort_unstable_by(scan_cmp);
        return (all, 0);
    }
    all.select_nth_unstable_by(count, scan_cmp);
    let (head, rest) = all.split_at(count);
    let last = head.iter().map(|x| x.0).max().unwrap_or(0);
    let mut page = head.to_vec();
    let mut next: Option<u64> = None;
    for x in rest {
        if x.0 == last && count > 0 {
            page.push(*x);
        } else {
            next = Some(next.map_or(x.0, |n| n.min(x.0)));
        }
    }
    page.sort_unstable_by(scan_cmp);
    (page, next.map_or(0, |g| g + 1))
}

/// KEYS: every live key matching the glob, in SCAN order.
fn keys(core: &mut Core, a: &[&[u8]]) -> Reply {
    let pat = a[1];
    let all = pat == b"*";
    let mut v = live_keys(core, 0);
    v.retain(|(_, k, _)| all || glob_match(pat, k, false));
    v.sort_unstable_by(scan_cmp);
    Reply::Array(v.into_iter().map(|(_, k, _)| Reply::Bulk(k.to_vec())).collect())
}

/// SCAN's cursor as Redis reads it (`strtoul`, base 10): no leading space, optional sign (a negative
/// number wraps), nothing after the digits, no overflow; the empty string is 0; a NUL ends the string.
fn parse_cursor(b: &[u8]) -> Option<u64> {
    let b = &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())];
    if b.is_empty() {
        return Some(0);
    }
    let (neg, digits) = match b[0] {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// SCAN cursor [MATCH pattern] [COUNT n] [TYPE type].
///
/// Keys are visited in SCAN order ([`scan_cmp`]); the cursor is 1 + the group of the next key to visit (0 when
/// done), so a key present for the whole iteration is returned exactly once, whatever is added or removed
/// in between. Like Redis, COUNT bounds the keys visited and MATCH/TYPE filter them afterwards, so a call
/// may return nothing and a non-zero cursor. Keys sharing a group are returned together.
fn scan(core: &mut Core, a: &[&[u8]]) -> Reply {
    let Some(cursor) = parse_cursor(a[1]) else { return Reply::err("ERR invalid cursor") };
    let mut count: i64 = 10;
    let mut pattern: Option<&[u8]> = None;
    let mut type_name: Option<&[u8]> = None;
    let mut i = 2;
    while i < a.len() {
        let more = i + 1 < a.len();
        if eq_ic(a[i], "count") && more {
            count = tri!(arg_i64(a[i + 1]));
            if count < 1 {
                return Reply::err(SYNTAX);
            }
        } else if eq_ic(a[i], "match") && more {
            pattern = if a[i + 1] == b"*" { None } else { Some(a[i + 1]) };
        } else if eq_ic(a[i], "type") && more {
            type_name = Some(a[i + 1]);
        } else {
            return Reply::err(SYNTAX);
        }
        i += 2;
    }
    let done = |keys: Vec<Reply>, next: u64| {
        Reply::Array(vec![Reply::Bulk(next.to_string().into_bytes()), Reply::Array(keys)])
    };
    if cursor > (1u64 << 63) {
        return done(Vec::new(), 0);
    }
    let (page, next) = scan_page(core, cursor.saturating_sub(1), count as usize);
    let keys = page
        .iter()
        .filter(|(_, k, e)| {
            pattern.is_none_or(|p| glob_match(p, k, false))
                && type_name.is_none_or(|t| t.eq_ignore_ascii_case(e.value.type_name().as_bytes()))
        })
        .map(|(_, k, _)| Reply::Bulk(k.to_vec()))
        .collect();
    done(keys, next)
}

/// RANDOMKEY (`dbRandomKey`): a key drawn uniformly from the database's seeded stream; a drawn key
/// that has expired is deleted and another is drawn.
fn randomkey(core: &mut Core, _: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    loop {
        let n = core.db.map.len();
        if n == 0 {
            return Reply::Nil;
        }
        let i = core.db.rng.below(n);
        let Some((key, _)) = core.db.map.iter().nth(i) else { return Reply::Nil };
        let key = key.to_vec();
        if core.db.get_notouch(&key, now).is_some() {
            return Reply::Bulk(key);
        }
    }
}

static OBJECT_HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
];

/// Redis 7.0's longest string kept as `embstr`.
const EMBSTR_MAX: usize = 44;

/// The encoding OBJECT ENCODING reports, from the value's shape and the flags the writers keep.
fn encoding_of(v: &Value) -> &'static str {
    match v {
        Value::Str(RStr::Int(_)) => "int",
        Value::Str(RStr::Grown(_) | RStr::Exact(_)) => "raw",
        Value::Str(RStr::Raw(b)) => {
            if b.len() <= EMBSTR_MAX {
                "embstr"
            } else {
                "raw"
            }
        }
        Value::Hash(h) => {
            if h.hashtable {
                "hashtable"
            } else {
                "listpack"
            }
        }
        Value::ZSet(z) => {
            if z.skiplist {
                "skiplist"
            } else {
                "listpack"
            }
        }
        Value::List(_) => "quicklist",
        Value::Set(s) => {
            if s.hashtable {
                "hashtable"
            } else {
                "intset"
            }
        }
        Value::Stream(_) => "stream",
    }
}

/// OBJECT ENCODING|REFCOUNT|IDLETIME|FREQ|HELP, looking the key up without touching it. IDLETIME is in
/// whole seconds of the virtual clock since the key's last use; FREQ needs an LFU policy, which the
/// emulator (like a default Redis) does not have.
fn object(core: &mut Core, a: &[&[u8]]) -> Reply {
    let sub = a[1];
    if eq_ic(sub, "help") {
        if a.len() != 2 {
            return super::arity_error("object|help");
        }
        return Reply::Array(OBJECT_HELP.iter().map(|l| Reply::Status((*l).into())).collect());
    }
    let Some(name) = ["encoding", "refcount", "idletime", "freq"].into_iter().find(|n| eq_ic(sub, n)) else {
        return Reply::Error(format!(
            "ERR unknown subcommand '{}'. Try OBJECT HELP.",
            c_str(&sub[..sub.len().min(128)])
        ));
    };
    if a.len() != 3 {
        return super::arity_error(&format!("object|{name}"));
    }
    let now = core.now_ms();
    let Some(e) = core.db.get_notouch(a[2], now) else { return Reply::Nil };
    match name {
        "encoding" => Reply::Bulk(encoding_of(&e.value).as_bytes().to_vec()),
        "refcount" => Reply::Int(match e.value {
            // Integers below 10000 are Redis's shared objects (but not a COPY of one).
            Value::Str(RStr::Int(i)) if (0..10_000).contains(&i) && e.unshared_int.map(i64::from) != Some(i) => {
                i32::MAX as i64
            }
            _ => 1,
        }),
        // Redis's LRU clock counts whole seconds. A shared integer is one object for the whole
        // server, made at start-up, whose last use lookups do not update.
        "idletime" => {
            let shared = matches!(e.value, Value::Str(RStr::Int(i)) if (0..10_000).contains(&i) && e.unshared_int.map(i64::from) != Some(i));
            let since = if shared { core.started_ms } else { e.lru_ms };
            Reply::Int((now.div_euclid(1000) - since.div_euclid(1000)).max(0))
        }
        _ => Reply::err(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when \
             switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::VirtualClock;
    use crate::command_spec::NOT_INTEGER;

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

    // Expected replies were read from a real Redis 7.0.15.
    #[test]
    fn rename_and_ttl_rules() {
        let mut c = Core::new(VirtualClock::default());
        run(&mut c, "SET a 1");
        assert_eq!(run(&mut c, "RENAME a a"), Reply::ok());
        assert_eq!(run(&mut c, "RENAMENX a a"), Reply::Int(0));
        assert_eq!(run(&mut c, "RENAME nokey b"), err("ERR no such key"));
        assert_eq!(run(&mut c, "RENAMENX nokey b"), err("ERR no such key"));
        assert_eq!(run(&mut c, "RENAME nokey nokey"), err("ERR no such key"));
        assert_eq!(run(&mut c, "EXPIRE a 100"), Reply::Int(1));
        assert_eq!(run(&mut c, "RENAME a b"), Reply::ok());
        assert_eq!(run(&mut c, "TTL b"), Reply::Int(100));
        assert_eq!(run(&mut c, "EXISTS a"), Reply::Int(0));
        run(&mut c, "SET c 3");
        assert_eq!(run(&mut c, "RENAMENX b c"), Reply::Int(0));
        assert_eq!(run(&mut c, "RENAME b c"), Reply::ok());
        assert_eq!(run(&mut c, "TTL c"), Reply::Int(100));
        assert_eq!(run(&mut c, "GET c"), bulk("1"));
        assert_eq!(run(&mut c, "PERSIST c"), Reply::Int(1));
        assert_eq!(run(&mut c, "PERSIST c"), Reply::Int(0));
        assert_eq!(run(&mut c, "PERSIST nokey"), Reply::Int(0));
        assert_eq!(run(&mut c, "TYPE c"), Reply::Status("string".into()));
        assert_eq!(run(&mut c, "TYPE nokey"), Reply::Status("none".into()));
        assert_eq!(run(&mut c, "EXPIRETIME c"), Reply::Int(-1));
        assert_eq!(run(&mut c, "EXPIRETIME nokey"), Reply::Int(-2));
        assert_eq!(run(&mut c, "PEXPIREAT c 4000000000499"), Reply::Int(1));
        assert_eq!(run(&mut c, "EXPIRETIME c"), Reply::Int(4000000000));
        assert_eq!(run(&mut c, "PEXPIREAT c 4000000000500"), Reply::Int(1));
        assert_eq!(run(&mut c, "EXPIRETIME c"), Reply::Int(4000000001));
        assert_eq!(run(&mut c, "PEXPIRETIME c"), Reply::Int(4000000000500));
        assert_eq!(run(&mut c, "EXPIRE c 100 FOO"), err("ERR Unsupported option FOO"));
        assert_eq!(
            run(&mut c, "EXPIRE c abc NX XX"),
            err("ERR NX and XX, GT or LT options at the same time are not compatible")
        );
        assert_eq!(run(&mut c, "EXPIRE c 100 GT LT"), err("ERR GT and LT options at the same time are not compatible"));
        assert_eq!(run(&mut c, "EXPIRE c 9223372036854776"), err("ERR invalid expire time in 'expire' command"));
        assert_eq!(
            run(&mut c, "PEXPIRE nokey 9223372036854775807"),
            err("ERR invalid expire time in 'pexpire' command")
        );
        assert_eq!(
            run(&mut c, "EXPIREAT nokey 9223372036854775807"),
            err("ERR invalid expire time in 'expireat' command")
        );
        assert_eq!(run(&mut c, "PEXPIREAT nokey -9223372036854775808"), Reply::Int(0));
        assert_eq!(run(&mut c, "EXPIRE c -1"), Reply::Int(1));
        assert_eq!(run(&mut c, "EXISTS c"), Reply::Int(0));
        run(&mut c, "SET g 1");
        assert_eq!(run(&mut c, "EXPIRE g 100 XX"), Reply::Int(0));
        assert_eq!(run(&mut c, "EXPIRE g 100 GT"), Reply::Int(0));
        assert_eq!(run(&mut c, "EXPIRE g 100 LT"), Reply::Int(1));
        assert_eq!(run(&mut c, "TOUCH g nokey g"), Reply::Int(2));
    }

    #[test]
    fn copy_rules() {
        let mut c = Core::new(VirtualClock::default());
        run(&mut c, "SET s 1 EX 100");
        assert_eq!(run(&mut c, "COPY s s9"), Reply::Int(1));
        assert_eq!(run(&mut c, "TTL s9"), Reply::Int(100));
        assert_eq!(run(&mut c, "COPY s s9"), Reply::Int(0));
        assert_eq!(run(&mut c, "COPY s s9 REPLACE"), Reply::Int(1));
        assert_eq!(run(&mut c, "COPY s s9 DB 0"), Reply::Int(0));
        assert_eq!(run(&mut c, "COPY s s"), err("ERR source and destination objects are the same"));
        assert_eq!(run(&mut c, "COPY nokey s99"), Reply::Int(0));
        assert_eq!(run(&mut c, "COPY s s9 FOO"), err(SYNTAX));
        assert_eq!(run(&mut c, "COPY s s9 DB 16"), err("ERR DB index is out of range"));
        assert_eq!(run(&mut c, "COPY s s9 DB x"), err(NOT_INTEGER));
        assert_eq!(
            run(&mut c, "COPY s s9 DB 4294967296"),
            err("ERR value is out of range, value must between -2147483648 and 2147483647")
        );
    }

    #[test]
    fn scan_cursors_and_options() {
        let mut c = Core::new(VirtualClock::default());
        run(&mut c, "SET c 3");
        let one = |cur: &str, keys: &[&str]| {
            Reply::Array(vec![bulk(cur), Reply::Array(keys.iter().map(|k| bulk(k)).collect())])
        };
        assert_eq!(run(&mut c, "SCAN 0 MATCH c"), one("0", &["c"]));
        assert_eq!(run(&mut c, "SCAN 0 TYPE STRING COUNT 1000"), one("0", &["c"]));
        assert_eq!(run(&mut c, "SCAN 0 TYPE foo"), one("0", &[]));
        assert_eq!(run(&mut c, "SCAN 0 COUNT 0"), err(SYNTAX));
        assert_eq!(run(&mut c, "SCAN 0 COUNT -1"), err(SYNTAX));
        assert_eq!(run(&mut c, "SCAN 0 COUNT abc"), err(NOT_INTEGER));
        assert_eq!(run(&mut c, "SCAN 0 COUNT"), err(SYNTAX));
        assert_eq!(run(&mut c, "SCAN 0 FOO bar"), err(SYNTAX));
        assert_eq!(run(&mut c, "SCAN abc"), err("ERR invalid cursor"));
        assert_eq!(run(&mut c, "SCAN 18446744073709551616"), err("ERR invalid cursor"));
        assert_eq!(run(&mut c, "SCAN -1"), one("0", &[]));
        assert_eq!(run(&mut c, "SCAN +0 MATCH c"), one("0", &["c"]));
        assert_eq!(parse_cursor(b""), Some(0));
        assert_eq!(parse_cursor(b" 1"), None);
        assert_eq!(parse_cursor(b"+"), None);
        assert_eq!(run(&mut c, "KEYS c"), Reply::Array(vec![bulk("c")]));
    }

    /// Every key present for a whole iteration comes back exactly once, with writes between calls.
    #[test]
    fn scan_survives_writes() {
        let mut c = Core::new(VirtualClock::default());
        for i in 0..500 {
            run(&mut c, &format!("SET stay{i} v"));
        }
        let mut seen = std::collections::HashMap::new();
        let mut cursor = "0".to_string();
        let mut round = 0;
        loop {
            let Reply::Array(r) = run(&mut c, &format!("SCAN {cursor} COUNT 7")) else { panic!() };
            let Reply::Bulk(next) = &r[0] else { panic!() };
            let Reply::Array(keys) = &r[1] else { panic!() };
            for k in keys {
                let Reply::Bulk(k) = k else { panic!() };
                *seen.entry(k.clone()).or_insert(0) += 1;
            }
            for j in 0..5 {
                run(&mut c, &format!("SET new{round}_{j} v"));
                run(&mut c, &format!("DEL new{}_{j}", round / 2));
            }
            round += 1;
            cursor = String::from_utf8(next.clone()).unwrap();
            if cursor == "0" {
                break;
            }
        }
        for i in 0..500 {
            assert_eq!(seen.get(format!("stay{i}").as_bytes()), Some(&1), "stay{i}");
        }
    }

    /// Pages of any COUNT cover the keyspace exactly once, in SCAN order.
    #[test]
    fn scan_pages_cover_everything() {
        let mut c = Core::new(VirtualClock::default());
        for i in 0..100 {
            run(&mut c, &format!("SET k{i} v"));
        }
        let Reply::Array(all) = run(&mut c, "KEYS *") else { panic!() };
        for count in [1, 3, 10, 99, 100, 1000] {
            let mut got = Vec::new();
            let mut cursor = "0".to_string();
            loop {
                let Reply::Array(r) = run(&mut c, &format!("SCAN {cursor} COUNT {count}")) else { panic!() };
                let (Reply::Bulk(next), Reply::Array(keys)) = (&r[0], &r[1]) else { panic!() };
                assert!(keys.len() <= count, "count {count}");
                got.extend(keys.iter().cloned());
                cursor = String::from_utf8(next.clone()).unwrap();
                if cursor == "0" {
                    break;
                }
            }
            assert_eq!(got, all, "count {count}");
        }
    }

    #[test]
    fn object_subcommands() {
        let mut c = Core::new(VirtualClock::default());
        run(&mut c, "SET k 100");
        assert_eq!(run(&mut c, "OBJECT ENCODING k"), bulk("int"));
        assert_eq!(run(&mut c, "OBJECT REFCOUNT k"), Reply::Int(2147483647));
        run(&mut c, "SET k 10000");
        assert_eq!(run(&mut c, "OBJECT REFCOUNT k"), Reply::Int(1));
        run(&mut c, "SET k 0123456789012345678901234567890123456789abcd");
        assert_eq!(run(&mut c, "object Encoding k"), bulk("embstr"));
        run(&mut c, "SET k 0123456789012345678901234567890123456789abcde");
        assert_eq!(run(&mut c, "OBJECT ENCODING k"), bulk("raw"));
        assert_eq!(run(&mut c, "OBJECT ENCODING nokey"), Reply::Nil);
        assert_eq!(run(&mut c, "OBJECT ENCODING"), err("ERR wrong number of arguments for 'object|encoding' command"));
        assert_eq!(
            run(&mut c, "OBJECT ENCODING k extra"),
            err("ERR wrong number of arguments for 'object|encoding' command")
        );
        assert_eq!(run(&mut c, "OBJECT FOO"), err("ERR unknown subcommand 'FOO'. Try OBJECT HELP."));
        assert_eq!(run(&mut c, "OBJECT HELP x"), err("ERR wrong number of arguments for 'object|help' command"));
        assert_eq!(run(&mut c, "OBJECT"), err("ERR wrong number of arguments for 'object' command"));
        run(&mut c, "INCRBYFLOAT f 3.0");
        assert_eq!(run(&mut c, "OBJECT ENCODING f"), bulk("embstr"));
        // APPEND and SETRANGE leave a raw string, even a short or numeric one; APPEND creating a key does not.
        run(&mut c, "APPEND a 12");
        assert_eq!(run(&mut c, "OBJECT ENCODING a"), bulk("int"));
        run(&mut c, "APPEND a 3");
        assert_eq!(run(&mut c, "OBJECT ENCODING a"), bulk("raw"));
        run(&mut c, "SET n 123");
        run(&mut c, "SETRANGE n 1 9");
        assert_eq!(run(&mut c, "OBJECT ENCODING n"), bulk("raw"));
        run(&mut c, "INCR n");
        assert_eq!(run(&mut c, "OBJECT ENCODING n"), bulk("int"));
    }

    /// OBJECT IDLETIME counts whole seconds of the virtual clock since the key's last use: reads and
    /// writes reset it, TYPE, EXISTS, TTL, OBJECT and MEMORY USAGE do not; a shared integer's counts
    /// from the server's start (Redis never updates the shared object's LRU clock).
    #[test]
    fn idletime_follows_the_virtual_clock() {
        let clock = VirtualClock::default();
        let mut c = Core::new(clock.clone());
        run(&mut c, "SET s hello");
        run(&mut c, "RPUSH l a");
        assert_eq!(run(&mut c, "OBJECT IDLETIME s"), Reply::Int(0));
        clock.advance_millis(2_500);
        assert_eq!(run(&mut c, "OBJECT IDLETIME s"), Reply::Int(2));
        for quiet in ["TYPE s", "EXISTS s", "TTL s", "PTTL s", "OBJECT ENCODING s", "MEMORY USAGE s"] {
            run(&mut c, quiet);
        }
        assert_eq!(run(&mut c, "OBJECT IDLETIME s"), Reply::Int(2), "lookups that do not touch");
        run(&mut c, "GET s");
        assert_eq!(run(&mut c, "OBJECT IDLETIME s"), Reply::Int(0), "a read touches");
        assert_eq!(run(&mut c, "OBJECT IDLETIME l"), Reply::Int(2));
        run(&mut c, "RPUSH l b");
        assert_eq!(run(&mut c, "OBJECT IDLETIME l"), Reply::Int(0), "a write touches");
        clock.advance_millis(61_000);
        run(&mut c, "TOUCH l");
        assert_eq!(run(&mut c, "OBJECT IDLETIME l"), Reply::Int(0), "TOUCH touches");
        assert_eq!(run(&mut c, "OBJECT IDLETIME s"), Reply::Int(61));
        run(&mut c, "RENAME s s2");
        assert_eq!(run(&mut c, "OBJECT IDLETIME s2"), Reply::Int(0), "RENAME looks the source up");
        run(&mut c, "SET small 5");
        assert_eq!(run(&mut c, "OBJECT IDLETIME small"), Reply::Int(63), "a shared integer: since the start");
        run(&mut c, "COPY small copied");
        assert_eq!(run(&mut c, "OBJECT IDLETIME copied"), Reply::Int(0), "a COPY is an object of its own");
        assert_eq!(run(&mut c, "OBJECT REFCOUNT copied"), Reply::Int(1));
        run(&mut c, "INCR copied");
        assert_eq!(run(&mut c, "OBJECT REFCOUNT copied"), Reply::Int(2147483647), "INCR makes a new, shared one");
        assert_eq!(run(&mut c, "OBJECT IDLETIME nokey"), Reply::Nil);
    }
}
