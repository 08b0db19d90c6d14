//! The server state that commands act on: the sixteen databases, the clock, the clients and the keys
//! they WATCH, and the flags of the current call.
use super::clients::{Client, ClientId, Watches};
use super::keyspace::{Db, Entry};
use crate::clock::{Clock, VirtualClock};

/// How many databases the server has (Redis's default `databases 16`).
pub const DATABASES: usize = 16;

/// State shared by every command. Scripting lives one level up, in [`super::Emulator`].
///
/// The selected database is `db` itself, so that every command reads and writes `core.db` at no
/// extra cost; the other fifteen wait in `parked` (where `parked[selected]` is an empty stand-in) and
/// [`Core::select`] swaps them in.
pub struct Core {
    /// The selected database: the one of the client (or script) whose command runs.
    pub db: Db,
    /// The index of `db`.
    pub selected: usize,
    parked: Vec<Db>,
    pub clock: VirtualClock,
    /// While a script runs, key expiry is judged at the script's start time (Redis 7.0 semantics).
    pub frozen_ms: Option<i64>,
    /// While a script runs: its `redis.set_repl` left replicas out (REPL_NONE or REPL_AOF), so the
    /// commands it calls are not sent to them as themselves; what a command sends on its own (the
    /// SREMs of SPOP with a count, a group read's XCLAIMs) still goes, as in Redis 7.0.
    pub script_repl_off: bool,
    /// Cluster mode: commands and scripts must keep to one hash slot.
    pub cluster: bool,
    /// The caller speaks RESP3 (a script after `redis.setresp(3)`): some replies change shape, e.g.
    /// WITHSCORES ranges nest `[member, score]` pairs.
    pub resp3: bool,
    /// The clients, by [`ClientId`]; `None` marks a closed one whose id may be reused.
    pub clients: Vec<Option<Client>>,
    /// Client 0 is the embedding program, not a connection (`limitlab serve`): CLIENT LIST and
    /// INFO's connected_clients leave it out.
    pub default_client_hidden: bool,
    /// Every client's WATCHed keys.
    pub watches: Watches,
    /// A queued command is running inside EXEC: blocking commands answer at once (Redis's
    /// `CLIENT_DENY_BLOCKING`), and the client has replies pending (EXEC's array is begun).
    pub in_exec: bool,
    /// The id the next client gets (CLIENT ID).
    next_client_id: u64,
    /// When the server started (virtual clock, ms): INFO's uptime.
    pub started_ms: i64,
    /// The configuration parameters (CONFIG GET/SET).
    pub settings: crate::settings::Settings,
    /// INFO's scripting counts (kept by the scripting engine): cached scripts, functions, libraries.
    pub scripting_counts: (usize, usize, usize),
    /// INFO's counters (CONFIG RESETSTAT zeroes them).
    pub stats: crate::stats::Stats,
    /// When the virtual clock follows the machine's (a server's `--clock wall`): the clock's distance
    /// from the machine's time, in microseconds. Commands are then timed for INFO commandstats
    /// (one reading of the machine's clock as each command ends); otherwise they take no time.
    pub wall_offset: Option<i64>,
    /// Where the time of the running command is counted from (unix µs, see [`Core::lap_us`]).
    pub mark_us: i64,
    /// REPLICAOF host port: the master this server was told to follow (its link is always down:
    /// there is no replication). Writes are then refused as on a read-only replica.
    pub master: Option<(String, String)>,
    /// The commands a server in front of the emulator answers itself (HELLO, AUTH, CLOCK.ADVANCE,
    /// ...): COMMAND lists them with the emulator's own.
    pub server_commands: Vec<&'static str>,
    /// Whether the server was over `maxmemory` (after evicting) when the running command started
    /// (Redis's `pre_command_oom_state`): a script may then not call commands that use memory.
    pub pre_command_oom: bool,
    /// The client whose command runs (a script's caller while it runs).
    pub caller: ClientId,
    /// Every Pub/Sub subscription.
    pub pubsub: crate::cmd::pubsub::PubSub,
    /// The clients blocked on keys.
    pub blocking: crate::cmd::blocking::Blocking,
    /// What commands left for connections: messages, unblocked clients' replies, kills (see
    /// [`crate::deliver`]).
    pub outbox: Vec<crate::deliver::Delivery>,
    /// The running command answers only through the outbox (SUBSCRIBE and the like): its own reply
    /// is not sent.
    pub no_reply: bool,
    /// Keys a write may create, noted before it runs while `new` notifications are on.
    pub new_keys: Vec<Vec<u8>>,
    /// The ACL users and log.
    pub acl: crate::acl::Acl,
    /// The clients in MONITOR mode, in the order they asked.
    pub monitors: Vec<ClientId>,
    /// CLIENT TRACKING's keys and prefixes.
    pub tracking: crate::tracking::Tracking,
    /// CLIENT PAUSE in force.
    pub pause: Option<crate::pause::Pause>,
    /// The clients waiting for the pause to end, with their commands, in arrival order.
    pub postponed: Vec<(ClientId, Vec<Vec<u8>>)>,
    /// The replicas attached with SYNC and the stream of writes they are sent (see
    /// [`crate::propagate`]).
    pub repl: crate::propagate::Repl,
}

