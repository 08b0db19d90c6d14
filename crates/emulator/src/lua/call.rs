//! The call bridge: what `redis.call` and `redis.pcall` check before a command runs (Redis's
//! scripting rules), the subcommand table those rules read, and the scripting commands' own
//! entries in the command table.
use std::cell::RefCell;
use std::rc::Rc;

use super::context::RunState;
use crate::admission;
use crate::cluster;
use crate::cmd::{self, flags, CommandSpec};
use crate::core::Core;
use crate::reply::{Reply, ReplySink};
use crate::stats::StatKey;

/// `redis.call`/`redis.pcall` after argument conversion: applies the scripting rules (unknown command,
/// arity, commands scripts may not call, writes in read-only scripts, cluster slots), then runs it.
/// A command with a direct form ([`cmd::Direct`]) writes its reply into `out` and None is returned;
/// any other reply is returned.
pub(crate) fn call_checked(
    core: &Rc<RefCell<Core>>,
    st: &RunState,
    argv: &[&[u8]],
    out: &mut dyn ReplySink,
) -> Option<Reply> {
    let r = call_counted(core, st, argv, out);
    if let Some(Reply::Error(e)) = &r {
        core.borrow_mut().stats.script_error(e);
    }
    r
}

/// [`call_checked`] without the error count: a command refused here is a rejected call of it, one
/// that runs is a call (failed when it replies an error), as INFO commandstats counts them.
fn call_counted(core: &Rc<RefCell<Core>>, st: &RunState, argv: &[&[u8]], out: &mut dyn ReplySink) -> Option<Reply> {
    let Some(found) = st.commands.borrow_mut().find(argv[0]) else {
        return Some(not_emulated(argv));
    };
    let r = call_found(core, st, found, argv, out);
    let spec = found.spec;
    let key = || StatKey::of(spec, crate::emulator::subcommand_name(spec, argv));
    match &r {
        Err(_) => core.borrow_mut().stats.rejected(key()),
        Ok(reply) => core.borrow_mut().stats.call(key(), 0, matches!(reply, Some(Reply::Error(_)))),
    }
    r.unwrap_or_else(Some)
}

/// Runs a command a script called: `Err` when the scripting rules or the server's state refuse it
/// (with the error), else what [`call_checked`] returns.
fn call_found(
    core: &Rc<RefCell<Core>>,
    st: &RunState,
    found: cmd::Found,
    argv: &[&[u8]],
    out: &mut dyn ReplySink,
) -> Result<Option<Reply>, Reply> {
    let spec = found.spec;
    // Every command with subcommands has arity -2 (COMMAND: -1); with a subcommand given, the subcommand is what
    // Redis looks up and checks (`lookupCommand`). Out of line: rate limiters never get here.
    if (spec.arity == -2 || spec.arity == -1) && argv.len() >= 2 {
        if let Some(r) = subcommand_rules(spec, argv) {
            return Err(r);
        }
    }
    if !spec.arity_ok(argv.len()) {
        return Err(Reply::err(cmd::SCRIPT_ARITY));
    }
    if spec.has(flags::NOSCRIPT) || spec.has(flags::SCRIPTING) {
        return Err(Reply::err("ERR This Redis command is not allowed from script"));
    }
    let acl_open = st.acl_open.get().unwrap_or_else(|| {
        let c = core.borrow();
        let open = c.acl_unrestricted(c.caller);
        st.acl_open.set(Some(open));
        open
    });
    if !acl_open {
        let mut c = core.borrow_mut();
        let caller = c.caller;
        if let Err((d, _)) = c.acl_check(caller, argv, "lua") {
            return Err(cmd::acl::script_error(d));
        }
    }
    if st.read_only.get() && spec.has(flags::WRITE | flags::MAY_REPLICATE) {
        return Err(Reply::err("ERR Write commands are not allowed from read-only scripts."));
    }
    let mut core = core.borrow_mut();
    // Until the script's first write, the server's state may still refuse a command (Redis's
    // scriptVerifyWriteCommandAllow, then scriptVerifyOOM); after it, the script cannot be stopped
    // half-way.
    if !st.busy.wrote.get() {
        if spec.has(flags::WRITE) && core.master.is_none() && core.settings.min_replicas() {
            return Err(Reply::err(super::refusals::NOREPLICAS));
        }
        if st.oom_at_start.get() && spec.has(flags::DENYOOM) && !st.allow_oom.get() {
            return Err(Reply::err(super::refusals::OOM));
        }
    }
    if spec.has(flags::WRITE) && core.master.is_some() && core.settings.flag("replica-read-only") {
        return Err(Reply::err(admission::READONLY));
    }
    if spec.has(flags::WRITE) {
        // Redis's SCRIPT_WRITE_DIRTY: from now on SCRIPT KILL refuses (UNKILLABLE).
        st.busy.wrote.set(true);
    }
    if core.cluster {
        let keys = spec.keys.keys(argv);
        match cluster::common_slot(keys.iter().copied()) {
            Err(cluster::CrossSlot) => {
                return Err(Reply::err("ERR Script attempted to access a non local key in a cluster node"))
            }
            Ok(Some(slot)) => match st.slot.get() {
                None => st.slot.set(Some(slot)),
                Some(s) if s != slot && !st.cross_slot.get() => {
                    return Err(Reply::err("ERR Script attempted to access keys that do not hash to the same slot"))
                }
                _ => {}
            },
            Ok(None) => {}
        }
    }
    if !core.monitors.is_empty() {
        let caller = core.caller;
        core.feed_monitors(caller, argv, true);
    }
    if core.tracking.script_keys.is_some() && spec.has(flags::READONLY) {
        // Redis tracks the caller's command (EVAL's keys) when its script reads.
        let keys = core.tracking.script_keys.take().unwrap_or_default();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let caller = core.caller;
        core.track_read(caller, &refs);
    }
    core.resp3 = st.resp.get() == 3;
    core.count_lookups(spec, argv);
    // A direct form skips what `CommandSpec::run` adds around a handler: recording for a replica
    // (a read's lazily expired keys) and keyspace events. Neither is needed unless set up.
    let direct = found.direct.filter(|_| !core.repl.active && core.settings.notify_flags() == 0);
    let reply = match direct {
        Some(direct) => {
            direct(&mut core, argv, out);
            None
        }
        None => Some(spec.run(&mut core, argv)),
    };
    core.resp3 = false;
    Ok(reply)
}

