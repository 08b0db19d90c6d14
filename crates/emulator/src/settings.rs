//! The server's configuration parameters (what CONFIG GET reads and CONFIG SET changes), with Redis
//! 7.0.15's names, aliases, defaults and validation rules, and typed readers for the parameters
//! whose behaviour the emulator has (`maxmemory`, `busy-reply-threshold`, `notify-keyspace-events`,
//! the encoding thresholds, `min-replicas-to-write`, `proto-max-bulk-len`, ...).
//!
//! The defaults are a real 7.0.15's `CONFIG GET *` (`cmd/redis_config.resp`). A parameter is stored
//! under its canonical name (`busy-reply-threshold` for `lua-time-limit`, `hash-max-listpack-*` for
//! `hash-max-ziplist-*`, `replica*` for `slave*`), so an alias reads what the other name set.
use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use crate::reply::Reply;

/// `(alias, canonical name)`: Redis 7.0's deprecated names that read and write another parameter.
const ALIASES: &[(&str, &str)] = &[
    ("lua-time-limit", "busy-reply-threshold"),
    ("hash-max-ziplist-entries", "hash-max-listpack-entries"),
    ("hash-max-ziplist-value", "hash-max-listpack-value"),
    ("zset-max-ziplist-entries", "zset-max-listpack-entries"),
    ("zset-max-ziplist-value", "zset-max-listpack-value"),
    ("list-max-ziplist-size", "list-max-listpack-size"),
    ("slaveof", "replicaof"),
    ("slave-serve-stale-data", "replica-serve-stale-data"),
    ("slave-read-only", "replica-read-only"),
    ("slave-ignore-maxmemory", "replica-ignore-maxmemory"),
    ("slave-lazy-flush", "replica-lazy-flush"),
    ("slave-priority", "replica-priority"),
    ("slave-announce-ip", "replica-announce-ip"),
    ("slave-announce-port", "replica-announce-port"),
    ("min-slaves-to-write", "min-replicas-to-write"),
    ("min-slaves-max-lag", "min-replicas-max-lag"),
    ("repl-ping-slave-period", "repl-ping-replica-period"),
    ("cluster-slave-validity-factor", "cluster-replica-validity-factor"),
    ("cluster-slave-no-failover", "cluster-replica-no-failover"),
];

/// Parameters fixed at startup ("can't set immutable config").
const IMMUTABLE: &[&str] = &[
    "daemonize",
    "databases",
    "cluster-enabled",
    "cluster-config-file",
    "cluster-port",
    "pidfile",
    "supervised",
    "syslog-enabled",
    "syslog-ident",
    "syslog-facility",
    "unixsocket",
    "unixsocketperm",
    "logfile",
    "aclfile",
    "always-show-logo",
    "io-threads",
    "io-threads-do-reads",
    "disable-thp",
    "enable-protected-configs",
    "enable-debug-command",
    "enable-module-command",
    "tcp-backlog",
    "appenddirname",
    "set-proc-title",
];

/// Parameters Redis refuses while `enable-protected-configs` is `no` (its default).
const PROTECTED: &[&str] = &["dir", "dbfilename"];

/// Parameters taking one of a few words.
const ENUMS: &[(&str, &[&str])] = &[
    ("appendfsync", &["always", "everysec", "no"]),
    ("loglevel", &["debug", "verbose", "notice", "warning"]),
    (
        "maxmemory-policy",
        &[
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
            "noeviction",
        ],
    ),
    ("repl-diskless-load", &["disabled", "on-empty-db", "swapdb"]),
    ("acl-pubsub-default", &["allchannels", "resetchannels"]),
    ("cluster-preferred-endpoint-type", &["ip", "hostname", "unknown-endpoint"]),
    ("propagation-error-behavior", &["ignore", "panic", "panic-on-replicas"]),
    ("sanitize-dump-payload", &["no", "yes", "clients"]),
];

/// Numeric parameters that take memory units (`1mb`, `10gb`).
const MEMORY: &[&str] = &[
    "maxmemory",
    "maxmemory-clients",
    "proto-max-bulk-len",
    "client-query-buffer-limit",
    "active-defrag-ignore-bytes",
    "repl-backlog-size",
    "auto-aof-rewrite-min-size",
    "stream-node-max-bytes",
    "hash-max-listpack-value",
    "zset-max-listpack-value",
    "hll-sparse-max-bytes",
];

