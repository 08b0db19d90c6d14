//! Scenarios on a real Redis, call for call against the emulator (`run --redis`, `compare --redis`).
//!
//! Every script takes `now` from ARGV, so a real server given the arrivals' virtual times must decide
//! exactly as the emulator does. The one thing the server does on its own clock is expire keys, and
//! the two clocks do not agree: a scenario spanning 10 virtual seconds runs in milliseconds on the
//! server. What that means for each shipped script, when the times it is given never go backwards
//! (every standard scenario):
//! - **Keys the emulator expired live on in the server** (the server's wall clock ran slower than
//!   virtual time). No decision depends on that: every production script's TTL is set to the moment
//!   its state becomes equal to no state (`fixed_window`: the window ends; `sliding_window`: the next
//!   window ends; `sliding_log`: the newest member leaves; `token_bucket`: the bucket is full;
//!   `gcra`: the TAT is reached), and each script computes the same reply from a stale state as from
//!   none. The seed's scripts agree too: `seed_fixed_window` reads only the current window's key, which
//!   lives two windows; `seed_sliding_window` reads the current and previous windows' keys, whose TTL of
//!   two windows from their first count outlasts the current window; `seed_sliding_log` trims members
//!   older than a window before counting, and its key outlives its newest member by exactly a window;
//!   `seed_token_bucket`'s refill after two idle windows fills the bucket (`min(cap, ..)`), which is
//!   what a missing key gives.
//! - **Keys the server expired while the emulator kept them** (the server's wall clock ran faster
//!   than virtual time). This does change decisions, and it can happen: within a burst many calls
//!   share one virtual millisecond while the wall clock moves on, and `token_bucket`/`gcra` set TTLs
//!   as short as `window_ms / limit` (10 ms in the standard scenarios). A stall of the test machine
//!   longer than that between two calls of one subject lets the server drop a key the emulator still
//!   has. Such a divergence depends on timing and does not repeat, while an emulator bug repeats on
//!   every run: so a script whose run diverges is run again on a clean keyspace, up to
//!   [`ATTEMPTS`] times in all, and reported as differing only if every attempt differs. A run that
//!   agreed only on a later attempt says so.
//!
//! **The server's clock.** Those two effects, and any script or spec call that reads the server's
//! clock (`PTTL`, `TTL`, `EXPIRETIME`, `PEXPIRETIME`), make a server's decisions depend on its wall
//! clock, which a run cannot set. So a second way to compare exists: the arrivals run on the server
//! with `TIME` read around every request (each request started early in a server millisecond, so
//! it runs within that millisecond), and the emulator then replays them with its clock set to the
//! server's millisecond of each request; the scenario's times still go to the scripts in ARGV. The
//! emulator then sees exactly what the server saw (key expiry, TTLs read back, `TIME`), and its
//! decisions must be identical. A spec that reads a TTL is compared this way from the start; any
//! other is compared on the scenario's clock first, and only when every attempt differed, on the
//! server's: agreeing there shows the difference came from the clocks (a key the emulator expired
//! at a scenario time still alive on the server: a TTL too short for the decisions shows this way),
//! not from the script running differently, and the report says so with the first difference seen.
//! A script that reads `TIME` gets the emulator's clock on both sides through a shim on the server
//! (see [`limitlab_engine::backend::real`]). A request during which the server's millisecond changed (a stall)
//! is replayed with each of its calls at each millisecond it may have run in (never going backwards
//! from one call to the next: a `PTTL` read right after a `SET ... PX` can be a millisecond short),
//! and kept at the clock that decides as the server did and leaves the keys it named with the expiry times the server gave them (read with
//! PEXPIRETIME right after such a request).
//!
//! **Before the server.** Each script first runs the arrivals on an emulator under the server run's
//! own key prefix, which notes every key created outside it: a script that builds key names from
//! ARGV instead of KEYS would write those keys on the server among other clients' keys, where the
//! run could neither find nor remove them. Such a run is refused, naming the keys, the spec's call
//! and the request, unless the server is the caller's to write on (`--allow-outside-keys`,
//! [`RealRedis::set_allow_outside_keys`]): then it goes ahead, and afterwards exactly those keys
//! are removed that did not exist before the run (the others are listed, left as they are). On a
//! cluster such a script is refused in any case (a call is routed by its KEYS, and a script touching
//! another key fails there), and a call whose keys span hash slots is reported the same way (the
//! call, both keys and their slots) before anything is sent: the server would answer CROSSSLOT.
mod precheck;
mod reads;
mod report;
mod server_clock;

