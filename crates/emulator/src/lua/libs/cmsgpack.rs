//! lua-cmsgpack 0.4.0 (`cmsgpack.*`): MessagePack for Lua as Redis 7.0 ships it.
//!
//! Written against the Lua C API like the original, with the same pushes and stack checks, so
//! results, table layouts and the "stack overflow (...)" limits match. Packing nests at most 16
//! tables deep (deeper ones become nil, which also survives cycles); unpacking follows nesting
//! with an explicit loop, keeping the open tables on the Lua stack as the C recursion would.
use std::os::raw::c_int;

use mlua::ffi::{self, lua_State};
use mlua::{Lua, Table};

use crate::lua::cvt::{cvt_i32, cvt_i64};
use crate::lua::raw::{self, arg_error, check_integer, check_lstring, opt_integer, Msg, R};
use crate::lua::stack::push_bytes;

/// Tables nested deeper than this are packed as nil.
const MAX_NESTING: usize = 16;

macro_rules! lua_fn {
    ($name:ident, $body:ident) => {
        /// # Safety
        ///
        /// Called by Lua only, as a C function; see [`raw::run`].
        unsafe extern "C-unwind" fn $name(l: *mut lua_State) -> c_int {
            raw::run(l, $body)
        }
    };
}

lua_fn!(mp_pack, pack);
lua_fn!(mp_unpack, unpack);
lua_fn!(mp_unpack_one, unpack_one);
lua_fn!(mp_unpack_limit, unpack_limit);

/// Builds the `cmsgpack` table, fields set in the C order (which fixes `pairs` order).
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    // SAFETY: mlua asks that each function be a sound lua_CFunction. These use their own stack
    // frame only (checking for room as the C does) and raise only through raw::run, from a frame
    // that owns nothing.
    unsafe {
        t.raw_set("pack", lua.create_c_function(mp_pack)?)?;
        t.raw_set("unpack", lua.create_c_function(mp_unpack)?)?;
        t.raw_set("unpack_one", lua.create_c_function(mp_unpack_one)?)?;
        t.raw_set("unpack_limit", lua.create_c_function(mp_unpack_limit)?)?;
    }
    t.raw_set("_NAME", "cmsgpack")?;
    t.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    t.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    t.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(t)
}

/// `luaL_checkstack`: the error names what needed the room.
///
/// # Safety
///
/// `l` runs a C function. `lua_checkstack` fails by returning 0, not by raising (and its growth
/// cannot be refused with the cap lifted); the error is returned.
unsafe fn check_stack(l: *mut lua_State, n: c_int, what: &str) -> R<()> {
    if ffi::lua_checkstack(l, n) == 0 {
        return Err(raw::error(l, format!("stack overflow ({what})")));
    }
    Ok(())
}

// ===== packing =====

