//! MONITOR: a client that sends it sees every command the server runs afterwards, one line each,
//! as Redis 7.0.15 writes them: `+<seconds>.<micros> [<db> <peer address>] "arg" "arg"...`, the
//! time read from the server's clock (the virtual one under limitlab), `lua` instead of the
//! address for a command a script called, arguments quoted as Redis's `sdscatrepr` quotes them.
//!
//! As in Redis, a command is shown once it ran (whatever it replied), EVAL and FCALL before the
//! commands their script calls; commands refused before they run (unknown, wrong arity, NOAUTH,
//! ACL) are not shown, nor `admin` commands (CONFIG, CLIENT LIST, ...) and those Redis marks
//! `skip_monitor`. The monitoring client is a replica to Redis: it may not read or write keys
//! (`Replica can't interact with the keyspace`), and RESET or QUIT ends it.
use crate::clients::ClientId;
use crate::command_spec::flags::*;
use crate::command_spec::{CommandSpec, KeySpec};
use crate::core::Core;
use crate::deliver::Deliver;
use crate::reply::Reply;

pub static COMMANDS: &[CommandSpec] =
    &[CommandSpec { name: "monitor", arity: 1, flags: CONNECTION | NOSCRIPT, keys: KeySpec::NONE, handler: no_client }];

fn no_client(_: &mut Core, _: &[&[u8]]) -> Reply {
    Reply::err("ERR MONITOR acts on a client connection: send it with Emulator::execute_as")
}

/// MONITOR sent by client `id`.
pub fn run(core: &mut Core, id: ClientId) -> Reply {
    if core.in_exec {
        return Reply::err("ERR MONITOR isn't allowed for DENY BLOCKING client");
    }
    let Some(c) = core.client(id) else { return Reply::Nil };
    if c.monitor {
        // Already monitoring: Redis answers nothing.
        core.no_reply = true;
        return Reply::ok();
    }
    c.monitor = true;
    core.monitors.push(id);
    Reply::ok()
}

/// Redis's `sdscatrepr`: the bytes in double quotes, escaped.
pub fn repr(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &c in s {
        match c {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(c),
            _ => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

impl Core {
    /// Shows a command to the monitoring clients (when there are any): sent by client `id`, or by
    /// a script when `lua`.
    pub fn feed_monitors(&mut self, id: ClientId, args: &[&[u8]], lua: bool) {
        if self.monitors.is_empty() {
            return;
        }
        let us = self.now_us();
        let mut line =
            format!("+{}.{:06} [{} ", us.div_euclid(1_000_000), us.rem_euclid(1_000_000), self.selected).into_bytes();
        if lua {
            line.extend_from_slice(b"lua");
        } else {
            let addr = self.clients.get(id.index()).and_then(Option::as_ref).map_or_else(String::new, |c| {
                c.addr.as_ref().map_or_else(|| format!("127.0.0.1:{}", 40000 + c.id % 20000), |(p, _)| p.clone())
            });
            line.extend_from_slice(addr.as_bytes());
        }
        line.extend_from_slice(b"] ");
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                line.push(b' ');
            }
            repr(&mut line, a);
        }
        line.extend_from_slice(b"\r\n");
        for &m in &self.monitors {
            self.outbox.push((m, Deliver::Raw(line.clone())));
        }
    }

    /// Shows a command that ran at top level, unless Redis keeps it from MONITOR (`admin`,
    /// `skip_monitor`).
    pub fn feed_monitors_checked(&mut self, id: ClientId, spec: &CommandSpec, args: &[&[u8]]) {
        if self.monitors.is_empty() {
            return;
        }
        let sub = crate::emulator::subcommand_name(spec, args);
        if crate::admission::redis_flags(spec, sub) & crate::admission::rflags::UNMONITORED != 0 {
            return;
        }
        self.feed_monitors(id, args, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_quoted_as_redis_quotes_them() {
        let mut out = Vec::new();
        repr(&mut out, b"a\"b\n\\\x01 z");
        assert_eq!(out, b"\"a\\\"b\\n\\\\\\x01 z\"");
    }
}
