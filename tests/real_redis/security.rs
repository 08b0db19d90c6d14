//! `--redis` with an ACL user: a user that may touch only `ll:*` keys (and only the commands the
//! runs need, none of the keyspace-wide ones) runs `run`, `compare`, `verify`, `verify --script`
//! and `memory` to success, and the server's ACL LOG, which records every command or key the
//! server refused, stays empty: no command left the run's prefix. Its password is never printed:
//! every output of those runs, of failing ones (a wrong password, a connection lost mid-run, a
//! timeout) and of `describe()`/`Debug` is searched for it.
use crate::common;

use std::process::{Command, Output};
use std::time::Duration;

use common::{Fault, FaultProxy, RedisServer, Rule};
use limitlab_engine::backend::real::{RealOptions, RealRedis};
use limitlab_engine::backend::Backend;

const PASSWORD: &str = "Pw-7f3c9d51e2";

/// The ACL user: keys `ll:*` only, no channels, every command but the dangerous ones (FLUSHALL,
/// KEYS, SWAPDB, CONFIG, DEBUG, ...) and those that reach beyond the run's keys (RANDOMKEY, SCRIPT
/// FLUSH, FUNCTION FLUSH/DELETE/RESTORE), plus INFO (to tell a cluster and a replica). (SELECT is
/// left: verify sends it on a shared server only with an index that does not exist, to compare
/// the error.)
const ACL: &[&str] = &[
    "ll",
    "reset",
    "on",
    ">Pw-7f3c9d51e2",
    "~ll:*",
    "resetchannels",
    "+@all",
    "-@dangerous",
    "+info",
    "-randomkey",
    "-script|flush",
    "-function|flush",
    "-function|delete",
    "-function|restore",
];

fn limitlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_limitlab"))
}

fn raw(port: u16) -> redis::Connection {
    redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap().get_connection().unwrap()
}

/// Every byte a run printed, for searching.
fn all_output(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn acl_log(port: u16) -> Vec<redis::Value> {
    redis::cmd("ACL").arg("LOG").query(&mut raw(port)).unwrap()
}

#[test]
fn an_acl_user_limited_to_the_prefix_runs_everything_and_its_password_is_never_printed() {
    let Some(server) = RedisServer::start_or_skip("acl user") else { return };
    let port = server.port();
    let mut admin = raw(port);
    let mut setuser = redis::cmd("ACL");
    setuser.arg("SETUSER").arg(ACL);
    setuser.query::<()>(&mut admin).unwrap();
    redis::cmd("SET").arg("other:key").arg("theirs").query::<()>(&mut admin).unwrap();
    let url = format!("redis://ll:{PASSWORD}@127.0.0.1:{port}/");
    // The restriction is live: outside the prefix, the user is refused.
    let mut user = redis::Client::open(url.as_str()).unwrap().get_connection().unwrap();
    let e = redis::cmd("GET").arg("other:key").query::<Option<String>>(&mut user).unwrap_err();
    assert_eq!(e.code(), Some("NOPERM"), "{e}");
    redis::cmd("ACL").arg("LOG").arg("RESET").query::<()>(&mut admin).unwrap();

    let root = env!("CARGO_MANIFEST_DIR");
    let burst = format!("{root}/simulations/boundary_burst.toml");
    let mut printed = String::new();
    let succeeding: Vec<Vec<&str>> = vec![
        vec!["run", &burst, "--redis", &url],
        vec!["run", &burst, "--json", "--redis", &url],
        vec!["compare", "--redis", &url],
        vec!["verify", "--cases", "300", "--redis", &url],
        vec!["verify", "--script", "fixed_window", "--script", "gcra", "--redis", &url],
        vec!["memory", "--limit", "100/min", "--redis", &url],
        vec!["memory", "--limit", "100/min", "--json", "--redis", &url],
    ];
    for args in &succeeding {
        let out = limitlab().args(args).output().unwrap();
        let text = all_output(&out);
        assert!(out.status.success(), "{args:?}: {text}");
        assert!(text.contains(&format!("redis://ll:***@127.0.0.1:{port}")), "{args:?} names the server: {text}");
        printed.push_str(&text);
        let log = acl_log(port);
        assert!(log.is_empty(), "{args:?}: the server refused something: {log:?}");
    }
    // Only the other client's key is left.
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut admin).unwrap();
    assert_eq!(keys, ["other:key"]);

    // Failing runs: a wrong password, a bad URL, a connection lost mid-run, a timeout.
    let wrong = format!("redis://ll:{PASSWORD}x@127.0.0.1:{port}/");
    let proxied = |p: &FaultProxy| format!("redis://ll:{PASSWORD}@127.0.0.1:{}/", p.port());
    let lost = FaultProxy::start(port);
    lost.rule(Rule::new("EVALSHA", 20, 1, Fault::CloseAfterSend));
    let held = FaultProxy::start(port);
    held.rule(Rule::new("EVALSHA", 20, 1, Fault::Hold));
    let (lost_url, held_url) = (proxied(&lost), proxied(&held));
    let bad = format!("redis://ll:{PASSWORD}@127.0.0.1:notaport/");
    let failing: Vec<Vec<&str>> = vec![
        vec!["run", &burst, "--redis", &wrong],
        vec!["verify", "--cases", "5", "--redis", &wrong],
        vec!["run", &burst, "--redis", &bad],
        vec!["bench", "--quick", "--redis", &wrong],
        vec!["cli", "--redis", &wrong],
        vec!["memory", "--redis", &wrong],
        vec!["run", &burst, "--redis", &lost_url],
        vec!["run", &burst, "--json", "--redis", &held_url, "--redis-timeout-ms", "300"],
    ];
    for args in &failing {
        let out = limitlab().args(args).output().unwrap();
        let text = all_output(&out);
        assert!(!out.status.success(), "{args:?}: {text}");
        printed.push_str(&text);
    }
    held.release();
    assert!(printed.contains("Password authentication failed"), "{printed}");
    assert!(printed.contains("it was not sent again"), "{printed}");
    assert!(printed.contains("no reply within 300 ms"), "{printed}");
    assert!(!printed.contains(PASSWORD), "the password was printed:\n{printed}");

    // The library: describe(), url(), Debug, and errors.
    let real = RealRedis::connect(&url, RealOptions { timeout: Duration::from_secs(10) }).unwrap();
    let shown = format!("{} {} {real:?}", real.describe(), real.url());
    assert!(!shown.contains(PASSWORD) && shown.contains("ll:***@"), "{shown}");
    let e = RealRedis::connect(&wrong, RealOptions::default()).unwrap_err();
    assert!(!format!("{e} {e:?}").contains(PASSWORD), "{e:?}");
    // The parsed command line, as `Debug` prints it.
    let args = limitlab_cli::cli::verify::RedisArgs {
        redis: Some(url.parse().unwrap()),
        redis_timeout_ms: 1000,
        ..Default::default()
    };
    let target = args.target().unwrap().unwrap();
    let shown = format!("{args:?} {target:?}");
    assert!(!shown.contains(PASSWORD) && shown.contains("ll:***@"), "{shown}");
    assert_eq!(target.url.expose(), url, "the connection still gets the password");
}
