//! What a run's decisions mean: per-phase counts, the worst window (overshoot), agreement with an
//! exact limiter, and whether `retry_after` told the truth.
//!
//! Definitions, all per subject and cost-weighted (a call of cost 3 that is admitted counts 3):
//! - **max in window**: the most units admitted in any interval of `window_ms` consecutive
//!   milliseconds of the script's clock (`now_ms`), over every subject. Scripts see whole
//!   milliseconds, so an exact limiter (a sliding log) reaches exactly `limit` and never more.
//! - **overshoot**: max in window / limit. 1.0 is exact; the fixed window's boundary bug is 2.0.
//! - **false allow / false rejection**: the script admitted a call that an exact sliding log with the
//!   same limit and window, run independently on the same arrivals (its own admissions shaping its
//!   own later answers), refused; or the reverse. Counted in calls.
//! - **retry_after truth**: every refusal that names a wait (`retry_after_ms >= 0`) is judged by
//!   [`crate::limiter::honesty::retry_after`], the judgement `limitlab check` makes: the same request
//!   at `now_ms + retry_after_ms`, nothing else arriving in between, must be admitted, and 1 ms
//!   earlier refused. Seed scripts report no wait and are not judged.
//! - **headers truth**: the headers of the first [`HEADER_CHECKS`] decisions that make a promise
//!   (`Retry-After`, `RateLimit` with `t`) are judged by [`crate::limiter::honesty::headers`], as
//!   `check` judges them.
//!
//!   Both ask the script's exact reference model (see [`crate::limiter::Reference`]) when it has
//!   one. A streaming run on the emulator ([`crate::sim::stream`]: `run`, `compare`, `sweep`)
//!   asks a spec without a model its script itself, on the run's keyspace, put back afterwards;
//!   [`measure`], which has only the trace, judges only where there is a model.
//! - **reference mismatches**: calls where the script's reply differs from its own reference model
//!   (should be 0; the property tests enforce it, the count keeps reports honest).
use serde::Serialize;

use crate::backend::Backend;
use crate::limiter::honesty;
use crate::limiter::{Limiter, Params, Reference};
use crate::record::Trace;
use crate::Result;
use limitlab_emulator::Reply;

/// A run judges the headers of this many decisions (the first that make a promise), in
/// `sim`'s running accumulator and [`crate::metrics::measure`] alike: a `RateLimit` promise takes `capacity`
/// requests to judge.
pub const HEADER_CHECKS: u64 = 100;

/// Calls and units in one phase of the traffic.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PhaseCount {
    /// The phase label (`""` when the traffic has none).
    pub phase: String,
    pub calls: u64,
    pub allowed_calls: u64,
    /// Units asked for and units admitted (equal to calls for cost-1 traffic).
    pub units: u64,
    pub allowed_units: u64,
}

/// The measures of one run. See the module documentation for definitions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Metrics {
    pub calls: u64,
    pub allowed_calls: u64,
    pub allowed_units: u64,
    /// Per phase, in order of first appearance.
    pub phases: Vec<PhaseCount>,
    pub max_in_window: u64,
    /// The subject that reached `max_in_window`, and where its worst interval starts (now_ms).
    pub worst_subject: Option<String>,
    pub worst_window_start_ms: Option<i64>,
    pub overshoot: f64,
    pub false_allows: u64,
    pub false_rejections: u64,
    /// Refusals whose `retry_after_ms` was judged, and how many of those were wrong.
    pub retry_checked: u64,
    pub retry_wrong: u64,
    /// Decisions whose headers were judged (at most [`HEADER_CHECKS`]), and how many of those
    /// broke a promise.
    pub headers_checked: u64,
    pub headers_wrong: u64,
    pub reference_mismatches: u64,
}

