//! A limiter under test: one spec on a private emulator, driven request by request under the virtual
//! clock. [`Harness`] is what a Rust test of your own limiter holds; [`load`] and [`load_script`]
//! make the [`Limiter`] it runs.
//!
//! (The `limitlab` crate's documentation has this as a running example.)
use std::path::Path;
use std::sync::Arc;

use crate::backend::emulated::EmulatedBackend;
use crate::backend::Backend;
use crate::limiter::{Decision, Limiter, Params};
use crate::metrics::ExactLog;
use crate::spec::exec::{CallRecord, Session};
use crate::spec::{Disk, Spec};
use crate::traffic::Arrival;
use limitlab_emulator::clock::DEFAULT_START;
use limitlab_emulator::Reply;
use limitlab_emulator::{Error, Result};

/// The limiter a command line would name: one of limitlab's built-in scripts (`fixed_window`,
/// `gcra`, `seed_token_bucket`, ...) or the path of a spec file (`my_limiter.toml`), under the
/// spec's own `[policy]`. For another policy, [`Limiter::from_spec`] with
/// [`Spec::from_file`]'s spec, or [`crate::limiter::limiter_with`].
pub fn load(name_or_path: impl AsRef<Path>) -> Result<Limiter> {
    let name = name_or_path.as_ref().to_string_lossy();
    crate::limiter::limiter_with(crate::spec::resolve(&name)?, None, None, None)
}

/// A limiter for a Lua script that follows limitlab's own script contract, without a spec file:
/// `KEYS[1]` is `rate:{<subject>}`; `ARGV` is limit, window in ms, now in ms, cost, and the burst
/// when `params` has one; the reply is `{allowed (1/0), remaining, retry_after_ms, reset_after_ms}`
/// (the README's "The scripts"). The spec is written for you; its name is the file's stem.
pub fn load_script(lua: impl AsRef<Path>, params: Params) -> Result<Limiter> {
    let lua = lua.as_ref();
    let stem = lua.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name: String =
        stem.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    let name = if name.is_empty() { "script".to_string() } else { name };
    let file = lua.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let (burst_policy, burst_arg) = match params.burst {
        Some(b) => (format!("burst = {b}\n"), ", \"${burst}\""),
        None => (String::new(), ""),
    };
    let text = format!(
        "name = {name:?}\ndescription = \"{file}, under limitlab's script contract\"\n\
         [policy]\nlimit = {}\nwindow_ms = {}\n{burst_policy}\
         [scripts]\nmain = {file:?}\n\
         [[call]]\nscript = \"main\"\nkeys = [\"rate:{{${{subject}}}}\"]\n\
         args = [\"${{limit}}\", \"${{window_ms}}\", \"${{now_ms}}\", \"${{cost}}\"{burst_arg}]\n\
         [decision]\nallowed = \"reply[1] == 1\"\nremaining = \"reply[2]\"\n\
         retry_after_ms = \"reply[3]\"\nreset_ms = \"reply[4]\"\n",
        params.limit, params.window_ms
    );
    let dir = lua.parent().unwrap_or(Path::new(""));
    let spec = Spec::from_toml(&text, lua, dir, &Disk)?;
    Limiter::from_spec(Arc::new(spec), params)
}

/// One request a [`Harness`] ran, with its decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub subject: String,
    /// The caller's clock passed to the spec (`now_ms`).
    pub now_ms: i64,
    /// The units asked for.
    pub cost: u64,
    pub decision: Decision,
    /// What an exact sliding log of the same policy, fed the same requests, decided: the reference
    /// every false rejection and false allow is counted against.
    pub exact: bool,
}

/// A limiter on a private emulator under a virtual clock, for tests.
///
/// The clock starts at [`DEFAULT_START`] (2024-01-01T00:00:00Z, a boundary of every window that
/// divides a day) unless [`Harness::starting_at`] says otherwise, and moves only when told:
/// [`Harness::at`] (ms after the start) and [`Harness::advance`]. Each [`Harness::request`] runs
/// the spec's calls with the clock's time as `now_ms` (and as the server's clock, which key expiry
/// and `TIME` read), and is kept in [`Harness::history`] with the exact sliding log's verdict.
/// [`Harness::probe`] asks "what if" and puts everything back.
pub struct Harness {
    limiter: Limiter,
    backend: EmulatedBackend,
    session: Session,
    start_ms: i64,
    now_ms: i64,
    history: Vec<Outcome>,
    exact: ExactLog,
    /// Each subject's index in the exact log.
    subjects: std::collections::HashMap<String, u32>,
}

