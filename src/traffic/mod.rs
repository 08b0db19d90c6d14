//! Seeded traffic generators, one file each, and trace readers. Every generator yields [`Arrival`]s in
//! time order; the same parameters and seed always give the same arrivals.
use crate::clock::Micros;

/// One request reaching the limiter: when (virtual time, µs since the epoch), whose key, what cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrival {
    pub at: Micros,
    /// The subject (user, IP, API key); the limiter turns it into a hash-tagged Redis key.
    pub key: String,
    pub cost: u64,
    /// A label for per-phase counts (e.g. `end-of-window`, `start-of-next`); empty when unused.
    pub phase: String,
}
