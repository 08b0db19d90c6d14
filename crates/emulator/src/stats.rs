//! The counters INFO reports (Redis's `server.stat_*`, the command table's per-command counters and
//! the error table), which CONFIG RESETSTAT zeroes.
//!
//! Counting follows Redis 7.0's `call()` and `rejectCommand()`: a command that runs adds one call
//! (and its time) and, when it replied an error, one failed call; a command refused before it runs
//! (wrong number of arguments, OOM, NOREPLICAS, ...) adds one rejected call; every error reply adds
//! one to its code's count (`errorstat_ERR`, `errorstat_WRONGTYPE`, ...). A command is counted
//! under its Redis name, a container's subcommand under `container|sub`.
use rustc_hash::FxHashMap;

use crate::command_spec::CommandSpec;

/// One command's counters (`cmdstat_<name>:calls=..,usec=..,usec_per_call=..,rejected_calls=..,failed_calls=..`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommandStat {
    pub calls: u64,
    pub usec: u64,
    pub rejected: u64,
    pub failed: u64,
}

/// A command as the statistics name it: the command, and the subcommand of a container.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StatKey {
    pub name: &'static str,
    pub sub: Option<&'static str>,
}

impl StatKey {
    pub fn of(spec: &CommandSpec, sub: Option<&'static str>) -> StatKey {
        StatKey { name: spec.name, sub }
    }

    /// `get`, `config|set`.
    pub fn full_name(&self) -> String {
        match self.sub {
            Some(s) => format!("{}|{}", self.name, s.to_ascii_lowercase()),
            None => self.name.to_string(),
        }
    }
}

/// Every counter INFO shows that commands move.
#[derive(Debug, Default)]
pub struct Stats {
    /// By command, keyed by the address of its `&'static` name (one cheap hash per command).
    commands: FxHashMap<(usize, usize), (StatKey, CommandStat)>,
    /// By error code (the first word of the error text).
    pub errors: FxHashMap<String, u64>,
    pub total_error_replies: u64,
    /// Commands processed (Redis's `stat_numcommands`): every command a client sent that ran.
    pub total_commands: u64,
    /// Connections opened.
    pub total_connections: u64,
    /// Keys removed because their deadline had passed, and keys evicted under `maxmemory`.
    pub expired_keys: u64,
    pub evicted_keys: u64,
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    /// The errors of the commands a script called during the current command: counted when they
    /// happened, so the script's own error reply, when it is one of them, is not counted again.
    script_errors: Vec<String>,
}

fn addr(s: &'static str) -> usize {
    s.as_ptr() as usize
}

impl Stats {
    #[inline]
    fn entry(&mut self, key: StatKey) -> &mut CommandStat {
        let k = (addr(key.name), key.sub.map_or(0, addr));
        &mut self.commands.entry(k).or_insert((key, CommandStat::default())).1
    }

    /// A command ran, for `usec` microseconds, and replied an error or not.
    #[inline]
    pub fn call(&mut self, key: StatKey, usec: u64, failed: bool) {
        let s = self.entry(key);
        s.calls += 1;
        s.usec += usec;
        s.failed += failed as u64;
    }

    /// A command was refused before it ran.
    pub fn rejected(&mut self, key: StatKey) {
        self.entry(key).rejected += 1;
    }

    /// An error reply went to a client: counted under its code (Redis's `afterErrorReply`).
    pub fn error_reply(&mut self, text: &str) {
        self.total_error_replies += 1;
        // The code is what comes before a space in the first 32 bytes; without one, `ERR`. Redis
        // keeps at most 128 different codes.
        let code = match text.as_bytes().iter().take(32).position(|&c| c == b' ') {
            Some(end) => &text[..end],
            None => "ERR",
        };
        let full = self.errors.len() >= 128;
        match self.errors.get_mut(code) {
            Some(n) => *n += 1,
            None if !full => {
                self.errors.insert(code.to_string(), 1);
            }
            None => {}
        }
    }

    /// A command called by a script replied an error: counted now, and remembered (see
    /// [`Stats::reply_error`]).
    pub fn script_error(&mut self, text: &str) {
        self.error_reply(text);
        self.script_errors.push(text.to_string());
    }

    /// A client command's error reply: counted, unless it passes on the error of a command its
    /// script called, which was counted then (Redis's `ERR_REPLY_FLAG_NO_STATS_UPDATE`).
    pub fn reply_error(&mut self, text: &str) {
        if !self.script_errors.iter().any(|e| text.starts_with(e.as_str())) {
            self.error_reply(text);
        }
    }

    /// A client command starts.
    #[inline]
    pub fn command_starts(&mut self) {
        if !self.script_errors.is_empty() {
            self.script_errors.clear();
        }
    }

    /// The counters of one command, if it has any.
    pub fn command(&self, full_name: &str) -> Option<CommandStat> {
        self.commands.values().find(|(k, _)| k.full_name() == full_name).map(|(_, s)| *s)
    }

    /// Every command with counters, by name (INFO commandstats's order is the table's; by name here).
    pub fn commands(&self) -> Vec<(String, CommandStat)> {
        let mut v: Vec<(String, CommandStat)> = self.commands.values().map(|(k, s)| (k.full_name(), *s)).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// CONFIG RESETSTAT: every counter back to zero.
    pub fn reset(&mut self) {
        *self = Stats::default();
    }
}

impl crate::core::Core {
    /// INFO's `keyspace_hits` and `keyspace_misses`: every key a reading command looks up (Redis's
    /// `lookupKeyRead`), found live or not, counted before the command runs.
    #[inline]
    pub fn count_lookups(&mut self, spec: &crate::command_spec::CommandSpec, args: &[&[u8]]) {
        use crate::command_spec::flags;
        if !spec.has(flags::READONLY) && !matches!(spec.name, "getdel" | "getex" | "sort") {
            return;
        }
        let ks = spec.keys;
        let now = self.now_ms();
        let (mut hits, mut misses) = (0, 0);
        let mut count = |db: &crate::keyspace::Db, k: &[u8]| {
            if db.peek(k, now).is_some() {
                hits += 1;
            } else {
                misses += 1;
            }
        };
        if ks.movable.is_some() {
            for k in ks.keys(args) {
                count(&self.db, k);
            }
        } else if ks.first > 0 && args.len() > ks.first as usize {
            let last = if ks.last < 0 { args.len() as i32 + ks.last } else { ks.last.min(args.len() as i32 - 1) };
            let mut i = ks.first;
            while i <= last {
                count(&self.db, args[i as usize]);
                i += ks.step.max(1);
            }
        }
        self.stats.keyspace_hits += hits;
        self.stats.keyspace_misses += misses;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_command_and_error_code() {
        let get = crate::cmd::lookup(b"get").unwrap();
        let config = crate::cmd::lookup(b"config").unwrap();
        let mut s = Stats::default();
        s.call(StatKey::of(get, None), 3, false);
        s.call(StatKey::of(get, None), 2, true);
        s.rejected(StatKey::of(get, None));
        s.call(StatKey::of(config, Some("SET")), 1, false);
        assert_eq!(s.command("get"), Some(CommandStat { calls: 2, usec: 5, rejected: 1, failed: 1 }));
        assert_eq!(s.command("config|set").map(|c| c.calls), Some(1));
        s.error_reply("WRONGTYPE Operation against a key holding the wrong kind of value");
        s.error_reply("ERR x");
        s.error_reply("ERR y");
        assert_eq!(s.errors.get("ERR"), Some(&2));
        assert_eq!(s.total_error_replies, 3);
        s.reset();
        assert_eq!(s.command("get"), None);
        assert!(s.errors.is_empty());
    }
}
