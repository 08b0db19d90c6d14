//! Where scripts run: one [`Backend`] trait keeps the simulator ignorant of whether it talks to the
//! embedded emulator or to a real Redis (standalone or Cluster).
pub mod emulated;
pub mod private;
pub mod real;
pub mod secret;

use crate::Result;
use limitlab_emulator::Reply;

/// A Lua script with its SHA1, ready for EVALSHA.
#[derive(Clone, Debug)]
pub struct Script {
    pub body: String,
    pub sha: String,
}

impl Script {
    pub fn new(body: impl Into<String>) -> Self {
        let body = body.into();
        let sha = limitlab_emulator::lua::sha1_hex(body.as_bytes());
        Script { body, sha }
    }
}

/// Something that runs Redis commands and scripts.
///
/// Replies that are Redis errors come back as `Ok(Reply::Error(..))`: they are outcomes of the script.
/// `Err` is for transport failures (connection lost, timeout), after which the caller must not retry a
/// script that may have run (it would count twice).
pub trait Backend {
    /// A short description for reports: `emulator`, `redis://127.0.0.1:6379`, `cluster(3)`.
    fn describe(&self) -> String;
    /// The prefix every key of this run must start with, so the run can remove exactly its own keys.
    /// It never contains braces, so hash tags in the rest of the key keep working.
    fn key_prefix(&self) -> &str;
    /// Runs `script` with EVALSHA; on NOSCRIPT only, loads it and retries once.
    fn eval(&mut self, script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Result<Reply>;
    /// Runs one command (`args[0]` is its name).
    fn command(&mut self, args: &[&[u8]]) -> Result<Reply>;
    /// Calls the Redis 7 function `function` of `library` with FCALL; on `Function not found` only
    /// (the function did not run), loads the library and calls once more.
    fn fcall(&mut self, library: &Script, function: &str, keys: &[&[u8]], args: &[&[u8]]) -> Result<Reply> {
        let n = keys.len().to_string();
        let mut argv: Vec<&[u8]> = Vec::with_capacity(3 + keys.len() + args.len());
        argv.extend_from_slice(&[b"FCALL", function.as_bytes(), n.as_bytes()]);
        argv.extend_from_slice(keys);
        argv.extend_from_slice(args);
        match self.command(&argv)? {
            Reply::Error(e) if e == "ERR Function not found" => match self.load_library(library)? {
                err @ Reply::Error(_) => Ok(err),
                _ => self.command(&argv),
            },
            other => Ok(other),
        }
    }
    /// FUNCTION LOAD REPLACE of a library (on every master of a cluster): its name, or the error.
    fn load_library(&mut self, library: &Script) -> Result<Reply> {
        self.command(&[b"FUNCTION", b"LOAD", b"REPLACE", library.body.as_bytes()])
    }
    /// Sets the backend's notion of "now" where it has one it controls (the emulator's virtual clock);
    /// a real server's clock cannot be set: scripts take `now` from ARGV, and [`real::RealRedis`]
    /// answers a script's `TIME` with it through a shim.
    fn set_time_ms(&mut self, _unix_ms: i64) {}
    /// Removes every key under [`Backend::key_prefix`]; returns how many were removed.
    fn cleanup(&mut self) -> Result<u64>;
    /// The emulator behind this backend, when it is one: only an emulator's keyspace can be asked
    /// "what if" and put back ([`emulated::EmulatedBackend::trial`]).
    fn emulated(&mut self) -> Option<&mut emulated::EmulatedBackend> {
        None
    }
    /// Every live key under [`Backend::key_prefix`] with its PTTL in ms (-1: no expiry), sorted by
    /// key; a key that expires between the scan and its PTTL is left out.
    fn keys_with_ttl(&mut self) -> Result<Vec<(String, i64)>> {
        let mut out = Vec::new();
        for k in self.keys_under_prefix()? {
            if let Reply::Int(t) = self.command(&[b"PTTL", k.as_bytes()])? {
                if t != -2 {
                    out.push((k, t));
                }
            }
        }
        Ok(out)
    }
    /// Every key under [`Backend::key_prefix`], sorted (SCAN with MATCH; the prefix never holds glob
    /// characters). A cluster scans every master.
    fn keys_under_prefix(&mut self) -> Result<Vec<String>> {
        let pattern = format!("{}*", self.key_prefix());
        let mut cursor = b"0".to_vec();
        let mut keys = Vec::new();
        loop {
            let r = self.command(&[b"SCAN", &cursor, b"MATCH", pattern.as_bytes(), b"COUNT", b"1000"])?;
            let Reply::Array(parts) = r else { return Err(crate::Error::Redis(format!("SCAN replied {r:?}"))) };
            match parts.as_slice() {
                [Reply::Bulk(next), Reply::Array(found)] => {
                    for k in found {
                        if let Reply::Bulk(b) = k {
                            keys.push(String::from_utf8_lossy(b).into_owned());
                        }
                    }
                    if next.as_slice() == b"0" {
                        break;
                    }
                    cursor = next.clone();
                }
                _ => return Err(crate::Error::Redis(format!("SCAN replied {parts:?}"))),
            }
        }
        keys.sort();
        keys.dedup();
        Ok(keys)
    }
}

/// The string literals of a Lua chunk outside comments, each with its 1-based line: what a script
/// can name a command with in `redis.call('NAME', ...)`. A light scanner (short strings with
/// escapes, long strings `[[...]]`/`[==[...]==]`, `--` and `--[[...]]` comments), enough to tell
/// which commands a script may send without running it.
pub fn lua_string_literals(body: &str) -> Vec<(usize, String)> {
    let b = body.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut line) = (0usize, 1usize);
    // `[`, `=`*n, `[` at i: the level n, or None.
    let long_open = |i: usize| -> Option<usize> {
        if b.get(i) != Some(&b'[') {
            return None;
        }
        let mut j = i + 1;
        while b.get(j) == Some(&b'=') {
            j += 1;
        }
        (b.get(j) == Some(&b'[')).then_some(j - i - 1)
    };
    // Skips a long bracket of `level` opened before `from`; returns (end, its text).
    let long_close = |from: usize, level: usize| -> (usize, &[u8]) {
        let close: Vec<u8> =
            std::iter::once(b']').chain(std::iter::repeat_n(b'=', level)).chain(std::iter::once(b']')).collect();
        match b[from..].windows(close.len()).position(|w| w == close.as_slice()) {
            Some(p) => (from + p + close.len(), &b[from..from + p]),
            None => (b.len(), &b[from..]),
        }
    };
    while i < b.len() {
        match b[i] {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                if let Some(level) = long_open(i + 2) {
                    let (end, text) = long_close(i + 2 + level + 2, level);
                    line += text.iter().filter(|&&c| c == b'\n').count();
                    i = end;
                } else {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                }
            }
            q @ (b'\'' | b'"') => {
                let (start, mut j, mut s) = (line, i + 1, Vec::new());
                while j < b.len() && b[j] != q && b[j] != b'\n' {
                    if b[j] == b'\\' && j + 1 < b.len() {
                        if b[j + 1] == b'\n' {
                            line += 1;
                        }
                        s.push(b[j + 1]);
                        j += 2;
                    } else {
                        s.push(b[j]);
                        j += 1;
                    }
                }
                out.push((start, String::from_utf8_lossy(&s).into_owned()));
                i = j + 1;
            }
            b'[' => match long_open(i) {
                Some(level) => {
                    let (end, text) = long_close(i + level + 2, level);
                    out.push((line, String::from_utf8_lossy(text).into_owned()));
                    line += text.iter().filter(|&&c| c == b'\n').count();
                    i = end;
                }
                None => i += 1,
            },
            _ => i += 1,
        }
    }
    out
}

