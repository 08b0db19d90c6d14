//! Seeded traffic generators, one file each, and trace readers. Every generator yields [`Arrival`]s in
//! time order; the same parameters and seed always give the same arrivals.
//!
//! # Determinism
//! Randomness comes from [`ChaCha8Rng`] seeded with [`ChaCha8Rng::seed_from_u64`], and the few
//! transcendental functions used (logarithm, exponential) are computed from `+ - * /` only (see the
//! private `math` module), so a seed gives bit-identical arrivals on every machine. Nothing here reads
//! the system clock: every generator is placed at the `start` it is given.
//!
//! # Ordering
//! Arrivals are sorted by time; arrivals at the same microsecond keep the order in which they were
//! generated (or, for traces, in which they appear in the file), and [`merge`] puts earlier streams
//! first.
//!
//! # Defaults
//! Unless a generator says otherwise: `cost = 1`, `key = "user"`, `keys = 1` (every arrival has the key
//! `key`; with `keys = N > 1` the keys are `key0` .. `key{N-1}`), `phase = ""`.
//!
//! # Limits
//! Validation refuses values that are zero or negative where that makes no sense, and values past the
//! bounds below, which would only exhaust memory or overflow the clock: at most [`MAX_ARRIVALS`]
//! arrivals, durations and offsets up to [`MAX_SPAN_MS`], rates up to [`MAX_RATE`], [`MAX_KEYS`] keys.
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use limitlab_emulator::clock::Micros;
use limitlab_emulator::{Error, Result};

pub mod boundary_burst;
pub mod idle_then_burst;
mod math;
pub mod periodic_bursts;
pub mod poisson;
pub mod trace;
pub mod uniform;
pub mod zipf_users;

pub use boundary_burst::{Anchor, BoundaryBurst, Burst};
pub use idle_then_burst::IdleThenBurst;
pub use periodic_bursts::PeriodicBursts;
pub use poisson::Poisson;
pub(crate) use trace::csv_writer;
pub use trace::{read_csv, write_csv, Rebase, Scan, TieRule, TimeFormat, TraceFormat, TraceSpec, TraceStream};
pub use uniform::Uniform;
pub use zipf_users::{Timing, ZipfIter, ZipfUsers};

/// A lifecycle operation of a client outside a request: give back a request's units, reset one
/// subject, clear every subject.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// An ordinary request: decided.
    #[default]
    Request,
    /// Gives back the units of the subject's request of `cost` (a "refund", "reward", "decrement").
    Refund,
    /// Resets one subject: its whole quota back.
    Reset,
    /// Resets every subject.
    Clear,
}

impl Op {
    /// The lifecycle operations, in the order a spec's `ops` are kept.
    pub const ALL: [Op; 3] = [Op::Refund, Op::Reset, Op::Clear];

    /// The name in spec files, traces and adapters (`refund`).
    pub fn name(self) -> &'static str {
        match self {
            Op::Request => "request",
            Op::Refund => "refund",
            Op::Reset => "reset",
            Op::Clear => "clear",
        }
    }

    /// An operation by name.
    pub fn parse(s: &str) -> Option<Op> {
        [Op::Request, Op::Refund, Op::Reset, Op::Clear].into_iter().find(|o| o.name() == s.trim())
    }

    /// Its index in [`Op::ALL`] (`None` for a request).
    pub fn index(self) -> Option<usize> {
        Op::ALL.iter().position(|o| *o == self)
    }
}

/// Refuses traffic with lifecycle operations for a command that only plays requests (`what`
/// names it): `run`, `compare`, `verify`, `sweep` and the library's `Harness` play them.
pub fn requests_only(arrivals: &[Arrival], what: &str) -> crate::Result<()> {
    match arrivals.iter().position(|a| a.op != Op::Request) {
        None => Ok(()),
        Some(i) => Err(invalid(
            what,
            "traffic",
            format!(
                "arrival #{} is a {} (subject `{}`); {what} plays requests only (run, compare, verify and sweep play lifecycle operations)",
                i + 1,
                arrivals[i].op.name(),
                arrivals[i].key
            ),
        )),
    }
}

