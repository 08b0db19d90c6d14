//! `limitlab bench`: how fast each script decides, on every engine, side by side in one run.
//!
//! Engines: the Rust reference model of each script ("native", the ceiling: no Lua, no Redis), the
//! embedded emulator (one core, in process), and a real Redis over one loopback connection, once
//! without pipelining and once per pipeline depth (N EVALSHA per round trip). The real server is
//! `--redis URL`, or else a private `redis-server` started for the run when one is installed.
//!
//! Every engine runs the same calls ([`workload::Workload`]) and keeps every decision, which is
//! compared with the reference model's: a benchmark that decided differently would be timing
//! something else. Throughput is measured, never asserted.
//!
//! A second table times the sliding log with its log full at sizes L = 10 ... 100,000: Redis's
//! skiplist (and the emulator's) make each call O(log L), which the figures should show.
pub mod engines;
pub mod tables;
pub mod workload;

use std::io::IsTerminal;
use std::time::Duration;

use serde::Serialize;

use self::engines::{RedisConn, Timed};
use self::workload::{Check, Workload};
use limitlab_engine::backend::private::PrivateRedis;
use limitlab_engine::backend::real::{RealOptions, RealRedis};
use limitlab_engine::backend::Backend;
use std::sync::Arc;

use limitlab_emulator::{Error, Result};
use limitlab_engine::limiter::direct::Direct;
use limitlab_engine::limiter::{Decision, Limiter, Variant};
use limitlab_engine::spec::SharedSpec;

/// The default pipeline depths.
pub const PIPELINES: [usize; 2] = [16, 64];
/// The default sliding-log sizes.
pub const LOG_SIZES: [u64; 5] = [10, 100, 1_000, 10_000, 100_000];

/// Where the real-Redis columns come from.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum RedisTarget {
    /// A private `redis-server` when one is installed (the default).
    #[default]
    Private,
    /// A running server.
    Url(limitlab_engine::backend::secret::RedisUrl),
    /// No real Redis: those columns stay empty.
    None,
}

/// How many calls each engine makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Sizes {
    /// Untimed calls before the timed ones (script loading, first keys, caches).
    pub warmup: usize,
    pub native: usize,
    pub emulator: usize,
    pub redis_single: usize,
    pub redis_pipelined: usize,
    /// Timed calls per sliding-log size, after the untimed calls that fill the log.
    pub log_calls: usize,
    /// Times each script's engines run in turn (native, emulator, direct, Redis, then again), each
    /// engine's figure being its faster round: a slow phase of a shared machine that covers one
    /// engine's turn is then unlikely to cover its other turn too, so the ratios of one run hold.
    pub rounds: usize,
}

impl Sizes {
    /// The full run: about a second per measurement on the slower engines. The emulator's too: its
    /// rate is its fastest fifth, and fifths of 0.2 s (200,000 calls) were short enough for one
    /// slow moment of a shared machine to cover all five, which a second of calls outlasts.
    pub const FULL: Sizes = Sizes {
        warmup: 2_000,
        native: 2_000_000,
        emulator: 1_000_000,
        redis_single: 20_000,
        redis_pipelined: 200_000,
        log_calls: 20_000,
        rounds: 3,
    };
    /// `--quick`: enough to see the order of magnitude, in seconds overall.
    pub const QUICK: Sizes = Sizes {
        warmup: 200,
        native: 50_000,
        emulator: 5_000,
        redis_single: 1_000,
        redis_pipelined: 5_000,
        log_calls: 1_000,
        rounds: 1,
    };
}

/// Options of [`run`].
#[derive(Clone, Debug, PartialEq)]
pub struct BenchOptions {
    pub redis: RedisTarget,
    pub sizes: Sizes,
    pub quick: bool,
    /// Pipeline depths for the pipelined Redis columns.
    pub pipelines: Vec<usize>,
    /// Sliding-log sizes L.
    pub log_sizes: Vec<u64>,
    /// The scripts to time, as specs (default: the nine shipped ones).
    pub scripts: Vec<SharedSpec>,
    /// Progress lines on stderr (only when it is a terminal).
    pub progress: bool,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            redis: RedisTarget::Private,
            sizes: Sizes::FULL,
            quick: false,
            pipelines: PIPELINES.to_vec(),
            log_sizes: LOG_SIZES.to_vec(),
            scripts: Variant::ALL.iter().map(|&v| limitlab_engine::spec::builtin::spec(v)).collect(),
            progress: true,
        }
    }
}

