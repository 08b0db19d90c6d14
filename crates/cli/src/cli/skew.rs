//! `limitlab skew [FILE] [--seed S] [--json|--markdown]`: application servers whose clocks
//! disagree pass their own now_ms; every production script against its TIME-reading variant
//! (default: the embedded simulations/skew.toml).
use std::io::Write;
use std::path::PathBuf;

use super::{emit, FormatArgs};
use crate::report::Format;
use crate::skew::{self, SkewSpec};
use limitlab_emulator::Result;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A skew file (TOML); default: the embedded simulations/skew.toml.
    pub file: Option<PathBuf>,
    /// The traffic seed, instead of the file's own `seed`.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run this script instead of the file's (repeatable): a spec file (my_limiter.toml) or a
    /// built-in name. A spec's script keeps its own clock: the TIME columns are for limitlab's.
    #[arg(long = "script", value_name = "NAME|SPEC")]
    pub scripts: Vec<String>,
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
        let mut spec = match &a.file {
            Some(f) => SkewSpec::from_file(f)?,
            None => skew::builtin()?,
        };
        if !a.scripts.is_empty() {
            spec.algorithms = a.scripts.clone();
            for v in spec.variants()? {
                spec.limiter(&v)?;
            }
        }
        let seed = a.seed.unwrap_or(spec.seed);
        Ok(Plan { spec, seed, format: a.format.format() })
    }
}

pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    let report = skew::run(&plan.spec, plan.seed)?;
    emit(out, &report.render(plan.format))
}
