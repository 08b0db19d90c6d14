//! The simulator: drives arrivals through a limiter's script on a [`Backend`] under the arrivals' own
//! clock, and records every decision for [`crate::metrics`] and the reports.
//!
//! The runner is deliberately dumb: it neither models nor judges. For each [`Arrival`] it sets the
//! backend's clock to the arrival's time (the emulator's virtual clock; a real server ignores it),
//! passes the same time as `now_ms` in ARGV (the script contract), runs the script and reads the reply
//! into a [`Decision`]. Judging (overshoot, false allows, retry_after) happens afterwards on the
//! [`Trace`], so one run can be measured many ways.
//!
//! Defaults, in one place: the backend is a fresh [`EmulatedBackend`] on the scenario's start time;
//! subject keys are [`subject_key`](crate::limiter::subject_key) (`rate:{user42}`) behind the backend's key prefix; a progress bar
//! appears only on runs of at least [`PROGRESS_MIN`] calls and only when stderr is a terminal.
pub mod acc;
pub mod coarse;
pub mod decisions_file;
pub mod fanout;
pub mod feed;
pub mod header_summary;
pub mod parallel;
pub mod replay_file;
pub mod scenario;
pub mod standard;
pub mod stream;

pub use scenario::Scenario;

use std::io::IsTerminal;

use crate::backend::emulated::EmulatedBackend;
use crate::backend::Backend;
use crate::limiter::{Decision, Limiter};
use crate::spec::exec::{CallRecord, Session};
use crate::traffic::Arrival;
use feed::{Chunk, Feed, Shard, Step};
use limitlab_emulator::clock::Stopwatch;
use limitlab_emulator::{Error, Result};

pub use crate::record::{Record, Trace};

/// Runs shorter than this never show a progress bar: they finish before one would be useful.
pub const PROGRESS_MIN: usize = 200_000;

/// How a run reports progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Progress {
    /// A bar on stderr for long runs when stderr is a terminal (the default).
    #[default]
    Auto,
    /// Never draw anything (tests, JSON output piped elsewhere).
    Off,
}

/// The script, on the emulator a run is using, asked "what if" about the request just decided
/// (see [`crate::limiter::honesty`]): handed to the callback of `drive` with each decision.
pub(crate) struct Prober<'a> {
    limiter: &'a Limiter,
    backend: &'a mut dyn Backend,
    session: &'a mut Session,
    /// Wall-clock seconds spent asking, which the run's own time leaves out.
    asked_secs: &'a mut f64,
}

impl Prober<'_> {
    /// Whether the run can ask: it runs on an emulator, whose keyspace can be put back.
    pub fn can_ask(&mut self) -> bool {
        self.backend.emulated().is_some()
    }

    /// The decisions of `subject`'s requests of `costs` at `at_ms`, everything put back afterwards
    /// ([`crate::limiter::honesty::ask_script`]); an error when the run is not on an emulator.
    pub fn ask(&mut self, subject: &str, at_ms: i64, costs: &[u64]) -> Result<Vec<Decision>> {
        match self.backend.emulated() {
            Some(b) => {
                let watch = Stopwatch::start();
                let out = crate::limiter::honesty::ask_script(self.limiter, b, self.session, subject, at_ms, costs);
                *self.asked_secs += watch.elapsed_secs();
                out
            }
            None => Err(Error::Invalid {
                context: self.limiter.name().to_string(),
                field: "what if".into(),
                reason: "only a run on the emulator can be asked what if".into(),
            }),
        }
    }
}

