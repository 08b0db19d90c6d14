//! Streaming runs: arrivals come from an iterator and each decision is folded into the metrics as it
//! is made, so a run holds per-subject state only, never the list of arrivals or of decisions. Ten
//! million requests over a million users fit in memory this way; [`super::run`] plus
//! [`crate::metrics::measure`] would hold both lists (gigabytes).
//!
//! [`MetricsAcc`] computes exactly what [`crate::metrics::measure`] computes from a whole trace
//! (the tests compare them on every standard scenario), given arrivals in time order, which every
//! traffic source produces. [`run_variants`] runs several scripts over the same arrivals, one
//! thread per script (each with its own emulator, built inside its thread).
use std::collections::VecDeque;
use std::io::IsTerminal;

use super::{Progress, Record, Scenario, PROGRESS_MIN};
use crate::backend::emulated::EmulatedBackend;
use crate::backend::Backend;
use crate::clock::Millis;
use crate::limiter::{Flavor, Limiter, Params, Reference, Variant};
use crate::metrics::{ExactLog, Metrics, PhaseCount};
use crate::traffic::{Arrival, TrafficSpec};
use crate::{Error, Result};

/// The arrivals of `s` for `seed`, one at a time. Zipf traffic streams in constant memory; other
/// sources are generated whole first (they are small).
pub fn arrival_stream(s: &Scenario, seed: u64) -> Result<Box<dyn Iterator<Item = Arrival> + Send>> {
    if let TrafficSpec::ZipfUsers(z) = &s.traffic {
        s.traffic.validate().map_err(|e| match e {
            Error::Invalid { context, field, reason } => {
                Error::Invalid { context: format!("{}: [traffic] {context}", s.origin.display()), field, reason }
            }
            other => other,
        })?;
        if let Some(it) = z.iter(Millis(s.start_ms).as_micros(), seed) {
            return Ok(Box::new(it));
        }
    }
    Ok(Box::new(s.arrivals(seed)?.into_iter()))
}

/// One subject's admitted units over the last `window_ms` of its script clock: the running
/// version of [`crate::metrics::max_in_any_window`].
#[derive(Default)]
struct SubjectWindow {
    /// Admissions `(now_ms, units)` not yet `window_ms` behind the newest.
    recent: VecDeque<(i64, u64)>,
    sum: u64,
    best: u64,
    best_start: i64,
}

impl SubjectWindow {
    fn admit(&mut self, now: i64, units: u64, window: i64) {
        self.recent.push_back((now, units));
        self.sum += units;
        while let Some(&(t, u)) = self.recent.front() {
            if now - t < window {
                break;
            }
            self.sum -= u;
            self.recent.pop_front();
        }
        if self.sum > self.best {
            self.best = self.sum;
            self.best_start = self.recent.front().map_or(now, |f| f.0);
        }
    }
}

/// The metrics of a run, one decision at a time. Feed it every [`Record`] in call order with its
/// subject's name, then [`MetricsAcc::finish`].
pub struct MetricsAcc {
    limiter: Limiter,
    params: Params,
    reports_retry: bool,
    calls: u64,
    allowed_calls: u64,
    allowed_units: u64,
    phases: Vec<PhaseCount>,
    windows: Vec<SubjectWindow>,
    exact: ExactLog,
    /// The script's own model, one per subject so that a "what if" copy is small.
    models: Vec<Option<Box<dyn Reference>>>,
    false_allows: u64,
    false_rejections: u64,
    retry_checked: u64,
    retry_wrong: u64,
    reference_mismatches: u64,
    /// The newest `now_ms` seen: arrivals must come in time order.
    newest: i64,
    key: String,
}

impl MetricsAcc {
    pub fn new(limiter: &Limiter) -> MetricsAcc {
        MetricsAcc {
            limiter: limiter.clone(),
            params: limiter.params(),
            reports_retry: limiter.variant().flavor() == Flavor::Ours,
            calls: 0,
            allowed_calls: 0,
            allowed_units: 0,
            phases: Vec::new(),
            windows: Vec::new(),
            exact: ExactLog::new(limiter.params()),
            models: Vec::new(),
            false_allows: 0,
            false_rejections: 0,
            retry_checked: 0,
            retry_wrong: 0,
            reference_mismatches: 0,
            newest: i64::MIN,
            key: String::new(),
        }
    }

