//! The embedded emulator as a [`Backend`].
use super::{Backend, Script};
use crate::Result;
use limitlab_emulator::clock::{Clock, Millis};
use limitlab_emulator::{Emulator, Reply};

/// A backend over an in-process [`Emulator`]. Keys need no prefix: the keyspace is private to the
/// run. [`EmulatedBackend::with_prefix`] gives it one anyway, to run exactly the key names a real
/// server will get and to catch the keys a script creates outside the prefix.
pub struct EmulatedBackend {
    pub emu: Emulator,
    prefix: String,
    /// In cluster mode: the slot of the first key touched by each script call that declared no
    /// KEYS (a cluster client sends such a call to any node, so its keys may not be there).
    keyless: Vec<u16>,
}

impl EmulatedBackend {
    pub fn new(emu: Emulator) -> Self {
        EmulatedBackend { emu, prefix: String::new(), keyless: Vec::new() }
    }

    /// A backend whose keys go under `prefix` (as on a real server, see [`Backend::key_prefix`]),
    /// and that notes every key created outside it ([`EmulatedBackend::take_outside_keys`]): a
    /// script that builds key names from ARGV instead of KEYS writes there.
    pub fn with_prefix(emu: Emulator, prefix: &str) -> Self {
        emu.watch_prefix(prefix);
        EmulatedBackend { emu, prefix: prefix.to_string(), keyless: Vec::new() }
    }

    /// The slots touched by script calls that declared no KEYS, in cluster mode, since the last
    /// time this was asked.
    pub fn take_keyless_slots(&mut self) -> Vec<u16> {
        std::mem::take(&mut self.keyless)
    }

    /// Runs `f` on this backend, then puts back the keys it touched (values, TTLs, last use) and
    /// the clock: what `f` saw is what the run would have seen, and the run goes on as if `f` had
    /// never happened. Costs what the touched keys cost to save, whatever the keyspace's size (see
    /// [`limitlab_emulator::keyspace::Db::begin_trial`]); only the selected database is put back.
    pub fn trial<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let clock = self.emu.clock().now_millis();
        self.emu.begin_trial();
        let out = f(self);
        self.emu.end_trial();
        self.emu.clock().set_millis(clock);
        out
    }

    /// The keys created outside the prefix since the last call, in the order they were first
    /// created (each once over the backend's life). Empty without a prefix.
    pub fn take_outside_keys(&mut self) -> Vec<String> {
        self.emu.take_outside_keys().into_iter().map(|k| String::from_utf8_lossy(&k).into_owned()).collect()
    }
}

impl Default for EmulatedBackend {
    fn default() -> Self {
        Self::new(Emulator::new())
    }
}

impl Backend for EmulatedBackend {
    fn describe(&self) -> String {
        "emulator".into()
    }
    fn key_prefix(&self) -> &str {
        &self.prefix
    }
    fn eval(&mut self, script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Result<Reply> {
        // As a cluster node does before running anything: declared keys must share one slot.
        if self.emu.is_cluster() && limitlab_emulator::cluster::common_slot(keys.iter().copied()).is_err() {
            return Ok(Reply::err(limitlab_emulator::cluster::CROSSSLOT));
        }
        let mut r = self.emu.evalsha(script.sha.as_bytes(), keys, args);
        if matches!(&r, Reply::Error(e) if e.starts_with("NOSCRIPT")) {
            if let Err(e) = self.emu.script_load(script.body.as_bytes()) {
                return Ok(e);
            }
            r = self.emu.evalsha(script.sha.as_bytes(), keys, args);
        }
        if keys.is_empty() && self.emu.is_cluster() {
            self.keyless.extend(self.emu.last_script_slot());
        }
        Ok(r)
    }
    fn command(&mut self, args: &[&[u8]]) -> Result<Reply> {
        Ok(self.emu.execute(args))
    }
    fn set_time_ms(&mut self, unix_ms: i64) {
        let clock = self.emu.clock();
        if clock.now_millis() != Millis(unix_ms) {
            clock.set_millis(Millis(unix_ms));
        }
    }
    fn cleanup(&mut self) -> Result<u64> {
        let n = self.emu.key_count() as u64;
        self.emu.execute(&[b"FLUSHALL"]);
        Ok(n)
    }
    fn emulated(&mut self) -> Option<&mut EmulatedBackend> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_created_outside_the_prefix_are_noted_once() {
        let mut b = EmulatedBackend::with_prefix(Emulator::new(), "ll:t:");
        assert_eq!(b.key_prefix(), "ll:t:");
        let s = Script::new("redis.call('SET', KEYS[1], 1) redis.call('INCR', 'rl:' .. ARGV[1]) return 1");
        b.eval(&s, &[b"ll:t:rate:{u}"], &[b"u"]).unwrap();
        b.eval(&s, &[b"ll:t:rate:{u}"], &[b"u"]).unwrap();
        assert_eq!(b.take_outside_keys(), ["rl:u"]);
        b.command(&[b"SET", b"ll:t:x", b"1"]).unwrap();
        b.command(&[b"RENAME", b"ll:t:x", b"elsewhere"]).unwrap();
        b.command(&[b"INCR", b"rl:u"]).unwrap();
        assert_eq!(b.take_outside_keys(), ["elsewhere"], "a rename creates a key; rl:u was seen already");
        assert!(EmulatedBackend::default().take_outside_keys().is_empty());
    }
}
