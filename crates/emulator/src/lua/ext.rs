//! The C API our Lua build adds (crates/lua, the `limitlab-lua` crate): Redis 7.0's read-only
//! tables, as in its deps/lua, views of a table's layout and the memory cap.
pub use limitlab_lua::*;
