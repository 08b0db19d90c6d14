//! Lua 5.1 scripting as Redis 7.0 does it: one VM reused across calls, a read-only global table,
//! `KEYS`/`ARGV`, `redis.call`/`pcall` with Redis's conversion rules and error texts, the script cache,
//! Redis's deterministic `math.random`, expiry frozen while a script runs, and a budget of loop iterations
//! and calls that stops runaway scripts.
// For the whole Lua layer (this module and every module under it): each unsafe block says why it
// is sound, and each unsafe function what its caller must guarantee.
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]
mod budget;
mod busy;
mod call;
mod context;
mod cvt;
pub(crate) mod ext;
mod fast;
pub(crate) mod functions;
mod helpers;
pub mod libs;
mod rand48;
mod raw;
mod refusals;
mod run;
mod stack;
mod vm;

use rustc_hash::FxHashMap;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use mlua::Function;

use crate::cluster;
use crate::cmd::{self, eq_ic, CommandSpec};
use crate::core::Core;
use crate::reply::Reply;
pub use budget::{default_budget, set_default_budget, DEFAULT_BUDGET};
pub use busy::{BusyAction, BusyHandler, BusyScript};
use call::SCRIPT_HELP;
use context::RunState;
use run::run_function;
use stack::{cstr, one_line};
use vm::{registry_ref, Vm};

/// Default memory cap of one script run: the Lua memory it may add to what the VM held when it
/// started. Redis has no such cap (a runaway script there grows until the machine runs out); the
/// emulator stops it with an error instead, and stays usable.
pub const DEFAULT_MEMORY: usize = 512 << 20;

