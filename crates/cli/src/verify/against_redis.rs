//! Scenarios on a real Redis, call for call against the emulator (`run --redis`, `compare --redis`).
//!
//! Every script takes `now` from ARGV, so a real server given the arrivals' virtual times must decide
//! exactly as the emulator does. The one thing the server does on its own clock is expire keys, and
//! the two clocks do not agree: a scenario spanning 10 virtual seconds runs in milliseconds on the
//! server. What that means for each shipped script, when the times it is given never go backwards
//! (every standard scenario):
//! - **Keys the emulator expired live on in the server** (the server's wall clock ran slower than
//!   virtual time). No decision depends on that: every production script's TTL is set to the moment
//!   its state becomes equal to no state (`fixed_window`: the window ends; `sliding_window`: the next
//!   window ends; `sliding_log`: the newest member leaves; `token_bucket`: the bucket is full;
//!   `gcra`: the TAT is reached), and each script computes the same reply from a stale state as from
//!   none. The seed's scripts agree too: `seed_fixed_window` reads only the current window's key, which
//!   lives two windows; `seed_sliding_window` reads the current and previous windows' keys, whose TTL of
//!   two windows from their first count outlasts the current window; `seed_sliding_log` trims members
//!   older than a window before counting, and its key outlives its newest member by exactly a window;
//!   `seed_token_bucket`'s refill after two idle windows fills the bucket (`min(cap, ..)`), which is
//!   what a missing key gives.
//! - **Keys the server expired while the emulator kept them** (the server's wall clock ran faster
//!   than virtual time). This does change decisions, and it can happen: within a burst many calls
//!   share one virtual millisecond while the wall clock moves on, and `token_bucket`/`gcra` set TTLs
//!   as short as `window_ms / limit` (10 ms in the standard scenarios). A stall of the test machine
//!   longer than that between two calls of one subject lets the server drop a key the emulator still
//!   has. Such a divergence depends on timing and does not repeat, while an emulator bug repeats on
//!   every run: so a script whose run diverges is run again on a clean keyspace, up to
//!   [`ATTEMPTS`] times in all, and reported as differing only if every attempt differs. A run that
//!   agreed only on a later attempt says so.
//!
//! **The server's clock.** Those two effects, and any script or spec call that reads the server's
//! clock (`PTTL`, `TTL`, `EXPIRETIME`, `PEXPIRETIME`), make a server's decisions depend on its wall
//! clock, which a run cannot set. So a second way to compare exists: the arrivals run on the server
//! with `TIME` read around every request (each request started early in a server millisecond, so
//! it runs within that millisecond), and the emulator then replays them with its clock set to the
//! server's millisecond of each request; the scenario's times still go to the scripts in ARGV. The
//! emulator then sees exactly what the server saw (key expiry, TTLs read back, `TIME`), and its
//! decisions must be identical. A spec that reads a TTL is compared this way from the start; any
//! other is compared on the scenario's clock first, and only when every attempt differed, on the
//! server's: agreeing there shows the difference came from the clocks (a key the emulator expired
//! at a scenario time still alive on the server: a TTL too short for the decisions shows this way),
//! not from the script running differently, and the report says so with the first difference seen.
//! A script that reads `TIME` gets the emulator's clock on both sides through a shim on the server
//! (see [`limitlab_engine::backend::real`]). A request during which the server's millisecond changed (a stall)
//! is replayed with each of its calls at each millisecond it may have run in (never going backwards
//! from one call to the next: a `PTTL` read right after a `SET ... PX` can be a millisecond short),
//! and kept at the clock that decides as the server did and leaves the keys it named with the expiry times the server gave them (read with
//! PEXPIRETIME right after such a request).
//!
//! **Before the server.** Each script first runs the arrivals on an emulator under the server run's
//! own key prefix, which notes every key created outside it: a script that builds key names from
//! ARGV instead of KEYS would write those keys on the server among other clients' keys, where the
//! run could neither find nor remove them. Such a run is refused, naming the keys, the spec's call
//! and the request, unless the server is the caller's to write on (`--allow-outside-keys`,
//! [`RealRedis::set_allow_outside_keys`]): then it goes ahead, and afterwards exactly those keys
//! are removed that did not exist before the run (the others are listed, left as they are). On a
//! cluster such a script is refused in any case (a call is routed by its KEYS, and a script touching
//! another key fails there), and a call whose keys span hash slots is reported the same way (the
//! call, both keys and their slots) before anything is sent: the server would answer CROSSSLOT.
use std::fmt::Write as _;

use serde::Serialize;