/// Measures `trace` (made with `limiter`).
pub fn measure(trace: &Trace, limiter: &Limiter) -> Result<Metrics> {
    let params = trace.params;
    let mut phases: Vec<PhaseCount> =
        trace.phases.iter().map(|p| PhaseCount { phase: p.clone(), ..PhaseCount::default() }).collect();
    let mut calls = 0;
    let mut allowed_calls = 0;
    let mut allowed_units = 0;
    for r in &trace.records {
        let p = &mut phases[r.phase as usize];
        p.calls += 1;
        p.units += r.cost;
        calls += 1;
        if r.decision.allowed {
            // A partial grant counts what it granted, not what was asked.
            let units = r.decision.units(r.cost);
            p.allowed_calls += 1;
            p.allowed_units += units;
            allowed_calls += 1;
            allowed_units += units;
        }
    }

    // The worst interval, per subject.
    let mut admitted: Vec<Vec<(i64, u64)>> = vec![Vec::new(); trace.keys.len()];
    for r in &trace.records {
        let units = r.decision.units(r.cost);
        if units > 0 {
            admitted[r.key as usize].push((r.now_ms, units));
        }
    }
    let mut max_in_window = 0;
    let mut worst = None;
    for (k, times) in admitted.iter_mut().enumerate() {
        let (m, start) = max_in_any_window(times, params.window_ms as i64);
        if m > max_in_window {
            max_in_window = m;
            worst = Some((trace.keys[k].clone(), start));
        }
    }

    // False allows and rejections against an independent exact sliding log.
    let mut exact = ExactLog::new(params);
    let (mut false_allows, mut false_rejections) = (0, 0);
    for r in &trace.records {
        let ok = exact.decide(r.key, r.now_ms, r.cost);
        match (r.decision.allowed, ok) {
            (true, false) => false_allows += 1,
            (false, true) => false_rejections += 1,
            _ => {}
        }
    }

    // The script's own model, one per subject so that a "what if" is small. Specs without a model
    // (a user's script) are not judged here, where only the trace is left: a streaming run and
    // `limitlab check` ask their script itself.
    let mut models: Vec<Option<Box<dyn Reference>>> = (0..trace.keys.len()).map(|_| None).collect();
    let (mut retry_checked, mut retry_wrong, mut reference_mismatches) = (0, 0, 0);
    let (mut headers_checked, mut headers_wrong) = (0, 0);
    let reports = limiter.reports();
    let params = limiter.params();
    let redis_keys: Vec<String> = trace.keys.iter().map(|k| crate::limiter::subject_key(k)).collect();
    let records = if limiter.variant().is_some() { trace.records.as_slice() } else { &[] };
    for r in records {
        let redis_key = &redis_keys[r.key as usize];
        let model =
            models[r.key as usize].get_or_insert_with(|| limiter.reference().expect("a shipped script has a model"));
        let cost = r.cost;
        let d = model.decide(redis_key, r.now_ms, cost);
        if d != r.decision {
            reference_mismatches += 1;
        }
        let mut ask = |at: i64, costs: &[u64]| Some(honesty::ask_model(model.as_mut(), redis_key, at, costs));
        if let Some(v) = honesty::retry_after(&r.decision, reports, r.now_ms, cost, &mut ask) {
            retry_checked += 1;
            retry_wrong += u64::from(!v.honest());
        }
        if headers_checked < HEADER_CHECKS {
            if let Some(v) = honesty::headers(&r.decision, reports, &params, r.now_ms, cost, &mut ask) {
                headers_checked += 1;
                headers_wrong += u64::from(!v.honest());
            }
        }
    }

    // Against the trace's policy (one of a spec's several, for `check`), not the limiter's first.
    let overshoot = max_in_window as f64 / trace.params.limit as f64;
    Ok(Metrics {
        calls,
        allowed_calls,
        allowed_units,
        phases,
        max_in_window,
        worst_subject: worst.as_ref().map(|w| w.0.clone()),
        worst_window_start_ms: worst.map(|w| w.1),
        overshoot,
        false_allows,
        false_rejections,
        retry_checked,
        retry_wrong,
        headers_checked,
        headers_wrong,
        reference_mismatches,
    })
}

/// The most units in any interval `[s, s + window)` of integer milliseconds, and the `s` where it is
/// first reached (the time of its first admission). Sorts `times` (usually already sorted) and walks
/// two pointers over it: O(n log n) at worst, O(n) for time-ordered traffic.
pub fn max_in_any_window(times: &mut [(i64, u64)], window: i64) -> (u64, i64) {
    if !times.is_sorted_by_key(|t| t.0) {
        times.sort_by_key(|t| t.0);
    }
    let (mut best, mut best_start) = (0u64, 0i64);
    let mut sum = 0u64;
    let mut lo = 0;
    for hi in 0..times.len() {
        sum += times[hi].1;
        while times[hi].0 - times[lo].0 >= window {
            sum -= times[lo].1;
            lo += 1;
        }
        if sum > best {
            best = sum;
            best_start = times[lo].0;
        }
    }
    (best, best_start)
}

/// The exact limiter the metrics compare against: per subject, admit a call when every interval of
/// `window` milliseconds containing its time would hold at most `limit` units with it. For
/// time-ordered traffic this is the classic sliding log over `(now - window, now]`; a call that goes
/// back in time is checked against the admissions on both sides of it.
///
/// It is exact for every call at most one window behind the newest call of its subject. To keep
/// memory bounded on long runs it forgets admissions more than two windows before that newest call,
/// so a call further back (a trace out of order by more than a window) is judged against what is
/// left.
pub struct ExactLog {
    limit: u64,
    window: i64,
    /// Indexed by subject: subjects are dense indices (interned in order of first appearance).
    subjects: Vec<SubjectLog>,
}

