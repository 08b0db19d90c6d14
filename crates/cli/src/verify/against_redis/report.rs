//! What the comparison found: the first differing call, each script's result with the notes the
//! report prints, and the table or JSON of a whole run.
use std::fmt::Write as _;

use serde::Serialize;

use super::reads::shimmed_time;
use crate::report::table::Table;
use crate::report::Format;
use limitlab_emulator::{Error, Result};
use limitlab_engine::limiter::Decision;
use limitlab_engine::sim::Trace;

/// The first call on which the emulator and the server decided differently.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Divergence {
    /// 1-based call number in the run.
    pub call: usize,
    pub subject: String,
    pub now_ms: i64,
    pub cost: u64,
    #[serde(serialize_with = "ser_decision")]
    pub emulator: Decision,
    #[serde(serialize_with = "ser_decision")]
    pub redis: Decision,
}

/// A decision as the script's reply: `[allowed, remaining, retry_after_ms, reset_after_ms]`.
fn ser_decision<S: serde::Serializer>(d: &Decision, s: S) -> std::result::Result<S::Ok, S::Error> {
    [i64::from(d.allowed), d.remaining, d.retry_after_ms, d.reset_after_ms].serialize(s)
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "call #{} (subject `{}`, now_ms {}, cost {}): emulator {}, redis {}",
            self.call,
            self.subject,
            self.now_ms,
            self.cost,
            show(&self.emulator),
            show(&self.redis)
        )
    }
}

fn show(d: &Decision) -> String {
    format!(
        "{{allowed {}, remaining {}, retry_after_ms {}, reset_after_ms {}}}",
        u8::from(d.allowed),
        d.remaining,
        d.retry_after_ms,
        d.reset_after_ms
    )
}

/// One script in one scenario, on the emulator and on the server.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScriptCheck {
    pub scenario: String,
    pub algorithm: String,
    pub calls: usize,
    /// How many runs on the server it took (1 unless a run diverged).
    pub attempts: u32,
    /// The divergence of the last attempt: `None` means the decisions were identical.
    pub divergence: Option<Divergence>,
    /// The divergence of the first attempt, when a later one agreed (a timing effect, see the module
    /// docs).
    pub retried_after: Option<Divergence>,
    /// Keys removed from the server after the runs.
    pub keys_removed: u64,
    /// Whether the arrivals' times never go backwards (where no decision depends on expiry).
    pub monotone: bool,
    /// Wall-clock seconds of the last run on the server (not deterministic).
    #[serde(skip)]
    pub redis_secs: f64,
    /// The clock the emulator ran on in the comparison reported (see the module docs).
    #[serde(skip_serializing_if = "ClockUsed::is_scenario")]
    pub clock: ClockUsed,
    /// What the spec reads of the server's clock, with where: `PTTL at rate_limit_redis.lua:23`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reads_clock: Vec<String>,
    /// Where the spec sets absolute expiry times ([`absolute_expiries`](super::reads::absolute_expiries)).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub absolute_expiry: Vec<String>,
    /// When the comparison on the server's clock followed one on the scenario's that differed on
    /// every attempt: that one's first difference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario_divergence: Option<Divergence>,
    /// Requests on the server's clock whose millisecond was not pinned down (the server's clock
    /// ticked during the request), replayed at each candidate.
    #[serde(skip_serializing_if = "is_zero")]
    pub uncertain: usize,
    /// Keys the script wrote outside the run's prefix (found on the emulator first); the run went
    /// ahead only with `--allow-outside-keys`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outside_keys: Vec<String>,
    /// Of [`ScriptCheck::outside_keys`]: those that existed on the server before the run, which
    /// were left as they were.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outside_left: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The clock the emulator ran on when its decisions were compared with the server's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockUsed {
    /// The scenario's virtual clock (the arrivals' times), as in the emulator's own report.
    #[default]
    Scenario,
    /// The server's clock (TIME around every request), see the module docs.
    Server,
}

impl ClockUsed {
    fn is_scenario(&self) -> bool {
        *self == ClockUsed::Scenario
    }
}

/// Every checked script of a `run` or `compare`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RedisCheck {
    pub backend: String,
    pub checks: Vec<ScriptCheck>,
    /// Show the server's calls per second (wall-clock figures; off for byte-identical output).
    #[serde(skip)]
    pub show_speed: bool,
}

impl RedisCheck {
    /// Whether every script decided identically on both.
    pub fn identical(&self) -> bool {
        self.checks.iter().all(|c| c.divergence.is_none())
    }

