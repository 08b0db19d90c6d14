//! Redis's deterministic `math.random`: its own `lrand48` stream, shared by all scripts of a server.
use std::cell::Cell;
use std::rc::Rc;

use mlua::{Lua, Table};

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

/// Installs the raw generator for the Lua half of `math.random` (in the setup code): `math.__next()`
/// draws `r` in [0, 1) as Redis's `redis_math_random` does, `math.__seed(n)` reseeds.
pub fn register(lua: &Lua, globals: &Table, rng: Rc<Rand48>) -> mlua::Result<()> {
    let math: Table = globals.get("math")?;
    let r = rng.clone();
    math.raw_set(
        "__next",
        lua.create_function(move |_, ()| Ok((r.next() as i64 % LRAND48_MAX) as f64 / LRAND48_MAX as f64))?,
    )?;
    math.raw_set("__seed", lua.create_function(move |_, n: f64| {
        rng.seed(n as i64 as i32);
        Ok(())
    })?)?;
    Ok(())
}
