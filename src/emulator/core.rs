//! The server state that commands act on: the keyspace, the clock, and the flags of the current call.
use super::cmd::{self, flags, CommandSpec};
use super::keyspace::Db;
use super::reply::Reply;
use crate::clock::{Clock, VirtualClock};

/// State shared by every command. Scripting lives one level up, in [`super::Emulator`].
pub struct Core {
    pub db: Db,
    pub clock: VirtualClock,
    /// While a script runs, key expiry is judged at the script's start time (Redis 7.0 semantics).
    pub frozen_ms: Option<i64>,
    /// Cluster mode: commands and scripts must keep to one hash slot.
    pub cluster: bool,
    /// The caller speaks RESP3 (a script after `redis.setresp(3)`): some replies change shape, e.g.
    /// WITHSCORES ranges nest `[member, score]` pairs.
    pub resp3: bool,
}

impl Core {
    pub fn new(clock: VirtualClock) -> Self {
        Core { db: Db::default(), clock, frozen_ms: None, cluster: false, resp3: false }
    }

    /// The time, in unix milliseconds, against which keys expire.
    #[inline]
    pub fn now_ms(&self) -> i64 {
        match self.frozen_ms {
            Some(t) => t,
            None => self.clock.now_millis().0,
        }
    }

    /// The current time in microseconds (TIME reads this, never frozen).
    pub fn now_us(&self) -> i64 {
        self.clock.now_micros().0
    }

    /// Runs a non-scripting command from a client (arity, cluster slot rules, then the handler).
    pub fn dispatch(&mut self, args: &[&[u8]]) -> Reply {
        let Some(spec) = cmd::lookup(args[0]) else {
            return cmd::unknown_command(args);
        };
        self.dispatch_spec(spec, args)
    }

    /// [`Core::dispatch`] for a command already looked up by name (one table lookup per call).
    pub fn dispatch_spec(&mut self, spec: &CommandSpec, args: &[&[u8]]) -> Reply {
        if !spec.arity_ok(args.len()) {
            return cmd::wrong_arity(spec);
        }
        if self.cluster {
            if let Some(r) = super::cluster::check_command_slots(spec, args) {
                return r;
            }
        }
        self.run(spec, args)
    }

    /// Runs a command whose name, arity and rules were already checked.
    #[inline]
    pub fn run(&mut self, spec: &CommandSpec, args: &[&[u8]]) -> Reply {
        debug_assert!(!spec.has(flags::SCRIPTING));
        (spec.handler)(self, args)
    }
}
