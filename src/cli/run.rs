//! `limitlab run FILE [--json|--markdown] [--seed S] [--redis URL]`: one scenario, every script it
//! selects (with `--redis`, also on a real Redis, checked against the emulator).
use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;

use super::{emit, FormatArgs};
use crate::report::run::{RunReport, VariantResult};
use crate::report::Format;
use crate::sim::standard::run_on_emulator;
use crate::sim::{Progress, Scenario};
use crate::Result;

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
        let scenario = Scenario::from_file(&a.file)?;
        let seed = a.seed.unwrap_or(scenario.seed);
        Ok(Plan { scenario, seed, format: a.format.format() })
    }
}

/// Runs the scenario on the emulator and builds its report (no wall-clock figures, so the same
/// scenario and seed always give the same report).
pub fn report(plan: &Plan, progress: Progress) -> Result<RunReport> {
    let s = &plan.scenario;
    let arrivals = s.arrivals(plan.seed)?;
    let subjects = arrivals.iter().map(|a| a.key.as_str()).collect::<HashSet<_>>().len();
    let mut phases: Vec<String> = Vec::new();
    for a in &arrivals {
        if !phases.contains(&a.phase) {
            phases.push(a.phase.clone());
        }
    }
    let mut report = RunReport::new(s, plan.seed, "emulator", arrivals.len(), subjects, phases);
    for &v in &s.variants {
        let (_, metrics, _) = run_on_emulator(s, v, &arrivals, progress)?;
        report.results.push(VariantResult { algorithm: v.name().to_string(), metrics });
    }
    Ok(report)
}

pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    let r = report(&plan, Progress::Auto)?;
    emit(out, &r.render(plan.format))
}

/// `run` from its arguments: the emulator's report, then with `--redis` the same arrivals through
/// every selected script on the server, checked call for call against the emulator's decisions
/// (an [`crate::Error::Mismatch`] names the first differing call of each script).
pub fn execute(a: Args, out: &mut dyn Write) -> Result<()> {
    let target = a.redis.target()?;
    let plan = Plan::new(a)?;
    let Some(target) = target else { return run(plan, out) };
    let r = report(&plan, Progress::Auto)?;
    let mut real = target.connect()?;
    let check = crate::verify::decisions::check_run(&plan.scenario, plan.seed, &mut real, Progress::Auto)?;
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
