//! The C API our Lua build adds (vendor/lua-src): Redis 7.0's read-only tables, as in its deps/lua,
//! and two views of a table's layout.
use std::os::raw::c_int;
extern "C-unwind" {
    pub fn lua_enablereadonlytable(l: *mut mlua::ffi::lua_State, idx: c_int, enabled: c_int);
    pub fn lua_isreadonlytable(l: *mut mlua::ffi::lua_State, idx: c_int) -> c_int;
    /// 1 when the table has no hash part: no key but array indices can be in it.
    pub fn lua_tablenohash(l: *mut mlua::ffi::lua_State, idx: c_int) -> c_int;
    /// The size of the table's array part.
    pub fn lua_tablearraysize(l: *mut mlua::ffi::lua_State, idx: c_int) -> c_int;
    /// Sets the global `name` to an array of the strings described by `items` (their `str`
    /// and `len`), refilling the old table when no script could tell (see lapi.c).
    pub fn lua_setglobalstrings(
        l: *mut mlua::ffi::lua_State,
        name: *const std::ffi::c_void,
        n: c_int,
        items: *const PeekArg,
    );
    /// The interned string `s`, never to be collected, as an opaque pointer for
    /// `lua_setglobalstrings`.
    pub fn lua_fixedstring(l: *mut mlua::ffi::lua_State, s: *const std::os::raw::c_char) -> *const std::ffi::c_void;
    /// The type of `t[n]` (raw) for the table at `idx`, without pushing it; `*num` receives it
    /// when it is a number.
    pub fn lua_rawgetitype(l: *mut mlua::ffi::lua_State, idx: c_int, n: c_int, num: *mut f64) -> c_int;
    /// How many results the caller of the running C function wants: 0 when it is called as a
    /// statement, so that nothing it returns can be seen; -1 (LUA_MULTRET) for all of them.
    pub fn lua_wantedresults(l: *mut mlua::ffi::lua_State) -> c_int;
    /// Describes the running C function's arguments 1..=n (n at most `lua_gettop`) into `out`.
    pub fn lua_peekargs(l: *mut mlua::ffi::lua_State, n: c_int, out: *mut PeekArg);
    /// How many strings the longest chain of the state's string table holds (interning a string
    /// compares it with its whole chain).
    #[cfg(test)]
    pub fn lua_longeststringchain(l: *mut mlua::ffi::lua_State) -> c_int;
    /// Where the state's byte count and memory cap live (lmem.c), to be read and set in place.
    pub fn lua_memcapfields(l: *mut mlua::ffi::lua_State, out: *mut MemCap);
}

/// The memory cap's fields of the state `l` belongs to.
///
/// # Safety
/// `l` is a live Lua state; the pointers stay valid as long as its global state.
pub unsafe fn memcap(l: *mut mlua::ffi::lua_State) -> MemCap {
    let mut m = std::mem::MaybeUninit::<MemCap>::uninit();
    lua_memcapfields(l, m.as_mut_ptr());
    m.assume_init()
}

/// The memory cap's fields in a state's global state (`struct lua_MemCap` in lua.h): the bytes
/// Lua has allocated, the cap on them (`usize::MAX`: none) and whether an allocation was refused since the
/// flag was last cleared.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MemCap {
    pub totalbytes: *mut usize,
    pub cap: *mut usize,
    pub hit: *mut c_int,
    /// The line the innermost Lua function was at when the cap was first passed (0: none).
    pub line: *mut c_int,
}

/// One argument as `lua_peekargs` describes it (`struct lua_PeekArg` in lua.h).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PeekArg {
    /// A string's bytes (set for strings only).
    pub str: *const u8,
    pub len: usize,
    /// A number's value (set for numbers only).
    pub num: f64,
    pub ty: c_int,
}
