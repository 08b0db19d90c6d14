//! What a caller is told, explored: the promises of one decision (`remaining`, `retry_after`, the
//! reset behind the headers, requests of the capacity and above) judged over cases generated with
//! proptest, not only at the times the standard patterns reach. A case is a key state (units used,
//! from none, a missing key, to the capacity, and when: live, expiring, expired, any ms up to two
//! windows before the call), the call's cost over the range the promise covers, and the caller's
//! clock (on time, behind the server by up to two windows, ahead by up to half a window). The call
//! is played on a fresh emulator; its reply is judged against what the limiter then really does,
//! asked on a copy of the keyspace ([`Replay::probe_many`]) by the same caller (its clock as far off
//! the server's as in the call). A failing case is shrunk by proptest to the smallest it finds.
//!
//! The runner's seed is derived from the check's seed and the promise: the same spec, policy and
//! seed explore the same cases and give the same report.
use proptest::strategy::Strategy;

use super::ctx::{arrival_at, Ctx};
use super::explore::Judged;
use super::report::{CheckResult, Status};
use super::run::Replay;
use crate::attack;
use crate::limiter::Decision;
use crate::traffic::Arrival;

/// Cases explored per promise.
pub const TOLD_CASES: u32 = 128;

/// One generated case.
#[derive(Clone, Debug)]
pub(super) struct Told {
    /// Units used before the call, in one request on time (0: a missing key).
    pub fill: u64,
    /// Units used a window before the fill, in one request on time (0: none), so that the state
    /// holds two windows' usage (a sliding window's previous and current counts).
    pub prev: u64,
    /// ms from the fill to the call (up to two windows: live, expiring, expired keys).
    pub gap: i64,
    /// The call's cost.
    pub cost: u64,
    /// The caller's clock minus the server's at the call (negative: behind).
    pub skew: i64,
    /// The fill's offset in its window (any ms of the window).
    pub phase: i64,
    /// 0 to 3: the call `gap` ms after the fill; 4 to 7: at the ms the fill's keys expire, 2 ms
    /// before to 1 ms after (`edge - 6`), whatever `gap` says.
    pub edge: i64,
}

/// A told exploration's shrunk failure: what it shows, its traffic, and the line of the script
/// that made the call's reply, where one can be named.
pub(super) struct Explored {
    pub what: String,
    pub sent: Vec<Arrival>,
    pub decided_at: Option<super::report::DecidedAt>,
    /// The caller's clock was off the server's (no replay can be written yet).
    pub skewed: bool,
}

/// The dimensions every told exploration covers, for the check lines.
pub(super) const TOLD_DIMS: [&str; 4] = [
    "explored key states (missing, partly used, full; live, expiring, expired; one window or two)",
    "call times at any ms",
    "costs",
    "callers on time, behind and ahead",
];

/// The judged outcome of one case: `Ok(true)` judged and kept, `Ok(false)` nothing to judge,
/// `Err(why)` a broken promise.
pub(super) type Verdict = std::result::Result<bool, String>;

/// The question a judge asks of the keyspace the call left: the same subject's requests of `costs`
/// at the server's `server_ms` from a caller whose clock reads `caller_ms`, on a copy.
pub(super) type Asker<'a> = dyn FnMut(i64, i64, &[u64]) -> Option<Vec<Decision>> + 'a;

/// What a judge gets: the asker, the case, the decision, and the caller's clock at the call.
pub(super) type Judge<'j> = dyn Fn(&mut Asker<'_>, &Told, &Decision, i64) -> Verdict + 'j;

