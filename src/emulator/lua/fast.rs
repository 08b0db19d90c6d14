//! The hot path of scripting on the raw Lua C API: `redis.call`/`redis.pcall` read their arguments
//! straight off the Lua stack and push replies back without going through mlua values, and a script
//! call builds KEYS/ARGV and converts its result the same way. Everything here follows one rule: no
//! Rust value that owns memory is alive when a Lua error is raised (a raise unwinds by longjmp).
//! The one place Lua is called while Rust holds something (the keyspace borrow) is
//! [`LuaSink::bulks`], which pushes only what cannot raise but for running out of memory.
use std::cell::RefCell;
use std::os::raw::c_int;
use std::rc::Rc;

use mlua::ffi;

use super::libs::cvt_i64;
use super::libs::raw::push_bytes;
use super::{call_checked, one_line, RunState};
use crate::emulator::core::Core;
use crate::emulator::reply::{fmt_g, Reply, ReplySink};

/// What the C functions need; owned by the VM and handed to them as a light userdata upvalue.
pub(crate) struct CallCtx {
    pub core: Rc<RefCell<Core>>,
    pub state: Rc<RunState>,
    /// Scratch space for numbers formatted as arguments (reused, so a call allocates nothing).
    pub numbuf: RefCell<Vec<u8>>,
    /// Redis's `math.random` stream (shared by every VM of a server, as Redis's is).
    pub rng: Rc<super::rand48::Rand48>,
}

/// Most commands have few arguments: up to this many are kept on the stack.
const INLINE_ARGS: usize = 16;

/// Formats a Lua number argument as Redis 7.0 does (`%.17g`), with a fast path for integers.
fn push_number(buf: &mut Vec<u8>, n: f64) {
    if n.fract() == 0.0 && n.abs() < 1e17 && !(n == 0.0 && n.is_sign_negative()) {
        buf.extend_from_slice(itoa::Buffer::new().format(n as i64).as_bytes());
    } else {
        buf.extend_from_slice(fmt_g(n, 17).as_bytes());
    }
}

/// Where `redis.call` writes a command's reply: onto the Lua stack, as `redisProtocolToLuaType`.
struct LuaSink {
    l: *mut ffi::lua_State,
    resp: u8,
    /// The reply was an error (`redis.call` raises it).
    failed: bool,
}

impl ReplySink for LuaSink {
    /// `redisProtocolToLuaType_VerbatimString`.
    fn verbatim(&mut self, format: &[u8], text: &[u8]) {
        let l = self.l;
        self.failed = false;
        // SAFETY: the C function's frame; four slots are checked for.
        unsafe {
            ffi::luaL_checkstack(l, 5, c"reply too deep".as_ptr());
            ffi::lua_createtable(l, 0, 0);
            ffi::lua_pushstring(l, c"verbatim_string".as_ptr());
            ffi::lua_createtable(l, 0, 0);
            ffi::lua_pushstring(l, c"string".as_ptr());
            push_bytes(l, text);
            ffi::lua_settable(l, -3);
            ffi::lua_pushstring(l, c"format".as_ptr());
            push_bytes(l, format);
            ffi::lua_settable(l, -3);
            ffi::lua_settable(l, -3);
        }
    }
    fn reply(&mut self, r: Reply) {
        self.failed = r.is_error();
        // SAFETY: the C function's frame, with the arguments below.
        unsafe { push_reply(self.l, &r, self.resp) }
    }
    /// Pushed while the command still borrows the keyspace (the values are its own bytes). Nothing
    /// here raises a Lua error (which would leave the borrow taken): a flat array takes two of the
    /// LUA_MINSTACK slots a C function is given, so no stack check; the memory cap is lifted while
    /// it pushes and, if the reply took the script past it, the script is killed at its next loop
    /// or call (see `super::memory_hit`); only the machine running out of memory could raise.
    fn bulks(&mut self, n: usize, items: &mut dyn Iterator<Item = Option<&[u8]>>) {
        let l = self.l;
        // SAFETY: push_array's flat case: the same table, the same elements (a nil as push_reply
        // pushes Reply::Nil, which allocates nothing). The cap's fields point into the state.
        unsafe {
            let m = super::ext::memcap(l);
            let cap = std::mem::replace(&mut *m.cap, usize::MAX);
            let _restore = RestoreCap { l, m, cap };
            new_array(l, n, self.resp);
            for (i, x) in items.enumerate() {
                match x {
                    Some(b) => push_bytes(l, b),
                    None => push_reply(l, &Reply::Nil, self.resp),
                }
                ffi::lua_rawseti_(l, -2, (i + 1) as c_int);
            }
        }
    }
}