impl Harness {
    /// A harness for `limiter`, on a fresh emulator whose clock reads [`DEFAULT_START`].
    pub fn new(limiter: Limiter) -> Harness {
        let exact = ExactLog::new(limiter.params());
        let mut h = Harness {
            session: limiter.session(),
            limiter,
            backend: EmulatedBackend::default(),
            start_ms: DEFAULT_START.0,
            now_ms: DEFAULT_START.0,
            history: Vec::new(),
            exact,
            subjects: std::collections::HashMap::new(),
        };
        h.backend.set_time_ms(h.now_ms);
        h
    }

    /// A harness for a built-in script's name or a spec file's path, under the spec's own policy
    /// (see [`load`]).
    pub fn load(name_or_path: impl AsRef<Path>) -> Result<Harness> {
        Ok(Harness::new(load(name_or_path)?))
    }

    /// The same harness with its clock (and its start) at `unix_ms`. Call it before any request.
    pub fn starting_at(mut self, unix_ms: i64) -> Harness {
        self.start_ms = unix_ms;
        self.set_now(unix_ms);
        self
    }

    /// The limiter under test.
    pub fn limiter(&self) -> &Limiter {
        &self.limiter
    }

    /// The limiter's policy (limit, window, burst).
    pub fn params(&self) -> Params {
        self.limiter.params()
    }

    /// The clock's start, unix ms.
    pub fn start_ms(&self) -> i64 {
        self.start_ms
    }

    /// The clock's time, unix ms: the `now_ms` the next request passes.
    pub fn now_ms(&self) -> i64 {
        self.now_ms
    }

    /// ms since the start.
    pub fn elapsed_ms(&self) -> i64 {
        self.now_ms - self.start_ms
    }

    /// Sets the clock to `ms` after the start. It may go back: the script then sees a `now_ms`
    /// older than its state, as a skewed caller would make it (expiry follows the clock too).
    pub fn at(&mut self, ms: i64) -> &mut Harness {
        self.set_now(self.start_ms.saturating_add(ms));
        self
    }

    /// Moves the clock by `ms` (back when negative).
    pub fn advance(&mut self, ms: i64) -> &mut Harness {
        self.set_now(self.now_ms.saturating_add(ms));
        self
    }

    fn set_now(&mut self, unix_ms: i64) {
        self.now_ms = unix_ms;
        self.backend.set_time_ms(unix_ms);
    }

    /// Runs one request of `subject` for `cost` units at the clock's time and returns the decision
    /// (a refusal is a decision, not an error). An `Err` is a broken limiter: a script error (with
    /// its file and line), a reply the spec cannot read, a `now_ms` the script does not accept.
    pub fn request(&mut self, subject: &str, cost: u64) -> Result<Decision> {
        self.request_as_of(subject, cost, self.now_ms)
    }

    /// Runs one request whose caller passes `caller_now_ms` as its clock while the server's clock
    /// (expiry, `TIME`) stays at the harness's: a caller whose clock is skewed.
    pub fn request_as_of(&mut self, subject: &str, cost: u64, caller_now_ms: i64) -> Result<Decision> {
        self.limiter.check_call(caller_now_ms, cost)?;
        let d = self.limiter.call(&mut self.backend, &mut self.session, subject, caller_now_ms, cost)?;
        let next = self.subjects.len() as u32;
        let s = match self.subjects.get(subject) {
            Some(&i) => i,
            None => *self.subjects.entry(subject.to_string()).or_insert(next),
        };
        let exact = self.exact.decide(s, caller_now_ms, self.units(cost));
        self.history.push(Outcome { subject: subject.to_string(), now_ms: caller_now_ms, cost, decision: d, exact });
        Ok(d)
    }

