//! Replaying recorded traffic honestly: a trace whose times are recorded coarsely against the
//! window (an access log's whole seconds against a one-second window) puts every request of a tick
//! at one instant, and how they are placed within the tick (the trace's `ties` rule, see
//! [`TieRule`]) moves the verdict a great deal. When a scenario's trace is that coarse, `run` says
//! so and runs the scenario again under each tie rule, so the verdict under `same`, `spread` and
//! `jitter` is shown side by side.
//!
//! A trace is coarse when every recorded time is a whole number of ticks of at least a tenth of
//! the window ([`Ticks::coarse_for`]). When its times are written more finely than that (whole
//! seconds written in milliseconds), `spread` and `jitter` run with `tick_ms` set to the tick, so
//! that they place a tick's requests across it rather than within the written millisecond.
use serde::Serialize;

use super::stream::{run_variants, StreamRun};
use super::{Progress, Scenario};
use crate::traffic::trace::Ticks;
use crate::traffic::{TieRule, TraceSpec, TrafficSpec};
use crate::Result;

/// One coarse trace of a scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoarseTrace {
    /// The file, as the scenario names it (relative to the scenario's directory).
    pub path: String,
    /// The tie rule the scenario gives it: `same`, `spread` or `jitter`.
    pub ties: String,
    #[serde(flatten)]
    pub ticks: Ticks,
}

/// The verdict of every script under one tie rule.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TieVerdict {
    /// `same`, `spread` or `jitter`.
    pub ties: String,
    /// The seed of `jitter`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_seed: Option<u64>,
    /// The `tick_ms` this run gave the coarse traces, when the scenario gives none and their
    /// times are written more finely than the tick.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tick_ms: Option<u64>,
    /// Whether this is the rule the scenario chose (its figures are the report's).
    pub chosen: bool,
    pub results: Vec<TieResult>,
}

impl TieVerdict {
    /// `same`, `spread`, `jitter (seed 7)`, `spread (tick_ms = 1000)`.
    pub fn label(&self) -> String {
        let mut extra = Vec::new();
        if let Some(s) = self.jitter_seed {
            extra.push(format!("seed {s}"));
        }
        if let Some(t) = self.tick_ms {
            extra.push(format!("tick_ms = {t}"));
        }
        if extra.is_empty() {
            self.ties.clone()
        } else {
            format!("{} ({})", self.ties, extra.join(", "))
        }
    }
}

/// One script's verdict under a tie rule (the figures of the report's table).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TieResult {
    pub algorithm: String,
    /// Units admitted, of `units` asked for.
    pub admitted: u64,
    pub units: u64,
    /// Calls refused.
    pub refused: u64,
    pub false_allows: u64,
    pub false_rejections: u64,
    pub max_in_window: u64,
    pub overshoot: f64,
}

/// The coarse traces of a scenario and the verdicts under each tie rule.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoarseTraces {
    pub traces: Vec<CoarseTrace>,
    /// `same`, `spread` and `jitter`, in that order (the scenario's choice marked `chosen`; when it
    /// is none of them, e.g. coarse traces with different rules, its run comes first).
    pub verdicts: Vec<TieVerdict>,
}

/// The name of a tie rule in scenario files.
fn rule_name(t: TieRule) -> &'static str {
    match t {
        TieRule::Same => "same",
        TieRule::Spread => "spread",
        TieRule::Jitter(_) => "jitter",
    }
}

/// Every trace in `t`, mixes included, in order.
fn traces(t: &TrafficSpec, out: &mut Vec<TraceSpec>) {
    match t {
        TrafficSpec::Trace(x) => out.push(x.clone()),
        TrafficSpec::Mix(m) => m.parts.iter().for_each(|p| traces(p, out)),
        _ => {}
    }
}

/// `t` with the traces at `paths` set to `rule` (and to `tick_ms`, when given).
fn with_ties(t: &TrafficSpec, paths: &[std::path::PathBuf], rule: TieRule, tick_ms: Option<u64>) -> TrafficSpec {
    match t {
        TrafficSpec::Trace(x) if paths.contains(&x.path) => {
            TrafficSpec::Trace(TraceSpec { ties: rule, tick_ms: tick_ms.or(x.tick_ms), ..x.clone() })
        }
        TrafficSpec::Mix(m) => TrafficSpec::Mix(crate::traffic::Mix {
            parts: m.parts.iter().map(|p| with_ties(p, paths, rule, tick_ms)).collect(),
        }),
        other => other.clone(),
    }
}

/// The `tick_ms` that makes `spread` and `jitter` place the requests of a tick across it, when
/// the coarse traces' times are written more finely than their tick and they give none: the
/// shortest of their ticks (in whole ms).
fn tick_override(coarse: &[(TraceSpec, Ticks)]) -> Option<u64> {
    let fine: Vec<&Ticks> =
        coarse.iter().filter(|(t, k)| t.tick_ms.is_none() && k.written_us < k.tick_us).map(|(_, k)| k).collect();
    let tick = fine.iter().map(|k| k.tick_us).min()?;
    (tick % 1000 == 0).then_some(tick as u64 / 1000)
}

/// The scenario's traces whose times are coarse against its window (none for generated traffic).
/// Reads every trace file once more.
pub fn coarse_traces(s: &Scenario) -> Result<Vec<(TraceSpec, Ticks)>> {
    let mut all = Vec::new();
    traces(&s.traffic, &mut all);
    let mut out = Vec::new();
    for t in all {
        let ticks = t.ticks()?;
        if ticks.coarse_for(s.params.window_ms) {
            out.push((t, ticks));
        }
    }
    Ok(out)
}

