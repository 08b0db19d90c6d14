//! The hot path of scripting on the raw Lua C API: `redis.call`/`redis.pcall` read their arguments
//! straight off the Lua stack and push replies back without going through mlua values, and a script
//! call builds KEYS/ARGV and converts its result the same way. Everything here follows one rule: no
//! Rust value that owns memory is alive when a Lua error is raised (a raise unwinds by longjmp).
//! The places Lua is called while Rust holds something (the keyspace borrow, the reply) are
//! [`LuaSink`]'s methods: they push with the memory cap lifted ([`super::budget::LiftedCap`]), so
//! that no push can raise, and check the stack without raising; `redis.call` raises what they
//! report once it holds nothing.
use std::os::raw::c_int;

use mlua::ffi;

use super::call::call_checked;
use super::context::CallCtx;
use super::cvt::cvt_i64;
use super::stack::{one_line, push_bytes};
use crate::reply::{write_g, Reply, ReplySink};

/// Most commands have few arguments: up to this many are kept on the stack.
const INLINE_ARGS: usize = 16;

/// Formats a Lua number argument as Redis 7.0 does (`%.17g`).
fn push_number(buf: &mut Vec<u8>, n: f64) {
    write_g(buf, n, 17);
}

/// Where `redis.call` writes a command's reply: onto the Lua stack, as `redisProtocolToLuaType`.
struct LuaSink {
    l: *mut ffi::lua_State,
    resp: u8,
    /// The reply was an error (`redis.call` raises it).
    failed: bool,
    /// The reply needed more stack than Lua gives a C function: `redis.call` and `redis.pcall` raise
    /// "stack overflow (reply too deep)", once nothing here holds memory or a borrow.
    overflow: bool,
    /// The call is a statement (`redis.call('SET', k, v)` alone): its caller wants no result, so
    /// a reply that is neither an error (raised) nor a container (whose depth can raise "reply too
    /// deep", as in Redis) is not converted at all: no script can see it.
    discard: bool,
    /// A reply was dropped under `discard`: nothing was pushed.
    skipped: bool,
}

impl ReplySink for LuaSink {
    fn reply(&mut self, r: Reply) {
        self.failed = r.is_error();
        if self.discard && !matches!(r, Reply::Error(_) | Reply::Array(_) | Reply::Set(_) | Reply::Map(_)) {
            self.skipped = true;
            return;
        }
        // SAFETY: pushes on the stack of the running `redis.call`, above its arguments, while `r`
        // (which owns memory) is alive: nothing may raise. With the cap lifted no push can, and
        // push_reply checks the stack without raising (see it).
        unsafe {
            let lifted = super::budget::LiftedCap::lift(self.l);
            self.overflow = !push_reply(self.l, &r, self.resp);
            lifted.restore();
        }
    }
    /// Pushed while the command still borrows the keyspace (the values are its own bytes). Nothing
    /// here raises a Lua error (which would leave the borrow taken): a flat array takes two of the
    /// LUA_MINSTACK slots a C function is given, so no stack check; the memory cap is lifted while
    /// it pushes and, if the reply took the script past it, the script is killed at its next loop
    /// or call (see [`super::budget::LiftedCap`]); the allocator itself never fails.
    fn bulks(&mut self, n: usize, items: &mut dyn Iterator<Item = Option<&[u8]>>) {
        if self.discard {
            // A flat array of strings and nils: it cannot be too deep, so dropping it unseen is safe.
            self.skipped = true;
            return;
        }
        let l = self.l;
        // SAFETY: push_array's flat case: the same table, the same elements (a nil as push_reply
        // pushes Reply::Nil, which allocates nothing), pushed on the stack of the running
        // `redis.call` above its arguments: the table and one element at a time, two of the
        // LUA_MINSTACK slots Lua gave it. The bytes pushed are the keyspace's, alive for the call;
        // with the cap lifted nothing here raises while the caller holds the keyspace borrow.
        unsafe {
            let lifted = super::budget::LiftedCap::lift(l);
            new_array(l, n, self.resp);
            for (i, x) in items.enumerate() {
                push_bulk(l, x, self.resp);
                ffi::lua_rawseti_(l, -2, (i + 1) as c_int);
            }
            lifted.restore();
        }
    }
    /// Pushed while the command still borrows the keyspace, as [`LuaSink::bulks`] pushes: one
    /// string (or nil), in the first of the LUA_MINSTACK slots, with the cap lifted.
    fn bulk(&mut self, b: Option<&[u8]>) {
        if self.discard {
            // Neither an error nor a container: a statement's call drops it unseen (see `reply`).
            self.skipped = true;
            return;
        }
        // SAFETY: as in `bulks`: one push on the stack of the running `redis.call` above its
        // arguments (a slot Lua gave it), of the keyspace's bytes, alive for the call; with the
        // cap lifted nothing raises while the caller holds the keyspace borrow.
        unsafe {
            let lifted = super::budget::LiftedCap::lift(self.l);
            push_bulk(self.l, b, self.resp);
            lifted.restore();
        }
    }
}

