//! limitlab: run production Redis rate-limiter Lua scripts on an embedded Redis 7.0 emulator
//! under a deterministic virtual clock.
pub mod attack;
pub mod backend;
pub mod bench;
pub mod cli;
pub mod clock;
pub mod emulator;
pub mod error;
pub mod limiter;
pub mod metrics;
pub mod race;
pub mod report;
pub mod sim;
pub mod skew;
pub mod traffic;
pub mod verify;
pub use error::{Error, Result};
