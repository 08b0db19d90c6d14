//! Many users with Zipf-distributed popularity: a few hot keys and a long tail, as real APIs see.
//!
//! Ranks are drawn by rejection-inversion (W. Hörmann and G. Derflinger, "Rejection-inversion to
//! generate variates from monotone discrete distributions", 1996): constant memory and a constant
//! expected number of steps per draw whatever the number of users, so ten million requests over a
//! million users need no table at all.
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{check_count, check_span_ms, invalid, math, numbered, rng, rng_stream, unit_open0, Arrival, MAX_KEYS};
use crate::Result;
use limitlab_emulator::clock::Micros;

const CONTEXT: &str = "traffic.zipf_users";

/// The largest Zipf exponent accepted; beyond it nearly every request goes to user 1 anyway.
pub const MAX_EXPONENT: f64 = 20.0;

/// `requests` requests over `[start, start + duration_ms)` from `users` users, user `k` (rank `k`,
/// 1-based) being chosen with probability proportional to `1 / k^s`. Keys are `key_prefix` followed by
/// the rank: `u1` is the most popular user.
///
/// Times follow `timing`: `random` (the default) places the requests like a Poisson process
/// conditioned on its count (uniform times, sorted), `even` spaces them exactly. Ranks and times come
/// from separate random streams, so changing `timing` keeps the sequence of users.
///
/// For very large runs use [`ZipfUsers::iter`], which streams arrivals in constant memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZipfUsers {
    pub users: u64,
    /// The Zipf exponent (default 1).
    #[serde(default = "default_s")]
    pub s: f64,
    /// Total requests.
    pub requests: u64,
    pub duration_ms: u64,
    #[serde(default)]
    pub timing: Timing,
    #[serde(default = "default_prefix")]
    pub key_prefix: String,
    #[serde(default = "super::defaults::one")]
    pub cost: u64,
    #[serde(default)]
    pub phase: String,
}

/// How [`ZipfUsers`] spreads its requests over the duration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    /// Independent uniform times, sorted.
    #[default]
    Random,
    /// Request `i` at `start + floor(i * duration / requests)`.
    Even,
}

fn default_s() -> f64 {
    1.0
}

fn default_prefix() -> String {
    "u".to_owned()
}

impl ZipfUsers {
    /// `requests` over `duration_ms` from `users` users with exponent `s`, random timing, keys `u1`...
    pub fn new(users: u64, s: f64, requests: u64, duration_ms: u64) -> ZipfUsers {
        ZipfUsers {
            users,
            s,
            requests,
            duration_ms,
            timing: Timing::Random,
            key_prefix: default_prefix(),
            cost: 1,
            phase: String::new(),
        }
    }

    pub fn validate(&self) -> Result<()> {
        if self.users == 0 {
            return Err(invalid(CONTEXT, "users", "must be at least 1"));
        }
        if self.users > MAX_KEYS {
            return Err(invalid(CONTEXT, "users", format!("{} is above the maximum {MAX_KEYS}", self.users)));
        }
        if !(self.s > 0.0 && self.s <= MAX_EXPONENT) {
            return Err(invalid(
                CONTEXT,
                "s",
                format!("the exponent must be above 0 and at most {MAX_EXPONENT}, not {}", self.s),
            ));
        }
        if self.requests == 0 {
            return Err(invalid(CONTEXT, "requests", "must be at least 1"));
        }
        check_count(CONTEXT, "requests", self.requests as f64)?;
        check_span_ms(CONTEXT, "duration_ms", self.duration_ms)?;
        Ok(())
    }

    /// The arrivals, sorted by time. Invalid parameters give no arrivals (see [`ZipfUsers::validate`]).
    pub fn arrivals(&self, start: Micros, seed: u64) -> Vec<Arrival> {
        match self.iter(start, seed) {
            Some(it) => {
                let mut out = Vec::with_capacity(self.requests as usize);
                out.extend(it);
                out
            }
            None => Vec::new(),
        }
    }

