//! The shipped scripts and the words every layer above speaks: a [`Variant`] names a script,
//! [`Params`] its policy, [`Decision`] its answer, and each script's file here holds its Lua
//! (`SCRIPT`) with an exact Rust [`Reference`] model; [`direct`] calls them without a spec.
//!
//! A [`Variant`] names a script: one of the five production [`Algorithm`]s in `scripts/`
//! ([`Flavor::Ours`]), or one of the seed article's four snippets completed into whole scripts in
//! `scripts/seed/` ([`Flavor::Seed`]). A [`Limiter`] is a variant with validated [`Params`]; it
//! builds KEYS and ARGV for a call, reads the script's reply into a [`Decision`], and makes a
//! [`Reference`] model that decides exactly as the script does, call for call.
//!
//! # The script contract
//! - `KEYS[1]`: the subject's key, hash-tagged (`rate:{user42}`, see [`subject_key`]). The production
//!   scripts use that one key; the seed's fixed and sliding windows derive per-window keys from it.
//! - `ARGV`: limit, window_ms, now_ms, then cost (production only), then burst (token bucket and
//!   GCRA only). Production scripts accept plain decimal integers up to [`MAX_ARG`] and reply
//!   `ERR ...` to anything else; the seed scripts check nothing.
//! - Production reply: `{allowed, remaining, retry_after_ms, reset_after_ms}`; retry_after is -1 when
//!   allowed, and also when refused because the cost exceeds the capacity (it never fits).
//!   Seed reply: 1 or 0.
//!
//! # Exactness of the references
//! The production scripts compute on integers below 2^53 only (the parameter bounds in [`Params`]
//! guarantee it), where Lua's doubles are exact, so their references use `i64`. The seed scripts
//! compute in floating point; their references repeat the same `f64` operations in the same order,
//! and format numbers the way Lua 5.1 (`%.14g`) and Redis 7.0 (`%.17g`) do, so they agree bit for
//! bit. Every reference also models key expiry: [`Reference::decide_at`] takes the server's clock
//! (which Redis uses for TTLs) apart from the caller's `now_ms` (which the script uses).
//!
//! [`Limiter`]: crate::limiter::Limiter
use std::fmt;
use std::str::FromStr;

use store::KeyStore;
pub mod direct;
pub mod fixed_window;
pub mod gcra;
pub mod sliding_log;
pub mod sliding_window;
mod store;
pub mod token_bucket;

/// The largest value of any argument a production script accepts: 15 decimal digits, below 2^50,
/// so that every argument is an exact Lua number and sums of a few of them stay exact.
pub const MAX_ARG: u64 = 999_999_999_999_999;

/// The sliding window needs `limit * window_ms` at most this, the token bucket and GCRA
/// `burst * window_ms`: they count in units of 1/window_ms and must stay exact.
pub const MAX_SCALED: u64 = 1 << 50;

/// GCRA needs `now_ms * limit / gcd(limit, window_ms)` (its clock in ticks) at most this.
pub const MAX_GCRA_TICKS: u64 = 1 << 51;

/// The five rate-limiting algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    /// One counter per aligned window; up to twice the limit across a boundary.
    FixedWindow,
    /// Current and previous window counters, the previous one weighted by its overlap.
    SlidingWindow,
    /// Every unit in a sorted set scored by time; exact, memory grows with the limit.
    SlidingLog,
    /// A bucket of `burst` tokens refilled at `limit` per window.
    TokenBucket,
    /// Generic cell rate algorithm: one timestamp; admits what the token bucket admits.
    Gcra,
}

/// Whose script: limitlab's production script, or the seed article's completed snippet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Flavor {
    /// `scripts/<name>.lua`: the full contract (cost, four-field reply, skew handling, TTLs).
    Ours,
    /// `scripts/seed/<name>.lua`: the article's formulas, ARGV limit window_ms now_ms, reply 1/0.
    Seed,
}

/// One script: an algorithm in a flavor. The seed has no GCRA, so `Variant` is built only through
/// [`Variant::new`], [`Variant::ALL`] or [`FromStr`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Variant {
    algorithm: Algorithm,
    flavor: Flavor,
}

