//! The metrics of a run, one decision at a time: what [`crate::metrics::measure`] computes from a
//! whole trace, without keeping the trace (the tests in [`super::stream`] compare the two on every
//! standard scenario). Calls must come in time order, which every traffic source produces.
use crate::metrics::HEADER_CHECKS;
use std::collections::VecDeque;

use super::feed::Shard;
use super::Record;
use crate::limiter::honesty;
use crate::limiter::{Decision, Limiter, Params, Reference};
use crate::metrics::{Metrics, PhaseCount};
use crate::spec::Reports;
use limitlab_emulator::{Error, Result};

/// One subject's admitted units over the last `window_ms` of its script clock: the running
/// version of [`crate::metrics::max_in_any_window`].
#[derive(Default)]
pub(super) struct SubjectWindow {
    recent: Recent,
    /// The units of `recent`.
    sum: u64,
    pub(super) best: u64,
    pub(super) best_start: i64,
}

/// A subject's admissions `(now_ms, units)` not yet `window_ms` behind its newest. Most subjects
/// of a large run never have two admissions within one window, so a single one is kept inline:
/// no allocation, and no second cache miss, for them.
#[derive(Default)]
enum Recent {
    #[default]
    Empty,
    One(i64, u64),
    Many(VecDeque<(i64, u64)>),
}

impl SubjectWindow {
    pub(super) fn admit(&mut self, now: i64, units: u64, window: i64) {
        self.sum += units;
        let oldest = match &mut self.recent {
            Recent::Empty => {
                self.recent = Recent::One(now, units);
                now
            }
            Recent::One(t, u) if now - *t >= window => {
                self.sum -= *u;
                self.recent = Recent::One(now, units);
                now
            }
            Recent::One(t, u) => {
                let first = *t;
                self.recent = Recent::Many(VecDeque::from([(first, *u), (now, units)]));
                first
            }
            Recent::Many(d) => {
                d.push_back((now, units));
                while let Some(&(t, u)) = d.front() {
                    if now - t < window {
                        break;
                    }
                    self.sum -= u;
                    d.pop_front();
                }
                // The admission just pushed is never evicted (`window` is at least 1).
                d.front().map_or(now, |f| f.0)
            }
        };
        if self.sum > self.best {
            self.best = self.sum;
            self.best_start = oldest;
        }
    }
}

/// What [`MetricsAcc::push`] found about one call beyond the counts (for `run --decisions`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Judged {
    /// Whether the exact sliding log admits the call (as given to [`MetricsAcc::push`]).
    pub exact_admits: bool,
    /// For a refusal whose `retry_after` was judged ([`honesty::retry_after`]): whether it held
    /// (`false` counts in `retry_wrong`). `None`: not judged.
    pub retry_after_honest: Option<bool>,
    /// For a decision whose headers were judged ([`honesty::headers`]): whether their promises
    /// held (`false` counts in `headers_wrong`). `None`: not judged.
    pub headers_honest: Option<bool>,
}

/// Asks the script itself about the subject just decided (an [`honesty::Ask`] that can fail):
/// what a run on an emulator hands [`MetricsAcc::push_asking`].
pub type ScriptAsk<'a> = dyn FnMut(i64, &[u64]) -> Result<Vec<Decision>> + 'a;

