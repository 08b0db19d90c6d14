//! Scripting behaviour checked against a real Redis 7.0.15 (expected texts recorded there).
use crate::{Emulator, Reply};

fn eval(e: &mut Emulator, body: &str) -> Reply {
    e.execute(&[b"EVAL", body.as_bytes(), b"0"])
}

fn err_with_sha(body: &str, text: &str, line: u32) -> Reply {
    Reply::Error(format!("{text} script: {}, on @user_script:{line}.", super::sha1_hex(body.as_bytes())))
}

#[test]
fn errors_carry_sha_and_line() {
    let mut e = Emulator::new();
    e.execute(&[b"SET", b"s", b"abc"]);
    for (body, text) in [
        ("return redis.call('incr','s')", "ERR value is not an integer or out of range"),
        ("x = 1", "ERR user_script:1: Attempt to modify a readonly table"),
        ("return y", "ERR user_script:1: Script attempted to access nonexistent global variable 'y'"),
        ("rawset(_G,'x',1)", "ERR Attempt to modify a readonly table"),
        ("error('boom')", "ERR user_script:1: boom"),
        ("error('ERR x', 0)", "ERR ERR x"),
        ("error({err='X boom'})", "X boom"),
        ("error(nil)", "ERR nil"),
        ("error(12)", "ERR user_script:1: 12"),
        ("return redis.call('nosuch')", "ERR Unknown Redis command called from script"),
        ("return redis.call('get')", "ERR Wrong number of args calling Redis command from script"),
        ("return redis.call('incr', {})", "ERR Lua redis lib command arguments must be strings or integers"),
        (
            "local ok,e=pcall(redis.call,'incr','s'); error(e)",
            "ERR user_script:1: ERR value is not an integer or out of range",
        ),
    ] {
        assert_eq!(eval(&mut e, body), err_with_sha(body, text, 1), "{body}");
    }
    for name in ["os", "io", "print", "debug", "require", "dofile", "loadfile"] {
        let body = format!("return type({name})");
        let want = format!("ERR user_script:1: Script attempted to access nonexistent global variable '{name}'");
        assert_eq!(eval(&mut e, &body), err_with_sha(&body, &want, 1));
    }
    let body = "local function f()\n return redis.call('incr','s')\nend\n\nreturn f()";
    assert_eq!(eval(&mut e, body), err_with_sha(body, "ERR value is not an integer or out of range", 2));
}

#[test]
fn conversions() {
    let mut e = Emulator::new();
    e.execute(&[b"SET", b"s", b"abc"]);
    let cases: Vec<(&str, Reply)> = vec![
        ("return redis.pcall('incr','s')", Reply::err("ERR value is not an integer or out of range")),
        (
            "local ok,e=pcall(redis.call,'incr','s'); return e",
            Reply::bulk("ERR value is not an integer or out of range"),
        ),
        ("local ok,e=pcall(error,{err='abc'}); return type(e)", Reply::bulk("string")),
        ("return redis.error_reply('MY code')", Reply::err("MY code")),
        ("return redis.error_reply('nocode')", Reply::err("ERR nocode")),
        ("return {err='nocode'}", Reply::err("nocode")),
        ("return redis.pcall('nosuch')", Reply::err("ERR Unknown Redis command called from script")),
        ("return {1,2,nil,4}", Reply::Array(vec![Reply::Int(1), Reply::Int(2)])),
        ("return 100.9", Reply::Int(100)),
        ("return -3.9", Reply::Int(-3)),
        ("return 1e20", Reply::Int(i64::MIN)),
        ("return {ok='fine'}", Reply::Status("fine".into())),
        ("return true", Reply::Int(1)),
        ("return false", Reply::Nil),
        ("redis.call('set','f',0.1); return redis.call('get','f')", Reply::bulk("0.10000000000000001")),
        ("redis.call('set','f',1e20); return redis.call('get','f')", Reply::bulk("1e+20")),
        ("return tostring(1700000000123456)", Reply::bulk("1.7000000001235e+15")),
        ("return redis.call('get','nokey')", Reply::Nil),
        ("return type(redis.call('get','nokey'))", Reply::bulk("boolean")),
        ("return redis.call('set','a','1').ok", Reply::bulk("OK")),
    ];
    for (body, want) in cases {
        assert_eq!(eval(&mut e, body), want, "{body}");
    }
}