use crate::report::table::Table;
use crate::report::Format;
use limitlab_emulator::Emulator;
use limitlab_emulator::{Error, Result};
use limitlab_engine::backend::emulated::EmulatedBackend;
use limitlab_engine::backend::real::RealRedis;
use limitlab_engine::backend::Backend;
use limitlab_engine::limiter::slots::crossslot_error;
use limitlab_engine::limiter::{Decision, Limiter, Variant};
use limitlab_engine::sim::standard::{builtin, STANDARD};
use limitlab_engine::sim::{run, Progress, Scenario, Trace};
use limitlab_engine::spec::exec::{describe_call, Session};
use limitlab_engine::spec::{Program, Spec, Target};
use limitlab_engine::traffic::Arrival;

/// Runs of one script before a divergence counts (see the module docs).
pub const ATTEMPTS: u32 = 3;

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
    /// Where the spec sets absolute expiry times ([`absolute_expiries`]).
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
    /// only on the server's clock, and why (see `ScriptCheck::notes`).
    pub fn headline(&self) -> String {
        if !self.identical() {
            return "DECIDED DIFFERENTLY".into();
        }
        let n = self.checks.len();
        let reads =
            self.checks.iter().filter(|c| c.clock == ClockUsed::Server && c.scenario_divergence.is_none()).count();
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
            let mut row =
                vec![c.scenario.clone(), c.algorithm.clone(), c.calls.to_string(), verdict, c.keys_removed.to_string()];
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
        let bad: Vec<String> = self
            .checks
            .iter()
            .filter_map(|c| c.divergence.as_ref().map(|d| format!("{} / {}: {d}", c.scenario, c.algorithm)))
            .collect();
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
                let _ = write!(
                    n,
                    "; {} existed before and were left as the run left them: {}",
                    self.outside_left.len(),
                    left.join(", ")
                );
            }
            v.push(n);
        }
        v
    }
}

/// Where the spec's scripts set an absolute expiry (`PXAT`/`EXAT` of SET, `EXPIREAT`,
/// `PEXPIREAT`): `PXAT at limiter.lua:12`. Such a deadline comes from the scenario's clock and is
/// read against the server's.
pub fn absolute_expiries(spec: &Spec) -> Vec<String> {
    const ABSOLUTE: [&str; 4] = ["PXAT", "EXAT", "PEXPIREAT", "EXPIREAT"];
    let mut out = Vec::new();
    for sc in spec.scripts.iter().chain(&spec.libraries) {
        for (c, line) in limitlab_engine::backend::reads_commands(&sc.script.body, &ABSOLUTE) {
            out.push(format!("{c} at {}:{line}", sc.path.display()));
        }
    }
    if let Program::Declarative(d) = &spec.program {
        for c in &d.calls {
            for a in c.args.iter().filter(|a| ABSOLUTE.iter().any(|x| x.eq_ignore_ascii_case(a.text.trim()))) {
                out.push(format!(
                    "{} at {}:{} (call `{}`)",
                    a.text.trim().to_ascii_uppercase(),
                    spec.origin.display(),
                    a.line,
                    c.name
                ));
            }
            if let Target::Command(n) = &c.target {
                if ABSOLUTE.iter().any(|x| x.eq_ignore_ascii_case(n)) {
                    out.push(format!(
                        "{} at {}:{} (call `{}`)",
                        n.to_ascii_uppercase(),
                        spec.origin.display(),
                        c.line,
                        c.name
                    ));
                }
            }
        }
    }
    out
}

/// Whether a [`clock_reads`] entry is a script's `TIME`, which the shim answers on the server.
fn shimmed_time(read: &str) -> bool {
    read.starts_with("TIME ") && !read.ends_with("(function library)")
}

/// Commands whose replies depend on the server's clock. `TIME` is answered by the shim of
/// [`limitlab_engine::backend::real`]; the others make a spec compare on the server's clock.
pub const CLOCK_READS: [&str; 5] = ["TIME", "PTTL", "TTL", "PEXPIRETIME", "EXPIRETIME"];

/// What `spec` reads of the server's clock, as `PTTL at file:line`: commands of [`CLOCK_READS`]
/// named in its scripts' or adapter's string literals, and spec calls that are such commands.
pub fn clock_reads(spec: &Spec) -> Vec<String> {
    let mut out = Vec::new();
    for sc in &spec.scripts {
        for (c, line) in limitlab_engine::backend::reads_commands(&sc.script.body, &CLOCK_READS) {
            out.push(format!("{c} at {}:{line}", sc.path.display()));
        }
    }
    // A function library is loaded once and called with FCALL: no shim reaches its TIME, so it
    // counts as reading the server's clock like a TTL.
    for lib in &spec.libraries {
        for (c, line) in limitlab_engine::backend::reads_commands(&lib.script.body, &CLOCK_READS) {
            out.push(format!("{c} at {}:{line} (function library)", lib.path.display()));
        }
    }
    match &spec.program {
        Program::Adapter { path, source, .. } => {
            for (c, line) in limitlab_engine::backend::reads_commands(source, &CLOCK_READS) {
                out.push(format!("{c} at {}:{line}", path.display()));
            }
        }
        Program::Declarative(d) => {
            for c in &d.calls {
                if let Target::Command(n) = &c.target {
                    if let Some(x) = CLOCK_READS.iter().find(|x| x.eq_ignore_ascii_case(n)) {
                        out.push(format!("{x} at {}:{} (call `{}`)", spec.origin.display(), c.line, c.name));
                    }
                }
            }
        }
    }
    out
}

