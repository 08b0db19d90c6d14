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
mod admission;
mod ctx;
mod keys;
mod lifecycle;
mod probes;
mod promises;
mod report;
pub mod run;
mod sizes;

use crate::attack;
use crate::limiter::Limiter;
use ctx::Ctx;
use limitlab_emulator::clock::Stopwatch;
use limitlab_emulator::{Error, Result};
use probes::Probes;
use run::Replay;

pub use ctx::save_replay;
pub use report::{
    CheckOptions, CheckReport, CheckResult, Coverage, NotWritten, PatternTraffic, SearchTraffic, Status, Traffic,
};
pub use sizes::{
    search_size, DEFAULT_MAX_FALSE_REJECTION_RATE, DEFAULT_OVERSHOOT_BOUND, FLOOD_MAX, HEADER_PROBES_MIN,
    HEADER_PROBE_REQUESTS, MAX_CHECKED_CAPACITY, PROBES, PROBE_UNITS, ROOM_PROBE, SEARCH_FULL_SIZE,
    SEARCH_FULL_SIZE_MODEL, TTL_PROBES, TTL_WINDOWS,
};

/// Progress on stderr while `check` runs, one step per stage; only at a terminal, and only when
/// the command line asks (`CheckOptions::progress`: not for `--json` or `--junit`).
struct Stages(Option<indicatif::ProgressBar>);

impl Stages {
    fn new(show: bool, stages: usize) -> Stages {
        use std::io::IsTerminal;
        Stages((show && std::io::stderr().is_terminal()).then(|| {
            let b = indicatif::ProgressBar::new(stages as u64);
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{prefix:>20} {bar:40} {pos}/{len} {msg} ({elapsed})")
            {
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
    // The traffic is sized from the policy (a burst is a quarter more than the capacity): above
    // MAX_CHECKED_CAPACITY it would be more requests, and memory, than a check can hold, so such a
    // policy is refused at once, saying so, instead of running out of memory.
    for (name, q) in spec.policies(&p) {
        if q.limit.max(q.capacity()) > MAX_CHECKED_CAPACITY {
            return Err(Error::Invalid {
                context: spec.origin.display().to_string(),
                field: if name == "policy" { "policy.limit".into() } else { format!("policy `{name}`") },
                reason: format!(
                    "limit {} (capacity {}) is above the {MAX_CHECKED_CAPACITY} that `check` judges: its patterns send more than the capacity in one burst, so their memory grows with it (docs/reliability.md); check the same limiter at a smaller --limit (and --burst), at the same window",
                    q.limit,
                    q.capacity()
                ),
            });
        }
    }
    let origin = attack::origin_ms(p.window_ms);
    let bound = Some(limiter.overshoot_bound().unwrap_or(DEFAULT_OVERSHOOT_BOUND));
    let bound_source = match (spec.max_overshoot, spec.family) {
        (Some(_), _) => "max_overshoot in the spec".to_string(),
        (None, Some(f)) => format!("the {} family's bound", crate::sim::standard::seed_name(f).to_lowercase()),
        (None, None) => {
            "the default: the loosest bound of the standard families; give `family` or `max_overshoot` to judge tighter"
                .to_string()
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
    let mut ctx = Ctx { limiter, opts, patterns: &patterns, checks: Vec::new(), not_written: Default::default() };
    // Shown for a policy above the full size, whose check takes seconds.
    let stages = Stages::new(opts.progress, patterns.len() + 5);

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
        traffic.search =
            Some(SearchTraffic { confirmed: f.iter().map(|f| f.arrivals.len() as u64).sum(), ..t.clone() });
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
        c.no_pass_without_cases();
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
            format!(
                "{} decisions per second on the emulator ({decisions} decisions, probes included in the time)",
                per_sec.round()
            ),
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
        not_written: ctx.not_written.into_inner(),
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
