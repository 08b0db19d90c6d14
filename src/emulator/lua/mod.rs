//! Lua 5.1 scripting as Redis 7.0 does it: one VM reused across calls, a read-only global table,
//! `KEYS`/`ARGV`, `redis.call`/`pcall` with Redis's conversion rules and error texts, the script cache,
//! Redis's deterministic `math.random`, expiry frozen while a script runs, and a budget of loop iterations
//! and calls that stops runaway scripts.
mod fast;
pub mod libs;
mod rand48;

use std::cell::{Cell, RefCell};
use crate::emulator::fxhash::FxHashMap;
use std::rc::Rc;

use mlua::{Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, Value, VmState};

use super::cluster;
use super::cmd::{self, eq_ic, flags, CommandSpec};
use super::core::Core;
use super::reply::{Reply, ReplySink};

/// Default budget of one script call, in loop iterations and Lua function calls (our Lua counts its
/// count hook on backward jumps and function entries, not per instruction: vendor/lua-src): about a
/// second of busy Lua on this machine class.
pub const DEFAULT_BUDGET: u64 = 50_000_000;

/// How often (in loop iterations and calls) the budget hook runs.
const HOOK_EVERY: u32 = 10_000;

/// The chunk name of limitlab's own Lua helpers; the error handler skips their frames.
const INTERNAL_CHUNK: &str = "=[limitlab]";

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
}

