//! Lua CJSON 2.1.0 (`cjson.*`) as Redis 7.0 ships it: encode/decode plus the config functions.
//!
//! Written against the Lua C API like the original: values are walked on the Lua stack with the
//! same pushes and `lua_checkstack` calls, so nesting limits (the configured depths and the
//! 8000-slot C stack) and key order (`lua_next`) come out the same. Nesting is followed with an
//! explicit loop rather than recursion, so deep documents cannot overflow the Rust stack.
use std::os::raw::c_int;

use mlua::ffi::{self, lua_State};
use mlua::{Lua, Table};

use crate::lua::cvt::{cvt_i32, fmt_g};
use crate::lua::raw::{self, arg_error, check_integer, check_lstring, check_option, Msg, R};
use crate::lua::stack::push_bytes;

/// One module instance's settings, kept in a userdata shared by its functions as upvalue 1
/// (`cjson.new()` makes an independent one). Plain data, so Lua may free it without a finalizer.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Config {
    sparse_convert: i32,
    sparse_ratio: i32,
    sparse_safe: i32,
    encode_max_depth: i32,
    decode_max_depth: i32,
    /// 0 refuse, 1 allow ("nan"/"inf"), 2 write `null`.
    encode_invalid_numbers: i32,
    decode_invalid_numbers: i32,
    number_precision: i32,
    keep_buffer: i32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sparse_convert: 0,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            encode_invalid_numbers: 0,
            decode_invalid_numbers: 1,
            number_precision: 14,
            keep_buffer: 1,
        }
    }
}

/// Builds the `cjson` table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    // SAFETY: mlua asks that the function be a sound lua_CFunction. `cjson_new` uses its own stack
    // frame only (pushes within the LUA_MINSTACK slots Lua gives a C function) and raises only
    // through raw::run, from a frame that owns nothing.
    let new = unsafe { lua.create_c_function(cjson_new)? };
    new.call(())
}

macro_rules! lua_fn {
    ($name:ident, $body:ident) => {
        /// # Safety
        ///
        /// Called by Lua only, as a C function; see [`raw::run`]. The configuration functions (all
        /// but `new`) are the closures `new_module` makes, with the config userdata as upvalue 1.
        unsafe extern "C-unwind" fn $name(l: *mut lua_State) -> c_int {
            raw::run(l, $body)
        }
    };
}

lua_fn!(cjson_new, new_module);
lua_fn!(json_encode, encode);
lua_fn!(json_decode, decode);
lua_fn!(json_cfg_encode_sparse_array, cfg_encode_sparse_array);
lua_fn!(json_cfg_encode_max_depth, cfg_encode_max_depth);
lua_fn!(json_cfg_decode_max_depth, cfg_decode_max_depth);
lua_fn!(json_cfg_encode_number_precision, cfg_encode_number_precision);
lua_fn!(json_cfg_encode_keep_buffer, cfg_encode_keep_buffer);
lua_fn!(json_cfg_encode_invalid_numbers, cfg_encode_invalid_numbers);
lua_fn!(json_cfg_decode_invalid_numbers, cfg_decode_invalid_numbers);

/// `lua_cjson_new`: a module table whose functions share a fresh config, fields set in the C
/// registration order (which fixes `pairs(cjson)` order).
///
/// # Safety
///
/// A body for [`raw::run`] (the C function runs with the memory cap lifted). It takes three stack
/// slots. The userdata is sized for a Config and aligned as Lua aligns userdata (for any C type),
/// and written before use; Config has no destructor, so Lua may free it without a finalizer.
unsafe fn new_module(l: *mut lua_State) -> R<c_int> {
    let reg: [(&std::ffi::CStr, ffi::lua_CFunction); 10] = [
        (c"encode", json_encode),
        (c"decode", json_decode),
        (c"encode_sparse_array", json_cfg_encode_sparse_array),
        (c"encode_max_depth", json_cfg_encode_max_depth),
        (c"decode_max_depth", json_cfg_decode_max_depth),
        (c"encode_number_precision", json_cfg_encode_number_precision),
        (c"encode_keep_buffer", json_cfg_encode_keep_buffer),
        (c"encode_invalid_numbers", json_cfg_encode_invalid_numbers),
        (c"decode_invalid_numbers", json_cfg_decode_invalid_numbers),
        (c"new", cjson_new),
    ];
    ffi::lua_newtable(l);
    let cfg = ffi::lua_newuserdata(l, std::mem::size_of::<Config>()) as *mut Config;
    std::ptr::write(cfg, Config::default());
    for (name, f) in reg {
        ffi::lua_pushvalue(l, -1);
        ffi::lua_pushcclosure(l, f, 1);
        ffi::lua_setfield(l, -3, name.as_ptr());
    }
    ffi::lua_pop(l, 1);
    ffi::lua_pushlightuserdata(l, std::ptr::null_mut());
    ffi::lua_setfield(l, -2, c"null".as_ptr());
    push_bytes(l, b"cjson");
    ffi::lua_setfield(l, -2, c"_NAME".as_ptr());
    push_bytes(l, b"2.1.0");
    ffi::lua_setfield(l, -2, c"_VERSION".as_ptr());
    Ok(1)
}

/// The config of the running function's module.
///
/// # Safety
///
/// `l` runs one of the closures `new_module` makes: upvalue 1 is the full userdata holding the
/// module's Config, alive while the closure is. The reference must not outlive the call, nor meet
/// another one to the same config: each function takes it once, and no Lua code runs meanwhile.
unsafe fn config<'a>(l: *mut lua_State) -> &'a mut Config {
    &mut *(ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *mut Config)
}

// ===== configuration =====

/// `json_arg_init`: at most `n` arguments, padded with nils.
///
/// # Safety
///
/// `l` runs a C function and `n` is at most 3, within its LUA_MINSTACK slots.
unsafe fn arg_init(l: *mut lua_State, n: c_int) -> R<()> {
    if ffi::lua_gettop(l) > n {
        return Err(arg_error(l, n + 1, "found too many arguments"));
    }
    while ffi::lua_gettop(l) < n {
        ffi::lua_pushnil(l);
    }
    Ok(())
}

/// `json_integer_option`: sets from argument `idx` unless nil (range errors always name
/// argument #1, as the C does), then pushes the current value.
///
/// # Safety
///
/// `l` runs a C function, `idx` is one of its arguments, and one slot is free for the result.
unsafe fn integer_option(l: *mut lua_State, idx: c_int, setting: &mut i32, min: i32, max: i32) -> R<()> {
    if ffi::lua_type(l, idx) != ffi::LUA_TNIL {
        let value = check_integer(l, idx)? as i32;
        if !(min <= value && value <= max) {
            return Err(arg_error(l, 1, format!("expected integer between {min} and {max}")));
        }
        *setting = value;
    }
    ffi::lua_pushinteger(l, *setting as ffi::lua_Integer);
    Ok(())
}

