//! What every check works with: the limiter, the options and the patterns, the results so far,
//! and the helpers to name a request, play one, and save the traffic behind a failure.
use std::path::Path;

use super::report::{CheckOptions, CheckResult, NotWritten, Status};
use super::run::{Pattern, Replay};
use crate::limiter::Limiter;
use limitlab_emulator::{Error, Result};

/// A request of `subject` at `at_ms` of `cost`, for the checks that play a few requests.
pub(super) fn arrival_at(subject: &str, at_ms: i64, cost: u64) -> crate::traffic::Arrival {
    crate::traffic::Arrival {
        at: limitlab_emulator::clock::Millis(at_ms).as_micros(),
        key: subject.into(),
        cost,
        phase: "check".into(),
        op: crate::traffic::Op::Request,
    }
}

pub(super) struct Ctx<'a> {
    pub(super) limiter: &'a Limiter,
    pub(super) opts: &'a CheckOptions,
    pub(super) patterns: &'a [Pattern],
    pub(super) checks: Vec<CheckResult>,
    /// The replay files that could not be written, with why (the report's `not_written`).
    pub(super) not_written: std::cell::RefCell<Vec<NotWritten>>,
}

/// A request for messages: `boundary_burst #12 (subject b, now_ms 1704067200950, cost 1)`.
/// The cost shown is what the spec counted: 1 for a spec that never reads `cost`.
pub(super) fn at(pat: &str, i: usize, r: &Replay<'_>) -> String {
    match r.played.get(i) {
        Some(p) => {
            let cost = if r.limiter.takes_cost() { p.arrival.cost } else { 1 };
            format!("{pat} request #{} (subject `{}`, now_ms {}, cost {cost})", i + 1, p.arrival.key, p.now_ms)
        }
        None => format!("{pat} request #{}", i + 1),
    }
}

impl Ctx<'_> {
    /// Puts an explored case that broke `c`'s promise first in its evidence; a check not yet failed
    /// by its patterns fails with `summary` and replays the case's traffic (a check already failed
    /// keeps its own summary and replay).
    pub(super) fn fail_explored(
        &self,
        c: &mut CheckResult,
        what: String,
        summary: String,
        sent: &[crate::traffic::Arrival],
    ) {
        c.evidence.insert(0, what);
        if c.status != Status::Fail {
            c.status = Status::Fail;
            c.summary = summary;
            c.replay = self.save("explore", c.name, sent);
        }
    }

    /// Writes `arrivals` as a trace and a scenario file that replays them, when an output directory
    /// is set; returns the scenario's path.
    pub(super) fn save(&self, pattern: &str, check: &str, arrivals: &[crate::traffic::Arrival]) -> Option<String> {
        let dir = self.opts.out.as_ref()?;
        let stem = format!("check_{}_{check}", self.limiter.name());
        match save_replay(self.limiter, dir, &stem, pattern, arrivals) {
            Ok(path) => Some(path),
            Err(e) => {
                let reason = match e {
                    Error::Io { source, .. } => source.to_string(),
                    other => other.to_string(),
                };
                let mut failed = self.not_written.borrow_mut();
                for ext in ["csv", "toml"] {
                    failed.push(NotWritten { path: dir.join(format!("{stem}.{ext}")), reason: reason.clone() });
                }
                None
            }
        }
    }
}

/// Writes `<stem>.csv` (the arrivals) and `<stem>.toml` (a scenario replaying them through the
/// limiter, naming a spec file by its path relative to `dir`) into `dir`; returns the scenario's
/// path.
pub fn save_replay(
    limiter: &Limiter,
    dir: &Path,
    stem: &str,
    pattern: &str,
    arrivals: &[crate::traffic::Arrival],
) -> Result<String> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io { path: dir.to_path_buf(), source })?;
    let csv = dir.join(format!("{stem}.csv"));
    let toml = dir.join(format!("{stem}.toml"));
    crate::traffic::write_csv(&csv, arrivals)?;
    let p = limiter.params();
    let mut t = format!(
        "# Written by `limitlab check`: the {pattern} traffic that shows `{stem}`.\n# Replay: limitlab run {}\nname = \"{stem}\"\ndescription = \"limitlab check, {pattern}\"\nlimit = {}\nwindow_ms = {}\n",
        toml.display(),
        p.limit,
        p.window_ms
    );
    if limiter.spec().uses_burst() && p.burst.is_some() {
        t.push_str(&format!("burst = {}\n", p.capacity()));
    }
    t.push_str(&crate::sim::replay_file::scripts_line(limiter, dir));
    if let Some(a) = arrivals.first() {
        t.push_str(&format!("start_ms = {}\n", a.at.as_millis().0));
    }
    t.push_str(&format!("\n[traffic]\nkind = \"trace\"\npath = \"{stem}.csv\"\nrebase = \"absolute\"\n"));
    crate::files::write_bytes(&toml, t)?;
    Ok(toml.display().to_string())
}