#[test]
fn runaway_script_is_stopped_and_the_emulator_survives() {
    let mut e = Emulator::new();
    e.set_script_budget(1_000_000);
    let r = eval(&mut e, "local i = 0 while true do i = i + 1 end");
    match r {
        Reply::Error(s) => assert!(s.contains("budget"), "{s}"),
        other => panic!("{other:?}"),
    }
    let r = eval(&mut e, "while true do pcall(function() while true do end end) end");
    assert!(r.is_error());
    // Every kind of loop and unbounded recursion reaches the budget (our Lua counts it on backward
    // jumps and function entries only).
    for body in [
        "repeat local x = 1 until x == 2",
        "for i = 1, 1e300 do end",
        "for k in function() return 1 end do end",
        "local function f() return f() end return f()",
        "local i = 0 while i >= 0 do i = i + 1 end",
        "local s = 'a' repeat s = s .. '' until s == 'b'",
    ] {
        match eval(&mut e, body) {
            // The kill names the script's line (each body is one line), also when it comes as a
            // function is entered.
            Reply::Error(s) => assert!(s.contains("budget") && s.ends_with("on @user_script:1."), "{body}: {s}"),
            other => panic!("{body}: {other:?}"),
        }
    }
    assert_eq!(eval(&mut e, "return 1+1"), Reply::Int(2));
}

#[test]
fn script_cache_and_evalsha() {
    let mut e = Emulator::new();
    let sha = e.script_load(b"return ARGV[1]..KEYS[1]").unwrap();
    assert_eq!(e.execute(&[b"EVALSHA", sha.as_bytes(), b"1", b"k", b"v"]), Reply::bulk("vk"));
    assert_eq!(e.execute(&[b"EVALSHA", sha.to_uppercase().as_bytes(), b"1", b"k", b"v"]), Reply::bulk("vk"));
    assert_eq!(e.execute(&[b"SCRIPT", b"FLUSH"]), Reply::ok());
    assert_eq!(
        e.execute(&[b"EVALSHA", sha.as_bytes(), b"1", b"k", b"v"]),
        Reply::err("NOSCRIPT No matching script. Please use EVAL.")
    );
    assert_eq!(
        e.execute(&[b"EVAL", b"return 1 +", b"0"]),
        Reply::err("ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'")
    );
}

#[test]
fn a_killed_script_cannot_survive_by_catching_the_kill() {
    let mut e = Emulator::new();
    e.set_script_budget(200_000);
    for body in [
        "local ok = pcall(function() while true do end end) return 'survived'",
        "local ok = xpcall(function() while true do end end, function(m) return m end) return 'survived'",
        "local co = coroutine.create(function() while true do end end) coroutine.resume(co) return 'survived'",
        "local ok = pcall(function() while true do end end) while true do pcall(error) end",
    ] {
        match eval(&mut e, body) {
            Reply::Error(s) => assert!(s.contains("budget"), "{body}: {s}"),
            other => panic!("{body}: {other:?}"),
        }
    }
    // The next script runs at the usual pace again.
    assert_eq!(eval(&mut e, "local n = 0 for i = 1, 100000 do n = n + 1 end return n"), Reply::Int(100_000));
}

#[test]
fn functions_load_call_and_keep_their_own_vm() {
    let mut e = Emulator::new();
    let lib =
        b"#!lua name=lib\nredis.register_function('f', function(keys, args) return {keys[1], args[1], redis.call('incr', keys[1])} end)";
    assert_eq!(e.execute(&[b"FUNCTION", b"LOAD", lib]), Reply::bulk("lib"));
    assert_eq!(
        e.execute(&[b"FCALL", b"f", b"1", b"k", b"a"]),
        Reply::Array(vec![Reply::bulk("k"), Reply::bulk("a"), Reply::Int(1)])
    );
    // SCRIPT FLUSH leaves functions alone; FUNCTION FLUSH removes them.
    assert_eq!(e.execute(&[b"SCRIPT", b"FLUSH"]), Reply::ok());
    assert_eq!(
        e.execute(&[b"FCALL", b"F", b"1", b"k", b"a"]).clone(),
        Reply::Array(vec![Reply::bulk("k"), Reply::bulk("a"), Reply::Int(2)])
    );
    assert_eq!(e.execute(&[b"FUNCTION", b"FLUSH"]), Reply::ok());
    assert_eq!(e.execute(&[b"FCALL", b"f", b"0"]), Reply::err("ERR Function not found"));
    // At load time only the library API is there.
    assert_eq!(
        e.execute(&[b"FUNCTION", b"LOAD", b"#!lua name=x\nredis.call('ping')"]),
        Reply::err("ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'")
    );
    // A runaway library is stopped at load time too.
    e.set_script_budget(100_000);
    match e.execute(&[b"FUNCTION", b"LOAD", b"#!lua name=x\nwhile true do end"]) {
        Reply::Error(s) => assert_eq!(s, "ERR Error registering functions: ERR FUNCTION LOAD timeout"),
        other => panic!("{other:?}"),
    }
    assert_eq!(e.execute(&[b"FUNCTION", b"LOAD", lib]), Reply::bulk("lib"));
    // A dump restores into an empty server.
    let Reply::Bulk(dump) = e.execute(&[b"FUNCTION", b"DUMP"]) else { panic!("dump") };
    let mut other = Emulator::new();
    assert_eq!(other.execute(&[b"FUNCTION", b"RESTORE", &dump]), Reply::ok());
    assert_eq!(
        other.execute(&[b"FCALL", b"f", b"1", b"k", b"a"]),
        Reply::Array(vec![Reply::bulk("k"), Reply::bulk("a"), Reply::Int(1)])
    );
}