/// `json_enum_option`: booleans map to 0/`bool_true`, strings to their index in `options`;
/// pushes a boolean unless the setting is another named mode.
///
/// # Safety
///
/// As [`integer_option`]; the option string is read with the cap lifted ([`raw::check_option`]).
unsafe fn enum_option(l: *mut lua_State, idx: c_int, setting: &mut i32, options: &[&str], bool_true: i32) -> R<()> {
    if ffi::lua_type(l, idx) != ffi::LUA_TNIL {
        if bool_true != 0 && ffi::lua_type(l, idx) == ffi::LUA_TBOOLEAN {
            *setting = ffi::lua_toboolean(l, idx) * bool_true;
        } else {
            *setting = check_option(l, idx, options)? as i32;
        }
    }
    if bool_true != 0 && (*setting == 0 || *setting == bool_true) {
        ffi::lua_pushboolean(l, *setting);
    } else {
        push_bytes(l, options.get(*setting as usize).copied().unwrap_or("").as_bytes());
    }
    Ok(())
}

const ON_OFF: [&str; 2] = ["off", "on"];

/// # Safety
///
/// A body for [`raw::run`] (the C function runs with the memory cap lifted), for a configuration
/// closure (see [`config`]); it takes at most six stack slots (arguments and results).
unsafe fn cfg_encode_sparse_array(l: *mut lua_State) -> R<c_int> {
    arg_init(l, 3)?;
    let c = config(l);
    enum_option(l, 1, &mut c.sparse_convert, &ON_OFF, 1)?;
    integer_option(l, 2, &mut c.sparse_ratio, 0, i32::MAX)?;
    integer_option(l, 3, &mut c.sparse_safe, 0, i32::MAX)?;
    Ok(3)
}

/// # Safety
///
/// A body for [`raw::run`] (the C function runs with the memory cap lifted), for a configuration
/// closure (see [`config`]); it takes at most six stack slots (arguments and results).
unsafe fn cfg_encode_max_depth(l: *mut lua_State) -> R<c_int> {
    arg_init(l, 1)?;
    integer_option(l, 1, &mut config(l).encode_max_depth, 1, i32::MAX)?;
    Ok(1)
}

/// # Safety
///
/// A body for [`raw::run`] (the C function runs with the memory cap lifted), for a configuration
/// closure (see [`config`]); it takes at most six stack slots (arguments and results).
unsafe fn cfg_decode_max_depth(l: *mut lua_State) -> R<c_int> {
    arg_init(l, 1)?;
    integer_option(l, 1, &mut config(l).decode_max_depth, 1, i32::MAX)?;
    Ok(1)
}

/// # Safety
///
/// A body for [`raw::run`] (the C function runs with the memory cap lifted), for a configuration
/// closure (see [`config`]); it takes at most six stack slots (arguments and results).
unsafe fn cfg_encode_number_precision(l: *mut lua_State) -> R<c_int> {
    arg_init(l, 1)?;
    integer_option(l, 1, &mut config(l).number_precision, 1, 14)?;
    Ok(1)
}

/// # Safety
///
/// A body for [`raw::run`] (the C function runs with the memory cap lifted), for a configuration
/// closure (see [`config`]); it takes at most six stack slots (arguments and results).
unsafe fn cfg_encode_keep_buffer(l: *mut lua_State) -> R<c_int> {
    arg_init(l, 1)?;
    enum_option(l, 1, &mut config(l).keep_buffer, &ON_OFF, 1)?;
    Ok(1)
}

/// # Safety
///
/// A body for [`raw::run`] (the C function runs with the memory cap lifted), for a configuration
/// closure (see [`config`]); it takes at most six stack slots (arguments and results).
unsafe fn cfg_encode_invalid_numbers(l: *mut lua_State) -> R<c_int> {
    arg_init(l, 1)?;
    enum_option(l, 1, &mut config(l).encode_invalid_numbers, &["off", "on", "null"], 1)?;
    Ok(1)
}

/// # Safety
///
/// A body for [`raw::run`] (the C function runs with the memory cap lifted), for a configuration
/// closure (see [`config`]); it takes at most six stack slots (arguments and results).
unsafe fn cfg_decode_invalid_numbers(l: *mut lua_State) -> R<c_int> {
    arg_init(l, 1)?;
    enum_option(l, 1, &mut config(l).decode_invalid_numbers, &ON_OFF, 1)?;
    Ok(1)
}

// ===== encoding =====

/// How each byte is written inside a JSON string; `None` means as itself. Note '/' is escaped.
fn escape(b: u8) -> Option<&'static [u8]> {
    const CTRL: [&[u8]; 32] = [
        b"\\u0000", b"\\u0001", b"\\u0002", b"\\u0003", b"\\u0004", b"\\u0005", b"\\u0006", b"\\u0007", b"\\b", b"\\t",
        b"\\n", b"\\u000b", b"\\f", b"\\r", b"\\u000e", b"\\u000f", b"\\u0010", b"\\u0011", b"\\u0012", b"\\u0013",
        b"\\u0014", b"\\u0015", b"\\u0016", b"\\u0017", b"\\u0018", b"\\u0019", b"\\u001a", b"\\u001b", b"\\u001c",
        b"\\u001d", b"\\u001e", b"\\u001f",
    ];
    match b {
        0..=31 => Some(CTRL[b as usize]),
        b'"' => Some(b"\\\""),
        b'/' => Some(b"\\/"),
        b'\\' => Some(b"\\\\"),
        127 => Some(b"\\u007f"),
        _ => None,
    }
}

fn append_string(out: &mut Vec<u8>, s: &[u8]) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    for &b in s {
        match escape(b) {
            Some(e) => out.extend_from_slice(e),
            None => out.push(b),
        }
    }
    out.push(b'"');
}

/// A table being written out; the table itself sits at stack index `at`.
enum Frame {
    Array { at: c_int, len: i32, next: i32 },
    Object { at: c_int, first: bool },
}

struct Encoder {
    l: *mut lua_State,
    cfg: Config,
    out: Vec<u8>,
}

impl Encoder {
    /// `json_encode_exception` for the value at `idx`.
    ///
    /// # Safety
    ///
    /// `self.l` runs `cjson.encode` and `idx` is a valid index; the message is returned.
    unsafe fn exception(&self, idx: c_int, reason: &str) -> Msg {
        let mut m = b"Cannot serialise ".to_vec();
        m.extend_from_slice(raw::typename(self.l, idx));
        m.extend_from_slice(b": ");
        m.extend_from_slice(reason.as_bytes());
        raw::error(self.l, m)
    }

