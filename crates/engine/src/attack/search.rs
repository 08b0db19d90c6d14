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
use crate::metrics::ExactLog;

/// Hill climbs the iterations are shared between.
const CLIMBS: u32 = 4;
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
    prefix_scores(built, limiter).last().copied().unwrap_or_default()
}

/// The score of every prefix of the arrivals: element `k - 1` scores the first `k`. Both figures
/// are causal (a prefix's decisions and the exact log's are those of the whole), so one pass
/// computes them all.
pub fn prefix_scores(built: &Built, limiter: &Limiter) -> Vec<Score> {
    let p = limiter.params();
    let window = p.window_ms as i64;
    let mut exact = ExactLog::new(p);
    let mut out = Vec::with_capacity(built.len());
    // Admitted times in order, and the start of the trailing window over them.
    let mut admitted: Vec<i64> = Vec::with_capacity(built.len());
    let mut tail = 0usize;
    let mut s = Score::default();
    for (i, &ok) in built.allowed.iter().enumerate() {
        let ms = built.ms(i);
        s.calls += 1;
        if ok {
            admitted.push(ms);
            while ms - admitted[tail] >= window {
                tail += 1;
            }
            s.admitted += 1;
            s.max_in_window = s.max_in_window.max((admitted.len() - tail) as u64);
        }
        if exact.decide(0, ms, 1) && !ok {
            s.false_rejections += 1;
        }
        out.push(s);
    }
    out
}

/// The length and score of the best prefix (the shortest among equals); `(0, default)` when there
/// are no arrivals.
fn best_prefix(scores: &[Score], goal: Goal) -> (usize, Score) {
    let mut k = scores.len();
    for (i, s) in scores.iter().enumerate() {
        if s.beats(&scores[k - 1], goal) {
            k = i + 1;
        }
    }
    (k, scores.get(k.wrapping_sub(1)).copied().unwrap_or_default())
}

/// The best prefix of `best`'s arrivals for `goal` (requests after the worst window, or that end a
/// pattern without being false rejections, add nothing), as segments, rebuilt.
pub(crate) fn trim(
    segments: Vec<Segment>,
    built: Built,
    limiter: &Limiter,
    goal: Goal,
    origin_ms: i64,
    budget: u32,
) -> (Vec<Segment>, Built, Score) {
    let scores = prefix_scores(&built, limiter);
    let Some(full) = scores.last().copied() else { return (segments, built, Score::default()) };
    let (k, _) = best_prefix(&scores, goal);
    if k == scores.len() {
        return (segments, built, full);
    }
    let cut = built.prefix_segments(&segments, k);
    let rebuilt = build(&cut, limiter, origin_ms, budget);
    let s = score(&rebuilt, limiter);
    if rebuilt.len() == k && rebuilt.times_us[..] == built.times_us[..k] && s == scores[k - 1] {
        (cut, rebuilt, s)
    } else {
        (segments, built, full)
    }
}

/// The best pattern found and how many patterns were scored.
#[derive(Clone, Debug)]
pub struct Best {
    pub segments: Vec<Segment>,
    pub built: Built,
    pub score: Score,
    pub evaluations: u32,
    /// The requests the scored patterns sent, in all.
    pub requests: u64,
}

/// One scored pattern.
#[derive(Clone, Debug, Default)]
struct Candidate {
    segments: Vec<Segment>,
    built: Built,
    score: Score,
}

/// Searches for the pattern that maximizes `goal` within `budget` requests, scoring
/// `iterations` mutants after the starting patterns.
///
/// The mutants come from `CLIMBS` hill climbs, each from one of the best starting patterns (the
/// best first); a climb moves to any mutant that is no worse than where it stands (so it can drift
/// along plateaus), and the best pattern seen anywhere wins.
pub fn search(limiter: &Limiter, goal: Goal, origin_ms: i64, budget: u32, seed: u64, iterations: u32) -> Best {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let space = Space { window: limiter.params().window_ms as i64, limit: limiter.params().limit, budget };
    let mut evaluations = 0u32;
    let mut requests = 0u64;
    let mut evaluate = |segs: Vec<Segment>| -> Option<Candidate> {
        let segments = space.normalize(segs);
        if segments.is_empty() {
            return None;
        }
        let built = build(&segments, limiter, origin_ms, budget);
        // Judged by its best prefix: what it would score once trimmed.
        let (_, score) = best_prefix(&prefix_scores(&built, limiter), goal);
        evaluations += 1;
        requests += built.len() as u64;
        Some(Candidate { segments, built, score })
    };
    let mut pool: Vec<Candidate> = Vec::new();
    for segs in space.starts(goal) {
        pool.extend(evaluate(segs));
    }
    for _ in 0..RANDOM_STARTS {
        let segs = space.random(&mut rng);
        pool.extend(evaluate(segs));
    }
    // Best first; a stable sort keeps the order of equals, so this is deterministic.
    pool.sort_by(|a, b| {
        if a.score.beats(&b.score, goal) {
            std::cmp::Ordering::Less
        } else if b.score.beats(&a.score, goal) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    let mut best = pool.first().cloned().unwrap_or_default();
    if !pool.is_empty() {
        for c in 0..CLIMBS {
            let steps = iterations / CLIMBS + u32::from(c < iterations % CLIMBS);
            let mut here = pool[c as usize % pool.len()].clone();
            for _ in 0..steps {
                let child = space.mutate(&here.segments, &mut rng);
                let Some(cand) = evaluate(child) else { continue };
                // Among equals, the simplest pattern is kept.
                let simpler = !best.score.beats(&cand.score, goal) && cand.segments.len() < best.segments.len();
                if cand.score.beats(&best.score, goal) || simpler {
                    best = cand.clone();
                }
                if !here.score.beats(&cand.score, goal) {
                    here = cand;
                }
            }
        }
    }
    let (segments, built, score) = trim(best.segments, best.built, limiter, goal, origin_ms, budget);
    Best { segments, built, score, evaluations, requests }
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
        segs.sort_by_key(|s| (s.at_ms, s.kind, s.count, s.spacing_us));
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
        // Bursts alternating with streams at the limit's rate, a window apart.
        let stream_us = (w as u64 * 1000 / self.limit).max(1);
        for &p in &phases {
            let mut segs = Vec::new();
            let mut t = p;
            while segs.len() + 2 <= MAX_SEGMENTS {
                segs.push(Segment::burst(t, l, 0));
                segs.push(Segment::burst(t + (stream_us / 1000) as i64 + 1, l, stream_us));
                t += w;
            }
            segs.push(Segment::burst(t, l, 0));
            out.push(segs);
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