#[test]
fn a_script_over_its_memory_cap_is_killed_and_the_emulator_survives() {
    let mut e = Emulator::new();
    e.set_script_memory(8 << 20);
    let killed = |r: &Reply| matches!(r, Reply::Error(s) if s.contains("bytes of Lua memory") && s.contains("8388608"));
    for body in [
        // A table that grows in a Lua loop, a string doubled in one, a C function's one big result,
        // and each of them under pcall, which must not keep the script alive.
        "local t = {} for i = 1, 1e7 do t[i] = i end return #t",
        "local s = 'x' for i = 1, 40 do s = s .. s end return #s",
        "return #string.rep('abcdefgh', 4e6)",
        "local ok = pcall(function() local t = {} for i = 1, 1e7 do t[i] = tostring(i) end end) return 'survived'",
        "local ok = pcall(string.rep, 'x', 1e8) return 'survived'",
        // Replies pushed by the emulator's own code (a new table of 10,000 elements per call).
        "local t = {} for i = 1, 200 do t[i] = redis.call('LRANGE', 'list', 0, -1) end return #t",
        "local t = {} for i = 1, 200 do t[i] = redis.pcall('HGETALL', 'hash') end return #t",
    ] {
        let items: Vec<Vec<u8>> = (0..10_000).map(|i| format!("item{i}").into_bytes()).collect();
        let mut rpush: Vec<&[u8]> = vec![b"RPUSH", b"list"];
        rpush.extend(items.iter().map(Vec::as_slice));
        e.execute(&rpush);
        let mut hset: Vec<&[u8]> = vec![b"HSET", b"hash"];
        hset.extend(items.iter().map(Vec::as_slice));
        e.execute(&hset);
        let r = eval(&mut e, body);
        assert!(killed(&r), "{body}: {r:?}");
        // The next script and commands run as usual, and the memory went back.
        assert_eq!(
            eval(&mut e, "local t = {} for i = 1, 1000 do t[i] = i end return #t"),
            Reply::Int(1000),
            "after {body}"
        );
        assert!(!e.execute(&[b"INCR", b"n"]).is_error());
    }
    // HMGET pushes its reply while it still reads the keyspace: a refusal there must not leave the
    // keyspace borrowed.
    let mut hset: Vec<Vec<u8>> = vec![b"HSET".to_vec(), b"wide".to_vec()];
    for i in 0..2_000 {
        hset.push(format!("f{i}").into_bytes());
        hset.push(format!("{i:01000}").into_bytes());
    }
    e.execute_owned(&hset);
    let body = "local f = {} for i = 1, 2000 do f[i] = 'f' .. (i - 1) end \
                local t = {} for i = 1, 50 do t[i] = redis.call('HMGET', 'wide', unpack(f)) end return #t";
    e.set_script_memory(1 << 20);
    let r = eval(&mut e, body);
    assert!(matches!(&r, Reply::Error(s) if s.contains("bytes of Lua memory")), "{r:?}");
    assert_eq!(e.execute(&[b"HLEN", b"wide"]), Reply::Int(2_000));
    assert_eq!(
        eval(&mut e, "return redis.call('HGET', 'wide', 'f7')"),
        Reply::Bulk(format!("{:01000}", 7).into_bytes())
    );
    e.set_script_memory(8 << 20);
    // Under the cap nothing changes, and a cap of 0 is no cap.
    assert_eq!(eval(&mut e, "return #string.rep('x', 1e6)"), Reply::Int(1_000_000));
    e.set_script_memory(0);
    assert_eq!(eval(&mut e, "return #string.rep('abcdefgh', 4e6)"), Reply::Int(32_000_000));
}

#[test]
fn long_strings_that_differ_in_a_few_chars_do_not_share_a_chain_of_the_string_table() {
    // Stock Lua 5.1.5 hashed one char in 33 of these strings (1,025 to 1,029 chars long): the 20,000
    // of them had 49 hashes, in chains of about 1,000 strings, each compared with every new one.
    // Hashed on every char, as Redis's Lua does, they spread as well as any strings.
    let lua = mlua::Lua::new();
    lua.load("T = {} for i = 1, 20000 do T[i] = string.rep('x', 1024) .. i end").exec().unwrap();
    let mut longest = 0;
    // SAFETY: exec_raw runs the closure under mlua's protected call on the live state;
    // lua_longeststringchain only reads its string table (it allocates and raises nothing, and
    // pushes and pops nothing). The closure captures a mutable reference, a plain value.
    unsafe { lua.exec_raw::<()>((), |l| longest = super::ext::lua_longeststringchain(l)).unwrap() };
    assert!((1..=32).contains(&longest), "longest chain of the string table: {longest}");
}