    /// Writes the number at `idx` as cjson prints it.
    ///
    /// # Safety
    ///
    /// The value at `idx` of `self.l` is a number; reading it allocates nothing.
    unsafe fn append_number(&mut self, idx: c_int) -> R<()> {
        let x = ffi::lua_tonumber(self.l, idx);
        match self.cfg.encode_invalid_numbers {
            0 => {
                if !x.is_finite() {
                    return Err(self.exception(idx, "must not be NaN or Inf"));
                }
            }
            1 => {
                if x.is_nan() {
                    self.out.extend_from_slice(b"nan");
                    return Ok(());
                }
            }
            _ => {
                if !x.is_finite() {
                    self.out.extend_from_slice(b"null");
                    return Ok(());
                }
            }
        }
        let s = fmt_g(x, self.cfg.number_precision.clamp(1, 14) as usize);
        self.out.extend_from_slice(s.as_bytes());
        Ok(())
    }

    /// Writes the string at `idx`, quoted and escaped.
    ///
    /// # Safety
    ///
    /// The value at `idx` of `self.l` is a string (so nothing is converted); its bytes are read
    /// while it is on the stack.
    unsafe fn append_string_at(&mut self, idx: c_int) {
        let mut len = 0usize;
        let p = ffi::lua_tolstring(self.l, idx, &mut len);
        append_string(&mut self.out, std::slice::from_raw_parts(p.cast(), len));
    }

    /// `lua_array_length` for the table on top: its size when every key is a positive integer
    /// and it is not excessively sparse, else -1 (object). Keeps the C's int arithmetic,
    /// including how a huge key truncates.
    ///
    /// # Safety
    ///
    /// A table is on top of `self.l`'s stack with two free slots. `lua_next` walks keys it never
    /// changes (numbers are read without conversion), so it cannot raise.
    unsafe fn array_length(&self) -> R<i32> {
        let l = self.l;
        let mut max: i32 = 0;
        let mut items: i32 = 0;
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            if ffi::lua_type(l, -2) == ffi::LUA_TNUMBER {
                let k = ffi::lua_tonumber(l, -2);
                if k != 0.0 && k.floor() == k && k >= 1.0 {
                    if k > max as f64 {
                        max = cvt_i32(k);
                    }
                    items = items.wrapping_add(1);
                    ffi::lua_pop(l, 1);
                    continue;
                }
            }
            ffi::lua_pop(l, 2);
            return Ok(-1);
        }
        let c = &self.cfg;
        if c.sparse_ratio > 0 && max > items.wrapping_mul(c.sparse_ratio) && max > c.sparse_safe {
            if c.sparse_convert == 0 {
                return Err(self.exception(-1, "excessively sparse array"));
            }
            return Ok(-1);
        }
        Ok(max)
    }

    /// Writes the value on top of the stack (popping it), containers included.
    ///
    /// # Safety
    ///
    /// `self.l` runs `cjson.encode` with the memory cap lifted, the value on top. It holds Rust
    /// buffers (the output, the open tables) across Lua calls that cannot raise: raw reads,
    /// `lua_next` over keys it never changes, strings read without conversion, and
    /// `lua_checkstack` (three slots for each open table: the table, a key, a value), which fails
    /// by returning 0 and is then reported as an error.
    unsafe fn run(&mut self) -> R<()> {
        let l = self.l;
        let mut frames: Vec<Frame> = Vec::new();
        'value: loop {
            // The value to write is on top of the stack; scalars are popped once written,
            // tables stay there while their contents are written.
            let opened = match ffi::lua_type(l, -1) {
                ffi::LUA_TSTRING => {
                    self.append_string_at(-1);
                    false
                }
                ffi::LUA_TNUMBER => {
                    self.append_number(-1)?;
                    false
                }
                ffi::LUA_TBOOLEAN => {
                    let t = ffi::lua_toboolean(l, -1) != 0;
                    self.out.extend_from_slice(if t { b"true" } else { b"false" });
                    false
                }
                ffi::LUA_TNIL => {
                    self.out.extend_from_slice(b"null");
                    false
                }
                ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(l, -1).is_null() => {
                    self.out.extend_from_slice(b"null");
                    false
                }
                ffi::LUA_TTABLE => {
                    let depth = frames.len() as i64 + 1;
                    if depth > self.cfg.encode_max_depth as i64 || ffi::lua_checkstack(l, 3) == 0 {
                        return Err(raw::error(l, format!("Cannot serialise, excessive nesting ({depth})")));
                    }
                    let len = self.array_length()?;
                    let at = ffi::lua_gettop(l);
                    if len > 0 {
                        self.out.push(b'[');
                        frames.push(Frame::Array { at, len, next: 1 });
                    } else {
                        self.out.push(b'{');
                        ffi::lua_pushnil(l);
                        frames.push(Frame::Object { at, first: true });
                    }
                    true
                }
                _ => return Err(self.exception(-1, "type not supported")),
            };
            if !opened {
                ffi::lua_pop(l, 1);
            }
            // Find the next value to write, closing finished tables.
            loop {
                let Some(frame) = frames.last_mut() else {
                    return Ok(());
                };
                match frame {
                    Frame::Array { at, len, next } => {
                        if *next <= *len {
                            if *next > 1 {
                                self.out.push(b',');
                            }
                            ffi::lua_rawgeti_(l, *at, *next);
                            *next += 1;
                            continue 'value;
                        }
                        self.out.push(b']');
                    }
                    Frame::Object { at, first } => {
                        // The previous key (or the initial nil) is on top.
                        if ffi::lua_next(l, *at) != 0 {
                            if !*first {
                                self.out.push(b',');
                            }
                            *first = false;
                            match ffi::lua_type(l, -2) {
                                ffi::LUA_TNUMBER => {
                                    self.out.push(b'"');
                                    self.append_number(-2)?;
                                    self.out.extend_from_slice(b"\":");
                                }
                                ffi::LUA_TSTRING => {
                                    self.append_string_at(-2);
                                    self.out.push(b':');
                                }
                                _ => return Err(self.exception(-2, "table key must be a number or string")),
                            }
                            continue 'value;
                        }
                        self.out.push(b'}');
                    }
                }
                // Drop the finished table from the stack.
                frames.pop();
                ffi::lua_pop(l, 1);
            }
        }
    }
}

/// # Safety
///
/// A body for [`raw::run`] (the C function runs with the memory cap lifted). The output is pushed
/// while the encoder owns it, which the lifted cap makes safe.
unsafe fn encode(l: *mut lua_State) -> R<c_int> {
    if ffi::lua_gettop(l) != 1 {
        return Err(arg_error(l, 1, "expected 1 argument"));
    }
    let mut enc = Encoder { l, cfg: *config(l), out: Vec::new() };
    enc.run()?;
    push_bytes(l, &enc.out);
    Ok(1)
}

// ===== decoding =====

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str,
    Num,
    Bool,
    Null,
    Colon,
    Comma,
    End,
    Error,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::ObjBegin => "T_OBJ_BEGIN",
            Kind::ObjEnd => "T_OBJ_END",
            Kind::ArrBegin => "T_ARR_BEGIN",
            Kind::ArrEnd => "T_ARR_END",
            Kind::Str => "T_STRING",
            Kind::Num => "T_NUMBER",
            Kind::Bool => "T_BOOLEAN",
            Kind::Null => "T_NULL",
            Kind::Colon => "T_COLON",
            Kind::Comma => "T_COMMA",
            Kind::End => "T_END",
            Kind::Error => "T_ERROR",
        }
    }
}