/// The machine the figures come from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Machine {
    /// `std::thread::available_parallelism` (what `nproc` prints).
    pub cores: usize,
    /// `model name` from /proc/cpuinfo, when there is one.
    pub cpu: String,
}

impl Machine {
    pub fn detect() -> Machine {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown CPU".to_string());
        Machine { cores, cpu }
    }
}

/// The real Redis of a run, or why there is none.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RedisInfo {
    /// `private` (started for the run), `url` or `none`.
    pub source: String,
    pub url: Option<String>,
    pub version: Option<String>,
    /// Why some or all Redis columns are empty.
    pub note: Option<String>,
}

/// One engine's figure for one script.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Measure {
    /// Timed calls.
    pub calls: u64,
    pub secs: f64,
    pub per_sec: f64,
    /// Decisions of every call (untimed ones too) against the reference model.
    pub check: Check,
}

impl Measure {
    fn of(t: &Timed, reference: &[Decision]) -> Measure {
        Measure { calls: t.calls, secs: t.secs, per_sec: t.per_sec(), check: Check::of(&t.decisions, reference) }
    }

    /// A figure whose decisions are not compared (they follow a real server's clock).
    fn unchecked(t: &Timed) -> Measure {
        Measure { calls: t.calls, secs: t.secs, per_sec: t.per_sec(), check: Check::default() }
    }

    /// Two rounds of the same engine as one figure: the faster round's rate (each round's rate is
    /// already its fastest chunk's), and every decision of both compared.
    fn better(self, other: Measure) -> Measure {
        let check = Check {
            compared: self.check.compared + other.check.compared,
            differ: self.check.differ + other.check.differ,
            allowed: self.check.allowed + other.check.allowed,
        };
        let best = if other.per_sec > self.per_sec { other } else { self };
        Measure { check, ..best }
    }
}

/// A pipelined Redis figure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Pipelined {
    pub depth: usize,
    pub measure: Measure,
}

/// Every engine on one script.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScriptRow {
    pub algorithm: String,
    /// The exact model in Rust (limitlab's own scripts only).
    pub native: Option<Measure>,
    /// The emulator, the script run through its spec (the path every tool takes).
    pub emulator: Measure,
    /// The emulator, the shipped script called the hand-written way (limitlab's own scripts only):
    /// `emulator / emulator_direct` is what the spec path costs.
    pub emulator_direct: Option<Measure>,
    pub redis_single: Option<Measure>,
    pub redis_pipelined: Vec<Pipelined>,
    /// Microseconds the server spent inside EVALSHA per call over this script's Redis runs (INFO
    /// commandstats): the cost of running the script there, without network or protocol.
    pub redis_server_usec: Option<f64>,
    /// How this script's Redis columns were made, or why some are empty: a spec whose requests
    /// make several calls (one connection through the spec path, no pipelining), one that reads the
    /// server's clock (decisions not compared), one that writes keys outside the prefix (not run).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub redis_notes: Vec<String>,
}

impl ScriptRow {
    /// A script's row with its in-process figures, before any Redis figure.
    fn in_process(algorithm: &str, native: Option<Measure>, emulator: Measure, direct: Option<Measure>) -> ScriptRow {
        ScriptRow {
            algorithm: algorithm.to_string(),
            native,
            emulator,
            emulator_direct: direct,
            redis_single: None,
            redis_pipelined: Vec::new(),
            redis_server_usec: None,
            redis_notes: Vec::new(),
        }
    }

