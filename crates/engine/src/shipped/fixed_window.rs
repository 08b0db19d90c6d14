//! Fixed window: `scripts/fixed_window.lua` and the seed's `scripts/seed/fixed_window.lua`, with
//! their exact reference models.
use super::store::{KeyStore, Store};
use super::{lua_tostring, Decision, Params, ShippedModel};

/// The production script.
pub const SCRIPT: &str = include_str!("../../scripts/fixed_window.lua");
/// The seed article's snippet, completed.
pub const SEED_SCRIPT: &str = include_str!("../../scripts/seed/fixed_window.lua");

/// The hash the production script keeps per subject: fields `w` and `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct State {
    /// The counted window's index, `floor(now_ms / window_ms)`.
    w: i64,
    /// Units counted in window `w`.
    n: i64,
}

/// The reference of `scripts/fixed_window.lua`.
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
        let (w, n, fresh) = match self.keys.get(key, server) {
            Some(s) if win <= s.w => (s.w, s.n, false),
            _ => (win, 0, true),
        };
        let reset = (w + 1) * window - now;
        let counted_reset = |n: i64| if n > 0 { reset } else { 0 };
        if cost > limit {
            return Decision {
                allowed: false,
                remaining: (limit - n).max(0),
                retry_after_ms: -1,
                reset_after_ms: counted_reset(n),
                granted: Decision::NOT_REPORTED,
            };
        }
        if n + cost > limit {
            return Decision {
                allowed: false,
                remaining: (limit - n).max(0),
                retry_after_ms: reset,
                reset_after_ms: reset,
                granted: Decision::NOT_REPORTED,
            };
        }
        let n = n + cost;
        if cost > 0 {
            self.keys.put(key, State { w, n }, server);
            if fresh {
                self.keys.pexpire(key, reset + window, server);
            }
        }
        Decision {
            allowed: true,
            remaining: limit - n,
            retry_after_ms: -1,
            reset_after_ms: counted_reset(n),
            granted: -1,
        }
    }
}

/// The reference of `scripts/seed/fixed_window.lua`: one INCR counter per window, named with the
/// window index as Lua's `..` formats it, TTL `2 * window` from the window's first call.
#[derive(Clone, Debug)]
pub struct SeedModel {
    limit: f64,
    window: f64,
    keys: Store<i64>,
    name: String,
}

impl SeedModel {
    pub fn new(p: Params) -> SeedModel {
        SeedModel { limit: p.limit as f64, window: p.window_ms as f64, keys: Store::default(), name: String::new() }
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
        let now = now as f64;
        self.name.clear();
        self.name.push_str(key);
        self.name.push(':');
        self.name.push_str(&lua_tostring((now / self.window).floor()));
        let n = match self.keys.get(&self.name, server) {
            Some(n) => *n + 1,
            None => 1,
        };
        self.keys.put(&self.name, n, server);
        if n == 1 {
            // `window * 2` goes to Redis as %.17g: an integer for any window a test uses.
            self.keys.pexpire(&self.name, (self.window * 2.0) as i64, server);
        }
        Decision::allowed_only(n as f64 <= self.limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::shipped::{decision as d, Reference};

    // Replies checked on a real Redis 7.0.15 with the same calls.
    #[test]
    fn counts_within_a_window_and_refuses_until_its_end() {
        let mut m = Model::new(Params::new(3, 1000));
        let k = "rate:{u}";
        let t = 1_704_067_200_500;
        assert_eq!(m.decide(k, t, 1), d(true, 2, -1, 500));
        assert_eq!(m.decide(k, t, 1), d(true, 1, -1, 500));
        assert_eq!(m.decide(k, t, 1), d(true, 0, -1, 500));
        assert_eq!(m.decide(k, t, 1), d(false, 0, 500, 500));
        assert_eq!(m.decide(k, t, 5), d(false, 0, -1, 500));
        assert_eq!(m.keys(t), vec![(k.to_string(), Some(t + 1500))]);
        assert_eq!(m.decide(k, t + 500, 1), d(true, 2, -1, 1000));
    }

    #[test]
    fn a_lagging_clock_is_counted_in_the_newest_window() {
        let mut m = Model::new(Params::new(2, 1000));
        let k = "rate:{u}";
        assert!(m.decide(k, 5_000, 2).allowed);
        // 900 ms behind, in window 4: counted in window 5, which is full.
        assert_eq!(m.decide_at(5_000, k, 4_100, 1), d(false, 0, 1_900, 1_900));
    }

    #[test]
    fn seed_counts_refusals_too_and_names_keys_by_window() {
        let mut m = SeedModel::new(Params::new(1, 1000));
        assert!(m.decide("r", 2_500, 1).allowed);
        assert!(!m.decide("r", 2_600, 1).allowed);
        assert_eq!(m.keys(2_600), vec![("r:2".to_string(), Some(4_500))]);
        assert!(m.decide("r", 3_000, 1).allowed);
    }
}
