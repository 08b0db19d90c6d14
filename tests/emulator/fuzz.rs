//! Fuzz targets on stable Rust: proptest drives every parser and interpreter of user input with
//! random inputs and random mutations of the real files (scenario files, limiter specs, traces in
//! every format, `limitlab cli` lines, RESP requests as `limitlab serve` reads them, Lua scripts). Each must answer with a value or an error (an
//! error that names a line inside the input, for the parsers), never a panic or a hang, and the
//! emulator must answer the next command correctly after anything a script did.
//!
//! Budget: `LIMITLAB_FUZZ_CASES` cases per target (default 64, so `cargo test` stays quick; the
//! figures in docs/reliability.md come from long runs with a larger value). A failing case is saved
//! by proptest in `proptest-regressions/fuzz.txt` (kept in git) and replayed first on every run.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use limitlab::sim::scenario::Scenario;
use limitlab_cli::cli::redis_cli;
use limitlab_emulator::clock::Micros;
use limitlab_emulator::error::Error;
use limitlab_emulator::reply::Reply;
use limitlab_emulator::Emulator;
use limitlab_engine::spec::{Files, Spec};
use limitlab_engine::traffic::trace::{TieRule, TraceSpec};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::FileFailurePersistence;

fn config() -> ProptestConfig {
    let cases = std::env::var("LIMITLAB_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64);
    ProptestConfig {
        cases,
        max_shrink_iters: 2_000,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/fuzz.txt"))),
        ..ProptestConfig::default()
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files in `dir` whose name ends in `ext`, as (path, text), sorted by name.
fn files(dir: &str, ext: &str) -> Vec<(PathBuf, String)> {
    let mut out: Vec<(PathBuf, String)> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(ext))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no {ext} files in {dir}");
    out
}

/// One edit of a text; positions are taken modulo the text's length (or line or number count).
#[derive(Clone, Debug)]
enum Mutation {
    /// Removes up to `len` bytes at a position.
    Delete(usize, usize),
    /// Inserts bytes at a position.
    Insert(usize, Vec<u8>),
    /// Replaces the byte at a position.
    Replace(usize, u8),
    /// Repeats a line.
    DupLine(usize),
    /// Swaps two lines.
    SwapLines(usize, usize),
    /// Replaces a run of digits with another number (often huge, negative or fractional).
    Number(usize, String),
}

/// Bytes that matter to the formats fuzzed here (quotes, brackets, separators, escapes).
fn interesting_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        3 => prop::sample::select(b"\"'[]{}=,\t\n\r\\#:;.$-+0123456789 ()<>*%xeE\0".to_vec()),
        1 => any::<u8>(),
    ]
}

fn number_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("18446744073709551616".to_string()),
        Just("9223372036854775807".to_string()),
        Just("1e309".to_string()),
        Just("0.5".to_string()),
        Just("nan".to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u32>().prop_map(|n| n.to_string()),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<(usize, u8)>().prop_map(|(i, n)| Mutation::Delete(i, n as usize % 16 + 1)),
        (any::<usize>(), prop::collection::vec(interesting_byte(), 1..8)).prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<usize>(), interesting_byte()).prop_map(|(i, b)| Mutation::Replace(i, b)),
        any::<usize>().prop_map(Mutation::DupLine),
        any::<(usize, usize)>().prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        (any::<usize>(), number_text()).prop_map(|(i, n)| Mutation::Number(i, n)),
    ]
}