/// What the emulator's run under the server's prefix found (see "Before the server" in the
/// module docs).
pub struct Precheck {
    /// The decisions, for comparing with the server's on the scenario's clock.
    pub trace: Trace,
    /// Keys created outside the prefix, in order of creation.
    pub outside: Vec<String>,
}

/// Runs `limiter` over `arrivals` on an emulator under `real`'s key prefix, its clock starting at
/// `start_ms`, before anything is sent to `real`. Refuses (with the keys, the spec's call and the
/// request) a script that writes keys outside the prefix unless `real` allows it, and on a cluster
/// a call whose keys span hash slots.
pub fn precheck(
    scenario: &str,
    limiter: &Limiter,
    arrivals: &[Arrival],
    start_ms: i64,
    real: &RealRedis,
    progress: Progress,
) -> Result<Precheck> {
    let prefix = real.key_prefix().to_string();
    let mut emu = EmulatedBackend::with_prefix(Emulator::new(), &prefix);
    emu.set_time_ms(start_ms);
    let trace = run(limiter, &mut emu, arrivals, progress)?;
    let outside = emu.take_outside_keys();
    if outside.is_empty() && !real.is_cluster() {
        return Ok(Precheck { trace, outside });
    }
    let spec = limiter.spec();
    let mut b = EmulatedBackend::with_prefix(Emulator::new(), &prefix);
    b.set_time_ms(start_ms);
    let mut session = Session::recording();
    let mut first_outside: Option<String> = None;
    for (i, a) in arrivals.iter().enumerate() {
        let now = a.at.as_millis().0;
        limiter.check_call(now, a.cost)?;
        b.set_time_ms(now);
        limiter.call(&mut b, &mut session, &a.key, now, a.cost)?;
        let calls = session.take_calls();
        let request = || {
            format!(
                "{}, call #{} of scenario `{scenario}`",
                limitlab_engine::spec::exec::describe_request(&a.key, now, a.cost),
                i + 1
            )
        };
        if real.is_cluster() {
            if let Some(e) = calls.iter().find_map(|c| crossslot_error(spec, c, &prefix, &request(), &real.describe()))
            {
                return Err(e);
            }
        }
        let out = b.take_outside_keys();
        if first_outside.is_none() && !out.is_empty() {
            let calls: Vec<String> = calls.iter().map(|c| describe_call(spec, c)).collect();
            let keys: Vec<String> = out.iter().map(|k| format!("`{k}`")).collect();
            first_outside = Some(format!(
                "the {} made {} and created {}",
                request(),
                if calls.is_empty() { "no call".to_string() } else { calls.join(", ") },
                keys.join(", ")
            ));
            if !real.is_cluster() {
                break;
            }
        }
    }
    if !outside.is_empty() && (real.is_cluster() || !real.allow_outside_keys()) {
        let shown: Vec<String> = outside.iter().take(10).map(|k| format!("`{k}`")).collect();
        let why = if real.is_cluster() {
            // Redis Cluster routes a call by its KEYS and refuses, inside the script, a key of
            // another node (or, in 7.0, of another slot than the declared ones).
            "on Redis Cluster a script may only touch the keys it is given in KEYS, which route the call: \
             these would fail there (\"Script attempted to access a non local key\"). Pass every key the script \
             writes in KEYS (the spec's `keys = [...]`), with one hash tag"
                .to_string()
        } else {
            "on a shared server these keys would land among other clients' keys, where the run could not tell \
             them apart to remove them. Pass every key the script writes in KEYS (the spec's `keys = [...]`, which \
             limitlab puts under the run's prefix), or, on a server that is yours to write on, add \
             --allow-outside-keys (then the ones that did not exist before the run are removed after it)"
                .to_string()
        };
        return Err(Error::Invalid {
            context: format!("scenario `{scenario}`, spec {}", spec.origin.display()),
            field: "keys".into(),
            reason: format!(
                "the script writes keys outside the run's key prefix `{prefix}` (it builds their names itself, not from \
                 KEYS): {}. In all the arrivals create {} such key(s): {}{}. Nothing was sent to {}: {why}",
                first_outside.unwrap_or_default(),
                outside.len(),
                shown.join(", "),
                if outside.len() > shown.len() { ", ..." } else { "" },
                real.describe()
            ),
        });
    }
    Ok(Precheck { trace, outside })
}

