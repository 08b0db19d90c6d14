//! A private `redis-server`: the one way limitlab (`verify` and `bench` without `--redis`) and its
//! tests start a Redis of their own, standalone ([`PrivateRedis`]) or as a Redis Cluster
//! ([`PrivateCluster`]).
//!
//! - The server runs from the PATH on a loopback port the OS just handed out, in a temporary
//!   directory of its own, with persistence off; its stdout and stderr go to a log file there.
//! - It counts as started only when the port answers PING and `INFO server` names the spawned
//!   child's own `process_id` (and our port), while the child is still running. A port can be taken
//!   between asking the OS for it and the server binding it, and another Redis may answer there
//!   (one listens on 127.0.0.1:6379 on many machines): such an answer is never taken for ours. The
//!   child is killed and a new port tried, a bounded number of times, then the start fails saying
//!   why, attempt by attempt, with the server's output.
//! - Nothing this module sends before that check is more than PING and INFO; every command that
//!   changes a server ([`PrivateRedis::command`], the cluster's assembly, a restart's SHUTDOWN) goes
//!   over a connection that has just proved to reach our child. A connection opened elsewhere (a
//!   [`crate::backend::real::RealRedis`] about to FLUSHALL) proves it with [`PrivateRedis::confirm`].
//! - Dropping it kills and reaps the child and removes its directory.
//! - Without `redis-server` the error is [`Error::NoRedisServer`].
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use limitlab_emulator::clock::{Deadline, Stopwatch};

use redis::ConnectionLike as _;

use crate::{Error, Result};
use limitlab_emulator::Reply;

/// Starts of one server tried, each on a fresh port, before giving up.
pub const ATTEMPTS: usize = 5;
/// How long one start may take to answer as itself (generous: machines may be loaded).
pub const READY_WITHIN: Duration = Duration::from_secs(30);
/// Builds of a cluster tried before giving up.
const CLUSTER_ATTEMPTS: usize = 3;
/// The file in a server's directory that holds its stdout and stderr.
const LOG: &str = "redis-server.log";
/// Connect, read and write timeout of the start-up checks.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// How to start a private server: the program, extra arguments, whether it is a cluster node, and
/// how many ports to try. [`Launch::start`] starts one.
#[derive(Clone, Debug)]
pub struct Launch {
    program: String,
    args: Vec<String>,
    cluster_node: bool,
    attempts: usize,
    ready_within: Duration,
}

impl Default for Launch {
    fn default() -> Self {
        Launch {
            program: "redis-server".into(),
            args: Vec::new(),
            cluster_node: false,
            attempts: ATTEMPTS,
            ready_within: READY_WITHIN,
        }
    }
}

impl Launch {
    /// `redis-server` from the PATH, standalone, [`ATTEMPTS`] ports, [`READY_WITHIN`] each.
    pub fn new() -> Launch {
        Launch::default()
    }

    /// Runs `program` instead of `redis-server`.
    pub fn program(mut self, program: &str) -> Launch {
        self.program = program.to_string();
        self
    }

    /// Extra `redis-server` arguments (`["--maxmemory", "1mb"]`), after limitlab's own.
    pub fn args(mut self, extra: &[&str]) -> Launch {
        self.args.extend(extra.iter().map(|s| s.to_string()));
        self
    }

    /// A Redis Cluster node (`--cluster-enabled yes`), on a port whose cluster bus port (port +
    /// 10000) is free too.
    pub fn cluster_node(mut self) -> Launch {
        self.cluster_node = true;
        self
    }

    /// How many starts to try, each on a new port (at least one).
    pub fn attempts(mut self, n: usize) -> Launch {
        self.attempts = n.max(1);
        self
    }

    /// How long one start may take to answer as itself.
    pub fn ready_within(mut self, d: Duration) -> Launch {
        self.ready_within = d;
        self
    }

    /// Starts the server on ports the OS hands out, until one start answers as our child.
    pub fn start(&self) -> Result<PrivateRedis> {
        let cluster_node = self.cluster_node;
        self.launch(move || if cluster_node { free_cluster_port() } else { free_port() })
    }