impl Variant {
    pub const FIXED_WINDOW: Variant = Variant { algorithm: Algorithm::FixedWindow, flavor: Flavor::Ours };
    pub const SLIDING_WINDOW: Variant = Variant { algorithm: Algorithm::SlidingWindow, flavor: Flavor::Ours };
    pub const SLIDING_LOG: Variant = Variant { algorithm: Algorithm::SlidingLog, flavor: Flavor::Ours };
    pub const TOKEN_BUCKET: Variant = Variant { algorithm: Algorithm::TokenBucket, flavor: Flavor::Ours };
    pub const GCRA: Variant = Variant { algorithm: Algorithm::Gcra, flavor: Flavor::Ours };
    pub const SEED_FIXED_WINDOW: Variant = Variant { algorithm: Algorithm::FixedWindow, flavor: Flavor::Seed };
    pub const SEED_SLIDING_WINDOW: Variant = Variant { algorithm: Algorithm::SlidingWindow, flavor: Flavor::Seed };
    pub const SEED_SLIDING_LOG: Variant = Variant { algorithm: Algorithm::SlidingLog, flavor: Flavor::Seed };
    pub const SEED_TOKEN_BUCKET: Variant = Variant { algorithm: Algorithm::TokenBucket, flavor: Flavor::Seed };

    /// Every script, production ones first, in the order the CLI lists them.
    pub const ALL: [Variant; 9] = [
        Self::FIXED_WINDOW,
        Self::SLIDING_WINDOW,
        Self::SLIDING_LOG,
        Self::TOKEN_BUCKET,
        Self::GCRA,
        Self::SEED_FIXED_WINDOW,
        Self::SEED_SLIDING_WINDOW,
        Self::SEED_SLIDING_LOG,
        Self::SEED_TOKEN_BUCKET,
    ];

    /// The variant, or `None` for the one combination that has no script (a seed GCRA).
    pub fn new(algorithm: Algorithm, flavor: Flavor) -> Option<Variant> {
        if algorithm == Algorithm::Gcra && flavor == Flavor::Seed {
            return None;
        }
        Some(Variant { algorithm, flavor })
    }

    pub fn algorithm(self) -> Algorithm {
        self.algorithm
    }

    pub fn flavor(self) -> Flavor {
        self.flavor
    }

    /// The CLI name: `fixed_window`, ..., `seed_fixed_window`, ...
    pub fn name(self) -> &'static str {
        match (self.flavor, self.algorithm) {
            (Flavor::Ours, Algorithm::FixedWindow) => "fixed_window",
            (Flavor::Ours, Algorithm::SlidingWindow) => "sliding_window",
            (Flavor::Ours, Algorithm::SlidingLog) => "sliding_log",
            (Flavor::Ours, Algorithm::TokenBucket) => "token_bucket",
            (Flavor::Ours, Algorithm::Gcra) => "gcra",
            (Flavor::Seed, Algorithm::FixedWindow) => "seed_fixed_window",
            (Flavor::Seed, Algorithm::SlidingWindow) => "seed_sliding_window",
            (Flavor::Seed, Algorithm::SlidingLog) => "seed_sliding_log",
            (Flavor::Seed, Algorithm::TokenBucket) => "seed_token_bucket",
            (Flavor::Seed, Algorithm::Gcra) => "seed_gcra",
        }
    }

    /// The script's Lua source, as shipped in `scripts/`.
    pub fn script(self) -> &'static str {
        match (self.flavor, self.algorithm) {
            (Flavor::Ours, Algorithm::FixedWindow) => fixed_window::SCRIPT,
            (Flavor::Ours, Algorithm::SlidingWindow) => sliding_window::SCRIPT,
            (Flavor::Ours, Algorithm::SlidingLog) => sliding_log::SCRIPT,
            (Flavor::Ours, Algorithm::TokenBucket) => token_bucket::SCRIPT,
            (Flavor::Ours, Algorithm::Gcra) | (Flavor::Seed, Algorithm::Gcra) => gcra::SCRIPT,
            (Flavor::Seed, Algorithm::FixedWindow) => fixed_window::SEED_SCRIPT,
            (Flavor::Seed, Algorithm::SlidingWindow) => sliding_window::SEED_SCRIPT,
            (Flavor::Seed, Algorithm::SlidingLog) => sliding_log::SEED_SCRIPT,
            (Flavor::Seed, Algorithm::TokenBucket) => token_bucket::SEED_SCRIPT,
        }
    }

    /// Whether the script reads a cost (`ARGV[4]`); seed scripts count every call as 1.
    pub fn takes_cost(self) -> bool {
        self.flavor == Flavor::Ours
    }

    /// Whether the script reads a burst capacity (`ARGV[5]`).
    pub fn takes_burst(self) -> bool {
        self.flavor == Flavor::Ours && matches!(self.algorithm, Algorithm::TokenBucket | Algorithm::Gcra)
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not one of [`Variant::ALL`]; its message lists the valid names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownVariant(pub String);

impl fmt::Display for UnknownVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown algorithm `{}`; valid names: ", self.0)?;
        for (i, v) in Variant::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(v.name())?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownVariant {}

impl FromStr for Variant {
    type Err = UnknownVariant;

    /// Parses a CLI name; `-` may stand for `_` (`token-bucket`), case is ignored.
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_lowercase().replace('-', "_");
        Variant::ALL.into_iter().find(|v| v.name() == norm).ok_or_else(|| UnknownVariant(s.to_string()))
    }
}

