//! One Lua VM with Redis's libraries and sandbox installed: how it is built (the libraries,
//! `redis.*`, the read-only globals, the error handler), its budget hook and its allocator.
use std::cell::RefCell;
use std::rc::Rc;

use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value};

use super::budget::{budget_hook, hook_key, HOOK_EVERY};
use super::context::{CallCtx, RunState};
use super::{ext, fast, helpers, libs, rand48};
use crate::core::Core;

/// What builds the functions VM's two faces of the globals (the functions engine's
/// `install_globals`), given the VM's main state, its call context and the engine's load state:
/// see [`Vm::new_functions`].
pub(super) type InstallGlobals = unsafe fn(*mut mlua::ffi::lua_State, *mut std::ffi::c_void, *mut std::ffi::c_void);

/// One Lua VM with Redis's libraries and sandbox installed.
pub(super) struct Vm {
    pub(super) lua: Lua,
    /// Read by the C closures of `redis.call`/`pcall`; declared after `lua` so it is dropped after it.
    #[allow(dead_code)] // only read through the raw pointer the C closures hold
    pub(super) ctx: Box<CallCtx>,
    /// Redis's `__redis__err__handler`, the message handler scripts run under (called through
    /// `handler_ref`; kept here so it lives as long as the VM).
    #[allow(dead_code)]
    pub(super) handler: Function,
    /// The main Lua state and the registry slot of `handler`, for the per-call fast path.
    pub(super) state: *mut mlua::ffi::lua_State,
    pub(super) handler_ref: std::os::raw::c_int,
    /// The names "KEYS" and "ARGV", interned once for good (`lua_fixedstring`).
    pub(super) names: [*const std::ffi::c_void; 2],
    /// The state's byte count and memory cap, set and read in place around each run.
    pub(super) mem: ext::MemCap,
    /// mlua's own allocation function and its user data (mlua's per-state bookkeeping), given back
    /// to the state before mlua closes it: mlua frees that bookkeeping only when it finds its own
    /// allocator on the state.
    mlua_alloc: (mlua::ffi::lua_Alloc, *mut std::ffi::c_void),
}

impl Drop for Vm {
    fn drop(&mut self) {
        // SAFETY: the state is live (the `lua` field, dropped after this, closes it) and no call is
        // under way. mlua's allocator frees and grows the state's mimalloc blocks through the global
        // allocator, which is mimalloc (alloc.rs), as it did before `finish` swapped it out.
        unsafe { mlua::ffi::lua_setallocf(self.state, self.mlua_alloc.0, self.mlua_alloc.1) };
    }
}

impl Vm {
    pub(super) fn new(core: &Rc<RefCell<Core>>, state: &Rc<RunState>, rng: &Rc<rand48::Rand48>) -> mlua::Result<Vm> {
        Self::build(core, state, rng, None)
    }

    /// The functions engine's VM: the same, with the globals' two faces (see [`super::functions`]),
    /// which `install` builds; `load` is the `LoadCtx` `redis.register_function` reads.
    ///
    /// # Safety
    ///
    /// `install` may be called while the VM is built, on its main state as a C function under
    /// mlua's protected call (LUA_MINSTACK free slots, a raise landing in that call), with the VM's
    /// call context and `load`; `load` outlives the VM's Lua state. The functions engine's
    /// `install_globals` and its `LoadCtx` are made for this.
    pub(super) unsafe fn new_functions(
        core: &Rc<RefCell<Core>>,
        state: &Rc<RunState>,
        rng: &Rc<rand48::Rand48>,
        install: InstallGlobals,
        load: *mut std::ffi::c_void,
    ) -> mlua::Result<Vm> {
        Self::build(core, state, rng, Some((install, load)))
    }

