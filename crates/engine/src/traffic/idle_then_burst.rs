//! A steady warm-up, an idle gap, then a burst: shows how much a limiter lets through after a quiet spell
//! (a token bucket refills to its burst size; a window counter forgets).
use serde::{Deserialize, Serialize};

use super::{
    check_count, check_keys, check_span_max, check_span_ms, check_span_us, constant_rate_offsets, defaults, invalid,
    Arrival, MAX_RATE,
};
use crate::Result;
use limitlab_emulator::clock::Micros;

const CONTEXT: &str = "traffic.idle_then_burst";

/// Three phases on one key:
/// 1. warm-up: `warmup_rate` requests per second at a constant rate over `[start, start + warmup_ms)`
///    (as [`super::Uniform`] places them), phase `warmup_phase`; skipped when `warmup_ms = 0`;
/// 2. nothing for `idle_ms`;
/// 3. `burst` requests `spacing_us` apart from `start + warmup_ms + idle_ms`, phase `burst_phase`.
///
/// The idle gap is measured from the end of the warm-up period, not from its last request, so the
/// burst's time does not depend on the rate. The seed is not used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdleThenBurst {
    /// Warm-up requests per second; 0 (the default) exactly when `warmup_ms` is 0.
    #[serde(default)]
    pub warmup_rate: f64,
    #[serde(default)]
    pub warmup_ms: u64,
    pub idle_ms: u64,
    /// Requests in the burst.
    pub burst: u64,
    /// Zero (the default) puts the whole burst at one instant.
    #[serde(default)]
    pub spacing_us: u64,
    #[serde(default = "defaults::key")]
    pub key: String,
    #[serde(default = "defaults::one")]
    pub cost: u64,
    #[serde(default = "warmup_phase")]
    pub warmup_phase: String,
    #[serde(default = "burst_phase")]
    pub burst_phase: String,
}

fn warmup_phase() -> String {
    "warm-up".to_owned()
}

fn burst_phase() -> String {
    "burst".to_owned()
}

impl IdleThenBurst {
    /// No warm-up: `idle_ms` of silence, then `burst` requests at one instant.
    pub fn new(idle_ms: u64, burst: u64) -> IdleThenBurst {
        IdleThenBurst {
            warmup_rate: 0.0,
            warmup_ms: 0,
            idle_ms,
            burst,
            spacing_us: 0,
            key: defaults::key(),
            cost: 1,
            warmup_phase: warmup_phase(),
            burst_phase: burst_phase(),
        }
    }

    pub fn validate(&self) -> Result<()> {
        check_span_max(CONTEXT, "warmup_ms", self.warmup_ms)?;
        let rate = self.warmup_rate;
        if !(0.0..=MAX_RATE).contains(&rate) {
            return Err(invalid(
                CONTEXT,
                "warmup_rate",
                format!("must be between 0 and {MAX_RATE} requests per second, not {rate}"),
            ));
        }
        match (self.warmup_ms, rate > 0.0) {
            (0, true) => return Err(invalid(CONTEXT, "warmup_ms", "must be positive when `warmup_rate` is set")),
            (w, false) if w > 0 => {
                return Err(invalid(CONTEXT, "warmup_rate", "must be positive when `warmup_ms` is set"))
            }
            _ => {}
        }
        check_span_ms(CONTEXT, "idle_ms", self.idle_ms)?;
        check_span_max(CONTEXT, "idle_ms", self.idle_ms.saturating_add(self.warmup_ms))?;
        if self.burst == 0 {
            return Err(invalid(CONTEXT, "burst", "must be at least 1"));
        }
        check_count(CONTEXT, "burst", self.burst as f64 + rate * self.warmup_ms as f64 / 1000.0)?;
        check_span_us(
            CONTEXT,
            "spacing_us",
            self.spacing_us.saturating_mul(self.burst - 1).min(i64::MAX as u64) as i64,
        )?;
        check_keys(CONTEXT, &self.key, 1)?;
        Ok(())
    }

    /// The burst's first request's time.
    pub fn burst_at(&self, start: Micros) -> Micros {
        Micros(
            start
                .0
                .saturating_add(self.warmup_ms.saturating_add(self.idle_ms).min(i64::MAX as u64 / 1000) as i64 * 1000),
        )
    }