/// Puts the memory cap back when [`LuaSink::bulks`] is done, and flags the script if the reply took
/// it past the cap (the budget hook then kills it at its next loop or call).
struct RestoreCap {
    l: *mut ffi::lua_State,
    m: super::ext::MemCap,
    cap: usize,
}

impl Drop for RestoreCap {
    fn drop(&mut self) {
        // SAFETY: the fields point into the running state's global state.
        unsafe {
            *self.m.cap = self.cap;
            if *self.m.totalbytes > self.cap {
                *self.m.hit = 1;
                ffi::lua_sethook(self.l, Some(super::budget_hook), ffi::LUA_MASKCOUNT, 1);
            }
        }
    }
}

/// Runs the command given by the Lua arguments 1..=n; never raises. A command with a direct form
/// pushes its reply through `out` (None); any other reply is returned, to be pushed once nothing
/// here holds memory or a borrow.
unsafe fn run_from_stack(l: *mut ffi::lua_State, ctx: &CallCtx, out: &mut LuaSink) -> Option<Reply> {
    use super::ext::{lua_peekargs, PeekArg};
    let n = ffi::lua_gettop(l) as usize;
    if n == 0 {
        lib_error(l, out, b"Please specify at least one argument for this redis lib call");
        return None;
    }
    // The arguments, described in one pass by C (no conversion, nothing pushed): on the stack for
    // the usual few, on the heap beyond that.
    let mut inline = std::mem::MaybeUninit::<[PeekArg; INLINE_ARGS]>::uninit();
    let mut heap: Vec<PeekArg> = Vec::new();
    let args: &mut [PeekArg] = if n <= INLINE_ARGS {
        lua_peekargs(l, n as c_int, inline.as_mut_ptr().cast());
        // SAFETY: lua_peekargs wrote the first n.
        std::slice::from_raw_parts_mut(inline.as_mut_ptr().cast(), n)
    } else {
        heap.reserve_exact(n);
        lua_peekargs(l, n as c_int, heap.as_mut_ptr());
        heap.set_len(n);
        &mut heap
    };
    // Numbers are formatted first, all into one buffer (each one's length kept in its `len`), so
    // that slices of the buffer can be taken after.
    let mut numbuf = ctx.numbuf.borrow_mut();
    numbuf.clear();
    for a in args.iter_mut() {
        match a.ty {
            ffi::LUA_TSTRING => {}
            ffi::LUA_TNUMBER => {
                let before = numbuf.len();
                push_number(&mut numbuf, a.num);
                a.len = numbuf.len() - before;
            }
            _ => {
                lib_error(l, out, b"Lua redis lib command arguments must be strings or integers");
                return None;
            }
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
unsafe fn lib_error(l: *mut ffi::lua_State, out: &mut LuaSink, msg: &[u8]) {
    super::helpers::push_error_buff(l, msg);
    out.failed = true;
}

unsafe fn push_field(l: *mut ffi::lua_State, field: &std::ffi::CStr, v: &[u8]) {
    ffi::lua_createtable(l, 0, 1);
    push_bytes(l, v);
    ffi::lua_setfield(l, -2, field.as_ptr());
}

/// Pushes a reply as `redis.call` returns it (`redisProtocolToLuaType`), under RESP2 or RESP3.
pub(crate) unsafe fn push_reply(l: *mut ffi::lua_State, r: &Reply, resp: u8) {
    // A scalar takes one slot, which a C function always has (LUA_MINSTACK); a container pushes
    // itself and then one element at a time (a nested one checks again).
    if matches!(r, Reply::Array(_) | Reply::Set(_) | Reply::Map(_) | Reply::Status(_) | Reply::Error(_) | Reply::Double(_)) {
        ffi::luaL_checkstack(l, 4, c"reply too deep".as_ptr());
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
        Reply::Array(v) => push_array(l, v, resp),
        Reply::Set(v) if resp == 2 => push_array(l, v, resp),
        // Redis builds these tables with lua_newtable and one key at a time; the layout that gives
        // decides the order `pairs` sees and what `#` says of an array with nils, so no presizing.
        Reply::Set(v) => {
            ffi::lua_createtable(l, 0, 1);
            ffi::lua_createtable(l, 0, 0);
            for x in v {
                push_reply(l, x, resp);
                ffi::lua_pushboolean(l, 1);
                ffi::lua_rawset(l, -3);
            }
            ffi::lua_setfield(l, -2, c"set".as_ptr());
        }
        Reply::Map(kv) if resp == 3 => {
            ffi::lua_createtable(l, 0, 1);
            ffi::lua_createtable(l, 0, 0);
            for (k, x) in kv {
                push_reply(l, k, resp);
                push_reply(l, x, resp);
                ffi::lua_rawset(l, -3);
            }
            ffi::lua_setfield(l, -2, c"map".as_ptr());
        }
        Reply::Map(kv) => {
            ffi::lua_createtable(l, (kv.len() * 2) as c_int, 0);
            for (i, (k, x)) in kv.iter().enumerate() {
                push_reply(l, k, resp);
                ffi::lua_rawseti_(l, -2, (2 * i + 1) as c_int);
                push_reply(l, x, resp);
                ffi::lua_rawseti_(l, -2, (2 * i + 2) as c_int);
            }
        }
        Reply::Double(d) if resp == 3 => {
            ffi::lua_createtable(l, 0, 1);
            ffi::lua_pushnumber(l, *d);
            ffi::lua_setfield(l, -2, c"double".as_ptr());
        }
        Reply::Double(d) => push_bytes(l, crate::emulator::reply::format_double(*d).as_bytes()),
        Reply::Bool(b) if resp == 3 => ffi::lua_pushboolean(l, *b as c_int),
        Reply::Bool(b) => ffi::lua_pushnumber(l, *b as i64 as f64),
    }
}

/// `redisProtocolToLuaType_Error`: luaPushErrorBuff of "-<text>", flagged as already counted
/// (`ignore_error_stats_update`). Out of line: errors are rare, and `push_reply` stays small.
#[cold]
#[inline(never)]
unsafe fn push_error_reply(l: *mut ffi::lua_State, s: &str) {
    ffi::lua_pushstring(l, c"-".as_ptr());
    push_bytes(l, s.as_bytes());
    ffi::lua_concat(l, 2);
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, -1, &mut len);
    super::helpers::push_error_buff(l, std::slice::from_raw_parts(p.cast::<u8>(), len));
    ffi::lua_remove(l, -2);
    ffi::lua_pushstring(l, c"ignore_error_stats_update".as_ptr());
    ffi::lua_pushboolean(l, 1);
    ffi::lua_settable(l, -3);
}

/// The table for an array reply of `n` elements. Under RESP3 an element may be nil (a hole): the
/// table grows as Redis's does (see push_reply). Under RESP2 there are no holes and presizing gives
/// the same table.
unsafe fn new_array(l: *mut ffi::lua_State, n: usize, resp: u8) {
    ffi::lua_createtable(l, if resp == 3 { 0 } else { n as c_int }, 0);
}

unsafe fn push_array(l: *mut ffi::lua_State, v: &[Reply], resp: u8) {
    new_array(l, v.len(), resp);
    for (i, x) in v.iter().enumerate() {
        push_reply(l, x, resp);
        ffi::lua_rawseti_(l, -2, (i + 1) as c_int);
    }
}

unsafe fn generic_call(l: *mut ffi::lua_State, raise: bool) -> c_int {
    let failed = {
        let ctx = &*(ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *const CallCtx);
        let mut out = LuaSink { l, resp: ctx.state.resp.get(), failed: false };
        if let Some(reply) = run_from_stack(l, ctx, &mut out) {
            out.reply(reply);
        }
        out.failed
    };
    if raise && failed {
        ffi::lua_error(l);
    }
    1
}

/// `redis.call`: raises the error table of a failed command (from a C frame, as in Redis).
pub(crate) unsafe extern "C-unwind" fn redis_call_c(l: *mut ffi::lua_State) -> c_int {
    generic_call(l, true)
}

/// `redis.pcall`: returns the error table instead.
pub(crate) unsafe extern "C-unwind" fn redis_pcall_c(l: *mut ffi::lua_State) -> c_int {
    generic_call(l, false)
}

/// Sets the global `name` (from `lua_fixedstring`) to an array of the given strings, as Redis sets
/// KEYS and ARGV before each call (`lua_setglobalstrings` in our Lua: it refills the old table when
/// no script could tell a new one from it).
pub(crate) unsafe fn set_string_array(l: *mut ffi::lua_State, name: *const std::ffi::c_void, items: &[&[u8]]) {
    use super::ext::{lua_setglobalstrings, PeekArg};
    let describe = |s: &&[u8]| PeekArg { str: s.as_ptr(), len: s.len(), num: 0.0, ty: ffi::LUA_TSTRING };
    if items.len() <= INLINE_ARGS {
        let mut inline = std::mem::MaybeUninit::<[PeekArg; INLINE_ARGS]>::uninit();
        let first: *mut PeekArg = inline.as_mut_ptr().cast();
        for (i, s) in items.iter().enumerate() {
            first.add(i).write(describe(s));
        }
        // SAFETY: the C side reads the first items.len() entries, all written above.
        lua_setglobalstrings(l, name, items.len() as c_int, first);
    } else {
        let all: Vec<PeekArg> = items.iter().map(describe).collect();
        lua_setglobalstrings(l, name, all.len() as c_int, all.as_ptr());
    }
}

fn string_at(l: *mut ffi::lua_State, idx: c_int) -> Option<Vec<u8>> {
    // SAFETY: reads a value on the stack; lua_tolstring is only called on strings (no conversion).
    unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TSTRING {
            return None;
        }
        let mut len = 0usize;
        let p = ffi::lua_tolstring(l, idx, &mut len);
        Some(std::slice::from_raw_parts(p as *const u8, len).to_vec())
    }
}

unsafe fn raw_field(l: *mut ffi::lua_State, t: c_int, name: &std::ffi::CStr) -> c_int {
    ffi::lua_pushstring(l, name.as_ptr());
    ffi::lua_rawget(l, t);
    ffi::lua_type(l, -1)
}

/// A script's return value at `idx` as the reply Redis sends (`luaReplyToRedisReply`).
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
            return restore(Reply::Error(one_line(&String::from_utf8_lossy(super::helpers::cstr(&s)))));
        }
        ffi::lua_settop(l, top);
        if raw_field(l, t, c"ok") == ffi::LUA_TSTRING {
            let s = string_at(l, -1).unwrap_or_default();
            return restore(Reply::Status(one_line(&String::from_utf8_lossy(super::helpers::cstr(&s)))));
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
        // A verbatim string goes to a RESP2 client as a bulk string of its text.
        if raw_field(l, t, c"verbatim_string") == ffi::LUA_TTABLE {
            let v = ffi::lua_gettop(l);
            if raw_field(l, v, c"format") == ffi::LUA_TSTRING && raw_field(l, v, c"string") == ffi::LUA_TSTRING {
                return restore(Reply::Bulk(string_at(l, -1).unwrap_or_default()));
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
            Some(String::from_utf8_lossy(super::helpers::cstr(std::slice::from_raw_parts(p as *const u8, len))).into_owned())
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