/// The keyspace notification classes, as `notify-keyspace-events` spells them.
pub mod notify {
    pub const KEYSPACE: u32 = 1 << 0;
    pub const KEYEVENT: u32 = 1 << 1;
    pub const GENERIC: u32 = 1 << 2;
    pub const STRING: u32 = 1 << 3;
    pub const LIST: u32 = 1 << 4;
    pub const SET: u32 = 1 << 5;
    pub const HASH: u32 = 1 << 6;
    pub const ZSET: u32 = 1 << 7;
    pub const EXPIRED: u32 = 1 << 8;
    pub const EVICTED: u32 = 1 << 9;
    pub const STREAM: u32 = 1 << 10;
    pub const KEY_MISS: u32 = 1 << 11;
    pub const MODULE: u32 = 1 << 12;
    pub const NEW: u32 = 1 << 13;
    /// `A`: every class but `m` and `n`.
    pub const ALL: u32 = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
}

/// Parses a `notify-keyspace-events` value as Redis's `keyspaceEventsStringToFlags` does.
pub fn notify_flags_from(s: &[u8]) -> Option<u32> {
    use notify::*;
    let mut f = 0;
    for &c in s {
        f |= match c {
            b'A' => ALL,
            b'g' => GENERIC,
            b'$' => STRING,
            b'l' => LIST,
            b's' => SET,
            b'h' => HASH,
            b'z' => ZSET,
            b'x' => EXPIRED,
            b'e' => EVICTED,
            b'K' => KEYSPACE,
            b'E' => KEYEVENT,
            b't' => STREAM,
            b'm' => KEY_MISS,
            b'd' => MODULE,
            b'n' => NEW,
            _ => return None,
        };
    }
    Some(f)
}

/// Writes notification flags back as Redis's `keyspaceEventsFlagsToString` does.
pub fn notify_flags_to(f: u32) -> Vec<u8> {
    use notify::*;
    let mut s = Vec::new();
    if f & ALL == ALL {
        s.push(b'A');
    } else {
        for (bit, c) in [
            (GENERIC, b'g'),
            (STRING, b'$'),
            (LIST, b'l'),
            (SET, b's'),
            (HASH, b'h'),
            (ZSET, b'z'),
            (EXPIRED, b'x'),
            (EVICTED, b'e'),
            (STREAM, b't'),
            (MODULE, b'd'),
            (NEW, b'n'),
        ] {
            if f & bit != 0 {
                s.push(c);
            }
        }
    }
    for (bit, c) in [(KEYSPACE, b'K'), (KEYEVENT, b'E'), (KEY_MISS, b'm')] {
        if f & bit != 0 {
            s.push(c);
        }
    }
    s
}

/// Redis 7.0.15's parameters and default values, by name, in name order.
pub fn defaults() -> &'static [(String, Vec<u8>)] {
    static TABLE: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let (Reply::Map(kv), _) = crate::cmd::command::parse_resp3(include_bytes!("cmd/redis_config.resp"))
            .expect("the recorded CONFIG GET parses")
        else {
            panic!("the recorded CONFIG GET is a map")
        };
        let mut v: Vec<(String, Vec<u8>)> = kv
            .into_iter()
            .filter_map(|(k, v)| match (k, v) {
                (Reply::Bulk(k), Reply::Bulk(v)) => Some((String::from_utf8_lossy(&k).into_owned(), v)),
                _ => None,
            })
            .collect();
        v.sort();
        v
    })
}

/// The canonical name of a parameter (lower-cased, alias resolved), `None` when Redis has none such.
pub fn canonical(name: &[u8]) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    if let Some((_, c)) = ALIASES.iter().find(|(a, _)| a.as_bytes() == lower.as_slice()) {
        return Some(c);
    }
    defaults().iter().find(|(n, _)| n.as_bytes() == lower.as_slice()).map(|(n, _)| n.as_str())
}

fn default_of(name: &str) -> &'static [u8] {
    defaults().iter().find(|(n, _)| n == name).map(|(_, v)| v.as_slice()).unwrap_or(b"")
}

/// Parses a memory value as Redis's `memtoull` does (`100`, `1k`, `2mb`, `1gb`; case-insensitive).
pub fn parse_memory(v: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(v).ok()?.to_ascii_lowercase();
    let (digits, mul) = [
        ("gb", 1i64 << 30),
        ("mb", 1 << 20),
        ("kb", 1 << 10),
        ("g", 1_000_000_000),
        ("m", 1_000_000),
        ("k", 1000),
        ("b", 1),
    ]
    .iter()
    .find_map(|(suf, mul)| s.strip_suffix(suf).map(|d| (d.to_string(), *mul)))
    .unwrap_or((s.clone(), 1));
    if digits.is_empty() || !digits.bytes().enumerate().all(|(i, c)| c.is_ascii_digit() || (i == 0 && c == b'-')) {
        return None;
    }
    digits.parse::<i64>().ok()?.checked_mul(mul)
}

