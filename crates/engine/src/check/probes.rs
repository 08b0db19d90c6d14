//! The probes asked after each request of a pattern, on a copy of the keyspace: does `remaining`,
//! `retry_after` or a header keep its promise, does a refusal take units, has every key a TTL.
use super::run::Replay;
use super::sizes::{HEADER_PROBES_MIN, HEADER_PROBE_REQUESTS, PROBES, PROBE_UNITS, TTL_PROBES};
use crate::backend::Backend;
use crate::limiter::honesty;
use limitlab_emulator::Result;

/// What the probes found while a pattern played.
#[derive(Default)]
pub(super) struct Probes {
    /// (request index, what was wrong)
    pub(super) remaining: Vec<(usize, String)>,
    pub(super) remaining_checked: usize,
    pub(super) retry: Vec<(usize, String)>,
    pub(super) retry_checked: usize,
    pub(super) headers: Vec<(usize, String)>,
    pub(super) headers_checked: usize,
    /// Decisions whose headers were judged, and the requests their probes sent.
    pub(super) headers_decisions: usize,
    pub(super) headers_sent: usize,
    pub(super) errors: Vec<(usize, String)>,
    pub(super) refusals: Vec<(usize, String)>,
    pub(super) refusals_checked: usize,
    /// Keys without a TTL right after a request that named them.
    pub(super) no_ttl: Vec<(usize, String)>,
    pub(super) ttl_checked: usize,
    /// The next request's index and what fitted just before it (see the refusal probe).
    pub(super) pending: Option<(usize, Vec<crate::limiter::Decision>)>,
}

impl Probes {
    pub(super) fn after(&mut self, r: &mut Replay<'_>, i: usize, next: Option<&crate::traffic::Arrival>) -> Result<()> {
        let reports = r.limiter.reports();
        let cap = r.limiter.params().capacity() as i64;
        let p = r.played[i].clone();
        let (d, subject, now, cost) = (p.decision, p.arrival.key.as_str(), p.now_ms, p.arrival.cost);
        let mut probe = |r: &mut Replay<'_>, at: i64, costs: &[u64]| -> Option<Vec<crate::limiter::Decision>> {
            match r.probe_many(subject, at, at, costs) {
                Ok(v) => Some(v),
                Err(e) => {
                    self.errors.push((i, format!("a probe at {at} failed: {e}")));
                    None
                }
            }
        };
        // A `remaining` that reads nil for this decision is "not reported" (docs/specs.md): nothing
        // to judge, not a -1 out of range.
        if reports.remaining && d.remaining != crate::limiter::Decision::NOT_REPORTED {
            if d.remaining < 0 || d.remaining > cap {
                self.remaining.push((i, format!("remaining {} is outside 0..={cap}", d.remaining)));
            } else if self.remaining_checked < PROBES {
                // `remaining` says how many requests of cost 1 fit right now: that many at the same
                // ms are admitted, and the one after them is refused (after an admission and after
                // a refusal alike).
                self.remaining_checked += 1;
                let fits = d.remaining as usize;
                let units = vec![1u64; fits.min(PROBE_UNITS) + usize::from(fits <= PROBE_UNITS)];
                if let Some(v) = probe(r, now, &units) {
                    let admitted = v.iter().take_while(|x| x.allowed).count();
                    if admitted < fits.min(PROBE_UNITS) {
                        self.remaining.push((
                            i,
                            format!(
                            "remaining {} after this request ({}), but only {admitted} request(s) of cost 1 at the same ms were admitted",
                            d.remaining,
                            if d.allowed { "admitted" } else { "refused" }
                        ),
                        ));
                    } else if fits <= PROBE_UNITS && admitted > fits {
                        self.remaining.push((
                            i,
                            format!(
                                "remaining {} after this request ({}), but {} request(s) of cost 1 at the same ms were admitted",
                                d.remaining,
                                if d.allowed { "admitted" } else { "refused" },
                                if admitted == units.len() { format!("all {admitted}") } else { admitted.to_string() }
                            ),
                        ));
                    }
                }
            }
        }
        // A refused request must leave the subject as it found it: as many requests of cost 1 fit
        // at the same ms after it as before it. (A limiter that takes the cost of a refusal leaves
        // fewer.) "Before" is asked ahead, at the next request's time, when its cost is 2 or more.
        if let Some((j, before)) = self.pending.take() {
            if j == i && !d.allowed {
                let unit = vec![1u64; before.len()];
                if let Some(v) = probe(r, now, &unit) {
                    let (b, a) =
                        (before.iter().take_while(|x| x.allowed).count(), v.iter().take_while(|x| x.allowed).count());
                    if a < b {
                        self.refusals.push((i, format!(
                            "{b} request(s) of cost 1 fit at this ms before this request of cost {cost}, which was refused; after it only {a} did: the refusal used up {} unit(s)",
                            b - a
                        )));
                    }
                }
            }
        }
        if let Some(n) = next.filter(|n| n.cost >= 2 && self.refusals_checked < PROBES && r.limiter.takes_cost()) {
            self.refusals_checked += 1;
            let at = n.at.as_millis().0;
            if let Ok(v) = r.probe_next_many(&n.key, at, at, &vec![1u64; (n.cost as usize).min(PROBE_UNITS)]) {
                self.pending = Some((i + 1, v));
            }
        }
        // Every key the request named has a TTL right after it (a subject that never comes back
        // must not leave a key forever, even if a later request of its would set one).
        if self.ttl_checked < TTL_PROBES {
            self.ttl_checked += 1;
            let mut seen: Vec<&str> = Vec::new();
            for k in p.calls.iter().flat_map(|c| c.keys.iter()) {
                if seen.contains(&k.as_str()) {
                    continue;
                }
                seen.push(k);
                if let Ok(limitlab_emulator::Reply::Int(-1)) = r.backend.command(&[b"PTTL", k.as_bytes()]) {
                    if self.no_ttl.len() < 3 {
                        self.no_ttl.push((i, format!("`{k}` has no TTL right after this request")));
                    }
                }
            }
        }
        if self.retry_checked < PROBES {
            if let Some(v) = honesty::retry_after(&d, reports, now, cost, &mut |at, costs| probe(r, at, costs)) {
                self.retry_checked += 1;
                self.retry.extend(v.wrong.into_iter().map(|w| (i, w)));
            }
        }
        // The quota promise sends the whole capacity: within the budget only. Retry-After sends one.
        let quota = self.headers_sent < HEADER_PROBE_REQUESTS || self.headers_decisions < HEADER_PROBES_MIN;
        if self.headers_checked < PROBES / 2 {
            let sent = &mut self.headers_sent;
            if let Some(v) =
                honesty::headers_judged(&d, reports, &r.limiter.params(), now, cost, quota, &mut |at, costs| {
                    *sent += costs.len();
                    probe(r, at, costs)
                })
            {
                self.headers_decisions += usize::from(quota);
                self.headers_checked += v.checked;
                self.headers.extend(v.wrong.into_iter().map(|w| (i, w)));
            }
        }
        Ok(())
    }
}
