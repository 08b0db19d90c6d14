//! Shared helpers for integration tests: the one way a test starts a private `redis-server` or a
//! three-master Redis Cluster. Every test that needs a real server goes through [`RedisServer`] or
//! [`RedisCluster`]; no test file spawns `redis-server` or picks a port on its own.
//!
//! - The port is one the OS just handed out; when it is taken before the server binds it (the server
//!   exits, or another process answers on it), the start is retried on a new port.
//! - Ready means this server answered PING and INFO names the child's own process id, never a bare
//!   TCP connect (which another process on the port, or a server still starting, can accept).
//! - The server's stdout and stderr go to a log file in its own directory; when start-up fails, the
//!   panic shows the log of every attempt.
//! - The process is killed and its directory removed when the value is dropped, also when the test
//!   panics.
//! - Without the binaries a test is skipped with a printed reason; under CI (env `CI` set) that is a
//!   failure instead.
#![allow(dead_code)]

mod proxy;
#[allow(unused_imports)]
pub use proxy::{Fault, FaultProxy, ProxyState, Rule};

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Starts of one server tried on fresh ports before giving up.
const ATTEMPTS: usize = 5;
/// How long one start may take to answer PING (generous: tests may run beside heavy load).
const READY_WITHIN: Duration = Duration::from_secs(30);

/// A `redis-server` child process on a loopback port, in its own temporary directory, with
/// persistence off. It is killed (and its directory removed) when dropped.
pub struct RedisServer {
    child: Child,
    port: u16,
    dir: PathBuf,
    /// How it was started, to start it again ([`RedisServer::restart`]).
    cluster_node: bool,
    extra: Vec<String>,
}