/// The loop under [`run`] and [`stream::run_streaming`]: each request of `chunks` whose subject is
/// `shard`'s, in order, through `limiter`'s script on `backend`, each decision handed to `each`
/// with its step, its subject's name, its request number in the run (from 1, counting every
/// shard's), when `recording` the calls the request made with their raw replies (empty otherwise),
/// and a [`Prober`] to ask the script about it. Keeps no record itself; returns the wall-clock
/// seconds of the loop, less the time the prober spent asking.
///
/// A script error reply (or a reply of the wrong shape) stops the run: it means the script or the
/// backend is broken, which no metric should paper over. The error names the script, the call, the
/// subject and the time, and comes with the failing step's position in the run (from 0, counting
/// every shard's steps), which tells which of several shards' errors came first.
#[allow(clippy::too_many_arguments)]
pub(crate) fn drive<C: std::borrow::Borrow<Chunk>>(
    limiter: &Limiter,
    backend: &mut dyn Backend,
    chunks: impl Iterator<Item = C>,
    shard: Shard,
    bar: Option<&indicatif::ProgressBar>,
    recording: bool,
    mut each: impl FnMut(&Record, &Step, &str, u64, &[CallRecord], &mut Prober<'_>) -> Result<()>,
) -> std::result::Result<f64, (u64, Error)> {
    let name = limiter.name();
    let weighted = limiter.takes_cost();
    let mut session = if recording { Session::recording() } else { limiter.session() };
    let watch = Stopwatch::start();
    let mut asked_secs = 0.0;
    // Requests and steps before this one, every shard's counted.
    let (mut i, mut pos) = (0usize, 0u64);
    for chunk in chunks {
        for (step, subject) in chunk.borrow().iter() {
            pos += 1;
            if !shard.owns(step) {
                i += usize::from(step.op == crate::traffic::Op::Request);
                continue;
            }
            let failed = |e: Error| (pos - 1, e);
            let now_ms = step.at.as_millis().0;
            limiter.check_call(now_ms, step.cost).map_err(failed)?;
            backend.set_time_ms(now_ms);
            // Script, connection and I/O errors say where themselves; any other is put at the call.
            let at = |e: Error, what: &str, field: &str| match e {
                e @ (Error::Script { .. } | Error::Connection(_) | Error::Io { .. }) => e,
                e => Error::Invalid {
                    context: format!("{name}: {what}call #{} (subject `{subject}`, now_ms {now_ms})", i + 1),
                    field: field.into(),
                    reason: e.to_string(),
                },
            };
            if step.op != crate::traffic::Op::Request {
                // A lifecycle operation: played, not decided; it makes no record.
                limiter
                    .op(backend, &mut session, step.op, subject, now_ms, step.cost)
                    .map_err(|e| failed(at(e, &format!("{} at ", step.op.name()), "op")))?;
                if let Some(c) = session.record.as_mut() {
                    c.clear();
                }
                continue;
            }
            let decision = limiter
                .call(backend, &mut session, subject, now_ms, step.cost)
                .map_err(|e| failed(at(e, "", "reply")))?;
            let cost = if weighted { step.cost } else { 1 };
            let record = Record { at: step.at, now_ms, key: step.subject, phase: step.phase, cost, decision };
            // The calls are taken out while `each` runs: the prober's requests are not recorded.
            let mut calls = session.record.take();
            let mut prober =
                Prober { limiter, backend: &mut *backend, session: &mut session, asked_secs: &mut asked_secs };
            each(&record, step, subject, i as u64 + 1, calls.as_deref().unwrap_or(&[]), &mut prober).map_err(failed)?;
            if let Some(c) = calls.as_mut() {
                c.clear();
            }
            session.record = calls;
            i += 1;
        }
        if let Some(b) = bar {
            b.set_position(i as u64);
        }
    }
    Ok((watch.elapsed_secs() - asked_secs).max(0.0))
}

/// Runs `arrivals`, in the order given, through `limiter`'s script on `backend`, and keeps every
/// decision (see `drive` for errors).
pub fn run(limiter: &Limiter, backend: &mut dyn Backend, arrivals: &[Arrival], progress: Progress) -> Result<Trace> {
    run_partial(limiter, backend, arrivals, progress).map_err(|(_, e)| e)
}

/// [`run`], whose error also says how many arrivals had been decided before it (the first
/// `done` of `arrivals`; the next one failed).
pub fn run_partial(
    limiter: &Limiter,
    backend: &mut dyn Backend,
    arrivals: &[Arrival],
    progress: Progress,
) -> std::result::Result<Trace, (usize, crate::Error)> {
    let mut records = Vec::with_capacity(arrivals.len());
    let bar = progress_bar(arrivals.len(), progress, limiter.name());
    let mut feed = Feed::arrivals(arrivals);
    let driven = drive(limiter, backend, feed.by_ref(), Shard::ALL, bar.as_ref(), false, |r, _, _, _, _, _| {
        records.push(*r);
        Ok(())
    });
    let elapsed_secs = match driven {
        Ok(s) => s,
        Err((_, e)) => {
            if let Some(b) = bar {
                b.abandon();
            }
            return Err((records.len(), e));
        }
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let (keys, phases) = feed.into_names();
    Ok(Trace {
        name: limiter.name().to_string(),
        variant: limiter.variant(),
        params: limiter.params(),
        keys,
        phases,
        records,
        elapsed_secs,
    })
}

/// Runs `arrivals` on a fresh emulator whose clock starts at the first arrival (or `start_ms`).
pub fn run_emulated(
    limiter: &Limiter,
    arrivals: &[Arrival],
    start_ms: i64,
    progress: Progress,
) -> Result<(Trace, EmulatedBackend)> {
    let mut backend = EmulatedBackend::default();
    backend.set_time_ms(start_ms);
    let trace = run(limiter, &mut backend, arrivals, progress)?;
    Ok((trace, backend))
}

fn progress_bar(len: usize, progress: Progress, name: &str) -> Option<indicatif::ProgressBar> {
    if progress == Progress::Off || len < PROGRESS_MIN || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(len as u64);
    if let Ok(style) = indicatif::ProgressStyle::with_template("{prefix:>20} {bar:40} {pos}/{len} ({eta})") {
        bar.set_style(style);
    }
    bar.set_prefix(name.to_string());
    Some(bar)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::{Params, Variant};
    use limitlab_emulator::clock::{Micros, DEFAULT_START};

    fn arrivals(times_ms: &[i64], key: &str) -> Vec<Arrival> {
        times_ms
            .iter()
            .map(|&t| Arrival {
                at: Micros((DEFAULT_START.0 + t) * 1000),
                key: key.into(),
                cost: 1,
                phase: String::new(),
                op: crate::traffic::Op::Request,
            })
            .collect()
    }

    #[test]
    fn records_every_decision_with_the_scripts_view_of_time() {
        let l = Limiter::new(Variant::SEED_FIXED_WINDOW, Params::new(2, 1000)).unwrap();
        let (t, _) = run_emulated(&l, &arrivals(&[0, 1, 2, 1000], "u"), DEFAULT_START.0, Progress::Off).unwrap();
        let allowed: Vec<bool> = t.records.iter().map(|r| r.decision.allowed).collect();
        assert_eq!(allowed, [true, true, false, true]);
        assert_eq!(t.records[3].now_ms, DEFAULT_START.0 + 1000);
        assert_eq!(t.keys, ["u"]);
        assert_eq!(t.phases, [""]);
    }

    #[test]
    fn production_replies_carry_remaining_and_retry_after() {
        let l = Limiter::new(Variant::FIXED_WINDOW, Params::new(1, 1000)).unwrap();
        let (t, _) = run_emulated(&l, &arrivals(&[0, 250], "u"), DEFAULT_START.0, Progress::Off).unwrap();
        assert_eq!(
            t.records[0].decision,
            Decision { allowed: true, remaining: 0, retry_after_ms: -1, reset_after_ms: 1000, granted: -1 }
        );
        assert_eq!(
            t.records[1].decision,
            Decision { allowed: false, remaining: 0, retry_after_ms: 750, reset_after_ms: 750, granted: -1 }
        );
    }
}
