//! A real Redis (standalone or Cluster) as a [`Backend`], over the `redis` crate.
//!
//! Three rules make a run on a shared server safe and its counts honest:
//! - **Its own keys only.** Every run gets a unique prefix, `ll:<12 hex digits>:`, that callers put
//!   before their keys (`ll:3f09c2a1b4d0:rate:{user42}`). The prefix has no braces, so the hash tag of
//!   the key behind it still picks the cluster slot. [`RealRedis::cleanup`] removes exactly the keys
//!   under that prefix (`SCAN MATCH prefix*` on every master), and is tried again on a fresh
//!   connection when the run's own connection failed. Nothing ever runs `FLUSHALL`.
//! - **No double counting.** A script runs with `EVALSHA`; only a `NOSCRIPT` reply (which means the
//!   script did not run) makes it load the script and send the call again, once. Any transport
//!   failure (connection lost, no reply within the timeout, an unreadable reply) leaves it unknown
//!   whether the call ran, so nothing is re-sent: the backend stops, and every later call fails
//!   with the first failure's message, which says how many replies had arrived. The other errors
//!   after which a call is sent again are those Redis gives before running anything, and only
//!   within the timeout: `MOVED` and `ASK` in a cluster (a failover or a slot migration: the slot
//!   map is read afresh, or `ASKING` goes first on the node named), `BUSY` (another client's
//!   long script), `LOADING`, `TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN` (after a pause). The redis
//!   crate's own cluster retries are turned off, because they re-send after I/O errors too.
//! - **No password shown.** Messages, [`Backend::describe`] and `Debug` name the server by its URL
//!   with the password replaced by `***` ([`super::secret`]).
//! - **Redis's words.** Error replies come back as [`Reply::Error`] with the server's exact text
//!   (`ERR ...`, `WRONGTYPE ...`); `Err` is kept for transport failures.
//!
//! Whether the server is a cluster is asked, not configured: `INFO cluster` says `cluster_enabled:1`
//! on a cluster node, and then the backend opens a cluster-aware connection (the redis crate's
//! `ClusterConnection`, which routes every command to the master of its keys' slot) seeded with
//! that node.
//!
//! **Scripts that read `TIME`.** The emulator answers a script's `TIME` from the run's virtual clock
//! ([`Backend::set_time_ms`]); a server answers from its wall clock, which a run cannot set. Once a
//! time has been set, a script that calls `TIME` (a `'TIME'` string literal outside comments, see
//! [`super::reads_commands`]) runs here behind a one-line shim put before its first line: the
//! shim takes two extra ARGV (seconds and microseconds of the time set, removed before the script
//! sees ARGV) and answers `redis.call('TIME')` and `redis.pcall('TIME')` with them; every other
//! call goes to the real `redis.call`. So both sides see the same time and everything else is the
//! server's own. The script's line numbers are unchanged (the shim shares line 1); a `redis.call`
//! error is raised from inside the shim, so its `@user_script:N` may name line 1. Without a time set
//! (the scripts `cli --redis` sends as written), nothing is shimmed.
//!
//! Three habits of the redis crate show in replies: a nil array (`*-1`) reads as a nil bulk string;
//! in cluster mode an error nested inside an array reply is returned as the whole reply; and in
//! cluster mode the multi-key commands it knows how to split (MGET, MSET, DEL, EXISTS, ...) are sent
//! per slot and their replies joined, where a node would answer CROSSSLOT (scripts and the other
//! multi-key commands do get CROSSSLOT).
mod connect;
mod replies;

use std::time::Duration;

use redis::cluster::ClusterConnection;
use redis::{Cmd, ConnectionAddr, ConnectionInfo, ConnectionLike, RedisError, Value};

use super::{Backend, Script};
use connect::{cluster_masters, connect_error, open_cluster, open_single, replica_of};
use limitlab_emulator::cluster::key_slot;
use limitlab_emulator::Reply;
use limitlab_emulator::{Error, Result};
use replies::{error_text, not_run, not_run_code, Resend};

