//! The real-Redis backend on a private `redis-server`: EVALSHA with a load only after NOSCRIPT, error
//! replies kept as replies, a run's own keys (and only those) removed, connection faults that stop a
//! run with a clear message and never run a script twice, the standard scenarios deciding exactly as
//! on the emulator, and the `--redis` flags of the binary.
//!
//! Each test starts its own server with `tests/common`'s helper (free loopback port, ready on PING).
//! Without `redis-server` the tests print why and pass, unless the environment variable `CI` is set,
//! where that is a failure.
use crate::common;

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{arrivals, signal_pid, unused_port, Fault, FaultProxy, RedisServer, Rule};
use limitlab::sim::{self, Progress};
use limitlab::Error;
use limitlab_cli::verify::against_redis::{check_script, check_standard};
use limitlab_emulator::clock::DEFAULT_START;
use limitlab_emulator::Reply;
use limitlab_engine::backend::real::{RealOptions, RealRedis};
use limitlab_engine::backend::{Backend, Script};
use limitlab_engine::limiter::{Limiter, Params, Variant};

fn connect(s: &RedisServer) -> RealRedis {
    connect_url(&s.url())
}

fn connect_url(url: &str) -> RealRedis {
    RealRedis::connect(url, RealOptions::default()).expect("connects")
}

/// A plain connection for looking at the server from outside the backend.
fn raw(s: &RedisServer) -> redis::Connection {
    redis::Client::open(s.url()).unwrap().get_connection().unwrap()
}

