//! `limitlab bench [--redis URL] [--quick]`: decisions per second of every script on the Rust
//! reference, the emulator and a real Redis (one connection, then pipelined), side by side, and the
//! sliding log's cost against its size.
use std::io::Write;

use super::{emit, FormatArgs};
use crate::bench::{self, BenchOptions, RedisTarget, Sizes};
use crate::report::Format;
use limitlab_emulator::{Error, Result};
use limitlab_engine::limiter::Variant;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The real Redis to measure (redis://HOST:PORT). Without it a private redis-server is started
    /// for the run when one is installed.
    #[arg(long, value_name = "URL", conflicts_with = "no_redis")]
    pub redis: Option<limitlab_engine::backend::secret::RedisUrl>,
    /// Leave the real-Redis columns empty (no server is started or contacted).
    #[arg(long)]
    pub no_redis: bool,
    /// Few calls per measurement: rough figures in seconds.
    #[arg(long)]
    pub quick: bool,
    /// Pipeline depths for the pipelined Redis columns, comma-separated.
    #[arg(long, value_name = "N,N", value_delimiter = ',', default_values_t = bench::PIPELINES)]
    pub pipeline: Vec<usize>,
    /// Sliding-log sizes L, comma-separated (the size table runs when sliding_log or seed_sliding_log is
    /// among the scripts).
    #[arg(long, value_name = "L,L", value_delimiter = ',', default_values_t = bench::LOG_SIZES)]
    pub log_sizes: Vec<u64>,
    /// Measure this script only (repeatable, as on every other command): a spec file
    /// (my_limiter.toml) or a built-in name. Default: the nine shipped scripts.
    #[arg(long = "script", value_name = "NAME|SPEC")]
    pub script: Vec<String>,
    /// Only these scripts, comma-separated (the same as one --script per name).
    #[arg(long, value_name = "NAME,NAME", value_delimiter = ',')]
    pub only: Vec<String>,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// A validated `bench`.
#[derive(Debug)]
pub struct Plan {
    pub options: BenchOptions,
    pub format: Format,
}

impl Plan {
    pub fn new(a: Args) -> Result<Plan> {
        let invalid =
            |field: &str, reason: String| Error::Invalid { context: "bench".into(), field: field.into(), reason };
        if a.pipeline.iter().any(|&d| !(2..=10_000).contains(&d)) {
            return Err(invalid("--pipeline", "each depth must be from 2 to 10000 calls per round trip".into()));
        }
        if a.log_sizes.iter().any(|&l| !(1..=1_000_000).contains(&l)) {
            return Err(invalid("--log-sizes", "each size must be from 1 to 1000000".into()));
        }
        let chosen: Vec<(&str, &String)> =
            a.script.iter().map(|n| ("--script", n)).chain(a.only.iter().map(|n| ("--only", n))).collect();
        let scripts = if chosen.is_empty() {
            Variant::ALL.iter().map(|&v| limitlab_engine::spec::builtin::spec(v)).collect()
        } else {
            let mut v: Vec<limitlab_engine::spec::SharedSpec> = Vec::new();
            for (flag, n) in chosen {
                let x = limitlab_engine::spec::resolve(n).map_err(|e| invalid(flag, e.to_string()))?;
                if !v.iter().any(|s| s.name == x.name) {
                    v.push(x);
                }
            }
            v
        };
        let redis = match (a.redis, a.no_redis) {
            (_, true) => RedisTarget::None,
            (Some(u), false) => RedisTarget::Url(u),
            (None, false) => RedisTarget::Private,
        };
        let mut pipelines = a.pipeline;
        pipelines.dedup();
        Ok(Plan {
            options: BenchOptions {
                redis,
                sizes: if a.quick { Sizes::QUICK } else { Sizes::FULL },
                quick: a.quick,
                pipelines,
                log_sizes: a.log_sizes,
                scripts,
                progress: crate::progress::wanted(a.format.json),
            },
            format: a.format.format(),
        })
    }
}

pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    let report = bench::run(&plan.options)?;
    emit(out, &bench::tables::render(&report, plan.format))
}
