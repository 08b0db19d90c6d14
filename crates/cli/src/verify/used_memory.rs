//! The `used_memory` model ([`limitlab_emulator::used_memory`]) checked against a real server: N
//! subjects are loaded into an empty standalone Redis by running a limiter's own script for each of
//! them (one subject's calls, the same as `limitlab memory` makes), and `INFO memory`'s
//! `used_memory` is read before and after.
//!
//! Every call runs on the emulator first (recorded as the exact commands it sent) and then, in
//! pipelines, on the server; their replies must be equal, so both hold the same keys. The script
//! runs behind [`crate::report::memory::with_long_ttls`], so no key expires during the load (the
//! calls' `now_ms` is simulated, the server's TTLs run on its wall clock); an expiry's cost does
//! not depend on its length. Subjects are named `u` and a fixed number of digits, so every
//! subject's keys have the same length and one subject's costs extrapolate exactly.
//!
//! Reading `used_memory` fairly: the script is loaded before the first reading, each reading is
//! taken on a fresh connection (so the reader's own buffers are the same both times), the loading
//! connection is closed before the second and a reading counts only once the reader is the
//! server's one client (the server frees a closed connection's buffers when it gets to it, which
//! on a busy machine can be late), the slow log is emptied first (on a busy machine commands are
//! slow, and each logged one keeps its arguments), and readings are repeated until two in a row agree (the server
//! finishes an incremental rehash in its cron, within a second or so).
use std::time::Duration;

use redis::{ConnectionLike, Value};

use crate::report::memory::{fill_times, with_long_ttls};
use limitlab_emulator::clock::{Millis, VirtualClock, DEFAULT_START};
use limitlab_emulator::used_memory::{growth, key_cost, table_buckets, KeyCost, BUCKET};
use limitlab_emulator::{Emulator, Reply};
use limitlab_emulator::{Error, Result};
use limitlab_engine::backend::emulated::EmulatedBackend;
use limitlab_engine::backend::{Backend, Script};
use limitlab_engine::limiter::Limiter;

/// Calls sent per pipeline.
const PIPELINE: usize = 2000;

/// What one load measured and what the model predicted.
#[derive(Clone, Debug, serde::Serialize)]
pub struct UsedMemoryCheck {
    pub script: String,
    pub subjects: u64,
    pub calls_per_subject: u64,
    /// Keys on the server after the load (DBSIZE).
    pub keys: u64,
    /// `used_memory` after minus before.
    pub measured: i64,
    /// The model over the emulator's whole keyspace (every subject's keys as they are).
    pub predicted: f64,
    /// The model from the first subject's keys times N plus the tables (what `limitlab memory` prints).
    pub extrapolated: f64,
    /// MEMORY USAGE (the emulator's model) summed over every key.
    pub memory_usage: u64,
}

impl UsedMemoryCheck {
    /// (predicted - measured) / measured.
    pub fn error(&self) -> f64 {
        (self.predicted - self.measured as f64) / self.measured as f64
    }
    /// (extrapolated - measured) / measured.
    pub fn extrapolation_error(&self) -> f64 {
        (self.extrapolated - self.measured as f64) / self.measured as f64
    }
}

/// A backend that runs everything on an emulator and keeps each command it sent.
struct Recorder {
    inner: EmulatedBackend,
    sent: Vec<(Vec<Vec<u8>>, Reply)>,
}

