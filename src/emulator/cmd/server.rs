//! Server commands: PING, ECHO, TIME, DBSIZE, FLUSHALL, FLUSHDB.
use super::flags::*;
use super::{eq_ic, CommandSpec, KeySpec, SYNTAX};
use crate::emulator::core::Core;
use crate::emulator::reply::Reply;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "ping", arity: -1, flags: 0, keys: KeySpec::NONE, handler: ping },
    CommandSpec { name: "echo", arity: 2, flags: 0, keys: KeySpec::NONE, handler: echo },
    CommandSpec { name: "time", arity: 1, flags: 0, keys: KeySpec::NONE, handler: time },
    CommandSpec { name: "dbsize", arity: 1, flags: READONLY, keys: KeySpec::NONE, handler: dbsize },
    CommandSpec { name: "flushall", arity: -1, flags: WRITE, keys: KeySpec::NONE, handler: flush },
    CommandSpec { name: "flushdb", arity: -1, flags: WRITE, keys: KeySpec::NONE, handler: flush },
];

fn ping(_: &mut Core, a: &[&[u8]]) -> Reply {
    match a.len() {
        1 => Reply::Status("PONG".into()),
        2 => Reply::Bulk(a[1].to_vec()),
        _ => Reply::err("ERR wrong number of arguments for 'ping' command"),
    }
}

fn echo(_: &mut Core, a: &[&[u8]]) -> Reply {
    Reply::Bulk(a[1].to_vec())
}

fn time(core: &mut Core, _: &[&[u8]]) -> Reply {
    let us = core.now_us();
    Reply::Array(vec![
        Reply::Bulk(us.div_euclid(1_000_000).to_string().into_bytes()),
        Reply::Bulk(us.rem_euclid(1_000_000).to_string().into_bytes()),
    ])
}

fn dbsize(core: &mut Core, _: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    core.db.purge_expired(now);
    Reply::Int(core.db.len() as i64)
}

fn flush(core: &mut Core, a: &[&[u8]]) -> Reply {
    match a.len() {
        1 => {}
        2 if eq_ic(a[1], "sync") || eq_ic(a[1], "async") => {}
        _ => return Reply::err(SYNTAX),
    }
    core.db.clear();
    Reply::ok()
}