/// Applies `muts` to `text`, in order.
fn mutate(text: &[u8], muts: &[Mutation]) -> Vec<u8> {
    let mut t = text.to_vec();
    for m in muts {
        let at = |i: &usize, len: usize| i % (len + 1);
        match m {
            Mutation::Delete(i, n) => {
                let p = at(i, t.len());
                let end = (p + n).min(t.len());
                t.drain(p..end);
            }
            Mutation::Insert(i, b) => {
                let p = at(i, t.len());
                t.splice(p..p, b.iter().copied());
            }
            Mutation::Replace(i, b) => {
                if !t.is_empty() {
                    let p = i % t.len();
                    t[p] = *b;
                }
            }
            Mutation::DupLine(i) | Mutation::SwapLines(i, _) => {
                let mut lines: Vec<Vec<u8>> = t.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
                let a = i % lines.len();
                if let Mutation::SwapLines(_, j) = m {
                    let b = j % lines.len();
                    lines.swap(a, b);
                } else {
                    let l = lines[a].clone();
                    lines.insert(a, l);
                }
                t = lines.join(&b'\n');
            }
            Mutation::Number(i, n) => {
                let digits: Vec<usize> = (0..t.len()).filter(|&k| t[k].is_ascii_digit()).collect();
                if digits.is_empty() {
                    continue;
                }
                let start = digits[i % digits.len()];
                let mut end = start;
                while end < t.len() && (t[end].is_ascii_digit() || t[end] == b'_') {
                    end += 1;
                }
                let mut s = start;
                while s > 0 && t[s - 1].is_ascii_digit() {
                    s -= 1;
                }
                t.splice(s..end, n.bytes());
            }
        }
    }
    t
}

/// A parse error must point inside the input: line 1 up to one past its last line.
fn check_error_line(e: &Error, text: &str, what: &str) {
    if let Error::Parse { line, .. } = e {
        let lines = text.split('\n').count();
        assert!(*line >= 1 && *line <= lines + 1, "{what}: error at line {line} of a {lines}-line input: {e}");
    }
    let shown = e.to_string();
    assert!(!shown.trim().is_empty(), "{what}: an empty error message");
}

// ----- scenario files -----

proptest! {
    #![proptest_config(config())]

    /// Mutated scenario files parse or fail with a message that names a line inside them.
    #[test]
    fn scenario_files(file in any::<Index>(), muts in prop::collection::vec(mutation(), 1..6)) {
        let all = files("simulations", ".toml");
        let (path, text) = &all[file.index(all.len())];
        let text = String::from_utf8_lossy(&mutate(text.as_bytes(), &muts)).into_owned();
        match Scenario::from_toml(&text, path) {
            Ok(_) => {}
            Err(e) => check_error_line(&e, &text, &path.display().to_string()),
        }
    }
}

// ----- limiter specs -----

/// A spec's scripts, read from a list of (file name, text) instead of the disk.
struct Mem(Vec<(String, String)>);

impl Files for Mem {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| t.clone())
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory"))
    }
}

/// Every spec (the shipped ones and the fixtures) with the Lua files beside it.
fn specs() -> Vec<(PathBuf, String, Mem)> {
    let mut out = Vec::new();
    for dir in ["scripts", "tests/fixtures"] {
        let lua: Vec<(String, String)> = files(dir, ".lua")
            .into_iter()
            .map(|(p, t)| (p.file_name().unwrap().to_string_lossy().into_owned(), t))
            .collect();
        for (p, t) in files(dir, ".toml") {
            out.push((p, t, Mem(lua.clone())));
        }
    }
    out
}

proptest! {
    #![proptest_config(config())]

    /// Mutated specs (and mutated scripts under them) parse or fail with a located message; one that
    /// parses runs a few requests on the emulator, which answer or fail, never panic.
    #[test]
    fn limiter_specs(
        file in any::<Index>(),
        muts in prop::collection::vec(mutation(), 0..5),
        lua_muts in prop::collection::vec(mutation(), 0..3),
        script in any::<Index>(),
    ) {
        let all = specs();
        let (path, text, Mem(mut lua)) = {
            let (p, t, m) = &all[file.index(all.len())];
            (p.clone(), t.clone(), Mem(m.0.clone()))
        };
        if !lua_muts.is_empty() {
            let k = script.index(lua.len());
            lua[k].1 = String::from_utf8_lossy(&mutate(lua[k].1.as_bytes(), &lua_muts)).into_owned();
        }
        let text = String::from_utf8_lossy(&mutate(text.as_bytes(), &muts)).into_owned();
        let dir = path.parent().unwrap().to_path_buf();
        match Spec::from_toml(&text, &path, &dir, &Mem(lua)) {
            Err(e) => check_error_line(&e, &text, &path.display().to_string()),
            Ok(spec) => {
                // A mutated policy can be out of range: that is an error too, not a panic.
                if let Ok(limiter) = limitlab_engine::limiter::limiter_with(Arc::new(spec), None, None, None) {
                    let mut h = limitlab_engine::harness::Harness::new(limiter);
                    for i in 0..4 {
                        let _ = h.request(if i % 2 == 0 { "alice" } else { "bob" }, 1);
                        h.advance(250);
                    }
                }
            }
        }
    }
}

