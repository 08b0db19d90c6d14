//! The command-line interface: clap arguments, validated into a plan per subcommand, then run.
//! One file per subcommand; `main.rs` only parses, calls [`execute`] and maps errors to exit codes.
//!
//! Adding a subcommand (`verify`, `attack`, `memory`, `bench`, ...): a file with an `Args` struct
//! (clap `Args`), a `Plan` built by validating it, and `run(plan, out)`; then one variant in
//! [`Command`] and one arm in [`execute`]. Runs go to a fresh emulator through
//! [`limitlab_engine::sim::standard::run_on_emulator`]; `run`, `compare`, `cli` and `verify` also take
//! `--redis URL` ([`verify::RedisArgs`]), which adds a real server: the emulator's report first, then
//! the same arrivals on the server checked call for call ([`crate::verify::against_redis`]).
use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::report::Format;
use limitlab_emulator::Result;

pub mod attack;
pub mod audit;
pub mod bench;
pub mod check;
pub mod compare;
pub mod init;
pub mod memory;
pub mod plot;
pub mod race;
pub mod redis_cli;
pub mod run;
pub mod serve;
pub mod shell;
pub mod skew;
pub mod sweep;
pub mod verify;

/// limitlab: test Redis rate-limiter Lua scripts in-process, on a Redis 7.0 emulator with a
/// virtual clock.
#[derive(Debug, Parser)]
#[command(name = "limitlab", version, about, long_about = None)]
pub struct Cli {
    /// Where commands write files: attack's traces, scenario files and plots, check's replays of
    /// failures, plot's pictures, init's specs. Made when the first file is written; never one of
    /// the directories limitlab ships (simulations/, plots/) unless named here. A file that cannot
    /// be written is named in one warning on stderr; the results still print, and the exit status
    /// is 2. Every file is written whole under a temporary name, then renamed.
    #[arg(long, global = true, value_name = "DIR", default_value = crate::output::DEFAULT_DIR)]
    pub out: PathBuf,
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every script through the standard scenarios and print seed-style tables: the boundary
    /// burst beside the seed article's figures, accuracy, memory per user, decisions per second.
    Compare(compare::Args),
    /// Run one scenario file and report each selected script's decisions and accuracy.
    Run(run::Args),
    /// Draw admitted requests over time per script against the limit (PNG and SVG).
    Plot(plot::Args),
    /// redis-cli on the emulator (or, with -h/-p/-u, on any server): a command from the arguments
    /// (`limitlab cli SET k v`, with -r/-i/-x/-n/-a), else commands on stdin one per line, or a
    /// prompt at a terminal; replies as redis-cli prints them. CLOCK.ADVANCE/SET/GET move the
    /// emulator's virtual clock.
    Cli(shell::Args),
    /// The emulator as a Redis server (RESP2/RESP3, any client library) with a virtual clock moved
    /// by CLOCK.ADVANCE; --cluster N answers as an N-master Redis Cluster. SIGINT/SIGTERM stop it
    /// after the command under way (one line on stdout, exit status 0).
    Serve(serve::Args),
    /// Differential fuzzing: random command sequences and random calls of every shipped script on
    /// the emulator and on a real Redis (--redis, or a private redis-server); replies must be
    /// byte-identical, and a mismatch is shrunk and printed as redis-cli lines.
    Verify(verify::Args),
    /// Decisions per second of every script on the Rust reference, the emulator and a real Redis
    /// (one connection and pipelined), side by side; and the sliding log's cost against its size.
    Bench(bench::Args),
    /// Run one scenario over many traffic seeds in parallel and summarise each script: mean, min
    /// and max of overshoot, false allows and false rejections.
    Sweep(sweep::Args),
    /// Search arrival patterns within a request budget for one script's highest overshoot and
    /// highest false-rejection rate; print them, save them as replayable traces, plot them.
    Attack(attack::Args),
    /// N application servers with network latency: the non-atomic GET+INCR fixed window and the same
    /// counter under WATCH/MULTI (optimistic locking, with retries) against the Lua script, one row
    /// per (servers, latency).
    Race(race::Args),
    /// Application servers with skewed clocks passing their own now_ms: every production script
    /// against its variant that reads Redis's TIME.
    Skew(skew::Args),
    /// Bytes per user and for N users (default 1,000,000) of every script after a window's worth
    /// of calls (MEMORY USAGE), beside the seed article's figures and, with --redis, a real server's.
    Memory(memory::Args),
    /// The verdict on one limiter (a spec file or a built-in name), for CI: standard traffic, an
    /// attack search and questions to the script itself, each check with pass/fail and evidence.
    /// Exit status 0 when every check holds, 1 when one fails, 2 on bad input.
    Check(check::Args),
    /// Audit a live Redis (or a simulation's end state) read-only: SCAN every master at a set
    /// pace, group keys into patterns, and report keys without TTL, TTLs far too long, sliding
    /// logs, keys lacking a shared hash tag and memory per subject. Exit 1 on a warning with --strict.
    Audit(audit::Args),
    /// Recognise the rate limiters installed in a node_modules/ or a Python site-packages
    /// (rate-limiter-flexible, rate-limit-redis, @upstash/ratelimit, limits, pyrate-limiter), read
    /// their Lua from the installed files and write a spec for each, ready for `limitlab check`.
    Init(init::Args),
}