    /// The same arrivals as [`ZipfUsers::arrivals`], one at a time, in constant memory; `None` when the
    /// parameters are invalid.
    pub fn iter(&self, start: Micros, seed: u64) -> Option<ZipfIter> {
        self.validate().ok()?;
        Some(ZipfIter {
            sampler: Sampler::new(self.users, self.s),
            ranks: rng(seed),
            times: rng_stream(seed, 1),
            timing: self.timing,
            start: start.0,
            duration_us: self.duration_ms as i64 * 1000,
            requests: self.requests,
            done: 0,
            t: 0.0,
            prefix: self.key_prefix.clone(),
            cost: self.cost,
            phase: self.phase.clone(),
        })
    }
}

/// Streams [`ZipfUsers`]' arrivals.
#[derive(Clone, Debug)]
pub struct ZipfIter {
    sampler: Sampler,
    ranks: ChaCha8Rng,
    times: ChaCha8Rng,
    timing: Timing,
    start: i64,
    duration_us: i64,
    requests: u64,
    done: u64,
    /// Random timing: the previous time as a fraction of the duration.
    t: f64,
    prefix: String,
    cost: u64,
    phase: String,
}

impl ZipfIter {
    /// The next request as its time and the rank of its user, without building its key: a caller
    /// that tells users apart by rank (the runner's feed) skips a string per request.
    /// [`Iterator::next`] is this plus the key.
    pub fn next_rank(&mut self) -> Option<(Micros, u64)> {
        if self.done >= self.requests {
            return None;
        }
        let offset = self.next_offset();
        let rank = self.sampler.sample(&mut self.ranks);
        self.done += 1;
        Some((Micros(self.start.saturating_add(offset)), rank))
    }

    /// What every key starts with (the rank follows).
    pub fn key_prefix(&self) -> &str {
        &self.prefix
    }

    /// The cost of every request.
    pub fn cost(&self) -> u64 {
        self.cost
    }

    /// The phase label of every request.
    pub fn phase(&self) -> &str {
        &self.phase
    }

    /// The offset (µs after start) of the next request.
    fn next_offset(&mut self) -> i64 {
        match self.timing {
            Timing::Even => ((self.done as u128 * self.duration_us as u128) / self.requests as u128) as i64,
            Timing::Random => {
                // The smallest of the m uniform times still to place, given they all lie in
                // [t, 1): t + (1 - t) * (1 - U^(1/m)). Exact for sorted uniforms, in O(1) per step.
                let m = (self.requests - self.done) as f64;
                let g = -math::exp_m1(math::ln(unit_open0(&mut self.times)) / m);
                self.t += (1.0 - self.t) * g;
                ((self.t * self.duration_us as f64).floor() as i64).min(self.duration_us - 1)
            }
        }
    }
}

impl Iterator for ZipfIter {
    type Item = Arrival;

    fn next(&mut self) -> Option<Arrival> {
        let (at, rank) = self.next_rank()?;
        Some(Arrival {
            at,
            key: numbered(&self.prefix, rank),
            cost: self.cost,
            phase: self.phase.clone(),
            op: crate::traffic::Op::Request,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.requests - self.done) as usize;
        (n, Some(n))
    }
}

impl ExactSizeIterator for ZipfIter {}

/// Rejection-inversion for P(k) ∝ k^-s, k in 1..=n. The hat is the continuous density x^-s over
/// [1/2, n + 1/2] with the area of [1/2, 3/2] replaced so that rank 1 is exact; `h_integral` is its
/// antiderivative (shifted to avoid cancellation near s = 1) and `h_integral_inv` the inverse.
#[derive(Clone, Debug)]
struct Sampler {
    n: f64,
    s: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    /// Ranks whose inverted point lands this close below them are accepted without the full test.
    squeeze: f64,
}

impl Sampler {
    fn new(n: u64, s: f64) -> Sampler {
        let mut z = Sampler { n: n as f64, s, h_integral_x1: 0.0, h_integral_n: 0.0, squeeze: 0.0 };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(z.n + 0.5);
        z.squeeze = 2.0 - z.h_integral_inv(z.h_integral(2.5) - z.h(2.0));
        z
    }

    /// x^-s.
    fn h(&self, x: f64) -> f64 {
        math::exp(-self.s * math::ln(x))
    }

