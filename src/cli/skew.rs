//! `limitlab skew [FILE] [--seed S] [--json|--markdown]`: application servers whose clocks
//! disagree pass their own now_ms; every production script against its TIME-reading variant
//! (default: the embedded simulations/skew.toml).
use std::io::Write;
use std::path::PathBuf;

use super::{emit, FormatArgs};
use crate::report::Format;
use crate::skew::{self, SkewSpec};
use crate::Result;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A skew file (TOML); default: the embedded simulations/skew.toml.
    pub file: Option<PathBuf>,
    /// The traffic seed, instead of the file's own `seed`.
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// A validated `skew`.
#[derive(Debug)]
pub struct Plan {
    pub spec: SkewSpec,
    pub seed: u64,
    pub format: Format,
}

impl Plan {
    pub fn new(a: Args) -> Result<Plan> {
        let spec = match &a.file {
            Some(f) => SkewSpec::from_file(f)?,
            None => skew::builtin()?,
        };
        let seed = a.seed.unwrap_or(spec.seed);
        Ok(Plan { spec, seed, format: a.format.format() })
    }
}

pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    let report = skew::run(&plan.spec, plan.seed)?;
    emit(out, &report.render(plan.format))
}