/// The metrics of a run, one decision at a time. Feed it every [`Record`] in call order with the
/// exact log's verdict and its subject's name, then [`MetricsAcc::finish`].
///
/// A run split by subject across threads ([`Shard`]) has one per shard, each fed its own subjects'
/// decisions in call order; [`MetricsAcc::finish_shards`] then gives what one accumulator fed every
/// decision gives: the counts are sums, the worst window is per subject, and the headers' checks
/// are the first [`HEADER_CHECKS`] of the run by request number.
pub struct MetricsAcc {
    params: Params,
    reports: Reports,
    shard: Shard,
    /// The subject of each row of `windows`, when the rows are a shard's own ([`Shard::row`]).
    row_subjects: Vec<u32>,
    calls: u64,
    allowed_calls: u64,
    allowed_units: u64,
    phases: Vec<PhaseCount>,
    windows: Vec<SubjectWindow>,
    /// The script's own model, one for every subject: a call only touches its subject's keys, and
    /// the judgements ask it "what if" in a trial ([`honesty::ask_model`]), which undoes its changes.
    model: Option<Box<dyn Reference>>,
    false_allows: u64,
    false_rejections: u64,
    retry_checked: u64,
    retry_wrong: u64,
    /// The headers' checks (request number, whether their promises held): the first
    /// [`HEADER_CHECKS`] of this accumulator's decisions that had one.
    header_checks: Vec<(u64, bool)>,
    reference_mismatches: u64,
    /// The newest `now_ms` seen: arrivals must come in time order.
    newest: i64,
    /// `rate:{subject}` of the current call.
    key: String,
}

impl MetricsAcc {
    pub fn new(limiter: &Limiter) -> MetricsAcc {
        MetricsAcc::sharded(limiter, Shard::ALL)
    }

    /// An accumulator for `shard`'s subjects only.
    pub fn sharded(limiter: &Limiter, shard: Shard) -> MetricsAcc {
        MetricsAcc {
            params: limiter.params(),
            reports: limiter.reports(),
            shard,
            row_subjects: Vec::new(),
            calls: 0,
            allowed_calls: 0,
            allowed_units: 0,
            phases: Vec::new(),
            windows: Vec::new(),
            model: limiter.reference(),
            false_allows: 0,
            false_rejections: 0,
            retry_checked: 0,
            retry_wrong: 0,
            header_checks: Vec::new(),
            reference_mismatches: 0,
            newest: i64::MIN,
            key: String::new(),
        }
    }

    /// Counts one decision, request number `request` of the run (from 1). `exact` is whether an
    /// exact sliding log with the same limit and window, run on the same calls (each counted as
    /// `r.cost`), admits this one; `subject` is the name behind `r.key`. Fails on a call earlier
    /// than the one before it (the running worst window needs time order). Its promises are judged
    /// on the script's model, when it has one.
    pub fn push(&mut self, r: &Record, request: u64, exact: bool, subject: &str) -> Result<Judged> {
        self.push_asking(r, request, exact, subject, r.key, None)
    }

