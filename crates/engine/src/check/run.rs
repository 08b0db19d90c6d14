//! The traffic `check` plays and the loop that plays it: each request through the spec on a fresh
//! emulator, recording its decision, the exact sliding log's verdict and every call's keys, and
//! answering "what if" questions ([`Replay::probe`]) on a copy of the keyspace.
use std::ops::Range;

use crate::backend::emulated::EmulatedBackend;
use crate::backend::Backend;
use crate::limiter::{Decision, Limiter, Params};
use crate::metrics::{self, ExactLog, Metrics};
use crate::sim::{Record, Trace};
use crate::spec::exec::{CallRecord, Session};
use crate::traffic::Arrival;
use limitlab_emulator::clock::Micros;
use limitlab_emulator::Reply;
use limitlab_emulator::{Error, Result};

/// One of the standard traffic patterns of `check`, sized from the policy.
#[derive(Clone, Debug)]
pub struct Pattern {
    pub name: &'static str,
    pub description: String,
    pub arrivals: Vec<Arrival>,
}

fn arrival(origin_ms: i64, at_us: i64, key: &str, cost: u64, phase: &str) -> Arrival {
    Arrival {
        at: Micros(origin_ms * 1000 + at_us),
        key: key.to_string(),
        cost,
        phase: phase.to_string(),
        op: crate::traffic::Op::Request,
    }
}

/// `n` requests spread evenly over `us` (microseconds after `origin` ms).
fn spread(out: &mut Vec<Arrival>, origin: i64, us: Range<i64>, n: u64, key: &str, cost: u64, phase: &str) {
    let span = (us.end - us.start).max(1);
    for i in 0..n as i64 {
        out.push(arrival(origin, us.start + span * i / n.max(1) as i64, key, cost, phase));
    }
}

pub use super::sizes::FULL_SIZE;

/// Whether a policy is above [`FULL_SIZE`], so that [`patterns`] scales its patterns.
pub fn scaled(p: &Params) -> bool {
    p.limit > FULL_SIZE || p.capacity() > FULL_SIZE
}

