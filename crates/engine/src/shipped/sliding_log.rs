//! Sliding log: `scripts/sliding_log.lua` and the seed's `scripts/seed/sliding_log.lua`, with their
//! exact reference models.
use std::collections::{BTreeSet, HashMap, VecDeque};

use super::store::{KeyStore, Store};
use super::{lua_tostring, Decision, Params, ShippedModel};

/// The production script.
pub const SCRIPT: &str = include_str!("../../scripts/sliding_log.lua");
/// The seed article's sliding log, completed.
pub const SEED_SCRIPT: &str = include_str!("../../scripts/seed/sliding_log.lua");

/// The production script's sorted set, as `(score, members with that score)` in score order.
///
/// The script's member names are unique by construction (see its header), so the set is fully
/// described by how many members each score has; new members always take the highest score, so
/// a deque does every operation in amortized O(1).
#[derive(Clone, Debug, Default)]
struct Log {
    runs: VecDeque<(i64, i64)>,
    len: i64,
}

impl Log {
    /// ZREMRANGEBYSCORE key -inf `upto`.
    fn drop_through(&mut self, upto: i64) {
        while let Some(&(score, n)) = self.runs.front() {
            if score > upto {
                break;
            }
            self.len -= n;
            self.runs.pop_front();
        }
    }

    /// The score of the member at `rank` (0 = oldest), as ZRANGE key rank rank WITHSCORES.
    fn score_at(&self, rank: i64) -> Option<i64> {
        let mut seen = 0;
        for &(score, n) in &self.runs {
            seen += n;
            if rank < seen {
                return Some(score);
            }
        }
        None
    }
}

/// The reference of `scripts/sliding_log.lua`.
#[derive(Clone, Debug)]
pub struct Model {
    limit: i64,
    window: i64,
    keys: Store<Log>,
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
        let mut log = match self.keys.get(key, server) {
            Some(l) => std::mem::take(l),
            None => Log::default(),
        };
        let mut newest = log.runs.back().map(|r| r.0);
        let t = newest.map_or(now, |s| s.max(now));
        log.drop_through(t - window);
        let mut n = log.len;
        if n == 0 {
            newest = None;
        }
        let reset = |newest: Option<i64>| newest.map_or(0, |s| s + window - now);
        let decision = if cost > limit {
            Decision {
                allowed: false,
                remaining: (limit - n).max(0),
                retry_after_ms: -1,
                reset_after_ms: reset(newest),
                granted: Decision::NOT_REPORTED,
            }
        } else if n + cost <= limit {
            if cost > 0 {
                match log.runs.back_mut() {
                    Some((s, k)) if *s == t => *k += cost,
                    _ => log.runs.push_back((t, cost)),
                }
                log.len += cost;
                n += cost;
                newest = Some(t);
            }
            Decision {
                allowed: true,
                remaining: limit - n,
                retry_after_ms: -1,
                reset_after_ms: reset(newest),
                granted: -1,
            }
        } else {
            let oldest_needed = log.score_at(n + cost - limit - 1).unwrap_or(t);
            Decision {
                allowed: false,
                remaining: (limit - n).max(0),
                retry_after_ms: oldest_needed + window - now,
                reset_after_ms: reset(newest),
                granted: Decision::NOT_REPORTED,
            }
        };
        let added = decision.allowed && cost > 0;
        if log.len == 0 {
            // The last member left: Redis deletes the key.
            self.keys.remove(key);
        } else {
            self.keys.put(key, log, server);
            if added {
                self.keys.pexpire(key, t + window - now, server);
            }
        }
        decision
    }
}

/// The seed's sorted set, member by member: its member names can collide when the clock goes
/// backwards, and a collision only moves a member (ZADD updates the score), so the names matter.
#[derive(Clone, Debug, Default)]
struct Zset {
    by_member: HashMap<String, i64>,
    by_score: BTreeSet<(i64, String)>,
}