/// One request reaching the limiter: when (virtual time, µs since the epoch), whose key, what cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrival {
    pub at: Micros,
    /// The subject (user, IP, API key); the limiter turns it into a hash-tagged Redis key.
    pub key: String,
    pub cost: u64,
    /// A label for per-phase counts (e.g. `end-of-window`, `start-of-next`); empty when unused.
    pub phase: String,
    /// A request (decided), or a lifecycle operation of the client at this time (a refund of
    /// `cost` units, a reset of the subject, a clear of every subject).
    pub op: Op,
}

/// The most arrivals one generator may produce (each [`Arrival`] takes about 64 bytes plus its key).
pub const MAX_ARRIVALS: u64 = 100_000_000;
/// The longest duration, offset or period: ten years, in milliseconds.
pub const MAX_SPAN_MS: u64 = 10 * 366 * 86_400_000;
/// The highest rate, in requests per second.
pub const MAX_RATE: f64 = 10_000_000.0;
/// The most distinct keys (users) a generator may name.
pub const MAX_KEYS: u64 = 1_000_000_000;

/// Where any traffic in a scenario comes from: a generator or a trace. Scenario files select the
/// variant with `kind`, e.g.
///
/// ```toml
/// [traffic]
/// kind = "poisson"
/// rate = 200.0
/// duration_ms = 10000
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TrafficSpec {
    Uniform(Uniform),
    Poisson(Poisson),
    BoundaryBurst(BoundaryBurst),
    IdleThenBurst(IdleThenBurst),
    PeriodicBursts(PeriodicBursts),
    ZipfUsers(ZipfUsers),
    Trace(TraceSpec),
    /// Several sources at once (say background Poisson traffic plus an attack), merged in time order.
    Mix(Mix),
}

/// Several traffic sources merged into one stream. Part `i` gets the seed [`part_seed`]`(seed, i)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mix {
    pub parts: Vec<TrafficSpec>,
}

