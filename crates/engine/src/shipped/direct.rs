//! The hand-written path to limitlab's shipped scripts (what every tool used before specs): the
//! baseline of `limitlab bench`'s spec-cost comparison, the parameter rules of the shipped scripts,
//! and their exact models.
use super::*;
use limitlab_emulator::Reply;
use limitlab_emulator::{Error, Result};

/// A shipped script with validated parameters, called the hand-written way: KEYS and ARGV
/// formatted and the reply read by code that knows the script. It is the path every tool took before
/// specs, kept as the baseline `limitlab bench` measures the spec path against, and as the source
/// of the parameter rules the shipped scripts enforce.
#[derive(Clone, Debug)]
pub struct Direct {
    variant: Variant,
    params: Params,
    /// ARGV[1], ARGV[2] and ARGV[5] never change between calls: formatted once.
    limit_arg: String,
    window_arg: String,
    burst_arg: Option<String>,
    sha1: String,
}

impl Direct {
    /// Checks `params` against what `variant`'s script accepts (the same rules the production
    /// scripts enforce, so a validated limiter never gets an `ERR` back for its parameters).
    pub fn new(variant: Variant, params: Params) -> Result<Direct> {
        let name = variant.name();
        let invalid = |field: &str, reason: String| Error::Invalid {
            context: name.to_string(),
            field: field.to_string(),
            reason,
        };
        let range = |field: &str, v: u64| {
            if v == 0 || v > MAX_ARG {
                Err(invalid(field, format!("{v} is not an integer from 1 to {MAX_ARG}")))
            } else {
                Ok(())
            }
        };
        range("limit", params.limit)?;
        range("window_ms", params.window_ms)?;
        if let Some(b) = params.burst {
            if !variant.takes_burst() {
                return Err(invalid("burst", format!("{name} has no burst; only token_bucket and gcra do")));
            }
            range("burst", b)?;
        }
        let scaled = |a: u64, what: &str| {
            if (a as u128) * (params.window_ms as u128) > MAX_SCALED as u128 {
                Err(invalid(
                    "window_ms",
                    format!(
                        "{what} * window_ms must not exceed 2^50: with {what} {a}, window_ms is at most {}",
                        MAX_SCALED / a.max(1)
                    ),
                ))
            } else {
                Ok(())
            }
        };
        if variant.flavor() == Flavor::Ours {
            match variant.algorithm() {
                Algorithm::SlidingWindow => scaled(params.limit, "limit")?,
                Algorithm::TokenBucket | Algorithm::Gcra => scaled(params.capacity(), "burst")?,
                _ => {}
            }
        }
        Ok(Direct {
            variant,
            params,
            limit_arg: params.limit.to_string(),
            window_arg: params.window_ms.to_string(),
            burst_arg: params.burst.map(|b| b.to_string()),
            sha1: limitlab_emulator::lua::sha1_hex(variant.script().as_bytes()),
        })
    }

    pub fn variant(&self) -> Variant {
        self.variant
    }

    pub fn params(&self) -> Params {
        self.params
    }

