//! Redis 7.0's Lua helpers as C functions, the way Redis writes them (`script_lua.c`): the global
//! `pcall`, `redis.log`, `redis.set_repl`, `redis.setresp`, `redis.sha1hex`, `redis.error_reply`,
//! `redis.status_reply`, `redis.acl_check_cmd`, the globals' `__index`, and `math.random` and
//! `math.randomseed` over Redis's `lrand48` stream.
//!
//! Being C functions (not Lua wrappers), they add the frames Redis's add and no other: `error`
//! levels, `luaL_where` positions, `luaL_argerror`'s function names and the error handler's
//! "skip one C frame" all come out as in Redis. Their errors are Redis's too: `luaPushError` +
//! `luaError` raise a table `{err = "ERR <msg>"}`, which `pcall` turns into its string.
//!
//! Every function here follows [`super::fast`]'s rule: nothing that owns memory is alive when a Lua
//! error is raised (a raise unwinds by longjmp).
use std::os::raw::c_int;

use mlua::ffi;

use super::context::CallCtx;
use super::cvt::cvt_i32;
use super::raw;
use super::stack::{cstr, push_bytes, push_error_buff};
use crate::cmd;

/// The call context every helper gets as its first upvalue.
///
/// # Safety
///
/// `l` runs a C function whose upvalue 1 is a light userdata pointing to the VM's [`CallCtx`]
/// (`c_closure` and `functions::install_globals` make them so). The context is owned by the VM
/// and dropped after its Lua state, so the reference is valid for the whole call; it is only ever
/// shared, never borrowed mutably.
unsafe fn ctx<'a>(l: *mut ffi::lua_State) -> &'a CallCtx {
    &*(ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *const CallCtx)
}

/// `luaPushError(msg); return luaError(L)`.
///
/// # Safety
///
/// `l` runs a C function (five free slots for [`push_error_buff`]) whose frames, up to the
/// protected call the raise lands in, hold nothing with a destructor: the raise unwinds by longjmp.
unsafe fn raise(l: *mut ffi::lua_State, msg: &'static str) -> ! {
    push_error_buff(l, msg.as_bytes());
    ffi::lua_error(l)
}

/// Redis 7.0's global `pcall` (`luaRedisPcall`): an error table with a string `err` is returned as
/// that string. A script killed by the budget is not allowed to catch the kill.
///
/// # Safety
///
/// Called by Lua only, as a C function whose upvalue 1 is the call context (see [`ctx`]). It holds
/// no Rust value at all: the call it protects, the re-raise of a kill and `lua_getfield` on an
/// error table (which may run an `__index`, or allocate the key past the memory cap) may all raise
/// through it freely. The stack holds the arguments plus at most two slots of the LUA_MINSTACK.
pub(crate) unsafe extern "C-unwind" fn pcall(l: *mut ffi::lua_State) -> c_int {
    let argc = ffi::lua_gettop(l);
    if argc == 0 {
        // Redis calls lua_pcall with -1 arguments here, which calls the stale stack slot above the
        // placeholder: a boolean.
        ffi::lua_pushboolean(l, 0);
        ffi::lua_pushstring(l, c"attempt to call a boolean value".as_ptr());
        return 2;
    }
    ffi::lua_pushboolean(l, 1);
    ffi::lua_insert(l, 1);
    if ffi::lua_pcall(l, argc - 1, ffi::LUA_MULTRET, 0) != 0 {
        if ctx(l).state.killed.get() {
            ffi::lua_error(l);
        }
        ffi::lua_remove(l, 1);
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            ffi::lua_getfield(l, -1, c"err".as_ptr());
            // (7.0.15 leaves a non-string `err` on the stack: it is returned too.)
            if ffi::lua_isstring(l, -1) != 0 {
                ffi::lua_replace(l, -2);
            }
        }
        ffi::lua_pushboolean(l, 0);
        ffi::lua_insert(l, 1);
    }
    ffi::lua_gettop(l)
}

/// `redis.log(level, ...)`: the level is a number or a numeric string, converted to a C int.
///
/// # Safety
///
/// Called by Lua only, as a C function. It holds nothing with a destructor, so its raises (and the
/// allocations they make) unwind past plain values only; reading the level allocates nothing.
pub(crate) unsafe extern "C-unwind" fn log(l: *mut ffi::lua_State) -> c_int {
    let argc = ffi::lua_gettop(l);
    if argc < 2 {
        raise(l, "redis.log() requires two arguments or more.");
    }
    if ffi::lua_isnumber(l, 1) == 0 {
        raise(l, "First argument must be a number (log level).");
    }
    let level = cvt_i32(ffi::lua_tonumber(l, 1));
    if !(0..=3).contains(&level) {
        raise(l, "Invalid debug level.");
    }
    // The log itself goes nowhere: the emulator has no log file.
    0
}