pub use connect::{connection_info, masters_of, open_connection, redact_error, redact_url, same_kind, TlsFiles};
pub use replies::to_reply;

/// How long to wait for a connection or a reply before giving up, unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// How a [`RealRedis`] connects.
#[derive(Clone, Copy, Debug)]
pub struct RealOptions {
    /// Connect and reply timeout. A reply that takes longer ends the run (see the module docs).
    pub timeout: Duration,
}

impl Default for RealOptions {
    fn default() -> Self {
        RealOptions { timeout: DEFAULT_TIMEOUT }
    }
}

/// The live connection: one server, or a cluster through the redis crate's cluster client.
enum Conn {
    Single(redis::Connection),
    Cluster(Box<ClusterConnection>),
}

/// A real Redis server or cluster.
pub struct RealRedis {
    url: String,
    info: ConnectionInfo,
    options: RealOptions,
    conn: Conn,
    /// The masters: the server itself when standalone (any address kind), every slot owner of a
    /// cluster.
    masters: Vec<ConnectionInfo>,
    cluster: bool,
    /// The CA certificates trusted for `rediss://` (`--tls-ca`), for reconnecting.
    tls: Option<TlsFiles>,
    prefix: String,
    /// Replies received (commands and script calls), for "how far did it get" messages.
    replies: u64,
    /// Script calls that got a reply (a NOSCRIPT retry counts once).
    script_calls: u64,
    /// Set by the first transport failure: the connection is not used again.
    broken: Option<String>,
    /// Replies that refused a command before it ran (MOVED, ASK, BUSY, LOADING, ...), after which
    /// it was sent again (see [`RealRedis::send`]).
    refused: u64,
    /// Whether BUSY, LOADING and the like are waited out (see [`RealRedis::set_wait_out_refusals`]).
    wait_out: bool,
    /// `host:port` of the master when the server is a standalone replica.
    replica_of: Option<String>,
    /// Whether `Drop` removes the prefix's keys when [`Backend::cleanup`] was not called.
    auto_cleanup: bool,
    /// Whether [`Backend::cleanup`] ran since the last write; `Drop` cleans up otherwise.
    clean: bool,
    /// The time of [`Backend::set_time_ms`], which a script's `TIME` answers (see the module docs).
    time_ms: Option<i64>,
    /// Per script SHA: its `TIME` shim, or `None` when it does not read `TIME`.
    shims: std::collections::HashMap<String, Option<Script>>,
    /// Whether runs may go ahead when a script writes keys outside the prefix (see
    /// [`RealRedis::set_allow_outside_keys`]).
    allow_outside_keys: bool,
}

/// Put before a script that reads `TIME` (on its first line, so line numbers stay): answers
/// `TIME` with the last two ARGV, which it removes (see the module docs).
pub const TIME_SHIM: &str = "local redis = (function(real) local us = table.remove(ARGV) local s = table.remove(ARGV) \
local function t(c) return type(c) == 'string' and c:upper() == 'TIME' end \
return setmetatable({call = function(c, ...) if t(c) then return {s, us} end return real.call(c, ...) end, \
pcall = function(c, ...) if t(c) then return {s, us} end return real.pcall(c, ...) end}, {__index = real}) end)(redis) ";

impl std::fmt::Debug for RealRedis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealRedis")
            .field("url", &self.url)
            .field("cluster", &self.cluster)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// A fresh run prefix: `ll:` and 48 random bits in hex. Uniqueness, not reproducibility, is the
/// point, so it comes from the OS-seeded generator rather than the run's seed.
pub fn new_prefix() -> String {
    format!("ll:{:012x}:", rand::random::<u64>() & 0xffff_ffff_ffff)
}

