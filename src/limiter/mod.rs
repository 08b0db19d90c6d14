//! Rate-limiter algorithms: each one's script, argument builder, reply reader and exact Rust reference.
