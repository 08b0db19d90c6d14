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
//! # Layout
//! [`spec`] (limiter specs: parsing, templates and expressions, adapters, running a request),
//! [`limiter`] (the [`Limiter`], the shipped scripts' exact models, oracles), [`emulator`] (Redis
//! 7.0), [`backend`] (emulator or real Redis), [`traffic`] (generators and traces), [`sim`] (the
//! runner), [`metrics`], [`check`], [`attack`], [`race`], [`skew`], [`bench`](mod@bench), [`report`],
//! [`verify`], [`audit`] (read-only audits of a live Redis), [`init`] (specs for installed client libraries), [`cli`] (the binary's subcommands), [`clock`], [`error`].
pub mod attack;
pub mod audit;
pub mod backend;
pub mod bench;
pub mod check;
pub mod cli;
pub mod clock;
pub mod emulator;
pub mod error;
pub mod harness;
pub mod init;
pub mod limiter;
pub mod metrics;
pub mod race;
pub mod report;
pub mod serve;
pub mod sim;
pub mod skew;
pub mod spec;
#[cfg(feature = "proptest")]
pub mod strategies;
pub mod traffic;
pub mod verify;

/// mimalloc is the allocator of everything built from this crate (the binary, the tests, the
/// benches). Lua allocates many short-lived strings and tables per script call and mimalloc serves
/// them faster than the system allocator; the emulator's Lua states also allocate from mimalloc
/// directly (`emulator::lua`), which is only sound because every block they may inherit from mlua's
/// own allocator (the global one) is a mimalloc block too.
#[global_allocator]
static GLOBAL: Mimalloc = Mimalloc;

/// mimalloc as the global allocator, calling its plain `mi_malloc`/`mi_realloc` when the
/// alignment asked for is one they already give (the `mimalloc` crate's own `MiMalloc` always takes
/// the aligned entry points, which cost more on every allocation). mimalloc aligns every block to
/// the largest power of two dividing its size, up to 16 bytes (MI_MAX_ALIGN_SIZE), and a Rust
/// layout's size is a multiple of its alignment, so `align <= 16 && align <= size` is enough.
struct Mimalloc;

/// Whether a block of `size` bytes aligned to `align` can come from mimalloc's plain entry points
/// (see [`Mimalloc`]).
#[inline]
fn mi_plain(align: usize, size: usize) -> bool {
    align <= 16 && align <= size
}

// SAFETY: every block comes from mimalloc and goes back to it; alignment as argued above.
unsafe impl std::alloc::GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if mi_plain(layout.align(), layout.size()) {
            libmimalloc_sys::mi_malloc(layout.size()).cast()
        } else {
            libmimalloc_sys::mi_malloc_aligned(layout.size(), layout.align()).cast()
        }
    }
    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        if mi_plain(layout.align(), layout.size()) {
            libmimalloc_sys::mi_zalloc(layout.size()).cast()
        } else {
            libmimalloc_sys::mi_zalloc_aligned(layout.size(), layout.align()).cast()
        }
    }
    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: std::alloc::Layout) {
        libmimalloc_sys::mi_free(ptr.cast());
    }
    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        if mi_plain(layout.align(), new_size) {
            libmimalloc_sys::mi_realloc(ptr.cast(), new_size).cast()
        } else {
            libmimalloc_sys::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
        }
    }
}
pub use error::{Error, Result};
pub use harness::{load, load_script, Harness, Outcome};
pub use limiter::{Decision, Limiter, Params};
pub use spec::Spec;
pub use traffic::Arrival;
