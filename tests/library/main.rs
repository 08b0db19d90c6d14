//! The library as a user's tests use it: accuracy properties, a limiter of one's own, the simulator, the seed article's tables, and every shipped script against its Rust reference.
//!
//! One test binary for the area (each file below is a module), so that `cargo test` links a few
//! binaries rather than one per file.
mod accuracy_props;
#[cfg(feature = "proptest")]
mod own_limiter;
mod scripts_vs_reference;
mod seed_tables;
mod sim;
