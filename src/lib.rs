//! limitlab: run production Redis rate-limiter Lua scripts on an embedded Redis 7.0 emulator
//! under a deterministic virtual clock.
pub mod error;
pub mod clock;
pub mod emulator;
pub use error::{Error, Result};
