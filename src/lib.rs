//! limitlab: run production Redis rate-limiter Lua scripts on an embedded Redis 7.0 emulator
//! under a deterministic virtual clock.
//!
//! The command line (`limitlab check`, `run`, `attack`, ...) is one face; this library is the other,
//! for property tests of your own limiter under `cargo test`. Describe the limiter with a spec (a
//! TOML file beside its Lua: which script, how a request becomes KEYS and ARGV, how the reply
//! becomes a decision, the intended policy; `docs/specs.md`), then:
//!
//! ```
//! use limitlab::check::{self, CheckOptions, Status};
//! use limitlab::{Harness, Spec, Limiter, Params};
//!
//! # fn main() -> limitlab::Result<()> {
//! // A spec file, under its own policy (10 per 1000 ms here) ...
//! let limiter = limitlab::load("tests/fixtures/upstash_fixed_window.toml")?;
//! // ... or under another one.
//! let spec = Spec::from_file("tests/fixtures/upstash_fixed_window.toml".as_ref())?;
//! let strict = Limiter::from_spec(spec.into(), Params::new(2, 1000))?;
//!
//! // Drive it under the virtual clock: ms after a window boundary.
//! let mut h = Harness::new(limiter.clone());
//! h.at(999);
//! let first = h.request("user42", 1)?;
//! assert!(first.allowed && first.remaining == 9 && first.reset_after_ms == 1);
//! h.at(1000);
//! assert!(h.request("user42", 10)?.allowed); // a new window: the boundary lets 11 through in 2 ms
//! assert_eq!(h.max_in_any_window(), 11);
//! assert_eq!(Harness::new(strict).request("user42", 3)?.allowed, false);
//!
//! // Replay a scenario's traffic and measure it as `limitlab run` does.
//! let scenario = limitlab::sim::Scenario::from_file("simulations/boundary_burst.toml".as_ref())?;
//! let arrivals = scenario.arrivals(1)?;
//! let (trace, _) = limitlab::sim::run_emulated(&limiter, &arrivals, scenario.start_ms, limitlab::sim::Progress::Off)?;
//! let m = limitlab::metrics::measure(&trace, &limiter)?;
//! assert_eq!(m.max_in_window, 20); // two bursts across a boundary: twice the limit
//!
//! // Run the checks of `limitlab check` and read their verdicts.
//! let report = check::check(&limiter, &CheckOptions { timing: false, iterations: 20, ..CheckOptions::default() })?;
//! // This one fails `refusals`: like the library it imitates, it counts a refused request too.
//! let failed: Vec<&str> = report.checks.iter().filter(|c| c.status == Status::Fail).map(|c| c.name).collect();
//! assert_eq!(failed, ["refusals"]);
//! # Ok(())
//! # }
//! ```
//!
//! # The API for tests
//! - A limiter: [`load`] (a spec file or a built-in name, under the spec's policy), [`load_script`]
//!   (a Lua script under limitlab's own script contract), [`Spec::from_file`] with
//!   [`Limiter::from_spec`] (any policy).
//! - [`Harness`]: the limiter on a private emulator under a virtual clock: [`Harness::at`],
//!   [`Harness::advance`], [`Harness::request`] (a [`Decision`]), [`Harness::probe`],
//!   [`Harness::play`], [`Harness::keys`], [`Harness::max_in_any_window`].
//! - [`strategies`] (cargo feature `proptest`, on by default): proptest strategies for traffic.
//! - [`sim`] and [`metrics`]: scenario files and the report's measures; [`check::check`]: the
//!   verdicts of `limitlab check`.
//!
//! # A limiter under a virtual clock
//! ```
//! use limitlab::Harness;
//!
//! # fn main() -> limitlab::Result<()> {
//! // tests/fixtures/upstash_fixed_window.toml: 10 per 1000 ms, a fixed window
//! let mut h = Harness::load("tests/fixtures/upstash_fixed_window.toml")?;
//! h.at(990); // 990 ms after the start (a window boundary)
//! for _ in 0..10 {
//!     assert!(h.request("user42", 1)?.allowed);
//! }
//! assert!(!h.request("user42", 1)?.allowed); // the 11th in the same window
//! h.advance(10); // the next window: a fresh key
//! assert!(h.request("user42", 1)?.allowed);
//! assert_eq!(h.max_in_any_window(), 11); // 10 at 990 ms and 1 at 1000 ms
//! assert_eq!(h.keys()?, ["ratelimit:{user42}:1704067200", "ratelimit:{user42}:1704067201"]);
//! # Ok(())
//! # }
//! ```
//!
//! # Property tests
//! ```
//! use limitlab::strategies::{self, Shape};
//! use limitlab::Harness;
//! use proptest::prelude::*;
//!
//! proptest! {
//!     #![proptest_config(ProptestConfig::with_cases(16))]
//!     fn a_fixed_window_admits_at_most_twice_its_limit(
//!         traffic in strategies::traffic(&Shape::of(&limitlab::load("tests/fixtures/upstash_fixed_window.toml").unwrap()))
//!     ) {
//!         let mut h = Harness::load("tests/fixtures/upstash_fixed_window.toml")?;
//!         for d in h.play(&traffic)? {
//!             prop_assert!(d.remaining >= 0);
//!         }
//!         prop_assert!(h.max_in_any_window() <= 2 * h.params().limit);
//!     }
//! }
//! # a_fixed_window_admits_at_most_twice_its_limit();
//! ```
//!
//! # The layers under it
//! This crate is a facade over the workspace's crates, each depending only on those below it:
//! `limitlab-emulator` (Redis 7.0, the clock, the error type), `limitlab-engine` (specs, the
//! limiter, traffic, simulation, metrics, checks: everything re-exported here comes from it),
//! `limitlab-server` (`limitlab serve`) and `limitlab-cli` (the binary's subcommands). A test
//! that needs more than this page (the emulator itself, say) can depend on those crates directly.
pub use limitlab_engine::check;
pub use limitlab_engine::metrics;
pub use limitlab_engine::sim;
#[cfg(feature = "proptest")]
pub use limitlab_engine::strategies;
pub use limitlab_engine::{
    load, load_script, Arrival, Decision, Error, Harness, Limiter, Outcome, Params, Result, Spec,
};