    /// (x^(1-s) - 1) / (1 - s), or ln x when s = 1.
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = math::ln(x);
        expm1_over_x((1.0 - self.s) * log_x) * log_x
    }

    fn h_integral_inv(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        math::exp(ln1p_over_x(t) * x)
    }

    fn sample(&self, rng: &mut ChaCha8Rng) -> u64 {
        loop {
            let u = self.h_integral_n + rng.random::<f64>() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inv(u);
            // Round to the nearest rank, inside 1..=n (`as` saturates; NaN gives 0).
            let k = ((x + 0.5) as u64).clamp(1, self.n as u64);
            let kf = k as f64;
            if kf - x <= self.squeeze || u >= self.h_integral(kf + 0.5) - self.h(kf) {
                return k;
            }
        }
    }
}

/// ln(1 + x) / x, continuous at 0.
fn ln1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        math::ln_1p(x) / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1) / x, continuous at 0.
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        math::exp_m1(x) / x
    } else {
        1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    const T0: Micros = Micros(1_704_067_200_000_000);

    /// Draws `draws` ranks and checks each rank's frequency (the first `check` ranks, and the tail
    /// beyond them together) against the exact Zipf probabilities with a chi-squared bound.
    fn check_distribution(n: u64, s: f64, draws: u64, check: u64) {
        let z = Sampler::new(n, s);
        let mut r = rng(12345);
        let mut counts = vec![0u64; check as usize + 1];
        for _ in 0..draws {
            let k = z.sample(&mut r);
            assert!((1..=n).contains(&k));
            counts[(k.min(check + 1) - 1) as usize] += 1;
        }
        let weights: Vec<f64> = (1..=n).map(|k| (k as f64).powf(-s)).collect();
        let total: f64 = weights.iter().sum();
        let mut chi2 = 0.0;
        for (i, &c) in counts.iter().enumerate() {
            let p = if i < check as usize {
                weights[i] / total
            } else {
                weights[check as usize..].iter().sum::<f64>() / total
            };
            let e = p * draws as f64;
            if e > 0.0 {
                chi2 += (c as f64 - e).powi(2) / e;
            } else {
                assert_eq!(c, 0);
            }
        }
        // Degrees of freedom <= check; the 99.99th percentile of chi2(df) is below df + 9 sqrt(df) + 20.
        let df = check as f64;
        assert!(chi2 < df + 9.0 * df.sqrt() + 20.0, "n={n} s={s}: chi2 {chi2} with {df} df, counts {counts:?}");
    }

    #[test]
    fn ranks_follow_zipf() {
        check_distribution(10, 1.0, 200_000, 9);
        check_distribution(10, 0.5, 200_000, 9);
        check_distribution(10, 2.5, 200_000, 9);
        check_distribution(1000, 1.0, 200_000, 50);
        check_distribution(1000, 0.2, 200_000, 50);
        check_distribution(1_000_000, 1.1, 200_000, 30);
        check_distribution(3, 1.0 + 1e-12, 100_000, 2);
        check_distribution(1, 1.0, 1000, 0);
        check_distribution(50, MAX_EXPONENT, 10_000, 3);
        check_distribution(50, 0.001, 100_000, 49);
    }

    #[test]
    fn deterministic_sorted_in_range() {
        let g = ZipfUsers::new(1000, 1.2, 5000, 10_000);
        let a = g.arrivals(T0, 1);
        assert_eq!(a.len(), 5000);
        assert_eq!(a, g.arrivals(T0, 1));
        assert_ne!(a, g.arrivals(T0, 2));
        assert!(a.is_sorted_by_key(|x| x.at));
        assert!(a.iter().all(|x| x.at >= T0 && x.at.0 < T0.0 + 10_000_000));
        assert!(a
            .iter()
            .all(|x| x.key.starts_with('u') && x.key[1..].parse::<u64>().is_ok_and(|k| (1..=1000).contains(&k))));
        assert!(a.iter().filter(|x| x.key == "u1").count() as f64 / 5000.0 > 0.1);
        // Pinned across machines.
        let first: Vec<(i64, &str)> = a.iter().take(3).map(|x| (x.at.0 - T0.0, x.key.as_str())).collect();
        assert_eq!(first, PINNED);
    }

    const PINNED: [(i64, &str); 3] = [(3819, "u13"), (3923, "u293"), (5559, "u4")];

    #[test]
    fn timing_keeps_users_and_spreads_uniformly() {
        let random = ZipfUsers::new(100, 1.0, 20_000, 10_000);
        let even = ZipfUsers { timing: Timing::Even, ..random.clone() };
        let r = random.arrivals(Micros(0), 3);
        let e = even.arrivals(Micros(0), 3);
        assert!(r.iter().zip(&e).all(|(a, b)| a.key == b.key));
        for (i, a) in e.iter().enumerate() {
            assert_eq!(a.at.0, i as i64 * 500);
        }
        // Random times: about a tenth in each tenth of the duration (binomial sd ~ 42).
        for d in 0..10 {
            let c = r.iter().filter(|a| a.at.0 / 1_000_000 == d).count() as f64;
            assert!((c - 2000.0).abs() < 5.0 * 42.5, "decile {d}: {c}");
        }
        // Gaps of sorted uniforms are about exponential: mean duration/requests.
        let mean_gap = (r.last().unwrap().at.0 - r[0].at.0) as f64 / (r.len() - 1) as f64;
        assert!((mean_gap - 500.0).abs() < 10.0, "{mean_gap}");
    }

    #[test]
    fn ten_million_requests_stream_quickly() {
        let g = ZipfUsers::new(1_000_000, 1.0, 10_000_000, 3_600_000);
        let watch = limitlab_emulator::clock::Stopwatch::start();
        let mut it = g.iter(T0, 7).unwrap();
        assert_eq!(it.len(), 10_000_000);
        let (mut n, mut hot, mut last) = (0u64, 0u64, T0);
        let mut tail = false;
        for a in &mut it {
            assert!(a.at >= last);
            last = a.at;
            n += 1;
            hot += (a.key == "u1") as u64;
            tail |= a.key.len() >= 7; // ranks from 100,000 (about 16% of requests)
        }
        assert_eq!(n, 10_000_000);
        assert!(last.0 < T0.0 + 3_600_000_000);
        // P(rank 1) = 1 / H(1e6) = 1 / 14.3927 = 0.06948.
        let p = hot as f64 / n as f64;
        assert!((p - 0.069_48).abs() < 0.0005, "{p}");
        assert!(tail);
        // Generous: debug-profile tests on a loaded machine.
        assert!(watch.elapsed_secs() < 60.0, "{} s", watch.elapsed_secs());
    }

    #[test]
    fn validation() {
        let field = |g: ZipfUsers| match g.validate() {
            Err(Error::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let ok = ZipfUsers::new(10, 1.0, 10, 1000);
        ok.validate().unwrap();
        assert_eq!(field(ZipfUsers { users: 0, ..ok.clone() }), "users");
        assert_eq!(field(ZipfUsers { users: u64::MAX, ..ok.clone() }), "users");
        assert_eq!(field(ZipfUsers { s: 0.0, ..ok.clone() }), "s");
        assert_eq!(field(ZipfUsers { s: -1.0, ..ok.clone() }), "s");
        assert_eq!(field(ZipfUsers { s: f64::NAN, ..ok.clone() }), "s");
        assert_eq!(field(ZipfUsers { s: 100.0, ..ok.clone() }), "s");
        assert_eq!(field(ZipfUsers { requests: 0, ..ok.clone() }), "requests");
        assert_eq!(field(ZipfUsers { requests: u64::MAX, ..ok.clone() }), "requests");
        assert_eq!(field(ZipfUsers { duration_ms: 0, ..ok.clone() }), "duration_ms");
        // cost 0 is a read-only peek: valid
        assert!(ZipfUsers { cost: 0, ..ok.clone() }.validate().is_ok());
        assert!(ZipfUsers { users: 0, ..ok.clone() }.arrivals(T0, 0).is_empty());
        assert!(ZipfUsers { users: 0, ..ok }.iter(T0, 0).is_none());
    }
}