    /// [`MetricsAcc::push`], judging the decision's promises ([`honesty`]) on the script's model
    /// when it has one, else by asking the script itself through `script` (a run on an emulator).
    /// Without either they are not judged. An error asking the script stops the run, as an error
    /// of the run's own requests does. `row` is the subject's row in this accumulator's shard
    /// ([`Shard::row`]; `r.key` for a single shard).
    pub fn push_asking(
        &mut self,
        r: &Record,
        request: u64,
        exact: bool,
        subject: &str,
        row: u32,
        mut script: Option<&mut ScriptAsk<'_>>,
    ) -> Result<Judged> {
        if r.now_ms < self.newest {
            return Err(Error::Invalid {
                context: format!("call #{request} (subject `{subject}`)"),
                field: "now_ms".into(),
                reason: format!(
                    "{} is before the previous call's {}: a streaming run needs arrivals in time order",
                    r.now_ms, self.newest
                ),
            });
        }
        self.newest = r.now_ms;
        let (k, ph) = (row as usize, r.phase as usize);
        if ph >= self.phases.len() {
            self.phases.resize_with(ph + 1, PhaseCount::default);
        }
        if k >= self.windows.len() {
            self.windows.resize_with(k + 1, SubjectWindow::default);
            if self.shard.count > 1 {
                // A shard's rows come in order of first appearance, one new row at a time.
                self.row_subjects.resize(k + 1, r.key);
            }
        }
        let p = &mut self.phases[ph];
        p.calls += 1;
        p.units += r.cost;
        self.calls += 1;
        if r.decision.allowed {
            // A partial grant counts what it granted, not what was asked.
            let units = r.decision.units(r.cost);
            p.allowed_calls += 1;
            p.allowed_units += units;
            self.allowed_calls += 1;
            self.allowed_units += units;
            if units > 0 {
                self.windows[k].admit(r.now_ms, units, self.params.window_ms as i64);
            }
        }
        match (r.decision.allowed, exact) {
            (true, false) => self.false_allows += 1,
            (false, true) => self.false_rejections += 1,
            _ => {}
        }
        self.key.clear();
        self.key.push_str("rate:{");
        self.key.push_str(subject);
        self.key.push('}');
        let mut judged = Judged { exact_admits: exact, retry_after_honest: None, headers_honest: None };
        if let Some(model) = self.model.as_mut() {
            if model.decide(&self.key, r.now_ms, r.cost) != r.decision {
                self.reference_mismatches += 1;
            }
        } else if script.is_none() {
            return Ok(judged);
        }
        let d = &r.decision;
        let retry = honesty::promises_retry(d, self.reports);
        let headers = (self.header_checks.len() as u64) < HEADER_CHECKS && honesty::promises_headers(d, self.reports);
        if !retry && !headers {
            return Ok(judged);
        }
        let mut failed: Option<Error> = None;
        let (model, key) = (&mut self.model, &self.key);
        let mut ask = |at: i64, costs: &[u64]| -> Option<Vec<Decision>> {
            if let Some(m) = model.as_deref_mut() {
                return Some(honesty::ask_model(m, key, at, costs));
            }
            match script.as_mut()?(at, costs) {
                Ok(v) => Some(v),
                Err(e) => {
                    failed.get_or_insert(e);
                    None
                }
            }
        };
        if retry {
            if let Some(v) = honesty::retry_after(d, self.reports, r.now_ms, r.cost, &mut ask) {
                self.retry_checked += 1;
                self.retry_wrong += u64::from(!v.honest());
                judged.retry_after_honest = Some(v.honest());
            }
        }
        if headers {
            if let Some(v) = honesty::headers(d, self.reports, &self.params, r.now_ms, r.cost, &mut ask) {
                self.header_checks.push((request, v.honest()));
                judged.headers_honest = Some(v.honest());
            }
        }
        match failed {
            Some(e) => Err(asked(e, subject, r.now_ms)),
            None => Ok(judged),
        }
    }

    /// The metrics; `subjects` and `phases` name every subject and phase index pushed.
    pub fn finish(self, subjects: &[String], phases: &[String]) -> Metrics {
        MetricsAcc::finish_shards(vec![self], subjects, phases)
    }