#[test]
fn an_allocation_loop_without_end_is_killed_at_the_cap_and_its_memory_freed() {
    let mut e = Emulator::new();
    e.set_script_memory(16 << 20);
    let kb = |e: &mut Emulator| match eval(e, "return collectgarbage('count')") {
        Reply::Int(kb) => kb,
        other => panic!("{other:?}"),
    };
    kb(&mut e);
    let before = kb(&mut e);
    for body in [
        "local t = {} while true do t[#t + 1] = string.rep('x', 1024) .. #t end",
        "local ok = pcall(function() local t = {} while true do t[#t + 1] = string.rep('x', 1024) .. #t end end) return 'survived'",
        // Millions of small strings: the string table grows to millions of slots, and must not stay so.
        "local t = {} while true do t[#t + 1] = 'k' .. #t end",
        "local t = {} while true do t[#t + 1] = {#t, 'k' .. #t, {}} end",
        "local s = string.rep('x', 1024) local t = {} while true do t[#t + 1] = s .. #t .. s end",
    ] {
        let r = eval(&mut e, body);
        assert!(matches!(&r, Reply::Error(s) if s.contains("more than 16777216 bytes of Lua memory")), "{body}: {r:?}");
        // Killed at the loop's next turn, as a runtime error: the reply names the script's line
        // (a script that caught the kill with pcall and returned has no line to name).
        if !body.contains("pcall") {
            assert!(matches!(&r, Reply::Error(s) if s.ends_with(", on @user_script:1.")), "{body}: {r:?}");
        }
        // The kill collected the script's garbage: the VM holds what it held before, give or take a
        // string table sized for the strings it keeps.
        let after = kb(&mut e);
        assert!(after <= before + 256, "{body}: {before} KB before, {after} KB after");
        // And the next script runs as usual, a table of the same strings under the cap.
        let fill = "local t = {} for i = 1, 5000 do t[i] = string.rep('x', 1024) .. i end return #t";
        assert_eq!(eval(&mut e, fill), Reply::Int(5000), "after {body}");
    }
}

#[test]
fn keys_and_argv_past_the_memory_cap_get_the_script_killed_not_the_process() {
    // KEYS and ARGV are built before the script runs, outside any protected call: a refusal there
    // would have ended the process.
    let mut e = Emulator::new();
    e.set_script_memory(1 << 20);
    let big = vec![b'x'; 3 << 20];
    let r = e.execute(&[b"EVAL", b"return 1", b"0", &big]);
    assert!(matches!(&r, Reply::Error(s) if s.contains("more than 1048576 bytes of Lua memory")), "{r:?}");
    let r = e.execute(&[
        b"FUNCTION",
        b"LOAD",
        b"#!lua name=l\nredis.register_function('f', function(k, a) return #a[1] end)",
    ]);
    assert_eq!(r, Reply::bulk("l"));
    let r = e.execute(&[b"FCALL", b"f", b"0", &big]);
    assert!(matches!(&r, Reply::Error(s) if s.contains("more than 1048576 bytes of Lua memory")), "{r:?}");
    assert_eq!(e.execute(&[b"EVAL", b"return #ARGV[1]", b"0", b"abc"]), Reply::Int(3));
    assert_eq!(e.execute(&[b"FCALL", b"f", b"0", b"abcd"]), Reply::Int(4));
}

#[test]
fn a_library_call_past_the_memory_cap_gets_the_script_killed() {
    // The libraries push their results while they hold Rust buffers; past the cap they go on, and
    // the script is killed right after.
    let mut e = Emulator::new();
    e.set_script_memory(1 << 20);
    // Each input is well under the cap; each result is more than a megabyte past it.
    for body in [
        "local s = '[' .. string.rep('1,', 150000) .. '1]' return #cjson.decode(s)",
        "local s = string.rep('x', 1000) local t = {} for i = 1, 3000 do t[i] = s end return #cjson.encode(t)",
        "local s = string.rep('x', 1000) local t = {} for i = 1, 3000 do t[i] = s end return #cmsgpack.pack(t)",
        "return #cmsgpack.unpack(string.char(0xdd, 0, 2, 0x49, 0xf0) .. string.rep('\\1', 150000))",
    ] {
        let r = eval(&mut e, body);
        assert!(matches!(&r, Reply::Error(s) if s.contains("bytes of Lua memory")), "{body}: {r:?}");
        assert_eq!(eval(&mut e, "return #cjson.decode('[1,2,3]')"), Reply::Int(3), "after {body}");
    }
}