/// A script's call of a command the emulator does not implement: what Redis 7.0.15 says before
/// running it (unknown, wrong number of arguments, not allowed from scripts), from its own table;
/// a command Redis would run is unknown here.
#[cold]
#[inline(never)]
fn not_emulated(argv: &[&[u8]]) -> Reply {
    match cmd::command::redis_lookup(argv) {
        Err(_) => Reply::err("ERR Unknown Redis command called from script"),
        Ok(c) if !c.arity_ok(argv.len()) => Reply::err(cmd::SCRIPT_ARITY),
        Ok(c) if c.has_flag("noscript") => Reply::err("ERR This Redis command is not allowed from script"),
        // Redis would run it: saying "unknown" would blame the script for the emulator's gap.
        Ok(c) => Reply::err(not_implemented(&c.name)),
    }
}

/// The error of a script's call of a Redis 7.0 command that the emulator lacks (distinct from
/// Redis's "Unknown Redis command called from script", kept for the commands Redis lacks too).
pub fn not_implemented(name: &str) -> String {
    format!("ERR Redis command '{name}' called from script is not implemented by limitlab's emulator")
}

/// SCRIPT HELP or FUNCTION HELP.
pub(super) fn help_reply(command: &str) -> Reply {
    let lines = if command == "function" { FUNCTION_HELP } else { SCRIPT_HELP };
    Reply::Array(lines.iter().map(|l| Reply::Status((*l).into())).collect())
}

/// The script-side rules of a command's subcommand: unknown, wrong arity, not allowed from scripts;
/// SCRIPT HELP and FUNCTION HELP are answered here. None: the call goes on.
#[cold]
#[inline(never)]
fn subcommand_rules(spec: &CommandSpec, argv: &[&[u8]]) -> Option<Reply> {
    let subs = crate::cmd::command::subcommands(spec.name)?;
    let Some(sub) = subs.iter().find(|s| argv[1].eq_ignore_ascii_case(s.name.as_bytes())) else {
        return Some(Reply::err("ERR Unknown Redis command called from script"));
    };
    if !cmd::arity_ok(sub.arity, argv.len()) {
        return Some(Reply::err(cmd::SCRIPT_ARITY));
    }
    if sub.noscript {
        return Some(Reply::err("ERR This Redis command is not allowed from script"));
    }
    if spec.has(flags::SCRIPTING) {
        // SCRIPT HELP and FUNCTION HELP, the only ones a script may call.
        return Some(help_reply(spec.name));
    }
    None
}

pub(super) static SCRIPT_HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
];

/// FUNCTION HELP.
pub(super) static FUNCTION_HELP: &[&str] = &[
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
];