/// Which of `keys` exist on the server now.
fn existing(real: &mut RealRedis, keys: &[String]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for k in keys {
        if matches!(real.command(&[b"EXISTS", k.as_bytes()])?, limitlab_emulator::Reply::Int(n) if n > 0) {
            out.push(k.clone());
        }
    }
    Ok(out)
}

/// Removes `keys` except those in `keep`; returns how many were removed.
fn remove_outside(real: &mut RealRedis, keys: &[String], keep: &[String]) -> Result<u64> {
    let mut n = 0;
    for k in keys.iter().filter(|k| !keep.contains(k)) {
        if let limitlab_emulator::Reply::Int(d) = real.command(&[b"UNLINK", k.as_bytes()])? {
            n += d as u64;
        }
    }
    Ok(n)
}

/// Runs `limiter` over `arrivals` on the server (up to [`ATTEMPTS`] times while it diverges) and
/// compares every decision with `emulated`. The server's keys are removed after every attempt, and
/// also when a run fails, in which case the error says how far the run got and whether the cleanup
/// worked. When every attempt differed, or the spec reads a TTL, the comparison is made on the
/// server's clock instead (see the module docs).
pub fn check_script(
    scenario: &str,
    limiter: &Limiter,
    arrivals: &[Arrival],
    emulated: &Trace,
    real: &mut RealRedis,
    progress: Progress,
) -> Result<ScriptCheck> {
    check_script_with(scenario, limiter, arrivals, emulated, &[], real, progress)
}

/// [`check_script`] for a script that writes `outside` keys outside the prefix (allowed by the
/// caller): those that did not exist before are removed after every attempt.
pub fn check_script_with(
    scenario: &str,
    limiter: &Limiter,
    arrivals: &[Arrival],
    emulated: &Trace,
    outside: &[String],
    real: &mut RealRedis,
    progress: Progress,
) -> Result<ScriptCheck> {
    let variant = limiter.name();
    let reads_clock = clock_reads(limiter.spec());
    let mut check = ScriptCheck {
        scenario: scenario.to_string(),
        algorithm: variant.to_string(),
        calls: arrivals.len(),
        attempts: 0,
        divergence: None,
        retried_after: None,
        keys_removed: 0,
        monotone: arrivals.windows(2).all(|w| w[0].at <= w[1].at),
        redis_secs: 0.0,
        clock: ClockUsed::Scenario,
        scenario_divergence: None,
        uncertain: 0,
        outside_keys: outside.to_vec(),
        outside_left: existing(real, outside)?,
        reads_clock,
        absolute_expiry: absolute_expiries(limiter.spec()),
    };
    let reads_ttl = check.reads_clock.iter().any(|r| !shimmed_time(r));
    if !reads_ttl {
        for attempt in 1..=ATTEMPTS {
            check.attempts = attempt;
            let result = limitlab_engine::sim::run_partial(limiter, real, arrivals, progress);
            let cleanup = real.cleanup().and_then(|n| Ok(n + remove_outside(real, outside, &check.outside_left)?));
            let trace = match result {
                Ok(t) => t,
                Err((done, e)) => return Err(stopped(scenario, variant, real, done, arrivals, e, cleanup)),
            };
            check.keys_removed += cleanup?;
            check.redis_secs = trace.elapsed_secs;
            match first_divergence(emulated, &trace) {
                None => {
                    check.divergence = None;
                    return Ok(check);
                }
                Some(d) => {
                    if check.retried_after.is_none() {
                        check.retried_after = Some(d.clone());
                    }
                    check.divergence = Some(d);
                }
            }
        }
        // Every attempt differed on the scenario's clock: no "retried" note; try the server's clock.
        check.retried_after = None;
        check.scenario_divergence = check.divergence.take();
    }
    // The requests alone (a lifecycle operation makes no decision), which the decisions follow.
    let requests: Vec<Arrival> =
        arrivals.iter().filter(|a| a.op == limitlab_engine::traffic::Op::Request).cloned().collect();
    for attempt in 1..=ATTEMPTS {
        check.attempts = attempt;
        let watch = limitlab_emulator::clock::Stopwatch::start();
        let result = on_server_clock(limiter, arrivals, real);
        let cleanup = real.cleanup().and_then(|n| Ok(n + remove_outside(real, outside, &check.outside_left)?));
        let runs = match result {
            Ok(x) => x,
            Err((done, e)) => return Err(stopped(scenario, variant, real, done, arrivals, e, cleanup)),
        };
        check.keys_removed += cleanup?;
        check.redis_secs = watch.elapsed_secs();
        let (replayed, uncertain) = replay_at(limiter, arrivals, real.key_prefix(), &runs)?;
        let decisions: Vec<Decision> = runs.iter().filter(|r| r.op.is_none()).map(|r| r.decision).collect();
        check.uncertain = uncertain;
        check.divergence = first_difference(limiter, &requests, &replayed, &decisions);
        if check.divergence.is_none() {
            check.clock = ClockUsed::Server;
            return Ok(check);
        }
    }
    check.clock = ClockUsed::Server;
    Ok(check)
}

