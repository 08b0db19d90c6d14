//! `limitlab sweep FILE --seeds A..B [--jobs N]`: one scenario over many traffic seeds, every
//! (seed, script) run on its own emulator in parallel, summarised per script: mean, min and max of
//! overshoot, false allows and false rejections, with the seed of each worst case.
use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use super::{emit, FormatArgs};
use crate::report::table::{thousands, Table};
use crate::report::Format;
use limitlab_emulator::{Error, Result};
use limitlab_engine::backend::emulated::EmulatedBackend;
use limitlab_engine::backend::Backend;
use limitlab_engine::metrics::Metrics;
use limitlab_engine::sim::feed::Feed;
use limitlab_engine::sim::parallel::map_indexed;
use limitlab_engine::sim::stream::run_streaming;
use limitlab_engine::sim::Scenario;

/// The most seeds one sweep may take.
pub const MAX_SEEDS: u64 = 1_000_000;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The scenario file (TOML).
    pub file: PathBuf,
    /// The seeds: `A..B` (A to B-1, as in Rust), `A..=B` (A to B) or a single `N`.
    #[arg(long, value_name = "A..B")]
    pub seeds: String,
    /// Run up to N (seed, script) pairs at once, one thread each (default: the cores available).
    /// The summary is the same whatever N is.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    #[command(flatten)]
    pub format: FormatArgs,
    #[command(flatten)]
    pub scripts: super::ScriptsArg,
    #[command(flatten)]
    pub skip_bad_lines: super::SkipBadLinesArg,
}

/// A validated sweep.
#[derive(Debug)]
pub struct Plan {
    pub scenario: Scenario,
    /// First seed and number of seeds.
    pub first: u64,
    pub count: u64,
    pub jobs: usize,
    pub format: Format,
}

/// Parses `A..B`, `A..=B` or `N` into (first seed, count).
pub fn parse_seeds(text: &str) -> Result<(u64, u64)> {
    let bad = |reason: String| Error::Invalid { context: "sweep".into(), field: "--seeds".into(), reason };
    let num = |s: &str| -> Result<u64> {
        s.trim()
            .parse::<u64>()
            .map_err(|_| bad(format!("`{text}`: `{}` is not a seed (an integer from 0 to 2^64-1)", s.trim())))
    };
    let (first, count) = if let Some((a, b)) = text.split_once("..=") {
        let (a, b) = (num(a)?, num(b)?);
        if b < a {
            return Err(bad(format!("`{text}` is empty: the last seed is before the first")));
        }
        (a, (b - a).saturating_add(1))
    } else if let Some((a, b)) = text.split_once("..") {
        let (a, b) = (num(a)?, num(b)?);
        if b <= a {
            return Err(bad(format!("`{text}` is empty: A..B runs A to B-1, so B must be above A")));
        }
        (a, b - a)
    } else {
        (num(text)?, 1)
    };
    if count > MAX_SEEDS {
        return Err(bad(format!("`{text}` has {count} seeds; at most {MAX_SEEDS} per sweep")));
    }
    Ok((first, count))
}

impl Plan {
    pub fn new(a: Args) -> Result<Plan> {
        let (first, count) = parse_seeds(&a.seeds)?;
        let mut scenario = Scenario::from_file(&a.file)?;
        a.scripts.apply(&mut scenario)?;
        a.skip_bad_lines.apply(&mut scenario);
        Ok(Plan { scenario, first, count, jobs: a.jobs.unwrap_or(0), format: a.format.format() })
    }
}

/// Mean, least and greatest of one measure over the seeds, with the seed of the greatest (the
/// first such seed).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub max_seed: u64,
}

impl Spread {
    fn of(values: &[(u64, f64)]) -> Spread {
        let mut s = Spread { mean: 0.0, min: f64::INFINITY, max: f64::NEG_INFINITY, max_seed: 0 };
        for &(seed, v) in values {
            s.mean += v;
            s.min = s.min.min(v);
            if v > s.max {
                s.max = v;
                s.max_seed = seed;
            }
        }
        if values.is_empty() {
            return Spread { mean: 0.0, min: 0.0, max: 0.0, max_seed: 0 };
        }
        s.mean /= values.len() as f64;
        s
    }
}

