//! `limitlab serve --exit-with-stdin`: the server exits when its standard input closes, which is how
//! the Python and Node packages' fixtures make sure no server outlives a killed test run (the system
//! closes the pipe of a dead parent). Without the flag, a closed stdin changes nothing.
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `limitlab serve --port 0 EXTRA...` with stdin a pipe (or /dev/null); the child and its port.
fn start(extra: &[&str], stdin: Stdio) -> (Child, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_limitlab"))
        .args(["serve", "--port", "0"])
        .args(extra)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the limitlab binary starts");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let port = line.trim_end().rsplit_once(':').and_then(|(_, p)| p.parse().ok());
    let port = port.unwrap_or_else(|| panic!("no port in the first line {line:?}"));
    (child, port)
}

fn ping(port: u16) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"PING\r\n").unwrap();
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf).unwrap();
    String::from_utf8_lossy(&buf).into_owned()
}

/// Waits up to 20 s for the child to exit by itself.
fn exited(child: &mut Child) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

#[test]
fn exit_with_stdin_ends_the_server_when_stdin_closes() {
    for extra in [&["--exit-with-stdin"][..], &["--exit-with-stdin", "--cluster", "3"]] {
        let (mut child, port) = start(extra, Stdio::piped());
        assert_eq!(ping(port), "+PONG\r\n");
        // Still serving while the pipe is open.
        assert!(child.try_wait().unwrap().is_none(), "{extra:?} exited with stdin open");
        drop(child.stdin.take());
        let status = exited(&mut child);
        let _ = child.kill();
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert!(status.is_some_and(|s| s.success()), "{extra:?}: {status:?}, stderr:\n{err}");
        assert!(err.contains("standard input closed"), "{err}");
    }
}

#[test]
fn without_the_flag_a_closed_stdin_changes_nothing() {
    let (mut child, port) = start(&[], Stdio::null());
    assert_eq!(ping(port), "+PONG\r\n");
    assert_eq!(ping(port), "+PONG\r\n");
    assert!(child.try_wait().unwrap().is_none(), "serve exited on its own");
    let _ = child.kill();
    let _ = child.wait();
}

/// A dead parent closes every pipe it held: with stderr's reader gone too, the server still exits
/// (writing its farewell to a closed stderr must not stop it).
#[test]
fn exit_with_stdin_when_stderr_is_closed_too() {
    let (mut child, port) = start(&["--exit-with-stdin"], Stdio::piped());
    assert_eq!(ping(port), "+PONG\r\n");
    drop(child.stderr.take());
    drop(child.stdin.take());
    let status = exited(&mut child);
    let _ = child.kill();
    let _ = child.wait();
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}