impl Backend for Recorder {
    fn describe(&self) -> String {
        "emulator (recorded)".into()
    }
    fn key_prefix(&self) -> &str {
        ""
    }
    fn eval(&mut self, script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Result<Reply> {
        let r = self.inner.eval(script, keys, args)?;
        let mut argv: Vec<Vec<u8>> =
            vec![b"EVALSHA".to_vec(), script.sha.as_bytes().to_vec(), keys.len().to_string().into_bytes()];
        argv.extend(keys.iter().map(|k| k.to_vec()));
        argv.extend(args.iter().map(|a| a.to_vec()));
        self.sent.push((argv, r.clone()));
        Ok(r)
    }
    fn command(&mut self, args: &[&[u8]]) -> Result<Reply> {
        let r = self.inner.command(args)?;
        self.sent.push((args.iter().map(|a| a.to_vec()).collect(), r.clone()));
        Ok(r)
    }
    fn set_time_ms(&mut self, unix_ms: i64) {
        self.inner.set_time_ms(unix_ms)
    }
    fn cleanup(&mut self) -> Result<u64> {
        self.inner.cleanup()
    }
}

fn redis_err(what: &str, e: redis::RedisError) -> Error {
    Error::Connection(format!("{what}: {e}"))
}

fn connect(url: &str) -> Result<redis::Connection> {
    let client = redis::Client::open(url).map_err(|e| redis_err("used_memory check: the URL", e))?;
    let c = client
        .get_connection_with_timeout(Duration::from_secs(10))
        .map_err(|e| redis_err("used_memory check: connecting", e))?;
    c.set_read_timeout(Some(Duration::from_secs(120))).map_err(|e| redis_err("used_memory check", e))?;
    Ok(c)
}

/// `used_memory` read on a fresh connection once the reader is the server's only client (the
/// server has freed every closed connection and its buffers, however slowly the machine lets it
/// get to them) and its slow log is emptied (SLOWLOG RESET), repeated until two such readings
/// 300 ms apart agree (at most 50 readings).
pub fn settled_used_memory(url: &str) -> Result<i64> {
    let field = |info: &str, name: &str| -> Option<i64> {
        info.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(':')))
            .and_then(|v| v.trim().parse().ok())
    };
    let read = || -> Result<Option<i64>> {
        let mut c = connect(url)?;
        // The slow log keeps a copy of every logged command's arguments (up to 128 entries, some
        // 400 bytes each for a limiter's EVALSHA); on a loaded machine many commands take over
        // its 10 ms threshold, which moved a 10,000-subject growth by 3%.
        let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut c).map_err(|e| redis_err("SLOWLOG RESET", e))?;
        let info: String =
            redis::cmd("INFO").arg("clients").arg("memory").query(&mut c).map_err(|e| redis_err("INFO", e))?;
        let used = field(&info, "used_memory").ok_or_else(|| Error::Redis("INFO memory has no used_memory".into()))?;
        Ok((field(&info, "connected_clients") == Some(1)).then_some(used))
    };
    // While a dict is being rehashed, both of its tables are allocated and used_memory does not move
    // until the old one is freed: two equal readings then prove nothing. The server rehashes in its
    // cron, 1 ms a tick, which a loaded machine starves. `DEBUG HTSTATS` names a rehashing table
    // ("rehashing target"); where DEBUG is refused (Redis 7.0's default), this wait is skipped.
    let rehashing = || -> Result<bool> {
        let mut c = connect(url)?;
        let stats: redis::RedisResult<String> = redis::cmd("DEBUG").arg("HTSTATS").arg(0).query(&mut c);
        Ok(stats.map(|s| s.contains("rehashing target")).unwrap_or(false))
    };
    let mut last = read()?;
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(300));
        let now = read()?;
        if now.is_some() && now == last && !rehashing()? {
            return Ok(now.unwrap_or_default());
        }
        last = now;
    }
    last.ok_or_else(|| Error::Redis("used_memory check: other clients stayed connected to the server".into()))
}

/// The fixed-width subject name of subject `i` of `n`.
pub fn subject_name(i: u64, n: u64) -> String {
    let width = n.saturating_sub(1).max(1).to_string().len();
    format!("u{i:0width$}")
}

/// Loads `subjects` subjects through `limiter`'s script into the empty standalone server at `url`
/// (`calls` calls each, as [`fill_times`] spaces them), then empties it again (FLUSHALL: the server
/// must be one the caller owns, and is refused unless it holds no key). `progress` is told the
/// subjects done.
pub fn check(
    url: &str,
    limiter: &Limiter,
    subjects: u64,
    calls: u64,
    mut progress: impl FnMut(u64),
) -> Result<UsedMemoryCheck> {
    let mut c = connect(url)?;
    let dbsize: i64 = redis::cmd("DBSIZE").query(&mut c).map_err(|e| redis_err("DBSIZE", e))?;
    if dbsize != 0 {
        return Err(Error::Invalid {
            context: "used_memory check".into(),
            field: "server".into(),
            reason: format!("the server holds {dbsize} keys; the check loads and flushes an empty private server only"),
        });
    }
    let info: String = redis::cmd("INFO").arg("cluster").query(&mut c).map_err(|e| redis_err("INFO", e))?;
    if info.contains("cluster_enabled:1") {
        return Err(Error::Invalid {
            context: "used_memory check".into(),
            field: "server".into(),
            reason: "a cluster node; the check needs a standalone server".into(),
        });
    }
    let shimmed = limiter.with_script_body(with_long_ttls(limiter.script()));
    let script = Script::new(shimmed.script());
    let _: String =
        redis::cmd("SCRIPT").arg("LOAD").arg(&script.body).query(&mut c).map_err(|e| redis_err("SCRIPT LOAD", e))?;
    // A first, smaller load, flushed: what the server allocates once (the script's first runs,
    // buffers grown for the first time) is then there before the baseline and after the load.
    load(&mut c, &shimmed, subjects.min(1000), calls, &mut |_| {})?;
    let _: () = redis::cmd("FLUSHALL").query(&mut c).map_err(|e| redis_err("FLUSHALL", e))?;
    drop(c);
    std::thread::sleep(Duration::from_millis(200));
    let before = settled_used_memory(url)?;
    let mut c = connect(url)?;
    let loaded = load(&mut c, &shimmed, subjects, calls, &mut progress)?;
    let dbsize: u64 = redis::cmd("DBSIZE").query(&mut c).map_err(|e| redis_err("DBSIZE", e))?;
    drop(c);
    std::thread::sleep(Duration::from_millis(200));
    let after = settled_used_memory(url)?;
    let mut c = connect(url)?;
    let _: () = redis::cmd("FLUSHALL").query(&mut c).map_err(|e| redis_err("FLUSHALL", e))?;
    if dbsize != loaded.keys {
        return Err(Error::Redis(format!(
            "the server holds {dbsize} keys after the load, the emulator made {}",
            loaded.keys
        )));
    }
    Ok(UsedMemoryCheck {
        script: limiter.name().to_string(),
        subjects,
        calls_per_subject: calls,
        keys: loaded.keys,
        measured: after - before,
        predicted: loaded.bytes + (BUCKET * (table_buckets(loaded.keys) + table_buckets(loaded.ttl))) as f64,
        extrapolated: growth(&loaded.first, loaded.first_usage, subjects).total,
        memory_usage: loaded.memory_usage,
    })
}

