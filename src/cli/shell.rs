//! `limitlab cli [--cluster] [--at UNIX_MS]`: redis-cli syntax on stdin, redis-cli's output on
//! stdout, against a fresh emulator (see [`super::redis_cli`] for the rules and the CLOCK.* commands).
//!
//! `limitlab cli --redis URL` sends the same lines to a real server instead, exactly as written (no
//! key prefix, and CLOCK.* goes to the server, which does not know it), so the two outputs can be
//! compared with `diff`. Point it at a server you may write to.
use std::io::Write;

use crate::clock::{Millis, VirtualClock, DEFAULT_START};
use crate::emulator::Emulator;
use crate::{Error, Result};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Apply Redis Cluster rules (hash slots, CROSSSLOT errors).
    #[arg(long, conflicts_with = "redis")]
    pub cluster: bool,
    /// Start the virtual clock here (unix ms); default 2024-01-01T00:00:00Z (1704067200000).
    #[arg(long, value_name = "UNIX_MS", conflicts_with = "redis")]
    pub at: Option<i64>,
    #[command(flatten)]
    pub redis: super::verify::RedisArgs,
}

#[derive(Debug)]
pub struct Plan {
    pub cluster: bool,
    pub at: Millis,
    /// Send the lines to this server instead of the emulator.
    pub redis: Option<super::verify::RedisTarget>,
}

impl Plan {
    pub fn new(a: Args) -> Result<Plan> {
        let at = a.at.unwrap_or(DEFAULT_START.0);
        if !(0..=crate::limiter::MAX_ARG as i64).contains(&at) {
            return Err(Error::Invalid {
                context: "limitlab cli".into(),
                field: "--at".into(),
                reason: format!("must be a unix time in ms from 0 to {}, got {at}", crate::limiter::MAX_ARG),
            });
        }
        Ok(Plan { cluster: a.cluster, at: Millis(at), redis: a.redis.target()? })
    }
}

pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    if let Some(target) = &plan.redis {
        return run_on_redis(target, out);
    }
    let mut emu = Emulator::with_clock(VirtualClock::starting_at(plan.at));
    emu.set_cluster(plan.cluster);
    let stdin = std::io::stdin();
    super::redis_cli::run(stdin.lock(), out, &mut emu)
        .map_err(|source| Error::Io { path: "<stdin/stdout>".into(), source })
}

/// The lines on a real server. A transport failure stops the input there (redis-cli would lose the
/// connection too) and becomes the command's error.
fn run_on_redis(target: &super::verify::RedisTarget, out: &mut dyn Write) -> Result<()> {
    use crate::backend::Backend;
    let mut real = target.connect()?;
    real.set_auto_cleanup(false);
    let failed = std::cell::Cell::new(false);
    let mut failure = None;
    let stdin = std::io::stdin();
    let input = StopAfter { inner: stdin.lock(), stop: &failed };
    super::redis_cli::run_on(input, out, |args| {
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        match real.command(&refs) {
            Ok(r) => r,
            Err(e) => {
                failed.set(true);
                failure = Some(e);
                crate::emulator::Reply::Nil
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