/// How far into a millisecond of the server's clock a request may start: later ones wait for the
/// next millisecond, so that a request (a few round trips) runs within the one it starts in.
const START_BY_US: i64 = 600;

/// The server's clock, read until it is at most [`START_BY_US`] into a millisecond (three tries).
fn aligned_time(real: &mut RealRedis) -> Result<i64> {
    let mut t = real.server_time_us()?;
    for _ in 0..3 {
        let into = t.rem_euclid(1000);
        if into <= START_BY_US {
            break;
        }
        std::thread::sleep(std::time::Duration::from_micros((1000 - into + 50) as u64));
        t = real.server_time_us()?;
    }
    Ok(t)
}

/// One request as run on the server's clock: its decision, the server's milliseconds it started and
/// ended in, and, when those differ, the absolute expiry (PEXPIRETIME) of every key its calls named,
/// read right after it: what tells which of those milliseconds the request's writes ran in.
struct ServerRun {
    decision: Decision,
    clock: (i64, i64),
    expiries: Vec<(String, i64)>,
    /// How many calls the request sent: each may have run in a later millisecond than the one
    /// before it (a PTTL read 999 right after a SET PX 1000 crossed into the next).
    calls: usize,
    /// A lifecycle operation of the traffic, played and not decided (its `decision` means nothing).
    op: Option<limitlab_engine::traffic::Op>,
}

/// Runs the arrivals on the server with TIME read before and after every request. On an error,
/// how many requests had completed.
fn on_server_clock(
    limiter: &Limiter,
    arrivals: &[Arrival],
    real: &mut RealRedis,
) -> std::result::Result<Vec<ServerRun>, (usize, Error)> {
    let mut session = Session::recording();
    let mut out = Vec::with_capacity(arrivals.len());
    for (i, a) in arrivals.iter().enumerate() {
        let now = a.at.as_millis().0;
        let step = |real: &mut RealRedis, session: &mut Session| -> Result<ServerRun> {
            limiter.check_call(now, a.cost)?;
            let t0 = aligned_time(real)?.div_euclid(1000);
            real.set_time_ms(t0);
            if a.op != limitlab_engine::traffic::Op::Request {
                limiter.op(real, session, a.op, &a.key, now, a.cost)?;
                session.take_calls();
                return Ok(ServerRun {
                    decision: Decision::allowed_only(false),
                    clock: (t0, t0),
                    expiries: Vec::new(),
                    calls: 0,
                    op: Some(a.op),
                });
            }
            let decision = limiter.call(real, session, &a.key, now, a.cost)?;
            let t1 = real.server_time_us()?.div_euclid(1000).max(t0);
            let calls = session.take_calls();
            let mut expiries: Vec<(String, i64)> = Vec::new();
            if t1 > t0 {
                for k in calls.iter().flat_map(|c| &c.keys) {
                    if !expiries.iter().any(|(x, _)| x == k) {
                        if let limitlab_emulator::Reply::Int(at) = real.command(&[b"PEXPIRETIME", k.as_bytes()])? {
                            expiries.push((k.clone(), at));
                        }
                    }
                }
            }
            Ok(ServerRun { decision, clock: (t0, t1), expiries, calls: calls.len(), op: None })
        };
        out.push(step(real, &mut session).map_err(|e| (i, e))?);
    }
    Ok(out)
}

/// A request is replayed at no more than this many candidate clocks: the millisecond of each of
/// its calls, never going backwards, within the milliseconds the request ran in.
const MAX_CANDIDATES: usize = 4096;

/// Every way to give `calls` calls a millisecond in `lo..=hi`, never going backwards, as long as
/// there are at most [`MAX_CANDIDATES`]; otherwise the request ran in one millisecond for every
/// call (still at most [`MAX_CANDIDATES`] of them). The ones with every call in one millisecond
/// come first: a request crosses a millisecond far more rarely in the middle than around it.
fn schedules(lo: i64, hi: i64, calls: usize) -> Vec<Vec<i64>> {
    let calls = calls.max(1);
    let span = (hi - lo).max(0) as usize;
    let mut out: Vec<Vec<i64>> = (lo..=hi).take(MAX_CANDIDATES).map(|t| vec![t; calls]).collect();
    // C(calls + span, calls), stopping as soon as it passes the cap.
    let mut count: usize = 1;
    for i in 1..=calls {
        count = count.saturating_mul(span + i) / i;
        if count > MAX_CANDIDATES {
            return out;
        }
    }
    let mut cur = vec![lo; calls];
    loop {
        if cur.first() != cur.last() {
            out.push(cur.clone());
        }
        // The next nondecreasing sequence: raise the last call that can go later, and every call
        // after it to the same millisecond.
        let Some(i) = (0..calls).rev().find(|&i| cur[i] < hi) else { break };
        let t = cur[i] + 1;
        cur[i..].iter_mut().for_each(|c| *c = t);
    }
    out
}