// ----- traces -----

/// A valid trace in `format` (the extension) with `n` lines over a few subjects.
fn trace_text(format: &str, times: &[(u32, u8)]) -> String {
    let mut s = String::new();
    match format {
        "csv" => s.push_str("time_ms,key,cost\n"),
        "tsv" => s.push_str("time_ms\tkey\tcost\n"),
        _ => {}
    }
    for (i, &(t, k)) in times.iter().enumerate() {
        let ms = 1_704_067_200_000u64 + t as u64;
        match format {
            "csv" => s.push_str(&format!("{ms},\"user {k}\",{}\n", i % 3 + 1)),
            "tsv" => s.push_str(&format!("{ms}\tuser{k}\t1\n")),
            "jsonl" => s.push_str(&format!("{{\"time_ms\": {ms}, \"key\": \"u{k}\"}}\n")),
            _ => {
                let sec = t / 1000 % 60;
                s.push_str(&format!("10.0.0.{k} - - [01/Jan/2024:00:00:{sec:02} +0000] \"GET /a HTTP/1.1\" 200 12\n"));
            }
        }
    }
    s
}

proptest! {
    #![proptest_config(config())]

    /// Mutated traces in every format read into arrivals or fail with a located message.
    #[test]
    fn traces(
        format in prop::sample::select(vec!["csv", "tsv", "jsonl", "log"]),
        times in prop::collection::vec((0u32..120_000, 0u8..5), 0..40),
        muts in prop::collection::vec(mutation(), 0..6),
        ties in prop_oneof![Just(TieRule::Same), Just(TieRule::Spread), any::<u64>().prop_map(TieRule::Jitter)],
        tick_ms in prop::option::of(1u64..5_000),
    ) {
        let text = trace_text(format, &times);
        let text = String::from_utf8_lossy(&mutate(text.as_bytes(), &muts)).into_owned();
        let spec = TraceSpec { ties, tick_ms, ..TraceSpec::new(format!("fuzz.{format}")) };
        match spec.parse(&text, Micros(0)) {
            Ok(arrivals) => {
                // Sorted by time, every one from a line of the input.
                prop_assert!(arrivals.windows(2).all(|w| w[0].at <= w[1].at));
                prop_assert!(arrivals.len() <= text.lines().count());
            }
            Err(e) => check_error_line(&e, &text, "trace"),
        }
        match spec.parse_ticks(&text) {
            Ok(t) => prop_assert!(t.tick_us >= 1 && t.tick_us <= 86_400_000_000, "tick {}", t.tick_us),
            Err(e) => check_error_line(&e, &text, "trace ticks"),
        }
    }
}

// ----- cli lines -----