/// `calls=N` of one command in INFO commandstats.
fn calls(s: &RedisServer, cmd: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(&mut raw(s)).unwrap();
    let tag = format!("cmdstat_{cmd}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(&tag))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

const COUNTER: &str = "return redis.call('INCR', KEYS[1])";

#[test]
fn evalsha_loads_the_script_only_after_noscript() {
    let Some(server) = RedisServer::start_or_skip("evalsha") else { return };
    let mut real = connect(&server);
    let script = Script::new(COUNTER);
    let key = format!("{}c", real.key_prefix());
    assert_eq!(real.eval(&script, &[key.as_bytes()], &[]).unwrap(), Reply::Int(1));
    // First call: EVALSHA (NOSCRIPT), SCRIPT LOAD, EVALSHA.
    assert_eq!((calls(&server, "evalsha"), calls(&server, "script|load")), (2, 1));
    assert_eq!(real.eval(&script, &[key.as_bytes()], &[]).unwrap(), Reply::Int(2));
    assert_eq!((calls(&server, "evalsha"), calls(&server, "script|load")), (3, 1));
    // Someone flushes the cache: one NOSCRIPT, one load, and the call runs once.
    redis::cmd("SCRIPT").arg("FLUSH").query::<()>(&mut raw(&server)).unwrap();
    assert_eq!(real.eval(&script, &[key.as_bytes()], &[]).unwrap(), Reply::Int(3));
    assert_eq!((calls(&server, "evalsha"), calls(&server, "script|load")), (5, 2));
    assert_eq!(calls(&server, "eval"), 0, "never EVAL");
    assert_eq!(real.script_calls(), 3);
    assert_eq!(real.cleanup().unwrap(), 1);
}

#[test]
fn error_replies_are_replies_with_redis_text() {
    let Some(server) = RedisServer::start_or_skip("error replies") else { return };
    let mut real = connect(&server);
    let p = real.key_prefix().to_string();
    let k = format!("{p}s");
    real.command(&[b"SET", k.as_bytes(), b"x"]).unwrap();
    // A failing redis.call inside a script: Redis's text, which the emulator gives too (it names
    // the script, not the key, so the prefix does not matter).
    let mut emu = limitlab_emulator::Emulator::new();
    emu.execute(&[b"SET", b"s", b"x"]);
    let want = emu.eval(COUNTER.as_bytes(), &[b"s"], &[]);
    assert!(want.is_error(), "{want:?}");
    assert_eq!(real.eval(&Script::new(COUNTER), &[k.as_bytes()], &[]).unwrap(), want);
    assert_eq!(
        real.eval(&Script::new("return redis.error_reply('ERR mine')"), &[], &[]).unwrap(),
        Reply::err("ERR mine")
    );
    assert_eq!(
        real.eval(&Script::new("return 1 +"), &[], &[]).unwrap(),
        Reply::err("ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'")
    );
    assert_eq!(
        real.command(&[b"INCR", k.as_bytes()]).unwrap(),
        Reply::err("ERR value is not an integer or out of range")
    );
    assert!(real.command(&[b"LPUSH", k.as_bytes(), b"a"]).unwrap().is_error());
    assert_eq!(real.command(&[b"GET", k.as_bytes()]).unwrap(), Reply::bulk("x"));
    assert!(real.failure().is_none(), "error replies are not failures");
    real.cleanup().unwrap();
}

#[test]
fn a_run_removes_its_own_keys_and_nothing_else() {
    let Some(server) = RedisServer::start_or_skip("own keys") else { return };
    let mut conn = raw(&server);
    // Other people's keys, one of them looking like another run's.
    for k in ["user:1", "rate:{u0}", "ll:000000000000:rate:{u0}", "ll:"] {
        redis::cmd("SET").arg(k).arg("theirs").query::<()>(&mut conn).unwrap();
    }
    let mut a = connect(&server);
    let mut b = connect(&server);
    assert_ne!(a.key_prefix(), b.key_prefix(), "every run has its own prefix");
    let limiter = Limiter::new(Variant::SEED_FIXED_WINDOW, Params::new(3, 1000)).unwrap();
    let arr = arrivals(300, 7);
    sim::run(&limiter, &mut a, &arr, Progress::Off).unwrap();
    sim::run(&limiter, &mut b, &arr, Progress::Off).unwrap();
    let total: i64 = redis::cmd("DBSIZE").query(&mut conn).unwrap();
    let mine = total - 4;
    assert!(mine >= 7 * 2, "{mine} keys for two runs");
    let removed_a = a.cleanup().unwrap();
    assert_eq!(removed_a as i64 * 2, mine, "run a removes exactly its half");
    let left: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    assert!(left.iter().all(|k| !k.starts_with(a.key_prefix())), "{left:?}");
    assert!(left.iter().any(|k| k.starts_with(b.key_prefix())), "run b's keys are untouched");
    assert_eq!(b.cleanup().unwrap(), removed_a);
    let mut left: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    left.sort();
    assert_eq!(left, ["ll:", "ll:000000000000:rate:{u0}", "rate:{u0}", "user:1"]);
    // Dropping a backend that wrote and did not clean up removes its keys too.
    {
        let mut c = connect(&server);
        sim::run(&limiter, &mut c, &arr[..10], Progress::Off).unwrap();
    }
    let n: i64 = redis::cmd("DBSIZE").query(&mut conn).unwrap();
    assert_eq!(n, 4);
}

#[test]
fn every_standard_scenario_and_script_decides_as_on_the_emulator() {
    let Some(server) = RedisServer::start_or_skip("standard scenarios") else { return };
    let mut real = connect(&server);
    let check = check_standard(None, &mut real, Progress::Off).unwrap();
    assert_eq!(check.checks.len(), 4 * Variant::ALL.len());
    for c in &check.checks {
        assert!(c.divergence.is_none(), "{} / {}: {:?}", c.scenario, c.algorithm, c.divergence);
        assert!(c.keys_removed > 0, "{} / {}", c.scenario, c.algorithm);
    }
    let n: i64 = redis::cmd("DBSIZE").query(&mut raw(&server)).unwrap();
    assert_eq!(n, 0, "every key removed");
    check.into_result().unwrap();
}

#[test]
fn a_server_that_dies_mid_run_stops_it_with_how_far_it_got() {
    let Some(mut server) = RedisServer::start_or_skip("server dies") else { return };
    // The server dies with call 1,000 on its way (held in a proxy until the server is gone).
    let proxy = FaultProxy::start(server.port());
    proxy.rule(Rule::new("EVALSHA", 1000, 1, Fault::Pause));
    let mut real = connect_url(&proxy.url());
    let limiter = Limiter::new(Variant::TOKEN_BUCKET, Params::new(50, 1000)).unwrap();
    let arr = arrivals(4_000, 20);
    let emulated = sim::run_emulated(&limiter, &arr[..10], DEFAULT_START.0, Progress::Off).unwrap().0;
    let pid = server.pid();
    let killer = std::thread::spawn(move || {
        proxy.wait_until("call 1,000 held", |s| s.paused == 1);
        signal_pid(pid, "KILL");
        proxy.resume();
        proxy
    });
    let err = check_script("killed", &limiter, &arr, &emulated, &mut real, Progress::Off).unwrap_err();
    let _proxy = killer.join().unwrap();
    server.kill();
    let msg = err.to_string();
    assert!(matches!(err, Error::Connection(_)), "{msg}");
    assert!(
        msg.contains("scenario `killed`, script `token_bucket`: stopped after 999 of 4000 calls (call #1000"),
        "{msg}"
    );
    assert!(msg.contains("it was not sent again"), "{msg}");
    assert!(msg.contains("could not be removed"), "{msg}");
    assert_eq!(real.script_calls(), 999);
    // Later calls fail at once, with the first failure's story.
    let again = real.eval(&Script::new(COUNTER), &[b"x"], &[]).unwrap_err().to_string();
    assert!(again.contains("the connection failed earlier"), "{again}");
}

#[test]
fn a_timeout_stops_the_run_and_the_call_in_flight_runs_once() {
    let Some(server) = RedisServer::start_or_skip("timeout") else { return };
    let mut real = RealRedis::connect(&server.url(), RealOptions { timeout: Duration::from_millis(300) }).unwrap();
    let script = Script::new(COUNTER);
    let key = format!("{}n", real.key_prefix());
    for i in 1..=3 {
        assert_eq!(real.eval(&script, &[key.as_bytes()], &[]).unwrap(), Reply::Int(i));
    }
    server.signal("STOP");
    let started = Instant::now();
    let err = real.eval(&script, &[key.as_bytes()], &[]).unwrap_err();
    let waited = started.elapsed();
    server.signal("CONT");
    let msg = err.to_string();
    assert!(msg.contains("no reply within 300 ms"), "{msg}");
    assert!(msg.contains("after 5 replies (3 script calls)"), "{msg}");
    // At least the timeout; at most far more than it, for a machine too loaded to wake the waiting
    // thread on time (the point is that the call does not wait for the stopped server forever).
    assert!(waited >= Duration::from_millis(250) && waited < Duration::from_secs(60), "{waited:?}");
    let again = real.eval(&script, &[key.as_bytes()], &[]).unwrap_err().to_string();
    assert!(again.contains("the connection failed earlier"), "{again}");
    // The call in flight reached the server and ran there once, after it resumed: never twice.
    // (Polled for up to a minute: a resumed server on a loaded machine can take seconds.)
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut conn = raw(&server);
    loop {
        let n: i64 = redis::cmd("GET").arg(&key).query(&mut conn).unwrap();
        if n == 4 || Instant::now() > deadline {
            assert_eq!(n, 4, "3 answered calls + the one in flight, run exactly once");
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Cleanup opens fresh connections, so it works once the server is back.
    assert_eq!(real.cleanup().unwrap(), 1);
}

#[test]
fn connecting_to_nothing_is_a_clear_error() {
    let port = unused_port();
    let err = RealRedis::connect(&format!("redis://127.0.0.1:{port}/"), RealOptions::default()).unwrap_err();
    assert!(matches!(err, Error::Connection(_)), "{err}");
    assert!(err.to_string().contains("cannot connect"), "{err}");
}

fn limitlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_limitlab"))
}

fn run_with_input(mut cmd: Command, input: &[u8]) -> std::process::Output {
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn cli_redis_prints_what_redis_cli_prints() {
    let Some(server) = RedisServer::start_or_skip_needing("cli --redis", &["redis-cli"]) else { return };
    let input =
        b"set a 1\nget a\nincr a\nhset h f v\nhgetall h\nfoo bar\nzadd z 1.5 m\nzscore z m\nexpire a 100\nttl a\n\
                  eval \"return {1,'x',{err='boom'}}\" 0\n3 rpush l x\nlrange l 0 -1\nclock.get\ndel a h z l\n";
    let mut ours = limitlab();
    ours.args(["cli", "--redis", &server.url()]);
    let ours = run_with_input(ours, input);
    assert!(ours.status.success(), "{}", String::from_utf8_lossy(&ours.stderr));
    let mut theirs = Command::new("redis-cli");
    theirs.args(["-p", &server.port().to_string()]);
    let theirs = run_with_input(theirs, input);
    assert_eq!(String::from_utf8_lossy(&ours.stdout), String::from_utf8_lossy(&theirs.stdout));
}

#[test]
fn run_and_compare_take_redis_and_clean_up() {
    let Some(server) = RedisServer::start_or_skip("run --redis") else { return };
    let root = env!("CARGO_MANIFEST_DIR");
    let out = limitlab()
        .args(["run", &format!("{root}/simulations/boundary_burst.toml"), "--redis", &server.url()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains(&format!("The same arrivals on {}", server.url())), "{text}");
    assert_eq!(text.matches(" identical ").count(), Variant::ALL.len(), "{text}");
    let out = limitlab()
        .args(["run", &format!("{root}/simulations/boundary_burst.toml"), "--json", "--redis", &server.url()])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(v["redis"]["checks"].as_array().unwrap().len(), Variant::ALL.len());
    assert!(v["run"]["results"].is_array());
    let n: i64 = redis::cmd("DBSIZE").query(&mut raw(&server)).unwrap();
    assert_eq!(n, 0, "run --redis leaves nothing behind");
    // Bad URLs are the user's to fix (exit 2); a server that is not there is exit 3.
    let bad = limitlab().args(["compare", "--redis", "http://nope"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
    let port = unused_port();
    let gone =
        limitlab().args(["verify", "--cases", "1", "--redis", &format!("redis://127.0.0.1:{port}")]).output().unwrap();
    assert_eq!(gone.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&gone.stderr).contains("cannot connect"),
        "{}",
        String::from_utf8_lossy(&gone.stderr)
    );
}

#[test]
fn a_server_that_wants_a_password_is_exit_3_before_anything_is_sent() {
    let Some(server) = RedisServer::start_or_skip("a_server_that_wants_a_password_is_exit_3_before_anything_is_sent")
    else {
        return;
    };
    let root = env!("CARGO_MANIFEST_DIR");
    let scenario = format!("{root}/simulations/boundary_burst.toml");
    let mut c = redis::Client::open(server.url()).unwrap().get_connection().unwrap();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("requirepass").arg("s3cret").query(&mut c).unwrap();
    let out = limitlab().args(["run", &scenario, "--redis", &server.url()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // Said as the server's need, at connect: not a script's error, and no key claimed left behind.
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("NOAUTH") && err.contains("the server needs a password"), "{err}");
    assert!(!err.contains("could not be removed") && err.contains("No key of the run was written"), "{err}");
    // With the password in the URL the same run goes through, and leaves nothing.
    let url = format!("redis://:s3cret@127.0.0.1:{}", server.port());
    let ok = limitlab().args(["run", &scenario, "--redis", &url]).output().unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let mut c = redis::Client::open(url.as_str()).unwrap().get_connection().unwrap();
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 0);
    let _: () = redis::cmd("CONFIG").arg("SET").arg("requirepass").arg("").query(&mut c).unwrap();
}
