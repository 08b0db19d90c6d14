//! The exploration beside the standard patterns: for the promises that a call leaves the subject
//! as it should for the requests after it (cost 0 changes nothing, a refund gives back exactly
//! what it took, an admission takes no more than its cost), cases are generated with proptest over
//! the key's state (missing, partly used, full; live, expiring, expired: a fill, then the call any
//! time up to two windows later or at the ms its keys expire), the time of the call at any
//! millisecond, the caller's clock where the promise covers skewed callers, and when the
//! consequences are measured (any time up to two windows after the call, then again up to a window
//! after that, across window boundaries). Each case plays two worlds on fresh emulators, with and
//! without the call, and counts what the following traffic gets admitted in each. The same way,
//! with expiry on and off (`explore_expiry`: no key expires while its usage still counts),
//! and alone (`explore_instant`: never more than the capacity at one ms). A failing case is
//! shrunk by proptest to the smallest it finds, and its traffic is saved as a replayable trace.
//!
//! The runner's seed is derived from the check's seed, so the same spec, policy and seed explore the
//! same cases and give the same report.
use proptest::prelude::{prop_oneof, Just};
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
    /// The calling client's clock minus the server's at the call (0 where the promise is asked
    /// of callers on time only).
    pub skew: i64,
    /// 0 to 3: the call `gap` ms after the fill; 4 to 7: at the ms the fill's keys expire, 2 ms
    /// before to 1 ms after (`edge - 6`), whatever `gap` says.
    pub edge: i64,
}

/// What a call explored by `explore` may do to what fits afterwards.
#[derive(Clone, Copy, Debug)]
pub(super) struct Allowance {
    /// The units it may take (its cost, for an admission).
    pub takes: u64,
    /// Whether it may give room: an admission may start a window earlier than the traffic after
    /// it would, and a write from a clock ahead hands out early what any request from that clock
    /// does (`clock_skew`'s to judge).
    pub gives: bool,
}