fn encode_bytes(out: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

/// Doubles that survive a round trip through float go out as float 32.
fn encode_double(out: &mut Vec<u8>, d: f64) {
    let f = d as f32;
    if f as f64 == d {
        out.push(0xca);
        out.extend_from_slice(&f.to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&d.to_be_bytes());
    }
}

fn encode_int(out: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 127 {
            out.push(n as u8);
        } else if n <= 0xff {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_container_header(out: &mut Vec<u8>, n: usize, fix: u8, b16: u8, b32: u8) {
    if n <= 15 {
        out.push(fix | n as u8);
    } else if n <= 65535 {
        out.push(b16);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(b32);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// Numbers equal to their int64 truncation are integers, the rest floats.
fn encode_number(out: &mut Vec<u8>, n: f64) {
    if !n.is_infinite() && cvt_i64(n) as f64 == n {
        encode_int(out, cvt_i64(n));
    } else {
        encode_double(out, n);
    }
}

/// `table_is_an_array` for the table on top: keys all positive int-sized integers and none
/// missing from 1..n.
///
/// # Safety
///
/// A table is on top of `l`'s stack, in a body run by [`raw::run`]. `lua_next` walks keys it never
/// changes (read as numbers, without conversion), so nothing raises; the stack is restored.
unsafe fn table_is_an_array(l: *mut lua_State) -> R<bool> {
    let top = ffi::lua_gettop(l);
    check_stack(l, 2, "in function table_is_an_array")?;
    let mut count: i32 = 0;
    let mut max: i32 = 0;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        ffi::lua_pop(l, 1);
        let n = ffi::lua_tonumber(l, -1);
        if ffi::lua_type(l, -1) != ffi::LUA_TNUMBER || n <= 0.0 || n.is_infinite() || cvt_i32(n) as f64 != n {
            ffi::lua_settop(l, top);
            return Ok(false);
        }
        if n > max as f64 {
            max = n as i32;
        }
        count = count.wrapping_add(1);
    }
    ffi::lua_settop(l, top);
    Ok(max == count)
}

/// Packs the value on top of the stack and pops it.
///
/// # Safety
///
/// `l` runs `cmsgpack.pack` with the memory cap lifted, the value on top with a free slot (each
/// table checks for what it takes). The caller's buffer `out` is alive across Lua calls that
/// cannot raise: raw reads, `lua_objlen`, `lua_next` over keys it never changes (a key is packed
/// from a copy, strings without conversion), and stack checks that fail by returning 0.
unsafe fn encode_type(l: *mut lua_State, out: &mut Vec<u8>, level: usize) -> R<()> {
    let mut t = ffi::lua_type(l, -1);
    if t == ffi::LUA_TTABLE && level == MAX_NESTING {
        t = ffi::LUA_TNIL;
    }
    match t {
        ffi::LUA_TSTRING => {
            let s = check_lstring(l, -1)?;
            encode_bytes(out, s);
        }
        ffi::LUA_TBOOLEAN => out.push(if ffi::lua_toboolean(l, -1) != 0 { 0xc3 } else { 0xc2 }),
        ffi::LUA_TNUMBER => encode_number(out, ffi::lua_tonumber(l, -1)),
        ffi::LUA_TTABLE => {
            if table_is_an_array(l)? {
                let len = ffi::lua_objlen(l, -1);
                encode_container_header(out, len, 0x90, 0xdc, 0xdd);
                check_stack(l, 1, "in function mp_encode_lua_table_as_array")?;
                for j in 1..=len {
                    ffi::lua_pushnumber(l, j as f64);
                    ffi::lua_rawget_(l, -2);
                    encode_type(l, out, level + 1)?;
                }
            } else {
                check_stack(l, 3, "in function mp_encode_lua_table_as_map")?;
                let mut len = 0usize;
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, -2) != 0 {
                    ffi::lua_pop(l, 1);
                    len += 1;
                }
                encode_container_header(out, len, 0x80, 0xde, 0xdf);
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, -2) != 0 {
                    ffi::lua_pushvalue(l, -2);
                    encode_type(l, out, level + 1)?;
                    encode_type(l, out, level + 1)?;
                }
            }
        }
        _ => out.push(0xc0),
    }
    ffi::lua_pop(l, 1);
    Ok(())
}

/// `cmsgpack.pack(...)`: every argument packed, concatenated.
///
/// # Safety
///
/// A body for [`raw::run`] (the C function runs with the memory cap lifted). The buffer is alive
/// while each argument's bytes are pushed and while they are concatenated (strings only: no
/// metamethod), which the lifted cap keeps from raising; `nargs` slots are checked for the pushed
/// strings.
unsafe fn pack(l: *mut lua_State) -> R<c_int> {
    let nargs = ffi::lua_gettop(l);
    if nargs == 0 {
        return Err(arg_error(l, 0, "MessagePack pack needs input."));
    }
    if ffi::lua_checkstack(l, nargs) == 0 {
        return Err(arg_error(l, 0, "Too many arguments for MessagePack pack."));
    }
    let mut out = Vec::new();
    for i in 1..=nargs {
        check_stack(l, 1, "in function mp_check")?;
        ffi::lua_pushvalue(l, i);
        encode_type(l, &mut out, 0)?;
        push_bytes(l, &out);
        out.clear();
    }
    ffi::lua_concat(l, nargs);
    Ok(1)
}

// ===== unpacking =====

enum Fail {
    /// Input ended inside a value.
    Eof,
    /// A type byte this library does not know.
    BadFormat,
    /// An error raised while decoding (stack limits, bad table keys).
    Raised(Msg),
}

/// A table being filled; the table (and the pending index or key) sit on the Lua stack.
enum Open {
    Array {
        left: usize,
        index: f64,
    },
    /// `has_key`: the key is on the stack and its value is being read.
    Map {
        left: usize,
        has_key: bool,
    },
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn left(&self) -> usize {
        self.data.len() - self.pos
    }

    fn need(&self, n: usize) -> Result<(), Fail> {
        if self.left() < n {
            Err(Fail::Eof)
        } else {
            Ok(())
        }
    }

    fn byte(&self, i: usize) -> u8 {
        self.data.get(self.pos + i).copied().unwrap_or(0)
    }

    fn be(&self, from: usize, n: usize) -> u64 {
        (0..n).fold(0u64, |acc, k| (acc << 8) | self.byte(from + k) as u64)
    }

    /// Pushes the string of `len` bytes after a header of `hdr` bytes.
    ///
    /// # Safety
    ///
    /// As [`Cursor::value`]: a free slot, the cap lifted.
    unsafe fn push_string(&mut self, l: *mut lua_State, hdr: usize, len: usize) -> Result<(), Fail> {
        self.need(hdr.saturating_add(len))?;
        push_bytes(l, &self.data[self.pos + hdr..self.pos + hdr + len]);
        self.pos += hdr + len;
        Ok(())
    }

    /// Decodes one value onto the Lua stack (`mp_decode_to_lua_type`).
    ///
    /// # Safety
    ///
    /// `l` runs one of the unpack functions with the memory cap lifted, and `self.data` is alive
    /// throughout. The open tables (`open`, a Rust buffer) are held across Lua calls that cannot
    /// raise: pushes and raw sets, which only allocate (a nil or NaN key is refused before the
    /// set), and `lua_checkstack`, which fails by returning 0 (one slot per item, one more per
    /// array). The one raise left is Lua's `table overflow`, past 2^26 keys in one table (see
    /// [`raw::run`]).
    unsafe fn value(&mut self, l: *mut lua_State) -> Result<(), Fail> {
        let mut open: Vec<Open> = Vec::new();
        loop {
            // Read one item: a finished value, or the start of a table.
            self.need(1)?;
            if ffi::lua_checkstack(l, 1) == 0 {
                return Err(Fail::Raised(raw::error(
                    l,
                    "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)",
                )));
            }
            let b = self.byte(0);
            let mut table: Option<(bool, usize, usize)> = None; // (is_map, len, header bytes)
            match b {
                0xcc => {
                    self.need(2)?;
                    ffi::lua_pushnumber(l, self.byte(1) as f64);
                    self.pos += 2;
                }
                0xd0 => {
                    self.need(2)?;
                    ffi::lua_pushnumber(l, self.byte(1) as i8 as f64);
                    self.pos += 2;
                }
                0xcd => {
                    self.need(3)?;
                    ffi::lua_pushnumber(l, self.be(1, 2) as f64);
                    self.pos += 3;
                }
                0xd1 => {
                    self.need(3)?;
                    ffi::lua_pushnumber(l, self.be(1, 2) as u16 as i16 as f64);
                    self.pos += 3;
                }
                0xce => {
                    self.need(5)?;
                    ffi::lua_pushnumber(l, self.be(1, 4) as f64);
                    self.pos += 5;
                }
                0xd2 => {
                    self.need(5)?;
                    ffi::lua_pushnumber(l, self.be(1, 4) as u32 as i32 as f64);
                    self.pos += 5;
                }
                // uint 64 is pushed as a signed lua_Integer in C: past 2^63 it comes out negative.
                0xcf | 0xd3 => {
                    self.need(9)?;
                    ffi::lua_pushnumber(l, self.be(1, 8) as i64 as f64);
                    self.pos += 9;
                }
                0xc0 => {
                    ffi::lua_pushnil(l);
                    self.pos += 1;
                }
                0xc3 | 0xc2 => {
                    ffi::lua_pushboolean(l, (b == 0xc3) as c_int);
                    self.pos += 1;
                }
                0xca => {
                    self.need(5)?;
                    ffi::lua_pushnumber(l, f32::from_bits(self.be(1, 4) as u32) as f64);
                    self.pos += 5;
                }
                0xcb => {
                    self.need(9)?;
                    ffi::lua_pushnumber(l, f64::from_bits(self.be(1, 8)));
                    self.pos += 9;
                }
                0xd9 => {
                    self.need(2)?;
                    let n = self.byte(1) as usize;
                    self.push_string(l, 2, n)?;
                }
                0xda => {
                    self.need(3)?;
                    let n = self.be(1, 2) as usize;
                    self.push_string(l, 3, n)?;
                }
                0xdb => {
                    self.need(5)?;
                    let n = self.be(1, 4) as usize;
                    self.pos += 5;
                    self.push_string(l, 0, n)?;
                }
                0xdc | 0xde => {
                    self.need(3)?;
                    table = Some((b == 0xde, self.be(1, 2) as usize, 3));
                }
                0xdd | 0xdf => {
                    self.need(5)?;
                    table = Some((b == 0xdf, self.be(1, 4) as usize, 5));
                }
                _ if b & 0x80 == 0 => {
                    ffi::lua_pushnumber(l, b as f64);
                    self.pos += 1;
                }
                _ if b & 0xe0 == 0xe0 => {
                    ffi::lua_pushnumber(l, b as i8 as f64);
                    self.pos += 1;
                }
                _ if b & 0xe0 == 0xa0 => self.push_string(l, 1, (b & 0x1f) as usize)?,
                _ if b & 0xf0 == 0x90 => table = Some((false, (b & 0xf) as usize, 1)),
                _ if b & 0xf0 == 0x80 => table = Some((true, (b & 0xf) as usize, 1)),
                _ => return Err(Fail::BadFormat),
            }
            if let Some((is_map, len, hdr)) = table {
                self.pos += hdr;
                ffi::lua_newtable(l);
                if !is_map && ffi::lua_checkstack(l, 1) == 0 {
                    return Err(Fail::Raised(raw::error(l, "stack overflow (in function mp_decode_to_lua_array)")));
                }
                if len > 0 {
                    if is_map {
                        open.push(Open::Map { left: len, has_key: false });
                    } else {
                        ffi::lua_pushnumber(l, 1.0);
                        open.push(Open::Array { left: len, index: 1.0 });
                    }
                    continue;
                }
            }
            // A finished value is on top: store it, closing the tables it completes.
            loop {
                let Some(top) = open.last_mut() else {
                    return Ok(());
                };
                match top {
                    Open::Array { left, index } => {
                        ffi::lua_rawset(l, -3);
                        *left -= 1;
                        if *left > 0 {
                            *index += 1.0;
                            ffi::lua_pushnumber(l, *index);
                            break;
                        }
                    }
                    Open::Map { left, has_key } => {
                        if !*has_key {
                            *has_key = true;
                            break;
                        }
                        // lua_settable refuses these keys with a plain (position-less) error.
                        match ffi::lua_type(l, -2) {
                            ffi::LUA_TNIL => return Err(Fail::Raised(b"table index is nil".to_vec())),
                            ffi::LUA_TNUMBER if ffi::lua_tonumber(l, -2).is_nan() => {
                                return Err(Fail::Raised(b"table index is NaN".to_vec()))
                            }
                            _ => {}
                        }
                        ffi::lua_rawset(l, -3);
                        *has_key = false;
                        *left -= 1;
                        if *left > 0 {
                            break;
                        }
                    }
                }
                open.pop();
            }
        }
    }
}

/// `mp_unpack_full`: up to `limit` values from byte `offset` (with both zero: every value and no
/// offset), pushed above the string argument.
///
/// # Safety
///
/// As a body for [`raw::run`]: `l` runs an unpack function with the string as argument 1 and the
/// memory cap lifted. The copy of the input is alive while values are pushed, which cannot raise
/// (see [`Cursor::value`]).
unsafe fn unpack_full(l: *mut lua_State, limit: i64, offset: i64) -> R<c_int> {
    let data = check_lstring(l, 1)?.to_vec();
    let len = data.len();
    if offset < 0 || limit < 0 {
        return Err(raw::error(
            l,
            format!("Invalid request to unpack with offset of {} and limit of {}.", offset as i32, len as i32),
        ));
    } else if offset as u64 > len as u64 {
        return Err(raw::error(l, format!("Start offset {} greater than input length {}.", offset as i32, len as i32)));
    }
    let decode_all = limit == 0 && offset == 0;
    let limit = if decode_all { i32::MAX as i64 } else { limit };
    let mut cur = Cursor { data: &data, pos: offset as usize };
    let mut cnt: c_int = 0;
    while cur.left() > 0 && (cnt as i64) < limit {
        match cur.value(l) {
            Ok(()) => cnt += 1,
            Err(Fail::Eof) => return Err(raw::error(l, "Missing bytes in input.")),
            Err(Fail::BadFormat) => return Err(raw::error(l, "Bad data format in input.")),
            Err(Fail::Raised(m)) => return Err(m),
        }
    }
    if !decode_all {
        check_stack(l, 1, "in function mp_unpack_full")?;
        let next = if cur.left() == 0 { -1 } else { cur.pos as i64 };
        ffi::lua_pushinteger(l, next as ffi::lua_Integer);
        ffi::lua_insert(l, 2);
        cnt += 1;
    }
    Ok(cnt)
}

/// `cmsgpack.unpack(s)`: every value in `s`.
///
/// # Safety
///
/// A body for [`raw::run`] (the C function runs with the memory cap lifted).
unsafe fn unpack(l: *mut lua_State) -> R<c_int> {
    unpack_full(l, 0, 0)
}

/// `cmsgpack.unpack_one(s [, offset])`: next offset (-1 at the end), then one value.
///
/// # Safety
///
/// A body for [`raw::run`] (the C function runs with the memory cap lifted).
unsafe fn unpack_one(l: *mut lua_State) -> R<c_int> {
    let offset = opt_integer(l, 2, 0)?;
    ffi::lua_settop(l, 1);
    unpack_full(l, 1, offset)
}

/// `cmsgpack.unpack_limit(s, limit [, offset])`: next offset, then up to `limit` values.
///
/// # Safety
///
/// A body for [`raw::run`] (the C function runs with the memory cap lifted).
unsafe fn unpack_limit(l: *mut lua_State) -> R<c_int> {
    let limit = check_integer(l, 2)?;
    let offset = opt_integer(l, 3, 0)?;
    ffi::lua_settop(l, 1);
    unpack_full(l, limit, offset)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{eval, new_lua};

    const HEX: &str =
        "local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end ";

    fn check(cases: &[(&str, &str)]) {
        let lua = new_lua();
        for (code, want) in cases {
            let code = format!("{HEX}{code}");
            assert_eq!(eval(&lua, &code), *want, "{code}");
        }
    }

    /// Expected values recorded from redis-server 7.0.15.
    #[test]
    fn pack_matches_redis() {
        check(&[
            (
                "return hex(cmsgpack.pack(0, 127, 128, 255, 256, 65535, 65536, 2^32-1, 2^32, -1, -32, -33, -128, -129, -32768, -32769, -2^31, -2^31-1, 2^63, -2^63, 2^53))",
                "007fcc80ccffcd0100cdffffce00010000ceffffffffcf0000000100000000ffe0d0dfd080d1ff7fd18000d2ffff7fffd280000000d3ffffffff7fffffffca5f000000d38000000000000000cf0020000000000000",
            ),
            (
                "return hex(cmsgpack.pack(1.5, 0.1, 1/0, -1/0, 0/0, -0.0, 1e300, 2^64))",
                "ca3fc00000cb3fb999999999999aca7f800000caff800000cbfff800000000000000cb7e37e43c8800759cca5f800000",
            ),
            (
                "return hex(cmsgpack.pack('', 'abc', string.rep('x', 31), true, false, nil))",
                "a0a3616263bf78787878787878787878787878787878787878787878787878787878787878c3c2c0",
            ),
            (
                "return hex(cmsgpack.pack(string.rep('x', 32)):sub(1,6)) .. hex(cmsgpack.pack(string.rep('x', 256)):sub(1,8)) .. hex(cmsgpack.pack(string.rep('x', 65536)):sub(1,12))",
                "d92078787878da01007878787878db0001000078787878787878",
            ),
            (
                "return table.concat({hex(cmsgpack.pack({})), hex(cmsgpack.pack({1,2,3})), hex(cmsgpack.pack({a=1})), hex(cmsgpack.pack({[1]=1,[3]=3})), hex(cmsgpack.pack({[2]=1})), hex(cmsgpack.pack({[1.5]=1})), hex(cmsgpack.pack({[0]=1}))}, ',')",
                "90,93010203,81a16101,8201010303,810201,81ca3fc0000001,810001",
            ),
            ("local t={} for i=1,16 do t[i]=i end return hex(cmsgpack.pack(t))", "dc00100102030405060708090a0b0c0d0e0f10"),
            ("local t={} t[1]=t return hex(cmsgpack.pack(t))", "91919191919191919191919191919191c0"),
            (
                "local t={} t.a=t return hex(cmsgpack.pack(t))",
                "81a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a161c0",
            ),
            ("return hex(cmsgpack.pack(print, cjson.null))", "c0c0"),
            ("return select(2, pcall(cmsgpack.pack))", "bad argument #0 to '?' (MessagePack pack needs input.)"),
            (
                "local t = {} for i=1,4001 do t[i]=i end return select(2, pcall(function() return #cmsgpack.pack(unpack(t)) end))",
                "user_script:1: bad argument #0 to 'pack' (Too many arguments for MessagePack pack.)",
            ),
            ("local t = {} for i=1,4000 do t[i]=i end return #cmsgpack.pack(unpack(t))", "11618"),
        ]);
    }

    #[test]
    fn unpack_matches_redis() {
        check(&[
            ("local a,b,c,d = cmsgpack.unpack(cmsgpack.pack(1, 'a', {1,2}, {x=1})) return table.concat({a, b, c[2], d.x}, ',')", "1,a,2,1"),
            ("return select('#', cmsgpack.unpack(''))", "0"),
            ("return select(2, pcall(cmsgpack.unpack, '\\193'))", "Bad data format in input."),
            ("return select(2, pcall(cmsgpack.unpack, '\\146\\1'))", "Missing bytes in input."),
            ("return select(2, pcall(cmsgpack.unpack, '\\205\\1'))", "Missing bytes in input."),
            ("return select(2, pcall(cmsgpack.unpack))", "bad argument #1 to '?' (string expected, got no value)"),
            ("return select(2, pcall(cmsgpack.unpack, '\\129\\192\\1'))", "table index is nil"),
            ("return select(2, pcall(cmsgpack.unpack, '\\129\\203\\255\\248\\0\\0\\0\\0\\0\\0\\1'))", "table index is NaN"),
            ("local t = cmsgpack.unpack('\\129\\1\\192') return type(t) .. tostring(next(t))", "tablenil"),
            (
                "return table.concat({cmsgpack.unpack('\\207\\255\\255\\255\\255\\255\\255\\255\\255\\211\\128\\0\\0\\0\\0\\0\\0\\0\\207\\127\\255\\255\\255\\255\\255\\255\\255\\207\\0\\0\\0\\1\\0\\0\\0\\0')}, ',')",
                "-1,-9.2233720368548e+18,9.2233720368548e+18,4294967296",
            ),
            (
                "return table.concat({cmsgpack.unpack('\\209\\255\\254\\208\\128\\224\\255\\210\\128\\0\\0\\0\\206\\255\\255\\255\\255\\205\\255\\255\\204\\255')}, ',')",
                "-2,-128,-32,-1,-2147483648,4294967295,65535,255",
            ),
            ("return table.concat({cmsgpack.unpack('\\202\\63\\192\\0\\0\\217\\2ab\\218\\0\\1c\\219\\0\\0\\0\\1d')}, ',')", "1.5,ab,c,d"),
            ("return select(2, pcall(cmsgpack.unpack, '\\217\\5ab'))", "Missing bytes in input."),
            ("return select(2, pcall(cmsgpack.unpack, '\\1\\196'))", "Bad data format in input."),
            ("return select(2, pcall(cmsgpack.unpack, '\\199\\0\\0'))", "Bad data format in input."),
            ("local t = cmsgpack.unpack('\\220\\0\\3\\1\\2\\3') return #t .. ',' .. t[3]", "3,3"),
            ("local t = cmsgpack.unpack('\\221\\0\\0\\0\\2\\1\\2') return #t .. ',' .. t[2]", "2,2"),
            ("return cmsgpack.unpack('\\222\\0\\1\\161a\\2').a", "2"),
            ("return cmsgpack.unpack('\\223\\0\\0\\0\\1\\161a\\3').a", "3"),
            ("return select(2, pcall(cmsgpack.unpack, '\\223\\255\\255\\255\\255'))", "Missing bytes in input."),
            ("local t = cmsgpack.unpack('\\146\\192\\1') return #t .. ',' .. t[2]", "0,1"),
            ("return tostring(cmsgpack.unpack('\\203\\127\\248\\0\\0\\0\\0\\0\\0'))", "nan"),
            ("return select('#', cmsgpack.unpack(string.rep('\\1', 7999)))", "7999"),
            (
                "return select(2, pcall(function() return select('#', cmsgpack.unpack(string.rep('\\1', 8000))) end))",
                "user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)",
            ),
            ("return select(2, pcall(cmsgpack.unpack, string.rep('\\145', 5000)))", "stack overflow (in function mp_decode_to_lua_array)"),
            ("return type(select(2, pcall(cmsgpack.unpack, string.rep('\\145', 3999) .. '\\1')))", "table"),
            ("return type(select(2, pcall(cmsgpack.unpack, string.rep('\\129\\1', 3999) .. '\\1')))", "table"),
            (
                "return select(2, pcall(cmsgpack.unpack, string.rep('\\129', 7999) .. '\\1'))",
                "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)",
            ),
        ]);
    }

    #[test]
    fn unpack_one_and_limit_match_redis() {
        check(&[
            ("return table.concat({cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3))}, ',')", "1,1"),
            ("return table.concat({cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 2)}, ',')", "-1,3"),
            ("return table.concat({cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 3)}, ',')", "-1"),
            (
                "return select(2, pcall(cmsgpack.unpack_one, cmsgpack.pack(1, 2, 3), 4))",
                "Start offset 4 greater than input length 3.",
            ),
            (
                "return select(2, pcall(cmsgpack.unpack_one, cmsgpack.pack(1, 2, 3), -1))",
                "Invalid request to unpack with offset of -1 and limit of 3.",
            ),
            ("return table.concat({cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)}, ',')", "2,1,2"),
            ("return table.concat({cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 0)}, ',')", "1,2,3"),
            ("return table.concat({cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 0, 1)}, ',')", "1"),
            ("return table.concat({cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 5, 1)}, ',')", "-1,2,3"),
            (
                "return select(2, pcall(cmsgpack.unpack_limit, cmsgpack.pack(1, 2, 3), -1))",
                "Invalid request to unpack with offset of 0 and limit of 3.",
            ),
            (
                "return select(2, pcall(cmsgpack.unpack_limit, cmsgpack.pack(1, 2, 3)))",
                "bad argument #2 to '?' (number expected, got no value)",
            ),
            ("return select(2, pcall(cmsgpack.unpack_one, '\\1\\202\\0', 1))", "Missing bytes in input."),
            ("return table.concat({cmsgpack.unpack_one('\\1\\2', 1.7)}, ',')", "-1,2"),
            ("return table.concat({cmsgpack.unpack_one('\\1\\2', '1')}, ',')", "-1,2"),
            (
                "return select(2, pcall(cmsgpack.unpack_one, '\\1\\2', 'x'))",
                "bad argument #2 to '?' (number expected, got string)",
            ),
            ("return table.concat({cmsgpack.unpack_limit('\\1\\2', 1, nil)}, ',')", "1,1"),
            (
                "local r={} for k in pairs(cmsgpack) do r[#r+1]=k end return table.concat(r, ' ')",
                "_DESCRIPTION pack _NAME unpack _COPYRIGHT _VERSION unpack_one unpack_limit",
            ),
        ]);
    }
}