/// `--limit`, `--window`, `--burst`: a spec's policy, overridden from the command line where given.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct PolicyArgs {
    /// Units per window (tokens per window for token_bucket and gcra); default: the spec's policy.
    #[arg(long)]
    pub limit: Option<u64>,
    /// The window in ms; default: the spec's policy.
    #[arg(long, visible_alias = "window-ms")]
    pub window: Option<u64>,
    /// The capacity (token bucket, GCRA); default: the spec's policy.
    #[arg(long)]
    pub burst: Option<u64>,
}

impl PolicyArgs {
    /// The limiter of `spec` (a built-in name or a spec file) under this policy.
    pub fn limiter(&self, spec: &str) -> Result<limitlab_engine::limiter::Limiter> {
        limitlab_engine::limiter::limiter_with(
            limitlab_engine::spec::resolve(spec)?,
            self.limit,
            self.window,
            self.burst,
        )
    }
}

/// `--script-budget N`: when the emulator kills a runaway script.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct BudgetArg {
    /// Kill a script after this many loop iterations and Lua function calls (default 50,000,000,
    /// about a second of busy Lua); the kill is reported with the script's file and line, exit 2.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub script_budget: Option<u64>,
}

impl BudgetArg {
    /// Sets the budget of every emulator this command makes.
    pub fn apply(&self) {
        if let Some(b) = self.script_budget {
            limitlab_emulator::lua::set_default_budget(b);
        }
    }
}

/// `--script NAME|SPEC` (repeatable): the scripts a scenario-driven command runs instead of the
/// scenario's own, as built-in names or spec files.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ScriptsArg {
    /// Run this script instead of the scenario's (repeatable): a spec file (my_limiter.toml) or a
    /// built-in name (fixed_window, ..., seed_token_bucket).
    #[arg(long = "script", value_name = "NAME|SPEC")]
    pub script: Vec<String>,
}

impl ScriptsArg {
    /// Replaces the scenario's scripts when any were given; each must accept the scenario's policy.
    pub fn apply(&self, s: &mut limitlab_engine::sim::Scenario) -> Result<()> {
        if self.script.is_empty() {
            return Ok(());
        }
        let mut specs: Vec<limitlab_engine::spec::SharedSpec> = Vec::new();
        for n in &self.script {
            let spec = limitlab_engine::spec::resolve(n)?;
            if !specs.iter().any(|x| x.name == spec.name) {
                specs.push(spec);
            }
        }
        if s.params.burst.is_some() && !specs.iter().any(|x| x.uses_burst()) {
            s.params.burst = None;
        }
        for spec in &specs {
            s.limiter(spec)?;
        }
        s.scripts = specs;
        Ok(())
    }
}

