//! `limitlab compare`: the main job. Every script, the seed article's and ours, through the
//! standard scenarios on the embedded emulator, printed as seed-style tables.
use std::io::Write;

use super::{emit, FormatArgs};
use crate::report::Format;
use crate::sim::standard::{compare, CompareOptions};
use crate::sim::Progress;
use crate::Result;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run every scenario with this traffic seed instead of the files' own.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Leave out decisions per second (wall-clock figures), so the output is byte-identical
    /// from run to run.
    #[arg(long)]
    pub no_timing: bool,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Debug)]
pub struct Plan {
    pub options: CompareOptions,
    pub format: Format,
}

impl Plan {
    pub fn new(a: Args) -> Result<Plan> {
        Ok(Plan {
            options: CompareOptions { seed: a.seed, timing: !a.no_timing, progress: Progress::Auto },
            format: a.format.format(),
        })
    }
}

pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    let c = compare(plan.options)?;
    emit(out, &crate::report::compare::render(&c, plan.format))
}