/// Pushes a bulk string, or nil as `push_reply` pushes `Reply::Nil` (which allocates nothing).
///
/// # Safety
///
/// As [`push_bytes`]: a free stack slot on the running state `l`; it may allocate (the string),
/// so run with the memory cap lifted where a raise must not unwind.
unsafe fn push_bulk(l: *mut ffi::lua_State, b: Option<&[u8]>, resp: u8) {
    match b {
        Some(b) => push_bytes(l, b),
        None => {
            push_reply(l, &Reply::Nil, resp);
        }
    }
}

/// Runs the command given by the Lua arguments 1..=n; never raises. A command with a direct form
/// pushes its reply through `out` (None); any other reply is returned, to be pushed once nothing
/// here holds memory or a borrow.
///
/// # Safety
///
/// `l` runs `redis.call` or `redis.pcall` (`out.l` is the same state), with its arguments at
/// 1..=n and its LUA_MINSTACK free slots. The two error tables pushed here (which can raise past
/// the memory cap) are pushed with nothing owned alive; from the moment the argument buffer and
/// `ctx.numbuf` are taken, Lua is only called through `out`, whose pushes cannot raise.
unsafe fn run_from_stack(l: *mut ffi::lua_State, ctx: &CallCtx, out: &mut LuaSink) -> Option<Reply> {
    use super::ext::{lua_peekargs, PeekArg};
    let n = ffi::lua_gettop(l) as usize;
    if n == 0 {
        lib_error(l, out, b"Please specify at least one argument for this redis lib call");
        return None;
    }
    // The arguments, described in one pass by C (no conversion, nothing pushed): on the stack for
    // the usual few, on the heap beyond that. lua_peekargs sets only the fields that apply (a
    // string's bytes, a number's value), so every entry is set in full first.
    const UNSET: PeekArg = PeekArg { str: std::ptr::null(), len: 0, num: 0.0, ty: ffi::LUA_TNONE };
    let mut inline = std::mem::MaybeUninit::<[PeekArg; INLINE_ARGS]>::uninit();
    let mut heap: Vec<PeekArg> = Vec::new();
    let args: &mut [PeekArg] = if n <= INLINE_ARGS {
        let first: *mut PeekArg = inline.as_mut_ptr().cast();
        for i in 0..n {
            first.add(i).write(UNSET);
        }
        lua_peekargs(l, n as c_int, first);
        // The first n entries are initialized (above); lua_peekargs wrote into them.
        std::slice::from_raw_parts_mut(first, n)
    } else {
        heap.resize(n, UNSET);
        lua_peekargs(l, n as c_int, heap.as_mut_ptr());
        &mut heap
    };
    // Refused before anything is borrowed or formatted: the error table is pushed (which can raise
    // past the memory cap) with nothing owned alive.
    if args.iter().any(|a| a.ty != ffi::LUA_TSTRING && a.ty != ffi::LUA_TNUMBER) {
        drop(heap);
        lib_error(l, out, b"Lua redis lib command arguments must be strings or integers");
        return None;
    }
    // Numbers are formatted first, all into one buffer (each one's length kept in its `len`), so
    // that slices of the buffer can be taken after.
    let mut numbuf = ctx.numbuf.borrow_mut();
    numbuf.clear();
    for a in args.iter_mut() {
        if a.ty == ffi::LUA_TNUMBER {
            let before = numbuf.len();
            push_number(&mut numbuf, a.num);
            a.len = numbuf.len() - before;
        }
    }
    let mut at = 0;
    let mut slice_of = |a: &PeekArg| -> &[u8] {
        if a.ty == ffi::LUA_TSTRING {
            // SAFETY: the string is argument i on the Lua stack for the whole call.
            std::slice::from_raw_parts(a.str, a.len)
        } else {
            let s = &numbuf[at..at + a.len];
            at += s.len();
            s
        }
    };
    if n <= INLINE_ARGS {
        // (The slices of strings stay valid: the arguments stay on the stack, and Lua's collector
        // neither moves nor frees a string the stack holds, whatever `out` pushes.)
        let mut argv: [&[u8]; INLINE_ARGS] = [&[]; INLINE_ARGS];
        for (d, a) in argv.iter_mut().zip(args.iter()) {
            *d = slice_of(a);
        }
        call_checked(&ctx.core, &ctx.state, &argv[..n], out)
    } else {
        let argv: Vec<&[u8]> = args.iter().map(slice_of).collect();
        call_checked(&ctx.core, &ctx.state, &argv, out)
    }
}

