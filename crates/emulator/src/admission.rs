//! The checks Redis 7.0's `processCommand` makes against the server's state before it runs (or
//! queues) a command: `maxmemory` (evicting keys under an eviction policy, else OOM for commands
//! that may use memory), `min-replicas-to-write` (NOREPLICAS for writes: the emulator has no
//! replicas), a replica's read-only mode (READONLY) and stale data (MASTERDOWN), and the commands a
//! transaction may not hold. The command's flags are Redis's own, from the recorded command table;
//! EXEC carries the flags of the commands it queued.
use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use crate::cmd::command::redis_table;
use crate::command_spec::CommandSpec;
use crate::core::{Core, DATABASES};

/// Redis's command flags that these checks read.
pub mod rflags {
    pub const WRITE: u8 = 1;
    pub const DENYOOM: u8 = 2;
    /// Allowed on a replica whose master link is down (`stale`).
    pub const STALE: u8 = 4;
    /// Refused inside MULTI (`no_multi`).
    pub const NO_MULTI: u8 = 8;
    /// Reads or writes the keyspace (`readonly`, `write` or `may_replicate`): refused to a MONITOR
    /// client.
    pub const KEYSPACE: u8 = 16;
    /// Not shown to MONITOR (`admin`, `skip_monitor`).
    pub const UNMONITORED: u8 = 32;
    /// `readonly`: the keys it reads are remembered for a tracking client.
    pub const READONLY: u8 = 64;
}

pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
pub const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
pub const READONLY: &str = "READONLY You can't write against a read only replica.";
pub const MASTERDOWN: &str = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";
pub const NO_MULTI: &str = "ERR Command not allowed inside a transaction";

fn bits(flags: &[String]) -> u8 {
    let mut b = 0;
    for f in flags {
        b |= match f.as_str() {
            "write" => rflags::WRITE | rflags::KEYSPACE,
            "denyoom" => rflags::DENYOOM,
            "stale" => rflags::STALE,
            "no_multi" => rflags::NO_MULTI,
            "readonly" => rflags::KEYSPACE | rflags::READONLY,
            "may_replicate" => rflags::KEYSPACE,
            "admin" | "skip_monitor" => rflags::UNMONITORED,
            _ => 0,
        };
    }
    b
}

/// Redis's flags of a command (of its subcommand `sub`, for a container), from the recorded table.
pub fn redis_flags(spec: &CommandSpec, sub: Option<&'static str>) -> u8 {
    static FLAGS: OnceLock<FxHashMap<(&'static str, &'static str), u8>> = OnceLock::new();
    let all = FLAGS.get_or_init(|| {
        let mut m = FxHashMap::default();
        for c in redis_table().values() {
            m.insert((c.name.as_str(), ""), bits(&c.flags));
            for s in &c.subcommands {
                let short = s.name.split_once('|').map_or(s.name.as_str(), |(_, n)| n);
                m.insert((c.name.as_str(), short), bits(&s.flags));
            }
        }
        m
    });
    all.get(&(spec.name, sub.unwrap_or(""))).or_else(|| all.get(&(spec.name, ""))).copied().unwrap_or(0)
}

/// What EXEC's checks see: the commands it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A command on its own (`flags` its Redis flags).
    Plain,
    /// EXEC: `flags` are the union of the queued commands' flags, `any_not_stale` whether one of
    /// them lacks `stale`.
    Exec { any_not_stale: bool },
    /// DISCARD, QUIT, RESET: never refused for memory.
    Discard,
}

impl Core {
    /// Whether any of the checks can refuse anything now: the fast path of every command.
    #[inline]
    pub fn guarded(&self) -> bool {
        self.settings.maxmemory() != 0 || self.settings.min_replicas() || self.master.is_some()
    }

