//! `limitlab plot [FILE] [--out DIR] [--seed S]`: admitted requests over time per script against the
//! limit, as `DIR/NAME.png` and `DIR/NAME.svg` (default: the boundary-burst scenario into `plots/`).
use std::io::Write;
use std::path::PathBuf;

use super::emit;
use crate::report::plot::Plot;
use limitlab_emulator::{Error, Result};
use limitlab_engine::sim::standard::{builtin, run_on_emulator, STANDARD};
use limitlab_engine::sim::{Progress, Scenario};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A scenario file; default: the embedded simulations/boundary_burst.toml.
    pub file: Option<PathBuf>,
    /// Where to write the pictures.
    #[arg(long, default_value = "plots")]
    pub out: PathBuf,
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
    pub png: PathBuf,
    pub svg: PathBuf,
}

impl Plan {
    pub fn new(a: Args) -> Result<Plan> {
        let mut scenario = match &a.file {
            Some(f) => Scenario::from_file(f)?,
            None => builtin(STANDARD[0].0)?,
        };
        a.scripts.apply(&mut scenario)?;
        if !a.out.is_dir() {
            std::fs::create_dir_all(&a.out).map_err(|source| Error::Io { path: a.out.clone(), source })?;
        }
        let seed = a.seed.unwrap_or(scenario.seed);
        let png = a.out.join(format!("{}.png", scenario.name));
        let svg = a.out.join(format!("{}.svg", scenario.name));
        Ok(Plan { scenario, seed, png, svg })
    }
}

pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    let s = &plan.scenario;
    let arrivals = s.arrivals(plan.seed)?;
    let mut traces = Vec::with_capacity(s.scripts.len());
    for spec in &s.scripts {
        traces.push(run_on_emulator(s, spec, &arrivals, Progress::Auto)?.0);
    }
    let title = format!("{}: limit {} per {} ms", s.name, s.params.limit, s.params.window_ms);
    Plot::from_traces(title, &traces).write(&plan.png, &plan.svg)?;
    emit(out, &format!("wrote {} and {}\n", plan.png.display(), plan.svg.display()))
}
