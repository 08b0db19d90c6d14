//! Roberto Ierusalimschy's `struct` 0.2 library (`struct.pack/unpack/size`) with Redis's fixes.
//!
//! Format letters: `>`/`<` endianness, `![n]` alignment, `x` pad byte, `b/B` `h/H` `l/L` `T`
//! `i/I[n]` integers, `f`/`d` floats, `c[n]` fixed strings, `s` zero-terminated strings, and
//! spaces. Sizes are those of x86-64 Linux (long and size_t are 8 bytes), where Redis runs.
//! Arguments and results live on the Lua stack as in the C, which keeps its argument numbering
//! quirks (see `pack`) and its result limits.
use std::os::raw::c_int;

use mlua::ffi::{self, lua_State};
use mlua::{Lua, Table};

use crate::lua::cvt::{cvt_i64, cvt_u64};
use crate::lua::raw::{self, arg_error, check_lstring, opt_integer, type_error, R};
use crate::lua::stack::push_bytes;

/// Largest `i`/`I` size accepted.
const MAXINTSIZE: i32 = 32;
/// Default alignment for `!` with no number (alignment of a double).
const MAXALIGN: i32 = 8;

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

lua_fn!(b_pack, pack);
lua_fn!(b_unpack, unpack);
lua_fn!(b_size, size);

/// Builds the `struct` table the way `luaL_register` does (presized, C order).
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 3)?;
    // SAFETY: mlua asks that each function be a sound lua_CFunction. These use their own stack
    // frame only (checking for room past the LUA_MINSTACK slots) and raise only through raw::run,
    // from a frame that owns nothing.
    unsafe {
        t.raw_set("pack", lua.create_c_function(b_pack)?)?;
        t.raw_set("unpack", lua.create_c_function(b_unpack)?)?;
        t.raw_set("size", lua.create_c_function(b_size)?)?;
    }
    Ok(t)
}

#[derive(Clone, Copy, PartialEq)]
enum Endian {
    Big,
    Little,
}

struct Header {
    endian: Endian,
    align: usize,
}

impl Header {
    /// Native (little-endian) order, no alignment.
    fn new() -> Self {
        Header { endian: Endian::Little, align: 1 }
    }
}

/// `luaL_checknumber`.
///
/// # Safety
///
/// `l` runs a C function and `narg` is an acceptable index; reading a number (a numeric string
/// included) allocates nothing and raises nothing.
unsafe fn check_number(l: *mut lua_State, narg: c_int) -> R<f64> {
    let d = ffi::lua_tonumber(l, narg);
    if d == 0.0 && ffi::lua_isnumber(l, narg) == 0 {
        return Err(type_error(l, narg, "number"));
    }
    Ok(d)
}

/// The format argument as C sees it: it ends at the first NUL.
///
/// # Safety
///
/// As [`raw::check_lstring`] (the bytes are copied before this returns).
unsafe fn format_of(l: *mut lua_State) -> R<Vec<u8>> {
    let b = check_lstring(l, 1)?;
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    Ok(b[..end].to_vec())
}

/// Reads an optional decimal count at `fmt[*i..]`, or `df` when there is none.
///
/// # Safety
///
/// `l` runs a C function (only read for an error's position, see [`raw::error`]).
unsafe fn getnum(l: *mut lua_State, fmt: &[u8], i: &mut usize, df: i32) -> R<i32> {
    if !fmt.get(*i).is_some_and(u8::is_ascii_digit) {
        return Ok(df);
    }
    let mut a: i32 = 0;
    while let Some(&c) = fmt.get(*i).filter(|c| c.is_ascii_digit()) {
        let d = (c - b'0') as i32;
        if a > i32::MAX / 10 || a * 10 > i32::MAX - d {
            return Err(raw::error(l, "integral size overflow"));
        }
        a = a * 10 + d;
        *i += 1;
    }
    Ok(a)
}

