//! The functions engine's Lua side, as Redis's `function_lua.c` has it: the VM's two faces of the
//! globals, `redis.register_function` and its arguments, and the arrays FCALL passes.
use std::os::raw::c_int;

use mlua::ffi;

use super::library::{valid_name, Func, LoadCtx, BAD_NAME, FLAG_NAMES};
use crate::lua::vm::{protect_tables, set_error_metatable};
use crate::lua::{ext, helpers, stack};

/// A copy of the string at `idx` (a number converted in place, as `lua_tolstring` does), or an
/// empty one for any other value.
///
/// # Safety
///
/// `idx` is a valid index of the running state `l`. Converting a number allocates: call it where
/// that cannot raise (no memory cap) or where a raise unwinds past nothing with a destructor.
pub(super) unsafe fn string_or_empty(l: *mut ffi::lua_State, idx: c_int) -> Vec<u8> {
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, idx, &mut len);
    if p.is_null() {
        Vec::new()
    } else {
        std::slice::from_raw_parts(p.cast::<u8>(), len).to_vec()
    }
}

/// `luaExtractErrorInformation`'s message: a string gets `ERR `, a table gives its `err`.
///
/// # Safety
///
/// `idx` is a valid index of the running state `l`, with one free slot. `lua_getfield` may run
/// the table's `__index` (which may raise), as in Redis: see the caller.
pub(super) unsafe fn extract_error(l: *mut ffi::lua_State, idx: c_int) -> String {
    if ffi::lua_isstring(l, idx) != 0 {
        let s = string_or_empty(l, idx);
        return format!("ERR {}", String::from_utf8_lossy(stack::cstr(&s)));
    }
    if ffi::lua_type(l, idx) == ffi::LUA_TTABLE {
        ffi::lua_getfield(l, idx, c"err".as_ptr());
        let s = if ffi::lua_isstring(l, -1) != 0 { Some(string_or_empty(l, -1)) } else { None };
        ffi::lua_settop(l, -2);
        if let Some(s) = s {
            return String::from_utf8_lossy(stack::cstr(&s)).into_owned();
        }
    }
    "(null)".into()
}

/// Points the `__index` of the functions' globals at the registry table `name` (the library API
/// while loading, the real globals otherwise), as `luaEngineCreate` does.
///
/// # Safety
///
/// `l` is the functions VM's main state, built by [`install_globals`] (the globals have a
/// metatable, the registry holds `name`), with two free slots. The metatable and the registry
/// have no metatables, so no metamethod runs; the keys are strings the tables already hold, so
/// nothing is allocated.
pub(super) unsafe fn set_globals_index(l: *mut ffi::lua_State, name: &std::ffi::CStr) {
    ffi::lua_getmetatable(l, ffi::LUA_GLOBALSINDEX);
    ext::lua_enablereadonlytable(l, -1, 0);
    ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, name.as_ptr());
    ffi::lua_setfield(l, -2, c"__index".as_ptr());
    ext::lua_enablereadonlytable(l, -1, 1);
    ffi::lua_settop(l, -2);
}

/// Builds the functions VM's two faces of the globals (called on a VM set up like the scripts' one,
/// with the real globals protected): the library API in the registry, then an empty protected
/// global table over the real one.
///
/// # Safety
///
/// Runs while the VM is built, as a C function under mlua's protected call (LUA_MINSTACK free
/// slots; it takes five at most), where a raise (an allocation refused) unwinds past nothing with a
/// destructor. `ctx` points to the VM's call context and `load` to its [`LoadCtx`]: both outlive the
/// Lua state, which the closures made here (`redis.log`, `redis.register_function`) need.
pub(crate) unsafe fn install_globals(l: *mut ffi::lua_State, ctx: *mut std::ffi::c_void, load: *mut std::ffi::c_void) {
    // The library API: { redis = { register_function, log, LOG_*, REDIS_VERSION* } }.
    ffi::lua_createtable(l, 0, 0);
    ffi::lua_createtable(l, 0, 0);
    ffi::lua_pushlightuserdata(l, load);
    ffi::lua_pushcclosure(l, register_function, 1);
    ffi::lua_setfield(l, -2, c"register_function".as_ptr());
    ffi::lua_pushlightuserdata(l, ctx);
    ffi::lua_pushcclosure(l, helpers::log, 1);
    ffi::lua_setfield(l, -2, c"log".as_ptr());
    for (name, v) in [(c"LOG_DEBUG", 0.0), (c"LOG_VERBOSE", 1.0), (c"LOG_NOTICE", 2.0), (c"LOG_WARNING", 3.0)] {
        ffi::lua_pushnumber(l, v);
        ffi::lua_setfield(l, -2, name.as_ptr());
    }
    ffi::lua_pushstring(l, c"7.0.15".as_ptr());
    ffi::lua_setfield(l, -2, c"REDIS_VERSION".as_ptr());
    ffi::lua_pushnumber(l, 0x0007000f as f64);
    ffi::lua_setfield(l, -2, c"REDIS_VERSION_NUM".as_ptr());
    set_error_metatable(l);
    ffi::lua_setfield(l, -2, c"redis".as_ptr());
    set_error_metatable(l);
    protect_tables(l);
    ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, c"__LIBRARY_API__".as_ptr());
    // The real globals, kept for run time.
    ffi::lua_pushvalue(l, ffi::LUA_GLOBALSINDEX);
    ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, c"__GLOBALS_API__".as_ptr());
    // The new globals: empty, read-only, reading through to the real ones.
    ffi::lua_createtable(l, 0, 0);
    ffi::lua_createtable(l, 0, 0);
    ffi::lua_pushvalue(l, ffi::LUA_GLOBALSINDEX);
    ffi::lua_setfield(l, -2, c"__index".as_ptr());
    ext::lua_enablereadonlytable(l, -1, 1);
    ffi::lua_setmetatable(l, -2);
    ext::lua_enablereadonlytable(l, -1, 1);
    ffi::lua_replace(l, ffi::LUA_GLOBALSINDEX);
}