    /// The one-line verdict, saying on which clock the decisions agreed: `every decision identical
    /// on the scenario's clock` only when every pattern was; otherwise how many patterns agreed
    /// only on the server's clock, and why (see [`ScriptCheck::notes`]).
    pub fn headline(&self) -> String {
        if !self.identical() {
            return "DECIDED DIFFERENTLY".into();
        }
        let n = self.checks.len();
        let reads = self.checks.iter().filter(|c| c.clock == ClockUsed::Server && c.scenario_divergence.is_none()).count();
        let after = self.checks.iter().filter(|c| c.scenario_divergence.is_some()).count();
        if reads == 0 && after == 0 {
            return "every decision identical on the scenario's clock".into();
        }
        let mut parts = vec![format!("{} of {n} patterns on the scenario's clock", n - reads - after)];
        if reads > 0 {
            parts.push(format!("{reads} on the server's clock, which the spec reads"));
        }
        if after > 0 {
            parts.push(format!(
                "{after} only on the server's clock after differing on the scenario's (the clocks, not the script: see the notes)"
            ));
        }
        format!("every decision identical: {}", parts.join(", "))
    }

    /// The check as a table (text or markdown) or JSON.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Json => serde_json::to_string_pretty(self).unwrap_or_default() + "\n",
            Format::Text => self.table().to_text(),
            Format::Markdown => self.table().to_markdown(),
        }
    }

    fn table(&self) -> Table {
        let mut t = Table::new(
            format!("The same arrivals on {}: decisions against the emulator's, call for call", self.backend),
            &["Scenario", "Algorithm", "Calls", "Decisions", "Keys removed"],
        );
        t.align[1] = crate::report::table::Align::Left;
        if self.show_speed {
            t.headers.push("Calls/s on the server".into());
            t.align.push(crate::report::table::Align::Right);
        }
        for c in &self.checks {
            let verdict = match (&c.divergence, c.attempts, c.clock) {
                (None, _, ClockUsed::Server) => "identical on the server's clock".to_string(),
                (None, 1, _) => "identical".to_string(),
                (None, n, _) => format!("identical (attempt {n})"),
                (Some(d), _, ClockUsed::Server) => format!("DIFFER from call #{} (server's clock)", d.call),
                (Some(d), _, _) => format!("DIFFER from call #{}", d.call),
            };
            let mut row = vec![c.scenario.clone(), c.algorithm.clone(), c.calls.to_string(), verdict, c.keys_removed.to_string()];
            if self.show_speed {
                let rate = if c.redis_secs > 0.0 { c.calls as f64 / c.redis_secs } else { 0.0 };
                row.push(crate::report::table::thousands(rate.round() as u64));
            }
            t.row(row);
        }
        // Notes said of several scenarios of one script are said once, naming them all.
        let mut grouped: Vec<(&str, String, Vec<&str>)> = Vec::new();
        for c in &self.checks {
            for n in c.notes() {
                match grouped.iter_mut().find(|(a, body, _)| *a == c.algorithm && *body == n) {
                    Some(g) => g.2.push(&c.scenario),
                    None => grouped.push((&c.algorithm, n, vec![&c.scenario])),
                }
            }
        }
        for (algorithm, body, scenarios) in grouped {
            t.note(format!("{} / {algorithm}: {body}", scenarios.join(", ")));
        }
        for c in &self.checks {
            if let Some(d) = &c.divergence {
                let why = if c.monotone || c.clock == ClockUsed::Server {
                    ""
                } else {
                    " (the arrivals' times go backwards in this scenario, where key expiry on the server's own \
                     clock can legitimately change a decision)"
                };
                t.note(format!("{} / {}: first difference at {d}{why}", c.scenario, c.algorithm));
            } else if let Some(d) = &c.retried_after {
                t.note(format!(
                    "{} / {}: the first run differed at {d}; a later run on a clean keyspace agreed, so it was the \
                     server's wall clock expiring a short-lived key during a stall, not a different decision",
                    c.scenario, c.algorithm
                ));
            }
        }
        t.note(
            "The server is given the arrivals' times in ARGV; only key expiry follows its own clock, which no decision \
             of limitlab's own scripts depends on while the times given never go backwards (a script whose decisions \
             do is compared on the server's clock, as noted).",
        );
        t
    }

    /// `Ok` when identical, else [`Error::Mismatch`] naming the first differing call of each script.
    pub fn into_result(self) -> Result<()> {
        let bad: Vec<String> =
            self.checks.iter().filter_map(|c| c.divergence.as_ref().map(|d| format!("{} / {}: {d}", c.scenario, c.algorithm))).collect();
        if bad.is_empty() {
            Ok(())
        } else {
            Err(Error::Mismatch(format!("{} decided differently on {}: {}", bad.len(), self.backend, bad.join("; "))))
        }
    }
}

/// The first record where two traces of the same arrivals decided differently.
pub fn first_divergence(emulated: &Trace, real: &Trace) -> Option<Divergence> {
    let n = emulated.records.len().max(real.records.len());
    (0..n).find_map(|i| {
        let (e, r) = (emulated.records.get(i)?, real.records.get(i)?);
        (e.decision != r.decision).then(|| Divergence {
            call: i + 1,
            subject: emulated.keys.get(e.key as usize).cloned().unwrap_or_default(),
            now_ms: e.now_ms,
            cost: e.cost,
            emulator: e.decision,
            redis: r.decision,
        })
    })
}

