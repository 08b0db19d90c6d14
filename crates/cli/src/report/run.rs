//! The report of one scenario: every selected script's per-phase counts and accuracy, as a table
//! (text or markdown) or as JSON. Deterministic: it holds nothing measured by the wall clock.
use serde::Serialize;

use super::table::{thousands, Align, Table};
use super::Format;
use limitlab_engine::metrics::Metrics;
use limitlab_engine::sim::coarse::CoarseTraces;
use limitlab_engine::sim::header_summary::HeaderSummary;
use limitlab_engine::sim::Scenario;

/// One script's results in a scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VariantResult {
    pub algorithm: String,
    pub metrics: Metrics,
    /// The HTTP headers its decisions imply (JSON only): the `RateLimit-Policy` header, how many
    /// responses carry `RateLimit` and `Retry-After`, the longest `Retry-After`, and sample
    /// decisions with their values (see [`HeaderSummary`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headers: Option<HeaderSummary>,
}

/// Everything `limitlab run` prints.
///
/// As JSON: the scenario's fields below, then `results`, one per script: `algorithm`, `metrics`
/// (see [`Metrics`]) and `headers`, the HTTP headers its decisions imply:
///
/// ```json
/// "headers": {
///   "policy": "\"default\";q=20;w=1",
///   "with_ratelimit": 3000, "with_retry_after": 694, "refused_without_retry_after": 0,
///   "max_retry_after": 1,
///   "samples": [
///     {"what": "first allowed", "request": 1, "now_ms": 1704067200000, "subject": "203.0.113.10",
///      "allowed": true, "ratelimit": "\"default\";r=19;t=1", "retry_after": null},
///     {"what": "first refused", ...}, {"what": "longest Retry-After", ...}
///   ]
/// }
/// ```
///
/// `policy` is the `RateLimit-Policy` every response carries (`q` the limit, `w` the window in
/// seconds, rounded up); `with_ratelimit` counts responses with a `RateLimit` header (the spec
/// reports remaining), `with_retry_after` refusals with a `Retry-After` (seconds, rounded up),
/// `refused_without_retry_after` the other refusals; the samples are the first allowed decision,
/// the first refusal and the refusal with the longest `Retry-After`, by request number (the
/// `request` column of `run --decisions`, which has every decision's header values).
///
/// `coarse_trace`, present only when the traffic replays a trace whose recorded times are coarse
/// against the window (see [`limitlab_engine::sim::coarse`]): `traces` (each with `path`, its `ties` rule,
/// `requests`, `tick_us`, `written_us`, `sharing`, `busiest`, see
/// [`limitlab_engine::traffic::trace::Ticks`]) and `verdicts`, one per tie rule (`same`, `spread`, `jitter`
/// with its `jitter_seed`; `tick_ms` when the run set one because the times are written more
/// finely than their tick; `chosen` marks the scenario's own), each with every script's `admitted`,
/// `units`, `refused`, `false_allows`, `false_rejections`, `max_in_window` and `overshoot`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunReport {
    pub scenario: String,
    pub description: String,
    pub seed: u64,
    pub limit: u64,
    pub window_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst: Option<u64>,
    pub start_ms: i64,
    pub backend: String,
    pub arrivals: usize,
    pub subjects: usize,
    /// Phase labels in order of first appearance (`""` for unlabelled traffic).
    pub phases: Vec<String>,
    pub results: Vec<VariantResult>,
    /// The verdict under each tie rule, when a trace's times are coarse against the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coarse_trace: Option<CoarseTraces>,
}

impl RunReport {
    /// A report with no results yet.
    pub fn new(
        s: &Scenario,
        seed: u64,
        backend: &str,
        arrivals: usize,
        subjects: usize,
        phases: Vec<String>,
    ) -> RunReport {
        RunReport {
            scenario: s.name.clone(),
            description: s.description.clone(),
            seed,
            limit: s.params.limit,
            window_ms: s.params.window_ms,
            burst: s.params.burst,
            start_ms: s.start_ms,
            backend: backend.to_string(),
            arrivals,
            subjects,
            phases,
            results: Vec::new(),
            coarse_trace: None,
        }
    }

    /// The results table: admitted units per phase (when the traffic has phases), then accuracy.
    pub fn table(&self) -> Table {
        let named: Vec<&String> = self.phases.iter().filter(|p| !p.is_empty()).collect();
        let mut headers: Vec<String> = vec!["algorithm".into()];
        headers.extend(named.iter().map(|p| p.to_string()));
        headers.extend(
            [
                "admitted",
                "max in window",
                "overshoot",
                "false allows",
                "false rejections",
                "retry_after wrong",
                "headers wrong",
            ]
            .map(String::from),
        );
        let hs: Vec<&str> = headers.iter().map(String::as_str).collect();
        let mut t = Table::new("", &hs);
        for r in &self.results {
            let m = &r.metrics;
            let mut row = vec![r.algorithm.clone()];
            for p in &named {
                let n = m.phases.iter().find(|c| &&c.phase == p).map_or(0, |c| c.allowed_units);
                row.push(n.to_string());
            }
            row.push(format!("{} / {}", m.allowed_units, m.phases.iter().map(|c| c.units).sum::<u64>()));
            row.push(m.max_in_window.to_string());
            row.push(format!("{:.2}", m.overshoot));
            row.push(m.false_allows.to_string());
            row.push(m.false_rejections.to_string());
            row.push(super::judged(m.retry_wrong, m.retry_checked, |n| n.to_string()));
            row.push(super::judged(m.headers_wrong, m.headers_checked, |n| n.to_string()));
            t.row(row);
        }
        t.note(format!(
            "max in window: most units admitted in any {} ms for one subject; overshoot = that / limit {}.",
            self.window_ms, self.limit
        ));
        t.note("false allows/rejections: calls decided differently by an exact sliding log run on the same arrivals.");
        t.note(super::RETRY_NOTE);
        t.note(super::headers_note());
        if let Some(bad) = self.results.iter().find(|r| r.metrics.reference_mismatches > 0) {
            t.note(format!(
                "WARNING: {} made {} decisions its reference model disagrees with.",
                bad.algorithm, bad.metrics.reference_mismatches
            ));
        }
        t
    }

