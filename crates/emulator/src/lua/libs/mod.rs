//! The C libraries Redis 7.0 links into its Lua: cjson, bit, struct and cmsgpack, rebuilt in Rust.
//!
//! Besides the installer, this module holds the small pieces of the Lua 5.1 auxiliary library
//! (`luaL_checkinteger`, `luaL_argerror`, `luaL_where`, ...) that the four libraries share, so
//! argument checks and error texts come out exactly as the C originals print them inside Redis,
//! and the C number conversions (x86-64 casts, `%.14g`) they depend on.
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

/// Helpers for library functions written directly against the Lua C API.
///
/// cjson and cmsgpack work on the Lua stack exactly as their C originals do (same pushes, same
/// `lua_checkstack` calls), which reproduces their nesting and result-count limits for free and
/// keeps them clear of mlua's auxiliary reference stack (which a Rust-side copy of a large or
/// deep table would exhaust). Errors travel back as complete messages and are raised as plain Lua
/// string errors by [`raw::run`], from a frame that owns nothing.
pub(crate) mod raw {
    use std::ffi::CStr;
    use std::os::raw::c_int;

    use mlua::ffi::{self, lua_State};

    use crate::lua::ext::LiftedCap;

    /// A finished error message (position prefix included when the C adds one).
    pub(crate) type Msg = Vec<u8>;
    pub(crate) type R<T> = Result<T, Msg>;

    /// Runs a library body and turns its error into a Lua error carrying the message string.
    /// A panic (a bug, never user input) is reported as an error instead of unwinding into Lua.
    ///
    /// The body runs with the memory cap lifted ([`LiftedCap`]): bodies keep Rust buffers (the
    /// text being encoded or decoded, the open tables) while they push, and a push refused at the
    /// cap would raise past them. Once it returns the cap is back, and a body that took the script
    /// past it gets it killed at its next loop or call, as a refused allocation would have.
    ///
    /// # Safety
    ///
    /// `l` is the state of a C function Lua is running (this one's caller), and `body` may be
    /// called with it: it uses the C API within the function's stack and raises nothing itself
    /// (its errors come back as `Err`). The Lua calls a body makes must not raise at all while it
    /// holds anything with a destructor: with the cap lifted, allocation cannot; raw table access
    /// (with a key that is neither nil nor NaN), `lua_next` over unmodified keys and
    /// `lua_checkstack` (which fails by returning 0) cannot either. What remains is Lua's own
    /// limit on one table (`table overflow`, past 2^26 hash slots), which a body filling a table
    /// from its input (cjson.decode, cmsgpack.unpack) could reach only with an input of hundreds
    /// of megabytes; that raise would unwind past the body's buffers without dropping them (which
    /// Rust leaves undefined; in practice they leak). Not yet guarded.
    pub(crate) unsafe fn run(l: *mut lua_State, body: unsafe fn(*mut lua_State) -> R<c_int>) -> c_int {
        let lifted = LiftedCap::lift(l);
        // SAFETY: calls the body with the state it was written for (see this function's contract);
        // the closure captures two plain values by reference, so a raise would skip no destructor.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { body(l) }));
        let msg = match result {
            Ok(Ok(n)) => {
                lifted.restore();
                return n;
            }
            Ok(Err(msg)) => msg,
            Err(payload) => {
                // Dropped here: the raise below never returns to drop it.
                drop(payload);
                b"internal error in a Lua library function".to_vec()
            }
        };
        raise(l, msg, lifted)
    }

    /// Raises `msg` as a Lua string error; nothing needing a destructor outlives the call.
    ///
    /// # Safety
    ///
    /// `l` is the state of a running C function (the stack is emptied, then holds the message),
    /// and the caller's frames hold nothing with a destructor: the raise unwinds them by longjmp.
    /// `lifted` is the cap [`run`] lifted: the message is pushed before the cap is put back, so
    /// the push cannot raise while `msg` is alive.
    unsafe fn raise(l: *mut lua_State, msg: Msg, lifted: LiftedCap) -> ! {
        ffi::lua_settop(l, 0);
        ffi::lua_pushlstring_(l, msg.as_ptr().cast(), msg.len());
        drop(msg);
        lifted.restore();
        ffi::lua_error(l)
    }

