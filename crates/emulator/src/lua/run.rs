//! One run of a compiled script or of a library's function, as Redis's `luaCallFunction` does it:
//! KEYS and ARGV (or the function's two arrays), the budget and the memory cap, expiry frozen while
//! it runs, and the error reply of a run that failed or was killed.
use std::cell::RefCell;
use std::os::raw::c_int;
use std::rc::Rc;

use mlua::ffi;

use super::budget::LiftedCap;
use super::context::RunState;
use super::fast;
use super::stack::{cstr, one_line, push_bytes};
use super::vm::Vm;
use crate::cluster;
use crate::core::Core;
use crate::reply::Reply;

/// Runs a compiled script (`eval`: KEYS and ARGV are globals, no arguments) or a library's
/// function (its keys and args as two array arguments), as Redis's `luaCallFunction` does; `name`
/// is what error replies call it (the script's SHA or the function's name).
#[allow(clippy::too_many_arguments)]
#[inline]
pub(super) fn run_function(
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
    if let Some((run, line)) = st.lines.borrow_mut().as_mut() {
        name.clone_into(run);
        *line = 0;
    }
    st.budget_left.set(budget.min(i64::MAX as u64) as i64);
    let room = st.memory_room.get();
    // SAFETY: the cap's fields point into the VM's global state (see Vm::mem), alive as long as the
    // VM; no Lua code runs now, and nothing else reads or writes them meanwhile (one thread).
    let cap = unsafe {
        *vm.mem.hit = 0;
        if room == 0 {
            usize::MAX
        } else {
            (*vm.mem.totalbytes).saturating_add(room)
        }
    };
    st.slot.set(if core.borrow().cluster { cluster::common_slot(keys.iter().copied()).ok().flatten() } else { None });
    // Keys cannot expire while the script runs: judge expiry at the script's start. The script runs
    // in its caller's database; a SELECT inside it changes the script's database only.
    let db = {
        let mut core = core.borrow_mut();
        let now = core.now_ms();
        core.frozen_ms = Some(now);
        core.script_repl_off = false;
        let oom = core.settings.maxmemory() > 0 && super::refusals::out_of_memory(&mut core);
        st.oom_at_start.set(oom);
        st.acl_open.set(None);
        let threshold = st.busy.on().then(|| core.settings.int("busy-reply-threshold"));
        st.busy.begin(name, eval, threshold);
        core.selected
    };
    let l = vm.state;
    // SAFETY: runs on the live main state between mlua calls, outside any protected call, and
    // leaves its stack as it found it. Room: mlua leaves the main stack as it found it after each
    // of its calls (empty: its references live on a thread of their own), so the LUA_MINSTACK slots
    // Lua gives the base level are free, and this takes at most five (the handler, the function,
    // two tables and a string being added); to_reply checks for what it needs. Raises: none can
    // happen out here, where the Rust values (the reply being built) would be skipped. The registry
    // reads allocate nothing; KEYS and ARGV are built with the memory cap still lifted (lua_alloc
    // never fails); whatever the script raises lands in lua_pcall; the result is read with the cap
    // lifted again, by code that raises nothing (see fast::to_reply). (A raise out here would not
    // unwind these frames anyway: with no protected call to land in, Lua ends the process.)
    // As in Redis (luaCallFunction), the script runs under lua_pcall with the error handler as the
    // message handler: a failure leaves the handler's {err, source, line} table (or, should the
    // handler itself fail, Lua's message) on the stack. `fref` and `vm.handler_ref` are registry
    // references of this VM's functions, held as long as the function is cached or loaded.
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
            push_array(l, keys);
            push_array(l, argv);
            2
        };
        // The cap goes on only now, counting KEYS and ARGV against the room (the script is flagged
        // if they already took it past): built with the cap on, they could be refused here, outside
        // any protected call, where Lua would end the process.
        LiftedCap { l, m: vm.mem, cap }.restore();
        let status = ffi::lua_pcall(l, nargs, 1, top + 1);
        // And off again before the result is read, for the same reason.
        *vm.mem.cap = usize::MAX;
        let r = if status == 0 { Ok(fast::to_reply(l, -1, st.resp.get(), 0)) } else { Err(fast::read_failure(l, -1)) };
        ffi::lua_settop(l, top);
        r
    };
    st.busy.end();
    {
        let mut core = core.borrow_mut();
        core.frozen_ms = None;
        core.script_repl_off = false;
        core.select(db);
    }
    // SAFETY: the cap's fields, as above; the script has returned.
    let (memory_hit, memory_line) =
        unsafe { (std::mem::replace(&mut *vm.mem.hit, 0) != 0, std::mem::replace(&mut *vm.mem.line, 0)) };
    if memory_hit {
        // Over the memory cap, whether or not the script caught the refusal: its garbage goes now,
        // so that the next script starts from where this one did.
        st.killed.set(false);
        vm.rearm_hook();
        // SAFETY: a full collection on the live main state, between calls and outside any protected
        // call. It cannot raise: its allocations cannot be refused (the cap is off after a run, and
        // lua_alloc never fails), and the only finalizers are those of mlua's own userdata, which
        // do not raise (scripts cannot give a userdata a `__gc`: no `newproxy`, no debug library).
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
        let why = if st.busy.by_user.replace(false) { Kill::User } else { Kill::Budget(budget) };
        return script_error(name, fail, Some(why));
    }
    outcome.unwrap_or_else(|fail| script_error(name, fail, None))
}

/// Pushes a fresh array of the given strings (`luaCreateArray`).
///
/// # Safety
///
/// `l` is a running state with two free slots. It allocates: run it with the memory cap lifted,
/// where nothing can be refused (see `run_function`), or where a raise skips no destructor.
unsafe fn push_array(l: *mut ffi::lua_State, items: &[&[u8]]) {
    ffi::lua_createtable(l, items.len() as c_int, 0);
    for (i, s) in items.iter().enumerate() {
        push_bytes(l, s);
        ffi::lua_rawseti_(l, -2, (i + 1) as c_int);
    }
}

/// Why the emulator killed a script: it ran past its budget (loop iterations and calls) or past its
/// memory cap (bytes), or a client killed it.
#[derive(Clone, Copy, Debug)]
enum Kill {
    Budget(u64),
    Memory(usize),
    /// SCRIPT KILL or FUNCTION KILL, through the embedder's busy handler.
    User,
}

/// Formats a script's runtime error as Redis 7.0 does: `<err> script: <sha>, on <source>:<line>.`
fn script_error(sha: &str, fail: fast::ScriptFailure, killed: Option<Kill>) -> Reply {
    if !fail.is_table && killed.is_none() {
        // The error handler itself failed: Redis prints Lua's message, `%.100s`.
        let msg = fail.text.as_deref().unwrap_or(b"execution failure");
        let msg = String::from_utf8_lossy(&cstr(msg)[..cstr(msg).len().min(100)]).into_owned();
        return Reply::Error(one_line(&format!("ERR Error running script {sha}, {msg}")));
    }
    let (err, source, line) = (fail.err, fail.source, fail.line);
    let msg = match killed {
        Some(Kill::Budget(budget)) => {
            format!("ERR Script killed by limitlab: it ran past its budget of {budget} loop iterations and calls (an endless loop?)")
        }
        Some(Kill::User) => format!("ERR {}", String::from_utf8_lossy(super::budget::KILLED_BY_USER)),
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
