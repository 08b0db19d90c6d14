//! The [`Emulator`]: the keyspace and its commands, scripting and the clients, behind one handle
//! that every layer above drives.
use crate::clients::ClientId;
use crate::core::Core;
use crate::reply::Reply;
use crate::stats::StatKey;
use crate::{admission, cluster, cmd, keyspace, lua};
use std::cell::RefCell;
use std::rc::Rc;

use crate::clock::VirtualClock;

/// The subcommand of a call of a container command, as Redis's table spells it (for `cmd=`).
pub(crate) fn subcommand_name(spec: &cmd::CommandSpec, args: &[&[u8]]) -> Option<&'static str> {
    if spec.arity > -1 || spec.arity < -2 || args.len() < 2 {
        return None;
    }
    let subs = cmd::command::subcommands(spec.name)?;
    subs.iter().find(|s| args[1].eq_ignore_ascii_case(s.name.as_bytes())).map(|s| s.name)
}

/// An embedded Redis 7.0: send it commands with [`Emulator::execute`] or run scripts with
/// [`Emulator::eval`]/[`Emulator::evalsha`].
pub struct Emulator {
    pub(crate) core: Rc<RefCell<Core>>,
    pub(crate) scripting: lua::Scripting,
}

impl Default for Emulator {
    fn default() -> Self {
        Self::new()
    }
}

impl Emulator {
    /// An emulator on a fresh virtual clock at [`crate::clock::DEFAULT_START`].
    pub fn new() -> Self {
        Self::with_clock(VirtualClock::default())
    }

    /// An emulator reading the given clock (clones of it move the emulator's time).
    pub fn with_clock(clock: VirtualClock) -> Self {
        let core = Rc::new(RefCell::new(Core::new(clock)));
        let scripting = lua::Scripting::new(core.clone()).expect("the Lua VM starts");
        Emulator { core, scripting }
    }

    /// The emulator's clock.
    pub fn clock(&self) -> VirtualClock {
        self.core.borrow().clock.clone()
    }

    /// Turns cluster rules (hash slots, CROSSSLOT) on or off.
    pub fn set_cluster(&mut self, on: bool) {
        self.core.borrow_mut().cluster = on;
    }

    /// Sets the budget, in loop iterations and Lua function calls, after which a running script is
    /// killed (default [`lua::DEFAULT_BUDGET`]).
    pub fn set_script_budget(&mut self, steps: u64) {
        self.scripting.set_budget(steps);
    }

    /// Installs the handler a script or function calls once it has run for `busy-reply-threshold`
    /// ms of real time, at every count-hook tick, as Redis serves its other clients then (see
    /// [`lua::BusyScript`]); None removes it.
    pub fn set_busy_handler(&mut self, h: Option<lua::BusyHandler>) {
        self.scripting.set_busy_handler(h);
    }

    /// A flag that kills the running script or function at its next count-hook tick once set (a
    /// server stopping on SIGTERM sets it from its signal handler); read only while a busy handler
    /// is installed ([`Emulator::set_busy_handler`]). None removes it.
    pub fn set_stop_flag(&mut self, f: Option<&'static std::sync::atomic::AtomicBool>) {
        self.scripting.set_stop_flag(f);
    }

    /// Turns script line tracing on or off (off by default): while on, each script or function run
    /// records the last line of its own code that ran, the `return` (or error) that made its reply
    /// ([`Emulator::last_script_line`]).
    pub fn set_line_trace(&mut self, on: bool) {
        self.scripting.set_line_trace(on);
    }

    /// With line tracing on: the last script run's SHA (or function's name) and the last line of
    /// its code that ran.
    pub fn last_script_line(&self) -> Option<(String, u32)> {
        self.scripting.last_line()
    }

    /// Sets how many bytes of Lua memory one script run may add before it is killed with an error
    /// (default [`lua::DEFAULT_MEMORY`]; 0 for no cap, as in Redis). The emulator stays usable.
    pub fn set_script_memory(&mut self, bytes: usize) {
        self.scripting.set_memory_cap(bytes);
    }