/// `--skip-bad-lines`: a trace's lines that do not read as a request are skipped and counted.
#[derive(Clone, Copy, Debug, Default, clap::Args)]
pub struct SkipBadLinesArg {
    /// Skip the lines of the scenario's traces (access logs, CSV, JSON lines) that do not read as
    /// a request, instead of refusing the file; how many were skipped, and the first few with
    /// their line and reason, are printed on stderr. (A trace can also set `skip_bad_lines = true`.)
    #[arg(long)]
    pub skip_bad_lines: bool,
}

impl SkipBadLinesArg {
    /// Sets it on every trace of the scenario.
    pub fn apply(&self, s: &mut limitlab_engine::sim::Scenario) {
        if self.skip_bad_lines {
            s.traffic.skip_bad_lines();
        }
    }
}

/// How a report is printed: `--json` or `--markdown`, text otherwise.
#[derive(Clone, Copy, Debug, Default, clap::Args)]
pub struct FormatArgs {
    /// Print JSON.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print markdown tables.
    #[arg(long)]
    pub markdown: bool,
}

impl FormatArgs {
    pub fn format(&self) -> Format {
        if self.json {
            Format::Json
        } else if self.markdown {
            Format::Markdown
        } else {
            Format::Text
        }
    }
}

/// Runs a parsed command line, writing reports to `out`.
pub fn execute(cli: Cli, out: &mut dyn Write) -> Result<()> {
    let files = crate::output::OutDir::new(cli.out);
    // A command stopped by SIGINT/SIGTERM leaves no temporary file or part behind (`serve` and
    // `cli` write none, and stop on their own terms).
    if !matches!(cli.command, Command::Serve(_) | Command::Cli(_)) {
        limitlab_engine::files::clean_up_on_signals();
    }
    let done = dispatch(cli.command, &files, out);
    files.warn(&mut std::io::stderr());
    // The lines of traces skipped with `--skip-bad-lines` (or a trace's `skip_bad_lines`).
    for s in limitlab_engine::traffic::trace::skipped::take() {
        eprintln!("limitlab: {s}");
    }
    // A file not written fails a command that otherwise succeeded (its own error comes first).
    match (done, files.failure()) {
        (Ok(()), Some(e)) => Err(e),
        (done, _) => done,
    }
}

fn dispatch(command: Command, files: &crate::output::OutDir, out: &mut dyn Write) -> Result<()> {
    match command {
        Command::Compare(a) => compare::execute(a, out),
        Command::Run(a) => run::execute(a, out),
        Command::Plot(a) => plot::run(plot::Plan::new(a)?, files, out),
        Command::Cli(a) => shell::run(shell::Plan::new(a)?, out),
        Command::Serve(a) => {
            let watch_stdin = a.exit_with_stdin;
            let opts = serve::plan(a)?;
            if watch_stdin {
                serve::exit_when_stdin_closes();
            }
            serve::run(opts, out)
        }
        Command::Verify(a) => verify::run(verify::Plan::new(a)?, out),
        Command::Bench(a) => bench::run(bench::Plan::new(a)?, out),
        Command::Sweep(a) => sweep::run(sweep::Plan::new(a)?, out),
        Command::Attack(a) => attack::run(attack::Plan::new(a)?, files, out),
        Command::Race(a) => race::run(race::Plan::new(a)?, out),
        Command::Skew(a) => skew::run(skew::Plan::new(a)?, out),
        Command::Memory(a) => memory::run(memory::Plan::new(a)?, out),
        Command::Check(a) => check::run(check::Plan::new(a, files)?, files, out),
        Command::Audit(a) => audit::run(audit::Plan::new(a)?, out),
        Command::Init(a) => init::run(init::Plan::new(a, files)?, out),
    }
}

pub(crate) use crate::report::emit;
