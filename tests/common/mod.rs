//! Shared helpers for integration tests: a private, throw-away `redis-server` for comparing the emulator
//! with the real thing.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` child process on a free loopback port, in its own temporary directory, with
/// persistence off. It is killed (and its directory removed) when dropped.
pub struct RedisServer {
    child: Child,
    port: u16,
    dir: PathBuf,
}

/// Whether a program can be started (found on PATH and executable).
pub fn have_binary(name: &str) -> bool {
    Command::new(name).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

impl RedisServer {
    /// Starts a server and waits until it answers PING. Panics when that fails.
    pub fn start() -> RedisServer {
        // A port could be taken between probing and binding; try a few.
        let mut last_err = String::new();
        for _ in 0..5 {
            match Self::try_start() {
                Ok(s) => return s,
                Err(e) => last_err = e,
            }
        }
        panic!("could not start redis-server: {last_err}");
    }

    /// A server for `test_name`, or `None` (with the reason printed) when `redis-server` is not installed.
    /// Under CI (env `CI` set) a missing server is a failure, not a skip.
    pub fn start_or_skip(test_name: &str) -> Option<RedisServer> {
        if !have_binary("redis-server") {
            let msg = format!("{test_name}: redis-server is not installed");
            if std::env::var_os("CI").is_some() {
                panic!("{msg} (CI is set, so this is an error)");
            }
            eprintln!("skipping {msg}");
            return None;
        }
        Some(Self::start())
    }

    fn try_start() -> Result<RedisServer, String> {
        let port = free_port().map_err(|e| format!("no free port: {e}"))?;
        let dir = temp_dir(port);
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--dir", &dir.to_string_lossy()])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("spawning redis-server: {e}"))?;
        let mut server = RedisServer { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!("redis-server exited early ({status}) on port {port}"));
            }
            if ping(port) {
                return Ok(server);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = server.child.kill();
        Err(format!("redis-server on port {port} did not answer PING within 10s"))
    }

    /// The server's TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT/`, for client libraries.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The server's working directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A port the OS just handed out on loopback (free at the time of asking).
fn free_port() -> std::io::Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

fn temp_dir(port: u16) -> PathBuf {
    std::env::temp_dir().join(format!("limitlab-redis-{}-{port}", std::process::id()))
}

/// Sends an inline PING and waits for `+PONG`.
fn ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 64];
    let mut got = Vec::new();
    while !got.ends_with(b"\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    got == b"+PONG\r\n"
}
