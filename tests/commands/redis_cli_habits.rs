//! `limitlab cli` with redis-cli's everyday habits: the command from the arguments, `-r`, `-i`, `-x`,
//! `-n`, `-a`/`--user`/`--pass`/`--no-auth-warning`, `-u`, the prompt at a terminal (with history);
//! and the sharp edges of the command line: `rediss://` to a plain server, `--skip-bad-lines`, the
//! virtual clock before the epoch.
use crate::common;

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{LimitlabServe, TempDir};

const WARNING: &str =
    "Warning: Using a password with '-a' or '-u' option on the command line interface may not be safe.\n";

fn cli(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_limitlab"))
        .arg("cli")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// (stdout, stderr) of a run that must succeed.
fn ok(args: &[&str], stdin: &[u8]) -> (String, String) {
    let out = cli(args, stdin);
    let (o, e) = (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    assert!(out.status.success(), "limitlab cli {args:?}: {:?}\n{o}\n{e}", out.status);
    (o, e)
}

#[test]
fn the_command_from_the_arguments() {
    assert_eq!(ok(&["SET", "k", "v"], b"").0, "OK\n");
    assert_eq!(ok(&["-r", "3", "INCR", "n"], b"").0, "1\n2\n3\n");
    assert_eq!(ok(&["--no-raw", "-r", "2", "INCR", "n"], b"").0, "(integer) 1\n(integer) 2\n");
    assert_eq!(ok(&["-r", "2", "-i", "0.01", "PING"], b"").0, "PONG\nPONG\n");
    assert_eq!(ok(&["-r", "0", "PING"], b"").0, "", "-r 0 runs nothing, as in redis-cli");
    // -x: the last argument is stdin, all of it.
    assert_eq!(ok(&["-x", "ECHO"], b"a\nb\n").0, "a\nb\n\n");
    assert_eq!(ok(&["--no-raw", "-x", "ECHO"], b"a\nb\n").0, "\"a\\nb\\n\"\n");
    // Arguments that look like options after the command are the command's.
    assert_eq!(ok(&["CLOCK.ADVANCE", "-1000"], b"").0, "OK\n");
    // An error reply is printed as redis-cli prints it (exit status 0, as redis-cli 7.0's).
    assert_eq!(ok(&["--no-raw", "INCR"], b"").0, "(error) ERR wrong number of arguments for 'incr' command\n");
    // -n on the emulator: SELECT first.
    let info = ok(&["-n", "3", "CLIENT", "INFO"], b"").0;
    assert!(info.contains(" db=3 "), "{info}");
    let (o, e) = ok(&["-n", "99", "PING"], b"");
    assert_eq!((o.as_str(), e.as_str()), ("PONG\n", "SELECT 99 failed: ERR DB index is out of range\n"));
}

#[test]
fn a_server_with_a_password_and_databases() {
    let serve = LimitlabServe::start(&["--requirepass", "s3cret"]);
    let p = serve.port().to_string();
    let (o, e) = ok(&["-p", &p, "PING"], b"");
    assert_eq!((o.as_str(), e.as_str()), ("NOAUTH Authentication required.\n\n", ""));
    let (o, e) = ok(&["-p", &p, "-a", "s3cret", "-n", "2", "SET", "k", "in-2"], b"");
    assert_eq!((o.as_str(), e.as_str()), ("OK\n", WARNING));
    let (o, e) = ok(&["-p", &p, "-a", "s3cret", "--no-auth-warning", "-n", "2", "GET", "k"], b"");
    assert_eq!((o.as_str(), e.as_str()), ("in-2\n", ""));
    let (o, e) = ok(&["-h", "127.0.0.1", "-p", &p, "--user", "default", "--pass", "s3cret", "GET", "k"], b"");
    assert_eq!((o.as_str(), e.as_str()), ("\n", WARNING), "database 0 has no k");
    let (o, e) = ok(&["-p", &p, "-a", "wrong", "PING"], b"");
    assert_eq!(o, "NOAUTH Authentication required.\n\n");
    assert_eq!(e, format!("{WARNING}AUTH failed: WRONGPASS invalid username-password pair or user is disabled.\n"));
    // -u: the password and the database from the URI.
    let url = format!("redis://:s3cret@127.0.0.1:{p}/2");
    let (o, e) = ok(&["-u", &url, "GET", "k"], b"");
    assert_eq!((o.as_str(), e.as_str()), ("in-2\n", WARNING));
    // Commands on stdin after AUTH and SELECT.
    let (o, _) = ok(&["-p", &p, "-a", "s3cret", "--no-auth-warning", "-n", "2"], b"GET k\nDBSIZE\n");
    assert_eq!(o, "in-2\n1\n");
}

#[test]
fn rediss_to_a_plain_server_fails_at_once_saying_so() {
    let serve = LimitlabServe::start(&[]);
    let url = format!("rediss://127.0.0.1:{}", serve.port());
    // A minute's timeout: before, the handshake waited for all of it.
    let started = Instant::now();
    let out = cli(&["-u", &url, "--redis-timeout-ms", "60000", "PING"], b"");
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("TLS handshake failed") && err.contains("speaks plain RESP"), "{err}");
    assert!(!err.contains("os error"), "{err}");
    assert!(took < Duration::from_secs(30), "took {took:?}: the handshake's timeout was waited out");
}

#[test]
fn the_clock_refuses_to_move_before_the_epoch() {
    let (o, _) =
        ok(&["--at", "1000"], b"CLOCK.ADVANCE -99999999999\nCLOCK.SET -1\nCLOCK.GET\nCLOCK.ADVANCE -1000\nCLOCK.GET\n");
    let refused = "ERR invalid unix time in milliseconds, must not be negative\n\n";
    assert_eq!(o, format!("{refused}{refused}1000\nOK\n0\n"));
}

#[test]
fn skip_bad_lines_counts_and_names_them() {
    let dir = TempDir::new("skip-bad-lines");
    let log = "1.2.3.4 - - [01/Jul/1995:00:00:01 -0400] \"GET /\" 200 1\nnot a log line\n\
               5.6.7.8 - - [01/Jul/1995:00:00:02 -0400] \"GET /\" 200 1\n\
               5.6.7.8 - - [32/Jul/1995:00:00:02 -0400] \"GET /\" 200 1\n";
    std::fs::write(dir.0.join("access.log"), log).unwrap();
    let scenario = dir.0.join("s.toml");
    std::fs::write(
        &scenario,
        "name = \"t\"\ndescription = \"x\"\nlimit = 10\nwindow_ms = 1000\nalgorithms = [\"fixed_window\"]\n\n\
         [traffic]\nkind = \"trace\"\npath = \"access.log\"\n",
    )
    .unwrap();
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_limitlab"))
            .arg("run")
            .args(extra)
            .arg(&scenario)
            .stdin(Stdio::null())
            .output()
            .expect("the binary runs")
    };
    let strict = run(&[]);
    let err = String::from_utf8_lossy(&strict.stderr);
    assert_eq!(strict.status.code(), Some(2), "{err}");
    assert!(err.contains("access.log:2: no [date] field"), "{err}");
    let lenient = run(&["--skip-bad-lines"]);
    let (out, err) = (String::from_utf8_lossy(&lenient.stdout), String::from_utf8_lossy(&lenient.stderr));
    assert!(lenient.status.success(), "{err}");
    assert!(out.contains("2 arrivals"), "{out}");
    let line = err.lines().find(|l| l.contains("skipped")).unwrap_or_else(|| panic!("no report: {err}"));
    assert!(
        line.starts_with("limitlab: ")
            && line.contains("access.log: skipped 2 bad lines: line 2: no [date] field; line 4: "),
        "{line}"
    );
    assert!(line.contains("day 32"), "{line}");
}

