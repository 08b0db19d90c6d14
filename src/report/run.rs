//! The report of one scenario: every selected script's per-phase counts and accuracy, as a table
//! (text or markdown) or as JSON. Deterministic: it holds nothing measured by the wall clock.
use serde::Serialize;

use super::table::Table;
use super::Format;
use crate::metrics::Metrics;
use crate::sim::Scenario;

/// One script's results in a scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VariantResult {
    pub algorithm: String,
    pub metrics: Metrics,
}

/// Everything `limitlab run` prints.
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
        }
    }

    /// The results table: admitted units per phase (when the traffic has phases), then accuracy.
    pub fn table(&self) -> Table {
        let named: Vec<&String> = self.phases.iter().filter(|p| !p.is_empty()).collect();
        let mut headers: Vec<String> = vec!["algorithm".into()];
        headers.extend(named.iter().map(|p| p.to_string()));
        headers.extend(
            ["admitted", "max in window", "overshoot", "false allows", "false rejections", "retry_after wrong"]
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
            row.push(if m.retry_checked == 0 {
                "-".into()
            } else {
                format!("{} of {}", m.retry_wrong, m.retry_checked)
            });
            t.row(row);
        }
        t.note(format!(
            "max in window: most units admitted in any {} ms for one subject; overshoot = that / limit {}.",
            self.window_ms, self.limit
        ));
        t.note("false allows/rejections: calls decided differently by an exact sliding log run on the same arrivals.");
        t.note("retry_after wrong: refusals whose retry_after, taken at its word, would still be refused (seed scripts report none).");
        if let Some(bad) = self.results.iter().find(|r| r.metrics.reference_mismatches > 0) {
            t.note(format!(
                "WARNING: {} made {} decisions its reference model disagrees with.",
                bad.algorithm, bad.metrics.reference_mismatches
            ));
        }
        t
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
                s
            }
        }
    }
}