    /// Counts one decision. `subject` is the name behind `r.key`, `phase` the label behind
    /// `r.phase`. Fails on a call earlier than the one before it (the running worst window needs
    /// time order).
    pub fn push(&mut self, r: &Record, subject: &str, phase: &str) -> Result<()> {
        if r.now_ms < self.newest {
            return Err(Error::Invalid {
                context: format!("call #{} (subject `{subject}`)", self.calls + 1),
                field: "now_ms".into(),
                reason: format!("{} is before the previous call's {}: a streaming run needs arrivals in time order", r.now_ms, self.newest),
            });
        }
        self.newest = r.now_ms;
        let (k, ph) = (r.key as usize, r.phase as usize);
        if ph >= self.phases.len() {
            self.phases.resize_with(ph + 1, PhaseCount::default);
            self.phases[ph].phase = phase.to_string();
        }
        if k >= self.windows.len() {
            self.windows.resize_with(k + 1, SubjectWindow::default);
            self.models.resize_with(k + 1, || None);
        }
        let p = &mut self.phases[ph];
        p.calls += 1;
        p.units += r.cost;
        self.calls += 1;
        if r.decision.allowed {
            p.allowed_calls += 1;
            p.allowed_units += r.cost;
            self.allowed_calls += 1;
            self.allowed_units += r.cost;
            if r.cost > 0 {
                self.windows[k].admit(r.now_ms, r.cost, self.params.window_ms as i64);
            }
        }
        match (r.decision.allowed, self.exact.decide(r.key, r.now_ms, r.cost)) {
            (true, false) => self.false_allows += 1,
            (false, true) => self.false_rejections += 1,
            _ => {}
        }
        self.key.clear();
        self.key.push_str("rate:{");
        self.key.push_str(subject);
        self.key.push('}');
        let limiter = &self.limiter;
        let model = self.models[k].get_or_insert_with(|| limiter.reference());
        if model.decide(&self.key, r.now_ms, r.cost) != r.decision {
            self.reference_mismatches += 1;
        }
        if self.reports_retry && !r.decision.allowed && r.decision.retry_after_ms >= 0 {
            self.retry_checked += 1;
            let mut copy = model.boxed_clone();
            if !copy.decide(&self.key, r.now_ms + r.decision.retry_after_ms, r.cost).allowed {
                self.retry_wrong += 1;
            }
        }
        Ok(())
    }

    /// The metrics; `subjects` names every subject index pushed.
    pub fn finish(self, subjects: &[String]) -> Metrics {
        let mut max_in_window = 0;
        let mut worst = None;
        for (k, w) in self.windows.iter().enumerate() {
            if w.best > max_in_window {
                max_in_window = w.best;
                worst = Some((subjects.get(k).cloned().unwrap_or_default(), w.best_start));
            }
        }
        Metrics {
            calls: self.calls,
            allowed_calls: self.allowed_calls,
            allowed_units: self.allowed_units,
            phases: self.phases,
            max_in_window,
            worst_subject: worst.as_ref().map(|w| w.0.clone()),
            worst_window_start_ms: worst.map(|w| w.1),
            overshoot: max_in_window as f64 / self.params.limit as f64,
            false_allows: self.false_allows,
            false_rejections: self.false_rejections,
            retry_checked: self.retry_checked,
            retry_wrong: self.retry_wrong,
            reference_mismatches: self.reference_mismatches,
        }
    }
}

/// What a streaming run produced.
#[derive(Clone, Debug)]
pub struct StreamRun {
    pub variant: Variant,
    pub metrics: Metrics,
    /// The subjects, in order of first appearance.
    pub subjects: Vec<String>,
    /// The phase labels, in order of first appearance.
    pub phases: Vec<String>,
    /// Wall-clock seconds of the whole loop (script calls and metrics).
    pub elapsed_secs: f64,
}

/// Runs `arrivals` through `limiter`'s script on `backend`, as [`super::run`] does, folding every
/// decision into [`MetricsAcc`] instead of keeping it. `bar` shows progress when given.
pub fn run_streaming(
    limiter: &Limiter,
    backend: &mut dyn Backend,
    arrivals: impl Iterator<Item = Arrival>,
    bar: Option<&indicatif::ProgressBar>,
) -> Result<StreamRun> {
    let mut acc = MetricsAcc::new(limiter);
    let d = super::drive(limiter, backend, arrivals, bar, |r, a| acc.push(r, &a.key, &a.phase))?;
    let metrics = acc.finish(&d.keys);
    Ok(StreamRun { variant: limiter.variant(), metrics, subjects: d.keys, phases: d.phases, elapsed_secs: d.elapsed_secs })
}

