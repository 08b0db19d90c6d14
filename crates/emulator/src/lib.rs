//! limitlab's lowest layer: an embedded Redis 7.0 (a keyspace, the command table and Lua 5.1
//! scripting, all reading one injected virtual clock), the clock itself and the one error type
//! that every layer above shares. It depends on no other crate of limitlab's.
pub mod acl;
pub mod admission;
mod alloc;
pub mod clients;
pub mod clock;
pub mod clock_commands;
pub mod cluster;
pub mod cmd;
pub mod command_spec;
pub mod core;
pub mod deliver;
mod emulator;
pub mod error;
pub mod geohash;
pub mod hll;
pub mod keyspace;
pub mod longdouble;
pub mod lua;
pub mod multi;
pub mod object_size;
pub mod pause;
pub mod propagate;
pub mod rdb;
pub mod rdb_stream;
pub mod reply;
pub mod settings;
pub mod snapshot;
pub mod split_args;
pub mod stats;
pub mod tracking;
pub mod used_memory;

pub use self::core::Core;
pub use clients::ClientId;
pub use deliver::{Deliver, Delivery};
pub use emulator::Emulator;
pub use error::{Error, Result};
pub use reply::Reply;
