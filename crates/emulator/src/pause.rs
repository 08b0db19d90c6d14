//! CLIENT PAUSE and UNPAUSE as Redis 7.0.15 has them: for a time on the server's clock (the
//! virtual one under limitlab: CLOCK.ADVANCE ends a pause), every command (ALL) or those that may
//! write (WRITE: writes, PUBLISH and PFCOUNT, EXEC of such a transaction, a script that does not
//! declare `no-writes`) waits: its client is postponed (a blocked client, as INFO counts it) and
//! its command runs when the pause ends, its reply then delivered ([`Deliver::Unblock`]). Commands
//! refused before they would run (arity, ACL) answer at once; a MONITOR client is a replica and is
//! never paused.
use crate::clients::ClientId;
use crate::command_spec::{flags, CommandSpec};
use crate::core::Core;
use crate::deliver::Deliver;
use crate::emulator::Emulator;
use crate::reply::Reply;

/// A pause in force: until when (ms, the server's clock), and whether it holds every command.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pause {
    pub end_ms: i64,
    pub all: bool,
}

impl Core {
    /// CLIENT PAUSE timeout [WRITE|ALL] (arguments after the subcommand).
    pub fn client_pause(&mut self, a: &[&[u8]]) -> Reply {
        let mut all = true;
        if let Some(mode) = a.get(1) {
            if mode.eq_ignore_ascii_case(b"write") {
                all = false;
            } else if !mode.eq_ignore_ascii_case(b"all") {
                return Reply::err("ERR CLIENT PAUSE mode must be WRITE or ALL");
            }
        }
        let Some(ms) = crate::keyspace::parse_canonical_i64(a[0]) else {
            return Reply::err("ERR timeout is not an integer or out of range");
        };
        if ms < 0 {
            return Reply::err("ERR timeout is negative");
        }
        let end_ms = self.clock_ms().saturating_add(ms);
        // A pause already in force keeps what is stricter: ALL over WRITE, the later end.
        self.pause = Some(match self.pause {
            Some(p) => Pause { end_ms: p.end_ms.max(end_ms), all: p.all || all },
            None => Pause { end_ms, all },
        });
        Reply::ok()
    }

    /// The server's clock (never frozen by a script).
    fn clock_ms(&self) -> i64 {
        self.now_us().div_euclid(1000)
    }

    /// The pause in force, if any (one whose time is up is lifted here).
    pub fn pause_in_force(&mut self) -> Option<Pause> {
        let p = self.pause?;
        if self.clock_ms() >= p.end_ms {
            self.pause = None;
            return None;
        }
        Some(p)
    }

    /// Whether client `id` waits for the pause to end.
    pub fn is_postponed(&self, id: ClientId) -> bool {
        self.postponed.iter().any(|(c, _)| *c == id)
    }

    /// When the pause ends, if clients wait for it.
    pub fn pause_deadline(&self) -> Option<i64> {
        self.pause.filter(|_| !self.postponed.is_empty()).map(|p| p.end_ms)
    }

    /// Whether postponed clients may run again.
    pub fn resumable(&self) -> bool {
        !self.postponed.is_empty() && self.pause.is_none()
    }
}

impl Emulator {
    /// Whether client `id`'s command must wait for the pause to end; if so it is kept, to run
    /// then, and nothing is replied now.
    pub(crate) fn postpone(&mut self, id: ClientId, spec: &'static CommandSpec, args: &[&[u8]]) -> bool {
        let pause = {
            let mut core = self.core.borrow_mut();
            if core.pause.is_none() || core.client(id).is_some_and(|c| c.monitor) {
                return false;
            }
            match core.pause_in_force() {
                Some(p) => p,
                None => return false,
            }
        };
        if !pause.all && !self.may_write(id, spec, args) {
            return false;
        }
        let mut core = self.core.borrow_mut();
        core.postponed.push((id, args.iter().map(|a| a.to_vec()).collect()));
        core.no_reply = true;
        true
    }

    /// Whether a command may write as CLIENT PAUSE WRITE judges it (Redis's
    /// `is_may_replicate_command`, scripts by their flags).
    fn may_write(&self, id: ClientId, spec: &'static CommandSpec, args: &[&[u8]]) -> bool {
        if spec.name == "exec" {
            let queue: Vec<Vec<Vec<u8>>> = self
                .core
                .borrow_mut()
                .client(id)
                .and_then(|c| c.multi.as_ref())
                .map_or_else(Vec::new, |m| m.queue.clone());
            return queue.iter().any(|cmd| {
                let refs: Vec<&[u8]> = cmd.iter().map(Vec::as_slice).collect();
                crate::cmd::lookup(refs[0]).is_some_and(|s| s.name != "exec" && self.may_write(id, s, &refs))
            });
        }
        if spec.has(flags::SCRIPTING) {
            return self.scripting.may_write(args);
        }
        let sub = crate::emulator::subcommand_name(spec, args);
        spec.has(flags::WRITE | flags::MAY_REPLICATE)
            || crate::admission::redis_flags(spec, sub) & crate::admission::rflags::WRITE != 0
    }

    /// Runs the commands of the clients that waited for a pause now lifted, in the order they
    /// came, and delivers their replies.
    pub(crate) fn resume_postponed(&mut self) {
        loop {
            let next = {
                let mut core = self.core.borrow_mut();
                if core.pause_in_force().is_some() || core.postponed.is_empty() {
                    return;
                }
                core.postponed.remove(0)
            };
            let (id, args) = next;
            let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            let resp3 = self.core.borrow_mut().client(id).is_some_and(|c| c.resp3);
            let r = self.execute_as_with(id, &refs, resp3);
            let mut core = self.core.borrow_mut();
            core.no_reply = false;
            if core.is_postponed(id) || core.blocking.is_blocked(id) {
                continue;
            }
            core.outbox.push((id, Deliver::Unblock(r)));
        }
    }
}
