//! Lua 5.1 scripting as Redis 7.0 does it: one VM reused across calls, a read-only global table,
//! `KEYS`/`ARGV`, `redis.call`/`pcall` with Redis's conversion rules and error texts, the script cache,
//! Redis's deterministic `math.random`, expiry frozen while a script runs, and a budget of loop iterations
//! and calls that stops runaway scripts.
mod fast;
mod functions;
mod helpers;
pub mod libs;
mod rand48;

use rustc_hash::FxHashMap;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value};

use super::cluster;
use super::cmd::{self, eq_ic, flags, CommandSpec};
use super::core::Core;
use super::reply::{Reply, ReplySink};

/// Default budget of one script call, in loop iterations and Lua function calls (our Lua counts its
/// count hook on backward jumps and function entries, not per instruction: vendor/lua-src): about a
/// second of busy Lua on this machine class.
pub const DEFAULT_BUDGET: u64 = 50_000_000;

/// The budget new emulators start with: [`DEFAULT_BUDGET`] unless a command's `--script-budget`
/// set another ([`set_default_budget`]). One figure for the process, so that every emulator a
/// command makes (its runs, probes, searches) stops a runaway script at the same point.
static PROCESS_BUDGET: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(DEFAULT_BUDGET);

/// Sets the budget of every emulator made from now on in this process (see [`PROCESS_BUDGET`]).
pub fn set_default_budget(b: u64) {
    PROCESS_BUDGET.store(b.max(1), std::sync::atomic::Ordering::Relaxed);
}

/// The budget new emulators start with.
pub fn default_budget() -> u64 {
    PROCESS_BUDGET.load(std::sync::atomic::Ordering::Relaxed)
}

/// Default memory cap of one script run: the Lua memory it may add to what the VM held when it
/// started. Redis has no such cap (a runaway script there grows until the machine runs out); the
/// emulator stops it with an error instead, and stays usable.
pub const DEFAULT_MEMORY: usize = 512 << 20;

/// How often (in loop iterations and calls) the budget hook runs.
const HOOK_EVERY: u32 = 10_000;

const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

/// State of the script being run, shared with the Rust callbacks inside the VM.
pub(crate) struct RunState {
    /// EVAL_RO / EVALSHA_RO: write commands are refused.
    pub(crate) read_only: Cell<bool>,
    /// The protocol `redis.setresp` chose (2 or 3); reset to 2 for every script.
    pub(crate) resp: Cell<u8>,
    /// Loop iterations and calls left before the script is killed.
    pub(crate) budget_left: Cell<i64>,
    /// Set once the budget ran out; the hook then raises at every chance, so `pcall` cannot swallow it.
    pub(crate) killed: Cell<bool>,
    /// Cluster mode: the slot the script is bound to (from its declared keys or first key touched).
    pub(crate) slot: Cell<Option<u16>>,
    /// The function running has the `allow-cross-slot-keys` flag.
    pub(crate) cross_slot: Cell<bool>,
    /// FUNCTION LOAD is running a library's code (the budget hook then raises Redis's load timeout).
    pub(crate) loading: Cell<bool>,
    /// How many bytes of Lua memory one run may add to what the VM held at its start (0: no cap).
    pub(crate) memory_room: Cell<usize>,
    /// The commands `redis.call` found lately (see [`cmd::LookupCache`]).
    pub(crate) commands: RefCell<cmd::LookupCache>,
}

/// One Lua VM with Redis's libraries and sandbox installed.
struct Vm {
    lua: Lua,
    /// Read by the C closures of `redis.call`/`pcall`; declared after `lua` so it is dropped after it.
    #[allow(dead_code)] // only read through the raw pointer the C closures hold
    ctx: Box<fast::CallCtx>,
    /// Redis's `__redis__err__handler`, the message handler scripts run under (called through
    /// `handler_ref`; kept here so it lives as long as the VM).
    #[allow(dead_code)]
    handler: Function,
    /// The main Lua state and the registry slot of `handler`, for the per-call fast path.
    state: *mut mlua::ffi::lua_State,
    handler_ref: std::os::raw::c_int,
    /// The names "KEYS" and "ARGV", interned once for good (`lua_fixedstring`).
    names: [*const std::ffi::c_void; 2],
    /// The state's byte count and memory cap, set and read in place around each run.
    mem: ext::MemCap,
}

impl Vm {
    fn new(core: &Rc<RefCell<Core>>, state: &Rc<RunState>, rng: &Rc<rand48::Rand48>) -> mlua::Result<Vm> {
        Self::build(core, state, rng, None)
    }

    /// The functions engine's VM: the same, with the globals' two faces (see [`functions`]);
    /// `load` is the [`functions::LoadCtx`] `redis.register_function` reads.
    fn new_functions(
        core: &Rc<RefCell<Core>>,
        state: &Rc<RunState>,
        rng: &Rc<rand48::Rand48>,
        load: *mut std::ffi::c_void,
    ) -> mlua::Result<Vm> {
        Self::build(core, state, rng, Some(load))
    }

