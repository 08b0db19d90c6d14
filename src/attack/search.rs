//! The search: a seeded local search over [`Segment`] patterns, scored on the exact reference
//! model (fast), deterministic from its seed and bounded by a number of evaluations.
//!
//! It starts from a few structured families that a person probing a limiter would try first
//! (bursts on either side of a window boundary, a burst then a greedy run, greedy from various
//! phases of the window, a steady stream) and from random patterns, then repeatedly mutates one of
//! the best few (shift a segment, resize it, change its spacing or kind, add, drop or split one)
//! and keeps a child that scores better than the worst of them. Nothing in it knows which algorithm
//! it attacks.
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::pattern::{build, Built, Kind, Segment};
use super::Goal;
use crate::limiter::Limiter;
use crate::metrics::{max_in_any_window, ExactLog};

/// How many of the best patterns the search keeps and mutates.
const ELITE: usize = 6;
/// Random patterns among the starting ones.
const RANDOM_STARTS: usize = 10;
/// At most this many segments in a pattern.
const MAX_SEGMENTS: usize = 5;

/// What a pattern achieved on the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Score {
    pub calls: u64,
    pub admitted: u64,
    pub max_in_window: u64,
    pub false_rejections: u64,
}

impl Score {
    /// The goal's figure as a fraction (numerator, denominator).
    fn objective(&self, goal: Goal) -> (u64, u64) {
        match goal {
            Goal::Overshoot => (self.max_in_window, 1),
            Goal::FalseRejections => (self.false_rejections, self.calls.max(1)),
        }
    }

    /// Strictly better for `goal`: a higher figure, or the same with fewer requests.
    pub fn beats(&self, other: &Score, goal: Goal) -> bool {
        let (a, b) = (self.objective(goal), other.objective(goal));
        let (l, r) = (a.0 as u128 * b.1 as u128, b.0 as u128 * a.1 as u128);
        l > r || (l == r && self.calls < other.calls)
    }
}

/// Scores built arrivals: the worst window of admissions and the false rejections against an
/// independent exact sliding log (as [`crate::metrics`] defines them).
pub fn score(built: &Built, limiter: &Limiter) -> Score {
    let p = limiter.params();
    let mut admitted: Vec<(i64, u64)> = Vec::with_capacity(built.times_us.len());
    let mut exact = ExactLog::new(p);
    let mut false_rejections = 0;
    for (i, &ok) in built.allowed.iter().enumerate() {
        let ms = built.ms(i);
        if ok {
            admitted.push((ms, 1));
        }
        if exact.decide(0, ms, 1) && !ok {
            false_rejections += 1;
        }
    }
    let (max_in_window, _) = max_in_any_window(&mut admitted, p.window_ms as i64);
    Score { calls: built.times_us.len() as u64, admitted: admitted.len() as u64, max_in_window, false_rejections }
}

/// The best pattern found and how many patterns were scored.
#[derive(Clone, Debug)]
pub struct Best {
    pub segments: Vec<Segment>,
    pub built: Built,
    pub score: Score,
    pub evaluations: u32,
}

/// Searches for the pattern that maximizes `goal` within `budget` requests, scoring
/// `iterations` mutants after the starting patterns.
pub fn search(limiter: &Limiter, goal: Goal, origin_ms: i64, budget: u32, seed: u64, iterations: u32) -> Best {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let space = Space { window: limiter.params().window_ms as i64, limit: limiter.params().limit, budget };
    let mut elite: Vec<(Vec<Segment>, Built, Score)> = Vec::with_capacity(ELITE + 1);
    let mut evaluations = 0u32;
    let mut consider = |segs: Vec<Segment>, elite: &mut Vec<(Vec<Segment>, Built, Score)>| {
        let segs = space.normalize(segs);
        if segs.is_empty() || elite.iter().any(|e| e.0 == segs) {
            return;
        }
        let built = build(&segs, limiter, origin_ms, budget);
        let s = score(&built, limiter);
        evaluations += 1;
        // After every pattern that is at least as good (ties keep the older first).
        let pos = elite.iter().position(|e| s.beats(&e.2, goal)).unwrap_or(elite.len());
        if pos < ELITE {
            elite.insert(pos, (segs, built, s));
            elite.truncate(ELITE);
        }
    };
    for segs in space.starts(goal) {
        consider(segs, &mut elite);
    }
    for _ in 0..RANDOM_STARTS {
        let segs = space.random(&mut rng);
        consider(segs, &mut elite);
    }
    for _ in 0..iterations {
        if elite.is_empty() {
            break;
        }
        // Biased towards the best: the better of two picks.
        let n = elite.len();
        let i = rng.random_range(0..n).min(rng.random_range(0..n));
        let child = space.mutate(&elite[i].0, &mut rng);
        consider(child, &mut elite);
    }
    let (segments, built, score) = elite.into_iter().next().unwrap_or_default();
    Best { segments, built, score, evaluations }
}

