//! Everything that runs on a private `redis-server` or Redis Cluster: the real backend, every script and fixture decision for decision, audits, faults, ACL users, and the server helper itself.
//!
//! One test binary for the area (each file below is a module), so that `cargo test` links a few
//! binaries rather than one per file.
#[path = "../common/mod.rs"]
mod common;

mod audit_real;
mod cluster;
mod faults;
mod fixtures_real;
mod limiter_real_redis;
mod real_backend;
mod security;
mod servers;