impl RealRedis {
    /// Connects to `url` (`redis://host:port[/db]`, with optional `user:password@`), finds out
    /// whether it is a cluster node, and picks a fresh key prefix.
    pub fn connect(url: &str, options: RealOptions) -> Result<RealRedis> {
        Self::connect_with(url, options, None)
    }

    /// [`RealRedis::connect`], trusting the CA certificates of `tls` for a `rediss://` URL (else
    /// the system's).
    pub fn connect_with(url: &str, options: RealOptions, tls: Option<&TlsFiles>) -> Result<RealRedis> {
        let info = connection_info(url, tls)?;
        // Everything this backend says names the server by `shown`: its password never appears.
        let shown = super::secret::redact(url);
        let url = shown.as_str();
        let mut probe = open_single(&info, options.timeout).map_err(|e| connect_error(url, &e))?;
        let cluster = match probe.req_command(redis::cmd("INFO").arg("cluster")) {
            Ok(Value::BulkString(b)) => String::from_utf8_lossy(&b).contains("cluster_enabled:1"),
            // A server with a password answers every command so until the client authenticates:
            // said here, before anything is sent, rather than at the first script call (where it
            // would read as the script's error).
            Err(e) if e.code() == Some("NOAUTH") || e.to_string().contains("NOAUTH") => {
                return Err(Error::Connection(format!(
                    "{url}: the server needs a password ({}): give it in the URL, redis://:PASSWORD@HOST:PORT \
                     (or redis://USER:PASSWORD@HOST:PORT with an ACL user); nothing was sent",
                    error_text(&e)
                )))
            }
            Ok(_) => false,
            // BUSY, LOADING: the server cannot say yet; the run cannot start.
            Err(e) if e.code().is_some() && not_run(&e, false).is_none() => false,
            Err(e) => return Err(connect_error(url, &e)),
        };
        // A standalone replica refuses every write (READONLY): runs check [`RealRedis::require_writable`].
        let replica_of = if cluster {
            None
        } else {
            match probe.req_command(redis::cmd("INFO").arg("replication")) {
                Ok(Value::BulkString(b)) => replica_of(&String::from_utf8_lossy(&b)),
                Ok(_) => None,
                Err(e) if e.code().is_some() => None,
                Err(e) => return Err(connect_error(url, &e)),
            }
        };
        let (conn, masters) = if cluster {
            let masters = cluster_masters(&mut probe, &info).map_err(|e| connect_error(url, &e))?;
            let masters =
                masters.into_iter().map(|(h, p)| info.clone().set_addr(same_kind(info.addr(), h, p))).collect();
            (
                Conn::Cluster(Box::new(open_cluster(&info, options.timeout, tls).map_err(|e| connect_error(url, &e))?)),
                masters,
            )
        } else {
            (Conn::Single(probe), vec![info.clone()])
        };
        Ok(RealRedis {
            url: url.to_string(),
            info,
            options,
            conn,
            masters,
            cluster,
            tls: tls.cloned(),
            prefix: new_prefix(),
            replies: 0,
            script_calls: 0,
            broken: None,
            refused: 0,
            wait_out: true,
            replica_of,
            auto_cleanup: true,
            clean: true,
            time_ms: None,
            shims: Default::default(),
            allow_outside_keys: false,
        })
    }

    /// Whether a run may go ahead on this server when its scripts write keys outside the prefix
    /// (`--allow-outside-keys`): off by default, because those keys may be another client's. See
    /// `limitlab verify`'s call-for-call replay (limitlab-cli's `verify::against_redis`).
    pub fn set_allow_outside_keys(&mut self, on: bool) {
        self.allow_outside_keys = on;
    }

    /// See [`RealRedis::set_allow_outside_keys`].
    pub fn allow_outside_keys(&self) -> bool {
        self.allow_outside_keys
    }