impl TrafficSpec {
    /// The `kind` name as written in scenario files.
    pub fn kind(&self) -> &'static str {
        match self {
            TrafficSpec::Uniform(_) => "uniform",
            TrafficSpec::Poisson(_) => "poisson",
            TrafficSpec::BoundaryBurst(_) => "boundary_burst",
            TrafficSpec::IdleThenBurst(_) => "idle_then_burst",
            TrafficSpec::PeriodicBursts(_) => "periodic_bursts",
            TrafficSpec::ZipfUsers(_) => "zipf_users",
            TrafficSpec::Trace(_) => "trace",
            TrafficSpec::Mix(_) => "mix",
        }
    }

    /// Sets `skip_bad_lines` on every trace (mixes included): their bad lines are skipped and
    /// counted ([`trace::skipped`]) instead of refusing the file.
    pub fn skip_bad_lines(&mut self) {
        match self {
            TrafficSpec::Trace(t) => t.skip_bad_lines = true,
            TrafficSpec::Mix(m) => m.parts.iter_mut().for_each(TrafficSpec::skip_bad_lines),
            _ => {}
        }
    }

    /// Checks every parameter; trace files are only read by [`TrafficSpec::arrivals`].
    pub fn validate(&self) -> Result<()> {
        match self {
            TrafficSpec::Uniform(g) => g.validate(),
            TrafficSpec::Poisson(g) => g.validate(),
            TrafficSpec::BoundaryBurst(g) => g.validate(),
            TrafficSpec::IdleThenBurst(g) => g.validate(),
            TrafficSpec::PeriodicBursts(g) => g.validate(),
            TrafficSpec::ZipfUsers(g) => g.validate(),
            TrafficSpec::Trace(t) => t.validate(),
            TrafficSpec::Mix(m) => {
                if m.parts.is_empty() {
                    return Err(invalid("traffic.mix", "parts", "needs at least one part"));
                }
                m.parts.iter().try_for_each(TrafficSpec::validate)
            }
        }
    }

    /// Validates, then generates (or reads) the arrivals, sorted by time, starting at `start`.
    pub fn arrivals(&self, start: Micros, seed: u64) -> Result<Vec<Arrival>> {
        self.validate()?;
        Ok(match self {
            TrafficSpec::Uniform(g) => g.arrivals(start, seed),
            TrafficSpec::Poisson(g) => g.arrivals(start, seed),
            TrafficSpec::BoundaryBurst(g) => g.arrivals(start, seed),
            TrafficSpec::IdleThenBurst(g) => g.arrivals(start, seed),
            TrafficSpec::PeriodicBursts(g) => g.arrivals(start, seed),
            TrafficSpec::ZipfUsers(g) => g.arrivals(start, seed),
            TrafficSpec::Trace(t) => t.read(start)?,
            TrafficSpec::Mix(m) => {
                let mut streams = Vec::with_capacity(m.parts.len());
                for (i, part) in m.parts.iter().enumerate() {
                    streams.push(part.arrivals(start, part_seed(seed, i as u64))?);
                }
                merge(streams)
            }
        })
    }

    /// Makes relative trace paths relative to `base` (the directory of the scenario file naming them).
    pub fn resolve_paths(&mut self, base: &Path) {
        match self {
            TrafficSpec::Trace(t) if t.path.is_relative() && !crate::files::is_stdin(&t.path) => {
                t.path = base.join(&t.path)
            }
            TrafficSpec::Mix(m) => m.parts.iter_mut().for_each(|p| p.resolve_paths(base)),
            _ => {}
        }
    }
}