    /// The script's Lua source.
    pub fn script(&self) -> &'static str {
        self.variant.script()
    }

    /// The script's SHA1 in hex, as `SCRIPT LOAD` returns it (for EVALSHA).
    pub fn sha1(&self) -> &str {
        &self.sha1
    }

    /// See [`check_call`].
    pub fn check_call(&self, now_ms: i64, cost: u64) -> Result<()> {
        check_call(self.variant, &self.params, now_ms, cost)
    }

    /// KEYS and ARGV for one call on the subject key `key` (e.g. [`subject_key`]`("user42")`).
    pub fn keys_and_args(&self, key: &str, now_ms: i64, cost: u64) -> (Vec<String>, Vec<String>) {
        let mut keys = Vec::with_capacity(1);
        let mut args = Vec::with_capacity(5);
        self.write_keys_and_args(key, now_ms, cost, &mut keys, &mut args);
        (keys, args)
    }

    /// [`Direct::keys_and_args`] into buffers a hot loop reuses: their strings keep their
    /// allocations from call to call.
    pub fn write_keys_and_args(
        &self,
        key: &str,
        now_ms: i64,
        cost: u64,
        keys: &mut Vec<String>,
        args: &mut Vec<String>,
    ) {
        keys.resize_with(1, String::new);
        keys[0].clear();
        keys[0].push_str(key);
        let n = 3 + usize::from(self.variant.takes_cost()) + usize::from(self.burst_arg.is_some());
        args.resize_with(n, String::new);
        for a in args.iter_mut() {
            a.clear();
        }
        args[0].push_str(&self.limit_arg);
        args[1].push_str(&self.window_arg);
        args[2].push_str(itoa::Buffer::new().format(now_ms));
        if self.variant.takes_cost() {
            args[3].push_str(itoa::Buffer::new().format(cost));
            if let Some(b) = &self.burst_arg {
                args[4].push_str(b);
            }
        }
    }

    /// Reads the script's reply. An error reply becomes [`Error::Redis`] with its text; a reply of
    /// the wrong shape becomes [`Error::Invalid`].
    pub fn parse_reply(&self, reply: &Reply) -> Result<Decision> {
        let name = self.variant.name();
        let shape = |what: &str| Error::Invalid {
            context: name.to_string(),
            field: "reply".to_string(),
            reason: format!("expected {what}, got {reply:?}"),
        };
        if let Reply::Error(e) = reply {
            return Err(Error::Redis(e.clone()));
        }
        match self.variant.flavor() {
            Flavor::Seed => match reply {
                Reply::Int(0) => Ok(Decision::allowed_only(false)),
                Reply::Int(1) => Ok(Decision::allowed_only(true)),
                _ => Err(shape("the integer 0 or 1")),
            },
            Flavor::Ours => match reply {
                Reply::Array(v) => match v.as_slice() {
                    [Reply::Int(a @ (0 | 1)), Reply::Int(rem), Reply::Int(retry), Reply::Int(reset)] => Ok(Decision {
                        allowed: *a == 1,
                        remaining: *rem,
                        retry_after_ms: *retry,
                        reset_after_ms: *reset,
                        granted: Decision::NOT_REPORTED,
                    }),
                    _ => Err(shape("{allowed 0/1, remaining, retry_after_ms, reset_after_ms}")),
                },
                _ => Err(shape("{allowed 0/1, remaining, retry_after_ms, reset_after_ms}")),
            },
        }
    }

    /// A fresh reference model of this limiter's script (an empty keyspace).
    pub fn reference(&self) -> Box<dyn Reference> {
        reference(self.variant, self.params)
    }
}

/// Checks one call's `now_ms` and `cost` against what the script accepts: `now_ms` from 0 to
/// [`MAX_ARG`], `cost` at most [`MAX_ARG`] (ignored by seed scripts), and for GCRA the clock in
/// ticks at most [`MAX_GCRA_TICKS`].
pub fn check_call(variant: Variant, params: &Params, now_ms: i64, cost: u64) -> Result<()> {
    let invalid = |field: &str, reason: String| Error::Invalid {
        context: variant.name().to_string(),
        field: field.to_string(),
        reason,
    };
    if now_ms < 0 || now_ms as u64 > MAX_ARG {
        return Err(invalid("now_ms", format!("{now_ms} is not an integer from 0 to {MAX_ARG}")));
    }
    if variant.takes_cost() && cost > MAX_ARG {
        return Err(invalid("cost", format!("{cost} is not an integer from 0 to {MAX_ARG}")));
    }
    if variant == Variant::GCRA {
        let ticks = now_ms as u128 * gcra::ticks_per_ms(params) as u128;
        if ticks > MAX_GCRA_TICKS as u128 {
            return Err(invalid(
                "now_ms",
                format!("{now_ms} * limit / gcd(limit, window_ms) exceeds 2^51 (choose a window_ms sharing more factors with limit)"),
            ));
        }
    }
    Ok(())
}

/// A fresh reference model of this limiter's script (an empty keyspace).
pub fn reference(variant: Variant, p: Params) -> Box<dyn Reference> {
    match (variant.flavor(), variant.algorithm()) {
        (Flavor::Ours, Algorithm::FixedWindow) => Box::new(fixed_window::Model::new(p)),
        (Flavor::Ours, Algorithm::SlidingWindow) => Box::new(sliding_window::Model::new(p)),
        (Flavor::Ours, Algorithm::SlidingLog) => Box::new(sliding_log::Model::new(p)),
        (Flavor::Ours, Algorithm::TokenBucket) => Box::new(token_bucket::Model::new(p)),
        (Flavor::Ours, Algorithm::Gcra) | (Flavor::Seed, Algorithm::Gcra) => Box::new(gcra::Model::new(p)),
        (Flavor::Seed, Algorithm::FixedWindow) => Box::new(fixed_window::SeedModel::new(p)),
        (Flavor::Seed, Algorithm::SlidingWindow) => Box::new(sliding_window::SeedModel::new(p)),
        (Flavor::Seed, Algorithm::SlidingLog) => Box::new(sliding_log::SeedModel::new(p)),
        (Flavor::Seed, Algorithm::TokenBucket) => Box::new(token_bucket::SeedModel::new(p)),
    }
}
