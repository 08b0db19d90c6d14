//! The C libraries Redis 7.0 links into its Lua: cjson, bit, struct and cmsgpack, rebuilt in Rust.
//!
//! The small pieces of the Lua 5.1 auxiliary library (`luaL_checkinteger`, `luaL_argerror`,
//! `luaL_where`, ...) that the four libraries share, so that argument checks and error texts come
//! out exactly as the C originals print them inside Redis, live below this module in `lua::raw`,
//! and the C number conversions (x86-64 casts, `%.14g`) they depend on in `lua::cvt`: the helpers
//! behind `redis.*` and `math.random` use them too.
//!
//! Errors: every library function raises a plain Lua string error holding exactly the text a
//! Redis script sees (with the caller's "user_script:N: " prefix where the C adds one), so
//! `pcall` results need no conversion; an uncaught one reaches Rust as
//! `mlua::Error::RuntimeError(text)` (mlua may append a traceback after "\nstack traceback:").
use mlua::{Lua, Table};

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
pub mod structlib;

/// Installs `cjson`, `bit`, `struct` and `cmsgpack` into `globals`.
pub fn register_all(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    globals.raw_set("cjson", cjson::module(lua)?)?;
    globals.raw_set("struct", structlib::module(lua)?)?;
    globals.raw_set("cmsgpack", cmsgpack::module(lua)?)?;
    globals.raw_set("bit", bit::module(lua)?)?;
    Ok(())
}

/// Helpers shared by the libraries' unit tests.
#[cfg(test)]
pub(crate) mod testutil {
    use mlua::{Function, Lua, Value};

    /// A plain Lua state with the four libraries installed.
    pub(crate) fn new_lua() -> Lua {
        let lua = Lua::new();
        super::register_all(&lua, &lua.globals()).unwrap();
        lua
    }

    /// Runs `code` as chunk "@user_script" (the name Redis gives scripts) and renders the first
    /// result with Lua's own `tostring`, or "ERR <message>" when it raised.
    pub(crate) fn eval(lua: &Lua, code: &str) -> String {
        match lua.load(code).set_name("@user_script").eval::<Value>() {
            // A caught error (the value `pcall` returns) renders as its bare message, which is
            // what the scripting layer turns it into.
            Ok(Value::Error(e)) => message(&e),
            Ok(v) => {
                let tostring: Function = lua.globals().get("tostring").unwrap();
                let s: mlua::LuaString = tostring.call(v).unwrap();
                String::from_utf8_lossy(&s.as_bytes()).into_owned()
            }
            Err(e) => format!("ERR {}", message(&e)),
        }
    }

    /// The innermost runtime-error text inside mlua's callback wrappers.
    fn message(e: &mlua::Error) -> String {
        match e {
            // mlua appends a traceback to errors that escape the chunk; Redis shows none.
            mlua::Error::RuntimeError(m) => m.split("\nstack traceback:").next().unwrap_or("").to_string(),
            mlua::Error::CallbackError { cause, .. } => message(cause),
            other => other.to_string(),
        }
    }
}
