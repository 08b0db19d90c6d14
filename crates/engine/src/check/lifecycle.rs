//! The checks of what a request or an operation leaves for the requests after it: cost 0 (`peek`),
//! refund, reset and clear (`lifecycle`), and callers whose clock is off the server's
//! (`clock_skew`).
use super::ctx::{arrival_at, Ctx};
use super::explore::{Allowance, Dims, EXPLORE_CASES};
use super::report::{CheckResult, Status};
use super::run::Replay;
use super::sizes::{DEFAULT_OVERSHOOT_BOUND, ROOM_PROBE};
use crate::attack;
use crate::spec::Op;

impl Ctx<'_> {
    /// How much fits `subject` at `at_ms` on `r`: a request of nearly the capacity (leaving
    /// [`ROOM_PROBE`] units, when the spec reads `cost`; else that many requests of cost 1), then up
    /// to `2 * ROOM_PROBE` requests of cost 1; the number admitted. Comparing two keyspaces this
    /// way tells apart a unit more or less even at a capacity of thousands. `None` on an error.
    pub(super) fn room(&self, r: &mut Replay<'_>, subject: &str, at_ms: i64) -> Option<usize> {
        let cap = self.limiter.params().capacity();
        let fill = cap.saturating_sub(ROOM_PROBE);
        let mut costs = Vec::new();
        if self.limiter.takes_cost() {
            if fill > 0 {
                costs.push(fill);
            }
        } else {
            costs.extend(std::iter::repeat_n(1, fill as usize));
        }
        costs.extend(std::iter::repeat_n(1, 2 * ROOM_PROBE as usize));
        let v = r.probe_many(subject, at_ms, at_ms, &costs).ok()?;
        Some(v.iter().zip(&costs).filter(|(d, _)| d.allowed).map(|(d, &c)| d.units(c) as usize).sum())
    }

    /// A request of cost 0 (a read-only "check" or "peek") must leave the subject as it found it:
    /// as much fits after it as without it, at the same ms, half a window later and a window
    /// later; at a subject with room and at a full one (and an unused one when the capacity is
    /// small). Judged when the spec reads `cost`.
    pub(super) fn peek(&mut self) {
        if !self.limiter.takes_cost() {
            self.checks.push(CheckResult::new(
                "peek",
                Status::Skip,
                "the spec never reads `cost`: a request of cost 0 cannot be told apart from one of cost 1".into(),
            ));
            return;
        }
        let p = self.limiter.params();
        let (w, cap) = (p.window_ms as i64, p.capacity());
        let t = attack::origin_ms(p.window_ms) + w / 3;
        let mut c = CheckResult::new("peek", Status::Pass, String::new());
        // An unused subject at every capacity (a cost-0 call on a missing key is where scripts
        // that write on a read go wrong), a partly used one and a full one.
        let mut fills = vec![0, cap - cap.min(ROOM_PROBE / 2), cap];
        fills.dedup();
        let mut judged = 0;
        for &fill in &fills {
            for later in [0, w / 2, w] {
                let play = |peek: bool| -> (Replay<'_>, bool) {
                    let mut r = Replay::new(self.limiter);
                    let mut ok = true;
                    if fill > 0 {
                        ok &= r.step(&arrival_at("peek", t - 1, fill), t - 1).is_some();
                    }
                    if peek {
                        ok &= r.step(&arrival_at("peek", t, 0), t).is_some();
                    } else {
                        r.skip_turn();
                    }
                    (r, ok)
                };
                let ((mut a, ok_a), (mut b, ok_b)) = (play(true), play(false));
                if !(ok_a && ok_b) {
                    let e = if a.error.is_some() { a.error_line() } else { b.error_line() };
                    c.evidence
                        .push(format!("{fill} units used at {}, then a request of cost 0 at {t}: error: {e}", t - 1));
                    break;
                }
                judged += 1;
                let at_ms = t + later;
                let (x, y) = (self.room(&mut a, "peek", at_ms), self.room(&mut b, "peek", at_ms));
                if let (Some(x), Some(y)) = (x, y) {
                    if x != y {
                        c.evidence.push(format!(
                            "{fill} of {cap} units used at {}, then a request of cost 0 at {t}: at {at_ms} (+{later} ms) {x} unit(s) fit where {y} fit without it: the request of cost 0 {}",
                            t - 1,
                            if x < y { "used up room" } else { "gave room back" }
                        ));
                    }
                }
            }
        }
        // From callers on time, behind by up to two windows and ahead by up to half a window: a
        // read from a clock ahead that writes its own window or bucket into the key moves the
        // callers on time.
        let skews = -2 * w..=w / 2;
        let dims = Dims { skews, edges: true, soon: true, cases: 2 * EXPLORE_CASES };
        let (explored, failed) = self.explore("peek", dims, &|r, c, at, sent| {
            let a = arrival_at("explore", at + c.skew, 0);
            let ok = r.step(&a, at).is_some();
            sent.push(a);
            // From a clock ahead, a write may hand out early what a request from that clock
            // would (`clock_skew`'s); taking room from the callers on time is the read's fault.
            ok.then_some(Some(Allowance { takes: 0, gives: c.skew != 0 }))
        });
        if let Some((case, what, sent)) = failed {
            c.evidence.push(format!("a request of cost 0, {what}"));
            if c.replay.is_none() {
                let (replay, no_replay) = self.save_explored("peek", &sent, case.skew != 0);
                c.replay = replay;
                c.evidence.extend(no_replay);
            }
        }
        c.judged(
            judged + explored,
            &[
                "subject states (missing, partly used, full; live, expiring, expired)",
                "call times at any ms",
                "callers on time, behind and ahead",
                "consequences up to three windows later",
            ],
        );
        if c.evidence.is_empty() {
            c.summary = format!("{judged} requests of cost 0 (at an unused, a partly used and a full subject) left as much room as no request, then, half a window and a window later; so did {explored} explored ones (any state, time, caller's clock and later measurement)");
        } else {
            c.status = Status::Fail;
            c.summary = format!("{} request(s) of cost 0 changed what fits: cost 0 must only read", c.evidence.len());
        }
        self.checks.push(c);
    }

    /// The client's lifecycle operations, each against the world where it has nothing to undo:
    /// - refund: a request of cost k admitted at t and refunded at t, t + W/2 or t + W leaves the
    ///   subject exactly as if the request had never come (with the subject nearly full before it,
    ///   so that a unit too many given back shows);
    /// - reset: a full subject reset at t or t + W/2 has as much room as an unused one, and a
    ///   subject not reset keeps its own state;
    /// - clear: every subject has as much room as an unused one.
    pub(super) fn lifecycle(&mut self) {
        let spec = self.limiter.spec();
        let have: Vec<Op> = Op::ALL.into_iter().filter(|o| spec.has_op(*o)).collect();
        if have.is_empty() {
            self.checks.push(CheckResult::new(
                "lifecycle",
                Status::Skip,
                "the spec has no refund, reset or clear".into(),
            ));
            return;
        }
        let p = self.limiter.params();
        let (w, cap) = (p.window_ms as i64, p.capacity());
        let t = attack::origin_ms(p.window_ms) + w / 3;
        let k = if self.limiter.takes_cost() { cap.min(2) } else { 1 };
        let mut c = CheckResult::new("lifecycle", Status::Pass, String::new());
        let mut judged = 0;
        for &op in &have {
            judged += match op {
                Op::Refund => self.refunds_played(&mut c, t, k),
                Op::Reset | Op::Clear => self.resets_played(&mut c, op, t),
                Op::Request => 0,
            };
        }
        // Refunds explored: any fill, time and measurement (specs that read `cost`: the
        // measurement fills the capacity in one request).
        let mut explored = 0;
        if have.contains(&Op::Refund) && self.limiter.takes_cost() {
            explored = self.refunds_explored(&mut c, k);
        }
        let names: Vec<&str> = have.iter().map(|o| o.name()).collect();
        c.judged(
            judged + explored,
            &["operations", "times after the request", "explored refunds: subject states, times, consequences later"],
        );
        if c.evidence.is_empty() {
            c.summary = format!(
                "{judged} lifecycle operations ({}) each left the subjects exactly as the world without what they undo",
                names.join(", ")
            );
        } else {
            c.status = Status::Fail;
            c.summary = format!("{} problem(s) with the client's {}", c.evidence.len(), names.join(", "));
        }
        self.checks.push(c);
    }

    /// `n` units of `subject` at `at` (one request when the spec reads cost); false on an error.
    fn fill(&self, r: &mut Replay<'_>, subject: &str, at: i64, n: u64) -> bool {
        if n == 0 {
            return true;
        }
        if self.limiter.takes_cost() {
            r.step(&arrival_at(subject, at, n), at).is_some()
        } else {
            (0..n).all(|_| r.step(&arrival_at(subject, at, 1), at).is_some())
        }
    }

    /// A request of cost `k` at `t` refunded at once, half a window and a window later, against the
    /// world where it never came: the same room afterwards. The cases judged.
    fn refunds_played(&self, c: &mut CheckResult, t: i64, k: u64) -> usize {
        let p = self.limiter.params();
        let (w, cap) = (p.window_ms as i64, p.capacity());
        let before = cap.saturating_sub(k + ROOM_PROBE / 2);
        let mut judged = 0;
        for later in [0, w / 2, w] {
            let t2 = t + later;
            let mut a = Replay::new(self.limiter);
            let mut b = Replay::new(self.limiter);
            if !(self.fill(&mut a, "life", t - 1, before) && self.fill(&mut b, "life", t - 1, before)) {
                failed(c, if a.error.is_some() { &a } else { &b }, &format!("{before} units used at {}", t - 1));
                break;
            }
            let Some(i) = a.step(&arrival_at("life", t, k), t) else {
                failed(c, &a, &format!("a request of cost {k} at {t}"));
                break;
            };
            if !a.played[i].decision.allowed {
                continue;
            }
            if a.op(Op::Refund, "life", t2, k).is_err() {
                failed(c, &a, &format!("a refund of {k} at {t2}"));
                break;
            }
            b.align_turns(&a);
            judged += 1;
            if let (Some(x), Some(y)) = (self.room(&mut a, "life", t2), self.room(&mut b, "life", t2)) {
                if x != y {
                    c.evidence.push(format!(
                        "{before} of {cap} units used at {}, a request of cost {k} admitted at {t} and refunded at {t2} (+{later} ms): {x} unit(s) fit then where {y} fit had the request never come: the refund gave back {}",
                        t - 1,
                        if x > y { format!("{} unit(s) too many", x - y) } else { format!("{} unit(s) too few", y - x) }
                    ));
                }
            }
        }
        judged
    }

    /// A reset (or a clear) of a full subject at once and half a window later: the subject then as
    /// an unused one, and another subject untouched by a reset, unused after a clear. The cases
    /// judged.
    fn resets_played(&self, c: &mut CheckResult, op: Op, t: i64) -> usize {
        let p = self.limiter.params();
        let (w, cap) = (p.window_ms as i64, p.capacity());
        let mut judged = 0;
        for later in [0, w / 2] {
            let t2 = t + later;
            let mut a = Replay::new(self.limiter);
            let mut b = Replay::new(self.limiter);
            if !(self.fill(&mut a, "life", t - 1, cap)
                && self.fill(&mut a, "other", t - 1, cap)
                && self.fill(&mut b, "other", t - 1, cap))
            {
                failed(c, if a.error.is_some() { &a } else { &b }, &format!("{cap} units used at {}", t - 1));
                break;
            }
            if a.op(op, "life", t2, 0).is_err() {
                failed(c, &a, &format!("a {} at {t2}", op.name()));
                break;
            }
            b.align_turns(&a);
            judged += 1;
            let fresh = self.room(&mut b, "life", t2);
            let (x, y) = (self.room(&mut a, "life", t2), fresh);
            if let (Some(x), Some(y)) = (x, y) {
                if x != y {
                    c.evidence.push(format!(
                        "a full subject, then a {} at {t2} (+{later} ms): {x} unit(s) fit where an unused subject has {y}",
                        op.name()
                    ));
                }
            }
            // The other subject: untouched by a reset of one, unused after a clear.
            let y = if op == Op::Clear {
                let mut fresh = Replay::new(self.limiter);
                fresh.align_turns(&a);
                self.room(&mut fresh, "other", t2)
            } else {
                self.room(&mut b, "other", t2)
            };
            let x = self.room(&mut a, "other", t2);
            if let (Some(x), Some(y)) = (x, y) {
                if x != y {
                    c.evidence.push(format!(
                        "a {} of subject `life` at {t2}: the other subject, full before, then has {x} unit(s) of room where {y} {}",
                        op.name(),
                        if op == Op::Clear { "are an unused subject's: a clear must reset every subject" } else { "were its own: a reset of one subject must not touch another" }
                    ));
                }
            }
        }
        judged
    }

    /// Refunds explored: a request of cost `k` refunded half way to the measurement, on a live
    /// subject, takes nothing from what fits afterwards. The cases judged.
    fn refunds_explored(&self, c: &mut CheckResult, k: u64) -> usize {
        let w = self.limiter.params().window_ms as i64;
        let (n, failed) = self.explore(
            "refund",
            Dims { skews: 0..=0, edges: false, soon: false, cases: EXPLORE_CASES },
            &|r, case, at, sent| {
                // A request on a missing or expired key may start a window there, which no refund
                // can take back: that is the request's doing, not the refund's. Judged on a live
                // subject (used less than half a window before), where both worlds share the window.
                if case.fill == 0 || case.gap >= w / 2 {
                    return Some(None);
                }
                let a = arrival_at("explore", at, k);
                let i = r.step(&a, at)?;
                sent.push(a);
                if !r.played[i].decision.allowed {
                    return Some(None);
                }
                let back = at + case.later / 2;
                r.op(Op::Refund, "explore", back, k).ok()?;
                Some(Some(Allowance::NOTHING))
            },
        );
        if let Some((_, what, sent)) = failed {
            c.evidence.push(format!(
                "a request of cost {k} admitted at the call's time and refunded half way to the measurement, {what}"
            ));
            if c.replay.is_none() {
                c.replay = self.save("explore", "lifecycle", &sent);
            }
        }
        n
    }

    /// Callers whose clock is off the server's, played (not asked "what if"), so that what a
    /// skewed caller writes is seen by the on-time callers after it:
    /// - behind by 1 ms to two windows, after the subject was refused: the on-time request right
    ///   after it must still be refused (no refund, no reset of the window);
    /// - behind, while there is room: the skewed request must not leave the window earlier than an
    ///   on-time one would (the most admitted in any window, on the server's clock, stays within
    ///   the overshoot bound);
    /// - ahead by 1 ms to half a window: no error, for it or for the on-time caller after it.
    pub(super) fn clock_skew(&mut self) {
        let p = self.limiter.params();
        let w = p.window_ms as i64;
        let cap = p.capacity();
        let bound = self.limiter.overshoot_bound().unwrap_or(DEFAULT_OVERSHOOT_BOUND);
        let t = attack::origin_ms(p.window_ms) + w / 2;
        let subject = "skew";
        let req = |caller_ms: i64| crate::traffic::Arrival {
            at: limitlab_emulator::clock::Millis(caller_ms).as_micros(),
            key: subject.into(),
            cost: 1,
            phase: "skew".into(),
            op: crate::traffic::Op::Request,
        };
        let mut c = CheckResult::new("clock_skew", Status::Pass, String::new());
        let offsets = |list: [i64; 5]| {
            let mut v: Vec<i64> = list.into_iter().filter(|&b| b >= 1).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let behind = offsets([1, w / 4, w / 2, w, 2 * w]);
        let ahead = offsets([1, 50.min(w / 2), w / 4, w / 2, 0]);
        let mut refused_once = false;
        let mut cases = 0usize;
        // Overshoots a skewed caller's world shows that the same world with that caller on time
        // shows too: they are `overshoot`'s, not this check's (a check fails only for what its own
        // stimulus changes).
        let mut not_ours: Vec<String> = Vec::new();
        for &back in &behind {
            // The subject refused at t, then a caller `back` behind, then an on-time caller.
            let mut r = Replay::new(self.limiter);
            let mut refused = false;
            for _ in 0..3 * cap + 2 {
                match r.step(&req(t), t) {
                    Some(i) if !r.played[i].decision.allowed => {
                        refused = true;
                        break;
                    }
                    Some(_) => {}
                    None => break,
                }
            }
            if !refused {
                continue;
            }
            refused_once = true;
            cases += 1;
            let lag = r.step(&req(t - back), t);
            let next = lag.and_then(|_| r.step(&req(t), t));
            match (lag, next) {
                (Some(l), Some(n)) if r.played[n].decision.allowed => c.evidence.push(format!(
                    "the subject was refused at {t}; a caller {back} ms behind was then {} (now_ms {}), and the on-time request after it was admitted: the skewed caller gave units back",
                    if r.played[l].decision.allowed { "admitted" } else { "refused" },
                    t - back
                )),
                (Some(_), Some(_)) => {}
                _ => c.evidence.push(format!(
                    "a caller {back} ms behind (now_ms {}, server at {t}), or the on-time caller after it, got an error: {}",
                    t - back,
                    r.error_line()
                )),
            }
            // Room for one: cap - 1 on time, the last unit taken by the skewed caller, then on-time
            // callers when the window is about to let the on-time ones go.
            if back < 2 * w && cap >= 2 {
                // The same world twice: the last unit taken by a caller `back` ms behind, then by
                // one on time. Only what the skew changes is judged.
                let later = t + w - back.max(2) / 2;
                let world = |lag: i64| {
                    let mut r = Replay::new(self.limiter);
                    for _ in 0..cap - 1 {
                        r.step(&req(t), t);
                    }
                    r.step(&req(t - lag), t);
                    for _ in 0..=cap {
                        match r.step(&req(later), later) {
                            Some(i) if !r.played[i].decision.allowed => break,
                            Some(_) => {}
                            None => break,
                        }
                    }
                    r
                };
                let r = world(back);
                if let Some((_, e)) = &r.error {
                    c.evidence.push(format!(
                        "a caller {back} ms behind with room left, then on-time callers at {later}: error: {}",
                        e.lines().next().unwrap_or("")
                    ));
                } else {
                    cases += 1;
                    let admitted = r.played.iter().filter(|x| x.decision.allowed).count() as f64;
                    let on_time = world(0);
                    let admitted_on_time = on_time.played.iter().filter(|x| x.decision.allowed).count() as f64;
                    if admitted / p.limit as f64 > bound + 1e-9 && admitted > admitted_on_time {
                        c.evidence.push(format!(
                            "{} requests admitted between {t} and {later} on the server's clock (less than one window): {} on time at {t}, the last unit taken by a caller {back} ms behind, then {} on time at {later}; {:.2} of the limit, above the bound {bound:.3}, where {} were admitted with that caller on time: the skewed request left the window early",
                            admitted,
                            cap - 1,
                            admitted as u64 - r.played.iter().take(cap as usize).filter(|x| x.decision.allowed).count() as u64,
                            admitted / p.limit as f64,
                            admitted_on_time
                        ));
                    } else if admitted / p.limit as f64 > bound + 1e-9 && not_ours.is_empty() {
                        not_ours.push(format!(
                            "{admitted} admitted between {t} and {later} with the last unit taken by a caller {back} ms behind ({:.2} of the limit, above the bound {bound:.3}), but {admitted_on_time} with every caller on time: not the skew's doing, see `overshoot`",
                            admitted / p.limit as f64
                        ));
                    }
                }
            }
        }
        for &fwd in &ahead {
            let mut r = Replay::new(self.limiter);
            let ok = r.step(&req(t), t).and_then(|_| r.step(&req(t + fwd), t)).and_then(|_| r.step(&req(t + 1), t + 1));
            cases += 1;
            if ok.is_none() {
                c.evidence.push(format!(
                    "a caller {fwd} ms ahead of the server (now_ms {}, server at {t}), or the on-time caller after it, got an error: {}",
                    t + fwd,
                    r.error_line()
                ));
            }
        }
        c.judged(cases, &["callers behind", "callers ahead", "subject states (refused, with room)"]);
        let fails = c.evidence.len();
        c.evidence.extend(not_ours);
        if fails > 0 {
            c.status = Status::Fail;
            c.summary = format!("{fails} problem(s) with callers whose clock is off the server's");
        } else if !refused_once {
            c.summary = format!(
                "callers up to {} ms ahead get no error; {} requests at one ms were never refused, so refunds by callers behind cannot be told apart",
                w / 2,
                3 * cap + 2
            );
        } else {
            c.summary = format!(
                "callers 1 ms to {} ms behind neither refund the subject nor leave the window early, and callers up to {} ms ahead get no error (all played, not probed)",
                2 * w,
                w / 2
            );
        }
        self.checks.push(c);
    }
}

/// An operation of the lifecycle check that got an error: its evidence.
fn failed(c: &mut CheckResult, r: &Replay<'_>, what: &str) {
    c.evidence.push(format!("{what}: error: {}", r.error_line()));
}
