//! The numbers `check` judges and sizes by: the default bounds, how many probes each pattern
//! asks, and the policy the attack search runs at.
use crate::limiter::Limiter;

/// The share of what an exact sliding log admits that a limiter may refuse in the steady patterns,
/// unless its spec says otherwise.
pub const DEFAULT_MAX_FALSE_REJECTION_RATE: f64 = 0.05;
/// The overshoot bound of a spec that declares neither `family` nor `max_overshoot`: the loosest
/// bound of the standard families (a fixed window or a sliding window counter may admit twice the
/// limit in a window). A limiter that admits more than that is not limiting at its policy.
pub const DEFAULT_OVERSHOOT_BOUND: f64 = 2.0;
/// The largest limit and capacity `check` judges. Its bursts send a quarter more than the
/// capacity, and every request played is kept with its calls until the verdicts are given, so the
/// memory of a check grows with the capacity: at this cap it stays within the figures of
/// docs/reliability.md. A larger policy is refused with a clear error (exit 2) at once.
pub const MAX_CHECKED_CAPACITY: u64 = 50_000;
/// A key may outlive the traffic by this many windows.
pub const TTL_WINDOWS: i64 = 10;
/// Probes per pattern and check (the first ones of each kind, in order).
pub const PROBES: usize = 100;
/// Requests per pattern after which the TTLs of the keys they named are read.
pub const TTL_PROBES: usize = 500;
/// The most requests of cost 1 one probe sends to count what fits.
pub const PROBE_UNITS: usize = 64;
/// The most requests of a `flood@<policy>` pattern (a further policy's own danger).
pub const FLOOD_MAX: u64 = 50_000;
/// Policies up to this size (limit and capacity) get the patterns at their full length; above it,
/// each pattern keeps its shape but plays fewer windows and subjects, and its bursts are a quarter
/// over the capacity instead of two or three times it (see [`patterns`](super::run::patterns)).
pub const FULL_SIZE: u64 = 100;

/// The room left by the fill before counting it unit by unit (see `Ctx::room`).
pub const ROOM_PROBE: u64 = 8;

/// The requests the header probes of one pattern may send: a `RateLimit` promise is judged by
/// sending the whole capacity, so above [`FULL_SIZE`] that promise is no longer judged once the
/// probes have sent this many (after at least [`HEADER_PROBES_MIN`] decisions); `Retry-After`, one
/// request each, still is. Up to the full size it never binds: 50 decisions of at most
/// `1 + capacity` requests each stay under it.
pub const HEADER_PROBE_REQUESTS: usize = PROBES / 2 * (FULL_SIZE as usize + 1);
/// Decisions whose headers are judged in each pattern, whatever they cost.
pub const HEADER_PROBES_MIN: usize = 2;

/// The largest limit the attack search runs at as it is, for a spec without an exact model: every
/// one of its patterns is then played through the script on the emulator. Above it, the search runs
/// at this limit (the same window, the capacity scaled alike) and its winners are scaled up.
pub const SEARCH_FULL_SIZE: u64 = FULL_SIZE;
/// The same for a spec with an exact model, which the search asks instead of the emulator.
pub const SEARCH_FULL_SIZE_MODEL: u64 = 1000;

/// The limit the attack search runs at for `limiter`: its own up to [`SEARCH_FULL_SIZE`]
/// ([`SEARCH_FULL_SIZE_MODEL`] with an exact model), that size above it.
pub fn search_size(limiter: &Limiter) -> u64 {
    let cap = if limiter.reference().is_some() { SEARCH_FULL_SIZE_MODEL } else { SEARCH_FULL_SIZE };
    limiter.params().limit.min(cap)
}

/// The bytes of keys one call may read and still count as one call of work (see
/// [`cost_per_call`]): a counter, a hash of a few fields or a short log.
///
/// [`cost_per_call`]: super::run::cost_per_call
pub const KEY_BYTES_PER_CALL: u64 = 1024;
/// The requests per step of the calibration that measures a call's cost ([`cost_per_call`]).
///
/// [`cost_per_call`]: super::run::cost_per_call
pub const CALIBRATION: u64 = 64;
/// The work the first policy's patterns may do, in calls of cost 1 (requests times
/// [`cost_per_call`]): above it they are shortened ([`patterns_within`]). The standard patterns of a
/// script of constant cost stay within it at every policy `check` judges.
///
/// [`cost_per_call`]: super::run::cost_per_call
/// [`patterns_within`]: super::run::patterns_within
pub const WORK_BUDGET: u64 = 1_000_000;
/// The fewest requests over the capacity that a shortened burst sends (fewer when a quarter of the
/// capacity is fewer).
pub const LEAN_MARGIN: u64 = 64;
