//! Adversarial worst cases: searches arrival patterns within a request budget for the highest
//! overshoot and, separately, the highest false-rejection rate of one script, then confirms the
//! pattern found on the emulator.
//!
//! The search ([`search`]) scores patterns on the script's exact reference model, which decides as
//! the script does call for call (the property tests hold them to it); the winner's arrivals are
//! then run through the script itself on a fresh emulator ([`crate::sim::run`]) and measured with
//! [`crate::metrics::measure`], and those are the figures reported. Both must agree
//! ([`Found::model_agrees`]).
//!
//! Determinism: one seed drives everything (each goal gets [`crate::traffic::part_seed`] of it);
//! the search is bounded by a number of pattern evaluations, never by the wall clock; nothing
//! measured by the wall clock is reported. The same settings give the same bytes.
//!
//! Defaults: the budget is [`default_budget`] (four times the limit, so a pattern can fill two
//! windows and still probe), [`DEFAULT_ITERATIONS`] mutants after the starting patterns, seed 0.
//! Patterns live in the three windows after [`origin_ms`]; every request has cost 1 and the
//! subject [`pattern::SUBJECT`].
pub mod pattern;
pub mod search;

use serde::Serialize;

use crate::backend::emulated::EmulatedBackend;
use crate::backend::Backend;
use crate::limiter::Limiter;
use crate::metrics::{self, Metrics};
use crate::sim::{self, Progress};
use crate::traffic::Arrival;
use limitlab_emulator::clock::{Micros, DEFAULT_START};
use limitlab_emulator::{Error, Result};

pub use pattern::{Kind, Segment};

/// Mutants scored after the starting patterns, unless told otherwise.
pub const DEFAULT_ITERATIONS: u32 = 400;
/// The largest request budget accepted.
pub const MAX_BUDGET: u32 = 100_000;
/// The most iterations accepted.
pub const MAX_ITERATIONS: u32 = 1_000_000;

/// Four times the limit (at least 8, at most [`MAX_BUDGET`]).
pub fn default_budget(limit: u64) -> u32 {
    limit.saturating_mul(4).clamp(8, MAX_BUDGET as u64) as u32
}

/// What a search maximizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Goal {
    /// The most units admitted in any interval of one window, over the limit.
    Overshoot,
    /// Calls refused that an exact sliding log (run on the same arrivals) admits, per call.
    FalseRejections,
}

impl Goal {
    pub const ALL: [Goal; 2] = [Goal::Overshoot, Goal::FalseRejections];

    /// Used in file names: `overshoot`, `false_rejections`.
    pub fn name(self) -> &'static str {
        match self {
            Goal::Overshoot => "overshoot",
            Goal::FalseRejections => "false_rejections",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Goal::Overshoot => "Highest overshoot",
            Goal::FalseRejections => "Highest false-rejection rate",
        }
    }
}

/// A validated attack.
#[derive(Clone, Debug)]
pub struct Settings {
    pub limiter: Limiter,
    pub budget: u32,
    pub seed: u64,
    pub iterations: u32,
}

impl Settings {
    /// Checks the budget and iterations, and that the script accepts every time the search may
    /// use (GCRA bounds `now_ms` by its ticks per ms).
    pub fn new(limiter: Limiter, budget: u32, seed: u64, iterations: u32) -> Result<Settings> {
        let invalid =
            |field: &str, reason: String| Error::Invalid { context: "attack".into(), field: field.into(), reason };
        if budget == 0 || budget > MAX_BUDGET {
            return Err(invalid("budget", format!("{budget} is not a number of requests from 1 to {MAX_BUDGET}")));
        }
        if iterations > MAX_ITERATIONS {
            return Err(invalid("iterations", format!("{iterations} is more than {MAX_ITERATIONS}")));
        }
        let w = limiter.params().window_ms as i64;
        let last = origin_ms(limiter.params().window_ms)
            .checked_add(w.saturating_mul(pattern::SPAN_WINDOWS))
            .ok_or_else(|| invalid("window", format!("{w} ms is too long for the search's clock")))?;
        limiter.check_call(last, 1)?;
        Ok(Settings { limiter, budget, seed, iterations })
    }
}

/// Where a pattern's offset 0 is: the first window boundary at or after [`DEFAULT_START`].
pub fn origin_ms(window_ms: u64) -> i64 {
    let w = window_ms.max(1) as i64;
    DEFAULT_START.0.div_euclid(w) * w + if DEFAULT_START.0.rem_euclid(w) == 0 { 0 } else { w }
}

/// What one goal's search found, confirmed on the emulator.
#[derive(Clone, Debug)]
pub struct Found {
    pub goal: Goal,
    pub segments: Vec<Segment>,
    pub arrivals: Vec<Arrival>,
    /// Each arrival's decision by the script on the emulator.
    pub allowed: Vec<bool>,
    /// The emulator run, measured.
    pub metrics: Metrics,
    /// The model's figures agree with the emulator's (they always should).
    pub model_agrees: bool,
    /// Patterns scored (and, for a scaled search, the one built at the policy).
    pub evaluations: u32,
    /// The requests those patterns sent, in all.
    pub requests: u64,
}

/// Searches both goals and confirms each winner on the emulator.
pub fn attack(s: &Settings) -> Result<Vec<Found>> {
    attack_at(s, None)
}