/// `redis.register_function(name, callback)` or `redis.register_function{function_name=...,
/// callback=..., flags={...}, description=...}`, at load time only.
///
/// # Safety
///
/// Called by Lua only, as the C closure [`install_globals`] makes: upvalue 1 is a light userdata
/// pointing to the [`LoadCtx`] that `Functions` owns (alive as long as the VM; only ever shared,
/// its RefCell borrows ending before any raise). At run time it raises at once. At load time the
/// memory cap is off (it is set only for runs) and lua_alloc never fails, so the allocations made
/// while the read function is held cannot raise; the one raise possible while reading is an
/// `__index` of the flags table, which `read_named` meets with nothing owned alive. The error
/// raise comes after the block, with nothing owned alive.
unsafe extern "C-unwind" fn register_function(l: *mut ffi::lua_State) -> c_int {
    let load = &*(ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *const LoadCtx);
    let err: &'static str = 'check: {
        if load.registered.borrow().is_none() {
            break 'check "redis.register_function can only be called on FUNCTION LOAD command";
        }
        let argc = ffi::lua_gettop(l);
        if !(1..=2).contains(&argc) {
            break 'check "wrong number of arguments to redis.register_function";
        }
        let f = if argc == 1 { read_named(l) } else { read_positional(l) };
        let f = match f {
            Ok(f) => f,
            Err(e) => break 'check e,
        };
        let mut reg = load.registered.borrow_mut();
        let list = reg.as_mut().expect("loading");
        let e = if !valid_name(&f.name) {
            Some(BAD_NAME)
        } else if list.iter().any(|g| g.name == f.name) {
            Some("Function already exists in the library")
        } else {
            None
        };
        match e {
            Some(e) => {
                ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, f.fref);
                break 'check e;
            }
            None => {
                list.push(f);
                return 0;
            }
        }
    };
    stack::push_error_buff(l, err.as_bytes());
    ffi::lua_error(l)
}

/// A string argument (`luaGetStringSds`: numbers count, as `lua_isstring` says).
///
/// # Safety
///
/// As [`string_or_empty`].
unsafe fn get_string(l: *mut ffi::lua_State, idx: c_int) -> Option<Vec<u8>> {
    if ffi::lua_isstring(l, idx) == 0 {
        return None;
    }
    Some(string_or_empty(l, idx))
}

/// `redis.register_function(name, callback)`.
///
/// # Safety
///
/// Called from [`register_function`] at load time with two arguments. Its calls allocate at most
/// (the name's copy, the reference), which cannot raise at load time; the callback is referenced
/// only once nothing can fail, so a failure leaks no reference.
unsafe fn read_positional(l: *mut ffi::lua_State) -> Result<Func, &'static str> {
    let Some(name) = get_string(l, 1) else { return Err("first argument to redis.register_function must be a string") };
    if ffi::lua_type(l, 2) != ffi::LUA_TFUNCTION {
        return Err("second argument to redis.register_function must be a function");
    }
    let fref = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
    Ok(Func { name, desc: None, flags: 0, fref })
}

