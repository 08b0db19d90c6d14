//! Whether a decision keeps its promises: one judgement for every command. `check` (its
//! `retry_after` and `headers` checks), `run`, `compare`, `sweep` (`retry_after wrong`, `headers
//! wrong`) and `run --decisions` (the `retry_after_honest` and `headers_honest` columns) all call
//! [`retry_after`] and [`headers`], and differ only in how many decisions they ask about.
//!
//! A promise is judged by asking the limiter what it would decide ([`Ask`]): the same subject's
//! request, later, on a copy of its state put back afterwards, nothing else arriving in between.
//! The limiter is its exact model where limitlab has one (the shipped scripts, whose models decide
//! call for call as the scripts do), else the script itself on the run's emulator
//! ([`ask_script`]).
//!
//! | promise | made by | holds when |
//! |---|---|---|
//! | `retry_after_ms = w` | a refusal that names a wait | the same request at `now + w` is admitted, and at `now + w - 1` refused (`w` is the wait, not a bound on it) |
//! | `Retry-After: s` | a refusal with a wait ([`crate::spec::headers`]) | the same request at `now + s` seconds is admitted |
//! | `RateLimit: r=..;t=s` | a decision with `remaining` and `reset_ms` | what the spec's `reset_means` says: `quota` (the default), at `now + s` seconds the whole quota is back (`capacity` requests of cost 1 in a row are admitted); `unit`, a request of cost 1 is admitted then; `window`, the same, and `s` is at most one window |
use crate::backend::emulated::EmulatedBackend;
use crate::backend::Backend;
use crate::limiter::{Decision, Limiter, Params, Reference};
use crate::spec::exec::Session;
use crate::spec::headers::{headers as header_values, secs_up};
use crate::spec::{Reports, ResetMeans};
use crate::Result;

/// The most requests of cost 1 one `RateLimit` probe sends (the capacity, up to this).
pub const QUOTA_PROBE_MAX: u64 = 10_000;

/// The limiter asked "what if": the decisions of requests of `costs`, one after the other, of the
/// judged decision's subject at `at_ms` (the caller's clock and the server's), on its state as the
/// judged decision left it, put back afterwards. `None` when the question could not be asked (the
/// asker keeps why).
pub type Ask<'a> = dyn FnMut(i64, &[u64]) -> Option<Vec<Decision>> + 'a;

/// The verdict on one decision's promises of one kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Promises asked about (a decision's headers make up to two).
    pub checked: usize,
    /// What did not hold, one line each; empty when every promise held.
    pub wrong: Vec<String>,
}

impl Verdict {
    /// Every promise asked about held.
    pub fn honest(&self) -> bool {
        self.wrong.is_empty()
    }
}

/// Whether `d` makes a `retry_after` promise: a refusal that names a wait, from a spec that reports
/// one.
pub fn promises_retry(d: &Decision, reports: Reports) -> bool {
    reports.retry_after && !d.allowed && d.retry_after_ms >= 0
}

/// Whether `d` makes a header promise (`Retry-After`, or `RateLimit` with `t`).
pub fn promises_headers(d: &Decision, reports: Reports) -> bool {
    promises_retry(d, reports) || promises_quota(d, reports)
}

fn promises_quota(d: &Decision, reports: Reports) -> bool {
    reports.remaining && reports.reset && d.reset_after_ms >= 0
}

/// Judges `d`'s `retry_after_ms` (a request of `cost` decided at `now_ms`) both ways: retrying then
/// is admitted ([`retry_kept`]), and 1 ms earlier is refused (else it was told too late). `None`
/// when it makes no promise.
pub fn retry_after(d: &Decision, reports: Reports, now_ms: i64, cost: u64, ask: &mut Ask<'_>) -> Option<Verdict> {
    let mut v = retry_kept(d, reports, now_ms, cost, ask)?;
    let w = d.retry_after_ms;
    let at = now_ms + w;
    if w >= 1 {
        if let Some(x) = ask(at - 1, &[cost]) {
            if x[0].allowed {
                v.wrong.push(format!(
                    "refused with retry_after {w} ms, but retrying 1 ms earlier (at {}) was admitted",
                    at - 1
                ));
            }
        }
    }
    Some(v)
}

/// Judges `d`'s `retry_after_ms` one way: the same request, retried when it says, is admitted (a
/// negative wait told by an adapter never is). `None` when it makes no promise.
pub fn retry_kept(d: &Decision, reports: Reports, now_ms: i64, cost: u64, ask: &mut Ask<'_>) -> Option<Verdict> {
    if reports.retry_after && !d.allowed && d.retry_after_ms == Decision::TOLD_NEGATIVE {
        return Some(Verdict {
            checked: 1,
            wrong: vec!["refused and told a negative retry_after: a caller that waits that long retries at once (leave it nil when the request never fits)".into()],
        });
    }
    if !promises_retry(d, reports) {
        return None;
    }
    let w = d.retry_after_ms;
    let at = now_ms + w;
    let mut v = Verdict { checked: 1, wrong: Vec::new() };
    if let Some(x) = ask(at, &[cost]) {
        if !x[0].allowed {
            // Admitted 1 ms later: the wait is short by one ms, most often a wait read from PTTL.
            let one_short = ask(at + 1, &[cost]).is_some_and(|y| y[0].allowed);
            v.wrong.push(format!(
                "refused with retry_after {w} ms, but retrying at {at} (+{w}) was refused too{}",
                if one_short {
                    format!(
                        " and admitted 1 ms later (at {}): Redis keeps a key through the ms its expiry names, so a wait read from PTTL is PTTL + 1",
                        at + 1
                    )
                } else {
                    String::new()
                }
            ));
        }
    }
    Some(v)
}

