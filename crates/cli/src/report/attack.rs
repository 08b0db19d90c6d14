//! What `limitlab attack` prints: per goal, the pattern found (as runs of requests), how it was
//! built, and its figures on the emulator; as text, markdown or JSON. Deterministic: nothing in it
//! comes from the wall clock.
use std::fmt::Write as _;

use serde::Serialize;

use crate::report::table::Table;
use crate::report::{to_json, Format};
use limitlab_engine::attack::pattern::{runs, Run, Segment};
use limitlab_engine::attack::{origin_ms, Found, Goal, Settings};

/// At most this many runs of a pattern are printed in text and markdown (JSON has them all).
const MAX_RUNS_SHOWN: usize = 12;

/// One goal's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GoalResult {
    pub goal: Goal,
    /// Patterns scored on the model to find this one.
    pub evaluations: u32,
    pub requests: u64,
    pub admitted: u64,
    pub max_in_window: u64,
    /// Where the worst window starts, in ms after the origin.
    pub worst_window_start_ms: Option<i64>,
    pub overshoot: f64,
    pub false_allows: u64,
    pub false_rejections: u64,
    /// False rejections per request.
    pub false_rejection_rate: f64,
    pub retry_checked: u64,
    pub retry_wrong: u64,
    /// The reference model's figures matched the emulator's.
    pub model_agrees: bool,
    /// How the pattern was built.
    pub segments: Vec<Segment>,
    /// The requests, as runs (ms after the origin).
    pub pattern: Vec<Run>,
    /// The saved trace and the scenario file that replays it, when saved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
}

impl GoalResult {
    pub fn new(f: &Found, origin: i64) -> GoalResult {
        let m = &f.metrics;
        let ms: Vec<i64> = f.arrivals.iter().map(|a| a.at.as_millis().0 - origin).collect();
        GoalResult {
            goal: f.goal,
            evaluations: f.evaluations,
            requests: m.calls,
            admitted: m.allowed_units,
            max_in_window: m.max_in_window,
            worst_window_start_ms: m.worst_window_start_ms.map(|t| t - origin),
            overshoot: m.overshoot,
            false_allows: m.false_allows,
            false_rejections: m.false_rejections,
            false_rejection_rate: if m.calls > 0 { m.false_rejections as f64 / m.calls as f64 } else { 0.0 },
            retry_checked: m.retry_checked,
            retry_wrong: m.retry_wrong,
            model_agrees: f.model_agrees,
            segments: f.segments.clone(),
            pattern: runs(&ms),
            trace: None,
            scenario: None,
        }
    }

    /// A plot caption: `Highest overshoot: 1.99`.
    pub fn headline_short(&self) -> String {
        match self.goal {
            Goal::Overshoot => format!("{}: {:.2}", self.goal.title(), self.overshoot),
            Goal::FalseRejections => format!("{}: {:.3} per request", self.goal.title(), self.false_rejection_rate),
        }
    }

    /// The headline: `1.99 (199 admitted in the 1000 ms from 999 ms)`.
    fn headline(&self, window_ms: u64) -> String {
        match self.goal {
            Goal::Overshoot => match self.worst_window_start_ms {
                Some(from) => format!(
                    "{:.2} ({} admitted in the {} ms from {} ms)",
                    self.overshoot, self.max_in_window, window_ms, from
                ),
                None => format!("{:.2} (nothing admitted)", self.overshoot),
            },
            Goal::FalseRejections if self.false_rejections == 0 => {
                "0 (no pattern found made it refuse a request an exact sliding log admits)".to_string()
            }
            Goal::FalseRejections => format!(
                "{:.3} ({} of {} requests refused that an exact sliding log admits)",
                self.false_rejection_rate, self.false_rejections, self.requests
            ),
        }
    }
}

/// Everything `limitlab attack` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AttackReport {
    pub script: String,
    pub limit: u64,
    pub window_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst: Option<u64>,
    pub budget: u32,
    pub seed: u64,
    pub iterations: u32,
    /// Whether patterns were scored on limitlab's exact model of the script (its own scripts) or
    /// on the script itself on a private emulator (any other spec).
    pub scored_on_model: bool,
    /// The absolute time (unix ms) pattern times count from: a window boundary.
    pub origin_ms: i64,
    pub results: Vec<GoalResult>,
    /// The plot's PNG and SVG, when drawn.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plots: Vec<String>,
}

impl AttackReport {
    pub fn new(s: &Settings, found: &[Found]) -> AttackReport {
        let p = s.limiter.params();
        let origin = origin_ms(p.window_ms);
        AttackReport {
            script: s.limiter.name().to_string(),
            limit: p.limit,
            window_ms: p.window_ms,
            burst: p.burst,
            budget: s.budget,
            seed: s.seed,
            iterations: s.iterations,
            scored_on_model: s.limiter.reference().is_some(),
            origin_ms: origin,
            results: found.iter().map(|f| GoalResult::new(f, origin)).collect(),
            plots: Vec::new(),
        }
    }

