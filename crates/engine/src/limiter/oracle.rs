//! Asking a limiter "what would you decide?" for one subject, with or without an exact model.
//!
//! limitlab's own scripts have exact Rust models ([`Reference`]), which answer in nanoseconds. A
//! user's script has none, so its oracle runs the script itself on a private emulator and answers
//! "what if" questions ([`Oracle::probe`]) on a copy of the keyspace, put back afterwards. Both
//! answer the same questions, so searches (`attack`) and checks (`check`) work on any spec.
use super::{Decision, Limiter, Reference};
use crate::backend::emulated::EmulatedBackend;
use crate::backend::Backend;
use crate::spec::exec::Session;
use crate::Result;
use limitlab_emulator::clock::Clock;

/// Decisions for one subject, under the caller's clock (server and caller agree).
pub trait Oracle {
    /// Decides a request at `now_ms` and keeps its effects.
    fn decide(&mut self, now_ms: i64, cost: u64) -> Result<Decision>;
    /// What [`Oracle::decide`] would answer, leaving the state as it was.
    fn probe(&mut self, now_ms: i64, cost: u64) -> Result<Decision>;
}

/// The exact model of a shipped script.
struct ModelOracle {
    model: Box<dyn Reference>,
    key: String,
}

impl Oracle for ModelOracle {
    fn decide(&mut self, now_ms: i64, cost: u64) -> Result<Decision> {
        Ok(self.model.decide(&self.key, now_ms, cost))
    }
    fn probe(&mut self, now_ms: i64, cost: u64) -> Result<Decision> {
        Ok(self.model.probe(&self.key, now_ms, cost))
    }
}

/// The script itself on a private emulator.
pub struct ScriptOracle {
    limiter: Limiter,
    backend: EmulatedBackend,
    session: Session,
    subject: String,
}

impl ScriptOracle {
    pub fn new(limiter: &Limiter, subject: &str) -> ScriptOracle {
        ScriptOracle {
            limiter: limiter.clone(),
            backend: EmulatedBackend::default(),
            session: limiter.session(),
            subject: subject.to_string(),
        }
    }

    /// The emulator the script runs on (to look at its keys).
    pub fn backend(&mut self) -> &mut EmulatedBackend {
        &mut self.backend
    }
}

impl Oracle for ScriptOracle {
    fn decide(&mut self, now_ms: i64, cost: u64) -> Result<Decision> {
        self.backend.set_time_ms(now_ms);
        self.limiter.call(&mut self.backend, &mut self.session, &self.subject, now_ms, cost)
    }
    fn probe(&mut self, now_ms: i64, cost: u64) -> Result<Decision> {
        what_if(&self.limiter, &mut self.backend, &mut self.session, &self.subject, now_ms, now_ms, &[cost])
            .map(|mut v| v.remove(0))
    }
}

/// Requests of `subject` with each of `costs` in a row, the server's clock at `server_ms` and the
/// caller's at `now_ms`, then everything put back: the keyspace, the clock and the session's `seq`.
/// The one way every "what if" question is asked of a script (oracles, `check`, the test harness).
/// Stops at the first error.
pub fn what_if(
    limiter: &Limiter,
    backend: &mut EmulatedBackend,
    session: &mut Session,
    subject: &str,
    server_ms: i64,
    now_ms: i64,
    costs: &[u64],
) -> Result<Vec<Decision>> {
    let saved = backend.emu.snapshot_db();
    let clock = backend.emu.clock().now_millis();
    backend.set_time_ms(server_ms);
    let out =
        limiter.what_if(session, |s| costs.iter().map(|&c| limiter.call(backend, s, subject, now_ms, c)).collect());
    backend.emu.restore_db(saved);
    backend.emu.clock().set_millis(clock);
    out
}

impl Limiter {
    /// An oracle for `subject`: the exact model when limitlab has one, else the script on a
    /// private emulator.
    pub fn oracle(&self, subject: &str) -> Box<dyn Oracle> {
        match self.reference() {
            Some(model) => Box::new(ModelOracle { model, key: super::subject_key(subject) }),
            None => Box::new(ScriptOracle::new(self, subject)),
        }
    }
}
