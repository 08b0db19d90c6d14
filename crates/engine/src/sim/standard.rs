//! The standard scenarios (the files in `simulations/`, embedded so the binary needs no checkout) and
//! `compare`'s data: every script, seed and ours, through them, with the seed article's figures kept
//! beside ours.
use std::path::Path;

use serde::Serialize;

use super::feed::Feed;
use super::stream::run_streaming;
use super::{run, Progress, Scenario, Trace};
use crate::backend::emulated::EmulatedBackend;
use crate::backend::Backend;
use crate::limiter::{Algorithm, Variant};
use crate::metrics::{self, memory_usage, Metrics};
use crate::spec::builtin::spec as builtin_spec;
use crate::spec::SharedSpec;
use crate::Result;

/// The boundary-burst scenario: the seed's table, reproduced with the seed's own scripts.
pub const BOUNDARY_BURST: &str = include_str!("../../simulations/boundary_burst.toml");
/// A warm-up, a quiet spell, then a burst.
pub const IDLE_THEN_BURST: &str = include_str!("../../simulations/idle_then_burst.toml");
/// Many users at a steady rate just above the limit.
pub const UNIFORM: &str = include_str!("../../simulations/uniform.toml");
/// One user at the seed's memory setting: 1,000 per minute, 1,000 requests inside the window.
pub const MEMORY_PER_USER: &str = include_str!("../../simulations/memory_per_user.toml");

/// Every embedded scenario as (file name, text), in the order `compare` reports them.
pub const STANDARD: [(&str, &str); 4] = [
    ("simulations/boundary_burst.toml", BOUNDARY_BURST),
    ("simulations/idle_then_burst.toml", IDLE_THEN_BURST),
    ("simulations/uniform.toml", UNIFORM),
    ("simulations/memory_per_user.toml", MEMORY_PER_USER),
];

/// Parses an embedded scenario (they are tested, so this only fails if the tree is broken).
pub fn builtin(file: &str) -> Result<Scenario> {
    let text = STANDARD.iter().find(|(f, _)| *f == file).map_or("", |(_, t)| t);
    Scenario::from_toml(text, Path::new(file))
}

/// The seed article's boundary table, by algorithm: (end of window, start of next, total).
pub fn seed_boundary(a: Algorithm) -> Option<(u64, u64, u64)> {
    match a {
        Algorithm::FixedWindow => Some((100, 100, 200)),
        Algorithm::SlidingLog => Some((100, 0, 100)),
        Algorithm::SlidingWindow => Some((100, 2, 102)),
        Algorithm::TokenBucket => Some((101, 14, 115)),
        Algorithm::Gcra => None,
    }
}

/// The seed article's memory per user in bytes (limit 1,000 per minute).
pub fn seed_memory(a: Algorithm) -> Option<u64> {
    match a {
        Algorithm::FixedWindow => Some(56),
        Algorithm::TokenBucket => Some(72),
        Algorithm::SlidingWindow => Some(56),
        Algorithm::SlidingLog => Some(92_184),
        Algorithm::Gcra => None,
    }
}

/// The seed article's throughput in calls per second (a real Redis over the network).
pub fn seed_throughput(a: Algorithm) -> Option<u64> {
    match a {
        Algorithm::FixedWindow => Some(16_432),
        Algorithm::TokenBucket => Some(14_699),
        Algorithm::SlidingWindow => Some(14_124),
        Algorithm::SlidingLog => Some(11_539),
        Algorithm::Gcra => None,
    }
}

/// The seed's name of an algorithm, as its tables print it.
pub fn seed_name(a: Algorithm) -> &'static str {
    match a {
        Algorithm::FixedWindow => "Fixed window",
        Algorithm::SlidingLog => "Sliding log",
        Algorithm::SlidingWindow => "Sliding window",
        Algorithm::TokenBucket => "Token bucket",
        Algorithm::Gcra => "GCRA",
    }
}

/// One script in the boundary-burst scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BoundaryRow {
    pub algorithm: String,
    pub end_of_window: u64,
    pub start_of_next: u64,
    pub total: u64,
    /// The most admitted in any one window: the seed's "within ~0.3 s" figure is this when both
    /// bursts fit in one window.
    pub max_in_window: u64,
    /// The seed article's (end, start, total) for this algorithm, when it has one.
    pub seed: Option<(u64, u64, u64)>,
}

