//! `limitlab check SPEC`: the one-command verdict on a limiter, for CI. It plays standard traffic
//! patterns sized from the spec's policy ([`run::patterns`]), searches for the worst arrival
//! pattern ([`crate::attack`]), and asks the script "what if" on copies of its keyspace, then
//! judges the answers. Each check is a named verdict with its evidence:
//!
//! | check | fails when |
//! |---|---|
//! | `errors` | any request of valid traffic gets an error (a script error, a reply the spec cannot read) |
//! | `overshoot` | the most admitted in any window, over the limit, exceeds the declared bound (`max_overshoot`, or the family's) |
//! | `false_rejections` | refusals an exact sliding log would admit exceed `max_false_rejection_rate` (default [`DEFAULT_MAX_FALSE_REJECTION_RATE`]) of what it admits, in the steady patterns |
//! | `remaining` | `remaining` is negative, above the capacity, or a request it promises room for is refused |
//! | `retry_after` | retrying after `retry_after` is refused, or retrying 1 ms earlier is admitted |
//! | `headers` | a caller trusting `RateLimit: r=..;t=..` or `Retry-After` is refused |
//! | `ttl` | a key has no TTL, lives more than [`TTL_WINDOWS`] windows after the traffic, or expires while still needed (decisions change when expiry is switched off) |
//! | `clock_skew` | a caller whose clock goes back gets an error or a refund (admitted after the subject was refused) |
//! | `cluster` | one call's keys span hash slots (CROSSSLOT on Redis Cluster) |
//! | `memory`, `speed` | never: bytes per subject and for 1,000,000 subjects; decisions per second |
//!
//! Checks that need a reply field the spec does not report are skipped, saying so. The same spec,
//! policy and seed give the same report byte for byte (`--no-timing` leaves out decisions per
//! second, the one wall-clock figure).
pub mod run;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::attack::{self, Goal, Settings};
use crate::backend::Backend;
use crate::limiter::honesty;
use crate::limiter::Limiter;
use crate::spec::headers::headers;
use limitlab_emulator::clock::Stopwatch;
use limitlab_emulator::cluster::key_slot;
use limitlab_emulator::{Error, Result};
use run::{Pattern, Replay};

/// The share of what an exact sliding log admits that a limiter may refuse in the steady patterns,
/// unless its spec says otherwise.
pub const DEFAULT_MAX_FALSE_REJECTION_RATE: f64 = 0.05;
/// The overshoot bound of a spec that declares neither `family` nor `max_overshoot`: the loosest
/// bound of the standard families (a fixed window or a sliding window counter may admit twice the
/// limit in a window). A limiter that admits more than that is not limiting at its policy.
pub const DEFAULT_OVERSHOOT_BOUND: f64 = 2.0;
/// A key may outlive the traffic by this many windows.
pub const TTL_WINDOWS: i64 = 10;
/// Probes per pattern and check (the first ones of each kind, in order).
pub const PROBES: usize = 100;
/// Requests per pattern after which the TTLs of the keys they named are read.
pub const TTL_PROBES: usize = 500;
/// The most requests of cost 1 one probe sends to count what fits.
pub const PROBE_UNITS: usize = 64;
/// The most requests of a `flood@<policy>` pattern (a further policy's own danger).
pub const FLOOD_MAX: u64 = 50_000;
/// The room left by the fill before counting it unit by unit (see `Ctx::room`).
pub const ROOM_PROBE: u64 = 8;

/// A request of `subject` at `at_ms` of `cost`, for the checks that play a few requests.
fn arrival_at(subject: &str, at_ms: i64, cost: u64) -> crate::traffic::Arrival {
    crate::traffic::Arrival {
        at: limitlab_emulator::clock::Millis(at_ms).as_micros(),
        key: subject.into(),
        cost,
        phase: "check".into(),
        op: crate::traffic::Op::Request,
    }
}

/// The requests the header probes of one pattern may send: a `RateLimit` promise is judged by
/// sending the whole capacity, so above [`run::FULL_SIZE`] that promise is no longer judged once the
/// probes have sent this many (after at least [`HEADER_PROBES_MIN`] decisions); `Retry-After`, one
/// request each, still is. Up to the full size it never binds: 50 decisions of at most
/// `1 + capacity` requests each stay under it.
pub const HEADER_PROBE_REQUESTS: usize = PROBES / 2 * (run::FULL_SIZE as usize + 1);
/// Decisions whose headers are judged in each pattern, whatever they cost.
pub const HEADER_PROBES_MIN: usize = 2;

/// A check's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Fail,
    /// Not judged: the spec does not report what the check needs, or no bound is declared.
    Skip,
    /// A figure, not a verdict (memory, speed).
    Info,
    /// Judged, but excused by the spec's `[waive]` with a reason the report prints; neither a pass
    /// nor a failure.
    Waived,
}

impl Status {
    /// The verdict as the report prints it.
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Skip => "SKIP",
            Status::Info => "INFO",
            Status::Waived => "WAIVE",
        }
    }
}

/// One named check.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckResult {
    pub name: &'static str,
    pub status: Status,
    /// One line: the verdict's reason, with figures.
    pub summary: String,
    /// The evidence: requests, replies, keys, what a probe got.
    pub evidence: Vec<String>,
    /// A scenario file that replays the traffic behind a failure (`limitlab run FILE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
}

impl CheckResult {
    fn new(name: &'static str, status: Status, summary: String) -> CheckResult {
        CheckResult { name, status, summary, evidence: Vec::new(), replay: None }
    }
}

/// The whole report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckReport {
    pub spec: String,
    pub origin: String,
    pub limit: u64,
    pub window_ms: u64,
    pub burst: u64,
    pub seed: u64,
    /// The overshoot bound judged against, and where it comes from.
    pub bound: Option<f64>,
    pub bound_source: String,
    /// How many requests each pattern and the attack search sent.
    pub traffic: Traffic,
    pub checks: Vec<CheckResult>,
}

/// The traffic behind a report: what each pattern sent, and what the attack search sent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Traffic {
    pub patterns: Vec<PatternTraffic>,
    /// Whether the patterns were scaled (the policy is above [`run::FULL_SIZE`]).
    pub scaled: bool,
    /// The attack search; `None` when it could not run at this policy.
    pub search: Option<SearchTraffic>,
}

/// One pattern's size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PatternTraffic {
    pub name: &'static str,
    pub requests: usize,
    pub subjects: usize,
    pub windows: f64,
}