/// The seed of part `index` of a [`Mix`]: a SplitMix64 step, so parts are independent of each other
/// and part 0 does not simply repeat a lone generator run with the same seed.
pub fn part_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed.wrapping_add((index + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Merges streams that are each sorted by time into one sorted stream. At equal times an earlier
/// stream's arrivals come first, and within a stream the order is kept. A stream that is not sorted
/// is stably sorted first.
pub fn merge(streams: Vec<Vec<Arrival>>) -> Vec<Arrival> {
    let total = streams.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(total);
    let mut iters: Vec<_> = streams
        .into_iter()
        .map(|mut s| {
            sort_stable(&mut s);
            s.into_iter().peekable()
        })
        .collect();
    // The heap holds (time, stream index) of each stream's next arrival.
    let mut heap: BinaryHeap<Reverse<(i64, usize)>> =
        iters.iter_mut().enumerate().filter_map(|(i, it)| it.peek().map(|a| Reverse((a.at.0, i)))).collect();
    while let Some(Reverse((_, i))) = heap.pop() {
        let it = &mut iters[i];
        if let Some(a) = it.next() {
            out.push(a);
        }
        if let Some(next) = it.peek() {
            heap.push(Reverse((next.at.0, i)));
        }
    }
    out
}

/// Sorts by time, keeping the order of equal times; free when already sorted.
pub(crate) fn sort_stable(arrivals: &mut [Arrival]) {
    if !arrivals.is_sorted_by_key(|a| a.at) {
        arrivals.sort_by_key(|a| a.at);
    }
}

/// The random source of every generator.
pub(crate) fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// A second, independent stream from the same seed (so, e.g., key choice does not shift timing).
pub(crate) fn rng_stream(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(stream);
    r
}

/// A uniform number in (0, 1]: safe to take the logarithm of.
pub(crate) fn unit_open0(rng: &mut ChaCha8Rng) -> f64 {
    1.0 - rand::Rng::random::<f64>(rng)
}

/// `prefix` followed by the decimal digits of `n`, allocated once at its exact size.
pub(crate) fn numbered(prefix: &str, n: u64) -> String {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(n);
    let mut s = String::with_capacity(prefix.len() + digits.len());
    s.push_str(prefix);
    s.push_str(digits);
    s
}

/// The key of arrival number `i` under the `key`/`keys` convention (see the module docs).
pub(crate) fn key_name(key: &str, keys: u64, i: u64) -> String {
    if keys <= 1 {
        key.to_owned()
    } else {
        numbered(key, i % keys)
    }
}

/// The crate's error for a parameter that cannot take its value.
pub(crate) fn invalid(context: &str, field: &str, reason: impl Into<String>) -> Error {
    Error::Invalid { context: context.to_owned(), field: field.to_owned(), reason: reason.into() }
}

/// A rate in requests per second: finite, positive, at most [`MAX_RATE`].
pub(crate) fn check_rate(context: &str, field: &str, rate: f64) -> Result<()> {
    if !rate.is_finite() || rate <= 0.0 {
        return Err(invalid(context, field, format!("must be a positive number of requests per second, not {rate}")));
    }
    if rate > MAX_RATE {
        return Err(invalid(context, field, format!("{rate} is above the maximum {MAX_RATE} per second")));
    }
    Ok(())
}

/// A duration or period in milliseconds: positive, at most [`MAX_SPAN_MS`].
pub(crate) fn check_span_ms(context: &str, field: &str, ms: u64) -> Result<()> {
    if ms == 0 {
        return Err(invalid(context, field, "must be positive"));
    }
    check_span_max(context, field, ms)
}

/// At most [`MAX_SPAN_MS`] (zero allowed).
pub(crate) fn check_span_max(context: &str, field: &str, ms: u64) -> Result<()> {
    if ms > MAX_SPAN_MS {
        return Err(invalid(
            context,
            field,
            format!("{ms} ms is longer than the maximum {MAX_SPAN_MS} ms (ten years)"),
        ));
    }
    Ok(())
}

/// A spacing or offset in microseconds: magnitude at most [`MAX_SPAN_MS`] in µs.
pub(crate) fn check_span_us(context: &str, field: &str, us: i64) -> Result<()> {
    if us.unsigned_abs() > MAX_SPAN_MS * 1000 {
        return Err(invalid(context, field, format!("{us} µs is beyond the maximum of ten years")));
    }
    Ok(())
}

/// The key convention: a non-empty key and 1..=[`MAX_KEYS`] keys.
pub(crate) fn check_keys(context: &str, key: &str, keys: u64) -> Result<()> {
    if key.is_empty() {
        return Err(invalid(context, "key", "must not be empty"));
    }
    if keys == 0 {
        return Err(invalid(context, "keys", "must be at least 1"));
    }
    if keys > MAX_KEYS {
        return Err(invalid(context, "keys", format!("{keys} is above the maximum {MAX_KEYS}")));
    }
    Ok(())
}

/// An (expected) number of arrivals: at most [`MAX_ARRIVALS`].
pub(crate) fn check_count(context: &str, field: &str, n: f64) -> Result<()> {
    if n.is_nan() || n > MAX_ARRIVALS as f64 {
        return Err(invalid(
            context,
            field,
            format!("gives about {n:.0} arrivals, more than the maximum {MAX_ARRIVALS}"),
        ));
    }
    Ok(())
}

/// Serde defaults shared by the generators.
pub(crate) mod defaults {
    pub fn key() -> String {
        "user".to_owned()
    }
    pub fn one() -> u64 {
        1
    }
}

/// The arrival times (µs after the start) of a constant rate over `[0, duration_us)`: slot `i` starts at
/// `floor(i * 1e6 / rate)`, computed from `i` each time so that no rounding error accumulates.
pub(crate) fn constant_rate_offsets(rate: f64, duration_us: i64) -> impl Iterator<Item = (u64, i64)> {
    let gap = 1e6 / rate;
    (0u64..).map(move |i| (i, (i as f64 * gap).floor() as i64)).take_while(move |&(_, t)| t < duration_us)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(at: i64, key: &str) -> Arrival {
        Arrival { at: Micros(at), key: key.to_owned(), cost: 1, phase: String::new(), op: crate::traffic::Op::Request }
    }

    #[test]
    fn numbered_formats_digits() {
        assert_eq!(numbered("u", 0), "u0");
        assert_eq!(numbered("u", 123), "u123");
        assert_eq!(numbered("", u64::MAX), u64::MAX.to_string());
        assert_eq!(numbered("user", 10).capacity(), 6);
    }

    #[test]
    fn merge_is_sorted_and_stable() {
        let s0 = vec![a(1, "a0"), a(5, "a1"), a(5, "a2"), a(9, "a3")];
        let s1 = vec![a(0, "b0"), a(5, "b1"), a(10, "b2")];
        let s2 = vec![];
        let s3 = vec![a(7, "c1"), a(5, "c0")]; // unsorted: sorted first
        let m = merge(vec![s0, s1, s2, s3]);
        let keys: Vec<_> = m.iter().map(|a| a.key.as_str()).collect();
        assert_eq!(keys, ["b0", "a0", "a1", "a2", "b1", "c0", "c1", "a3", "b2"]);
        assert!(merge(vec![]).is_empty());
    }

    #[test]
    fn part_seeds_differ() {
        assert_ne!(part_seed(1, 0), part_seed(1, 1));
        assert_ne!(part_seed(1, 0), part_seed(2, 0));
        assert_ne!(part_seed(1, 0), 1);
    }

    #[test]
    fn toml_selects_the_generator() {
        let spec: TrafficSpec = toml::from_str("kind = \"poisson\"\nrate = 200.0\nduration_ms = 10000\n").unwrap();
        assert_eq!(spec.kind(), "poisson");
        let TrafficSpec::Poisson(p) = &spec else { panic!("{spec:?}") };
        assert_eq!(p.rate, 200.0);
        assert_eq!(p.duration_ms, 10_000);
        assert_eq!(p.key, "user");
        assert_eq!(p.cost, 1);
        spec.validate().unwrap();
        let n = spec.arrivals(Micros(0), 1).unwrap().len();
        assert!((1800..2200).contains(&n), "{n}");
    }

    #[test]
    fn toml_rejects_unknown_fields_and_kinds() {
        let e = toml::from_str::<TrafficSpec>("kind = \"poisson\"\nrat = 200.0\nduration_ms = 10\n").unwrap_err();
        assert!(e.to_string().contains("rat"), "{e}");
        let e = toml::from_str::<TrafficSpec>("kind = \"possion\"\n").unwrap_err();
        assert!(e.to_string().contains("possion"), "{e}");
    }

    #[test]
    fn toml_every_kind() {
        let text = r#"
            kind = "mix"
            [[parts]]
            kind = "uniform"
            rate = 10.0
            duration_ms = 1000
            [[parts]]
            kind = "boundary_burst"
            window_ms = 1000
            [[parts.bursts]]
            count = 3
            spacing_us = 500
            offset_us = -50000
            anchor = "last"
            phase = "end of window"
            [[parts]]
            kind = "idle_then_burst"
            idle_ms = 100
            burst = 5
            [[parts]]
            kind = "periodic_bursts"
            count = 2
            period_ms = 100
            duration_ms = 1000
            [[parts]]
            kind = "zipf_users"
            users = 100
            requests = 50
            duration_ms = 1000
            [[parts]]
            kind = "trace"
            path = "t.csv"
            ties = { jitter = 7 }
        "#;
        let mut spec: TrafficSpec = toml::from_str(text).unwrap();
        let TrafficSpec::Mix(m) = &spec else { panic!() };
        let kinds: Vec<_> = m.parts.iter().map(TrafficSpec::kind).collect();
        assert_eq!(kinds, ["uniform", "boundary_burst", "idle_then_burst", "periodic_bursts", "zipf_users", "trace"]);
        spec.resolve_paths(Path::new("/scen"));
        let TrafficSpec::Mix(m) = &spec else { panic!() };
        let TrafficSpec::Trace(t) = &m.parts[5] else { panic!() };
        assert_eq!(t.path, Path::new("/scen/t.csv"));
        assert_eq!(t.ties, TieRule::Jitter(7));
        spec.validate().unwrap();
        // The trace file does not exist: reading reports it, with its path.
        let e = spec.arrivals(Micros(0), 1).unwrap_err();
        assert!(e.to_string().contains("/scen/t.csv"), "{e}");
    }

    #[test]
    fn mix_merges_parts_deterministically() {
        let text = r#"
            kind = "mix"
            [[parts]]
            kind = "poisson"
            rate = 50.0
            duration_ms = 2000
            [[parts]]
            kind = "poisson"
            rate = 50.0
            duration_ms = 2000
            key = "other"
        "#;
        let spec: TrafficSpec = toml::from_str(text).unwrap();
        let x = spec.arrivals(Micros(1_000_000), 3).unwrap();
        assert_eq!(x, spec.arrivals(Micros(1_000_000), 3).unwrap());
        assert_ne!(x, spec.arrivals(Micros(1_000_000), 4).unwrap());
        assert!(x.is_sorted_by_key(|a| a.at));
        let users = x.iter().filter(|a| a.key == "user").count();
        let others = x.iter().filter(|a| a.key == "other").count();
        assert_eq!(users + others, x.len());
        assert!(users > 50 && others > 50);
        // The two parts got different seeds, so their times differ.
        let ut: Vec<_> = x.iter().filter(|a| a.key == "user").map(|a| a.at).take(5).collect();
        let ot: Vec<_> = x.iter().filter(|a| a.key == "other").map(|a| a.at).take(5).collect();
        assert_ne!(ut, ot);
        let empty = TrafficSpec::Mix(Mix { parts: vec![] });
        assert!(matches!(empty.validate(), Err(Error::Invalid { field, .. }) if field == "parts"));
    }

    /// A start at the edge of time (a scenario may say anything) saturates rather than overflowing.
    #[test]
    fn extreme_starts_do_not_panic() {
        let specs = [
            TrafficSpec::Uniform(Uniform { jitter: 0.5, ..Uniform::new(100.0, 1000) }),
            TrafficSpec::Poisson(Poisson::new(100.0, 1000)),
            TrafficSpec::BoundaryBurst(BoundaryBurst::classic(1000)),
            TrafficSpec::IdleThenBurst(IdleThenBurst {
                warmup_rate: 10.0,
                warmup_ms: 1000,
                spacing_us: 10,
                ..IdleThenBurst::new(100, 10)
            }),
            TrafficSpec::PeriodicBursts(PeriodicBursts { spacing_us: 10, ..PeriodicBursts::new(5, 100, 1000) }),
            TrafficSpec::ZipfUsers(ZipfUsers::new(10, 1.0, 100, 1000)),
        ];
        for spec in &specs {
            for start in [i64::MAX - 5, i64::MIN, 0] {
                let v = spec.arrivals(Micros(start), 1).unwrap();
                assert!(!v.is_empty() && v.is_sorted_by_key(|a| a.at), "{}", spec.kind());
            }
        }
    }

    #[test]
    fn constant_rate_has_no_drift() {
        let v: Vec<_> = constant_rate_offsets(3.0, 1_000_000).collect();
        assert_eq!(v, [(0, 0), (1, 333_333), (2, 666_666)]);
        assert_eq!(constant_rate_offsets(1e6, 1_000_000).count(), 1_000_000);
        assert_eq!(constant_rate_offsets(0.5, 1_000_000).count(), 1);
    }
}