/// The patterns, for a policy of `limit` per `window_ms` (capacity `burst`) starting at window
/// boundary `origin` (unix ms). Every pattern is deterministic (the Poisson-like one from `seed`).
///
/// Up to [`FULL_SIZE`] they are played at full length. Above it, their length would grow with the
/// limit (a hundred times the limit in all, most of it in the steady patterns), so each keeps its
/// shape at a length that still shows what it is there to show:
/// - the bursts (`boundary_burst` on each side, `idle_then_burst`) send a quarter more than the
///   capacity, so a limiter that lets more than its capacity through still shows it;
/// - `steady_overload` runs 3 windows at twice the rate instead of 12;
/// - `under_limit` runs 2 subjects at half the rate for 4 windows instead of 20 for 10;
/// - `costs` sends `8 * FULL_SIZE` requests over the same four windows (gaps scaled up), not `8 * limit`;
/// - `sparse` is 20 requests at every size.
pub fn patterns(p: &Params, origin: i64, seed: u64) -> Vec<Pattern> {
    let w = p.window_ms as i64 * 1000; // µs
    let l = p.limit;
    let c = p.capacity();
    let big = scaled(p);
    let mut out = Vec::new();

    // Over the capacity: twice (three times) it at full size, a quarter more than it above.
    let over = |times: u64| if big { c + c.div_ceil(4) } else { times * c };

    let n = over(2);
    let mut a = Vec::new();
    spread(&mut a, origin, w - w / 10..w, n, "b", 1, "end of window");
    spread(&mut a, origin, w..w + w / 10, n, "b", 1, "start of next");
    out.push(Pattern {
        name: "boundary_burst",
        description: format!("{n} requests in the last tenth of a window, {n} in the first tenth of the next"),
        arrivals: a,
    });

    let n = over(3);
    let mut a = vec![arrival(origin, 0, "i", 1, "warm-up")];
    spread(&mut a, origin, 3 * w..3 * w + w / 100, n, "i", 1, "burst");
    out.push(Pattern {
        name: "idle_then_burst",
        description: format!("one request, three idle windows, then {n} within a hundredth of a window"),
        arrivals: a,
    });

    let windows: u64 = if big { 3 } else { 12 };
    let mut a = Vec::new();
    spread(&mut a, origin, 0..windows as i64 * w, 2 * windows * l, "o", 1, "overload");
    out.push(Pattern {
        name: "steady_overload",
        description: format!("one subject at twice the rate ({} requests per window) for {windows} windows", 2 * l),
        arrivals: a,
    });

    // Subjects at half the rate each, exponential gaps from the seed.
    let (subjects, windows) = if big { (2, 4i64) } else { (20, 10i64) };
    let mut rng = crate::traffic::rng(seed);
    let mut a = Vec::new();
    let mean_gap_us = (2 * w) as f64 / l as f64;
    for s in 0..subjects {
        let key = format!("u{s}");
        let mut t = 0f64;
        loop {
            let u: f64 = rand::Rng::random_range(&mut rng, f64::EPSILON..1.0);
            t += -u.ln() * mean_gap_us;
            if t >= (windows * w) as f64 {
                break;
            }
            a.push(arrival(origin, t as i64, &key, 1, "under the limit"));
        }
    }
    a.sort_by(|x, y| x.at.cmp(&y.at).then_with(|| x.key.cmp(&y.key)));
    out.push(Pattern {
        name: "under_limit",
        description: format!("{subjects} subjects at half the rate each, random gaps, for {windows} windows"),
        arrivals: a,
    });

    let mut a = Vec::new();
    for i in 0..20i64 {
        a.push(arrival(origin, i * (w + w / 2), "sparse", 1, "sparse"));
    }
    out.push(Pattern {
        name: "sparse",
        description: "one request every one and a half windows, 20 times".into(),
        arrivals: a,
    });

    if c > 1 {
        let mut a = Vec::new();
        let mut rng = crate::traffic::rng(seed ^ 0x5eed);
        let mut t = 0i64;
        // 8 * limit requests, gaps up to a window over the limit: about four windows. Above
        // FULL_SIZE, fewer requests over the same time.
        let (n, max_gap) =
            if big { (8 * FULL_SIZE, (w / FULL_SIZE as i64).max(1)) } else { (8 * l, (w / l as i64).max(1)) };
        for _ in 0..n {
            t += rand::Rng::random_range(&mut rng, 0..=max_gap);
            let cost = rand::Rng::random_range(&mut rng, 1..=(c / 2).max(1));
            a.push(arrival(origin, t, "cost", cost, "costs"));
        }
        out.push(Pattern {
            name: "costs",
            description: format!("one subject, costs from 1 to {}, about the rate in units", (c / 2).max(1)),
            arrivals: a,
        });
    }
    out
}

/// The cost of one call of `limiter` at policy `p`, in units of a call whose keys hold at most
/// `sizes::KEY_BYTES_PER_CALL` bytes: one plus the bytes its subject's
/// keys hold once a full capacity was admitted, per that many bytes. A script that reads its whole
/// log per call does work that grows with that log; one that keeps a counter or two does not.
///
/// Measured on a fresh emulator, deterministically (never by the clock): one subject sends
/// `sizes::CALIBRATION` requests, then as many again, at the start of a
/// window; the bytes its keys hold after each give the growth per admitted request, extrapolated to
/// the capacity (measured there when the capacity is within the calibration). 1 when the script
/// errs or stores nothing: the patterns show that.
pub fn cost_per_call(limiter: &Limiter, p: &Params, origin: i64) -> u64 {
    use super::sizes::{CALIBRATION, KEY_BYTES_PER_CALL};
    let c = p.capacity();
    let mut r = Replay::new(limiter);
    let w = p.window_ms as i64 * 1000;
    let n2 = c.min(2 * CALIBRATION);
    let n1 = (n2 / 2).max(1);
    let mut bytes = [0u64; 2];
    let mut sent = 0u64;
    for (slot, n) in [(0usize, n1), (1, n2)] {
        while sent < n {
            let a = arrival(origin, (w / 100).max(1) * sent as i64 / n2.max(1) as i64, "calibrate", 1, "calibration");
            if r.step(&a, a.at.as_millis().0).is_none() {
                return 1;
            }
            sent += 1;
        }
        bytes[slot] = match r.memory() {
            Ok((b, _, _)) => b,
            Err(_) => return 1,
        };
    }
    let grow = if n2 > n1 { bytes[1].saturating_sub(bytes[0]) / (n2 - n1) } else { 0 };
    let full = bytes[1] + grow * (c - n2);
    1 + full / KEY_BYTES_PER_CALL
}

