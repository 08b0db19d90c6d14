//! Clock skew: application servers pass their own `now_ms`, and their clocks disagree. Each
//! production script runs the same traffic with the callers' skewed clocks in ARGV, and again as a
//! variant that reads Redis's `TIME` instead (`scripts/variants/time_prelude.lua` prepended), and
//! both are judged on the true time.
//!
//! # The model
//! The `[traffic]` spec is the subject's whole traffic; arrival `j` (in time order) goes to server
//! `j mod servers`. With a skew of `s` ms, server `i`'s clock is off by
//! `(2 * s * i) / (servers - 1) - s` ms: evenly spread over `[-s, +s]`, the first server behind,
//! the last ahead (one server: no offset). The emulator's clock is the true time, so key expiry and
//! `TIME` follow it.
//!
//! # What is measured (on the true time)
//! Overshoot: the most units admitted in any interval of one window of true time, over the limit.
//! False allows and false rejections: calls decided differently by an exact sliding log run on the
//! true times. Errors: error replies (none are expected: every script handles a `now_ms` older
//! than its state).
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::report::table::Table;
use crate::report::{to_json, Format};
use limitlab_emulator::clock::{Millis, DEFAULT_START};
use limitlab_emulator::{Error, Result};
use limitlab_engine::backend::emulated::EmulatedBackend;
use limitlab_engine::limiter::{subject_key, Flavor, Limiter, Params, Variant};
use limitlab_engine::metrics::{max_in_any_window, ExactLog};
use limitlab_engine::spec::SharedSpec;
use limitlab_engine::traffic::TrafficSpec;

/// Prepended to a script, makes it use Redis's clock (`TIME`) instead of ARGV's `now_ms`.
pub const TIME_PRELUDE: &str = include_str!("../../scripts/variants/time_prelude.lua");
/// The embedded `simulations/skew.toml`.
pub const SKEW_TOML: &str = include_str!("../../simulations/skew.toml");

/// The most servers, and the largest skew (one day).
pub const MAX_SERVERS: u32 = 1000;
pub const MAX_SKEW_MS: u64 = 86_400_000;

/// `script` made to read `TIME`: the prelude, then the script.
pub fn time_variant(script: &str) -> String {
    format!("{TIME_PRELUDE}{script}")
}

/// A skew experiment, as written in its TOML file.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SkewSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub limit: u64,
    pub window_ms: u64,
    /// token_bucket and gcra capacity (default: the limit).
    #[serde(default)]
    pub burst: Option<u64>,
    #[serde(default)]
    pub seed: u64,
    pub servers: u32,
    /// The skews to try, in ms (see the module docs for how they spread over the servers).
    pub skews_ms: Vec<u64>,
    /// Script names; default: the five production scripts.
    #[serde(default)]
    pub algorithms: Vec<String>,
    /// The subject's whole traffic, dealt round-robin to the servers.
    pub traffic: TrafficSpec,
}

impl SkewSpec {
    /// Reads and validates a skew file; a relative trace path is taken from the file's directory.
    pub fn from_file(path: &Path) -> Result<SkewSpec> {
        let text = limitlab_engine::files::read_text(path)?;
        let mut s = SkewSpec::from_toml(&text, path)?;
        if let Some(dir) = path.parent() {
            s.traffic.resolve_paths(dir);
        }
        Ok(s)
    }

    /// Parses and validates skew text; `origin` names it in messages.
    pub fn from_toml(text: &str, origin: &Path) -> Result<SkewSpec> {
        let spec: SkewSpec = limitlab_engine::toml_input::from_toml(text, origin)?;
        let invalid = |field: &str, reason: String| Error::Invalid {
            context: origin.display().to_string(),
            field: field.into(),
            reason,
        };
        if spec.name.trim().is_empty() {
            return Err(invalid("name", "must not be empty".into()));
        }
        if spec.servers == 0 || spec.servers > MAX_SERVERS {
            return Err(invalid("servers", format!("must be from 1 to {MAX_SERVERS}")));
        }
        if spec.skews_ms.is_empty() || spec.skews_ms.iter().any(|&s| s > MAX_SKEW_MS) {
            return Err(invalid("skews_ms", format!("must list skews from 0 to {MAX_SKEW_MS} ms")));
        }
        for v in spec.variants()? {
            spec.limiter(&v)?;
        }
        spec.traffic.validate().map_err(|e| match e {
            Error::Invalid { context, field, reason } => {
                Error::Invalid { context: format!("{}: [traffic] {context}", origin.display()), field, reason }
            }
            other => other,
        })?;
        Ok(spec)
    }

    /// The scripts to run, as specs: `algorithms` holds built-in names or spec files.
    pub fn variants(&self) -> Result<Vec<SharedSpec>> {
        if self.algorithms.is_empty() {
            return Ok(Variant::ALL
                .into_iter()
                .filter(|v| v.flavor() == Flavor::Ours)
                .map(limitlab_engine::spec::builtin::spec)
                .collect());
        }
        self.algorithms
            .iter()
            .map(|n| {
                limitlab_engine::spec::resolve(n).map_err(|e| Error::Invalid {
                    context: self.name.clone(),
                    field: "algorithms".into(),
                    reason: e.to_string(),
                })
            })
            .collect()
    }