    /// An error naming the master when the server is a read-only replica, which refuses every
    /// write (`READONLY`): `what` (the run) would fail at its first call.
    pub fn require_writable(&self, what: &str) -> Result<()> {
        match &self.replica_of {
            None => Ok(()),
            Some(master) => Err(Error::Invalid {
                context: what.to_string(),
                field: "--redis".into(),
                reason: format!(
                    "{} is a read-only replica of {master}: it refuses every write (READONLY), so nothing was sent; \
                     point --redis at the master",
                    self.url
                ),
            }),
        }
    }

    /// The server's clock, `TIME`, in microseconds (in a cluster, of the node the command reaches).
    pub fn server_time_us(&mut self) -> Result<i64> {
        match self.command(&[b"TIME"])? {
            Reply::Array(v) if v.len() == 2 => {
                let num = |r: &Reply| match r {
                    Reply::Bulk(b) => std::str::from_utf8(b).ok().and_then(|s| s.parse::<i64>().ok()),
                    _ => None,
                };
                match (num(&v[0]), num(&v[1])) {
                    (Some(s), Some(us)) => Ok(s * 1_000_000 + us),
                    _ => Err(Error::Redis(format!("TIME replied {v:?}"))),
                }
            }
            other => Err(Error::Redis(format!("TIME replied {other:?}"))),
        }
    }

    /// The script to send for `script`: its `TIME` shim when it reads `TIME` and a time is set.
    fn shim_of(&mut self, script: &Script) -> Option<Script> {
        self.time_ms?;
        self.shims
            .entry(script.sha.clone())
            .or_insert_with(|| {
                super::reads_time(&script.body).then(|| Script::new(format!("{TIME_SHIM}{}", script.body)))
            })
            .clone()
    }

    /// The URL this backend was opened with, its password replaced by `***`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether the server is a Redis Cluster (and commands are routed by slot).
    pub fn is_cluster(&self) -> bool {
        self.cluster
    }

    /// The masters this backend knows: `host:port` (or the socket path).
    pub fn masters(&self) -> Vec<String> {
        self.masters.iter().map(|m| m.addr().to_string()).collect()
    }

    /// Replies received so far (commands and script calls).
    pub fn replies(&self) -> u64 {
        self.replies
    }

    /// Script calls that got a reply so far.
    pub fn script_calls(&self) -> u64 {
        self.script_calls
    }

    /// Replies that refused a command before it ran and after which it was sent again (MOVED,
    /// ASK, BUSY, LOADING, TRYAGAIN, CLUSTERDOWN, MASTERDOWN, READONLY in a cluster).
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// Whether a command refused with `BUSY`, `LOADING`, `TRYAGAIN`, `CLUSTERDOWN` or `MASTERDOWN`
    /// is sent again after a pause (on by default). `cli --redis` turns it off, to print those
    /// replies at once as redis-cli does; `MOVED` and `ASK` are followed in any case.
    pub fn set_wait_out_refusals(&mut self, on: bool) {
        self.wait_out = on;
    }

