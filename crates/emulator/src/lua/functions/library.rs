//! What FUNCTION LOAD registers: a library's functions, their flags, and the rule for names.
use std::cell::RefCell;
use std::os::raw::c_int;

/// Script flags (`scripts_flags_def`), in Redis's order.
pub(crate) const FLAG_NAMES: [&str; 5] =
    ["no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"];
pub(crate) const NO_WRITES: u8 = 1;
pub(crate) const ALLOW_OOM: u8 = 2;
pub(crate) const NO_CLUSTER: u8 = 8;
pub(crate) const ALLOW_CROSS_SLOT: u8 = 16;

/// One registered function.
pub(crate) struct Func {
    pub(crate) name: Vec<u8>,
    pub(crate) desc: Option<Vec<u8>>,
    pub(crate) flags: u8,
    /// The callback, in the functions VM's registry.
    pub(crate) fref: c_int,
}

/// What `redis.register_function` collects while FUNCTION LOAD runs a library (None otherwise).
#[derive(Default)]
pub(crate) struct LoadCtx {
    pub(crate) registered: RefCell<Option<Vec<Func>>>,
}

/// `functionsVerifyName`: letters, digits and underscores, at least one.
pub(crate) fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

pub(crate) const BAD_NAME: &str =
    "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";
