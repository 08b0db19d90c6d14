//! Constant-rate traffic: one request every `1/rate` seconds, round-robin over the keys, optionally
//! jittered inside each request's own slot.
use rand::Rng;
use serde::{Deserialize, Serialize};

use super::{
    check_count, check_keys, check_rate, check_span_ms, constant_rate_offsets, defaults, invalid, key_name, rng,
    Arrival,
};
use crate::Result;
use limitlab_emulator::clock::Micros;

const CONTEXT: &str = "traffic.uniform";

/// Requests at a constant `rate` for `duration_ms`: request `i` is due at `start + i / rate` (rounded
/// down to the microsecond, computed from `i` so nothing drifts), for every such time before
/// `start + duration_ms`. With `keys = N`, request `i` goes to key `key{i mod N}`.
///
/// `jitter` (0 to 1, default 0) delays each request by a uniformly random part of `jitter` times the
/// gap between requests. A request never leaves its own slot, so order, count and average rate are
/// unchanged; with `jitter = 0` the seed is not used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Uniform {
    /// Requests per second.
    pub rate: f64,
    pub duration_ms: u64,
    #[serde(default = "defaults::key")]
    pub key: String,
    #[serde(default = "defaults::one")]
    pub keys: u64,
    #[serde(default)]
    pub jitter: f64,
    #[serde(default = "defaults::one")]
    pub cost: u64,
    #[serde(default)]
    pub phase: String,
}

impl Uniform {
    /// `rate` requests per second for `duration_ms` on the single key `user`, no jitter.
    pub fn new(rate: f64, duration_ms: u64) -> Uniform {
        Uniform { rate, duration_ms, key: defaults::key(), keys: 1, jitter: 0.0, cost: 1, phase: String::new() }
    }

    pub fn validate(&self) -> Result<()> {
        check_rate(CONTEXT, "rate", self.rate)?;
        check_span_ms(CONTEXT, "duration_ms", self.duration_ms)?;
        check_count(CONTEXT, "rate", self.rate * self.duration_ms as f64 / 1000.0)?;
        check_keys(CONTEXT, &self.key, self.keys)?;
        if !(0.0..=1.0).contains(&self.jitter) {
            return Err(invalid(
                CONTEXT,
                "jitter",
                format!("must be between 0 and 1 (a fraction of the gap), not {}", self.jitter),
            ));
        }
        Ok(())
    }

