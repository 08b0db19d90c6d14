//! Redis 7.0.15's own Tcl test units against `limitlab serve`: a fast subset, so that a regression in
//! the server's fidelity shows in `cargo test`. Each unit runs on a fresh `serve --clock wall` (the
//! suite sleeps and expects keys to expire), through the suite's own runner, which compares every
//! test's outcome with the one recorded on a real Redis 7.0.15; a test that passes there and not here
//! fails this one. The whole set runs with `tests/redis_suite/run.sh all` (docs/fidelity.md).
//!
//! The suite is not part of this repository: `LIMITLAB_REDIS_SUITE` names its folder (the one holding
//! `run_units.sh`); otherwise `../shared/redis-tests` beside the repository. Without it, or without
//! `tclsh`, these tests skip with a reason, and fail when `CI` is set.
use std::path::PathBuf;
use std::process::Command;

use super::common::{have_binary, LimitlabServe, TempDir};

/// Units that run in seconds on serve and cover the protocol, INFO, transactions (with what they
/// send a replica), pub/sub, scripts' neighbours, functions (with a function that runs long, killed
/// from another connection) and the data types most limiters touch.
const FAST_UNITS: &[&str] =
    &["type/incr", "info-command", "protocol", "bitfield", "pubsub", "type/string", "functions", "multi"];

/// The suite's folder, or why there is none.
fn suite() -> Result<PathBuf, String> {
    let dir = match std::env::var_os("LIMITLAB_REDIS_SUITE") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/redis-tests"),
    };
    if !dir.join("run_units.sh").is_file() {
        return Err(format!("no Redis 7.0.15 test suite at {} (set LIMITLAB_REDIS_SUITE)", dir.display()));
    }
    if !have_binary("tclsh") {
        return Err("tclsh is not installed (Debian package tcl)".into());
    }
    if !have_binary("redis-cli") {
        return Err("redis-cli is not installed".into());
    }
    Ok(dir)
}

fn run_unit(unit: &str) {
    let dir = match suite() {
        Ok(d) => d,
        Err(why) if std::env::var_os("CI").is_some() => panic!("{unit}: {why}, and CI is set"),
        Err(why) => {
            eprintln!("skipping Redis's own unit {unit}: {why}");
            return;
        }
    };
    // The suite's own start-up (its test server on a local port) can still fail when that port is
    // taken before any test runs: a unit that recorded no outcome at all is run once more, on a
    // fresh server, and fails if that happens again.
    if let Err(first) = run_unit_once(&dir, unit) {
        eprintln!("{unit}: the suite did not start ({first}); running the unit once more");
        if let Err(second) = run_unit_once(&dir, unit) {
            panic!("{second}");
        }
    }
}

/// Runs one unit on a fresh server; `Err` (the runner's output and the unit's log) when the suite
/// recorded no outcome at all. Panics when a test that passes on Redis failed.
fn run_unit_once(dir: &std::path::Path, unit: &str) -> Result<(), String> {
    // No `--enable-debug-command`: the outcomes compared with were recorded on a Redis 7.0.15 started
    // with `enable-debug-command no` (run_units.sh), in a mode without the `needs:debug` tests.
    let serve = LimitlabServe::start(&["--clock", "wall"]);
    let out = TempDir::new(&format!("redis-suite-{}", unit.replace('/', "_")));
    let run = Command::new(dir.join("run_units.sh"))
        .arg(serve.port().to_string())
        .arg(unit)
        .env("OUTDIR", out.path())
        .env("UNIT_TIMEOUT", "600")
        // The suite's own test server listens near `--baseport`; the runner's random choice falls in
        // the range the system hands out to outgoing connections (the other tests make many), where
        // the port can be taken. Below that range (32768 and up on Linux), only listeners are.
        .env("EXTRA_ARGS", format!("--baseport {}", 20_000 + (std::process::id() % 500) * 20))
        .output()
        .expect("run_units.sh starts");
    let name = unit.replace('/', "_");
    let diff = std::fs::read_to_string(out.0.join(format!("{name}.diff.txt"))).unwrap_or_default();
    let outcomes = std::fs::read_to_string(out.0.join(format!("{name}.target.txt"))).unwrap_or_default();
    if outcomes.trim().is_empty() {
        let log = std::fs::read_to_string(out.0.join(format!("{name}.log"))).unwrap_or_default();
        return Err(format!(
            "{unit}: the suite recorded no outcome at all\n{}\n{}\nthe unit's log:\n{log}\nserve's stderr:\n{}",
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr),
            serve.stderr()
        ));
    }
    // Tests that pass on Redis and not here, less the documented exceptions.
    let exceptions = exceptions();
    let unexpected: Vec<&str> = diff
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("DIFF\t"))
        .filter_map(|l| l.split_once('\t').map(|(_, name)| name))
        .filter(|name| !exceptions.iter().any(|(u, n)| u == unit && n == name))
        .collect();
    if !unexpected.is_empty() {
        let log = std::fs::read_to_string(out.0.join(format!("{name}.log"))).unwrap_or_default();
        let failures: Vec<&str> =
            log.lines().filter(|l| l.starts_with("[err]") || l.starts_with("[exception]")).take(20).collect();
        panic!(
            "{unit}: tests that pass on Redis 7.0.15 failed on serve: {unexpected:?}\n{}\n{diff}\nfirst failures:\n{}\nserve's stderr:\n{}",
            String::from_utf8_lossy(&run.stdout),
            failures.join("\n"),
            serve.stderr()
        );
    }
    Ok(())
}

/// `tests/redis_suite/exceptions.tsv`: `unit<TAB>test name<TAB>reason`, the tests that pass on Redis
/// and are known not to pass on serve (docs/fidelity.md lists them with their reasons).
fn exceptions() -> Vec<(String, String)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/redis_suite/exceptions.tsv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut f = l.split('\t');
            let (Some(u), Some(n), Some(_reason)) = (f.next(), f.next(), f.next()) else {
                panic!("{}: a line is not unit<TAB>name<TAB>reason: {l:?}", path.display())
            };
            (u.to_string(), n.to_string())
        })
        .collect()
}

#[test]
fn redis_own_units_pass_on_serve() {
    // One unit after another: each starts its own server and clients, and the units' timing-sensitive
    // tests (expiry, blocking timeouts) are steadier without the others running beside them.
    for unit in FAST_UNITS {
        run_unit(unit);
    }
}
