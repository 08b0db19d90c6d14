//! A private `redis-server` for benchmarks run without `--redis`: started on a free loopback port
//! with persistence off, and stopped (killed and reaped) when dropped.
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::engines::RedisConn;

/// How long a fresh server may take to answer PING.
const STARTUP: Duration = Duration::from_secs(10);

/// A running private server.
pub struct PrivateServer {
    child: Child,
    pub port: u16,
}

impl PrivateServer {
    /// Starts `redis-server` from the PATH. The error says why there is no server, in words for
    /// a report ("redis-server is not installed", "it exited: ...").
    pub fn start() -> Result<PrivateServer, String> {
        // A port can be taken between choosing it and the server binding it: try a few.
        let mut why = String::new();
        for _ in 0..3 {
            match Self::try_start() {
                Ok(s) => return Ok(s),
                Err((e, fatal)) if fatal => return Err(e),
                Err((e, _)) => why = e,
            }
        }
        Err(why)
    }

    /// One attempt; the flag says whether trying again is pointless (nothing to start).
    fn try_start() -> Result<PrivateServer, (String, bool)> {
        // A free port: bind port 0, read what the OS chose, let it go. Another process could take
        // it in between; then the server fails to bind and we say so.
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| (format!("no free loopback port: {e}"), true))?
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--protected-mode", "yes", "--daemonize", "no", "--loglevel", "warning"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    let why = "redis-server is not installed (not on the PATH); pass --redis URL to measure a running server";
                    (why.to_string(), true)
                } else {
                    (format!("redis-server could not be started: {e}"), true)
                }
            })?;
        let mut server = PrivateServer { child, port };
        let deadline = Instant::now() + STARTUP;
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err((format!("redis-server exited at once ({status}) on port {port}"), false));
            }
            if let Ok(mut c) = RedisConn::connect(&server.url(), Duration::from_millis(500)) {
                if matches!(c.command(&[b"PING"]), Ok(limitlab_emulator::Reply::Status(s)) if s == "PONG") {
                    return Ok(server);
                }
            }
            if Instant::now() > deadline {
                let why = format!("redis-server did not answer PING on port {port} within {} s", STARTUP.as_secs());
                return Err((why, false));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