/// [`patterns`], kept within `sizes::WORK_BUDGET` for a script whose call
/// costs `per_call` ([`cost_per_call`]): when the patterns' requests times that cost are over the
/// budget, each pattern is shortened to what its checks need, and the second value says how and
/// why (the report's coverage). The first policy's patterns only; `None` when nothing was cut.
///
/// Shortened, the requests over the limit (those an exact log refuses, which are the costly ones
/// for a script that reads its log when it refuses) shrink with the budget, down to
/// `sizes::LEAN_MARGIN`; what is at the limit stays:
/// - the bursts still send the whole capacity and a margin over it, `boundary_burst`'s second one
///   twice the margin (a sliding log refuses all of it, at the cost of a full read each);
/// - `steady_overload` runs 2 windows at the limit plus twice the margin per window, so a
///   limiter that admits more than its limit in a window still shows it;
/// - `under_limit` runs 1 subject at half the rate for 2 windows;
/// - `costs` sends fewer requests (at least [`FULL_SIZE`]); `sparse` is as it was.
pub fn patterns_within(p: &Params, origin: i64, seed: u64, per_call: u64) -> (Vec<Pattern>, Option<String>) {
    use super::sizes::{LEAN_MARGIN, WORK_BUDGET};
    let full = patterns(p, origin, seed);
    let total: u64 = full.iter().map(|x| x.arrivals.len() as u64).sum();
    let work = total.saturating_mul(per_call);
    if work <= WORK_BUDGET {
        return (full, None);
    }
    let w = p.window_ms as i64 * 1000;
    let l = p.limit;
    let c = p.capacity();
    let quarter = c.div_ceil(4);
    // The share of the work the budget allows, applied to what is over the limit.
    let m =
        ((quarter as u128 * WORK_BUDGET as u128).div_ceil(work as u128) as u64).max(LEAN_MARGIN.min(quarter)).max(1);
    let mut out = Vec::new();
    for pat in full {
        let mut a = Vec::new();
        let pat = match pat.name {
            "boundary_burst" => {
                // The second burst is where a sliding log refuses everything: it sends twice the
                // margin, so a limiter that admits past its limit across the boundary still shows
                // it (the attack search, confirmed at this policy, measures how far).
                let (n, n2) = (c + m, 2 * m);
                spread(&mut a, origin, w - w / 10..w, n, "b", 1, "end of window");
                spread(&mut a, origin, w..w + w / 10, n2, "b", 1, "start of next");
                Pattern {
                    name: pat.name,
                    description: format!(
                        "{n} requests in the last tenth of a window, {n2} in the first tenth of the next"
                    ),
                    arrivals: a,
                }
            }
            "idle_then_burst" => {
                let n = c + m;
                a.push(arrival(origin, 0, "i", 1, "warm-up"));
                spread(&mut a, origin, 3 * w..3 * w + w / 100, n, "i", 1, "burst");
                Pattern {
                    name: pat.name,
                    description: format!("one request, three idle windows, then {n} within a hundredth of a window"),
                    arrivals: a,
                }
            }
            "steady_overload" => {
                let per = l + 2 * m;
                spread(&mut a, origin, 0..2 * w, 2 * per, "o", 1, "overload");
                Pattern {
                    name: pat.name,
                    description: format!("one subject over the rate ({per} requests per window) for 2 windows"),
                    arrivals: a,
                }
            }
            "under_limit" => {
                let keep: Vec<Arrival> =
                    pat.arrivals.into_iter().filter(|x| x.key == "u0" && x.at.0 < (origin * 1000 + 2 * w)).collect();
                Pattern {
                    name: pat.name,
                    description: "1 subject at half the rate, random gaps, for 2 windows".into(),
                    arrivals: keep,
                }
            }
            "costs" => {
                let n = ((pat.arrivals.len() as u128 * WORK_BUDGET as u128 / work as u128) as usize)
                    .max(FULL_SIZE as usize)
                    .min(pat.arrivals.len());
                let mut arrivals = pat.arrivals;
                arrivals.truncate(n);
                Pattern {
                    name: pat.name,
                    description: format!("{} (its first {n} requests)", pat.description),
                    arrivals,
                }
            }
            _ => pat,
        };
        out.push(pat);
    }
    let kept: u64 = out.iter().map(|x| x.arrivals.len() as u64).sum();
    let why = format!(
        "patterns shortened from {total} to {kept} requests: a call costs {per_call} (its keys hold about {} KB at the capacity), and {total} requests at that cost are over the budget of {WORK_BUDGET}; bursts still send the capacity and {m} over it (boundary_burst's second burst {}), steady_overload 2 windows over the limit, under_limit 1 subject for 2 windows",
        per_call.saturating_sub(1) * super::sizes::KEY_BYTES_PER_CALL / 1024,
        2 * m
    );
    (out, Some(why))
}