    /// `luaL_where(L, 1)`.
    ///
    /// # Safety
    ///
    /// `l` is a running state. lua_getstack and lua_getinfo ("Sl") read the call stack into `ar`
    /// without allocating or raising; `short_src` is a NUL-terminated buffer inside `ar`.
    pub(crate) unsafe fn where_(l: *mut lua_State) -> Msg {
        let mut ar: ffi::lua_Debug = std::mem::zeroed();
        if ffi::lua_getstack(l, 1, &mut ar) != 0 {
            ffi::lua_getinfo(l, c"Sl".as_ptr(), &mut ar);
            if ar.currentline > 0 {
                let src = CStr::from_ptr(ar.short_src.as_ptr()).to_bytes();
                let mut m = src.to_vec();
                m.extend_from_slice(format!(":{}: ", ar.currentline).as_bytes());
                return m;
            }
        }
        Vec::new()
    }

    /// `luaL_error`: `msg` behind the caller's position.
    ///
    /// # Safety
    ///
    /// As [`where_`]; the message is returned, not raised.
    pub(crate) unsafe fn error(l: *mut lua_State, msg: impl AsRef<[u8]>) -> Msg {
        let mut m = where_(l);
        m.extend_from_slice(msg.as_ref());
        m
    }

    /// `luaL_argerror`.
    ///
    /// # Safety
    ///
    /// `l` runs a C function (level 0 of its call stack). lua_getinfo ("n") neither allocates nor
    /// raises; the name it gives, when not null, is a NUL-terminated string of the calling
    /// function's constants, alive while it runs, and is copied at once. Nothing is raised here.
    pub(crate) unsafe fn arg_error(l: *mut lua_State, narg: c_int, extramsg: impl AsRef<[u8]>) -> Msg {
        let extra = extramsg.as_ref();
        let mut ar: ffi::lua_Debug = std::mem::zeroed();
        if ffi::lua_getstack(l, 0, &mut ar) == 0 {
            let mut m = format!("bad argument #{narg} (").into_bytes();
            m.extend_from_slice(extra);
            m.push(b')');
            return error(l, m);
        }
        ffi::lua_getinfo(l, c"n".as_ptr(), &mut ar);
        let name: Vec<u8> = if ar.name.is_null() { b"?".to_vec() } else { CStr::from_ptr(ar.name).to_bytes().to_vec() };
        let method = !ar.namewhat.is_null() && CStr::from_ptr(ar.namewhat).to_bytes() == b"method";
        let mut narg = narg;
        let mut m = Vec::new();
        if method {
            narg -= 1;
            if narg == 0 {
                m.extend_from_slice(b"calling '");
                m.extend_from_slice(&name);
                m.extend_from_slice(b"' on bad self (");
                m.extend_from_slice(extra);
                m.push(b')');
                return error(l, m);
            }
        }
        m.extend_from_slice(format!("bad argument #{narg} to '").as_bytes());
        m.extend_from_slice(&name);
        m.extend_from_slice(b"' (");
        m.extend_from_slice(extra);
        m.push(b')');
        error(l, m)
    }