/// Whether a program can be started (found on PATH and executable).
pub fn have_binary(name: &str) -> bool {
    Command::new(name).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

/// Whether the binaries a test needs exist. Without one the test should return early: the reason is
/// printed, and under CI (env `CI` set) it panics instead.
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

/// What `redis-server --version` prints, trimmed (empty when it cannot be run).
pub fn redis_server_version() -> String {
    let out = Command::new("redis-server").arg("--version").stdin(Stdio::null()).output();
    out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default()
}

/// A loopback port nothing listened on when asked (for tests of connecting to nothing).
pub fn unused_port() -> u16 {
    free_port().expect("a free loopback port")
}

/// Sends signal `sig` (`STOP`, `CONT`, `KILL`, ...) to process `pid` with `kill`.
pub fn signal_pid(pid: u32, sig: &str) {
    let status = Command::new("kill").args([&format!("-{sig}"), &pid.to_string()]).status();
    assert!(matches!(status, Ok(s) if s.success()), "kill -{sig} {pid} failed: {status:?}");
}

impl RedisServer {
    /// Starts a server and waits until it answers PING. Panics (with the server's output) when that
    /// fails on every port tried.
    pub fn start() -> RedisServer {
        Self::start_with(&[])
    }

    /// [`RedisServer::start`] with extra `redis-server` arguments (`["--maxmemory", "1mb"]`).
    pub fn start_with(extra: &[&str]) -> RedisServer {
        Self::try_start_with(extra).unwrap_or_else(|e| panic!("could not start redis-server: {e}"))
    }

    /// [`RedisServer::start_with`] returning why it failed (every attempt, with the server's output).
    pub fn try_start_with(extra: &[&str]) -> Result<RedisServer, String> {
        Self::launch(false, extra, free_port)
    }

    /// A server on the first of `ports` where one comes up (to test this helper: a port another
    /// server holds must be passed over, not taken for ours).
    pub fn try_start_on(ports: &[u16]) -> Result<RedisServer, String> {
        let mut ports = ports.iter().copied();
        let next = move || ports.next().ok_or_else(|| std::io::Error::other("no port left to try"));
        Self::launch(false, &[], next)
    }

    /// A server for `test_name`, or `None` (with the reason printed) when `redis-server` is not
    /// installed. Under CI (env `CI` set) a missing server is a failure, not a skip.
    pub fn start_or_skip(test_name: &str) -> Option<RedisServer> {
        Self::start_or_skip_needing(test_name, &[])
    }

    /// [`RedisServer::start_or_skip`] for a test that also needs other binaries (`["redis-cli"]`):
    /// they are checked before any server starts.
    pub fn start_or_skip_needing(test_name: &str, more: &[&str]) -> Option<RedisServer> {
        let mut names = vec!["redis-server"];
        names.extend_from_slice(more);
        require_binaries(test_name, &names).then(Self::start)
    }

    /// Up to [`ATTEMPTS`] starts, each on a new port from `next_port`; the error holds every
    /// attempt's story.
    fn launch(cluster_node: bool, extra: &[&str], mut next_port: impl FnMut() -> std::io::Result<u16>) -> Result<RedisServer, String> {
        let mut failures = Vec::new();
        for attempt in 1..=ATTEMPTS {
            let port = match next_port() {
                Ok(p) => p,
                Err(e) => {
                    failures.push(format!("attempt {attempt}: no free port: {e}"));
                    break;
                }
            };
            match Self::try_start(port, cluster_node, extra) {
                Ok(s) => return Ok(s),
                Err(e) => failures.push(format!("attempt {attempt}: {e}")),
            }
        }
        Err(failures.join("\n"))
    }

    fn try_start(port: u16, cluster_node: bool, extra: &[&str]) -> Result<RedisServer, String> {
        static STARTS: AtomicUsize = AtomicUsize::new(0);
        let n = STARTS.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("limitlab-redis-{}-{n}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let log = File::create(dir.join(LOG)).map_err(|e| format!("creating the log in {}: {e}", dir.display()))?;
        let log2 = log.try_clone().map_err(|e| format!("the log: {e}"))?;
        let mut cmd = Command::new("redis-server");
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--dir", &dir.to_string_lossy()]);
        if cluster_node {
            cmd.args(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]);
        }
        let spawned = cmd.args(extra).current_dir(&dir).stdin(Stdio::null()).stdout(Stdio::from(log)).stderr(Stdio::from(log2)).spawn();
        let child = match spawned {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(format!("spawning redis-server: {e}"));
            }
        };
        // From here on, dropping `server` kills the child and removes its directory.
        let extra = extra.iter().map(|s| s.to_string()).collect();
        let mut server = RedisServer { child, port, dir, cluster_node, extra };
        let pid = server.child.id();
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!("redis-server exited ({status}) on port {port}{}", server.log_excerpt()));
            }
            match whose_server(port) {
                Ok(p) if p == pid => return Ok(server),
                // Another server holds the port: ours cannot bind it. Kill ours, try a new port.
                Ok(p) => return Err(format!("port {port} is held by another redis-server (pid {p}){}", server.log_excerpt())),
                Err(_) if Instant::now() <= deadline => {}
                Err(last) => {
                    return Err(format!(
                        "redis-server (pid {pid}) on port {port} did not answer PING within {} s (last: {last}){}",
                        READY_WITHIN.as_secs(),
                        server.log_excerpt()
                    ))
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
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

    /// The server's process id (to stop, resume or kill it from a test).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal to the server with `kill` (`STOP`, `CONT`, `KILL`).
    pub fn signal(&self, sig: &str) {
        signal_pid(self.pid(), sig);
    }

    /// Kills the server now (the drop that follows only cleans up).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Restarts the server as a restart in production does: `SHUTDOWN SAVE` (its keys go to
    /// `dump.rdb` in its directory), then the same `redis-server` command on the same port, which
    /// loads them back. Its script cache is empty afterwards, and every connection to it was
    /// closed. Panics (with the output) when it does not come back.
    pub fn restart(&mut self) {
        if let Ok(mut c) = RespConn::open(self.port) {
            let _ = c.command(&["SHUTDOWN", "SAVE"]);
        }
        let status = self.child.wait().expect("wait for redis-server to exit");
        assert!(self.dir.join("dump.rdb").exists(), "no dump.rdb after SHUTDOWN SAVE ({status}){}", self.log_excerpt());
        let extra: Vec<&str> = self.extra.iter().map(String::as_str).collect();
        let port = self.port;
        let mut spawned = None;
        let deadline = Instant::now() + READY_WITHIN;
        // The port is ours; the new process may need a few tries to bind it right after the old exits.
        while spawned.is_none() {
            match Self::spawn_in(&self.dir, port, self.cluster_node, &extra) {
                Ok(child) => spawned = Some(child),
                Err(e) => assert!(Instant::now() < deadline, "restarting redis-server: {e}"),
            }
        }
        self.child = spawned.unwrap();
        let pid = self.child.id();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("redis-server did not come back on port {port} ({status}){}", self.log_excerpt());
            }
            match whose_server(port) {
                Ok(p) if p == pid => return,
                _ if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                other => panic!("redis-server (pid {pid}) did not come back on port {port}: {other:?}{}", self.log_excerpt()),
            }
        }
    }

    /// Spawns `redis-server` for a restart in `dir` (output appended to its log).
    fn spawn_in(dir: &Path, port: u16, cluster_node: bool, extra: &[&str]) -> Result<Child, String> {
        let log = std::fs::OpenOptions::new().append(true).create(true).open(dir.join(LOG)).map_err(|e| e.to_string())?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        let mut cmd = Command::new("redis-server");
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--dir", &dir.to_string_lossy()]);
        if cluster_node {
            cmd.args(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]);
        }
        cmd.args(extra)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2))
            .spawn()
            .map_err(|e| format!("spawning redis-server: {e}"))
    }

    /// A replica of this server (`--replicaof`), ready once it reports `master_link_status:up`.
    pub fn start_replica(&self) -> RedisServer {
        let port = self.port.to_string();
        let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &port]);
        wait_for(&format!("replica {} linked to {port}", replica.port()), || {
            let info = RespConn::open(replica.port()).and_then(|mut c| c.command(&["INFO", "replication"]));
            matches!(&info, Ok(RespReply::Bulk(b)) if b.contains("master_link_status:up"))
        });
        replica
    }

    /// Everything the server printed so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(self.dir.join(LOG)).unwrap_or_else(|e| format!("(no log: {e})"))
    }

    /// The last lines of the server's output, indented, for an error message.
    fn log_excerpt(&self) -> String {
        let out = self.output();
        let lines: Vec<&str> = out.lines().collect();
        let tail = &lines[lines.len().saturating_sub(40)..];
        if tail.is_empty() {
            return "; it printed nothing".to_string();
        }
        format!("; its output:\n    {}", tail.join("\n    "))
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The file in a server's directory that holds its stdout and stderr.
const LOG: &str = "redis-server.log";

/// A port the OS just handed out on loopback (free at the time of asking).
fn free_port() -> std::io::Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
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

/// The process id of the Redis server answering on `port`: it must answer PING with PONG, then
/// INFO server names its `process_id`. An error says what was missing.
fn whose_server(port: u16) -> Result<u32, String> {
    let mut conn = RespConn::open(port)?;
    match conn.command(&["PING"])? {
        RespReply::Line(l) if l == "+PONG" => {}
        other => return Err(format!("PING answered {other:?}")),
    }
    let info = match conn.command(&["INFO", "server"])? {
        RespReply::Bulk(b) => b,
        other => return Err(format!("INFO answered {other:?}")),
    };
    info.lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .and_then(|p| p.trim().parse().ok())
        .ok_or_else(|| "INFO server has no process_id".to_string())
}

/// A reply of the minimal RESP client: a status/error/integer line (with its type byte) or a bulk
/// string's body.
#[derive(Debug)]
enum RespReply {
    Line(String),
    Bulk(String),
}

/// A minimal RESP client for start-up checks, with short timeouts, independent of any client library.
struct RespConn {
    reader: BufReader<TcpStream>,
}

impl RespConn {
    fn open(port: u16) -> Result<RespConn, String> {
        let s =
            TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(500)).map_err(|e| format!("connect: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(2))).map_err(|e| e.to_string())?;
        s.set_write_timeout(Some(Duration::from_secs(2))).map_err(|e| e.to_string())?;
        Ok(RespConn { reader: BufReader::new(s) })
    }

    fn command(&mut self, args: &[&str]) -> Result<RespReply, String> {
        let mut req = format!("*{}\r\n", args.len());
        for a in args {
            req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        self.reader.get_mut().write_all(req.as_bytes()).map_err(|e| format!("sending {}: {e}", args[0]))?;
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => return Err(format!("{}: connection closed", args[0])),
            Ok(_) => {}
            Err(e) => return Err(format!("{}: {e}", args[0])),
        }
        let line = line.trim_end().to_string();
        let Some(len) = line.strip_prefix('$') else { return Ok(RespReply::Line(line)) };
        let len: usize = len.parse().map_err(|_| format!("{}: bad bulk header {line:?}", args[0]))?;
        let mut body = vec![0; len + 2];
        self.reader.read_exact(&mut body).map_err(|e| format!("{}: {e}", args[0]))?;
        body.truncate(len);
        Ok(RespReply::Bulk(String::from_utf8_lossy(&body).into_owned()))
    }
}

/// A three-master Redis Cluster on loopback: three [`RedisServer`] nodes started with
/// `--cluster-enabled yes` (each on a port whose bus port is free too), joined by
/// `redis-cli --cluster create ... --cluster-replicas 0`, ready once every node reports
/// `cluster_state:ok`. The nodes are killed and their directories removed when it is dropped.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
    ports: Vec<u16>,
}

impl RedisCluster {
    /// Starts the cluster, or `None` (with the reason printed) without the binaries; under CI their
    /// absence is a failure. Panics, with the nodes' output, when it cannot be built.
    pub fn start_or_skip(test_name: &str) -> Option<RedisCluster> {
        Self::start_with_replicas_or_skip(test_name, 0)
    }

    /// [`RedisCluster::start_or_skip`] with `replicas` replicas per master (3 masters, then the
    /// replicas: `--cluster-replicas N`), ready once every node reports `cluster_state:ok`, knows
    /// every other node, and every replica's link to its master is up.
    pub fn start_with_replicas_or_skip(test_name: &str, replicas: usize) -> Option<RedisCluster> {
        if !require_binaries(test_name, &["redis-server", "redis-cli"]) {
            return None;
        }
        let mut failures = Vec::new();
        for attempt in 1..=3 {
            match Self::try_start(replicas) {
                Ok(c) => return Some(c),
                Err(e) => failures.push(format!("cluster attempt {attempt}: {e}")),
            }
        }
        panic!("could not start a Redis Cluster:\n{}", failures.join("\n"));
    }

    fn try_start(replicas: usize) -> Result<RedisCluster, String> {
        let mut nodes = Vec::new();
        for _ in 0..3 * (1 + replicas) {
            nodes.push(RedisServer::launch(true, &[], free_cluster_port)?);
        }
        let ports: Vec<u16> = nodes.iter().map(RedisServer::port).collect();
        let c = RedisCluster { nodes, ports };
        let addrs: Vec<String> = c.ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("running redis-cli --cluster create: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "redis-cli --cluster create failed ({}): {}{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                c.logs()
            ));
        }
        let deadline = Instant::now() + READY_WITHIN;
        let known = format!("cluster_known_nodes:{}", c.ports.len());
        for &p in &c.ports {
            loop {
                let info = RespConn::open(p).and_then(|mut conn| conn.command(&["CLUSTER", "INFO"]));
                let repl = RespConn::open(p).and_then(|mut conn| conn.command(&["INFO", "replication"]));
                // Every node also sees every replica as one (gossip tells the others some time after
                // `--cluster create` made it one).
                let nodes = RespConn::open(p).and_then(|mut conn| conn.command(&["CLUSTER", "NODES"]));
                let replicas_seen = match &nodes {
                    Ok(RespReply::Bulk(b)) => b.lines().filter_map(ClusterNode::parse).filter(|n| n.master_id.is_some()).count(),
                    _ => 0,
                };
                let ok = matches!(&info, Ok(RespReply::Bulk(b)) if b.contains("cluster_state:ok") && b.contains(&known))
                    && matches!(&repl, Ok(RespReply::Bulk(b)) if b.contains("role:master") || b.contains("master_link_status:up"))
                    && replicas_seen == 3 * replicas;
                if ok {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("node {p} not ready (last: {info:?}, {repl:?}){}", c.logs()));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(c)
    }

    /// Every node as `CLUSTER NODES` on `port` describes it.
    pub fn topology(&self, port: u16) -> Vec<ClusterNode> {
        match RespConn::open(port).and_then(|mut c| c.command(&["CLUSTER", "NODES"])) {
            Ok(RespReply::Bulk(b)) => b.lines().filter_map(ClusterNode::parse).collect(),
            other => panic!("CLUSTER NODES on {port}: {other:?}"),
        }
    }

    /// Every node's output, for an error message.
    fn logs(&self) -> String {
        self.nodes.iter().map(|n| format!("\nnode {}{}", n.port(), n.log_excerpt())).collect()
    }

    /// The nodes' ports: the three masters first, then any replicas, as created (a failover
    /// changes roles: see [`RedisCluster::topology`]).
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// The nodes (to signal or kill one).
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// `redis://127.0.0.1:PORT/` of the first node.
    pub fn url(&self) -> String {
        self.nodes[0].url()
    }
}

/// One line of `CLUSTER NODES`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterNode {
    pub id: String,
    pub port: u16,
    pub master: bool,
    /// The master's id, for a replica.
    pub master_id: Option<String>,
    /// Slot ranges served (inclusive).
    pub slots: Vec<(u16, u16)>,
}

impl ClusterNode {
    fn parse(line: &str) -> Option<ClusterNode> {
        let f: Vec<&str> = line.split(' ').collect();
        let port = f.get(1)?.split('@').next()?.rsplit(':').next()?.parse().ok()?;
        let master = f.get(2)?.split(',').any(|x| x == "master");
        let master_id = (f.get(3)? != &"-").then(|| f[3].to_string());
        let slots = f.iter().skip(8).filter(|s| !s.starts_with('[')).filter_map(|s| {
            let (a, b) = s.split_once('-').unwrap_or((s, s));
            Some((a.parse().ok()?, b.parse().ok()?))
        });
        Some(ClusterNode { id: f[0].to_string(), port, master, master_id, slots: slots.collect() })
    }

    /// Whether this node serves `slot`.
    pub fn serves(&self, slot: u16) -> bool {
        self.slots.iter().any(|&(a, b)| a <= slot && slot <= b)
    }
}

/// Polls `cond` every 20 ms until it holds, up to 60 s (generous, for loaded machines); panics
/// naming `what` when it never does. For waiting on an observable condition, never on time.
pub fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "waited 60 s for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The fixture specs of `tests/fixtures/` (every `.toml` there), absolute paths, sorted.
pub fn fixture_specs() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v
}