struct Token {
    kind: Kind,
    /// Offset of the token (or of the fault, for errors).
    index: usize,
    num: f64,
    boolean: bool,
    /// What went wrong, for `Kind::Error`.
    err: &'static str,
}

struct Parser<'a> {
    l: *mut lua_State,
    cfg: Config,
    data: &'a [u8],
    pos: usize,
    /// The text of the last string token.
    tmp: Vec<u8>,
}

impl Parser<'_> {
    /// The byte at `i`, with the C string's terminating NUL past the end.
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    fn token(&self, kind: Kind, index: usize) -> Token {
        Token { kind, index, num: 0.0, boolean: false, err: "" }
    }

    fn error_token(&self, err: &'static str) -> Token {
        Token { kind: Kind::Error, index: self.pos, num: 0.0, boolean: false, err }
    }

    fn starts_with(&self, word: &[u8]) -> bool {
        word.iter().enumerate().all(|(i, &b)| self.at(self.pos + i) == b)
    }

    fn starts_with_ci(&self, at: usize, word: &[u8]) -> bool {
        word.iter().enumerate().all(|(i, &b)| self.at(at + i).to_ascii_lowercase() == b)
    }

    /// `json_is_invalid_number`: spellings strtod takes but strict JSON does not
    /// (leading '+', hex, leading zeros, inf, nan).
    fn is_invalid_number(&self) -> bool {
        let mut p = self.pos;
        if self.at(p) == b'+' {
            return true;
        }
        if self.at(p) == b'-' {
            p += 1;
        }
        let c = self.at(p);
        if c == b'0' {
            let c2 = self.at(p + 1);
            return (c2 | 0x20) == b'x' || c2.is_ascii_digit();
        } else if (c as i8) <= b'9' as i8 {
            return false;
        }
        self.starts_with_ci(p, b"inf") || self.starts_with_ci(p, b"nan")
    }

    fn number_token(&mut self) -> Token {
        let end = self.data[self.pos.min(self.data.len())..]
            .iter()
            .position(|&b| b == 0)
            .map(|p| self.pos + p)
            .unwrap_or(self.data.len());
        let (n, used) = strtod(&self.data[self.pos.min(end)..end]);
        if used == 0 {
            return self.error_token("invalid number");
        }
        let mut t = self.token(Kind::Num, self.pos);
        t.num = n;
        self.pos += used;
        t
    }

    /// Reads four hex digits at `i`, or -1.
    fn hex4(&self, i: usize) -> i32 {
        let mut v = 0i32;
        for k in 0..4 {
            let d = match self.at(i + k) {
                c @ b'0'..=b'9' => c - b'0',
                c @ b'a'..=b'f' => c - b'a' + 10,
                c @ b'A'..=b'F' => c - b'A' + 10,
                _ => return -1,
            };
            v = (v << 4) | d as i32;
        }
        v
    }

    /// `\uXXXX` (or a surrogate pair) at `pos` appended as UTF-8; false when malformed.
    fn unicode_escape(&mut self) -> bool {
        let mut cp = self.hex4(self.pos + 2);
        if cp < 0 {
            return false;
        }
        let mut len = 6;
        if cp & 0xF800 == 0xD800 {
            if cp & 0x400 != 0 {
                return false;
            }
            if self.at(self.pos + 6) != b'\\' || self.at(self.pos + 7) != b'u' {
                return false;
            }
            let low = self.hex4(self.pos + 8);
            if low < 0 || (low & 0xFC00) != 0xDC00 {
                return false;
            }
            cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            len = 12;
        }
        let cp = cp as u32;
        let t = &mut self.tmp;
        if cp <= 0x7F {
            t.push(cp as u8);
        } else if cp <= 0x7FF {
            t.push(0xC0 | (cp >> 6) as u8);
            t.push(0x80 | (cp & 0x3F) as u8);
        } else if cp <= 0xFFFF {
            t.push(0xE0 | (cp >> 12) as u8);
            t.push(0x80 | ((cp >> 6) & 0x3F) as u8);
            t.push(0x80 | (cp & 0x3F) as u8);
        } else {
            t.push(0xF0 | (cp >> 18) as u8);
            t.push(0x80 | ((cp >> 12) & 0x3F) as u8);
            t.push(0x80 | ((cp >> 6) & 0x3F) as u8);
            t.push(0x80 | (cp & 0x3F) as u8);
        }
        self.pos += len;
        true
    }

    fn string_token(&mut self) -> Token {
        let start = self.pos;
        self.pos += 1;
        self.tmp.clear();
        loop {
            let ch = self.at(self.pos);
            if ch == b'"' {
                break;
            }
            if ch == 0 {
                return self.error_token("unexpected end of string");
            }
            let mut out = ch;
            if ch == b'\\' {
                out = match self.at(self.pos + 1) {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 8,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'f' => 12,
                    b'r' => b'\r',
                    b'u' => {
                        if self.unicode_escape() {
                            continue;
                        }
                        return self.error_token("invalid unicode escape code");
                    }
                    _ => return self.error_token("invalid escape code"),
                };
                self.pos += 1;
            }
            self.tmp.push(out);
            self.pos += 1;
        }
        self.pos += 1;
        self.token(Kind::Str, start)
    }

    fn next_token(&mut self) -> Token {
        while matches!(self.at(self.pos), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let index = self.pos;
        let single = |p: &mut Self, k: Kind| {
            p.pos += 1;
            p.token(k, index)
        };
        match self.at(self.pos) {
            b'{' => single(self, Kind::ObjBegin),
            b'}' => single(self, Kind::ObjEnd),
            b'[' => single(self, Kind::ArrBegin),
            b']' => single(self, Kind::ArrEnd),
            b',' => single(self, Kind::Comma),
            b':' => single(self, Kind::Colon),
            0 => self.token(Kind::End, index),
            b'"' => self.string_token(),
            b'-' | b'0'..=b'9' => {
                if self.cfg.decode_invalid_numbers == 0 && self.is_invalid_number() {
                    return self.error_token("invalid number");
                }
                self.number_token()
            }
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'+' => {
                let mut t = self.token(Kind::Bool, index);
                if self.starts_with(b"true") {
                    t.boolean = true;
                    self.pos += 4;
                    t
                } else if self.starts_with(b"false") {
                    self.pos += 5;
                    t
                } else if self.starts_with(b"null") {
                    self.pos += 4;
                    self.token(Kind::Null, index)
                } else if self.cfg.decode_invalid_numbers != 0 && self.is_invalid_number() {
                    self.number_token()
                } else {
                    self.error_token("invalid token")
                }
            }
            _ => self.error_token("invalid token"),
        }
    }

    /// The error for an unexpected token.
    ///
    /// # Safety
    ///
    /// `self.l` runs `cjson.decode` (see [`raw::error`]).
    unsafe fn parse_error(&self, expected: &str, t: &Token) -> Msg {
        let found = if t.kind == Kind::Error { t.err } else { t.kind.name() };
        raw::error(self.l, format!("Expected {expected} but found {found} at character {}", t.index + 1))
    }

    /// Pushes a scalar token's value; false for anything else.
    ///
    /// # Safety
    ///
    /// `self.l` runs `cjson.decode` with the memory cap lifted and a free slot (see [`Parser::run`]).
    unsafe fn push_scalar(&self, t: &Token) -> bool {
        let l = self.l;
        match t.kind {
            Kind::Str => push_bytes(l, &self.tmp),
            Kind::Num => ffi::lua_pushnumber(l, t.num),
            Kind::Bool => ffi::lua_pushboolean(l, t.boolean as c_int),
            Kind::Null => ffi::lua_pushlightuserdata(l, std::ptr::null_mut()),
            _ => return false,
        }
        true
    }

    /// Expects an object key at token `t` followed by a colon; pushes the key.
    ///
    /// # Safety
    ///
    /// As [`Parser::push_scalar`].
    unsafe fn object_key(&mut self, t: &Token) -> R<()> {
        if t.kind != Kind::Str {
            return Err(self.parse_error("object key string", t));
        }
        push_bytes(self.l, &self.tmp);
        let colon = self.next_token();
        if colon.kind != Kind::Colon {
            return Err(self.parse_error("colon", &colon));
        }
        Ok(())
    }

    /// Parses the whole text, leaving its value on top of the stack. Open containers live on
    /// the Lua stack as in the C (an array as its table, an object as its table and the pending
    /// key); `open` records which kind each is, and the next array index.
    ///
    /// # Safety
    ///
    /// `self.l` runs `cjson.decode` with the memory cap lifted, and `self.data` is the text, alive
    /// throughout. Rust buffers (the open containers, the last string) are held across Lua calls
    /// that cannot raise: pushes and raw sets, which only allocate (the keys are strings and
    /// array indices), and `lua_checkstack`, which fails by returning 0 (checked for each new
    /// container: three slots for an object, two for an array). The one raise left is Lua's
    /// `table overflow`, past 2^26 keys in one object (see [`raw::run`]).
    unsafe fn run(&mut self) -> R<()> {
        let l = self.l;
        let mut open: Vec<Option<i32>> = Vec::new(); // Some(next index) = array, None = object
        let mut tok = self.next_token();
        'value: loop {
            if !self.push_scalar(&tok) {
                let (is_obj, slots) = match tok.kind {
                    Kind::ObjBegin => (true, 3),
                    Kind::ArrBegin => (false, 2),
                    _ => return Err(self.parse_error("value", &tok)),
                };
                let depth = open.len() as i64 + 1;
                if depth > self.cfg.decode_max_depth as i64 || ffi::lua_checkstack(l, slots) == 0 {
                    return Err(raw::error(
                        l,
                        format!("Found too many nested data structures ({depth}) at character {}", self.pos),
                    ));
                }
                ffi::lua_newtable(l);
                tok = self.next_token();
                let empty = if is_obj { Kind::ObjEnd } else { Kind::ArrEnd };
                if tok.kind != empty {
                    if is_obj {
                        self.object_key(&tok)?;
                        tok = self.next_token();
                        open.push(None);
                    } else {
                        open.push(Some(1));
                    }
                    continue 'value;
                }
            }
            // A finished value is on top: store it, closing the containers it completes.
            loop {
                let Some(top) = open.last_mut() else {
                    let end = self.next_token();
                    if end.kind != Kind::End {
                        return Err(self.parse_error("the end", &end));
                    }
                    return Ok(());
                };
                match top {
                    Some(next) => {
                        ffi::lua_rawseti_(l, -2, *next);
                        *next += 1;
                        tok = self.next_token();
                        if tok.kind != Kind::ArrEnd {
                            if tok.kind != Kind::Comma {
                                return Err(self.parse_error("comma or array end", &tok));
                            }
                            tok = self.next_token();
                            continue 'value;
                        }
                    }
                    None => {
                        ffi::lua_rawset(l, -3);
                        tok = self.next_token();
                        if tok.kind != Kind::ObjEnd {
                            if tok.kind != Kind::Comma {
                                return Err(self.parse_error("comma or object end", &tok));
                            }
                            tok = self.next_token();
                            self.object_key(&tok)?;
                            tok = self.next_token();
                            continue 'value;
                        }
                    }
                }
                open.pop();
            }
        }
    }
}

