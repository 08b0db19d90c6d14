//! The Python and Node packages of `packages/`, built from this repository and installed the way a
//! user installs them, into a fresh virtual environment and a fresh Node project under a temporary
//! directory (from the local files: nothing of ours is published), with their suites run there:
//!
//! - the wheel (maturin, `bin` bindings: the release binary of this repository, built in cargo's
//!   target directory, or the profile `LIMITLAB_PACKAGES_PROFILE` names) with pytest,
//!   redis-py, `limits` and time-machine: `packages/python/tests` (single node and cluster windows
//!   moved with `clock.advance`, limits' moving window decided the same by clock.advance and by
//!   real sleeping, the server's log on a failing test's report);
//! - the npm packages (`limitlab` and `@limitlab/linux-x64`, packed by `packages/node/pack.sh`) with
//!   ioredis, rate-limiter-flexible, node-redis, rate-limit-redis, @sinonjs/fake-timers, Vitest and
//!   TypeScript: `packages/node/test` (a node:test suite, a Vitest suite, the types compiled);
//! - for each, a run killed with SIGKILL after its fixtures started servers: none outlives it.
//!
//! The registry dependencies come from `.ci/run`'s caches: `.ci/wheels` (pinned in
//! `.ci/requirements-packages.txt`, pip installs from there without an index) and `.ci/npm-cache`
//! (pinned in `packages/node/test/package.json`, npm installs preferring it). maturin is in
//! `.ci/venv`. Without python3, node or those, the tests are skipped with the reason printed; with
//! `CI` set that is a failure.
//!
//! Each step's time is printed (`cargo test --test packages -- --nocapture` shows it).
#[path = "../common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::TempDir;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Skips (false) with the reason printed, or panics under CI.
fn require(test: &str, ok: bool, what: &str) -> bool {
    if !ok {
        let msg = format!("{test}: {what} (bash .ci/run installs it)");
        if std::env::var_os("CI").is_some() {
            panic!("{msg}; CI is set, so this is an error");
        }
        eprintln!("skipping {msg}");
    }
    ok
}

fn runs(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null()).stderr(Stdio::null()).status().map(|s| s.success()).unwrap_or(false)
}

/// Runs a step to success (its output shown on failure) and prints how long it took; its stdout.
/// A step that is not a build must end within [`STEP_LIMIT`] (it is killed, and the test fails).
fn step(what: &str, cmd: &mut Command) -> String {
    let limit = if what.starts_with("cargo build") || what.starts_with("maturin") { None } else { Some(STEP_LIMIT) };
    let t = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {cmd:?}: {e}"));
    let read = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut text);
            }
            text
        })
    };
    let stdout = read(child.stdout.take().map(|s| Box::new(s) as _));
    let stderr = read(child.stderr.take().map(|s| Box::new(s) as _));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if limit.is_some_and(|l| t.elapsed() > l) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not end within {} s: {cmd:?}\n{}", STEP_LIMIT.as_secs(), stderr.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    assert!(status.success(), "{what} failed ({status}): {cmd:?}\n{stdout}\n{stderr}");
    eprintln!("packages: {what}: {:.1} s", t.elapsed().as_secs_f64());
    stdout
}

/// How long a step other than a build may take (generous: the machine may be loaded).
const STEP_LIMIT: Duration = Duration::from_secs(600);

/// The Cargo profile of the binary both packages carry: `release` (what a user gets), or what
/// `LIMITLAB_PACKAGES_PROFILE` names (`dev` reuses the test build's dependencies: a quicker local
/// run).
fn profile() -> String {
    std::env::var("LIMITLAB_PACKAGES_PROFILE").unwrap_or_else(|_| "release".into())
}

/// The binary both packages carry, built once in cargo's own target directory (a `cargo build
/// --release` already done costs nothing here); maturin then finds it fresh and packs it.
fn binary() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let profile = profile();
        step(
            &format!("cargo build --profile {profile} --bin limitlab"),
            outside_the_test(&mut Command::new(cargo)).current_dir(root()).args([
                "build",
                "--locked",
                "--bin",
                "limitlab",
                "--profile",
                &profile,
            ]),
        );
        let dir = if profile == "dev" { "debug" } else { profile.as_str() };
        let bin = root().join("target").join(dir).join("limitlab");
        assert!(bin.is_file(), "{} was not built", bin.display());
        bin
    })
}

