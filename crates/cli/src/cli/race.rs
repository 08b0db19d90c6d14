//! `limitlab race [FILE] [--seed S] [--json|--markdown]`: N application servers with network
//! latency, the non-atomic GET+INCR fixed window and the same counter under WATCH/MULTI against the
//! Lua script (default: the embedded simulations/race.toml).
use std::io::Write;
use std::path::PathBuf;

use super::{emit, FormatArgs};
use crate::race::{self, RaceSpec};
use crate::report::Format;
use limitlab_emulator::Result;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A race file (TOML); default: the embedded simulations/race.toml.
    pub file: Option<PathBuf>,
    /// The seed, instead of the file's own `seed`.
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// A validated `race`.
#[derive(Debug)]
pub struct Plan {
    pub spec: RaceSpec,
    pub seed: u64,
    pub format: Format,
}

impl Plan {
    pub fn new(a: Args) -> Result<Plan> {
        let spec = match &a.file {
            Some(f) => RaceSpec::from_file(f)?,
            None => race::builtin()?,
        };
        let seed = a.seed.unwrap_or(spec.seed);
        Ok(Plan { spec, seed, format: a.format.format() })
    }
}

pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    let report = race::run(&plan.spec, plan.seed)?;
    emit(out, &report.render(plan.format))
}
