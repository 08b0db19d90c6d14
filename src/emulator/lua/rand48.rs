//! Redis's deterministic `math.random`: its own `lrand48` stream, shared by all scripts of a server.
use std::cell::Cell;
use std::rc::Rc;

use mlua::{Lua, MultiValue, Table, Value};

/// The 48-bit linear congruential generator behind POSIX `lrand48`, as Redis's `rand.c` implements it.
#[derive(Debug)]
pub struct Rand48 {
    x: Cell<u64>,
}

const A: u64 = 0x5_DEEC_E66D;
const C: u64 = 0xB;
const MASK: u64 = (1 << 48) - 1;
/// `REDIS_LRAND48_MAX`.
const LRAND48_MAX: i64 = i32::MAX as i64;

impl Default for Rand48 {
    fn default() -> Self {
        Rand48 { x: Cell::new(0x1234_ABCD_330E) }
    }
}

impl Rand48 {
    pub fn next(&self) -> i32 {
        let x = (A.wrapping_mul(self.x.get()).wrapping_add(C)) & MASK;
        self.x.set(x);
        (x >> 17) as i32
    }
    pub fn seed(&self, seed: i32) {
        self.x.set((((seed as u32) as u64) << 16) | 0x330E);
    }
}

fn int_arg(v: &Value, pos: usize, fname: &str) -> mlua::Result<i64> {
    match v {
        Value::Integer(i) => Ok(*i),
        Value::Number(n) => Ok(*n as i64),
        Value::String(s) => s
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .map(|n| n as i64)
            .ok_or_else(|| bad_arg(pos, fname, "number expected, got string")),
        Value::Nil => Err(bad_arg(pos, fname, "number expected, got no value")),
        other => Err(bad_arg(pos, fname, &format!("number expected, got {}", other.type_name()))),
    }
}

fn bad_arg(pos: usize, fname: &str, msg: &str) -> mlua::Error {
    mlua::Error::RuntimeError(format!("bad argument #{pos} to '{fname}' ({msg})"))
}

/// Replaces `math.random` and `math.randomseed` with Redis's versions.
pub fn register(lua: &Lua, globals: &Table, rng: Rc<Rand48>) -> mlua::Result<()> {
    let math: Table = globals.get("math")?;
    let r = rng.clone();
    math.set(
        "random",
        lua.create_function(move |_, args: MultiValue| {
            let r = (r.next() as i64 % LRAND48_MAX) as f64 / LRAND48_MAX as f64;
            match args.len() {
                0 => Ok(r),
                1 => {
                    let u = int_arg(&args[0], 1, "random")? as i32;
                    if u < 1 {
                        return Err(bad_arg(1, "random", "interval is empty"));
                    }
                    Ok((r * u as f64).floor() + 1.0)
                }
                2 => {
                    let l = int_arg(&args[0], 1, "random")? as i32;
                    let u = int_arg(&args[1], 2, "random")? as i32;
                    if l > u {
                        return Err(bad_arg(2, "random", "interval is empty"));
                    }
                    Ok((r * (u as f64 - l as f64 + 1.0)).floor() + l as f64)
                }
                _ => Err(mlua::Error::RuntimeError("wrong number of arguments".into())),
            }
        })?,
    )?;
    let r = rng;
    math.set(
        "randomseed",
        lua.create_function(move |_, args: MultiValue| {
            let v = args.into_iter().next().unwrap_or(Value::Nil);
            let s = int_arg(&v, 1, "randomseed")?;
            r.seed(s as i32);
            Ok(())
        })?,
    )?;
    Ok(())
}
