//! Server commands: PING, ECHO, TIME, WAIT, SAVE, REPLICAOF, ROLE and LOLWUT (the databases' commands
//! are in [`super::databases`]).
use crate::command_spec::flags::*;
use crate::command_spec::{arg_i64, CommandSpec, KeySpec};
use crate::core::Core;
use crate::reply::Reply;
use crate::tri;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "ping", arity: -1, flags: 0, keys: KeySpec::NONE, handler: ping },
    CommandSpec { name: "echo", arity: 2, flags: 0, keys: KeySpec::NONE, handler: echo },
    CommandSpec { name: "lolwut", arity: -1, flags: READONLY, keys: KeySpec::NONE, handler: lolwut },
    CommandSpec { name: "time", arity: 1, flags: 0, keys: KeySpec::NONE, handler: time },
    CommandSpec { name: "wait", arity: 3, flags: NOSCRIPT, keys: KeySpec::NONE, handler: wait },
    CommandSpec { name: "save", arity: 1, flags: NOSCRIPT, keys: KeySpec::NONE, handler: save },
    CommandSpec { name: "replicaof", arity: 3, flags: NOSCRIPT, keys: KeySpec::NONE, handler: replicaof },
    CommandSpec { name: "slaveof", arity: 3, flags: NOSCRIPT, keys: KeySpec::NONE, handler: replicaof },
    CommandSpec { name: "role", arity: 1, flags: NOSCRIPT, keys: KeySpec::NONE, handler: role },
];

/// ROLE: a master's offset and replicas, or a replica's master (its link always down here).
fn role(core: &mut Core, _: &[&[u8]]) -> Reply {
    let b = |s: &str| Reply::Bulk(s.as_bytes().to_vec());
    if let Some((host, port)) = &core.master {
        let port = port.parse::<i64>().unwrap_or(0);
        return Reply::Array(vec![b("slave"), b(host), Reply::Int(port), b("connect"), Reply::Int(-1)]);
    }
    let offset = core.repl.offset;
    let replicas = core
        .repl
        .replicas
        .iter()
        .map(|r| Reply::Array(vec![b(&r.ip), b(&r.port.to_string()), b(&offset.to_string())]))
        .collect();
    Reply::Array(vec![b("master"), Reply::Int(offset as i64), Reply::Array(replicas)])
}

/// SAVE: nothing is ever written to disk, so there is nothing to save; Redis's reply.
fn save(_: &mut Core, _: &[&[u8]]) -> Reply {
    Reply::ok()
}

/// REPLICAOF host port | NO ONE: the server takes the role a replica would have while its link to
/// the master is down (there is no replication): writes are refused as on a read-only replica,
/// and with `replica-serve-stale-data no` most commands too (see [`crate::admission`]).
fn replicaof(core: &mut Core, a: &[&[u8]]) -> Reply {
    if core.cluster {
        return Reply::err("ERR REPLICAOF not allowed in cluster mode.");
    }
    if a[1].eq_ignore_ascii_case(b"no") && a[2].eq_ignore_ascii_case(b"one") {
        core.master = None;
        return Reply::ok();
    }
    match crate::keyspace::parse_canonical_i64(a[2]) {
        Some(p) if (0..=65535).contains(&p) => {}
        _ => return Reply::err("ERR Invalid master port"),
    }
    let master = (String::from_utf8_lossy(a[1]).into_owned(), String::from_utf8_lossy(a[2]).into_owned());
    if core.master.as_ref() == Some(&master) {
        return Reply::Status("OK Already connected to specified master".into());
    }
    core.master = Some(master);
    Reply::ok()
}

/// PING [message]: more than one argument is an arity error, as in Redis.
fn ping(_: &mut Core, a: &[&[u8]]) -> Reply {
    match a.len() {
        1 => Reply::Status("PONG".into()),
        2 => Reply::Bulk(a[1].to_vec()),
        _ => super::arity_error("ping"),
    }
}

fn echo(_: &mut Core, a: &[&[u8]]) -> Reply {
    Reply::Bulk(a[1].to_vec())
}

/// LOLWUT [VERSION v]: Redis 7.0's art for a version other than 5 and 6 is its version line, a
/// verbatim string. The art of versions 5 and 6 is drawn with the C library's `rand()`, which the
/// emulator does not share, so those are refused.
fn lolwut(_: &mut Core, a: &[&[u8]]) -> Reply {
    if a.len() >= 3 && a[1].eq_ignore_ascii_case(b"version") {
        // getLongFromObjectOrReply, then printed as an unsigned int ("%u.0.0").
        let v = tri!(arg_i64(a[2])) as u32;
        if v == 5 || v == 6 {
            return Reply::err(format!("ERR limitlab does not emulate LOLWUT VERSION {v} (its art is random)"));
        }
    }
    Reply::Verbatim(b"Redis ver. 7.0.15\n".to_vec())
}

/// TIME: seconds and microseconds of the virtual clock, as two bulk strings.
fn time(core: &mut Core, _: &[&[u8]]) -> Reply {
    let us = core.now_us();
    Reply::Array(vec![
        Reply::Bulk(us.div_euclid(1_000_000).to_string().into_bytes()),
        Reply::Bulk(us.rem_euclid(1_000_000).to_string().into_bytes()),
    ])
}

/// WAIT numreplicas timeout: the emulator has no replicas, so the answer is always 0. Asked for at
/// least one replica, Redis blocks until the timeout: the virtual clock moves on by the timeout
/// (time passes for everyone, as on a real server). Inside EXEC it answers at once, as Redis does;
/// timeout 0 would block forever, which the emulator refuses.
fn wait(core: &mut Core, a: &[&[u8]]) -> Reply {
    let replicas = tri!(arg_i64(a[1]));
    let timeout = match arg_i64(a[2]) {
        Ok(t) => t,
        Err(_) => return Reply::err("ERR timeout is not an integer or out of range"),
    };
    if timeout < 0 {
        return Reply::err("ERR timeout is negative");
    }
    if replicas > 0 && !core.in_exec {
        if timeout == 0 {
            return Reply::err(
                "ERR limitlab: WAIT for a replica without a timeout would block forever (the emulator has no replicas)",
            );
        }
        core.clock.advance_millis(timeout);
    }
    Reply::Int(0)
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
        assert_eq!(run(&mut c, "PING"), Reply::Status("PONG".into()));
        assert_eq!(run(&mut c, "PING hi"), Reply::Bulk(b"hi".to_vec()));
        assert_eq!(run(&mut c, "PING a b"), Reply::err("ERR wrong number of arguments for 'ping' command"));
        assert_eq!(run(&mut c, "ECHO"), Reply::err("ERR wrong number of arguments for 'echo' command"));
        let t0 = c.now_ms();
        assert_eq!(run(&mut c, "WAIT 0 0"), Reply::Int(0));
        assert_eq!(run(&mut c, "WAIT 1 250"), Reply::Int(0));
        assert_eq!(c.now_ms(), t0 + 250, "blocked until the timeout");
        assert_eq!(run(&mut c, "WAIT x 1"), Reply::err(NOT_INTEGER));
        assert_eq!(run(&mut c, "WAIT 1 x"), Reply::err("ERR timeout is not an integer or out of range"));
        assert_eq!(run(&mut c, "WAIT 1 -1"), Reply::err("ERR timeout is negative"));
    }
}
