//! The sixteen databases: SELECT, SWAPDB, MOVE, DBSIZE, FLUSHDB and FLUSHALL, with Redis 7.0's
//! checks, replies and WATCH touches. (COPY .. DB n is with the key commands.)
use crate::command_spec::arg_i32;
use crate::command_spec::flags::*;
use crate::command_spec::{eq_ic, CommandSpec, KeySpec, SYNTAX};
use crate::core::{Core, DATABASES};
use crate::reply::Reply;
use crate::tri;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "select", arity: 2, flags: 0, keys: KeySpec::NONE, handler: select },
    CommandSpec { name: "swapdb", arity: 3, flags: WRITE, keys: KeySpec::NONE, handler: swapdb },
    CommandSpec { name: "move", arity: 3, flags: WRITE, keys: KeySpec::ONE, handler: move_cmd },
    CommandSpec { name: "dbsize", arity: 1, flags: READONLY, keys: KeySpec::NONE, handler: dbsize },
    CommandSpec { name: "flushall", arity: -1, flags: WRITE, keys: KeySpec::NONE, handler: flushall },
    CommandSpec { name: "flushdb", arity: -1, flags: WRITE, keys: KeySpec::NONE, handler: flushdb },
];

/// The text of a database index outside 0..16.
pub const OUT_OF_RANGE: &str = "ERR DB index is out of range";

/// A database index as `selectDb` takes it: a C int (Redis's two texts), then 0..16.
pub(crate) fn arg_db(b: &[u8]) -> Result<usize, Reply> {
    let id = arg_i32(b)?;
    usize::try_from(id).ok().filter(|&i| i < DATABASES).ok_or_else(|| Reply::err(OUT_OF_RANGE))
}

/// SELECT index: cluster mode allows only 0. From a client it changes the client's database; from a
/// script, the script's (the caller's is restored when the script ends).
fn select(core: &mut Core, a: &[&[u8]]) -> Reply {
    let id = tri!(arg_i32(a[1]));
    if core.cluster && id != 0 {
        return Reply::err("ERR SELECT is not allowed in cluster mode");
    }
    match usize::try_from(id).ok().filter(|&i| i < DATABASES) {
        Some(i) => {
            core.select(i);
            Reply::ok()
        }
        None => Reply::err(OUT_OF_RANGE),
    }
}

/// SWAPDB index1 index2: the databases trade their keys (clients keep their indexes, so each sees
/// the other's keys); every watched key that exists in either is touched.
fn swapdb(core: &mut Core, a: &[&[u8]]) -> Reply {
    if core.cluster {
        return Reply::err("ERR SWAPDB is not allowed in cluster mode");
    }
    // getIntFromObjectOrReply with a message: the message replaces both of its texts.
    let index = |b: &[u8], msg: &str| arg_i32(b).map_err(|_| Reply::Error(format!("ERR {msg}")));
    let x = tri!(index(a[1], "invalid first DB index"));
    let y = tri!(index(a[2], "invalid second DB index"));
    let valid = |i: i32| usize::try_from(i).ok().filter(|&i| i < DATABASES);
    let (Some(x), Some(y)) = (valid(x), valid(y)) else { return Reply::err(OUT_OF_RANGE) };
    if x != y {
        core.touch_all_in(x, Some(y));
        core.touch_all_in(y, Some(x));
        core.swap_dbs(x, y);
    }
    Reply::ok()
}

/// MOVE key db: 0 when the key is missing or already in the target database; the key keeps its TTL.
fn move_cmd(core: &mut Core, a: &[&[u8]]) -> Reply {
    if core.cluster {
        return Reply::err("ERR MOVE is not allowed in cluster mode");
    }
    let dst = tri!(arg_db(a[2]));
    if dst == core.selected {
        return Reply::err("ERR source and destination objects are the same");
    }
    let key = a[1];
    let now = core.now_ms();
    if core.db.get(key, now).is_none() || core.db_at(dst).get(key, now).is_some() {
        return Reply::Int(0);
    }
    let Some(entry) = core.db.take(key, now) else { return Reply::Int(0) };
    core.db_at(dst).put(key, entry);
    core.touch(key);
    core.touch_in(dst, key);
    Reply::Int(1)
}