/// The shape of the space searched.
struct Space {
    window: i64,
    limit: u64,
    budget: u32,
}

impl Space {
    /// Offsets run over three windows from the origin.
    fn max_at(&self) -> i64 {
        3 * self.window - 1
    }

    /// Segments sorted by start, clamped into the space, empty ones dropped, the total cut to the
    /// budget.
    fn normalize(&self, mut segs: Vec<Segment>) -> Vec<Segment> {
        for s in &mut segs {
            s.at_ms = s.at_ms.clamp(0, self.max_at());
            s.count = s.count.clamp(1, self.budget.max(1));
            s.spacing_us = s.spacing_us.min(self.window as u64 * 1000);
            if s.kind == Kind::Greedy {
                s.spacing_us = 0;
            }
        }
        segs.sort();
        segs.truncate(MAX_SEGMENTS);
        let mut left = self.budget;
        segs.retain_mut(|s| {
            if left == 0 {
                return false;
            }
            s.count = s.count.min(left);
            left -= s.count;
            true
        });
        segs
    }

    /// The structured starting patterns.
    fn starts(&self, goal: Goal) -> Vec<Vec<Segment>> {
        let (w, b) = (self.window, self.budget);
        let l = self.limit.min(b as u64) as u32;
        let half = (b / 2).max(1);
        let mut phases = vec![w - 1, w - (w / 100).max(1), w - (w / 10).max(1), w / 2, 0];
        phases.dedup();
        let mut out = Vec::new();
        for &p in &phases {
            out.push(vec![Segment::greedy(p, b)]);
            out.push(vec![Segment::burst(p, l, 0), Segment::greedy(w, b.saturating_sub(l))]);
            out.push(vec![Segment::burst(p, half, 0), Segment::burst(w, b - half, 0)]);
            out.push(vec![Segment::burst(p, half, 0), Segment::burst(w, b - half, (w as u64 * 1000) / half as u64)]);
        }
        if goal == Goal::FalseRejections {
            for &p in &phases {
                out.push(vec![Segment::burst(0, l, 0), Segment::burst(w + (w - p).min(w - 1), l, 0)]);
                out.push(vec![Segment::greedy(p, l), Segment::burst(p + w, l, 0)]);
            }
        }
        // A steady stream at twice the limit's rate.
        out.push(vec![Segment::burst(0, b, (w as u64 * 1000 / (2 * self.limit)).max(1))]);
        out
    }

    fn random_segment(&self, rng: &mut ChaCha8Rng, max_count: u32) -> Segment {
        let at = rng.random_range(0..=self.max_at());
        let count = rng.random_range(1..=max_count.max(1));
        if rng.random_bool(0.3) {
            Segment::greedy(at, count)
        } else {
            Segment::burst(at, count, self.random_spacing(rng, count))
        }
    }

    fn random_spacing(&self, rng: &mut ChaCha8Rng, count: u32) -> u64 {
        let w_us = self.window as u64 * 1000;
        match rng.random_range(0..5) {
            0 => 0,
            1 => rng.random_range(1..=1000),
            2 => w_us / count.max(1) as u64,
            3 => w_us / (2 * count.max(1) as u64),
            _ => rng.random_range(0..=w_us / count.max(1) as u64 + 1),
        }
    }

    fn random(&self, rng: &mut ChaCha8Rng) -> Vec<Segment> {
        let n = rng.random_range(1..=3);
        (0..n).map(|_| self.random_segment(rng, self.budget / n as u32)).collect()
    }