/// A line as a person might type it into `limitlab cli`: words, quotes, escapes and noise.
fn cli_line() -> impl Strategy<Value = Vec<u8>> {
    let word = prop_oneof![
        prop::sample::select(vec![
            "SET",
            "GET",
            "INCR",
            "EVAL",
            "EXPIRE",
            "ZADD",
            "HSET",
            "MULTI",
            "EXEC",
            "SELECT",
            "FUNCTION",
            "CLOCK.ADVANCE",
            "SCRIPT",
            "k",
            "\"a b\"",
            "'q'",
            "\"\\x41\\n\"",
            "\"unterminated",
            "1",
            "-1",
            "1e400",
            "0",
            "\"return 1\"",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        prop::collection::vec(interesting_byte(), 0..6),
    ];
    prop::collection::vec(word, 0..7).prop_map(|ws| ws.join(&b' '))
}

proptest! {
    #![proptest_config(config())]

    /// Random cli lines split into arguments or are refused; whatever they run, the emulator answers
    /// the next commands correctly.
    #[test]
    fn cli_lines(lines in prop::collection::vec(cli_line(), 1..8)) {
        let mut emu = Emulator::new();
        emu.set_script_budget(200_000);
        let mut input = Vec::new();
        for l in &lines {
            input.extend_from_slice(l);
            input.push(b'\n');
            if let Some(args) = limitlab_emulator::split_args::split_args(l) {
                if !args.is_empty() {
                    let _ = emu.execute_owned(&args);
                }
            }
        }
        // The same lines through the whole cli loop on a fresh emulator.
        let mut out = Vec::new();
        let mut fresh = Emulator::new();
        fresh.set_script_budget(200_000);
        redis_cli::run(&input[..], &mut out, &mut fresh).unwrap();
        for e in [&mut emu, &mut fresh] {
            healthy(e)?;
        }
    }
}

/// The emulator answers plain commands as Redis would, whatever ran before (in a fresh client, so
/// a transaction or a database a fuzz case left open does not matter).
fn healthy(emu: &mut Emulator) -> Result<(), TestCaseError> {
    let id = emu.connect();
    prop_assert_eq!(emu.execute_as(id, &[b"PING"]), Reply::Status("PONG".into()));
    prop_assert_eq!(emu.execute_as(id, &[b"SET", b"fuzz:health", b"42"]), Reply::ok());
    prop_assert_eq!(emu.execute_as(id, &[b"GET", b"fuzz:health"]), Reply::Bulk(b"42".to_vec()));
    prop_assert_eq!(
        emu.execute_as(id, &[b"EVAL", b"return redis.call('INCR', KEYS[1])", b"1", b"fuzz:health"]),
        Reply::Int(43)
    );
    emu.disconnect(id);
    Ok(())
}

// ----- Lua -----

/// A random Lua expression over a small grammar, of bounded depth.
fn lua_expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        any::<i32>().prop_map(|n| n.to_string()),
        prop::sample::select(vec![
            "nil",
            "true",
            "false",
            "0.5",
            "1e308",
            "-0",
            "KEYS[1]",
            "ARGV[1]",
            "ARGV[9]",
            "x",
            "t",
            "'s'",
            "'\\0z'",
            "{}",
            "math.huge",
            "-math.huge",
            "(0/0)",
            "#ARGV",
            "redis",
            "string.rep('ab', 3)",
            "cjson.encode({1,2})",
        ])
        .prop_map(str::to_string),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(vec!["+", "-", "*", "/", "%", "^", "..", "==", "<", "and", "or"]),
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            (prop::sample::select(vec!["not", "-", "#"]), inner.clone()).prop_map(|(op, a)| format!("({op} {a})")),
            (
                prop::sample::select(vec![
                    "tostring",
                    "tonumber",
                    "type",
                    "string.len",
                    "string.upper",
                    "math.floor",
                    "unpack",
                    "redis.sha1hex",
                    "redis.status_reply",
                    "redis.error_reply",
                    "cjson.decode",
                    "struct.pack",
                    "cmsgpack.pack",
                    "bit.band",
                ]),
                prop::collection::vec(inner.clone(), 0..3)
            )
                .prop_map(|(f, args)| format!("{f}({})", args.join(", "))),
            (
                prop::sample::select(vec!["call", "pcall"]),
                prop::sample::select(vec![
                    "GET", "SET", "INCR", "INCRBY", "PEXPIRE", "ZADD", "ZRANGE", "HSET", "HGETALL", "DEL", "TIME",
                    "TYPE", "EVAL", "LPUSH", "LRANGE", "EXISTS", "MEMORY", "nosuch",
                ]),
                prop::collection::vec(inner.clone(), 0..4)
            )
                .prop_map(|(how, cmd, args)| {
                    let mut a = vec![format!("'{cmd}'")];
                    a.extend(args.into_iter().map(|x| format!("tostring({x})")));
                    format!("redis.{how}({})", a.join(", "))
                }),
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("{{{}}}", v.join(", "))),
            inner.clone().prop_map(|a| format!("t[{a}]")),
        ]
    })
}

