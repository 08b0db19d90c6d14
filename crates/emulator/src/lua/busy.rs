//! A script that runs long, as Redis 7.0 handles it: once a script or function has run for
//! `busy-reply-threshold` milliseconds (alias `lua-time-limit`), Redis's count hook starts serving
//! the other clients while the script goes on (`processEventsWhileBlocked`): they get `BUSY` for
//! everything but the few commands allowed then, and `SCRIPT KILL`/`FUNCTION KILL` can stop a
//! script that has not written. The emulator has no event loop of its own: its embedder (the
//! server) installs a [`BusyHandler`], which the count hook calls at every tick once the threshold
//! has passed, and which says whether to kill the script.
//!
//! The threshold is measured on the machine's clock, as Redis measures it (the virtual clock stands
//! still while a script runs), and only when a handler is installed: an emulator without one (the
//! simulations, `check`) never reads the machine's clock here and stays deterministic.
//!
//! With a handler installed, FUNCTION LOAD also gets Redis's load timeout (500 ms of real time).
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::clock::Stopwatch;
use crate::reply::Reply;

use super::context::RunState;

/// Redis's `LOAD_TIMEOUT_MS`: how long a library's load-time code may run.
const LOAD_TIMEOUT_MS: u128 = 500;

/// What the busy handler says at each tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusyAction {
    /// Let the script go on.
    Continue,
    /// Kill it (SCRIPT KILL or FUNCTION KILL accepted, or SHUTDOWN NOSAVE): its caller gets
    /// `ERR Script killed by user with SCRIPT KILL...`.
    Kill,
}

/// What the embedder learns of the script that has run past the threshold.
#[derive(Debug)]
pub struct BusyScript<'a> {
    /// An EVAL-family script (true) or a function (FCALL, FCALL_RO): SCRIPT KILL stops only the
    /// first, FUNCTION KILL only the second, and their BUSY texts differ.
    pub eval: bool,
    /// The function's name (a script's SHA1).
    pub name: &'a str,
    /// The command that runs it, as the client sent it (for a function; empty for a script).
    pub command: &'a [Vec<u8>],
    /// How long it has run.
    pub duration_ms: u64,
    /// It has called a write command: it can no longer be killed (UNKILLABLE).
    pub wrote: bool,
    /// The loaded libraries and their functions (FUNCTION STATS's `engines`).
    pub libraries: usize,
    pub functions: usize,
}

impl BusyScript<'_> {
    /// FUNCTION STATS while this function runs (`running_script` filled in); the embedder answers
    /// `BUSY` instead while a script runs, as Redis does.
    pub fn function_stats(&self) -> Reply {
        let b = |s: &str| Reply::bulk(s.as_bytes().to_vec());
        let running = Reply::Map(vec![
            (b("name"), b(self.name)),
            (b("command"), Reply::Array(self.command.iter().map(|a| Reply::Bulk(a.clone())).collect())),
            (b("duration_ms"), Reply::Int(self.duration_ms as i64)),
        ]);
        Reply::Map(vec![
            (b("running_script"), running),
            (
                b("engines"),
                Reply::Map(vec![(
                    b("LUA"),
                    Reply::Map(vec![
                        (b("libraries_count"), Reply::Int(self.libraries as i64)),
                        (b("functions_count"), Reply::Int(self.functions as i64)),
                    ]),
                )]),
            ),
        ])
    }
}

/// The embedder's handler: called from the count hook with the script running. It must not call
/// back into the emulator (which is running the script) and should return quickly.
pub type BusyHandler = Rc<dyn Fn(&BusyScript<'_>) -> BusyAction>;

/// The busy bookkeeping of a run, in the run state the hook reads.
#[derive(Default)]
pub(crate) struct BusyState {
    pub(crate) handler: RefCell<Option<BusyHandler>>,
    /// When the run (or FUNCTION LOAD's code) started: None when no handler is installed, and the
    /// hook then skips everything here.
    pub(crate) since: Cell<Option<Stopwatch>>,
    /// `busy-reply-threshold` as of the run's start, in ms.
    pub(crate) threshold_ms: Cell<u64>,
    /// The threshold has passed: the handler is called at every tick.
    pub(crate) timed_out: Cell<bool>,
    /// The run called a write command (Redis's `SCRIPT_WRITE_DIRTY`).
    pub(crate) wrote: Cell<bool>,
    /// The run is an EVAL-family script (else a function).
    pub(crate) eval: Cell<bool>,
    /// The run's name (a function's name, a script's SHA1).
    pub(crate) name: RefCell<String>,
    /// FCALL's whole command (for FUNCTION STATS), set only while a handler is installed.
    pub(crate) command: RefCell<Vec<Vec<u8>>>,
    /// The libraries and functions loaded, as of the FCALL.
    pub(crate) counts: Cell<(usize, usize)>,
    /// The handler asked for the kill.
    pub(crate) by_user: Cell<bool>,
    /// Set from outside the thread (a server's signal handler): the run is killed at the next tick,
    /// before `busy-reply-threshold` too.
    pub(crate) stop: Cell<Option<&'static std::sync::atomic::AtomicBool>>,
}

impl BusyState {
    /// Whether a handler is installed.
    pub(crate) fn on(&self) -> bool {
        self.handler.borrow().is_some()
    }

    /// A run starts: with a handler installed, its stopwatch starts.
    pub(crate) fn begin(&self, name: &str, eval: bool, threshold_ms: Option<i64>) {
        self.wrote.set(false);
        self.by_user.set(false);
        self.timed_out.set(false);
        match threshold_ms {
            Some(t) => {
                self.threshold_ms.set(t.max(0) as u64);
                self.eval.set(eval);
                let mut n = self.name.borrow_mut();
                n.clear();
                n.push_str(name);
                if eval {
                    self.command.borrow_mut().clear();
                }
                self.since.set(Some(Stopwatch::start()));
            }
            None => self.since.set(None),
        }
    }

    /// The run is over.
    pub(crate) fn end(&self) {
        self.since.set(None);
        self.timed_out.set(false);
    }
}

/// The count hook's tick with a handler installed (`since` set): whether to kill the run now.
/// During FUNCTION LOAD: whether the load timeout has passed.
pub(crate) fn tick(st: &RunState) -> bool {
    let b = &st.busy;
    let Some(since) = b.since.get() else { return false };
    if b.stop.get().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed)) {
        b.by_user.set(true);
        return true;
    }
    let ms = since.elapsed().as_millis();
    if st.loading.get() {
        return ms >= LOAD_TIMEOUT_MS;
    }
    if !b.timed_out.get() {
        if ms < b.threshold_ms.get() as u128 {
            return false;
        }
        b.timed_out.set(true);
    }
    let Some(handler) = b.handler.borrow().clone() else { return false };
    let (libraries, functions) = b.counts.get();
    let name = b.name.borrow();
    let command = b.command.borrow();
    let info = BusyScript {
        eval: b.eval.get(),
        name: &name,
        command: &command,
        duration_ms: ms.min(u64::MAX as u128) as u64,
        wrote: b.wrote.get(),
        libraries,
        functions,
    };
    // The hook runs inside Lua's C frames, which a panic must not unwind through: a handler that
    // panics lets the script go on.
    let action = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(&info)));
    if matches!(action, Ok(BusyAction::Kill)) {
        b.by_user.set(true);
        return true;
    }
    false
}
