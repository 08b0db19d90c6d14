//! `limitlab run FILE [--json|--markdown] [--seed S] [--redis URL] [--decisions OUT]`: one
//! scenario, every script it selects (with `--redis`, also on a real Redis, checked against the
//! emulator; with `--decisions`, every decision written to OUT, see [`limitlab_engine::sim::decisions_file`]).
//! When the scenario replays a trace whose times are coarse against the window, the report says so
//! and shows the verdict under each tie rule ([`limitlab_engine::sim::coarse`]).
use std::io::Write;
use std::path::PathBuf;

use super::{emit, FormatArgs};
use crate::report::run::{RunReport, VariantResult};
use crate::report::table::thousands;
use crate::report::Format;
use limitlab_emulator::clock::Stopwatch;
use limitlab_emulator::Result;
use limitlab_engine::sim::coarse;
use limitlab_engine::sim::decisions_file::DecisionsOut;
use limitlab_engine::sim::parallel::default_jobs;
use limitlab_engine::sim::stream::{
    cpu_secs, default_script_jobs, peak_rss_bytes, run_variants_with, RunOptions, RunTiming,
};
use limitlab_engine::sim::{Progress, Scenario};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The scenario file (TOML), e.g. simulations/boundary_burst.toml.
    pub file: PathBuf,
    /// The traffic seed, instead of the file's own `seed`.
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub format: FormatArgs,
    #[command(flatten)]
    pub redis: super::verify::RedisArgs,
    /// Run on N threads besides the one producing the traffic. limitlab's shipped scripts run one
    /// after another, each split by subject across N threads (default: the cores available); other
    /// scripts run N at once, one thread each (default: every selected script at once, up to twice
    /// the cores). The report is the same whatever N is.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Print the wall time and the peak resident memory (VmHWM) on stderr when done.
    #[arg(long)]
    pub stats: bool,
    #[command(flatten)]
    pub scripts: super::ScriptsArg,
    #[command(flatten)]
    pub skip_bad_lines: super::SkipBadLinesArg,
    #[command(flatten)]
    pub budget: super::BudgetArg,
    /// Write every decision to OUT, one row per request per script: time, subject, cost, the
    /// script's raw reply, the decision read from it, the exact sliding log's beside it, and the
    /// Retry-After and RateLimit header values. CSV when OUT ends in .csv, JSON lines when it ends
    /// in .jsonl or .json.
    #[arg(long, value_name = "OUT")]
    pub decisions: Option<PathBuf>,
}

/// A validated `run`: the parsed scenario and the seed it runs with.
#[derive(Debug)]
pub struct Plan {
    pub scenario: Scenario,
    pub seed: u64,
    pub format: Format,
}

impl Plan {
    pub fn new(a: Args) -> Result<Plan> {
        a.budget.apply();
        let mut scenario = Scenario::from_file(&a.file)?;
        a.scripts.apply(&mut scenario)?;
        a.skip_bad_lines.apply(&mut scenario);
        let seed = a.seed.unwrap_or(scenario.seed);
        Ok(Plan { scenario, seed, format: a.format.format() })
    }
}

/// Runs the scenario on the emulator and builds its report (no wall-clock figures, so the same
/// scenario and seed always give the same report).
pub fn report(plan: &Plan, progress: Progress) -> Result<RunReport> {
    report_jobs(plan, progress, 0)
}

/// [`report`] on `jobs` threads (0: the default, see [`run_variants_with`]). Arrivals stream
/// through each script and decisions fold into the metrics as they come (see
/// [`limitlab_engine::sim::stream`]), so memory does not grow with the number of requests.
pub fn report_jobs(plan: &Plan, progress: Progress, jobs: usize) -> Result<RunReport> {
    report_with(plan, progress, jobs, &RunOptions::default())
}

/// [`report_jobs`], doing what `opts` asks besides (`--decisions`).
pub fn report_with(plan: &Plan, progress: Progress, jobs: usize, opts: &RunOptions) -> Result<RunReport> {
    report_threads(plan, progress, jobs, opts).map(|r| r.0)
}

/// Each script's name and where its run's time went (for `--stats`).
type Timings = Vec<(String, RunTiming)>;