use std::fmt::Write as _;

use limitlab_emulator::{Error, Result};
use limitlab_engine::backend::real::RealRedis;
use limitlab_engine::backend::Backend;
use limitlab_engine::limiter::{Decision, Limiter, Variant};
use limitlab_engine::sim::standard::{builtin, STANDARD};
use limitlab_engine::sim::{Progress, Scenario, Trace};
use limitlab_engine::traffic::Arrival;
use reads::shimmed_time;
use server_clock::{first_difference, on_server_clock, replay_at};

pub use precheck::{check_slots, precheck, Precheck};
pub use reads::{absolute_expiries, clock_reads, CLOCK_READS};
pub use report::{first_divergence, ClockUsed, Divergence, RedisCheck, ScriptCheck};

/// Runs of one script before a divergence counts (see the module docs).
pub const ATTEMPTS: u32 = 3;

/// Which of `keys` exist on the server now.
fn existing(real: &mut RealRedis, keys: &[String]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for k in keys {
        if matches!(real.command(&[b"EXISTS", k.as_bytes()])?, limitlab_emulator::Reply::Int(n) if n > 0) {
            out.push(k.clone());
        }
    }
    Ok(out)
}

/// Removes `keys` except those in `keep`; returns how many were removed.
fn remove_outside(real: &mut RealRedis, keys: &[String], keep: &[String]) -> Result<u64> {
    let mut n = 0;
    for k in keys.iter().filter(|k| !keep.contains(k)) {
        if let limitlab_emulator::Reply::Int(d) = real.command(&[b"UNLINK", k.as_bytes()])? {
            n += d as u64;
        }
    }
    Ok(n)
}

/// Runs `limiter` over `arrivals` on the server (up to [`ATTEMPTS`] times while it diverges) and
/// compares every decision with `emulated`. The server's keys are removed after every attempt, and
/// also when a run fails, in which case the error says how far the run got and whether the cleanup
/// worked. When every attempt differed, or the spec reads a TTL, the comparison is made on the
/// server's clock instead (see the module docs).
pub fn check_script(
    scenario: &str,
    limiter: &Limiter,
    arrivals: &[Arrival],
    emulated: &Trace,
    real: &mut RealRedis,
    progress: Progress,
) -> Result<ScriptCheck> {
    check_script_with(scenario, limiter, arrivals, emulated, &[], real, progress)
}