/// An error of the library itself (`luaPushError`: no stats flag), as the call's result.
///
/// # Safety
///
/// As [`super::stack::push_error_buff`]: `l` runs `redis.call` (five of its LUA_MINSTACK slots
/// are free) and its frames hold nothing with a destructor, since the pushes can raise past the cap.
unsafe fn lib_error(l: *mut ffi::lua_State, out: &mut LuaSink, msg: &[u8]) {
    super::stack::push_error_buff(l, msg);
    out.failed = true;
}

/// Pushes `{field = v}`.
///
/// # Safety
///
/// `l` is a running state with two free stack slots; the pushes allocate (see [`push_reply`]).
unsafe fn push_field(l: *mut ffi::lua_State, field: &std::ffi::CStr, v: &[u8]) {
    ffi::lua_createtable(l, 0, 1);
    push_bytes(l, v);
    ffi::lua_setfield(l, -2, field.as_ptr());
}

/// Pushes a reply as `redis.call` returns it (`redisProtocolToLuaType`), under RESP2 or RESP3.
/// False when the stack ran out: a container checks for room as luaL_checkstack would (4 slots past
/// LUA_MINSTACK) but, instead of raising, stops there, leaving what it pushed; the caller raises
/// "stack overflow (reply too deep)" once it holds nothing.
///
/// # Safety
///
/// `l` runs a C function with a free slot for a scalar (a C function is given LUA_MINSTACK);
/// containers check their own room, and an error table's six slots fit in the LUA_MINSTACK slots a
/// successful check adds. The pushes allocate: the caller lifts the memory cap, or holds nothing
/// with a destructor. No metamethod runs (tables are fresh and set raw or without metatables).
pub(crate) unsafe fn push_reply(l: *mut ffi::lua_State, r: &Reply, resp: u8) -> bool {
    // A scalar takes one slot, which a C function always has (LUA_MINSTACK); a container pushes
    // itself and then one element at a time (a nested one checks again).
    if matches!(
        r,
        Reply::Array(_)
            | Reply::Set(_)
            | Reply::Map(_)
            | Reply::Status(_)
            | Reply::Error(_)
            | Reply::Double(_)
            | Reply::HumanDouble(_)
            | Reply::Verbatim(_)
    ) && ffi::lua_checkstack(l, 5 + ffi::LUA_MINSTACK) == 0
    {
        return false;
    }
    match r {
        Reply::Int(i) => ffi::lua_pushnumber(l, *i as f64),
        Reply::Bulk(b) => push_bytes(l, b),
        Reply::Nil | Reply::NilArray => {
            if resp == 3 {
                ffi::lua_pushnil(l)
            } else {
                ffi::lua_pushboolean(l, 0)
            }
        }
        Reply::Status(s) => push_field(l, c"ok", s.as_bytes()),
        Reply::Error(s) => push_error_reply(l, s),
        Reply::Array(v) => return push_array(l, v, resp),
        Reply::Set(v) if resp == 2 => return push_array(l, v, resp),
        // Redis builds these tables with lua_newtable and one key at a time; the layout that gives
        // decides the order `pairs` sees and what `#` says of an array with nils, so no presizing.
        Reply::Set(v) => {
            ffi::lua_createtable(l, 0, 1);
            ffi::lua_createtable(l, 0, 0);
            for x in v {
                if !push_reply(l, x, resp) {
                    return false;
                }
                ffi::lua_pushboolean(l, 1);
                ffi::lua_rawset(l, -3);
            }
            ffi::lua_setfield(l, -2, c"set".as_ptr());
        }
        Reply::Map(kv) if resp == 3 => {
            ffi::lua_createtable(l, 0, 1);
            ffi::lua_createtable(l, 0, 0);
            for (k, x) in kv {
                if !push_reply(l, k, resp) || !push_reply(l, x, resp) {
                    return false;
                }
                ffi::lua_rawset(l, -3);
            }
            ffi::lua_setfield(l, -2, c"map".as_ptr());
        }
        Reply::Map(kv) => {
            ffi::lua_createtable(l, (kv.len() * 2) as c_int, 0);
            for (i, (k, x)) in kv.iter().enumerate() {
                if !push_reply(l, k, resp) {
                    return false;
                }
                ffi::lua_rawseti_(l, -2, (2 * i + 1) as c_int);
                if !push_reply(l, x, resp) {
                    return false;
                }
                ffi::lua_rawseti_(l, -2, (2 * i + 2) as c_int);
            }
        }
        Reply::Double(d) if resp == 3 => {
            ffi::lua_createtable(l, 0, 1);
            ffi::lua_pushnumber(l, *d);
            ffi::lua_setfield(l, -2, c"double".as_ptr());
        }
        Reply::Double(d) => push_bytes(l, crate::reply::format_double(*d).as_bytes()),
        Reply::HumanDouble(d) if resp == 3 => {
            ffi::lua_createtable(l, 0, 1);
            ffi::lua_pushnumber(l, *d);
            ffi::lua_setfield(l, -2, c"double".as_ptr());
        }
        Reply::HumanDouble(d) => push_bytes(l, crate::reply::format_human_double(*d).as_bytes()),
        // `redisProtocolToLuaType_VerbatimString`: a table under RESP3, the text under RESP2.
        Reply::Verbatim(t) if resp == 3 => {
            ffi::lua_createtable(l, 0, 0);
            ffi::lua_pushstring(l, c"verbatim_string".as_ptr());
            ffi::lua_createtable(l, 0, 0);
            ffi::lua_pushstring(l, c"string".as_ptr());
            push_bytes(l, t);
            ffi::lua_settable(l, -3);
            ffi::lua_pushstring(l, c"format".as_ptr());
            push_bytes(l, b"txt");
            ffi::lua_settable(l, -3);
            ffi::lua_settable(l, -3);
        }
        Reply::Verbatim(t) => push_bytes(l, t),
        Reply::Bool(b) if resp == 3 => ffi::lua_pushboolean(l, *b as c_int),
        Reply::Bool(b) => ffi::lua_pushnumber(l, *b as i64 as f64),
    }
    true
}

