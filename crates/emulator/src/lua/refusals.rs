//! Redis 7.0's refusals of scripts and functions on the server's state.
//!
//! Out of memory (`maxmemory` set and the memory used past it): a script or function that may write (a shebang or function flags without
//! `no-writes` or `allow-oom`) and FUNCTION LOAD / RESTORE are refused before they run (Redis's
//! `processCommand` gives them the `denyoom` flag); a script without flags is refused its first
//! `denyoom` command (a write that may grow memory) unless it already wrote (`scriptVerifyOOM`:
//! it cannot be stopped half-way).
//!
//! The memory used is what INFO reports (Redis's figure at startup plus the dataset's estimated
//! usage); with `maxmemory` below the startup figure (the suite's `maxmemory 1`) the keyspace need
//! not be walked. The emulator evicts nothing: a `maxmemory-policy` other than `noeviction` would
//! make room on Redis first.
use crate::core::{Core, DATABASES};

/// Redis's `shared.noreplicaserr`: `min-replicas-to-write` is set (the emulator has no replicas),
/// and a script that may write (flags without `no-writes`) is refused before it runs, one without
/// flags at its first write command unless it already wrote.
pub(crate) const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";

/// Redis's `shared.oomerr`.
pub(crate) const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// Whether `maxmemory` is set and the memory used is past it.
pub(crate) fn out_of_memory(core: &mut Core) -> bool {
    let max = core.settings.maxmemory();
    if max <= 0 {
        return false;
    }
    let max = max as u64;
    let startup = crate::cmd::info::USED_MEMORY_STARTUP;
    if startup > max {
        return true;
    }
    let cluster = core.cluster;
    let mut used = startup;
    for db in 0..DATABASES {
        for (k, e) in core.db_at(db).map.iter() {
            used += crate::object_size::key_usage(k.as_slice(), e, 5, cluster);
            if used > max {
                return true;
            }
        }
    }
    false
}