    /// One random change to one segment, or to the list.
    fn mutate(&self, segs: &[Segment], rng: &mut ChaCha8Rng) -> Vec<Segment> {
        let mut out = segs.to_vec();
        let w = self.window;
        let used: u32 = out.iter().map(|s| s.count).sum();
        let room = self.budget.saturating_sub(used);
        let i = rng.random_range(0..out.len());
        match rng.random_range(0..9) {
            0..=2 => {
                let steps = [1, 2, 3, 5, (w / 100).max(1), (w / 10).max(1), (w / 2).max(1)];
                let d = steps[rng.random_range(0..steps.len())];
                out[i].at_ms += if rng.random_bool(0.5) { d } else { -d };
            }
            3 => {
                let c = out[i].count as i64;
                let steps = [1, 2, 5, (c / 4).max(1), (self.limit as i64 / 10).max(1)];
                let d = steps[rng.random_range(0..steps.len())];
                let grow = rng.random_bool(0.5) && room > 0;
                out[i].count = if grow { (c + d.min(room as i64)) as u32 } else { (c - d).max(1) as u32 };
            }
            4 => {
                let s = out[i].spacing_us;
                out[i].spacing_us = match rng.random_range(0..5) {
                    0 => s * 2 + 1,
                    1 => s / 2,
                    2 => 0,
                    3 => s + 1000,
                    _ => s.saturating_sub(1000),
                };
            }
            5 => {
                out[i].kind = match out[i].kind {
                    Kind::Burst => Kind::Greedy,
                    Kind::Greedy => Kind::Burst,
                };
            }
            6 if out.len() < MAX_SEGMENTS && room > 0 => {
                let seg = self.random_segment(rng, room);
                out.push(seg);
            }
            7 if out.len() > 1 => {
                out.remove(i);
            }
            8 if out[i].count >= 2 && out.len() < MAX_SEGMENTS => {
                let s = out[i];
                let first = s.count / 2;
                let gap = [1, 2, 10, (w / 100).max(1), (w / 10).max(1)][rng.random_range(0..5)];
                out[i].count = first;
                let at = s.at_ms + (s.spacing_us as i64 * first as i64) / 1000 + gap;
                out.push(Segment { at_ms: at, count: s.count - first, ..s });
            }
            _ => {
                let d = if rng.random_bool(0.5) { 1 } else { -1 };
                out[i].at_ms += d;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::{Params, Variant};

    fn origin(w: i64) -> i64 {
        super::super::origin_ms(w as u64)
    }

    #[test]
    fn the_fixed_window_gives_twice_its_limit_at_the_boundary() {
        let l = Limiter::new(Variant::FIXED_WINDOW, Params::new(10, 1000)).unwrap();
        let best = search(&l, Goal::Overshoot, origin(1000), 40, 7, 50);
        assert_eq!(best.score.max_in_window, 20);
        assert_eq!(best.score.calls, 20, "no request wasted");
    }

    #[test]
    fn the_sliding_log_never_goes_above_its_limit() {
        let l = Limiter::new(Variant::SLIDING_LOG, Params::new(10, 1000)).unwrap();
        let best = search(&l, Goal::Overshoot, origin(1000), 40, 7, 100);
        assert_eq!(best.score.max_in_window, 10);
        let fr = search(&l, Goal::FalseRejections, origin(1000), 40, 7, 100);
        assert_eq!(fr.score.false_rejections, 0);
    }

    #[test]
    fn the_same_seed_finds_the_same_pattern() {
        let l = Limiter::new(Variant::SLIDING_WINDOW, Params::new(10, 1000)).unwrap();
        let a = search(&l, Goal::FalseRejections, origin(1000), 40, 3, 60);
        let b = search(&l, Goal::FalseRejections, origin(1000), 40, 3, 60);
        assert_eq!((a.segments, a.built, a.score, a.evaluations), (b.segments, b.built, b.score, b.evaluations));
    }

    #[test]
    fn scores_compare_by_figure_then_by_fewer_requests() {
        let s = |calls, max_in_window, false_rejections| Score { calls, admitted: 0, max_in_window, false_rejections };
        assert!(s(10, 5, 0).beats(&s(4, 4, 0), Goal::Overshoot));
        assert!(s(4, 5, 0).beats(&s(10, 5, 0), Goal::Overshoot));
        assert!(!s(10, 5, 0).beats(&s(10, 5, 0), Goal::Overshoot));
        assert!(s(4, 0, 2).beats(&s(10, 0, 4), Goal::FalseRejections), "1/2 beats 2/5");
    }
}
