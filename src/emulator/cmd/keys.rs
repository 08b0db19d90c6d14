//! Keyspace commands: DEL, EXISTS, expiry and TTLs.
use super::flags::*;
use super::{arg_i64, eq_ic, CommandSpec, KeySpec};
use crate::emulator::core::Core;
use crate::emulator::reply::Reply;
use crate::tri;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "del", arity: -2, flags: WRITE, keys: KeySpec::ALL, handler: del },
    CommandSpec { name: "unlink", arity: -2, flags: WRITE, keys: KeySpec::ALL, handler: del },
    CommandSpec { name: "exists", arity: -2, flags: READONLY, keys: KeySpec::ALL, handler: exists },
    CommandSpec { name: "expire", arity: -3, flags: WRITE, keys: KeySpec::ONE, handler: expire },
    CommandSpec { name: "pexpire", arity: -3, flags: WRITE, keys: KeySpec::ONE, handler: pexpire },
    CommandSpec { name: "expireat", arity: -3, flags: WRITE, keys: KeySpec::ONE, handler: expireat },
    CommandSpec { name: "pexpireat", arity: -3, flags: WRITE, keys: KeySpec::ONE, handler: pexpireat },
    CommandSpec { name: "ttl", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: ttl },
    CommandSpec { name: "pttl", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: pttl },
];

fn del(core: &mut Core, a: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    Reply::Int(a[1..].iter().filter(|k| core.db.remove(k, now)).count() as i64)
}

fn exists(core: &mut Core, a: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    Reply::Int(a[1..].iter().filter(|k| core.db.get(k, now).is_some()).count() as i64)
}

/// The shared body of EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT (`expireGenericCommand`).
fn expire_generic(core: &mut Core, a: &[&[u8]], unit_ms: i64, absolute: bool) -> Reply {
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
            return Reply::Error(format!("ERR Unsupported option {}", String::from_utf8_lossy(o)));
        }
    }
    if nx && (xx || gt || lt) {
        return Reply::err("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return Reply::err("ERR GT and LT options at the same time are not compatible");
    }
    let n = tri!(arg_i64(a[2]));
    let name = String::from_utf8_lossy(a[0]).to_ascii_lowercase();
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
    Reply::Int(1)
}

fn expire(core: &mut Core, a: &[&[u8]]) -> Reply {
    expire_generic(core, a, 1000, false)
}
fn pexpire(core: &mut Core, a: &[&[u8]]) -> Reply {
    expire_generic(core, a, 1, false)
}
fn expireat(core: &mut Core, a: &[&[u8]]) -> Reply {
    expire_generic(core, a, 1000, true)
}
fn pexpireat(core: &mut Core, a: &[&[u8]]) -> Reply {
    expire_generic(core, a, 1, true)
}

/// Milliseconds left: -2 for a missing key, -1 for no TTL.
fn ttl_ms(core: &mut Core, key: &[u8]) -> i64 {
    let now = core.now_ms();
    match core.db.get(key, now) {
        None => -2,
        Some(e) => match e.expire_at {
            None => -1,
            Some(t) => (t - now).max(0),
        },
    }
}

fn ttl(core: &mut Core, a: &[&[u8]]) -> Reply {
    let ms = ttl_ms(core, a[1]);
    Reply::Int(if ms < 0 { ms } else { (ms + 500) / 1000 })
}
fn pttl(core: &mut Core, a: &[&[u8]]) -> Reply {
    Reply::Int(ttl_ms(core, a[1]))
}