/// One subject's admissions in time order, with running sums so any interval's total is two binary
/// searches away.
struct SubjectLog {
    /// (now_ms, units, units admitted up to and including this entry since the log began).
    entries: std::collections::VecDeque<(i64, u64, u64)>,
    /// The latest time seen (`i64::MIN` before the first call); entries older than
    /// `newest - 2 * window` can no longer matter to any call less than a window behind it and are
    /// dropped.
    newest: i64,
}

impl Default for SubjectLog {
    fn default() -> Self {
        SubjectLog { entries: std::collections::VecDeque::new(), newest: i64::MIN }
    }
}

impl SubjectLog {
    /// Units admitted in `[from, to]`.
    fn sum(&self, from: i64, to: i64) -> u64 {
        let lo = self.entries.partition_point(|e| e.0 < from);
        let hi = self.entries.partition_point(|e| e.0 <= to);
        if hi <= lo {
            return 0;
        }
        let before = if lo == 0 { self.base() } else { self.entries[lo - 1].2 };
        self.entries[hi - 1].2 - before
    }

    /// The running total just before the first entry.
    fn base(&self) -> u64 {
        self.entries.front().map_or(0, |e| e.2 - e.1)
    }
}

impl ExactLog {
    pub fn new(params: Params) -> ExactLog {
        ExactLog { limit: params.limit, window: params.window_ms as i64, subjects: Vec::new() }
    }

    /// Decides one call of `subject` (a dense index: the log keeps a slot for every index up to
    /// the largest seen), and records it when admitted.
    pub fn decide(&mut self, subject: u32, now: i64, cost: u64) -> bool {
        self.judge(subject, now, cost, true)
    }

    /// A lifecycle operation of the client, as an exact limiter takes it: a refund gives back the
    /// newest `units` it holds for the subject (at most what it holds), a reset forgets the
    /// subject, a clear every subject.
    pub fn apply(&mut self, op: crate::traffic::Op, subject: u32, units: u64) {
        use crate::traffic::Op;
        match op {
            Op::Request => {}
            Op::Clear => self.subjects.iter_mut().for_each(|l| l.entries.clear()),
            Op::Reset => {
                if let Some(l) = self.subjects.get_mut(subject as usize) {
                    l.entries.clear();
                }
            }
            Op::Refund => {
                let Some(l) = self.subjects.get_mut(subject as usize) else { return };
                let mut left = units;
                while left > 0 {
                    let Some(last) = l.entries.back_mut() else { break };
                    if last.1 > left {
                        last.1 -= left;
                        last.2 -= left;
                        break;
                    }
                    left -= last.1;
                    l.entries.pop_back();
                }
            }
        }
    }

    /// Whether the call would be admitted, recording nothing (several policies decide together:
    /// a call is recorded in each only when every one admits it).
    pub fn admits(&mut self, subject: u32, now: i64, cost: u64) -> bool {
        self.judge(subject, now, cost, false)
    }

    fn judge(&mut self, subject: u32, now: i64, cost: u64, record: bool) -> bool {
        let (limit, w) = (self.limit, self.window);
        if cost > limit {
            return false;
        }
        let i = subject as usize;
        if i >= self.subjects.len() {
            self.subjects.resize_with(i + 1, SubjectLog::default);
        }
        let log = &mut self.subjects[i];
        let in_order = log.entries.back().is_none_or(|e| e.0 <= now);
        let worst = if in_order {
            log.sum(now - w + 1, now)
        } else {
            // Every interval [s, s + w) with s in [now - w + 1, now]; the total only changes where an
            // admission enters on the right, so those starts and the first one are the candidates.
            let mut worst = log.sum(now - w + 1, now);
            let lo = log.entries.partition_point(|e| e.0 <= now);
            let hi = log.entries.partition_point(|e| e.0 < now + w);
            for i in lo..hi {
                let s = log.entries[i].0 - w + 1;
                worst = worst.max(log.sum(s, s + w - 1));
            }
            worst
        };
        if worst + cost > limit {
            return false;
        }
        if !record {
            return true;
        }
        if cost > 0 {
            let pos = log.entries.partition_point(|e| e.0 <= now);
            let before = if pos == 0 { log.base() } else { log.entries[pos - 1].2 };
            log.entries.insert(pos, (now, cost, before + cost));
            for e in log.entries.iter_mut().skip(pos + 1) {
                e.2 += cost;
            }
        }
        log.newest = log.newest.max(now);
        let horizon = log.newest.saturating_sub(2 * w);
        while log.entries.front().is_some_and(|e| e.0 < horizon) {
            log.entries.pop_front();
        }
        true
    }
}