    /// The metrics of a run split by subject, one accumulator per shard (see [`MetricsAcc`]):
    /// what one accumulator fed every decision in call order gives.
    pub fn finish_shards(shards: Vec<MetricsAcc>, subjects: &[String], phases: &[String]) -> Metrics {
        let limit = shards.first().map_or(1, |a| a.params.limit);
        let mut m = Metrics {
            calls: 0,
            allowed_calls: 0,
            allowed_units: 0,
            phases: Vec::new(),
            max_in_window: 0,
            worst_subject: None,
            worst_window_start_ms: None,
            overshoot: 0.0,
            false_allows: 0,
            false_rejections: 0,
            retry_checked: 0,
            retry_wrong: 0,
            headers_checked: 0,
            headers_wrong: 0,
            reference_mismatches: 0,
        };
        // The worst window: the largest, and of those the first subject's (in order of first
        // appearance), as a walk over every subject in that order finds it.
        let mut worst: Option<(u64, u32, i64)> = None;
        let mut checks = Vec::new();
        for a in shards {
            m.calls += a.calls;
            m.allowed_calls += a.allowed_calls;
            m.allowed_units += a.allowed_units;
            m.false_allows += a.false_allows;
            m.false_rejections += a.false_rejections;
            m.retry_checked += a.retry_checked;
            m.retry_wrong += a.retry_wrong;
            m.reference_mismatches += a.reference_mismatches;
            checks.extend(a.header_checks);
            if m.phases.len() < a.phases.len() {
                m.phases.resize_with(a.phases.len(), PhaseCount::default);
            }
            for (sum, p) in m.phases.iter_mut().zip(a.phases) {
                sum.calls += p.calls;
                sum.units += p.units;
                sum.allowed_calls += p.allowed_calls;
                sum.allowed_units += p.allowed_units;
            }
            for (j, w) in a.windows.iter().enumerate() {
                let k = if a.shard.count > 1 { a.row_subjects.get(j).copied().unwrap_or(u32::MAX) } else { j as u32 };
                let better = match worst {
                    None => w.best > 0,
                    Some((best, first, _)) => w.best > best || (w.best == best && k < first),
                };
                if better {
                    worst = Some((w.best, k, w.best_start));
                }
            }
        }
        checks.sort_unstable_by_key(|c| c.0);
        checks.truncate(HEADER_CHECKS as usize);
        m.headers_checked = checks.len() as u64;
        m.headers_wrong = checks.iter().filter(|c| !c.1).count() as u64;
        for (c, name) in m.phases.iter_mut().zip(phases) {
            c.phase = name.clone();
        }
        if let Some((best, k, start)) = worst {
            m.max_in_window = best;
            m.worst_subject = Some(subjects.get(k as usize).cloned().unwrap_or_default());
            m.worst_window_start_ms = Some(start);
        }
        m.overshoot = m.max_in_window as f64 / limit as f64;
        m
    }
}

/// An error of the script asked "what if" about `subject`'s decision at `now_ms`, saying so.
fn asked(e: Error, subject: &str, now_ms: i64) -> Error {
    match e {
        Error::Script { reply, at, request } => Error::Script {
            reply,
            at,
            request: format!(
                "{request}, asked what if to judge the promises of subject `{subject}`'s decision at now_ms {now_ms}"
            ),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::{Decision, Variant};

    #[test]
    fn the_worst_window_matches_the_batch_two_pointer_walk() {
        let mut w = SubjectWindow::default();
        let events = [(0, 1), (999, 1), (1000, 1), (1998, 3), (1999, 1)];
        for (t, u) in events {
            w.admit(t, u, 1000);
        }
        let mut v = events.to_vec();
        assert_eq!((w.best, w.best_start), crate::metrics::max_in_any_window(&mut v, 1000));
        // Random admissions, sparse and dense, through the inline and the deque forms.
        let mut rng = crate::traffic::rng(5);
        for window in [1, 2, 10, 100] {
            for _ in 0..200 {
                let mut w = SubjectWindow::default();
                let (mut t, mut events) = (0i64, Vec::new());
                for _ in 0..rand::Rng::random_range(&mut rng, 1..30) {
                    t += rand::Rng::random_range(&mut rng, 0..3 * window);
                    let u = rand::Rng::random_range(&mut rng, 1..4u64);
                    w.admit(t, u, window);
                    events.push((t, u));
                }
                assert_eq!(
                    (w.best, w.best_start),
                    crate::metrics::max_in_any_window(&mut events, window),
                    "{events:?}"
                );
            }
        }
    }

    #[test]
    fn calls_out_of_time_order_are_refused() {
        let l = Limiter::new(Variant::FIXED_WINDOW, Params::new(5, 1000)).unwrap();
        let mut acc = MetricsAcc::new(&l);
        let d = Decision { allowed: true, remaining: 4, retry_after_ms: -1, reset_after_ms: 1000, granted: -1 };
        let r = |now_ms| Record {
            at: limitlab_emulator::clock::Micros(now_ms * 1000),
            now_ms,
            key: 0,
            phase: 0,
            cost: 1,
            decision: d,
        };
        acc.push(&r(10), 1, true, "u").unwrap();
        let e = acc.push(&r(9), 2, true, "u").unwrap_err().to_string();
        assert!(e.contains("needs arrivals in time order"), "{e}");
    }
}
