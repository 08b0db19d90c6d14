//! [proptest](https://docs.rs/proptest) strategies for traffic, shaped where rate limiters break:
//! window boundaries, bursts, idle spells, several subjects, costs above 1. Behind the `proptest`
//! cargo feature (on by default).
//!
//! Every strategy yields a `Vec<Arrival>` in time order, starting at [`Shape::start_ms`] (the
//! [`Harness`](crate::Harness)'s default start), ready for [`Harness::play`](crate::Harness::play).
//! Failing cases shrink toward fewer, earlier and cheaper requests.
//!
//! (The `limitlab` crate's documentation has this as a running example.)
use proptest::prelude::*;

use crate::limiter::{Limiter, Params};
use crate::traffic::Arrival;
use limitlab_emulator::clock::{Micros, DEFAULT_START};

/// What the generated traffic looks like: its policy's sizes, how long it lasts, who sends it and
/// what each request costs. Defaults (from [`Shape::new`]): starts at [`DEFAULT_START`], spans 4
/// windows, one subject (`s0`), cost 1, at most 4 times the capacity in requests (at least 8, at
/// most 400).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Unix ms of the first possible arrival; a window boundary for every window dividing a day.
    pub start_ms: i64,
    /// The policy's limit (bursts are sized from it and the capacity).
    pub limit: u64,
    /// The policy's window in ms (boundaries are multiples of it from `start_ms`).
    pub window_ms: u64,
    /// The capacity (burst) of a token bucket or GCRA; the limit otherwise.
    pub capacity: u64,
    /// How many windows the traffic spans.
    pub windows: u64,
    /// How many subjects send requests (`s0`, `s1`, ...).
    pub subjects: usize,
    /// The largest cost of one request (costs are drawn from 1 to this).
    pub max_cost: u64,
    /// The most requests in one generated case.
    pub max_requests: usize,
}

impl Shape {
    /// The default shape for a policy (see the type's documentation).
    pub fn new(params: Params) -> Shape {
        let capacity = params.capacity().max(1);
        Shape {
            start_ms: DEFAULT_START.0,
            limit: params.limit.max(1),
            window_ms: params.window_ms.max(1),
            capacity,
            windows: 4,
            subjects: 1,
            max_cost: 1,
            max_requests: (4 * capacity).clamp(8, 400) as usize,
        }
    }

    /// The default shape for a limiter's policy.
    pub fn of(limiter: &Limiter) -> Shape {
        Shape::new(limiter.params())
    }

    /// The same shape starting at `unix_ms`.
    pub fn starting_at(self, unix_ms: i64) -> Shape {
        Shape { start_ms: unix_ms, ..self }
    }

    /// The same shape spanning `n` windows (at least 1).
    pub fn windows(self, n: u64) -> Shape {
        Shape { windows: n.max(1), ..self }
    }

    /// The same shape with `n` subjects (at least 1).
    pub fn subjects(self, n: usize) -> Shape {
        Shape { subjects: n.max(1), ..self }
    }

    /// The same shape with costs from 1 to `max` (at least 1).
    pub fn max_cost(self, max: u64) -> Shape {
        Shape { max_cost: max.max(1), ..self }
    }

    /// The same shape with at most `n` requests per case (at least 1).
    pub fn max_requests(self, n: usize) -> Shape {
        Shape { max_requests: n.max(1), ..self }
    }

    /// The traffic's length in ms.
    pub fn span_ms(&self) -> i64 {
        (self.windows.max(1) * self.window_ms) as i64
    }

    fn arrival(&self, offset_ms: i64, subject: usize, cost: u64) -> Arrival {
        Arrival {
            at: Micros((self.start_ms + offset_ms.clamp(0, self.span_ms() - 1)) * 1000),
            key: format!("s{subject}"),
            cost,
            phase: String::new(),
            op: crate::traffic::Op::Request,
        }
    }