/// A directory of its own under the system's temp dir (named after `tag` and this process), emptied
/// when made and removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("limitlab-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        TempDir(d)
    }

    /// The directory as a command-line argument.
    pub fn path(&self) -> &str {
        self.0.to_str().expect("temp dirs have UTF-8 names")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A `limitlab serve` child process started from the binary under test with `--port 0` (plus the
/// given flags): the port (or, with `--cluster N`, the ports) are read from its first stdout line,
/// `listening on 127.0.0.1:PORT ...`. Its stderr goes to a log shown when start-up fails. It is killed
/// when dropped.
pub struct LimitlabServe {
    child: Child,
    ports: Vec<u16>,
    /// Kept open so the server never writes to a closed pipe.
    _stdout: BufReader<std::process::ChildStdout>,
    log: PathBuf,
}

impl LimitlabServe {
    /// Starts `limitlab serve --port 0 EXTRA...` and waits for its first line. Panics with the
    /// server's stderr when it does not come within [`READY_WITHIN`].
    pub fn start(extra: &[&str]) -> LimitlabServe {
        static STARTS: AtomicUsize = AtomicUsize::new(0);
        let n = STARTS.fetch_add(1, Ordering::Relaxed);
        let log = std::env::temp_dir().join(format!("limitlab-serve-{}-{n}.log", std::process::id()));
        let err = File::create(&log).unwrap_or_else(|e| panic!("creating {}: {e}", log.display()));
        let mut child = Command::new(env!("CARGO_BIN_EXE_limitlab"))
            .args(["serve", "--port", "0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(err))
            .spawn()
            .expect("the limitlab binary starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            let mut line = String::new();
            let got = r.read_line(&mut line).map(|_| line);
            let _ = tx.send((got, r));
        });
        let fail = |child: &mut Child, why: String| -> ! {
            let _ = child.kill();
            let _ = child.wait();
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            panic!("limitlab serve {extra:?} did not start: {why}\nstderr:\n{text}");
        };
        let (line, reader) = match rx.recv_timeout(READY_WITHIN) {
            Ok((Ok(line), r)) => (line, r),
            Ok((Err(e), _)) => fail(&mut child, format!("reading its stdout: {e}")),
            Err(_) => fail(&mut child, format!("no line within {} s", READY_WITHIN.as_secs())),
        };
        let Some(rest) = line.trim_end().strip_prefix("listening on ") else { fail(&mut child, format!("its first line is {line:?}")) };
        let ports: Option<Vec<u16>> = rest.split(' ').map(|a| a.rsplit_once(':').and_then(|(_, p)| p.parse().ok())).collect();
        let Some(ports) = ports.filter(|p| !p.is_empty()) else { fail(&mut child, format!("no port in {line:?}")) };
        LimitlabServe { child, ports, _stdout: reader, log }
    }

    /// The (first) port.
    pub fn port(&self) -> u16 {
        self.ports[0]
    }

    /// Every port (one per cluster node).
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port())
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits up to `within` for the process to exit by itself (after SHUTDOWN); its status.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// What it wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for LimitlabServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Adds (or resets) an ACL user on the server at `port`: `ACL SETUSER name reset on >password
/// ~* &* -@all +cmd...` (each of `commands` as given, e.g. `object|encoding`), so that the user can
/// run exactly those commands. Panics with the server's reply when it refuses.
pub fn acl_user(port: u16, name: &str, password: &str, commands: &[&str]) {
    let mut args: Vec<String> =
        ["ACL", "SETUSER", name, "reset", "on", &format!(">{password}"), "~*", "&*", "-@all"].iter().map(|s| s.to_string()).collect();
    args.extend(commands.iter().map(|c| format!("+{c}")));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let reply = RespConn::open(port).and_then(|mut c| c.command(&refs));
    assert!(matches!(&reply, Ok(RespReply::Line(l)) if l == "+OK"), "ACL SETUSER {name}: {reply:?}");
}

/// A private `redis-server` that also listens with TLS: a CA and a server certificate for
/// 127.0.0.1 are made with `openssl` in a directory of its own; the plain port stays for start-up
/// checks and set-up. Dropping it kills the server and removes the certificates.
pub struct TlsServer {
    pub server: RedisServer,
    pub tls_port: u16,
    /// The CA certificate (PEM) that signed the server's.
    pub ca: PathBuf,
    _dir: TempDir,
}

impl TlsServer {
    /// Starts one, or `None` (with the reason printed) without redis-server or openssl; under CI
    /// their absence is a failure.
    pub fn start_or_skip(test_name: &str) -> Option<TlsServer> {
        if !require_binaries(test_name, &["redis-server", "openssl"]) {
            return None;
        }
        let dir = TempDir::new(&format!("tls-{test_name}"));
        let d = &dir.0;
        let run = |args: &[&str]| {
            let out = Command::new("openssl").args(args).current_dir(d).stdin(Stdio::null()).output().expect("openssl runs");
            assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        };
        run(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "2",
            "-subj",
            "/CN=limitlab test CA",
        ]);
        run(&["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"]);
        std::fs::write(d.join("ext.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n").unwrap();
        run(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ]);
        let file = |n: &str| d.join(n).to_string_lossy().into_owned();
        let mut failures = Vec::new();
        for _ in 0..ATTEMPTS {
            let tls_port = free_port().expect("a free port");
            let port = tls_port.to_string();
            let (cert, key, ca) = (file("server.crt"), file("server.key"), file("ca.crt"));
            let extra = [
                "--tls-port",
                &port,
                "--tls-cert-file",
                &cert,
                "--tls-key-file",
                &key,
                "--tls-ca-cert-file",
                &ca,
                "--tls-auth-clients",
                "no",
            ];
            match RedisServer::try_start_with(&extra) {
                Ok(server) => return Some(TlsServer { server, tls_port, ca: d.join("ca.crt"), _dir: dir }),
                Err(e) => failures.push(e),
            }
        }
        panic!("could not start a TLS redis-server:\n{}", failures.join("\n"));
    }
}

/// `n` requests 3 ms apart over `subjects` subjects (named u0, u1, ...), from the default start.
pub fn arrivals(n: usize, subjects: usize) -> Vec<limitlab_engine::traffic::Arrival> {
    (0..n)
        .map(|i| limitlab_engine::traffic::Arrival {
            at: limitlab_emulator::clock::Micros((limitlab_emulator::clock::DEFAULT_START.0 + i as i64 * 3) * 1000),
            key: format!("u{}", i % subjects),
            cost: 1,
            phase: String::new(),
            op: limitlab_engine::traffic::Op::Request,
        })
        .collect()
}
