//! A script's budget and memory cap while it runs: the process-wide default budget, the count hook
//! that spends the budget and kills a runaway script (or one past its memory cap, or one a client
//! killed through the busy handler), and the memory cap lifted around pushes that must not fail.
use super::context::RunState;
use super::ext::{memcap, MemCap};
use super::stack::push_error_buff;

/// Default budget of one script call, in loop iterations and Lua function calls (our Lua counts its
/// count hook on backward jumps and function entries, not per instruction: crates/lua): about a
/// second of busy Lua on this machine class.
pub const DEFAULT_BUDGET: u64 = 50_000_000;

/// The budget new emulators start with: [`DEFAULT_BUDGET`] unless a command's `--script-budget`
/// set another ([`set_default_budget`]). One figure for the process, so that every emulator a
/// command makes (its runs, probes, searches) stops a runaway script at the same point.
static PROCESS_BUDGET: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(DEFAULT_BUDGET);

/// Sets the budget of every emulator made from now on in this process (one figure for the process).
pub fn set_default_budget(b: u64) {
    PROCESS_BUDGET.store(b.max(1), std::sync::atomic::Ordering::Relaxed);
}

/// The budget new emulators start with.
pub fn default_budget() -> u64 {
    PROCESS_BUDGET.load(std::sync::atomic::Ordering::Relaxed)
}

/// How often (in loop iterations and calls) the budget hook runs.
pub(crate) const HOOK_EVERY: u32 = 10_000;

/// The memory cap of a state, lifted while Rust code that owns memory or holds a borrow pushes
/// values onto the Lua stack (a reply, a library function's results): with no cap, and an
/// allocator that never fails ([`super::vm::lua_alloc`]), those pushes cannot raise, so no raise can
/// unwind past the Rust values. Plain data without a destructor: [`LiftedCap::restore`] puts the
/// cap back, and a raise that skipped it would only leave the rest of the run uncapped (the run's
/// end lifts the cap anyway).
#[derive(Clone, Copy)]
pub struct LiftedCap {
    pub l: *mut mlua::ffi::lua_State,
    pub m: MemCap,
    /// The cap to put back.
    pub cap: usize,
}

impl LiftedCap {
    /// Lifts the cap of the state `l` belongs to, keeping it for [`LiftedCap::restore`].
    ///
    /// # Safety
    ///
    /// `l` is a live Lua state or thread.
    pub unsafe fn lift(l: *mut mlua::ffi::lua_State) -> LiftedCap {
        let m = memcap(l);
        let cap = std::mem::replace(&mut *m.cap, usize::MAX);
        LiftedCap { l, m, cap }
    }

    /// Puts the cap back. If the state now holds more than the cap, the script is flagged as
    /// lmem.c flags a growth past it: the cap marked hit, the line of the innermost Lua function
    /// noted (when the cap was not hit before), and the count hook made to fire at the next loop
    /// or call, where [`budget_hook`] kills the script.
    ///
    /// # Safety
    ///
    /// `l` and `m` belong to a live state (the one `lift` was given); when the state is over
    /// the cap it is one of the emulator's VMs, whose count hook is the budget hook.
    pub unsafe fn restore(self) {
        let m = self.m;
        *m.cap = self.cap;
        if *m.totalbytes > self.cap {
            if *m.hit == 0 {
                *m.hit = 1;
                *m.line = 0;
                let mut ar: mlua::ffi::lua_Debug = std::mem::zeroed();
                let mut level = 0;
                while *m.line <= 0 && mlua::ffi::lua_getstack(self.l, level, &mut ar) != 0 {
                    if mlua::ffi::lua_getinfo(self.l, c"l".as_ptr(), &mut ar) != 0 {
                        *m.line = ar.currentline;
                    }
                    level += 1;
                }
            }
            mlua::ffi::lua_sethook(self.l, Some(budget_hook), mlua::ffi::LUA_MASKCOUNT, 1);
        }
    }
}

/// Redis's error for a script stopped by SCRIPT KILL or FUNCTION KILL (the same words for both).
pub(crate) const KILLED_BY_USER: &[u8] = b"Script killed by user with SCRIPT KILL...";

/// The registry key under which the hook finds the run state (the address of a static).
pub(crate) fn hook_key() -> *mut std::ffi::c_void {
    static KEY: u8 = 0;
    &KEY as *const u8 as *mut std::ffi::c_void
}