    /// Notes every key created outside `prefix` from now on (see [`Emulator::take_outside_keys`]):
    /// a script that builds key names from ARGV instead of KEYS writes there.
    pub fn watch_prefix(&self, prefix: &str) {
        self.core.borrow_mut().db.watch = Some(Box::new(keyspace::KeyWatch::new(prefix.as_bytes())));
    }

    /// The keys created outside the watched prefix since the last call, in the order they were
    /// first created; empty when no prefix is watched.
    pub fn take_outside_keys(&self) -> Vec<Vec<u8>> {
        match &mut self.core.borrow_mut().db.watch {
            Some(w) => std::mem::take(&mut w.outside),
            None => Vec::new(),
        }
    }

    /// Starts a trial on the selected database: every key touched from now on is saved first, and
    /// [`Emulator::end_trial`] puts them back ([`keyspace::Db::begin_trial`]).
    pub fn begin_trial(&self) {
        self.core.borrow_mut().db.begin_trial();
    }

    /// Ends the trial begun by [`Emulator::begin_trial`], putting back what it touched.
    pub fn end_trial(&self) {
        self.core.borrow_mut().db.end_trial();
    }

    /// A copy of the selected database, to put back with [`Emulator::restore_db`].
    pub fn snapshot_db(&self) -> keyspace::Db {
        self.core.borrow().db.clone()
    }

    /// Puts back a database saved by [`Emulator::snapshot_db`].
    pub fn restore_db(&self, db: keyspace::Db) {
        self.core.borrow_mut().db = db;
    }

    /// Whether keys expire (on by default); off, a key outlives its TTL, for models that ignore
    /// expiry.
    pub fn set_expiry(&self, enabled: bool) {
        self.core.borrow_mut().db.expiry_enabled = enabled;
    }

    /// Whether the emulator answers as a cluster node ([`Emulator::set_cluster`]).
    pub fn is_cluster(&self) -> bool {
        self.core.borrow().cluster
    }

    /// How many keys the selected database holds, expired ones not yet removed included.
    pub fn key_count(&self) -> usize {
        self.core.borrow().db.len()
    }

    /// [`Emulator::execute_as`], with replies in RESP3's types when `resp3` (a connection that
    /// said `HELLO 3`).
    pub fn execute_as_with(&mut self, id: ClientId, args: &[&[u8]], resp3: bool) -> Reply {
        if !resp3 {
            return self.execute_as(id, args);
        }
        self.core.borrow_mut().resp3 = true;
        let r = self.execute_as(id, args);
        self.core.borrow_mut().resp3 = false;
        r
    }

    /// Says how far the virtual clock is from the machine's when it follows it (a server's `--clock
    /// wall`, see [`Core::wall_offset`]): commands are then timed for INFO commandstats.
    pub fn set_wall_offset(&mut self, offset_us: Option<i64>) {
        self.core.borrow_mut().wall_offset = offset_us;
    }

    /// Tells the emulator the TCP port a server listens on (INFO's `tcp_port`, CONFIG GET port).
    pub fn set_port(&mut self, port: u16) {
        self.core.borrow_mut().settings.force("port", port.to_string().into_bytes());
    }