    /// The figures of both goals as one table.
    pub fn table(&self) -> Table {
        let mut t = Table::new(
            "Figures on the emulator",
            &[
                "pattern",
                "requests",
                "admitted",
                "max in window",
                "overshoot",
                "false allows",
                "false rejections",
                "false-rejection rate",
                "retry_after wrong",
            ],
        );
        for r in &self.results {
            t.row(vec![
                r.goal.title().to_lowercase(),
                r.requests.to_string(),
                r.admitted.to_string(),
                r.max_in_window.to_string(),
                format!("{:.2}", r.overshoot),
                r.false_allows.to_string(),
                r.false_rejections.to_string(),
                format!("{:.3}", r.false_rejection_rate),
                format!("{} / {}", r.retry_wrong, r.retry_checked),
            ]);
        }
        t.note(
            "Overshoot: the most admitted in any interval of one window, over the limit. False rejections and \
             allows: against an exact sliding log run on the same requests. retry_after wrong: refusals whose \
             wait, when taken, was refused again.",
        );
        t
    }

    fn heading(&self) -> String {
        let burst = self.burst.map(|b| format!(", capacity {b}")).unwrap_or_default();
        format!(
            "limitlab attack: {}, limit {} per {} ms{burst}, budget {} requests, seed {}",
            self.script, self.limit, self.window_ms, self.budget, self.seed
        )
    }

    fn preamble(&self) -> String {
        let evaluated: Vec<String> = self.results.iter().map(|r| r.evaluations.to_string()).collect();
        let agree = self.results.iter().all(|r| r.model_agrees);
        format!(
            "Patterns were scored on {} ({} evaluated per goal); the best of each goal \
             was replayed through the script on a fresh emulator{}. Times are ms after a window boundary \
             (unix ms {}); windows start every {} ms.",
            if self.scored_on_model {
                "the script's exact reference model"
            } else {
                "the script itself on a private emulator"
            },
            evaluated.join(" and "),
            if agree { ", which agreed" } else { ", which DISAGREED with the scoring (a bug: please report it)" },
            self.origin_ms,
            self.window_ms
        )
    }

    fn pattern_lines(&self, r: &GoalResult) -> Vec<String> {
        let mut out: Vec<String> = r.pattern.iter().take(MAX_RUNS_SHOWN).map(Run::describe).collect();
        if r.pattern.len() > MAX_RUNS_SHOWN {
            out.push(format!("... and {} more runs (every request is in the trace)", r.pattern.len() - MAX_RUNS_SHOWN));
        }
        out
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.heading());
        let _ = writeln!(out, "{}\n", self.preamble());
        for r in &self.results {
            let _ = writeln!(out, "{}: {}", r.goal.title(), r.headline(self.window_ms));
            let _ = writeln!(out, "  requests ({}):", r.requests);
            for l in self.pattern_lines(r) {
                let _ = writeln!(out, "    {l}");
            }
            let _ = writeln!(out, "  built from:");
            for s in &r.segments {
                let _ = writeln!(out, "    {}", s.describe());
            }
            if let (Some(t), Some(s)) = (&r.trace, &r.scenario) {
                let _ = writeln!(out, "  trace: {t} (replay: limitlab run {s})");
            }
            out.push('\n');
        }
        out.push_str(&self.table().to_text());
        if !self.plots.is_empty() {
            let _ = writeln!(out, "\nplot: {}", self.plots.join(", "));
        }
        out
    }

    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "## {}\n\n{}\n", self.heading(), self.preamble());
        for r in &self.results {
            let _ = writeln!(out, "### {}: {}\n", r.goal.title(), r.headline(self.window_ms));
            for l in self.pattern_lines(r) {
                let _ = writeln!(out, "- {l}");
            }
            let built: Vec<String> = r.segments.iter().map(Segment::describe).collect();
            let _ = writeln!(out, "\nBuilt from: {}.", built.join("; "));
            if let (Some(t), Some(s)) = (&r.trace, &r.scenario) {
                let _ = writeln!(out, "Trace: `{t}` (replay: `limitlab run {s}`).");
            }
            out.push('\n');
        }
        out.push_str(&self.table().to_markdown());
        if !self.plots.is_empty() {
            let _ = writeln!(out, "\nPlot: {}", self.plots.join(", "));
        }
        out
    }

    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Text => self.to_text(),
            Format::Markdown => self.to_markdown(),
            Format::Json => to_json(self),
        }
    }
}