/// The budget hook: every [`HOOK_EVERY`] loop iterations and calls it takes them off the budget;
/// once the budget is spent the script is killed, and from then on the hook fires and raises at
/// every chance, so `pcall` cannot keep a killed script alive (but in the error handler, which makes
/// the kill's error). During FUNCTION LOAD it raises Redis's load timeout instead. With a busy
/// handler installed, a run past `busy-reply-threshold` calls it at every tick ([`super::busy`]),
/// and it may kill the script too; the handler's values are all gone before anything is raised.
///
/// # Safety
///
/// Called by Lua only, as the count hook (and, while lines are traced, the return hook) of a VM's
/// states (set in [`super::vm::Vm::finish`]; coroutines inherit it), with LUA_MINSTACK free slots. The registry then holds, under
/// [`hook_key`], the address of the VM's run state, which outlives the Lua state (the VM's call
/// context holds an Rc of it). It raises with nothing alive but that shared reference.
pub(crate) unsafe extern "C-unwind" fn budget_hook(l: *mut mlua::ffi::lua_State, ar: *mut mlua::ffi::lua_Debug) {
    use mlua::ffi;
    ffi::lua_pushlightuserdata(l, hook_key());
    ffi::lua_rawget(l, ffi::LUA_REGISTRYINDEX);
    let st = &*(ffi::lua_touserdata(l, -1) as *const RunState);
    ffi::lua_settop(l, -2);
    // Line tracing: note the line if it is the script's own code (not a library's), and nothing else.
    // Line tracing (the return hook is on): a function of the script's own code (not a library's,
    // not a C function) returning notes the line of its `return`; nothing else happens.
    if (*ar).event == ffi::LUA_HOOKRET {
        if let Some((_, line)) = st.lines.borrow_mut().as_mut() {
            if ffi::lua_getinfo(l, c"Sl".as_ptr(), ar) != 0 && !(*ar).source.is_null() && (*ar).currentline > 0 {
                let src = std::ffi::CStr::from_ptr((*ar).source).to_bytes();
                if src == b"@user_script" || src == b"@user_function" {
                    *line = (*ar).currentline;
                }
            }
        }
        return;
    }
    // The allocator refused to grow past the run's memory cap (lmem.c makes the hook fire at the
    // next loop or call): the script is killed, whether or not it caught that error.
    if !st.killed.get() && memory_hit(l) {
        st.killed.set(true);
        ffi::lua_sethook(l, Some(budget_hook), ffi::LUA_MASKCOUNT, 1);
    }
    if !st.killed.get() {
        let left = st.budget_left.get() - HOOK_EVERY as i64;
        st.budget_left.set(left);
        // With a busy handler installed, a run past busy-reply-threshold lets it serve the other
        // clients (and maybe kill the run); a FUNCTION LOAD past its timeout is stopped.
        if left > 0 && (st.busy.since.get().is_none() || !super::busy::tick(st)) {
            return;
        }
        st.killed.set(true);
        ffi::lua_sethook(l, Some(budget_hook), ffi::LUA_MASKCOUNT, 1);
    }
    // The error handler turns the kill into the error table: raising again inside it would report
    // the handler's own line (or fail the handling), so it runs to its end.
    if in_error_handler(l, ar) {
        return;
    }
    if st.loading.get() {
        push_error_buff(l, b"FUNCTION LOAD timeout");
    } else if st.busy.by_user.get() {
        push_error_buff(l, KILLED_BY_USER);
    } else {
        ffi::lua_pushstring(l, c"Script killed".as_ptr());
    }
    ffi::lua_error(l);
}

/// Whether the function the hook fired in is the error handler (`@err_handler_def`, see
/// [`super::vm`]).
///
/// # Safety
///
/// `l` and `ar` are what Lua passed the hook.
unsafe fn in_error_handler(l: *mut mlua::ffi::lua_State, ar: *mut mlua::ffi::lua_Debug) -> bool {
    if mlua::ffi::lua_getinfo(l, c"S".as_ptr(), ar) == 0 || (*ar).source.is_null() {
        return false;
    }
    std::ffi::CStr::from_ptr((*ar).source).to_bytes() == b"@err_handler_def"
}

/// Whether the state's memory cap refused an allocation during this run.
///
/// # Safety
///
/// `l` is a live Lua state or thread.
unsafe fn memory_hit(l: *mut mlua::ffi::lua_State) -> bool {
    *memcap(l).hit != 0
}