    /// Names the commands a server answers before they reach the emulator (lower case), so that
    /// COMMAND lists them: Redis's entries for Redis's commands, limitlab's for CLOCK.*.
    pub fn declare_server_commands(&mut self, names: &[&'static str]) {
        self.core.borrow_mut().server_commands = names.to_vec();
    }

    /// Says which protocol client `id` speaks (a server's HELLO): CLIENT LIST's `resp=`.
    pub fn set_client_resp3(&mut self, id: ClientId, resp3: bool) {
        if let Some(c) = self.core.borrow_mut().client(id) {
            c.resp3 = resp3;
        }
    }

    /// AUTH (and HELLO's AUTH: `command` says which) for client `id`: whether `user`/`pass` open the door; the client is
    /// then that user's. A failure goes to the ACL log.
    pub fn authenticate(&mut self, id: ClientId, user: &[u8], pass: &[u8], command: &'static str) -> bool {
        self.core.borrow_mut().authenticate(id, user, pass, command)
    }

    /// Whether client `id` must authenticate before anything else.
    pub fn auth_required(&self, id: ClientId) -> bool {
        self.core.borrow().auth_required(id)
    }

    /// Whether the default user has no password (AUTH with a password alone is then an error).
    pub fn default_user_nopass(&self) -> bool {
        self.core.borrow().acl.default_user().nopass
    }

    /// The ACL check of a command a server answers itself (or looks at before the emulator runs
    /// it): None when client `id` may run it, else Redis's NOPERM error (the denial is logged and
    /// counted as a rejected call).
    pub fn acl_refusal(&mut self, id: ClientId, args: &[&[u8]]) -> Option<Reply> {
        let mut core = self.core.borrow_mut();
        let (d, full) = core.acl_check(id, args, "toplevel").err()?;
        if let Some(spec) = cmd::lookup(args[0]) {
            core.stats.rejected(StatKey::of(spec, subcommand_name(spec, args)));
        }
        Some(cmd::acl::toplevel_error(d, &full))
    }

    /// RESET: client `id` is as a new connection (no transaction, WATCH, subscription, MONITOR,
    /// name or user; database 0, RESP2) but keeps its id and age.
    pub fn reset_client(&mut self, id: ClientId) {
        let mut core = self.core.borrow_mut();
        core.unwatch_all(id);
        core.blocking.remove(id);
        core.pubsub.drop_client(id);
        core.monitors.retain(|m| *m != id);
        core.disable_tracking(id);
        let d = core.acl.default_user();
        let authenticated = d.nopass && d.enabled;
        if let Some(c) = core.client(id) {
            c.multi = None;
            c.dirty_cas = false;
            c.db = 0;
            c.tracking = None;
            c.name = None;
            c.no_evict = false;
            c.resp3 = false;
            c.monitor = false;
            c.user = None;
            c.authenticated = authenticated;
        }
    }

    /// The limits the server's request parser applies (`proto-max-bulk-len`,
    /// `client-query-buffer-limit`), as CONFIG SET left them.
    #[inline]
    pub fn request_limits(&self) -> crate::settings::RequestLimits {
        self.core.borrow().settings.request_limits()
    }

    /// The number CLIENT LIST shows for client `id` (0 when it is gone).
    pub fn client_number(&self, id: ClientId) -> u64 {
        self.core.borrow_mut().client(id).map_or(0, |c| c.id)
    }

    /// Direct access to the server state (keyspace, clock), for tools that measure it (the
    /// `used_memory` check, the benchmark) and tests; the methods above are the interface.
    pub fn core(&self) -> std::cell::RefMut<'_, Core> {
        self.core.borrow_mut()
    }

    /// Runs one command as client 0 (see [`Emulator::execute_as`]); `args[0]` is the command name.
    pub fn execute(&mut self, args: &[&[u8]]) -> Reply {
        self.execute_as(ClientId::DEFAULT, args)
    }

    /// Opens a connection: a client with its own selected database, transaction and WATCHes.
    pub fn connect(&mut self) -> ClientId {
        self.core.borrow_mut().connect()
    }

    /// Closes a connection (its transaction and WATCHes go; a replica is detached). Client 0 is
    /// reset instead.
    pub fn disconnect(&mut self, id: ClientId) {
        let mut core = self.core.borrow_mut();
        crate::propagate::detach(&mut core, id);
        core.disconnect(id);
    }