    /// The limiter of `spec` (the burst only for the scripts that take one).
    pub fn limiter(&self, spec: &SharedSpec) -> Result<Limiter> {
        let mut p = Params::new(self.limit, self.window_ms);
        if spec.uses_burst() {
            p.burst = self.burst;
        }
        Limiter::from_spec(std::sync::Arc::clone(spec), p)
    }
}

/// The embedded skew experiment.
pub fn builtin() -> Result<SkewSpec> {
    SkewSpec::from_toml(SKEW_TOML, &PathBuf::from("simulations/skew.toml"))
}

/// Server `i`'s offset from the true time, for a skew of `skew` ms over `servers` servers.
pub fn offset(i: u32, servers: u32, skew: u64) -> i64 {
    if servers <= 1 {
        return 0;
    }
    (2 * skew as i64 * i as i64) / (servers as i64 - 1) - skew as i64
}

/// One run's figures, judged on the true time.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SkewFigures {
    pub admitted: u64,
    pub max_in_window: u64,
    pub overshoot: f64,
    pub false_allows: u64,
    pub false_rejections: u64,
    pub errors: u64,
}

/// One script at one skew, with the callers' clocks and with `TIME`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SkewRow {
    pub algorithm: String,
    pub skew_ms: u64,
    pub callers_clocks: SkewFigures,
    /// The same with the script reading Redis's TIME (limitlab's own scripts only).
    pub redis_time: Option<SkewFigures>,
}

/// Everything `limitlab skew` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SkewReport {
    pub name: String,
    pub description: String,
    pub limit: u64,
    pub window_ms: u64,
    pub servers: u32,
    pub seed: u64,
    pub requests: u64,
    pub rows: Vec<SkewRow>,
}

/// Runs every script at every skew, both ways.
pub fn run(spec: &SkewSpec, seed: u64) -> Result<SkewReport> {
    let arrivals = spec.traffic.arrivals(Millis(DEFAULT_START.0).as_micros(), seed)?;
    limitlab_engine::traffic::requests_only(&arrivals, "skew")?;
    let mut rows = Vec::new();
    for v in spec.variants()? {
        let limiter = spec.limiter(&v)?;
        // The TIME prelude replaces ARGV[3], which is `now_ms` in limitlab's own scripts only: a
        // user's script that wants TIME reads it itself, so its column stays empty.
        let time_body = limiter.variant().map(|_| time_variant(limiter.script()));
        for &skew in &spec.skews_ms {
            let callers_clocks = simulate(&limiter, limiter.script(), &arrivals, spec.servers, skew)?;
            let redis_time = match &time_body {
                Some(b) => Some(simulate(&limiter, b, &arrivals, spec.servers, skew)?),
                None => None,
            };
            rows.push(SkewRow { algorithm: v.name.clone(), skew_ms: skew, callers_clocks, redis_time });
        }
    }
    Ok(SkewReport {
        name: spec.name.clone(),
        description: spec.description.clone(),
        limit: spec.limit,
        window_ms: spec.window_ms,
        servers: spec.servers,
        seed,
        requests: arrivals.len() as u64,
        rows,
    })
}

/// One script body over the arrivals, each caller passing its own skewed clock.
fn simulate(
    limiter: &Limiter,
    body: &str,
    arrivals: &[limitlab_engine::traffic::Arrival],
    servers: u32,
    skew: u64,
) -> Result<SkewFigures> {
    let mut backend = EmulatedBackend::default();
    let clock = backend.emu.clock();
    let runner = if body == limiter.script() { limiter.clone() } else { limiter.with_script_body(body) };
    let mut session = runner.session();
    let p = limiter.params();
    let mut subjects: Vec<String> = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    let mut admitted: Vec<Vec<(i64, u64)>> = Vec::new();
    let mut exact = ExactLog::new(p);
    let mut f = SkewFigures::default();
    let offsets: Vec<i64> = (0..servers).map(|i| offset(i, servers, skew)).collect();
    for (j, a) in arrivals.iter().enumerate() {
        let s = match subjects.iter().position(|k| *k == a.key) {
            Some(s) => s,
            None => {
                subjects.push(a.key.clone());
                keys.push(subject_key(&a.key));
                admitted.push(Vec::new());
                subjects.len() - 1
            }
        };
        let true_ms = a.at.as_millis().0;
        let now = (true_ms + offsets[j % servers as usize]).max(0);
        limiter.check_call(now, a.cost)?;
        clock.set_micros(a.at);
        let allowed = match runner.call(&mut backend, &mut session, &subjects[s], now, a.cost) {
            Ok(d) => d.allowed,
            Err(Error::Connection(e)) => return Err(Error::Connection(e)),
            Err(_) => {
                f.errors += 1;
                false
            }
        };
        let units = if limiter.takes_cost() { a.cost } else { 1 };
        if allowed {
            f.admitted += units;
            admitted[s].push((true_ms, units));
        }
        match (allowed, exact.decide(s as u32, true_ms, units)) {
            (true, false) => f.false_allows += 1,
            (false, true) => f.false_rejections += 1,
            _ => {}
        }
    }
    for times in &mut admitted {
        f.max_in_window = f.max_in_window.max(max_in_any_window(times, p.window_ms as i64).0);
    }
    f.overshoot = f.max_in_window as f64 / p.limit as f64;
    Ok(f)
}

