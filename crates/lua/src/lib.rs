//! limitlab's Lua: PUC Lua 5.1.5 with the patches limitlab's Redis emulator needs (README.md lists
//! each), compiled by this crate's build script and linked into every binary that depends on it.
//!
//! The standard Lua 5.1 C API is mlua-sys's (`mlua::ffi`), which this crate turns to its `external`
//! mode: mlua then runs on this Lua, and a dependency graph holds one Lua. This crate declares only
//! what the patches add: Redis 7.0's read-only tables, as in Redis's deps/lua, views of a table's
//! layout, one-call argument and global helpers, and the memory cap.
//!
//! Allocation: the emulator hands its states a `lua_Alloc` over mimalloc once mlua has built them
//! and gives mlua's allocator back before mlua closes them (crates/emulator/src/lua/vm.rs), so the
//! blocks a state frees at `lua_close` go through mlua's allocator to the global allocator, which
//! the emulator sets to mimalloc: the allocator behind both is the same.
#![no_std]

use core::ffi::{c_char, c_int, c_void};

pub use mlua_sys::lua_State;

extern "C-unwind" {
    pub fn lua_enablereadonlytable(l: *mut lua_State, idx: c_int, enabled: c_int);
    pub fn lua_isreadonlytable(l: *mut lua_State, idx: c_int) -> c_int;
    /// 1 when the table has no hash part: no key but array indices can be in it.
    pub fn lua_tablenohash(l: *mut lua_State, idx: c_int) -> c_int;
    /// The size of the table's array part.
    pub fn lua_tablearraysize(l: *mut lua_State, idx: c_int) -> c_int;
    /// Sets the global `name` to an array of the strings described by `items` (their `str`
    /// and `len`), refilling the old table when no script could tell (see lapi.c).
    pub fn lua_setglobalstrings(l: *mut lua_State, name: *const c_void, n: c_int, items: *const PeekArg);
    /// The interned string `s`, never to be collected, as an opaque pointer for
    /// `lua_setglobalstrings`.
    pub fn lua_fixedstring(l: *mut lua_State, s: *const c_char) -> *const c_void;
    /// The type of `t[n]` (raw) for the table at `idx`, without pushing it; `*num` receives it
    /// when it is a number.
    pub fn lua_rawgetitype(l: *mut lua_State, idx: c_int, n: c_int, num: *mut f64) -> c_int;
    /// How many results the caller of the running C function wants: 0 when it is called as a
    /// statement, so that nothing it returns can be seen; -1 (LUA_MULTRET) for all of them.
    pub fn lua_wantedresults(l: *mut lua_State) -> c_int;
    /// Describes the running C function's arguments 1..=n (n at most `lua_gettop`) into `out`.
    pub fn lua_peekargs(l: *mut lua_State, n: c_int, out: *mut PeekArg);
    /// How many strings the longest chain of the state's string table holds (interning a string
    /// compares it with its whole chain).
    pub fn lua_longeststringchain(l: *mut lua_State) -> c_int;
    /// Where the state's byte count and memory cap live (lmem.c), to be read and set in place.
    pub fn lua_memcapfields(l: *mut lua_State, out: *mut MemCap);
}

/// The memory cap's fields of the state `l` belongs to.
///
/// # Safety
/// `l` is a live Lua state; the pointers stay valid as long as its global state.
pub unsafe fn memcap(l: *mut lua_State) -> MemCap {
    let mut m = core::mem::MaybeUninit::<MemCap>::uninit();
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