/// The emulator with its clock set before each call to the next millisecond of a schedule (the
/// last one for calls past its end): a request replayed as the server ran it across milliseconds.
struct Scheduled<'a> {
    inner: &'a mut EmulatedBackend,
    times: &'a [i64],
    next: usize,
}

impl Scheduled<'_> {
    fn tick(&mut self) {
        if let Some(&t) = self.times.get(self.next).or(self.times.last()) {
            self.inner.set_time_ms(t);
        }
        self.next += 1;
    }
}

impl Backend for Scheduled<'_> {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn key_prefix(&self) -> &str {
        self.inner.key_prefix()
    }
    fn eval(
        &mut self,
        script: &limitlab_engine::backend::Script,
        keys: &[&[u8]],
        args: &[&[u8]],
    ) -> Result<limitlab_emulator::Reply> {
        self.tick();
        self.inner.eval(script, keys, args)
    }
    fn command(&mut self, args: &[&[u8]]) -> Result<limitlab_emulator::Reply> {
        self.tick();
        self.inner.command(args)
    }
    fn fcall(
        &mut self,
        library: &limitlab_engine::backend::Script,
        function: &str,
        keys: &[&[u8]],
        args: &[&[u8]],
    ) -> Result<limitlab_emulator::Reply> {
        self.tick();
        self.inner.fcall(library, function, keys, args)
    }
    fn load_library(&mut self, library: &limitlab_engine::backend::Script) -> Result<limitlab_emulator::Reply> {
        self.inner.load_library(library)
    }
    fn cleanup(&mut self) -> Result<u64> {
        self.inner.cleanup()
    }
}

/// Replays the arrivals on a fresh emulator (keys under `prefix`), its clock set to the server's
/// millisecond of each request. A request whose calls may have run in several milliseconds runs
/// under each candidate clock ([`schedules`]) on a copy of the keyspace and keeps the first that
/// decides as the server did and leaves the keys it named with the server's expiry times (several
/// clocks can give the same decision and differ only in the expiry they write). Returns the
/// decisions and how many requests had candidates.
fn replay_at(
    limiter: &Limiter,
    arrivals: &[Arrival],
    prefix: &str,
    runs: &[ServerRun],
) -> Result<(Vec<Decision>, usize)> {
    let mut b = EmulatedBackend::with_prefix(Emulator::new(), prefix);
    let mut session = limiter.session();
    let mut out = Vec::with_capacity(arrivals.len());
    let mut uncertain = 0;
    for (a, run) in arrivals.iter().zip(runs) {
        let now = a.at.as_millis().0;
        let (lo, hi) = run.clock;
        if let Some(op) = run.op {
            b.set_time_ms(lo);
            limiter.op(&mut b, &mut session, op, &a.key, now, a.cost)?;
            continue;
        }
        if lo == hi {
            b.set_time_ms(lo);
            out.push(limiter.call(&mut b, &mut session, &a.key, now, a.cost)?);
            continue;
        }
        uncertain += 1;
        let saved = b.emu.snapshot_db();
        let seq = session.seq;
        // The client's own state goes back with the keyspace before every candidate.
        session.save_client()?;
        let candidates = schedules(lo, hi, run.calls);
        // (candidate, whether its expiries agree too)
        let mut best: Option<(usize, bool)> = None;
        for (c, times) in candidates.iter().enumerate() {
            b.emu.restore_db(saved.clone());
            session.seq = seq;
            session.restore_client()?;
            let d =
                limiter.call(&mut Scheduled { inner: &mut b, times, next: 0 }, &mut session, &a.key, now, a.cost)?;
            if d != run.decision {
                continue;
            }
            let agrees = run.expiries.iter().all(|(k, at)| {
                *at == -2 || matches!(b.command(&[b"PEXPIRETIME", k.as_bytes()]), Ok(limitlab_emulator::Reply::Int(e)) if e == *at)
            });
            if best.is_none() || agrees {
                best = Some((c, agrees));
            }
            if agrees {
                break;
            }
        }
        let times = &candidates[best.map_or(0, |(c, _)| c)];
        b.emu.restore_db(saved);
        session.seq = seq;
        session.restore_client()?;
        out.push(limiter.call(&mut Scheduled { inner: &mut b, times, next: 0 }, &mut session, &a.key, now, a.cost)?);
    }
    Ok((out, uncertain))
}