impl Core {
    pub fn new(clock: VirtualClock) -> Self {
        let mut core = Core {
            db: Db::default(),
            selected: 0,
            parked: (0..DATABASES).map(|_| Db::default()).collect(),
            clock,
            frozen_ms: None,
            script_repl_off: false,
            cluster: false,
            resp3: false,
            clients: vec![Some(Client::default())],
            default_client_hidden: false,
            watches: Watches::default(),
            in_exec: false,
            next_client_id: 1,
            started_ms: 0,
            settings: Default::default(),
            scripting_counts: (0, 0, 0),
            stats: Default::default(),
            wall_offset: None,
            mark_us: 0,
            master: None,
            server_commands: Vec::new(),
            pre_command_oom: false,
            caller: ClientId::DEFAULT,
            pubsub: Default::default(),
            blocking: Default::default(),
            outbox: Vec::new(),
            no_reply: false,
            new_keys: Vec::new(),
            acl: Default::default(),
            monitors: Vec::new(),
            tracking: Default::default(),
            pause: None,
            postponed: Vec::new(),
            repl: Default::default(),
        };
        core.started_ms = core.clock.now_millis().0;
        let first = core.new_client();
        core.clients[0] = Some(first);
        core
    }

    /// The next client gets id `next` at least.
    pub fn skip_client_ids(&mut self, next: u64) {
        self.next_client_id = self.next_client_id.max(next);
    }

    /// A fresh client's state: the next id, opened now.
    fn new_client(&mut self) -> Client {
        let id = self.next_client_id;
        self.next_client_id += 1;
        let now = self.clock.now_millis().0;
        let d = self.acl.default_user();
        let authenticated = d.nopass && d.enabled;
        Client { id, created_ms: now, last_ms: now, authenticated, ..Client::default() }
    }

    /// The time, in unix milliseconds, against which keys expire.
    #[inline]
    pub fn now_ms(&self) -> i64 {
        match self.frozen_ms {
            Some(t) => t,
            None => self.clock.now_millis().0,
        }
    }

    /// Whether a script or function is running (Redis's `CLIENT_SCRIPT` on the caller).
    #[inline]
    pub fn in_script(&self) -> bool {
        self.frozen_ms.is_some()
    }

    /// The current time in microseconds (TIME reads this, never frozen).
    pub fn now_us(&self) -> i64 {
        self.clock.now_micros().0
    }

    // ---- databases -------------------------------------------------------------------------------

    /// Makes database `index` (< [`DATABASES`]) the selected one. [`Db::expiry_enabled`] follows the
    /// selection: it is one switch for the whole server.
    #[inline]
    pub fn select(&mut self, index: usize) {
        if index != self.selected {
            self.select_other(index);
        }
    }

    fn select_other(&mut self, index: usize) {
        let expiry = self.db.expiry_enabled;
        std::mem::swap(&mut self.db, &mut self.parked[self.selected]);
        std::mem::swap(&mut self.db, &mut self.parked[index]);
        self.selected = index;
        self.db.expiry_enabled = expiry;
    }

    /// Database `index`, selected or not.
    pub fn db_at(&mut self, index: usize) -> &mut Db {
        if index == self.selected {
            &mut self.db
        } else {
            let expiry = self.db.expiry_enabled;
            let db = &mut self.parked[index];
            db.expiry_enabled = expiry;
            db
        }
    }

