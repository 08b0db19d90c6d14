//! The embedded emulator as a [`Backend`].
use super::{Backend, Script};
use crate::clock::{Clock, Millis};
use crate::emulator::{Emulator, Reply};
use crate::Result;

/// A backend over an in-process [`Emulator`]. Keys need no prefix: the keyspace is private to the run.
pub struct EmulatedBackend {
    pub emu: Emulator,
}

impl EmulatedBackend {
    pub fn new(emu: Emulator) -> Self {
        EmulatedBackend { emu }
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
        ""
    }
    fn eval(&mut self, script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Result<Reply> {
        // As a cluster node does before running anything: declared keys must share one slot.
        if self.emu.core().cluster && crate::emulator::cluster::common_slot(keys.iter().copied()).is_err() {
            return Ok(Reply::err(crate::emulator::cluster::CROSSSLOT));
        }
        let r = self.emu.evalsha(script.sha.as_bytes(), keys, args);
        if matches!(&r, Reply::Error(e) if e.starts_with("NOSCRIPT")) {
            if let Err(e) = self.emu.script_load(script.body.as_bytes()) {
                return Ok(e);
            }
            return Ok(self.emu.evalsha(script.sha.as_bytes(), keys, args));
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
        let n = self.emu.core().db.len() as u64;
        self.emu.execute(&[b"FLUSHALL"]);
        Ok(n)
    }
}