/// `redis.register_function{...}`.
///
/// # Safety
///
/// Called from [`register_function`] at load time with the table as its only argument (so slots
/// 2 and 3 are free for it, and LUA_MINSTACK covers the seven it takes at most). Allocations
/// cannot raise at load time; `read_flags` can (through an `__index`), and meets nothing owned
/// here: the name and description are copied out of the stack only after the walk.
unsafe fn read_named(l: *mut ffi::lua_State) -> Result<Func, &'static str> {
    if ffi::lua_type(l, 1) != ffi::LUA_TTABLE {
        return Err(
            "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).",
        );
    }
    // The name and description found so far wait in stack slots 2 and 3 (nil: not given), not in
    // Rust values: `read_flags` may run an `__index` that raises, and the raise must find nothing
    // here to drop. The table is pushed again above them, for the walk.
    ffi::lua_pushnil(l);
    ffi::lua_pushnil(l);
    ffi::lua_pushvalue(l, 1);
    let (mut fref, mut flags): (Option<c_int>, u8) = (None, 0);
    let fail = |fref: Option<c_int>, e: &'static str| {
        if let Some(r) = fref {
            ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, r);
        }
        Err(e)
    };
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        if ffi::lua_isstring(l, -2) == 0 {
            return fail(fref, "named argument key given to redis.register_function is not a string");
        }
        // (A number key is converted in place, as in Redis; it matches no name below, so the walk
        // stops before `lua_next` would see the changed key.)
        let mut len = 0usize;
        let p = ffi::lua_tolstring(l, -2, &mut len);
        let key = stack::cstr(std::slice::from_raw_parts(p.cast::<u8>(), len));
        if key.eq_ignore_ascii_case(b"function_name") {
            if ffi::lua_isstring(l, -1) == 0 {
                return fail(fref, "function_name argument given to redis.register_function must be a string");
            }
            ffi::lua_pushvalue(l, -1);
            ffi::lua_replace(l, 2);
        } else if key.eq_ignore_ascii_case(b"description") {
            if ffi::lua_isstring(l, -1) == 0 {
                return fail(fref, "description argument given to redis.register_function must be a string");
            }
            ffi::lua_pushvalue(l, -1);
            ffi::lua_replace(l, 3);
        } else if key.eq_ignore_ascii_case(b"callback") {
            if ffi::lua_type(l, -1) != ffi::LUA_TFUNCTION {
                return fail(fref, "callback argument given to redis.register_function must be a function");
            }
            fref = Some(ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX));
            continue;
        } else if key.eq_ignore_ascii_case(b"flags") {
            if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
                return fail(
                    fref,
                    "flags argument to redis.register_function must be a table representing function flags",
                );
            }
            match read_flags(l) {
                Some(f) => flags = f,
                None => return fail(fref, "unknown flag given"),
            }
        } else {
            return fail(fref, "unknown argument given to redis.register_function");
        }
        ffi::lua_settop(l, -2);
    }
    if ffi::lua_type(l, 2) == ffi::LUA_TNIL {
        return fail(fref, "redis.register_function must get a function name argument");
    }
    let Some(fref) = fref else { return Err("redis.register_function must get a callback argument") };
    let name = string_or_empty(l, 2);
    let desc = if ffi::lua_type(l, 3) == ffi::LUA_TNIL { None } else { Some(string_or_empty(l, 3)) };
    Ok(Func { name, desc, flags, fref })
}

/// The flags table on top of the stack (`luaRegisterFunctionReadFlags`).
///
/// # Safety
///
/// A table is on top of the running state's stack, with one free slot. `lua_gettable` runs the
/// table's `__index` for a missing index, as in Redis, and that may raise: the caller must hold
/// nothing with a destructor, and this function holds a flag's copy only between the read and
/// the next `lua_gettable`.
unsafe fn read_flags(l: *mut ffi::lua_State) -> Option<u8> {
    let mut flags = 0u8;
    let mut j = 1.0;
    loop {
        ffi::lua_pushnumber(l, j);
        j += 1.0;
        ffi::lua_gettable(l, -2);
        if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
            ffi::lua_settop(l, -2);
            return Some(flags);
        }
        if ffi::lua_isstring(l, -1) == 0 {
            ffi::lua_settop(l, -2);
            return None;
        }
        let s = string_or_empty(l, -1);
        ffi::lua_settop(l, -2);
        let s = stack::cstr(&s);
        let i = FLAG_NAMES.iter().position(|n| s.eq_ignore_ascii_case(n.as_bytes()))?;
        flags |= 1 << i;
    }
}