    /// Starts the server on the first of `ports` where it comes up as our child, one attempt per
    /// port (at most [`Launch::attempts`]). A port another server holds is passed over.
    pub fn start_on(&self, ports: &[u16]) -> Result<PrivateRedis> {
        let mut ports = ports.iter().copied();
        self.launch(move || ports.next().ok_or_else(|| std::io::Error::other("no port left to try")))
    }

    /// Up to `attempts` starts, each on a new port from `next_port`; the error holds every
    /// attempt's story.
    fn launch(&self, mut next_port: impl FnMut() -> std::io::Result<u16>) -> Result<PrivateRedis> {
        let mut failures = Vec::new();
        for attempt in 1..=self.attempts {
            let port = match next_port() {
                Ok(p) => p,
                Err(e) => {
                    failures.push(format!("attempt {attempt}: no free port: {e}"));
                    break;
                }
            };
            match self.try_start(port) {
                Ok(s) => return Ok(s),
                Err(Failed::Fatal(e)) => return Err(e),
                Err(Failed::Retry(why)) => failures.push(format!("attempt {attempt}: {why}")),
            }
        }
        Err(Error::Connection(format!("could not start a private {}:\n{}", self.program, failures.join("\n"))))
    }

    /// One start on `port`: a fresh directory, the child, and the check that the port answers as it.
    fn try_start(&self, port: u16) -> std::result::Result<PrivateRedis, Failed> {
        static STARTS: AtomicUsize = AtomicUsize::new(0);
        let n = STARTS.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("limitlab-redis-{}-{n}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|source| Failed::Fatal(Error::Io { path: dir.clone(), source }))?;
        let child = match self.spawn(&dir, port) {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(Failed::Fatal(e));
            }
        };
        // From here on, a failure drops `server`: the child is killed and its directory removed.
        let server = PrivateRedis { child, port, dir, launch: self.clone(), version: String::new() };
        server.adopted(self.ready_within).map_err(Failed::Retry)
    }

    /// Spawns the program on `port` in `dir`, its output appended to the log there.
    fn spawn(&self, dir: &Path, port: u16) -> Result<Child> {
        let log_path = dir.join(LOG);
        let io = |source| Error::Io { path: log_path.clone(), source };
        let log = std::fs::OpenOptions::new().append(true).create(true).open(&log_path).map_err(io)?;
        let log2 = log.try_clone().map_err(io)?;
        let mut cmd = Command::new(&self.program);
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--dir", &dir.to_string_lossy()]);
        if self.cluster_node {
            cmd.args(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]);
        }
        cmd.args(&self.args).current_dir(dir).stdin(Stdio::null()).stdout(Stdio::from(log)).stderr(Stdio::from(log2));
        cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::NoRedisServer(format!("{}: {e}", self.program)),
            _ => Error::Connection(format!("{} could not be started: {e}", self.program)),
        })
    }
}

/// Why one start failed: nothing to start (no point in another port), or this port only.
enum Failed {
    Fatal(Error),
    Retry(String),
}

/// A `redis-server` child process on a loopback port, in its own temporary directory, with
/// persistence off, proven to be the process that answers on its port. Killed (and its directory
/// removed) when dropped.
pub struct PrivateRedis {
    child: Child,
    port: u16,
    dir: PathBuf,
    /// How it was started, to start it again ([`PrivateRedis::restart`]).
    launch: Launch,
    /// `redis_version` from its INFO.
    version: String,
}

impl PrivateRedis {
    /// A standalone `redis-server` from the PATH ([`Launch::new`]).
    pub fn start() -> Result<PrivateRedis> {
        Launch::new().start()
    }

    /// [`PrivateRedis::start`] with extra `redis-server` arguments.
    pub fn start_with(extra: &[&str]) -> Result<PrivateRedis> {
        Launch::new().args(extra).start()
    }

    /// Takes `child`, said to be a server for `port`, and keeps it only when the port answers as
    /// that child within `within`. Otherwise the child is killed and the error says what answered.
    /// (Starts go through [`Launch`]; this lets a test hand over a child of its own.)
    #[cfg(test)]
    fn adopt(child: Child, port: u16, dir: PathBuf, within: Duration) -> std::result::Result<PrivateRedis, String> {
        PrivateRedis { child, port, dir, launch: Launch::new(), version: String::new() }.adopted(within)
    }

