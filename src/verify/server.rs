//! A private `redis-server` for `verify` without `--redis`: started on a free loopback port in its
//! own temporary directory, persistence off, and killed (its directory removed) when dropped. Being
//! ours, it may be flushed between cases.
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::clock::Stopwatch;
use crate::{Error, Result};

/// A `redis-server` child process.
pub struct PrivateServer {
    child: Child,
    port: u16,
    dir: PathBuf,
    version: String,
}

impl PrivateServer {
    /// Starts `redis-server` from the PATH and waits until it answers PING.
    pub fn start() -> Result<PrivateServer> {
        let version = match Command::new("redis-server").arg("--version").stdin(Stdio::null()).output() {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
            Ok(out) => {
                return Err(Error::Connection(format!("`redis-server --version` exited with {}", out.status)))
            }
            Err(e) => {
                return Err(Error::Connection(format!(
                    "no --redis URL was given and redis-server could not be started ({e}): install Redis 7.0 or \
                     pass --redis redis://HOST:PORT"
                )))
            }
        };
        let mut last = String::new();
        // The free port could be taken between asking and binding: try a few.
        for _ in 0..5 {
            match Self::try_start(&version) {
                Ok(s) => return Ok(s),
                Err(e) => last = e,
            }
        }
        Err(Error::Connection(format!("could not start a private redis-server: {last}")))
    }

    fn try_start(version: &str) -> std::result::Result<PrivateServer, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| format!("no free port: {e}"))?;
        let dir = std::env::temp_dir().join(format!("limitlab-verify-{}-{port}", std::process::id()));
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
        let mut s = PrivateServer { child, port, dir, version: version.to_string() };
        let waited = Stopwatch::start();
        while waited.elapsed_secs() < 10.0 {
            if let Ok(Some(status)) = s.child.try_wait() {
                return Err(format!("redis-server exited at once ({status}) on port {port}"));
            }
            let ok = redis::Client::open(s.url())
                .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
            if ok.is_ok() {
                return Ok(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!("redis-server on port {port} did not answer within 10 s"))
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// What `redis-server --version` printed.
    pub fn version(&self) -> &str {
        &self.version
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
