//! The report `check` gives: each check's verdict with its evidence, the traffic behind them, and
//! the options of a run.
use std::path::PathBuf;

use serde::Serialize;

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
    /// What the verdict rests on: how many cases were judged, over which dimensions. `None` for a
    /// figure (memory, speed), which judges nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Coverage>,
    /// The line of the script that made the reply behind the first failure, where one can be named
    /// (the reply the evidence judges, replayed with the emulator's line tracing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<DecidedAt>,
}

/// A line of a spec's script (or function library): the `return` (or error) that made a reply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DecidedAt {
    /// The file, as the spec names it in messages (`scripts/fixed_window.lua`).
    pub file: String,
    pub line: u32,
    /// The line's text, trimmed.
    pub text: String,
}

impl DecidedAt {
    /// `scripts/fixed_window.lua:92: `return {0, left, reset, reset}``.
    pub fn describe(&self) -> String {
        format!("{}:{}: `{}`", self.file, self.line, self.text)
    }
}

/// How many cases a check judged and over which dimensions of the input (costs, times, key
/// states, operations, callers' clocks, patterns).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Coverage {
    pub cases: u64,
    pub dimensions: Vec<String>,
}

impl Coverage {
    /// `412 cases over times, key states`, or `0 cases`.
    pub fn describe(&self) -> String {
        let n = if self.cases == 1 { "1 case".to_string() } else { format!("{} cases", self.cases) };
        if self.dimensions.is_empty() {
            n
        } else {
            format!("{n} over {}", self.dimensions.join(", "))
        }
    }
}

impl CheckResult {
    /// A verdict that has judged nothing yet (0 cases); a figure has no coverage at all.
    pub(super) fn new(name: &'static str, status: Status, summary: String) -> CheckResult {
        let coverage = (status != Status::Info).then(Coverage::default);
        CheckResult { name, status, summary, evidence: Vec::new(), replay: None, coverage, decided_at: None }
    }

    /// Records that `cases` cases were judged over `dimensions`.
    pub(super) fn judged(&mut self, cases: usize, dimensions: &[&str]) {
        self.coverage =
            Some(Coverage { cases: cases as u64, dimensions: dimensions.iter().map(|d| d.to_string()).collect() });
    }

    /// The rule no check escapes: a PASS over no case is a check that could not have failed, so it
    /// is a SKIP, saying so. Every other verdict is left as it is.
    pub fn no_pass_without_cases(&mut self) {
        if self.status == Status::Pass && self.coverage.as_ref().is_none_or(|c| c.cases == 0) {
            self.status = Status::Skip;
            self.summary = format!("no case was judged, so no verdict ({})", self.summary);
            self.coverage.get_or_insert_with(Coverage::default);
        }
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
    /// Replay files that could not be written (a read-only directory): the command line warns
    /// about them once; the report itself is complete without them.
    #[serde(skip)]
    pub not_written: Vec<NotWritten>,
}

/// A file that could not be written, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct NotWritten {
    pub path: PathBuf,
    pub reason: String,
}

/// The traffic behind a report: what each pattern sent, and what the attack search sent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Traffic {
    pub patterns: Vec<PatternTraffic>,
    /// Whether the patterns were scaled (the policy is above [`run::FULL_SIZE`](super::run::FULL_SIZE)).
    pub scaled: bool,
    /// What one call of the script costs, in calls whose keys hold at most a KB (see
    /// [`run::cost_per_call`](super::run::cost_per_call)): 1 for a counter or a short log.
    #[serde(skip_serializing_if = "is_one")]
    pub cost_per_call: u64,
    /// How and why the patterns were shortened to stay within the work budget; `None` when they
    /// were not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shortened: Option<String>,
    /// The attack search; `None` when it could not run at this policy.
    pub search: Option<SearchTraffic>,
}

fn is_one(n: &u64) -> bool {
    *n == 1
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
    /// [`search_size`](super::sizes::search_size)), whose winners were then scaled up, built and confirmed at the check's.
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

impl CheckReport {
    /// How many checks failed.
    pub fn failures(&self) -> usize {
        self.checks.iter().filter(|c| c.status == Status::Fail).count()
    }
}

/// Options of [`check`](super::check).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_check_can_pass_over_zero_cases() {
        for status in [Status::Pass, Status::Fail, Status::Skip, Status::Waived, Status::Info] {
            for cases in [0usize, 1, 7] {
                let mut c = CheckResult::new("x", status, "all honest".into());
                if cases > 0 {
                    c.judged(cases, &["times"]);
                }
                c.no_pass_without_cases();
                if status == Status::Pass && cases == 0 {
                    assert_eq!(c.status, Status::Skip);
                    assert!(c.summary.starts_with("no case was judged"), "{}", c.summary);
                } else {
                    assert_eq!(c.status, status, "{status:?} with {cases} cases");
                }
                assert!(c.status != Status::Pass || c.coverage.as_ref().is_some_and(|v| v.cases > 0));
            }
        }
    }
}