/// A pseudo-terminal: the child's stdin, stdout and stderr are its other end.
struct Pty {
    master: std::fs::File,
    child: std::process::Child,
    seen: Arc<Mutex<Vec<u8>>>,
}

impl Pty {
    fn spawn(args: &[&str], history: &std::path::Path) -> Pty {
        use std::os::fd::{FromRawFd, OwnedFd};
        let (mut master, mut slave) = (-1, -1);
        // SAFETY: openpty writes two descriptors it opened into the given ints; the name, termios
        // and window-size pointers may be null.
        let rc =
            unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both descriptors were just opened by openpty and are owned by nothing else.
        let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let child = Command::new(env!("CARGO_BIN_EXE_limitlab"))
            .arg("cli")
            .args(args)
            .env("LIMITLAB_CLI_HISTFILE", history)
            .env("TERM", "xterm")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave))
            .spawn()
            .expect("the binary runs");
        let master = std::fs::File::from(master);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (mut reader, sink) = (master.try_clone().unwrap(), seen.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Ends with EIO once the child has closed the terminal.
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Pty { master, child, seen }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.seen.lock().unwrap()).into_owned()
    }

    /// Waits until `what` has been shown `times` times in all.
    fn wait_for(&self, what: &str, times: usize) {
        common::wait_for(&format!("{what:?} x{times} at the terminal"), || self.text().matches(what).count() >= times);
    }

    fn type_line(&mut self, line: &str) {
        self.master.write_all(format!("{line}\r").as_bytes()).unwrap();
    }
}