/// The reference of `scripts/seed/sliding_log.lua`.
#[derive(Clone, Debug)]
pub struct SeedModel {
    limit: f64,
    window: i64,
    keys: Store<Zset>,
}

impl SeedModel {
    pub fn new(p: Params) -> SeedModel {
        SeedModel { limit: p.limit as f64, window: p.window_ms as i64, keys: Store::default() }
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
        let mut z = match self.keys.get(key, server) {
            Some(z) => std::mem::take(z),
            None => Zset::default(),
        };
        // ZREMRANGEBYSCORE key -inf (now - window)
        while let Some((score, _)) = z.by_score.first() {
            if *score > now - self.window {
                break;
            }
            if let Some((_, member)) = z.by_score.pop_first() {
                z.by_member.remove(&member);
            }
        }
        let n = z.by_member.len();
        let allowed = (n as f64) < self.limit;
        if allowed {
            // ZADD key now (now .. ':' .. n): `..` formats numbers with %.14g.
            let member = format!("{}:{}", lua_tostring(now as f64), n);
            if let Some(old) = z.by_member.insert(member.clone(), now) {
                z.by_score.remove(&(old, member.clone()));
            }
            z.by_score.insert((now, member));
        }
        if z.by_member.is_empty() {
            self.keys.remove(key);
        } else {
            self.keys.put(key, z, server);
            if allowed {
                self.keys.pexpire(key, self.window, server);
            }
        }
        Decision::allowed_only(allowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::shipped::{decision as d, Reference};

    // Replies checked on a real Redis 7.0.15 with the same calls.
    #[test]
    fn refuses_until_the_oldest_member_leaves() {
        let mut m = Model::new(Params::new(3, 1000));
        let k = "rate:{l}";
        let t = 1_704_067_200_500;
        assert_eq!(m.decide(k, t, 1), d(true, 2, -1, 1000));
        assert_eq!(m.decide(k, t + 100, 1), d(true, 1, -1, 1000));
        assert_eq!(m.decide(k, t + 200, 1), d(true, 0, -1, 1000));
        assert_eq!(m.decide(k, t + 300, 1), d(false, 0, 700, 900));
        assert_eq!(m.decide(k, t + 300, 2), d(false, 0, 800, 900));
        assert_eq!(m.decide(k, t + 300, 4), d(false, 0, -1, 900));
        assert_eq!(m.decide(k, t + 1000, 1), d(true, 0, -1, 1000));
        assert_eq!(m.keys(t + 1000), vec![(k.to_string(), Some(t + 2000))]);
    }

    #[test]
    fn a_lagging_clock_logs_at_the_newest_time() {
        let mut m = Model::new(Params::new(2, 1000));
        let k = "rate:{l}";
        assert!(m.decide(k, 10_000, 1).allowed);
        // 500 ms behind: logged at 10_000, so it leaves at 11_000, 1_500 ms after its own clock.
        assert_eq!(m.decide_at(10_000, k, 9_500, 1), d(true, 0, -1, 1_500));
        assert_eq!(m.decide(k, 10_999, 1), d(false, 0, 1, 1));
        assert_eq!(m.decide(k, 11_000, 1), d(true, 1, -1, 1000));
    }

    #[test]
    fn seed_member_names_collide_when_the_clock_goes_back() {
        let mut m = SeedModel::new(Params::new(5, 1000));
        for t in [1_000, 1_000, 1_900] {
            assert!(m.decide("r", t, 1).allowed);
        }
        // At 2_000 the two members at 1_000 leave and "2000:1" joins; back at 1_900 the count is 2
        // again, so "1900:2" is written over itself and the log undercounts.
        assert!(m.decide("r", 2_000, 1).allowed);
        assert!(m.decide("r", 1_900, 1).allowed);
        let z = m.keys.get("r", 2_000).map(|z| z.by_member.len());
        assert_eq!(z, Some(2));
    }
}
