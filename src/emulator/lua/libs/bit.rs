//! LuaBitOp 1.0.2 (`bit.*`): 32-bit operations on Lua numbers, as Redis ships it.
use mlua::{Lua, MultiValue, Table, Value};

use super::{to_number, type_err};

/// Installs the functions in the order `luaL_register` does, into a table presized the same
/// way, so `pairs(bit)` walks them in Redis's order.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 12)?;
    t.raw_set("tobit", lua.create_function(|lua, a: MultiValue| ret(barg(lua, &a.into_vec(), 1)?))?)?;
    t.raw_set("bnot", lua.create_function(|lua, a: MultiValue| ret(!barg(lua, &a.into_vec(), 1)?))?)?;
    t.raw_set("band", fold(lua, |a, b| a & b)?)?;
    t.raw_set("bor", fold(lua, |a, b| a | b)?)?;
    t.raw_set("bxor", fold(lua, |a, b| a ^ b)?)?;
    t.raw_set("lshift", shift(lua, |b, n| b << n)?)?;
    t.raw_set("rshift", shift(lua, |b, n| b >> n)?)?;
    t.raw_set("arshift", shift(lua, |b, n| ((b as i32) >> n) as u32)?)?;
    t.raw_set("rol", shift(lua, |b, n| b.rotate_left(n))?)?;
    t.raw_set("ror", shift(lua, |b, n| b.rotate_right(n))?)?;
    t.raw_set("bswap", lua.create_function(|lua, a: MultiValue| ret(barg(lua, &a.into_vec(), 1)?.swap_bytes()))?)?;
    t.raw_set("tohex", lua.create_function(tohex)?)?;
    Ok(t)
}

/// Results are signed 32-bit values returned as Lua numbers.
fn ret(b: u32) -> mlua::Result<Value> {
    Ok(Value::Number(b as i32 as f64))
}

/// Argument `idx` as 32 bits: adding 2^52+2^51 puts the integer part, rounded to nearest even,
/// in the low word of the double, which also wraps values modulo 2^32. Non-numbers read as 0
/// and only raise when that 0 did not come from a real number.
fn barg(lua: &Lua, args: &[Value], idx: usize) -> mlua::Result<u32> {
    let n = args.get(idx - 1).and_then(|v| to_number(lua, v));
    match n {
        Some(n) => Ok((n + 6_755_399_441_055_744.0).to_bits() as u32),
        None => Err(type_err(lua, args, idx, "number")),
    }
}

/// band/bor/bxor: the first argument, then the others folded in from the last one down.
fn fold(lua: &Lua, op: fn(u32, u32) -> u32) -> mlua::Result<mlua::Function> {
    lua.create_function(move |lua, a: MultiValue| {
        let args = a.into_vec();
        let mut b = barg(lua, &args, 1)?;
        let mut i = args.len();
        while i > 1 {
            b = op(b, barg(lua, &args, i)?);
            i -= 1;
        }
        ret(b)
    })
}

/// Shifts and rotations take the count modulo 32.
fn shift(lua: &Lua, op: fn(u32, u32) -> u32) -> mlua::Result<mlua::Function> {
    lua.create_function(move |lua, a: MultiValue| {
        let args = a.into_vec();
        let b = barg(lua, &args, 1)?;
        let n = barg(lua, &args, 2)? & 31;
        ret(op(b, n))
    })
}

/// `bit.tohex(x [, n])`: n digits (8 by default, at most 8), upper case when n is negative.
fn tohex(lua: &Lua, a: MultiValue) -> mlua::Result<mlua::LuaString> {
    let args = a.into_vec();
    let mut b = barg(lua, &args, 1)?;
    let mut n: i32 = if args.len() < 2 { 8 } else { barg(lua, &args, 2)? as i32 };
    let digits: &[u8; 16] = if n < 0 {
        n = n.wrapping_neg();
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
    lua.create_string(&buf[..n])
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
