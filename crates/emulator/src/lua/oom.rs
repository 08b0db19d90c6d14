//! Redis 7.0's out-of-memory rules for scripts and functions, with `maxmemory` set and the memory
//! used past it: a script or function that may write (a shebang or function flags without
//! `no-writes` or `allow-oom`) and FUNCTION LOAD / RESTORE are refused before they run (Redis's
//! `processCommand` gives them the `denyoom` flag); a script without flags is refused its first
//! `denyoom` command (a write that may grow memory) unless it already wrote (`scriptVerifyOOM`:
//! it cannot be stopped half-way).
//!
//! The memory used is what INFO reports (Redis's figure at startup plus the dataset's estimated
//! usage); with `maxmemory` below the startup figure (the suite's `maxmemory 1`) the keyspace need
//! not be walked. The emulator evicts nothing: a `maxmemory-policy` other than `noeviction` would
//! make room on Redis first.
use crate::core::Core;

/// Redis's `shared.oomerr`.
pub(crate) use crate::admission::OOM;

/// Whether `maxmemory` is set and the memory used is past it (no key is evicted here: Redis judges a
/// script by the state before it started, after `processCommand`'s evictions).
pub(crate) fn out_of_memory(core: &mut Core) -> bool {
    let max = core.settings.maxmemory();
    if max <= 0 {
        return false;
    }
    let max = max as u64;
    max < crate::admission::USED_MEMORY_STARTUP || core.used_memory() > max
}
