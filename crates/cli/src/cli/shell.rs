//! `limitlab cli [--cluster] [--at UNIX_MS] [-h HOST] [-p PORT] [--raw|--no-raw]`: redis-cli syntax on
//! stdin, redis-cli's output on stdout, against a fresh emulator (see [`super::redis_cli`] for the
//! rules and the CLOCK.* commands), or with `-h`/`-p` against any server (a `limitlab serve`, a
//! Redis). Replies print as piped redis-cli prints them, or as it prints them at a terminal when
//! stdout is one or with `--no-raw`.
//!
//! `limitlab cli --redis URL` sends the same lines to a real server instead, exactly as written (no
//! key prefix, and CLOCK.* goes to the server, which does not know it), so the two outputs can be
//! compared with `diff`. Point it at a server you may write to.
use std::io::Write;

use super::redis_cli::Format;
use limitlab_emulator::clock::{Millis, VirtualClock, DEFAULT_START};
use limitlab_emulator::Emulator;
use limitlab_emulator::{Error, Result};

#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    /// Apply Redis Cluster rules (hash slots, CROSSSLOT errors).
    #[arg(long, conflicts_with_all = ["redis", "host", "port"])]
    pub cluster: bool,
    /// Start the virtual clock here (unix ms); default 2024-01-01T00:00:00Z (1704067200000).
    #[arg(long, value_name = "UNIX_MS", conflicts_with_all = ["redis", "host", "port"])]
    pub at: Option<i64>,
    #[command(flatten)]
    pub redis: super::verify::RedisArgs,
    /// Send the lines to the server at this host (a `limitlab serve` or a Redis) instead of the
    /// emulator; default 127.0.0.1 when only -p is given.
    #[arg(short = 'h', long = "host", value_name = "HOST", conflicts_with = "redis")]
    pub host: Option<String>,
    /// The server's port (with or without -h).
    #[arg(short = 'p', long = "port", value_name = "PORT", conflicts_with = "redis")]
    pub port: Option<u16>,
    /// Print replies as piped redis-cli does (the default when stdout is not a terminal).
    #[arg(long, conflicts_with = "no_raw")]
    pub raw: bool,
    /// Print replies as redis-cli does at a terminal: (integer) 1, 1) "a", (nil), (error) ...
    /// (the default when stdout is a terminal).
    #[arg(long)]
    pub no_raw: bool,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
}

#[derive(Debug)]
pub struct Plan {
    pub cluster: bool,
    pub at: Millis,
    /// Send the lines to this server instead of the emulator.
    pub redis: Option<super::verify::RedisTarget>,
    /// Or to this host and port, over a plain RESP connection.
    pub server: Option<(String, u16)>,
    pub format: Format,
}

impl Plan {
    pub fn new(a: Args) -> Result<Plan> {
        let at = a.at.unwrap_or(DEFAULT_START.0);
        if !(0..=limitlab_engine::limiter::MAX_ARG as i64).contains(&at) {
            return Err(Error::Invalid {
                context: "limitlab cli".into(),
                field: "--at".into(),
                reason: format!("must be a unix time in ms from 0 to {}, got {at}", limitlab_engine::limiter::MAX_ARG),
            });
        }
        let server = match (a.host, a.port) {
            (None, None) => None,
            (h, p) => Some((h.unwrap_or_else(|| "127.0.0.1".into()), p.unwrap_or(6379))),
        };
        use std::io::IsTerminal;
        let format = if a.no_raw || (!a.raw && std::io::stdout().is_terminal()) { Format::Human } else { Format::Raw };
        Ok(Plan { cluster: a.cluster, at: Millis(at), redis: a.redis.target()?, server, format })
    }
}

pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    if let Some(target) = &plan.redis {
        return run_on_redis(target, plan.format, out);
    }
    if let Some((host, port)) = &plan.server {
        return run_on_server(host, *port, plan.format, out);
    }
    let mut emu = Emulator::with_clock(VirtualClock::starting_at(plan.at));
    emu.set_cluster(plan.cluster);
    let stdin = std::io::stdin();
    super::redis_cli::run_with(stdin.lock(), out, plan.format, &mut emu)
        .map_err(|source| Error::Io { path: "<stdin/stdout>".into(), source })
}

/// The lines on any server, over a plain connection. A lost connection stops the input there.
fn run_on_server(host: &str, port: u16, format: Format, out: &mut dyn Write) -> Result<()> {
    let mut client = limitlab_server::client::Client::connect(host, port)
        .map_err(|e| Error::Connection(format!("could not connect to {host}:{port}: {e}")))?;
    let failed = std::cell::Cell::new(false);
    let mut failure = None;
    let stdin = std::io::stdin();
    let input = StopAfter { inner: stdin.lock(), stop: &failed };
    super::redis_cli::run_on_with(input, out, format, |args| match client.command(args) {
        Ok(r) => r,
        Err(e) => {
            failed.set(true);
            failure = Some(Error::Connection(format!("{host}:{port}: {e}")));
            limitlab_emulator::Reply::Nil
        }
    })
    .map_err(|source| Error::Io { path: "<stdin/stdout>".into(), source })?;
    failure.map_or(Ok(()), Err)
}

/// The lines on a real server. A transport failure stops the input there (redis-cli would lose the
/// connection too) and becomes the command's error.
fn run_on_redis(target: &super::verify::RedisTarget, format: Format, out: &mut dyn Write) -> Result<()> {
    use limitlab_engine::backend::Backend;
    let mut real = target.connect()?;
    real.set_auto_cleanup(false);
    // A BUSY or LOADING reply is printed at once, as redis-cli prints it.
    real.set_wait_out_refusals(false);
    let failed = std::cell::Cell::new(false);
    let mut failure = None;
    let stdin = std::io::stdin();
    let input = StopAfter { inner: stdin.lock(), stop: &failed };
    super::redis_cli::run_on_with(input, out, format, |args| {
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        match real.command(&refs) {
            Ok(r) => r,
            Err(e) => {
                failed.set(true);
                failure = Some(e);
                limitlab_emulator::Reply::Nil
            }
        }
    })
    .map_err(|source| Error::Io { path: "<stdin/stdout>".into(), source })?;
    failure.map_or(Ok(()), Err)
}

/// Input that ends once `stop` is set.
struct StopAfter<'a, R> {
    inner: R,
    stop: &'a std::cell::Cell<bool>,
}

impl<R: std::io::Read> std::io::Read for StopAfter<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.stop.get() {
            return Ok(0);
        }
        self.inner.read(buf)
    }
}

impl<R: std::io::BufRead> std::io::BufRead for StopAfter<'_, R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.stop.get() {
            return Ok(&[]);
        }
        self.inner.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        self.inner.consume(n)
    }
}