/// A limiter's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Params {
    /// Units per window (window counters, sliding log), or tokens added per window (token bucket,
    /// GCRA: the sustained rate).
    pub limit: u64,
    /// The window, or the refill period, in ms.
    pub window_ms: u64,
    /// Token bucket and GCRA: the capacity (largest burst); `None` means `limit`.
    pub burst: Option<u64>,
}

impl Params {
    /// `limit` per `window_ms`, with no separate burst.
    pub fn new(limit: u64, window_ms: u64) -> Params {
        Params { limit, window_ms, burst: None }
    }

    /// The same parameters with a burst capacity (token bucket and GCRA).
    pub fn with_burst(self, burst: u64) -> Params {
        Params { burst: Some(burst), ..self }
    }

    /// The capacity: `burst`, or `limit` when no burst is set.
    pub fn capacity(&self) -> u64 {
        self.burst.unwrap_or(self.limit)
    }
}

/// What a script decided for one call.
///
/// For production scripts every field is the script's reply. Seed scripts only say allowed or not:
/// their other fields are [`Decision::NOT_REPORTED`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Decision {
    pub allowed: bool,
    /// Units (or tokens) still available right after this call.
    pub remaining: i64,
    /// -1 when allowed; when refused, ms until the same request would be allowed if nothing else
    /// arrives, or -1 when it can never be (cost above the capacity).
    pub retry_after_ms: i64,
    /// ms until the subject's whole quota is back if it stays idle; 0 when it already is.
    pub reset_after_ms: i64,
    /// Units admitted, for a limiter that may grant part of a request (an "at most N" call);
    /// [`Decision::NOT_REPORTED`] when it grants all of the cost or none ([`Decision::units`]).
    pub granted: i64,
}

/// A four-field decision, for the models' tests (`d(allowed, remaining, retry_after, reset_after)`).
#[cfg(test)]
pub(crate) fn decision(allowed: bool, remaining: i64, retry: i64, reset: i64) -> Decision {
    Decision { allowed, remaining, retry_after_ms: retry, reset_after_ms: reset, granted: -1 }
}

impl Decision {
    /// The value of a field a seed script does not report.
    pub const NOT_REPORTED: i64 = -1;

    /// The `retry_after_ms` of a refusal whose client (an adapter) tells its caller a negative
    /// wait, which the declarative form cannot say (there a negative value, like nil, is "no
    /// retry": the request never fits). Below every real value, so it promises no retry.
    pub const TOLD_NEGATIVE: i64 = i64::MIN;

    /// The decision of a seed script, which only reports `allowed`.
    pub fn allowed_only(allowed: bool) -> Decision {
        Decision {
            allowed,
            remaining: Self::NOT_REPORTED,
            retry_after_ms: Self::NOT_REPORTED,
            reset_after_ms: Self::NOT_REPORTED,
            granted: Decision::NOT_REPORTED,
        }
    }

    /// The units this decision admitted of a request of `cost`: what it `granted` when it says,
    /// else all of the cost when admitted and none when refused.
    pub fn units(&self, cost: u64) -> u64 {
        match (self.allowed, self.granted) {
            (false, _) => 0,
            (true, g) if g >= 0 => (g as u64).min(cost),
            (true, _) => cost,
        }
    }

