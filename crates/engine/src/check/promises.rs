//! The checks of what a decision promises, judged from the probes: `remaining`, `retry_after`, the
//! headers, refusals that take no units, `granted`, and requests above the capacity.
use super::ctx::{at, Ctx};
use super::probes::Probes;
use super::report::{CheckResult, Status};
use super::run::Replay;
use crate::attack;
use crate::limiter::Decision;
use crate::spec::headers::headers;

/// What the promises of a decision are judged over: every pattern's requests, at their times, after
/// admissions and refusals alike, then asked again at the same ms and at the time promised.
const DIMS: [&str; 4] = ["patterns", "times", "states after admissions and refusals", "both directions"];

impl Ctx<'_> {
    pub(super) fn probe_check(
        &mut self,
        name: &'static str,
        runs: &[(Replay<'_>, Probes)],
        reported: bool,
        what: &str,
        dims: &[&str],
        pick: impl Fn(&Probes) -> (&Vec<(usize, String)>, usize),
    ) {
        if !reported {
            self.checks.push(CheckResult::new(name, Status::Skip, format!("the spec reports no {what}")));
            return;
        }
        let mut c = CheckResult::new(name, Status::Pass, String::new());
        let mut checked = 0;
        for ((r, probes), pat) in runs.iter().zip(self.patterns) {
            let (bad, n) = pick(probes);
            checked += n;
            for (i, why) in bad.iter().take(3) {
                c.evidence.push(format!("{}: {why}", at(pat.name, *i, r)));
            }
            if let Some((i, _)) = bad.first() {
                if c.replay.is_none() {
                    c.replay = self.save(pat.name, name, &pat.arrivals[..=*i]);
                }
                if c.decided_at.is_none() {
                    c.decided_at = self.decided_by_replay(&pat.arrivals[..=*i]);
                }
            }
        }
        let bad: usize = runs.iter().map(|(_, p)| pick(p).0.len()).sum();
        c.judged(checked + bad, dims);
        if bad > 0 {
            c.status = Status::Fail;
            c.summary = format!("{bad} of the {what} values checked were wrong");
        } else {
            c.summary = format!("{checked} {what} values checked by asking the script, all honest");
        }
        self.checks.push(c);
    }

    pub(super) fn remaining(&mut self, runs: &[(Replay<'_>, Probes)]) {
        let reported = self.limiter.reports().remaining;
        self.probe_check("remaining", runs, reported, "remaining", &DIMS, |p| (&p.remaining, p.remaining_checked));
        self.told_remaining();
    }

    pub(super) fn retry_after(&mut self, runs: &[(Replay<'_>, Probes)]) {
        let reported = self.limiter.reports().retry_after;
        self.probe_check("retry_after", runs, reported, "retry_after", &DIMS, |p| (&p.retry, p.retry_checked));
        self.told_retry_after();
    }

    pub(super) fn headers(&mut self, runs: &[(Replay<'_>, Probes)]) {
        let r = self.limiter.reports();
        let p = self.limiter.params();
        let policy = headers(&crate::limiter::Decision::allowed_only(true), r, &p).policy;
        self.probe_check("headers", runs, r.retry_after || (r.remaining && r.reset), "header", &DIMS, |p| {
            (&p.headers, p.headers_checked)
        });
        if let Some(c) = self.checks.last_mut() {
            c.evidence.insert(0, format!("RateLimit-Policy: {policy}"));
        }
        self.told_headers();
    }

    pub(super) fn refusals(&mut self, runs: &[(Replay<'_>, Probes)]) {
        let judged = self.limiter.takes_cost() && self.limiter.params().capacity() > 1;
        if !judged {
            self.checks.push(CheckResult::new(
                "refusals",
                Status::Skip,
                "every request costs 1 here, so a refusal that takes units cannot be told apart from one that does not"
                    .into(),
            ));
            return;
        }
        self.probe_check(
            "refusals",
            runs,
            true,
            "refusal",
            &["costs", "times", "states before a refusal", "patterns"],
            |p| (&p.refusals, p.refusals_checked),
        );
    }

    /// A limiter that grants part of a request (`granted`): every admitted request is given from 1
    /// to its cost, every refused one nothing. (What it grants is counted, not the cost, by the
    /// overshoot and false-rejection figures.)
    pub(super) fn granted(&mut self, runs: &[(Replay<'_>, Probes)]) {
        if !self.limiter.reports().granted {
            self.checks.push(CheckResult::new(
                "granted",
                Status::Skip,
                "the spec reports no `granted`: every admitted request is counted at its cost".into(),
            ));
            return;
        }
        let mut c = CheckResult::new("granted", Status::Pass, String::new());
        let (mut partial, mut judged, mut bad) = (0usize, 0usize, 0usize);
        for ((r, _), pat) in runs.iter().zip(self.patterns) {
            for (i, p) in r.played.iter().enumerate() {
                let (d, cost) = (p.decision, p.arrival.cost);
                let g = d.granted;
                judged += 1;
                let wrong = match (d.allowed, g) {
                    (true, g) if g > cost as i64 => {
                        Some(format!("admitted and granted {g} units of a request of cost {cost}"))
                    }
                    (true, g) if g == 0 && cost > 0 => {
                        Some("admitted, but granted 0 units: a request given nothing is a refusal".to_string())
                    }
                    (false, g) if g > 0 => Some(format!("refused, but granted {g} units")),
                    _ => None,
                };
                if d.allowed && g >= 1 && (g as u64) < cost {
                    partial += 1;
                }
                if let Some(w) = wrong {
                    bad += 1;
                    if c.evidence.len() < 5 {
                        c.evidence.push(format!("{}: {w}", at(pat.name, i, r)));
                    }
                }
            }
        }
        c.judged(judged, &["patterns", "costs", "admissions and refusals"]);
        if bad > 0 {
            c.status = Status::Fail;
            c.summary = format!("{bad} of {judged} decisions granted what they did not admit");
        } else {
            c.summary = format!("{judged} decisions each granted from 1 to its cost when admitted and nothing when refused; {partial} were partial grants, counted at what they granted");
        }
        self.checks.push(c);
    }

    /// Requests whose cost is above the capacity, each from a fresh subject: no limiter may admit
    /// one, and a `retry_after` it gives must be kept.
    pub(super) fn oversized(&mut self) {
        if !self.limiter.takes_cost() {
            self.checks.push(CheckResult::new(
                "oversized",
                Status::Skip,
                "the spec never reads `cost`: every request counts 1".into(),
            ));
            return;
        }
        let p = self.limiter.params();
        let cap = p.capacity();
        let at_ms = attack::origin_ms(p.window_ms) + p.window_ms as i64 / 3;
        let mut c = CheckResult::new("oversized", Status::Pass, String::new());
        let costs = [cap + 1, 10 * cap];
        let mut granted_part: Vec<String> = Vec::new();
        for (k, &cost) in costs.iter().enumerate() {
            let subject = format!("oversized{k}");
            let mut r = Replay::new(self.limiter);
            let a = crate::traffic::Arrival {
                at: limitlab_emulator::clock::Millis(at_ms).as_micros(),
                key: subject.clone(),
                cost,
                phase: "oversized".into(),
                op: crate::traffic::Op::Request,
            };
            r.play(std::slice::from_ref(&a), |_, _| Ok(()));
            let Some(d) = r.played.first().map(|p| p.decision) else {
                let e = r.error_line();
                c.evidence.push(format!(
                    "cost {cost} (subject `{subject}`, now_ms {at_ms}): answered with an error, so not admitted: {e}"
                ));
                continue;
            };
            if d.allowed && self.limiter.reports().granted && d.units(cost) <= cap {
                // A partial grant of at most the capacity is what an "at most N" call does.
                granted_part.push(format!("cost {cost}: granted {}", d.units(cost)));
            } else if d.allowed {
                c.evidence.push(format!(
                    "cost {cost} (subject `{subject}`, now_ms {at_ms}) was admitted{}, though the capacity is {cap}",
                    if self.limiter.reports().granted {
                        format!(" with {} units granted", d.units(cost))
                    } else {
                        String::new()
                    }
                ));
                if c.replay.is_none() {
                    c.replay = self.save("oversized", "oversized", std::slice::from_ref(&a));
                }
            } else if self.limiter.reports().retry_after && d.retry_after_ms == Decision::TOLD_NEGATIVE {
                c.evidence.push(format!(
                    "cost {cost} was refused and told a negative retry_after, though it can never fit (capacity {cap}): a caller retries at once; give nil"
                ));
            } else if self.limiter.reports().retry_after && d.retry_after_ms >= 0 {
                let later = at_ms + d.retry_after_ms;
                if let Ok(v) = r.probe(&subject, later, later, cost) {
                    if !v.allowed {
                        c.evidence.push(format!(
                            "cost {cost} was refused with retry_after {} ms, but it can never fit (capacity {cap}): retrying at {later} was refused; give nil",
                            d.retry_after_ms
                        ));
                    }
                }
            }
        }
        c.judged(costs.len(), &["costs above the capacity", "fresh subjects"]);
        if c.evidence.iter().any(|e| !e.contains("answered with an error")) {
            c.status = Status::Fail;
            c.summary = format!("a request above the capacity ({cap}) was admitted, or promised a retry");
        } else if !granted_part.is_empty() {
            c.summary = format!(
                "requests of cost {} and {} (capacity {cap}) were refused or granted at most the capacity ({})",
                costs[0],
                costs[1],
                granted_part.join(", ")
            );
        } else {
            c.summary = format!("requests of cost {} and {} (capacity {cap}) were refused", costs[0], costs[1]);
        }
        self.checks.push(c);
        self.told_oversized();
    }
}
