//! limitlab: run production Redis rate-limiter Lua scripts on an embedded Redis 7.0 emulator
//! under a deterministic virtual clock.
pub mod attack;
pub mod backend;
pub mod bench;
pub mod cli;
pub mod clock;
mod decimal;
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

/// mimalloc is the allocator of everything built from this crate (the binary, the tests, the
/// benches). Lua allocates many short-lived strings and tables per script call and mimalloc serves
/// them faster than the system allocator; the emulator's Lua states also allocate from mimalloc
/// directly (`emulator::lua`), which is only sound because every block they may inherit from mlua's
/// own allocator (the global one) is a mimalloc block too.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
pub use error::{Error, Result};