/// `redisProtocolToLuaType_Error`: luaPushErrorBuff of "-<text>", flagged as already counted
/// (`ignore_error_stats_update`). Out of line: errors are rare, and `push_reply` stays small.
///
/// # Safety
///
/// As [`push_reply`]: six free slots (the string, the error table, its key and three pieces of the
/// message); the slice read back points into the string left on the stack until the end.
#[cold]
#[inline(never)]
unsafe fn push_error_reply(l: *mut ffi::lua_State, s: &str) {
    ffi::lua_pushstring(l, c"-".as_ptr());
    push_bytes(l, s.as_bytes());
    ffi::lua_concat(l, 2);
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, -1, &mut len);
    super::stack::push_error_buff(l, std::slice::from_raw_parts(p.cast::<u8>(), len));
    ffi::lua_remove(l, -2);
    ffi::lua_pushstring(l, c"ignore_error_stats_update".as_ptr());
    ffi::lua_pushboolean(l, 1);
    ffi::lua_settable(l, -3);
}

/// The table for an array reply of `n` elements. Under RESP3 an element may be nil (a hole): the
/// table grows as Redis's does (see push_reply). Under RESP2 there are no holes and presizing gives
/// the same table.
///
/// # Safety
///
/// `l` is a running state with a free stack slot; the table allocates (see [`push_reply`]).
unsafe fn new_array(l: *mut ffi::lua_State, n: usize, resp: u8) {
    ffi::lua_createtable(l, if resp == 3 { 0 } else { n as c_int }, 0);
}