/// A random Lua chunk: a few statements, then a return.
fn lua_program() -> impl Strategy<Value = String> {
    let stmt = prop_oneof![
        lua_expr().prop_map(|e| format!("x = {e}")),
        lua_expr().prop_map(|e| format!("t = {{{e}}}")),
        lua_expr().prop_map(|e| format!("pcall(function() return {e} end)")),
        lua_expr().prop_map(|e| format!("if {e} then x = 1 else x = 2 end")),
        (1u32..50, lua_expr()).prop_map(|(n, e)| format!("for i = 1, {n} do t[i] = {e} end")),
        lua_expr().prop_map(|e| format!("error({e})")),
        Just("while true do end".to_string()),
        Just("local s = 'x' for i = 1, 20 do s = s .. s end x = #s".to_string()),
        Just("redis.setresp(3)".to_string()),
        lua_expr().prop_map(|e| format!("gx = {e}")),
    ];
    (prop::collection::vec(stmt, 0..6), lua_expr())
        .prop_map(|(stmts, ret)| format!("local x, t = 0, {{}}\n{}\nreturn {ret}", stmts.join("\n")))
}

proptest! {
    #![proptest_config(config())]

    /// Random Lua programs give a reply (often an error), never a crash or a hang, and the emulator
    /// answers correctly afterwards.
    #[test]
    fn lua_programs(program in lua_program(), keys in 0usize..3, argv in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..6), 0..3)) {
        let mut emu = Emulator::new();
        emu.set_script_budget(200_000);
        let key_names: Vec<Vec<u8>> = (0..keys).map(|i| format!("k{i}").into_bytes()).collect();
        let k: Vec<&[u8]> = key_names.iter().map(Vec::as_slice).collect();
        let a: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
        let _ = emu.eval(program.as_bytes(), &k, &a);
        healthy(&mut emu)?;
    }

    /// Random mutations of the shipped and fixture scripts, run with a limiter's usual arguments.
    #[test]
    fn lua_mutations(file in any::<Index>(), muts in prop::collection::vec(mutation(), 1..6)) {
        let mut all = files("scripts", ".lua");
        all.extend(files("scripts/seed", ".lua"));
        all.extend(files("tests/fixtures", ".lua"));
        let (_, text) = &all[file.index(all.len())];
        let body = mutate(text.as_bytes(), &muts);
        let mut emu = Emulator::new();
        emu.set_script_budget(200_000);
        let keys: [&[u8]; 2] = [b"rl:{u}:1", b"rl:{u}:0"];
        let argv: [&[u8]; 5] = [b"10", b"1000", b"1704067200000", b"1", b"5"];
        for _ in 0..3 {
            let _ = emu.eval(&body, &keys, &argv);
        }
        healthy(&mut emu)?;
    }
}

// ----- RESP frames (limitlab serve) -----