/// The parameters of one server: the values CONFIG SET gave, over Redis's defaults.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    set: FxHashMap<&'static str, Vec<u8>>,
    /// Cached readers of the parameters consulted on hot paths.
    notify: u32,
    maxmemory: i64,
    /// `min-replicas-to-write` and `min-replicas-max-lag` both set: a master without replicas
    /// refuses writes (NOREPLICAS).
    min_replicas: bool,
    /// The encoding thresholds, made current for each command (see [`crate::keyspace::limits`]).
    limits: crate::keyspace::limits::EncodingLimits,
    /// `proto-max-bulk-len` and `client-query-buffer-limit`, which the server's request parser reads.
    requests: RequestLimits,
    /// Parameters a server fixes at startup on top of Redis's immutable ones ([`Settings::fix`]).
    fixed: Vec<&'static str>,
}

/// The limits on requests a server reads (`proto-max-bulk-len`, `client-query-buffer-limit`);
/// [`Default`] is Redis 7.0's defaults (512 MB, 1 GB).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestLimits {
    /// The longest bulk argument.
    pub max_bulk: i64,
    /// The most a client's unprocessed request bytes may hold before the client is closed.
    pub query_buffer: i64,
}

impl Default for RequestLimits {
    fn default() -> Self {
        RequestLimits { max_bulk: 512 * 1024 * 1024, query_buffer: 1024 * 1024 * 1024 }
    }
}

impl Settings {
    /// A parameter's value (canonical name).
    pub fn get(&self, name: &str) -> &[u8] {
        match self.set.get(name) {
            Some(v) => v,
            None => default_of(name),
        }
    }

    /// A numeric parameter's value (0 when it does not parse).
    pub fn int(&self, name: &str) -> i64 {
        std::str::from_utf8(self.get(name)).ok().and_then(|s| s.parse().ok()).unwrap_or(0)
    }

    /// Whether a `yes`/`no` parameter is `yes`.
    pub fn flag(&self, name: &str) -> bool {
        self.get(name) == b"yes"
    }

    /// `notify-keyspace-events` as flags (see [`notify`]).
    #[inline]
    pub fn notify_flags(&self) -> u32 {
        self.notify
    }

    /// `maxmemory` in bytes (0: no limit).
    #[inline]
    pub fn maxmemory(&self) -> i64 {
        self.maxmemory
    }

    /// Sets a parameter without validation (the server's own settings: its port, say).
    pub fn force(&mut self, name: &'static str, value: Vec<u8>) {
        self.set.insert(name, value);
        self.refresh();
    }

    /// Makes a parameter (canonical name) one CONFIG SET refuses as Redis refuses an immutable one:
    /// a server that cannot change it while running (its listening port, say) says so instead of
    /// answering OK and changing nothing.
    pub fn fix(&mut self, name: &'static str) {
        if !self.fixed.contains(&name) {
            self.fixed.push(name);
        }
    }

    fn refresh(&mut self) {
        self.notify = notify_flags_from(self.get("notify-keyspace-events")).unwrap_or(0);
        self.maxmemory = self.int("maxmemory");
        self.min_replicas = self.int("min-replicas-to-write") > 0 && self.int("min-replicas-max-lag") > 0;
        self.limits = crate::keyspace::limits::EncodingLimits::of(self);
        self.requests = RequestLimits {
            max_bulk: self.int("proto-max-bulk-len"),
            query_buffer: self.int("client-query-buffer-limit"),
        };
    }

    /// `proto-max-bulk-len` and `client-query-buffer-limit`.
    #[inline]
    pub fn request_limits(&self) -> RequestLimits {
        self.requests
    }

    /// The encoding thresholds (`hash-max-listpack-*`, `zset-max-listpack-*`,
    /// `set-max-intset-entries`, `list-max-listpack-size`).
    #[inline]
    pub fn limits(&self) -> crate::keyspace::limits::EncodingLimits {
        self.limits
    }

    /// Whether writes need good replicas (`min-replicas-to-write` with a `min-replicas-max-lag`).
    #[inline]
    pub fn min_replicas(&self) -> bool {
        self.min_replicas
    }