/// What the attack search sent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SearchTraffic {
    /// The policy the search ran at: the check's own, or a smaller one with the same window (see
    /// [`search_size`]), whose winners were then scaled up, built and confirmed at the check's.
    pub limit: u64,
    pub capacity: u64,
    /// The most requests one searched pattern may send.
    pub budget: u32,
    pub scaled: bool,
    /// Patterns scored, both goals together.
    pub evaluations: u32,
    /// The requests they sent, both goals together.
    pub requests: u64,
    /// The requests of the winners, confirmed on the emulator at the check's policy.
    pub confirmed: u64,
}

/// The largest limit the attack search runs at as it is, for a spec without an exact model: every
/// one of its patterns is then played through the script on the emulator. Above it, the search runs
/// at this limit (the same window, the capacity scaled alike) and its winners are scaled up.
pub const SEARCH_FULL_SIZE: u64 = run::FULL_SIZE;
/// The same for a spec with an exact model, which the search asks instead of the emulator.
pub const SEARCH_FULL_SIZE_MODEL: u64 = 1000;

/// The limit the attack search runs at for `limiter`: its own up to [`SEARCH_FULL_SIZE`]
/// ([`SEARCH_FULL_SIZE_MODEL`] with an exact model), that size above it.
pub fn search_size(limiter: &Limiter) -> u64 {
    let cap = if limiter.reference().is_some() { SEARCH_FULL_SIZE_MODEL } else { SEARCH_FULL_SIZE };
    limiter.params().limit.min(cap)
}

impl CheckReport {
    /// How many checks failed.
    pub fn failures(&self) -> usize {
        self.checks.iter().filter(|c| c.status == Status::Fail).count()
    }
}

/// Options of [`check`].
#[derive(Clone, Debug)]
pub struct CheckOptions {
    pub seed: u64,
    /// Measure decisions per second (wall clock: not deterministic).
    pub timing: bool,
    /// Where replayable traces of failures go (`None`: not written).
    pub out: Option<PathBuf>,
    /// The attack search's evaluations per goal.
    pub iterations: u32,
    /// Show progress on stderr, when it is a terminal.
    pub progress: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions { seed: 0, timing: true, out: None, iterations: 200, progress: false }
    }
}

/// Progress on stderr while `check` runs, one step per stage; only at a terminal, and only for a
/// policy large enough for the wait to be noticed.
struct Stages(Option<indicatif::ProgressBar>);

impl Stages {
    fn new(show: bool, stages: usize) -> Stages {
        use std::io::IsTerminal;
        Stages((show && std::io::stderr().is_terminal()).then(|| {
            let b = indicatif::ProgressBar::new(stages as u64);
            if let Ok(style) = indicatif::ProgressStyle::with_template("{prefix:>20} {bar:40} {pos}/{len} {msg} ({elapsed})") {
                b.set_style(style);
            }
            b.set_prefix("check");
            b
        }))
    }

    fn at(&self, what: &str) {
        if let Some(b) = &self.0 {
            b.set_message(what.to_string());
        }
    }

    fn done(&self) {
        if let Some(b) = &self.0 {
            b.inc(1);
        }
    }
}