/// `redis.set_repl(flags)`: any value, converted as `(int)lua_tonumber`.
///
/// # Safety
///
/// Called by Lua only, as a C function; it holds nothing with a destructor when it raises.
pub(crate) unsafe extern "C-unwind" fn set_repl(l: *mut ffi::lua_State) -> c_int {
    if ffi::lua_gettop(l) != 1 {
        // (Redis 7.0's own text says "two" although it wants one.)
        raise(l, "redis.set_repl() requires two arguments.");
    }
    let flags = cvt_i32(ffi::lua_tonumber(l, -1));
    if flags & !3 != 0 {
        raise(l, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.");
    }
    // REPL_REPLICA (2) is the bit that sends the script's commands to replicas; the emulator keeps
    // no AOF. No borrow of the core is held while Lua code runs.
    if let Ok(mut core) = ctx(l).core.try_borrow_mut() {
        core.script_repl_off = flags & 2 == 0;
    }
    0
}

/// `redis.setresp(2|3)`: converted as `(int)lua_tonumber`.
///
/// # Safety
///
/// Called by Lua only, as a C function whose upvalue 1 is the call context (see [`ctx`]); it holds
/// nothing with a destructor when it raises.
pub(crate) unsafe extern "C-unwind" fn setresp(l: *mut ffi::lua_State) -> c_int {
    let argc = ffi::lua_gettop(l);
    if argc != 1 {
        raise(l, "redis.setresp() requires one argument.");
    }
    let resp = cvt_i32(ffi::lua_tonumber(l, -argc));
    if resp != 2 && resp != 3 {
        raise(l, "RESP version must be 2 or 3.");
    }
    ctx(l).state.resp.set(resp as u8);
    0
}

/// `redis.sha1hex(x)`: a string or number (as Lua formats it); anything else hashes as "".
///
/// # Safety
///
/// Called by Lua only, as a C function. The bytes read stay valid while argument 1 is on the
/// stack (a number is converted there, in place). Its Rust values (the digest, the hex digits)
/// are plain arrays, so the raises its conversion and push can make past the memory cap skip no
/// destructor.
pub(crate) unsafe extern "C-unwind" fn sha1hex(l: *mut ffi::lua_State) -> c_int {
    if ffi::lua_gettop(l) != 1 {
        raise(l, "wrong number of arguments");
    }
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, 1, &mut len);
    let bytes: &[u8] = if p.is_null() { &[] } else { std::slice::from_raw_parts(p.cast(), len) };
    let hex = sha1_smol::Sha1::from(bytes).digest().bytes();
    let mut out = [0u8; 40];
    for (i, b) in hex.iter().enumerate() {
        out[2 * i] = b"0123456789abcdef"[(b >> 4) as usize];
        out[2 * i + 1] = b"0123456789abcdef"[(b & 15) as usize];
    }
    push_bytes(l, &out);
    1
}

/// `redis.error_reply(s)`: `{err = s}` with a `-` added when missing, as `luaPushErrorBuff` builds it;
/// with a bad argument the error table is returned, not raised.
///
/// # Safety
///
/// Called by Lua only, as a C function. The slices handed to `push_error_buff` point into Lua
/// strings that stay on the stack below what it pushes (argument 1, or the concatenation left on
/// top); it holds only borrowed slices, so a raise past the memory cap skips no destructor.
pub(crate) unsafe extern "C-unwind" fn error_reply(l: *mut ffi::lua_State) -> c_int {
    if ffi::lua_gettop(l) != 1 || ffi::lua_type(l, -1) != ffi::LUA_TSTRING {
        push_error_buff(l, b"wrong number or type of arguments");
        return 1;
    }
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, -1, &mut len);
    let s = cstr(std::slice::from_raw_parts(p.cast::<u8>(), len));
    if s.first() == Some(&b'-') {
        push_error_buff(l, s);
    } else {
        ffi::lua_pushstring(l, c"-".as_ptr());
        push_bytes(l, s);
        ffi::lua_concat(l, 2);
        let mut len = 0usize;
        let p = ffi::lua_tolstring(l, -1, &mut len);
        push_error_buff(l, std::slice::from_raw_parts(p.cast::<u8>(), len));
    }
    1
}

