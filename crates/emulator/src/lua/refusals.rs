//! Redis 7.0's refusals of scripts and functions on the server's state.
//!
//! Out of memory (`maxmemory` set and the memory used past it): a script or function that may
//! write (a shebang or function flags without `no-writes` or `allow-oom`) and FUNCTION LOAD /
//! RESTORE are refused before they run (Redis's `processCommand` gives them the `denyoom` flag); a
//! script without flags is refused its first `denyoom` command (a write that may grow memory)
//! unless it already wrote (`scriptVerifyOOM`: it cannot be stopped half-way).
//!
//! The memory used is what INFO reports ([`Core::used_memory`]); with `maxmemory` below a fresh
//! server's figure (the suite's `maxmemory 1`) the keyspace need not be walked. Keys are evicted
//! (under an eviction policy) by the checks every command passes first (`crate::admission`), not
//! here.
use crate::core::Core;

/// Redis's `shared.noreplicaserr`: `min-replicas-to-write` is set (the emulator has no replicas),
/// and a script that may write (flags without `no-writes`) is refused before it runs, one without
/// flags at its first write command unless it already wrote.
pub(crate) use crate::admission::NOREPLICAS;

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
