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
use std::fmt::Write as _;

use serde::Serialize;

use crate::backend::real::RealRedis;
use crate::backend::Backend;
use crate::limiter::{Decision, Limiter, Variant};
use crate::report::table::Table;
use crate::report::Format;
use crate::sim::standard::{builtin, run_on_emulator, STANDARD};
use crate::sim::{run, Progress, Scenario, Trace};
use crate::traffic::Arrival;
use crate::{Error, Result};

/// Runs of one script before a divergence counts (see the module docs).
pub const ATTEMPTS: u32 = 3;

/// The first call on which the emulator and the server decided differently.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Divergence {
    /// 1-based call number in the run.
    pub call: usize,
    pub subject: String,
    pub now_ms: i64,
    pub cost: u64,
    #[serde(serialize_with = "ser_decision")]
    pub emulator: Decision,
    #[serde(serialize_with = "ser_decision")]
    pub redis: Decision,
}

/// A decision as the script's reply: `[allowed, remaining, retry_after_ms, reset_after_ms]`.
fn ser_decision<S: serde::Serializer>(d: &Decision, s: S) -> std::result::Result<S::Ok, S::Error> {
    [i64::from(d.allowed), d.remaining, d.retry_after_ms, d.reset_after_ms].serialize(s)
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "call #{} (subject `{}`, now_ms {}, cost {}): emulator {}, redis {}",
            self.call,
            self.subject,
            self.now_ms,
            self.cost,
            show(&self.emulator),
            show(&self.redis)
        )
    }
}

fn show(d: &Decision) -> String {
    format!(
        "{{allowed {}, remaining {}, retry_after_ms {}, reset_after_ms {}}}",
        u8::from(d.allowed),
        d.remaining,
        d.retry_after_ms,
        d.reset_after_ms
    )
}

/// One script in one scenario, on the emulator and on the server.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScriptCheck {
    pub scenario: String,
    pub algorithm: String,
    pub calls: usize,
    /// How many runs on the server it took (1 unless a run diverged).
    pub attempts: u32,
    /// The divergence of the last attempt: `None` means the decisions were identical.
    pub divergence: Option<Divergence>,
    /// The divergence of the first attempt, when a later one agreed (a timing effect, see the module
    /// docs).
    pub retried_after: Option<Divergence>,
    /// Keys removed from the server after the runs.
    pub keys_removed: u64,
    /// Whether the arrivals' times never go backwards (where no decision depends on expiry).
    pub monotone: bool,
    /// Wall-clock seconds of the last run on the server (not deterministic).
    #[serde(skip)]
    pub redis_secs: f64,
}

/// Every checked script of a `run` or `compare`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RedisCheck {
    pub backend: String,
    pub checks: Vec<ScriptCheck>,
    /// Show the server's calls per second (wall-clock figures; off for byte-identical output).
    #[serde(skip)]
    pub show_speed: bool,
}

impl RedisCheck {
    /// Whether every script decided identically on both.
    pub fn identical(&self) -> bool {
        self.checks.iter().all(|c| c.divergence.is_none())
    }

    /// The check as a table (text or markdown) or JSON.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Json => serde_json::to_string_pretty(self).unwrap_or_default() + "\n",
            Format::Text => self.table().to_text(),
            Format::Markdown => self.table().to_markdown(),
        }
    }

    fn table(&self) -> Table {
        let mut t = Table::new(
            format!("The same arrivals on {}: decisions against the emulator's, call for call", self.backend),
            &["Scenario", "Algorithm", "Calls", "Decisions", "Keys removed"],
        );
        t.align[1] = crate::report::table::Align::Left;
        if self.show_speed {
            t.headers.push("Calls/s on the server".into());
            t.align.push(crate::report::table::Align::Right);
        }
        for c in &self.checks {
            let verdict = match (&c.divergence, c.attempts) {
                (None, 1) => "identical".to_string(),
                (None, n) => format!("identical (attempt {n})"),
                (Some(d), _) => format!("DIFFER from call #{}", d.call),
            };
            let mut row =
                vec![c.scenario.clone(), c.algorithm.clone(), c.calls.to_string(), verdict, c.keys_removed.to_string()];
            if self.show_speed {
                let rate = if c.redis_secs > 0.0 { c.calls as f64 / c.redis_secs } else { 0.0 };
                row.push(crate::report::table::thousands(rate.round() as u64));
            }
            t.row(row);
        }
        for c in &self.checks {
            if let Some(d) = &c.divergence {
                let why = if c.monotone {
                    ""
                } else {
                    " (the arrivals' times go backwards in this scenario, where key expiry on the server's own \
                     clock can legitimately change a decision)"
                };
                t.note(format!("{} / {}: first difference at {d}{why}", c.scenario, c.algorithm));
            } else if let Some(d) = &c.retried_after {
                t.note(format!(
                    "{} / {}: the first run differed at {d}; a later run on a clean keyspace agreed, so it was the \
                     server's wall clock expiring a short-lived key during a stall, not a different decision",
                    c.scenario, c.algorithm
                ));
            }
        }
        t.note(
            "The server is given the arrivals' times in ARGV; only key expiry follows its own clock, which no \
             script's decision depends on while the times given never go backwards.",
        );
        t
    }

    /// `Ok` when identical, else [`Error::Mismatch`] naming the first differing call of each script.
    pub fn into_result(self) -> Result<()> {
        let bad: Vec<String> = self
            .checks
            .iter()
            .filter_map(|c| c.divergence.as_ref().map(|d| format!("{} / {}: {d}", c.scenario, c.algorithm)))
            .collect();
        if bad.is_empty() {
            Ok(())
        } else {
            Err(Error::Mismatch(format!("{} decided differently on {}: {}", bad.len(), self.backend, bad.join("; "))))
        }
    }
}