    /// The arrivals, sorted by time. Invalid parameters give no arrivals (see
    /// [`IdleThenBurst::validate`]).
    pub fn arrivals(&self, start: Micros, _seed: u64) -> Vec<Arrival> {
        if self.validate().is_err() {
            return Vec::new();
        }
        let warm =
            if self.warmup_ms > 0 { (self.warmup_rate * self.warmup_ms as f64 / 1000.0).ceil() as usize } else { 0 };
        let mut out = Vec::with_capacity(warm + self.burst as usize);
        if self.warmup_ms > 0 {
            for (_, offset) in constant_rate_offsets(self.warmup_rate, self.warmup_ms as i64 * 1000) {
                out.push(self.arrival(start.0.saturating_add(offset), &self.warmup_phase));
            }
        }
        let b = self.burst_at(start).0;
        for i in 0..self.burst {
            out.push(self.arrival(b.saturating_add((i * self.spacing_us) as i64), &self.burst_phase));
        }
        out
    }

    fn arrival(&self, at: i64, phase: &str) -> Arrival {
        Arrival {
            at: Micros(at),
            key: self.key.clone(),
            cost: self.cost,
            phase: phase.to_owned(),
            op: crate::traffic::Op::Request,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    const T0: Micros = Micros(1_704_067_200_000_000);

    #[test]
    fn phases_and_times() {
        let g = IdleThenBurst { warmup_rate: 10.0, warmup_ms: 1000, spacing_us: 100, ..IdleThenBurst::new(5000, 50) };
        g.validate().unwrap();
        let v = g.arrivals(T0, 1);
        assert_eq!(v.len(), 60);
        for (i, a) in v[..10].iter().enumerate() {
            assert_eq!((a.at, a.phase.as_str()), (Micros(T0.0 + i as i64 * 100_000), "warm-up"));
        }
        let b = T0.0 + 6_000_000;
        assert_eq!(g.burst_at(T0), Micros(b));
        for (i, a) in v[10..].iter().enumerate() {
            assert_eq!((a.at, a.phase.as_str()), (Micros(b + i as i64 * 100), "burst"));
        }
        assert!(v.iter().all(|a| a.key == "user" && a.cost == 1));
        assert!(v.is_sorted_by_key(|a| a.at));
        assert_eq!(v, g.arrivals(T0, 2), "the seed is not used");
    }

    #[test]
    fn burst_at_one_instant_without_warmup() {
        let v = IdleThenBurst::new(2000, 5).arrivals(Micros(0), 0);
        assert_eq!(v.len(), 5);
        assert!(v.iter().all(|a| a.at == Micros(2_000_000) && a.phase == "burst"));
    }

    #[test]
    fn validation() {
        let field = |g: IdleThenBurst| match g.validate() {
            Err(Error::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let ok = IdleThenBurst::new(1000, 10);
        ok.validate().unwrap();
        assert_eq!(field(IdleThenBurst { idle_ms: 0, ..ok.clone() }), "idle_ms");
        assert_eq!(field(IdleThenBurst { burst: 0, ..ok.clone() }), "burst");
        assert_eq!(field(IdleThenBurst { warmup_rate: 5.0, ..ok.clone() }), "warmup_ms");
        assert_eq!(field(IdleThenBurst { warmup_ms: 5, ..ok.clone() }), "warmup_rate");
        assert_eq!(field(IdleThenBurst { warmup_rate: -5.0, warmup_ms: 5, ..ok.clone() }), "warmup_rate");
        assert_eq!(field(IdleThenBurst { warmup_rate: f64::NAN, warmup_ms: 5, ..ok.clone() }), "warmup_rate");
        assert_eq!(field(IdleThenBurst { burst: u64::MAX, ..ok.clone() }), "burst");
        assert_eq!(field(IdleThenBurst { spacing_us: u64::MAX, ..ok.clone() }), "spacing_us");
        // cost 0 is a read-only peek: valid
        assert!(IdleThenBurst { cost: 0, ..ok.clone() }.validate().is_ok());
        assert_eq!(field(IdleThenBurst { key: String::new(), ..ok.clone() }), "key");
        assert!(IdleThenBurst { idle_ms: 0, ..ok }.arrivals(T0, 0).is_empty());
    }

    #[test]
    fn toml_form() {
        let g: IdleThenBurst =
            toml::from_str("warmup_rate = 2.0\nwarmup_ms = 3000\nidle_ms = 10000\nburst = 100\nspacing_us = 1000\n")
                .unwrap();
        assert_eq!(g.arrivals(Micros(0), 0).len(), 106);
    }
}
