//! What a run shares with the C functions inside a VM: the state of the script being run, and the
//! call context the C closures get as their upvalue.
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::cmd;
use crate::core::Core;

/// State of the script being run, shared with the Rust callbacks inside the VM.
pub(crate) struct RunState {
    /// EVAL_RO / EVALSHA_RO: write commands are refused.
    pub(crate) read_only: Cell<bool>,
    /// The protocol `redis.setresp` chose (2 or 3); reset to 2 for every script.
    pub(crate) resp: Cell<u8>,
    /// Loop iterations and calls left before the script is killed.
    pub(crate) budget_left: Cell<i64>,
    /// Set once the budget ran out; the hook then raises at every chance, so `pcall` cannot swallow it.
    pub(crate) killed: Cell<bool>,
    /// Cluster mode: the slot the script is bound to (from its declared keys or first key touched).
    pub(crate) slot: Cell<Option<u16>>,
    /// The function running has the `allow-cross-slot-keys` flag.
    pub(crate) cross_slot: Cell<bool>,
    /// FUNCTION LOAD is running a library's code (the budget hook then raises Redis's load timeout).
    pub(crate) loading: Cell<bool>,
    /// How many bytes of Lua memory one run may add to what the VM held at its start (0: no cap).
    pub(crate) memory_room: Cell<usize>,
    /// The commands `redis.call` found lately (see [`cmd::LookupCache`]).
    pub(crate) commands: RefCell<cmd::LookupCache>,
    /// `maxmemory` was set and passed when the run started (Redis's `pre_command_oom_state`).
    pub(crate) oom_at_start: Cell<bool>,
    /// The script or function has the `allow-oom` flag.
    pub(crate) allow_oom: Cell<bool>,
    /// The embedder's busy handler and what it is told of a long run (see [`super::busy`]).
    pub(crate) busy: super::busy::BusyState,
    /// The caller's user may run any command on any key (`Core::acl_unrestricted`), judged at the
    /// run's first `redis.call` (None before it): no script can change a user or the caller's login
    /// (ACL, AUTH and CONFIG are `noscript`), so `redis.call` skips the ACL check for the rest of
    /// the run.
    pub(crate) acl_open: Cell<Option<bool>>,
    /// Line tracing, for naming the line that made a script's reply: off (`None`), or the last run's
    /// name (the script's SHA, or the function's name) and the last line of its own chunk that ran
    /// (0: none yet). See [`super::Scripting::set_line_trace`].
    pub(crate) lines: RefCell<Option<(String, i32)>>,
}

/// What the C functions need; owned by the VM and handed to them as a light userdata upvalue.
pub(crate) struct CallCtx {
    pub core: Rc<RefCell<Core>>,
    pub state: Rc<RunState>,
    /// Scratch space for numbers formatted as arguments (reused, so a call allocates nothing).
    pub numbuf: RefCell<Vec<u8>>,
    /// Redis's `math.random` stream (shared by every VM of a server, as Redis's is).
    pub rng: Rc<super::rand48::Rand48>,
}