    /// Two rounds of one script as one row: each engine's faster round (see [`Measure::better`]),
    /// Redis's time inside EVALSHA included (the smaller round's).
    /// The notes are the first round's (every round runs the same engines the same way).
    fn better(self, other: ScriptRow) -> ScriptRow {
        fn either(a: Option<Measure>, b: Option<Measure>) -> Option<Measure> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.better(b)),
                (a, b) => a.or(b),
            }
        }
        let mut pipelined = self.redis_pipelined;
        for p in other.redis_pipelined {
            match pipelined.iter_mut().find(|q| q.depth == p.depth) {
                Some(q) => q.measure = q.measure.better(p.measure),
                None => pipelined.push(p),
            }
        }
        ScriptRow {
            algorithm: self.algorithm,
            native: either(self.native, other.native),
            emulator: self.emulator.better(other.emulator),
            emulator_direct: either(self.emulator_direct, other.emulator_direct),
            redis_single: either(self.redis_single, other.redis_single),
            redis_pipelined: pipelined,
            redis_server_usec: match (self.redis_server_usec, other.redis_server_usec) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            redis_notes: self.redis_notes,
        }
    }

    /// The fastest pipelined Redis figure.
    pub fn best_pipelined(&self) -> Option<&Pipelined> {
        self.redis_pipelined.iter().max_by(|a, b| a.measure.per_sec.total_cmp(&b.measure.per_sec))
    }
}

/// The sliding log at one size L, log full.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogRow {
    pub l: u64,
    pub native: Measure,
    pub emulator: Measure,
    pub seed_emulator: Measure,
    pub redis_pipelined: Option<Pipelined>,
    /// The production script's commands sent to the emulator without Lua: calls per second.
    pub commands_per_sec: f64,
    /// Skiplist nodes visited per decision by the production script on the emulator.
    pub zset_steps_per_call: f64,
}

/// Everything `limitlab bench` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchReport {
    pub machine: Machine,
    pub quick: bool,
    pub sizes: Sizes,
    /// The throughput workload, in words.
    pub workload: String,
    pub redis: RedisInfo,
    pub pipelines: Vec<usize>,
    pub scripts: Vec<ScriptRow>,
    pub sliding_log: Vec<LogRow>,
}

impl BenchReport {
    /// Calls, over every measurement, whose decision differed from the reference's.
    pub fn differ(&self) -> u64 {
        let mut n = 0;
        for r in &self.scripts {
            n += r.native.as_ref().map_or(0, |m| m.check.differ) + r.emulator.check.differ;
            n += r.emulator_direct.as_ref().map_or(0, |m| m.check.differ);
            n += r.redis_single.map_or(0, |m| m.check.differ);
            n += r.redis_pipelined.iter().map(|p| p.measure.check.differ).sum::<u64>();
        }
        for r in &self.sliding_log {
            n += r.native.check.differ + r.emulator.check.differ + r.seed_emulator.check.differ;
            n += r.redis_pipelined.map_or(0, |p| p.measure.check.differ);
        }
        n
    }
}

/// The real server for a run: the backend that owns the run's key prefix (and removes its keys),
/// a plain connection for the timed calls, and the private server to keep alive.
struct Live {
    real: RealRedis,
    conn: RedisConn,
    url: String,
    _server: Option<PrivateRedis>,
}

impl Drop for Live {
    /// Leaves the server as it was: every key of the run is under the backend's prefix.
    fn drop(&mut self) {
        let _ = self.real.cleanup();
    }
}

const TIMEOUT: Duration = Duration::from_secs(30);

