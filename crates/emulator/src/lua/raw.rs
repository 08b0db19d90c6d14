//! Helpers for library functions written directly against the Lua C API.
//!
//! cjson and cmsgpack work on the Lua stack exactly as their C originals do (same pushes, same
//! `lua_checkstack` calls), which reproduces their nesting and result-count limits for free and
//! keeps them clear of mlua's auxiliary reference stack (which a Rust-side copy of a large or
//! deep table would exhaust). Errors travel back as complete messages and are raised as plain Lua
//! string errors by [`run`], from a frame that owns nothing. The helpers behind `redis.*` and
//! `math.random` use them too.
use std::ffi::CStr;
use std::os::raw::c_int;

use mlua::ffi::{self, lua_State};

use super::budget::LiftedCap;

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
