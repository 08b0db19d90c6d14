//! GCRA (generic cell rate algorithm): `scripts/gcra.lua` and its exact reference model. The seed
//! article has no GCRA.
use super::store::{KeyStore, Store};
use super::{ceil_div, Decision, Params, ShippedModel};

/// The production script.
pub const SCRIPT: &str = include_str!("../../scripts/gcra.lua");

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b > 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Ticks per ms in the script's clock: `limit / gcd(limit, window_ms)`.
pub fn ticks_per_ms(p: &Params) -> u64 {
    p.limit / gcd(p.limit, p.window_ms)
}

/// The reference of `scripts/gcra.lua`: the TAT in ticks, as an integer.
#[derive(Clone, Debug)]
pub struct Model {
    per_ms: i64,
    interval: i64,
    burst: i64,
    tau: i64,
    keys: Store<i64>,
}

impl Model {
    pub fn new(p: Params) -> Model {
        let g = gcd(p.limit, p.window_ms);
        let interval = (p.window_ms / g) as i64;
        let burst = p.capacity() as i64;
        Model { per_ms: (p.limit / g) as i64, interval, burst, tau: burst * interval, keys: Store::default() }
    }
}

impl ShippedModel for Model {
    fn store(&self) -> &dyn KeyStore {
        &self.keys
    }

    fn store_mut(&mut self) -> &mut dyn KeyStore {
        &mut self.keys
    }

    fn decide_call(&mut self, server: i64, key: &str, now: i64, cost: u64) -> Decision {
        let (per_ms, interval, tau, cost) = (self.per_ms, self.interval, self.tau, cost as i64);
        let nt = now * per_ms;
        let mut tat = self.keys.get(key, server).copied().map_or(nt, |s| s.max(nt));
        let remaining = |tat: i64| {
            let r = tau - (tat - nt);
            if r <= 0 {
                0
            } else {
                r / interval
            }
        };
        let reset = |tat: i64| ceil_div(tat - nt, per_ms);
        if cost > self.burst {
            return Decision {
                allowed: false,
                remaining: remaining(tat),
                retry_after_ms: -1,
                reset_after_ms: reset(tat),
                granted: Decision::NOT_REPORTED,
            };
        }
        let new = tat + cost * interval;
        if new - nt > tau {
            return Decision {
                allowed: false,
                remaining: remaining(tat),
                retry_after_ms: ceil_div(new - tau - nt, per_ms),
                reset_after_ms: reset(tat),
                granted: Decision::NOT_REPORTED,
            };
        }
        if cost > 0 {
            tat = new;
            self.keys.put_px(key, tat, reset(tat), server);
        }
        Decision {
            allowed: true,
            remaining: remaining(tat),
            retry_after_ms: -1,
            reset_after_ms: reset(tat),
            granted: -1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::shipped::{decision as d, Reference};

    // Replies checked on a real Redis 7.0.15 with the same calls.
    #[test]
    fn counts_in_ticks_of_a_third_of_a_ms() {
        let p = Params::new(3, 1000);
        assert_eq!(ticks_per_ms(&p), 3);
        let mut m = Model::new(p);
        let k = "rate:{g}";
        let t = 1_704_067_200_500;
        assert_eq!(m.decide(k, t, 1), d(true, 2, -1, 334));
        assert_eq!(m.decide(k, t, 1), d(true, 1, -1, 667));
        assert_eq!(m.decide(k, t, 1), d(true, 0, -1, 1000));
        assert_eq!(m.decide(k, t, 1), d(false, 0, 334, 1000));
        assert_eq!(m.keys(t), vec![(k.to_string(), Some(t + 1000))]);
        assert_eq!(m.decide(k, t + 334, 1), d(true, 0, -1, 1000));
    }

    #[test]
    fn a_lagging_clock_sees_the_tat_further_ahead() {
        let mut m = Model::new(Params::new(2, 1000));
        let k = "rate:{g}";
        assert!(m.decide(k, 10_000, 1).allowed);
        // The TAT, 10_500, is 1_500 ticks ahead of 9_000; one more unit would put it 2_000 ahead,
        // beyond the 1_000 tolerated.
        assert_eq!(m.decide_at(10_000, k, 9_000, 1), d(false, 0, 1_000, 1_500));
    }
}