    /// Runs a lifecycle operation of the client now (a refund of `cost` units, a reset of
    /// `subject`, a clear of every subject); the exact log takes it as
    /// [`crate::metrics::ExactLog::apply`] says.
    pub fn op(&mut self, op: crate::traffic::Op, subject: &str, cost: u64) -> Result<()> {
        self.limiter.op(&mut self.backend, &mut self.session, op, subject, self.now_ms, cost)?;
        if let Some(&s) = self.subjects.get(subject) {
            let units = self.units(cost);
            self.exact.apply(op, s, units);
        } else if op == crate::traffic::Op::Clear {
            self.exact.apply(op, 0, 0);
        }
        Ok(())
    }

    /// What [`Harness::request`] would decide now, leaving the keyspace, the clock and the history
    /// as they were (for "would a retry at this time succeed?" questions).
    pub fn probe(&mut self, subject: &str, cost: u64) -> Result<Decision> {
        let now = self.now_ms;
        crate::limiter::oracle::what_if(&self.limiter, &mut self.backend, &mut self.session, subject, now, now, &[cost])
            .map(|mut v| v.remove(0))
    }

    /// Plays `arrivals` (absolute times, as generators, traces and [`crate::strategies`] make
    /// them): for each, the clock moves to its time (whole ms) and it is requested (or, for a
    /// lifecycle operation, run: [`Harness::op`]). Returns the requests' decisions in order; stops
    /// at the first error.
    pub fn play(&mut self, arrivals: &[Arrival]) -> Result<Vec<Decision>> {
        let mut out = Vec::with_capacity(arrivals.len());
        for a in arrivals {
            self.set_now(a.at.as_millis().0);
            if a.op != crate::traffic::Op::Request {
                self.op(a.op, &a.key, a.cost)?;
                continue;
            }
            out.push(self.request(&a.key, a.cost)?);
        }
        Ok(out)
    }

    /// Every request run so far (probes excluded), in order.
    pub fn history(&self) -> &[Outcome] {
        &self.history
    }

    /// The most units admitted in any interval of one window (`window_ms` consecutive ms of the
    /// callers' clock) for one subject, over every subject in [`Harness::history`]. An exact
    /// limiter reaches the limit and never more; a fixed window reaches twice the limit.
    pub fn max_in_any_window(&self) -> u64 {
        let w = self.params().window_ms as i64;
        let mut by_subject: std::collections::HashMap<&str, Vec<(i64, u64)>> = std::collections::HashMap::new();
        for o in self.history.iter().filter(|o| o.decision.allowed) {
            by_subject.entry(o.subject.as_str()).or_default().push((o.now_ms, self.units(o.cost)));
        }
        by_subject.values_mut().map(|times| crate::metrics::max_in_any_window(times, w).0).max().unwrap_or(0)
    }

    /// [`Harness::max_in_any_window`] over the limit: 1.0 is exact, 2.0 a fixed window's worst.
    pub fn overshoot(&self) -> f64 {
        self.max_in_any_window() as f64 / self.params().limit as f64
    }

    /// Requests refused that the exact sliding log admitted, in [`Harness::history`].
    pub fn false_rejections(&self) -> usize {
        self.history.iter().filter(|o| o.exact && !o.decision.allowed).count()
    }

    /// The units a request of `cost` takes as the spec counts them (1 when the spec sends no cost).
    fn units(&self, cost: u64) -> u64 {
        if self.limiter.takes_cost() {
            cost
        } else {
            1
        }
    }

    /// The keys alive at the clock's time, sorted.
    pub fn keys(&mut self) -> Result<Vec<String>> {
        Ok(self.keys_with_ttl()?.into_iter().map(|(k, _)| k).collect())
    }

    /// The keys alive at the clock's time with their PTTL in ms (-1: no expiry), sorted.
    pub fn keys_with_ttl(&mut self) -> Result<Vec<(String, i64)>> {
        self.backend.keys_with_ttl()
    }