impl Allowance {
    /// Neither takes nor gives (cost 0, a refund after its request).
    pub const NOTHING: Allowance = Allowance { takes: 0, gives: false };
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

/// What [`run_cases`]'s test says of one case.
pub(super) enum Judged {
    /// Nothing to judge in this case.
    Nothing,
    /// Judged, and the promise held.
    Held,
    /// Judged, and the promise was broken: why.
    Broke(String),
}

/// Runs `cases` cases of `strategy` with [`runner`]'s seed; `test` judges one case (`Err(why)`: an
/// error, or a broken promise the test does not count as judged). Returns the cases judged and the
/// case proptest shrank a failure to, with its reason.
pub(super) fn run_cases<S: Strategy>(
    seed: u64,
    tag: &[u8],
    cases: u32,
    strategy: &S,
    test: impl Fn(&S::Value) -> std::result::Result<Judged, String>,
) -> (usize, Option<(S::Value, String)>) {
    let judged = std::cell::Cell::new(0usize);
    let out = runner(seed, tag, cases).run(strategy, |c| match test(&c).map_err(TestCaseError::fail)? {
        Judged::Nothing => Ok(()),
        Judged::Held => {
            judged.set(judged.get() + 1);
            Ok(())
        }
        Judged::Broke(why) => {
            judged.set(judged.get() + 1);
            Err(TestCaseError::fail(why))
        }
    });
    match out {
        Ok(()) | Err(TestError::Abort(_)) => (judged.get(), None),
        Err(TestError::Fail(why, c)) => (judged.get().max(1), Some((c, why.message().to_string()))),
    }
}

/// A caller's clock against the server's, in words: "on time", "N ms behind", "N ms ahead".
pub(super) fn clock_offset(skew: i64) -> String {
    match skew {
        0 => "on time".to_string(),
        s if s < 0 => format!("{} ms behind", -s),
        s => format!("{s} ms ahead"),
    }
}

/// What one exploration covers besides key states and times.
pub(super) struct Dims {
    /// The caller's clock minus the server's at the call (`0..=0`: callers on time).
    pub skews: std::ops::RangeInclusive<i64>,
    /// The call at the ms the fill's keys expire (2 ms before to 1 ms after) in half the cases.
    pub edges: bool,
    /// The first measurement at once after the call in a third of the cases and within a quarter
    /// window in another third (where a call that moved the subject into another window, or a
    /// clock ahead's, still shows), else any time up to two windows later.
    pub soon: bool,
    /// How many cases.
    pub cases: u32,
}

/// The cases of one exploration (see [`Dims`]); where skewed callers are explored, a third of the
/// cases are on time, a third behind and a third ahead.
fn cases(cap: u64, w: i64, dims: &Dims) -> impl Strategy<Value = Case> {
    let later =
        if dims.soon { prop_oneof![Just(0), 0..=(w / 4).max(1), 0..=2 * w].boxed() } else { (0..=2 * w).boxed() };
    let (lo, hi) = (*dims.skews.start(), *dims.skews.end());
    let edges = dims.edges;
    let skew = prop_oneof![Just(0), lo..=0.min(hi), 0.max(lo)..=hi];
    (0..=cap, 0..=2 * w, later, 1..=w, 0..w, skew, 0..if edges { 8i64 } else { 4 })
        .prop_map(|(fill, gap, later, then, phase, skew, edge)| Case { fill, gap, later, then, phase, skew, edge })
}

impl Ctx<'_> {
    /// A fresh replay for one world of an exploration. A spec of several client processes has all
    /// its requests sent to one of them: each process decides on what it last heard from the
    /// others, so with requests taking turns, one request more in a world would change what the
    /// others know and when they sync, not only what the keys hold.
    fn world(&self) -> Replay<'_> {
        let mut r = Replay::new(self.limiter);
        if self.limiter.spec().processes > 1 {
            r.pin_process(0);
        }
        r
    }

    /// The lag in ms the spec declares its keys are built for (`max_clock_lag`, in windows): 0
    /// when it declares none.
    pub(super) fn max_lag_ms(&self) -> i64 {
        let w = self.limiter.params().window_ms as f64;
        (self.limiter.spec().max_clock_lag.unwrap_or(0.0) * w).floor() as i64
    }

    /// Plays what fits `subject` at `at_ms` (not asked: played, so that what it writes counts for
    /// what comes after): the largest request that fits whole (found by asking), then requests of
    /// cost 1 until one is refused (a spec that never reads `cost`, with a capacity up to
    /// [`INSTANT_REQUESTS_MAX`]: requests of 1 until one is refused; above it, one of nearly the
    /// capacity, then requests of 1); the units admitted, and the arrivals sent. `None` on an
    /// error.
    fn room_played(&self, r: &mut Replay<'_>, subject: &str, at_ms: i64, sent: &mut Vec<Arrival>) -> Option<u64> {
        self.room_played_by(r, subject, at_ms, 0, sent)
    }

    /// [`Ctx::room_played`] by a caller whose clock reads `skew` ms off the server's.
    fn room_played_by(
        &self,
        r: &mut Replay<'_>,
        subject: &str,
        at_ms: i64,
        skew: i64,
        sent: &mut Vec<Arrival>,
    ) -> Option<u64> {
        let cap = self.limiter.params().capacity();
        // A spec that never reads `cost`: request by request, the whole capacity and more.
        if !self.limiter.takes_cost() && cap <= INSTANT_REQUESTS_MAX {
            return self.units_played_by(r, subject, at_ms, skew, cap + ROOM_PROBE, sent);
        }
        let mut got = 0;
        // The largest single request that fits whole, found by asking (a copy of the keyspace,
        // put back), so that the room is measured to the unit; without `cost`, nearly the
        // capacity.
        let fill = if self.limiter.takes_cost() {
            let fits = |r: &mut Replay<'_>, c: u64| -> Option<bool> {
                let d = r.probe(subject, at_ms, at_ms + skew, c).ok()?;
                Some(d.allowed && d.units(c) == c)
            };
            let (mut lo, mut hi) = (0, cap);
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                if fits(r, mid)? {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            lo
        } else {
            cap.saturating_sub(ROOM_PROBE)
        };
        if fill > 0 {
            let a = arrival_at(subject, at_ms + skew, fill);
            let i = r.step(&a, at_ms)?;
            sent.push(a);
            got += r.played[i].decision.units(fill);
        }
        Some(got + singles_played(r, subject, at_ms, skew, 2 * ROOM_PROBE, sent)?)
    }

    /// Explores `promise` with `act` (what the call does in the world that has it, at the
    /// server's `at`, from a caller whose clock is off by the case's skew; `dims` says which
    /// times and clocks are explored:
    /// `Some(Some(allowance))` with what it may take from what fits afterwards and whether it may
    /// give some, `Some(None)` when
    /// the case has nothing to judge, `None` on an error), and returns (cases judged, the shrunk failure with its traffic). What fits afterwards is
    /// measured by callers on time.
    #[allow(clippy::type_complexity)]
    pub(super) fn explore(
        &self,
        promise: &str,
        dims: Dims,
        act: &dyn Fn(&mut Replay<'_>, &Case, i64, &mut Vec<Arrival>) -> Option<Option<Allowance>>,
    ) -> (usize, Option<(Case, String, Vec<Arrival>)>) {
        let p = self.limiter.params();
        let (w, cap) = (p.window_ms as i64, p.capacity());
        let origin = attack::origin_ms(p.window_ms);
        // The call's time: `gap` after the fill, or at the edge of its keys' expiry.
        let call_at = |c: &Case| -> i64 {
            let t0 = origin + c.phase;
            if c.edge < 4 || c.fill == 0 {
                return t0 + c.gap;
            }
            let mut r = self.world();
            match r.step(&arrival_at("explore", t0, c.fill), t0).and_then(|_| r.longest_ttl()) {
                Some(t) => t0 + (t + c.edge - 6).max(0),
                None => t0 + c.gap,
            }
        };
        // One case, both worlds: (with the call, without it), or `None` when the case has nothing
        // to judge; the traffic of the world with the call goes into `sent`.
        let judge = |c: &Case, sent: &mut Vec<Arrival>| -> std::result::Result<Option<(u64, u64, Allowance)>, String> {
            let t0 = origin + c.phase;
            let at = call_at(c);
            let (m1, m2) = (at + c.later, at + c.later + c.then);
            let mut takes = Allowance::NOTHING;
            let mut world = |with: bool, sent: &mut Vec<Arrival>| -> std::result::Result<Option<u64>, String> {
                let mut r = self.world();
                if c.fill > 0 {
                    let a = arrival_at("explore", t0, c.fill);
                    r.step(&a, t0)
                        .ok_or_else(|| format!("{} units used at {t0}: error: {}", c.fill, r.error_line()))?;
                    sent.push(a);
                }
                if with {
                    match act(&mut r, c, at, sent) {
                        Some(Some(k)) => takes = k,
                        Some(None) => return Ok(None),
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
                (Some(a), Some(b)) => Ok(Some((a, b, takes))),
                _ => Ok(None),
            }
        };
        let (judged, failed) = run_cases(self.opts.seed, promise.as_bytes(), dims.cases, &cases(cap, w, &dims), |c| {
            let Some((a, b, allow)) = judge(c, &mut Vec::new())? else { return Ok(Judged::Nothing) };
            let k = allow.takes;
            if a > b && !allow.gives {
                return Ok(Judged::Broke(format!(
                    "{a} unit(s) admitted then where {b} were without the call: it gave {} unit(s) too many",
                    a - b
                )));
            }
            if b.saturating_sub(a) > k {
                return Ok(Judged::Broke(format!(
                    "{a} unit(s) admitted then where {b} were without the call: it took {} unit(s){}",
                    b - a,
                    if k > 0 { format!(", more than the {k} it was admitted for") } else { String::new() }
                )));
            }
            Ok(Judged::Held)
        });
        let Some((c, why)) = failed else { return (judged, None) };
        // The shrunk case once more, for its own traffic.
        let mut sent = Vec::new();
        let _ = judge(&c, &mut sent);
        let t0 = origin + c.phase;
        let at = call_at(&c);
        let what = format!(
            "explored, shrunk to: {} of {cap} units used at {t0}, the call at {at} (+{} ms{}{}), what fits measured at {} and {} (+{} ms and +{} ms after the call): {why}",
            c.fill,
            at - t0,
            if c.edge >= 4 && c.fill > 0 { format!(", {} ms from the keys' expiry", c.edge - 6) } else { String::new() },
            if c.skew == 0 { String::new() } else { format!(", from a caller whose clock is {}", clock_offset(c.skew)) },
            at + c.later,
            at + c.later + c.then,
            c.later,
            c.later + c.then,
        );
        (judged, Some((c, what, sent)))
    }
}

/// One generated case of the expiry exploration: a fill, then what fits measured twice, the first
/// time at the ms the fill's keys expire (2 ms before to 1 ms after) or anywhere up to two windows
/// after the fill.
#[derive(Clone, Debug)]
pub(super) struct Expiry {
    /// Units used, in one request on time (at least 1: a missing key has nothing to expire).
    pub fill: u64,
    /// The fill's offset in its window.
    pub phase: i64,
    /// At the keys' expiry (`near` ms from it) or `far` ms after the fill.
    pub at_edge: bool,
    pub near: i64,
    pub far: i64,
    /// ms from the first measurement to the second.
    pub then: i64,
    /// 0, or where the spec declares `max_clock_lag`: a caller this many ms behind the server
    /// writes `mine` units `after` ms after the fill (its clock at or before the fill's), and what
    /// fits is measured for that caller.
    pub lag: i64,
    pub mine: u64,
    pub after: i64,
    /// For a lagging caller, the measurement at the keys' expiry comes up to `late` ms (at most
    /// its lag) later: the span its clock may still count what the server's forgot.
    pub late: i64,
}

impl Ctx<'_> {
    /// Explores that no key expires while still needed: cases of a fill and what fits afterwards
    /// (at the ms its keys expire, or any time up to two windows later, then again up to a window
    /// after that), each played in two worlds on fresh emulators, with expiry and with expired keys
    /// kept. More admitted with expiry than without means a key's expiry forgot usage that still
    /// counted. (Less admitted is a script that relies on its keys being gone once stale, which
    /// every server honours.) (cases judged, the shrunk failure with its traffic).
    pub(super) fn explore_expiry(&self) -> (usize, Option<(String, Vec<Arrival>, bool)>) {
        let p = self.limiter.params();
        let (w, cap) = (p.window_ms as i64, p.capacity());
        let origin = attack::origin_ms(p.window_ms);
        // A spec that never reads `cost` is filled request by request, up to
        // `INSTANT_REQUESTS_MAX` of them.
        let fills = if self.limiter.takes_cost() { 1..=cap.max(1) } else { 1..=cap.clamp(1, INSTANT_REQUESTS_MAX) };
        let max_lag = self.max_lag_ms();
        // A lagging caller in half the cases where the spec declares a lag it is built for.
        let lag = if max_lag > 0 { prop_oneof![Just(0), 1..=max_lag].boxed() } else { Just(0).boxed() };
        // The lagging write right after the fill in a third of the cases (its clock furthest
        // behind); the measurement at once, 1 ms or up to the lag after the keys' expiry.
        let after = prop_oneof![Just(0), 0..=max_lag];
        let late = prop_oneof![Just(0), Just(1), 0..=max_lag];
        let strategy = (fills.clone(), 0..w, proptest::bool::ANY, -2..=1i64, 0..=2 * w, 1..=w, lag, fills, after, late)
            .prop_map(|(fill, phase, at_edge, near, far, then, lag, mine, after, late)| Expiry {
                fill,
                phase,
                at_edge,
                near,
                far,
                then,
                lag,
                mine,
                after: after.min(lag),
                late: late.min(lag),
            });
        // What fits at the two measurements, with `expiry` on or off; `None` when the case has
        // nothing to judge (an error in either world: the other checks own it).
        let world = |c: &Expiry, expiry: bool, sent: &mut Vec<Arrival>| -> Option<([u64; 2], i64, i64)> {
            let t0 = origin + c.phase;
            let mut r = self.world();
            r.backend.emu.set_expiry(expiry);
            self.units_played(&mut r, "expiry", t0, c.fill, sent)?;
            // The lagging caller's write while the fill's keys live (what a caller finds after
            // they expired is no usage of its own; a limiter cannot know of a caller's lag before
            // it writes), then what fits for it (its clock `lag` behind).
            let last = if c.lag > 0 {
                let after = match r.longest_ttl() {
                    Some(t) if t >= 1 => c.after.min(t - 1),
                    _ => c.after,
                };
                // Refused, it wrote nothing of its own: nothing to judge.
                if self.units_played_by(&mut r, "expiry", t0 + after, -c.lag, c.mine, sent)? == 0 {
                    return None;
                }
                t0 + after
            } else {
                t0
            };
            let m1 = if c.at_edge { last + (r.longest_ttl()? + c.near + c.late).max(0) } else { last + c.far };
            let x = self.room_played_by(&mut r, "expiry", m1, -c.lag, sent)?;
            let y = self.room_played_by(&mut r, "expiry", m1 + c.then, -c.lag, sent)?;
            Some(([x, y], m1, last))
        };
        // Twice the cases where half of them are a lagging caller's.
        let n = if max_lag > 0 { 2 * EXPLORE_CASES } else { EXPLORE_CASES };
        let (judged, failed) = run_cases(self.opts.seed, b"\x7fexpiry", n, &strategy, |c| {
            let (Some((on, _, _)), Some((off, _, _))) =
                (world(c, true, &mut Vec::new()), world(c, false, &mut Vec::new()))
            else {
                return Ok(Judged::Nothing);
            };
            // More at the first measurement, or over both: the worlds are the same until then.
            let (first, both) = (on[0] > off[0], on[0] + on[1] > off[0] + off[1]);
            if first || both {
                let (a, b) = if first { (on[0], off[0]) } else { (on[0] + on[1], off[0] + off[1]) };
                return Ok(Judged::Broke(format!(
                    "{a} unit(s) admitted{} where {b} were with expired keys kept: a key expired while its usage still counted",
                    if first { " at the first measurement" } else { "" }
                )));
            }
            Ok(Judged::Held)
        });
        let Some((c, why)) = failed else { return (judged, None) };
        let mut sent = Vec::new();
        let t0 = origin + c.phase;
        let (m1, last) = world(&c, true, &mut sent).map(|(_, m, l)| (m, l)).unwrap_or((t0, t0));
        let lagging = if c.lag > 0 {
            format!(", then {} by a caller {} ms behind at {} (its clock {}),", c.mine, c.lag, last, last - c.lag)
        } else {
            ",".to_string()
        };
        let what = format!(
            "explored, shrunk to: {} of {cap} units used at {t0}{lagging} what fits{} measured at {m1} (+{} ms{}) and {} (+{} ms): {why}",
            c.fill,
            if c.lag > 0 { " for that caller" } else { "" },
            m1 - t0,
            if c.at_edge { format!(", {} ms from the keys' expiry", c.near + c.late) } else { String::new() },
            m1 + c.then,
            m1 + c.then - t0,
        );
        (judged, Some((what, sent, c.lag > 0)))
    }
}

/// The largest capacity whose instants are explored for a spec that never reads `cost` (each unit
/// is a request of its own there).
pub const INSTANT_REQUESTS_MAX: u64 = 256;

impl Ctx<'_> {
    /// Units admitted to `subject` at `at_ms`, asking for up to `upto` units (a spec that reads
    /// `cost`: one request of `upto - ROOM_PROBE`, then requests of cost 1 until one is refused;
    /// else requests one by one); `None` on an error.
    fn units_played(
        &self,
        r: &mut Replay<'_>,
        subject: &str,
        at_ms: i64,
        upto: u64,
        sent: &mut Vec<Arrival>,
    ) -> Option<u64> {
        self.units_played_by(r, subject, at_ms, 0, upto, sent)
    }

    /// [`Ctx::units_played`] by a caller whose clock reads `skew` ms off the server's.
    fn units_played_by(
        &self,
        r: &mut Replay<'_>,
        subject: &str,
        at_ms: i64,
        skew: i64,
        upto: u64,
        sent: &mut Vec<Arrival>,
    ) -> Option<u64> {
        let mut got = 0;
        let mut left = upto;
        if self.limiter.takes_cost() && upto > ROOM_PROBE {
            let first = upto - ROOM_PROBE;
            let a = arrival_at(subject, at_ms + skew, first);
            let i = r.step(&a, at_ms)?;
            sent.push(a);
            got += r.played[i].decision.units(first);
            left = ROOM_PROBE;
        }
        Some(got + singles_played(r, subject, at_ms, skew, left, sent)?)
    }

    /// Explores the bound every family keeps at a single instant: whatever came before (a fill of
    /// any size, then an idle of any length up to the subject's full recovery and a window more),
    /// the requests of one subject admitted at one ms never add up to more than the capacity.
    /// (cases judged, the shrunk failure with its traffic). A spec that never reads `cost` is
    /// explored up to a capacity of [`INSTANT_REQUESTS_MAX`] (its units are requests).
    pub(super) fn explore_instant(&self) -> (usize, Option<(String, Vec<Arrival>)>) {
        let p = self.limiter.params();
        let (w, cap) = (p.window_ms as i64, p.capacity());
        if !self.limiter.takes_cost() && cap > INSTANT_REQUESTS_MAX {
            return (0, None);
        }
        let origin = attack::origin_ms(p.window_ms);
        let recover = (cap.div_ceil(p.limit.max(1)) as i64 + 1) * w;
        let strategy = (0..=cap, 0..w, 0..=recover);
        // Units admitted at the ms `idle` after the fill, asking for the capacity and more;
        // `None` on an error.
        let play = |(fill, phase, idle): (u64, i64, i64), sent: &mut Vec<Arrival>| -> Option<(u64, i64, i64)> {
            let t0 = origin + phase;
            let mut r = self.world();
            self.units_played(&mut r, "instant", t0, fill, sent)?;
            let at = t0 + idle;
            Some((self.units_played(&mut r, "instant", at, cap + ROOM_PROBE, sent)?, t0, at))
        };
        let (judged, failed) = run_cases(self.opts.seed, b"\x7finstant", EXPLORE_CASES, &strategy, |&c| {
            let Some((got, _, _)) = play(c, &mut Vec::new()) else { return Ok(Judged::Nothing) };
            if got > cap {
                return Ok(Judged::Broke(format!(
                    "{got} units admitted to one subject at one ms, more than the capacity ({cap})"
                )));
            }
            Ok(Judged::Held)
        });
        let Some((c, why)) = failed else { return (judged, None) };
        let mut sent = Vec::new();
        let (_, t0, at) = play(c, &mut sent).unwrap_or_default();
        let what = format!(
            "explored, shrunk to: {} of {cap} units used at {t0}, then requests at {at} (+{} ms): {why}",
            c.0,
            at - t0
        );
        (judged, Some((what, sent)))
    }
}

/// Plays requests of cost 1 from `subject` at the server's `at_ms` (the caller's clock `skew` ms
/// off it), up to `n` of them, until one is refused; the
/// units admitted, and the arrivals sent. `None` on an error.
fn singles_played(
    r: &mut Replay<'_>,
    subject: &str,
    at_ms: i64,
    skew: i64,
    n: u64,
    sent: &mut Vec<Arrival>,
) -> Option<u64> {
    let mut got = 0;
    for _ in 0..n {
        let a = arrival_at(subject, at_ms + skew, 1);
        let i = r.step(&a, at_ms)?;
        sent.push(a);
        if !r.played[i].decision.allowed {
            break;
        }
        got += r.played[i].decision.units(1);
    }
    Some(got)
}