/// [`report_with`], the most threads that ran one script, and each script's timing.
fn report_threads(
    plan: &Plan,
    progress: Progress,
    jobs: usize,
    opts: &RunOptions,
) -> Result<(RunReport, usize, Timings)> {
    let s = &plan.scenario;
    let runs = run_variants_with(s, plan.seed, &s.scripts, jobs, progress, opts)?;
    let threads = runs.iter().map(|r| r.threads).max().unwrap_or(0);
    let timings = runs.iter().map(|r| (r.name.clone(), r.timing.clone())).collect();
    let jobs = if jobs == 0 { default_script_jobs(s.scripts.len()) } else { jobs };
    let coarse = coarse::analyse(s, plan.seed, jobs, &runs)?;
    let (arrivals, subjects, phases) = match runs.first() {
        Some(r) => (r.metrics.calls as usize, r.subjects.len(), r.phases.clone()),
        None => (0, 0, Vec::new()),
    };
    let mut report = RunReport::new(s, plan.seed, "emulator", arrivals, subjects, phases);
    for r in runs {
        report.results.push(VariantResult { algorithm: r.name.clone(), metrics: r.metrics, headers: Some(r.headers) });
    }
    report.coarse_trace = coarse;
    Ok((report, threads, timings))
}

/// The `--stats` line: wall time, CPU time, peak memory, on stderr (`threads`: the most that ran
/// one script).
fn print_stats(plan: &Plan, r: &RunReport, runs: &Timings, secs: f64, threads: usize) {
    let peak = peak_rss_bytes().map_or("unknown".to_string(), |b| format!("{} MB", thousands(b / (1024 * 1024))));
    let cpu = cpu_secs().map_or(String::new(), |c| format!(", {c:.1} s CPU"));
    eprintln!(
        "stats: {} script(s) x {} requests ({} subjects) in {secs:.1} s wall{cpu}, {threads} thread(s) per script, {} core(s); peak RSS {peak} (VmHWM)",
        plan.scenario.scripts.len(),
        thousands(r.arrivals as u64),
        thousands(r.subjects as u64),
        default_jobs(),
    );
    // Only a run split by subject times each script (the others run side by side).
    if runs.iter().all(|(_, t)| t.wall_secs == 0.0) {
        return;
    }
    let mut scripts_secs = 0.0;
    for (name, t) in runs {
        scripts_secs += t.wall_secs;
        let threads: Vec<String> = t.thread_cpu_secs.iter().map(|c| format!("{c:.1}")).collect();
        eprintln!(
            "stats:   {}: {:.1} s wall; CPU s per thread {}, feed {:.1}; merge {:.2} s",
            name,
            t.wall_secs,
            threads.join(" / "),
            t.feed_cpu_secs,
            t.merge_secs
        );
    }
    eprintln!(
        "stats:   outside the scripts (start-up, analysis, report): {:.1} s wall",
        (secs - scripts_secs).max(0.0)
    );
}

pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    let r = report(&plan, crate::progress::sim(plan.format == Format::Json))?;
    emit(out, &r.render(plan.format))
}

/// `run` from its arguments: the emulator's report, then with `--redis` the same arrivals through
/// every selected script on the server, checked call for call against the emulator's decisions
/// (an [`limitlab_emulator::Error::Mismatch`] names the first differing call of each script).
pub fn execute(a: Args, out: &mut dyn Write) -> Result<()> {
    let watch = Stopwatch::start();
    let (jobs, stats) = (a.jobs.unwrap_or(0), a.stats);
    let target = a.redis.target()?;
    let opts = RunOptions { decisions: a.decisions.as_ref().map(DecisionsOut::new).transpose()? };
    let plan = Plan::new(a)?;
    let progress = crate::progress::sim(plan.format == Format::Json);
    let (r, threads, timings) = report_threads(&plan, progress, jobs, &opts)?;
    if stats {
        print_stats(&plan, &r, &timings, watch.elapsed_secs(), threads);
    }
    let Some(target) = target else { return emit(out, &r.render(plan.format)) };
    let mut real = target.connect()?;
    let check = crate::verify::against_redis::check_run(&plan.scenario, plan.seed, &mut real, progress)?;
    let text = match plan.format {
        Format::Json => {
            let v = serde_json::json!({ "run": r, "redis": check });
            serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
        }
        f => format!("{}\n{}", r.render(f), check.render(f)),
    };
    emit(out, &text)?;
    check.into_result()
}