/// A RESP request as a client writes it: `*N` then `$LEN` bulks.
fn multibulk(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// A stream of requests, valid ones and noise, as bytes on a connection.
fn wire() -> impl Strategy<Value = Vec<u8>> {
    let arg = prop_oneof![
        prop::sample::select(vec![
            "SET",
            "GET",
            "INCR",
            "PING",
            "k",
            "1",
            "EVAL",
            "return 1",
            "0",
            "MULTI",
            "EXEC",
            "CLOCK.ADVANCE"
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        prop::collection::vec(any::<u8>(), 0..12),
    ];
    let request = prop_oneof![
        4 => prop::collection::vec(arg.clone(), 1..5).prop_map(|a| multibulk(&a)),
        2 => prop::collection::vec(arg, 1..4).prop_map(|a| {
            let mut l = a.join(&b' ');
            l.extend_from_slice(b"\r\n");
            l
        }),
        1 => prop::sample::select(vec![
            "*-1\r\n", "*0\r\n", "\r\n", "*1\r\n$-1\r\n", "*2\r\n$3\r\nGET\r\n", "*1\r\n$99999999999\r\n",
            "*3000000000\r\n", "*1\r\n$4\r\nPINGxx", "*a\r\n", "$3\r\nGET\r\n", "\"unbalanced\r\n", "*1\r\n$0\r\n\r\n",
        ]).prop_map(|s| s.as_bytes().to_vec()),
        1 => prop::collection::vec(any::<u8>(), 1..24),
    ];
    (prop::collection::vec(request, 1..8), prop::collection::vec(mutation(), 0..3))
        .prop_map(|(rs, muts)| mutate(&rs.concat(), &muts))
}

proptest! {
    #![proptest_config(config())]

    /// The server's request parser on random and mutated byte streams, whole and split at every
    /// point a read could end: it takes whole requests only, inside the bytes it was given, asks for
    /// more or names a protocol error, never panics; what it parses runs on the emulator, which
    /// answers correctly afterwards.
    #[test]
    fn resp_frames(bytes in wire(), authenticated in any::<bool>(), split in any::<usize>()) {
        use limitlab_server::parse::{next, Frame, MAX_BULK};
        let mut emu = Emulator::new();
        emu.set_script_budget(200_000);
        let mut args = Vec::new();
        let mut at = 0;
        let mut requests = 0;
        while at < bytes.len() && requests < 64 {
            let buf = &bytes[at..];
            args.clear();
            // A prefix of what follows is either the same request or not yet a whole one.
            let cut = split % (buf.len() + 1);
            let partial = next(&buf[..cut], authenticated, MAX_BULK, &mut Vec::new());
            let frame = next(buf, authenticated, MAX_BULK, &mut args);
            match frame {
                Frame::Incomplete => break,
                Frame::Error(text) => {
                    prop_assert!(text.starts_with("Protocol error") || text.contains("unauthenticated"), "{}", text);
                    break;
                }
                Frame::Skip(n) => {
                    prop_assert!(n >= 1 && n <= buf.len());
                    at += n;
                }
                Frame::Multibulk(n) => {
                    prop_assert!(n >= 1 && n <= buf.len());
                    prop_assert!(args.iter().all(|r| r.start <= r.end && r.end <= n), "{:?} outside {}", args, n);
                    if cut < n {
                        prop_assert!(matches!(partial, Frame::Incomplete), "a prefix of {} bytes gave {:?}", cut, partial);
                    }
                    let owned: Vec<Vec<u8>> = args.iter().map(|r| buf[r.clone()].to_vec()).collect();
                    if !owned.is_empty() {
                        let _ = emu.execute_owned(&owned);
                    }
                    at += n;
                }
                Frame::Inline(n, words) => {
                    prop_assert!(n >= 1 && n <= buf.len());
                    if cut < n {
                        prop_assert!(matches!(partial, Frame::Incomplete), "a prefix of {} bytes gave {:?}", cut, partial);
                    }
                    if !words.is_empty() {
                        let _ = emu.execute_owned(&words);
                    }
                    at += n;
                }
            }
            requests += 1;
        }
        healthy(&mut emu)?;
    }
}

/// The mutator itself: its edits land inside the text and keep it otherwise intact.
#[test]
fn mutations_edit_in_place() {
    let t = b"a = 1\nb = 22\n";
    assert_eq!(mutate(t, &[]), t.to_vec());
    assert_eq!(mutate(t, &[Mutation::DupLine(0)]), b"a = 1\na = 1\nb = 22\n".to_vec());
    let n = mutate(t, &[Mutation::Number(1, "-7".into())]);
    assert_eq!(n, b"a = 1\nb = -7\n".to_vec(), "{}", String::from_utf8_lossy(&n));
    assert_eq!(mutate(t, &[Mutation::Delete(12, 5)]), b"a = 1\nb = 22".to_vec());
    assert_eq!(mutate(t, &[Mutation::SwapLines(0, 1)]), b"b = 22\na = 1\n".to_vec());
}