impl Vm {
    fn new(core: &Rc<RefCell<Core>>, state: &Rc<RunState>, rng: &Rc<rand48::Rand48>) -> mlua::Result<Vm> {
        // SAFETY: the debug library is loaded only to build the error handler, then removed from the
        // globals scripts can see; no script gets access to it.
        let lua = unsafe {
            Lua::unsafe_new_with(StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG, LuaOptions::default())
        };
        let g = lua.globals();
        libs::register_all(&lua, &g)?;
        rand48::register(&lua, &g, rng.clone())?;
        let ctx = Box::new(fast::CallCtx { core: core.clone(), state: state.clone(), numbuf: Default::default() });
        let redis = lua.create_table()?;
        register_redis_lib(&lua, &redis, &ctx, state)?;
        g.raw_set("redis", redis)?;
        for name in ["print", "dofile", "loadfile", "module", "require", "newproxy", "getfenv", "setfenv"] {
            g.raw_set(name, Value::Nil)?;
        }
        g.raw_set("package", Value::Nil)?;
        let setup: Function = lua.load(SETUP_LUA).set_name(INTERNAL_CHUNK).into_function()?;
        let cwrap = lua.create_function(|lua, f: Function| c_wrap(lua, f))?;
        let handler: Function = setup.call(cwrap)?;
        g.raw_set("debug", Value::Nil)?;
        // Redis 7.0 marks every table scripts can reach from the globals read-only (the string
        // metatable too), in its patched Lua; ours has the same patch (vendor/lua-src).
        // SAFETY: raw API on the main state; leaves the stack as it found it.
        unsafe {
            lua.exec_raw::<()>((), |l| {
                use mlua::ffi;
                ffi::lua_pushvalue(l, ffi::LUA_GLOBALSINDEX);
                protect_tables(l);
                ffi::lua_pushstring(l, c"".as_ptr());
                if ffi::lua_getmetatable(l, -1) != 0 {
                    protect_tables(l);
                    ffi::lua_settop(l, -2);
                }
                ffi::lua_settop(l, -3);
            })?;
        }
        let st = state.clone();
        lua.set_global_hook(HookTriggers::new().every_nth_instruction(HOOK_EVERY), move |_, _| {
            let left = st.budget_left.get() - HOOK_EVERY as i64;
            st.budget_left.set(left);
            if left <= 0 || st.killed.get() {
                st.killed.set(true);
                return Err(mlua::Error::RuntimeError("Script killed".into()));
            }
            Ok(VmState::Continue)
        })?;
        // A lazier collector than Lua's default (pause 200): scripts allocate many short-lived strings
        // and tables, and each cycle re-marks the ~50 KB the libraries keep alive. Not much lazier:
        // the heap between cycles is then about 4x that, ~200 KB, which stays in the CPU caches
        // even when a million-key keyspace competes for them (pause 1000 cost 12% of wall time on
        // simulations/zipf_1m.toml for 3% fewer instructions at 100 keys). It changes no
        // script-visible behaviour but collectgarbage('count').
        // SAFETY: plain lua_gc calls on the main state.
        unsafe {
            lua.exec_raw::<()>((), |l| {
                mlua::ffi::lua_gc(l, mlua::ffi::LUA_GCSETPAUSE, 400);
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
        Ok(Vm { lua, ctx, handler, state, handler_ref, names })
    }
}

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
            commands: RefCell::default(),
        });
        let rng = Rc::new(rand48::Rand48::default());
        let vm = Vm::new(&core, &state, &rng)?;
        Ok(Scripting { core, vm, scripts: FxHashMap::default(), state, rng, budget: DEFAULT_BUDGET })
    }

    /// SCRIPT FLUSH: forgets every script and, as Redis 7.0 does, starts a fresh VM (so library
    /// settings such as cjson's are reset too).
    pub fn flush(&mut self) -> mlua::Result<()> {
        self.scripts.clear();
        self.vm = Vm::new(&self.core, &self.state, &self.rng)?;
        Ok(())
    }

    /// Sets the budget of one script call, in loop iterations and Lua function calls.
    pub fn set_budget(&mut self, b: u64) {
        self.budget = b;
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
                Reply::Error(format!("ERR wrong number of arguments for 'script|{}' command", name.to_ascii_lowercase()))
            } else {
                // `%.128s` of a C string, CR/LF as spaces, as Redis formats errors.
                let end = sub.iter().take(128).position(|&c| c == 0).unwrap_or(sub.len().min(128));
                let name: String = String::from_utf8_lossy(&sub[..end])
                    .chars()
                    .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
                    .collect();
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
        self.vm
            .lua
            .load(body)
            .set_name("@user_script")
            .set_mode(mlua::chunk::ChunkMode::Text)
            .into_function()
            .map_err(|e| {
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
        }
        self.run(sha, fref, keys, argv, read_only)
    }

    fn run(&self, sha: &str, fref: std::os::raw::c_int, keys: &[&[u8]], argv: &[&[u8]], read_only: bool) -> Reply {
        let st = &self.state;
        st.read_only.set(read_only);
        st.resp.set(2);
        st.killed.set(false);
        st.budget_left.set(self.budget.min(i64::MAX as u64) as i64);
        st.slot.set(if self.core.borrow().cluster {
            cluster::common_slot(keys.iter().copied()).ok().flatten()
        } else {
            None
        });
        // Keys cannot expire while the script runs: judge expiry at the script's start.
        {
            let mut core = self.core.borrow_mut();
            let now = core.now_ms();
            core.frozen_ms = Some(now);
        }
        let l = self.vm.state;
        // SAFETY: runs on the main state between mlua calls and leaves its stack as it found it. As in
        // Redis (luaCallFunction), the script runs under lua_pcall with the error handler as the message
        // handler: a failure leaves the handler's {err, source, line} table (or, should the handler
        // itself fail, Lua's message) on the stack.
        let outcome = unsafe {
            use mlua::ffi;
            let top = ffi::lua_gettop(l);
            ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, self.vm.handler_ref);
            ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, fref);
            fast::set_string_array(l, self.vm.names[0], keys);
            fast::set_string_array(l, self.vm.names[1], argv);
            let r = if ffi::lua_pcall(l, 0, 1, top + 1) == 0 {
                Ok(fast::to_reply(l, -1, st.resp.get(), 0))
            } else {
                Err(fast::read_failure(l, -1))
            };
            ffi::lua_settop(l, top);
            r
        };
        self.core.borrow_mut().frozen_ms = None;
        let killed = st.killed.replace(false);
        outcome.unwrap_or_else(|fail| script_error(sha, fail, killed, self.budget))
    }
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
}

impl Shebang {
    /// Parses a shebang line: `Ok(None)` without one, else its flags and the line's length (the
    /// line is left out of the compiled code but its newline stays, so line numbers still count it).
    fn parse(body: &[u8]) -> Result<Option<(Shebang, usize)>, Reply> {
        if !body.starts_with(b"#!") {
            return Ok(None);
        }
        let Some(len) = body.iter().position(|&c| c == b'\n') else {
            return Err(Reply::err("ERR Invalid script shebang"));
        };
        let line = String::from_utf8_lossy(&body[..len]);
        let mut parts = line.split(' ').filter(|p| !p.is_empty());
        let engine = parts.next().unwrap_or("");
        if engine != "#!lua" {
            return Err(Reply::Error(format!("ERR Unexpected engine in script shebang: {engine}")));
        }
        let mut sb = Shebang::default();
        for opt in parts {
            let Some(list) = opt.strip_prefix("flags=") else {
                return Err(Reply::Error(format!("ERR Unknown lua shebang option: {opt}")));
            };
            for flag in list.split(',').filter(|f| !f.is_empty()) {
                match flag {
                    "no-writes" => sb.no_writes = true,
                    "no-cluster" => sb.no_cluster = true,
                    "allow-oom" | "allow-stale" | "allow-cross-slot-keys" => {}
                    other => return Err(Reply::Error(format!("ERR Unexpected flag in script shebang: {other}"))),
                }
            }
        }
        Ok(Some((sb, len)))
    }
}

