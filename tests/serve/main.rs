//! `limitlab serve` as a process: the protocol, RESP3, cluster mode, and client libraries of other languages against it.
//!
//! One test binary for the area (each file below is a module), so that `cargo test` links a few
//! binaries rather than one per file.
#[path = "../common/mod.rs"]
mod common;

mod redis_suite;
mod serve;
mod serve_access;
mod serve_busy;
mod serve_clients;
mod serve_cluster;
mod serve_encodings;
mod serve_fuzz;
mod serve_geo;
mod serve_infra;
mod serve_lifeline;
mod serve_pubsub;
mod serve_replication;
mod serve_robust;
mod serve_sharp_edges;
mod serve_streams;
mod serve_types;
