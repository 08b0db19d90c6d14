//! String commands: GET, SET and its options, counters.
use super::flags::*;
use super::{arg_i64, eq_ic, CommandSpec, KeySpec, SYNTAX};
use crate::emulator::core::Core;
use crate::emulator::keyspace::{RStr, Value, WRONGTYPE};
use crate::emulator::reply::Reply;
use crate::tri;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "get", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: get },
    CommandSpec { name: "set", arity: -3, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: set },
    CommandSpec { name: "incr", arity: 2, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: incr },
    CommandSpec { name: "decr", arity: 2, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: decr },
    CommandSpec { name: "incrby", arity: 3, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: incrby },
    CommandSpec { name: "decrby", arity: 3, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: decrby },
];

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
    match tri!(read_str(core, a[1])) {
        Some(v) => Reply::Bulk(v),
        None => Reply::Nil,
    }
}

/// When a SET-like command expires its key.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum Expiry {
    None,
    KeepTtl,
    At(i64),
}

/// Converts a relative or absolute expire argument into an absolute unix ms time, with Redis's checks.
pub(crate) fn expire_arg(core: &Core, v: &[u8], unit_ms: i64, absolute: bool, cmd: &str) -> Result<i64, Reply> {
    let n = arg_i64(v)?;
    let invalid = || Reply::Error(format!("ERR invalid expire time in '{cmd}' command"));
    if n <= 0 {
        return Err(invalid());
    }
    let ms = n.checked_mul(unit_ms).ok_or_else(invalid)?;
    if absolute {
        Ok(ms)
    } else {
        ms.checked_add(core.now_ms()).ok_or_else(invalid)
    }
}

fn set(core: &mut Core, a: &[&[u8]]) -> Reply {
    let (mut nx, mut xx, mut get_old) = (false, false, false);
    let mut expiry = Expiry::None;
    let mut have_expiry = false;
    let mut i = 3;
    while i < a.len() {
        let o = a[i];
        let next = a.get(i + 1);
        if eq_ic(o, "nx") && !xx {
            nx = true;
        } else if eq_ic(o, "xx") && !nx {
            xx = true;
        } else if eq_ic(o, "get") {
            get_old = true;
        } else if eq_ic(o, "keepttl") && !have_expiry {
            expiry = Expiry::KeepTtl;
            have_expiry = true;
        } else if !have_expiry && next.is_some() && (eq_ic(o, "ex") || eq_ic(o, "px") || eq_ic(o, "exat") || eq_ic(o, "pxat")) {
            let unit = if eq_ic(o, "ex") || eq_ic(o, "exat") { 1000 } else { 1 };
            let absolute = eq_ic(o, "exat") || eq_ic(o, "pxat");
            expiry = Expiry::At(tri!(expire_arg(core, next.unwrap(), unit, absolute, "set")));
            have_expiry = true;
            i += 1;
        } else {
            return Reply::err(SYNTAX);
        }
        i += 1;
    }
    let key = a[1];
    let now = core.now_ms();
    let existing = core.db.get(key, now);
    let old = if get_old {
        match existing {
            None => None,
            Some(e) => match &e.value {
                Value::Str(s) => Some(s.to_bytes()),
                _ => return Reply::err(WRONGTYPE),
            },
        }
    } else {
        None
    };
    let exists = existing.is_some();
    let keep = existing.and_then(|e| e.expire_at);
    if (nx && exists) || (xx && !exists) {
        return if get_old { old.map_or(Reply::Nil, Reply::Bulk) } else { Reply::Nil };
    }
    let expire_at = match expiry {
        Expiry::None => None,
        Expiry::KeepTtl => keep,
        Expiry::At(t) => Some(t),
    };
    core.db.set(key, Value::Str(RStr::from_bytes(a[2])), expire_at);
    if let Some(t) = expire_at {
        if t <= now {
            core.db.remove(key, i64::MIN);
        }
    }
    if get_old { old.map_or(Reply::Nil, Reply::Bulk) } else { Reply::ok() }
}

/// Adds `by` to the integer at `key` (missing counts as 0), keeping its TTL.
pub(crate) fn incr_by(core: &mut Core, key: &[u8], by: i64) -> Reply {
    let now = core.now_ms();
    match core.db.get_mut(key, now) {
        None => {
            core.db.set(key, Value::Str(RStr::Int(by)), None);
            Reply::Int(by)
        }
        Some(e) => {
            let Value::Str(s) = &mut e.value else { return Reply::err(WRONGTYPE) };
            let cur = match s {
                RStr::Int(i) => *i,
                RStr::Raw(b) => match crate::emulator::keyspace::parse_canonical_i64(b) {
                    Some(i) => i,
                    None => return Reply::err(super::NOT_INTEGER),
                },
            };
            match cur.checked_add(by) {
                Some(n) => {
                    *s = RStr::Int(n);
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
