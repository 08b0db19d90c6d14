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

// ---- additions for the real-backend, cluster and verify tests ----------------------------------

impl RedisServer {
    /// The server's process id (to stop, resume or kill it from a test).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal to the server with `kill` (`STOP`, `CONT`, `KILL`).
    pub fn signal(&self, sig: &str) {
        let status = Command::new("kill").args([&format!("-{sig}"), &self.pid().to_string()]).status();
        assert!(matches!(status, Ok(s) if s.success()), "kill -{sig} {} failed: {status:?}", self.pid());
    }

    /// Kills the server now (the drop that follows only cleans up).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether the binaries a test needs exist; under CI (env `CI` set) their absence is a failure.
pub fn require_binaries(test_name: &str, names: &[&str]) -> bool {
    for name in names {
        if !have_binary(name) {
            let msg = format!("{test_name}: {name} is not installed");
            if std::env::var_os("CI").is_some() {
                panic!("{msg} (CI is set, so this is an error)");
            }
            eprintln!("skipping {msg}");
            return false;
        }
    }
    true
}

/// A port `p` with `p` and its cluster bus port `p + 10000` both free at the time of asking.
fn free_cluster_port() -> std::io::Result<u16> {
    for _ in 0..200 {
        let p = free_port()?;
        if p < 55_000 && TcpListener::bind(("127.0.0.1", p + 10_000)).is_ok() {
            return Ok(p);
        }
    }
    Err(std::io::Error::other("no port p with p + 10000 free"))
}

/// A three-master Redis Cluster on loopback, built from the `redis-server` and `redis-cli` binaries:
/// three nodes with `--cluster-enabled yes`, joined by `redis-cli --cluster create ... --cluster-replicas 0`,
/// ready once every node reports `cluster_state:ok`. The nodes are killed and their directories removed
/// when it is dropped.
pub struct RedisCluster {
    nodes: Vec<Child>,
    ports: Vec<u16>,
    dirs: Vec<PathBuf>,
}

impl RedisCluster {
    /// Starts the cluster, or `None` (with the reason printed) without the binaries; under CI their
    /// absence is a failure.
    pub fn start_or_skip(test_name: &str) -> Option<RedisCluster> {
        if !require_binaries(test_name, &["redis-server", "redis-cli"]) {
            return None;
        }
        let mut last = String::new();
        for _ in 0..3 {
            match Self::try_start() {
                Ok(c) => return Some(c),
                Err(e) => last = e,
            }
        }
        panic!("could not start a Redis Cluster: {last}");
    }

    fn try_start() -> Result<RedisCluster, String> {
        let mut c = RedisCluster { nodes: Vec::new(), ports: Vec::new(), dirs: Vec::new() };
        for _ in 0..3 {
            let port = free_cluster_port().map_err(|e| e.to_string())?;
            let dir = std::env::temp_dir().join(format!("limitlab-cluster-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
            let conf = dir.join("nodes.conf");
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .args(["--cluster-enabled", "yes", "--cluster-config-file", &conf.to_string_lossy()])
                .args(["--dir", &dir.to_string_lossy()])
                .current_dir(&dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("spawning redis-server: {e}"))?;
            c.nodes.push(child);
            c.ports.push(port);
            c.dirs.push(dir);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        for &p in &c.ports {
            while !ping(p) {
                if Instant::now() > deadline {
                    return Err(format!("node {p} did not answer PING"));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let addrs: Vec<String> = c.ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("running redis-cli --cluster create: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "redis-cli --cluster create failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        for &p in &c.ports {
            loop {
                let info = Command::new("redis-cli")
                    .args(["-p", &p.to_string(), "cluster", "info"])
                    .output()
                    .map_err(|e| format!("redis-cli cluster info: {e}"))?;
                if String::from_utf8_lossy(&info.stdout).contains("cluster_state:ok") {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("node {p} never reported cluster_state:ok"));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(c)
    }

    /// The nodes' ports (all masters).
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// `redis://127.0.0.1:PORT/` of the first node.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.ports[0])
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            let _ = n.kill();
            let _ = n.wait();
        }
        for d in &self.dirs {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}
