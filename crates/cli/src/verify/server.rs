//! A private `redis-server` for `verify` without `--redis`: started on a free loopback port in its
//! own temporary directory, persistence off, and killed (its directory removed) when dropped. Being
//! ours, it may be flushed between cases. [`PrivateCluster`]: three of them as a Redis Cluster
//! (`verify --script SPEC --cluster`).
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use limitlab_emulator::clock::Stopwatch;
use limitlab_emulator::{Error, Result};

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
        Self::start_with(&[], false)
    }

    /// [`PrivateServer::start`] with extra `redis-server` arguments; `bus` asks for a port whose
    /// cluster bus port (port + 10000) is free too.
    pub fn start_with(extra: &[&str], bus: bool) -> Result<PrivateServer> {
        let version = match Command::new("redis-server").arg("--version").stdin(Stdio::null()).output() {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
            Ok(out) => return Err(Error::Connection(format!("`redis-server --version` exited with {}", out.status))),
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
            match Self::try_start(&version, extra, bus) {
                Ok(s) => return Ok(s),
                Err(e) => last = e,
            }
        }
        Err(Error::Connection(format!("could not start a private redis-server: {last}")))
    }

    fn try_start(version: &str, extra: &[&str], bus: bool) -> std::result::Result<PrivateServer, String> {
        let free = || TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port());
        let mut port = free().map_err(|e| format!("no free port: {e}"))?;
        if bus {
            for _ in 0..100 {
                if port < 55_000 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
                    break;
                }
                port = free().map_err(|e| format!("no free port: {e}"))?;
            }
        }
        let dir = std::env::temp_dir().join(format!("limitlab-verify-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--dir", &dir.to_string_lossy()])
            .args(extra)
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

/// A three-master Redis Cluster of [`PrivateServer`]s on loopback, built without `redis-cli`: each
/// node gets a third of the slots (CLUSTER ADDSLOTSRANGE) and its own config epoch, the first meets
/// the others, and it is ready when every node says `cluster_state:ok`. Killed when dropped.
pub struct PrivateCluster {
    nodes: Vec<PrivateServer>,
}

impl PrivateCluster {
    pub fn start() -> Result<PrivateCluster> {
        let mut nodes = Vec::new();
        for _ in 0..3 {
            nodes.push(PrivateServer::start_with(&["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"], true)?);
        }
        let c = PrivateCluster { nodes };
        let fail = |e: redis::RedisError| Error::Connection(format!("building a private cluster: {e}"));
        let conn = |n: &PrivateServer| -> Result<redis::Connection> {
            redis::Client::open(n.url()).and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5))).map_err(fail)
        };
        let ranges = [(0u16, 5460u16), (5461, 10922), (10923, 16383)];
        for (i, (n, (lo, hi))) in c.nodes.iter().zip(ranges).enumerate() {
            let mut k = conn(n)?;
            redis::cmd("CLUSTER").arg("SET-CONFIG-EPOCH").arg(i + 1).query::<()>(&mut k).map_err(fail)?;
            redis::cmd("CLUSTER").arg("ADDSLOTSRANGE").arg(lo).arg(hi).query::<()>(&mut k).map_err(fail)?;
        }
        let mut first = conn(&c.nodes[0])?;
        for n in &c.nodes[1..] {
            redis::cmd("CLUSTER").arg("MEET").arg("127.0.0.1").arg(n.port()).query::<()>(&mut first).map_err(fail)?;
        }
        let waited = Stopwatch::start();
        for n in &c.nodes {
            let mut k = conn(n)?;
            loop {
                let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut k).map_err(fail)?;
                // Every node must also know all three masters before a client reads the slot map.
                let slots: redis::Value = redis::cmd("CLUSTER").arg("SLOTS").query(&mut k).map_err(fail)?;
                let known = matches!(&slots, redis::Value::Array(v) if v.len() == 3);
                if info.contains("cluster_state:ok") && known {
                    break;
                }
                if waited.elapsed_secs() > 30.0 {
                    return Err(Error::Connection(format!("a private cluster node on port {} never reported cluster_state:ok", n.port())));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(c)
    }

    /// `redis://127.0.0.1:PORT/` of the first node.
    pub fn url(&self) -> String {
        self.nodes[0].url()
    }

    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(PrivateServer::port).collect()
    }

    /// What `redis-server --version` printed.
    pub fn version(&self) -> &str {
        self.nodes[0].version()
    }
}