/// One script in one scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AccuracyRow {
    pub algorithm: String,
    pub metrics: Metrics,
}

/// One scenario's accuracy figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScenarioAccuracy {
    pub scenario: String,
    pub description: String,
    pub limit: u64,
    pub window_ms: u64,
    pub seed: u64,
    pub rows: Vec<AccuracyRow>,
}

/// One script's memory at the seed's setting.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryRow {
    pub algorithm: String,
    pub bytes_per_user: u64,
    pub keys_per_user: f64,
    /// How the bytes were counted: `MEMORY USAGE` when the backend has it, else `key sizes`.
    pub method: String,
    pub seed_bytes: Option<u64>,
}

/// One script's speed on the emulator, over every standard run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpeedRow {
    pub algorithm: String,
    pub decisions: u64,
    pub seconds: f64,
    pub per_sec: f64,
    pub seed_per_sec: Option<u64>,
}

/// Everything `limitlab compare` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub backend: String,
    /// The seed every scenario ran with when `--seed` overrode the files' own.
    pub seed_override: Option<u64>,
    pub boundary: Vec<BoundaryRow>,
    pub boundary_limit: u64,
    pub boundary_window_ms: u64,
    pub accuracy: Vec<ScenarioAccuracy>,
    pub memory: Vec<MemoryRow>,
    pub memory_limit: u64,
    pub memory_window_ms: u64,
    pub memory_requests: u64,
    /// Wall-clock figures: absent when timing was turned off for byte-identical output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed: Option<Vec<SpeedRow>>,
}

/// Options of [`compare`].
#[derive(Clone, Debug, Default)]
pub struct CompareOptions {
    /// The scripts to compare (empty: the nine shipped ones).
    pub scripts: Vec<SharedSpec>,
    pub seed: Option<u64>,
    /// Measure decisions per second (not deterministic).
    pub timing: bool,
    pub progress: Progress,
}

/// Runs `spec` (a shipped script's, `&builtin_spec(v)`, or a user's) over the scenario's arrivals
/// on a fresh emulator.
pub fn run_on_emulator(
    s: &Scenario,
    spec: &SharedSpec,
    arrivals: &[crate::traffic::Arrival],
    progress: Progress,
) -> Result<(Trace, Metrics, EmulatedBackend)> {
    let limiter = s.limiter(spec)?;
    let mut backend = EmulatedBackend::default();
    backend.set_time_ms(s.start_ms);
    let trace = run(&limiter, &mut backend, arrivals, progress)?;
    let m = metrics::measure(&trace, &limiter)?;
    Ok((trace, m, backend))
}

/// Runs every script through the standard scenarios and gathers `compare`'s tables, on every core
/// available (see [`compare_jobs`]).
pub fn compare(opts: CompareOptions) -> Result<Comparison> {
    compare_jobs(opts, 0)
}

/// One (scenario, script) run of [`compare_jobs`].
struct Done {
    decisions: u64,
    secs: f64,
    metrics: Metrics,
    /// For the memory scenario: the keys' memory and the number of users.
    memory: Option<(crate::metrics::MemoryUsage, u64)>,
}