impl Drop for Stages {
    fn drop(&mut self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}

/// Runs every check on `limiter`.
pub fn check(limiter: &Limiter, opts: &CheckOptions) -> Result<CheckReport> {
    let p = limiter.params();
    let spec = limiter.spec();
    let origin = attack::origin_ms(p.window_ms);
    let bound = Some(limiter.overshoot_bound().unwrap_or(DEFAULT_OVERSHOOT_BOUND));
    let bound_source = match (spec.max_overshoot, spec.family) {
        (Some(_), _) => "max_overshoot in the spec".to_string(),
        (None, Some(f)) => format!("the {} family's bound", crate::sim::standard::seed_name(f).to_lowercase()),
        (None, None) => {
            "the default: the loosest bound of the standard families; give `family` or `max_overshoot` to judge tighter".to_string()
        }
    };
    // The patterns of the first policy, then those of each further one (`[[policy.and]]`), named
    // `boundary_burst@minute`.
    let policies = spec.policies(&p);
    let mut patterns = run::patterns(&p, origin, opts.seed);
    // The fastest rate any policy allows, in units per ms.
    let fastest = policies.iter().map(|(_, q)| q.limit as f64 / q.window_ms as f64).fold(0.0, f64::max);
    for (name, more) in policies.iter().skip(1) {
        for mut pat in run::patterns(more, attack::origin_ms(more.window_ms), opts.seed) {
            // A pattern's name is static text in reports; these few are made once per check.
            pat.name = Box::leak(format!("{}@{name}", pat.name).into_boxed_str());
            patterns.push(pat);
        }
        // The longer policy's own danger: traffic as fast as the others let through (twice the
        // fastest rate) for two of its windows, at most 40 of its limits and FLOOD_MAX requests.
        let w = more.window_ms as i64;
        let n = ((4.0 * fastest * w as f64).ceil() as u64).clamp(2, (40 * more.limit).min(FLOOD_MAX));
        let at0 = attack::origin_ms(more.window_ms);
        let arrivals = (0..n as i64)
            .map(|i| crate::traffic::Arrival {
                at: limitlab_emulator::clock::Micros(at0 * 1000 + i * 2 * w * 1000 / n as i64),
                key: "f".into(),
                cost: 1,
                phase: "flood".into(),
                op: crate::traffic::Op::Request,
            })
            .collect();
        patterns.push(run::Pattern {
            name: Box::leak(format!("flood@{name}").into_boxed_str()),
            description: format!("{n} requests over two windows of `{name}`, twice the fastest rate any policy allows"),
            arrivals,
        });
    }
    let mut ctx = Ctx { limiter, opts, patterns: &patterns, checks: Vec::new() };
    // Shown for a policy above the full size, whose check takes seconds.
    let stages = Stages::new(opts.progress && run::scaled(&p), patterns.len() + 5);

    // Every pattern once, with the probes the checks need.
    let mut runs = Vec::new();
    let watch = Stopwatch::start();
    let mut decisions = 0usize;
    for pat in &patterns {
        stages.at(&format!("{} ({} requests)", pat.name, pat.arrivals.len()));
        let mut r = Replay::new(limiter);
        let mut probes = Probes::default();
        r.play(&pat.arrivals, |r, i| probes.after(r, i, pat.arrivals.get(i + 1)));
        if let Some(e) = r.runaway.take() {
            return Err(stopped(e, pat.name));
        }
        decisions += r.played.len();
        runs.push((r, probes));
        stages.done();
    }
    let secs = watch.elapsed_secs();
    let w = p.window_ms as f64 * 1000.0;
    let mut traffic = Traffic {
        patterns: patterns
            .iter()
            .zip(&runs)
            .map(|(pat, (r, _))| PatternTraffic {
                name: pat.name,
                requests: pat.arrivals.len(),
                subjects: r.subjects(),
                windows: match (pat.arrivals.first(), pat.arrivals.last()) {
                    (Some(a), Some(b)) => ((b.at.0 - a.at.0) as f64 / w * 100.0).round() / 100.0,
                    _ => 0.0,
                },
            })
            .collect(),
        scaled: run::scaled(&p),
        search: None,
    };

    ctx.errors(&runs);
    ctx.model(&runs);
    stages.at("attack search");
    let searched = ctx.attack();
    stages.done();
    let found = searched.as_ref().map(|(f, _)| f);
    if let Some((f, t)) = &searched {
        traffic.search = Some(SearchTraffic { confirmed: f.iter().map(|f| f.arrivals.len() as u64).sum(), ..t.clone() });
    }
    ctx.overshoot(&runs, bound, &bound_source, found, traffic.search.as_ref());
    ctx.false_rejections(&runs, found);
    ctx.remaining(&runs);
    ctx.granted(&runs);
    ctx.refusals(&runs);
    ctx.peek();
    ctx.lifecycle();
    ctx.oversized();
    ctx.retry_after(&runs);
    ctx.headers(&runs);
    stages.at("ttl (the patterns again, expired keys kept)");
    ctx.ttl(&mut runs)?;
    stages.done();
    stages.at("clock_skew");
    ctx.clock_skew();
    stages.done();
    stages.at("cluster (the patterns again on a cluster node)");
    ctx.cluster(&runs);
    stages.done();
    ctx.memory(&mut runs)?;
    stages.done();
    for c in &mut ctx.checks {
        if let Some((_, reason)) = spec.waive.iter().find(|(n, _)| n == c.name) {
            let verdict = match c.status {
                Status::Fail => "would fail",
                Status::Pass => "would pass",
                _ => "not judged",
            };
            c.summary = format!("waived by the spec: {reason} ({verdict}: {})", c.summary);
            c.status = Status::Waived;
        }
    }
    if opts.timing {
        let per_sec = if secs > 0.0 { decisions as f64 / secs } else { 0.0 };
        ctx.checks.push(CheckResult::new(
            "speed",
            Status::Info,
            format!("{} decisions per second on the emulator ({decisions} decisions, probes included in the time)", per_sec.round()),
        ));
    }
    Ok(CheckReport {
        spec: spec.name.clone(),
        origin: spec.origin.display().to_string(),
        limit: p.limit,
        window_ms: p.window_ms,
        burst: p.capacity(),
        seed: opts.seed,
        bound,
        bound_source,
        traffic,
        checks: ctx.checks,
    })
}

/// The error `check` stops with when the emulator killed a script: where, and why no verdict.
fn stopped(e: Error, pattern: &str) -> Error {
    match e {
        Error::Script { reply, at, request } => Error::Script {
            reply,
            at,
            request: format!(
                "{request}, in check's {pattern} pattern: no verdict on a script that does not finish \
                 (--script-budget sets the budget of loop iterations and calls)"
            ),
        },
        other => other,
    }
}

/// What the probes found while a pattern played.
#[derive(Default)]
struct Probes {
    /// (request index, what was wrong)
    remaining: Vec<(usize, String)>,
    remaining_checked: usize,
    retry: Vec<(usize, String)>,
    retry_checked: usize,
    headers: Vec<(usize, String)>,
    headers_checked: usize,
    /// Decisions whose headers were judged, and the requests their probes sent.
    headers_decisions: usize,
    headers_sent: usize,
    errors: Vec<(usize, String)>,
    refusals: Vec<(usize, String)>,
    refusals_checked: usize,
    /// Keys without a TTL right after a request that named them.
    no_ttl: Vec<(usize, String)>,
    ttl_checked: usize,
    /// The next request's index and what fitted just before it (see the refusal probe).
    pending: Option<(usize, Vec<crate::limiter::Decision>)>,
}

impl Probes {
    fn after(&mut self, r: &mut Replay<'_>, i: usize, next: Option<&crate::traffic::Arrival>) -> Result<()> {
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
        if reports.remaining {
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
                    let (b, a) = (before.iter().take_while(|x| x.allowed).count(), v.iter().take_while(|x| x.allowed).count());
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
            if let Some(v) = honesty::headers_judged(&d, reports, &r.limiter.params(), now, cost, quota, &mut |at, costs| {
                *sent += costs.len();
                probe(r, at, costs)
            }) {
                self.headers_decisions += usize::from(quota);
                self.headers_checked += v.checked;
                self.headers.extend(v.wrong.into_iter().map(|w| (i, w)));
            }
        }
        Ok(())
    }
}

struct Ctx<'a> {
    limiter: &'a Limiter,
    opts: &'a CheckOptions,
    patterns: &'a [Pattern],
    checks: Vec<CheckResult>,
}

/// A request for messages: `boundary_burst #12 (subject b, now_ms 1704067200950, cost 1)`.
/// The cost shown is what the spec counted: 1 for a spec that never reads `cost`.
fn at(pat: &str, i: usize, r: &Replay<'_>) -> String {
    match r.played.get(i) {
        Some(p) => {
            let cost = if r.limiter.takes_cost() { p.arrival.cost } else { 1 };
            format!("{pat} request #{} (subject `{}`, now_ms {}, cost {cost})", i + 1, p.arrival.key, p.now_ms)
        }
        None => format!("{pat} request #{}", i + 1),
    }
}

