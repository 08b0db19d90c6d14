//! Transactions as Redis 7.0 runs them: MULTI queues a client's commands (`QUEUED`), EXEC runs them
//! back to back and replies their replies in an array, DISCARD drops them; WATCH makes the next EXEC
//! fail (a nil array) when a watched key was touched or expired in between.
//!
//! The rules, each checked against a real Redis 7.0.15 (`tests/cases/transactions.txt`):
//! - While queueing, what Redis refuses before running a command (an unknown name or subcommand, a
//!   wrong number of arguments, keys in several cluster slots) is replied at once and makes EXEC fail with
//!   `EXECABORT Transaction discarded because of previous errors.`; anything else a command could
//!   object to is found when EXEC runs it, and its error takes its place in EXEC's array.
//! - EXEC, DISCARD, MULTI and WATCH are never queued (MULTI and WATCH inside MULTI are errors that do
//!   not abort the transaction); UNWATCH is queued like any command.
//! - `EXEC` with arguments is refused with `EXECABORT Transaction discarded because of: ...`, in a
//!   transaction or not, and ends it (and the client's WATCHes) either way.
//! - A key is touched by any write that changes it and by the writes Redis counts even when they
//!   leave it as it was ([`super::Core::touch`]), from any client or script, by FLUSHDB, FLUSHALL,
//!   SWAPDB and MOVE; a watched key that expires before EXEC fails it as well.
//! - Scripts cannot call any of these (`This Redis command is not allowed from script`).
use super::clients::ClientId;
use super::cmd;
use super::command_spec::{flags, CommandSpec};
use super::reply::Reply;
use crate::admission::{self, rflags, Kind};
use crate::emulator::Emulator;
use crate::stats::StatKey;

const QUEUED: &str = "QUEUED";
const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

impl Emulator {
    /// A command from a client in MULTI: refused (and the transaction marked to fail), run at once
    /// (EXEC, DISCARD, MULTI, WATCH), or queued.
    pub(super) fn queue(&mut self, id: ClientId, spec: Option<&'static CommandSpec>, args: &[&[u8]]) -> Reply {
        let Some(spec) = spec else {
            self.flag_transaction(id);
            return cmd::unknown_command(args);
        };
        let sub = crate::emulator::subcommand_name(spec, args);
        let key = StatKey::of(spec, sub);
        if !spec.arity_ok(args.len()) {
            self.core.borrow_mut().stats.rejected(key);
            return self.arity_error(id, spec);
        }
        if let Some(r) = crate::cmd::command::subcommand_refusal(spec, args) {
            if sub.is_some() {
                self.core.borrow_mut().stats.rejected(key);
            }
            self.flag_transaction(id);
            return r;
        }
        let flags = admission::redis_flags(spec, sub);
        if flags & rflags::NO_MULTI != 0 {
            self.core.borrow_mut().stats.rejected(key);
            self.flag_transaction(id);
            return Reply::err(admission::NO_MULTI);
        }
        let denied = self.core.borrow_mut().acl_check(id, args, "multi");
        if let Err((d, full)) = denied {
            self.core.borrow_mut().stats.rejected(key);
            self.flag_transaction(id);
            return cmd::acl::toplevel_error(d, &full);
        }
        if let Some(r) = self.monitor_refusal(id, spec, sub) {
            self.core.borrow_mut().stats.rejected(key);
            self.flag_transaction(id);
            return r;
        }
        let guarded = self.core.borrow().guarded();
        if guarded {
            let kind = match spec.name {
                "exec" => {
                    let mut core = self.core.borrow_mut();
                    let m = core.client(id).and_then(|c| c.multi.as_ref()).expect("queueing in MULTI");
                    (m.flags, Kind::Exec { any_not_stale: m.any_not_stale })
                }
                "discard" => (flags, Kind::Discard),
                _ => (flags, Kind::Plain),
            };
            let refused = self.core.borrow_mut().refusal(kind.0, kind.1, true);
            if let Some(e) = refused {
                self.core.borrow_mut().stats.rejected(key);
                if spec.name == "exec" {
                    // Redis's `execCommandAbort`: the transaction ends with the reason.
                    self.discard_transaction(id);
                    return Reply::Error(format!("EXECABORT Transaction discarded because of: {e}"));
                }
                self.flag_transaction(id);
                return Reply::err(e);
            }
        }
        if spec.name == "exec" && self.postpone(id, spec, args) {
            return Reply::Nil;
        }
        if matches!(spec.name, "exec" | "discard" | "multi" | "watch") {
            return self.run_checked(id, spec, key, args);
        }
        let mut core = self.core.borrow_mut();
        if core.cluster {
            let keys = queued_keys(spec, args);
            let slot = match super::cluster::common_slot(keys.iter().copied()) {
                Ok(s) => s,
                Err(super::cluster::CrossSlot) => {
                    drop(core);
                    self.flag_transaction(id);
                    return Reply::err(super::cluster::CROSSSLOT);
                }
            };
            let multi = core.client(id).and_then(|c| c.multi.as_mut()).expect("queueing in MULTI");
            match (multi.slot, slot) {
                (_, None) => {}
                (None, s) => multi.slot = s,
                (Some(a), Some(b)) if a != b => multi.cross_slot = true,
                _ => {}
            }
        }
        let multi = core.client(id).and_then(|c| c.multi.as_mut()).expect("queueing in MULTI");
        multi.flags |= flags;
        multi.any_not_stale |= flags & rflags::STALE == 0;
        multi.queue.push(args.iter().map(|a| a.to_vec()).collect());
        Reply::Status(QUEUED.into())
    }