/// `redis.status_reply(s)`: `{ok = s}` (the string kept whole; the reply cuts it at a NUL).
///
/// # Safety
///
/// Called by Lua only, as a C function; it holds no Rust value.
pub(crate) unsafe extern "C-unwind" fn status_reply(l: *mut ffi::lua_State) -> c_int {
    if ffi::lua_gettop(l) != 1 || ffi::lua_type(l, -1) != ffi::LUA_TSTRING {
        push_error_buff(l, b"wrong number or type of arguments");
        return 1;
    }
    ffi::lua_createtable(l, 0, 0);
    ffi::lua_pushstring(l, c"ok".as_ptr());
    ffi::lua_pushvalue(l, -3);
    ffi::lua_settable(l, -3);
    1
}

/// `redis.acl_check_cmd(cmd, ...)`: whether the script's caller's ACL user may run that command
/// with those arguments (its keys and channels included); arguments are checked as `redis.call`'s are.
///
/// # Safety
///
/// Called by Lua only, as a C function. Its buffers live only inside the block that looks the
/// command up, where the Lua calls made (types, numbers, strings read without conversion) cannot
/// raise; every raise comes after the block, with nothing owned alive.
pub(crate) unsafe extern "C-unwind" fn acl_check_cmd(l: *mut ffi::lua_State) -> c_int {
    let argc = ffi::lua_gettop(l);
    if argc == 0 {
        raise(l, "Please specify at least one argument for this redis lib call");
    }
    for i in 1..=argc {
        let t = ffi::lua_type(l, i);
        if t != ffi::LUA_TNUMBER && t != ffi::LUA_TSTRING {
            raise(l, "Lua redis lib command arguments must be strings or integers");
        }
    }
    let known = {
        let mut nbuf = Vec::new();
        let name = arg_bytes(l, 1, &mut nbuf);
        match cmd::lookup(name) {
            // A Redis command the emulator does not implement: the one user may run it too.
            None => {
                let mut sbuf = Vec::new();
                let args: Vec<&[u8]> = if argc >= 2 { vec![name, arg_bytes(l, 2, &mut sbuf)] } else { vec![name] };
                cmd::command::redis_lookup(&args).is_ok()
            }
            Some(spec) if argc >= 2 => match crate::cmd::command::subcommands(spec.name) {
                None => true,
                Some(subs) => {
                    let mut sbuf = Vec::new();
                    let sub = arg_bytes(l, 2, &mut sbuf);
                    subs.iter().any(|s| sub.eq_ignore_ascii_case(s.name.as_bytes()))
                }
            },
            Some(_) => true,
        }
    };
    if !known {
        raise(l, "Invalid command passed to redis.acl_check_cmd()");
    }
    let allowed = {
        let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); argc as usize];
        let mut args: Vec<&[u8]> = Vec::with_capacity(argc as usize);
        for (i, buf) in bufs.iter_mut().enumerate() {
            let a = arg_bytes(l, i as c_int + 1, buf);
            args.push(std::slice::from_raw_parts(a.as_ptr(), a.len()));
        }
        let core = ctx(l).core.borrow();
        let user = core
            .clients
            .get(core.caller.index())
            .and_then(Option::as_ref)
            .and_then(|c| core.acl.user(c.user.as_deref()));
        user.is_none_or(|u| u.check(&args).is_ok())
    };
    ffi::lua_pushboolean(l, allowed as c_int);
    1
}

/// Argument `i` (a string or a number) as `redis.call` sends it (`%.17g` for numbers).
///
/// # Safety
///
/// Argument `i` of the running C function is a string or a number (checked by the caller), so
/// nothing is converted and nothing raises; a string's bytes stay valid while it is on the stack,
/// which the returned lifetime (tied to `buf`) does not enforce: the caller uses them within the call.
unsafe fn arg_bytes(l: *mut ffi::lua_State, i: c_int, buf: &mut Vec<u8>) -> &[u8] {
    if ffi::lua_type(l, i) == ffi::LUA_TNUMBER {
        buf.clear();
        crate::reply::write_g(buf, ffi::lua_tonumber(l, i), 17);
        buf
    } else {
        let mut len = 0usize;
        let p = ffi::lua_tolstring(l, i, &mut len);
        std::slice::from_raw_parts(p.cast(), len)
    }
}

/// `redis.breakpoint()`: false, no debugger session being active.
///
/// # Safety
///
/// Called by Lua only, as a C function (one of its LUA_MINSTACK slots takes the result).
pub(crate) unsafe extern "C-unwind" fn breakpoint(l: *mut ffi::lua_State) -> c_int {
    ffi::lua_pushboolean(l, 0);
    1
}

