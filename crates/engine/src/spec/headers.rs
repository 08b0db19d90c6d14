//! The HTTP headers a decision implies for the API's callers: `Retry-After` (RFC 9110, whole
//! seconds) and the IETF httpapi rate-limit headers draft's `RateLimit-Policy` and `RateLimit`
//! (`RateLimit-Policy: "default";q=100;w=60`, `RateLimit: "default";r=50;t=30`). Times round up to
//! whole seconds: a caller who waits what the header says is never early.
use serde::Serialize;

use super::Reports;
use crate::shipped::{Decision, Params};

/// The policy's name in the headers.
pub const POLICY: &str = "default";

/// The header values of one decision. A field is `None` when the spec does not report what it
/// needs (remaining for `RateLimit`, retry_after on a refusal for `Retry-After`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Headers {
    /// `Retry-After`, in seconds: on refusals that name a wait.
    pub retry_after: Option<u64>,
    /// `RateLimit`: `"default";r=<remaining>[;t=<seconds until the quota is back>]`.
    pub ratelimit: Option<String>,
    /// `RateLimit-Policy`: `"default";q=<limit>;w=<window in seconds>`.
    pub policy: String,
}

/// Whole seconds, rounded up, of a non-negative number of ms.
pub fn secs_up(ms: i64) -> u64 {
    (ms.max(0) as u64).div_ceil(1000)
}

/// The headers `d` implies under `params`, given which fields the spec reports.
pub fn headers(d: &Decision, reports: Reports, params: &Params) -> Headers {
    let retry_after = (reports.retry_after && !d.allowed && d.retry_after_ms >= 0).then(|| secs_up(d.retry_after_ms));
    let ratelimit = (reports.remaining && d.remaining >= 0).then(|| {
        let mut s = format!("\"{POLICY}\";r={}", d.remaining);
        if reports.reset && d.reset_after_ms >= 0 {
            s.push_str(&format!(";t={}", secs_up(d.reset_after_ms)));
        }
        s
    });
    let w = secs_up(params.window_ms as i64).max(1);
    Headers { retry_after, ratelimit, policy: format!("\"{POLICY}\";q={};w={w}", params.limit) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_waits_up_to_whole_seconds() {
        let all = Reports {
            remaining: true,
            retry_after: true,
            reset: true,
            granted: false,
            reset_means: crate::spec::ResetMeans::Quota,
        };
        let p = Params::new(100, 60_000);
        let ok = Decision { allowed: true, remaining: 50, retry_after_ms: -1, reset_after_ms: 29_001, granted: -1 };
        let h = headers(&ok, all, &p);
        assert_eq!(h.ratelimit.as_deref(), Some("\"default\";r=50;t=30"));
        assert_eq!(h.policy, "\"default\";q=100;w=60");
        assert_eq!(h.retry_after, None);
        let no = Decision { allowed: false, remaining: 0, retry_after_ms: 1, reset_after_ms: 0, granted: -1 };
        assert_eq!(headers(&no, all, &p).retry_after, Some(1));
        assert_eq!(headers(&no, all, &p).ratelimit.as_deref(), Some("\"default\";r=0;t=0"));
        let seed = Reports::default();
        assert_eq!(
            headers(&Decision::allowed_only(false), seed, &Params::new(10, 250)),
            Headers { retry_after: None, ratelimit: None, policy: "\"default\";q=10;w=1".into() }
        );
    }
}