    fn build(
        core: &Rc<RefCell<Core>>,
        state: &Rc<RunState>,
        rng: &Rc<rand48::Rand48>,
        functions_load: Option<(InstallGlobals, *mut std::ffi::c_void)>,
    ) -> mlua::Result<Vm> {
        // SAFETY: mlua calls a state unsafe when it has the debug library or can load C modules. No
        // C module can be loaded (`package`, `require` and `loadfile` are removed below, before any
        // script runs). The debug library (whose `setupvalue` could replace the light userdata our
        // C closures dereference) is only read by the error handler's own code, which keeps nothing
        // but `getinfo` from it, and is removed from the globals before any script runs.
        let lua = unsafe {
            Lua::unsafe_new_with(StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG, LuaOptions::default())
        };
        let g = lua.globals();
        libs::register_all(&lua, &g)?;
        let ctx = Box::new(CallCtx {
            core: core.clone(),
            state: state.clone(),
            numbuf: Default::default(),
            rng: rng.clone(),
        });
        let ctx_ptr = &*ctx as *const CallCtx as *mut std::ffi::c_void;
        let redis = lua.create_table()?;
        register_redis_lib(&lua, &redis, ctx_ptr)?;
        g.raw_set("redis", redis)?;
        let math: Table = g.raw_get("math")?;
        math.raw_set("random", c_closure(&lua, helpers::math_random, ctx_ptr)?)?;
        math.raw_set("randomseed", c_closure(&lua, helpers::math_randomseed, ctx_ptr)?)?;
        g.raw_set("pcall", c_closure(&lua, helpers::pcall, ctx_ptr)?)?;
        for name in ["print", "dofile", "loadfile", "module", "require", "newproxy", "getfenv", "setfenv"] {
            g.raw_set(name, Value::Nil)?;
        }
        g.raw_set("package", Value::Nil)?;
        // Redis's error handler, loaded while the debug library is still there.
        let handler: Function = lua.load(ERROR_HANDLER).set_name("@err_handler_def").call(())?;
        if functions_load.is_none() {
            // The scripts' VM has it as a global (the functions engine keeps it in its registry).
            g.raw_set("__redis__err__handler", &handler)?;
        }
        g.raw_set("debug", Value::Nil)?;
        // luaSetErrorMetatable: reading a missing global raises (a C function, as in Redis). Then, as
        // Redis 7.0 does in its patched Lua (ours has the same patch, crates/lua), every table
        // scripts can reach from the globals is made read-only (the string metatable too).
        // SAFETY: exec_raw runs the closure as a C function under mlua's protected call, so it has
        // LUA_MINSTACK free slots (it never holds more than five; protect_tables checks its own),
        // and a raise (an allocation refused) lands in that protected call and comes back as an
        // Err. The closure captures two raw pointers, plain values: a raise would skip no
        // destructor. It leaves the stack as it found it. `ctx_ptr` and `load` point to the
        // context and the load state the VM owns, and `install` may be called with them here (see
        // new_functions and install_globals).
        unsafe {
            lua.exec_raw::<()>((), |l| {
                use mlua::ffi;
                ffi::lua_pushvalue(l, ffi::LUA_GLOBALSINDEX);
                set_error_metatable(l);
                protect_tables(l);
                ffi::lua_pushstring(l, c"".as_ptr());
                if ffi::lua_getmetatable(l, -1) != 0 {
                    protect_tables(l);
                    ffi::lua_settop(l, -2);
                }
                ffi::lua_settop(l, -3);
                if let Some((install, load)) = functions_load {
                    install(l, ctx_ptr, load);
                }
            })?;
        }
        Self::finish(lua, ctx, handler, state)
    }