    /// The warning about a coarse trace and the table of verdicts under each tie rule, when the
    /// traffic replays one.
    pub fn coarse_table(&self) -> Option<Table> {
        let c = self.coarse_trace.as_ref()?;
        let mut t = Table::new(
            "",
            &[
                "algorithm",
                "ties",
                "admitted",
                "refused",
                "false allows",
                "false rejections",
                "max in window",
                "overshoot",
            ],
        );
        t.align[1] = Align::Left;
        let scripts = c.verdicts.first().map_or(0, |v| v.results.len());
        for i in 0..scripts {
            for v in &c.verdicts {
                let Some(r) = v.results.get(i) else { continue };
                let chosen = if v.chosen { " (chosen)" } else { "" };
                t.row(vec![
                    r.algorithm.clone(),
                    format!("{}{chosen}", v.label()),
                    format!("{} / {}", r.admitted, r.units),
                    r.refused.to_string(),
                    r.false_allows.to_string(),
                    r.false_rejections.to_string(),
                    r.max_in_window.to_string(),
                    format!("{:.2}", r.overshoot),
                ]);
            }
        }
        t.note("same: every request at the recorded instant (the start of its tick); spread: a tick's n requests evenly across it, in file order; jitter: each at a seeded random offset within its tick.");
        t.note(
            "Choose with `ties = \"same\"`, `\"spread\"` or `{ jitter = SEED }` in [traffic]; --seed changes the jitter seed shown here.",
        );
        Some(t)
    }

    /// The lines that warn of coarse traces (none when there are none).
    fn coarse_warning(&self) -> Vec<String> {
        let Some(c) = &self.coarse_trace else { return Vec::new() };
        let mut v = Vec::new();
        for t in &c.traces {
            let tk = &t.ticks;
            v.push(format!(
                "WARNING: coarse trace {}: every recorded time is a multiple of {}, against a {} ms window; {} of {} requests share their time with another (up to {} at once). Where requests within one tick are placed moves the verdict; this run places them with ties = \"{}\".",
                t.path,
                duration(tk.tick_us),
                self.window_ms,
                thousands(tk.sharing as u64),
                thousands(tk.requests as u64),
                thousands(tk.busiest as u64),
                t.ties,
            ));
            let tick_set = c.verdicts.iter().find_map(|v| v.tick_ms);
            if tk.written_us < tk.tick_us {
                v.push(match tick_set {
                    Some(ms) => format!(
                        "Its times are written to {}, finer than they were recorded: spread and jitter below place a tick's requests across the {} tick (`tick_ms = {ms}` in [traffic]); without it they would move them within {}.",
                        duration(tk.written_us),
                        duration(tk.tick_us),
                        duration(tk.written_us)
                    ),
                    None => format!(
                        "Its times are written to {}: spread and jitter move requests within that, not across the {} tick.",
                        duration(tk.written_us),
                        duration(tk.tick_us)
                    ),
                });
            }
        }
        v.push("The same run under each tie rule:".into());
        v
    }

    fn header_lines(&self) -> Vec<String> {
        let mut v = vec![if self.description.is_empty() {
            format!("scenario {}", self.scenario)
        } else {
            format!("scenario {}: {}", self.scenario, self.description)
        }];
        let burst = self.burst.map_or(String::new(), |b| format!(" (burst {b})"));
        v.push(format!(
            "limit {} per {} ms{burst}, seed {}, {} arrivals, {} subject{}, start {} ms, on the {}",
            self.limit,
            self.window_ms,
            self.seed,
            self.arrivals,
            self.subjects,
            if self.subjects == 1 { "" } else { "s" },
            self.start_ms,
            self.backend
        ));
        v
    }

    /// The report in `format`, ending with a newline.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Json => super::to_json(self),
            Format::Text => {
                let mut s = self.header_lines().join("\n");
                s.push_str("\n\n");
                s.push_str(&self.table().to_text());
                if let Some(t) = self.coarse_table() {
                    s.push('\n');
                    s.push_str(&self.coarse_warning().join("\n"));
                    s.push_str("\n\n");
                    s.push_str(&t.to_text());
                }
                s
            }
            Format::Markdown => {
                let mut s = format!("## {}\n\n", self.scenario);
                for l in self.header_lines().iter().skip(1) {
                    s.push_str(l);
                    s.push_str("\n\n");
                }
                if !self.description.is_empty() {
                    s.push_str(&self.description);
                    s.push_str("\n\n");
                }
                s.push_str(&self.table().to_markdown());
                if let Some(t) = self.coarse_table() {
                    s.push('\n');
                    for l in self.coarse_warning() {
                        s.push_str(&format!("{}\n\n", l.replace("WARNING:", "**Warning:**")));
                    }
                    s.push_str(&t.to_markdown());
                }
                s
            }
        }
    }
}

/// A duration in µs as a person writes it: `1000 ms`, `250 µs`.
fn duration(us: i64) -> String {
    if us % 1000 == 0 {
        format!("{} ms", thousands((us / 1000) as u64))
    } else {
        format!("{} µs", thousands(us as u64))
    }
}