/// Bytes taken by option `opt` (0 for control letters and unknown ones).
///
/// # Safety
///
/// As [`getnum`].
unsafe fn optsize(l: *mut lua_State, opt: u8, fmt: &[u8], i: &mut usize) -> R<usize> {
    Ok(match opt {
        b'B' | b'b' | b'x' => 1,
        b'H' | b'h' => 2,
        b'L' | b'l' | b'T' | b'd' => 8,
        b'f' => 4,
        b'c' => getnum(l, fmt, i, 1)? as usize,
        b'i' | b'I' => {
            let sz = getnum(l, fmt, i, 4)?;
            if sz > MAXINTSIZE {
                return Err(raw::error(l, format!("integral size {sz} is larger than limit of {MAXINTSIZE}")));
            }
            sz as usize
        }
        _ => 0,
    })
}

/// Padding needed before an item of `size` bytes at offset `len`.
fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    size.wrapping_sub(len & size.wrapping_sub(1)) & size.wrapping_sub(1)
}

/// Spaces, endianness and alignment; anything else is an invalid option.
///
/// # Safety
///
/// As [`getnum`] (and [`raw::arg_error`]).
unsafe fn controloptions(l: *mut lua_State, opt: u8, fmt: &[u8], i: &mut usize, h: &mut Header) -> R<()> {
    match opt {
        b' ' => {}
        b'>' => h.endian = Endian::Big,
        b'<' => h.endian = Endian::Little,
        b'!' => {
            let a = getnum(l, fmt, i, MAXALIGN)?;
            if !(a > 0 && (a & (a - 1)) == 0) {
                return Err(raw::error(l, format!("alignment {a} is not a power of 2")));
            }
            h.align = a as usize;
        }
        _ => {
            let mut m = b"invalid format option '".to_vec();
            m.push(opt);
            m.push(b'\'');
            return Err(arg_error(l, 1, m));
        }
    }
    Ok(())
}

