//! LuaBitOp 1.0.2 (`bit.*`): 32-bit operations on Lua numbers, as Redis ships it.
use std::os::raw::c_int;

use mlua::ffi::{self, lua_State};
use mlua::{Lua, Table};

use crate::lua::raw::{self, type_error, R};
use crate::lua::stack::push_bytes;

macro_rules! lua_fn {
    ($name:ident, $body:expr) => {
        /// # Safety
        ///
        /// Called by Lua only, as a C function; see [`raw::run`].
        unsafe extern "C-unwind" fn $name(l: *mut lua_State) -> c_int {
            /// # Safety
            ///
            /// A body for [`raw::run`]: reads numbers and pushes one result, holding nothing
            /// with a destructor.
            unsafe fn body(l: *mut lua_State) -> R<c_int> {
                #[allow(clippy::redundant_closure_call)]
                ($body)(l)
            }
            raw::run(l, body)
        }
    };
}

/// `fold` for band/bor/bxor: the first argument, then the others from the last one down.
///
/// # Safety
///
/// As [`barg`] and [`ret`].
unsafe fn fold(l: *mut lua_State, op: fn(u32, u32) -> u32) -> R<c_int> {
    let mut b = barg(l, 1)?;
    let mut i = ffi::lua_gettop(l);
    while i > 1 {
        b = op(b, barg(l, i)?);
        i -= 1;
    }
    ret(l, b)
}

/// Shifts and rotations take the count modulo 32.
///
/// # Safety
///
/// As [`barg`] and [`ret`].
unsafe fn shift(l: *mut lua_State, op: fn(u32, u32) -> u32) -> R<c_int> {
    let b = barg(l, 1)?;
    let n = barg(l, 2)? & 31;
    ret(l, op(b, n))
}

lua_fn!(bit_tobit, |l| ret(l, barg(l, 1)?));
lua_fn!(bit_bnot, |l| ret(l, !barg(l, 1)?));
lua_fn!(bit_band, |l| fold(l, |a, b| a & b));
lua_fn!(bit_bor, |l| fold(l, |a, b| a | b));
lua_fn!(bit_bxor, |l| fold(l, |a, b| a ^ b));
lua_fn!(bit_lshift, |l| shift(l, |b, n| b << n));
lua_fn!(bit_rshift, |l| shift(l, |b, n| b >> n));
lua_fn!(bit_arshift, |l| shift(l, |b, n| ((b as i32) >> n) as u32));
lua_fn!(bit_rol, |l| shift(l, |b, n| b.rotate_left(n)));
lua_fn!(bit_ror, |l| shift(l, |b, n| b.rotate_right(n)));
lua_fn!(bit_bswap, |l| ret(l, barg(l, 1)?.swap_bytes()));
lua_fn!(bit_tohex, tohex);

/// Installs the functions in the order `luaL_register` does, into a table presized the same
/// way, so `pairs(bit)` walks them in Redis's order.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let reg: [(&str, ffi::lua_CFunction); 12] = [
        ("tobit", bit_tobit),
        ("bnot", bit_bnot),
        ("band", bit_band),
        ("bor", bit_bor),
        ("bxor", bit_bxor),
        ("lshift", bit_lshift),
        ("rshift", bit_rshift),
        ("arshift", bit_arshift),
        ("rol", bit_rol),
        ("ror", bit_ror),
        ("bswap", bit_bswap),
        ("tohex", bit_tohex),
    ];
    let t = lua.create_table_with_capacity(0, reg.len())?;
    for (name, f) in reg {
        // SAFETY: mlua asks that the function be a sound lua_CFunction: it reads its arguments,
        // pushes one result into the LUA_MINSTACK slots, and raises only through raw::run, from a
        // frame that owns nothing.
        t.raw_set(name, unsafe { lua.create_c_function(f)? })?;
    }
    Ok(t)
}

/// Results are signed 32-bit values returned as Lua numbers.
///
/// # Safety
///
/// `l` runs a C function with a free slot; pushing a number allocates nothing.
unsafe fn ret(l: *mut lua_State, b: u32) -> R<c_int> {
    ffi::lua_pushnumber(l, b as i32 as f64);
    Ok(1)
}

/// Argument `idx` as 32 bits: adding 2^52+2^51 puts the integer part, rounded to nearest even,
/// in the low word of the double, which also wraps values modulo 2^32. Non-numbers read as 0
/// and only raise when that 0 did not come from a real number.
///
/// # Safety
///
/// `l` runs a C function and `idx` is an acceptable index; reading a number (a numeric string
/// included) allocates nothing and raises nothing.
unsafe fn barg(l: *mut lua_State, idx: c_int) -> R<u32> {
    let n = ffi::lua_tonumber(l, idx);
    let b = (n + 6_755_399_441_055_744.0).to_bits() as u32;
    if b == 0 && ffi::lua_isnumber(l, idx) == 0 {
        return Err(type_error(l, idx, "number"));
    }
    Ok(b)
}