/// Opens the real Redis of `target`. A private server that cannot be had leaves the Redis columns
/// empty with a note saying why; a `--redis URL` that cannot be used is an error.
fn open(target: &RedisTarget) -> Result<(Option<Live>, RedisInfo)> {
    let none = |note: String| RedisInfo { source: "none".into(), url: None, version: None, note: Some(note) };
    let (mut server, url, source) = match target {
        RedisTarget::None => return Ok((None, none("no real Redis (--no-redis)".into()))),
        RedisTarget::Url(u) => (None, u.expose().to_string(), "url"),
        RedisTarget::Private => match PrivateRedis::start() {
            Ok(s) => {
                let u = s.url();
                (Some(s), u, "private")
            }
            Err(why) => return Ok((None, none(why.to_string()))),
        },
    };
    let opened = RealRedis::connect(&url, RealOptions { timeout: TIMEOUT })
        .and_then(|real| Ok((real, RedisConn::connect(&url, TIMEOUT)?)));
    let (mut real, mut conn) = match opened {
        Ok(c) => c,
        Err(e) if server.is_some() => return Ok((None, none(format!("the private server: {e}")))),
        Err(e) => return Err(e),
    };
    if let Some(s) = server.as_mut() {
        // Both connections must reach our own child before a run writes (and removes) keys there.
        if let Err(e) = s.confirm(|a| real.command(a)).and_then(|()| s.confirm(|a| conn.command(a))) {
            return Ok((None, none(format!("the private server: {e}"))));
        }
    }
    if real.is_cluster() {
        return Err(limitlab_emulator::Error::Invalid {
            context: "bench".into(),
            field: "--redis".into(),
            reason: format!(
                "{} is a cluster node; give one standalone server (a run's keys would span every slot)",
                limitlab_engine::backend::secret::redact(&url)
            ),
        });
    }
    let version = conn.version();
    // Reports show the URL without its password.
    let info = RedisInfo {
        source: source.into(),
        url: Some(limitlab_engine::backend::secret::redact(&url)),
        version,
        note: None,
    };
    Ok((Some(Live { real, conn, url, _server: server }), info))
}

fn say(opts: &BenchOptions, what: &str) {
    if opts.progress && std::io::stderr().is_terminal() {
        eprintln!("bench: {what}");
    }
}

/// What decides how a script's Redis turns are run and judged (see [`run`]).
struct RedisPlan {
    /// The server-clock commands the script calls: such a script decides there by the wall clock,
    /// not the workload's virtual times, so its Redis figures are timed, not compared.
    clock: Vec<String>,
    /// Nor are they compared when its decisions change when keys do not expire (a TTL too short
    /// for them): a server expires keys on its wall clock. limitlab's own scripts are proven not to.
    on_expiry: bool,
    /// Keys the script writes outside the run's prefix: such a script is not run on Redis.
    outside: Vec<String>,
}

impl RedisPlan {
    fn find(
        spec: &SharedSpec,
        w: &Workload,
        l: &Limiter,
        reference: &[Decision],
        longest: usize,
        skip: usize,
    ) -> Result<RedisPlan> {
        let clock = crate::verify::against_redis::clock_reads(spec);
        let on_expiry = spec.model.is_none() && {
            let kept = engines::emulator_without_expiry(w, l, longest)?;
            kept[..] != reference[..longest.min(reference.len())]
        };
        let outside = engines::outside_keys(w, l, skip.min(1000))?;
        Ok(RedisPlan { clock, on_expiry, outside })
    }
}

