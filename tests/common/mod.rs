//! Shared helpers for integration tests: the one way a test gets a private `redis-server` or a
//! three-master Redis Cluster. Every test that needs a real server goes through [`RedisServer`] or
//! [`RedisCluster`], thin wrappers over `limitlab_engine::backend::private` (the launcher `verify` and
//! `bench` use too); no test file spawns `redis-server` or picks a port on its own.
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

pub mod conn;
mod proxy;
#[allow(unused_imports)]
pub use proxy::{Fault, FaultProxy, ProxyState, Rule};

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use limitlab_engine::backend::private::{free_port, Launch, PrivateCluster, PrivateRedis, ATTEMPTS};

/// How long a `limitlab serve` may take to say it listens (generous: tests may run beside heavy load).
const READY_WITHIN: Duration = Duration::from_secs(30);

/// A `redis-server` child process on a loopback port, in its own temporary directory, with
/// persistence off, proven to answer as itself. It is killed (and its directory removed) when
/// dropped. A [`PrivateRedis`] whose failures panic.
pub struct RedisServer {
    inner: PrivateRedis,
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

/// A plain connection to a server on a loopback port (for the helpers' own reads and setup).
fn conn(port: u16) -> redis::Connection {
    let client =
        redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap_or_else(|e| panic!("port {port}: {e}"));
    client
        .get_connection_with_timeout(Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("connecting to port {port}: {e}"))
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
        Launch::new().args(extra).start().map(|inner| RedisServer { inner }).map_err(|e| e.to_string())
    }

    /// A server on the first of `ports` where one comes up (to test this helper: a port another
    /// server holds must be passed over, not taken for ours).
    pub fn try_start_on(ports: &[u16]) -> Result<RedisServer, String> {
        Launch::new().start_on(ports).map(|inner| RedisServer { inner }).map_err(|e| e.to_string())
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

    /// The server's TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.inner.port()
    }

    /// `redis://127.0.0.1:PORT/`, for client libraries.
    pub fn url(&self) -> String {
        self.inner.url()
    }

    /// The server's working directory.
    pub fn dir(&self) -> &Path {
        self.inner.dir()
    }

    /// The server's process id (to stop, resume or kill it from a test).
    pub fn pid(&self) -> u32 {
        self.inner.pid()
    }

    /// Sends a signal to the server with `kill` (`STOP`, `CONT`, `KILL`).
    pub fn signal(&self, sig: &str) {
        signal_pid(self.pid(), sig);
    }

    /// Kills the server now (the drop that follows only cleans up).
    pub fn kill(&mut self) {
        self.inner.kill();
    }

    /// Restarts the server as a restart in production does ([`PrivateRedis::restart`]): `SHUTDOWN
    /// SAVE`, then the same command on the same port, which loads the keys back. Its script cache
    /// is empty afterwards, and every connection to it was closed. Panics (with the output) when it
    /// does not come back.
    pub fn restart(&mut self) {
        self.inner.restart().unwrap_or_else(|e| panic!("restarting redis-server: {e}"));
    }

    /// A replica of this server (`--replicaof`), ready once it reports `master_link_status:up`.
    pub fn start_replica(&self) -> RedisServer {
        let port = self.port().to_string();
        let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &port]);
        wait_for(&format!("replica {} linked to {port}", replica.port()), || {
            let info: redis::RedisResult<String> =
                redis::cmd("INFO").arg("replication").query(&mut conn(replica.port()));
            matches!(&info, Ok(b) if b.contains("master_link_status:up"))
        });
        replica
    }

    /// Everything the server printed so far.
    pub fn output(&self) -> String {
        self.inner.output()
    }
}

/// A three-master Redis Cluster on loopback ([`PrivateCluster`]), optionally with replicas, ready
/// once every node reports `cluster_state:ok`, knows every other node, and every replica's link to
/// its master is up. The nodes are killed and their directories removed when it is dropped.
pub struct RedisCluster {
    inner: PrivateCluster,
    ports: Vec<u16>,
}

impl RedisCluster {
    /// Starts the cluster, or `None` (with the reason printed) without `redis-server`; under CI its
    /// absence is a failure. Panics, with the nodes' output, when it cannot be built.
    pub fn start_or_skip(test_name: &str) -> Option<RedisCluster> {
        Self::start_with_replicas_or_skip(test_name, 0)
    }

    /// [`RedisCluster::start_or_skip`] with `replicas` replicas per master (3 masters, then the
    /// replicas), ready once every node reports `cluster_state:ok`, knows every other node, and
    /// every replica's link to its master is up.
    pub fn start_with_replicas_or_skip(test_name: &str, replicas: usize) -> Option<RedisCluster> {
        if !require_binaries(test_name, &["redis-server"]) {
            return None;
        }
        let inner = PrivateCluster::start_with_replicas(replicas)
            .unwrap_or_else(|e| panic!("could not start a Redis Cluster: {e}"));
        let ports = inner.ports();
        Some(RedisCluster { inner, ports })
    }

    /// Every node as `CLUSTER NODES` on `port` describes it.
    pub fn topology(&self, port: u16) -> Vec<ClusterNode> {
        match redis::cmd("CLUSTER").arg("NODES").query::<String>(&mut conn(port)) {
            Ok(b) => b.lines().filter_map(ClusterNode::parse).collect(),
            other => panic!("CLUSTER NODES on {port}: {other:?}"),
        }
    }

    /// The nodes' ports: the three masters first, then any replicas, as created (a failover
    /// changes roles: see [`RedisCluster::topology`]).
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// The nodes (to signal or kill one).
    pub fn nodes(&self) -> &[PrivateRedis] {
        self.inner.nodes()
    }

    /// `redis://127.0.0.1:PORT/` of the first node.
    pub fn url(&self) -> String {
        self.inner.url()
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
        let Some(rest) = line.trim_end().strip_prefix("listening on ") else {
            fail(&mut child, format!("its first line is {line:?}"))
        };
        let ports: Option<Vec<u16>> =
            rest.split(' ').map(|a| a.rsplit_once(':').and_then(|(_, p)| p.parse().ok())).collect();
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

    /// What it writes to stdout after its first line, up to its exit (call once it has exited or
    /// will: it reads to the end).
    pub fn rest_of_stdout(&mut self) -> String {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut self._stdout, &mut rest);
        rest
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
    let mut args: Vec<String> = ["ACL", "SETUSER", name, "reset", "on", &format!(">{password}"), "~*", "&*", "-@all"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(commands.iter().map(|c| format!("+{c}")));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let reply = redis::cmd(refs[0]).arg(&refs[1..]).query::<String>(&mut conn(port));
    assert!(matches!(&reply, Ok(l) if l == "OK"), "ACL SETUSER {name}: {reply:?}");
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
            let out =
                Command::new("openssl").args(args).current_dir(d).stdin(Stdio::null()).output().expect("openssl runs");
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
        run(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ]);
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