    /// The error Redis would refuse a command with before running it (or queueing it, `in_multi`),
    /// evicting keys first when `maxmemory` is exceeded under an eviction policy.
    pub fn refusal(&mut self, flags: u8, kind: Kind, in_multi: bool) -> Option<&'static str> {
        let is_write = flags & rflags::WRITE != 0;
        if self.settings.maxmemory() != 0 && !self.in_script() {
            let out_of_memory = !self.perform_evictions();
            self.pre_command_oom = out_of_memory;
            let reject = flags & rflags::DENYOOM != 0 || (in_multi && kind == Kind::Plain);
            if out_of_memory && reject {
                return Some(OOM);
            }
        }
        if is_write && self.master.is_none() && self.settings.min_replicas() {
            return Some(NOREPLICAS);
        }
        if self.master.is_some() {
            if is_write && self.settings.flag("replica-read-only") {
                return Some(READONLY);
            }
            let stale_denied = match kind {
                Kind::Exec { any_not_stale } => any_not_stale,
                _ => flags & rflags::STALE == 0,
            };
            if stale_denied && !self.settings.flag("replica-serve-stale-data") {
                return Some(MASTERDOWN);
            }
        }
        None
    }

    /// `used_memory` as INFO reports it: a fresh server's plus every key's MEMORY USAGE.
    pub fn used_memory(&mut self) -> u64 {
        let cluster = self.cluster;
        let mut dataset = 0u64;
        for db in 0..DATABASES {
            for (k, e) in self.db_at(db).map.iter() {
                dataset += crate::object_size::key_usage(k.as_slice(), e, 5, cluster);
            }
        }
        USED_MEMORY_STARTUP + dataset
    }

    /// Redis's `performEvictions`: under `maxmemory`, or brought under it by evicting keys as
    /// `maxmemory-policy` says (the least recently used first for the LRU and LFU policies, the
    /// nearest deadline for `volatile-ttl`, a fixed pseudo-random order for the random ones).
    /// False when the memory stays over the limit (`noeviction`, or nothing left to evict).
    pub fn perform_evictions(&mut self) -> bool {
        let max = self.settings.maxmemory();
        if max <= 0 {
            return true;
        }
        let max = max as u64;
        // A fresh server alone is over a limit below its startup memory: no key can help.
        if max < USED_MEMORY_STARTUP && self.settings.get("maxmemory-policy") == b"noeviction" {
            return false;
        }
        let mut used = self.used_memory();
        if used <= max {
            return true;
        }
        let policy = String::from_utf8_lossy(self.settings.get("maxmemory-policy")).into_owned();
        if policy == "noeviction" {
            return false;
        }
        let volatile = policy.starts_with("volatile-");
        let now = self.now_ms();
        let cluster = self.cluster;
        let mut candidates: Vec<(i64, usize, Vec<u8>, u64)> = Vec::new();
        for db in 0..DATABASES {
            for (k, e) in self.db_at(db).map.iter() {
                if volatile && e.expire_at.is_none() {
                    continue;
                }
                let rank = if policy.ends_with("-ttl") {
                    e.expire_at.unwrap_or(i64::MAX)
                } else if policy.ends_with("-random") {
                    (crate::keyspace::scan_hash(k.as_slice()) >> 1) as i64
                } else {
                    e.lru_ms
                };
                let cost = crate::object_size::key_usage(k.as_slice(), e, 5, cluster);
                candidates.push((rank, db, k.as_slice().to_vec(), cost));
            }
        }
        candidates.sort();
        for (_, db, key, cost) in candidates {
            self.db_at(db).remove(&key, now);
            self.touch_in(db, &key);
            crate::propagate::evicted(self, db, &key);
            self.stats.evicted_keys += 1;
            let selected = self.selected;
            self.select(db);
            self.notify(crate::settings::notify::EVICTED, "evicted", &key);
            self.select(selected);
            used = used.saturating_sub(cost);
            if used <= max {
                return true;
            }
        }
        false
    }
}

