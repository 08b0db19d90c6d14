//! `limitlab compare`: the main job. Every script, the seed article's and ours, through the
//! standard scenarios on the embedded emulator, printed as seed-style tables (with `--redis URL`,
//! also on a real Redis, checked against the emulator).
use std::io::Write;

use super::{emit, FormatArgs};
use crate::report::Format;
use limitlab_emulator::Result;
use limitlab_engine::sim::standard::{compare_jobs, CompareOptions};

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
    #[command(flatten)]
    pub redis: super::verify::RedisArgs,
    /// Compare these scripts instead of the nine shipped ones (repeatable): spec files
    /// (my_limiter.toml) or built-in names. The seed article's columns show for shipped scripts.
    #[arg(long = "script", value_name = "NAME|SPEC")]
    pub scripts: Vec<String>,
    /// Run up to N scenario/script pairs at once, one thread each (default: the cores available).
    /// The tables come out the same whatever N is.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
}

#[derive(Debug)]
pub struct Plan {
    pub options: CompareOptions,
    pub format: Format,
    /// Threads (0: the cores available).
    pub jobs: usize,
}

impl Plan {
    pub fn new(a: Args) -> Result<Plan> {
        Ok(Plan {
            options: CompareOptions {
                scripts: a.scripts.iter().map(|n| limitlab_engine::spec::resolve(n)).collect::<Result<_>>()?,
                seed: a.seed,
                timing: !a.no_timing,
                progress: crate::progress::sim(a.format.json),
            },
            format: a.format.format(),
            jobs: a.jobs.unwrap_or(0),
        })
    }
}

pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    let c = compare_jobs(plan.options.clone(), plan.jobs)?;
    emit(out, &crate::report::compare::render(&c, plan.format))
}

/// `compare` from its arguments: the tables, then with `--redis` every standard scenario through
/// every script on the server, checked call for call against the emulator's decisions (an
/// [`limitlab_emulator::Error::Mismatch`] names the first differing call of each script).
pub fn execute(a: Args, out: &mut dyn Write) -> Result<()> {
    let target = a.redis.target()?;
    let plan = Plan::new(a)?;
    let Some(target) = target else { return run(plan, out) };
    let c = compare_jobs(plan.options.clone(), plan.jobs)?;
    let mut real = target.connect()?;
    let mut check = crate::verify::against_redis::check_standard(plan.options.seed, &mut real, plan.options.progress)?;
    check.show_speed = plan.options.timing;
    let text = match plan.format {
        Format::Json => {
            let v = serde_json::json!({ "comparison": c, "redis": check });
            serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
        }
        f => format!("{}\n{}", crate::report::compare::render(&c, f), check.render(f)),
    };
    emit(out, &text)?;
    check.into_result()
}
