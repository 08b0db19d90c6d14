//! `limitlab cli [--cluster] [--at UNIX_MS]`: redis-cli syntax on stdin, redis-cli's output on
//! stdout, against a fresh emulator (see [`super::redis_cli`] for the rules and the CLOCK.* commands).
use std::io::Write;

use crate::clock::{Millis, VirtualClock, DEFAULT_START};
use crate::emulator::Emulator;
use crate::{Error, Result};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Apply Redis Cluster rules (hash slots, CROSSSLOT errors).
    #[arg(long)]
    pub cluster: bool,
    /// Start the virtual clock here (unix ms); default 2024-01-01T00:00:00Z (1704067200000).
    #[arg(long, value_name = "UNIX_MS")]
    pub at: Option<i64>,
}

#[derive(Debug)]
pub struct Plan {
    pub cluster: bool,
    pub at: Millis,
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
        Ok(Plan { cluster: a.cluster, at: Millis(at) })
    }
}

pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    let mut emu = Emulator::with_clock(VirtualClock::starting_at(plan.at));
    emu.set_cluster(plan.cluster);
    let stdin = std::io::stdin();
    super::redis_cli::run(stdin.lock(), out, &mut emu)
        .map_err(|source| Error::Io { path: "<stdin/stdout>".into(), source })
}