/// The first request where two runs of `arrivals` decided differently.
fn first_difference(
    limiter: &Limiter,
    arrivals: &[Arrival],
    emulator: &[Decision],
    redis: &[Decision],
) -> Option<Divergence> {
    (0..arrivals.len().min(emulator.len()).min(redis.len())).find(|&i| emulator[i] != redis[i]).map(|i| {
        let a = &arrivals[i];
        Divergence {
            call: i + 1,
            subject: a.key.clone(),
            now_ms: a.at.as_millis().0,
            cost: if limiter.takes_cost() { a.cost } else { 1 },
            emulator: emulator[i],
            redis: redis[i],
        }
    })
}

/// Error codes by which a server refuses a call for its own state, not the run's input.
const SERVER_REFUSALS: [&str; 10] = [
    "OOM ",
    "READONLY ",
    "NOPERM ",
    "NOAUTH ",
    "WRONGPASS ",
    "BUSY ",
    "LOADING ",
    "MASTERDOWN ",
    "CLUSTERDOWN ",
    "TRYAGAIN ",
];

/// The error of a run that stopped after `done` requests: where, why, and what became of its keys.
fn stopped(
    scenario: &str,
    variant: &str,
    real: &RealRedis,
    done: usize,
    arrivals: &[Arrival],
    e: Error,
    cleanup: Result<u64>,
) -> Error {
    let mut where_ =
        format!("scenario `{scenario}`, script `{variant}`: stopped after {done} of {} calls", arrivals.len());
    if let Some(a) = arrivals.get(done) {
        let _ = write!(where_, " (call #{} was subject `{}` at now_ms {})", done + 1, a.key, a.at.as_millis().0);
        if real.failure().is_some() {
            let _ = write!(where_, "; that call was in flight, so its outcome on the server is unknown");
        }
    }
    let text = |e: &Error| match e {
        Error::Connection(m) | Error::Redis(m) => m.clone(),
        other => other.to_string(),
    };
    if text(&e).contains("NOAUTH ") {
        let _ = write!(
            where_,
            " (the server needs a password, not the script: give it in the URL, redis://:PASSWORD@HOST:PORT)"
        );
    }
    if text(&e).contains("READONLY You can't write against a read only replica") {
        let _ = write!(where_, " (the server is a read-only replica now: point --redis at its master)");
    }
    let keys = match &cleanup {
        Ok(n) => format!("{n} keys of the run were removed"),
        // The refused call was the only reply of the run (not lost in transit): nothing ran, so
        // nothing was written, whatever the cleanup could do.
        Err(_) if done == 0 && real.failure().is_none() && real.replies() <= 1 => {
            "No key of the run was written".to_string()
        }
        Err(c) => format!("Its keys under `{}` could not be removed ({})", real.key_prefix(), text(c)),
    };
    let msg = format!("{where_}: {}. {keys}", text(&e).trim_end_matches('.'));
    match e {
        Error::Connection(_) => Error::Connection(msg),
        Error::Redis(_) => Error::Redis(msg),
        // The server's state, not the input, refused the call (out of memory, a replica, ACL).
        Error::Script { ref reply, .. } if SERVER_REFUSALS.iter().any(|c| reply.starts_with(c)) => {
            Error::Redis(format!("{where_}: {e}. {keys}"))
        }
        _ => Error::Invalid { context: where_, field: "run".into(), reason: format!("{e}; {keys}") },
    }
}

/// Every selected script of a scenario on the emulator and on the server: each first on an
/// emulator under the server run's prefix ([`precheck`]), then on the server.
pub fn check_scenario(s: &Scenario, seed: u64, real: &mut RealRedis, progress: Progress) -> Result<Vec<ScriptCheck>> {
    real.require_writable(&format!("scenario `{}`", s.name))?;
    let arrivals = s.arrivals(seed)?;
    let mut out = Vec::new();
    for v in &s.scripts {
        let limiter = s.limiter(v)?;
        let pre = precheck(&s.name, &limiter, &arrivals, s.start_ms, real, progress)?;
        out.push(check_script_with(&s.name, &limiter, &arrivals, &pre.trace, &pre.outside, real, progress)?);
    }
    Ok(out)
}

/// `verify --script SPEC`: the traffic patterns of `limitlab check`, sized from the limiter's policy
/// (a boundary burst, a burst after idle windows, steady overload, many subjects under the limit,
/// sparse requests, varied costs), each on the emulator and on the server as [`check_scenario`]
/// runs a scenario.
pub fn check_spec(limiter: &Limiter, seed: u64, real: &mut RealRedis, progress: Progress) -> Result<RedisCheck> {
    real.require_writable(&format!("verify --script {}", limiter.name()))?;
    let p = limiter.params();
    let origin = limitlab_engine::attack::origin_ms(p.window_ms);
    let mut checks = Vec::new();
    for pat in limitlab_engine::check::run::patterns(&p, origin, seed) {
        let pre = precheck(pat.name, limiter, &pat.arrivals, origin, real, progress)?;
        checks.push(check_script_with(pat.name, limiter, &pat.arrivals, &pre.trace, &pre.outside, real, progress)?);
    }
    Ok(RedisCheck { backend: real.describe(), checks, show_speed: false })
}