impl Ctx<'_> {
    fn errors(&mut self, runs: &[(Replay<'_>, Probes)]) {
        let mut c = CheckResult::new("errors", Status::Pass, String::new());
        let mut calls = 0;
        for ((r, probes), pat) in runs.iter().zip(self.patterns) {
            calls += r.played.len();
            if let Some((i, e)) = &r.error {
                c.evidence.push(format!("{}: {e}", at(pat.name, *i, r)));
                if c.replay.is_none() {
                    c.replay = self.save(pat.name, "errors", &pat.arrivals[..=(*i).min(pat.arrivals.len() - 1)]);
                }
            }
            for (i, e) in &probes.errors {
                c.evidence.push(format!("after {}: {e}", at(pat.name, *i, r)));
            }
        }
        if c.evidence.is_empty() {
            c.summary = format!("{calls} requests over {} patterns, no error", self.patterns.len());
        } else {
            c.status = Status::Fail;
            c.summary = format!("{} error(s) on valid traffic", c.evidence.len());
        }
        self.checks.push(c);
    }

    /// The attack search at the policy, or, above [`search_size`], at that size with its winners
    /// scaled up and confirmed at the policy.
    fn attack(&mut self) -> Option<(Vec<attack::Found>, SearchTraffic)> {
        let p = self.limiter.params();
        let budget = attack::default_budget(p.limit);
        let s = Settings::new(self.limiter.clone(), budget, self.opts.seed, self.opts.iterations).ok()?;
        let size = search_size(self.limiter);
        let (found, small) = if size < p.limit {
            // The capacity scaled as the limit is (at least 1).
            let burst = p.burst.map(|b| ((b as u128 * size as u128 + p.limit as u128 / 2) / p.limit as u128).max(1) as u64);
            let params = crate::limiter::Params { limit: size, window_ms: p.window_ms, burst };
            let small = Limiter::from_spec(self.limiter.shared_spec().clone(), params).ok()?;
            let small = Settings::new(small, attack::default_budget(size), self.opts.seed, self.opts.iterations).ok()?;
            (attack::attack_scaled(&s, &small).ok()?, Some(small))
        } else {
            (attack::attack(&s).ok()?, None)
        };
        let at = small.as_ref().unwrap_or(&s);
        let t = SearchTraffic {
            limit: at.limiter.params().limit,
            capacity: at.limiter.params().capacity(),
            budget: at.budget,
            scaled: small.is_some(),
            evaluations: found.iter().map(|f| f.evaluations).sum(),
            requests: found.iter().map(|f| f.requests).sum(),
            confirmed: 0,
        };
        Some((found, t))
    }

    /// The most admitted in any window over the limit, for each of the spec's policies (the first
    /// one's bound is `bound`, from `source`; each further one's is `max_overshoot` or its
    /// family's bound for its own size), on every pattern and the attack search's.
    fn overshoot(
        &mut self,
        runs: &[(Replay<'_>, Probes)],
        bound: Option<f64>,
        source: &str,
        found: Option<&Vec<attack::Found>>,
        search: Option<&SearchTraffic>,
    ) {
        let spec = self.limiter.spec();
        let policies = spec.policies(&self.limiter.params());
        let several = policies.len() > 1;
        let mut lines = Vec::new();
        // The worst over its bound of every policy: (figure, bound, what, arrivals).
        let mut verdicts: Vec<(f64, Option<f64>, String, &[crate::traffic::Arrival])> = Vec::new();
        for (j, (pname, params)) in policies.iter().enumerate() {
            let b = if j == 0 { bound } else { Some(spec.overshoot_bound(params).unwrap_or(DEFAULT_OVERSHOOT_BOUND)) };
            let tag = if several { format!(" [{pname}: {} per {} ms]", params.limit, params.window_ms) } else { String::new() };
            let mut candidates: Vec<(f64, String, &[crate::traffic::Arrival])> = Vec::new();
            for ((r, _), pat) in runs.iter().zip(self.patterns) {
                if let Ok(m) = r.metrics_for(*params) {
                    lines.push(format!("{}: {} in one window ({:.2}){tag}", pat.name, m.max_in_window, m.overshoot));
                    let what =
                        format!("{} ({}, starting at now_ms {}){tag}", pat.name, m.max_in_window, m.worst_window_start_ms.unwrap_or(0));
                    candidates.push((m.overshoot, what, &pat.arrivals));
                }
            }
            if let Some(f) = found.and_then(|f| f.iter().find(|f| f.goal == Goal::Overshoot)).filter(|_| j == 0) {
                lines.push(format!(
                    "attack search: {} in one window ({:.2}) with {} requests{tag}",
                    f.metrics.max_in_window,
                    f.metrics.overshoot,
                    f.arrivals.len()
                ));
                candidates.push((
                    f.metrics.overshoot,
                    format!("the attack search's pattern ({} requests){tag}", f.arrivals.len()),
                    &f.arrivals,
                ));
            }
            // The first of the highest (patterns before the search).
            let mut worst: Option<(f64, String, &[crate::traffic::Arrival])> = None;
            for c in candidates {
                if worst.as_ref().is_none_or(|w| c.0 > w.0) {
                    worst = Some(c);
                }
            }
            if let Some((x, what, arrivals)) = worst {
                verdicts.push((x, b, what, arrivals));
            }
        }
        if let Some(t) = search.filter(|t| t.scaled) {
            let p = self.limiter.params();
            lines.push(format!(
                "the attack search was narrowed: it ran at limit {} per {} ms (capacity {}), not {} (capacity {}), {} patterns of up to {} requests; \
                 each goal's winner was scaled up to the policy (counts times {:.2}, spacings divided by it), built and confirmed there",
                t.limit,
                p.window_ms,
                t.capacity,
                p.limit,
                p.capacity(),
                t.evaluations,
                t.budget,
                p.limit as f64 / t.limit as f64
            ));
        }
        if verdicts.is_empty() {
            self.checks.push(CheckResult::new("overshoot", Status::Skip, "no pattern ran".into()));
            return;
        }
        // The policy furthest above its bound, else the first.
        let over = |v: &(f64, Option<f64>, String, &[crate::traffic::Arrival])| v.1.map(|b| v.0 - b).unwrap_or(f64::MIN);
        let mut pick = 0;
        for (k, v) in verdicts.iter().enumerate() {
            if over(v) > 1e-9 && over(v) > over(&verdicts[pick]) {
                pick = k;
            }
        }
        let (x, b, what, arrivals) = verdicts.swap_remove(pick);
        let source = if pick == 0 { source.to_string() } else { "the spec's bound for this policy".to_string() };
        let mut c = match b {
            Some(b) if x > b + 1e-9 => {
                CheckResult::new("overshoot", Status::Fail, format!("worst {x:.2} in {what}, above the bound {b:.3} ({source})"))
            }
            Some(b) => CheckResult::new("overshoot", Status::Pass, format!("worst {x:.2} in {what}, within the bound {b:.3} ({source})")),
            None => CheckResult::new("overshoot", Status::Skip, format!("worst {x:.2} in {what}; no bound to judge it: {source}")),
        };
        if several && c.status == Status::Pass {
            c.summary = format!("every policy within its bound; {}", c.summary);
        }
        c.evidence = lines;
        if c.status == Status::Fail {
            c.replay = self.save("overshoot", "overshoot", arrivals);
        }
        self.checks.push(c);
    }

    fn false_rejections(&mut self, runs: &[(Replay<'_>, Probes)], found: Option<&Vec<attack::Found>>) {
        let max = self.limiter.spec().max_false_rejection_rate.unwrap_or(DEFAULT_MAX_FALSE_REJECTION_RATE);
        let mut c = CheckResult::new("false_rejections", Status::Pass, String::new());
        // (share, what, pattern)
        let mut worst: Option<(f64, String, &Pattern)> = None;
        for ((r, _), pat) in runs.iter().zip(self.patterns) {
            let exact_admits = r.played.iter().filter(|p| p.exact).count();
            let (rate, what) = match pat.name.split('@').next().unwrap_or(pat.name) {
                // Under the limit, an exact log admits (nearly) everything: each request it admits
                // and the limiter refuses is a false rejection.
                "under_limit" | "sparse" => {
                    let fr = r.played.iter().filter(|p| p.exact && !p.decision.allowed).count();
                    let rate = if exact_admits > 0 { fr as f64 / exact_admits as f64 } else { 0.0 };
                    c.evidence
                        .push(format!("{}: refused {fr} of the {exact_admits} requests an exact sliding log admits ({rate:.3})", pat.name));
                    (rate, format!("refused {rate:.3} of what an exact sliding log admits in {}", pat.name))
                }
                // Under sustained overload both admit about the limit per window, not the same
                // requests: what counts is how many. A shortfall is starvation.
                "steady_overload" => {
                    let admitted = r.played.iter().filter(|p| p.decision.allowed).count();
                    let short = if exact_admits > 0 { 1.0 - admitted as f64 / exact_admits as f64 } else { 0.0 };
                    c.evidence.push(format!(
                        "{}: admitted {admitted} where an exact sliding log admits {exact_admits} (shortfall {:.3})",
                        pat.name,
                        short.max(0.0)
                    ));
                    (
                        short,
                        format!(
                            "admitted {:.3} fewer than an exact sliding log under sustained overload (steady_overload)",
                            short.max(0.0)
                        ),
                    )
                }
                _ => continue,
            };
            if worst.as_ref().is_none_or(|w| rate > w.0) {
                worst = Some((rate, what, pat));
            }
        }
        if let Some(f) = found.and_then(|f| f.iter().find(|f| f.goal == Goal::FalseRejections)) {
            let n = f.metrics.calls.max(1);
            c.evidence.push(format!(
                "attack search (adversarial, not judged): {} false rejections in {} requests ({:.3} per request)",
                f.metrics.false_rejections,
                f.metrics.calls,
                f.metrics.false_rejections as f64 / n as f64
            ));
        }
        let source = if self.limiter.spec().max_false_rejection_rate.is_some() {
            "max_false_rejection_rate in the spec"
        } else {
            "the default; set max_false_rejection_rate in the spec"
        };
        match worst {
            Some((rate, what, pat)) if rate > max => {
                c.status = Status::Fail;
                c.summary = format!("{what}, above {max} ({source})");
                c.replay = self.save(pat.name, "false_rejections", &pat.arrivals);
            }
            Some((_, what, _)) => c.summary = format!("at worst {what}, within {max} ({source})"),
            None => c.status = Status::Skip,
        }
        self.checks.push(c);
    }

    fn probe_check(
        &mut self,
        name: &'static str,
        runs: &[(Replay<'_>, Probes)],
        reported: bool,
        what: &str,
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
            }
        }
        let bad: usize = runs.iter().map(|(_, p)| pick(p).0.len()).sum();
        if bad > 0 {
            c.status = Status::Fail;
            c.summary = format!("{bad} of the {what} values checked were wrong");
        } else {
            c.summary = format!("{checked} {what} values checked by asking the script, all honest");
        }
        self.checks.push(c);
    }

    /// Requests whose cost is above the capacity, each from a fresh subject: no limiter may admit
    /// one, and a `retry_after` it gives must be kept.
    fn oversized(&mut self) {
        if !self.limiter.takes_cost() {
            self.checks.push(CheckResult::new("oversized", Status::Skip, "the spec never reads `cost`: every request counts 1".into()));
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
                c.evidence.push(format!("cost {cost} (subject `{subject}`, now_ms {at_ms}): answered with an error, so not admitted: {e}"));
                continue;
            };
            if d.allowed && self.limiter.reports().granted && d.units(cost) <= cap {
                // A partial grant of at most the capacity is what an "at most N" call does.
                granted_part.push(format!("cost {cost}: granted {}", d.units(cost)));
            } else if d.allowed {
                c.evidence.push(format!(
                    "cost {cost} (subject `{subject}`, now_ms {at_ms}) was admitted{}, though the capacity is {cap}",
                    if self.limiter.reports().granted { format!(" with {} units granted", d.units(cost)) } else { String::new() }
                ));
                if c.replay.is_none() {
                    c.replay = self.save("oversized", "oversized", std::slice::from_ref(&a));
                }
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
    }

    /// A limiter that grants part of a request (`granted`): every admitted request is given from 1
    /// to its cost, every refused one nothing. (What it grants is counted, not the cost, by the
    /// overshoot and false-rejection figures.)
    fn granted(&mut self, runs: &[(Replay<'_>, Probes)]) {
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
                    (true, g) if g > cost as i64 => Some(format!("admitted and granted {g} units of a request of cost {cost}")),
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
        if bad > 0 {
            c.status = Status::Fail;
            c.summary = format!("{bad} of {judged} decisions granted what they did not admit");
        } else {
            c.summary = format!("{judged} decisions each granted from 1 to its cost when admitted and nothing when refused; {partial} were partial grants, counted at what they granted");
        }
        self.checks.push(c);
    }

    /// How much fits `subject` at `at_ms` on `r`: a request of nearly the capacity (leaving
    /// [`ROOM_PROBE`] units, when the spec reads `cost`; else that many requests of cost 1), then up
    /// to `2 * ROOM_PROBE` requests of cost 1; the number admitted. Comparing two keyspaces this
    /// way tells apart a unit more or less even at a capacity of thousands. `None` on an error.
    fn room(&self, r: &mut Replay<'_>, subject: &str, at_ms: i64) -> Option<usize> {
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
    fn peek(&mut self) {
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
        let mut fills = vec![cap - cap.min(ROOM_PROBE / 2), cap];
        if cap <= ROOM_PROBE {
            fills.insert(0, 0);
        }
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
                    c.evidence.push(format!("{fill} units used at {}, then a request of cost 0 at {t}: error: {e}", t - 1));
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
        if c.evidence.is_empty() {
            c.summary = format!("{judged} requests of cost 0 (at an unused, a partly used and a full subject) left as much room as no request, then, half a window and a window later");
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
    fn lifecycle(&mut self) {
        let spec = self.limiter.spec();
        let have: Vec<crate::spec::Op> = crate::spec::Op::ALL.into_iter().filter(|o| spec.has_op(*o)).collect();
        if have.is_empty() {
            self.checks.push(CheckResult::new("lifecycle", Status::Skip, "the spec has no refund, reset or clear".into()));
            return;
        }
        let p = self.limiter.params();
        let (w, cap) = (p.window_ms as i64, p.capacity());
        let t = attack::origin_ms(p.window_ms) + w / 3;
        let k = if self.limiter.takes_cost() { cap.min(2) } else { 1 };
        let before = cap.saturating_sub(k + ROOM_PROBE / 2);
        let mut c = CheckResult::new("lifecycle", Status::Pass, String::new());
        let mut judged = 0;
        let err = |c: &mut CheckResult, r: &Replay<'_>, what: &str| {
            let e = r.error_line();
            c.evidence.push(format!("{what}: error: {e}"));
        };
        // `fill` units of `subject` at `at` (one request when the spec reads cost).
        let fill = |r: &mut Replay<'_>, subject: &str, at: i64, n: u64| -> bool {
            if n == 0 {
                return true;
            }
            if self.limiter.takes_cost() {
                r.step(&arrival_at(subject, at, n), at).is_some()
            } else {
                (0..n).all(|_| r.step(&arrival_at(subject, at, 1), at).is_some())
            }
        };
        for &op in &have {
            match op {
                crate::spec::Op::Refund => {
                    for later in [0, w / 2, w] {
                        let t2 = t + later;
                        let mut a = Replay::new(self.limiter);
                        let mut b = Replay::new(self.limiter);
                        if !(fill(&mut a, "life", t - 1, before) && fill(&mut b, "life", t - 1, before)) {
                            err(&mut c, if a.error.is_some() { &a } else { &b }, &format!("{before} units used at {}", t - 1));
                            break;
                        }
                        let Some(i) = a.step(&arrival_at("life", t, k), t) else {
                            err(&mut c, &a, &format!("a request of cost {k} at {t}"));
                            break;
                        };
                        if !a.played[i].decision.allowed {
                            continue;
                        }
                        if a.op(op, "life", t2, k).is_err() {
                            err(&mut c, &a, &format!("a refund of {k} at {t2}"));
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
                }
                crate::spec::Op::Reset | crate::spec::Op::Clear => {
                    for later in [0, w / 2] {
                        let t2 = t + later;
                        let mut a = Replay::new(self.limiter);
                        let mut b = Replay::new(self.limiter);
                        if !(fill(&mut a, "life", t - 1, cap) && fill(&mut a, "other", t - 1, cap) && fill(&mut b, "other", t - 1, cap)) {
                            err(&mut c, if a.error.is_some() { &a } else { &b }, &format!("{cap} units used at {}", t - 1));
                            break;
                        }
                        if a.op(op, "life", t2, 0).is_err() {
                            err(&mut c, &a, &format!("a {} at {t2}", op.name()));
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
                        let y = if op == crate::spec::Op::Clear {
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
                                    if op == crate::spec::Op::Clear { "are an unused subject's: a clear must reset every subject" } else { "were its own: a reset of one subject must not touch another" }
                                ));
                            }
                        }
                    }
                }
                crate::spec::Op::Request => {}
            }
        }
        let names: Vec<&str> = have.iter().map(|o| o.name()).collect();
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

    /// A spec that names limitlab's exact model of its script (`model`) is judged against it,
    /// decision by decision on every pattern: the model is what the property tests prove bounds of.
    fn model(&mut self, runs: &[(Replay<'_>, Probes)]) {
        let Some(name) = self.limiter.spec().model else {
            self.checks.push(CheckResult::new(
                "model",
                Status::Skip,
                "the spec names no exact model (only limitlab's own scripts have one)".into(),
            ));
            return;
        };
        let mut c = CheckResult::new("model", Status::Pass, String::new());
        let mut n = 0;
        for ((r, _), pat) in runs.iter().zip(self.patterns) {
            n += r.played.len();
            if let Some((i, got, want)) = &r.model_mismatch {
                c.evidence.push(format!("{}: the script decided {got:?}, the model {want:?}", at(pat.name, *i, r)));
                if c.replay.is_none() {
                    c.replay = self.save(pat.name, "model", &pat.arrivals[..=*i]);
                }
            }
        }
        if c.evidence.is_empty() {
            c.summary = format!("{n} decisions identical to the exact model `{}`", name.name());
        } else {
            c.status = Status::Fail;
            c.summary = format!("the script and its exact model `{}` decided differently in {} pattern(s)", name.name(), c.evidence.len());
        }
        self.checks.push(c);
    }

    fn refusals(&mut self, runs: &[(Replay<'_>, Probes)]) {
        let judged = self.limiter.takes_cost() && self.limiter.params().capacity() > 1;
        if !judged {
            self.checks.push(CheckResult::new(
                "refusals",
                Status::Skip,
                "every request costs 1 here, so a refusal that takes units cannot be told apart from one that does not".into(),
            ));
            return;
        }
        self.probe_check("refusals", runs, true, "refusal", |p| (&p.refusals, p.refusals_checked));
    }

    fn remaining(&mut self, runs: &[(Replay<'_>, Probes)]) {
        let reported = self.limiter.reports().remaining;
        self.probe_check("remaining", runs, reported, "remaining", |p| (&p.remaining, p.remaining_checked));
    }

    fn retry_after(&mut self, runs: &[(Replay<'_>, Probes)]) {
        let reported = self.limiter.reports().retry_after;
        self.probe_check("retry_after", runs, reported, "retry_after", |p| (&p.retry, p.retry_checked));
    }

    fn headers(&mut self, runs: &[(Replay<'_>, Probes)]) {
        let r = self.limiter.reports();
        let p = self.limiter.params();
        let policy = headers(&crate::limiter::Decision::allowed_only(true), r, &p).policy;
        self.probe_check("headers", runs, r.retry_after || (r.remaining && r.reset), "header", |p| (&p.headers, p.headers_checked));
        if let Some(c) = self.checks.last_mut() {
            c.evidence.insert(0, format!("RateLimit-Policy: {policy}"));
        }
    }

    fn ttl(&mut self, runs: &mut [(Replay<'_>, Probes)]) -> Result<()> {
        // The longest window of the spec's policies: a per-minute counter beside a per-second one
        // rightly lives a minute.
        let w = self.limiter.spec().policies(&self.limiter.params()).iter().map(|(_, p)| p.window_ms as i64).max().unwrap_or(1);
        let mut c = CheckResult::new("ttl", Status::Pass, String::new());
        let mut no_ttl = Vec::new();
        let mut too_long = Vec::new();
        let mut keys = 0;
        for ((r, probes), pat) in runs.iter_mut().zip(self.patterns) {
            for (i, why) in &probes.no_ttl {
                no_ttl.push(format!("{}: {why}", at(pat.name, *i, r)));
            }
            for (k, t) in r.keys_with_ttl()? {
                keys += 1;
                if t == -1 {
                    no_ttl.push(format!("{} left `{k}` with no TTL", pat.name));
                } else if t > TTL_WINDOWS * w {
                    too_long.push(format!("{} left `{k}` with PTTL {t} ms, more than {TTL_WINDOWS} windows after the traffic", pat.name));
                }
            }
        }
        // Expiry: the same traffic with expired keys kept. A script that resets its window by
        // letting a key expire (INCR + PEXPIRE on the first hit) depends on expiry by design;
        // that is seen on sparse traffic (a refusal appears when nothing expires) and skips this.
        let sparse = self.patterns.iter().find(|p| p.name == "sparse");
        let relies = match sparse {
            Some(pat) => {
                let mut r = Replay::new(self.limiter);
                r.backend.emu.set_expiry(false);
                r.play(&pat.arrivals, |_, _| Ok(()));
                r.played.iter().any(|p| !p.decision.allowed)
            }
            None => false,
        };
        let mut early = Vec::new();
        if !relies {
            for ((r, _), pat) in runs.iter().zip(self.patterns) {
                let mut kept = Replay::new(self.limiter);
                kept.backend.emu.set_expiry(false);
                kept.play(&pat.arrivals, |_, _| Ok(()));
                // The run with expired keys kept stopped at an error where the plain run went on:
                // the script meets state it cannot handle once a key outlives its TTL.
                if let Some((i, e)) = kept.error.as_ref().filter(|(i, _)| *i < r.played.len()) {
                    early.push((
                        format!(
                            "{}: decided when keys expire, but an error when expired keys are kept: {}",
                            at(pat.name, *i, r),
                            e.lines().next().unwrap_or("")
                        ),
                        pat,
                        *i,
                    ));
                    continue;
                }
                if let Some(i) = r.played.iter().zip(&kept.played).position(|(a, b)| a.decision.allowed != b.decision.allowed) {
                    let (a, b) = (&r.played[i], &kept.played[i]);
                    early.push((
                        format!(
                            "{}: {} when keys expire, {} when expired keys are kept: a key expired while it was still needed",
                            at(pat.name, i, r),
                            if a.decision.allowed { "admitted" } else { "refused" },
                            if b.decision.allowed { "admitted" } else { "refused" }
                        ),
                        pat,
                        i,
                    ));
                }
            }
        }
        c.evidence.extend(no_ttl.iter().take(5).cloned());
        c.evidence.extend(too_long.iter().take(5).cloned());
        for (e, _, _) in early.iter().take(5) {
            c.evidence.push(e.clone());
        }
        if let Some((_, pat, i)) = early.first() {
            c.replay = self.save(pat.name, "ttl", &pat.arrivals[..=*i]);
        }
        let mut wrong = Vec::new();
        if !no_ttl.is_empty() {
            wrong.push(format!("{} key(s) without a TTL (they pile up forever)", no_ttl.len()));
        }
        if !too_long.is_empty() {
            wrong.push(format!("{} key(s) living over {TTL_WINDOWS} windows", too_long.len()));
        }
        if !early.is_empty() {
            wrong.push(format!("keys expire while still needed in {} pattern(s)", early.len()));
        }
        if wrong.is_empty() {
            c.summary = format!(
                "{keys} keys left by the patterns, every one with a TTL of at most {TTL_WINDOWS} windows; {}",
                if relies {
                    "the script resets its window by key expiry, so decisions with expiry switched off are not compared"
                } else {
                    "decisions are the same with expired keys kept"
                }
            );
        } else {
            c.status = Status::Fail;
            c.summary = wrong.join("; ");
        }
        self.checks.push(c);
        Ok(())
    }

    /// Callers whose clock is off the server's, played (not asked "what if"), so that what a
    /// skewed caller writes is seen by the on-time callers after it:
    /// - behind by 1 ms to two windows, after the subject was refused: the on-time request right
    ///   after it must still be refused (no refund, no reset of the window);
    /// - behind, while there is room: the skewed request must not leave the window earlier than an
    ///   on-time one would (the most admitted in any window, on the server's clock, stays within
    ///   the overshoot bound);
    /// - ahead by 1 ms to half a window: no error, for it or for the on-time caller after it.
    fn clock_skew(&mut self) {
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
                let mut r = Replay::new(self.limiter);
                for _ in 0..cap - 1 {
                    r.step(&req(t), t);
                }
                r.step(&req(t - back), t);
                let later = t + w - back.max(2) / 2;
                for _ in 0..=cap {
                    match r.step(&req(later), later) {
                        Some(i) if !r.played[i].decision.allowed => break,
                        Some(_) => {}
                        None => break,
                    }
                }
                if let Some((_, e)) = &r.error {
                    c.evidence.push(format!(
                        "a caller {back} ms behind with room left, then on-time callers at {later}: error: {}",
                        e.lines().next().unwrap_or("")
                    ));
                } else {
                    let admitted = r.played.iter().filter(|x| x.decision.allowed).count() as f64;
                    if admitted / p.limit as f64 > bound + 1e-9 {
                        c.evidence.push(format!(
                            "{} requests admitted between {t} and {later} on the server's clock (less than one window): {} on time at {t}, the last unit taken by a caller {back} ms behind, then {} on time at {later}; {:.2} of the limit, above the bound {bound:.3}: the skewed request left the window early",
                            admitted,
                            cap - 1,
                            admitted as u64 - r.played.iter().take(cap as usize).filter(|x| x.decision.allowed).count() as u64,
                            admitted / p.limit as f64
                        ));
                    }
                }
            }
        }
        for &fwd in &ahead {
            let mut r = Replay::new(self.limiter);
            let ok = r.step(&req(t), t).and_then(|_| r.step(&req(t + fwd), t)).and_then(|_| r.step(&req(t + 1), t + 1));
            if ok.is_none() {
                c.evidence.push(format!(
                    "a caller {fwd} ms ahead of the server (now_ms {}, server at {t}), or the on-time caller after it, got an error: {}",
                    t + fwd,
                    r.error_line()
                ));
            }
        }
        if !c.evidence.is_empty() {
            c.status = Status::Fail;
            c.summary = format!("{} problem(s) with callers whose clock is off the server's", c.evidence.len());
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

    fn cluster(&mut self, runs: &[(Replay<'_>, Probes)]) {
        let mut c = CheckResult::new("cluster", Status::Pass, String::new());
        let mut calls = 0;
        'outer: for ((r, _), pat) in runs.iter().zip(self.patterns) {
            for (i, p) in r.played.iter().enumerate() {
                for call in &p.calls {
                    calls += 1;
                    let slots: Vec<(u16, &String)> = call.keys.iter().map(|k| (key_slot(k.as_bytes()), k)).collect();
                    if let Some(other) = slots.iter().find(|s| s.0 != slots[0].0) {
                        c.evidence.push(format!(
                            "{}: call `{}` ({}) names `{}` (slot {}) and `{}` (slot {}): CROSSSLOT on Redis Cluster; give them a shared hash tag, e.g. {{subject}}",
                            at(pat.name, i, r),
                            call.name,
                            call.target,
                            slots[0].1,
                            slots[0].0,
                            other.1,
                            other.0
                        ));
                        break 'outer;
                    }
                }
            }
        }
        // The keys the scripts really touch: each pattern again on an emulator in cluster mode,
        // where a script reaching a key of another slot than its KEYS' is refused as on a cluster
        // node, and a script that declares no KEYS is noted when it touches one (a cluster client
        // sends it to any node, which may not hold that key).
        let mut touched = 0usize;
        'patterns: for ((plain, _), pat) in runs.iter().zip(self.patterns) {
            let mut r = Replay::new(self.limiter);
            r.backend.emu.set_cluster(true);
            for (i, a) in pat.arrivals.iter().enumerate() {
                r.play(std::slice::from_ref(a), |_, _| Ok(()));
                if let Some(slot) = r.backend.take_keyless_slots().first() {
                    c.evidence.push(format!(
                        "{}: a script call declares no KEYS but touches a key (slot {slot}): a cluster client sends it to any node, and every node but the one holding slot {slot} refuses it; pass the keys in KEYS",
                        at(pat.name, i, &r)
                    ));
                    break 'patterns;
                }
                if let Some((_, e)) = &r.error {
                    if plain.error.as_ref().is_none_or(|(j, _)| *j > i) {
                        c.evidence.push(format!("{}: on a cluster node: {}", at(pat.name, i, &r), e.lines().next().unwrap_or("")));
                        break 'patterns;
                    }
                    break;
                }
                touched += 1;
            }
        }
        if c.evidence.is_empty() {
            c.summary = format!("every one of {calls} calls names keys of one hash slot, and the scripts touch only those ({touched} requests replayed on a cluster node)");
        } else {
            c.status = Status::Fail;
            c.summary = "a call would fail on Redis Cluster".into();
        }
        self.checks.push(c);
    }

    fn memory(&mut self, runs: &mut [(Replay<'_>, Probes)]) -> Result<()> {
        let Some(((r, _), _)) = runs.iter_mut().zip(self.patterns).find(|(_, p)| p.name == "under_limit") else { return Ok(()) };
        let subjects = (r.subjects() as u64).max(1);
        let (bytes, keys, costs) = r.memory()?;
        let per = bytes / subjects;
        // The server's growth for a million subjects like these: their keys' costs (averaged over
        // the pattern's subjects) plus the tables a million subjects' keys need.
        let million = 1_000_000u64;
        let per_key_sum: f64 = costs.iter().map(|c| c.key as f64 + c.value).sum::<f64>() / subjects as f64;
        let ttl_per_subject = costs.iter().filter(|c| c.has_ttl()).count() as f64 / subjects as f64;
        let keys_m = (keys as f64 / subjects as f64 * million as f64).round() as u64;
        let ttl_m = (ttl_per_subject * million as f64).round() as u64;
        use limitlab_emulator::used_memory::{expires_entry, table_buckets, BUCKET};
        let total_m = per_key_sum * million as f64
            + (ttl_m * expires_entry() as u64 + BUCKET * (table_buckets(keys_m) + table_buckets(ttl_m))) as f64;
        let used_per = total_m / million as f64;
        let mut c = CheckResult::new(
            "memory",
            Status::Info,
            format!(
                "{per} bytes per subject (MEMORY USAGE, {:.1} keys each, Redis 7.0's model); {:.1} MB for 1,000,000 subjects; \
                 used_memory growth per subject {:.0} bytes ({:.1} MB for 1,000,000)",
                keys as f64 / subjects as f64,
                per as f64 * 1e6 / (1024.0 * 1024.0),
                used_per,
                total_m / (1024.0 * 1024.0)
            ),
        );
        c.evidence.push(format!("after the under_limit pattern ({subjects} subjects at half the rate), keys alive at its end"));
        c.evidence.push(
            "used_memory growth: MEMORY USAGE plus each TTL's expires-dict entry, both dicts' bucket arrays for 1,000,000 \
             subjects, dict entries as allocated (32 bytes, not 24), less shared integers 0..9999 (Redis 7.0.15, jemalloc 5.3)"
                .into(),
        );
        self.checks.push(c);
        Ok(())
    }

    /// Writes `arrivals` as a trace and a scenario file that replays them, when an output directory
    /// is set; returns the scenario's path.
    fn save(&self, pattern: &str, check: &str, arrivals: &[crate::traffic::Arrival]) -> Option<String> {
        let dir = self.opts.out.as_ref()?;
        save_replay(self.limiter, dir, &format!("check_{}_{check}", self.limiter.name()), pattern, arrivals).ok()
    }
}

/// Writes `<stem>.csv` (the arrivals) and `<stem>.toml` (a scenario replaying them through the
/// limiter) into `dir`; returns the scenario's path.
pub fn save_replay(limiter: &Limiter, dir: &Path, stem: &str, pattern: &str, arrivals: &[crate::traffic::Arrival]) -> Result<String> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io { path: dir.to_path_buf(), source })?;
    let csv = dir.join(format!("{stem}.csv"));
    let toml = dir.join(format!("{stem}.toml"));
    crate::traffic::write_csv(&csv, arrivals)?;
    let p = limiter.params();
    let mut t = format!(
        "# Written by `limitlab check`: the {pattern} traffic that shows `{stem}`.\n# Replay: limitlab run {}\nname = \"{stem}\"\ndescription = \"limitlab check, {pattern}\"\nlimit = {}\nwindow_ms = {}\n",
        toml.display(),
        p.limit,
        p.window_ms
    );
    if limiter.spec().uses_burst() && p.burst.is_some() {
        t.push_str(&format!("burst = {}\n", p.capacity()));
    }
    match limiter.variant() {
        Some(v) if limiter.spec().origin.to_string_lossy().starts_with("scripts/") => {
            t.push_str(&format!("algorithms = [\"{}\"]\n", v.name()))
        }
        _ => {
            let origin = &limiter.spec().origin;
            let abs = std::fs::canonicalize(origin).unwrap_or_else(|_| origin.clone());
            t.push_str(&format!("scripts = [{:?}]\n", abs.display().to_string()));
        }
    }
    if let Some(a) = arrivals.first() {
        t.push_str(&format!("start_ms = {}\n", a.at.as_millis().0));
    }
    t.push_str(&format!("\n[traffic]\nkind = \"trace\"\npath = \"{stem}.csv\"\nrebase = \"absolute\"\n"));
    std::fs::write(&toml, t).map_err(|source| Error::Io { path: toml.clone(), source })?;
    Ok(toml.display().to_string())
}