    /// What every VM gets last: the budget hook, the collector's pace, the allocator and the fast
    /// path's registry references.
    fn finish(lua: Lua, ctx: Box<CallCtx>, handler: Function, state: &Rc<RunState>) -> mlua::Result<Vm> {
        // SAFETY: raw calls on the main state, as a C function under mlua's protected call (so a
        // refused allocation comes back as an Err; the closure captures one raw pointer): a registry
        // entry for the hook to find (the run state, which outlives the Lua state: the context holds
        // an Rc of it and is dropped after the state), the hook itself, and the collector's pause.
        // Two pushes, popped by the rawset.
        unsafe {
            let st = Rc::as_ptr(state) as *mut std::ffi::c_void;
            lua.exec_raw::<()>((), |l| {
                use mlua::ffi;
                ffi::lua_pushlightuserdata(l, hook_key());
                ffi::lua_pushlightuserdata(l, st);
                ffi::lua_rawset(l, ffi::LUA_REGISTRYINDEX);
                ffi::lua_sethook(
                    l,
                    Some(budget_hook),
                    hook_mask(&*st.cast::<RunState>()),
                    HOOK_EVERY as std::os::raw::c_int,
                );
                // A lazier collector than Lua's default (pause 200): scripts allocate many short-lived
                // strings and tables, and each cycle re-marks the ~50 KB the libraries keep alive. Not
                // much lazier: the heap between cycles is then about 4x that, ~200 KB, which stays in
                // the CPU caches even when a million-key keyspace competes for them (pause 1000 cost
                // 12% of wall time on simulations/zipf_1m.toml for 3% fewer instructions at 100 keys).
                // It changes no script-visible behaviour but collectgarbage('count').
                ffi::lua_gc(l, ffi::LUA_GCSETPAUSE, 400);
            })?;
        }
        let (state, handler_ref) = registry_ref(&lua, &handler)?;
        // From here on the state allocates from mimalloc directly rather than through mlua's
        // accounting allocator (no memory limit is set, so the accounting has nothing to do). Blocks
        // allocated before are mimalloc blocks too: mimalloc is the global allocator (lib.rs).
        // SAFETY: swaps the allocation function of a state no other thread uses, between calls (no
        // allocation is under way). lua_alloc ignores the user data, which stays mlua's (mlua reads
        // it back with lua_getallocf). Every block the state holds came from mimalloc, through
        // mlua's allocator over the global allocator, so lua_alloc can free and grow it.
        let mlua_alloc = unsafe {
            let mut ud = std::ptr::null_mut();
            let f = mlua::ffi::lua_getallocf(state, &mut ud);
            mlua::ffi::lua_setallocf(state, lua_alloc, ud);
            (f, ud)
        };
        // SAFETY: interns two constant names on the main state, between calls; lua_fixedstring makes
        // them permanent, so the pointers live as long as the state. The allocation cannot be refused
        // (no memory cap outside runs; lua_alloc never fails), so nothing raises outside a
        // protected call.
        let names =
            unsafe { [ext::lua_fixedstring(state, c"KEYS".as_ptr()), ext::lua_fixedstring(state, c"ARGV".as_ptr())] };
        // SAFETY: `state` is the live main state; the pointers it returns point into its global
        // state and stay valid as long as it (the Vm that keeps them owns the state).
        let mem = unsafe { ext::memcap(state) };
        Ok(Vm { lua, ctx, handler, state, handler_ref, names, mem, mlua_alloc })
    }

    /// Adds the return event to the hook (or takes it off), for [`super::Scripting::set_line_trace`]
    /// (this Lua has no line hook; a return hook sees the line of the `return` that ran).
    pub(super) fn set_line_hook(&self, on: bool) {
        let ret = if on { mlua::ffi::LUA_MASKRET } else { 0 };
        // SAFETY: sets the hook fields of the live main state, between calls: nothing is allocated
        // or raised. Coroutines created later inherit the mask.
        unsafe {
            mlua::ffi::lua_sethook(
                self.state,
                Some(budget_hook),
                mlua::ffi::LUA_MASKCOUNT | ret,
                HOOK_EVERY as std::os::raw::c_int,
            );
        }
    }

