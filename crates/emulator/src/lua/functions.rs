//! Redis 7.0 functions: FUNCTION LOAD/DELETE/FLUSH/LIST/DUMP/RESTORE/STATS/KILL/HELP, FCALL and
//! FCALL_RO, as `functions.c` and `function_lua.c` do them.
//!
//! Libraries run in a Lua VM of their own (Redis's functions engine has its own `lua_State`), built
//! like the scripts' one (same libraries, same `redis.*`, same error handler) but with Redis's two
//! faces of the globals: the functions' global table is an empty read-only table whose `__index` is
//! the real (protected) globals at run time, and, while FUNCTION LOAD runs a library's code, a
//! "library API" that holds nothing but `redis.register_function`, `redis.log`, the log levels and
//! the version: `redis.call` at load time is a missing global, exactly as in Redis.
//!
//! FUNCTION DUMP writes Redis's payload: per library an `RDB_OPCODE_FUNCTION2` byte and the code as
//! an RDB string (LZF-compressed past 20 bytes, with Redis's LZF), then RDB version 10 and a CRC-64
//! (Jones). Libraries are listed and dumped in the order they were loaded; Redis lists them in the
//! order of a dict seeded at random on every start, so with more than one library its order differs
//! from run to run (and from ours), and so do the bytes of a dump of several libraries.
mod library;
mod lua_engine;
pub(crate) mod rdb;

use std::cell::RefCell;
use std::os::raw::c_int;
use std::rc::Rc;

use indexmap::IndexMap;
use mlua::ffi;

use super::context::RunState;
use super::stack;
use super::vm::Vm;
use crate::cluster;
use crate::cmd::eq_ic;
use crate::core::Core;
use crate::keyspace::glob_match;
use crate::reply::Reply;
use library::{valid_name, Func, LoadCtx, ALLOW_CROSS_SLOT, ALLOW_OOM, BAD_NAME, FLAG_NAMES, NO_CLUSTER, NO_WRITES};
use lua_engine::{extract_error, install_globals, set_globals_index, string_or_empty};
use rdb::{
    crc64, rdb_load_len, rdb_load_string, rdb_save_string, RDB_OPCODE_FUNCTION2, RDB_OPCODE_FUNCTION_PRE_GA,
    RDB_VERSION,
};

/// A library: its name, its whole code (shebang included) and its functions, in registration order.
struct Library {
    code: Vec<u8>,
    functions: Vec<Func>,
}

/// The functions engine: its VM and the loaded libraries.
pub(crate) struct Functions {
    vm: Vm,
    /// Owned here, read by `register_function` through a light userdata upvalue.
    load: Box<LoadCtx>,
    libraries: IndexMap<Vec<u8>, Library>,
    /// The budget of a library's load-time code (as of a script call; see [`super::budget::DEFAULT_BUDGET`]).
    pub(crate) budget: u64,
}

/// A library's name and code from its `#!lua name=...` first line (`functionExtractLibMetaData`).
struct Meta {
    engine: Vec<u8>,
    name: Vec<u8>,
    /// The code from the shebang line's newline on (so line numbers count the shebang line).
    body_at: usize,
}

fn meta(code: &[u8]) -> Result<Meta, String> {
    if !code.starts_with(b"#!") {
        return Err("Missing library metadata".into());
    }
    // strchr: the line ends at the first newline before any NUL.
    let Some(nl) = stack::cstr(code).iter().position(|&c| c == b'\n') else {
        return Err("Invalid library metadata".into());
    };
    let Some(parts) = split_args(&code[..nl]) else {
        return Err("Invalid library metadata".into());
    };
    if parts.is_empty() {
        return Err("Invalid library metadata".into());
    }
    let engine = parts[0].get(2..).unwrap_or_default().to_vec();
    let mut name: Option<Vec<u8>> = None;
    for part in &parts[1..] {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err("Invalid metadata value, name argument was given multiple times".into());
            }
            name = Some(part[5..].to_vec());
            continue;
        }
        return Err(format!("Invalid metadata value given: {}", String::from_utf8_lossy(stack::cstr(part))));
    }
    let Some(name) = name else { return Err("Library name was not given".into()) };
    Ok(Meta { engine, name, body_at: nl })
}