    /// SWAPDB: the two databases trade their keys; clients stay on their indexes.
    pub fn swap_dbs(&mut self, a: usize, b: usize) {
        if a == b {
            return;
        }
        let (lo, hi) = (a.min(b), a.max(b));
        if lo == self.selected || hi == self.selected {
            let other = if lo == self.selected { hi } else { lo };
            std::mem::swap(&mut self.db, &mut self.parked[other]);
            let expiry = self.parked[other].expiry_enabled;
            self.db.expiry_enabled = expiry;
        } else {
            let (x, y) = self.parked.split_at_mut(hi);
            std::mem::swap(&mut x[lo], &mut y[0]);
        }
    }

    // ---- clients ---------------------------------------------------------------------------------

    /// A new client, on database 0.
    pub fn connect(&mut self) -> ClientId {
        self.stats.total_connections += 1;
        match self.clients.iter().position(Option::is_none) {
            Some(i) => {
                self.clients[i] = Some(self.new_client());
                ClientId(i as u32)
            }
            None => {
                let c = self.new_client();
                self.clients.push(Some(c));
                ClientId(self.clients.len() as u32 - 1)
            }
        }
    }

    /// Closes a client: its transaction and WATCHes go. Client 0 cannot be closed; it is reset.
    pub fn disconnect(&mut self, id: ClientId) {
        if self.clients.get(id.index()).is_none_or(Option::is_none) {
            return;
        }
        self.unwatch_all(id);
        self.blocking.remove(id);
        self.pubsub.drop_client(id);
        self.monitors.retain(|m| *m != id);
        self.tracking_disconnect(id);
        self.postponed.retain(|(c, _)| *c != id);
        self.outbox.retain(|(to, _)| *to != id);
        self.clients[id.index()] = if id == ClientId::DEFAULT { Some(self.new_client()) } else { None };
    }

    /// The state of an open client.
    /// The open connections (client 0 too unless [`Core::default_client_hidden`]).
    pub fn connections(&self) -> impl Iterator<Item = &Client> {
        let skip = self.default_client_hidden as usize;
        self.clients.iter().skip(skip).flatten()
    }

    pub fn client(&mut self, id: ClientId) -> Option<&mut Client> {
        self.clients.get_mut(id.index()).and_then(Option::as_mut)
    }

    // ---- WATCH -----------------------------------------------------------------------------------

    /// WATCH `key` in the selected database for `id` (a key watched twice is watched once).
    pub fn watch(&mut self, id: ClientId, key: &[u8]) {
        let db = self.selected;
        if self.watches.keys.iter().any(|w| w.client == id && w.db == db && w.key == key) {
            return;
        }
        let now = self.now_ms();
        let deadline = self.db.peek(key, now).and_then(|e| e.expire_at);
        self.watches.keys.push(super::clients::Watched { client: id, db, key: key.to_vec(), deadline });
        if let Some(c) = self.client(id) {
            c.watching += 1;
        }
    }

    /// UNWATCH (also what EXEC, DISCARD and a closed connection do). Leaves the dirty flag alone.
    pub fn unwatch_all(&mut self, id: ClientId) {
        let Some(c) = self.client(id) else { return };
        if c.watching == 0 {
            return;
        }
        c.watching = 0;
        self.watches.keys.retain(|w| w.client != id);
    }

    /// Whether EXEC must fail for `id` because a watched key was touched, or has expired since WATCH.
    pub fn watch_failed(&mut self, id: ClientId) -> bool {
        let now = self.now_ms();
        let expired = self.expiry_enabled()
            && self.watches.keys.iter().any(|w| w.client == id && w.deadline.is_some_and(|t| t < now));
        self.client(id).is_some_and(|c| c.dirty_cas) || expired
    }

    fn expiry_enabled(&self) -> bool {
        self.db.expiry_enabled
    }

    /// Redis's `signalModifiedKey` for the selected database: every client watching `key` there will
    /// fail its EXEC. A write that changes a key's value or TTL touches it without calling this (see
    /// [`CommandSpec::run`](crate::command_spec::CommandSpec::run)); a handler calls it where Redis
    /// counts a modification that may leave the key as it was (`SET k v` over `v`, `INCRBY k 0`,
    /// `LTRIM` keeping everything, ...).
    #[inline]
    pub fn touch(&mut self, key: &[u8]) {
        if !self.watches.is_empty() || self.tracking.active() || self.repl.active {
            self.touch_in(self.selected, key);
        }
    }

