//! `limitlab plot [FILE] [--seed S] [--script S]...`: admitted requests over time per script against
//! the limit, as `SCENARIO.png` and `SCENARIO.svg` in the output directory (`--out`, default
//! `limitlab-out/`; the scenario by default: boundary burst). With `--script`, the names of the
//! scripts follow the scenario's (`boundary_burst_my_limiter_token_bucket.png`), so a plot of other
//! scripts never replaces the scenario's own.
use std::io::Write;
use std::path::PathBuf;

use super::emit;
use crate::output::{file_part, OutDir};
use crate::report::plot::Plot;
use limitlab_emulator::Result;
use limitlab_engine::sim::standard::{builtin, run_on_emulator, STANDARD};
use limitlab_engine::sim::{Progress, Scenario};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A scenario file; default: the embedded simulations/boundary_burst.toml.
    pub file: Option<PathBuf>,
    /// The traffic seed, instead of the scenario's own.
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub scripts: super::ScriptsArg,
}

#[derive(Debug)]
pub struct Plan {
    pub scenario: Scenario,
    pub seed: u64,
    /// The pictures' file name without its extension.
    pub stem: String,
}

impl Plan {
    pub fn new(a: Args) -> Result<Plan> {
        let mut scenario = match &a.file {
            Some(f) => Scenario::from_file(f)?,
            None => builtin(STANDARD[0].0)?,
        };
        a.scripts.apply(&mut scenario)?;
        let seed = a.seed.unwrap_or(scenario.seed);
        let mut stem = file_part(&scenario.name);
        if !a.scripts.script.is_empty() {
            for spec in &scenario.scripts {
                stem.push('_');
                stem.push_str(&file_part(&spec.name));
            }
        }
        Ok(Plan { scenario, seed, stem })
    }
}

/// Runs the scenario and draws it into `files`.
pub fn run(plan: Plan, files: &OutDir, out: &mut dyn Write) -> Result<()> {
    let s = &plan.scenario;
    let arrivals = s.arrivals(plan.seed)?;
    let mut traces = Vec::with_capacity(s.scripts.len());
    for spec in &s.scripts {
        traces.push(run_on_emulator(s, spec, &arrivals, Progress::Auto)?.0);
    }
    let title = format!("{}: limit {} per {} ms", s.name, s.params.limit, s.params.window_ms);
    let plot = Plot::from_traces(title, &traces);
    let names = [format!("{}.png", plan.stem), format!("{}.svg", plan.stem)];
    match files.write_all(&[&names[0], &names[1]], |p| plot.write(&p[0], &p[1])) {
        Some(p) => emit(out, &format!("wrote {} and {}\n", p[0].display(), p[1].display())),
        None => Ok(()),
    }
}