#[test]
fn a_reply_too_deep_for_the_stack_raises_and_leaves_the_keyspace_usable() {
    let mut e = Emulator::new();
    // INFO's RESP3 reply (a verbatim string) is pushed while the command still holds the keyspace.
    let body =
        "redis.setresp(3) local t = {} for i = 1, 7990 do t[i] = 'server' end return redis.pcall('INFO', unpack(t))";
    match eval(&mut e, body) {
        Reply::Error(s) => assert!(s.contains("stack overflow (reply too deep)"), "{s}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(e.execute(&[b"INCR", b"n"]), Reply::Int(1));
    assert_eq!(eval(&mut e, "return redis.call('INCR', 'n')"), Reply::Int(2));
}

#[test]
fn register_function_reads_named_arguments_with_nothing_to_lose_on_a_raise() {
    let mut e = Emulator::new();
    // A flags table whose `__index` raises (the library API's `redis`): the error is Redis's.
    let r = e.execute(&[
        b"FUNCTION",
        b"LOAD",
        b"#!lua name=a\nredis.register_function{function_name='f', description='d', callback=function() return 1 end, flags=redis}",
    ]);
    assert!(
        matches!(&r, Reply::Error(s) if s.contains("Script attempted to access nonexistent global variable")),
        "{r:?}"
    );
    let lib =
        b"#!lua name=a\nredis.register_function{function_name=12, description='d', callback=function() return 1 end, flags={'no-writes'}}";
    assert_eq!(e.execute(&[b"FUNCTION", b"LOAD", lib]), Reply::bulk("a"));
    assert_eq!(e.execute(&[b"FCALL_RO", b"12", b"0"]), Reply::Int(1));
    let function = Reply::Map(vec![
        (Reply::bulk("name"), Reply::bulk("12")),
        (Reply::bulk("description"), Reply::bulk("d")),
        (Reply::bulk("flags"), Reply::Set(vec![Reply::Status("no-writes".into())])),
    ]);
    let library = Reply::Map(vec![
        (Reply::bulk("library_name"), Reply::bulk("a")),
        (Reply::bulk("engine"), Reply::bulk("LUA")),
        (Reply::bulk("functions"), Reply::Array(vec![function])),
    ]);
    assert_eq!(e.execute(&[b"FUNCTION", b"LIST"]), Reply::Array(vec![library]));
}

/// Redis 7.0 never loads Lua bytecode (crafted bytecode can break the VM's memory safety): the
/// chunk is parsed as source and fails at its first byte. Texts recorded from Redis 7.0.15.
#[test]
fn bytecode_is_never_loaded() {
    let mut e = Emulator::new();
    let body = "return loadstring(string.dump(function() return 1 end))()";
    assert_eq!(eval(&mut e, body), err_with_sha(body, "ERR user_script:1: attempt to call a nil value", 1));
    let body = "local f, e = loadstring(string.dump(function() return 1 end)) return {tostring(f), e}";
    assert_eq!(
        eval(&mut e, body),
        Reply::Array(vec![
            Reply::Bulk(b"nil".to_vec()),
            Reply::Bulk(b"[string \"\x1bLuaQ\"]:1: unexpected symbol near 'char(27)'".to_vec()),
        ])
    );
    // `load` with a reader function: the same refusal, named after its default chunk name.
    let body = "local s = string.dump(function() return 1 end) local i = 0 \
                local f, e = load(function() i = i + 1 if i == 1 then return s end return nil end) \
                return {tostring(f), e}";
    assert_eq!(
        eval(&mut e, body),
        Reply::Array(vec![
            Reply::Bulk(b"nil".to_vec()),
            Reply::Bulk(b"=(load):1: unexpected symbol near 'char(27)'"[1..].to_vec()),
        ])
    );
    // A script body that is bytecode does not compile either.
    let dumped = match eval(&mut e, "return string.dump(function() return 1 end)") {
        Reply::Bulk(b) => b,
        other => panic!("string.dump: {other:?}"),
    };
    assert_eq!(
        e.execute(&[b"EVAL", &dumped, b"0"]),
        Reply::Error(
            "ERR Error compiling script (new function): user_script:1: unexpected symbol near 'char(27)'".into()
        )
    );
    // Source still loads.
    assert_eq!(eval(&mut e, "return loadstring('return 5')()"), Reply::Int(5));
}

/// The busy handler: called once the run has passed busy-reply-threshold (real time), told what
/// runs and whether it wrote; its kill ends the script with Redis's error, and the VM goes on.
#[test]
fn a_busy_handler_sees_a_long_script_and_can_kill_it() {
    use super::{BusyAction, BusyScript};
    use std::cell::RefCell;
    use std::rc::Rc;
    let mut e = Emulator::new();
    e.execute(&[b"CONFIG", b"SET", b"busy-reply-threshold", b"20"]);
    #[allow(clippy::type_complexity)]
    let seen: Rc<RefCell<Vec<(bool, bool, String, u64)>>> = Rc::default();
    let log = seen.clone();
    e.set_busy_handler(Some(Rc::new(move |s: &BusyScript<'_>| {
        log.borrow_mut().push((s.eval, s.wrote, s.name.to_string(), s.duration_ms));
        // Kill once it has been seen a few times.
        if log.borrow().len() >= 3 {
            BusyAction::Kill
        } else {
            BusyAction::Continue
        }
    })));
    // A short script never reaches the handler.
    assert_eq!(eval(&mut e, "return 1"), Reply::Int(1));
    assert!(seen.borrow().is_empty());
    let body = "local i = 0 while true do i = i + 1 end";
    assert_eq!(eval(&mut e, body), err_with_sha(body, "ERR Script killed by user with SCRIPT KILL...", 1));
    {
        let seen = seen.borrow();
        assert_eq!(seen.len(), 3);
        let sha = super::sha1_hex(body.as_bytes());
        assert!(seen.iter().all(|(ev, wrote, name, ms)| *ev && !*wrote && *name == sha && *ms >= 20), "{seen:?}");
    }
    // A kill caught by pcall still ends the script.
    seen.borrow_mut().clear();
    let body = "redis.call('set','k','v') while true do pcall(function() while true do end end) end";
    assert_eq!(eval(&mut e, body), err_with_sha(body, "ERR Script killed by user with SCRIPT KILL...", 1));
    assert!(seen.borrow().iter().all(|s| s.1), "the script wrote");
    // A function: named, with its command.
    let lib = "#!lua name=lib\nredis.register_function('spin', function() while true do end end)";
    assert_eq!(e.execute(&[b"FUNCTION", b"LOAD", lib.as_bytes()]), Reply::Bulk(b"lib".to_vec()));
    seen.borrow_mut().clear();
    assert_eq!(
        e.execute(&[b"FCALL", b"spin", b"0"]),
        Reply::Error("ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2.".into())
    );
    assert!(seen.borrow().iter().all(|s| !s.0 && s.2 == "spin"));
    // The VM is fine afterwards.
    assert_eq!(eval(&mut e, "return 2"), Reply::Int(2));
}

/// With a busy handler installed, a library whose load-time code never ends is stopped after Redis's
/// 500 ms, with Redis's error.
#[test]
fn function_load_times_out_with_a_busy_handler() {
    use std::rc::Rc;
    let mut e = Emulator::new();
    e.set_script_budget(u64::MAX);
    e.set_busy_handler(Some(Rc::new(|_: &super::BusyScript<'_>| super::BusyAction::Continue)));
    let lib = "#!lua name=lib\nlocal a = 1 while true do a = a + 1 end";
    assert_eq!(
        e.execute(&[b"FUNCTION", b"LOAD", lib.as_bytes()]),
        Reply::Error("ERR Error registering functions: ERR FUNCTION LOAD timeout".into())
    );
}

/// Scripts and functions past `maxmemory`, as Redis 7.0.15 answered them (`maxmemory 1`).
#[test]
fn out_of_memory_rules_for_scripts_and_functions() {
    const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
    let mut e = Emulator::new();
    let lib = "#!lua name=t\nredis.register_function('f', function() return redis.call('set','x',2) end)\n\
               redis.register_function{function_name='g', callback=function() return redis.call('set','x',3) end, flags={'allow-oom'}}";
    assert_eq!(e.execute(&[b"FUNCTION", b"LOAD", lib.as_bytes()]), Reply::Bulk(b"t".to_vec()));
    let dump = e.execute(&[b"FUNCTION", b"DUMP"]);
    e.execute(&[b"SET", b"x", b"123"]);
    assert_eq!(e.execute(&[b"CONFIG", b"SET", b"maxmemory", b"1"]), Reply::ok());
    // Without flags: the first command that may grow memory is refused, unless the script wrote.
    let body = "redis.call('set','x',1)";
    assert_eq!(eval(&mut e, body), err_with_sha(body, OOM, 1));
    let body = "redis.call('lpush','l',1) return redis.call('set','x',1)";
    assert_eq!(eval(&mut e, body), err_with_sha(body, OOM, 1));
    assert_eq!(eval(&mut e, "return redis.call('get','x')"), Reply::Bulk(b"123".to_vec()));
    assert_eq!(
        eval(&mut e, "local t = redis.pcall('set','x',1) return t['err']"),
        Reply::Bulk(OOM.as_bytes().to_vec())
    );
    assert_eq!(eval(&mut e, "redis.call('del','zz') return redis.call('set','x',1)"), Reply::ok());
    // With flags: refused before it runs, unless it cannot write or allows it.
    assert_eq!(eval(&mut e, "#!lua\nreturn 1"), Reply::err(OOM));
    assert_eq!(eval(&mut e, "#!lua flags=no-writes\nreturn 1"), Reply::Int(1));
    assert_eq!(eval(&mut e, "#!lua flags=allow-oom\nreturn redis.call('set','x',1)"), Reply::ok());
    assert_eq!(e.execute(&[b"FCALL", b"f", b"0"]), Reply::err(OOM));
    assert_eq!(e.execute(&[b"FCALL", b"g", b"0"]), Reply::ok());
    // FUNCTION LOAD and RESTORE may grow memory.
    assert_eq!(e.execute(&[b"FUNCTION", b"LOAD", b"REPLACE", lib.as_bytes()]), Reply::err(OOM));
    let Reply::Bulk(dump) = dump else { panic!("FUNCTION DUMP: {dump:?}") };
    assert_eq!(e.execute(&[b"FUNCTION", b"RESTORE", &dump, b"REPLACE"]), Reply::err(OOM));
    assert_eq!(e.execute(&[b"CONFIG", b"SET", b"maxmemory", b"0"]), Reply::ok());
    assert_eq!(e.execute(&[b"FCALL", b"f", b"0"]), Reply::ok());
}

/// `min-replicas-to-write` on a server without replicas, as Redis 7.0.15 answers scripts then.
#[test]
fn scripts_that_may_write_need_good_replicas() {
    const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
    let mut e = Emulator::new();
    e.execute(&[b"SET", b"x", b"v"]);
    assert_eq!(e.execute(&[b"CONFIG", b"SET", b"min-replicas-to-write", b"1"]), Reply::ok());
    assert_eq!(eval(&mut e, "#!lua flags=no-writes\nreturn redis.call('get','x')"), Reply::Bulk(b"v".to_vec()));
    assert_eq!(eval(&mut e, "return redis.call('get','x')"), Reply::Bulk(b"v".to_vec()));
    assert_eq!(eval(&mut e, "#!lua\nreturn redis.call('get','x')"), Reply::err(NOREPLICAS));
    let body = "return redis.call('set','x', 1)";
    assert_eq!(eval(&mut e, body), err_with_sha(body, NOREPLICAS, 1));
    assert_eq!(e.execute(&[b"CONFIG", b"SET", b"min-replicas-to-write", b"0"]), Reply::ok());
    assert_eq!(eval(&mut e, body), Reply::ok());
}

/// COMMAND GETKEYS reads the `numkeys` keys of the scripting commands (Redis 7.0.15's answers).
#[test]
fn command_getkeys_finds_the_keys_of_scripts_and_functions() {
    let mut e = Emulator::new();
    assert_eq!(
        e.execute(&[b"COMMAND", b"GETKEYS", b"EVAL", b"return 1", b"2", b"a", b"b", b"c"]),
        Reply::Array(vec![Reply::Bulk(b"a".to_vec()), Reply::Bulk(b"b".to_vec())])
    );
    for name in [&b"FCALL"[..], b"FCALL_RO", b"EVALSHA", b"EVAL_RO", b"EVALSHA_RO"] {
        assert_eq!(
            e.execute(&[b"COMMAND", b"GETKEYS", name, b"f", b"1", b"x", b"foo"]),
            Reply::Array(vec![Reply::Bulk(b"x".to_vec())])
        );
    }
}

/// A Redis 7.0 command the emulator lacks is not "unknown": the error names the emulator; a
/// command Redis lacks too keeps Redis's own error.
#[test]
fn redis_commands_the_emulator_lacks() {
    let mut emu = crate::Emulator::new();
    let mut err = |script: &str| match emu.execute(&[b"EVAL", script.as_bytes(), b"0"]) {
        crate::Reply::Error(e) => e,
        other => panic!("{other:?}"),
    };
    let e = err("return redis.call('lastsave')");
    assert!(
        e.starts_with("ERR Redis command 'lastsave' called from script is not implemented by limitlab's emulator"),
        "{e}"
    );
    let e = err("return redis.call('nosuchcommand')");
    assert!(e.starts_with("ERR Unknown Redis command called from script script: "), "{e}");
    let e = err("return redis.call('waitaof', 0, 0, 0)");
    assert!(e.starts_with("ERR Unknown Redis command called from script script: "), "Redis 7.2's: {e}");
}

/// Live blocks in mimalloc's main heap, where every thread allocates (mimalloc 3). Counted in a
/// process that runs one test, so the count is that test's.
fn live_blocks() -> usize {
    extern "C" {
        fn mi_heap_main() -> *mut libmimalloc_sys::mi_heap_t;
    }
    unsafe extern "C" fn count(
        _heap: *const libmimalloc_sys::mi_heap_t,
        _area: *const libmimalloc_sys::mi_heap_area_t,
        block: *mut std::ffi::c_void,
        _size: usize,
        arg: *mut std::ffi::c_void,
    ) -> bool {
        if !block.is_null() {
            // SAFETY: `arg` is the counter passed below, alive for the whole visit.
            unsafe { *(arg as *mut usize) += 1 };
        }
        true
    }
    let mut n = 0usize;
    // SAFETY: visits the main heap of a process whose only other thread (the test harness's) is
    // waiting for this test; the visitor only counts.
    unsafe {
        libmimalloc_sys::mi_heap_visit_blocks(
            mi_heap_main(),
            true,
            Some(count),
            &mut n as *mut usize as *mut std::ffi::c_void,
        );
    }
    n
}

/// SCRIPT FLUSH builds a new Lua state and closes the old one: nothing of the old one may stay
/// behind. Before the emulator gave mlua its allocator back for the close, mlua could not find its
/// per-state bookkeeping and one block leaked per state (15.9 to 23.6 MB over 300,000 flushes).
///
/// The measure is the live blocks of a process of its own (this test binary again, running only
/// [`script_flush_child`]), so that no other test's allocations are counted.
#[test]
fn script_flush_leaves_nothing_behind() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "lua::tests::script_flush_child", "--nocapture", "--test-threads", "1"])
        .env("LIMITLAB_FLUSH_CHILD", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    let line =
        text.lines().find_map(|l| l.split_once("flush growth: ").map(|(_, r)| r)).unwrap_or_else(|| panic!("{text}"));
    let (growth, flushes): (i64, i64) = {
        let mut it = line.split_whitespace().map(|w| w.parse::<i64>().unwrap());
        (it.next().unwrap(), it.next().unwrap())
    };
    // One leaked block a state (mlua's bookkeeping) would add one live block a flush.
    assert!(growth < flushes / 10, "{growth} more live blocks after {flushes} SCRIPT FLUSH");
}

/// The child of [`script_flush_leaves_nothing_behind`]: does its work only when that test runs it.
#[test]
fn script_flush_child() {
    if std::env::var_os("LIMITLAB_FLUSH_CHILD").is_none() {
        return;
    }
    let mut e = Emulator::new();
    let mut flush = |n: usize| {
        for _ in 0..n {
            assert_eq!(eval(&mut e, "return redis.call('SET', 'k', 'v')"), Reply::ok());
            assert_eq!(e.execute(&[b"SCRIPT", b"FLUSH"]), Reply::ok());
        }
    };
    flush(200);
    let before = live_blocks();
    const FLUSHES: usize = 2_000;
    flush(FLUSHES);
    let after = live_blocks();
    println!("flush growth: {} {FLUSHES}", after as i64 - before as i64);
}

#[test]
fn line_tracing_names_the_line_that_replied() {
    let mut e = Emulator::new();
    let body = "local n = tonumber(ARGV[1])\nif n > 5 then\n  return 'big'\nend\nlocal t = {}\nfor i = 1, 3 do t[i] = i end\nreturn #t\n";
    let sha = super::sha1_hex(body.as_bytes());
    let run = |e: &mut Emulator, n: &[u8]| e.execute(&[b"EVAL", body.as_bytes(), b"0", n]);
    // Off by default: nothing recorded.
    assert_eq!(run(&mut e, b"9"), Reply::bulk("big"));
    assert_eq!(e.last_script_line(), None);
    e.set_line_trace(true);
    assert_eq!(run(&mut e, b"9"), Reply::bulk("big"));
    assert_eq!(e.last_script_line(), Some((sha.clone(), 3)));
    assert_eq!(run(&mut e, b"1"), Reply::Int(3));
    assert_eq!(e.last_script_line(), Some((sha.clone(), 7)));
    // A function's own line, not the library's registration.
    let lib = "#!lua name=tr\nredis.register_function('f', function(keys, args)\n  if args[1] == 'a' then\n    return 1\n  end\n  return 2\nend)\n";
    assert_eq!(e.execute(&[b"FUNCTION", b"LOAD", lib.as_bytes()]), Reply::bulk("tr"));
    assert_eq!(e.execute(&[b"FCALL", b"f", b"0", b"b"]), Reply::Int(2));
    assert_eq!(e.last_script_line(), Some(("f".to_string(), 6)));
    // Off again: no hook, nothing recorded, the same replies.
    e.set_line_trace(false);
    assert_eq!(run(&mut e, b"9"), Reply::bulk("big"));
    assert_eq!(e.last_script_line(), None);
}