/// One script over every seed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepRow {
    pub algorithm: String,
    pub runs: u64,
    pub overshoot: Spread,
    pub false_allows: Spread,
    pub false_rejections: Spread,
    /// Totals over the seeds.
    pub retry_checked: u64,
    pub retry_wrong: u64,
    pub headers_checked: u64,
    pub headers_wrong: u64,
    pub reference_mismatches: u64,
}

/// One run's headline figures (in `--json` only).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeedRun {
    pub seed: u64,
    pub algorithm: String,
    pub calls: u64,
    pub allowed_units: u64,
    pub overshoot: f64,
    pub false_allows: u64,
    pub false_rejections: u64,
}

/// Everything `limitlab sweep` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepReport {
    pub scenario: String,
    pub description: String,
    pub limit: u64,
    pub window_ms: u64,
    pub first_seed: u64,
    pub seeds: u64,
    pub rows: Vec<SweepRow>,
    pub runs: Vec<SeedRun>,
}

/// Runs every (seed, script) pair on up to `plan.jobs` threads and summarises.
pub fn sweep(plan: &Plan) -> Result<SweepReport> {
    let s = &plan.scenario;
    let variants = &s.scripts;
    let n = variants.len();
    let total = plan.count as usize * n;
    let bar = (total >= 20 && crate::progress::wanted(plan.format == Format::Json)).then(|| {
        let b = indicatif::ProgressBar::new(total as u64);
        if let Ok(style) = indicatif::ProgressStyle::with_template("{prefix:>20} {bar:40} {pos}/{len} runs ({eta})") {
            b.set_style(style);
        }
        b.set_prefix("sweep");
        b
    });
    let results = map_indexed(total, plan.jobs, |j| -> Result<Metrics> {
        let seed = plan.first + (j / n) as u64;
        let limiter = s.limiter(&variants[j % n])?;
        let mut backend = EmulatedBackend::default();
        backend.set_time_ms(s.start_ms);
        let feed = Feed::scenario(s, seed)?.judged(s.params, &[limiter.takes_cost()]);
        let run = run_streaming(&limiter, &mut backend, feed, None)?;
        if let Some(b) = &bar {
            b.inc(1);
        }
        Ok(run.metrics)
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let results: Vec<Metrics> = results.into_iter().collect::<Result<_>>()?;

    let mut rows = Vec::new();
    for (vi, v) in variants.iter().enumerate() {
        let of = |f: &dyn Fn(&Metrics) -> f64| -> Vec<(u64, f64)> {
            (0..plan.count).map(|k| (plan.first + k, f(&results[k as usize * n + vi]))).collect()
        };
        let mine = || (0..plan.count as usize).map(|k| &results[k * n + vi]);
        rows.push(SweepRow {
            algorithm: v.name.clone(),
            runs: plan.count,
            overshoot: Spread::of(&of(&|m| m.overshoot)),
            false_allows: Spread::of(&of(&|m| m.false_allows as f64)),
            false_rejections: Spread::of(&of(&|m| m.false_rejections as f64)),
            retry_checked: mine().map(|m| m.retry_checked).sum(),
            retry_wrong: mine().map(|m| m.retry_wrong).sum(),
            headers_checked: mine().map(|m| m.headers_checked).sum(),
            headers_wrong: mine().map(|m| m.headers_wrong).sum(),
            reference_mismatches: mine().map(|m| m.reference_mismatches).sum(),
        });
    }
    let runs = results
        .iter()
        .enumerate()
        .map(|(j, m)| SeedRun {
            seed: plan.first + (j / n) as u64,
            algorithm: variants[j % n].name.clone(),
            calls: m.calls,
            allowed_units: m.allowed_units,
            overshoot: m.overshoot,
            false_allows: m.false_allows,
            false_rejections: m.false_rejections,
        })
        .collect();
    Ok(SweepReport {
        scenario: s.name.clone(),
        description: s.description.clone(),
        limit: s.params.limit,
        window_ms: s.params.window_ms,
        first_seed: plan.first,
        seeds: plan.count,
        rows,
        runs,
    })
}

/// A count's mean with one decimal, and thousands separators.
fn mean(x: f64) -> String {
    let s = format!("{:.1}", x.max(0.0));
    match s.split_once('.') {
        Some((whole, frac)) => format!("{}.{frac}", whole.parse::<u64>().map_or(whole.to_string(), thousands)),
        None => s,
    }
}

fn count(x: f64) -> String {
    thousands(x.max(0.0).round() as u64)
}

/// The summary table.
pub fn table(r: &SweepReport) -> Table {
    let last = r.first_seed + r.seeds - 1;
    let mut t = Table::new(
        format!(
            "Sweep, {}: {} (limit {} per {} ms), seeds {} to {} ({} runs per script)",
            r.scenario,
            r.description,
            thousands(r.limit),
            thousands(r.window_ms),
            r.first_seed,
            last,
            thousands(r.seeds)
        ),
        &[
            "Algorithm",
            "Overshoot mean",
            "min",
            "max",
            "at seed",
            "False allows mean",
            "min",
            "max",
            "False rejections mean",
            "min",
            "max",
            "retry_after wrong",
            "headers wrong",
        ],
    );
    for row in &r.rows {
        t.row(vec![
            row.algorithm.clone(),
            format!("{:.3}", row.overshoot.mean),
            format!("{:.2}", row.overshoot.min),
            format!("{:.2}", row.overshoot.max),
            row.overshoot.max_seed.to_string(),
            mean(row.false_allows.mean),
            count(row.false_allows.min),
            count(row.false_allows.max),
            mean(row.false_rejections.mean),
            count(row.false_rejections.min),
            count(row.false_rejections.max),
            crate::report::judged(row.retry_wrong, row.retry_checked, thousands),
            crate::report::judged(row.headers_wrong, row.headers_checked, thousands),
        ]);
    }
    t.note("Overshoot: the most admitted in any window for one subject, over the limit (1.00 is exact); at seed: the first seed reaching the max.");
    t.note("False allows/rejections: calls an exact sliding log, run on the same arrivals, decided the other way (per run).");
    t.note(format!("{} Totals over the seeds.", crate::report::RETRY_NOTE));
    t.note(crate::report::headers_note());
    if r.rows.iter().any(|x| x.reference_mismatches > 0) {
        t.note("WARNING: some decisions differ from the scripts' own reference models (see --json).");
    }
    t
}

pub fn render(r: &SweepReport, format: Format) -> String {
    match format {
        Format::Json => crate::report::to_json(r),
        Format::Text => table(r).to_text(),
        Format::Markdown => table(r).to_markdown(),
    }
}

pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    let r = sweep(&plan)?;
    emit(out, &render(&r, plan.format))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_ranges() {
        assert_eq!(parse_seeds("1..101").unwrap(), (1, 100));
        assert_eq!(parse_seeds("1..=100").unwrap(), (1, 100));
        assert_eq!(parse_seeds(" 7 ").unwrap(), (7, 1));
        assert_eq!(parse_seeds("0..=0").unwrap(), (0, 1));
        for bad in ["5..5", "5..=4", "a..3", "", "1..2..3", "0..2000000"] {
            let e = parse_seeds(bad).unwrap_err().to_string();
            assert!(e.starts_with("sweep: field `--seeds`:"), "{bad}: {e}");
        }
    }

    #[test]
    fn spread_takes_the_first_seed_of_the_max() {
        let s = Spread::of(&[(3, 1.0), (4, 2.0), (5, 2.0), (6, 0.5)]);
        assert_eq!(s, Spread { mean: 1.375, min: 0.5, max: 2.0, max_seed: 4 });
        assert_eq!(mean(1234.56), "1,234.6");
        assert_eq!(mean(0.04), "0.0");
        assert_eq!(mean(1234.96), "1,235.0");
    }
}
