//! One run's decisions as the runner records them: a [`Record`] per call, and the [`Trace`] of a
//! whole run that [`crate::metrics`] measures and the reports print.
use limitlab_emulator::clock::Micros;

use crate::limiter::{Decision, Params, Variant};

/// One decision of the script, as recorded by the runner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// The arrival's time, µs since the epoch.
    pub at: Micros,
    /// The time the script saw (ARGV now_ms): `at` in whole milliseconds, rounded down.
    pub now_ms: i64,
    /// Index into [`Trace::keys`].
    pub key: u32,
    /// Index into [`Trace::phases`].
    pub phase: u32,
    /// The units this call asked for as the script counts them: the arrival's cost for production
    /// scripts, always 1 for the seed's (which have no cost argument).
    pub cost: u64,
    pub decision: Decision,
}

/// Everything one run produced: its decisions in call order, with subjects and phases interned.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The limiter's name (its spec's).
    pub name: String,
    /// The shipped script, when it is one of limitlab's.
    pub variant: Option<Variant>,
    pub params: Params,
    /// The subjects, in order of first appearance.
    pub keys: Vec<String>,
    /// The phase labels, in order of first appearance (`""` when the traffic has none).
    pub phases: Vec<String>,
    pub records: Vec<Record>,
    /// Wall-clock seconds spent in the backend loop. Not deterministic: reports that must be
    /// byte-identical across runs leave it out.
    pub elapsed_secs: f64,
}

impl Trace {
    /// Decisions per second of wall-clock time (0 for an empty or instant run).
    pub fn decisions_per_sec(&self) -> f64 {
        if self.elapsed_secs > 0.0 {
            self.records.len() as f64 / self.elapsed_secs
        } else {
            0.0
        }
    }
}