/// Judges the headers `d` implies under `params` ([`crate::spec::headers::headers`]): `None` when
/// they make no promise.
pub fn headers(
    d: &Decision,
    reports: Reports,
    params: &Params,
    now_ms: i64,
    cost: u64,
    ask: &mut Ask<'_>,
) -> Option<Verdict> {
    headers_judged(d, reports, params, now_ms, cost, true, ask)
}

/// [`headers`], judging the `RateLimit` quota promise (which sends the whole capacity) only when
/// `quota` is set; `Retry-After` is judged either way. `None` when nothing was judged.
pub fn headers_judged(
    d: &Decision,
    reports: Reports,
    params: &Params,
    now_ms: i64,
    cost: u64,
    quota: bool,
    ask: &mut Ask<'_>,
) -> Option<Verdict> {
    if !promises_headers(d, reports) || (!quota && header_values(d, reports, params).retry_after.is_none()) {
        return None;
    }
    let h = header_values(d, reports, params);
    let mut v = Verdict::default();
    if let Some(ra) = h.retry_after {
        v.checked += 1;
        let at = now_ms + ra as i64 * 1000;
        if let Some(x) = ask(at, &[cost]) {
            if !x[0].allowed {
                v.wrong.push(format!(
                    "Retry-After: {ra} (retry_after {} ms), but the same request at {at} was refused",
                    d.retry_after_ms
                ));
            }
        }
    }
    if quota && promises_quota(d, reports) {
        v.checked += 1;
        let cap = params.capacity();
        let t = secs_up(d.reset_after_ms) as i64;
        let at = now_ms + t * 1000;
        let header = h.ratelimit.as_deref().unwrap_or("RateLimit");
        match reports.reset_means {
            // At `t` the whole quota is back: the capacity, one unit at a time.
            ResetMeans::Quota => {
                let units = vec![1u64; cap.min(QUOTA_PROBE_MAX) as usize];
                if let Some(x) = ask(at, &units) {
                    if let Some(k) = x.iter().position(|x| !x.allowed) {
                        v.wrong.push(format!(
                            "{header} promised the whole quota back {t} s later, but at {at} only {k} of {cap} unit requests were admitted"
                        ));
                    }
                }
            }
            // At `t` at least the next unit is back; for a window, `t` is within one window.
            ResetMeans::Unit | ResetMeans::Window => {
                let what =
                    if reports.reset_means == ResetMeans::Unit { "the next unit" } else { "the end of the window" };
                let w_s = secs_up(params.window_ms as i64) as i64;
                if reports.reset_means == ResetMeans::Window && t > w_s {
                    v.wrong.push(format!("{header} promised {what} {t} s later, more than a window ({w_s} s)"));
                } else if let Some(x) = ask(at, &[1]) {
                    if !x[0].allowed {
                        v.wrong.push(format!(
                            "{header} promised {what} {t} s later, but at {at} a request of cost 1 was refused"
                        ));
                    }
                }
            }
        }
    }
    Some(v)
}

/// Asks limitlab's exact model of a script (see [`Ask`]) about the subject of `key`
/// (`rate:{subject}`): its state is put back afterwards ([`Reference::trial`]).
pub fn ask_model(model: &mut dyn Reference, key: &str, at_ms: i64, costs: &[u64]) -> Vec<Decision> {
    model.trial(true);
    let v = costs.iter().map(|&c| model.decide(key, at_ms, c)).collect();
    model.trial(false);
    v
}

/// Asks the script itself (see [`Ask`]), on the emulator a run is using: the requests run there,
/// and the keys they touch, the clock and the session's `seq` are put back afterwards
/// ([`EmulatedBackend::trial`]); its calls are not recorded. Stops at the first error.
pub fn ask_script(
    limiter: &Limiter,
    backend: &mut EmulatedBackend,
    session: &mut Session,
    subject: &str,
    at_ms: i64,
    costs: &[u64],
) -> Result<Vec<Decision>> {
    let record = session.record.take();
    let out = limiter.what_if(session, |s| {
        backend.trial(|b| {
            b.set_time_ms(at_ms);
            costs.iter().map(|&c| limiter.call(b, s, subject, at_ms, c)).collect()
        })
    });
    session.record = record;
    out
}