/// `redis.debug(...)`: nothing without a debugger session.
///
/// # Safety
///
/// Called by Lua only, as a C function; it touches nothing.
pub(crate) unsafe extern "C-unwind" fn debug(_: *mut ffi::lua_State) -> c_int {
    0
}

/// `redis.replicate_commands()`: always true in 7.0.
///
/// # Safety
///
/// Called by Lua only, as a C function (one of its LUA_MINSTACK slots takes the result).
pub(crate) unsafe extern "C-unwind" fn replicate_commands(l: *mut ffi::lua_State) -> c_int {
    ffi::lua_pushboolean(l, 1);
    1
}

/// The globals' `__index` (`luaProtectedTableError`).
///
/// # Safety
///
/// Called by Lua only, as a C function (the `__index` of a protected table: the table and the key).
pub(crate) unsafe extern "C-unwind" fn protected_table_error(l: *mut ffi::lua_State) -> c_int {
    raw::run(l, protected_table_error_body)
}

/// # Safety
///
/// A body for [`raw::run`]: `l` runs the C function above. A number key is converted in place
/// (an allocation, with the cap lifted by `raw::run`); the name's bytes stay valid while the key is
/// on the stack, and the message is built in Rust and returned, not raised here.
unsafe fn protected_table_error_body(l: *mut ffi::lua_State) -> raw::R<c_int> {
    if ffi::lua_gettop(l) != 2 {
        return Err(raw::error(l, "Wrong number of arguments to luaProtectedTableError"));
    }
    if ffi::lua_isstring(l, -1) == 0 {
        return Err(raw::error(l, "Second argument to luaProtectedTableError must be a string or number"));
    }
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, -1, &mut len);
    let name = cstr(std::slice::from_raw_parts(p.cast::<u8>(), len));
    let mut m = b"Script attempted to access nonexistent global variable '".to_vec();
    m.extend_from_slice(name);
    m.push(b'\'');
    Err(raw::error(l, m))
}

/// `luaL_checkint`: `luaL_checkinteger` cast to a C int (wrapping).
///
/// # Safety
///
/// As [`raw::check_integer`]: `l` runs a C function; nothing is raised here.
unsafe fn check_int(l: *mut ffi::lua_State, narg: c_int) -> raw::R<i32> {
    Ok(raw::check_integer(l, narg)? as i32)
}

/// Redis's `math.random` (`redis_math_random`): the draw comes first, so a failing call still
/// advances the stream.
///
/// # Safety
///
/// Called by Lua only, as a C function whose upvalue 1 is the call context (see [`ctx`]).
pub(crate) unsafe extern "C-unwind" fn math_random(l: *mut ffi::lua_State) -> c_int {
    raw::run(l, math_random_body)
}

/// # Safety
///
/// A body for [`raw::run`], for the C function above (upvalue 1 the call context); it pushes one
/// number into the LUA_MINSTACK slots and raises nothing itself.
unsafe fn math_random_body(l: *mut ffi::lua_State) -> raw::R<c_int> {
    let r = ctx(l).rng.next_unit();
    match ffi::lua_gettop(l) {
        0 => ffi::lua_pushnumber(l, r),
        1 => {
            let u = check_int(l, 1)?;
            if u < 1 {
                return Err(raw::arg_error(l, 1, "interval is empty"));
            }
            ffi::lua_pushnumber(l, (r * u as f64).floor() + 1.0);
        }
        2 => {
            let lo = check_int(l, 1)?;
            let up = check_int(l, 2)?;
            if lo > up {
                return Err(raw::arg_error(l, 2, "interval is empty"));
            }
            let span = up.wrapping_sub(lo).wrapping_add(1);
            ffi::lua_pushnumber(l, (r * span as f64).floor() + lo as f64);
        }
        _ => return Err(raw::error(l, "wrong number of arguments")),
    }
    Ok(1)
}

/// `math.randomseed(n)`: `redisSrand48(luaL_checkint(L, 1))`.
///
/// # Safety
///
/// Called by Lua only, as a C function whose upvalue 1 is the call context (see [`ctx`]).
pub(crate) unsafe extern "C-unwind" fn math_randomseed(l: *mut ffi::lua_State) -> c_int {
    raw::run(l, math_randomseed_body)
}

/// # Safety
///
/// A body for [`raw::run`], for the C function above (upvalue 1 the call context).
unsafe fn math_randomseed_body(l: *mut ffi::lua_State) -> raw::R<c_int> {
    let seed = check_int(l, 1)?;
    ctx(l).rng.seed(seed);
    Ok(0)
}