impl SkewReport {
    pub fn table(&self) -> Table {
        let mut t = Table::new(
            format!(
                "{}: limit {} per {} ms, {} servers, {} requests ({})",
                self.name, self.limit, self.window_ms, self.servers, self.requests, self.description
            ),
            &[
                "algorithm",
                "skew (±ms)",
                "callers' now: admitted",
                "overshoot",
                "false allows",
                "false rejections",
                "TIME: admitted",
                "overshoot",
                "false allows",
                "false rejections",
            ],
        );
        for r in &self.rows {
            let c = &r.callers_clocks;
            let dash = || "-".to_string();
            let s = r.redis_time.as_ref();
            t.row(vec![
                r.algorithm.clone(),
                r.skew_ms.to_string(),
                c.admitted.to_string(),
                format!("{:.2}", c.overshoot),
                c.false_allows.to_string(),
                c.false_rejections.to_string(),
                s.map_or_else(dash, |s| s.admitted.to_string()),
                s.map_or_else(dash, |s| format!("{:.2}", s.overshoot)),
                s.map_or_else(dash, |s| s.false_allows.to_string()),
                s.map_or_else(dash, |s| s.false_rejections.to_string()),
            ]);
        }
        t.note(format!(
            "Server i of {} is off by (2 * skew * i) / ({} - 1) - skew ms. Overshoot: the most admitted in any {} ms of \
             true time, over the limit. False allows/rejections: against an exact sliding log on the true times. \
             TIME: the same script with scripts/variants/time_prelude.lua prepended (it reads Redis's clock). Seed {}.",
            self.servers, self.servers, self.window_ms, self.seed
        ));
        let errors: u64 =
            self.rows.iter().map(|r| r.callers_clocks.errors + r.redis_time.as_ref().map_or(0, |s| s.errors)).sum();
        t.note(format!("Error replies: {errors}."));
        t
    }

    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Text => self.table().to_text(),
            Format::Markdown => self.table().to_markdown(),
            Format::Json => to_json(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(skews: &str) -> SkewSpec {
        let text = format!(
            "name = \"t\"\nlimit = 10\nwindow_ms = 1000\nservers = 3\nskews_ms = {skews}\n\
             [traffic]\nkind = \"poisson\"\nrate = 40.0\nduration_ms = 4000\n"
        );
        SkewSpec::from_toml(&text, Path::new("t.toml")).unwrap()
    }

    #[test]
    fn offsets_spread_evenly() {
        assert_eq!((0..3).map(|i| offset(i, 3, 100)).collect::<Vec<_>>(), [-100, 0, 100]);
        assert_eq!((0..4).map(|i| offset(i, 4, 90)).collect::<Vec<_>>(), [-90, -30, 30, 90]);
        assert_eq!(offset(0, 1, 500), 0);
    }

    #[test]
    fn without_skew_both_clocks_agree_and_time_ignores_skew() {
        let r = run(&spec("[0, 300]"), 5).unwrap();
        assert_eq!(r.rows.len(), 10);
        for pair in r.rows.chunks(2) {
            let (zero, skewed) = (&pair[0], &pair[1]);
            assert_eq!(Some(&zero.callers_clocks), zero.redis_time.as_ref(), "{}", zero.algorithm);
            assert_eq!(skewed.redis_time, zero.redis_time, "{}: TIME does not see the skew", zero.algorithm);
            assert_eq!(skewed.callers_clocks.errors, 0);
        }
        // The sliding log is exact on one clock, and not on skewed ones.
        let log = &r.rows[4];
        assert_eq!(log.algorithm, "sliding_log");
        assert_eq!((log.callers_clocks.false_allows, log.callers_clocks.false_rejections), (0, 0));
        assert_eq!(log.callers_clocks.max_in_window, 10);
        assert_eq!(r, run(&spec("[0, 300]"), 5).unwrap(), "deterministic");
    }

    #[test]
    fn the_time_prelude_reads_the_virtual_clock() {
        use limitlab_engine::backend::Backend;
        let l = Limiter::new(Variant::FIXED_WINDOW, Params::new(1, 1000)).unwrap();
        let mut b = EmulatedBackend::default();
        b.set_time_ms(5_000_700);
        let t = l.with_script_body(time_variant(l.script()));
        // The caller claims 0; the script counts in window 5000 and resets 300 ms later.
        let d = t.call(&mut b, &mut t.session(), "t", 0, 1).unwrap();
        assert!(d.allowed);
        assert_eq!(d.reset_after_ms, 300);
    }
}