    /// After a kill the hook fires at every chance (count 1); the next script starts with the usual
    /// pace again.
    pub(super) fn rearm_hook(&self) {
        // SAFETY: sets the hook fields of the live main state, between calls: nothing is allocated
        // or raised.
        unsafe {
            mlua::ffi::lua_sethook(
                self.state,
                Some(budget_hook),
                hook_mask(&self.ctx.state),
                HOOK_EVERY as std::os::raw::c_int,
            );
        }
    }
}

/// The hook's events: the count, and returns while lines are traced.
fn hook_mask(st: &RunState) -> std::os::raw::c_int {
    if st.lines.borrow().is_some() {
        mlua::ffi::LUA_MASKCOUNT | mlua::ffi::LUA_MASKRET
    } else {
        mlua::ffi::LUA_MASKCOUNT
    }
}

/// `luaSetErrorMetatable`: gives the table on top of the stack a metatable whose `__index` raises
/// "Script attempted to access nonexistent global variable".
///
/// # Safety
///
/// A table is on top of the running state's stack, with two free slots above it. The new
/// metatable allocates: call it where a raise unwinds past nothing with a destructor.
pub(super) unsafe fn set_error_metatable(l: *mut mlua::ffi::lua_State) {
    use mlua::ffi;
    ffi::lua_createtable(l, 0, 0);
    ffi::lua_pushcclosure(l, helpers::protected_table_error, 0);
    ffi::lua_setfield(l, -2, c"__index".as_ptr());
    ffi::lua_setmetatable(l, -2);
}

/// A C closure over the call context.
fn c_closure(lua: &Lua, f: mlua::ffi::lua_CFunction, ctx: *mut std::ffi::c_void) -> mlua::Result<Function> {
    // SAFETY: pushes a light userdata and a C closure over it under mlua's protected call (a C
    // function with LUA_MINSTACK slots; a refused allocation comes back as an Err; the closure
    // captures two plain values). Making the closure dereferences nothing; `f` will, and every
    // caller passes the VM's call context, which outlives the Lua state (the VM owns both and drops
    // the state first).
    unsafe {
        lua.exec_raw((), |state| {
            mlua::ffi::lua_pushlightuserdata(state, ctx);
            mlua::ffi::lua_pushcclosure(state, f, 1);
        })
    }
}

/// Redis 7.0's error handler (`__redis__err__handler`; the functions engine keeps the same one in its
/// registry): errors become `{err=..., source=..., line=...}`, reported at the line of the function
/// that raised them, or of its caller when that is a C function.
const ERROR_HANDLER: &str = "local dbg = debug
local error_handler = function (err)
  local i = dbg.getinfo(2,'nSl')
  if i and i.what == 'C' then
    i = dbg.getinfo(3,'nSl')
  end
  if type(err) ~= 'table' then
    err = {err='ERR ' .. tostring(err)}
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end
return error_handler
";

/// The Lua allocation function (`lua_Alloc`) over mimalloc: free when the new size is 0, malloc for a
/// new block, else realloc. It never fails: when mimalloc has no memory left the process ends, as it
/// does for Redis (zmalloc's out-of-memory handler) and for Rust's own allocations. So an allocation
/// by Lua raises only where lmem.c refuses growth past the run's memory cap, and code that lifts the
/// cap ([`super::budget::LiftedCap`]) can push values while Rust holds memory or a borrow.
///
/// # Safety
///
/// Called by Lua only, with the contract of `lua_Alloc`: `ptr` is null or a block this function
/// returned (all blocks of the state come from mimalloc, see [`Vm::finish`]) and not yet freed.
unsafe extern "C" fn lua_alloc(
    _ud: *mut std::ffi::c_void,
    ptr: *mut std::ffi::c_void,
    _osize: usize,
    nsize: usize,
) -> *mut std::ffi::c_void {
    if nsize == 0 {
        libmimalloc_sys::mi_free(ptr);
        return std::ptr::null_mut();
    }
    let block = if ptr.is_null() { libmimalloc_sys::mi_malloc(nsize) } else { libmimalloc_sys::mi_realloc(ptr, nsize) };
    if block.is_null() {
        std::alloc::handle_alloc_error(
            std::alloc::Layout::from_size_align(nsize, 1).unwrap_or(std::alloc::Layout::new::<u8>()),
        );
    }
    block
}

