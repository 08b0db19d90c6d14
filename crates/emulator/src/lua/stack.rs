//! Small pieces every part of the Lua layer shares: pushing bytes and Redis's error tables onto a
//! Lua stack, and the C-string and one-line rules of Redis's texts.
use mlua::ffi;

/// Pushes a byte string.
///
/// # Safety
///
/// `l` is a running state with a free stack slot. The string is copied into Lua, which
/// allocates: call it with the memory cap lifted (as [`super::raw::run`] and the reply sink do),
/// or where a raise unwinds past nothing with a destructor.
pub(crate) unsafe fn push_bytes(l: *mut ffi::lua_State, b: &[u8]) {
    ffi::lua_pushlstring_(l, b.as_ptr().cast(), b.len());
}

/// `luaPushErrorBuff`: a `-CODE msg` text keeps its code, anything else gets `ERR`; CR/LF trimmed
/// from both ends of the message; the text is a C string (cut at a NUL).
///
/// # Safety
///
/// `l` is a running state with five free stack slots (the table, its key and the three pieces of
/// the message); `text` stays valid while this pushes (it may point into a Lua string, which must
/// stay on the stack). The pushes allocate, so under the memory cap they can raise: the caller's
/// frames must hold nothing with a destructor, or the cap be lifted.
pub(crate) unsafe fn push_error_buff(l: *mut ffi::lua_State, text: &[u8]) {
    let text = cstr(text);
    let (code, msg): (&[u8], &[u8]) = if let Some(rest) = text.strip_prefix(b"-") {
        match rest.iter().position(|&c| c == b' ') {
            Some(sp) => (&rest[..sp], &rest[sp + 1..]),
            None => (b"ERR", rest),
        }
    } else {
        (b"ERR", text)
    };
    let trim = |c: &u8| *c == b'\r' || *c == b'\n';
    let start = msg.iter().position(|c| !trim(c)).unwrap_or(msg.len());
    let end = msg.iter().rposition(|c| !trim(c)).map_or(start, |e| e + 1);
    let msg = &msg[start..end.max(start)];
    ffi::lua_createtable(l, 0, 0);
    ffi::lua_pushstring(l, c"err".as_ptr());
    // code + " " + msg, built on the Lua stack (nothing owned on the Rust side).
    push_bytes(l, code);
    ffi::lua_pushstring(l, c" ".as_ptr());
    push_bytes(l, msg);
    ffi::lua_concat(l, 3);
    ffi::lua_settable(l, -3);
}

/// The bytes of a C string: up to the first NUL.
pub(crate) fn cstr(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(p) => &b[..p],
        None => b,
    }
}

/// Redis replaces CR and LF in error and status replies with spaces.
pub(crate) fn one_line(s: &str) -> String {
    s.replace(['\r', '\n'], " ")
}