/// A fresh Redis 7.0.15's `used_memory` (the startup figure of a private server).
pub const USED_MEMORY_STARTUP: u64 = 876_048;

#[cfg(test)]
mod tests {
    use crate::reply::Reply;
    use crate::Emulator;

    fn run(emu: &mut Emulator, line: &str) -> Reply {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        emu.execute(&args)
    }

    /// Over `maxmemory`, `noeviction` refuses commands that may use memory (not reads, not DEL);
    /// an `allkeys-lru` policy evicts the least recently used keys until the data fits, and
    /// counts them.
    #[test]
    fn maxmemory_refuses_or_evicts() {
        let mut emu = Emulator::new();
        for i in 0..50 {
            run(&mut emu, &format!("SET key{i} {}", "x".repeat(100)));
            emu.clock().advance_millis(1);
        }
        let used = emu.core().used_memory();
        run(&mut emu, &format!("CONFIG SET maxmemory {}", used - 1000));
        assert_eq!(run(&mut emu, "SET another v"), Reply::err(super::OOM));
        assert_eq!(run(&mut emu, "GET key0"), Reply::Bulk("x".repeat(100).into_bytes()));
        assert_eq!(run(&mut emu, "DEL key49"), Reply::Int(1));
        run(&mut emu, "CONFIG SET maxmemory-policy allkeys-lru");
        run(&mut emu, &format!("CONFIG SET maxmemory {}", used - 3000));
        assert_eq!(run(&mut emu, "SET another v"), Reply::ok());
        assert!(emu.core().used_memory() <= (used - 3000) + 200);
        // key0 was read last, so keys 1.. went first.
        assert_ne!(run(&mut emu, "EXISTS key0"), Reply::Int(0));
        assert_eq!(run(&mut emu, "EXISTS key1"), Reply::Int(0));
        let evicted = emu.core().stats.evicted_keys;
        assert!(evicted >= 10, "{evicted}");
    }

    /// `min-replicas-to-write` refuses writes (not reads); REPLICAOF makes writes READONLY and,
    /// with `replica-serve-stale-data no`, most commands MASTERDOWN; EXEC is refused for what
    /// it queued.
    #[test]
    fn replicas_and_replica_states() {
        let mut emu = Emulator::new();
        let c = emu.connect();
        let on = |emu: &mut Emulator, line: &str| {
            let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
            emu.execute_as(c, &args)
        };
        run(&mut emu, "CONFIG SET min-replicas-to-write 1");
        assert_eq!(on(&mut emu, "SET k v"), Reply::err(super::NOREPLICAS));
        assert_eq!(on(&mut emu, "GET k"), Reply::Nil);
        run(&mut emu, "CONFIG SET min-replicas-to-write 0");
        on(&mut emu, "MULTI");
        on(&mut emu, "SET k v");
        run(&mut emu, "CONFIG SET min-replicas-to-write 1");
        assert_eq!(
            on(&mut emu, "EXEC"),
            Reply::err("EXECABORT Transaction discarded because of: NOREPLICAS Not enough good replicas to write.")
        );
        run(&mut emu, "CONFIG SET min-replicas-to-write 0");
        assert_eq!(run(&mut emu, "REPLICAOF localhost 1"), Reply::ok());
        assert_eq!(on(&mut emu, "SET k v"), Reply::err(super::READONLY));
        run(&mut emu, "CONFIG SET replica-serve-stale-data no");
        assert_eq!(on(&mut emu, "GET k"), Reply::err(super::MASTERDOWN));
        assert_eq!(run(&mut emu, "REPLICAOF no one"), Reply::ok());
        assert_eq!(on(&mut emu, "SET k v"), Reply::ok());
        on(&mut emu, "MULTI");
        assert_eq!(on(&mut emu, "SAVE"), Reply::err(super::NO_MULTI));
        assert_eq!(on(&mut emu, "EXEC"), Reply::err("EXECABORT Transaction discarded because of previous errors."));
    }
}