/// # Safety
///
/// A body for [`raw::run`] (the C function runs with the memory cap lifted). The text is copied
/// before parsing; the value is left on top of the stack.
unsafe fn decode(l: *mut lua_State) -> R<c_int> {
    if ffi::lua_gettop(l) != 1 {
        return Err(arg_error(l, 1, "expected 1 argument"));
    }
    let data = check_lstring(l, 1)?.to_vec();
    if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
        return Err(raw::error(l, "JSON parser does not support UTF-16 or UTF-32"));
    }
    let mut p = Parser { l, cfg: *config(l), data: &data, pos: 0, tmp: Vec::new() };
    p.run()?;
    Ok(1)
}

// ===== strtod =====

/// glibc `strtod` on `s`: the value and how many bytes it used (0 when no number starts here).
/// Accepts leading space, a sign, decimal and hex (with binary exponent) forms, inf/infinity and
/// nan/nan(...), case-insensitively.
pub(crate) fn strtod(s: &[u8]) -> (f64, usize) {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let ci = |i: usize, w: &[u8]| w.iter().enumerate().all(|(k, &b)| at(i + k).to_ascii_lowercase() == b);
    let mut i = 0;
    while matches!(at(i), b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let mut neg = false;
    if at(i) == b'+' || at(i) == b'-' {
        neg = at(i) == b'-';
        i += 1;
    }
    let signed = |v: f64| if neg { -v } else { v };
    if ci(i, b"inf") {
        i += 3;
        if ci(i, b"inity") {
            i += 5;
        }
        return (signed(f64::INFINITY), i);
    }
    if ci(i, b"nan") {
        i += 3;
        if at(i) == b'(' {
            let mut j = i + 1;
            while at(j).is_ascii_alphanumeric() || at(j) == b'_' {
                j += 1;
            }
            if at(j) == b')' {
                i = j + 1;
            }
        }
        return (signed(f64::NAN), i);
    }
    if at(i) == b'0' && (at(i + 1) | 0x20) == b'x' {
        let j = i + 2;
        if at(j).is_ascii_hexdigit() || (at(j) == b'.' && at(j + 1).is_ascii_hexdigit()) {
            let (v, used) = hex_float(&s[j..]);
            return (signed(v), j + used);
        }
    }
    let mut int_digits = String::new();
    while at(i).is_ascii_digit() {
        int_digits.push(at(i) as char);
        i += 1;
    }
    let mut frac_digits = String::new();
    if at(i) == b'.' {
        let mut j = i + 1;
        while at(j).is_ascii_digit() {
            frac_digits.push(at(j) as char);
            j += 1;
        }
        if !int_digits.is_empty() || !frac_digits.is_empty() {
            i = j;
        }
    }
    if int_digits.is_empty() && frac_digits.is_empty() {
        return (0.0, 0);
    }
    let mut exp: i64 = 0;
    if at(i) | 0x20 == b'e' {
        let mut j = i + 1;
        let mut eneg = false;
        if at(j) == b'+' || at(j) == b'-' {
            eneg = at(j) == b'-';
            j += 1;
        }
        if at(j).is_ascii_digit() {
            while at(j).is_ascii_digit() {
                exp = (exp * 10 + (at(j) - b'0') as i64).min(999_999_999);
                j += 1;
            }
            if eneg {
                exp = -exp;
            }
            i = j;
        }
    }
    let text = format!(
        "{}.{}e{}",
        if int_digits.is_empty() { "0" } else { &int_digits },
        if frac_digits.is_empty() { "0" } else { &frac_digits },
        exp
    );
    let v: f64 = text.parse().unwrap_or(0.0);
    (signed(v), i)
}

/// The digits of a hex float after "0x": value and bytes used, correctly rounded.
fn hex_float(s: &[u8]) -> (f64, usize) {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let mut mant: u64 = 0;
    let mut sticky = false;
    let mut exp2: i64 = 0;
    let mut i = 0;
    let push = |d: u64, frac: bool, mant: &mut u64, sticky: &mut bool, exp2: &mut i64| {
        if *mant >> 60 == 0 {
            *mant = (*mant << 4) | d;
            if frac {
                *exp2 -= 4;
            }
        } else {
            *sticky |= d != 0;
            if !frac {
                *exp2 += 4;
            }
        }
    };
    while at(i).is_ascii_hexdigit() {
        push((at(i) as char).to_digit(16).unwrap_or(0) as u64, false, &mut mant, &mut sticky, &mut exp2);
        i += 1;
    }
    if at(i) == b'.' {
        i += 1;
        while at(i).is_ascii_hexdigit() {
            push((at(i) as char).to_digit(16).unwrap_or(0) as u64, true, &mut mant, &mut sticky, &mut exp2);
            i += 1;
        }
    }
    if at(i) | 0x20 == b'p' {
        let mut j = i + 1;
        let mut neg = false;
        if at(j) == b'+' || at(j) == b'-' {
            neg = at(j) == b'-';
            j += 1;
        }
        if at(j).is_ascii_digit() {
            let mut e: i64 = 0;
            while at(j).is_ascii_digit() {
                e = (e * 10 + (at(j) - b'0') as i64).min(999_999_999);
                j += 1;
            }
            exp2 += if neg { -e } else { e };
            i = j;
        }
    }
    (compose(mant, sticky, exp2), i)
}

/// `mant * 2^exp2` (plus a sticky fraction below `mant`) rounded to nearest-even as a double,
/// subnormals included.
fn compose(mant: u64, sticky: bool, exp2: i64) -> f64 {
    if mant == 0 {
        return 0.0;
    }
    let lz = mant.leading_zeros() as i64;
    let m = mant << lz;
    let e = exp2 - lz; // value = m * 2^e, m in [2^63, 2^64)
    let top = e + 63;
    let bits: i64 = if top >= -1022 { 53 } else { 53 - (-1022 - top) };
    if bits <= 0 {
        // Below half the smallest subnormal rounds to zero; exactly half rounds to even (zero).
        let min_sub = f64::from_bits(1);
        if bits == 0 && (m > 1u64 << 63 || sticky) {
            return min_sub;
        }
        return 0.0;
    }
    let shift = (64 - bits) as u32;
    let mut kept = m >> shift;
    let rem = m & ((1u64 << shift) - 1);
    let half = 1u64 << (shift - 1);
    if rem > half || (rem == half && (sticky || kept & 1 == 1)) {
        kept += 1;
    }
    ldexp(kept as f64, e + shift as i64)
}

/// `x * 2^k` in exact power-of-two steps.
fn ldexp(mut x: f64, mut k: i64) -> f64 {
    while k > 1000 {
        x *= 2f64.powi(1000);
        k -= 1000;
        if x.is_infinite() {
            return x;
        }
    }
    while k < -1000 {
        x *= 2f64.powi(-1000);
        k += 1000;
    }
    x * 2f64.powi(k as i32)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{eval, new_lua};
    use super::strtod;

    fn check(cases: &[(&str, &str)]) {
        let lua = new_lua();
        for (code, want) in cases {
            assert_eq!(eval(&lua, code), *want, "{code}");
        }
    }

    /// Expected values recorded from redis-server 7.0.15.
    #[test]
    fn encode_matches_redis() {
        check(&[
            (
                "return cjson.encode({1.5, 0.1, 1e15, 123456789012345, 1e100, -0.0, 3.14159265358979, 1/3, 2^53, 1e-7, 100})",
                "[1.5,0.1,1e+15,1.2345678901234e+14,1e+100,-0,3.1415926535898,0.33333333333333,9.007199254741e+15,1e-07,100]",
            ),
            (
                "return cjson.encode('a/b\"c\\\\d\\n\\t\\r\\b\\f\\1\\127\\200')",
                "\"a\\/b\\\"c\\\\d\\n\\t\\r\\b\\f\\u0001\\u007f\u{FFFD}\"",
            ),
            ("return cjson.encode({})", "{}"),
            ("return cjson.encode({[1]=1,[2]=2,[4]=4})", "[1,2,null,4]"),
            ("return cjson.encode({[1.5]=1})", "{\"1.5\":1}"),
            ("return cjson.encode({[-1]=1})", "{\"-1\":1}"),
            ("return cjson.encode({[0]=1})", "{\"0\":1}"),
            ("return cjson.encode({[2]=1})", "[null,1]"),
            ("return cjson.encode(cjson.null)", "null"),
            ("return cjson.encode({cjson.null, true, false})", "[null,true,false]"),
            ("return cjson.encode(nil)", "null"),
            ("return cjson.encode({[1e20]=1})", "{\"1e+20\":1}"),
            ("return cjson.encode({['a\\0b']=1})", "{\"a\\u0000b\":1}"),
            ("return cjson.encode({[1]=1, [2^40]=2})", "{\"1\":1,\"1099511627776\":2}"),
            ("return cjson.encode({[2^40]=2, [1]=1})", "[1]"),
            ("return cjson.encode({[3]=1, [0]=1})", "{\"3\":1,\"0\":1}"),
            ("return cjson.encode({[1]=1,[2]=2,[3]=3,[5]=5, n=3})", "{\"2\":2,\"3\":3,\"1\":1,\"5\":5,\"n\":3}"),
            (
                "return cjson.encode({1e-5, 123456.789, 0.000123456789012345, 1e21, 12345678901234567890, -1.5e-10, 5e-324, 1.7976931348623157e308})",
                "[1e-05,123456.789,0.00012345678901234,1e+21,1.2345678901235e+19,-1.5e-10,4.9406564584125e-324,1.7976931348623e+308]",
            ),
            ("local t={} local c=t for i=1,5 do c[1]={} c=c[1] end return cjson.encode(t)", "[[[[[{}]]]]]"),
        ]);
    }

    #[test]
    fn encode_errors_match_redis() {
        check(&[
            ("return select(2, pcall(cjson.encode))", "bad argument #1 to '?' (expected 1 argument)"),
            ("return select(2, pcall(cjson.encode, 1, 2))", "bad argument #1 to '?' (expected 1 argument)"),
            ("return select(2, pcall(cjson.encode, function() end))", "Cannot serialise function: type not supported"),
            (
                "return select(2, pcall(cjson.encode, {[true]=1}))",
                "Cannot serialise boolean: table key must be a number or string",
            ),
            (
                "return select(2, pcall(cjson.encode, {[1]=1,[100]=2}))",
                "Cannot serialise table: excessively sparse array",
            ),
            ("return select(2, pcall(cjson.encode, 0/0))", "Cannot serialise number: must not be NaN or Inf"),
            ("return select(2, pcall(cjson.encode, {a=-1/0}))", "Cannot serialise number: must not be NaN or Inf"),
            ("return select(2, pcall(cjson.encode, {[1/0]=1}))", "Cannot serialise number: must not be NaN or Inf"),
            (
                "local t={} t[1]=t return select(2, pcall(cjson.encode, t))",
                "Cannot serialise, excessive nesting (1001)",
            ),
            (
                "return cjson.encode({[1]=1,[11]=2})",
                "ERR user_script:1: Cannot serialise table: excessively sparse array",
            ),
            (
                "cjson.encode_max_depth(100000) local t={} t[1]=t return select(2, pcall(cjson.encode, t))",
                "Cannot serialise, excessive nesting (7998)",
            ),
            (
                "cjson.encode_max_depth(100000) local t={} t.a=t return select(2, pcall(cjson.encode, t))",
                "Cannot serialise, excessive nesting (4000)",
            ),
        ]);
    }

    #[test]
    fn config_matches_redis() {
        check(&[
            ("return cjson.encode_keep_buffer()", "true"),
            ("return table.concat({cjson.encode_sparse_array()}, ',', 2)", "2,10"),
            ("return cjson.encode_max_depth()", "1000"),
            ("return cjson.decode_max_depth()", "1000"),
            ("return cjson.encode_number_precision()", "14"),
            ("return cjson.encode_invalid_numbers()", "false"),
            ("return cjson.decode_invalid_numbers()", "true"),
            ("return tostring(cjson.null)", "userdata: (nil)"),
            ("return select(2, pcall(cjson.encode_keep_buffer, 1))", "bad argument #1 to '?' (invalid option '1')"),
            ("return select(2, pcall(cjson.encode_keep_buffer, 'on'))", "true"),
            (
                "return select(2, pcall(cjson.encode_keep_buffer, 1, 2))",
                "bad argument #2 to '?' (found too many arguments)",
            ),
            (
                "return select(2, pcall(cjson.encode_number_precision, 0))",
                "bad argument #1 to '?' (expected integer between 1 and 14)",
            ),
            (
                "return select(2, pcall(cjson.encode_number_precision, 'x'))",
                "bad argument #1 to '?' (number expected, got string)",
            ),
            ("return select(2, pcall(cjson.encode_number_precision, 5.7))", "5"),
            (
                "return select(2, pcall(cjson.encode_max_depth, 2^31))",
                "bad argument #1 to '?' (expected integer between 1 and 2147483647)",
            ),
            (
                "return select(2, pcall(cjson.encode_invalid_numbers, 'maybe'))",
                "bad argument #1 to '?' (invalid option 'maybe')",
            ),
            (
                "return select(2, pcall(cjson.decode_invalid_numbers, 'null'))",
                "bad argument #1 to '?' (invalid option 'null')",
            ),
            (
                "return select(2, pcall(cjson.encode_sparse_array, true, -1))",
                "bad argument #1 to '?' (expected integer between 0 and 2147483647)",
            ),
            (
                "return select(2, pcall(cjson.encode_sparse_array, 1,2,3,4))",
                "bad argument #4 to '?' (found too many arguments)",
            ),
        ]);
        check(&[
            ("return cjson.encode_number_precision(3) .. cjson.encode({1/3, 12345, 0.5})", "3[0.333,1.23e+04,0.5]"),
            (
                "return cjson.encode_max_depth(2) .. select(2, pcall(cjson.encode, {{{1}}}))",
                "2Cannot serialise, excessive nesting (3)",
            ),
            ("return cjson.encode({{1}})", "[[1]]"),
            (
                "return cjson.decode_max_depth(2) .. select(2, pcall(cjson.decode, '[[[1]]]'))",
                "2Found too many nested data structures (3) at character 3",
            ),
            (
                "return select(2, pcall(cjson.decode, '{\"a\":{\"b\":{}}}'))",
                "Found too many nested data structures (3) at character 11",
            ),
            (
                "return tostring(cjson.encode_invalid_numbers(true)) .. cjson.encode({0/0, 1/0, -1/0, -(0/0)})",
                "true[nan,inf,-inf,nan]",
            ),
            ("return cjson.encode_invalid_numbers('null') .. cjson.encode({0/0, 1/0, -1/0})", "null[null,null,null]"),
            (
                "return tostring(cjson.decode_invalid_numbers(false)) .. select(2, pcall(cjson.decode, '0x10'))",
                "falseExpected value but found invalid number at character 1",
            ),
            ("return table.concat({cjson.encode_sparse_array(true, 3, 2)}, ',', 2)", "3,2"),
            ("return cjson.encode({[1]=1,[9]=2})", "{\"1\":1,\"9\":2}"),
            ("cjson.encode_sparse_array(false, 0) return cjson.encode({[1]=1,[5]=2})", "[1,null,null,null,2]"),
            ("local c = cjson.new() return c._NAME .. c._VERSION .. c.encode_number_precision()", "cjson2.1.014"),
        ]);
    }

    #[test]
    fn decode_matches_redis() {
        check(&[
            (
                "local t = cjson.decode('[1, 2.5, -3e2, \"x\", true, false, null, {}, []]') return table.concat({t[1], tostring(t[2]), t[3], t[4], tostring(t[5]), tostring(t[6]), tostring(t[7]==cjson.null), type(t[8]), #t, cjson.encode(t)}, ' ')",
                "1 2.5 -300 x true false true table 9 [1,2.5,-300,\"x\",true,false,null,{},{}]",
            ),
            ("return cjson.encode(cjson.decode('{\"a\\\\u00e9\\\\ud83d\\\\ude00\\\\/\":[1]}'))", "{\"aé😀\\/\":[1]}"),
            (
                "return table.concat({tostring(cjson.decode('0x10')), tostring(cjson.decode('-0x10')), tostring(cjson.decode('inf')), tostring(cjson.decode('-Infinity')), tostring(cjson.decode('007')), tostring(cjson.decode('1e400')), tostring(cjson.decode('1.')), tostring(cjson.decode('0x1p4')), tostring(cjson.decode('-0')), tostring(cjson.decode('1E2')), tostring(cjson.decode('0X1A')),tostring(cjson.decode('INF')),tostring(cjson.decode('1e-400'))}, ' ')",
                "16 -16 inf -inf 7 inf 1 16 -0 100 26 inf 0",
            ),
            ("return cjson.decode('+1')", "1"),
            ("return cjson.decode(' \\t\\r\\n[1] ')[1]", "1"),
            ("return cjson.decode(12)", "12"),
            ("local t = cjson.decode('{\"a\":1,\"a\":2}') return t.a", "2"),
            ("return cjson.decode('\"\\\\u0000a\"') == '\\0a'", "true"),
            ("return cjson.decode('\"\\\\uD834\\\\uDD1E\"')", "𝄞"),
        ]);
    }

    #[test]
    fn decode_errors_match_redis() {
        let cases: &[(&str, &str)] = &[
            ("{", "Expected object key string but found T_END at character 2"),
            ("[1,2", "Expected comma or array end but found T_END at character 5"),
            ("\"abc", "Expected value but found unexpected end of string at character 5"),
            ("[1,]", "Expected value but found T_ARR_END at character 4"),
            ("", "Expected value but found T_END at character 1"),
            ("  ", "Expected value but found T_END at character 3"),
            ("[[[[1]]]]x", "Expected the end but found invalid token at character 10"),
            ("\"\\\\u12\"", "Expected value but found invalid unicode escape code at character 2"),
            ("\"\\\\q\"", "Expected value but found invalid escape code at character 2"),
            ("{\"a\" 1}", "Expected colon but found T_NUMBER at character 6"),
            ("{1:1}", "Expected object key string but found T_NUMBER at character 2"),
            ("nul", "Expected value but found invalid token at character 1"),
            ("-", "Expected value but found invalid number at character 1"),
            (".5", "Expected value but found invalid token at character 1"),
            ("infinit", "Expected the end but found invalid token at character 4"),
            ("nanx", "Expected the end but found invalid token at character 4"),
            ("truex", "Expected the end but found invalid token at character 5"),
            ("1 2", "Expected the end but found T_NUMBER at character 3"),
            ("\"\\\\ud800\"", "Expected value but found invalid unicode escape code at character 2"),
            ("\"\\\\udc00\"", "Expected value but found invalid unicode escape code at character 2"),
            ("\"\\\\ud800\\\\u0041\"", "Expected value but found invalid unicode escape code at character 2"),
            ("{\"a\":1,}", "Expected object key string but found T_OBJ_END at character 8"),
            ("{\"a\":1 \"b\"}", "Expected comma or object end but found T_STRING at character 8"),
            ("[1 2]", "Expected comma or array end but found T_NUMBER at character 4"),
            ("[1,,2]", "Expected value but found T_COMMA at character 4"),
            (":", "Expected value but found T_COLON at character 1"),
            ("\"a\\0b\"", "Expected value but found unexpected end of string at character 3"),
            ("\\0\\0", "JSON parser does not support UTF-16 or UTF-32"),
            ("1\\0garbage", "JSON parser does not support UTF-16 or UTF-32"),
            ("\\f1", "Expected value but found invalid token at character 1"),
            ("\"abc\\\\", "Expected value but found invalid escape code at character 5"),
            ("{\"a\":}", "Expected value but found T_OBJ_END at character 6"),
            ("{\"a\"", "Expected colon but found T_END at character 5"),
            ("[", "Expected value but found T_END at character 2"),
            ("]", "Expected value but found T_ARR_END at character 1"),
            ("1.5e", "Expected the end but found invalid token at character 4"),
            ("- 1", "Expected value but found invalid number at character 1"),
        ];
        let lua = new_lua();
        for (input, want) in cases {
            let code = format!("return select(2, pcall(cjson.decode, '{input}'))");
            assert_eq!(eval(&lua, &code), *want, "{input}");
        }
        let more: &[(&str, &str)] = &[
            ("return select(2, pcall(cjson.decode))", "bad argument #1 to '?' (expected 1 argument)"),
            ("return select(2, pcall(cjson.decode, {}))", "bad argument #1 to '?' (string expected, got table)"),
            (
                "return cjson.decode('{')",
                "ERR user_script:1: Expected object key string but found T_END at character 2",
            ),
            (
                "cjson.decode_max_depth(100000) return select(2, pcall(cjson.decode, string.rep('[', 20000)))",
                "Found too many nested data structures (7999) at character 7999",
            ),
            (
                "return select(2, pcall(cjson.decode, string.rep('{\"a\":', 20000)))",
                "Found too many nested data structures (4000) at character 19996",
            ),
            (
                "return select(2, pcall(cjson.decode, '{\"b\":[' .. string.rep('{\"a\":', 20000)))",
                "Found too many nested data structures (4000) at character 19992",
            ),
        ];
        for (code, want) in more {
            assert_eq!(eval(&lua, code), *want, "{code}");
        }
    }

    #[test]
    fn module_order_matches_redis() {
        check(&[(
            "local r={} for k in pairs(cjson) do r[#r+1]=k end return table.concat(r, ' ')",
            "_NAME encode decode_max_depth _VERSION decode_invalid_numbers encode_keep_buffer null encode_number_precision new encode_max_depth encode_invalid_numbers decode encode_sparse_array",
        )]);
    }

    #[test]
    fn strtod_forms() {
        assert_eq!(strtod(b"12abc"), (12.0, 2));
        assert_eq!(strtod(b"-0x1.8p1"), (-3.0, 8));
        assert_eq!(strtod(b"0x"), (0.0, 1));
        assert_eq!(strtod(b"1e+"), (1.0, 1));
        assert_eq!(strtod(b"."), (0.0, 0));
        assert_eq!(strtod(b"Infinity!"), (f64::INFINITY, 8));
        assert_eq!(strtod(b"nan(12)x").1, 7);
        assert_eq!(strtod(b"nan(12").1, 3);
        assert_eq!(strtod(b"0x1p-1074").0, f64::from_bits(1));
        assert_eq!(strtod(b"0x1.fffffffffffff8p0").0, 2.0);
        assert_eq!(strtod(b"0.1").0, 0.1);
    }
}
