//! `limitlab init PATH... [--out DIR] [--force] [--limit N] [--window D] [--burst N] [--block MS]
//! [--algorithm NAME]`: recognise the rate limiters installed in an application's dependencies and
//! write a spec for each (see [`crate::init`]). Exit status 0 when something was written, 2 when
//! nothing could be (nothing recognised, a script not found) or a file is in the way.
use std::io::Write;
use std::path::PathBuf;

use crate::init::{self, Flags, Options};
use limitlab_emulator::{Error, Result};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A node_modules directory, a Python site-packages, or a project directory holding either
    /// (node_modules/, .venv/ or venv/).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Overwrite files that exist with other content.
    #[arg(long)]
    pub force: bool,
    /// The policy's limit (points, tokens, amount); default: the library's default, else 10.
    #[arg(long)]
    pub limit: Option<u64>,
    /// The window: ms (1000) or with a unit (1s, 500ms, 1m); default: the library's, else 1000 ms.
    #[arg(long, value_name = "DURATION_OR_MS")]
    pub window: Option<String>,
    /// A token bucket's capacity (upstash tokenBucket maxTokens, pyrate-limiter burst); default: the limit.
    #[arg(long)]
    pub burst: Option<u64>,
    /// rate-limiter-flexible's blockDuration in ms (whole seconds); default 0, no block.
    #[arg(long, value_name = "MS")]
    pub block: Option<u64>,
    /// Only this algorithm (fixed_window, sliding_window, token_bucket, moving_window, sliding_log, gcra).
    #[arg(long, value_name = "NAME")]
    pub algorithm: Option<String>,
}

/// A validated `init`.
#[derive(Debug)]
pub struct Plan {
    pub options: Options,
}

fn invalid(field: &str, reason: String) -> Error {
    Error::Invalid { context: "init".into(), field: field.into(), reason }
}

impl Plan {
    /// Specs and scripts go into `files`' directory (`--out`).
    pub fn new(a: Args, files: &crate::output::OutDir) -> Result<Plan> {
        let window_ms =
            a.window.as_deref().map(init::parse_duration_ms).transpose().map_err(|e| invalid("--window", e))?;
        for (field, v) in [("--limit", a.limit), ("--burst", a.burst)] {
            if v == Some(0) {
                return Err(invalid(field, "must be at least 1".into()));
            }
        }
        let flags = Flags { limit: a.limit, window_ms, burst: a.burst, block_ms: a.block, algorithm: a.algorithm };
        Ok(Plan { options: Options { paths: a.paths, out: files.dir().to_path_buf(), force: a.force, flags } })
    }
}

pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    init::run(&plan.options, out)
}
