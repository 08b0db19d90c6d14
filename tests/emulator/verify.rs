//! `limitlab verify`: random cases on the emulator and on a real `redis-server` must give
//! byte-identical replies.
//!
//! The main test runs the binary as CI would, with at least 2,000 cases (`LIMITLAB_VERIFY_CASES`
//! raises it, `LIMITLAB_VERIFY_SEED` picks another seed; both are printed). Without `redis-server`
//! the tests print why and pass, unless the environment variable `CI` is set.
use crate::common;

use std::process::Command;
use std::time::Instant;

use common::{require_binaries, RedisServer};
use limitlab::Result;
use limitlab_cli::verify::{verify, verify_on, Options};
use limitlab_emulator::split_args::split_args;
use limitlab_emulator::Reply;
use limitlab_engine::backend::real::{RealOptions, RealRedis};
use limitlab_engine::backend::{Backend, Script};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn verify_runs_2000_cases_without_a_mismatch() {
    if !require_binaries("verify", &["redis-server"]) {
        return;
    }
    let cases = env_u64("LIMITLAB_VERIFY_CASES", 2000).max(2000);
    let seed = env_u64("LIMITLAB_VERIFY_SEED", 20240101);
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_limitlab"))
        .args(["verify", "--cases", &cases.to_string(), "--seed", &seed.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "verify found a mismatch (seed {seed}, {cases} cases): see above");
    assert!(text.contains(&format!("verify: {cases} cases")), "{text}");
    assert!(text.contains("every reply identical"), "{text}");
    println!("{cases} cases in {:.1} s", started.elapsed().as_secs_f64());
}

/// Counts of some commands on the server, from INFO commandstats.
fn calls(conn: &mut redis::Connection, cmd: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(conn).unwrap();
    let tag = format!("cmdstat_{cmd}:calls=");
    info.lines().find_map(|l| l.strip_prefix(&tag)).and_then(|r| r.split(',').next()).map_or(0, |n| n.parse().unwrap())
}

#[test]
fn on_a_shared_server_verify_keeps_to_its_own_keys_and_flushes_nothing() {
    let Some(server) = RedisServer::start_or_skip("verify on a shared server") else { return };
    let mut conn = redis::Client::open(server.url()).unwrap().get_connection().unwrap();
    for (k, v) in [("k1", "theirs"), ("rate:{u1}", "theirs too")] {
        redis::cmd("SET").arg(k).arg(v).query::<()>(&mut conn).unwrap();
    }
    let theirs: String = redis::cmd("SCRIPT").arg("LOAD").arg("return 'theirs'").query(&mut conn).unwrap();
    let mut real = RealRedis::connect(&server.url(), RealOptions::default()).unwrap();
    let opts = Options { cases: 400, seed: 7, private: false, ..Options::default() };
    let report = verify(&mut real, &opts, |_| {}).unwrap();
    println!("{}", report.render());
    assert!(report.mismatches.is_empty(), "{}", report.render());
    assert!(report.commands > 1000);
    assert!(report.by_name.keys().any(|k| k.starts_with("script:")));
    let left: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    let mut left = left;
    left.sort();
    assert_eq!(left, ["k1", "rate:{u1}"], "every key of the run is gone, theirs are there");
    let v: String = redis::cmd("GET").arg("k1").query(&mut conn).unwrap();
    assert_eq!(v, "theirs");
    let exists: Vec<i64> = redis::cmd("SCRIPT").arg("EXISTS").arg(&theirs).query(&mut conn).unwrap();
    assert_eq!(exists, [1], "their script is still cached");
    for c in ["flushall", "flushdb", "script|flush", "dbsize"] {
        assert_eq!(calls(&mut conn, c), 0, "{c} on a shared server");
    }
    // SCAN only in the cleanup (MATCH on the run's prefix): twice, halfway and at the end.
    assert!(calls(&mut conn, "scan") >= 2);
}

/// A server with a planted bug: LLEN of a list of three or more answers one more.
struct Planted<'a>(&'a mut RealRedis);

impl Backend for Planted<'_> {
    fn describe(&self) -> String {
        self.0.describe()
    }
    fn key_prefix(&self) -> &str {
        self.0.key_prefix()
    }
    fn eval(&mut self, script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Result<Reply> {
        self.0.eval(script, keys, args)
    }
    fn command(&mut self, args: &[&[u8]]) -> Result<Reply> {
        let r = self.0.command(args)?;
        Ok(match r {
            Reply::Int(n) if n >= 3 && args[0].eq_ignore_ascii_case(b"LLEN") => Reply::Int(n + 1),
            other => other,
        })
    }
    fn cleanup(&mut self) -> Result<u64> {
        self.0.cleanup()
    }
}

#[test]
fn a_difference_is_found_shrunk_and_printed_as_redis_cli_lines() {
    let Some(server) = RedisServer::start_or_skip("verify finds a planted bug") else { return };
    let mut real = RealRedis::connect(&server.url(), RealOptions::default()).unwrap();
    let mut planted = Planted(&mut real);
    let opts = Options { cases: 20_000, seed: 3, private: true, max_mismatches: 1, ..Options::default() };
    let report = verify_on(&mut planted, &opts, |_| {}).unwrap();
    let text = report.render();
    println!("{text}");
    assert_eq!(report.mismatches.len(), 1, "{text}");
    let m = &report.mismatches[0];
    assert!(m.reproduced, "{text}");
    assert_eq!(m.commands.last().unwrap().name(), "llen", "{text}");
    // The shortest case that makes a list of three: one push of three or more, or pushes adding up.
    assert!(m.commands.len() <= 4 && m.commands.len() < m.original_len.max(2), "{text}");
    let (Reply::Int(e), Reply::Int(r)) = (&m.emulator, &m.redis) else { panic!("{text}") };
    assert_eq!(r - e, 1);
    // The printed lines are redis-cli input, one command each, without the run's key prefix.
    let lines: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("reproduce")).skip(1).collect();
    assert_eq!(lines.len(), m.commands.len(), "{text}");
    for (l, c) in lines.iter().zip(&m.commands) {
        assert_eq!(split_args(l.as_bytes()), Some(c.materialise("")), "{l}");
        assert!(!l.contains("ll:"), "{l}");
    }
    let err = report.into_result().unwrap_err().to_string();
    assert!(err.contains("LLEN"), "{err}");
}
