//! Sliding window counter: `scripts/sliding_window.lua` and the seed's
//! `scripts/seed/sliding_window.lua`, with their exact reference models.
use super::store::{KeyStore, Store};
use super::{lua_mod, lua_tostring, Decision, Params, ShippedModel};

/// The production script.
pub const SCRIPT: &str = include_str!("../../scripts/sliding_window.lua");
/// The seed article's snippet, completed.
pub const SEED_SCRIPT: &str = include_str!("../../scripts/seed/sliding_window.lua");

/// The hash the production script keeps per subject: fields `w`, `c` and `p`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct State {
    /// The current window's index.
    w: i64,
    /// Units counted in window `w`.
    c: i64,
    /// Units counted in window `w - 1`.
    p: i64,
}

/// The reference of `scripts/sliding_window.lua`. Everything is scaled by the window, so the
/// integers here are the very values the script's doubles hold (all below 2^52).
#[derive(Clone, Debug)]
pub struct Model {
    limit: i64,
    window: i64,
    keys: Store<State>,
}

impl Model {
    pub fn new(p: Params) -> Model {
        Model { limit: p.limit as i64, window: p.window_ms as i64, keys: Store::default() }
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
        let (limit, window, cost) = (self.limit, self.window, cost as i64);
        let win = now.div_euclid(window);
        let State { w, mut c, p } = match self.keys.get(key, server).copied() {
            None => State { w: win, c: 0, p: 0 },
            Some(s) if win == s.w + 1 => State { w: win, c: 0, p: s.c },
            Some(s) if win > s.w + 1 => State { w: win, c: 0, p: 0 },
            Some(s) => s,
        };
        let start = w * window;
        let lag = if now < start { start - now } else { 0 };
        let left = window - (now + lag - start);
        let cap = limit * window;
        let used = |c: i64| p * left + c * window;
        let remaining = |c: i64| {
            let r = cap - used(c);
            if r <= 0 {
                0
            } else {
                r / window
            }
        };
        let reset = |c: i64| {
            if c > 0 {
                lag + left + window
            } else if p > 0 {
                lag + left
            } else {
                0
            }
        };
        if cost > limit {
            return Decision {
                allowed: false,
                remaining: remaining(c),
                retry_after_ms: -1,
                reset_after_ms: reset(c),
                granted: -1,
            };
        }
        if used(c) + cost * window <= cap {
            if cost > 0 {
                c += cost;
                self.keys.put(key, State { w, c, p }, server);
                self.keys.pexpire(key, lag + left + window, server);
            }
            return Decision {
                allowed: true,
                remaining: remaining(c),
                retry_after_ms: -1,
                reset_after_ms: reset(c),
                granted: -1,
            };
        }
        let room = (limit - c - cost) * window;
        let retry = if room >= p && p > 0 {
            left - room / p
        } else {
            let x = if c > 0 { (window - (limit - cost) * window / c).max(0) } else { 0 };
            left + x
        };
        Decision {
            allowed: false,
            remaining: remaining(c),
            retry_after_ms: lag + retry,
            reset_after_ms: reset(c),
            granted: -1,
        }
    }
}

/// The reference of `scripts/seed/sliding_window.lua`: INCR counters per window, and the estimate
/// `previous * (1 - frac) + current` in `f64`, operation for operation as Lua computes it.
#[derive(Clone, Debug)]
pub struct SeedModel {
    limit: f64,
    window: f64,
    keys: Store<i64>,
    current: String,
    previous: String,
}

impl SeedModel {
    pub fn new(p: Params) -> SeedModel {
        SeedModel {
            limit: p.limit as f64,
            window: p.window_ms as f64,
            keys: Store::default(),
            current: String::new(),
            previous: String::new(),
        }
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
        let (w, now) = (self.window, now as f64);
        let cur = (now / w).floor();
        for (name, index) in [(&mut self.current, cur), (&mut self.previous, cur - 1.0)] {
            name.clear();
            name.push_str(key);
            name.push(':');
            name.push_str(&lua_tostring(index));
        }
        let current = self.keys.get(&self.current, server).copied().unwrap_or(0) as f64;
        let previous = self.keys.get(&self.previous, server).copied().unwrap_or(0) as f64;
        let frac = lua_mod(now, w) / w;
        let est = previous * (1.0 - frac) + current;
        if est < self.limit {
            let n = self.keys.get(&self.current, server).copied().unwrap_or(0) + 1;
            self.keys.put(&self.current, n, server);
            if n == 1 {
                self.keys.pexpire(&self.current, (w * 2.0) as i64, server);
            }
            return Decision::allowed_only(true);
        }
        Decision::allowed_only(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::shipped::{decision as d, Reference};

    // Replies checked on a real Redis 7.0.15 with the same calls.
    #[test]
    fn weighs_the_previous_window_and_finds_the_exact_retry() {
        let mut m = Model::new(Params::new(3, 1000));
        let k = "rate:{s}";
        let t = 1_704_067_200_500;
        assert_eq!(m.decide(k, t, 1), d(true, 2, -1, 1500));
        assert_eq!(m.decide(k, t, 1), d(true, 1, -1, 1500));
        assert_eq!(m.decide(k, t, 1), d(true, 0, -1, 1500));
        // Next window, 334 ms in: 3 * 666 / 1000 + 1 <= 3.
        assert_eq!(m.decide(k, t, 1), d(false, 0, 834, 1500));
        assert_eq!(m.decide(k, t + 833, 1), d(false, 0, 1, 667));
        assert_eq!(m.decide(k, t + 834, 1), d(true, 0, -1, 1666));
        // 3 * 400 / 1000 + 1 + 1 > 3; the previous window's weight makes room 67 ms later.
        assert_eq!(m.decide(k, t + 1100, 1), d(false, 0, 67, 1400));
        assert_eq!(m.decide(k, t + 1167, 1), d(true, 0, -1, 1333));
    }

    #[test]
    fn seed_allows_while_the_estimate_is_below_the_limit() {
        let mut m = SeedModel::new(Params::new(2, 1000));
        assert!(m.decide("r", 1_500, 1).allowed);
        assert!(m.decide("r", 1_500, 1).allowed);
        assert!(!m.decide("r", 1_999, 1).allowed);
        // 2 * (1 - 0.4) = 1.2 < 2.
        assert!(m.decide("r", 2_400, 1).allowed);
        assert!(!m.decide("r", 2_400, 1).allowed);
        assert_eq!(m.keys(2_400), vec![("r:1".to_string(), Some(3_500)), ("r:2".to_string(), Some(4_400))]);
    }
}