/// One request as played, with what the exact log says and the calls it made.
#[derive(Clone, Debug)]
pub struct Played {
    pub arrival: Arrival,
    /// The subject's index, in order of first appearance.
    pub subject: u32,
    pub now_ms: i64,
    pub decision: Decision,
    pub exact: bool,
    pub calls: Vec<CallRecord>,
}

/// A pattern played through a limiter on a fresh emulator.
pub struct Replay<'l> {
    pub limiter: &'l Limiter,
    pub backend: EmulatedBackend,
    session: Session,
    /// An exact sliding log per policy of the spec: together they are the exact limiter the
    /// script is judged against (a request passes when every one admits it).
    exact: Vec<ExactLog>,
    subjects: Vec<String>,
    pub played: Vec<Played>,
    /// The first error, with the index of the request that raised it.
    pub error: Option<(usize, String)>,
    /// limitlab's exact model of the script (specs with `model`), deciding beside it.
    model: Option<Box<dyn crate::limiter::Reference>>,
    /// The first request where the script and its model decided differently: (index, script's
    /// decision, model's decision), on the fields the spec reports.
    pub model_mismatch: Option<(usize, Decision, Decision)>,
    /// The first script the emulator killed (past its budget or memory cap): no verdict can be
    /// given on a limiter that does not finish, so `check` stops with it.
    pub runaway: Option<Error>,
}

/// Whether `e` is the emulator killing a script that ran past its budget or memory cap, an adapter
/// past its budget, or a mistake of the spec itself (whatever the script answers): no verdict can
/// be given then, so `check` stops with it.
pub fn is_runaway(e: &Error) -> bool {
    match e {
        Error::Script { reply, .. } => reply.contains("Script killed by limitlab"),
        Error::Invalid { reason, .. } => reason.contains(crate::limiter::call::WHOLE_ARRAY),
        Error::Lua(m) => m.contains(crate::spec::adapter::OVER_BUDGET),
        _ => false,
    }
}