/// DBSIZE: live keys only (Redis may still count expired keys its background cycle has not reclaimed;
/// the emulator reclaims them exactly on time).
fn dbsize(core: &mut Core, _: &[&[u8]]) -> Reply {
    let now = core.now_ms();
    core.db.purge_expired(now);
    Reply::Int(core.db.len() as i64)
}

/// FLUSHALL / FLUSHDB [SYNC|ASYNC]: the only option must be alone.
fn flush_option(a: &[&[u8]]) -> Result<(), Reply> {
    match a.len() {
        1 => Ok(()),
        2 if eq_ic(a[1], "sync") || eq_ic(a[1], "async") => Ok(()),
        _ => Err(Reply::err(SYNTAX)),
    }
}

fn flushdb(core: &mut Core, a: &[&[u8]]) -> Reply {
    tri!(flush_option(a));
    let db = core.selected;
    core.touch_all_in(db, None);
    core.tracking_flush();
    core.db.clear();
    Reply::ok()
}

fn flushall(core: &mut Core, a: &[&[u8]]) -> Reply {
    tri!(flush_option(a));
    for db in 0..DATABASES {
        core.touch_all_in(db, None);
        core.db_at(db).clear();
    }
    core.tracking_flush();
    Reply::ok()
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

    // Expected replies were read from a real Redis 7.0.15.
    #[test]
    fn replies() {
        let mut c = Core::new(VirtualClock::default());
        assert_eq!(run(&mut c, "FLUSHALL foo"), Reply::err(SYNTAX));
        assert_eq!(run(&mut c, "FLUSHDB sync x"), Reply::err(SYNTAX));
        assert_eq!(run(&mut c, "FLUSHALL ASYNC"), Reply::ok());
        assert_eq!(run(&mut c, "SELECT 0"), Reply::ok());
        assert_eq!(run(&mut c, "SELECT 16"), Reply::err(OUT_OF_RANGE));
        assert_eq!(run(&mut c, "SELECT -1"), Reply::err(OUT_OF_RANGE));
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

    #[test]
    fn databases_are_separate_and_swap_and_move() {
        let mut c = Core::new(VirtualClock::default());
        run(&mut c, "SET a 0");
        assert_eq!(run(&mut c, "SELECT 3"), Reply::ok());
        assert_eq!(run(&mut c, "GET a"), Reply::Nil);
        run(&mut c, "SET a 3");
        run(&mut c, "SET b 3");
        assert_eq!(run(&mut c, "MOVE b 0"), Reply::Int(1));
        assert_eq!(run(&mut c, "MOVE a 0"), Reply::Int(0));
        assert_eq!(run(&mut c, "MOVE a 3"), Reply::err("ERR source and destination objects are the same"));
        assert_eq!(run(&mut c, "DBSIZE"), Reply::Int(1));
        assert_eq!(run(&mut c, "SWAPDB 0 3"), Reply::ok());
        assert_eq!(run(&mut c, "DBSIZE"), Reply::Int(2));
        assert_eq!(run(&mut c, "GET a"), Reply::bulk("0"));
        assert_eq!(run(&mut c, "SWAPDB 0 x"), Reply::err("ERR invalid second DB index"));
        assert_eq!(run(&mut c, "SWAPDB 0 16"), Reply::err(OUT_OF_RANGE));
        assert_eq!(run(&mut c, "FLUSHDB"), Reply::ok());
        assert_eq!(run(&mut c, "SELECT 0"), Reply::ok());
        assert_eq!(run(&mut c, "GET a"), Reply::bulk("3"));
        assert_eq!(run(&mut c, "FLUSHALL"), Reply::ok());
        assert_eq!(run(&mut c, "DBSIZE"), Reply::Int(0));
        c.cluster = true;
        assert_eq!(run(&mut c, "SELECT 1"), Reply::err("ERR SELECT is not allowed in cluster mode"));
        assert_eq!(run(&mut c, "SWAPDB 0 1"), Reply::err("ERR SWAPDB is not allowed in cluster mode"));
        assert_eq!(run(&mut c, "MOVE a 1"), Reply::err("ERR MOVE is not allowed in cluster mode"));
    }
}
