//! Server commands: PING, ECHO, TIME, DBSIZE, FLUSHALL, FLUSHDB and SELECT (database 0 only).
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
    CommandSpec { name: "select", arity: 2, flags: 0, keys: KeySpec::NONE, handler: select },
];

/// PING [message]: more than one argument is an arity error, as in Redis.
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

/// TIME: seconds and microseconds of the virtual clock, as two bulk strings.
fn time(core: &mut Core, _: &[&[u8]]) -> Reply {
    let us = core.now_us();
    Reply::Array(vec![
        Reply::Bulk(us.div_euclid(1_000_000).to_string().into_bytes()),
        Reply::Bulk(us.rem_euclid(1_000_000).to_string().into_bytes()),
    ])
}

/// DBSIZE: live keys only (Redis may still count expired keys its background cycle has not reclaimed;
/// the emulator reclaims them exactly on time).
fn dbsize(core: &mut Core, _: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    core.db.purge_expired(now);
    Reply::Int(core.db.len() as i64)
}

/// FLUSHALL / FLUSHDB [SYNC|ASYNC]: the only option must be alone.
fn flush(core: &mut Core, a: &[&[u8]]) -> Reply {
    match a.len() {
        1 => {}
        2 if eq_ic(a[1], "sync") || eq_ic(a[1], "async") => {}
        _ => return Reply::err(SYNTAX),
    }
    core.db.clear();
    Reply::ok()
}

/// SELECT index: Redis's checks (a C int, cluster mode allows only 0, 0..15 exist); the emulator keeps a
/// single database, so only 0 succeeds.
fn select(core: &mut Core, a: &[&[u8]]) -> Reply {
    let id = match super::keys::arg_i32(a[1]) {
        Ok(id) => id,
        Err(r) => return r,
    };
    if core.cluster && id != 0 {
        return Reply::err("ERR SELECT is not allowed in cluster mode");
    }
    match id {
        0 => Reply::ok(),
        1..=15 => Reply::err("ERR limitlab emulates a single database (db 0); other database indexes are not supported"),
        _ => Reply::err("ERR DB index is out of range"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::VirtualClock;
    use crate::emulator::cmd::NOT_INTEGER;

    fn run(core: &mut Core, line: &str) -> Reply {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        core.dispatch(&args)
    }

    // Expected replies were read from a real Redis 7.0.15.
    #[test]
    fn replies() {
        let mut c = Core::new(VirtualClock::default());
        assert_eq!(run(&mut c, "PING"), Reply::Status("PONG".into()));
        assert_eq!(run(&mut c, "PING hi"), Reply::Bulk(b"hi".to_vec()));
        assert_eq!(run(&mut c, "PING a b"), Reply::err("ERR wrong number of arguments for 'ping' command"));
        assert_eq!(run(&mut c, "ECHO"), Reply::err("ERR wrong number of arguments for 'echo' command"));
        assert_eq!(run(&mut c, "FLUSHALL foo"), Reply::err(SYNTAX));
        assert_eq!(run(&mut c, "FLUSHDB sync x"), Reply::err(SYNTAX));
        assert_eq!(run(&mut c, "FLUSHALL ASYNC"), Reply::ok());
        assert_eq!(run(&mut c, "SELECT 0"), Reply::ok());
        assert_eq!(run(&mut c, "SELECT 16"), Reply::err("ERR DB index is out of range"));
        assert_eq!(run(&mut c, "SELECT -1"), Reply::err("ERR DB index is out of range"));
        assert_eq!(run(&mut c, "SELECT abc"), Reply::err(NOT_INTEGER));
        assert_eq!(
            run(&mut c, "SELECT 4294967296"),
            Reply::err("ERR value is out of range, value must between -2147483648 and 2147483647")
        );
        run(&mut c, "SET a 1");
        run(&mut c, "SET b 1 PX 10");
        assert_eq!(run(&mut c, "DBSIZE"), Reply::Int(2));
        c.clock.advance_millis(10);
        // At its deadline a key still exists (Redis: expired only when now > when).
        assert_eq!(run(&mut c, "DBSIZE"), Reply::Int(2));
        c.clock.advance_millis(1);
        assert_eq!(run(&mut c, "DBSIZE"), Reply::Int(1));
    }
}