/// An array reply: the table, then each element set raw at its index.
///
/// # Safety
///
/// As [`push_reply`]: the table and one element at a time take two slots, the element's own
/// check covering what a nested container needs.
unsafe fn push_array(l: *mut ffi::lua_State, v: &[Reply], resp: u8) -> bool {
    new_array(l, v.len(), resp);
    for (i, x) in v.iter().enumerate() {
        if !push_reply(l, x, resp) {
            return false;
        }
        ffi::lua_rawseti_(l, -2, (i + 1) as c_int);
    }
    true
}

/// `redis.call` (`raise`) and `redis.pcall`.
///
/// # Safety
///
/// `l` runs one of the two C functions, whose upvalue 1 is a light userdata pointing to the VM's
/// [`CallCtx`] (owned by the VM, dropped after its Lua state, never borrowed mutably). Everything
/// with a destructor (the borrows `run_from_stack` takes, the reply) lives inside the first block:
/// the error tables `run_from_stack` pushes (which can raise past the memory cap) are pushed before
/// any of it exists, and the sink's pushes cannot raise. The raises of the call itself come after
/// the block, with only plain values alive.
unsafe fn generic_call(l: *mut ffi::lua_State, raise: bool) -> c_int {
    let (failed, overflow, skipped) = {
        let ctx = &*(ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *const CallCtx);
        let discard = super::ext::lua_wantedresults(l) == 0;
        let mut out =
            LuaSink { l, resp: ctx.state.resp.get(), failed: false, overflow: false, discard, skipped: false };
        if let Some(reply) = run_from_stack(l, ctx, &mut out) {
            out.reply(reply);
        }
        (out.failed, out.overflow, out.skipped)
    };
    if skipped {
        return 0;
    }
    if overflow {
        // What luaL_checkstack raises, from this same C function (so with the same position).
        ffi::luaL_error(l, c"stack overflow (%s)".as_ptr(), c"reply too deep".as_ptr());
    }
    if raise && failed {
        ffi::lua_error(l);
    }
    1
}

/// `redis.call`: raises the error table of a failed command (from a C frame, as in Redis).
///
/// # Safety
///
/// Called by Lua only, as the C closure `register_redis_lib` makes (upvalue 1 the call context).
pub(crate) unsafe extern "C-unwind" fn redis_call_c(l: *mut ffi::lua_State) -> c_int {
    generic_call(l, true)
}

/// `redis.pcall`: returns the error table instead.
///
/// # Safety
///
/// Called by Lua only, as the C closure `register_redis_lib` makes (upvalue 1 the call context).
pub(crate) unsafe extern "C-unwind" fn redis_pcall_c(l: *mut ffi::lua_State) -> c_int {
    generic_call(l, false)
}

/// Sets the global `name` (from `lua_fixedstring`) to an array of the given strings, as Redis sets
/// KEYS and ARGV before each call (`lua_setglobalstrings` in our Lua: it refills the old table when
/// no script could tell a new one from it).
///
/// # Safety
///
/// `l` is the VM's main state between calls and `name` a string `lua_fixedstring` made on it
/// (never collected). The strings are copied into Lua before this returns. It allocates, so it
/// must run with the memory cap lifted: no protected call encloses it (see `run_function`).
pub(crate) unsafe fn set_string_array(l: *mut ffi::lua_State, name: *const std::ffi::c_void, items: &[&[u8]]) {
    use super::ext::{lua_setglobalstrings, PeekArg};
    let describe = |s: &&[u8]| PeekArg { str: s.as_ptr(), len: s.len(), num: 0.0, ty: ffi::LUA_TSTRING };
    if items.len() <= INLINE_ARGS {
        let mut inline = std::mem::MaybeUninit::<[PeekArg; INLINE_ARGS]>::uninit();
        let first: *mut PeekArg = inline.as_mut_ptr().cast();
        for (i, s) in items.iter().enumerate() {
            first.add(i).write(describe(s));
        }
        // The C side reads the first items.len() entries, all written above.
        lua_setglobalstrings(l, name, items.len() as c_int, first);
    } else {
        let all: Vec<PeekArg> = items.iter().map(describe).collect();
        lua_setglobalstrings(l, name, all.len() as c_int, all.as_ptr());
    }
}

/// A copy of the string at `idx`, if the value there is a string.
///
/// # Safety
///
/// `idx` is a valid index of the running state `l`. `lua_tolstring` is only called on a string,
/// so nothing is converted, allocated or raised; the bytes are copied while the string is on the
/// stack.
unsafe fn string_at(l: *mut ffi::lua_State, idx: c_int) -> Option<Vec<u8>> {
    if ffi::lua_type(l, idx) != ffi::LUA_TSTRING {
        return None;
    }
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, idx, &mut len);
    Some(std::slice::from_raw_parts(p as *const u8, len).to_vec())
}

