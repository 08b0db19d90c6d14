//! Poisson traffic: independent requests at an average rate, with exponentially distributed gaps.
use rand::Rng;
use serde::{Deserialize, Serialize};

use super::{
    check_count, check_keys, check_rate, check_span_ms, defaults, key_name, math, rng, rng_stream, unit_open0, Arrival,
};
use crate::Result;
use limitlab_emulator::clock::Micros;

const CONTEXT: &str = "traffic.poisson";

/// A Poisson process of `rate` requests per second over `[start, start + duration_ms)`: each gap is
/// exponential with mean `1/rate`, the first one measured from `start`. Times are kept in `f64`
/// seconds and rounded down to the microsecond, so two requests can share a microsecond.
///
/// With `keys = N`, each request picks one of `key0 .. key{N-1}` uniformly at random (from a separate
/// random stream, so the times do not depend on `keys`): the same as N independent Poisson processes
/// of `rate / N` each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Poisson {
    /// Mean requests per second.
    pub rate: f64,
    pub duration_ms: u64,
    #[serde(default = "defaults::key")]
    pub key: String,
    #[serde(default = "defaults::one")]
    pub keys: u64,
    #[serde(default = "defaults::one")]
    pub cost: u64,
    #[serde(default)]
    pub phase: String,
}

impl Poisson {
    /// `rate` requests per second on average for `duration_ms`, on the single key `user`.
    pub fn new(rate: f64, duration_ms: u64) -> Poisson {
        Poisson { rate, duration_ms, key: defaults::key(), keys: 1, cost: 1, phase: String::new() }
    }

    pub fn validate(&self) -> Result<()> {
        check_rate(CONTEXT, "rate", self.rate)?;
        check_span_ms(CONTEXT, "duration_ms", self.duration_ms)?;
        // Leave room above the mean: the count is random.
        check_count(CONTEXT, "rate", 1.1 * self.rate * self.duration_ms as f64 / 1000.0)?;
        check_keys(CONTEXT, &self.key, self.keys)?;
        Ok(())
    }

    /// The arrivals from `start`, sorted by time. Invalid parameters give no arrivals (see
    /// [`Poisson::validate`]).
    pub fn arrivals(&self, start: Micros, seed: u64) -> Vec<Arrival> {
        if self.validate().is_err() {
            return Vec::new();
        }
        let duration_us = self.duration_ms as i64 * 1000;
        let mean = self.rate * self.duration_ms as f64 / 1000.0;
        let mut out = Vec::with_capacity((mean + 4.0 * mean.sqrt() + 1.0) as usize);
        let mut times = rng(seed);
        let mut picks = rng_stream(seed, 1);
        let mut t = 0.0f64; // seconds after start
        loop {
            t += -math::ln(unit_open0(&mut times)) / self.rate;
            let offset = (t * 1e6).floor();
            if offset >= duration_us as f64 {
                break;
            }
            let key = if self.keys > 1 {
                key_name(&self.key, self.keys, picks.random_range(0..self.keys))
            } else {
                self.key.clone()
            };
            out.push(Arrival {
                at: Micros(start.0.saturating_add(offset as i64)),
                key,
                cost: self.cost,
                phase: self.phase.clone(),
                op: crate::traffic::Op::Request,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    const T0: Micros = Micros(1_704_067_200_000_000);

    #[test]
    fn deterministic() {
        let g = Poisson::new(200.0, 5000);
        let a = g.arrivals(T0, 42);
        assert_eq!(a, g.arrivals(T0, 42));
        assert_ne!(a, g.arrivals(T0, 43));
        // Pinned: these exact values must come out on every machine.
        let first: Vec<i64> = a.iter().take(3).map(|x| x.at.0 - T0.0).collect();
        assert_eq!(first, PINNED_FIRST_THREE);
        // Shifting the start shifts everything.
        let b = g.arrivals(Micros(0), 42);
        assert!(a.iter().zip(&b).all(|(x, y)| x.at.0 - T0.0 == y.at.0));
    }

    /// The first three offsets for rate 200/s, seed 42.
    const PINNED_FIRST_THREE: [i64; 3] = [5726, 20733, 23522];

    #[test]
    fn count_and_range() {
        // Count over 100 s at 200/s: mean 20,000, sd 141; allow 5 sd.
        for seed in 0..5 {
            let v = Poisson::new(200.0, 100_000).arrivals(T0, seed);
            let n = v.len() as f64;
            assert!((n - 20_000.0).abs() < 5.0 * 141.5, "seed {seed}: {n}");
            assert!(v.is_sorted_by_key(|a| a.at));
            assert!(v.first().unwrap().at >= T0);
            assert!(v.last().unwrap().at.0 < T0.0 + 100_000_000);
        }
    }

    #[test]
    fn gaps_are_exponential() {
        let rate = 1000.0;
        let v = Poisson::new(rate, 200_000).arrivals(Micros(0), 7);
        let gaps: Vec<f64> = v.windows(2).map(|w| (w[1].at.0 - w[0].at.0) as f64 / 1e6).collect();
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n;
        // Mean and sd both 1/rate = 1 ms; microsecond rounding is negligible.
        assert!((mean * rate - 1.0).abs() < 0.02, "mean {mean}");
        assert!((var.sqrt() * rate - 1.0).abs() < 0.03, "sd {}", var.sqrt());
        // P(gap > 1/rate) = e^-1.
        let over = gaps.iter().filter(|&&g| g > 1.0 / rate).count() as f64 / n;
        assert!((over - (-1.0f64).exp()).abs() < 0.01, "{over}");
    }

    #[test]
    fn keys_are_uniform_and_do_not_move_times() {
        let one = Poisson::new(500.0, 20_000).arrivals(T0, 9);
        let many = Poisson { keys: 4, key: "k".into(), ..Poisson::new(500.0, 20_000) }.arrivals(T0, 9);
        assert_eq!(one.len(), many.len());
        assert!(one.iter().zip(&many).all(|(a, b)| a.at == b.at));
        for k in 0..4 {
            let c = many.iter().filter(|a| a.key == format!("k{k}")).count() as f64;
            let p = many.len() as f64 / 4.0;
            assert!((c - p).abs() < 5.0 * (p * 0.75).sqrt(), "k{k}: {c}");
        }
    }

    #[test]
    fn validation() {
        let field = |g: Poisson| match g.validate() {
            Err(Error::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let ok = Poisson::new(10.0, 1000);
        assert_eq!(field(Poisson { rate: 0.0, ..ok.clone() }), "rate");
        assert_eq!(field(Poisson { rate: -3.0, ..ok.clone() }), "rate");
        assert_eq!(field(Poisson { rate: f64::INFINITY, ..ok.clone() }), "rate");
        assert_eq!(field(Poisson { duration_ms: 0, ..ok.clone() }), "duration_ms");
        assert_eq!(field(Poisson { rate: 1e7, duration_ms: 100_000, ..ok.clone() }), "rate");
        assert_eq!(field(Poisson { keys: 0, ..ok.clone() }), "keys");
        // cost 0 is a read-only peek: valid
        assert!(Poisson { cost: 0, ..ok.clone() }.validate().is_ok());
        assert!(Poisson { rate: -1.0, ..ok }.arrivals(T0, 1).is_empty());
    }
}