/// [`check_script`] for a script that writes `outside` keys outside the prefix (allowed by the
/// caller): those that did not exist before are removed after every attempt.
pub fn check_script_with(
    scenario: &str,
    limiter: &Limiter,
    arrivals: &[Arrival],
    emulated: &Trace,
    outside: &[String],
    real: &mut RealRedis,
    progress: Progress,
) -> Result<ScriptCheck> {
    let variant = limiter.name();
    let reads_clock = clock_reads(limiter.spec());
    let mut check = ScriptCheck {
        scenario: scenario.to_string(),
        algorithm: variant.to_string(),
        calls: arrivals.len(),
        attempts: 0,
        divergence: None,
        retried_after: None,
        keys_removed: 0,
        monotone: arrivals.windows(2).all(|w| w[0].at <= w[1].at),
        redis_secs: 0.0,
        clock: ClockUsed::Scenario,
        scenario_divergence: None,
        uncertain: 0,
        outside_keys: outside.to_vec(),
        outside_left: existing(real, outside)?,
        reads_clock,
        absolute_expiry: absolute_expiries(limiter.spec()),
    };
    let reads_ttl = check.reads_clock.iter().any(|r| !shimmed_time(r));
    if !reads_ttl {
        for attempt in 1..=ATTEMPTS {
            check.attempts = attempt;
            let result = limitlab_engine::sim::run_partial(limiter, real, arrivals, progress);
            let cleanup = real.cleanup().and_then(|n| Ok(n + remove_outside(real, outside, &check.outside_left)?));
            let trace = match result {
                Ok(t) => t,
                Err((done, e)) => return Err(stopped(scenario, variant, real, done, arrivals, e, cleanup)),
            };
            check.keys_removed += cleanup?;
            check.redis_secs = trace.elapsed_secs;
            match first_divergence(emulated, &trace) {
                None => {
                    check.divergence = None;
                    return Ok(check);
                }
                Some(d) => {
                    if check.retried_after.is_none() {
                        check.retried_after = Some(d.clone());
                    }
                    check.divergence = Some(d);
                }
            }
        }
        // Every attempt differed on the scenario's clock: no "retried" note; try the server's clock.
        check.retried_after = None;
        check.scenario_divergence = check.divergence.take();
    }
    // The requests alone (a lifecycle operation makes no decision), which the decisions follow.
    let requests: Vec<Arrival> = arrivals.iter().filter(|a| a.op == limitlab_engine::traffic::Op::Request).cloned().collect();
    for attempt in 1..=ATTEMPTS {
        check.attempts = attempt;
        let watch = limitlab_emulator::clock::Stopwatch::start();
        let result = on_server_clock(limiter, arrivals, real);
        let cleanup = real.cleanup().and_then(|n| Ok(n + remove_outside(real, outside, &check.outside_left)?));
        let runs = match result {
            Ok(x) => x,
            Err((done, e)) => return Err(stopped(scenario, variant, real, done, arrivals, e, cleanup)),
        };
        check.keys_removed += cleanup?;
        check.redis_secs = watch.elapsed_secs();
        let (replayed, uncertain) = replay_at(limiter, arrivals, real.key_prefix(), &runs)?;
        let decisions: Vec<Decision> = runs.iter().filter(|r| r.op.is_none()).map(|r| r.decision).collect();
        check.uncertain = uncertain;
        check.divergence = first_difference(limiter, &requests, &replayed, &decisions);
        if check.divergence.is_none() {
            check.clock = ClockUsed::Server;
            return Ok(check);
        }
    }
    check.clock = ClockUsed::Server;
    Ok(check)
}

/// Error codes by which a server refuses a call for its own state, not the run's input.
const SERVER_REFUSALS: [&str; 10] =
    ["OOM ", "READONLY ", "NOPERM ", "NOAUTH ", "WRONGPASS ", "BUSY ", "LOADING ", "MASTERDOWN ", "CLUSTERDOWN ", "TRYAGAIN "];