    /// The first transport failure, once there was one.
    pub fn failure(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// Whether dropping the backend removes the prefix's keys when [`Backend::cleanup`] was not
    /// called (on by default; `cli --redis`, which sends keys as written, turns it off).
    pub fn set_auto_cleanup(&mut self, on: bool) {
        self.auto_cleanup = on;
    }

    /// Takes a fresh prefix (after removing nothing: call [`Backend::cleanup`] first to remove the
    /// old prefix's keys).
    pub fn renew_prefix(&mut self) {
        self.prefix = new_prefix();
    }

    /// Sends one command, turning error replies into [`Reply::Error`] and transport failures into a
    /// [`Error::Connection`] that stops the backend.
    ///
    /// A reply that says the command was refused before it ran is followed, within the timeout
    /// (see [`not_run`]): `MOVED` (the slot map is read again), `ASK` (`ASKING` and the command on
    /// the node named), and `BUSY`, `LOADING`, `TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN` (the command
    /// is sent again after a pause, 10 ms doubling up to 500 ms), and in a cluster `READONLY` (a
    /// failover made the node a replica: the slot map is read again). When the timeout has passed,
    /// the last such reply is returned as it is.
    fn send(&mut self, cmd: &Cmd, what: &str) -> Result<Reply> {
        if let Some(why) = &self.broken {
            return Err(Error::Connection(format!("{what} not sent: the connection failed earlier: {why}")));
        }
        self.clean = false;
        let started = limitlab_emulator::clock::Stopwatch::start();
        let mut pause = Duration::from_millis(10);
        let mut ask: Option<(String, u16)> = None;
        loop {
            let res = match ask.take() {
                Some((host, port)) => self.asking(cmd, &host, port),
                None => match &mut self.conn {
                    Conn::Single(c) => c.req_command(cmd),
                    Conn::Cluster(c) => c.req_command(cmd),
                },
            };
            // A single connection hands error replies over as values: those that mean "not run"
            // are taken out here to be followed like the cluster connection's errors.
            let res = match res {
                Ok(Value::ServerError(se)) if not_run_code(se.code(), self.cluster).is_some() => {
                    Err(RedisError::from(se))
                }
                other => other,
            };
            let e = match res {
                Ok(v) => {
                    self.replies += 1;
                    return Ok(to_reply(v));
                }
                Err(e) if e.code().is_some() => e,
                Err(e) => return Err(self.fail(what, &e)),
            };
            let how = match not_run(&e, self.cluster) {
                Some(Resend::Later) if !self.wait_out => None,
                how => how,
            };
            let Some(how) = how else {
                self.replies += 1;
                return Ok(Reply::Error(error_text(&e)));
            };
            self.refused += 1;
            if started.elapsed_secs() >= self.options.timeout.as_secs_f64() {
                self.replies += 1;
                return Ok(Reply::Error(error_text(&e)));
            }
            match how {
                Resend::Remap => match open_cluster(&self.info, self.options.timeout, self.tls.as_ref()) {
                    Ok(c) => self.conn = Conn::Cluster(Box::new(c)),
                    Err(e2) => return Err(self.fail(what, &e2)),
                },
                Resend::Ask => {
                    ask = e
                        .redirect_node()
                        .and_then(|(n, _)| n.rsplit_once(':'))
                        .and_then(|(h, p)| Some((h.to_string(), p.parse().ok()?)))
                }
                Resend::Later => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
            }
        }
    }

    /// `ASKING`, then `cmd`, on the node a slot is migrating to (one fresh connection).
    fn asking(&self, cmd: &Cmd, host: &str, port: u16) -> redis::RedisResult<Value> {
        let info = self.info.clone().set_addr(ConnectionAddr::Tcp(host.to_string(), port));
        let mut conn = open_single(&info, self.options.timeout)?;
        conn.req_command(&redis::cmd("ASKING"))?.extract_error()?;
        conn.req_command(cmd)
    }

    /// Records a transport failure and builds the error every later call repeats.
    fn fail(&mut self, what: &str, e: &RedisError) -> Error {
        let cause = if e.is_timeout() {
            format!("no reply within {} ms", self.options.timeout.as_millis())
        } else if e.is_connection_dropped() || e.is_connection_refusal() {
            format!("connection lost ({e})")
        } else {
            e.to_string()
        };
        let msg = format!(
            "{}: {what} failed after {} replies ({} script calls): {cause}. The command in flight may or may \
             not have run; it was not sent again, since running a script twice would count twice",
            self.url, self.replies, self.script_calls
        );
        self.broken = Some(msg.clone());
        Error::Connection(msg)
    }

    /// The keys under the prefix on one master.
    fn scan_node(&self, conn: &mut redis::Connection) -> redis::RedisResult<Vec<String>> {
        let pattern = format!("{}*", self.prefix);
        let mut cursor = "0".to_string();
        let mut out = Vec::new();
        loop {
            let (next, keys): (String, Vec<Vec<u8>>) =
                redis::cmd("SCAN").arg(&cursor).arg("MATCH").arg(&pattern).arg("COUNT").arg(1000).query(conn)?;
            out.extend(keys.into_iter().map(|k| String::from_utf8_lossy(&k).into_owned()));
            if next == "0" {
                return Ok(out);
            }
            cursor = next;
        }
    }

    /// Deletes every key under the prefix on one master; returns how many it removed.
    fn cleanup_node(&self, conn: &mut redis::Connection) -> redis::RedisResult<u64> {
        let pattern = format!("{}*", self.prefix);
        let mut cursor = "0".to_string();
        let mut removed = 0u64;
        loop {
            let (next, keys): (String, Vec<Vec<u8>>) =
                redis::cmd("SCAN").arg(&cursor).arg("MATCH").arg(&pattern).arg("COUNT").arg(1000).query(conn)?;
            if !keys.is_empty() {
                // One UNLINK per slot: in a cluster a multi-key command must stay in one slot.
                let mut by_slot: std::collections::BTreeMap<u16, Vec<&[u8]>> = Default::default();
                for k in &keys {
                    let slot = if self.cluster { key_slot(k) } else { 0 };
                    by_slot.entry(slot).or_default().push(k);
                }
                let mut pipe = redis::pipe();
                for group in by_slot.values() {
                    pipe.cmd("UNLINK").arg(group.as_slice());
                }
                let counts: Vec<u64> = pipe.query(conn)?;
                removed += counts.iter().sum::<u64>();
            }
            if next == "0" {
                return Ok(removed);
            }
            cursor = next;
        }
    }
}

impl Backend for RealRedis {
    fn describe(&self) -> String {
        if self.cluster {
            format!("{} (cluster, {} masters)", self.url, self.masters.len())
        } else {
            self.url.clone()
        }
    }