/// `bit.tohex(x [, n])`: n digits (8 by default, at most 8), upper case when n is negative.
///
/// # Safety
///
/// A body for [`raw::run`]; the digits are a plain array, pushed as one string.
unsafe fn tohex(l: *mut lua_State) -> R<c_int> {
    let mut b = barg(l, 1)?;
    // Widened so that negating i32::MIN gives a large count (8 digits), as Redis's build does.
    let mut n: i64 = if ffi::lua_type(l, 2) == ffi::LUA_TNONE { 8 } else { barg(l, 2)? as i32 as i64 };
    let digits: &[u8; 16] = if n < 0 {
        n = -n;
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    if n > 8 {
        n = 8;
    }
    let n = n.max(0) as usize;
    let mut buf = [0u8; 8];
    for i in (0..n).rev() {
        buf[i] = digits[(b & 15) as usize];
        b >>= 4;
    }
    push_bytes(l, &buf[..n]);
    Ok(1)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{eval, new_lua};

    /// Expected values recorded from redis-server 7.0.15.
    #[test]
    fn operations_match_redis() {
        let lua = new_lua();
        let got = eval(
            &lua,
            "return table.concat({bit.tobit(2^32+5), bit.tobit(-1), bit.tobit(1.5), bit.tobit(2.5), \
             bit.tobit(-1.5), bit.tobit(2^31), bit.tobit('0x10'), bit.tobit(2^52), bit.tobit(2^53+3), \
             bit.tobit(1e300), bit.tobit(0/0)}, ',')",
        );
        assert_eq!(got, "5,-1,2,2,-2,-2147483648,16,0,2,-2013235812,0");
        let got = eval(
            &lua,
            "return table.concat({bit.band(0xff, 0x0f, 0x3), bit.bor(1,2,4), bit.bxor(5, 3), bit.bnot(0), \
             bit.lshift(1, 31), bit.lshift(1,32), bit.rshift(-1, 28), bit.arshift(-256, 4), \
             bit.rol(0x12345678, 8), bit.ror(0x12345678, 8), bit.bswap(0x12345678), bit.rol(5, 0), \
             bit.ror(5, 32), bit.lshift(1, -1)}, ',')",
        );
        assert_eq!(got, "3,7,6,-1,-2147483648,1,15,-16,878082066,2014458966,2018915346,5,5,-2147483648");
        let got = eval(
            &lua,
            "return table.concat({bit.tohex(255), bit.tohex(-1, -4), bit.tohex(0x1234, 2), \
             bit.tohex(1, 0), bit.tohex(1, 20), bit.tohex(-1,-20)}, ',')",
        );
        assert_eq!(got, "000000ff,FFFF,34,,00000001,FFFFFFFF");
        let got = eval(
            &lua,
            "return table.concat({bit.tobit(-2^63), bit.tobit(2^63), bit.tobit(1/0), bit.tobit(-1/0), \
             bit.tobit(2^51), bit.tobit(-2^51), bit.tobit(-2^51-1), bit.tobit(2^51+0.5), \
             bit.band('7', '3'), bit.tobit('  12  ')}, ',')",
        );
        assert_eq!(got, "0,0,0,0,0,0,-2,0,3,12");
    }

    #[test]
    fn errors_match_redis() {
        let lua = new_lua();
        let cases = [
            ("return select(2, pcall(bit.band, 'x'))", "bad argument #1 to '?' (number expected, got string)"),
            ("return select(2, pcall(bit.tohex, 1, nil))", "bad argument #2 to '?' (number expected, got nil)"),
            ("return select(2, pcall(bit.band, 1, 'a', 'b'))", "bad argument #3 to '?' (number expected, got string)"),
            ("return select(2, pcall(bit.band))", "bad argument #1 to '?' (number expected, got no value)"),
            ("return select(2, pcall(bit.lshift, 1))", "bad argument #2 to '?' (number expected, got no value)"),
            ("return bit.tohex(-9, 2^31) .. bit.tohex(255, -2^31)", "FFFFFFF7000000FF"),
            ("return select(2, pcall(bit.tobit, ''))", "bad argument #1 to '?' (number expected, got string)"),
            ("return select(2, pcall(bit.tobit, true))", "bad argument #1 to '?' (number expected, got boolean)"),
            (
                "local f = bit.band return select(2, pcall(function() return f('x') end))",
                "user_script:1: bad argument #1 to 'f' (number expected, got string)",
            ),
            (
                "return select(2, pcall(function() return bit:band('x') end))",
                "user_script:1: calling 'band' on bad self (number expected, got table)",
            ),
            (
                "return select(2, pcall(function() return bit.tohex() end))",
                "user_script:1: bad argument #1 to 'tohex' (number expected, got no value)",
            ),
        ];
        for (code, want) in cases {
            assert_eq!(eval(&lua, code), want, "{code}");
        }
        assert_eq!(eval(&lua, "return select('#', pcall(bit.tobit, '0'))"), "2");
    }

    #[test]
    fn pairs_order_matches_redis() {
        let lua = new_lua();
        let got = eval(&lua, "local r={} for k in pairs(bit) do r[#r+1]=k end return table.concat(r, ' ')");
        assert_eq!(got, "band rshift bor bnot bswap bxor tobit ror lshift tohex rol arshift");
    }
}