impl ScriptCheck {
    /// The report's notes about this check besides a difference: how the clocks were handled, keys
    /// outside the prefix.
    fn notes(&self) -> Vec<String> {
        let mut v = Vec::new();
        let time: Vec<&str> = self.reads_clock.iter().filter(|r| shimmed_time(r)).map(String::as_str).collect();
        let ttl: Vec<&str> = self.reads_clock.iter().filter(|r| !shimmed_time(r)).map(String::as_str).collect();
        if !time.is_empty() {
            v.push(format!(
                "the script reads TIME ({}); on the server it ran behind a one-line shim answering TIME with the \
                 emulator's clock, so both sides saw the same time",
                time.join(", ")
            ));
        }
        if self.clock == ClockUsed::Server {
            match &self.scenario_divergence {
                Some(d) => {
                    let cause = if self.absolute_expiry.is_empty() {
                        "a key expired on one side and alive on the other: relative TTLs run on the server's wall clock, \
                         so a key the scenario's clock expires lives on in a run that takes milliseconds, and the other \
                         way after a stall"
                            .to_string()
                    } else {
                        format!(
                            "the script sets absolute expiry times ({}) computed from the scenario's clock in ARGV, which the \
                             server measures against its own: a deadline in the server's past expires the key at once there",
                            self.absolute_expiry.join(", ")
                        )
                    };
                    v.push(format!(
                        "on the scenario's clock the server decided differently from {d}, on every attempt. Run again with \
                         the emulator's clock set to the server's TIME at every request (the scenario's times still in \
                         ARGV), every decision was identical: the difference came from the two clocks, not from the script \
                         running differently. The cause: {cause}"
                    ))
                }
                None => v.push(format!(
                    "reads the server's clock ({}), which a run cannot set: compared with the emulator's clock set \
                     to the server's TIME at every request (the scenario's times still in ARGV), so these decisions follow \
                     the server's wall clock, not the scenario's timeline",
                    ttl.join(", ")
                )),
            }
            if self.uncertain > 0 {
                v.push(format!(
                    "during {} request(s) the server's clock passed into a new millisecond; each was replayed at \
                     every millisecond it may have run in and kept at the one that decided as the server did and left \
                     its keys' expiry times as the server's",
                    self.uncertain
                ));
            }
        }
        if !self.outside_keys.is_empty() {
            let shown: Vec<String> = self.outside_keys.iter().take(5).map(|k| format!("`{k}`")).collect();
            let more = self.outside_keys.len().saturating_sub(shown.len());
            let mut n = format!(
                "wrote {} key(s) outside the run's prefix ({}{}), allowed on this server (--allow-outside-keys, or \
                 a private server of verify); those that did not exist before the run were removed after it",
                self.outside_keys.len(),
                shown.join(", "),
                if more > 0 { format!(" and {more} more") } else { String::new() }
            );
            if !self.outside_left.is_empty() {
                let left: Vec<String> = self.outside_left.iter().take(5).map(|k| format!("`{k}`")).collect();
                let _ = write!(n, "; {} existed before and were left as the run left them: {}", self.outside_left.len(), left.join(", "));
            }
            v.push(n);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use limitlab_engine::limiter::{Params, Variant};
    use limitlab_engine::sim::Record;

    fn trace(decisions: &[bool]) -> Trace {
        Trace {
            name: "seed_fixed_window".into(),
            variant: Some(Variant::SEED_FIXED_WINDOW),
            params: Params::new(1, 1000),
            keys: vec!["u".into()],
            phases: vec![String::new()],
            records: decisions
                .iter()
                .enumerate()
                .map(|(i, &a)| Record {
                    at: limitlab_emulator::clock::Micros(i as i64 * 1000),
                    now_ms: i as i64,
                    key: 0,
                    phase: 0,
                    cost: 1,
                    decision: Decision::allowed_only(a),
                })
                .collect(),
            elapsed_secs: 0.0,
        }
    }

    #[test]
    fn finds_the_first_differing_call() {
        assert_eq!(first_divergence(&trace(&[true, false]), &trace(&[true, false])), None);
        let d = first_divergence(&trace(&[true, false, true]), &trace(&[true, true, false])).unwrap();
        assert_eq!((d.call, d.now_ms, d.subject.as_str()), (2, 1, "u"));
        assert!(!d.emulator.allowed && d.redis.allowed);
        assert_eq!(
            d.to_string(),
            "call #2 (subject `u`, now_ms 1, cost 1): emulator {allowed 0, remaining -1, retry_after_ms -1, \
             reset_after_ms -1}, redis {allowed 1, remaining -1, retry_after_ms -1, reset_after_ms -1}"
        );
    }
}
