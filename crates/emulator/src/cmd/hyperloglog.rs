//! HyperLogLog commands: PFADD, PFCOUNT (one key, with the cached cardinality written back into the
//! value, or the union of several) and PFMERGE, over the string representation of
//! [`crate::hll`], with Redis 7.0's checks and error texts.
use crate::command_spec::flags::*;
use crate::command_spec::{CommandSpec, KeySpec};
use crate::core::Core;
use crate::hll::{self, Corrupt, REGISTERS};
use crate::keyspace::{RStr, Value, WRONGTYPE};
use crate::reply::Reply;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "pfadd", arity: -2, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: pfadd },
    CommandSpec { name: "pfcount", arity: -2, flags: READONLY | MAY_REPLICATE, keys: KeySpec::ALL, handler: pfcount },
    CommandSpec { name: "pfmerge", arity: -2, flags: WRITE | DENYOOM, keys: KeySpec::ALL, handler: pfmerge },
    CommandSpec { name: "pfdebug", arity: 3, flags: WRITE | DENYOOM, keys: KeySpec::at(2, 2, 1), handler: pfdebug },
    CommandSpec { name: "pfselftest", arity: 1, flags: 0, keys: KeySpec::NONE, handler: pfselftest },
];

/// PFSELFTEST: Redis checks its register access and its estimator's error; the register check is
/// the part that concerns an implementation of the same representation.
fn pfselftest(_: &mut Core, _: &[&[u8]]) -> Reply {
    if hll::self_test() {
        Reply::ok()
    } else {
        Reply::err("ERR TESTFAILED Register error")
    }
}

/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key (`pfdebugCommand`): the key must exist and hold an
/// HLL; GETREG and TODENSE convert a sparse HLL to dense first.
fn pfdebug(core: &mut Core, a: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    let Some(e) = core.db.get_mut(a[2], now) else { return Reply::err("ERR The specified key does not exist") };
    if let Err(r) = check(&e.value) {
        return r;
    }
    let Value::Str(s) = &mut e.value else { return Reply::err(WRONGTYPE) };
    let sub = String::from_utf8_lossy(a[1]).to_ascii_lowercase();
    let sparse = bytes(s).get(4) == Some(&hll::SPARSE);
    match sub.as_str() {
        "getreg" | "todense" => {
            if sparse {
                bytes_mut(s);
                if let Err(c) = hll::sparse_to_dense(s) {
                    return corrupt(c);
                }
            }
            if sub == "todense" {
                return Reply::Int(sparse as i64);
            }
            Reply::Array(hll::dense_registers(bytes(s)).into_iter().map(|r| Reply::Int(r as i64)).collect())
        }
        "decode" if !sparse => Reply::err("ERR HLL encoding is not sparse"),
        "decode" => Reply::Status(hll::decode_sparse(bytes(s))),
        "encoding" => Reply::Status(if sparse { "sparse" } else { "dense" }.into()),
        _ => Reply::Error(format!("ERR Unknown PFDEBUG subcommand '{}'", String::from_utf8_lossy(a[1]))),
    }
}

const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";

fn corrupt(_: Corrupt) -> Reply {
    Reply::err(CORRUPT)
}

/// `isHLLObjectOrReply` on a value: the key's type, then the HLL checks.
fn check(value: &Value) -> Result<&RStr, Reply> {
    let Value::Str(s) = value else { return Err(Reply::err(WRONGTYPE)) };
    match s {
        RStr::Raw(v) | RStr::Grown(v) | RStr::Exact(v) if hll::is_valid(v) => Ok(s),
        _ => Err(Reply::err(NOT_HLL)),
    }
}

/// The bytes of a checked HLL value.
fn bytes(s: &RStr) -> &[u8] {
    match s {
        RStr::Raw(v) | RStr::Grown(v) | RStr::Exact(v) => v,
        RStr::Int(_) => &[],
    }
}

fn bytes_mut(s: &mut RStr) -> &mut Vec<u8> {
    // `dbUnshareStringValue`: an embstr becomes a raw sds of its length first.
    let len = s.len();
    crate::object_size::make_room(s, len)
}

