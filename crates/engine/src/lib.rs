//! limitlab's library layer, above the emulator: what a limiter is and how it is driven and judged.
//!
//! - [`spec`]: limiter specs (the TOML beside a Lua script): parsing, templates and expressions,
//!   adapters, running one request;
//! - [`limiter`]: the [`Limiter`], the shipped scripts' exact models and the oracles;
//! - [`backend`]: where calls go, the emulator or a real Redis (and a private `redis-server`);
//! - [`traffic`]: arrival generators and recorded traces;
//! - [`sim`]: the runner and scenario files; [`metrics`]: what a run measured;
//! - [`check`]: the verdicts of `limitlab check`, with [`attack`] (the worst-case search it uses);
//! - [`harness`]: a limiter on a private emulator under a virtual clock, for tests;
//!   [`strategies`]: proptest strategies for traffic (feature `proptest`).
//!
//! Users depend on the `limitlab` crate, which re-exports the API for tests from here.
pub mod attack;
pub mod backend;
pub mod check;
pub mod files;
pub mod harness;
pub mod limiter;
pub mod metrics;
pub mod record;
pub mod shipped;
pub mod sim;
pub mod spec;
#[cfg(feature = "proptest")]
pub mod strategies;
pub mod toml_input;
pub mod traffic;

pub use harness::{load, load_script, Harness, Outcome};
pub use limiter::{Decision, Limiter, Params};
pub use limitlab_emulator::{Error, Result};
pub use spec::Spec;
pub use traffic::Arrival;