    /// [`Core::touch`] in database `db`.
    pub fn touch_in(&mut self, db: usize, key: &[u8]) {
        if self.tracking.active() {
            self.tracking_invalidate(key);
        }
        // Redis counts the change for its replicas too (`server.dirty`).
        self.repl.touched = true;
        let mut dirty = Vec::new();
        for w in &self.watches.keys {
            if w.db == db && w.key == key {
                dirty.push(w.client);
            }
        }
        for id in dirty {
            if let Some(c) = self.client(id) {
                c.dirty_cas = true;
            }
        }
    }

    /// FLUSHDB, FLUSHALL and SWAPDB (Redis's `touchAllWatchedKeysInDb`): every watched key of
    /// database `db` that exists there, or in `with` (the database SWAPDB brings in), is touched.
    pub fn touch_all_in(&mut self, db: usize, with: Option<usize>) {
        if self.watches.is_empty() {
            return;
        }
        let now = self.now_ms();
        let keys: Vec<(usize, Vec<u8>)> =
            self.watches.keys.iter().filter(|w| w.db == db).map(|w| (w.db, w.key.clone())).collect();
        for (d, key) in keys {
            let here = self.db_at(d).peek(&key, now).is_some();
            let there = with.is_some_and(|o| self.db_at(o).peek(&key, now).is_some());
            if here || there {
                self.touch_in(d, &key);
            }
        }
    }

    // ---- running commands ------------------------------------------------------------------------

    /// The microseconds since the last lap (or the start of the command), for INFO commandstats:
    /// one reading of the machine's clock when the clock follows it ([`Core::wall_offset`]), else 0.
    #[inline]
    pub fn lap_us(&mut self) -> u64 {
        let Some(off) = self.wall_offset else { return 0 };
        let now = crate::clock::SystemClock.now_micros().0 + off;
        let d = now - self.mark_us;
        self.mark_us = now;
        d.max(0) as u64
    }

    // ---- expiry ----------------------------------------------------------------------------------

    /// Redis's active expire cycle, whole: removes every key of every database whose deadline has
    /// passed, with its `expired` notification. Only notifications and replicas make it visible (a
    /// lookup never sees an expired key, and KEYS/SCAN/DBSIZE purge first), so it runs only while
    /// `expired` events are on or a replica is attached (which is sent a `DEL` for each).
    pub fn active_expire(&mut self) {
        use crate::settings::notify;
        let flags = self.settings.notify_flags();
        let notifies = flags & notify::EXPIRED != 0 && flags & (notify::KEYSPACE | notify::KEYEVENT) != 0;
        if !(notifies || self.repl.active) || self.in_script() {
            return;
        }
        let now = self.now_ms();
        let selected = self.selected;
        for i in 0..DATABASES {
            let db = self.db_at(i);
            if !db.expiry_enabled || db.is_empty() {
                continue;
            }
            let gone: Vec<Vec<u8>> = db
                .map
                .iter()
                .filter(|(_, e)| e.expire_at.is_some_and(|t| t < now))
                .map(|(k, _)| k.as_slice().to_vec())
                .collect();
            if gone.is_empty() {
                continue;
            }
            self.select(i);
            for k in gone {
                self.expire_key(&k, now);
            }
        }
        self.select(selected);
    }

    /// Removes `key` (selected database) if it has expired at `now`, with its `expired`
    /// notification.
    pub fn expire_key(&mut self, key: &[u8], now: i64) {
        let expired =
            self.db.expiry_enabled && self.db.map.get(key).is_some_and(|e| e.expire_at.is_some_and(|t| t < now));
        if expired {
            self.db.remove(key, now);
            self.notify(crate::settings::notify::EXPIRED, "expired", key);
        }
    }
}

impl Db {
    /// The live entry under `key` at `now`, without deleting an expired one.
    pub fn peek(&self, key: &[u8], now: i64) -> Option<&Entry> {
        self.map.get(key).filter(|e| !(self.expiry_enabled && e.expire_at.is_some_and(|t| t < now)))
    }
}
