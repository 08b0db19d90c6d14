//! Client libraries of other ecosystems against `limitlab serve`: redis-py under Python's `limits`
//! and ioredis under Node's `rate-limiter-flexible`, each run through a window with CLOCK.ADVANCE
//! (the scripts assert the libraries' documented decisions), and the same calls against a private
//! redis-server giving the same decisions. The two examples of docs/serve.md (`examples/clients/`) run too.
//!
//! The libraries come from `.ci/run` (pinned in `.ci/requirements.txt` and `.ci/package.json`, into
//! `.ci/venv` and `.ci/node_modules`). Without them the tests are skipped with the reason printed;
//! with `CI` set that is a failure.
use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{LimitlabServe, RedisServer};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> PathBuf {
    root().join(".ci/venv/bin/python")
}

/// Whether an ecosystem's packages are installed; the reason is printed when not (a failure in CI).
fn have(test: &str, what: &str, check: &mut Command) -> bool {
    let ok = check.output().map(|o| o.status.success()).unwrap_or(false);
    if !ok {
        let msg = format!("{test}: {what} is not installed (bash .ci/run installs it)");
        if std::env::var_os("CI").is_some() {
            panic!("{msg}; CI is set, so this is an error");
        }
        eprintln!("skipping {msg}");
    }
    ok
}

fn have_python(test: &str) -> bool {
    have(test, "Python with redis and limits in .ci/venv", Command::new(python()).args(["-c", "import redis, limits"]))
}

fn have_node(test: &str) -> bool {
    have(
        test,
        "node with ioredis and rate-limiter-flexible in .ci/node_modules",
        Command::new("node")
            .current_dir(root().join(".ci"))
            .args(["-e", "require('ioredis'); require('rate-limiter-flexible')"]),
    )
}

/// Runs a program; its stdout, or a panic with everything it printed.
fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed ({}):\n{stdout}\n{stderr}", out.status);
    stdout.into_owned()
}

/// The lines printed before the clock-moving part (everything but what `serve` mode adds).
fn shared_steps(out: &str, extra: &[&str]) -> Vec<String> {
    out.lines().filter(|l| !extra.iter().any(|e| l.starts_with(e))).map(str::to_string).collect()
}

fn node(script: &Path) -> Command {
    let mut c = Command::new("node");
    c.arg(script).env("NODE_PATH", root().join(".ci/node_modules"));
    c
}

#[test]
fn python_limits_through_a_window() {
    if !have_python("python_limits_through_a_window") {
        return;
    }
    let Some(redis) = RedisServer::start_or_skip("python_limits_through_a_window") else { return };
    let serve = LimitlabServe::start(&[]);
    let script = root().join("tests/clients/limits_sequence.py");
    let ours = run(Command::new(python()).arg(&script).arg(serve.url()).arg("serve"));
    let theirs = run(Command::new(python()).arg(&script).arg(redis.url()).arg("redis"));
    assert!(ours.contains("sliding carol after the window: [True, True, True, True, True, False]"), "{ours}");
    let mine = shared_steps(&ours, &["fixed alice next window", "sliding carol after the window"]);
    assert_eq!(mine, theirs.lines().collect::<Vec<_>>(), "serve:\n{ours}\nredis:\n{theirs}");
    assert!(theirs.contains("fixed alice x6: [True, True, True, True, True, False]"), "{theirs}");
    // docs/serve.md's example.
    let serve = LimitlabServe::start(&[]);
    run(Command::new(python()).arg(root().join("examples/clients/limits_test.py")).env("REDIS_URL", serve.url()));
}

/// redis-py's RedisCluster sends CLOCK.ADVANCE through `execute_command` to a node of
/// `serve --cluster 3` of its choosing (COMMAND lists CLOCK.* keyless), and the clock moves.
#[test]
fn python_cluster_client_moves_the_clock() {
    if !have_python("python_cluster_client_moves_the_clock") {
        return;
    }
    let serve = LimitlabServe::start(&["--cluster", "3"]);
    let out =
        run(Command::new(python()).arg(root().join("tests/clients/cluster_clock.py")).arg(serve.port().to_string()));
    assert_eq!(out.lines().collect::<Vec<_>>(), ["moved 1000", "expired True"], "{out}");
}

#[test]
fn node_rate_limiter_flexible_through_a_window() {
    if !have_node("node_rate_limiter_flexible_through_a_window") {
        return;
    }
    let Some(redis) = RedisServer::start_or_skip("node_rate_limiter_flexible_through_a_window") else { return };
    let serve = LimitlabServe::start(&[]);
    let script = root().join("tests/clients/rlflex_sequence.js");
    let ours = run(node(&script).arg(serve.url()).arg("serve"));
    let theirs = run(node(&script).arg(redis.url()).arg("redis"));
    assert!(ours.contains("bob after the window: [4,true,60000]"), "{ours}");
    let mine = shared_steps(&ours, &["bob after the window"]);
    assert_eq!(mine, theirs.lines().collect::<Vec<_>>(), "serve:\n{ours}\nredis:\n{theirs}");
    assert!(theirs.contains(r#"{"ok":false,"consumed":6,"remaining":0,"first":false}"#), "{theirs}");
    let serve = LimitlabServe::start(&[]);
    run(node(&root().join("examples/clients/rlflex_test.js")).env("REDIS_URL", serve.url()));
}

/// docs/serve.md shows the two examples as they are.
#[test]
fn the_docs_show_the_examples() {
    let doc = std::fs::read_to_string(root().join("docs/serve.md")).unwrap();
    for f in ["examples/clients/limits_test.py", "examples/clients/rlflex_test.js"] {
        let text = std::fs::read_to_string(root().join(f)).unwrap();
        assert!(doc.contains(text.trim_end()), "docs/serve.md does not show {f} as it is");
    }
}