impl Ctx<'_> {
    /// Explores `promise` over fills `0..=cap`, gaps up to two windows, costs in `costs` and
    /// caller clocks `skews`, each case judged by `judge` (given the caller's clock at the call);
    /// (cases judged, the shrunk failure: what it shows and its traffic).
    pub(super) fn explore_told(
        &self,
        promise: &str,
        costs: std::ops::RangeInclusive<u64>,
        skews: std::ops::RangeInclusive<i64>,
        judge: &Judge<'_>,
    ) -> (usize, Option<Explored>) {
        let p = self.limiter.params();
        let (w, cap) = (p.window_ms as i64, p.capacity());
        let origin = attack::origin_ms(p.window_ms);
        // Usage a window before the fill in half the cases.
        let prev = proptest::prop_oneof![proptest::strategy::Just(0), 0..=cap];
        // The lowest cost of the range (0 where a read is explored, 1 else) in half the cases.
        let costs = proptest::prop_oneof![proptest::strategy::Just(*costs.start()), costs];
        let strategy = ((0..=cap, prev), 0..=2 * w, costs, skews, 0..w, 0..8i64)
            .prop_map(|((fill, prev), gap, cost, skew, phase, edge)| Told { fill, prev, gap, cost, skew, phase, edge });
        // The call's time: `gap` after the fill, or at the edge of its keys' expiry.
        let call_at = |c: &Told, r: &mut Replay<'_>| -> i64 {
            let t0 = origin + c.phase;
            if c.edge < 4 {
                return t0 + c.gap;
            }
            match r.longest_ttl() {
                Some(t) => t0 + (t + c.edge - 6).max(0),
                None => t0 + c.gap,
            }
        };
        // `line`: where to note the line of the script that made the call's reply (the replay of a
        // failure only).
        let play = |c: &Told, sent: &mut Vec<Arrival>, line: Option<&mut Option<(String, u32)>>| -> Verdict {
            let t0 = origin + c.phase;
            let mut r = Replay::new(self.limiter);
            if c.prev > 0 {
                let a = arrival_at("told", t0 - w, c.prev);
                r.step(&a, t0 - w)
                    .ok_or_else(|| format!("{} units used at {}: error: {}", c.prev, t0 - w, r.error_line()))?;
                sent.push(a);
            }
            if c.fill > 0 {
                let a = arrival_at("told", t0, c.fill);
                r.step(&a, t0).ok_or_else(|| format!("{} units used at {t0}: error: {}", c.fill, r.error_line()))?;
                sent.push(a);
            }
            let at = call_at(c, &mut r);
            let a = arrival_at("told", at + c.skew, c.cost);
            let stepped = match line {
                Some(line) => r.step_traced(&a, at).map(|(i, l)| {
                    *line = l;
                    i
                }),
                None => r.step(&a, at),
            };
            let Some(i) = stepped else {
                // A request of cost 0 that errors is `peek`'s to judge.
                if c.cost == 0 {
                    return Ok(false);
                }
                return Err(format!("the call: error: {}", r.error_line()));
            };
            sent.push(a);
            let d = r.played[i].decision;
            let mut ask = |server: i64, caller: i64, costs: &[u64]| r.probe_many("told", server, caller, costs).ok();
            judge(&mut ask, c, &d, at + c.skew)
        };
        // Its own stream: a 0x7e byte before the promise's name.
        let tag: Vec<u8> = std::iter::once(0x7e).chain(promise.bytes()).collect();
        let (judged, failed) = super::explore::run_cases(self.opts.seed, &tag, TOLD_CASES, &strategy, |c| {
            // A broken promise comes back as `Err` here, and is not counted as judged.
            Ok(if play(c, &mut Vec::new(), None)? { Judged::Held } else { Judged::Nothing })
        });
        let Some((c, why)) = failed else { return (judged, None) };
        let mut sent = Vec::new();
        let mut line = None;
        let _ = play(&c, &mut sent, Some(&mut line));
        let t0 = origin + c.phase;
        let at = sent.last().map(|a| a.at.as_millis().0 - c.skew).unwrap_or(t0 + c.gap);
        let what = format!(
            "explored, shrunk to: {}{} of {cap} units used at {t0}, then a request of cost {} at {at} (+{} ms{}) from a caller whose clock reads {} ({}): {why}",
            if c.prev > 0 { format!("{} units used at {}, then ", c.prev, t0 - w) } else { String::new() },
            c.fill,
            c.cost,
            at - t0,
            if c.edge >= 4 { format!(", {} ms from the keys' expiry", c.edge - 6) } else { String::new() },
            at + c.skew,
            super::explore::clock_offset(c.skew),
        );
        (judged, Some(Explored { what, sent, decided_at: self.decided_at(line), skewed: c.skew != 0 }))
    }

    /// Adds a told exploration to the check just pushed (named `name`): its cases, and a failure
    /// with its evidence and replay.
    pub(super) fn add_told(&mut self, name: &str, explored: (usize, Option<Explored>), told_dims: &[&str]) {
        let (n, failed) = explored;
        // A replay already saved for this check (a pattern's) is kept: saving the exploration's
        // traffic would write over that file, which the check's replay names.
        let has_replay = self.checks.iter().rev().find(|c| c.name == name).is_some_and(|c| c.replay.is_some());
        let (replay, no_replay) = match &failed {
            Some(f) if !has_replay => self.save_explored(name, &f.sent, f.skewed),
            _ => (None, None),
        };
        let Some(c) = self.checks.iter_mut().rev().find(|c| c.name == name) else { return };
        if c.status == Status::Skip {
            return;
        }
        let (cases, mut dims) = match &c.coverage {
            Some(cov) => (cov.cases as usize, cov.dimensions.clone()),
            None => (0, Vec::new()),
        };
        for &d in told_dims {
            if !dims.iter().any(|x| x == d) {
                dims.push(d.to_string());
            }
        }
        let dims: Vec<&str> = dims.iter().map(String::as_str).collect();
        CheckResult::judged(c, cases + n, &dims);
        match failed {
            Some(f) => {
                c.evidence.push(f.what);
                c.evidence.extend(no_replay);
                if c.replay.is_none() {
                    c.replay = replay;
                }
                if c.decided_at.is_none() {
                    c.decided_at = f.decided_at;
                }
                if c.status != Status::Fail {
                    c.status = Status::Fail;
                    c.summary = format!("an explored case broke the promise ({n} explored)");
                }
            }
            None => c.summary = format!("{}; {n} explored cases held too", c.summary),
        }
    }
}

