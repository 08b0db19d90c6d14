//! A fuzz of `limitlab serve`'s command surface: every command COMMAND lists (and, for the
//! containers, their subcommands), with random arguments from a seeded generator, sent by several
//! clients at once while scripts run long on another connection, and then the server is shut down
//! under them with SHUTDOWN NOSAVE during a busy script. The server must never panic, and must exit.
//!
//! Nothing here waits on luck: every read has a timeout (a command that blocks, a connection that
//! became a replica or a monitor, a client paused or killed only cost a reconnection), every wait
//! for a state is bounded, and the run is a fixed number of requests per client, not a duration.
use crate::common;

use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::LimitlabServe;
use limitlab_emulator::Reply;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Fuzzing clients.
const CLIENTS: usize = 4;
/// Times each client goes through the whole command list (each pass in its own order, with new
/// arguments).
const PASSES: usize = 2;
/// How long a reply may take before the connection is dropped and a new one opened.
const READ_TIMEOUT: Duration = Duration::from_millis(200);

/// A command's name and, for a container (CONFIG, CLIENT, XINFO...), its subcommands' names.
#[derive(Clone, Debug)]
struct Command {
    name: String,
    subs: Vec<String>,
}

/// Every command COMMAND lists, with its subcommands (the tenth field of each entry).
fn command_table(port: u16) -> Vec<Command> {
    let mut c = common::conn::Conn::open(port);
    let Reply::Array(entries) = c.call(&["COMMAND"]) else { panic!("COMMAND is an array") };
    let name_of = |r: &Reply| match r {
        Reply::Array(f) => match f.first() {
            Some(Reply::Bulk(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            Some(Reply::Status(s)) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    };
    let mut table: Vec<Command> = entries
        .iter()
        .filter_map(|e| {
            let name = name_of(e)?;
            let subs = match e {
                Reply::Array(f) => match f.get(9) {
                    Some(Reply::Array(s)) => s
                        .iter()
                        .filter_map(|s| name_of(s).map(|n| n.rsplit('|').next().unwrap_or(&n).to_string()))
                        .collect(),
                    _ => Vec::new(),
                },
                _ => Vec::new(),
            };
            Some(Command { name, subs })
        })
        .collect();
    table.sort_by(|a, b| a.name.cmp(&b.name));
    table
}

/// One random argument: a key, a number (small, negative, huge, not a number), a keyword many
/// commands take, random bytes, or something long.
fn argument(rng: &mut ChaCha8Rng, subs: &[String]) -> Vec<u8> {
    const KEYS: &[&str] = &["k", "h", "s", "z", "l", "x", "{t}1", "{t}2", "stream", "bits"];
    const NUMBERS: &[&str] = &[
        "0",
        "1",
        "2",
        "-1",
        "3",
        "10",
        "100",
        "1.5",
        "-0",
        "inf",
        "-inf",
        "nan",
        "9223372036854775807",
        "99999999999999999999",
        "0x10",
        "",
    ];
    const WORDS: &[&str] = &[
        "NX",
        "XX",
        "GT",
        "LT",
        "CH",
        "INCR",
        "EX",
        "PX",
        "EXAT",
        "KEEPTTL",
        "GET",
        "WITHSCORES",
        "LIMIT",
        "COUNT",
        "MATCH",
        "*",
        "$",
        ">",
        "+",
        "-",
        "(1",
        "[a",
        "BLOCK",
        "STREAMS",
        "ID",
        "0-0",
        "0-1",
        "*",
        "REPLACE",
        "BYSCORE",
        "BYLEX",
        "REV",
        "LEFT",
        "RIGHT",
        "BEFORE",
        "AFTER",
        "MAXLEN",
        "~",
        "GROUP",
        "g",
        "c",
        "MKSTREAM",
        "TYPE",
        "string",
        "ASC",
        "DESC",
        "STORE",
        "AGGREGATE",
        "SUM",
        "WEIGHTS",
        "FIELDS",
        "NOVALUES",
        "ALPHA",
        "BY",
        "ON",
        "OFF",
        "YES",
        "NO",
        "SKIP",
        "FULL",
        "u8",
        "i64",
        "#0",
        "OVERFLOW",
        "SAT",
        "WRAP",
        "FAIL",
        "KM",
        "M",
        "FROMLONLAT",
        "BYRADIUS",
        "BYBOX",
        "WITHDIST",
        "ANY",
        "channel",
        "ch*",
        "ASYNC",
        "SYNC",
        "NOSAVE",
        "FLUSH",
        "DEBUG",
        "return 1",
        "return redis.call('get', KEYS[1])",
        "#!lua name=f\nredis.register_function('f', function() return 1 end)",
    ];
    match rng.random_range(0..10) {
        0 | 1 => KEYS[rng.random_range(0..KEYS.len())].into(),
        2 | 3 => NUMBERS[rng.random_range(0..NUMBERS.len())].into(),
        4..=6 => WORDS[rng.random_range(0..WORDS.len())].into(),
        7 if !subs.is_empty() => subs[rng.random_range(0..subs.len())].clone().into_bytes(),
        8 => (0..rng.random_range(0..24)).map(|_| rng.random::<u8>()).collect(),
        9 => vec![b'a' + rng.random_range(0..26u8); rng.random_range(100..3000)],
        _ => rng.random_range(-5i64..1_000_000).to_string().into_bytes(),
    }
}

/// A request: the command, then (usually, for a container) a subcommand, then 0 to 6 arguments.
fn request(rng: &mut ChaCha8Rng, c: &Command) -> Vec<Vec<u8>> {
    let mut args = vec![c.name.clone().into_bytes()];
    if !c.subs.is_empty() && rng.random_range(0..10) < 8 {
        args.push(c.subs[rng.random_range(0..c.subs.len())].clone().into_bytes());
    }
    for _ in 0..rng.random_range(0..7) {
        args.push(argument(rng, &c.subs));
    }
    args
}

fn encode(args: &[Vec<u8>]) -> Vec<u8> {
    let mut b = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        b.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        b.extend_from_slice(a);
        b.extend_from_slice(b"\r\n");
    }
    b
}

/// A connection that gives up on a read after [`READ_TIMEOUT`] (None: the server is gone).
fn connect(port: u16) -> Option<BufReader<TcpStream>> {
    let s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(READ_TIMEOUT)).ok()?;
    s.set_write_timeout(Some(Duration::from_secs(5))).ok()?;
    Some(BufReader::new(s))
}

/// Sends a request on `conn` (opened again when it was closed) and reads the reply, waiting up to
/// 5 s for it (a client paused by a fuzzer); None when there is none (the server closed it).
fn call(conn: &mut Option<BufReader<TcpStream>>, port: u16, args: &[Vec<u8>]) -> Option<Reply> {
    for _ in 0..2 {
        if conn.is_none() {
            *conn = connect(port);
        }
        let c = conn.as_mut()?;
        let _ = c.get_ref().set_read_timeout(Some(Duration::from_secs(5)));
        if c.get_mut().write_all(&encode(args)).is_ok() {
            if let Ok(r) = limitlab_server::client::read_reply(c) {
                return Some(r);
            }
        }
        *conn = None;
        if args[0] == b"SHUTDOWN" {
            // No reply is what SHUTDOWN gives.
            return None;
        }
    }
    None
}

/// What the clients did, for the report and the assertions.
#[derive(Default)]
struct Counts {
    sent: AtomicUsize,
    answered: AtomicUsize,
    reconnects: AtomicUsize,
    /// Clients that finished their passes.
    done: AtomicUsize,
}

/// One fuzzing client: its passes over the command list, then on (with the list again) until the
/// server is gone, so the shutdown comes while it still sends.
fn fuzz_client(port: u16, id: usize, table: Arc<Vec<Command>>, counts: Arc<Counts>, covered: Arc<Vec<AtomicBool>>) {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5EED_0036 + id as u64);
    let mut conn = connect(port);
    let mut pass = 0;
    loop {
        let mut order: Vec<usize> = (0..table.len()).collect();
        order.shuffle(&mut rng);
        for i in order {
            let req = request(&mut rng, &table[i]);
            let Some(c) = conn.as_mut() else { return };
            let sent = c.get_mut().write_all(&encode(&req)).is_ok();
            if sent {
                counts.sent.fetch_add(1, Ordering::Relaxed);
                covered[i].store(true, Ordering::Relaxed);
            }
            if sent && limitlab_server::client::read_reply(c).is_ok() {
                counts.answered.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            // Blocked, muted, a replica or monitor now, killed, or the server gone: a new connection
            // (none once the server has stopped, and this client ends).
            conn = connect(port);
            if conn.is_none() {
                return;
            }
            counts.reconnects.fetch_add(1, Ordering::Relaxed);
        }
        pass += 1;
        if pass == PASSES {
            counts.done.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Runs scripts on its own connection until the server is gone: short ones, ones that write, and
/// ones that loop until killed (the fuzzers' SCRIPT KILL, or the shutdown).
fn script_client(port: u16, counts: Arc<Counts>) {
    const SCRIPTS: &[&str] = &[
        "local n = 0 for i = 1, 200000 do n = n + i end return n",
        "redis.call('incr', KEYS[1]) local n = 0 for i = 1, 200000 do n = n + 1 end return n",
        "while true do end",
        "return redis.call('ping')",
    ];
    let mut conn = connect(port);
    let mut i = 0;
    loop {
        let Some(c) = conn.as_mut() else { return };
        let req: Vec<Vec<u8>> =
            ["EVAL", SCRIPTS[i % SCRIPTS.len()], "1", "counter"].iter().map(|a| a.as_bytes().to_vec()).collect();
        i += 1;
        let ok = c.get_mut().write_all(&encode(&req)).is_ok();
        // A script that loops is answered once killed: wait for it as long as the server lives.
        let answered = ok
            && loop {
                match limitlab_server::client::read_reply(c) {
                    Ok(_) => break true,
                    Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                    Err(_) => break false,
                }
            };
        if answered {
            counts.answered.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        conn = connect(port);
    }
}

#[test]
fn fuzzing_every_command_from_several_clients_through_a_shutdown_never_panics() {
    let t0 = Instant::now();
    let mut serve = LimitlabServe::start(&[]);
    let port = serve.port();
    // The connection that stops the server, opened before any fuzzing (a fuzzer may kill it:
    // then another is opened).
    let mut stopper = connect(port);
    let setup = ["CONFIG", "SET", "busy-reply-threshold", "10"].map(|a| a.as_bytes().to_vec());
    assert!(matches!(call(&mut stopper, port, &setup), Some(Reply::Status(s)) if s == "OK"));
    let table = Arc::new(
        command_table(port).into_iter().filter(|c| !c.name.eq_ignore_ascii_case("shutdown")).collect::<Vec<_>>(),
    );
    assert!(table.len() > 200, "COMMAND lists {} commands", table.len());
    let counts = Arc::new(Counts::default());
    let covered: Arc<Vec<AtomicBool>> = Arc::new(table.iter().map(|_| AtomicBool::new(false)).collect());
    let mut threads = Vec::new();
    for id in 0..CLIENTS {
        let (table, counts, covered) = (table.clone(), counts.clone(), covered.clone());
        threads.push(std::thread::spawn(move || fuzz_client(port, id, table, counts, covered)));
    }
    {
        let counts = counts.clone();
        threads.push(std::thread::spawn(move || script_client(port, counts)));
    }
    common::wait_for("every client's passes", || counts.done.load(Ordering::Relaxed) == CLIENTS || !serve.running());
    assert!(serve.running(), "serve stopped during the fuzz; stderr:\n{}", serve.stderr());
    // Shut down while the fuzzers still send, during a busy script if one comes (the fuzzers may
    // kill it, pause clients or move the clock: the wait is bounded, and the shutdown goes anyway).
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut busy = false;
    while Instant::now() < deadline && !busy {
        busy = matches!(call(&mut stopper, port, &[b"PING".to_vec()]), Some(Reply::Error(e)) if e.starts_with("BUSY"));
    }
    let shutdown = [b"SHUTDOWN".to_vec(), b"NOSAVE".to_vec()];
    let reply = call(&mut stopper, port, &shutdown);
    assert!(reply.is_none(), "SHUTDOWN NOSAVE answered {reply:?}");
    let status = serve.wait_exit(Duration::from_secs(30));
    let stderr = serve.stderr();
    assert!(status.is_some(), "serve did not exit after SHUTDOWN NOSAVE; stderr:\n{stderr}");
    for t in threads {
        t.join().expect("a fuzzing client");
    }
    let missed: Vec<&str> = table
        .iter()
        .zip(covered.iter())
        .filter(|(_, c)| !c.load(Ordering::Relaxed))
        .map(|(c, _)| c.name.as_str())
        .collect();
    eprintln!(
        "fuzz: shut down {} a busy script; {} commands, {} requests sent, {} answered, {} reconnections, {:.1} s",
        if busy { "during" } else { "without" },
        table.len(),
        counts.sent.load(Ordering::Relaxed),
        counts.answered.load(Ordering::Relaxed),
        counts.reconnects.load(Ordering::Relaxed),
        t0.elapsed().as_secs_f64()
    );
    assert!(missed.is_empty(), "never sent: {missed:?}");
    assert!(!stderr.contains("panicked"), "serve panicked:\n{stderr}");
    assert!(counts.answered.load(Ordering::Relaxed) >= table.len(), "most requests go unanswered");
}