/// The verdict of each run, as the report's table shows it.
fn results(runs: &[StreamRun]) -> Vec<TieResult> {
    runs.iter()
        .map(|r| {
            let m = &r.metrics;
            TieResult {
                algorithm: r.name.clone(),
                admitted: m.allowed_units,
                units: m.phases.iter().map(|p| p.units).sum(),
                refused: m.calls - m.allowed_calls,
                false_allows: m.false_allows,
                false_rejections: m.false_rejections,
                max_in_window: m.max_in_window,
                overshoot: m.overshoot,
            }
        })
        .collect()
}

/// When `s` replays coarse traces: what they are and the verdicts of `s`'s scripts under `same`,
/// `spread` and `jitter` (seeded with the jitter seed the scenario gives, else `seed`), beside
/// `chosen`, the scenario's own runs. `None` when no trace is coarse. The other rules run on up to
/// `jobs` threads, quietly.
pub fn analyse(s: &Scenario, seed: u64, jobs: usize, chosen: &[StreamRun]) -> Result<Option<CoarseTraces>> {
    let coarse = coarse_traces(s)?;
    let Some((first, _)) = coarse.first() else { return Ok(None) };
    let configured = first.ties;
    let uniform = coarse.iter().all(|(t, _)| t.ties == configured);
    let jitter_seed = coarse.iter().find_map(|(t, _)| match t.ties {
        TieRule::Jitter(j) => Some(j),
        _ => None,
    });
    let paths: Vec<std::path::PathBuf> = coarse.iter().map(|(t, _)| t.path.clone()).collect();
    let dir = s.origin.parent().unwrap_or(std::path::Path::new(""));
    let traces = coarse
        .iter()
        .map(|(t, ticks)| CoarseTrace {
            path: t.path.strip_prefix(dir).unwrap_or(&t.path).display().to_string(),
            ties: rule_name(t.ties).to_string(),
            ticks: *ticks,
        })
        .collect();
    let tick = tick_override(&coarse);
    let seed_of = |rule: TieRule| match rule {
        TieRule::Jitter(j) => Some(j),
        _ => None,
    };
    let candidates: Vec<(TieRule, Option<u64>)> =
        [TieRule::Same, TieRule::Spread, TieRule::Jitter(jitter_seed.unwrap_or(seed))]
            .into_iter()
            .map(|rule| (rule, if rule == TieRule::Same { None } else { tick }))
            .collect();
    let is_chosen = |(rule, tick): &(TieRule, Option<u64>)| uniform && *rule == configured && tick.is_none();
    let mut verdicts = Vec::new();
    if !candidates.iter().any(is_chosen) {
        let ties = if uniform { rule_name(configured) } else { "as configured" };
        let jitter_seed = if uniform { seed_of(configured) } else { None };
        verdicts.push(TieVerdict {
            ties: ties.into(),
            jitter_seed,
            tick_ms: None,
            chosen: true,
            results: results(chosen),
        });
    }
    for c in &candidates {
        let (rule, tick_ms) = *c;
        let runs;
        let runs = if is_chosen(c) {
            chosen
        } else {
            let alt = Scenario { traffic: with_ties(&s.traffic, &paths, rule, tick_ms), ..s.clone() };
            runs = run_variants(&alt, seed, &s.scripts, jobs, Progress::Off)?;
            &runs[..]
        };
        let chosen = is_chosen(c);
        verdicts.push(TieVerdict {
            ties: rule_name(rule).into(),
            jitter_seed: seed_of(rule),
            tick_ms,
            chosen,
            results: results(runs),
        });
    }
    Ok(Some(CoarseTraces { traces, verdicts }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_traces_coarse_against_the_window_count() {
        let dir = std::env::temp_dir().join(format!("limitlab-coarse-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("s.csv"), "time,key\n10,a\n10,b\n11,a\n13,c\n").unwrap();
        std::fs::write(dir.join("ms.csv"), "time_ms,key\n10000,a\n10000,b\n10001,a\n").unwrap();
        let scenario = |window: u64, traffic: &str| {
            let text =
                format!("name = \"c\"\nlimit = 5\nwindow_ms = {window}\nalgorithms = [\"sliding_window\"]\n{traffic}");
            let mut s = Scenario::from_toml(&text, &dir.join("c.toml")).unwrap();
            s.traffic.resolve_paths(&dir);
            s
        };
        let seconds = "[traffic]\nkind = \"trace\"\npath = \"s.csv\"\n";
        let found = coarse_traces(&scenario(1000, seconds)).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].1,
            Ticks { requests: 4, tick_us: 1_000_000, written_us: 1_000_000, sharing: 2, busiest: 2 }
        );
        // A tick of a tenth of the window is coarse; a finer one is not.
        assert_eq!(coarse_traces(&scenario(10_000, seconds)).unwrap().len(), 1);
        assert!(coarse_traces(&scenario(10_001, seconds)).unwrap().is_empty());
        assert!(coarse_traces(&scenario(1000, "[traffic]\nkind = \"trace\"\npath = \"ms.csv\"\n")).unwrap().is_empty());
        // Inside a mix too; generated traffic never is.
        let mix = "[traffic]\nkind = \"mix\"\n[[traffic.parts]]\nkind = \"trace\"\npath = \"ms.csv\"\n\
                   [[traffic.parts]]\nkind = \"trace\"\npath = \"s.csv\"\nties = \"spread\"\n";
        let found = coarse_traces(&scenario(1000, mix)).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0.ties, TieRule::Spread);
        assert!(coarse_traces(&scenario(1000, "[traffic]\nkind = \"uniform\"\nrate = 10.0\nduration_ms = 1000\n"))
            .unwrap()
            .is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