    /// Waits until the port answers as our child: PING, then `INFO server` naming the child's
    /// `process_id` and our port, the child still running. The child exiting, another process
    /// answering, or no answer within `within` is an error (and drops `self`, killing the child).
    fn adopted(mut self, within: Duration) -> std::result::Result<PrivateRedis, String> {
        let (port, pid) = (self.port, self.pid());
        let deadline = Deadline::after(within);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("redis-server exited ({status}) on port {port}{}", self.log_excerpt()));
            }
            match probe(port) {
                Ok((_, who)) if who.pid == pid && who.port == Some(port) => {
                    self.version = who.version;
                    return Ok(self);
                }
                // Ours cannot have bound the port: kill it and let the caller try another.
                Ok((_, who)) => {
                    let pid_text = if who.pid == pid {
                        format!("pid {pid} but port {:?}", who.port)
                    } else {
                        format!("pid {}", who.pid)
                    };
                    return Err(format!(
                        "port {port} is held by another redis-server ({pid_text}){}",
                        self.log_excerpt()
                    ));
                }
                Err(_) if !deadline.passed() => {}
                Err(last) => {
                    return Err(format!(
                        "redis-server (pid {pid}) on port {port} did not answer PING within {} s (last: {last}){}",
                        within.as_secs(),
                        self.log_excerpt()
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

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's working directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its `redis_version` (`7.0.15`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Everything the server printed so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(self.dir.join(LOG)).unwrap_or_else(|e| format!("(no log: {e})"))
    }

    /// Whether the child is still running (it may have been killed from outside).
    fn alive(&mut self) -> Result<()> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => {
                Err(Error::Connection(format!("the private redis-server on port {} exited ({status})", self.port)))
            }
            Err(e) => Err(Error::Connection(format!("the private redis-server on port {}: {e}", self.port))),
        }
    }

    /// Checks that the child still runs and its port still answers as it.
    pub fn check(&mut self) -> Result<()> {
        self.session().map(drop)
    }

    /// A connection that has just proved to reach our child (PING, then INFO's `process_id`).
    fn session(&mut self) -> Result<redis::Connection> {
        self.alive()?;
        let (conn, who) = probe(self.port)
            .map_err(|e| Error::Connection(format!("the private redis-server on port {}: {e}", self.port)))?;
        self.owns(&who)?;
        Ok(conn)
    }

    /// Whether `who` is our child on our port.
    fn owns(&self, who: &Identity) -> Result<()> {
        if who.pid == self.pid() && who.port == Some(self.port) {
            return Ok(());
        }
        Err(Error::Connection(format!(
            "the server answering on port {} is not our private redis-server (pid {}): it says pid {}, port {:?}; nothing was sent to it",
            self.port,
            self.pid(),
            who.pid,
            who.port
        )))
    }

    /// Runs one command over a connection that first proves to reach our child: the way to send a
    /// command that changes the server.
    pub fn command(&mut self, args: &[&str]) -> Result<redis::Value> {
        let mut conn = self.session()?;
        let mut cmd = redis::cmd(args.first().copied().unwrap_or_default());
        for a in args.iter().skip(1) {
            cmd.arg(*a);
        }
        conn.req_command(&cmd).map_err(|e| {
            Error::Connection(format!("{} on the private redis-server (port {}): {e}", args.join(" "), self.port))
        })
    }

    /// Checks a connection opened elsewhere (a backend about to flush the server): `ask` sends a
    /// command on it and returns the reply. It is sent `INFO server`, which must name our child and
    /// port, and the child must still run. Call it before the first command that changes anything.
    pub fn confirm(&mut self, ask: impl FnOnce(&[&[u8]]) -> Result<Reply>) -> Result<()> {
        self.alive()?;
        let text = match ask(&[b"INFO", b"server"])? {
            Reply::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
            other => return Err(Error::Connection(format!("INFO server on port {} answered {other:?}", self.port))),
        };
        let who = Identity::parse(&text).map_err(|e| Error::Connection(format!("port {}: {e}", self.port)))?;
        self.owns(&who)
    }

    /// Kills the server now (the drop that follows only cleans up).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Restarts the server as a restart in production does: `SHUTDOWN SAVE` (its keys go to
    /// `dump.rdb` in its directory), then the same command on the same port, which loads them back
    /// and must again answer as our (new) child. Its script cache is empty afterwards, and every
    /// connection to it was closed.
    pub fn restart(&mut self) -> Result<()> {
        let mut conn = self.session()?;
        // The server closes the connection as it exits: no reply to wait for.
        let _ = conn.req_command(redis::cmd("SHUTDOWN").arg("SAVE"));
        drop(conn);
        let status =
            self.child.wait().map_err(|e| Error::Connection(format!("waiting for redis-server to exit: {e}")))?;
        if !self.dir.join("dump.rdb").exists() {
            return Err(Error::Connection(format!("no dump.rdb after SHUTDOWN SAVE ({status}){}", self.log_excerpt())));
        }
        let deadline = Deadline::after(self.launch.ready_within);
        // The port was ours; spawning again right after the exit may need a few tries.
        let child = loop {
            match self.launch.spawn(&self.dir, self.port) {
                Ok(c) => break c,
                Err(e) if deadline.passed() => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        self.child = child;
        let (pid, port) = (self.pid(), self.port);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(Error::Connection(format!(
                    "redis-server did not come back on port {port} ({status}){}",
                    self.log_excerpt()
                )));
            }
            match probe(port) {
                Ok((_, who)) if self.owns(&who).is_ok() => {
                    self.version = who.version;
                    return Ok(());
                }
                Ok((_, who)) => {
                    return Err(Error::Connection(format!(
                        "port {port} was taken by another redis-server (pid {}) during the restart{}",
                        who.pid,
                        self.log_excerpt()
                    )))
                }
                Err(_) if !deadline.passed() => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => {
                    return Err(Error::Connection(format!(
                        "redis-server (pid {pid}) did not come back on port {port}: {e}{}",
                        self.log_excerpt()
                    )))
                }
            }
        }
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

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What a server says of itself in `INFO server`.
#[derive(Debug)]
struct Identity {
    pid: u32,
    port: Option<u16>,
    version: String,
}

impl Identity {
    fn parse(info: &str) -> std::result::Result<Identity, String> {
        let field = |name: &str| info.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
        let pid = field("process_id:").and_then(|p| p.parse().ok()).ok_or("INFO server has no process_id")?;
        let port = field("tcp_port:").and_then(|p| p.parse().ok());
        Ok(Identity { pid, port, version: field("redis_version:").unwrap_or_default().to_string() })
    }
}

/// Opens a connection to `port` on loopback and asks who answers: PING must say PONG, then INFO
/// server gives the [`Identity`]. Nothing else is sent (not even the client library's CLIENT
/// SETINFO). An error says what was missing.
fn probe(port: u16) -> std::result::Result<(redis::Connection, Identity), String> {
    use redis::IntoConnectionInfo;
    let info = format!("redis://127.0.0.1:{port}/").into_connection_info().map_err(|e| e.to_string())?;
    let quiet = info.redis_settings().clone().set_skip_set_lib_name();
    let client = redis::Client::open(info.set_redis_settings(quiet)).map_err(|e| e.to_string())?;
    let mut conn = client.get_connection_with_timeout(PROBE_TIMEOUT).map_err(|e| format!("connect: {e}"))?;
    conn.set_read_timeout(Some(PROBE_TIMEOUT)).map_err(|e| e.to_string())?;
    conn.set_write_timeout(Some(PROBE_TIMEOUT)).map_err(|e| e.to_string())?;
    match redis::cmd("PING").query::<String>(&mut conn) {
        Ok(pong) if pong == "PONG" => {}
        Ok(other) => return Err(format!("PING answered {other:?}")),
        Err(e) => return Err(format!("PING: {e}")),
    }
    let info: String = redis::cmd("INFO").arg("server").query(&mut conn).map_err(|e| format!("INFO server: {e}"))?;
    let who = Identity::parse(&info)?;
    Ok((conn, who))
}

/// A port the OS just handed out on loopback (free at the time of asking).
pub fn free_port() -> std::io::Result<u16> {
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

/// A Redis Cluster of three masters (and optionally replicas) of [`PrivateRedis`] cluster nodes on
/// loopback, built without `redis-cli`: every node gets its own config epoch, each master a third
/// of the slots (CLUSTER ADDSLOTSRANGE), the first node meets the others, each replica follows its
/// master (CLUSTER REPLICATE). It is ready once every node reports `cluster_state:ok`, knows every
/// other node and all three masters' slots, sees every replica as one, and every replica's link to
/// its master is up. Killed when dropped.
pub struct PrivateCluster {
    nodes: Vec<PrivateRedis>,
}

/// Slot ranges of the three masters.
const SLOTS: [(u16, u16); 3] = [(0, 5460), (5461, 10922), (10923, 16383)];

impl PrivateCluster {
    /// Three masters, no replicas.
    pub fn start() -> Result<PrivateCluster> {
        Self::start_with_replicas(0)
    }

    /// Three masters with `replicas` replicas each: the masters are the first three nodes, then
    /// the replicas (replica `i` follows master `i % 3`). Tried up to three times.
    pub fn start_with_replicas(replicas: usize) -> Result<PrivateCluster> {
        let mut failures = Vec::new();
        for attempt in 1..=CLUSTER_ATTEMPTS {
            match Self::try_start(replicas) {
                Ok(c) => return Ok(c),
                Err(e @ Error::NoRedisServer(_)) => return Err(e),
                Err(e) => failures.push(format!("cluster attempt {attempt}: {e}")),
            }
        }
        Err(Error::Connection(format!("could not build a private Redis Cluster:\n{}", failures.join("\n"))))
    }

    fn try_start(replicas: usize) -> Result<PrivateCluster> {
        let launch = Launch::new().cluster_node();
        let mut nodes = Vec::new();
        for _ in 0..SLOTS.len() * (1 + replicas) {
            nodes.push(launch.start()?);
        }
        let mut c = PrivateCluster { nodes };
        c.assemble().map_err(|e| Error::Connection(format!("{e}{}", c.logs())))?;
        Ok(c)
    }

    /// Joins the started nodes into a cluster and waits until it is ready.
    fn assemble(&mut self) -> Result<()> {
        let masters = SLOTS.len();
        let total = self.nodes.len();
        for (i, n) in self.nodes.iter_mut().enumerate() {
            n.command(&["CLUSTER", "SET-CONFIG-EPOCH", &(i + 1).to_string()])?;
            if let Some((lo, hi)) = SLOTS.get(i) {
                n.command(&["CLUSTER", "ADDSLOTSRANGE", &lo.to_string(), &hi.to_string()])?;
            }
        }
        let ports: Vec<String> = self.nodes.iter().map(|n| n.port().to_string()).collect();
        for p in &ports[1..] {
            self.nodes[0].command(&["CLUSTER", "MEET", "127.0.0.1", p])?;
        }
        let started = Stopwatch::start();
        let text = |v: redis::Value| redis::from_redis_value::<String>(v).unwrap_or_default();
        let known = format!("cluster_known_nodes:{total}");
        if total > masters {
            let mut ids = Vec::new();
            for n in &mut self.nodes[..masters] {
                ids.push(text(n.command(&["CLUSTER", "MYID"])?));
            }
            for (j, n) in self.nodes[masters..].iter_mut().enumerate() {
                // A replica can follow a master only once it knows it.
                let master = &ids[j % masters];
                while !text(n.command(&["CLUSTER", "NODES"])?).contains(master.as_str()) {
                    Self::waited(started, n.port(), "to learn of its master")?;
                }
                n.command(&["CLUSTER", "REPLICATE", master])?;
            }
        }
        let replicas = total - masters;
        for n in &mut self.nodes {
            loop {
                let info = text(n.command(&["CLUSTER", "INFO"])?);
                let repl = text(n.command(&["INFO", "replication"])?);
                let nodes = text(n.command(&["CLUSTER", "NODES"])?);
                // Every node also sees every replica as one (gossip tells the others some time after
                // the replica began to follow), and knows all three masters before a client reads
                // the slot map.
                let replicas_seen = nodes.lines().filter(|l| l.split(' ').nth(3).is_some_and(|m| m != "-")).count();
                let slots = n.command(&["CLUSTER", "SLOTS"])?;
                let masters_known = matches!(&slots, redis::Value::Array(v) if v.len() == masters);
                let ok = info.contains("cluster_state:ok")
                    && info.contains(&known)
                    && (repl.contains("role:master") || repl.contains("master_link_status:up"))
                    && replicas_seen == replicas
                    && masters_known;
                if ok {
                    break;
                }
                Self::waited(started, n.port(), &format!("to be ready (last: {info:?}, {repl:?})"))?;
            }
        }
        Ok(())
    }

    /// Sleeps a little, or fails once the cluster has taken longer than [`READY_WITHIN`].
    fn waited(started: Stopwatch, port: u16, what: &str) -> Result<()> {
        if started.elapsed() > READY_WITHIN {
            return Err(Error::Connection(format!("waited {} s for node {port} {what}", READY_WITHIN.as_secs())));
        }
        std::thread::sleep(Duration::from_millis(50));
        Ok(())
    }

    /// Every node's output, for an error message.
    fn logs(&self) -> String {
        self.nodes.iter().map(|n| format!("\nnode {}{}", n.port(), n.log_excerpt())).collect()
    }

    /// `redis://127.0.0.1:PORT/` of the first node.
    pub fn url(&self) -> String {
        self.nodes[0].url()
    }

    /// The nodes' ports: the three masters first, then any replicas, as created (a failover
    /// changes roles).
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(PrivateRedis::port).collect()
    }

    /// The nodes, in the order of [`PrivateCluster::ports`].
    pub fn nodes(&self) -> &[PrivateRedis] {
        &self.nodes
    }

    /// The nodes, to restart or kill one.
    pub fn nodes_mut(&mut self) -> &mut [PrivateRedis] {
        &mut self.nodes
    }

    /// The nodes' `redis_version`.
    pub fn version(&self) -> &str {
        self.nodes[0].version()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `redis-server` can be run; without it a test prints why and passes, unless `CI` is
    /// set (then it fails).
    fn have_redis_server(test: &str) -> bool {
        let found =
            Command::new("redis-server").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
        if !found {
            assert!(
                std::env::var_os("CI").is_none(),
                "{test}: redis-server is not installed (CI is set, so this is an error)"
            );
            eprintln!("skipping {test}: redis-server is not installed");
        }
        found
    }

    /// Somebody else's server: a `redis-server` spawned here, not through the module, on a free
    /// port, in a directory of its own. Killed when dropped.
    struct Theirs {
        child: Child,
        port: u16,
        dir: PathBuf,
    }

    impl Theirs {
        fn start(tag: &str) -> Theirs {
            for _ in 0..ATTEMPTS {
                let port = free_port().unwrap();
                let dir = scratch(&format!("{tag}-theirs-{port}"));
                let child = Command::new("redis-server")
                    .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                    .current_dir(&dir)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                let mut t = Theirs { child, port, dir };
                let deadline = Deadline::after(READY_WITHIN);
                while t.child.try_wait().unwrap().is_none() && !deadline.passed() {
                    match probe(port) {
                        Ok((_, who)) if who.pid == t.child.id() => return t,
                        Ok(_) => break,
                        Err(_) => std::thread::sleep(Duration::from_millis(20)),
                    }
                }
            }
            panic!("could not start somebody else's redis-server");
        }

        fn conn(&self) -> redis::Connection {
            redis::Client::open(format!("redis://127.0.0.1:{}/", self.port)).unwrap().get_connection().unwrap()
        }
    }

    impl Drop for Theirs {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// An empty directory of this test's own.
    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("limitlab-private-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A running `redis-server` listening on no TCP port (only a unix socket): alive, but never the
    /// one answering on a TCP port.
    fn decoy(dir: &Path) -> Child {
        Command::new("redis-server")
            .args([
                "--port",
                "0",
                "--unixsocket",
                &dir.join("decoy.sock").to_string_lossy(),
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    fn keys_of(t: &Theirs) -> Vec<String> {
        let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut t.conn()).unwrap();
        keys.sort();
        keys
    }

    /// The guard this module exists for: our child is alive, but the port is answered by another
    /// server. Adopting that port is refused, naming the other's pid, and our child is killed; the
    /// other server keeps its keys.
    #[test]
    fn a_port_answered_by_another_process_is_refused() {
        if !have_redis_server("a_port_answered_by_another_process_is_refused") {
            return;
        }
        let theirs = Theirs::start("refused");
        redis::cmd("SET").arg("theirs").arg("kept").query::<()>(&mut theirs.conn()).unwrap();
        let dir = scratch("refused-decoy");
        let ours = decoy(&dir);
        let our_pid = ours.id();
        let err = PrivateRedis::adopt(ours, theirs.port, dir.clone(), READY_WITHIN).err().expect("refused");
        let held = format!("port {} is held by another redis-server (pid {})", theirs.port, theirs.child.id());
        assert!(err.contains(&held), "{err}");
        // Our child was killed and reaped; its directory removed.
        assert!(!Path::new(&format!("/proc/{our_pid}")).exists(), "pid {our_pid} still exists");
        assert!(!dir.exists());
        // Theirs still runs, with its key.
        assert_eq!(keys_of(&theirs), ["theirs"]);
    }

    /// A child that has exited is refused even while the port answers: it cannot be the server.
    #[test]
    fn a_child_that_exited_is_refused() {
        if !have_redis_server("a_child_that_exited_is_refused") {
            return;
        }
        let theirs = Theirs::start("exited");
        let dir = scratch("exited-child");
        let mut ours = Command::new("redis-server")
            .args(["--no-such-directive", "x"])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        assert!(!ours.wait().unwrap().success());
        let err = PrivateRedis::adopt(ours, theirs.port, dir, READY_WITHIN).err().expect("refused");
        assert!(err.starts_with(&format!("redis-server exited (exit status: 1) on port {}", theirs.port)), "{err}");
    }

    /// Starting on a port another server holds passes it over for the next; with no other port the
    /// start fails saying so. The other server is never written to.
    #[test]
    fn starting_passes_over_a_held_port() {
        if !have_redis_server("starting_passes_over_a_held_port") {
            return;
        }
        let theirs = Theirs::start("passes");
        redis::cmd("SET").arg("theirs").arg("kept").query::<()>(&mut theirs.conn()).unwrap();
        let free = free_port().unwrap();
        let mut ours = Launch::new().start_on(&[theirs.port, free]).unwrap();
        assert_eq!(ours.port(), free);
        assert_ne!(ours.pid(), theirs.child.id());
        ours.command(&["FLUSHALL"]).unwrap();
        let err = Launch::new().start_on(&[theirs.port]).err().expect("no start on a held port").to_string();
        assert!(err.contains("attempt 1: ") && err.contains("attempt 2: no free port: no port left to try"), "{err}");
        assert_eq!(keys_of(&theirs), ["theirs"]);
    }

    /// A server of ours answers as itself; a connection answering with another pid is not
    /// confirmed; after a kill nothing is sent; dropping it removes its directory.
    #[test]
    fn check_confirm_kill_and_drop() {
        if !have_redis_server("check_confirm_kill_and_drop") {
            return;
        }
        let mut s = PrivateRedis::start().unwrap();
        s.check().unwrap();
        assert!(s.version().starts_with(|c: char| c.is_ascii_digit()), "{}", s.version());
        let mut real = crate::backend::real::RealRedis::connect(&s.url(), Default::default()).unwrap();
        s.confirm(|a| crate::backend::Backend::command(&mut real, a)).unwrap();
        drop(real);
        let forged =
            format!("# Server\r\nredis_version:7.0.0\r\nprocess_id:{}\r\ntcp_port:{}\r\n", s.pid() + 1, s.port());
        let err = s.confirm(|_| Ok(Reply::Bulk(forged.into_bytes()))).expect_err("another pid").to_string();
        assert!(err.contains("is not our private redis-server"), "{err}");
        let forged = format!("process_id:{}\r\ntcp_port:6379\r\n", s.pid());
        assert!(s.confirm(|_| Ok(Reply::Bulk(forged.into_bytes()))).is_err(), "another port");
        let dir = s.dir().to_path_buf();
        assert!(dir.join(LOG).exists());
        s.kill();
        assert!(s.check().is_err());
        assert!(s.command(&["FLUSHALL"]).is_err());
        drop(s);
        assert!(!dir.exists());
    }

    #[test]
    fn a_missing_program_is_a_clean_error() {
        let e = Launch::new().program("limitlab-no-such-redis-server").start().err().expect("nothing to start");
        assert!(matches!(e, Error::NoRedisServer(_)), "{e:?}");
        assert!(e.to_string().contains("is not installed"), "{e}");
    }
}