    /// Runs one command sent by client `id` (opened by [`Emulator::connect`]), in its database and,
    /// after MULTI, into its transaction's queue.
    pub fn execute_as(&mut self, id: ClientId, args: &[&[u8]]) -> Reply {
        if args.is_empty() {
            return Reply::err("ERR empty command");
        }
        let spec = cmd::lookup(args[0]);
        let in_multi = {
            let mut core = self.core.borrow_mut();
            let now = core.now_ms();
            core.mark_us = core.now_us();
            core.stats.command_starts();
            let Some(c) = core.client(id) else { return Reply::err("ERR no such client connection") };
            let (db, in_multi) = (c.db, c.multi.is_some());
            c.last_ms = now;
            if let Some(spec) = spec {
                c.last_cmd = Some((spec.name, subcommand_name(spec, args)));
            }
            core.select(db);
            core.caller = id;
            in_multi
        };
        let reply = if in_multi { self.queue(id, spec, args) } else { self.run_as(id, spec, args) };
        let mut core = self.core.borrow_mut();
        if let Reply::Error(e) = &reply {
            core.stats.reply_error(e);
        }
        if core.settings.maxmemory() > 0 && !core.in_script() {
            // As Redis after CONFIG SET maxmemory (and its eviction cycle): a command that left the
            // dataset over the limit evicts at once under an evicting policy.
            core.perform_evictions();
        }
        let db = core.selected;
        if let Some(c) = core.client(id) {
            c.db = db;
        }
        if core.tracking.clients > 0 {
            // CLIENT CACHING applies to the next command only (not counting those queued).
            let caching_cmd =
                args.len() > 1 && args[0].eq_ignore_ascii_case(b"client") && args[1].eq_ignore_ascii_case(b"caching");
            core.tracking_after_command(id, caching_cmd || in_multi);
        }
        if core.repl.active {
            crate::propagate::flush(&mut core);
        }
        reply
    }

    /// Runs a command for client `id` (its database selected), outside a transaction's queue:
    /// Redis's checks (arity, subcommand, the server's state), the command, and its statistics.
    pub(crate) fn run_as(&mut self, id: ClientId, spec: Option<&'static cmd::CommandSpec>, args: &[&[u8]]) -> Reply {
        let Some(spec) = spec else {
            return cmd::unknown_command(args);
        };
        let sub = subcommand_name(spec, args);
        let key = StatKey::of(spec, sub);
        if !spec.arity_ok(args.len()) {
            self.core.borrow_mut().stats.rejected(key);
            return self.arity_error(id, spec);
        }
        if spec.arity < 0 && spec.arity >= -2 {
            if let Some(r) = cmd::command::subcommand_refusal(spec, args) {
                if sub.is_some() {
                    self.core.borrow_mut().stats.rejected(key);
                }
                return r;
            }
        }
        let denied = self.core.borrow_mut().acl_check(id, args, "toplevel");
        if let Err((d, full)) = denied {
            self.core.borrow_mut().stats.rejected(key);
            return cmd::acl::toplevel_error(d, &full);
        }
        if let Some(r) = self.monitor_refusal(id, spec, sub) {
            self.core.borrow_mut().stats.rejected(key);
            return r;
        }
        if self.postpone(id, spec, args) {
            return Reply::Nil;
        }
        let guarded = self.core.borrow().guarded();
        if guarded {
            let flags = admission::redis_flags(spec, sub);
            let refused = self.core.borrow_mut().refusal(flags, admission::Kind::Plain, false);
            if let Some(e) = refused {
                self.core.borrow_mut().stats.rejected(key);
                return Reply::err(e);
            }
        }
        self.run_checked(id, spec, key, args)
    }

    /// A MONITOR client may not read or write keys (Redis takes it for a replica).
    pub(crate) fn monitor_refusal(
        &self,
        id: ClientId,
        spec: &'static cmd::CommandSpec,
        sub: Option<&'static str>,
    ) -> Option<Reply> {
        let mut core = self.core.borrow_mut();
        if core.monitors.is_empty() || !core.client(id).is_some_and(|c| c.monitor) {
            return None;
        }
        let keyspace = admission::redis_flags(spec, sub) & admission::rflags::KEYSPACE != 0
            || spec.has(cmd::flags::MAY_REPLICATE)
            || (spec.has(cmd::flags::SCRIPTING) && (spec.name.starts_with("eval") || spec.name.starts_with("fcall")));
        keyspace.then(|| Reply::err("ERR Replica can't interact with the keyspace"))
    }