/// `cmd` without the variables cargo sets for a running test (CARGO_MANIFEST_DIR, CARGO_PKG_*, ...):
/// build scripts watch some of them (ring's reruns on CARGO_MANIFEST_DIR, and everything above it
/// with it), so a build from inside the test would not reuse one done from a shell, nor the reverse.
fn outside_the_test(cmd: &mut Command) -> &mut Command {
    const SET_FOR_TESTS: [&str; 7] = [
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_CRATE_NAME",
        "CARGO_TARGET_TMPDIR",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_RUSTC_CURRENT_DIR",
        "OUT_DIR",
    ];
    for (k, _) in std::env::vars_os() {
        let name = k.to_string_lossy();
        if SET_FOR_TESTS.contains(&name.as_ref()) || name.starts_with("CARGO_PKG_") || name.starts_with("CARGO_BIN_") {
            cmd.env_remove(&k);
        }
    }
    cmd
}

fn size_kib(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len() / 1024).unwrap_or(0)
}

/// Whether a process is gone: no such pid, or a zombie (exited, waiting for a reaper that may be
/// an init that never reaps).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next()) == Some('Z'),
    }
}

/// Starts `cmd` (a test run whose fixtures start servers and write their pids to `pids_file`),
/// waits for the pids, kills the run with SIGKILL and checks that every server exits by itself.
fn killed_run_leaves_nothing(what: &str, cmd: &mut Command, pids_file: &Path) {
    let t = Instant::now();
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect(what);
    let deadline = Instant::now() + Duration::from_secs(120);
    let pids: Vec<u32> = loop {
        if let Ok(text) = std::fs::read_to_string(pids_file) {
            break text.split_whitespace().map(|p| p.parse().expect("a pid")).collect();
        }
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("{what} exited ({status}) before starting its servers:\n{err}");
        }
        assert!(Instant::now() < deadline, "{what} wrote no pids within 120 s");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!pids.is_empty() && pids.iter().all(|&p| !gone(p)), "{what}: servers {pids:?} not running");
    child.kill().expect("SIGKILL"); // Child::kill is SIGKILL on Unix: no handler, no teardown
    child.wait().unwrap();
    // A minute, polled: servers notice their parent is gone within a second, later on a loaded machine.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !pids.iter().all(|&p| gone(p)) {
        if Instant::now() > deadline {
            let left: Vec<u32> = pids.iter().copied().filter(|&p| !gone(p)).collect();
            for &p in &left {
                common::signal_pid(p, "KILL");
            }
            panic!("{what}: servers {left:?} outlived the killed run by 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("packages: {what}, killed: {} servers gone ({:.1} s)", pids.len(), t.elapsed().as_secs_f64());
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            if e.file_name() != "node_modules" && e.file_name() != "__pycache__" {
                copy_dir(&e.path(), &target);
            }
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

#[test]
fn python_wheel_with_its_pytest_plugin() {
    const T: &str = "python_wheel_with_its_pytest_plugin";
    let maturin = root().join(".ci/venv/bin/maturin");
    let wheels = root().join(".ci/wheels");
    let have = require(T, runs(Command::new("python3").args(["-c", "import venv, ensurepip"])), "python3 with venv")
        && require(T, runs(Command::new(&maturin).arg("--version")), "maturin in .ci/venv is missing")
        && require(
            T,
            std::fs::read_dir(&wheels).map(|d| d.count() > 0).unwrap_or(false),
            ".ci/wheels (pytest, redis, limits, time-machine) is missing",
        );
    if !have {
        return;
    }
    let bin = binary();
    let tmp = TempDir::new("packages-python");
    let dist = tmp.0.join("dist");
    step(
        "maturin build (the wheel)",
        outside_the_test(&mut Command::new(&maturin))
            .current_dir(root().join("packages/python"))
            .args(["build", "--locked", "--quiet", "--profile", &profile(), "-o"])
            .arg(&dist),
    );
    let wheel = std::fs::read_dir(&dist)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .expect("a wheel");
    eprintln!(
        "packages: wheel {} {} KiB (binary {} KiB)",
        wheel.file_name().unwrap().to_string_lossy(),
        size_kib(&wheel),
        size_kib(bin)
    );

    let venv = tmp.0.join("venv");
    step("python3 -m venv", Command::new("python3").args(["-m", "venv"]).arg(&venv));
    let py = venv.join("bin/python");
    let with_extras = format!("{}[pytest,redis,time]", wheel.display());
    step(
        "pip install the wheel and the test dependencies (no index)",
        Command::new(&py)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index", "--find-links"])
            .arg(&wheels)
            .args([with_extras.as_str(), "limits"]),
    );
    // `pip install` put the binary on the environment's PATH.
    let help =
        step("limitlab serve --help from the venv", Command::new(venv.join("bin/limitlab")).args(["serve", "--help"]));
    assert!(help.contains("--exit-with-stdin"), "{help}");
    // The plugin is registered through its entry point.
    let plugins =
        step("pytest --version --version", Command::new(&py).args(["-m", "pytest", "--version", "--version"]));
    assert!(plugins.contains("limitlab-0.1.0"), "the plugin is not registered:\n{plugins}");

    let tests = tmp.0.join("tests");
    copy_dir(&root().join("packages/python/tests"), &tests);
    let out = step(
        "pytest suite (packages/python/tests)",
        Command::new(&py)
            .current_dir(&tests)
            .args(["-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEs"])
            .env_remove("LIMITLAB_BIN")
            .env_remove("PYTEST_ADDOPTS"),
    );
    let summary = out.lines().last().unwrap_or_default().to_string();
    let passed: usize =
        summary.split(" passed").next().and_then(|s| s.trim().rsplit(' ').next()?.parse().ok()).unwrap_or(0);
    assert!(passed >= 24 && !summary.contains("skipped") && !summary.contains("failed"), "{out}");

    let pids = tmp.0.join("pids");
    killed_run_leaves_nothing(
        "pytest kill_target.py",
        Command::new(&py)
            .current_dir(&tests)
            .args(["-m", "pytest", "-p", "no:cacheprovider", "-q", "kill_target.py"])
            .env("LIMITLAB_PIDS_FILE", &pids),
        &pids,
    );
}

#[test]
fn node_packages_with_their_helper() {
    const T: &str = "node_packages_with_their_helper";
    let cache = root().join(".ci/npm-cache");
    let have = require(T, runs(Command::new("node").arg("--version")), "node is missing")
        && require(T, runs(Command::new("npm").arg("--version")), "npm is missing")
        && require(T, cache.is_dir(), ".ci/npm-cache (the test project's dependencies) is missing");
    if !have {
        return;
    }
    let bin = binary();
    let tmp = TempDir::new("packages-node");
    let packed = tmp.0.join("packed");
    step(
        "packages/node/pack.sh (npm pack of both packages)",
        Command::new("bash").arg(root().join("packages/node/pack.sh")).arg(bin).arg(&packed),
    );
    let main_tgz = packed.join("limitlab-0.1.0.tgz");
    let platform_tgz = packed.join("limitlab-linux-x64-0.1.0.tgz");
    eprintln!(
        "packages: npm tarballs limitlab {} KiB, @limitlab/linux-x64 {} KiB",
        size_kib(&main_tgz),
        size_kib(&platform_tgz)
    );

    // A fresh project: the suites and the pinned dependencies, plus the two tarballs.
    let project = tmp.0.join("project");
    copy_dir(&root().join("packages/node/test"), &project);
    let manifest = project.join("package.json");
    let mut pkg: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let deps = pkg["devDependencies"].as_object_mut().unwrap();
    deps.insert("limitlab".into(), format!("file:{}", main_tgz.display()).into());
    deps.insert("@limitlab/linux-x64".into(), format!("file:{}", platform_tgz.display()).into());
    std::fs::write(&manifest, serde_json::to_string_pretty(&pkg).unwrap()).unwrap();
    step(
        "npm install (the tarballs and the pinned dependencies, from the cache)",
        Command::new("npm")
            .current_dir(&project)
            .args(["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", "--cache"])
            .arg(&cache),
    );
    let bin_dir = project.join("node_modules/.bin");
    let help = step("npx limitlab serve --help", Command::new(bin_dir.join("limitlab")).args(["serve", "--help"]));
    assert!(help.contains("--exit-with-stdin"), "{help}");

    let out = step(
        "node --test (node-test/)",
        Command::new("node").current_dir(&project).args(["--test", "--test-reporter=spec", "node-test/"]),
    );
    assert!(out.contains("ℹ pass 12") && out.contains("ℹ fail 0"), "{out}");
    let out = step(
        "vitest run (vitest/)",
        Command::new(bin_dir.join("vitest"))
            .current_dir(&project)
            .args(["run", "--dir", "vitest"])
            .env("NO_COLOR", "1"),
    );
    assert!(out.contains("Tests  6 passed (6)"), "{out}");
    step(
        "tsc --noEmit (the types as a user writes against them)",
        Command::new(bin_dir.join("tsc")).current_dir(&project).args(["-p", "tsconfig.json"]),
    );

    // A script that never calls stop(): Node exits by itself (the helper keeps no reference on the
    // event loop), and the server goes with it.
    let out = step("node forgot-stop.mjs", Command::new("node").current_dir(&project).arg("forgot-stop.mjs"));
    let pid: u32 = out.trim().parse().unwrap_or_else(|_| panic!("a pid, not {out:?}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !gone(pid) {
        assert!(Instant::now() < deadline, "the server {pid} outlived the script that forgot stop()");
        std::thread::sleep(Duration::from_millis(20));
    }

    let pids = tmp.0.join("pids");
    killed_run_leaves_nothing(
        "node kill-target.mjs",
        Command::new("node").current_dir(&project).arg("kill-target.mjs").arg(&pids),
        &pids,
    );
}
