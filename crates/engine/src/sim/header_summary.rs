//! The HTTP rate-limit headers a run's decisions imply for the API's callers (see
//! [`crate::spec::headers`]), summed up while the run streams: the `RateLimit-Policy` every response
//! carries, how many responses carry `RateLimit` and `Retry-After`, the longest `Retry-After`, and a
//! few sample decisions with their header values. `run --json` shows it per script; `run
//! --decisions` has every decision's headers.
use serde::Serialize;

use super::Record;
use crate::limiter::{Decision, Limiter, Params};
use crate::spec::headers::{headers, secs_up};
use crate::spec::Reports;

/// One decision and the header values it implies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HeaderSample {
    /// Why it was picked: `first allowed`, `first refused`, `longest Retry-After`.
    pub what: String,
    /// The request's number in the run, from 1 (the `request` column of `run --decisions`).
    pub request: u64,
    pub now_ms: i64,
    pub subject: String,
    pub allowed: bool,
    /// `RateLimit` (`"default";r=<remaining>;t=<seconds>`), when the spec reports remaining.
    pub ratelimit: Option<String>,
    /// `Retry-After` in seconds, on a refusal that names a wait.
    pub retry_after: Option<u64>,
}

/// The headers of one script's decisions in a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HeaderSummary {
    /// `RateLimit-Policy`, the same on every response: `"default";q=<limit>;w=<window in s>`.
    pub policy: String,
    /// Responses with a `RateLimit` header (every decision when the spec reports remaining).
    pub with_ratelimit: u64,
    /// Refusals with a `Retry-After` header.
    pub with_retry_after: u64,
    /// Refusals without one (the spec reports no wait, or the request can never fit).
    pub refused_without_retry_after: u64,
    /// The longest `Retry-After`, in seconds, when any refusal had one.
    pub max_retry_after: Option<u64>,
    /// The first allowed decision, the first refusal and the refusal with the longest
    /// `Retry-After` (when it is not the first refusal), in request order.
    pub samples: Vec<HeaderSample>,
}

/// A decision kept as a sample: (request number, now_ms, subject, decision).
type Sample = (u64, i64, String, Decision);
type Kept = Option<Sample>;

/// Sums up the headers of a run's decisions, one at a time, in call order. A run split by subject
/// across threads has one per thread, fed in call order each, then [`HeaderAcc::merge`]d.
pub struct HeaderAcc {
    params: Params,
    reports: Reports,
    with_ratelimit: u64,
    with_retry_after: u64,
    refused_without: u64,
    first_allowed: Kept,
    first_refused: Kept,
    longest: Kept,
}

impl HeaderAcc {
    pub fn new(limiter: &Limiter) -> HeaderAcc {
        HeaderAcc {
            params: limiter.params(),
            reports: limiter.reports(),
            with_ratelimit: 0,
            with_retry_after: 0,
            refused_without: 0,
            first_allowed: None,
            first_refused: None,
            longest: None,
        }
    }

    /// Counts one decision of `subject`, request number `request` of the run (from 1).
    pub fn push(&mut self, r: &Record, subject: &str, request: u64) {
        let d = &r.decision;
        if self.reports.remaining && d.remaining >= 0 {
            self.with_ratelimit += 1;
        }
        let keep = |slot: &mut Kept| *slot = Some((request, r.now_ms, subject.to_string(), *d));
        if d.allowed {
            if self.first_allowed.is_none() {
                keep(&mut self.first_allowed);
            }
            return;
        }
        if self.first_refused.is_none() {
            keep(&mut self.first_refused);
        }
        if self.reports.retry_after && d.retry_after_ms >= 0 {
            self.with_retry_after += 1;
            let longer = self.longest.as_ref().is_none_or(|l| secs_up(d.retry_after_ms) > secs_up(l.3.retry_after_ms));
            if longer {
                keep(&mut self.longest);
            }
        } else {
            self.refused_without += 1;
        }
    }

