//! Redis 7.0's conversion rules between Lua values and replies, both ways.
use mlua::{Lua, Table, Value};

use crate::emulator::reply::Reply;

/// C's `(long long)` cast of a double as x86-64 performs it: truncation, and the "integer indefinite"
/// value (i64::MIN) for NaN and anything out of range.
pub fn c_double_to_i64(n: f64) -> i64 {
    if n.is_nan() || n >= 9_223_372_036_854_775_808.0 || n < -9_223_372_036_854_775_808.0 {
        i64::MIN
    } else {
        n as i64
    }
}

fn lua_bytes(s: &mlua::LuaString) -> Vec<u8> {
    s.as_bytes().to_vec()
}

/// A script's return value as the reply Redis sends (`luaReplyToRedisReply`); `resp` is the protocol
/// the script last chose with `redis.setresp` (booleans are RESP3 booleans under 3).
pub fn lua_to_reply(v: &Value, resp: u8) -> Reply {
    lua_to_reply_depth(v, 0, resp)
}

fn lua_to_reply_depth(v: &Value, depth: usize, resp: u8) -> Reply {
    match v {
        Value::Nil => Reply::Nil,
        Value::Boolean(b) if resp == 3 => Reply::Bool(*b),
        Value::Boolean(true) => Reply::Int(1),
        Value::Boolean(false) => Reply::Nil,
        Value::Integer(i) => Reply::Int(*i),
        Value::Number(n) => Reply::Int(c_double_to_i64(*n)),
        Value::String(s) => Reply::Bulk(lua_bytes(s)),
        Value::Table(t) => table_to_reply(t, depth, resp),
        _ => Reply::Nil,
    }
}

fn table_to_reply(t: &Table, depth: usize, resp: u8) -> Reply {
    if depth > 1000 {
        return Reply::err("ERR reached lua stack limit");
    }
    if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
        let msg = crate::emulator::lua::one_line(&e.to_string_lossy());
        return Reply::Error(msg);
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
        return Reply::Status(crate::emulator::lua::one_line(&s.to_string_lossy()));
    }
    match t.raw_get::<Value>("double") {
        Ok(Value::Number(n)) => return Reply::Double(n),
        Ok(Value::Integer(i)) => return Reply::Double(i as f64),
        _ => {}
    }
    // RESP3 big numbers and verbatim strings reach a RESP2 client as bulk strings.
    if let Ok(Value::String(b)) = t.raw_get::<Value>("big_number") {
        return Reply::Bulk(lua_bytes(&b));
    }
    if let Ok(Value::Table(v)) = t.raw_get::<Value>("verbatim_string") {
        if let Ok(Value::String(b)) = v.raw_get::<Value>("string") {
            return Reply::Bulk(lua_bytes(&b));
        }
    }
    if let Ok(Value::Table(m)) = t.raw_get::<Value>("map") {
        let mut out = Vec::new();
        for (k, v) in m.pairs::<Value, Value>().flatten() {
            out.push((lua_to_reply_depth(&k, depth + 1, resp), lua_to_reply_depth(&v, depth + 1, resp)));
        }
        return Reply::Map(out);
    }
    if let Ok(Value::Table(m)) = t.raw_get::<Value>("set") {
        let mut out = Vec::new();
        for (k, _) in m.pairs::<Value, Value>().flatten() {
            out.push(lua_to_reply_depth(&k, depth + 1, resp));
        }
        return Reply::Set(out);
    }
    let mut out = Vec::new();
    let mut j = 1;
    loop {
        match t.raw_get::<Value>(j) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => out.push(lua_to_reply_depth(&v, depth + 1, resp)),
        }
        j += 1;
    }
    Reply::Array(out)
}

/// A command's reply as `redis.call` returns it to Lua (`redisProtocolToLuaType`), under RESP2 or RESP3.
pub fn reply_to_lua(lua: &Lua, r: Reply, resp: u8) -> mlua::Result<Value> {
    Ok(match r {
        Reply::Int(i) => Value::Number(i as f64),
        Reply::Bulk(b) => Value::String(lua.create_string(&b)?),
        Reply::Nil | Reply::NilArray => {
            if resp == 3 {
                Value::Nil
            } else {
                Value::Boolean(false)
            }
        }
        Reply::Status(s) => {
            let t = lua.create_table_with_capacity(0, 1)?;
            t.raw_set("ok", lua.create_string(&s)?)?;
            Value::Table(t)
        }
        Reply::Error(s) => {
            let t = lua.create_table_with_capacity(0, 1)?;
            t.raw_set("err", lua.create_string(&s)?)?;
            Value::Table(t)
        }
        Reply::Array(v) => array(lua, v, resp)?,
        Reply::Double(d) if resp == 3 => {
            let t = lua.create_table_with_capacity(0, 1)?;
            t.raw_set("double", d)?;
            Value::Table(t)
        }
        // Grown one key at a time as Redis does (see fast::push_reply).
        Reply::Map(kv) if resp == 3 => {
            let m = lua.create_table()?;
            for (k, v) in kv {
                m.raw_set(reply_to_lua(lua, k, resp)?, reply_to_lua(lua, v, resp)?)?;
            }
            let t = lua.create_table_with_capacity(0, 1)?;
            t.raw_set("map", m)?;
            Value::Table(t)
        }
        Reply::Set(v) if resp == 3 => {
            let m = lua.create_table()?;
            for k in v {
                m.raw_set(reply_to_lua(lua, k, resp)?, true)?;
            }
            let t = lua.create_table_with_capacity(0, 1)?;
            t.raw_set("set", m)?;
            Value::Table(t)
        }
        Reply::Bool(b) if resp == 3 => Value::Boolean(b),
        other => reply_to_lua(lua, other.into_resp2(), 2)?,
    })
}

fn array(lua: &Lua, v: Vec<Reply>, resp: u8) -> mlua::Result<Value> {
    let t = if resp == 3 { lua.create_table()? } else { lua.create_table_with_capacity(v.len(), 0)? };
    for (i, x) in v.into_iter().enumerate() {
        t.raw_set(i + 1, reply_to_lua(lua, x, resp)?)?;
    }
    Ok(Value::Table(t))
}
