//! Inputs that are not regular files, and outputs that cannot be written whole (docs/reliability.md,
//! "Files read and written"): a pipe, FIFO or device is read once, as a stream, up to a cap; a
//! trace can come from standard input; a file is written whole under its final name or not at
//! all, with a non-zero exit status; a run stopped by a signal leaves no parts behind.
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use super::common::{wait_for, TempDir};

fn limitlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_limitlab"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Limits the child's address space to 4 GiB, so that reading a device without bound fails fast
/// (as an allocation failure) instead of filling the machine.
fn bounded_memory(c: &mut Command) -> &mut Command {
    // SAFETY: setrlimit is async-signal-safe; it only changes the child's own limit.
    unsafe {
        c.pre_exec(|| {
            let lim = libc::rlimit { rlim_cur: 4 << 30, rlim_max: 4 << 30 };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        })
    }
}

/// Limits the files the child writes to `bytes` each (RLIMIT_FSIZE), with SIGXFSZ ignored so that
/// a write past the limit fails with EFBIG, as a write to a full disk fails with ENOSPC.
fn file_size_limit(c: &mut Command, bytes: u64) -> &mut Command {
    // SAFETY: setrlimit and signal are async-signal-safe; they change only the child.
    unsafe {
        c.pre_exec(move || {
            let lim = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
            libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        })
    }
}

/// Waits for `child` up to a minute (the commands here take well under a second); a child still
/// running then is killed and the test fails, rather than hanging (a FIFO opened twice blocks).
fn finish(mut child: Child, what: &str) -> Output {
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what}: still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

const TRACE_SCENARIO: &str =
    "name = \"piped\"\nlimit = 100\nwindow_ms = 1000\nalgorithms = [\"fixed_window\"]\n\n[traffic]\nkind = \"trace\"\n";

fn trace_text() -> String {
    let mut s = String::from("time,key\n");
    for i in 0..2000 {
        s.push_str(&format!("{}.{:03},u{}\n", 1_704_067_200 + i / 100, (i % 100) * 10, i % 7));
    }
    s
}