/// Runs each of `variants` over the scenario's arrivals for `seed`, streaming, on a fresh emulator
/// each, up to `jobs` at a time (one thread each). Results come in the order of `variants`,
/// whatever `jobs` is.
pub fn run_variants(s: &Scenario, seed: u64, variants: &[Variant], jobs: usize, progress: Progress) -> Result<Vec<StreamRun>> {
    let total = arrival_stream(s, seed)?.size_hint().0;
    let multi = (progress == Progress::Auto && total >= PROGRESS_MIN && std::io::stderr().is_terminal())
        .then(indicatif::MultiProgress::new);
    let bars: Vec<Option<indicatif::ProgressBar>> = variants
        .iter()
        .map(|v| {
            multi.as_ref().map(|m| {
                let b = m.add(indicatif::ProgressBar::new(total as u64));
                if let Ok(style) = indicatif::ProgressStyle::with_template("{prefix:>20} {bar:40} {pos}/{len} ({eta})") {
                    b.set_style(style);
                }
                b.set_prefix(v.name());
                b
            })
        })
        .collect();
    let out = super::parallel::map_indexed(variants.len(), jobs, |i| -> Result<StreamRun> {
        let v = variants[i];
        let limiter = s.limiter(v)?;
        let mut backend = EmulatedBackend::default();
        backend.set_time_ms(s.start_ms);
        let run = run_streaming(&limiter, &mut backend, arrival_stream(s, seed)?, bars[i].as_ref());
        if let Some(b) = &bars[i] {
            b.finish_and_clear();
        }
        run
    });
    out.into_iter().collect()
}

/// The process's peak resident memory in bytes (VmHWM in /proc/self/status), where there is one.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The process's CPU time so far (user and system), in seconds, from /proc/self/stat (whose clock
/// ticks are USER_HZ, 100 per second on Linux).
pub fn cpu_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let (utime, stime): (u64, u64) = (f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?);
    Some((utime + stime) as f64 / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::standard::{builtin, run_on_emulator, STANDARD};

    #[test]
    fn streaming_metrics_equal_the_batch_metrics_on_every_standard_scenario() {
        for (file, _) in STANDARD {
            let s = builtin(file).unwrap();
            let arrivals = s.arrivals(s.seed).unwrap();
            let runs = run_variants(&s, s.seed, &Variant::ALL, 2, Progress::Off).unwrap();
            for (v, r) in Variant::ALL.iter().zip(&runs) {
                let (trace, m, _) = run_on_emulator(&s, *v, &arrivals, Progress::Off).unwrap();
                assert_eq!(r.variant, *v);
                assert_eq!(r.metrics, m, "{file} {v}");
                assert_eq!(r.subjects, trace.keys, "{file} {v}");
                assert_eq!(r.phases, trace.phases, "{file} {v}");
            }
        }
    }

    #[test]
    fn the_worst_window_matches_the_batch_two_pointer_walk() {
        let mut w = SubjectWindow::default();
        let events = [(0, 1), (999, 1), (1000, 1), (1998, 3), (1999, 1)];
        for (t, u) in events {
            w.admit(t, u, 1000);
        }
        let mut v = events.to_vec();
        assert_eq!((w.best, w.best_start), crate::metrics::max_in_any_window(&mut v, 1000));
    }

    #[test]
    fn process_figures_are_read_from_proc() {
        if std::path::Path::new("/proc/self/status").exists() {
            assert!(peak_rss_bytes().is_some_and(|b| b > 1 << 20));
            assert!(cpu_secs().is_some_and(|c| c >= 0.0));
        }
    }

    #[test]
    fn calls_out_of_time_order_are_refused() {
        let l = Limiter::new(Variant::FIXED_WINDOW, Params::new(5, 1000)).unwrap();
        let mut acc = MetricsAcc::new(&l);
        let d = crate::limiter::Decision { allowed: true, remaining: 4, retry_after_ms: -1, reset_after_ms: 1000 };
        let r = |now_ms| Record { at: crate::clock::Micros(now_ms * 1000), now_ms, key: 0, phase: 0, cost: 1, decision: d };
        acc.push(&r(10), "u", "").unwrap();
        let e = acc.push(&r(9), "u", "").unwrap_err().to_string();
        assert!(e.contains("needs arrivals in time order"), "{e}");
    }
}