/// What a load put on the server, as the model costs it.
struct Loaded {
    keys: u64,
    ttl: u64,
    bytes: f64,
    memory_usage: u64,
    /// The first subject's keys, and their MEMORY USAGE.
    first: Vec<KeyCost>,
    first_usage: u64,
}

/// Runs `subjects` subjects' calls on an emulator and, pipelined, on the server.
fn load(
    c: &mut redis::Connection,
    shimmed: &Limiter,
    subjects: u64,
    calls: u64,
    progress: &mut dyn FnMut(u64),
) -> Result<Loaded> {
    let params = shimmed.params();
    let times = fill_times(params, DEFAULT_START.0, calls);
    let emu = Emulator::with_clock(VirtualClock::starting_at(Millis(times[0])));
    let mut rec = Recorder { inner: EmulatedBackend::new(emu), sent: Vec::new() };
    let mut l = Loaded { keys: 0, ttl: 0, bytes: 0.0, memory_usage: 0, first: Vec::new(), first_usage: 0 };
    let mut pipe = redis::pipe();
    let mut expected: Vec<Reply> = Vec::new();
    for i in 0..subjects {
        let subject = subject_name(i, subjects);
        let mut session = shimmed.session();
        for &t in &times {
            rec.set_time_ms(t);
            shimmed.call(&mut rec, &mut session, &subject, t, 1)?;
        }
        // This subject's keys (the only ones on the emulator), costed, then removed.
        {
            let mut core = rec.inner.emu.core();
            let now = core.now_ms();
            let cluster = core.cluster;
            let names: Vec<Vec<u8>> = core.db.map.keys().map(|k| k.to_vec()).collect();
            for k in names {
                if let Some(e) = core.db.get(&k, now) {
                    let cost = key_cost(&k, e, cluster);
                    let usage = limitlab_emulator::object_size::key_usage(&k, e, usize::MAX, cluster);
                    l.bytes += cost.bytes();
                    l.keys += 1;
                    l.ttl += cost.has_ttl() as u64;
                    l.memory_usage += usage;
                    if i == 0 {
                        l.first.push(cost);
                        l.first_usage += usage;
                    }
                }
            }
        }
        rec.inner.emu.execute(&[b"FLUSHALL"]);
        for (argv, reply) in rec.sent.drain(..) {
            let mut cmd = redis::Cmd::new();
            for a in &argv {
                cmd.arg(a.as_slice());
            }
            pipe.add_command(cmd);
            expected.push(reply);
        }
        if expected.len() >= PIPELINE || i + 1 == subjects {
            send(c, &pipe, &expected)?;
            pipe = redis::pipe();
            expected.clear();
            progress(i + 1);
        }
    }
    Ok(l)
}

/// Sends one pipeline and compares every reply with the emulator's.
fn send(c: &mut redis::Connection, pipe: &redis::Pipeline, expected: &[Reply]) -> Result<()> {
    let replies =
        c.req_packed_commands(&pipe.get_packed_pipeline(), 0, expected.len()).map_err(|e| redis_err("the load", e))?;
    for (got, want) in replies.into_iter().zip(expected) {
        let got = match got {
            Value::ServerError(e) => Reply::Error(match e.details() {
                Some(d) => format!("{} {d}", e.code()),
                None => e.code().to_string(),
            }),
            v => limitlab_engine::backend::real::to_reply(v),
        };
        if &got != want {
            return Err(Error::Redis(format!("the server replied {got:?} where the emulator replied {want:?}")));
        }
    }
    Ok(())
}