    /// Shows a command a server answered itself to the MONITOR clients (with its secrets already
    /// redacted), unless Redis keeps it from them.
    pub fn feed_monitors(&mut self, id: ClientId, args: &[&[u8]]) {
        let mut core = self.core.borrow_mut();
        if core.monitors.is_empty() {
            return;
        }
        let hidden = cmd::command::redis_lookup(args).is_ok_and(|c| c.has_flag("admin") || c.has_flag("skip_monitor"));
        if !hidden {
            core.feed_monitors(id, args, false);
        }
    }

    /// Runs a command that passed Redis's checks, and counts it (INFO commandstats).
    pub(crate) fn run_checked(
        &mut self,
        id: ClientId,
        spec: &'static cmd::CommandSpec,
        key: StatKey,
        args: &[&[u8]],
    ) -> Reply {
        // EVAL and FCALL are shown before the commands their script calls; others once they ran.
        let script_first =
            spec.has(cmd::flags::SCRIPTING) && (spec.name.starts_with("eval") || spec.name.starts_with("fcall"));
        if script_first {
            // (EVAL and FCALL are `skip_monitor`: Redis shows them itself, before the script.)
            let mut core = self.core.borrow_mut();
            core.feed_monitors(id, args, false);
            if core.client(id).is_some_and(|c| c.tracking.as_ref().is_some_and(|t| !t.bcast)) {
                // A read the script makes tracks this command's keys.
                core.tracking.script_keys = Some(args.iter().map(|a| a.to_vec()).collect());
            }
        }
        let reply = if spec.has(cmd::flags::CONNECTION) {
            let cluster_refusal =
                if self.core.borrow().cluster { cluster::check_command_slots(spec, args) } else { None };
            match cluster_refusal {
                Some(r) => r,
                None => self.connection_command(id, spec, args),
            }
        } else if spec.has(cmd::flags::SCRIPTING) {
            self.scripting.command(spec, args)
        } else {
            let mut core = self.core.borrow_mut();
            core.count_lookups(spec, args);
            cmd::dispatch_spec(&mut core, spec, args)
        };
        let mut core = self.core.borrow_mut();
        if !script_first {
            core.feed_monitors_checked(id, spec, args);
        } else {
            core.tracking.script_keys = None;
        }
        if core.tracking.clients > 0 && !reply.is_error() && core.client(id).is_some_and(|c| c.tracking.is_some()) {
            let sub = subcommand_name(spec, args);
            let ro = admission::redis_flags(spec, sub) & admission::rflags::READONLY != 0;
            if ro && !matches!(spec.name, "eval_ro" | "evalsha_ro" | "fcall_ro") {
                core.track_read(id, args);
            }
        }
        let usec = core.lap_us();
        core.stats.call(key, usec, reply.is_error());
        core.stats.total_commands += 1;
        reply
    }

    /// Gives client `id` the addresses CLIENT LIST shows (`addr=` the peer's, `laddr=` the server's),
    /// as a server knows them.
    pub fn set_client_addr(&mut self, id: ClientId, addr: &str, laddr: &str) {
        if let Some(c) = self.core.borrow_mut().client(id) {
            c.addr = Some((addr.to_string(), laddr.to_string()));
        }
    }

    /// Says that client 0 (the one [`Emulator::execute`] speaks for) is not a connection: a server
    /// in front of the emulator opens one client per connection, and CLIENT LIST and INFO's
    /// connected_clients should count only those.
    pub fn hide_default_client(&mut self) {
        let mut core = self.core.borrow_mut();
        core.default_client_hidden = true;
        // Redis's own two clients (the Lua client and the functions' engine) take ids 1 and 2:
        // the first connection is client 3.
        core.skip_client_ids(3);
    }

    /// Marks client `id`'s transaction, if it is in MULTI, so that EXEC fails with EXECABORT (Redis's
    /// `flagTransaction`): for a server that refuses a command before the emulator sees it (a cluster
    /// node's MOVED redirect).
    pub fn refuse_in_transaction(&mut self, id: ClientId) {
        self.flag_transaction(id);
    }