impl<'l> Replay<'l> {
    pub fn new(limiter: &'l Limiter) -> Replay<'l> {
        Replay {
            limiter,
            backend: EmulatedBackend::default(),
            session: Session::recording(),
            exact: limiter.spec().policies(&limiter.params()).into_iter().map(|(_, p)| ExactLog::new(p)).collect(),
            subjects: Vec::new(),
            played: Vec::new(),
            error: None,
            model: limiter.reference(),
            model_mismatch: None,
            runaway: None,
        }
    }

    /// Plays `arrivals` in order; stops at the first error (kept in [`Replay::error`]).
    /// `each` runs after every request (for probes), with its index.
    pub fn play(&mut self, arrivals: &[Arrival], mut each: impl FnMut(&mut Replay<'l>, usize) -> Result<()>) {
        for a in arrivals {
            let Some(i) = self.step(a, a.at.as_millis().0) else { return };
            if let Err(e) = each(self, i) {
                self.error = Some((i, e.to_string()));
                if is_runaway(&e) {
                    self.runaway = Some(e);
                }
                return;
            }
        }
    }

    /// Sends every request from now on to client process `p` (of the spec's `processes`): one
    /// process that knows everything it did, for comparisons of worlds that differ by one request.
    pub fn pin_process(&mut self, p: usize) {
        self.session.pin = Some(p);
    }

    /// Lets the next client process's turn pass without a request: a world without a request
    /// routes the requests after it to the same processes as one with it.
    pub fn skip_turn(&mut self) {
        self.session.seq += 1;
    }

    /// Lets turns pass until as many requests were routed here as in `other` (see
    /// [`Replay::skip_turn`]).
    pub fn align_turns(&mut self, other: &Replay<'_>) {
        self.session.seq = self.session.seq.max(other.session.seq);
    }

    /// Plays one request whose caller's clock reads `a.at` while the server's reads `server_ms`
    /// (they differ for a skewed caller); its index in [`Replay::played`], or `None` after an
    /// error (kept in [`Replay::error`]).
    pub fn step(&mut self, a: &Arrival, server_ms: i64) -> Option<usize> {
        let now = a.at.as_millis().0;
        self.backend.set_time_ms(server_ms);
        let d = self.limiter.call(&mut self.backend, &mut self.session, &a.key, now, a.cost);
        let calls = self.session.take_calls();
        let d = match d {
            Ok(d) => d,
            Err(e) => {
                self.error = Some((self.played.len(), e.to_string()));
                if is_runaway(&e) {
                    self.runaway = Some(e);
                }
                return None;
            }
        };
        let s = match self.subjects.iter().position(|x| *x == a.key) {
            Some(i) => i,
            None => {
                self.subjects.push(a.key.clone());
                self.subjects.len() - 1
            }
        };
        let units = if self.limiter.takes_cost() { a.cost } else { 1 };
        if let Some(m) = self.model.as_mut() {
            let want = m.decide_at(server_ms, &a.key, now, a.cost);
            let r = self.limiter.reports();
            let same = want.allowed == d.allowed
                && (!r.remaining || want.remaining == d.remaining)
                && (!r.retry_after || want.retry_after_ms == d.retry_after_ms)
                && (!r.reset || want.reset_after_ms == d.reset_after_ms);
            if !same && self.model_mismatch.is_none() {
                self.model_mismatch = Some((self.played.len(), d, want));
            }
        }
        let exact = self.exact.iter_mut().all(|e| e.admits(s as u32, server_ms, units));
        if exact {
            for e in &mut self.exact {
                e.decide(s as u32, server_ms, units);
            }
        }
        self.played.push(Played { arrival: a.clone(), subject: s as u32, now_ms: now, decision: d, exact, calls });
        Some(self.played.len() - 1)
    }

    /// [`Replay::step`] with the emulator's script line tracing on: the request's index, and the
    /// last script run's SHA (or function's name) with the line of its code that made the reply.
    pub fn step_traced(&mut self, a: &Arrival, server_ms: i64) -> Option<(usize, Option<(String, u32)>)> {
        self.backend.emu.set_line_trace(true);
        let i = self.step(a, server_ms);
        let line = self.backend.emu.last_script_line();
        self.backend.emu.set_line_trace(false);
        i.map(|i| (i, line))
    }

    /// Runs a lifecycle operation (refund, reset, clear) of `subject` at `at_ms` (both clocks); its
    /// calls are recorded with the next request's.
    pub fn op(&mut self, op: crate::spec::Op, subject: &str, at_ms: i64, cost: u64) -> Result<()> {
        self.backend.set_time_ms(at_ms);
        let out = self.limiter.op(&mut self.backend, &mut self.session, op, subject, at_ms, cost);
        self.note_runaway(&out, &format!("a {} of `check`", op.name()));
        out
    }

    /// Keeps the first runaway kill among `out`'s errors, its request said to be `what`.
    fn note_runaway<T>(&mut self, out: &Result<T>, what: &str) {
        if let Err(e @ Error::Script { reply, at, request }) = out {
            if self.runaway.is_none() && is_runaway(e) {
                self.runaway = Some(Error::Script {
                    reply: reply.clone(),
                    at: at.clone(),
                    request: format!("{request} ({what})"),
                });
            }
        }
    }

    /// The first line of the first error, or nothing.
    pub fn error_line(&self) -> &str {
        self.error.as_ref().and_then(|(_, e)| e.lines().next()).unwrap_or("")
    }

    /// How many subjects have sent a request.
    pub fn subjects(&self) -> usize {
        self.subjects.len()
    }

    /// What `subject`'s request of `cost` at caller time `now_ms` (the server's clock at
    /// `server_ms`) would get, leaving the keyspace and the clock as they were.
    pub fn probe(&mut self, subject: &str, server_ms: i64, now_ms: i64, cost: u64) -> Result<Decision> {
        self.probe_many(subject, server_ms, now_ms, &[cost]).map(|mut v| v.remove(0))
    }

    /// [`Replay::probe_many`] asked of the client process that will take the next request (not
    /// the one that took the last): what fits just before that request runs.
    pub fn probe_next_many(
        &mut self,
        subject: &str,
        server_ms: i64,
        now_ms: i64,
        costs: &[u64],
    ) -> Result<Vec<Decision>> {
        self.session.pin = Some(self.limiter.next_process(&self.session));
        let out = self.probe_many(subject, server_ms, now_ms, costs);
        self.session.pin = None;
        out
    }

    /// Several requests in a row at the same time, then everything put back
    /// ([`crate::limiter::oracle::what_if`]); the calls they make are not recorded.
    pub fn probe_many(&mut self, subject: &str, server_ms: i64, now_ms: i64, costs: &[u64]) -> Result<Vec<Decision>> {
        let out = crate::limiter::oracle::what_if(
            self.limiter,
            &mut self.backend,
            &mut self.session,
            subject,
            server_ms,
            now_ms,
            costs,
        );
        self.session.take_calls();
        self.note_runaway(&out, "a probe of `check`");
        out
    }

    /// The run as a [`Trace`], measured as every report measures it.
    pub fn metrics(&self) -> Result<Metrics> {
        self.metrics_for(self.limiter.params())
    }

    /// [`Replay::metrics`] against `params` (one of the spec's policies): the worst window is one
    /// of its `window_ms`, the exact log one of its limit.
    pub fn metrics_for(&self, params: Params) -> Result<Metrics> {
        let mut phases: Vec<String> = Vec::new();
        let mut records = Vec::with_capacity(self.played.len());
        for p in &self.played {
            let ph = match phases.iter().position(|x| *x == p.arrival.phase) {
                Some(i) => i,
                None => {
                    phases.push(p.arrival.phase.clone());
                    phases.len() - 1
                }
            };
            let cost = if self.limiter.takes_cost() { p.arrival.cost } else { 1 };
            records.push(Record {
                at: p.arrival.at,
                now_ms: p.now_ms,
                key: p.subject,
                phase: ph as u32,
                cost,
                decision: p.decision,
            });
        }
        let trace = Trace {
            name: self.limiter.name().to_string(),
            variant: self.limiter.variant(),
            params,
            keys: self.subjects.clone(),
            phases,
            records,
            elapsed_secs: 0.0,
        };
        metrics::measure(&trace, self.limiter)
    }

    /// The longest PTTL of the keys now, in ms (`None`: no key with a TTL left), when the last
    /// of the state expires.
    pub fn longest_ttl(&mut self) -> Option<i64> {
        self.keys_with_ttl().ok()?.into_iter().map(|(_, t)| t).filter(|t| *t > 0).max()
    }

    /// Every key of the emulator with its PTTL (-1: no TTL), sorted.
    pub fn keys_with_ttl(&mut self) -> Result<Vec<(String, i64)>> {
        self.backend.keys_with_ttl()
    }

    /// MEMORY USAGE of every key, summed, and the number of keys.
    /// MEMORY USAGE of the keys alive now, their count, and what they cost the server in
    /// `used_memory` (tables aside, [`limitlab_emulator::used_memory::key_cost`]).
    pub fn memory(&mut self) -> Result<(u64, u64, Vec<limitlab_emulator::used_memory::KeyCost>)> {
        let (mut bytes, mut n) = (0, 0);
        let mut measured = Vec::new();
        for k in self.backend.keys_under_prefix()? {
            if let Reply::Int(b) = self.backend.command(&[b"MEMORY", b"USAGE", k.as_bytes(), b"SAMPLES", b"0"])? {
                bytes += b.max(0) as u64;
                n += 1;
                measured.push(k);
            }
        }
        let costs = limitlab_emulator::used_memory::key_costs(&self.backend.emu, measured.iter().map(String::as_bytes));
        Ok((bytes, n, costs))
    }
}