/// `run --redis`: one scenario file.
pub fn check_run(s: &Scenario, seed: u64, real: &mut RealRedis, progress: Progress) -> Result<RedisCheck> {
    Ok(RedisCheck { backend: real.describe(), checks: check_scenario(s, seed, real, progress)?, show_speed: false })
}

/// `compare --redis`: every standard scenario, every script (`seed` overrides the files' own).
pub fn check_standard(seed: Option<u64>, real: &mut RealRedis, progress: Progress) -> Result<RedisCheck> {
    let mut checks = Vec::new();
    for (file, _) in STANDARD {
        let mut s = builtin(file)?;
        s.scripts = Variant::ALL.iter().map(|&v| limitlab_engine::spec::builtin::spec(v)).collect();
        let seed = seed.unwrap_or(s.seed);
        checks.extend(check_scenario(&s, seed, real, progress)?);
    }
    Ok(RedisCheck { backend: real.describe(), checks, show_speed: false })
}

#[cfg(test)]
mod tests {
    use super::*;
    use limitlab_engine::limiter::Params;
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
    fn a_request_across_milliseconds_is_tried_with_each_call_in_either() {
        // One millisecond: one clock.
        assert_eq!(schedules(5, 5, 3), vec![vec![5, 5, 5]]);
        // Two milliseconds, four calls: both uniform clocks first, then the three crossings.
        let s = schedules(5, 6, 4);
        assert_eq!(s[..2], [vec![5; 4], vec![6; 4]]);
        assert_eq!(s.len(), 5);
        for x in [vec![5, 5, 5, 6], vec![5, 5, 6, 6], vec![5, 6, 6, 6]] {
            assert!(s.contains(&x), "{x:?} in {s:?}");
        }
        assert!(s.iter().all(|t| t.windows(2).all(|w| w[0] <= w[1])));
        // Three milliseconds, three calls: C(5, 3) = 10, all different.
        let s = schedules(0, 2, 3);
        assert_eq!(s.len(), 10);
        let mut d = s.clone();
        d.sort();
        d.dedup();
        assert_eq!(d.len(), 10);
        // Too many mixed clocks (a long stall): every uniform one, capped.
        let s = schedules(0, 99, 8);
        assert_eq!(s.len(), 100);
        assert!(s.iter().all(|t| t.iter().all(|&x| x == t[0])));
        assert_eq!(schedules(0, 1_000_000, 2).len(), MAX_CANDIDATES);
    }

    #[test]
    fn a_scheduled_replay_sets_each_call_to_its_millisecond() {
        let mut b = EmulatedBackend::with_prefix(Emulator::new(), "t:");
        let times = [1_000, 1_001];
        let mut s = Scheduled { inner: &mut b, times: &times, next: 0 };
        assert_eq!(
            s.command(&[b"SET", b"t:k", b"1", b"PX", b"1000"]).unwrap(),
            limitlab_emulator::Reply::Status("OK".into())
        );
        // Read one millisecond later, as a server that crossed into the next one answers.
        assert_eq!(s.command(&[b"PTTL", b"t:k"]).unwrap(), limitlab_emulator::Reply::Int(999));
        // Past the schedule's end, the last millisecond holds.
        assert_eq!(s.command(&[b"PTTL", b"t:k"]).unwrap(), limitlab_emulator::Reply::Int(999));
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

#[cfg(test)]
mod clock_tests {
    use super::*;

    #[test]
    fn what_each_fixture_reads_of_the_server_clock() {
        // The repository's fixtures, named as from its root.
        let root = format!("{}/../../", env!("CARGO_MANIFEST_DIR"));
        let reads = |f: &str| -> Vec<String> {
            let spec = Spec::from_file(std::path::Path::new(&format!("{root}tests/fixtures/{f}.toml"))).unwrap();
            clock_reads(&spec).into_iter().map(|r| r.replace(&root, "")).collect()
        };
        assert_eq!(reads("redis_rate_gcra"), ["TIME at tests/fixtures/redis_rate_gcra.lua:30"]);
        assert_eq!(reads("rate_limit_redis"), ["PTTL at tests/fixtures/rate_limit_redis.lua:23"]);
        let rl = reads("rlflex_consume");
        assert!(rl.iter().all(|r| r.starts_with("PTTL at tests/fixtures/rlflex_consume.")), "{rl:?}");
        assert!(rl.iter().any(|r| r.ends_with("(call `block_ttl`)")), "{rl:?}");
        // A comment that names PTTL is not a call.
        assert!(reads("fixed_window_no_ttl").is_empty());
        for v in Variant::ALL {
            assert!(clock_reads(&limitlab_engine::spec::builtin::spec(v)).is_empty(), "{v}");
        }
    }
}