/// [`attack`] with the search run on `small`, the same spec at a smaller policy (the same window):
/// each goal's winner is scaled up to `s`'s policy (every segment's count multiplied by the ratio
/// of the limits, its spacing divided by it, its start kept), built and trimmed at `s`'s policy, and
/// confirmed on the emulator there. The figures reported are those of the policy of `s`.
pub fn attack_scaled(s: &Settings, small: &Settings) -> Result<Vec<Found>> {
    attack_at(s, Some(small))
}

/// `segments` with their counts multiplied by `num / den` and their spacings divided by it
/// (rounded to the nearest, each count at least 1 and at most `budget`).
pub fn scale_segments(segments: &[Segment], num: u64, den: u64, budget: u32) -> Vec<Segment> {
    let (num, den) = (num.max(1) as u128, den.max(1) as u128);
    segments
        .iter()
        .map(|s| Segment {
            count: ((s.count as u128 * num + den / 2) / den).clamp(1, budget.max(1) as u128) as u32,
            spacing_us: ((s.spacing_us as u128 * den + num / 2) / num) as u64,
            ..*s
        })
        .collect()
}

fn attack_at(s: &Settings, small: Option<&Settings>) -> Result<Vec<Found>> {
    let origin = origin_ms(s.limiter.params().window_ms);
    let mut out = Vec::with_capacity(2);
    for (i, goal) in Goal::ALL.into_iter().enumerate() {
        let seed = crate::traffic::part_seed(s.seed, i as u64);
        let (segments, built, score, evaluations, requests) = match small {
            None => {
                let best = search::search(&s.limiter, goal, origin, s.budget, seed, s.iterations);
                (best.segments, best.built, best.score, best.evaluations, best.requests)
            }
            Some(small) => {
                let best = search::search(&small.limiter, goal, origin, small.budget, seed, small.iterations);
                let segs =
                    scale_segments(&best.segments, s.limiter.params().limit, small.limiter.params().limit, s.budget);
                let built = pattern::build(&segs, &s.limiter, origin, s.budget);
                let sent = built.len() as u64;
                let (segs, built, score) = search::trim(segs, built, &s.limiter, goal, origin, s.budget);
                (segs, built, score, best.evaluations + 1, best.requests + sent)
            }
        };
        let arrivals: Vec<Arrival> = built
            .times_us
            .iter()
            .map(|&t| Arrival {
                at: Micros(origin * 1000 + t),
                key: pattern::SUBJECT.into(),
                cost: 1,
                phase: String::new(),
                op: crate::traffic::Op::Request,
            })
            .collect();
        let (metrics, allowed) = confirm(&s.limiter, &arrivals)?;
        let model_agrees = allowed == built.allowed
            && metrics.max_in_window == score.max_in_window
            && metrics.false_rejections == score.false_rejections
            && metrics.reference_mismatches == 0;
        out.push(Found { goal, segments, arrivals, allowed, metrics, model_agrees, evaluations, requests });
    }
    Ok(out)
}

/// Runs `arrivals` through the script on a fresh emulator and measures them.
pub fn confirm(limiter: &Limiter, arrivals: &[Arrival]) -> Result<(Metrics, Vec<bool>)> {
    let mut backend = EmulatedBackend::default();
    if let Some(a) = arrivals.first() {
        backend.set_time_ms(a.at.as_millis().0);
    }
    let trace = sim::run(limiter, &mut backend, arrivals, Progress::Off)?;
    let m = metrics::measure(&trace, limiter)?;
    Ok((m, trace.records.iter().map(|r| r.decision.allowed).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::{Params, Variant};

    #[test]
    fn the_origin_is_a_window_boundary_at_or_after_the_default_start() {
        assert_eq!(origin_ms(1000), DEFAULT_START.0);
        let o = origin_ms(7);
        assert_eq!(o % 7, 0);
        assert!((DEFAULT_START.0..DEFAULT_START.0 + 7).contains(&o));
    }

    #[test]
    fn settings_are_checked() {
        let l = Limiter::new(Variant::FIXED_WINDOW, Params::new(10, 1000)).unwrap();
        assert!(Settings::new(l.clone(), 0, 0, 10).is_err());
        assert!(Settings::new(l.clone(), MAX_BUDGET + 1, 0, 10).is_err());
        assert!(Settings::new(l, 40, 0, 10).is_ok());
        let g = Limiter::new(Variant::GCRA, Params::new(6007, 1000)).unwrap();
        assert!(Settings::new(g, 40, 0, 10).is_err(), "GCRA's ticks overflow at this rate");
    }

    #[test]
    fn the_winner_is_confirmed_on_the_emulator() {
        let l = Limiter::new(Variant::SLIDING_WINDOW, Params::new(10, 1000)).unwrap();
        let found = attack(&Settings::new(l, 40, 1, 60).unwrap()).unwrap();
        assert_eq!(found.len(), 2);
        for f in &found {
            assert!(f.model_agrees, "{:?}", f.goal);
            assert_eq!(f.arrivals.len(), f.metrics.calls as usize);
        }
        assert!(found[0].metrics.overshoot >= 1.8, "{}", found[0].metrics.overshoot);
        assert!(found[1].metrics.false_rejections > 0);
    }
}
