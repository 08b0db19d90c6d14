//! Reaching a server: `rediss://` CA certificates, URLs without their password, connections with
//! their timeouts, and the masters of a cluster.
use std::time::Duration;

use redis::cluster::{ClusterClient, ClusterConnection};
use redis::{ConnectionAddr, ConnectionInfo, ConnectionLike, RedisError, Value};

use limitlab_emulator::{Error, Result};

/// CA certificates to trust for `rediss://` (`--tls-ca FILE`): PEM, read once.
#[derive(Clone)]
pub struct TlsFiles {
    pub path: std::path::PathBuf,
    pub ca_pem: Vec<u8>,
}

impl std::fmt::Debug for TlsFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsFiles").field("path", &self.path).finish_non_exhaustive()
    }
}

impl TlsFiles {
    /// Reads a PEM file of CA certificates; a file without one is refused.
    pub fn read(path: &std::path::Path) -> Result<TlsFiles> {
        let ca_pem = crate::files::read_bytes(path)?;
        if !String::from_utf8_lossy(&ca_pem).contains("-----BEGIN CERTIFICATE-----") {
            return Err(Error::Invalid {
                context: "--tls-ca".into(),
                field: "FILE".into(),
                reason: format!("{} holds no PEM certificate (-----BEGIN CERTIFICATE-----)", path.display()),
            });
        }
        Ok(TlsFiles { path: path.to_path_buf(), ca_pem })
    }
}

/// `url` with its password replaced by `***` ([`super::secret::redact`](crate::backend::secret::redact)).
pub fn redact_url(url: &str) -> String {
    crate::backend::secret::redact(url)
}

/// The connection info of `url` (with the CA certificates of `tls` for `rediss://`); a bad URL is
/// a user error that names the URL without its password.
pub fn connection_info(url: &str, tls: Option<&TlsFiles>) -> Result<ConnectionInfo> {
    let bad = |e: RedisError| Error::Invalid {
        context: "--redis".into(),
        field: "URL".into(),
        reason: format!(
            "`{}` is not a Redis URL ({}); expected redis://HOST:PORT or rediss://HOST:PORT",
            redact_url(url),
            redact_error(&e)
        ),
    };
    let client = match tls {
        Some(t) if url.starts_with("rediss://") => redis::Client::build_with_tls(
            url,
            redis::TlsCertificates { client_tls: None, root_cert: Some(t.ca_pem.clone()) },
        )
        .map_err(bad)?,
        _ => redis::Client::open(url).map_err(bad)?,
    };
    Ok(client.get_connection_info().clone())
}

/// A redis crate error as text (its messages never hold the password; kept in one place so
/// that stays checked).
pub fn redact_error(e: &RedisError) -> String {
    e.to_string()
}

/// The address of another node of the same kind as `like` (TLS stays TLS, with its settings).
pub fn same_kind(like: &ConnectionAddr, host: String, port: u16) -> ConnectionAddr {
    match like {
        ConnectionAddr::TcpTls { insecure, tls_params, .. } => {
            ConnectionAddr::TcpTls { host, port, insecure: *insecure, tls_params: tls_params.clone() }
        }
        _ => ConnectionAddr::Tcp(host, port),
    }
}

/// The masters of the cluster that the node at `info` belongs to (`CLUSTER SLOTS`).
pub fn masters_of(info: &ConnectionInfo, timeout: Duration) -> redis::RedisResult<Vec<(String, u16)>> {
    let mut c = open_single(info, timeout)?;
    cluster_masters(&mut c, info)
}

/// One connection to one server (TLS as its address says), with the timeouts set.
pub fn open_connection(
    info: &ConnectionInfo,
    _tls: Option<&TlsFiles>,
    timeout: Duration,
) -> redis::RedisResult<redis::Connection> {
    open_single(info, timeout)
}

/// One connection to one server, with the timeouts set.
pub(super) fn open_single(info: &ConnectionInfo, timeout: Duration) -> redis::RedisResult<redis::Connection> {
    if let ConnectionAddr::TcpTls { host, port, .. } = info.addr() {
        return open_tls(info, host, *port, timeout);
    }
    open_plain_or_tls(info, timeout)
}

fn open_plain_or_tls(info: &ConnectionInfo, timeout: Duration) -> redis::RedisResult<redis::Connection> {
    let client = redis::Client::open(info.clone())?;
    let conn = client.get_connection_with_timeout(timeout)?;
    conn.set_read_timeout(Some(timeout))?;
    conn.set_write_timeout(Some(timeout))?;
    Ok(conn)
}

/// How long a TLS handshake may take before the port is asked whether it speaks plain RESP.
const TLS_PATIENCE: Duration = Duration::from_millis(300);

