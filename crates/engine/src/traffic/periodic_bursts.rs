//! Bursts at a fixed period (a cron job, a polling client, a retry storm) over a duration.
use serde::{Deserialize, Serialize};

use super::{check_count, check_keys, check_span_ms, defaults, invalid, key_name, Arrival};
use crate::Result;
use limitlab_emulator::clock::Micros;

const CONTEXT: &str = "traffic.periodic_bursts";

/// Bursts of `count` requests, `spacing_us` apart, beginning at `start + k * period_ms` for every
/// `k >= 0` with `k * period_ms < duration_ms`. A burst must fit within its period. With `keys = N`,
/// burst `k` goes to key `key{k mod N}` (one client per burst, taking turns). The seed is not used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeriodicBursts {
    /// Requests per burst.
    pub count: u64,
    pub period_ms: u64,
    pub duration_ms: u64,
    /// Zero (the default) puts each burst at one instant.
    #[serde(default)]
    pub spacing_us: u64,
    #[serde(default = "defaults::key")]
    pub key: String,
    #[serde(default = "defaults::one")]
    pub keys: u64,
    #[serde(default = "defaults::one")]
    pub cost: u64,
    #[serde(default)]
    pub phase: String,
}

impl PeriodicBursts {
    /// `count` simultaneous requests every `period_ms` for `duration_ms`, on the key `user`.
    pub fn new(count: u64, period_ms: u64, duration_ms: u64) -> PeriodicBursts {
        PeriodicBursts {
            count,
            period_ms,
            duration_ms,
            spacing_us: 0,
            key: defaults::key(),
            keys: 1,
            cost: 1,
            phase: String::new(),
        }
    }

    /// How many bursts start before the end.
    pub fn bursts(&self) -> u64 {
        self.duration_ms.div_ceil(self.period_ms.max(1))
    }

    pub fn validate(&self) -> Result<()> {
        if self.count == 0 {
            return Err(invalid(CONTEXT, "count", "must be at least 1"));
        }
        check_span_ms(CONTEXT, "period_ms", self.period_ms)?;
        check_span_ms(CONTEXT, "duration_ms", self.duration_ms)?;
        check_count(CONTEXT, "count", self.count as f64 * self.bursts() as f64)?;
        let span = (self.count - 1).saturating_mul(self.spacing_us);
        if span >= self.period_ms * 1000 {
            return Err(invalid(
                CONTEXT,
                "spacing_us",
                format!("a burst lasts {span} µs, not shorter than the period of {} ms", self.period_ms),
            ));
        }
        check_keys(CONTEXT, &self.key, self.keys)?;
        Ok(())
    }

    /// The arrivals, sorted by time. Invalid parameters give no arrivals (see
    /// [`PeriodicBursts::validate`]).
    pub fn arrivals(&self, start: Micros, _seed: u64) -> Vec<Arrival> {
        if self.validate().is_err() {
            return Vec::new();
        }
        let mut out = Vec::with_capacity((self.count * self.bursts()) as usize);
        for k in 0..self.bursts() {
            let begin = start.0.saturating_add((k * self.period_ms * 1000) as i64);
            for i in 0..self.count {
                out.push(Arrival {
                    at: Micros(begin.saturating_add((i * self.spacing_us) as i64)),
                    key: key_name(&self.key, self.keys, k),
                    cost: self.cost,
                    phase: self.phase.clone(),
                    op: crate::traffic::Op::Request,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    #[test]
    fn bursts_every_period() {
        let g = PeriodicBursts { spacing_us: 1000, ..PeriodicBursts::new(3, 250, 1000) };
        let v = g.arrivals(Micros(10), 0);
        let at: Vec<_> = v.iter().map(|a| a.at.0).collect();
        assert_eq!(
            at,
            [10, 1010, 2010, 250_010, 251_010, 252_010, 500_010, 501_010, 502_010, 750_010, 751_010, 752_010]
        );
        assert!(v.iter().all(|a| a.key == "user" && a.cost == 1 && a.phase.is_empty()));
        assert_eq!(v, g.arrivals(Micros(10), 5), "the seed is not used");
        // A duration that is not a multiple of the period: the last burst starts before the end.
        assert_eq!(PeriodicBursts::new(2, 300, 1000).arrivals(Micros(0), 0).len(), 8);
        assert_eq!(PeriodicBursts::new(2, 5000, 1000).arrivals(Micros(0), 0).len(), 2);
    }

    #[test]
    fn keys_take_turns_by_burst() {
        let g = PeriodicBursts { keys: 2, key: "c".into(), ..PeriodicBursts::new(2, 100, 300) };
        let keys: Vec<_> = g.arrivals(Micros(0), 0).into_iter().map(|a| a.key).collect();
        assert_eq!(keys, ["c0", "c0", "c1", "c1", "c0", "c0"]);
    }

    #[test]
    fn validation() {
        let field = |g: PeriodicBursts| match g.validate() {
            Err(Error::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let ok = PeriodicBursts::new(10, 1000, 10_000);
        ok.validate().unwrap();
        assert_eq!(field(PeriodicBursts { count: 0, ..ok.clone() }), "count");
        assert_eq!(field(PeriodicBursts { period_ms: 0, ..ok.clone() }), "period_ms");
        assert_eq!(field(PeriodicBursts { duration_ms: 0, ..ok.clone() }), "duration_ms");
        assert_eq!(field(PeriodicBursts { count: 1_000_000_000, ..ok.clone() }), "count");
        assert_eq!(field(PeriodicBursts { spacing_us: 111_112, ..ok.clone() }), "spacing_us");
        assert_eq!(field(PeriodicBursts { spacing_us: u64::MAX, ..ok.clone() }), "spacing_us");
        assert_eq!(field(PeriodicBursts { keys: 0, ..ok.clone() }), "keys");
        // cost 0 is a read-only peek: valid
        assert!(PeriodicBursts { cost: 0, ..ok.clone() }.validate().is_ok());
        PeriodicBursts { spacing_us: 111_111, ..ok }.validate().unwrap();
    }
}