    /// `luaL_typename`, "no value" for an absent argument.
    ///
    /// # Safety
    ///
    /// `l` is a running state and `idx` an acceptable index; lua_typename returns one of Lua's
    /// static, NUL-terminated names.
    pub(crate) unsafe fn typename(l: *mut lua_State, idx: c_int) -> &'static [u8] {
        let t = ffi::lua_type(l, idx);
        if t == ffi::LUA_TNONE {
            return b"no value";
        }
        CStr::from_ptr(ffi::lua_typename(l, t)).to_bytes()
    }

    /// `luaL_typerror`.
    ///
    /// # Safety
    ///
    /// As [`arg_error`].
    pub(crate) unsafe fn type_error(l: *mut lua_State, narg: c_int, tname: &str) -> Msg {
        let mut m = format!("{tname} expected, got ").into_bytes();
        m.extend_from_slice(typename(l, narg));
        arg_error(l, narg, m)
    }

    /// `luaL_checkinteger` (the C cast of the number, as Lua itself does it).
    ///
    /// # Safety
    ///
    /// `l` runs a C function and `narg` is an acceptable index. Reading a number (a numeric string
    /// included) allocates nothing and raises nothing.
    pub(crate) unsafe fn check_integer(l: *mut lua_State, narg: c_int) -> R<i64> {
        let d = ffi::lua_tointeger_(l, narg);
        if d == 0 && ffi::lua_isnumber(l, narg) == 0 {
            return Err(type_error(l, narg, "number"));
        }
        Ok(d as i64)
    }

    /// `luaL_optinteger`.
    ///
    /// # Safety
    ///
    /// As [`check_integer`].
    pub(crate) unsafe fn opt_integer(l: *mut lua_State, narg: c_int, def: i64) -> R<i64> {
        if ffi::lua_type(l, narg) <= ffi::LUA_TNIL {
            return Ok(def);
        }
        check_integer(l, narg)
    }

    /// `luaL_checklstring`: the bytes stay valid while the value stays on the stack (numbers
    /// are converted in place, as in C).
    ///
    /// # Safety
    ///
    /// `l` runs a C function and `narg` is an acceptable index. The caller keeps the value at
    /// `narg` on the stack while it uses the bytes (the lifetime `'a` does not say so), and calls
    /// this with the memory cap lifted, as [`run`] does: converting a number allocates.
    pub(crate) unsafe fn check_lstring<'a>(l: *mut lua_State, narg: c_int) -> R<&'a [u8]> {
        let mut len = 0usize;
        let p = ffi::lua_tolstring(l, narg, &mut len);
        if p.is_null() {
            return Err(type_error(l, narg, "string"));
        }
        Ok(std::slice::from_raw_parts(p.cast(), len))
    }

    /// `luaL_checkoption` without a default; compares as C strings.
    ///
    /// # Safety
    ///
    /// As [`check_lstring`] (the bytes are only used before this returns).
    pub(crate) unsafe fn check_option(l: *mut lua_State, narg: c_int, options: &[&str]) -> R<usize> {
        let s = check_lstring(l, narg)?;
        let name = match s.iter().position(|&b| b == 0) {
            Some(p) => &s[..p],
            None => s,
        };
        if let Some(i) = options.iter().position(|o| o.as_bytes() == name) {
            return Ok(i);
        }
        let mut m = b"invalid option '".to_vec();
        m.extend_from_slice(name);
        m.push(b'\'');
        Err(arg_error(l, narg, m))
    }

    /// Pushes a byte string.
    ///
    /// # Safety
    ///
    /// `l` is a running state with a free stack slot. The string is copied into Lua, which
    /// allocates: call it with the memory cap lifted (as [`run`] and the reply sink do), or where a
    /// raise unwinds past nothing with a destructor.
    pub(crate) unsafe fn push_bytes(l: *mut lua_State, b: &[u8]) {
        ffi::lua_pushlstring_(l, b.as_ptr().cast(), b.len());
    }
}

/// 2^63 as a double.
const TWO63: f64 = 9_223_372_036_854_775_808.0;