    /// Whether client `id` is between MULTI and EXEC/DISCARD.
    pub fn in_transaction(&self, id: ClientId) -> bool {
        self.core.borrow_mut().client(id).is_some_and(|c| c.multi.is_some())
    }

    /// `execute` for owned arguments.
    pub fn execute_owned(&mut self, args: &[Vec<u8>]) -> Reply {
        let v: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        self.execute(&v)
    }

    /// EVAL as client 0: compiles (or reuses) `body` and runs it with KEYS and ARGV, in client 0's
    /// database.
    pub fn eval(&mut self, body: &[u8], keys: &[&[u8]], argv: &[&[u8]]) -> Reply {
        self.select_default_db();
        self.scripting.eval(body, keys, argv, false)
    }

    /// EVALSHA as client 0: runs a cached script, or replies NOSCRIPT.
    pub fn evalsha(&mut self, sha: &[u8], keys: &[&[u8]], argv: &[&[u8]]) -> Reply {
        self.select_default_db();
        self.scripting.evalsha(sha, keys, argv, false)
    }

    /// Selects client 0's database (another client's command may have left another one selected).
    #[inline]
    fn select_default_db(&mut self) {
        let mut core = self.core.borrow_mut();
        let db = core.clients[0].as_ref().map_or(0, |c| c.db);
        core.select(db);
    }

    /// SCRIPT LOAD: compiles and caches `body`, returning its SHA1 (hex) or the compile error.
    /// In cluster mode, the slot the last script was bound to (see [`lua::Scripting::last_slot`]).
    pub fn last_script_slot(&self) -> Option<u16> {
        self.scripting.last_slot()
    }

    pub fn script_load(&mut self, body: &[u8]) -> Result<String, Reply> {
        self.scripting.load(body)
    }

    // ---- what a server routes to other connections ------------------------------------------

    /// Lets clients block (BLPOP and the like): a server in front of the emulator serves them when
    /// another connection's command makes their keys ready. Off, a blocking command that finds
    /// nothing answers its timeout reply at once.
    pub fn enable_blocking(&mut self) {
        self.core.borrow_mut().blocking.enabled = true;
    }

    /// Whether the last command left something beyond its reply: deliveries, blocked clients to
    /// look at, a reply not to send. One test on the hot path; see [`Emulator::after_command`].
    #[inline]
    pub fn pending(&self) -> bool {
        let core = self.core.borrow();
        !core.outbox.is_empty()
            || core.blocking.any()
            || core.no_reply
            || core.tracking.has_pending()
            || !core.postponed.is_empty()
            || core.repl.active
    }

    /// After a top-level command (or a clock move): serves the blocked clients whose keys are ready
    /// and moves every delivery into `out`. Returns whether the command's own reply must be dropped
    /// (the caller blocked, or answered through deliveries).
    pub fn after_command(&mut self, caller: ClientId, out: &mut Vec<crate::deliver::Delivery>) -> bool {
        let silent_before = self.core.borrow().no_reply;
        if self.core.borrow().resumable() {
            // CLIENT UNPAUSE, or the pause's time is up: the waiting clients run (their own
            // `no_reply` does not concern this command).
            self.resume_postponed();
            self.core.borrow_mut().no_reply = silent_before;
        }
        let mut core = self.core.borrow_mut();
        let blocked = core.blocking.is_blocked(caller) || core.is_postponed(caller);
        let silent = std::mem::take(&mut core.no_reply) || blocked;
        core.serve_ready();
        core.tracking_broadcast();
        out.append(&mut core.outbox);
        hand_stream(&mut core, out);
        silent
    }

