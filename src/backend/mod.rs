//! Where scripts run: one [`Backend`] trait keeps the simulator ignorant of whether it talks to the
//! embedded emulator or to a real Redis (standalone or Cluster).
pub mod emulated;
pub mod real;

use crate::emulator::Reply;
use crate::Result;

/// A Lua script with its SHA1, ready for EVALSHA.
#[derive(Clone, Debug)]
pub struct Script {
    pub body: String,
    pub sha: String,
}

impl Script {
    pub fn new(body: impl Into<String>) -> Self {
        let body = body.into();
        let sha = crate::emulator::lua::sha1_hex(body.as_bytes());
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
    /// Sets the backend's notion of "now" where it has one it controls (the emulator's virtual clock);
    /// a real server ignores it, since scripts take `now` from ARGV.
    fn set_time_ms(&mut self, _unix_ms: i64) {}
    /// Removes every key under [`Backend::key_prefix`]; returns how many were removed.
    fn cleanup(&mut self) -> Result<u64>;
}
