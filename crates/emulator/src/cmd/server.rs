//! Server commands: PING, ECHO, TIME and WAIT (the databases' commands are in [`super::databases`]).
use crate::command_spec::flags::*;
use crate::command_spec::{arg_i64, CommandSpec, KeySpec};
use crate::core::Core;
use crate::reply::Reply;
use crate::tri;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "ping", arity: -1, flags: 0, keys: KeySpec::NONE, handler: ping },
    CommandSpec { name: "echo", arity: 2, flags: 0, keys: KeySpec::NONE, handler: echo },
    CommandSpec { name: "time", arity: 1, flags: 0, keys: KeySpec::NONE, handler: time },
    CommandSpec { name: "wait", arity: 3, flags: NOSCRIPT, keys: KeySpec::NONE, handler: wait },
];

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