/// PFADD key [element ...]: 1 when a register changed or the key was created.
fn pfadd(core: &mut Core, a: &[&[u8]]) -> Reply {
    let key = a[1];
    let now = core.now_ms();
    let mut updated = false;
    match core.db.get(key, now) {
        None => {
            core.db.set(key, Value::Str(RStr::Exact(hll::new_sparse())), None);
            updated = true;
        }
        Some(e) => {
            if let Err(r) = check(&e.value) {
                return r;
            }
        }
    }
    let e = core.db.get_mut(key, now).expect("present");
    let Value::Str(s) = &mut e.value else { unreachable!("checked") };
    if !updated {
        bytes_mut(s);
    }
    for ele in &a[2..] {
        match hll::add(s, ele) {
            Ok(true) => updated = true,
            Ok(false) => {}
            Err(c) => return corrupt(c),
        }
    }
    if updated {
        let (RStr::Raw(v) | RStr::Grown(v) | RStr::Exact(v)) = s else { unreachable!("an HLL is bytes") };
        hll::invalidate_cache(v);
        core.touch(key);
    }
    Reply::Int(updated as i64)
}

/// PFCOUNT key [key ...]: one key answers from (or refreshes) the cached cardinality in the value;
/// several give the cardinality of their union and change nothing.
fn pfcount(core: &mut Core, a: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    if a.len() > 2 {
        let mut max = Box::new([0u8; REGISTERS]);
        for k in &a[1..] {
            let Some(e) = core.db.get(k, now) else { continue };
            let s = match check(&e.value) {
                Ok(s) => s,
                Err(r) => return r,
            };
            if let Err(c) = hll::merge(&mut max, bytes(s)) {
                return corrupt(c);
            }
        }
        return Reply::Int(hll::count_registers(&max) as i64);
    }
    let key = a[1];
    let Some(e) = core.db.get_mut(key, now) else { return Reply::Int(0) };
    if let Err(r) = check(&e.value) {
        return r;
    }
    let Value::Str(s) = &mut e.value else { unreachable!("checked") };
    let v = bytes_mut(s);
    if let Some(card) = hll::cached(v) {
        return Reply::Int(card as i64);
    }
    match hll::count(v) {
        Ok(card) => {
            hll::set_cache(v, card);
            core.touch(key);
            Reply::Int(card as i64)
        }
        Err(c) => corrupt(c),
    }
}

/// PFMERGE destkey [sourcekey ...]: the union of every key (the destination included) written into the
/// destination, dense when any input was.
fn pfmerge(core: &mut Core, a: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    let mut max = Box::new([0u8; REGISTERS]);
    let mut use_dense = false;
    for k in &a[1..] {
        let Some(e) = core.db.get(k, now) else { continue };
        let s = match check(&e.value) {
            Ok(s) => s,
            Err(r) => return r,
        };
        let v = bytes(s);
        if v[4] == hll::DENSE {
            use_dense = true;
        }
        if let Err(c) = hll::merge(&mut max, v) {
            return corrupt(c);
        }
    }
    let dest = a[1];
    if core.db.get(dest, now).is_none() {
        core.db.set(dest, Value::Str(RStr::Exact(hll::new_sparse())), None);
    }
    let e = core.db.get_mut(dest, now).expect("present");
    let Value::Str(s) = &mut e.value else { unreachable!("checked") };
    bytes_mut(s);
    if use_dense {
        if let Err(c) = hll::sparse_to_dense(s) {
            return corrupt(c);
        }
    }
    for (i, &m) in max.iter().enumerate() {
        if m != 0 {
            // Redis ignores a failure here (the destination was checked above).
            let _ = hll::set_register(s, i, m);
        }
    }
    let (RStr::Raw(v) | RStr::Grown(v) | RStr::Exact(v)) = s else { unreachable!("an HLL is bytes") };
    hll::invalidate_cache(v);
    core.touch(dest);
    Reply::ok()
}