/// The first `n` of `v` admitted in a row.
fn admitted_in_a_row(v: &[Decision]) -> usize {
    v.iter().take_while(|x| x.allowed).count()
}

impl Ctx<'_> {
    /// The caller clocks explored: behind by up to two windows, ahead by up to half a window.
    fn skews(&self) -> std::ops::RangeInclusive<i64> {
        let w = self.limiter.params().window_ms as i64;
        -2 * w..=w / 2
    }

    /// The costs a promise of a request is explored over: `from` (0: a request that only reads
    /// is told the truth too) to the capacity, or 1 for a spec that never reads `cost`.
    fn told_costs(&self, from: u64) -> std::ops::RangeInclusive<u64> {
        if self.limiter.takes_cost() {
            from..=self.limiter.params().capacity().max(from)
        } else {
            1..=1
        }
    }

    /// `remaining`, explored: within 0..=capacity, and that many requests of cost 1 by the same
    /// caller at the same ms are admitted, the one after them refused.
    pub(super) fn told_remaining(&mut self) {
        if !self.limiter.reports().remaining {
            return;
        }
        let cap = self.limiter.params().capacity() as i64;
        let probe_units = super::sizes::PROBE_UNITS;
        let out = self.explore_told("remaining", self.told_costs(1), self.skews(), &|ask, c, d, now| {
            if d.remaining == Decision::NOT_REPORTED {
                return Ok(false);
            }
            let what = if d.allowed { "admitted" } else { "refused" };
            if d.remaining < 0 || d.remaining > cap {
                return Err(format!("{what}, told remaining {}, outside 0..={cap}", d.remaining));
            }
            let fits = d.remaining as usize;
            let units = vec![1u64; fits.min(probe_units) + usize::from(fits <= probe_units)];
            let server = now - c.skew;
            let Some(v) = ask(server, now, &units) else { return Ok(false) };
            let admitted = admitted_in_a_row(&v);
            if admitted < fits.min(probe_units) {
                return Err(format!(
                    "{what}, told remaining {}, but only {admitted} request(s) of cost 1 by the same caller at the same ms were admitted",
                    d.remaining
                ));
            }
            if fits <= probe_units && admitted > fits {
                return Err(format!(
                    "{what}, told remaining {}, but {admitted} request(s) of cost 1 by the same caller at the same ms were admitted",
                    d.remaining
                ));
            }
            Ok(true)
        });
        self.add_told("remaining", out, &TOLD_DIMS);
    }

    /// `retry_after`, explored: retrying (the same caller, the same request) after it is
    /// admitted, 1 ms earlier refused. Callers on time: what a caller off the server's clock is
    /// told is `clock_skew`'s ([`Ctx::told_skew`]), its own stimulus.
    pub(super) fn told_retry_after(&mut self) {
        let reports = self.limiter.reports();
        if !reports.retry_after {
            return;
        }
        let out = self.explore_told("retry_after", self.told_costs(1), 0..=0, &|ask, c, d, now| {
            let mut same = |x: i64, costs: &[u64]| ask(x, x, costs);
            match crate::limiter::honesty::retry_after(d, reports, now, c.cost, &mut same) {
                None => Ok(false),
                Some(v) if v.wrong.is_empty() => Ok(true),
                Some(v) => Err(v.wrong.join("; ")),
            }
        });
        self.add_told("retry_after", out, &TOLD_DIMS[..3]);
    }

    /// `clock_skew`, explored: what a caller behind or ahead of the server is told, kept on its own
    /// clock. A `retry_after` (and the `Retry-After` it makes) is a promise to the caller that acts
    /// on it: retrying then, the same caller is admitted. One way only: being admitted earlier is
    /// no fault (its keys expire on the server's clock), and the reset and the `RateLimit` quota
    /// are not judged (a limiter with a key per window rightly restarts a lagging caller's window
    /// on its own clock, where usage of the server's next window may already be). A caller behind
    /// a bucket's last update must be told the refill time plus its lag.
    pub(super) fn told_skew(&mut self) {
        let reports = self.limiter.reports();
        if !reports.retry_after {
            return;
        }
        let params = self.limiter.params();
        let out = self.explore_told("clock_skew", self.told_costs(1), self.skews(), &|ask, c, d, now| {
            // A negative wait is `retry_after`'s to judge, whoever is told it.
            if c.skew == 0 || d.retry_after_ms == Decision::TOLD_NEGATIVE {
                return Ok(false);
            }
            // What a caller is told that it finds broken when it acts on it: the retry it is
            // told, and the Retry-After that retry makes, each judged one way.
            let broken = |d: &Decision, now: i64, ask: &mut crate::limiter::honesty::Ask<'_>| -> Vec<String> {
                let mut wrong = Vec::new();
                if let Some(v) = crate::limiter::honesty::retry_kept(d, reports, now, c.cost, ask) {
                    wrong.extend(v.wrong);
                }
                if let Some(v) = crate::limiter::honesty::headers_judged(d, reports, &params, now, c.cost, false, ask) {
                    wrong.extend(v.wrong);
                }
                wrong
            };
            let wrong = broken(d, now, &mut |x: i64, costs: &[u64]| ask(x - c.skew, x, costs));
            if wrong.is_empty() {
                return Ok(crate::limiter::honesty::promises_retry(d, reports));
            }
            // The same request from a caller on time at the same ms: when what it is told breaks
            // the promise too, the skew changes nothing, and the verdict is `retry_after`'s or
            // `headers`'.
            let server = now - c.skew;
            let mut on_time = |x: i64, costs: &[u64]| ask(x, x, costs);
            if let Some(d0) = on_time(server, &[c.cost]).map(|v| v[0]) {
                if !broken(&d0, server, &mut on_time).is_empty() {
                    return Ok(false);
                }
            }
            Err(wrong.join("; "))
        });
        self.add_told("clock_skew", out, &[TOLD_DIMS[0], TOLD_DIMS[1], TOLD_DIMS[2], "callers behind and ahead"]);
    }

    /// The headers, explored: `Retry-After` and `RateLimit` kept by the same caller, and a
    /// `reset` meaning the whole quota back not later than it says (1 ms before it, the quota is
    /// not all back yet, when some of it was used).
    pub(super) fn told_headers(&mut self) {
        let reports = self.limiter.reports();
        if !(reports.retry_after || (reports.remaining && reports.reset)) {
            return;
        }
        let params = self.limiter.params();
        let cap = params.capacity();
        let quota_max = crate::limiter::honesty::QUOTA_PROBE_MAX;
        let out = self.explore_told("headers", self.told_costs(0), 0..=0, &|ask, c, d, now| {
            let mut same = |x: i64, costs: &[u64]| ask(x, x, costs);
            let v = crate::limiter::honesty::headers_judged(d, reports, &params, now, c.cost, true, &mut same);
            if let Some(v) = &v {
                if !v.wrong.is_empty() {
                    return Err(v.wrong.join("; "));
                }
            }
            // The reset, to the ms: the quota not back before it (else it was told too late), nor
            // short of it at the reset (else it was told too early: a client that waits for it is
            // refused).
            if reports.reset
                && reports.reset_means == crate::spec::ResetMeans::Quota
                && d.reset_after_ms >= 0
                && cap <= quota_max
            {
                let units = vec![1u64; cap as usize];
                let at = now + d.reset_after_ms;
                if d.reset_after_ms >= 1 {
                    if let (Some(now_v), Some(early)) = (same(now, &units), same(at - 1, &units)) {
                        if admitted_in_a_row(&now_v) < cap as usize && admitted_in_a_row(&early) == cap as usize {
                            return Err(format!(
                                "told reset {} ms, but the whole quota ({cap}) was back 1 ms before that, at {}: reset told too late",
                                d.reset_after_ms,
                                at - 1
                            ));
                        }
                    }
                }
                if let Some(then) = same(at, &units) {
                    let back = admitted_in_a_row(&then);
                    if back < cap as usize {
                        return Err(format!(
                            "told reset {} ms, but at {at} only {back} of {cap} requests of cost 1 were admitted: reset told too early",
                            d.reset_after_ms
                        ));
                    }
                }
                return Ok(true);
            }
            Ok(v.is_some())
        });
        self.add_told("headers", out, &TOLD_DIMS[..3]);
    }

    /// Requests of the capacity and a little above, explored over key states and times: above the
    /// capacity never admitted (beyond a partial grant of at most the capacity) and never promised
    /// a retry that is refused; of the capacity, admitted on an unused subject, and never told it
    /// cannot fit (no `retry_after`) when it fits once the subject has recovered.
    pub(super) fn told_oversized(&mut self) {
        if !self.limiter.takes_cost() {
            return;
        }
        let p = self.limiter.params();
        let (cap, w) = (p.capacity(), p.window_ms as i64);
        let reports = self.limiter.reports();
        // The time a subject takes to recover from full: its capacity at the limit's rate, and a
        // window more.
        let recover = (cap.div_ceil(p.limit.max(1)) as i64 + 1) * w;
        let out = self.explore_told("oversized", cap..=cap + 2, 0..=0, &|ask, c, d, now| {
            if c.cost > cap {
                if d.allowed && !(reports.granted && d.units(c.cost) <= cap) {
                    return Err(format!("cost {} admitted, though the capacity is {cap}", c.cost));
                }
                if !d.allowed && reports.retry_after && d.retry_after_ms >= 0 {
                    let later = now + d.retry_after_ms;
                    if let Some(v) = ask(later, later, &[c.cost]) {
                        if !v[0].allowed {
                            return Err(format!(
                                "cost {} refused with retry_after {} ms, but it can never fit (capacity {cap}): retrying at {later} was refused",
                                c.cost, d.retry_after_ms
                            ));
                        }
                    }
                }
                return Ok(true);
            }
            if d.allowed {
                return Ok(true);
            }
            // Refused: once the subject has recovered it fits, and a refusal that says it never
            // will (no retry_after) is wrong.
            let later = now + recover;
            let Some(v) = ask(later, later, &[c.cost]) else { return Ok(false) };
            if !v[0].allowed {
                return Err(format!(
                    "cost {} (the capacity) refused, and refused again at {later}, after the subject had {recover} ms to recover: a request of the capacity must fit an unused subject",
                    c.cost
                ));
            }
            if reports.retry_after && d.retry_after_ms == Decision::NOT_REPORTED {
                return Err(format!(
                    "cost {} (the capacity) refused without a retry_after, as if it could never fit, but the same request at {later} was admitted",
                    c.cost
                ));
            }
            Ok(true)
        });
        self.add_told("oversized", out, &[TOLD_DIMS[0], TOLD_DIMS[1], "costs of the capacity and above"]);
    }
}