#[test]
fn a_device_as_a_script_or_trace_is_refused_at_its_cap() {
    let dir = TempDir::new("dev-zero");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts");
    let spec = std::fs::read_to_string(root.join("fixed_window.toml")).unwrap();
    let spec = spec.replace("main = \"fixed_window.lua\"", "main = \"/dev/zero\"");
    assert!(spec.contains("/dev/zero"));
    std::fs::write(dir.0.join("z.toml"), spec).unwrap();
    let child = bounded_memory(limitlab().current_dir(&dir.0).args(["check", "z.toml"]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = finish(child, "check with scripts.main = /dev/zero");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("field `scripts.main`: cannot read /dev/zero: longer than 64 MiB, the most limitlab reads"),
        "{err}"
    );

    std::fs::write(dir.0.join("t.toml"), format!("{TRACE_SCENARIO}path = \"/dev/zero\"\nformat = \"csv\"\n")).unwrap();
    let child = bounded_memory(limitlab().current_dir(&dir.0).args(["run", "t.toml"]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = finish(child, "run with a /dev/zero trace");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err,
        "limitlab: /dev/zero: longer than 256 MiB, the most limitlab reads from a trace that is not a regular \
         file (save it to a file)\n"
    );
}

#[test]
fn a_fifo_trace_is_read_once() {
    let dir = TempDir::new("fifo-trace");
    let fifo = dir.0.join("t.csv");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    std::fs::write(dir.0.join("s.toml"), format!("{TRACE_SCENARIO}path = \"t.csv\"\n")).unwrap();
    let child = limitlab()
        .current_dir(&dir.0)
        .args(["run", "s.toml"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // One writer, once: a second open by the reader would wait for a writer forever.
    let writer = std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        f.write_all(trace_text().as_bytes()).unwrap();
    });
    let out = finish(child, "run on a FIFO trace");
    writer.join().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(", 2000 arrivals, 7 subjects,"), "{}", text(&out.stdout));
}

#[test]
fn a_trace_can_come_from_standard_input() {
    let dir = TempDir::new("stdin-trace");
    let mut reports = Vec::new();
    for path in ["-", "/dev/stdin"] {
        std::fs::write(dir.0.join("s.toml"), format!("{TRACE_SCENARIO}path = \"{path}\"\n")).unwrap();
        let mut child = limitlab()
            .current_dir(&dir.0)
            .args(["run", "s.toml"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || stdin.write_all(trace_text().as_bytes()).unwrap());
        let out = finish(child, path);
        writer.join().unwrap();
        assert!(out.status.success(), "{path}: {}", text(&out.stderr));
        let report = text(&out.stdout);
        assert!(report.contains(", 2000 arrivals, 7 subjects,"), "{path}: {report}");
        reports.push(report);
    }
    // The same trace as a regular file gives the same report.
    std::fs::write(dir.0.join("t.csv"), trace_text()).unwrap();
    std::fs::write(dir.0.join("s.toml"), format!("{TRACE_SCENARIO}path = \"t.csv\"\n")).unwrap();
    let out = limitlab().current_dir(&dir.0).args(["run", "s.toml"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(reports, [text(&out.stdout), text(&out.stdout)]);
}

/// A file size limit (RLIMIT_FSIZE) fails the writes as a full disk does: `attack` and `plot`
/// leave no picture or temporary file, say what was not written, and exit 2.
#[test]
fn a_file_that_cannot_be_written_whole_is_not_left_and_fails_the_command() {
    let dir = TempDir::new("fsize");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let spec = root.join("tests/fixtures/upstash_fixed_window.toml");
    // 16 KiB: the attack's traces and scenarios fit, its PNG does not.
    let out = file_size_limit(
        limitlab().current_dir(&dir.0).args(["attack", "--script", spec.to_str().unwrap()]).args([
            "--budget",
            "40",
            "--iterations",
            "20",
            "--out",
            "a",
        ]),
        16 << 10,
    )
    .output()
    .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        listing(&dir.0.join("a")),
        [
            "attack_upstash_fixed_window_false_rejections.csv",
            "attack_upstash_fixed_window_false_rejections.toml",
            "attack_upstash_fixed_window_overshoot.csv",
            "attack_upstash_fixed_window_overshoot.toml",
        ],
        "{err}"
    );
    assert!(err.starts_with("limitlab: warning: 2 files not written ("), "{err}");
    assert!(err.contains("File too large (os error 27)"), "{err}");
    assert!(err.contains("a/attack_upstash_fixed_window.png, a/attack_upstash_fixed_window.svg;"), "{err}");

    let out = file_size_limit(limitlab().current_dir(&dir.0).args(["plot", "--out", "p"]), 16 << 10).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(listing(&dir.0.join("p")), Vec::<String>::new(), "{err}");
    assert!(err.contains("2 files not written (") && err.contains("File too large (os error 27)"), "{err}");
}

/// SIGINT or SIGTERM during `run --decisions` removes the parts each script's thread was writing.
#[test]
fn an_interrupted_run_leaves_no_parts() {
    let dir = TempDir::new("interrupted");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("simulations/zipf_1m.toml");
    for sig in ["INT", "TERM"] {
        let out = dir.0.join(sig);
        std::fs::create_dir_all(&out).unwrap();
        let mut child = limitlab()
            .args(["run", scenario.to_str().unwrap(), "--decisions"])
            .arg(out.join("d.csv"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // A run of 10,000,000 requests: its parts exist long before it could end.
        wait_for("a part of the decisions file", || listing(&out).iter().any(|n| n.starts_with(".d.csv.part")));
        super::common::signal_pid(child.id(), sig);
        let status: ExitStatus = child.wait().unwrap();
        assert!(!status.success(), "{sig}: {status:?}");
        assert_eq!(listing(&out), Vec::<String>::new(), "{sig}");
    }
}

/// `init` writes its specs and scripts together: with room for the script and not for the spec,
/// neither is left (before, a 0-byte or truncated file stayed under its final name).
#[test]
fn init_leaves_every_file_whole_or_none() {
    let dir = TempDir::new("init-fsize");
    let nm = super::init_cli::fake_rlflex(&dir.0, "11.4.0", Some(super::init_cli::OWN_SCRIPT));
    let out_dir = dir.0.join("out");
    let args = ["init", nm.to_str().unwrap(), "--out", out_dir.to_str().unwrap()];
    let out = file_size_limit(limitlab().args(args), 512).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("rate_limiter_flexible_fixed_window.toml: File too large (os error 27)"), "{err}");
    assert_eq!(listing(&out_dir), Vec::<String>::new());
    // Without the limit both are written, whole.
    let out = limitlab().args(args).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        listing(&out_dir),
        ["rate_limiter_flexible_fixed_window.lua", "rate_limiter_flexible_fixed_window.toml"]
    );
}
