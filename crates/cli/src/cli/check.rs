//! `limitlab check SPEC [--limit L] [--window W] [--burst B] [--seed S] [--json|--junit]`: the
//! verdict on one limiter (a spec file or a built-in name), for CI. Exit status 0 when every check
//! holds, 1 when one fails, 2 on bad input.
use std::io::Write;

use super::emit;
use crate::report::check as render;
use limitlab_emulator::{Error, Result};
use limitlab_engine::check::{self, CheckOptions};
use limitlab_engine::limiter::Limiter;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The limiter: a spec file (my_limiter.toml) or a built-in name (fixed_window, ...).
    pub spec: String,
    #[command(flatten)]
    pub policy: super::PolicyArgs,
    #[command(flatten)]
    pub budget: super::BudgetArg,
    /// The seed of the random patterns and of the attack search.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Mutated patterns the attack search scores per goal.
    #[arg(long, default_value_t = 200)]
    pub iterations: u32,
    /// Write no trace files (by default a failing check's traffic is saved into --out as
    /// check_SCRIPT_CHECK.csv with a scenario file, check_SCRIPT_CHECK.toml, that replays it).
    #[arg(long)]
    pub no_save: bool,
    /// Leave out decisions per second, so the output is byte-identical from run to run.
    #[arg(long)]
    pub no_timing: bool,
    /// Print JSON.
    #[arg(long, conflicts_with = "junit")]
    pub json: bool,
    /// Print JUnit XML.
    #[arg(long)]
    pub junit: bool,
}

/// A validated `check`.
#[derive(Debug)]
pub struct Plan {
    pub limiter: Limiter,
    pub options: CheckOptions,
    pub format: &'static str,
}

impl Plan {
    pub fn new(a: Args, files: &crate::output::OutDir) -> Result<Plan> {
        a.budget.apply();
        let limiter = a.policy.limiter(&a.spec)?;
        let format = if a.json {
            "json"
        } else if a.junit {
            "junit"
        } else {
            "text"
        };
        Ok(Plan {
            limiter,
            options: CheckOptions {
                seed: a.seed,
                timing: !a.no_timing,
                out: (!a.no_save).then(|| files.dir().to_path_buf()),
                iterations: a.iterations,
                progress: crate::progress::wanted(a.json || a.junit),
            },
            format,
        })
    }
}

/// Runs the checks; replay files that could not be written are left to `files`' warning.
pub fn run(plan: Plan, files: &crate::output::OutDir, out: &mut dyn Write) -> Result<()> {
    let report = check::check(&plan.limiter, &plan.options)?;
    files.note(report.not_written.iter().cloned());
    let text = match plan.format {
        "json" => render::json(&report),
        "junit" => render::junit(&report),
        _ => render::text(&report),
    };
    emit(out, &text)?;
    match report.failures() {
        0 => Ok(()),
        n => Err(Error::Failed(format!("{n} of {} checks failed for {}", report.checks.len(), report.spec))),
    }
}
