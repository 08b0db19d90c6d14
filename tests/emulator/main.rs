//! The emulator against Redis 7.0.15: redis-cli case files, the command table, transactions and clients, differential fuzzing and `verify`, MEMORY USAGE and used_memory against a real server.
//!
//! One test binary for the area (each file below is a module), so that `cargo test` links a few
//! binaries rather than one per file.
#[path = "../common/mod.rs"]
mod common;

mod client_commands;
mod command_table;
mod conformance;
mod fuzz;
mod memory_real_redis;
mod transactions;
mod used_memory_real;
mod verify;
