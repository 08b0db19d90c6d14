//! What every check works with: the limiter, the options and the patterns, the results so far,
//! and the helpers to name a request, play one, and save the traffic behind a failure.
use std::path::Path;

use super::report::{CheckOptions, CheckResult, DecidedAt, NotWritten, Status};
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

/// What an explored failure from a caller off the server's clock says instead of a replay.
pub(super) const NO_SKEWED_REPLAY: &str =
    "(no replay written: a trace cannot yet say that a caller's clock is off the server's, and replayed on one clock the case would show something else)";

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

    /// The spec's script file and line behind a traced run ([`Replay::step_traced`]): the script
    /// whose SHA it ran, or the function library that defines the function it called.
    pub(super) fn decided_at(&self, run: Option<(String, u32)>) -> Option<DecidedAt> {
        let (name, line) = run?;
        let spec = self.limiter.spec();
        // A function is found through the call that names it, which holds its library.
        let library = || match &spec.program {
            crate::spec::Program::Declarative(d) => {
                d.calls.iter().chain(d.ops.iter().flatten()).find_map(|c| match &c.target {
                    crate::spec::Target::Function { name: f, library } if f.eq_ignore_ascii_case(&name) => {
                        spec.libraries.get(*library)
                    }
                    _ => None,
                })
            }
            crate::spec::Program::Adapter { .. } => None,
        };
        let file = spec.scripts.iter().find(|s| s.script.sha == name).or_else(library)?;
        let text = file.script.body.lines().nth(line.checked_sub(1)? as usize)?.trim().to_string();
        Some(DecidedAt { file: file.path.display().to_string(), line, text })
    }

    /// The line behind the reply to the last of `arrivals`, played on a fresh world (each at its
    /// own time, as the patterns are).
    pub(super) fn decided_by_replay(&self, arrivals: &[crate::traffic::Arrival]) -> Option<DecidedAt> {
        let (last, before) = arrivals.split_last()?;
        let mut r = Replay::new(self.limiter);
        for a in before {
            r.step(a, a.at.as_millis().0)?;
        }
        self.decided_at(r.step_traced(last, last.at.as_millis().0)?.1)
    }

    /// [`Ctx::save`] of an explored case's traffic, unless a caller's clock in it was off the
    /// server's (`skewed`): a trace has no column for that, and replayed with every request at its
    /// caller's time the case would show something else. Then nothing is written, and the note to
    /// add to the evidence says why.
    pub(super) fn save_explored(
        &self,
        check: &str,
        arrivals: &[crate::traffic::Arrival],
        skewed: bool,
    ) -> (Option<String>, Option<String>) {
        if skewed {
            return (None, Some(NO_SKEWED_REPLAY.to_string()));
        }
        (self.save("explore", check, arrivals), None)
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