/// Pushes `t[name]`, read raw (no metamethod), and returns its type.
///
/// # Safety
///
/// `t` is an absolute index of a table on the stack of the running state `l`, which has two free
/// slots. The key string may have to be interned: run with the memory cap lifted (or where a raise
/// unwinds past nothing with a destructor).
unsafe fn raw_field(l: *mut ffi::lua_State, t: c_int, name: &std::ffi::CStr) -> c_int {
    ffi::lua_pushstring(l, name.as_ptr());
    ffi::lua_rawget(l, t);
    ffi::lua_type(l, -1)
}

/// A script's return value at `idx` as the reply Redis sends (`luaReplyToRedisReply`).
///
/// # Safety
///
/// `l` is the VM's main state just after the script returned, outside any protected call, with
/// the memory cap lifted (see `run_function`): the Reply under construction owns memory, so no
/// Lua call here may raise. None does: values are read raw, `lua_next` walks keys it never
/// changes, strings are read without conversion, and `lua_checkstack` fails by returning 0.
pub(crate) unsafe fn to_reply(l: *mut ffi::lua_State, idx: c_int, resp: u8, depth: usize) -> Reply {
    let idx = if idx < 0 { ffi::lua_gettop(l) + idx + 1 } else { idx };
    match ffi::lua_type(l, idx) {
        ffi::LUA_TBOOLEAN => {
            let b = ffi::lua_toboolean(l, idx) != 0;
            if resp == 3 {
                Reply::Bool(b)
            } else if b {
                Reply::Int(1)
            } else {
                Reply::Nil
            }
        }
        ffi::LUA_TNUMBER => Reply::Int(cvt_i64(ffi::lua_tonumber(l, idx))),
        ffi::LUA_TSTRING => Reply::Bulk(string_at(l, idx).unwrap_or_default()),
        ffi::LUA_TTABLE => {
            if depth > 1000 || ffi::lua_checkstack(l, 4) == 0 {
                return Reply::err("ERR reached lua stack limit");
            }
            table_to_reply(l, idx, resp, depth)
        }
        _ => Reply::Nil,
    }
}

