//! Attack patterns: a few segments (bursts and greedy runs) that turn into concrete arrivals when
//! played against a limiter's reference model, and a compact description of the arrivals.
//!
//! A pattern is what the search mutates; the arrivals it builds are what gets measured, confirmed
//! on the emulator and saved as a trace. A greedy segment is an adaptive attacker (it sends each
//! request at the first millisecond the limiter would admit it), but once built, its arrivals are
//! a fixed list: replaying them reproduces the same decisions, because the limiter is
//! deterministic.
use serde::Serialize;

use crate::limiter::oracle::Oracle;
use crate::limiter::Limiter;

/// The subject every attack request uses (its Redis key is `rate:{attacker}`).
pub const SUBJECT: &str = "attacker";

/// What a segment sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `count` requests, `spacing_us` apart, admitted or not.
    Burst,
    /// Up to `count` requests, each at the first whole millisecond (not before the previous
    /// request) at which the limiter admits it; stops early when nothing would be admitted within
    /// [`GREEDY_HORIZON_WINDOWS`] windows.
    Greedy,
}

/// How far ahead, in windows, a greedy request looks for a millisecond that admits it.
pub const GREEDY_HORIZON_WINDOWS: i64 = 2;

/// Every arrival lies within this many windows after the origin; a pattern that would go further
/// ends there (it keeps traces short and the clock within what every script accepts).
pub const SPAN_WINDOWS: i64 = 5;

/// One part of a pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Segment {
    pub kind: Kind,
    /// When it starts, in ms after the pattern's origin (a window boundary). A segment never starts
    /// before the previous one's last request: arrivals stay in time order.
    pub at_ms: i64,
    pub count: u32,
    /// Bursts only: µs between consecutive requests (0: all at the same instant).
    pub spacing_us: u64,
}

impl Segment {
    pub fn burst(at_ms: i64, count: u32, spacing_us: u64) -> Segment {
        Segment { kind: Kind::Burst, at_ms, count, spacing_us }
    }

    pub fn greedy(at_ms: i64, count: u32) -> Segment {
        Segment { kind: Kind::Greedy, at_ms, count, spacing_us: 0 }
    }

    /// One line for a report: `burst of 100 at 999 ms, 0 µs apart`.
    pub fn describe(&self) -> String {
        match self.kind {
            Kind::Burst => format!("burst of {} from {} ms, {} µs apart", self.count, self.at_ms, self.spacing_us),
            Kind::Greedy => {
                format!("greedy: up to {} from {} ms, each at the first ms it is admitted", self.count, self.at_ms)
            }
        }
    }
}

/// The arrivals a pattern built, with the model's decisions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Built {
    /// Arrival times in µs after the origin, non-decreasing.
    pub times_us: Vec<i64>,
    /// Whether the model admitted each arrival.
    pub allowed: Vec<bool>,
    /// The index of the segment that sent each arrival.
    pub segment: Vec<u16>,
}

impl Built {
    pub fn len(&self) -> usize {
        self.times_us.len()
    }

    pub fn is_empty(&self) -> bool {
        self.times_us.is_empty()
    }

    /// The segments that send exactly the first `k` of these arrivals: segments cut to what they
    /// sent, the ones that sent nothing dropped. Building is causal (an arrival's decision depends
    /// only on earlier ones), so building them gives this pattern's first `k` arrivals.
    pub fn prefix_segments(&self, segments: &[Segment], k: usize) -> Vec<Segment> {
        let mut counts = vec![0u32; segments.len()];
        for &j in &self.segment[..k.min(self.segment.len())] {
            counts[j as usize] += 1;
        }
        segments.iter().zip(counts).filter(|(_, n)| *n > 0).map(|(s, n)| Segment { count: n, ..*s }).collect()
    }

    /// The millisecond the script sees for arrival `i` (relative to the origin).
    pub fn ms(&self, i: usize) -> i64 {
        self.times_us[i].div_euclid(1000)
    }
}

/// Plays `segments` (in order) against a fresh model of `limiter`, at most `budget` requests in
/// all. `origin_ms` is the absolute time of offset 0.
pub fn build(segments: &[Segment], limiter: &Limiter, origin_ms: i64, budget: u32) -> Built {
    let window = limiter.params().window_ms as i64;
    let mut model = limiter.oracle(SUBJECT);
    let mut out = Built::default();
    let mut left = budget;
    let mut last_us = 0i64;
    let end_ms = SPAN_WINDOWS * window;
    for (j, s) in segments.iter().enumerate() {
        if left == 0 {
            break;
        }
        let start_us = (s.at_ms * 1000).max(last_us);
        let n = s.count.min(left);
        match s.kind {
            Kind::Burst => {
                for i in 0..n as i64 {
                    let t = start_us + i * s.spacing_us as i64;
                    if t > end_ms * 1000 {
                        return out;
                    }
                    // A script error stops the pattern here; the confirming run reports it.
                    let Ok(d) = model.decide(origin_ms + t.div_euclid(1000), 1) else { return out };
                    let ok = d.allowed;
                    out.times_us.push(t);
                    out.allowed.push(ok);
                    out.segment.push(j as u16);
                    last_us = t;
                }
                left -= n;
            }
            Kind::Greedy => {
                // The first whole ms not before the previous arrival.
                let mut ms = (start_us + 999).div_euclid(1000);
                for _ in 0..n {
                    let to = (ms + GREEDY_HORIZON_WINDOWS * window).min(end_ms);
                    if ms > to {
                        return out;
                    }
                    let Some(t) = earliest(model.as_mut(), origin_ms, ms, to) else {
                        break;
                    };
                    let Ok(d) = model.decide(origin_ms + t, 1) else { return out };
                    let ok = d.allowed;
                    out.times_us.push(t * 1000);
                    out.allowed.push(ok);
                    out.segment.push(j as u16);
                    last_us = t * 1000;
                    left -= 1;
                    ms = t;
                }
            }
        }
    }
    out
}