    fn build(
        core: &Rc<RefCell<Core>>,
        state: &Rc<RunState>,
        rng: &Rc<rand48::Rand48>,
        functions_load: Option<*mut std::ffi::c_void>,
    ) -> mlua::Result<Vm> {
        // SAFETY: the debug library is loaded only to build the error handler, then removed from the
        // globals scripts can see; no script gets access to it.
        let lua = unsafe { Lua::unsafe_new_with(StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG, LuaOptions::default()) };
        let g = lua.globals();
        libs::register_all(&lua, &g)?;
        let ctx = Box::new(fast::CallCtx { core: core.clone(), state: state.clone(), numbuf: Default::default(), rng: rng.clone() });
        let ctx_ptr = &*ctx as *const fast::CallCtx as *mut std::ffi::c_void;
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
        // Redis 7.0 does in its patched Lua (ours has the same patch, vendor/lua-src), every table
        // scripts can reach from the globals is made read-only (the string metatable too).
        // SAFETY: raw API on the main state; leaves the stack as it found it.
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
                if let Some(load) = functions_load {
                    functions::install_globals(l, ctx_ptr, load);
                }
            })?;
        }
        Self::finish(lua, ctx, handler, state)
    }

    /// What every VM gets last: the budget hook, the collector's pace, the allocator and the fast
    /// path's registry references.
    fn finish(lua: Lua, ctx: Box<fast::CallCtx>, handler: Function, state: &Rc<RunState>) -> mlua::Result<Vm> {
        // SAFETY: raw calls on the main state: a registry entry (the run state, which outlives the VM:
        // the context holds it) for the hook to find, the hook itself, and the collector's pause.
        unsafe {
            let st = Rc::as_ptr(state) as *mut std::ffi::c_void;
            lua.exec_raw::<()>((), |l| {
                use mlua::ffi;
                ffi::lua_pushlightuserdata(l, hook_key());
                ffi::lua_pushlightuserdata(l, st);
                ffi::lua_rawset(l, ffi::LUA_REGISTRYINDEX);
                ffi::lua_sethook(l, Some(budget_hook), ffi::LUA_MASKCOUNT, HOOK_EVERY as std::os::raw::c_int);
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
        // SAFETY: swaps the allocation function of a state no other thread uses; the user data
        // pointer stays mlua's, which it reads back with lua_getallocf.
        unsafe {
            let mut ud = std::ptr::null_mut();
            mlua::ffi::lua_getallocf(state, &mut ud);
            mlua::ffi::lua_setallocf(state, lua_alloc, ud);
        }
        // SAFETY: interns two constant names on the main state; they live as long as it does.
        let names = unsafe { [ext::lua_fixedstring(state, c"KEYS".as_ptr()), ext::lua_fixedstring(state, c"ARGV".as_ptr())] };
        // SAFETY: fills the struct with pointers into the state's global state, valid as long as it.
        let mem = unsafe { ext::memcap(state) };
        Ok(Vm { lua, ctx, handler, state, handler_ref, names, mem })
    }

    /// After a kill the hook fires at every chance (count 1); the next script starts with the usual
    /// pace again.
    fn rearm_hook(&self) {
        // SAFETY: sets the hook of the main state, between calls.
        unsafe {
            mlua::ffi::lua_sethook(self.state, Some(budget_hook), mlua::ffi::LUA_MASKCOUNT, HOOK_EVERY as std::os::raw::c_int);
        }
    }
}

/// The registry key under which the hook finds the run state (the address of a static).
fn hook_key() -> *mut std::ffi::c_void {
    static KEY: u8 = 0;
    &KEY as *const u8 as *mut std::ffi::c_void
}

/// The budget hook: every [`HOOK_EVERY`] loop iterations and calls it takes them off the budget;
/// once the budget is spent the script is killed, and from then on the hook fires and raises at
/// every chance, so `pcall` cannot keep a killed script alive. During FUNCTION LOAD it raises Redis's
/// load timeout instead.
unsafe extern "C-unwind" fn budget_hook(l: *mut mlua::ffi::lua_State, _ar: *mut mlua::ffi::lua_Debug) {
    use mlua::ffi;
    ffi::lua_pushlightuserdata(l, hook_key());
    ffi::lua_rawget(l, ffi::LUA_REGISTRYINDEX);
    let st = &*(ffi::lua_touserdata(l, -1) as *const RunState);
    ffi::lua_settop(l, -2);
    // The allocator refused to grow past the run's memory cap (lmem.c makes the hook fire at the
    // next loop or call): the script is killed, whether or not it caught that error.
    if !st.killed.get() && memory_hit(l) {
        st.killed.set(true);
        ffi::lua_sethook(l, Some(budget_hook), ffi::LUA_MASKCOUNT, 1);
    }
    if !st.killed.get() {
        let left = st.budget_left.get() - HOOK_EVERY as i64;
        st.budget_left.set(left);
        if left > 0 {
            return;
        }
        st.killed.set(true);
        ffi::lua_sethook(l, Some(budget_hook), ffi::LUA_MASKCOUNT, 1);
    }
    if st.loading.get() {
        helpers::push_error_buff(l, b"FUNCTION LOAD timeout");
    } else {
        ffi::lua_pushstring(l, c"Script killed".as_ptr());
    }
    ffi::lua_error(l);
}

/// Whether the state's memory cap refused an allocation during this run.
unsafe fn memory_hit(l: *mut mlua::ffi::lua_State) -> bool {
    *ext::memcap(l).hit != 0
}

/// `luaSetErrorMetatable`: gives the table on top of the stack a metatable whose `__index` raises
/// "Script attempted to access nonexistent global variable".
unsafe fn set_error_metatable(l: *mut mlua::ffi::lua_State) {
    use mlua::ffi;
    ffi::lua_createtable(l, 0, 0);
    ffi::lua_pushcclosure(l, helpers::protected_table_error, 0);
    ffi::lua_setfield(l, -2, c"__index".as_ptr());
    ffi::lua_setmetatable(l, -2);
}

/// A C closure over the call context.
fn c_closure(lua: &Lua, f: mlua::ffi::lua_CFunction, ctx: *mut std::ffi::c_void) -> mlua::Result<Function> {
    // SAFETY: the context outlives the VM (both are owned by `Vm`, the context dropped last).
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
/// new block, else realloc.
unsafe extern "C" fn lua_alloc(
    _ud: *mut std::ffi::c_void,
    ptr: *mut std::ffi::c_void,
    _osize: usize,
    nsize: usize,
) -> *mut std::ffi::c_void {
    if nsize == 0 {
        libmimalloc_sys::mi_free(ptr);
        std::ptr::null_mut()
    } else if ptr.is_null() {
        libmimalloc_sys::mi_malloc(nsize)
    } else {
        libmimalloc_sys::mi_realloc(ptr, nsize)
    }
}

/// Stores `f` in the registry; returns the main state and the reference.
fn registry_ref(lua: &Lua, f: impl mlua::IntoLua) -> mlua::Result<(*mut mlua::ffi::lua_State, std::os::raw::c_int)> {
    let mut out = (std::ptr::null_mut(), 0);
    // SAFETY: pops the function exec_raw pushed into a registry reference.
    unsafe {
        lua.exec_raw::<()>(f, |l| {
            let r = mlua::ffi::luaL_ref(l, mlua::ffi::LUA_REGISTRYINDEX);
            out = (l, r);
        })?;
    }
    Ok(out)
}

/// The scripting engine of one emulator.
pub struct Scripting {
    core: Rc<RefCell<Core>>,
    vm: Vm,
    scripts: FxHashMap<String, Cached>,
    state: Rc<RunState>,
    /// Redis's `math.random` stream lives outside the VM: SCRIPT FLUSH rebuilds the VM but not it.
    rng: Rc<rand48::Rand48>,
    budget: u64,
    /// Redis 7.0 functions: their own VM and libraries (FUNCTION FLUSH and SCRIPT FLUSH are separate).
    functions: functions::Functions,
}

impl Scripting {
    /// Starts a VM with Redis 7.0's libraries and sandbox.
    pub fn new(core: Rc<RefCell<Core>>) -> mlua::Result<Self> {
        let state = Rc::new(RunState {
            read_only: Cell::new(false),
            resp: Cell::new(2),
            budget_left: Cell::new(i64::MAX),
            killed: Cell::new(false),
            slot: Cell::new(None),
            loading: Cell::new(false),
            memory_room: Cell::new(DEFAULT_MEMORY),
            cross_slot: Cell::new(false),
            commands: RefCell::default(),
        });
        let rng = Rc::new(rand48::Rand48::default());
        let vm = Vm::new(&core, &state, &rng)?;
        let functions = functions::Functions::new(&core, &state, &rng)?;
        Ok(Scripting { core, vm, scripts: FxHashMap::default(), state, rng, budget: default_budget(), functions })
    }

    /// SCRIPT FLUSH: forgets every script and, as Redis 7.0 does, starts a fresh VM (so library
    /// settings such as cjson's are reset too).
    pub fn flush(&mut self) -> mlua::Result<()> {
        self.scripts.clear();
        self.vm = Vm::new(&self.core, &self.state, &self.rng)?;
        Ok(())
    }

    /// Sets the memory cap of one script call: the bytes of Lua memory it may add (0: no cap).
    pub fn set_memory_cap(&mut self, bytes: usize) {
        self.state.memory_room.set(bytes);
    }

    /// In cluster mode, the slot the last script run was bound to: its declared keys' slot, or,
    /// with none declared, the slot of the first key it touched (`None`: it touched no key).
    pub fn last_slot(&self) -> Option<u16> {
        self.state.slot.get()
    }

    /// Sets the budget of one script call, in loop iterations and Lua function calls.
    pub fn set_budget(&mut self, b: u64) {
        self.budget = b;
        self.functions.budget = b;
    }

    /// EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT, from a client (arity already checked).
    pub fn command(&mut self, spec: &CommandSpec, a: &[&[u8]]) -> Reply {
        match spec.name {
            "eval" | "eval_ro" | "evalsha" | "evalsha_ro" => {
                let ro = spec.name.ends_with("_ro");
                let (keys, argv) = match split_numkeys(a) {
                    Ok(x) => x,
                    // Redis 7.0's evalShaCommand refuses a digest that is not 40 bytes long before it
                    // reads numkeys (the cluster check, which runs first, finds no keys then).
                    Err(_) if spec.name.starts_with("evalsha") && a[1].len() != 40 => return Reply::err(NOSCRIPT),
                    Err(r) => return r,
                };
                if self.core.borrow().cluster {
                    if let Err(()) = cluster::common_slot(keys.iter().copied()) {
                        return Reply::err(cluster::CROSSSLOT);
                    }
                }
                if spec.name.starts_with("evalsha") {
                    self.evalsha(a[1], keys, argv, ro)
                } else {
                    self.eval(a[1], keys, argv, ro)
                }
            }
            "script" => self.script_command(a),
            "function" => self.functions.command(a),
            "fcall" | "fcall_ro" => self.functions.fcall(&self.core, a, spec.name == "fcall_ro", self.budget),
            _ => cmd::unknown_command(a),
        }
    }

    fn script_command(&mut self, a: &[&[u8]]) -> Reply {
        let sub = a[1];
        if eq_ic(sub, "load") && a.len() == 3 {
            match self.load(a[2]) {
                Ok(sha) => Reply::Bulk(sha.into_bytes()),
                Err(e) => e,
            }
        } else if eq_ic(sub, "exists") && a.len() >= 3 {
            Reply::Array(
                a[2..]
                    .iter()
                    .map(|s| {
                        let key = String::from_utf8_lossy(s).to_ascii_lowercase();
                        Reply::Int(self.scripts.contains_key(&key) as i64)
                    })
                    .collect(),
            )
        } else if eq_ic(sub, "flush") {
            if a.len() > 3 || (a.len() == 3 && !eq_ic(a[2], "sync") && !eq_ic(a[2], "async")) {
                return Reply::err("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
            }
            match self.flush() {
                Ok(()) => Reply::ok(),
                Err(e) => Reply::Error(format!("ERR {}", one_line(&e.to_string()))),
            }
        } else if eq_ic(sub, "kill") && a.len() == 2 {
            Reply::err("NOTBUSY No scripts in execution right now.")
        } else if eq_ic(sub, "debug") && a.len() == 3 && self.core.borrow().in_exec {
            // Inside EXEC the client already has a reply pending (EXEC's array).
            Reply::err("ERR SCRIPT DEBUG must be called outside a pipeline")
        } else if eq_ic(sub, "debug") && a.len() == 3 {
            // Redis's Lua debugger (a session driven by the client) is not emulated: NO, which turns it
            // off, is all the emulator can say yes to.
            if eq_ic(a[2], "no") {
                Reply::ok()
            } else if eq_ic(a[2], "yes") || eq_ic(a[2], "sync") {
                Reply::err("ERR limitlab does not emulate the Lua debugger (SCRIPT DEBUG YES/SYNC)")
            } else {
                Reply::err("ERR Use SCRIPT DEBUG YES/SYNC/NO")
            }
        } else if eq_ic(sub, "help") && a.len() == 2 {
            Reply::Array(SCRIPT_HELP.iter().map(|l| Reply::Status((*l).into())).collect())
        } else {
            let name = String::from_utf8_lossy(sub);
            if ["load", "exists", "flush", "kill", "help", "debug"].iter().any(|s| eq_ic(sub, s)) {
                cmd::arity_error(&format!("script|{}", name.to_ascii_lowercase()))
            } else {
                // `%.128s` of a C string, CR/LF as spaces, as Redis formats errors.
                let end = sub.iter().take(128).position(|&c| c == 0).unwrap_or(sub.len().min(128));
                let name: String =
                    String::from_utf8_lossy(&sub[..end]).chars().map(|c| if c == '\r' || c == '\n' { ' ' } else { c }).collect();
                Reply::Error(format!("ERR unknown subcommand '{name}'. Try SCRIPT HELP."))
            }
        }
    }

    /// SCRIPT LOAD: compile and cache; returns the SHA1 in lower-case hex.
    pub fn load(&mut self, body: &[u8]) -> Result<String, Reply> {
        let sha = sha1_hex(body);
        if !self.scripts.contains_key(&sha) {
            let (shebang, code) = match Shebang::parse(body) {
                Ok(Some((flags, len))) => (Some(flags), &body[len..]),
                Ok(None) => (None, body),
                Err(e) => return Err(e),
            };
            let f = self.compile(code)?;
            let (_, fref) = registry_ref(&self.vm.lua, &f).map_err(|e| Reply::Error(format!("ERR {e}")))?;
            self.scripts.insert(sha.clone(), Cached { f, fref, shebang });
        }
        Ok(sha)
    }

    fn compile(&self, body: &[u8]) -> Result<Function, Reply> {
        self.vm.lua.load(body).set_name("@user_script").set_mode(mlua::chunk::ChunkMode::Text).into_function().map_err(|e| {
            let msg = match &e {
                mlua::Error::SyntaxError { message, .. } => message.clone(),
                other => other.to_string(),
            };
            Reply::Error(format!("ERR Error compiling script (new function): {}", one_line(&msg)))
        })
    }

    /// EVAL: compiles the body if it is not cached, then runs it.
    pub fn eval(&mut self, body: &[u8], keys: &[&[u8]], argv: &[&[u8]], read_only: bool) -> Reply {
        let sha = match self.load(body) {
            Ok(s) => s,
            Err(e) => return e,
        };
        self.run_cached(&sha, keys, argv, read_only)
    }

    /// EVALSHA: runs a cached script, or NOSCRIPT.
    pub fn evalsha(&mut self, sha: &[u8], keys: &[&[u8]], argv: &[&[u8]], read_only: bool) -> Reply {
        if sha.len() != 40 || !sha.is_ascii() {
            return Reply::err(NOSCRIPT);
        }
        let mut buf = [0u8; 40];
        for (d, s) in buf.iter_mut().zip(sha) {
            *d = s.to_ascii_lowercase();
        }
        // SAFETY: ASCII bytes (checked above), and lowercasing keeps them ASCII.
        let sha = unsafe { std::str::from_utf8_unchecked(&buf) };
        self.run_cached(sha, keys, argv, read_only)
    }

    fn run_cached(&mut self, sha: &str, keys: &[&[u8]], argv: &[&[u8]], read_only: bool) -> Reply {
        let Some(c) = self.scripts.get(sha) else { return Reply::err(NOSCRIPT) };
        let (fref, shebang) = (c.fref, c.shebang);
        // Redis 7.0: a script with a shebang declares whether it writes; without one it may write.
        let mut read_only = read_only;
        if let Some(sb) = shebang {
            if read_only && !sb.no_writes {
                return Reply::err("ERR Can not execute a script with write flag using *_ro command.");
            }
            if sb.no_cluster && self.core.borrow().cluster {
                return Reply::err("ERR Can not run script on cluster, 'no-cluster' flag is set.");
            }
            read_only |= sb.no_writes;
            if sb.cross_slot {
                self.state.cross_slot.set(true);
                let r = self.run(sha, fref, keys, argv, read_only);
                self.state.cross_slot.set(false);
                return r;
            }
        }
        self.run(sha, fref, keys, argv, read_only)
    }

    fn run(&self, sha: &str, fref: std::os::raw::c_int, keys: &[&[u8]], argv: &[&[u8]], read_only: bool) -> Reply {
        run_function(&self.vm, &self.core, &self.state, self.budget, sha, fref, keys, argv, read_only, true)
    }
}

/// Runs a compiled script (`eval`: KEYS and ARGV are globals, no arguments) or a library's
/// function (its keys and args as two array arguments), as Redis's `luaCallFunction` does; `name`
/// is what error replies call it (the script's SHA or the function's name).
#[allow(clippy::too_many_arguments)]
#[inline]
fn run_function(
    vm: &Vm,
    core: &Rc<RefCell<Core>>,
    st: &RunState,
    budget: u64,
    name: &str,
    fref: std::os::raw::c_int,
    keys: &[&[u8]],
    argv: &[&[u8]],
    read_only: bool,
    eval: bool,
) -> Reply {
    st.read_only.set(read_only);
    st.resp.set(2);
    st.killed.set(false);
    st.budget_left.set(budget.min(i64::MAX as u64) as i64);
    let room = st.memory_room.get();
    // SAFETY: the cap's fields live in the VM's global state (see Vm::mem); no Lua code runs now.
    unsafe {
        *vm.mem.hit = 0;
        *vm.mem.cap = if room == 0 { usize::MAX } else { (*vm.mem.totalbytes).saturating_add(room) };
    }
    st.slot.set(if core.borrow().cluster { cluster::common_slot(keys.iter().copied()).ok().flatten() } else { None });
    // Keys cannot expire while the script runs: judge expiry at the script's start. The script runs
    // in its caller's database; a SELECT inside it changes the script's database only.
    let db = {
        let mut core = core.borrow_mut();
        let now = core.now_ms();
        core.frozen_ms = Some(now);
        core.selected
    };
    let l = vm.state;
    // SAFETY: runs on the main state between mlua calls and leaves its stack as it found it. As in
    // Redis (luaCallFunction), the script runs under lua_pcall with the error handler as the message
    // handler: a failure leaves the handler's {err, source, line} table (or, should the handler
    // itself fail, Lua's message) on the stack.
    let outcome = unsafe {
        use mlua::ffi;
        let top = ffi::lua_gettop(l);
        ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, vm.handler_ref);
        ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, fref);
        let nargs = if eval {
            fast::set_string_array(l, vm.names[0], keys);
            fast::set_string_array(l, vm.names[1], argv);
            0
        } else {
            functions::push_array(l, keys);
            functions::push_array(l, argv);
            2
        };
        let r = if ffi::lua_pcall(l, nargs, 1, top + 1) == 0 {
            Ok(fast::to_reply(l, -1, st.resp.get(), 0))
        } else {
            Err(fast::read_failure(l, -1))
        };
        ffi::lua_settop(l, top);
        r
    };
    {
        let mut core = core.borrow_mut();
        core.frozen_ms = None;
        core.select(db);
    }
    // SAFETY: as above; the script has returned.
    let (memory_hit, memory_line) = unsafe {
        *vm.mem.cap = usize::MAX;
        (std::mem::replace(&mut *vm.mem.hit, 0) != 0, std::mem::replace(&mut *vm.mem.line, 0))
    };
    if memory_hit {
        // Over the memory cap, whether or not the script caught the refusal: its garbage goes now,
        // so that the next script starts from where this one did.
        st.killed.set(false);
        vm.rearm_hook();
        // SAFETY: a full collection on the main state, between calls.
        unsafe { mlua::ffi::lua_gc(vm.state, mlua::ffi::LUA_GCCOLLECT, 0) };
        let mut fail = outcome.err().unwrap_or_default();
        // An allocation refused outright carries no position: the line noted when the cap was
        // first passed stands in for it.
        if fail.line.is_none() && memory_line > 0 {
            fail.line = Some(memory_line as i64);
            fail.source = Some(if eval { "@user_script" } else { "@user_function" }.into());
        }
        return script_error(name, fail, Some(Kill::Memory(room)));
    }
    if st.killed.replace(false) {
        // Killed, whether or not the script caught the kill and went on to finish.
        vm.rearm_hook();
        let fail = outcome.err().unwrap_or_default();
        return script_error(name, fail, Some(Kill::Budget(budget)));
    }
    outcome.unwrap_or_else(|fail| script_error(name, fail, None))
}

/// A compiled script and the flags of its shebang line, if it has one.
struct Cached {
    /// Keeps the compiled function alive; calls go through `fref`.
    #[allow(dead_code)]
    f: Function,
    fref: std::os::raw::c_int,
    shebang: Option<Shebang>,
}

/// The flags of a `#!lua flags=...` first line (Redis 7.0).
#[derive(Clone, Copy, Debug, Default)]
struct Shebang {
    no_writes: bool,
    no_cluster: bool,
    cross_slot: bool,
}

impl Shebang {
    /// Parses a shebang line: `Ok(None)` without one, else its flags and the line's length (the
    /// line is left out of the compiled code but its newline stays, so line numbers still count it).
    fn parse(body: &[u8]) -> Result<Option<(Shebang, usize)>, Reply> {
        if !body.starts_with(b"#!") {
            return Ok(None);
        }
        // evalExtractShebangFlags: the line ends at the first newline (of the C string); it is
        // split as sdssplitargs splits (any whitespace, quotes); flags split on commas, exact names.
        let Some(len) = helpers::cstr(body).iter().position(|&c| c == b'\n') else {
            return Err(Reply::err("ERR Invalid script shebang"));
        };
        let parts = match functions::split_args(&body[..len]) {
            Some(p) if !p.is_empty() => p,
            _ => return Err(Reply::err("ERR Invalid engine in script shebang")),
        };
        let text = |b: &[u8]| String::from_utf8_lossy(helpers::cstr(b)).into_owned();
        if parts[0] != b"#!lua" {
            return Err(Reply::Error(one_line(&format!("ERR Unexpected engine in script shebang: {}", text(&parts[0])))));
        }
        let mut sb = Shebang::default();
        for opt in &parts[1..] {
            let Some(list) = opt.strip_prefix(b"flags=") else {
                return Err(Reply::Error(one_line(&format!("ERR Unknown lua shebang option: {}", text(opt)))));
            };
            if list.is_empty() {
                continue;
            }
            for flag in list.split(|&c| c == b',') {
                match flag {
                    b"no-writes" => sb.no_writes = true,
                    b"no-cluster" => sb.no_cluster = true,
                    b"allow-cross-slot-keys" => sb.cross_slot = true,
                    b"allow-oom" | b"allow-stale" => {}
                    other => return Err(Reply::Error(one_line(&format!("ERR Unexpected flag in script shebang: {}", text(other))))),
                }
            }
        }
        Ok(Some((sb, len)))
    }
}

/// Formats a script's runtime error as Redis 7.0 does: `<err> script: <sha>, on <source>:<line>.`
/// Why the emulator killed a script: it ran past its budget (loop iterations and calls) or past its
/// memory cap (bytes).
#[derive(Clone, Copy, Debug)]
enum Kill {
    Budget(u64),
    Memory(usize),
}

fn script_error(sha: &str, fail: fast::ScriptFailure, killed: Option<Kill>) -> Reply {
    if !fail.is_table && killed.is_none() {
        // The error handler itself failed: Redis prints Lua's message, `%.100s`.
        let msg = fail.text.as_deref().unwrap_or(b"execution failure");
        let msg = String::from_utf8_lossy(&helpers::cstr(msg)[..helpers::cstr(msg).len().min(100)]).into_owned();
        return Reply::Error(one_line(&format!("ERR Error running script {sha}, {msg}")));
    }
    let (err, source, line) = (fail.err, fail.source, fail.line);
    let msg = match killed {
        Some(Kill::Budget(budget)) => {
            format!("ERR Script killed by limitlab: it ran past its budget of {budget} loop iterations and calls (an endless loop?)")
        }
        Some(Kill::Memory(room)) => format!(
            "ERR Script killed by limitlab: it used more than {room} bytes of Lua memory in one run (the emulator's cap; Redis has none)"
        ),
        None => err.unwrap_or_else(|| "ERR unknown error".into()),
    };
    let mut out = msg;
    if let (Some(src), Some(line)) = (source, line) {
        out.push_str(&format!(" script: {sha}, on {src}:{line}."));
    }
    Reply::Error(one_line(&out))
}

/// Redis replaces CR and LF in error and status replies with spaces.
pub(crate) fn one_line(s: &str) -> String {
    s.replace(['\r', '\n'], " ")
}

/// Splits `EVAL body numkeys keys... args...` into keys and args, with Redis's errors.
fn split_numkeys<'a, 'b>(a: &'b [&'a [u8]]) -> Result<(&'b [&'a [u8]], &'b [&'a [u8]]), Reply> {
    let n = cmd::arg_i64(a[2])?;
    if n < 0 {
        return Err(Reply::err("ERR Number of keys can't be negative"));
    }
    if n as u64 > (a.len() - 3) as u64 {
        return Err(Reply::err("ERR Number of keys can't be greater than number of args"));
    }
    let n = n as usize;
    Ok((&a[3..3 + n], &a[3 + n..]))
}