    /// The clock moved (or time passed): blocked clients past their deadline get their timeout
    /// reply, and keys past theirs expire with their notifications; deliveries go to `out`.
    pub fn tick(&mut self, out: &mut Vec<crate::deliver::Delivery>) {
        let lifted = {
            let mut core = self.core.borrow_mut();
            core.pause_in_force();
            core.resumable()
        };
        if lifted {
            self.resume_postponed();
        }
        let mut core = self.core.borrow_mut();
        core.expire_waiters();
        core.active_expire();
        core.tracking_expire();
        if core.repl.active {
            crate::propagate::flush_expired(&mut core);
            crate::propagate::keepalive(&mut core);
        }
        core.serve_ready();
        core.tracking_broadcast();
        out.append(&mut core.outbox);
        hand_stream(&mut core, out);
    }

    // ---- replicas ----------------------------------------------------------------------------

    /// SYNC (or `PSYNC ? -1`) from client `id`: it becomes a replica, and the answer is what its
    /// connection is sent first: the RDB snapshot of the dataset as a bulk (`$<len>\r\n` and the
    /// file, no trailing CRLF), after `+FULLRESYNC <replid> <offset>` for PSYNC. From then on the
    /// changes come as [`Deliver::Raw`](crate::Deliver::Raw) deliveries (see [`crate::propagate`]).
    /// `ip` and `port` are what INFO shows of it.
    pub fn attach_replica(&mut self, id: ClientId, psync: bool, ip: &str, port: u16) -> Vec<u8> {
        let functions = self.scripting.functions_rdb();
        let mut core = self.core.borrow_mut();
        let replica = crate::propagate::Replica { client: id, ip: ip.to_string(), port };
        crate::propagate::attach(&mut core, replica);
        let rdb = crate::snapshot::rdb(&mut core, &functions);
        let mut out = Vec::with_capacity(rdb.len() + 64);
        if psync {
            out.extend_from_slice(format!("+FULLRESYNC {} {}\r\n", core.repl.replid(), core.repl.offset).as_bytes());
        }
        out.extend_from_slice(format!("${}\r\n", rdb.len()).as_bytes());
        out.extend_from_slice(&rdb);
        out
    }

    /// Whether client `id` is an attached replica.
    pub fn is_replica(&self, id: ClientId) -> bool {
        self.core.borrow().repl.is_replica(id)
    }

    /// A replica said the port it listens on (REPLCONF listening-port): INFO shows it.
    pub fn set_replica_port(&mut self, id: ClientId, port: u16) {
        if let Some(r) = self.core.borrow_mut().repl.replicas.iter_mut().find(|r| r.client == id) {
            r.port = port;
        }
    }

    /// When [`Emulator::tick`] has something to do next: the earliest deadline of a blocked client,
    /// and whether keys expire actively (`expired` notifications are on).
    pub fn next_wake(&self) -> (Option<i64>, bool) {
        use crate::settings::notify;
        let core = self.core.borrow();
        let f = core.settings.notify_flags();
        let active = f & notify::EXPIRED != 0 && f & (notify::KEYSPACE | notify::KEYEVENT) != 0;
        let deadline = match (core.next_deadline(), core.pause_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        (deadline, active || core.tracking.active())
    }

    /// Whether client `id` waits in a blocking command.
    pub fn is_blocked(&self, id: ClientId) -> bool {
        let core = self.core.borrow();
        core.blocking.is_blocked(id) || core.is_postponed(id)
    }

    /// Whether client `id` subscribes to anything (RESP2 then allows only the Pub/Sub commands).
    pub fn is_subscribed(&self, id: ClientId) -> bool {
        self.core.borrow().pubsub.subscribed(id)
    }
}

/// Moves the stream produced since the last call into deliveries, one copy per replica.
fn hand_stream(core: &mut Core, out: &mut Vec<crate::deliver::Delivery>) {
    if core.repl.out.is_empty() {
        return;
    }
    let mut bytes = Some(std::mem::take(&mut core.repl.out));
    let n = core.repl.replicas.len();
    for (i, r) in core.repl.replicas.iter().enumerate() {
        let copy = if i + 1 == n { bytes.take().unwrap_or_default() } else { bytes.clone().unwrap_or_default() };
        out.push((r.client, crate::deliver::Deliver::Raw(copy)));
    }
}