/// Runs the benchmark.
pub fn run(opts: &BenchOptions) -> Result<BenchReport> {
    let sizes = opts.sizes;
    let (mut live, mut redis) = open(&opts.redis)?;
    let w = Workload::throughput();
    let skip = sizes.warmup;
    let mut scripts = Vec::new();
    let mut ns = 0u64;
    for spec in &opts.scripts {
        let v = spec.name.as_str();
        let l = Limiter::from_spec(Arc::clone(spec), w.params)?;
        let longest = skip + sizes.emulator.max(sizes.redis_single).max(sizes.redis_pipelined);
        let mut reference: Vec<Decision> = Vec::new();
        let mut merged: Option<ScriptRow> = None;
        // How this script's Redis turns are run and judged: the same in every round, so found in
        // the first round that has a server (it needs the reference) and kept.
        let mut plan: Option<RedisPlan> = None;
        let rounds = sizes.rounds.max(1);
        for round in 0..rounds {
            let of = if rounds > 1 { format!(" (round {} of {rounds})", round + 1) } else { String::new() };
            say(opts, &format!("{v}: emulator{of}"));
            let emu_run = engines::emulator(&w, &l, skip, sizes.emulator)?;
            // The reference: the exact model's decisions, or (a user's script) the emulator's own, which
            // the real server's must then equal call for call.
            if round == 0 {
                reference = reference_decisions(&w, &l, &emu_run, longest)?;
            }
            say(opts, &format!("{v}: native{of}"));
            let native = engines::native(&w, &l, skip, sizes.native).map(|t| Measure::of(&t, &reference));
            let emulator = Measure::of(&emu_run, &reference);
            let emulator_direct = match spec.model {
                Some(m) => {
                    say(opts, &format!("{v}: emulator, direct{of}"));
                    Some(direct(&w, m, skip, sizes.emulator, &reference)?)
                }
                None => None,
            };
            let mut row = ScriptRow::in_process(v, native, emulator, emulator_direct);
            if let Some(lv) = live.as_mut() {
                let RedisPlan { clock, on_expiry, outside } = match &mut plan {
                    Some(p) => p,
                    none => none.insert(RedisPlan::find(spec, &w, &l, &reference, longest, skip)?),
                };
                let on_expiry = *on_expiry;
                let checked = |t: &Timed| {
                    if clock.is_empty() && !on_expiry {
                        Measure::of(t, &reference)
                    } else {
                        Measure::unchecked(t)
                    }
                };
                // Redis's own time inside EVALSHA over this round's calls (the fastest round's is
                // kept, as every engine keeps its fastest round).
                let before = lv.conn.evalsha_stats();
                if let Some(k) = outside.first() {
                    row.redis_notes.push(format!(
                    "{v}: not run on Redis: its script writes keys outside the run's prefix (`{k}`), which every run \
                     would share and the run could not remove"
                ));
                } else if l.single_script().is_some() {
                    let mut go = |depth: usize, n: usize| -> Result<Measure> {
                        say(opts, &format!("{v}: redis, {depth} per round trip{of}"));
                        ns += 1;
                        let prefix = format!("{}{ns}:", lv.real.key_prefix());
                        let t = match lv.conn.run(&w, &l, &prefix, depth, skip, n) {
                            Ok(t) => t,
                            // What became of the run's keys, said with the failure.
                            Err(Error::Connection(m)) => {
                                let keys = match lv.real.cleanup() {
                                    Ok(k) => format!("{k} keys of the run were removed"),
                                    Err(c) => {
                                        format!("its keys under `{}` could not be removed ({c})", lv.real.key_prefix())
                                    }
                                };
                                return Err(Error::Connection(format!("{v}, {depth} per round trip: {m}; {keys}")));
                            }
                            Err(e) => return Err(e),
                        };
                        Ok(checked(&t))
                    };
                    match go(1, sizes.redis_single) {
                        Ok(m) => {
                            row.redis_single = Some(m);
                            for &d in &opts.pipelines {
                                row.redis_pipelined
                                    .push(Pipelined { depth: d, measure: go(d, sizes.redis_pipelined)? });
                            }
                        }
                        Err(e) => {
                            redis.note = Some(format!("{}: {e}", limitlab_engine::backend::secret::redact(&lv.url)));
                            live = None;
                        }
                    }
                } else {
                    // Several calls per request, later ones reading earlier replies: one connection
                    // through the spec path, as the application makes them; nothing to pipeline.
                    say(opts, &format!("{v}: redis, through the spec{of}"));
                    lv.real.cleanup()?;
                    let t = engines::redis_spec(&mut lv.real, &w, &l, skip, sizes.redis_single);
                    lv.real.cleanup()?;
                    row.redis_single = Some(checked(&t?));
                    row.redis_notes.push(format!(
                        "{v}: Redis, 1 connection runs each request through its spec's client side, call after call \
                     as the application makes them ({}); no pipelined figures",
                        if matches!(spec.program, limitlab_engine::spec::Program::Adapter { .. }) {
                            "a Lua adapter decides what to send"
                        } else {
                            "a request makes more than one call, later ones depending on earlier replies"
                        }
                    ));
                }
                not_compared(&mut row, v, on_expiry, clock, outside);
                if let (Some(lv), Some((c0, u0))) = (live.as_mut(), before) {
                    if let Some((c1, u1)) = lv.conn.evalsha_stats() {
                        if c1 > c0 {
                            row.redis_server_usec = Some(u1.saturating_sub(u0) as f64 / (c1 - c0) as f64);
                        }
                    }
                }
            }
            merged = Some(match merged {
                None => row,
                Some(m) => m.better(row),
            });
        }
        scripts.push(merged.expect("at least one round"));
    }

    let sliding_log = sliding_log_rows(opts, &mut live, &mut ns)?;
    drop(live);

    Ok(BenchReport {
        machine: Machine::detect(),
        quick: opts.quick,
        sizes,
        workload: format!(
            "{} users called in turn, one call per virtual ms, limit {} per {} ms (about one call in five refused)",
            w.users, w.params.limit, w.params.window_ms
        ),
        redis,
        pipelines: opts.pipelines.clone(),
        scripts,
        sliding_log,
    })
}

