//! DUMP and RESTORE (`dumpCommand`, `restoreCommand`): a key's value as Redis 7.0's serialized
//! payload and back (the format is in `crate::rdb`), with RESTORE's options and checks in Redis's order.
use crate::command_spec::flags::*;
use crate::command_spec::{arg_i64, eq_ic, CommandSpec, KeySpec, SYNTAX};
use crate::core::Core;
use crate::keyspace::Entry;
use crate::rdb;
use crate::reply::Reply;
use crate::tri;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "dump", arity: 2, flags: READONLY, keys: KeySpec::ONE, handler: dump },
    CommandSpec { name: "restore", arity: -4, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: restore },
];

/// DUMP key: nil for a missing key.
fn dump(core: &mut Core, a: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    let compress = core.settings.flag("rdbcompression");
    match core.db.get(a[1], now) {
        None => Reply::Nil,
        Some(e) => match rdb::dump(&e.value, compress) {
            Some(p) => Reply::Bulk(p),
            None => Reply::err("ERR DUMP of a stream is not supported"),
        },
    }
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]: the options, then the key
/// (BUSYKEY unless REPLACE), then the TTL, then the payload's version and CRC, then its contents.
/// A deadline already past restores nothing (and REPLACE still deletes the old key).
fn restore(core: &mut Core, a: &[&[u8]]) -> Reply {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq): (Option<i64>, Option<i64>) = (None, None);
    let mut j = 4;
    while j < a.len() {
        let more = j + 1 < a.len();
        if eq_ic(a[j], "replace") {
            replace = true;
        } else if eq_ic(a[j], "absttl") {
            absttl = true;
        } else if eq_ic(a[j], "idletime") && more && freq.is_none() {
            let v = tri!(arg_i64(a[j + 1]));
            if v < 0 {
                return Reply::err("ERR Invalid IDLETIME value, must be >= 0");
            }
            idle = Some(v);
            j += 1;
        } else if eq_ic(a[j], "freq") && more && idle.is_none() {
            let v = tri!(arg_i64(a[j + 1]));
            if !(0..=255).contains(&v) {
                return Reply::err("ERR Invalid FREQ value, must be >= 0 and <= 255");
            }
            freq = Some(v);
            j += 1;
        } else {
            return Reply::err(SYNTAX);
        }
        j += 1;
    }
    let now = core.now_ms();
    if !replace && core.db.get(a[1], now).is_some() {
        return Reply::err("BUSYKEY Target key name already exists.");
    }
    let ttl = tri!(arg_i64(a[2]));
    if ttl < 0 {
        return Reply::err("ERR Invalid TTL value, must be >= 0");
    }
    if !rdb::payload_ok(a[3]) {
        return Reply::err("ERR DUMP payload version or checksum are wrong");
    }
    let Some(value) = rdb::load(a[3]) else { return Reply::err("ERR Bad data format") };
    if replace {
        core.db.remove(a[1], now);
    }
    let deadline = match ttl {
        0 => None,
        t if absttl => Some(t),
        t => Some(t.saturating_add(now)),
    };
    if deadline.is_some_and(|d| d <= now) {
        return Reply::ok();
    }
    core.db.put(a[1], Entry::new(value, deadline, now));
    if let Some(idle) = idle {
        if let Some(e) = core.db.map.get_mut(a[1]) {
            e.lru_ms = now.saturating_sub(idle.saturating_mul(1000));
        }
    }
    // FREQ sets an LFU counter, which Redis keeps only under an LFU maxmemory-policy; the emulator
    // keeps none, so (as Redis under the default policy) it is checked and dropped.
    let _ = freq;
    Reply::ok()
}