fn is_integer_opt(opt: u8) -> bool {
    matches!(opt, b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I')
}

fn putinteger(out: &mut Vec<u8>, n: f64, endian: Endian, size: usize) {
    let mut value: u64 = if n < 0.0 { cvt_i64(n) as u64 } else { cvt_u64(n) };
    let start = out.len();
    out.resize(start + size, 0);
    let buf = &mut out[start..];
    for k in 0..size {
        let at = if endian == Endian::Little { k } else { size - 1 - k };
        buf[at] = (value & 0xff) as u8;
        value >>= 8;
    }
}

/// `struct.pack(fmt, ...)`. As in C, a nil marker is pushed right after the arguments and
/// values are fetched by stack index, so running out of values by one reports "got nil" and by
/// more "got no value", and a short string names the argument after it.
///
/// # Safety
///
/// A body for [`raw::run`] (the C function runs with the memory cap lifted). The format and the
/// output are alive while arguments are read (a number given for `c`/`s` is converted in place,
/// an allocation) and while the result is pushed; with the cap lifted neither can raise. It takes
/// two slots above the arguments (the nil marker and the result).
unsafe fn pack(l: *mut lua_State) -> R<c_int> {
    let fmt = format_of(l)?;
    ffi::lua_pushnil(l);
    let mut h = Header::new();
    let mut arg: c_int = 2;
    let mut total = 0usize;
    let mut out: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let mut size = optsize(l, opt, &fmt, &mut i)?;
        let toalign = gettoalign(total, &h, opt, size);
        total += toalign;
        out.resize(out.len() + toalign, 0);
        match opt {
            o if is_integer_opt(o) => {
                let n = check_number(l, arg)?;
                arg += 1;
                putinteger(&mut out, n, h.endian, size);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = check_number(l, arg)? as f32;
                arg += 1;
                out.extend_from_slice(&if h.endian == Endian::Little { f.to_le_bytes() } else { f.to_be_bytes() });
            }
            b'd' => {
                let d = check_number(l, arg)?;
                arg += 1;
                out.extend_from_slice(&if h.endian == Endian::Little { d.to_le_bytes() } else { d.to_be_bytes() });
            }
            b'c' | b's' => {
                let s = check_lstring(l, arg)?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    return Err(arg_error(l, arg, "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                    size += 1;
                }
            }
            _ => controloptions(l, opt, &fmt, &mut i, &mut h)?,
        }
        total += size;
    }
    push_bytes(l, &out);
    Ok(1)
}

fn getinteger(buf: &[u8], endian: Endian, signed: bool, size: usize) -> f64 {
    let mut l: u64 = 0;
    for k in 0..size {
        let at = if endian == Endian::Big { k } else { size - 1 - k };
        l = (l << 8) | buf[at] as u64;
    }
    if !signed {
        return l as f64;
    }
    // The shift count wraps the way x86 masks it, as in the C for sizes past 8.
    let mask = (!0u64).wrapping_shl((size as u32).wrapping_mul(8).wrapping_sub(1));
    if l & mask != 0 {
        l |= mask;
    }
    l as i64 as f64
}

/// `struct.unpack(fmt, data [, pos])`: the values, then the position after the last one.
///
/// # Safety
///
/// A body for [`raw::run`] (the C function runs with the memory cap lifted). The format and the
/// copy of the data are alive while values are pushed, which cannot raise with the cap lifted;
/// `lua_checkstack` (two slots per item) fails by returning 0 and is reported as an error.
unsafe fn unpack(l: *mut lua_State) -> R<c_int> {
    let fmt = format_of(l)?;
    let data = check_lstring(l, 2)?.to_vec();
    let ld = data.len();
    let mut pos = opt_integer(l, 3, 1)? as u64 as usize;
    if pos == 0 {
        return Err(arg_error(l, 3, "offset must be 1 or greater"));
    }
    pos -= 1;
    let mut h = Header::new();
    let mut n: c_int = 0;
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let mut size = optsize(l, opt, &fmt, &mut i)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if !(size <= ld && pos <= ld - size) {
            return Err(arg_error(l, 2, "data string too short"));
        }
        if ffi::lua_checkstack(l, 2) == 0 {
            return Err(raw::error(l, "stack overflow (too many results)"));
        }
        match opt {
            o if is_integer_opt(o) => {
                let v = getinteger(&data[pos..pos + size], h.endian, o.is_ascii_lowercase(), size);
                ffi::lua_pushnumber(l, v);
                n += 1;
            }
            b'x' => {}
            b'f' => {
                let mut b = [0u8; 4];
                b.copy_from_slice(&data[pos..pos + 4]);
                let f = if h.endian == Endian::Little { f32::from_le_bytes(b) } else { f32::from_be_bytes(b) };
                ffi::lua_pushnumber(l, f as f64);
                n += 1;
            }
            b'd' => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&data[pos..pos + 8]);
                let d = if h.endian == Endian::Little { f64::from_le_bytes(b) } else { f64::from_be_bytes(b) };
                ffi::lua_pushnumber(l, d);
                n += 1;
            }
            b'c' => {
                if size == 0 {
                    if n == 0 || ffi::lua_isnumber(l, -1) == 0 {
                        return Err(raw::error(l, "format 'c0' needs a previous size"));
                    }
                    size = cvt_u64(ffi::lua_tonumber(l, -1)) as usize;
                    ffi::lua_pop(l, 1);
                    n -= 1;
                    if !(size <= ld && pos <= ld - size) {
                        return Err(arg_error(l, 2, "data string too short"));
                    }
                }
                push_bytes(l, &data[pos..pos + size]);
                n += 1;
            }
            b's' => {
                let Some(z) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(raw::error(l, "unfinished string in data"));
                };
                size = z + 1;
                push_bytes(l, &data[pos..pos + z]);
                n += 1;
            }
            _ => controloptions(l, opt, &fmt, &mut i, &mut h)?,
        }
        pos = pos.wrapping_add(size);
    }
    ffi::lua_pushinteger(l, pos.wrapping_add(1) as i64 as ffi::lua_Integer);
    Ok(n + 1)
}

