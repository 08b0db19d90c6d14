//! The checks of what is admitted: errors on valid traffic, the exact model, the attack search,
//! the overshoot over the limit and false rejections.
use super::ctx::{arrival_at, at, Ctx};
use super::probes::Probes;
use super::report::{CheckResult, SearchTraffic, Status};
use super::run::{Pattern, Replay};
use super::sizes::{search_size, DEFAULT_MAX_FALSE_REJECTION_RATE, DEFAULT_OVERSHOOT_BOUND};
use crate::attack::{self, Goal, Settings};
use crate::limiter::Limiter;

impl Ctx<'_> {
    pub(super) fn errors(&mut self, runs: &[(Replay<'_>, Probes)]) {
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
        c.judged(calls, &["patterns", "times", "subjects", "costs"]);
        if c.evidence.is_empty() {
            c.summary = format!("{calls} requests over {} patterns, no error", self.patterns.len());
        } else {
            c.status = Status::Fail;
            c.summary = format!("{} error(s) on valid traffic", c.evidence.len());
        }
        self.checks.push(c);
    }

    /// A spec that names limitlab's exact model of its script (`model`) is judged against it,
    /// decision by decision on every pattern: the model is what the property tests prove bounds of.
    pub(super) fn model(&mut self, runs: &[(Replay<'_>, Probes)]) {
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
        c.judged(n, &["patterns", "times", "subjects", "costs"]);
        if c.evidence.is_empty() {
            c.summary = format!("{n} decisions identical to the exact model `{}`", name.name());
        } else {
            c.status = Status::Fail;
            c.summary = format!(
                "the script and its exact model `{}` decided differently in {} pattern(s)",
                name.name(),
                c.evidence.len()
            );
        }
        self.checks.push(c);
    }

    /// The attack search at the policy, or, above [`search_size`], at that size with its winners
    /// scaled up and confirmed at the policy.
    pub(super) fn attack(&mut self) -> Option<(Vec<attack::Found>, SearchTraffic)> {
        let p = self.limiter.params();
        let budget = attack::default_budget(p.limit);
        let s = Settings::new(self.limiter.clone(), budget, self.opts.seed, self.opts.iterations).ok()?;
        let size = search_size(self.limiter);
        let (found, small) = if size < p.limit {
            // The capacity scaled as the limit is (at least 1).
            let burst =
                p.burst.map(|b| ((b as u128 * size as u128 + p.limit as u128 / 2) / p.limit as u128).max(1) as u64);
            let params = crate::limiter::Params { limit: size, window_ms: p.window_ms, burst };
            let small = Limiter::from_spec(self.limiter.shared_spec().clone(), params).ok()?;
            let small =
                Settings::new(small, attack::default_budget(size), self.opts.seed, self.opts.iterations).ok()?;
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
    pub(super) fn overshoot(
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
            let tag = if several {
                format!(" [{pname}: {} per {} ms]", params.limit, params.window_ms)
            } else {
                String::new()
            };
            let mut candidates: Vec<(f64, String, &[crate::traffic::Arrival])> = Vec::new();
            for ((r, _), pat) in runs.iter().zip(self.patterns) {
                if let Ok(m) = r.metrics_for(*params) {
                    lines.push(format!("{}: {} in one window ({:.2}){tag}", pat.name, m.max_in_window, m.overshoot));
                    let what = format!(
                        "{} ({}, starting at now_ms {}){tag}",
                        pat.name,
                        m.max_in_window,
                        m.worst_window_start_ms.unwrap_or(0)
                    );
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
        let over =
            |v: &(f64, Option<f64>, String, &[crate::traffic::Arrival])| v.1.map(|b| v.0 - b).unwrap_or(f64::MIN);
        let mut pick = 0;
        for (k, v) in verdicts.iter().enumerate() {
            if over(v) > 1e-9 && over(v) > over(&verdicts[pick]) {
                pick = k;
            }
        }
        let (x, b, what, arrivals) = verdicts.swap_remove(pick);
        let source = if pick == 0 { source.to_string() } else { "the spec's bound for this policy".to_string() };
        let mut c = match b {
            Some(b) if x > b + 1e-9 => CheckResult::new(
                "overshoot",
                Status::Fail,
                format!("worst {x:.2} in {what}, above the bound {b:.3} ({source})"),
            ),
            Some(b) => CheckResult::new(
                "overshoot",
                Status::Pass,
                format!("worst {x:.2} in {what}, within the bound {b:.3} ({source})"),
            ),
            None => CheckResult::new(
                "overshoot",
                Status::Skip,
                format!("worst {x:.2} in {what}; no bound to judge it: {source}"),
            ),
        };
        if several && c.status == Status::Pass {
            c.summary = format!("every policy within its bound; {}", c.summary);
        }
        c.evidence = lines;
        // The bound of every family at one instant, explored over states and idles.
        let (instants, burst) = self.explore_instant();
        if let Some((what, sent)) = burst {
            let summary = format!(
                "more than the capacity admitted at one instant in an explored case ({instants} explored); {}",
                c.summary
            );
            self.fail_explored(&mut c, what, summary, &sent);
        }
        let played: usize = runs.iter().map(|(r, _)| r.played.len()).sum::<usize>() + instants;
        let searched = search.map(|t| t.requests as usize).unwrap_or(0);
        let mut dims = vec!["patterns", "windows at every start"];
        if instants > 0 {
            dims.push("explored instants after any fill and idle");
        }
        if searched > 0 {
            dims.push("attack search");
        }
        if several {
            dims.push("policies");
        }
        c.judged(played + searched, &dims);
        if c.status == Status::Fail && c.replay.is_none() {
            c.replay = self.save("overshoot", "overshoot", arrivals);
        }
        self.checks.push(c);
    }

    pub(super) fn false_rejections(&mut self, runs: &[(Replay<'_>, Probes)], found: Option<&Vec<attack::Found>>) {
        let max = self.limiter.spec().max_false_rejection_rate.unwrap_or(DEFAULT_MAX_FALSE_REJECTION_RATE);
        let mut c = CheckResult::new("false_rejections", Status::Pass, String::new());
        // (share, what, pattern)
        let mut worst: Option<(f64, String, &Pattern)> = None;
        let mut judged = 0usize;
        for ((r, _), pat) in runs.iter().zip(self.patterns) {
            let exact_admits = r.played.iter().filter(|p| p.exact).count();
            let (rate, what) = match pat.name.split('@').next().unwrap_or(pat.name) {
                // Under the limit, an exact log admits (nearly) everything: each request it admits
                // and the limiter refuses is a false rejection.
                "under_limit" | "sparse" => {
                    let fr = r.played.iter().filter(|p| p.exact && !p.decision.allowed).count();
                    let rate = if exact_admits > 0 { fr as f64 / exact_admits as f64 } else { 0.0 };
                    c.evidence.push(format!(
                        "{}: refused {fr} of the {exact_admits} requests an exact sliding log admits ({rate:.3})",
                        pat.name
                    ));
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
            judged += r.played.len();
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
        // An admitted request takes no more than its cost from what fits afterwards, explored
        // over key states (at the ms they expire too), times and later measurements: a request
        // that carries a stale count into a new window (or re-arms it) refuses the traffic after it.
        let dims = super::explore::Dims { skews: 0..=0, edges: true, soon: true, cases: super::explore::EXPLORE_CASES };
        let (explored, took_more) = self.explore("admission", dims, &|r, _, at, sent| {
            let a = arrival_at("explore", at, 1);
            let i = r.step(&a, at)?;
            sent.push(a);
            let d = r.played[i].decision;
            Some(d.allowed.then(|| super::explore::Allowance { takes: d.units(1), gives: true }))
        });
        let mut dims = vec!["steady patterns", "times", "subjects"];
        if explored > 0 {
            dims.push("explored admissions: key states (expiring to the ms), times, consequences later");
        }
        c.judged(judged + explored, &dims);
        match worst {
            Some((rate, what, pat)) if rate > max => {
                c.status = Status::Fail;
                c.summary = format!("{what}, above {max} ({source})");
                c.replay = self.save(pat.name, "false_rejections", &pat.arrivals);
            }
            Some((_, what, _)) => c.summary = format!("at worst {what}, within {max} ({source})"),
            None => c.status = Status::Skip,
        }
        if let Some((_, what, sent)) = took_more {
            let summary = format!(
                "an admitted request took more than its cost from the requests after it in an explored case ({explored} explored)"
            );
            self.fail_explored(
                &mut c,
                format!("a request of cost 1 admitted at the call's time, {what}"),
                summary,
                &sent,
            );
        } else if explored > 0 && c.status == Status::Pass {
            c.summary = format!("{}; no admission took more than its cost in {explored} explored cases", c.summary);
        }
        self.checks.push(c);
    }
}