    /// MULTI, EXEC, DISCARD, WATCH and UNWATCH, arity already checked.
    pub(super) fn connection_command(&mut self, id: ClientId, spec: &CommandSpec, args: &[&[u8]]) -> Reply {
        let mut core = self.core.borrow_mut();
        let in_multi = core.client(id).is_some_and(|c| c.multi.is_some());
        match spec.name {
            "multi" => {
                if in_multi {
                    return Reply::err("ERR MULTI calls can not be nested");
                }
                if let Some(c) = core.client(id) {
                    c.multi = Some(Default::default());
                }
                Reply::ok()
            }
            "discard" => {
                if !in_multi {
                    return Reply::err("ERR DISCARD without MULTI");
                }
                drop(core);
                self.discard_transaction(id);
                Reply::ok()
            }
            "watch" => {
                if in_multi {
                    return Reply::err("ERR WATCH inside MULTI is not allowed");
                }
                for key in &args[1..] {
                    core.watch(id, key);
                }
                Reply::ok()
            }
            "unwatch" => {
                core.unwatch_all(id);
                if let Some(c) = core.client(id) {
                    c.dirty_cas = false;
                }
                Reply::ok()
            }
            "exec" => {
                if !in_multi {
                    return Reply::err("ERR EXEC without MULTI");
                }
                drop(core);
                self.exec(id)
            }
            "client" => cmd::client::run(&mut core, id, args),
            "acl" => cmd::acl::run(&mut core, id, args),
            "monitor" => cmd::monitor::run(&mut core, id),
            _ => cmd::unknown_command(args),
        }
    }

    /// A wrong number of arguments from a client: EXEC's ends the transaction (in MULTI or not), any
    /// other command's marks the transaction (if any) to fail.
    pub(super) fn arity_error(&mut self, id: ClientId, spec: &CommandSpec) -> Reply {
        if spec.name == "exec" {
            self.discard_transaction(id);
            return Reply::Error(format!(
                "EXECABORT Transaction discarded because of: wrong number of arguments for '{}' command",
                spec.name
            ));
        }
        self.flag_transaction(id);
        cmd::wrong_arity(spec)
    }

    /// Redis's `flagTransaction`: a client in MULTI will see EXEC fail.
    pub(super) fn flag_transaction(&mut self, id: ClientId) {
        if let Some(m) = self.core.borrow_mut().client(id).and_then(|c| c.multi.as_mut()) {
            m.dirty_exec = true;
        }
    }

    /// Redis's `discardTransaction`: no queue, no flags, no WATCHes.
    fn discard_transaction(&mut self, id: ClientId) {
        let mut core = self.core.borrow_mut();
        core.unwatch_all(id);
        if let Some(c) = core.client(id) {
            c.multi = None;
            c.dirty_cas = false;
        }
    }

    fn exec(&mut self, id: ClientId) -> Reply {
        let (multi, failed) = {
            let mut core = self.core.borrow_mut();
            let failed = core.watch_failed(id);
            let Some(multi) = core.client(id).and_then(|c| c.multi.take()) else {
                return Reply::err("ERR EXEC without MULTI");
            };
            (multi, failed)
        };
        // A cluster node refuses the whole transaction before it runs.
        if multi.cross_slot {
            self.discard_transaction(id);
            return Reply::err(super::cluster::CROSSSLOT);
        }
        if multi.dirty_exec || failed {
            self.discard_transaction(id);
            return if multi.dirty_exec { Reply::err(EXECABORT) } else { Reply::NilArray };
        }
        self.discard_transaction(id);
        let was = std::mem::replace(&mut self.core.borrow_mut().in_exec, true);
        if let Some(c) = self.core.borrow_mut().client(id) {
            c.executing = Some(multi.queue.len());
        }
        let mut replies = Vec::with_capacity(multi.queue.len());
        for cmd in &multi.queue {
            let refs: Vec<&[u8]> = cmd.iter().map(Vec::as_slice).collect();
            // Queued commands passed Redis's checks when queued (and EXEC for all of them).
            // The ACL rules may have changed since the command was queued.
            let denied = self.core.borrow_mut().acl_check(id, &refs, "multi");
            let r = match cmd::lookup(refs[0]) {
                Some(_) if denied.is_err() => cmd::acl::exec_error(denied.expect_err("denied").0),
                Some(spec) => {
                    let key = StatKey::of(spec, crate::emulator::subcommand_name(spec, &refs));
                    self.run_checked(id, spec, key, &refs)
                }
                None => cmd::unknown_command(&refs),
            };
            if let Reply::Error(e) = &r {
                self.core.borrow_mut().stats.error_reply(e);
            }
            replies.push(r);
        }
        self.core.borrow_mut().in_exec = was;
        if let Some(c) = self.core.borrow_mut().client(id) {
            c.executing = None;
        }
        Reply::Array(replies)
    }
}

/// The keys a cluster node reads from a command to route it: its key positions, or for EVAL and
/// EVALSHA, FCALL and FCALL_RO the `numkeys` keys (none when `numkeys` does not read).
fn queued_keys<'a>(spec: &CommandSpec, args: &[&'a [u8]]) -> Vec<&'a [u8]> {
    if spec.has(flags::SCRIPTING) {
        if spec.name.starts_with("eval") || spec.name.starts_with("fcall") {
            let n = std::str::from_utf8(args[2]).ok().and_then(|s| s.parse::<usize>().ok()).unwrap_or(0);
            if 3 + n <= args.len() {
                return args[3..3 + n].to_vec();
            }
        }
        return Vec::new();
    }
    spec.keys.keys(args)
}
