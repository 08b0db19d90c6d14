//! `limitlab memory [--users N] [--limit 1000/min] [--subject NAME] [--redis URL]`: bytes per user
//! and the total for N users for every script, from MEMORY USAGE after a window's worth of calls,
//! beside the seed article's figures (and, with `--redis`, a real server's).
use std::io::Write;

use super::verify::RedisArgs;
use super::{emit, FormatArgs};
use crate::report::memory::{measure, MemoryPlan};
use crate::report::Format;
use limitlab_emulator::{Error, Result};
use limitlab_engine::limiter::{Limiter, Params, Variant};

/// The most users `--users` accepts: totals stay far inside 64 bits.
pub const MAX_USERS: u64 = 1_000_000_000;
/// The largest limit: the command makes `limit` calls per script on the emulator.
pub const MAX_LIMIT: u64 = 1_000_000;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// How many users to total the memory for.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub users: u64,
    /// The limit: N/sec, N/min, N/hour, or N/Mms for N per M ms (e.g. 1000/min, 100/250ms). One user makes
    /// that many calls in the first 5/6 of a window, as in the seed article.
    #[arg(long, value_name = "N/PERIOD", default_value = "1000/min")]
    pub limit: String,
    /// The subject whose keys are measured: its key is rate:{SUBJECT}. Key length counts: the
    /// key's string is part of every key's MEMORY USAGE.
    #[arg(long, value_name = "NAME", default_value = "user42")]
    pub subject: String,
    /// Measure this script only (repeatable): a spec file (my_limiter.toml) or a built-in name.
    /// Default: the nine shipped scripts.
    #[arg(long = "script", value_name = "NAME|SPEC")]
    pub scripts: Vec<String>,
    #[command(flatten)]
    pub redis: RedisArgs,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// A validated `memory` command.
#[derive(Debug)]
pub struct Plan {
    pub memory: MemoryPlan,
    pub redis: Option<super::verify::RedisTarget>,
    pub format: Format,
}

fn invalid(context: &str, field: &str, reason: String) -> Error {
    Error::Invalid { context: context.into(), field: field.into(), reason }
}

/// Parses `N/sec`, `N/min`, `N/hour` or `N/<ms>ms` (also `N/s`, `N/second`, `N/m`, `N/minute`,
/// `N/h`, `N/ms` for one millisecond) into a limit per window.
pub fn parse_limit(s: &str) -> Result<Params> {
    let bad = |why: String| invalid("--limit", "N/PERIOD", why);
    let usage = "expected N/sec, N/min, N/hour or N/<ms>ms, e.g. 1000/min or 100/250ms";
    let Some((n, period)) = s.trim().split_once('/') else {
        return Err(bad(format!("`{s}` has no `/`: {usage}")));
    };
    let n = n.trim();
    let limit: u64 = match n.parse() {
        Ok(v) if n.bytes().all(|b| b.is_ascii_digit()) => v,
        _ => return Err(bad(format!("`{n}` is not a whole number of requests: {usage}"))),
    };
    if limit == 0 || limit > MAX_LIMIT {
        return Err(bad(format!("the number of requests must be from 1 to {MAX_LIMIT}, got {limit}")));
    }
    let period = period.trim().to_ascii_lowercase();
    let window_ms: u64 = match period.as_str() {
        "sec" | "s" | "second" => 1_000,
        "min" | "m" | "minute" => 60_000,
        "hour" | "h" => 3_600_000,
        "ms" => 1,
        p => match p.strip_suffix("ms") {
            Some(ms) if !ms.is_empty() && ms.bytes().all(|b| b.is_ascii_digit()) => match ms.parse::<u64>() {
                Ok(v) if (1..=limitlab_engine::limiter::MAX_ARG).contains(&v) => v,
                _ => {
                    return Err(bad(format!(
                        "`{p}`: the period in ms must be from 1 to {}",
                        limitlab_engine::limiter::MAX_ARG
                    )))
                }
            },
            _ => return Err(bad(format!("`{}` is not a period: {usage}", period.as_str()))),
        },
    };
    Ok(Params::new(limit, window_ms))
}

impl Plan {
    pub fn new(a: Args) -> Result<Plan> {
        let params = parse_limit(&a.limit)?;
        if a.users == 0 || a.users > MAX_USERS {
            return Err(invalid("--users", "N", format!("must be from 1 to {MAX_USERS}, got {}", a.users)));
        }
        if a.subject.is_empty() || a.subject.len() > 1024 {
            return Err(invalid("--subject", "NAME", "must be 1 to 1024 bytes long".into()));
        }
        // Every script must accept the parameters (the sliding window needs limit * window_ms <= 2^50).
        for v in Variant::ALL {
            Limiter::new(v, params)?;
        }
        Ok(Plan {
            memory: MemoryPlan {
                params,
                users: a.users,
                subject: a.subject,
                scripts: a.scripts.iter().map(|n| limitlab_engine::spec::resolve(n)).collect::<Result<_>>()?,
            },
            redis: a.redis.target()?,
            format: a.format.format(),
        })
    }
}

pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    let report = match &plan.redis {
        None => measure(&plan.memory, None)?,
        Some(target) => {
            let mut real = target.connect()?;
            measure(&plan.memory, Some(&mut real))?
        }
    };
    emit(out, &report.render(plan.format))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        assert_eq!(parse_limit("1000/min").unwrap(), Params::new(1000, 60_000));
        assert_eq!(parse_limit("10/sec").unwrap(), Params::new(10, 1000));
        assert_eq!(parse_limit("10/s").unwrap(), Params::new(10, 1000));
        assert_eq!(parse_limit("5/hour").unwrap(), Params::new(5, 3_600_000));
        assert_eq!(parse_limit("100/250ms").unwrap(), Params::new(100, 250));
        assert_eq!(parse_limit(" 7/MIN ").unwrap(), Params::new(7, 60_000));
        assert_eq!(parse_limit("3/ms").unwrap(), Params::new(3, 1));
        for bad in [
            "",
            "1000",
            "/min",
            "x/min",
            "-1/min",
            "+1/min",
            "0/min",
            "1000/day",
            "1/0ms",
            "1/ms5",
            "1/-5ms",
            "2000000/min",
        ] {
            let e = parse_limit(bad).unwrap_err().to_string();
            assert!(e.starts_with("--limit: field `N/PERIOD`: "), "{bad}: {e}");
        }
        assert_eq!(
            parse_limit("1000/day").unwrap_err().to_string(),
            "--limit: field `N/PERIOD`: `day` is not a period: expected N/sec, N/min, N/hour or N/<ms>ms, e.g. 1000/min or 100/250ms"
        );
    }
}
