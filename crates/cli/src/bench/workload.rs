//! The calls every engine of a benchmark makes: the same subjects, times and arguments, so their
//! decisions can be compared call for call with the exact reference model.
use limitlab_emulator::clock::DEFAULT_START;
use limitlab_emulator::Result;
use limitlab_engine::limiter::{subject_key, Decision, Limiter, Params, Variant};

/// The shortest window of [`Workload::full_log`], in ms.
pub const LOG_WINDOW_MIN_MS: u64 = 60_000;

/// One benchmark workload: `limit` per `window_ms` for `users` subjects called in turn.
///
/// Call `i` is made at `start_ms + i * step_ms` by user `(i * STRIDE) % users`: every block of
/// `users` consecutive calls reaches every user once, in a shuffled order. With the defaults
/// ([`Workload::throughput`]) each user is called every 100 ms, ten times per window, against a
/// limit of 8, so about one call in five is refused and both paths of every script are timed.
///
/// Virtual time advances one millisecond per call, which keeps it ahead of the wall clock on any
/// engine doing more than 1,000 calls a second. That matters on a real Redis, whose keys expire by
/// its own clock: a key may then outlive its virtual deadline (the scripts' TTLs are checked to be
/// long enough, so that changes no decision) but never disappear before it.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub params: Params,
    pub users: usize,
    pub start_ms: i64,
    pub step_ms: i64,
}

/// Coprime with every user count used here, so `(i * STRIDE) % users` visits every user per block.
const STRIDE: usize = 37;

impl Workload {
    /// The throughput workload: 100 users, limit 8 per 1,000 ms, one call per virtual ms.
    pub fn throughput() -> Workload {
        Workload { params: Params::new(8, 1000), users: 100, start_ms: DEFAULT_START.0, step_ms: 1 }
    }

    /// One user with a sliding log of `l` entries kept full: limit `l` per `l` steps and one call
    /// per step, so after the first `l` calls every call finds the log full, drops the one entry
    /// that has just left the window and adds its own. A step is long enough that the window is at
    /// least [`LOG_WINDOW_MIN_MS`]: a real server expires the log on its wall clock, and a short
    /// window (10 ms at L = 10) would expire under any stall of the machine, deciding differently
    /// from the reference for reasons that have nothing to do with the script.
    pub fn full_log(l: u64) -> Workload {
        let step_ms = LOG_WINDOW_MIN_MS.div_ceil(l.max(1)).max(1);
        Workload { params: Params::new(l, l * step_ms), users: 1, start_ms: DEFAULT_START.0, step_ms: step_ms as i64 }
    }

    /// The user of call `i`.
    #[inline]
    pub fn user(&self, i: usize) -> usize {
        if self.users <= 1 {
            0
        } else if self.users % STRIDE == 0 {
            i % self.users
        } else {
            (i % self.users) * STRIDE % self.users
        }
    }

    /// The `now_ms` of call `i`.
    #[inline]
    pub fn now_ms(&self, i: usize) -> i64 {
        self.start_ms + i as i64 * self.step_ms
    }

    /// The subjects' Redis keys behind `prefix` (`{prefix}rate:{u7}`), indexed by user.
    pub fn keys(&self, prefix: &str) -> Vec<String> {
        (0..self.users).map(|u| format!("{prefix}{}", subject_key(&format!("u{u}")))).collect()
    }

    /// The subjects' names (`u7`), indexed by user.
    pub fn subjects(&self) -> Vec<String> {
        (0..self.users).map(|u| format!("u{u}")).collect()
    }

    /// The limiter of `variant` on this workload's parameters.
    pub fn limiter(&self, variant: Variant) -> Result<Limiter> {
        Limiter::new(variant, self.params)
    }

    /// The reference model's decisions for calls `0..n`, when the limiter has a model.
    pub fn reference_decisions(&self, limiter: &Limiter, n: usize) -> Option<Vec<Decision>> {
        let keys = self.keys("");
        let mut model = limiter.reference()?;
        Some((0..n).map(|i| model.decide(&keys[self.user(i)], self.now_ms(i), 1)).collect())
    }
}

/// How the decisions of one engine compare with the reference's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Check {
    /// Calls compared.
    pub compared: u64,
    /// Calls whose decision differs from the reference model's.
    pub differ: u64,
    /// Calls admitted among those compared, as the engine decided them.
    pub allowed: u64,
}

impl Check {
    /// Compares `got` with the reference's `want` over their common prefix.
    pub fn of(got: &[Decision], want: &[Decision]) -> Check {
        let n = got.len().min(want.len());
        let differ = got[..n].iter().zip(&want[..n]).filter(|(a, b)| a != b).count() as u64;
        let allowed = got[..n].iter().filter(|d| d.allowed).count() as u64;
        Check { compared: n as u64, differ, allowed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_of_calls_visits_every_user_once() {
        let w = Workload::throughput();
        let mut seen: Vec<usize> = (0..w.users).map(|i| w.user(i + 3 * w.users)).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..w.users).collect::<Vec<_>>());
        assert_eq!(w.user(1), 37);
        assert_eq!(w.now_ms(5) - w.now_ms(0), 5);
    }

    #[test]
    fn the_throughput_mix_refuses_about_one_call_in_five() {
        let w = Workload::throughput();
        for v in Variant::ALL {
            let l = w.limiter(v).unwrap();
            let d = w.reference_decisions(&l, 10_000).unwrap();
            let allowed = d.iter().filter(|d| d.allowed).count();
            // Token bucket and GCRA also admit their initial burst: 8 more per user over 100 calls.
            assert!((7_000..=8_800).contains(&allowed), "{v}: {allowed}");
        }
    }

    #[test]
    fn a_full_log_admits_every_call_after_filling() {
        let w = Workload::full_log(50);
        for v in [Variant::SLIDING_LOG, Variant::SEED_SLIDING_LOG] {
            let d = w.reference_decisions(&w.limiter(v).unwrap(), 500).unwrap();
            assert!(d.iter().all(|d| d.allowed), "{v}");
        }
    }
}