/// [`compare`] on up to `jobs` threads (0: the cores available). Each (scenario, script) pair is
/// an independent run on its own emulator, built inside its thread; the tables are assembled in
/// the same order whatever `jobs` is, so the output is byte-identical (timing aside).
pub fn compare_jobs(opts: CompareOptions, jobs: usize) -> Result<Comparison> {
    let mut scenarios = Vec::new();
    for (file, _) in &STANDARD {
        let s = builtin(file)?;
        let seed = opts.seed.unwrap_or(s.seed);
        let arrivals = s.arrivals(seed)?;
        scenarios.push((s, seed, arrivals));
    }
    let scripts: Vec<SharedSpec> = if opts.scripts.is_empty() {
        Variant::ALL.iter().map(|&v| builtin_spec(v)).collect()
    } else {
        opts.scripts.clone()
    };
    let n = scripts.len();
    let memory_scenario = STANDARD.len() - 1;
    // Each run streams, as `run`'s and `sweep`'s do: the same metrics, and a spec without a model
    // has its promises judged by its own script on the run's emulator (see `crate::limiter::honesty`).
    let done = super::parallel::map_indexed(scenarios.len() * n, jobs, |j| -> Result<Done> {
        let (s, _, arrivals) = &scenarios[j / n];
        let limiter = s.limiter(&scripts[j % n])?;
        let mut backend = EmulatedBackend::default();
        backend.set_time_ms(s.start_ms);
        let feed = Feed::arrivals(arrivals).judged(s.params, &[limiter.takes_cost()]);
        let run = run_streaming(&limiter, &mut backend, feed, None)?;
        let memory = if j / n == memory_scenario {
            Some((memory_usage(&mut backend)?, run.subjects.len().max(1) as u64))
        } else {
            None
        };
        Ok(Done { decisions: run.metrics.calls, secs: run.elapsed_secs, metrics: run.metrics, memory })
    });
    let done: Vec<Done> = done.into_iter().collect::<Result<_>>()?;

    let mut speed: Vec<(u64, f64)> = vec![(0, 0.0); n];
    for (j, d) in done.iter().enumerate() {
        speed[j % n].0 += d.decisions;
        speed[j % n].1 += d.secs;
    }
    let mut accuracy = Vec::new();
    let mut boundary = Vec::new();
    let (mut boundary_limit, mut boundary_window_ms) = (0, 0);
    for (si, (s, seed, _)) in scenarios[..memory_scenario].iter().enumerate() {
        let mut rows = Vec::new();
        for (vi, v) in scripts.iter().enumerate() {
            let m = done[si * n + vi].metrics.clone();
            if si == 0 {
                let phase = |i: usize| m.phases.get(i).map_or(0, |p| p.allowed_units);
                boundary.push(BoundaryRow {
                    algorithm: v.name.clone(),
                    end_of_window: phase(0),
                    start_of_next: phase(1),
                    total: m.allowed_units,
                    max_in_window: m.max_in_window,
                    seed: v.model.and_then(|v| seed_boundary(v.algorithm())),
                });
                boundary_limit = s.params.limit;
                boundary_window_ms = s.params.window_ms;
            }
            rows.push(AccuracyRow { algorithm: v.name.clone(), metrics: m });
        }
        accuracy.push(ScenarioAccuracy {
            scenario: s.name.clone(),
            description: s.description.clone(),
            limit: s.params.limit,
            window_ms: s.params.window_ms,
            seed: *seed,
            rows,
        });
    }

    let (s, _, arrivals) = &scenarios[memory_scenario];
    let mut memory = Vec::new();
    for (vi, v) in scripts.iter().enumerate() {
        let Some((usage, users)) = &done[memory_scenario * n + vi].memory else { continue };
        memory.push(MemoryRow {
            algorithm: v.name.clone(),
            bytes_per_user: usage.bytes / users,
            keys_per_user: usage.keys as f64 / *users as f64,
            method: usage.method.to_string(),
            seed_bytes: v.model.and_then(|v| seed_memory(v.algorithm())),
        });
    }

    let speed = opts.timing.then(|| {
        scripts
            .iter()
            .zip(&speed)
            .map(|(v, &(n, secs))| SpeedRow {
                algorithm: v.name.clone(),
                decisions: n,
                seconds: secs,
                per_sec: if secs > 0.0 { n as f64 / secs } else { 0.0 },
                seed_per_sec: v.model.and_then(|v| seed_throughput(v.algorithm())),
            })
            .collect()
    });
    Ok(Comparison {
        backend: "emulator".into(),
        seed_override: opts.seed,
        boundary,
        boundary_limit,
        boundary_window_ms,
        accuracy,
        memory,
        memory_limit: s.params.limit,
        memory_window_ms: s.params.window_ms,
        memory_requests: arrivals.len() as u64,
        speed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_scenario_parses() {
        for (file, _) in STANDARD {
            let s = builtin(file).unwrap();
            assert!(!s.description.is_empty(), "{file}");
            s.arrivals(s.seed).unwrap();
        }
    }
}
