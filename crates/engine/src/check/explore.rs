//! The exploration beside the standard patterns: for the promises that a call leaves the subject
//! as it should for the requests after it (cost 0 changes nothing, a refund gives back exactly
//! what it took), cases are generated with proptest over the key's state (missing, partly used,
//! full; live, expiring, expired: a fill, then the call any time up to two windows later), the
//! time of the call at any millisecond, and when the consequences are measured (any time up to two
//! windows after the call, then again up to a window after that, across window boundaries). Each
//! case plays two worlds on fresh emulators, with and without the call, and counts what the
//! following traffic gets admitted in each: they must be equal. A failing case is shrunk by proptest
//! to the smallest it finds, and its traffic is saved as a replayable trace.
//!
//! The runner's seed is derived from the check's seed, so the same spec, policy and seed explore the
//! same cases and give the same report.
use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};

use super::ctx::{arrival_at, Ctx};
use super::run::Replay;
use super::sizes::ROOM_PROBE;
use crate::attack;
use crate::traffic::Arrival;

/// Cases explored per promise.
pub const EXPLORE_CASES: u32 = 48;

/// One generated case: the fill and when it came, the call's time and the two measurements.
#[derive(Clone, Debug)]
pub(super) struct Case {
    /// Units used before the call (0: a missing key).
    pub fill: u64,
    /// ms from the fill to the call (up to two windows: live, expiring, expired keys).
    pub gap: i64,
    /// ms from the call to the first measurement (up to two windows).
    pub later: i64,
    /// ms from the first measurement to the second (1 to a window: across a boundary).
    pub then: i64,
    /// The call's offset in its window when the fill comes (any millisecond of the window).
    pub phase: i64,
}

/// A runner of `cases` cases for one exploration, seeded from the check's seed and `tag` (the
/// promise's name, with a prefix of its own per kind of exploration): the same seed, the same
/// cases. The tag's bytes are folded into the 24 bytes after the seed's.
pub(super) fn runner(seed: u64, tag: &[u8], cases: u32) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    for (i, b) in tag.iter().enumerate() {
        bytes[8 + i % 24] ^= b;
    }
    let config = Config { cases, failure_persistence: None, max_shrink_iters: 256, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

fn cases(cap: u64, w: i64) -> impl Strategy<Value = Case> {
    (0..=cap, 0..=2 * w, 0..=2 * w, 1..=w, 0..w).prop_map(|(fill, gap, later, then, phase)| Case {
        fill,
        gap,
        later,
        then,
        phase,
    })
}

impl Ctx<'_> {
    /// Plays what fits `subject` at `at_ms` (not asked: played, so that what it writes counts for
    /// what comes after): a request of nearly the capacity, then requests of cost 1 until one is
    /// refused; the units admitted, and the arrivals sent. `None` on an error.
    fn room_played(&self, r: &mut Replay<'_>, subject: &str, at_ms: i64, sent: &mut Vec<Arrival>) -> Option<u64> {
        let cap = self.limiter.params().capacity();
        let mut got = 0;
        let fill = cap.saturating_sub(ROOM_PROBE);
        if fill > 0 {
            let a = arrival_at(subject, at_ms, fill);
            let i = r.step(&a, at_ms)?;
            sent.push(a);
            if r.played[i].decision.allowed {
                got += r.played[i].decision.units(fill);
            }
        }
        for _ in 0..2 * ROOM_PROBE {
            let a = arrival_at(subject, at_ms, 1);
            let i = r.step(&a, at_ms)?;
            sent.push(a);
            if !r.played[i].decision.allowed {
                break;
            }
            got += r.played[i].decision.units(1);
        }
        Some(got)
    }

    /// Explores `promise` with `act` (what the call does in the world that has it, at `at`), and
    /// returns (cases judged, the shrunk failure with its traffic) .
    #[allow(clippy::type_complexity)]
    pub(super) fn explore(
        &self,
        promise: &str,
        act: &dyn Fn(&mut Replay<'_>, &Case, i64, &mut Vec<Arrival>) -> Option<bool>,
    ) -> (usize, Option<(Case, String, Vec<Arrival>)>) {
        let p = self.limiter.params();
        let (w, cap) = (p.window_ms as i64, p.capacity());
        let origin = attack::origin_ms(p.window_ms);
        // One case, both worlds: (with the call, without it), or `None` when the case has nothing
        // to judge; the traffic of the world with the call goes into `sent`.
        let judge = |c: &Case, sent: &mut Vec<Arrival>| -> std::result::Result<Option<(u64, u64)>, String> {
            let t0 = origin + c.phase;
            let at = t0 + c.gap;
            let (m1, m2) = (at + c.later, at + c.later + c.then);
            let world = |with: bool, sent: &mut Vec<Arrival>| -> std::result::Result<Option<u64>, String> {
                let mut r = Replay::new(self.limiter);
                if c.fill > 0 {
                    let a = arrival_at("explore", t0, c.fill);
                    r.step(&a, t0)
                        .ok_or_else(|| format!("{} units used at {t0}: error: {}", c.fill, r.error_line()))?;
                    sent.push(a);
                }
                if with {
                    match act(&mut r, c, at, sent) {
                        Some(true) => {}
                        Some(false) => return Ok(None),
                        None => return Err(format!("the call at {at}: error: {}", r.error_line())),
                    }
                } else {
                    r.skip_turn();
                }
                let x = self.room_played(&mut r, "explore", m1, sent).ok_or_else(|| r.error_line().to_string())?;
                let y = self.room_played(&mut r, "explore", m2, sent).ok_or_else(|| r.error_line().to_string())?;
                Ok(Some(x + y))
            };
            match (world(true, sent)?, world(false, &mut Vec::new())?) {
                (Some(a), Some(b)) => Ok(Some((a, b))),
                _ => Ok(None),
            }
        };
        let judged = std::cell::Cell::new(0usize);
        let mut run = runner(self.opts.seed, promise.as_bytes(), EXPLORE_CASES);
        let out = run.run(&cases(cap, w), |c| {
            let Some((a, b)) = judge(&c, &mut Vec::new()).map_err(TestCaseError::fail)? else { return Ok(()) };
            judged.set(judged.get() + 1);
            if a != b {
                return Err(TestCaseError::fail(format!(
                    "{a} unit(s) admitted then where {b} were without the call: it {}",
                    if a > b { format!("gave {} unit(s) too many", a - b) } else { format!("took {} unit(s)", b - a) }
                )));
            }
            Ok(())
        });
        match out {
            Ok(()) => (judged.get(), None),
            Err(TestError::Fail(why, c)) => {
                // The shrunk case once more, for its own traffic.
                let mut sent = Vec::new();
                let _ = judge(&c, &mut sent);
                let t0 = origin + c.phase;
                let at = t0 + c.gap;
                let what = format!(
                    "explored, shrunk to: {} of {cap} units used at {t0}, the call at {at} (+{} ms), what fits measured at {} and {} (+{} ms and +{} ms after the call): {}",
                    c.fill,
                    c.gap,
                    at + c.later,
                    at + c.later + c.then,
                    c.later,
                    c.later + c.then,
                    why.message()
                );
                (judged.get().max(1), Some((c, what, sent)))
            }
            Err(TestError::Abort(_)) => (judged.get(), None),
        }
    }
}