/// Stores `f` in the registry; returns the main state and the reference.
pub(super) fn registry_ref(
    lua: &Lua,
    f: impl mlua::IntoLua,
) -> mlua::Result<(*mut mlua::ffi::lua_State, std::os::raw::c_int)> {
    let mut out = (std::ptr::null_mut(), 0);
    // SAFETY: inside mlua's protected call (a C function; a refused allocation comes back as an
    // Err), luaL_ref pops into the registry the one argument exec_raw pushed, `f`. The closure
    // captures a mutable reference, a plain value. The state seen there is the main state mlua
    // runs its protected calls on, which the fast path then uses directly.
    unsafe {
        lua.exec_raw::<()>(f, |l| {
            let r = mlua::ffi::luaL_ref(l, mlua::ffi::LUA_REGISTRYINDEX);
            out = (l, r);
        })?;
    }
    Ok(out)
}

/// Installs `redis.*`: C closures over the call context, and Redis's constants.
fn register_redis_lib(lua: &Lua, redis: &Table, ctx: *mut std::ffi::c_void) -> mlua::Result<()> {
    type F = mlua::ffi::lua_CFunction;
    let fns: [(&str, F); 12] = [
        ("call", fast::redis_call_c),
        ("pcall", fast::redis_pcall_c),
        ("log", helpers::log),
        ("set_repl", helpers::set_repl),
        ("setresp", helpers::setresp),
        ("sha1hex", helpers::sha1hex),
        ("error_reply", helpers::error_reply),
        ("status_reply", helpers::status_reply),
        ("acl_check_cmd", helpers::acl_check_cmd),
        ("breakpoint", helpers::breakpoint),
        ("debug", helpers::debug),
        ("replicate_commands", helpers::replicate_commands),
    ];
    for (name, f) in fns {
        redis.raw_set(name, c_closure(lua, f, ctx)?)?;
    }
    register_constants(redis)
}

/// `redis.LOG_*`, `redis.REPL_*` and the version.
fn register_constants(redis: &Table) -> mlua::Result<()> {
    for (name, v) in [("LOG_DEBUG", 0), ("LOG_VERBOSE", 1), ("LOG_NOTICE", 2), ("LOG_WARNING", 3)] {
        redis.raw_set(name, v)?;
    }
    for (name, v) in [("REPL_NONE", 0), ("REPL_AOF", 1), ("REPL_SLAVE", 2), ("REPL_REPLICA", 2), ("REPL_ALL", 3)] {
        redis.raw_set(name, v)?;
    }
    redis.raw_set("REDIS_VERSION", "7.0.15")?;
    redis.raw_set("REDIS_VERSION_NUM", 0x0007000f)?;
    Ok(())
}

/// Marks the table on top of the stack read-only, then every table reachable from it through its
/// values and metatables (Redis 7.0's `luaSetTableProtectionRecursively`).
///
/// # Safety
///
/// A table is on top of the running state's stack. It checks its own stack room (raising if there
/// is none, past about 8,000 nested tables) and reads raw, so no metamethod runs: call it where a
/// raise unwinds past nothing with a destructor.
pub(super) unsafe fn protect_tables(l: *mut mlua::ffi::lua_State) {
    use mlua::ffi;
    if ext::lua_isreadonlytable(l, -1) != 0 {
        return;
    }
    ext::lua_enablereadonlytable(l, -1, 1);
    ffi::luaL_checkstack(l, 3, c"tables nested too deep".as_ptr());
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            protect_tables(l);
        }
        ffi::lua_settop(l, -2);
    }
    if ffi::lua_getmetatable(l, -1) != 0 {
        protect_tables(l);
        ffi::lua_settop(l, -2);
    }
}