/// The commands among `names` (any case) that a script names in a string literal, each with the
/// first line it appears on, in order of that line.
pub fn reads_commands(body: &str, names: &[&str]) -> Vec<(String, usize)> {
    let mut found: Vec<(String, usize)> = Vec::new();
    for (line, lit) in lua_string_literals(body) {
        let lit = lit.trim();
        if let Some(n) = names.iter().find(|n| n.eq_ignore_ascii_case(lit)) {
            if !found.iter().any(|(f, _)| f == n) {
                found.push((n.to_string(), line));
            }
        }
    }
    found
}

/// Whether a script calls `TIME` (names it in a string literal).
pub fn reads_time(body: &str) -> bool {
    !reads_commands(body, &["TIME"]).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_outside_comments() {
        let body =
            "-- redis.call('TIME') in a comment\nlocal t = redis.call(\"time\")\n--[[ 'PTTL'\n ]] local x = [[a\nb]] \
                    local y = 'it''s' redis.call('PTTL', KEYS[1]) -- 'TTL'\n";
        let lits = lua_string_literals(body);
        assert_eq!(lits[0], (2, "time".to_string()));
        assert_eq!(lits[1], (4, "a\nb".to_string()));
        assert!(lits.iter().any(|(l, s)| *l == 5 && s == "PTTL"), "{lits:?}");
        assert!(!lits.iter().any(|(_, s)| s == "TTL"));
        assert_eq!(reads_commands(body, &["TIME", "PTTL", "TTL"]), [("TIME".to_string(), 2), ("PTTL".to_string(), 5)]);
        assert!(reads_time(body));
        assert!(!reads_time("return redis.call('GET', KEYS[1]) -- no 'TIME' here"));
        assert!(reads_time(
            &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/redis_rate_gcra.lua"))
                .unwrap()
        ));
        assert!(!reads_time(
            &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/rate_limit_redis.lua"))
                .unwrap()
        ));
    }
}