/// A `rediss://` connection. A plain server never answers a TLS client hello (it waits for the end
/// of a line that never comes), so a handshake that has not finished within [`TLS_PATIENCE`] has
/// the port asked, on a second connection, whether it answers `PING` in plain RESP: if it does,
/// the handshake fails at once with a message that says so, instead of at the timeout with "os
/// error 11". A TLS server answers the client hello at once, so it is never probed.
fn open_tls(info: &ConnectionInfo, host: &str, port: u16, timeout: Duration) -> redis::RedisResult<redis::Connection> {
    let (tx, rx) = std::sync::mpsc::channel();
    let attempt = info.clone();
    std::thread::spawn(move || {
        let _ = tx.send(open_plain_or_tls(&attempt, timeout));
    });
    match rx.recv_timeout(TLS_PATIENCE.min(timeout)) {
        Ok(r) => return r.map_err(|e| tls_failure(e, host, port)),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            return Err(RedisError::from(std::io::Error::other("TLS handshake failed: the connection thread ended")))
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
    }
    if let Some(first) = plain_resp_answer(host, port, timeout) {
        return Err(plain_server(host, port, &first));
    }
    rx.recv()
        .unwrap_or_else(|_| Err(RedisError::from(std::io::Error::other("TLS handshake failed"))))
        .map_err(|e| tls_failure(e, host, port))
}

/// The first line a server at `host:port` answers `PING` with, when it is a RESP reply (`+PONG`,
/// `-NOAUTH ...`): the port speaks plain RESP. None when it answers otherwise or not in time.
fn plain_resp_answer(host: &str, port: u16, timeout: Duration) -> Option<String> {
    use std::io::{BufRead, Read, Write};
    use std::net::ToSocketAddrs;
    let addr = (host, port).to_socket_addrs().ok()?.next()?;
    let wait = timeout.min(Duration::from_secs(2));
    let mut s = std::net::TcpStream::connect_timeout(&addr, wait).ok()?;
    s.set_read_timeout(Some(wait)).ok()?;
    s.set_write_timeout(Some(wait)).ok()?;
    s.write_all(b"PING\r\n").ok()?;
    let mut line = Vec::new();
    std::io::BufReader::new(s).take(256).read_until(b'\n', &mut line).ok()?;
    let text = String::from_utf8_lossy(&line).trim_end().to_string();
    matches!(line.first(), Some(b'+' | b'-')).then_some(text)
}

fn plain_server(host: &str, port: u16, answer: &str) -> RedisError {
    RedisError::from(std::io::Error::other(format!(
        "TLS handshake failed: {host}:{port} speaks plain RESP, not TLS (it answered PING with {answer:?}); \
         use redis:// for it"
    )))
}

/// A failed handshake's error, said to be one when it reads as a bare I/O error.
fn tls_failure(e: RedisError, host: &str, port: u16) -> RedisError {
    if e.kind() == redis::ErrorKind::Io && e.code().is_none() {
        if let Some(first) = plain_resp_answer(host, port, Duration::from_secs(1)) {
            return plain_server(host, port, &first);
        }
    }
    e
}

/// A cluster connection that never re-sends on its own (retries 0).
pub(super) fn open_cluster(
    info: &ConnectionInfo,
    timeout: Duration,
    tls: Option<&TlsFiles>,
) -> redis::RedisResult<ClusterConnection> {
    let mut builder =
        ClusterClient::builder(vec![info.clone()]).retries(0).connection_timeout(timeout).response_timeout(timeout);
    if let Some(t) = tls {
        builder = builder.certs(redis::TlsCertificates { client_tls: None, root_cert: Some(t.ca_pem.clone()) });
    }
    let client = builder.build()?;
    let conn = client.get_connection()?;
    conn.set_read_timeout(Some(timeout))?;
    conn.set_write_timeout(Some(timeout))?;
    Ok(conn)
}

/// The masters of a cluster, from `CLUSTER SLOTS` (an empty host means the node we asked).
pub(super) fn cluster_masters(
    conn: &mut redis::Connection,
    info: &ConnectionInfo,
) -> redis::RedisResult<Vec<(String, u16)>> {
    let v = conn.req_command(redis::cmd("CLUSTER").arg("SLOTS"))?.extract_error()?;
    let default_host = match info.addr() {
        ConnectionAddr::Tcp(h, _) | ConnectionAddr::TcpTls { host: h, .. } => h.clone(),
        _ => "127.0.0.1".to_string(),
    };
    let mut out: Vec<(String, u16)> = Vec::new();
    if let Value::Array(ranges) = v {
        for r in ranges {
            let Value::Array(parts) = r else { continue };
            let Some(Value::Array(node)) = parts.get(2) else { continue };
            let host = match node.first() {
                Some(Value::BulkString(h)) if !h.is_empty() => String::from_utf8_lossy(h).into_owned(),
                _ => default_host.clone(),
            };
            let port = match node.get(1) {
                Some(Value::Int(p)) => *p as u16,
                _ => continue,
            };
            if !out.contains(&(host.clone(), port)) {
                out.push((host, port));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// `host:port` of the master, from `INFO replication` of a replica (`role:slave`).
pub(super) fn replica_of(info: &str) -> Option<String> {
    let field = |name: &str| info.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
    (field("role:")? == "slave")
        .then(|| format!("{}:{}", field("master_host:").unwrap_or("?"), field("master_port:").unwrap_or("?")))
}

pub(super) fn connect_error(url: &str, e: &RedisError) -> Error {
    Error::Connection(format!("{}: cannot connect: {}", redact_url(url), redact_error(e)))
}