/// Redis's `sdssplitargs`: words split on whitespace, with double quotes (and their escapes) and
/// single quotes; None for unbalanced quotes or a closing quote not followed by a space.
pub(crate) fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && is_space(line[i]) {
            i += 1;
        }
        if i >= n {
            return Some(out);
        }
        let (mut inq, mut insq, mut done) = (false, false, false);
        let mut cur = Vec::new();
        while !done {
            let c = line.get(i).copied();
            if inq {
                match c {
                    None => return None,
                    Some(b'\\')
                        if i + 3 < n
                            && line[i + 1] == b'x'
                            && line[i + 2].is_ascii_hexdigit()
                            && line[i + 3].is_ascii_hexdigit() =>
                    {
                        let h = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
                        cur.push(h(line[i + 2]) * 16 + h(line[i + 3]));
                        i += 3;
                    }
                    Some(b'\\') if i + 1 < n => {
                        i += 1;
                        cur.push(match line[i] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 8,
                            b'a' => 7,
                            other => other,
                        });
                    }
                    Some(b'"') => {
                        if i + 1 < n && !is_space(line[i + 1]) {
                            return None;
                        }
                        done = true;
                    }
                    Some(other) => cur.push(other),
                }
            } else if insq {
                match c {
                    None => return None,
                    Some(b'\\') if i + 1 < n && line[i + 1] == b'\'' => {
                        i += 1;
                        cur.push(b'\'');
                    }
                    Some(b'\'') => {
                        if i + 1 < n && !is_space(line[i + 1]) {
                            return None;
                        }
                        done = true;
                    }
                    Some(other) => cur.push(other),
                }
            } else {
                match c {
                    None | Some(b' ' | b'\n' | b'\r' | b'\t' | 0) => done = true,
                    Some(b'"') => inq = true,
                    Some(b'\'') => insq = true,
                    Some(other) => cur.push(other),
                }
            }
            if i < n {
                i += 1;
            }
        }
        out.push(cur);
    }
}

/// C's `isspace`.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

impl Functions {
    pub(crate) fn new(
        core: &Rc<RefCell<Core>>,
        state: &Rc<RunState>,
        rng: &Rc<super::rand48::Rand48>,
    ) -> mlua::Result<Functions> {
        let load = Box::<LoadCtx>::default();
        // SAFETY: install_globals is written to run as the VM is built, under mlua's protected call,
        // with the VM's call context and a LoadCtx (see its contract). `load` is kept in the
        // Functions beside the VM and declared after it, so it is dropped after the VM's Lua state.
        let vm = unsafe {
            Vm::new_functions(core, state, rng, install_globals, &*load as *const LoadCtx as *mut std::ffi::c_void)?
        };
        Ok(Functions { vm, load, libraries: IndexMap::new(), budget: super::budget::default_budget() })
    }

    /// Line tracing on the functions' VM ([`super::Scripting::set_line_trace`]).
    pub(super) fn set_line_hook(&self, on: bool) {
        self.vm.set_line_hook(on);
    }

    /// The library holding the function `name` (case-insensitive, as Redis's functions dict), and
    /// the function's index in it.
    fn find(&self, name: &[u8]) -> Option<(&Library, usize)> {
        self.libraries
            .values()
            .find_map(|lib| lib.functions.iter().position(|f| f.name.eq_ignore_ascii_case(name)).map(|i| (lib, i)))
    }