/// The table at the absolute index `t` as a reply; leaves the stack as it found it.
///
/// # Safety
///
/// As [`to_reply`], whose check left four free slots (a field, a nested table's key and value).
unsafe fn table_to_reply(l: *mut ffi::lua_State, t: c_int, resp: u8, depth: usize) -> Reply {
    let top = ffi::lua_gettop(l);
    let restore = |r: Reply| {
        ffi::lua_settop(l, top);
        r
    };
    // A table with no hash part (what `{a, b, c}` builds) can hold none of the keys below.
    if super::ext::lua_tablenohash(l, t) == 0 {
        // Both are C strings in Redis: cut at a NUL.
        if raw_field(l, t, c"err") == ffi::LUA_TSTRING {
            let s = string_at(l, -1).unwrap_or_default();
            return restore(Reply::Error(one_line(&String::from_utf8_lossy(super::stack::cstr(&s)))));
        }
        ffi::lua_settop(l, top);
        if raw_field(l, t, c"ok") == ffi::LUA_TSTRING {
            let s = string_at(l, -1).unwrap_or_default();
            return restore(Reply::Status(one_line(&String::from_utf8_lossy(super::stack::cstr(&s)))));
        }
        ffi::lua_settop(l, top);
        if raw_field(l, t, c"double") == ffi::LUA_TNUMBER {
            return restore(Reply::Double(ffi::lua_tonumber(l, -1)));
        }
        ffi::lua_settop(l, top);
        if raw_field(l, t, c"big_number") == ffi::LUA_TSTRING {
            let mut b = string_at(l, -1).unwrap_or_default();
            for c in b.iter_mut().filter(|c| **c == b'\r' || **c == b'\n') {
                *c = b' ';
            }
            return restore(Reply::Bulk(b));
        }
        ffi::lua_settop(l, top);
        // A verbatim string goes to a RESP2 client as a bulk string of its text; a `txt` one to a
        // RESP3 client as a verbatim string.
        if raw_field(l, t, c"verbatim_string") == ffi::LUA_TTABLE {
            let v = ffi::lua_gettop(l);
            if raw_field(l, v, c"format") == ffi::LUA_TSTRING && raw_field(l, v, c"string") == ffi::LUA_TSTRING {
                let text = string_at(l, -1).unwrap_or_default();
                let txt = string_at(l, -2).is_some_and(|f| f == b"txt");
                return restore(if txt { Reply::Verbatim(text) } else { Reply::Bulk(text) });
            }
        }
        ffi::lua_settop(l, top);
        if raw_field(l, t, c"map") == ffi::LUA_TTABLE {
            let m = ffi::lua_gettop(l);
            let mut out = Vec::new();
            ffi::lua_pushnil(l);
            while ffi::lua_next(l, m) != 0 {
                let v = to_reply(l, -1, resp, depth + 1);
                let k = to_reply(l, -2, resp, depth + 1);
                out.push((k, v));
                ffi::lua_settop(l, -2);
            }
            return restore(Reply::Map(out));
        }
        ffi::lua_settop(l, top);
        if raw_field(l, t, c"set") == ffi::LUA_TTABLE {
            let m = ffi::lua_gettop(l);
            let mut out = Vec::new();
            ffi::lua_pushnil(l);
            while ffi::lua_next(l, m) != 0 {
                out.push(to_reply(l, -2, resp, depth + 1));
                ffi::lua_settop(l, -2);
            }
            return restore(Reply::Set(out));
        }
    }
    ffi::lua_settop(l, top);
    let mut out = Vec::with_capacity(super::ext::lua_tablearraysize(l, t).max(0) as usize);
    let mut j = 1;
    loop {
        // Numbers, what rate-limiter replies hold, are read in place; anything else is pushed.
        let mut num = 0.0;
        match super::ext::lua_rawgetitype(l, t, j, &mut num) {
            ffi::LUA_TNIL => break,
            ffi::LUA_TNUMBER => out.push(Reply::Int(cvt_i64(num))),
            _ => {
                ffi::lua_rawgeti_(l, t, j);
                out.push(to_reply(l, -1, resp, depth + 1));
                ffi::lua_settop(l, top);
            }
        }
        j += 1;
    }
    restore(Reply::Array(out))
}

/// The `{err=..., source=..., line=...}` table Redis's error handler builds, read off the stack
/// (`luaExtractErrorInformation`: the texts are C strings, cut at a NUL).
#[derive(Default)]
pub(crate) struct ScriptFailure {
    pub err: Option<String>,
    pub source: Option<String>,
    pub line: Option<i64>,
    pub is_table: bool,
    /// Not a table: the error value as a string, if it is one.
    pub text: Option<Vec<u8>>,
}

/// The failure left at `idx` by a script's protected call.
///
/// # Safety
///
/// As [`to_reply`]: the main state after the call, the cap lifted, two free slots. Fields are read
/// raw; a number field is converted in place, which allocates, and cannot raise with no cap.
pub(crate) unsafe fn read_failure(l: *mut ffi::lua_State, idx: c_int) -> ScriptFailure {
    let t = if idx < 0 { ffi::lua_gettop(l) + idx + 1 } else { idx };
    if ffi::lua_type(l, t) != ffi::LUA_TTABLE {
        let text = if ffi::lua_type(l, t) == ffi::LUA_TSTRING { string_at(l, t) } else { None };
        return ScriptFailure { text, ..Default::default() };
    }
    let top = ffi::lua_gettop(l);
    let text = |l, name| {
        let ty = raw_field(l, t, name);
        let v = if ty == ffi::LUA_TSTRING || ty == ffi::LUA_TNUMBER {
            let mut len = 0usize;
            let p = ffi::lua_tolstring(l, -1, &mut len);
            Some(
                String::from_utf8_lossy(super::stack::cstr(std::slice::from_raw_parts(p as *const u8, len)))
                    .into_owned(),
            )
        } else {
            None
        };
        ffi::lua_settop(l, top);
        v
    };
    let err = text(l, c"err");
    let source = text(l, c"source");
    let line = {
        let v = if raw_field(l, t, c"line") == ffi::LUA_TNUMBER { Some(ffi::lua_tonumber(l, -1) as i64) } else { None };
        ffi::lua_settop(l, top);
        v
    };
    ScriptFailure { err, source, line, is_table: true, text: None }
}
