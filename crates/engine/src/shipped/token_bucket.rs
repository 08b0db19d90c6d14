//! Token bucket: `scripts/token_bucket.lua` and the seed's `scripts/seed/token_bucket.lua`, with
//! their exact reference models.
use super::store::{KeyStore, Store};
use super::{ceil_div, Decision, Params, ShippedModel};

/// The production script.
pub const SCRIPT: &str = include_str!("../../scripts/token_bucket.lua");
/// The seed article's snippet, completed.
pub const SEED_SCRIPT: &str = include_str!("../../scripts/seed/token_bucket.lua");

/// The hash the production script keeps per subject: fields `n` and `t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct State {
    /// Tokens times the window (the script's unit).
    n: i64,
    /// The time `n` was computed for, in ms.
    t: i64,
}

/// The reference of `scripts/token_bucket.lua`.
#[derive(Clone, Debug)]
pub struct Model {
    limit: i64,
    window: i64,
    burst: i64,
    keys: Store<State>,
}

impl Model {
    pub fn new(p: Params) -> Model {
        Model { limit: p.limit as i64, window: p.window_ms as i64, burst: p.capacity() as i64, keys: Store::default() }
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
        let (limit, window, burst, cost) = (self.limit, self.window, self.burst, cost as i64);
        let cap = burst * window;
        let (mut n, t) = match self.keys.get(key, server).copied() {
            None => (cap, now),
            Some(s) if now > s.t => {
                // The script's product may be inexact above 2^53, but it is then far above
                // cap - n either way; i128 gives the same comparison.
                let add = (now - s.t) as i128 * limit as i128;
                (if add >= (cap - s.n) as i128 { cap } else { s.n + add as i64 }, now)
            }
            Some(s) => (s.n, s.t),
        };
        n = n.clamp(0, cap);
        let lag = t - now;
        let reset = |n: i64| if n >= cap { 0 } else { lag + ceil_div(cap - n, limit) };
        if cost > burst {
            return Decision {
                allowed: false,
                remaining: n / window,
                retry_after_ms: -1,
                reset_after_ms: reset(n),
                granted: -1,
            };
        }
        let need = cost * window;
        if n < need {
            return Decision {
                allowed: false,
                remaining: n / window,
                retry_after_ms: lag + ceil_div(need - n, limit),
                reset_after_ms: reset(n),
                granted: Decision::NOT_REPORTED,
            };
        }
        if cost > 0 {
            n -= need;
            self.keys.put(key, State { n, t }, server);
            self.keys.pexpire(key, reset(n), server);
        }
        Decision { allowed: true, remaining: n / window, retry_after_ms: -1, reset_after_ms: reset(n), granted: -1 }
    }
}

/// The reference of `scripts/seed/token_bucket.lua`: tokens as a Lua double, refilled with
/// `math.min(cap, tok + (now - ts) * cap / w)` in that order of operations. Redis stores the
/// double with `%.17g`, which reads back as the same double, so the model keeps it as an `f64`.
#[derive(Clone, Debug)]
pub struct SeedModel {
    cap: f64,
    window: f64,
    keys: Store<(f64, f64)>,
}

impl SeedModel {
    pub fn new(p: Params) -> SeedModel {
        SeedModel { cap: p.limit as f64, window: p.window_ms as f64, keys: Store::default() }
    }
}

impl ShippedModel for SeedModel {
    fn store(&self) -> &dyn KeyStore {
        &self.keys
    }

    fn store_mut(&mut self) -> &mut dyn KeyStore {
        &mut self.keys
    }

    fn decide_call(&mut self, server: i64, key: &str, now: i64, _cost: u64) -> Decision {
        let (cap, w, now) = (self.cap, self.window, now as f64);
        let (mut tok, ts) = self.keys.get(key, server).copied().unwrap_or((cap, now));
        let refilled = tok + (now - ts) * cap / w;
        // math.min(cap, x) keeps cap unless x < cap.
        tok = if refilled < cap { refilled } else { cap };
        let allowed = tok >= 1.0;
        if allowed {
            tok -= 1.0;
        }
        self.keys.put(key, (tok, now), server);
        self.keys.pexpire(key, (w * 2.0) as i64, server);
        Decision::allowed_only(allowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::shipped::{decision as d, Reference};

    // Replies checked on a real Redis 7.0.15 with the same calls.
    #[test]
    fn drains_then_refills_at_the_rate() {
        let mut m = Model::new(Params::new(3, 1000));
        let k = "rate:{t}";
        let t = 1_704_067_200_500;
        assert_eq!(m.decide(k, t, 1), d(true, 2, -1, 334));
        assert_eq!(m.decide(k, t, 1), d(true, 1, -1, 667));
        assert_eq!(m.decide(k, t, 1), d(true, 0, -1, 1000));
        assert_eq!(m.decide(k, t, 1), d(false, 0, 334, 1000));
        assert_eq!(m.decide(k, t + 333, 1), d(false, 0, 1, 667));
        assert_eq!(m.decide(k, t + 334, 1), d(true, 0, -1, 1000));
        assert_eq!(m.decide(k, t + 334, 4), d(false, 0, -1, 1000));
    }

    #[test]
    fn a_lagging_clock_gets_no_refill() {
        let mut m = Model::new(Params::new(2, 1000).with_burst(2));
        let k = "rate:{t}";
        assert!(m.decide(k, 10_000, 2).allowed);
        assert_eq!(m.decide_at(10_000, k, 9_000, 1), d(false, 0, 1_500, 2_000));
    }

    #[test]
    fn seed_refills_in_floating_point() {
        let mut m = SeedModel::new(Params::new(3, 1000));
        for _ in 0..3 {
            assert!(m.decide("r", 0, 1).allowed);
        }
        assert!(!m.decide("r", 0, 1).allowed);
        // 333 ms give 0.999 tokens: still refused; the tokens are kept as the double 0.999.
        assert!(!m.decide("r", 333, 1).allowed);
        assert!(m.decide("r", 334, 1).allowed);
        assert_eq!(m.keys.get("r", 334).copied(), Some((0.0020000000000000018, 334.0)));
    }
}