/// The memory a backend's keys take, as the backend reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemoryUsage {
    pub bytes: u64,
    pub keys: u64,
    /// `MEMORY USAGE` when the backend answers it for every key; otherwise `key sizes`: the key's
    /// name plus its payload (string bytes; hash fields and values; sorted-set members plus 8 bytes
    /// per score; list and set elements), a floor under what Redis really allocates.
    pub method: &'static str,
}

/// Sums the memory of every key under the backend's prefix (SCAN, then `MEMORY USAGE key SAMPLES 0`
/// per key, or the key-size estimate where that command is missing).
pub fn memory_usage(backend: &mut dyn Backend) -> Result<MemoryUsage> {
    let pattern = format!("{}*", backend.key_prefix());
    let mut cursor = b"0".to_vec();
    let (mut bytes, mut keys, mut exact) = (0u64, 0u64, true);
    loop {
        let reply = backend.command(&[b"SCAN", &cursor, b"MATCH", pattern.as_bytes(), b"COUNT", b"1000"])?;
        let Reply::Array(parts) = reply else { return Err(crate::Error::Redis(format!("SCAN replied {reply:?}"))) };
        let (next, page) = match parts.as_slice() {
            [Reply::Bulk(c), Reply::Array(page)] => (c.clone(), page.clone()),
            _ => return Err(crate::Error::Redis(format!("SCAN replied {parts:?}"))),
        };
        for k in page {
            let Reply::Bulk(key) = k else { continue };
            keys += 1;
            match backend.command(&[b"MEMORY", b"USAGE", &key, b"SAMPLES", b"0"])? {
                Reply::Int(n) if n >= 0 => bytes += n as u64,
                _ => {
                    exact = false;
                    bytes += key_size(backend, &key)?;
                }
            }
        }
        if next == b"0" {
            break;
        }
        cursor = next;
    }
    Ok(MemoryUsage { bytes, keys, method: if exact { "MEMORY USAGE" } else { "key sizes" } })
}

/// The key-size estimate of one key (see [`MemoryUsage::method`]).
fn key_size(backend: &mut dyn Backend, key: &[u8]) -> Result<u64> {
    let len = |r: &Reply| match r {
        Reply::Bulk(b) => b.len() as u64,
        _ => 0,
    };
    // Replies keep their RESP3 shape (HGETALL is a map, SMEMBERS a set): flatten them.
    let all = |r: Reply| match r {
        Reply::Array(v) | Reply::Set(v) => v,
        Reply::Map(m) => m.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        _ => Vec::new(),
    };
    let kind = backend.command(&[b"TYPE", key])?;
    let payload = match &kind {
        Reply::Status(t) if t == "string" => match backend.command(&[b"STRLEN", key])? {
            Reply::Int(n) => n.max(0) as u64,
            _ => 0,
        },
        Reply::Status(t) if t == "hash" => all(backend.command(&[b"HGETALL", key])?).iter().map(len).sum(),
        Reply::Status(t) if t == "zset" => {
            let v = all(backend.command(&[b"ZRANGE", key, b"0", b"-1"])?);
            v.iter().map(|m| len(m) + 8).sum()
        }
        Reply::Status(t) if t == "list" => all(backend.command(&[b"LRANGE", key, b"0", b"-1"])?).iter().map(len).sum(),
        Reply::Status(t) if t == "set" => all(backend.command(&[b"SMEMBERS", key])?).iter().map(len).sum(),
        _ => 0,
    };
    Ok(key.len() as u64 + payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_window_is_exact_and_cost_weighted() {
        let mut t = vec![(0, 1), (999, 1), (1000, 1), (1998, 3), (1999, 1)];
        assert_eq!(max_in_any_window(&mut t, 1000), (5, 999), "[999, 1998]: 1 + 1 + 3");
        let mut t = vec![(5, 2), (0, 1)];
        assert_eq!(max_in_any_window(&mut t, 1), (2, 5));
        assert_eq!(max_in_any_window(&mut [], 10), (0, 0));
    }

    #[test]
    fn exact_log_admits_limit_per_window_and_checks_both_sides_when_time_goes_back() {
        let mut x = ExactLog::new(Params::new(2, 10));
        assert!(x.decide(0, 100, 1));
        assert!(x.decide(0, 105, 1));
        assert!(!x.decide(0, 109, 1));
        assert!(x.decide(0, 110, 1), "100 left the window (100, 110]");
        assert!(!x.decide(0, 99, 1), "[99, 108] would hold 100, 105 and this one");
        assert!(x.decide(0, 90, 1), "every interval containing 90 ends before 100");
        assert!(x.decide(1, 109, 2), "subjects are independent");
        assert!(!x.decide(1, 200, 3), "more than the limit never fits");
        assert!(x.decide(1, 200, 0));
    }
}