    fn sorted(&self, mut v: Vec<Arrival>) -> Vec<Arrival> {
        // Stable: arrivals at one ms keep the order they were generated in.
        v.sort_by_key(|a| a.at);
        v.truncate(self.max_requests);
        v
    }
}

/// A time (ms after [`Shape::start_ms`]) within a tenth of a window of a window boundary, on
/// either side: where fixed windows and window counters go wrong.
pub fn near_boundary(shape: &Shape) -> impl Strategy<Value = i64> {
    let w = shape.window_ms as i64;
    let reach = (w / 10).max(1);
    let span = shape.span_ms();
    (0..=shape.windows as i64, -reach..=reach).prop_map(move |(k, d)| (k * w + d).clamp(0, span - 1))
}

/// A time (ms after [`Shape::start_ms`]): anywhere in the span, or near a window boundary (one
/// time in two).
pub fn instant(shape: &Shape) -> impl Strategy<Value = i64> {
    prop_oneof![0..shape.span_ms(), near_boundary(shape)]
}

/// A subject's index, from 0 to [`Shape::subjects`] - 1 (the arrival's key is `s<index>`).
pub fn subject(shape: &Shape) -> impl Strategy<Value = usize> {
    0..shape.subjects.max(1)
}

/// A cost, from 1 to [`Shape::max_cost`].
pub fn cost(shape: &Shape) -> impl Strategy<Value = u64> {
    1..=shape.max_cost.max(1)
}

/// Independent requests at [`instant`]s: up to [`Shape::max_requests`], sorted.
pub fn arrivals(shape: &Shape) -> impl Strategy<Value = Vec<Arrival>> {
    let s = shape.clone();
    prop::collection::vec((instant(shape), subject(shape), cost(shape)), 0..=shape.max_requests).prop_map(move |v| {
        let all = v.into_iter().map(|(t, k, c)| s.arrival(t, k, c)).collect();
        s.sorted(all)
    })
}

/// One to four bursts: each from an [`instant`], of 1 to twice the capacity requests (at most
/// 200), 0 to 3 ms apart, from one subject. A burst at the end of a window followed by one at the
/// start of the next is the fixed window's worst case; a burst after an idle spell is the token
/// bucket's.
pub fn bursts(shape: &Shape) -> impl Strategy<Value = Vec<Arrival>> {
    let s = shape.clone();
    let size = 1..=(2 * shape.capacity).clamp(1, 200) as usize;
    prop::collection::vec((instant(shape), size, 0..=3i64, subject(shape), cost(shape)), 1..=4).prop_map(
        move |bursts| {
            let mut all = Vec::new();
            for (t, n, gap, k, c) in bursts {
                for i in 0..n as i64 {
                    all.push(s.arrival(t + i * gap, k, c));
                }
            }
            s.sorted(all)
        },
    )
}

/// Either [`arrivals`], or [`bursts`], or both merged: the strategy to start with.
pub fn traffic(shape: &Shape) -> impl Strategy<Value = Vec<Arrival>> {
    let s = shape.clone();
    prop_oneof![
        arrivals(shape),
        bursts(shape),
        (arrivals(shape), bursts(shape)).prop_map(move |(mut a, b)| {
            a.extend(b);
            s.sorted(a)
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    #[test]
    fn traffic_stays_in_its_span_sorted_and_bounded() {
        let shape = Shape::new(Params::new(10, 1000)).subjects(3).max_cost(2);
        let mut runner = TestRunner::deterministic();
        let strat = traffic(&shape);
        for _ in 0..200 {
            let v = strat.new_tree(&mut runner).unwrap().current();
            assert!(v.len() <= shape.max_requests);
            assert!(v.windows(2).all(|p| p[0].at <= p[1].at));
            for a in &v {
                let off = a.at.0 / 1000 - shape.start_ms;
                assert!((0..shape.span_ms()).contains(&off), "{off}");
                assert!(["s0", "s1", "s2"].contains(&a.key.as_str()));
                assert!((1..=2).contains(&a.cost));
            }
        }
    }
}