    /// True when refused because the request can never fit (cost above the capacity).
    pub fn never_fits(&self) -> bool {
        !self.allowed && self.retry_after_ms == -1
    }
}

/// An exact Rust model of one script: the same decisions, replies and keys, call for call. Models
/// are plain data, so they can move between threads (a streaming run finishes its metrics on
/// another thread than the one that ran the script).
pub trait Reference: Send {
    /// Decides a call made when the server's clock (which Redis uses for key expiry) reads
    /// `server_ms` and the caller passes `now_ms` (which the script uses). They differ when the
    /// caller's clock is skewed. Inputs must pass
    /// [`Limiter::check_call`](crate::limiter::Limiter::check_call).
    fn decide_at(&mut self, server_ms: i64, key: &str, now_ms: i64, cost: u64) -> Decision;

    /// Decides a call made when the server's clock and the caller's agree.
    fn decide(&mut self, key: &str, now_ms: i64, cost: u64) -> Decision {
        self.decide_at(now_ms, key, now_ms, cost)
    }

    /// The Redis keys the script's state occupies at server time `server_ms`, sorted, each with
    /// its expiry deadline in server ms (`None`: no TTL). For checking a real keyspace.
    fn keys(&self, server_ms: i64) -> Vec<(String, Option<i64>)>;

    /// A copy of the model and its state, to ask "what if" without disturbing it.
    fn boxed_clone(&self) -> Box<dyn Reference>;

    /// Starts (`true`) or ends (`false`) a trial: every change to the model's keys in between is
    /// undone when it ends. See [`Reference::probe`].
    fn trial(&mut self, start: bool);

    /// What [`Reference::decide`] would answer for this call, leaving the model as it was: the
    /// answer a [`Reference::boxed_clone`] would give, without copying every key (only the few the
    /// call touches are saved and put back).
    fn probe(&mut self, key: &str, now_ms: i64, cost: u64) -> Decision {
        self.trial(true);
        let d = self.decide(key, now_ms, cost);
        self.trial(false);
        d
    }
}

/// A shipped script's exact model as it is written: how it decides a call, and the store that holds
/// its keys. Every one is a [`Reference`] through the impl below, which does the rest (keys,
/// copies, trials) the same way for all of them.
pub(crate) trait ShippedModel: Clone + Send + 'static {
    /// [`Reference::decide_at`].
    fn decide_call(&mut self, server_ms: i64, key: &str, now_ms: i64, cost: u64) -> Decision;

    fn store(&self) -> &dyn KeyStore;

    fn store_mut(&mut self) -> &mut dyn KeyStore;
}

impl<M: ShippedModel> Reference for M {
    fn decide_at(&mut self, server_ms: i64, key: &str, now_ms: i64, cost: u64) -> Decision {
        self.decide_call(server_ms, key, now_ms, cost)
    }

    fn keys(&self, server_ms: i64) -> Vec<(String, Option<i64>)> {
        self.store().keys(server_ms)
    }

    fn boxed_clone(&self) -> Box<dyn Reference> {
        Box::new(self.clone())
    }

    fn trial(&mut self, start: bool) {
        self.store_mut().trial(start);
    }
}

impl Clone for Box<dyn Reference> {
    fn clone(&self) -> Self {
        self.boxed_clone()
    }
}

/// The hash-tagged key of a subject: `rate:{user42}`. The tag keeps every key a script derives
/// from it in one cluster slot.
pub fn subject_key(subject: &str) -> String {
    format!("rate:{{{subject}}}")
}

/// `ceil(a / b)` for `a >= 0`, `b >= 1`, as the scripts compute it.
pub(crate) fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// Lua 5.1's `a % b` on doubles: `a - floor(a / b) * b`.
pub(crate) fn lua_mod(a: f64, b: f64) -> f64 {
    a - (a / b).floor() * b
}

/// Lua 5.1's `tostring` of a number (`%.14g`), as `..` formats numbers into strings.
pub(crate) fn lua_tostring(x: f64) -> String {
    limitlab_emulator::reply::fmt_g(x, 14)
}