/// The error of a run that stopped after `done` requests: where, why, and what became of its keys.
fn stopped(scenario: &str, variant: &str, real: &RealRedis, done: usize, arrivals: &[Arrival], e: Error, cleanup: Result<u64>) -> Error {
    let mut where_ = format!("scenario `{scenario}`, script `{variant}`: stopped after {done} of {} calls", arrivals.len());
    if let Some(a) = arrivals.get(done) {
        let _ = write!(where_, " (call #{} was subject `{}` at now_ms {})", done + 1, a.key, a.at.as_millis().0);
        if real.failure().is_some() {
            let _ = write!(where_, "; that call was in flight, so its outcome on the server is unknown");
        }
    }
    let text = |e: &Error| match e {
        Error::Connection(m) | Error::Redis(m) => m.clone(),
        other => other.to_string(),
    };
    if text(&e).contains("NOAUTH ") {
        let _ = write!(where_, " (the server needs a password, not the script: give it in the URL, redis://:PASSWORD@HOST:PORT)");
    }
    if text(&e).contains("READONLY You can't write against a read only replica") {
        let _ = write!(where_, " (the server is a read-only replica now: point --redis at its master)");
    }
    let keys = match &cleanup {
        Ok(n) => format!("{n} keys of the run were removed"),
        // The refused call was the only reply of the run (not lost in transit): nothing ran, so
        // nothing was written, whatever the cleanup could do.
        Err(_) if done == 0 && real.failure().is_none() && real.replies() <= 1 => "No key of the run was written".to_string(),
        Err(c) => format!("Its keys under `{}` could not be removed ({})", real.key_prefix(), text(c)),
    };
    let msg = format!("{where_}: {}. {keys}", text(&e).trim_end_matches('.'));
    match e {
        Error::Connection(_) => Error::Connection(msg),
        Error::Redis(_) => Error::Redis(msg),
        // The server's state, not the input, refused the call (out of memory, a replica, ACL).
        Error::Script { ref reply, .. } if SERVER_REFUSALS.iter().any(|c| reply.starts_with(c)) => {
            Error::Redis(format!("{where_}: {e}. {keys}"))
        }
        _ => Error::Invalid { context: where_, field: "run".into(), reason: format!("{e}; {keys}") },
    }
}

/// Every selected script of a scenario on the emulator and on the server: each first on an
/// emulator under the server run's prefix ([`precheck`]), then on the server.
pub fn check_scenario(s: &Scenario, seed: u64, real: &mut RealRedis, progress: Progress) -> Result<Vec<ScriptCheck>> {
    real.require_writable(&format!("scenario `{}`", s.name))?;
    let arrivals = s.arrivals(seed)?;
    let mut out = Vec::new();
    for v in &s.scripts {
        let limiter = s.limiter(v)?;
        let pre = precheck(&s.name, &limiter, &arrivals, s.start_ms, real, progress)?;
        out.push(check_script_with(&s.name, &limiter, &arrivals, &pre.trace, &pre.outside, real, progress)?);
    }
    Ok(out)
}

/// `verify --script SPEC`: the traffic patterns of `limitlab check`, sized from the limiter's policy
/// (a boundary burst, a burst after idle windows, steady overload, many subjects under the limit,
/// sparse requests, varied costs), each on the emulator and on the server as [`check_scenario`]
/// runs a scenario.
pub fn check_spec(limiter: &Limiter, seed: u64, real: &mut RealRedis, progress: Progress) -> Result<RedisCheck> {
    real.require_writable(&format!("verify --script {}", limiter.name()))?;
    let p = limiter.params();
    let origin = limitlab_engine::attack::origin_ms(p.window_ms);
    let mut checks = Vec::new();
    for pat in limitlab_engine::check::run::patterns(&p, origin, seed) {
        let pre = precheck(pat.name, limiter, &pat.arrivals, origin, real, progress)?;
        checks.push(check_script_with(pat.name, limiter, &pat.arrivals, &pre.trace, &pre.outside, real, progress)?);
    }
    Ok(RedisCheck { backend: real.describe(), checks, show_speed: false })
}

/// `run --redis`: one scenario file.
pub fn check_run(s: &Scenario, seed: u64, real: &mut RealRedis, progress: Progress) -> Result<RedisCheck> {
    Ok(RedisCheck { backend: real.describe(), checks: check_scenario(s, seed, real, progress)?, show_speed: false })
}

/// `compare --redis`: every standard scenario, every script (`seed` overrides the files' own).
pub fn check_standard(seed: Option<u64>, real: &mut RealRedis, progress: Progress) -> Result<RedisCheck> {
    let mut checks = Vec::new();
    for (file, _) in STANDARD {
        let mut s = builtin(file)?;
        s.scripts = Variant::ALL.iter().map(|&v| limitlab_engine::spec::builtin::spec(v)).collect();
        let seed = seed.unwrap_or(s.seed);
        checks.extend(check_scenario(&s, seed, real, progress)?);
    }
    Ok(RedisCheck { backend: real.describe(), checks, show_speed: false })
}