/// The first record where two traces of the same arrivals decided differently.
pub fn first_divergence(emulated: &Trace, real: &Trace) -> Option<Divergence> {
    let n = emulated.records.len().max(real.records.len());
    (0..n).find_map(|i| {
        let (e, r) = (emulated.records.get(i)?, real.records.get(i)?);
        (e.decision != r.decision).then(|| Divergence {
            call: i + 1,
            subject: emulated.keys.get(e.key as usize).cloned().unwrap_or_default(),
            now_ms: e.now_ms,
            cost: e.cost,
            emulator: e.decision,
            redis: r.decision,
        })
    })
}

/// Runs `limiter` over `arrivals` on the server (up to [`ATTEMPTS`] times while it diverges) and
/// compares every decision with `emulated`. The server's keys are removed after every attempt, and
/// also when a run fails, in which case the error says how far the run got and whether the cleanup
/// worked.
pub fn check_script(
    scenario: &str,
    limiter: &Limiter,
    arrivals: &[Arrival],
    emulated: &Trace,
    real: &mut RealRedis,
    progress: Progress,
) -> Result<ScriptCheck> {
    let variant = limiter.name();
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
    };
    for attempt in 1..=ATTEMPTS {
        check.attempts = attempt;
        let before = real.script_calls();
        let result = run(limiter, real, arrivals, progress);
        let cleanup = real.cleanup();
        let trace = match result {
            Ok(t) => t,
            Err(e) => return Err(stopped(scenario, variant, real, before, arrivals, e, cleanup)),
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
    // Every attempt differed: report the last one, and no "retried" note.
    check.retried_after = None;
    Ok(check)
}

/// The error of a run that stopped: where, why, and what became of its keys.
fn stopped(
    scenario: &str,
    variant: &str,
    real: &RealRedis,
    before: u64,
    arrivals: &[Arrival],
    e: Error,
    cleanup: Result<u64>,
) -> Error {
    let done = (real.script_calls() - before) as usize;
    let mut where_ = format!("scenario `{scenario}`, script `{variant}`: stopped after {done} of {} calls", arrivals.len());
    if let Some(a) = arrivals.get(done) {
        let _ = write!(where_, " (call #{} was subject `{}` at now_ms {})", done + 1, a.key, a.at.as_millis().0);
    }
    let text = |e: &Error| match e {
        Error::Connection(m) | Error::Redis(m) => m.clone(),
        other => other.to_string(),
    };
    let keys = match &cleanup {
        Ok(n) => format!("{n} keys of the run were removed"),
        Err(c) => format!("Its keys under `{}` could not be removed ({})", real.key_prefix(), text(c)),
    };
    let msg = format!("{where_}: {}. {keys}", text(&e).trim_end_matches('.'));
    match e {
        Error::Connection(_) => Error::Connection(msg),
        Error::Redis(_) => Error::Redis(msg),
        _ => Error::Invalid { context: where_, field: "run".into(), reason: format!("{e}; {keys}") },
    }
}

/// Every selected script of a scenario on the emulator and on the server.
pub fn check_scenario(s: &Scenario, seed: u64, real: &mut RealRedis, progress: Progress) -> Result<Vec<ScriptCheck>> {
    let arrivals = s.arrivals(seed)?;
    let mut out = Vec::new();
    for v in &s.scripts {
        let limiter = s.limiter(v)?;
        let (emulated, _, _) = run_on_emulator(s, v, &arrivals, progress)?;
        out.push(check_script(&s.name, &limiter, &arrivals, &emulated, real, progress)?);
    }
    Ok(out)
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
        s.scripts = Variant::ALL.iter().map(|&v| crate::spec::builtin::spec(v)).collect();
        let seed = seed.unwrap_or(s.seed);
        checks.extend(check_scenario(&s, seed, real, progress)?);
    }
    Ok(RedisCheck { backend: real.describe(), checks, show_speed: false })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::Params;
    use crate::sim::Record;

    fn trace(decisions: &[bool]) -> Trace {
        Trace {
            name: "seed_fixed_window".into(),
            variant: Some(Variant::SEED_FIXED_WINDOW),
            params: Params::new(1, 1000),
            keys: vec!["u".into()],
            phases: vec![String::new()],
            records: decisions
                .iter()
                .enumerate()
                .map(|(i, &a)| Record {
                    at: crate::clock::Micros(i as i64 * 1000),
                    now_ms: i as i64,
                    key: 0,
                    phase: 0,
                    cost: 1,
                    decision: Decision::allowed_only(a),
                })
                .collect(),
            elapsed_secs: 0.0,
        }
    }

    #[test]
    fn finds_the_first_differing_call() {
        assert_eq!(first_divergence(&trace(&[true, false]), &trace(&[true, false])), None);
        let d = first_divergence(&trace(&[true, false, true]), &trace(&[true, true, false])).unwrap();
        assert_eq!((d.call, d.now_ms, d.subject.as_str()), (2, 1, "u"));
        assert!(!d.emulator.allowed && d.redis.allowed);
        assert_eq!(
            d.to_string(),
            "call #2 (subject `u`, now_ms 1, cost 1): emulator {allowed 0, remaining -1, retry_after_ms -1, \
             reset_after_ms -1}, redis {allowed 1, remaining -1, retry_after_ms -1, reset_after_ms -1}"
        );
    }
}