/// Formats a script's runtime error as Redis 7.0 does: `<err> script: <sha>, on <source>:<line>.`
fn script_error(sha: &str, fail: fast::ScriptFailure, killed: bool, budget: u64) -> Reply {
    if !fail.is_table {
        return Reply::Error(format!("ERR Error running script {sha}, execution failure"));
    }
    let (err, source, line) = (fail.err, fail.source, fail.line);
    let msg = if killed {
        format!("ERR Script killed by limitlab: it ran past its budget of {budget} loop iterations and calls (an endless loop?)")
    } else {
        match err {
            Some(e) => e,
            None => "ERR unknown error".into(),
        }
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

/// Installs `redis.*` (the Rust halves; the Lua halves are in [`SETUP_LUA`]).
fn register_redis_lib(lua: &Lua, redis: &Table, ctx: &fast::CallCtx, st: &Rc<RunState>) -> mlua::Result<()> {
    // redis.call and redis.pcall are C closures over the call context (see `fast`).
    let ctx_ptr = ctx as *const fast::CallCtx as *mut std::ffi::c_void;
    for (name, f) in [("call", fast::redis_call_c as mlua::ffi::lua_CFunction), ("pcall", fast::redis_pcall_c)] {
        // SAFETY: the context outlives the VM (both are owned by `Vm`, the context dropped last).
        let func: Function = unsafe {
            lua.exec_raw((), |state| {
                mlua::ffi::lua_pushlightuserdata(state, ctx_ptr);
                mlua::ffi::lua_pushcclosure(state, f, 1);
            })?
        };
        redis.raw_set(name, func)?;
    }
    redis.raw_set(
        "__known",
        lua.create_function(|_, name: mlua::LuaString| Ok(cmd::lookup(&name.as_bytes()).is_some()))?,
    )?;
    let s = st.clone();
    redis.raw_set("__killed", lua.create_function(move |_, ()| Ok(s.killed.get()))?)?;
    redis.raw_set(
        "sha1hex",
        lua.create_function(|lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(mlua::Error::RuntimeError("wrong number of arguments".into()));
            }
            let bytes: Vec<u8> = match &args[0] {
                Value::String(s) => s.as_bytes().to_vec(),
                Value::Number(n) => crate::emulator::reply::fmt_g(*n, 14).into_bytes(),
                Value::Integer(i) => crate::emulator::reply::fmt_g(*i as f64, 14).into_bytes(),
                _ => Vec::new(),
            };
            lua.create_string(sha1_hex(&bytes))
        })?,
    )?;
    let s = st.clone();
    redis.raw_set(
        "setresp",
        lua.create_function(move |_, args: MultiValue| {
            if args.len() != 1 {
                return Err(mlua::Error::RuntimeError("redis.setresp() requires one argument.".into()));
            }
            let v = match &args[0] {
                Value::Number(n) => *n as i64,
                Value::Integer(i) => *i,
                _ => 0,
            };
            if v != 2 && v != 3 {
                return Err(mlua::Error::RuntimeError("RESP version must be 2 or 3.".into()));
            }
            s.resp.set(v as u8);
            Ok(())
        })?,
    )?;
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

/// Calls its upvalue (a Lua function) with its arguments. Helpers written in Lua are wrapped in it so
/// that they run under a C frame, as Redis's C helpers do: a script's `return redis.log(...)` then keeps
/// its frame (no tail call), and errors raised at level 2 carry no position, like `luaL_error` from C.
unsafe extern "C-unwind" fn trampoline_c(l: *mut mlua::ffi::lua_State) -> std::os::raw::c_int {
    use mlua::ffi;
    let n = ffi::lua_gettop(l);
    ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
    ffi::lua_insert(l, 1);
    ffi::lua_call(l, n, ffi::LUA_MULTRET);
    ffi::lua_gettop(l)
}

/// Wraps a Lua function in [`trampoline_c`].
fn c_wrap(lua: &Lua, f: Function) -> mlua::Result<Function> {
    // SAFETY: pushes one C closure over the function exec_raw placed on the stack.
    unsafe { lua.exec_raw(f, |state| mlua::ffi::lua_pushcclosure(state, trampoline_c, 1)) }
}

/// `redis.call`/`redis.pcall` after argument conversion: applies the scripting rules (unknown command,
/// arity, commands scripts may not call, writes in read-only scripts, cluster slots), then runs it.
/// A command with a direct form ([`cmd::Direct`]) writes its reply into `out` and None is returned;
/// any other reply is returned.
pub(crate) fn call_checked(core: &Rc<RefCell<Core>>, st: &RunState, argv: &[&[u8]], out: &mut dyn ReplySink) -> Option<Reply> {
    let Some(found) = st.commands.borrow_mut().find(argv[0]) else {
        return Some(Reply::err("ERR Unknown Redis command called from script"));
    };
    let spec = found.spec;
    if !spec.arity_ok(argv.len()) {
        return Some(Reply::err("ERR Wrong number of args calling Redis command from script"));
    }
    if spec.has(flags::NOSCRIPT) || spec.has(flags::SCRIPTING) {
        return Some(Reply::err("ERR This Redis command is not allowed from script"));
    }
    if st.read_only.get() && spec.has(flags::WRITE) {
        return Some(Reply::err("ERR Write commands are not allowed from read-only scripts."));
    }
    let mut core = core.borrow_mut();
    if core.cluster {
        let keys = spec.keys.keys(&argv);
        match cluster::common_slot(keys.iter().copied()) {
            Err(()) => return Some(Reply::err("ERR Script attempted to access a non local key in a cluster node")),
            Ok(Some(slot)) => match st.slot.get() {
                None => st.slot.set(Some(slot)),
                Some(s) if s != slot => {
                    return Some(Reply::err("ERR Script attempted to access keys that do not hash to the same slot"))
                }
                _ => {}
            },
            Ok(None) => {}
        }
    }
    core.resp3 = st.resp.get() == 3;
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

/// The Lua half of the sandbox, run once at start-up with the debug library still present. It returns
/// Redis's error handler, the message handler every script runs under.
const SETUP_LUA: &str = r#"
local cwrap = ...
local G = _G
local getinfo = debug.getinfo
local type, tostring, rawset, error, select, xpcall = type, tostring, rawset, error, select, xpcall
local lua_pcall, setmetatable = pcall, setmetatable
local INTERNAL = '=[limitlab]'
local redis = G.redis

-- Errors raised by Rust callbacks arrive as userdata; scripts must see plain strings, as from C.
local function plain(e)
  if type(e) == 'userdata' then
    local s = tostring(e)
    s = s:gsub('^runtime error: ', '')
    local cut = s:find('\nstack traceback:', 1, true)
    if cut then s = s:sub(1, cut - 1) end
    return s
  end
  return e
end

-- Redis 7.0's __redis__err__handler: errors become {err=..., source=..., line=...}, reported at the line
-- of the script that raised them (skipping C frames and limitlab's own helpers).
local function handler(err)
  local lvl = 2
  local i = getinfo(lvl, 'Sl')
  while i and (i.what == 'C' or i.source == INTERNAL) do
    lvl = lvl + 1
    i = getinfo(lvl, 'Sl')
  end
  err = plain(err)
  if type(err) ~= 'table' then
    err = {err = 'ERR ' .. tostring(err)}
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end

-- redis.call itself is a C function (see `redis_call_c`), so a script's `return redis.call(...)` keeps
-- its frame, and errors are reported at the script's line as in Redis.

-- luaPushErrorBuff: "-CODE msg" keeps its code; a message without a space gets ERR.
local function error_table(s)
  local code, msg
  if s:sub(1, 1) == '-' then
    local sp = s:find(' ', 1, true)
    if sp then code, msg = s:sub(2, sp - 1), s:sub(sp + 1) else code, msg = 'ERR', s:sub(2) end
  else
    code, msg = 'ERR', s
  end
  msg = msg:gsub('^[\r\n]+', ''):gsub('[\r\n]+$', '')
  return {err = code .. ' ' .. msg}
end
-- With bad arguments these return (not raise) an error table, as Redis's C versions do.
redis.error_reply = function(...)
  if select('#', ...) ~= 1 or type((...)) ~= 'string' then return error_table('wrong number or type of arguments') end
  local s = ...
  if s:sub(1, 1) ~= '-' then s = '-' .. s end
  return error_table(s)
end
redis.status_reply = function(...)
  if select('#', ...) ~= 1 or type((...)) ~= 'string' then return error_table('wrong number or type of arguments') end
  return {ok = (...)}
end
redis.log = cwrap(function(...)
  local n = select('#', ...)
  if n < 2 then error('redis.log() requires two arguments or more.', 2) end
  if type((...)) ~= 'number' then error('First argument must be a number (log level).', 2) end
  local level = ...
  if level < 0 or level > 3 then error('Invalid debug level.', 2) end
end)
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
redis.set_repl = cwrap(function(...)
  -- (Redis 7.0's own text says "two" although it wants one.)
  if select('#', ...) ~= 1 then error('redis.set_repl() requires two arguments.', 2) end
  local f = tonumber((...)) or 0
  if f < 0 or f > 3 or f % 1 ~= 0 then error('Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.', 2) end
end)
redis.replicate_commands = function() return true end

-- Redis's math.random over its lrand48 stream. The draw comes first, as in C, so a failing call still
-- advances the stream; argument errors carry the script's position, like luaL_argerror.
local rand_next, rand_seed, floor, math_lib = math.__next, math.__seed, math.floor, math
rawset(math_lib, '__next', nil)
rawset(math_lib, '__seed', nil)
local function checkint(fname, n, count, v)
  local x = tonumber(v)
  if x == nil then
    local got = n > count and 'no value' or type(v)
    error(("bad argument #%d to '%s' (number expected, got %s)"):format(n, fname, got), 3)
  end
  if x >= 0 then return floor(x) else return -floor(-x) end
end
math_lib.random = cwrap(function(...)
  local r = rand_next()
  local n = select('#', ...)
  if n == 0 then return r end
  if n == 1 then
    local u = checkint('random', 1, n, (...))
    if u < 1 then error("bad argument #1 to 'random' (interval is empty)", 3) end
    return floor(r * u) + 1
  end
  if n == 2 then
    local a, b = ...
    local l = checkint('random', 1, n, a)
    local u = checkint('random', 2, n, b)
    if l > u then error("bad argument #2 to 'random' (interval is empty)", 3) end
    return floor(r * (u - l + 1)) + l
  end
  error('wrong number of arguments', 3)
end)
math_lib.randomseed = cwrap(function(...)
  rand_seed(checkint('randomseed', 1, select('#', ...), (...)))
end)
local known = redis.__known
rawset(redis, '__known', nil)
-- The emulator has one user allowed everything: only unknown commands are refused.
redis.acl_check_cmd = cwrap(function(...)
  if select('#', ...) < 1 then error('Please specify at least one argument for this redis lib call', 2) end
  if not known((...)) then error('Invalid command passed to redis.acl_check_cmd()', 2) end
  return true
end)
redis.breakpoint = function() return false end
redis.debug = function() end
redis.REDIS_VERSION = '7.0.15'
redis.REDIS_VERSION_NUM = 0x0007000f

-- Redis 7.0's pcall: an error table with an `err` string is returned as that string.
local killed = redis.__killed
rawset(redis, '__killed', nil)
local function fix_pcall(ok, ...)
  if ok then return ok, ... end
  if killed() then error((...), 0) end
  local e = plain((...))
  if type(e) == 'table' then
    local s = e.err
    if type(s) == 'string' or type(s) == 'number' then e = s end
  end
  return false, e
end
G.pcall = function(f, ...)
  return fix_pcall(lua_pcall(f, ...))
end
-- A killed script must not survive by catching the kill in xpcall either.
G.xpcall = function(f, h)
  return xpcall(f, function(e)
    if killed() then return e end
    return h(e)
  end)
end
local function recheck(ok, ...)
  if not ok and killed() then error((...), 0) end
  return ok, ...
end
local xpcall_user = G.xpcall
G.xpcall = function(f, h) return recheck(xpcall_user(f, h)) end
local co_resume = coroutine.resume
coroutine.resume = function(co, ...) return recheck(co_resume(co, ...)) end

-- Reads of missing globals fail (the globals and everything reachable from them are made read-only
-- after this chunk has run, by the Rust side).
setmetatable(G, {__index = function(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end})
G.__redis__err__handler = handler

return handler
"#;

/// The scripting commands run here, not in [`Core`]; these entries give them names, arity and flags.
pub static COMMANDS: &[CommandSpec] = &[
    scripting_spec("eval", -3),
    scripting_spec("evalsha", -3),
    scripting_spec("eval_ro", -3),
    scripting_spec("evalsha_ro", -3),
    scripting_spec("script", -2),
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