    /// The functions and libraries loaded.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.libraries.values().map(|l| l.functions.len()).sum(), self.libraries.len())
    }

    /// FUNCTION ... from a client.
    pub(crate) fn command(&mut self, a: &[&[u8]]) -> Reply {
        let sub = a[1];
        let Some(s) =
            crate::cmd::command::subcommands("function").and_then(|subs| subs.iter().find(|s| eq_ic(sub, s.name)))
        else {
            let end = sub.iter().take(128).position(|&c| c == 0).unwrap_or(sub.len().min(128));
            let name = stack::one_line(&String::from_utf8_lossy(&sub[..end]));
            return Reply::Error(format!("ERR unknown subcommand '{name}'. Try FUNCTION HELP."));
        };
        if !crate::cmd::arity_ok(s.arity, a.len()) {
            return crate::cmd::arity_error(&format!("function|{}", s.name));
        }
        let syntax = || {
            let end = sub.iter().take(128).position(|&c| c == 0).unwrap_or(sub.len().min(128));
            Reply::Error(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
                stack::one_line(&String::from_utf8_lossy(&sub[..end]))
            ))
        };
        if (s.name == "load" || s.name == "restore")
            && super::refusals::out_of_memory(&mut self.vm.ctx.core.borrow_mut())
        {
            // Both may grow memory (`denyoom`).
            return Reply::err(super::refusals::OOM);
        }
        match s.name {
            "load" => {
                let mut replace = false;
                let mut at = 2;
                while at < a.len() - 1 {
                    if eq_ic(a[at], "replace") {
                        replace = true;
                        at += 1;
                        continue;
                    }
                    return Reply::Error(stack::one_line(&format!(
                        "ERR Unknown option given: {}",
                        String::from_utf8_lossy(stack::cstr(a[at]))
                    )));
                }
                match self.load(a[at], replace) {
                    Ok(name) => Reply::Bulk(name),
                    Err(e) => Reply::Error(err_text(&e)),
                }
            }
            "delete" => match self.libraries.shift_remove(a[2]) {
                Some(lib) => {
                    self.free(lib);
                    Reply::ok()
                }
                None => Reply::err("ERR Library not found"),
            },
            "flush" => {
                if a.len() > 3 {
                    return syntax();
                }
                if a.len() == 3 && !eq_ic(a[2], "sync") && !eq_ic(a[2], "async") {
                    return Reply::err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
                }
                self.flush();
                Reply::ok()
            }
            "list" => self.list(a),
            "stats" => {
                let (libs, fns) =
                    (self.libraries.len(), self.libraries.values().map(|l| l.functions.len()).sum::<usize>());
                Reply::Map(vec![
                    (Reply::bulk("running_script"), Reply::Nil),
                    (
                        Reply::bulk("engines"),
                        Reply::Map(vec![(
                            Reply::bulk("LUA"),
                            Reply::Map(vec![
                                (Reply::bulk("libraries_count"), Reply::Int(libs as i64)),
                                (Reply::bulk("functions_count"), Reply::Int(fns as i64)),
                            ]),
                        )]),
                    ),
                ])
            }
            "kill" => Reply::err("NOTBUSY No scripts in execution right now."),
            "dump" => Reply::Bulk(self.dump()),
            "restore" => {
                if a.len() > 4 {
                    return syntax();
                }
                let policy = if a.len() == 4 {
                    if eq_ic(a[3], "append") {
                        Policy::Append
                    } else if eq_ic(a[3], "replace") {
                        Policy::Replace
                    } else if eq_ic(a[3], "flush") {
                        Policy::Flush
                    } else {
                        return Reply::err(
                            "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
                        );
                    }
                } else {
                    Policy::Append
                };
                match self.restore(a[2], policy) {
                    Ok(()) => Reply::ok(),
                    Err(e) => Reply::Error(err_text(&e)),
                }
            }
            _ => super::call::help_reply("function"),
        }
    }

    /// Releases a library's callbacks.
    fn free(&self, lib: Library) {
        for f in lib.functions {
            self.unref(f.fref);
        }
    }

    fn unref(&self, r: c_int) {
        // SAFETY: drops a registry reference of the functions VM's live main state, between calls
        // (`r` came from luaL_ref on it and is dropped once). luaL_unref may add the registry's
        // free-list slot, an allocation that cannot be refused (no memory cap outside runs,
        // lua_alloc never fails), so nothing raises; there is no protected call to land in here.
        unsafe { ffi::luaL_unref(self.vm.state, ffi::LUA_REGISTRYINDEX, r) }
    }

    /// FUNCTION FLUSH.
    pub(crate) fn flush(&mut self) {
        for (_, lib) in std::mem::take(&mut self.libraries) {
            self.free(lib);
        }
    }

    fn list(&self, a: &[&[u8]]) -> Reply {
        let (mut with_code, mut pattern): (bool, Option<&[u8]>) = (false, None);
        let mut i = 2;
        while i < a.len() {
            if !with_code && eq_ic(stack::cstr(a[i]), "withcode") {
                with_code = true;
            } else if pattern.is_none() && eq_ic(stack::cstr(a[i]), "libraryname") {
                if i >= a.len() - 1 {
                    return Reply::err("ERR library name argument was not given");
                }
                i += 1;
                pattern = Some(a[i]);
            } else {
                return Reply::Error(stack::one_line(&format!(
                    "ERR Unknown argument {}",
                    String::from_utf8_lossy(stack::cstr(a[i]))
                )));
            }
            i += 1;
        }
        let mut out = Vec::new();
        for (name, lib) in &self.libraries {
            if let Some(p) = pattern {
                if !glob_match(p, name, true) {
                    continue;
                }
            }
            let functions = lib
                .functions
                .iter()
                .map(|f| {
                    let flags = FLAG_NAMES
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| f.flags & (1 << i) != 0)
                        .map(|(_, n)| Reply::Status((*n).into()))
                        .collect();
                    Reply::Map(vec![
                        (Reply::bulk("name"), Reply::Bulk(f.name.clone())),
                        (Reply::bulk("description"), f.desc.clone().map_or(Reply::Nil, Reply::Bulk)),
                        (Reply::bulk("flags"), Reply::Set(flags)),
                    ])
                })
                .collect();
            let mut m = vec![
                (Reply::bulk("library_name"), Reply::Bulk(name.clone())),
                (Reply::bulk("engine"), Reply::bulk("LUA")),
                (Reply::bulk("functions"), Reply::Array(functions)),
            ];
            if with_code {
                m.push((Reply::bulk("library_code"), Reply::Bulk(lib.code.clone())));
            }
            out.push(Reply::Map(m));
        }
        Reply::Array(out)
    }

    /// FUNCTION LOAD: compiles and runs a library's code, registering its functions
    /// (`functionsCreateWithLibraryCtx`). Returns the library's name, or Redis's error text.
    fn load(&mut self, code: &[u8], replace: bool) -> Result<Vec<u8>, String> {
        let m = meta(code)?;
        if !valid_name(&m.name) {
            return Err(BAD_NAME.into());
        }
        if !m.engine.eq_ignore_ascii_case(b"lua") {
            return Err(format!("Engine '{}' not found", String::from_utf8_lossy(&m.engine)));
        }
        let old = match self.libraries.get_index_of(&m.name) {
            Some(_) if !replace => {
                return Err(format!("Library '{}' already exists", String::from_utf8_lossy(&m.name)));
            }
            Some(i) => self.libraries.shift_remove_index(i),
            None => None,
        };
        let restore_old = |this: &mut Self, old: Option<(Vec<u8>, Library)>| {
            if let Some((name, lib)) = old {
                this.libraries.insert(name, lib);
            }
        };
        let functions = match self.create(&code[m.body_at..]) {
            Ok(f) => f,
            Err(e) => {
                restore_old(self, old);
                return Err(e);
            }
        };
        if functions.is_empty() {
            restore_old(self, old);
            return Err("No functions registered".into());
        }
        if let Some(f) = functions.iter().find(|f| self.find(&f.name).is_some()) {
            let e = format!("Function {} already exists", String::from_utf8_lossy(stack::cstr(&f.name)));
            for f in functions {
                self.unref(f.fref);
            }
            restore_old(self, old);
            return Err(e);
        }
        if let Some((_, lib)) = old {
            self.free(lib);
        }
        self.libraries.insert(m.name.clone(), Library { code: code.to_vec(), functions });
        Ok(m.name)
    }

    /// `luaEngineCreate`: compiles the body as `@user_function` and runs it with the library API as
    /// its globals; returns what it registered.
    fn create(&mut self, body: &[u8]) -> Result<Vec<Func>, String> {
        let l = self.vm.state;
        *self.load.registered.borrow_mut() = Some(Vec::new());
        let st = &self.vm.ctx.state;
        st.loading.set(true);
        st.killed.set(false);
        st.budget_left.set(self.budget.min(i64::MAX as u64) as i64);
        // With a busy handler installed (a server), Redis's load timeout in real time applies too.
        st.busy.since.set(st.busy.on().then(crate::clock::Stopwatch::start));
        // SAFETY: raw calls on the functions VM's live main state between calls, outside any protected
        // call; the stack is restored (the base level's LUA_MINSTACK slots are free: mlua leaves the
        // stack as it found it; this takes three at most). The code runs under lua_pcall, where its
        // raises land; compiling reports errors by status. Out here nothing can be refused memory
        // (no cap outside runs, lua_alloc never fails) and no metamethod runs, with one exception:
        // extract_error reads `err` of an error table with lua_getfield, as Redis does, and a table
        // whose `__index` raises (the library API's `redis`, raised as the error) raises there. With
        // no protected call to land in, Lua then ends the process (as Redis's own load path would);
        // no raise unwinds these frames, so the String in `r` is never skipped.
        let outcome = unsafe {
            let top = ffi::lua_gettop(l);
            set_globals_index(l, c"__LIBRARY_API__");
            let r = if ffi::luaL_loadbuffer(l, body.as_ptr().cast(), body.len(), c"@user_function".as_ptr()) != 0 {
                let msg = string_or_empty(l, -1);
                Err(format!("Error compiling function: {}", String::from_utf8_lossy(stack::cstr(&msg))))
            } else if ffi::lua_pcall(l, 0, 0, 0) != 0 {
                Err(format!("Error registering functions: {}", extract_error(l, -1)))
            } else {
                Ok(())
            };
            set_globals_index(l, c"__GLOBALS_API__");
            ffi::lua_settop(l, top);
            r
        };
        st.loading.set(false);
        st.busy.end();
        if st.killed.replace(false) {
            self.vm.rearm_hook();
        }
        let registered = self.load.registered.borrow_mut().take().unwrap_or_default();
        match outcome {
            Ok(()) => Ok(registered),
            Err(e) => {
                for f in registered {
                    self.unref(f.fref);
                }
                Err(e)
            }
        }
    }

    /// Whether function `name` may write (it lacks `no-writes`; an unknown one counts as writing).
    pub(crate) fn may_write(&self, name: &[u8]) -> bool {
        self.find(name).is_none_or(|(lib, i)| lib.functions[i].flags & NO_WRITES == 0)
    }

    /// FCALL / FCALL_RO.
    pub(crate) fn fcall(&mut self, core: &Rc<RefCell<Core>>, a: &[&[u8]], ro: bool, budget: u64) -> Reply {
        let Some((lib, i)) = self.find(a[1]) else { return Reply::err("ERR Function not found") };
        let f = &lib.functions[i];
        // A function that may write is denied when out of memory, before its arguments are read
        // (Redis's processCommand gives FCALL the function's flags).
        if f.flags & (NO_WRITES | ALLOW_OOM) == 0 && super::refusals::out_of_memory(&mut core.borrow_mut()) {
            return Reply::err(super::refusals::OOM);
        }
        if f.flags & NO_WRITES == 0 && core.borrow().settings.min_replicas() {
            return Reply::err(super::refusals::NOREPLICAS);
        }
        let Some(n) = crate::keyspace::parse_canonical_i64(a[2]) else {
            return Reply::err("ERR Bad number of keys provided");
        };
        if n > (a.len() - 3) as i64 {
            return Reply::err("ERR Number of keys can't be greater than number of args");
        }
        if n < 0 {
            return Reply::err("ERR Number of keys can't be negative");
        }
        let (keys, argv) = (&a[3..3 + n as usize], &a[3 + n as usize..]);
        let cluster_on = core.borrow().cluster;
        if cluster_on {
            if let Err(cluster::CrossSlot) = cluster::common_slot(keys.iter().copied()) {
                return Reply::err(cluster::CROSSSLOT);
            }
        }
        if f.flags & NO_CLUSTER != 0 && cluster_on {
            return Reply::err("ERR Can not run script on cluster, 'no-cluster' flag is set.");
        }
        if f.flags & NO_WRITES == 0 && ro {
            return Reply::err("ERR Can not execute a script with write flag using *_ro command.");
        }
        let read_only = ro || f.flags & NO_WRITES != 0;
        let name = String::from_utf8_lossy(&f.name).into_owned();
        let (fref, flags) = (f.fref, f.flags);
        let st = self.vm.ctx.state.clone();
        if st.busy.on() {
            // What FUNCTION STATS shows should the function run past busy-reply-threshold.
            *st.busy.command.borrow_mut() = a.iter().map(|x| x.to_vec()).collect();
            let fns = self.libraries.values().map(|l| l.functions.len()).sum();
            st.busy.counts.set((self.libraries.len(), fns));
        }
        st.cross_slot.set(flags & ALLOW_CROSS_SLOT != 0);
        st.allow_oom.set(flags & ALLOW_OOM != 0);
        let r = super::run::run_function(&self.vm, core, &st, budget, &name, fref, keys, argv, read_only, false);
        st.cross_slot.set(false);
        r
    }

    /// FUNCTION DUMP's payload.
    pub(crate) fn dump(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for lib in self.libraries.values() {
            out.push(RDB_OPCODE_FUNCTION2);
            rdb_save_string(&mut out, &lib.code);
        }
        out.extend_from_slice(&RDB_VERSION.to_le_bytes());
        let crc = crc64(0, &out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// FUNCTION RESTORE.
    fn restore(&mut self, data: &[u8], policy: Policy) -> Result<(), String> {
        if data.len() < 10 {
            return Err("DUMP payload version or checksum are wrong".into());
        }
        let (body, footer) = data.split_at(data.len() - 10);
        let ver = u16::from_le_bytes([footer[0], footer[1]]);
        let crc = u64::from_le_bytes(footer[2..10].try_into().unwrap_or_default());
        if ver > RDB_VERSION || crc64(0, &data[..data.len() - 8]) != crc {
            return Err("DUMP payload version or checksum are wrong".into());
        }
        // Read every library first (into a fresh set, as Redis loads into a new library context).
        let mut codes = Vec::new();
        let mut at = 0;
        while at < body.len() {
            let ty = body[at];
            at += 1;
            if ty == RDB_OPCODE_FUNCTION_PRE_GA {
                // 7.0 rc1/rc2: name, engine, an optional description, then the code, rebuilt as
                // "#!<engine> name=<name>\n<code>".
                let mut field = |what: &str| -> Result<Vec<u8>, String> {
                    let (v, used) = rdb_load_string(&data[at..]).ok_or_else(|| format!("Failed loading {what}"))?;
                    at += used;
                    Ok(v)
                };
                let name = field("library name")?;
                let engine = field("engine name")?;
                let (has_desc, _, used) = rdb_load_len(&data[at..])
                    .ok_or_else(|| "Failed loading library description indicator".to_string())?;
                at += used;
                let mut field = |what: &str| -> Result<Vec<u8>, String> {
                    let (v, used) = rdb_load_string(&data[at..]).ok_or_else(|| format!("Failed loading {what}"))?;
                    at += used;
                    Ok(v)
                };
                if has_desc != 0 {
                    field("library description")?;
                }
                let blob = field("library blob")?;
                let mut code = b"#!".to_vec();
                code.extend_from_slice(stack::cstr(&engine));
                code.extend_from_slice(b" name=");
                code.extend_from_slice(stack::cstr(&name));
                code.push(b'\n');
                code.extend_from_slice(stack::cstr(&blob));
                codes.push(code);
                continue;
            }
            if ty != RDB_OPCODE_FUNCTION2 {
                return Err("given type is not a function".into());
            }
            let Some((code, used)) = rdb_load_string(&data[at..]) else {
                return Err("Failed loading library payload".into());
            };
            at += used;
            codes.push(code);
        }
        // Each library is created into a fresh set, as Redis loads into a new library context
        // (so collisions inside the payload are found against the payload only).
        let saved = std::mem::take(&mut self.libraries);
        for code in codes {
            if let Err(e) = self.load(&code, false) {
                let fresh = std::mem::replace(&mut self.libraries, saved);
                self.release(fresh);
                return Err(e);
            }
        }
        let fresh = std::mem::replace(&mut self.libraries, saved);
        match policy {
            Policy::Flush => {
                self.flush();
                self.libraries = fresh;
                Ok(())
            }
            Policy::Append | Policy::Replace => self.join(fresh, policy == Policy::Replace),
        }
    }

    fn release(&self, libs: IndexMap<Vec<u8>, Library>) {
        for (_, lib) in libs {
            self.free(lib);
        }
    }

    /// `libraryJoin`: adds the restored libraries, replacing same-named ones when asked; on a
    /// collision nothing changes.
    fn join(&mut self, fresh: IndexMap<Vec<u8>, Library>, replace: bool) -> Result<(), String> {
        let mut removed = Vec::new();
        for name in fresh.keys() {
            if let Some(i) = self.libraries.get_index_of(name) {
                if !replace {
                    let e = format!("Library {} already exists", String::from_utf8_lossy(stack::cstr(name)));
                    self.release(fresh);
                    return Err(e);
                }
                removed.push(self.libraries.shift_remove_index(i).expect("present"));
            }
        }
        for f in fresh.values().flat_map(|l| l.functions.iter()) {
            if self.find(&f.name).is_some() {
                let e = format!("Function {} already exists", String::from_utf8_lossy(stack::cstr(&f.name)));
                for (k, v) in removed {
                    self.libraries.insert(k, v);
                }
                self.release(fresh);
                return Err(e);
            }
        }
        for (_, lib) in removed {
            self.free(lib);
        }
        self.libraries.extend(fresh);
        Ok(())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Policy {
    Append,
    Replace,
    Flush,
}

/// An error text as a reply: `addReplyErrorSds` adds `ERR ` unless the text has a code (`-`).
fn err_text(e: &str) -> String {
    let e = stack::one_line(e);
    match e.strip_prefix('-') {
        Some(rest) => rest.to_string(),
        None => format!("ERR {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_sdssplitargs() {
        assert_eq!(split_args(b"#!lua name=a").unwrap(), vec![b"#!lua".to_vec(), b"name=a".to_vec()]);
        assert_eq!(split_args(b"#!lua \"name=q\"").unwrap(), vec![b"#!lua".to_vec(), b"name=q".to_vec()]);
        assert!(split_args(b"#!lua \"name=q").is_none());
        assert!(split_args(b"#!lua \"a\"b").is_none());
        assert_eq!(split_args(b"  ").unwrap().len(), 0);
    }
}