/// The first ms in `[from, to]` (relative to `origin_ms`) at which `model` would admit a request of
/// cost 1, asking copies of it. Admission only gets easier as time passes for every algorithm here
/// (with no other arrivals), so an exponential then a binary search finds it in O(log window)
/// questions.
fn earliest(model: &mut dyn Oracle, origin_ms: i64, from: i64, to: i64) -> Option<i64> {
    let mut admits = |t: i64| model.probe(origin_ms + t, 1).is_ok_and(|d| d.allowed);
    if admits(from) {
        return Some(from);
    }
    let (mut lo, mut step) = (from, 1i64);
    let mut hi = loop {
        let t = (from + step).min(to);
        if admits(t) {
            break t;
        }
        if t == to {
            return None;
        }
        lo = t;
        step *= 2;
    };
    // Refused at lo, admitted at hi.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if admits(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// A run of arrivals in a description: `per_point` requests at each of `points` milliseconds,
/// `step_ms` apart, from `from_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Run {
    pub from_ms: i64,
    pub points: u32,
    pub step_ms: i64,
    pub per_point: u32,
}

impl Run {
    pub fn to_ms(&self) -> i64 {
        self.from_ms + self.step_ms * (self.points as i64 - 1)
    }

    /// `100 at 999 ms` or `1 at each of 99 ms, every 10 ms from 1010 to 1990`.
    pub fn describe(&self) -> String {
        let what = if self.per_point == 1 { "1 request".to_string() } else { format!("{} requests", self.per_point) };
        if self.points == 1 {
            format!("{what} at {} ms", self.from_ms)
        } else if self.points == 2 {
            format!("{what} at {} ms, and again at {} ms", self.from_ms, self.to_ms())
        } else {
            format!(
                "{what} every {} ms, {} times, from {} to {} ms",
                self.step_ms,
                self.points,
                self.from_ms,
                self.to_ms()
            )
        }
    }
}

/// The arrivals' milliseconds (sorted) as runs of equal counts at equal steps.
pub fn runs(ms: &[i64]) -> Vec<Run> {
    // (ms, how many arrivals at it)
    let mut points: Vec<(i64, u32)> = Vec::new();
    for &t in ms {
        match points.last_mut() {
            Some((p, n)) if *p == t => *n += 1,
            _ => points.push((t, 1)),
        }
    }
    let mut out: Vec<Run> = Vec::new();
    for (t, n) in points {
        if let Some(r) = out.last_mut() {
            let step = t - r.to_ms();
            if r.per_point == n && (r.points == 1 || r.step_ms == step) {
                if r.points == 1 {
                    r.step_ms = step;
                }
                r.points += 1;
                continue;
            }
        }
        out.push(Run { from_ms: t, points: 1, step_ms: 0, per_point: n });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::{Params, Variant};

    #[test]
    fn runs_group_equal_counts_at_equal_steps() {
        let mut ms = vec![999; 3];
        ms.extend([1010, 1020, 1030, 1035, 2000, 2000]);
        let r = runs(&ms);
        assert_eq!(
            r,
            vec![
                Run { from_ms: 999, points: 1, step_ms: 0, per_point: 3 },
                Run { from_ms: 1010, points: 3, step_ms: 10, per_point: 1 },
                Run { from_ms: 1035, points: 1, step_ms: 0, per_point: 1 },
                Run { from_ms: 2000, points: 1, step_ms: 0, per_point: 2 },
            ]
        );
        assert_eq!(r[1].describe(), "1 request every 10 ms, 3 times, from 1010 to 1030 ms");
        assert_eq!(r[0].describe(), "3 requests at 999 ms");
        let two = Run { from_ms: 0, points: 2, step_ms: 1001, per_point: 100 };
        assert_eq!(two.describe(), "100 requests at 0 ms, and again at 1001 ms");
    }

    #[test]
    fn greedy_sends_each_request_at_the_first_admitting_ms() {
        // Token bucket of 10 per second: a full bucket, then one token every 100 ms.
        let l = Limiter::new(Variant::TOKEN_BUCKET, Params::new(10, 1000)).unwrap();
        let b = build(&[Segment::greedy(500, 13)], &l, 1_000_000, 100);
        let ms: Vec<i64> = (0..b.times_us.len()).map(|i| b.ms(i)).collect();
        assert_eq!(ms, [500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 600, 700, 800]);
        assert!(b.allowed.iter().all(|&a| a));
    }

    #[test]
    fn bursts_keep_time_order_and_the_budget() {
        let l = Limiter::new(Variant::FIXED_WINDOW, Params::new(2, 1000)).unwrap();
        let segs = [Segment::burst(999, 3, 400), Segment::burst(0, 5, 0)];
        let b = build(&segs, &l, 1_000_000, 6);
        assert_eq!(b.times_us, [999_000, 999_400, 999_800, 999_800, 999_800, 999_800]);
        assert_eq!(b.allowed, [true, true, false, false, false, false]);
    }

    #[test]
    fn greedy_waits_as_long_as_it_must() {
        // A sliding log of 1 per second: each greedy request waits for the previous one to leave.
        let l = Limiter::new(Variant::SLIDING_LOG, Params::new(1, 1000)).unwrap();
        let b = build(&[Segment::burst(0, 1, 0), Segment::greedy(0, 3)], &l, 1_000_000, 10);
        let ms: Vec<i64> = (0..b.times_us.len()).map(|i| b.ms(i)).collect();
        assert_eq!(ms, [0, 1000, 2000, 3000]);
    }
}