    /// CONFIG SET's arguments (`name value [name value ...]`): every pair validated first, then all
    /// applied, as Redis 7.0 does; the error is Redis's text.
    pub fn config_set(&mut self, pairs: &[&[u8]]) -> Result<(), Reply> {
        if pairs.is_empty() || pairs.len() % 2 != 0 {
            return Err(Reply::err("ERR wrong number of arguments for 'config|set' command"));
        }
        let mut staged: Vec<(&'static str, Vec<u8>)> = Vec::new();
        for p in pairs.chunks(2) {
            let (name, value) = (p[0], p[1]);
            let shown = String::from_utf8_lossy(name);
            let Some(c) = canonical(name) else {
                return Err(Reply::Error(format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{shown}'"
                )));
            };
            let failed = |why: &str| {
                Reply::Error(format!("ERR CONFIG SET failed (possibly related to argument '{shown}') - {why}"))
            };
            if IMMUTABLE.contains(&c) || self.fixed.contains(&c) {
                return Err(failed("can't set immutable config"));
            }
            if PROTECTED.contains(&c) {
                return Err(failed("can't set protected config"));
            }
            if staged.iter().any(|(n, _)| *n == c) {
                return Err(failed("duplicate parameter"));
            }
            let v = normalize(c, value).map_err(|why| failed(&why))?;
            staged.push((c, v));
        }
        for (c, v) in staged {
            self.set.insert(c, v);
        }
        self.refresh();
        Ok(())
    }
}

/// Parameters whose lower bound is not 0 (Redis's `createLongLongConfig` minimums).
const MINIMUMS: &[(&str, i64)] = &[("proto-max-bulk-len", 1024 * 1024), ("client-query-buffer-limit", 1024 * 1024)];

/// Parameters with both bounds of their own (Redis's `createUIntConfig` and the like).
const BOUNDS: &[(&str, i64, i64)] = &[("maxclients", 1, u32::MAX as i64)];

/// Checks a value for parameter `name` and returns it as CONFIG GET will show it.
fn normalize(name: &'static str, v: &[u8]) -> Result<Vec<u8>, String> {
    let default = default_of(name);
    if let Some((_, words)) = ENUMS.iter().find(|(n, _)| *n == name) {
        let lower = v.to_ascii_lowercase();
        return if words.iter().any(|w| w.as_bytes() == lower.as_slice()) {
            Ok(lower)
        } else {
            Err(format!("argument(s) must be one of the following: {}", words.join(", ")))
        };
    }
    match name {
        "notify-keyspace-events" => {
            return notify_flags_from(v)
                .map(notify_flags_to)
                .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmd'.".into())
        }
        "save" => {
            let words: Vec<&[u8]> = v.split(|&c| c == b' ').filter(|w| !w.is_empty()).collect();
            if words.len() % 2 != 0 || words.iter().any(|w| parse_int(w).is_none_or(|n| n < 0)) {
                return Err("Invalid save parameters".into());
            }
            return Ok(words.join(&b' '));
        }
        _ => {}
    }
    if default == b"yes" || default == b"no" {
        let lower = v.to_ascii_lowercase();
        return if lower == b"yes" || lower == b"no" {
            Ok(lower)
        } else {
            Err("argument must be 'yes' or 'no'".into())
        };
    }
    let numeric = !default.is_empty() && parse_int(default).is_some();
    if numeric {
        let n = if MEMORY.contains(&name) {
            parse_memory(v).ok_or("argument must be a memory value")?
        } else {
            parse_int(v).ok_or("argument couldn't be parsed into an integer")?
        };
        if let Some((_, min, max)) = BOUNDS.iter().find(|(n, _, _)| *n == name) {
            if n < *min || n > *max {
                return Err(format!("argument must be between {min} and {max} inclusive"));
            }
        }
        if let Some((_, min)) = MINIMUMS.iter().find(|(n, _)| *n == name) {
            if n < *min {
                return Err(format!("argument must be between {min} and {} inclusive", i64::MAX));
            }
        }
        if n < 0 && default.first() != Some(&b'-') && name != "list-max-listpack-size" {
            return Err(format!("argument must be between 0 and {} inclusive", i64::MAX));
        }
        return Ok(n.to_string().into_bytes());
    }
    Ok(v.to_vec())
}

fn parse_int(v: &[u8]) -> Option<i64> {
    std::str::from_utf8(v).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_share_a_value_and_errors_are_redis_texts() {
        let mut s = Settings::default();
        s.config_set(&[b"lua-time-limit", b"10"]).unwrap();
        assert_eq!(s.get("busy-reply-threshold"), b"10");
        s.config_set(&[b"maxmemory", b"1mb"]).unwrap();
        assert_eq!(s.maxmemory(), 1 << 20);
        s.config_set(&[b"notify-keyspace-events", b"KEA"]).unwrap();
        assert_eq!(s.get("notify-keyspace-events"), b"AKE");
        let e = s.config_set(&[b"appendonly", b"maybe"]).unwrap_err();
        assert_eq!(
            e,
            Reply::err(
                "ERR CONFIG SET failed (possibly related to argument 'appendonly') - argument must be 'yes' or 'no'"
            )
        );
        let e = s.config_set(&[b"nosuch", b"1"]).unwrap_err();
        assert_eq!(e, Reply::err("ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"));
        assert!(s.config_set(&[b"databases", b"3"]).is_err());
    }
}