/// SHA1 of a script body, lower-case hex.
pub fn sha1_hex(body: &[u8]) -> String {
    sha1_smol::Sha1::from(body).digest().to_string()
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
unsafe fn protect_tables(l: *mut mlua::ffi::lua_State) {
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

/// The C API our Lua build adds (vendor/lua-src): Redis 7.0's read-only tables, as in its deps/lua,
/// and two views of a table's layout.
pub(crate) mod ext {
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
        pub fn lua_setglobalstrings(l: *mut mlua::ffi::lua_State, name: *const std::ffi::c_void, n: c_int, items: *const PeekArg);
        /// The interned string `s`, never to be collected, as an opaque pointer for
        /// `lua_setglobalstrings`.
        pub fn lua_fixedstring(l: *mut mlua::ffi::lua_State, s: *const std::os::raw::c_char) -> *const std::ffi::c_void;
        /// The type of `t[n]` (raw) for the table at `idx`, without pushing it; `*num` receives it
        /// when it is a number.
        pub fn lua_rawgetitype(l: *mut mlua::ffi::lua_State, idx: c_int, n: c_int, num: *mut f64) -> c_int;
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
}

/// `redis.call`/`redis.pcall` after argument conversion: applies the scripting rules (unknown command,
/// arity, commands scripts may not call, writes in read-only scripts, cluster slots), then runs it.
/// A command with a direct form ([`cmd::Direct`]) writes its reply into `out` and None is returned;
/// any other reply is returned.
pub(crate) fn call_checked(core: &Rc<RefCell<Core>>, st: &RunState, argv: &[&[u8]], out: &mut dyn ReplySink) -> Option<Reply> {
    let Some(found) = st.commands.borrow_mut().find(argv[0]) else {
        return Some(not_emulated(argv));
    };
    let spec = found.spec;
    // Every command with subcommands has arity -2 (COMMAND: -1); with a subcommand given, the subcommand is what
    // Redis looks up and checks (`lookupCommand`). Out of line: rate limiters never get here.
    if (spec.arity == -2 || spec.arity == -1) && argv.len() >= 2 {
        if let Some(r) = subcommand_rules(spec, argv) {
            return Some(r);
        }
    }
    if !spec.arity_ok(argv.len()) {
        return Some(Reply::err(cmd::SCRIPT_ARITY));
    }
    if spec.has(flags::NOSCRIPT) || spec.has(flags::SCRIPTING) {
        return Some(Reply::err("ERR This Redis command is not allowed from script"));
    }
    if st.read_only.get() && spec.has(flags::WRITE | flags::MAY_REPLICATE) {
        return Some(Reply::err("ERR Write commands are not allowed from read-only scripts."));
    }
    let mut core = core.borrow_mut();
    if core.cluster {
        let keys = spec.keys.keys(&argv);
        match cluster::common_slot(keys.iter().copied()) {
            Err(()) => return Some(Reply::err("ERR Script attempted to access a non local key in a cluster node")),
            Ok(Some(slot)) => match st.slot.get() {
                None => st.slot.set(Some(slot)),
                Some(s) if s != slot && !st.cross_slot.get() => {
                    return Some(Reply::err("ERR Script attempted to access keys that do not hash to the same slot"))
                }
                _ => {}
            },
            Ok(None) => {}
        }
    }
    core.resp3 = st.resp.get() == 3;
    if core.resp3 && (spec.name == "memory" || spec.name == "info") {
        if let Some(r) = memory_verbatim(&mut core, spec, argv, out) {
            core.resp3 = false;
            return r;
        }
    }
    let reply = match found.direct {
        Some(direct) => {
            direct(&mut core, argv, out);
            None
        }
        None => Some(core.run(spec, argv)),
    };
    core.resp3 = false;
    reply
}

/// A script's call of a command the emulator does not implement: what Redis 7.0.15 says before
/// running it (unknown, wrong number of arguments, not allowed from scripts), from its own table;
/// a command Redis would run is unknown here.
#[cold]
#[inline(never)]
fn not_emulated(argv: &[&[u8]]) -> Reply {
    match cmd::command::redis_lookup(argv) {
        Err(_) => Reply::err("ERR Unknown Redis command called from script"),
        Ok(c) if !c.arity_ok(argv.len()) => Reply::err(cmd::SCRIPT_ARITY),
        Ok(c) if c.has_flag("noscript") => Reply::err("ERR This Redis command is not allowed from script"),
        Ok(_) => Reply::err("ERR Unknown Redis command called from script"),
    }
}

/// A subcommand of a command that has them (Redis 7.0's `<command>|<subcommand>` entries): its
/// arity (counting the command and the subcommand) and whether scripts may call it.
pub(crate) struct Sub {
    pub name: &'static str,
    pub arity: i32,
    pub noscript: bool,
}

/// The subcommands of a command that has them, from Redis 7.0.15's table
/// ([`cmd::command::redis_table`]).
pub(crate) fn subcommands(command: &str) -> Option<&'static [Sub]> {
    static SUBS: std::sync::OnceLock<rustc_hash::FxHashMap<&'static str, Vec<Sub>>> = std::sync::OnceLock::new();
    let all = SUBS.get_or_init(|| {
        cmd::command::redis_table()
            .values()
            .filter(|c| !c.subcommands.is_empty())
            .map(|c| {
                let subs = c
                    .subcommands
                    .iter()
                    .map(|s| Sub {
                        name: s.name.split_once('|').map_or(s.name.as_str(), |(_, n)| n),
                        arity: s.arity as i32,
                        noscript: s.has_flag("noscript"),
                    })
                    .collect();
                (c.name.as_str(), subs)
            })
            .collect()
    });
    all.get(command).map(Vec::as_slice)
}

/// SCRIPT HELP or FUNCTION HELP.
fn help_reply(command: &str) -> Reply {
    let lines = if command == "function" { functions::HELP } else { SCRIPT_HELP };
    Reply::Array(lines.iter().map(|l| Reply::Status((*l).into())).collect())
}

/// The script-side rules of a command's subcommand: unknown, wrong arity, not allowed from scripts;
/// SCRIPT HELP and FUNCTION HELP are answered here. None: the call goes on.
#[cold]
#[inline(never)]
fn subcommand_rules(spec: &CommandSpec, argv: &[&[u8]]) -> Option<Reply> {
    let subs = subcommands(spec.name)?;
    let Some(sub) = subs.iter().find(|s| argv[1].eq_ignore_ascii_case(s.name.as_bytes())) else {
        return Some(Reply::err("ERR Unknown Redis command called from script"));
    };
    if !cmd::arity_ok(sub.arity, argv.len()) {
        return Some(Reply::err(cmd::SCRIPT_ARITY));
    }
    if sub.noscript {
        return Some(Reply::err("ERR This Redis command is not allowed from script"));
    }
    if spec.has(flags::SCRIPTING) {
        // SCRIPT HELP and FUNCTION HELP, the only ones a script may call.
        return Some(help_reply(spec.name));
    }
    None
}

/// MEMORY DOCTOR and INFO under RESP3: their reply is a verbatim string, which the script sees as one. None
/// for other subcommands (the call goes on); else what `call_checked` returns (None once the
/// verbatim string is written to `out`).
#[cold]
#[inline(never)]
fn memory_verbatim(core: &mut Core, spec: &CommandSpec, argv: &[&[u8]], out: &mut dyn ReplySink) -> Option<Option<Reply>> {
    if spec.name == "memory" && !eq_ic(argv[1], "doctor") {
        return None;
    }
    match core.run(spec, argv) {
        Reply::Bulk(b) => {
            out.verbatim(b"txt", &b);
            Some(None)
        }
        other => Some(Some(other)),
    }
}

static SCRIPT_HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
];

/// The scripting commands run here, not in [`Core`]; these entries give them names, arity and flags.
pub static COMMANDS: &[CommandSpec] = &[
    scripting_spec("eval", -3),
    scripting_spec("evalsha", -3),
    scripting_spec("eval_ro", -3),
    scripting_spec("evalsha_ro", -3),
    scripting_spec("script", -2),
    scripting_spec("function", -2),
    scripting_spec("fcall", -3),
    scripting_spec("fcall_ro", -3),
];

const fn scripting_spec(name: &'static str, arity: i32) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags: flags::SCRIPTING | flags::NOSCRIPT | flags::MOVABLE_KEYS,
        keys: cmd::KeySpec::NONE,
        handler: |_, a| cmd::unknown_command(a),
    }
}

#[cfg(test)]
mod tests;