    /// The arrivals from `start`, sorted by time. Invalid parameters give no arrivals (see
    /// [`Uniform::validate`]).
    pub fn arrivals(&self, start: Micros, seed: u64) -> Vec<Arrival> {
        if self.validate().is_err() {
            return Vec::new();
        }
        let duration_us = self.duration_ms as i64 * 1000;
        let gap = 1e6 / self.rate;
        let mut out = Vec::with_capacity((self.rate * self.duration_ms as f64 / 1000.0).ceil() as usize + 1);
        let mut rng = rng(seed);
        for (i, offset) in constant_rate_offsets(self.rate, duration_us) {
            let delay = if self.jitter > 0.0 { (rng.random::<f64>() * self.jitter * gap).floor() as i64 } else { 0 };
            out.push(Arrival {
                at: Micros(start.0.saturating_add(offset + delay)),
                key: key_name(&self.key, self.keys, i),
                cost: self.cost,
                phase: self.phase.clone(),
                op: crate::traffic::Op::Request,
            });
        }
        // A delay stays below the next slot's start, so the order holds; sort anyway for the contract.
        super::sort_stable(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    const T0: Micros = Micros(1_704_067_200_000_000);

    #[test]
    fn exact_times_and_count() {
        let g = Uniform::new(200.0, 1000);
        let v = g.arrivals(T0, 1);
        assert_eq!(v.len(), 200);
        for (i, a) in v.iter().enumerate() {
            assert_eq!(a.at, Micros(T0.0 + i as i64 * 5000));
            assert_eq!(a.key, "user");
            assert_eq!(a.cost, 1);
            assert_eq!(a.phase, "");
        }
        // Not a divisor of a second: 3 per second over 2 s, rounded down, no drift.
        let v = Uniform::new(3.0, 2000).arrivals(Micros(0), 1);
        let at: Vec<_> = v.iter().map(|a| a.at.0).collect();
        assert_eq!(at, [0, 333_333, 666_666, 1_000_000, 1_333_333, 1_666_666]);
        // Fractional rate: one request every 2 s over 5 s.
        assert_eq!(Uniform::new(0.5, 5000).arrivals(Micros(0), 1).len(), 3);
    }

    #[test]
    fn round_robin_keys() {
        let g = Uniform { keys: 3, key: "k".into(), cost: 2, phase: "p".into(), ..Uniform::new(10.0, 700) };
        let v = g.arrivals(Micros(0), 1);
        let keys: Vec<_> = v.iter().map(|a| a.key.as_str()).collect();
        assert_eq!(keys, ["k0", "k1", "k2", "k0", "k1", "k2", "k0"]);
        assert!(v.iter().all(|a| a.cost == 2 && a.phase == "p"));
    }

    #[test]
    fn deterministic_and_seed_matters_only_with_jitter() {
        let plain = Uniform::new(100.0, 1000);
        assert_eq!(plain.arrivals(T0, 1), plain.arrivals(T0, 2));
        let j = Uniform { jitter: 0.8, ..plain };
        let a = j.arrivals(T0, 1);
        assert_eq!(a, j.arrivals(T0, 1));
        assert_ne!(a, j.arrivals(T0, 2));
        assert_eq!(a.len(), 100);
        for (i, x) in a.iter().enumerate() {
            let slot = T0.0 + i as i64 * 10_000;
            assert!(x.at.0 >= slot && x.at.0 < slot + 8000, "{i}: {:?}", x.at);
        }
        assert!(a.is_sorted_by_key(|x| x.at));
        // Jitter does spread: not every request sits at its slot start.
        assert!(a.iter().enumerate().filter(|(i, x)| x.at.0 != T0.0 + *i as i64 * 10_000).count() > 90);
    }

    #[test]
    fn validation() {
        let field = |g: Uniform| match g.validate() {
            Err(Error::Invalid { context, field, .. }) => {
                assert_eq!(context, CONTEXT);
                field
            }
            other => panic!("{other:?}"),
        };
        let ok = Uniform::new(10.0, 1000);
        ok.validate().unwrap();
        assert_eq!(field(Uniform { rate: 0.0, ..ok.clone() }), "rate");
        assert_eq!(field(Uniform { rate: -1.0, ..ok.clone() }), "rate");
        assert_eq!(field(Uniform { rate: f64::NAN, ..ok.clone() }), "rate");
        assert_eq!(field(Uniform { rate: 1e9, ..ok.clone() }), "rate");
        assert_eq!(field(Uniform { duration_ms: 0, ..ok.clone() }), "duration_ms");
        assert_eq!(field(Uniform { duration_ms: u64::MAX, ..ok.clone() }), "duration_ms");
        assert_eq!(field(Uniform { rate: 1e6, duration_ms: 1_000_000, ..ok.clone() }), "rate");
        assert_eq!(field(Uniform { keys: 0, ..ok.clone() }), "keys");
        assert_eq!(field(Uniform { key: String::new(), ..ok.clone() }), "key");
        // cost 0 is a read-only peek: valid
        assert!(Uniform { cost: 0, ..ok.clone() }.validate().is_ok());
        assert_eq!(field(Uniform { jitter: 1.5, ..ok.clone() }), "jitter");
        assert_eq!(field(Uniform { jitter: -0.1, ..ok.clone() }), "jitter");
        assert!(Uniform { rate: 0.0, ..ok }.arrivals(T0, 1).is_empty());
    }
}