/// `struct.size(fmt)`: bytes a fixed-size format takes, alignment included.
///
/// # Safety
///
/// A body for [`raw::run`] (the C function runs with the memory cap lifted); it pushes one result.
unsafe fn size(l: *mut lua_State) -> R<c_int> {
    let fmt = format_of(l)?;
    let mut h = Header::new();
    let mut pos = 0usize;
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let size = optsize(l, opt, &fmt, &mut i)?;
        pos += gettoalign(pos, &h, opt, size);
        if opt == b's' {
            return Err(arg_error(l, 1, "option 's' has no fixed size"));
        } else if opt == b'c' && size == 0 {
            return Err(arg_error(l, 1, "option 'c0' has no fixed size"));
        }
        if !opt.is_ascii_alphanumeric() {
            controloptions(l, opt, &fmt, &mut i, &mut h)?;
        }
        pos += size;
    }
    ffi::lua_pushinteger(l, pos as ffi::lua_Integer);
    Ok(1)
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
                "return hex(struct.pack('>i2<i2bBhHlLT', 1, 2, -1, 255, -2, 65535, -3, 4, 5))",
                "00010200fffffefffffffdffffffffffffff04000000000000000500000000000000",
            ),
            ("return hex(struct.pack('!4 b i4 b d', 1, 2, 3, 1.5))", "010000000200000003000000000000000000f83f"),
            ("return hex(struct.pack('!b i4', 1, 2))", "0100000002000000"),
            ("return hex(struct.pack('!2 b i4', 1, 2))", "010002000000"),
            ("return hex(struct.pack('!8 b d', 1, 2))", "01000000000000000000000000000040"),
            ("return hex(struct.pack('>f<d', 1.5, -2.25))", "3fc0000000000000000002c0"),
            ("return hex(struct.pack('s', 'ab')) .. hex(struct.pack('c0', 'abc')) .. hex(struct.pack('c2', 'abc')) .. hex(struct.pack('x'))", "616200616263616200"),
            ("return hex(struct.pack('>i16', -1))", "0000000000000000ffffffffffffffff"),
            ("return hex(struct.pack('<i16', -2))", "feffffffffffffff0000000000000000"),
            ("return hex(struct.pack('>I3', 0x123456)) .. '|' .. hex(struct.pack('>i0', 5))", "123456|"),
            (
                "return table.concat({hex(struct.pack('>I8', 2^64)), hex(struct.pack('>I8', 2^63)), hex(struct.pack('>i8', -2^63)), hex(struct.pack('>i8', -2^64)), hex(struct.pack('>i8', 0/0)), hex(struct.pack('>i8', 1/0)), hex(struct.pack('>i8', -1/0)), hex(struct.pack('>i4', 1.9)), hex(struct.pack('>i4', -1.9)), hex(struct.pack('>i4', 2^40+7))}, ',')",
                "0000000000000000,8000000000000000,8000000000000000,8000000000000000,8000000000000000,0000000000000000,8000000000000000,00000001,ffffffff,00000007",
            ),
            ("return struct.pack('s', 1)", "1\0"),
        ]);
    }

    #[test]
    fn errors_match_redis() {
        check(&[
            ("return select(2, pcall(struct.pack, 'i'))", "bad argument #2 to '?' (number expected, got nil)"),
            ("return select(2, pcall(struct.pack, 'ii', 1))", "bad argument #3 to '?' (number expected, got nil)"),
            ("return select(2, pcall(struct.pack, 'iii', 1))", "bad argument #3 to '?' (number expected, got nil)"),
            ("return select(2, pcall(struct.pack, 'z'))", "bad argument #1 to '?' (invalid format option 'z')"),
            ("return select(2, pcall(struct.pack, 'i33'))", "integral size 33 is larger than limit of 32"),
            ("return select(2, pcall(struct.pack, 'i99999999999'))", "integral size overflow"),
            ("return select(2, pcall(struct.pack, '!3'))", "alignment 3 is not a power of 2"),
            ("return select(2, pcall(struct.pack, 'c5', 'ab'))", "bad argument #3 to '?' (string too short)"),
            ("return select(2, pcall(struct.pack, 'bc5', 1, 'ab'))", "bad argument #4 to '?' (string too short)"),
            ("return select(2, pcall(struct.pack, 'i', 'x'))", "bad argument #2 to '?' (number expected, got string)"),
            ("return select(2, pcall(struct.pack))", "bad argument #1 to '?' (string expected, got no value)"),
            ("return select(2, pcall(struct.unpack, 's', 'abcd'))", "unfinished string in data"),
            ("return select(2, pcall(struct.unpack, 'c0', 'abc'))", "format 'c0' needs a previous size"),
            ("return select(2, pcall(struct.unpack, 'i4', 'abc'))", "bad argument #2 to '?' (data string too short)"),
            (
                "return select(2, pcall(struct.unpack, 'i4', 'abcd', 0))",
                "bad argument #3 to '?' (offset must be 1 or greater)",
            ),
            (
                "return select(2, pcall(struct.unpack, 'i4', 'abcd', 6))",
                "bad argument #2 to '?' (data string too short)",
            ),
            (
                "return select(2, pcall(struct.unpack, 'b', 'abcd', -1))",
                "bad argument #2 to '?' (data string too short)",
            ),
            ("return select(2, pcall(struct.size, 's'))", "bad argument #1 to '?' (option 's' has no fixed size)"),
            ("return select(2, pcall(struct.size, 'c0'))", "bad argument #1 to '?' (option 'c0' has no fixed size)"),
            ("return select(2, pcall(struct.size, '!3'))", "alignment 3 is not a power of 2"),
            ("return select(2, pcall(struct.size, '#'))", "bad argument #1 to '?' (invalid format option '#')"),
            ("return select(2, pcall(struct.size, 'i40'))", "integral size 40 is larger than limit of 32"),
            ("return struct.pack('z')", "ERR user_script:1: bad argument #1 to 'pack' (invalid format option 'z')"),
        ]);
    }

    #[test]
    fn unpack_and_size_match_redis() {
        check(&[
            ("return table.concat({struct.unpack('>i2<i2', '\\0\\1\\2\\0')}, ',')", "1,2,5"),
            ("return table.concat({struct.unpack('bBhH', '\\255\\255\\254\\255\\254\\255')}, ',')", "-1,255,-2,65534,7"),
            ("return table.concat({struct.unpack('s', 'ab\\0cd')}, ',')", "ab,4"),
            ("return table.concat({struct.unpack('Bc0', '\\3abcdef')}, ',')", "abc,5"),
            ("return table.concat({struct.unpack('i4', 'xxabcd', 3)}, ',')", "1684234849,7"),
            ("return table.concat({struct.unpack('b', 'abcd', 4.9)}, ',')", "100,5"),
            ("return table.concat({struct.unpack('>f<d', struct.pack('>f<d', 1.5, -2.25))}, ',')", "1.5,-2.25,13"),
            (
                "return table.concat({struct.size('i'), struct.size('!8bd'), struct.size('bd'), struct.size('c10'), struct.size('z'), struct.size('>i2'), struct.size('x'), struct.size('T'), struct.size('l')}, ',')",
                "4,16,9,10,0,2,1,8,8",
            ),
            ("local r={} for k in pairs(struct) do r[#r+1]=k end return table.concat(r, ' ')", "pack size unpack"),
        ]);
    }
}