const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

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
            busy: Default::default(),
            acl_open: Cell::new(None),
            oom_at_start: Cell::new(false),
            allow_oom: Cell::new(false),
            lines: RefCell::new(None),
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
        self.core.borrow_mut().scripting_counts.0 = 0;
        self.vm = Vm::new(&self.core, &self.state, &self.rng)?;
        Ok(())
    }

    /// Sets the memory cap of one script call: the bytes of Lua memory it may add (0: no cap).
    pub fn set_memory_cap(&mut self, bytes: usize) {
        self.state.memory_room.set(bytes);
    }

    /// Turns line tracing on or off: while on, every script and function run records the last
    /// line of its own code that ran (the `return` or `error` that made its reply), read with
    /// [`Scripting::last_line`]. Off by default: the line hook costs every line a call.
    pub fn set_line_trace(&mut self, on: bool) {
        *self.state.lines.borrow_mut() = on.then(|| (String::new(), 0));
        self.vm.set_line_hook(on);
        self.functions.set_line_hook(on);
    }

    /// With line tracing on, the last run's name (a script's SHA, a function's name) and the last
    /// line of its code that ran; `None` when tracing is off or no line ran.
    pub fn last_line(&self) -> Option<(String, u32)> {
        match &*self.state.lines.borrow() {
            Some((name, line)) if *line > 0 => Some((name.clone(), *line as u32)),
            _ => None,
        }
    }

    /// In cluster mode, the slot the last script run was bound to: its declared keys' slot, or,
    /// with none declared, the slot of the first key it touched (`None`: it touched no key).
    pub fn last_slot(&self) -> Option<u16> {
        self.state.slot.get()
    }

    /// Installs (or removes) the handler a script that runs past `busy-reply-threshold` calls (see
    /// the `busy` module).
    pub fn set_busy_handler(&mut self, h: Option<BusyHandler>) {
        *self.state.busy.handler.borrow_mut() = h;
    }

    /// A flag that, once set (from a signal handler, say), kills the running script at its next
    /// count-hook tick, whether or not it has passed `busy-reply-threshold`. Only read while a busy
    /// handler is installed.
    pub fn set_stop_flag(&mut self, f: Option<&'static std::sync::atomic::AtomicBool>) {
        self.state.busy.stop.set(f);
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
                    if let Err(cluster::CrossSlot) = cluster::common_slot(keys.iter().copied()) {
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
            "function" => {
                let r = self.functions.command(a);
                let (fns, libs) = self.functions.counts();
                let mut core = self.core.borrow_mut();
                core.scripting_counts.1 = fns;
                core.scripting_counts.2 = libs;
                if core.repl.active {
                    crate::propagate::record_function(&mut core, a, &r);
                }
                r
            }
            "fcall" | "fcall_ro" => self.functions.fcall(&self.core, a, spec.name == "fcall_ro", self.budget),
            _ => cmd::unknown_command(a),
        }
    }

    /// The libraries as an RDB file holds them: FUNCTION DUMP's payload without its footer.
    pub(crate) fn functions_rdb(&self) -> Vec<u8> {
        let mut d = self.functions.dump();
        d.truncate(d.len().saturating_sub(10));
        d
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
            self.core.borrow_mut().scripting_counts.0 = self.scripts.len();
        }
        Ok(sha)
    }

    fn compile(&self, body: &[u8]) -> Result<Function, Reply> {
        // No mode check: our Lua parses every chunk as source (crates/lua), so a body that
        // looks like bytecode fails to parse, with Redis's words.
        self.vm.lua.load(body).set_name("@user_script").into_function().map_err(|e| {
            let msg = match &e {
                mlua::Error::SyntaxError { message, .. } => message.clone(),
                other => other.to_string(),
            };
            Reply::Error(format!("ERR Error compiling script (new function): {}", one_line(&msg)))
        })
    }

    /// Whether a call of EVAL, EVALSHA or FCALL (not their `_RO` forms) may write, as CLIENT PAUSE
    /// WRITE judges it: a script without a shebang may; one with flags may unless `no-writes`.
    pub fn may_write(&self, a: &[&[u8]]) -> bool {
        let name = a[0].to_ascii_lowercase();
        match name.as_slice() {
            b"eval" if a.len() > 1 => match Shebang::parse(a[1]) {
                Ok(Some((sb, _))) => !sb.no_writes,
                _ => true,
            },
            b"evalsha" if a.len() > 1 => {
                let sha = String::from_utf8_lossy(a[1]).to_ascii_lowercase();
                self.scripts.get(&sha).and_then(|c| c.shebang).is_none_or(|sb| !sb.no_writes)
            }
            b"fcall" if a.len() > 1 => self.functions.may_write(a[1]),
            _ => false,
        }
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
        self.state.allow_oom.set(shebang.is_some_and(|sb| sb.allow_oom));
        if let Some(sb) = shebang {
            // A script that declared flags may write unless it said otherwise: denied when out of
            // memory, before anything else, unless it allows that.
            if !sb.no_writes && !sb.allow_oom && refusals::out_of_memory(&mut self.core.borrow_mut()) {
                return Reply::err(refusals::OOM);
            }
            if !sb.no_writes && self.core.borrow().settings.min_replicas() {
                return Reply::err(refusals::NOREPLICAS);
            }
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
    allow_oom: bool,
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
        let Some(len) = cstr(body).iter().position(|&c| c == b'\n') else {
            return Err(Reply::err("ERR Invalid script shebang"));
        };
        let parts = match functions::split_args(&body[..len]) {
            Some(p) if !p.is_empty() => p,
            _ => return Err(Reply::err("ERR Invalid engine in script shebang")),
        };
        let text = |b: &[u8]| String::from_utf8_lossy(cstr(b)).into_owned();
        if parts[0] != b"#!lua" {
            return Err(Reply::Error(one_line(&format!(
                "ERR Unexpected engine in script shebang: {}",
                text(&parts[0])
            ))));
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
                    b"allow-oom" => sb.allow_oom = true,
                    b"allow-stale" => {}
                    other => {
                        return Err(Reply::Error(one_line(&format!(
                            "ERR Unexpected flag in script shebang: {}",
                            text(other)
                        ))))
                    }
                }
            }
        }
        Ok(Some((sb, len)))
    }
}

/// A call's keys and its other arguments.
type KeysAndArgs<'b, 'a> = (&'b [&'a [u8]], &'b [&'a [u8]]);

/// Splits `EVAL body numkeys keys... args...` into keys and args, with Redis's errors.
fn split_numkeys<'a, 'b>(a: &'b [&'a [u8]]) -> Result<KeysAndArgs<'b, 'a>, Reply> {
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

#[cfg(test)]
mod tests;