    fn key_prefix(&self) -> &str {
        &self.prefix
    }

    fn eval(&mut self, script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Result<Reply> {
        let shimmed = self.shim_of(script);
        let script = shimmed.as_ref().unwrap_or(script);
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(&script.sha).arg(keys.len());
        for k in keys {
            cmd.arg(*k);
        }
        for a in args {
            cmd.arg(*a);
        }
        if shimmed.is_some() {
            let ms = self.time_ms.unwrap_or(0);
            cmd.arg(ms.div_euclid(1000)).arg(ms.rem_euclid(1000) * 1000);
        }
        let reply = self.send(&cmd, "EVALSHA")?;
        let reply = match reply {
            // NOSCRIPT means the script did not run: load it (on every master in a cluster) and send
            // the call once more.
            Reply::Error(e) if e.starts_with("NOSCRIPT") => {
                let mut load = redis::cmd("SCRIPT");
                load.arg("LOAD").arg(&script.body);
                match self.send(&load, "SCRIPT LOAD")? {
                    err @ Reply::Error(_) => err,
                    _ => self.send(&cmd, "EVALSHA")?,
                }
            }
            other => other,
        };
        self.script_calls += 1;
        Ok(reply)
    }

    /// Remembered for the scripts that read `TIME` (see the module docs); the server's own clock
    /// is not touched.
    fn set_time_ms(&mut self, unix_ms: i64) {
        self.time_ms = Some(unix_ms);
    }

    fn command(&mut self, args: &[&[u8]]) -> Result<Reply> {
        if args.is_empty() {
            return Ok(Reply::err("ERR empty command"));
        }
        let mut cmd = Cmd::new();
        for a in args {
            cmd.arg(*a);
        }
        let what = String::from_utf8_lossy(args[0]).to_ascii_uppercase();
        self.send(&cmd, &what)
    }

    /// FUNCTION LOAD REPLACE: on the server, or on every master of a cluster (functions live per
    /// node), each on a fresh connection.
    fn load_library(&mut self, library: &Script) -> Result<Reply> {
        let mut load = redis::cmd("FUNCTION");
        load.arg("LOAD").arg("REPLACE").arg(&library.body);
        if !self.cluster {
            return self.send(&load, "FUNCTION LOAD");
        }
        let mut last = Reply::Nil;
        for info in self.masters.clone() {
            let res = open_single(&info, self.options.timeout).and_then(|mut c| c.req_command(&load));
            last = match res {
                Ok(v) => to_reply(v),
                Err(e) if e.code().is_some() => return Ok(Reply::Error(error_text(&e))),
                Err(e) => return Err(self.fail("FUNCTION LOAD", &e)),
            };
        }
        Ok(last)
    }

    fn keys_under_prefix(&mut self) -> Result<Vec<String>> {
        self.scan_masters()
    }

    /// Removes the prefix's keys from every master, on fresh connections (so it also works after
    /// the run's own connection failed, when the server is still there).
    fn cleanup(&mut self) -> Result<u64> {
        self.refresh_masters();
        let mut removed = 0;
        for info in self.masters.clone() {
            let res = open_single(&info, self.options.timeout).and_then(|mut c| self.cleanup_node(&mut c));
            match res {
                Ok(n) => removed += n,
                Err(e) => {
                    return Err(Error::Connection(format!(
                        "{}: removing the keys under `{}` on {} failed after {removed} were removed: {e}",
                        self.url,
                        self.prefix,
                        info.addr()
                    )))
                }
            }
        }
        self.clean = true;
        Ok(removed)
    }
}

impl RealRedis {
    /// [`Backend::keys_under_prefix`] on every master, on fresh connections (a cluster connection
    /// cannot route SCAN).
    fn scan_masters(&mut self) -> Result<Vec<String>> {
        self.refresh_masters();
        let mut keys = Vec::new();
        for info in self.masters.clone() {
            let found = open_single(&info, self.options.timeout).and_then(|mut c| self.scan_node(&mut c));
            keys.extend(
                found.map_err(|e| Error::Connection(format!("{}: SCAN on {} failed: {e}", self.url, info.addr())))?,
            );
        }
        keys.sort();
        keys.dedup();
        Ok(keys)
    }
}

impl RealRedis {
    /// A cluster's masters read again from `CLUSTER SLOTS` (a failover during the run made a
    /// replica a master), asking the seed node, then every master known; kept when none answers.
    fn refresh_masters(&mut self) {
        if !self.cluster {
            return;
        }
        let known = std::iter::once(self.info.clone()).chain(self.masters.clone());
        for info in known {
            let found = open_single(&info, self.options.timeout).and_then(|mut c| cluster_masters(&mut c, &info));
            if let Ok(masters) = found {
                if !masters.is_empty() {
                    self.masters = masters
                        .into_iter()
                        .map(|(h, p)| self.info.clone().set_addr(ConnectionAddr::Tcp(h, p)))
                        .collect();
                    return;
                }
            }
        }
    }
}

impl Drop for RealRedis {
    /// A last attempt to leave the server as it was, for runs that ended without cleaning up.
    fn drop(&mut self) {
        if !self.clean && self.auto_cleanup {
            let _ = self.cleanup();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_fresh_and_brace_free() {
        let (a, b) = (new_prefix(), new_prefix());
        assert_ne!(a, b);
        assert!(a.starts_with("ll:") && a.ends_with(':') && a.len() == 16, "{a}");
        assert!(!a.contains('{') && !a.contains('}'));
        // The hash tag behind the prefix still picks the slot.
        assert_eq!(key_slot(format!("{a}rate:{{user42}}").as_bytes()), key_slot(b"rate:{user42}"));
    }

    #[test]
    fn bad_urls_are_user_errors() {
        let e = RealRedis::connect("http://x", RealOptions::default()).unwrap_err();
        assert!(matches!(e, Error::Invalid { .. }), "{e}");
    }
}