/// The decisions every engine's are compared with: the exact model's, or (a user's script) the
/// emulator's own, which the real server's must then equal call for call; `longest` of them.
fn reference_decisions(w: &Workload, l: &Limiter, emu_run: &Timed, longest: usize) -> Result<Vec<Decision>> {
    Ok(match w.reference_decisions(l, longest) {
        Some(r) => r,
        None => {
            let mut r = emu_run.decisions.clone();
            if r.len() < longest {
                r = engines::emulator(w, l, longest, 0)?.decisions;
            }
            r
        }
    })
}

/// A shipped script called the hand-written way (its exact model `m`) on the emulator.
fn direct(w: &Workload, m: Variant, skip: usize, n: usize, reference: &[Decision]) -> Result<Measure> {
    let d = Direct::new(m, w.params)?;
    Ok(Measure::of(&engines::emulator_direct(w, &d, skip, n)?, reference))
}

/// Why a script's Redis decisions are not compared with the reference (it reads the server's clock,
/// or its decisions depend on when keys expire), noted on its row.
fn not_compared(row: &mut ScriptRow, v: &str, on_expiry: bool, clock: &[String], outside: &[String]) {
    if on_expiry && clock.is_empty() && outside.is_empty() {
        row.redis_notes.push(format!(
            "{v}: Redis decisions not compared: they depend on when keys expire (on the emulator they change \
             when keys are kept past their TTL), and a server expires keys on its wall clock, not the \
             workload's virtual times"
        ));
    }
    if !clock.is_empty() && outside.is_empty() {
        row.redis_notes.push(format!(
            "{v}: Redis decisions not compared: it reads the server's clock ({}), so there they follow the \
             wall clock, not the workload's virtual times",
            clock.join(", ")
        ));
    }
}