    /// `MEMORY USAGE` of every live key, summed: Redis 7.0's bytes for the limiter's state.
    pub fn memory_bytes(&mut self) -> Result<u64> {
        let mut bytes = 0;
        for k in self.keys()? {
            if let Reply::Int(b) = self.backend.command(&[b"MEMORY", b"USAGE", k.as_bytes(), b"SAMPLES", b"0"])? {
                bytes += b.max(0) as u64;
            }
        }
        Ok(bytes)
    }

    /// Runs one Redis command on the emulator (`["PTTL", "rate:{u1}"]`), at the clock's time.
    pub fn command(&mut self, args: &[&str]) -> Result<Reply> {
        let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        if argv.is_empty() {
            return Err(Error::Invalid {
                context: "Harness::command".into(),
                field: "args".into(),
                reason: "no command".into(),
            });
        }
        self.backend.command(&argv)
    }

    /// Turns Redis Cluster rules on: a call whose keys span hash slots gets `CROSSSLOT`.
    pub fn cluster(&mut self, on: bool) -> &mut Harness {
        self.backend.emu.set_cluster(on);
        self
    }

    /// Records every call the spec makes from now on (script or command, keys, args, reply); read
    /// them with [`Harness::take_calls`].
    pub fn record_calls(&mut self, on: bool) -> &mut Harness {
        self.session.record = on.then(Vec::new);
        self
    }

    /// The calls recorded since the last time (see [`Harness::record_calls`]).
    pub fn take_calls(&mut self) -> Vec<CallRecord> {
        self.session.take_calls()
    }

    /// The emulator, for anything the methods above do not cover.
    pub fn backend(&mut self) -> &mut EmulatedBackend {
        &mut self.backend
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::Variant;

    #[test]
    fn the_clock_moves_only_when_told_and_probes_leave_no_trace() {
        let mut h = Harness::new(Limiter::new(Variant::FIXED_WINDOW, Params::new(2, 1000)).unwrap());
        assert_eq!(h.now_ms(), DEFAULT_START.0);
        h.at(500);
        assert!(h.request("u", 1).unwrap().allowed);
        assert!(h.probe("u", 1).unwrap().allowed);
        assert!(h.probe("u", 1).unwrap().allowed, "the first probe was put back");
        assert!(h.request("u", 1).unwrap().allowed);
        let no = h.request("u", 1).unwrap();
        assert!(!no.allowed);
        assert_eq!(no.retry_after_ms, 500);
        assert_eq!(h.history().len(), 3);
        // The shipped fixed window keeps its counter one window past the window's end.
        assert_eq!(h.keys_with_ttl().unwrap(), [("rate:{u}".to_string(), 1500)]);
        h.advance(500);
        assert!(h.request("u", 1).unwrap().allowed);
        assert_eq!(h.elapsed_ms(), 1000);
        assert_eq!(h.max_in_any_window(), 3);
        assert_eq!(h.false_rejections(), 0);
        // Redis keeps a key through the very ms its expiry names.
        h.advance(2000);
        assert_eq!(h.keys_with_ttl().unwrap(), [("rate:{u}".to_string(), 0)]);
        h.advance(1);
        assert!(h.keys().unwrap().is_empty());
    }

    #[test]
    fn a_script_under_the_house_contract_loads_without_a_spec() {
        let dir = std::env::temp_dir().join(format!("limitlab-harness-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lua = dir.join("my fixed window.lua");
        std::fs::write(&lua, Variant::FIXED_WINDOW.script()).unwrap();
        let l = load_script(&lua, Params::new(3, 1000)).unwrap();
        assert_eq!(l.name(), "my_fixed_window");
        let mut h = Harness::new(l);
        let allowed: Vec<bool> = (0..4).map(|_| h.request("u", 1).unwrap().allowed).collect();
        assert_eq!(allowed, [true, true, true, false]);
        let tb = dir.join("tb.lua");
        std::fs::write(&tb, Variant::TOKEN_BUCKET.script()).unwrap();
        let mut h = Harness::new(load_script(&tb, Params::new(1, 1000).with_burst(3)).unwrap());
        assert_eq!((0..4).filter(|_| h.request("u", 1).unwrap().allowed).count(), 3);
        std::fs::remove_dir_all(&dir).ok();
    }
}