#[test]
fn a_prompt_at_a_terminal_with_history() {
    let dir = TempDir::new("cli-prompt");
    let history = dir.0.join("history");
    let mut t = Pty::spawn(&[], &history);
    t.wait_for("limitlab> ", 1);
    t.type_line("INCR n");
    t.wait_for("(integer) 1\r\n", 1);
    t.wait_for("limitlab> ", 2);
    t.type_line("SELECT 2");
    t.wait_for("limitlab[2]> ", 1);
    t.type_line("RPUSH l a b");
    t.wait_for("(integer) 2\r\n", 1);
    t.wait_for("limitlab[2]> ", 2);
    t.type_line("LRANGE l 0 -1");
    t.wait_for("1) \"a\"\r\n2) \"b\"\r\n", 1);
    t.wait_for("limitlab[2]> ", 3);
    t.type_line("quit");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = t.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "still running after quit:\n{}", t.text());
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}\n{}", t.text());
    let kept = std::fs::read_to_string(&history).expect("the history file");
    let lines: Vec<&str> = kept.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines, ["INCR n", "SELECT 2", "RPUSH l a b", "LRANGE l 0 -1", "quit"]);
}

#[test]
fn the_prompt_names_the_server() {
    let serve = LimitlabServe::start(&[]);
    let dir = TempDir::new("cli-prompt-server");
    let p = serve.port().to_string();
    let mut t = Pty::spawn(&["-p", &p, "-n", "1"], &dir.0.join("history"));
    let prompt = format!("127.0.0.1:{p}[1]> ");
    t.wait_for(&prompt, 1);
    t.type_line("PING");
    t.wait_for("PONG\r\n", 1);
    t.wait_for(&prompt, 2);
    t.type_line("exit");
    common::wait_for("the prompt to end", || t.child.try_wait().unwrap().is_some());
}

#[test]
fn a_tls_server_by_uri() {
    let Some(tls) = common::TlsServer::start_or_skip("a_tls_server_by_uri") else { return };
    let url = format!("rediss://127.0.0.1:{}/4", tls.tls_port);
    let ca = tls.ca.to_str().expect("a UTF-8 path");
    let (o, e) = ok(&["-u", &url, "--tls-ca", ca, "SET", "tls-k", "v"], b"");
    assert_eq!((o.as_str(), e.as_str()), ("OK\n", ""));
    // -u's database was selected: the key is in database 4 only.
    assert_eq!(ok(&["-u", &url, "--tls-ca", ca], b"GET tls-k\nDEL tls-k\n").0, "v\n1\n");
}