/// A double to a 64-bit integer the way x86-64 `cvttsd2si` does: truncation toward zero, and
/// `i64::MIN` for NaN or anything out of range.
pub(crate) fn cvt_i64(x: f64) -> i64 {
    if x.is_nan() || !(-TWO63..TWO63).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// A double to a 32-bit int the way the 32-bit `cvttsd2si` does (`i32::MIN` when out of range).
pub(crate) fn cvt_i32(x: f64) -> i32 {
    if x.is_nan() || x >= 2_147_483_648.0 || x <= -2_147_483_649.0 {
        i32::MIN
    } else {
        x as i32
    }
}

/// A double to an unsigned 64-bit integer as gcc compiles `(unsigned long)d` on x86-64:
/// below 2^63 a plain signed conversion (so negatives wrap and NaN gives 2^63), above it the
/// value less 2^63 converted and the top bit flipped (so 2^64 and beyond give 0).
pub(crate) fn cvt_u64(x: f64) -> u64 {
    if x.is_nan() || x < TWO63 {
        cvt_i64(x) as u64
    } else {
        (cvt_i64(x - TWO63) as u64) ^ (1u64 << 63)
    }
}

/// C's `printf("%.<prec>g", x)` as glibc prints it (used for cjson numbers).
pub(crate) fn fmt_g(x: f64, prec: usize) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf".into() } else { "inf".into() };
    }
    let p = prec.max(1);
    // The exponent %e would print decides between the fixed and exponent styles.
    let e_form = format!("{:.*e}", p - 1, x);
    let epos = e_form.rfind('e').unwrap_or(e_form.len());
    let exp: i32 = e_form[epos + 1..].parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let mut mant = e_form[..epos].to_string();
        strip_fraction_zeros(&mut mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.unsigned_abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        let mut s = format!("{:.*}", decimals, x);
        strip_fraction_zeros(&mut s);
        s
    }
}

/// Drops trailing zeros after a decimal point, and the point itself when nothing follows it.
fn strip_fraction_zeros(s: &mut String) {
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" {
        fn snprintf(buf: *mut std::os::raw::c_char, n: usize, fmt: *const std::os::raw::c_char, ...) -> i32;
    }

    fn c_g(x: f64, prec: usize) -> String {
        let fmt = std::ffi::CString::new(format!("%.{prec}g")).unwrap();
        let mut buf = [0 as std::os::raw::c_char; 64];
        // SAFETY: `fmt` is a NUL-terminated `%.<prec>g`, which takes the one double passed; snprintf
        // writes at most `buf.len()` bytes, a NUL included, so `buf` holds a C string after.
        unsafe { snprintf(buf.as_mut_ptr(), buf.len(), fmt.as_ptr(), x) };
        let bytes: Vec<u8> = buf.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn fmt_g_matches_libc() {
        let mut vals = vec![
            0.0,
            -0.0,
            1.0,
            0.1,
            0.5,
            0.25,
            2.5,
            1e15,
            1e14,
            123456789012345.0,
            1e100,
            1e-5,
            1e-4,
            0.0001234,
            1.0 / 3.0,
            2f64.powi(53),
            9.999999999999995,
            99999999999999.5,
            1e21,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
            -1.5e-10,
            123456.789,
            0.00012345678901234,
        ];
        let mut seed: u64 = 0x1234_5678_9abc_def0;
        for _ in 0..3000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let v = f64::from_bits(seed);
            if v.is_finite() {
                vals.push(v);
            }
            vals.push((seed % 100_000) as f64 / 8.0);
            vals.push((seed % 1000) as f64 * 10f64.powi((seed % 40) as i32 - 20));
        }
        for v in vals {
            for p in [1usize, 3, 14] {
                assert_eq!(fmt_g(v, p), c_g(v, p), "value {v:e} precision {p}");
            }
        }
        assert_eq!(fmt_g(f64::INFINITY, 14), "inf");
        assert_eq!(fmt_g(f64::NEG_INFINITY, 14), "-inf");
    }

    #[test]
    fn conversions_follow_x86() {
        assert_eq!(cvt_i64(f64::NAN), i64::MIN);
        assert_eq!(cvt_i64(1e300), i64::MIN);
        assert_eq!(cvt_i64(-1.9), -1);
        assert_eq!(cvt_u64(2f64.powi(64)), 0);
        assert_eq!(cvt_u64(2f64.powi(63)), 1u64 << 63);
        assert_eq!(cvt_u64(f64::NAN), 1u64 << 63);
        assert_eq!(cvt_u64(-1.0), u64::MAX);
        assert_eq!(cvt_i32(2f64.powi(40)), i32::MIN);
        assert_eq!(cvt_i32(-2147483648.5), -2147483648);
    }
}