/// The sliding log's table: the shipped script and the seed's at each log size (when the sliding log
/// is among the scripts), on Redis at the deepest pipeline when there is one.
fn sliding_log_rows(opts: &BenchOptions, live: &mut Option<Live>, ns: &mut u64) -> Result<Vec<LogRow>> {
    let sizes = opts.sizes;
    let mut sliding_log = Vec::new();
    let deepest = opts.pipelines.iter().copied().max();
    // The sliding log's size table is about the sliding log: only when it is among the scripts.
    let log_sizes: &[u64] = if opts.scripts.iter().any(|s| s.model.is_some_and(|v| v.name().contains("sliding_log"))) {
        &opts.log_sizes
    } else {
        &[]
    };
    for &size in log_sizes {
        let w = Workload::full_log(size);
        let fill = size as usize;
        let n = sizes.log_calls;
        let l = w.limiter(Variant::SLIDING_LOG)?;
        let seed = w.limiter(Variant::SEED_SLIDING_LOG)?;
        let reference = w.reference_decisions(&l, fill + n).expect("the sliding log has a model");
        let seed_reference = w.reference_decisions(&seed, fill + n).expect("the seed's sliding log has a model");
        say(opts, &format!("sliding log, L = {size}"));
        let native =
            Measure::of(&engines::native(&w, &l, fill, n.max(sizes.native / 10)).expect("a model"), &reference);
        let emu_run = engines::emulator(&w, &l, fill, n)?;
        let zset_steps_per_call = emu_run.zset_steps.unwrap_or(0) as f64 / n.max(1) as f64;
        let emulator = Measure::of(&emu_run, &reference);
        let commands_per_sec = engines::sliding_log_commands(&w, fill, n.max(sizes.native / 20))?.per_sec();
        let seed_emulator = Measure::of(&engines::emulator(&w, &seed, fill, n)?, &seed_reference);
        let mut redis_pipelined = None;
        if let (Some(lv), Some(depth)) = (live.as_mut(), deepest) {
            *ns += 1;
            let prefix = format!("{}{ns}:", lv.real.key_prefix());
            let t = lv.conn.run(&w, &l, &prefix, depth, fill, n)?;
            redis_pipelined = Some(Pipelined { depth, measure: Measure::of(&t, &reference) });
        }
        sliding_log.push(LogRow {
            l: size,
            native,
            emulator,
            seed_emulator,
            redis_pipelined,
            commands_per_sec,
            zset_steps_per_call,
        });
    }
    Ok(sliding_log)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gcra_only(rounds: usize) -> BenchOptions {
        BenchOptions {
            redis: RedisTarget::None,
            sizes: Sizes { rounds, ..Sizes::QUICK },
            quick: true,
            log_sizes: Vec::new(),
            scripts: vec![limitlab_engine::spec::builtin::spec(Variant::GCRA)],
            progress: false,
            ..BenchOptions::default()
        }
    }

    /// Rounds: every engine runs once per round, every decision of every round is compared, and the
    /// figure is the fastest round's, never slower than any single round could be.
    #[test]
    fn each_engine_runs_once_a_round_and_keeps_its_fastest_round() {
        let one = run(&gcra_only(1)).unwrap();
        let three = run(&gcra_only(3)).unwrap();
        let (a, b) = (&one.scripts[0], &three.scripts[0]);
        assert_eq!(b.emulator.check.compared, 3 * a.emulator.check.compared);
        assert_eq!(b.emulator.check.allowed, 3 * a.emulator.check.allowed);
        let direct = |r: &ScriptRow| r.emulator_direct.expect("a shipped script has a direct path").check.compared;
        assert_eq!(direct(b), 3 * direct(a));
        let native = |r: &ScriptRow| r.native.expect("a shipped script has a model").check.compared;
        assert_eq!(native(b), 3 * native(a));
        assert_eq!(three.differ(), 0);
        assert!(b.emulator.per_sec > 0.0 && b.emulator.calls == a.emulator.calls);
        let said = |r: &BenchReport| tables::render(r, crate::report::Format::Markdown);
        assert!(said(&three).contains("took 3 turns each"), "{}", said(&three));
        assert!(!said(&one).contains("turns each"), "{}", said(&one));
    }

    #[test]
    fn the_faster_round_wins_and_both_are_checked() {
        let m = |per_sec: f64, differ: u64| Measure {
            calls: 10,
            secs: 10.0 / per_sec,
            per_sec,
            check: Check { compared: 10, differ, allowed: 7 },
        };
        let best = m(5.0, 0).better(m(8.0, 1));
        assert_eq!(best.per_sec, 8.0);
        assert_eq!(best.secs, 10.0 / 8.0);
        assert_eq!(best.check, Check { compared: 20, differ: 1, allowed: 14 });
        assert_eq!(m(9.0, 0).better(m(8.0, 0)).per_sec, 9.0);
        // A row: every engine's faster round, Redis's time inside EVALSHA the smaller one.
        let row = |per_sec: f64, usec: Option<f64>| ScriptRow {
            algorithm: "gcra".into(),
            native: None,
            emulator: m(per_sec, 0),
            emulator_direct: Some(m(per_sec, 0)),
            redis_single: Some(m(per_sec / 10.0, 0)),
            redis_pipelined: vec![Pipelined { depth: 16, measure: m(per_sec / 2.0, 0) }],
            redis_server_usec: usec,
            redis_notes: vec![format!("{per_sec}")],
        };
        let both = row(5.0, Some(4.0)).better(row(8.0, Some(3.5)));
        assert_eq!((both.emulator.per_sec, both.redis_pipelined[0].measure.per_sec), (8.0, 4.0));
        assert_eq!(both.redis_single.map(|m| m.check.compared), Some(20));
        assert_eq!(both.redis_server_usec, Some(3.5));
        assert_eq!(both.redis_notes, vec!["5".to_string()]);
        assert_eq!(row(5.0, Some(4.0)).better(row(8.0, None)).redis_server_usec, Some(4.0));
    }
}