    /// The sums of `self` and `other`, accumulators of the same script over disjoint sets of
    /// subjects: what one accumulator fed both's decisions in call order holds.
    pub fn merge(self, other: HeaderAcc) -> HeaderAcc {
        // The earlier request's sample; for the longest wait, the longer one, then the earlier.
        let first = |a: Kept, b: Kept| match (a, b) {
            (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
            (a, b) => a.or(b),
        };
        let longest = match (self.longest, other.longest) {
            (Some(a), Some(b)) => {
                let (wa, wb) = (secs_up(a.3.retry_after_ms), secs_up(b.3.retry_after_ms));
                Some(if wb > wa || (wb == wa && b.0 < a.0) { b } else { a })
            }
            (a, b) => a.or(b),
        };
        HeaderAcc {
            params: self.params,
            reports: self.reports,
            with_ratelimit: self.with_ratelimit + other.with_ratelimit,
            with_retry_after: self.with_retry_after + other.with_retry_after,
            refused_without: self.refused_without + other.refused_without,
            first_allowed: first(self.first_allowed, other.first_allowed),
            first_refused: first(self.first_refused, other.first_refused),
            longest,
        }
    }

    pub fn finish(self) -> HeaderSummary {
        let policy = headers(&Decision::allowed_only(true), self.reports, &self.params).policy;
        let max_retry_after = self.longest.as_ref().map(|l| secs_up(l.3.retry_after_ms));
        let first_refused_at = self.first_refused.as_ref().map(|f| f.0);
        let mut picked: Vec<(&str, Sample)> = Vec::new();
        for (what, kept) in [
            ("first allowed", self.first_allowed),
            ("first refused", self.first_refused),
            ("longest Retry-After", self.longest),
        ] {
            let Some(k) = kept else { continue };
            if what == "longest Retry-After" && Some(k.0) == first_refused_at {
                continue;
            }
            picked.push((what, k));
        }
        picked.sort_by_key(|(_, k)| k.0);
        let samples = picked
            .into_iter()
            .map(|(what, (request, now_ms, subject, d))| {
                let h = headers(&d, self.reports, &self.params);
                HeaderSample {
                    what: what.to_string(),
                    request,
                    now_ms,
                    subject,
                    allowed: d.allowed,
                    ratelimit: h.ratelimit,
                    retry_after: h.retry_after,
                }
            })
            .collect();
        HeaderSummary {
            policy,
            with_ratelimit: self.with_ratelimit,
            with_retry_after: self.with_retry_after,
            refused_without_retry_after: self.refused_without,
            max_retry_after,
            samples,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::Variant;
    use limitlab_emulator::clock::Micros;

    fn record(now_ms: i64, decision: Decision) -> Record {
        Record { at: Micros(now_ms * 1000), now_ms, key: 0, phase: 0, cost: 1, decision }
    }

    #[test]
    fn samples_and_counts_follow_the_decisions() {
        let l = Limiter::new(Variant::FIXED_WINDOW, Params::new(2, 60_000)).unwrap();
        let mut acc = HeaderAcc::new(&l);
        let d = |allowed, remaining, retry, reset| Decision {
            allowed,
            remaining,
            retry_after_ms: retry,
            reset_after_ms: reset,
            granted: -1,
        };
        acc.push(&record(0, d(true, 1, -1, 60_000)), "a", 1);
        acc.push(&record(1, d(true, 0, -1, 59_999)), "a", 2);
        acc.push(&record(2, d(false, 0, 59_998, 59_998)), "a", 3);
        acc.push(&record(3, d(false, 0, -1, 59_997)), "b", 4);
        acc.push(&record(40_000, d(false, 0, 20_000, 20_000)), "a", 5);
        let s = acc.finish();
        assert_eq!(s.policy, "\"default\";q=2;w=60");
        assert_eq!(
            (s.with_ratelimit, s.with_retry_after, s.refused_without_retry_after, s.max_retry_after),
            (5, 2, 1, Some(60))
        );
        let got: Vec<(&str, u64, Option<&str>, Option<u64>)> =
            s.samples.iter().map(|x| (x.what.as_str(), x.request, x.ratelimit.as_deref(), x.retry_after)).collect();
        // The longest wait is the first refusal's: it is shown once.
        assert_eq!(
            got,
            [
                ("first allowed", 1, Some("\"default\";r=1;t=60"), None),
                ("first refused", 3, Some("\"default\";r=0;t=60"), Some(60))
            ]
        );
    }

    #[test]
    fn a_seed_script_has_a_policy_and_no_other_header() {
        let l = Limiter::new(Variant::SEED_FIXED_WINDOW, Params::new(1, 1000)).unwrap();
        let mut acc = HeaderAcc::new(&l);
        acc.push(&record(0, Decision::allowed_only(true)), "a", 1);
        acc.push(&record(1, Decision::allowed_only(false)), "a", 2);
        let s = acc.finish();
        assert_eq!(s.policy, "\"default\";q=1;w=1");
        assert_eq!(
            (s.with_ratelimit, s.with_retry_after, s.refused_without_retry_after, s.max_retry_after),
            (0, 0, 1, None)
        );
        assert!(s.samples.iter().all(|x| x.ratelimit.is_none() && x.retry_after.is_none()));
    }
}
