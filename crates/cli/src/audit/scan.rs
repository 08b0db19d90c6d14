//! Walking a keyspace read-only and at a set pace: SCAN with COUNT on every master, then per batch
//! one pipeline of TYPE and PTTL for every key (and, for a sample of each pattern's keys, MEMORY
//! USAGE, OBJECT ENCODING and OBJECT IDLETIME), and only with `--sizes` one pipeline of size
//! commands (ZCARD, HLEN, SCARD, LLEN, STRLEN) for the sampled keys by their type.
//!
//! Every command sent is in [`READ_COMMANDS`]: an ACL user allowed only those can run an audit
//! (`tests/audit_real.rs` does). SCAN, TYPE, PTTL, MEMORY USAGE and OBJECT leave a key's LRU clock
//! and LFU counter as they are in Redis 7.0 (they look keys up without touching them; checked on
//! a real server by `tests/real_redis/audit_real.rs`); the size commands count as an access, as
//! any read does (they change no data and no TTL), and Redis 7.0 has no CLIENT NO-TOUCH. So they
//! are sent only when asked (`--sizes`), for sampled keys only, after OBJECT IDLETIME was read,
//! and the report says how many keys they touched.
//!
//! **Pace.** [`Pacer`] keeps the commands sent (a SCAN counts one) at or under `--rate` per second
//! on average since the start, sleeping between pipelines.
//!
//! **Cluster.** A node is scanned only for the keys it holds; a reply of `MOVED slot host:port`
//! (the slot moved during a resharding) or `ASK` sends that key's commands again to the node named
//! (after `ASKING` for ASK), and a key seen on two nodes (scanned on the old owner and again on the
//! new one) is counted once.
use std::collections::HashMap;
use std::time::Duration;

use redis::{ConnectionInfo, ConnectionLike, Value};

use limitlab_emulator::clock::Stopwatch;
use limitlab_emulator::{Emulator, Reply};
use limitlab_emulator::{Error, Result};

/// The commands an audit sends (ACL names: `OBJECT|ENCODING` is a subcommand).
pub const READ_COMMANDS: &[&str] = &[
    "scan",
    "type",
    "pttl",
    "memory|usage",
    "object|encoding",
    "object|idletime",
    "zcard",
    "hlen",
    "scard",
    "llen",
    "strlen",
    "dbsize",
    "info",
    "time",
    "ping",
    "cluster|slots",
    "asking",
];

/// One command's arguments.
pub type Argv = Vec<Vec<u8>>;

/// A server the audit reads from: one node, pipelines in, replies out (error replies as
/// [`Reply::Error`]).
pub trait Node {
    /// `host:port`, or `emulator`.
    fn name(&self) -> String;
    fn pipeline(&mut self, cmds: &[Argv]) -> Result<Vec<Reply>>;
}

/// The emulator as a node (for `audit --emulator`).
pub struct EmulatorNode<'a>(pub &'a mut Emulator);

impl Node for EmulatorNode<'_> {
    fn name(&self) -> String {
        "emulator".into()
    }
    fn pipeline(&mut self, cmds: &[Argv]) -> Result<Vec<Reply>> {
        Ok(cmds
            .iter()
            .map(|c| {
                let args: Vec<&[u8]> = c.iter().map(Vec::as_slice).collect();
                self.0.execute(&args)
            })
            .collect())
    }
}

/// A real server (a standalone one, or one master of a cluster) over one connection.
pub struct RealNode {
    pub addr: String,
    conn: redis::Connection,
}

impl RealNode {
    pub fn open(
        info: &ConnectionInfo,
        tls: Option<&limitlab_engine::backend::real::TlsFiles>,
        timeout: Duration,
    ) -> Result<RealNode> {
        let addr = node_url(info.addr());
        let conn = limitlab_engine::backend::real::open_connection(info, tls, timeout).map_err(|e| {
            Error::Connection(format!("{addr}: cannot connect: {}", limitlab_engine::backend::real::redact_error(&e)))
        })?;
        Ok(RealNode { addr, conn })
    }
}

impl Node for RealNode {
    fn name(&self) -> String {
        self.addr.clone()
    }
    fn pipeline(&mut self, cmds: &[Argv]) -> Result<Vec<Reply>> {
        if cmds.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for c in cmds {
            let mut cmd = redis::Cmd::new();
            for a in c {
                cmd.arg(a.as_slice());
            }
            pipe.add_command(cmd);
        }
        let values = self.conn.req_packed_commands(&pipe.get_packed_pipeline(), 0, cmds.len()).map_err(|e| {
            Error::Connection(format!("{}: {}", self.addr, limitlab_engine::backend::real::redact_error(&e)))
        })?;
        Ok(values.into_iter().map(value_reply).collect())
    }
}

/// A redis crate value as a [`Reply`], error replies included.
pub fn value_reply(v: Value) -> Reply {
    match v {
        Value::ServerError(e) => Reply::Error(match e.details() {
            Some(d) => format!("{} {d}", e.code()),
            None => e.code().to_string(),
        }),
        v => limitlab_engine::backend::real::to_reply(v),
    }
}

/// Keeps commands at or under a rate.
pub struct Pacer {
    rate: f64,
    sent: u64,
    clock: Stopwatch,
    /// Time spent sleeping, in seconds.
    pub slept: f64,
}

impl Pacer {
    pub fn new(rate: u64) -> Pacer {
        Pacer { rate: rate as f64, sent: 0, clock: Stopwatch::start(), slept: 0.0 }
    }
    /// Waits until `n` more commands keep the average at or under the rate.
    pub fn before(&mut self, n: usize) {
        self.sent += n as u64;
        let due = self.sent as f64 / self.rate;
        let now = self.clock.elapsed_secs();
        if due > now {
            let wait = due - now;
            self.slept += wait;
            std::thread::sleep(Duration::from_secs_f64(wait));
        }
    }
    pub fn sent(&self) -> u64 {
        self.sent
    }
    pub fn elapsed_secs(&self) -> f64 {
        self.clock.elapsed_secs()
    }
}

/// What the audit read about one key.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyInfo {
    pub key: Vec<u8>,
    /// TYPE (`none` when it vanished between SCAN and TYPE).
    pub ty: String,
    /// PTTL: -1 without a TTL.
    pub pttl: i64,
    /// Sampled keys only.
    pub memory: Option<u64>,
    pub encoding: Option<String>,
    pub idle_s: Option<u64>,
    /// ZCARD, HLEN, SCARD, LLEN or STRLEN by type (sampled keys only).
    pub size: Option<u64>,
}

/// The commands for one key: TYPE and PTTL, and for a sampled key the rest of round one.
fn round_one(key: &[u8], sampled: bool) -> Vec<Argv> {
    let k = key.to_vec();
    let mut v = vec![vec![b"TYPE".to_vec(), k.clone()], vec![b"PTTL".to_vec(), k.clone()]];
    if sampled {
        v.push(vec![b"MEMORY".to_vec(), b"USAGE".to_vec(), k.clone()]);
        v.push(vec![b"OBJECT".to_vec(), b"ENCODING".to_vec(), k.clone()]);
        v.push(vec![b"OBJECT".to_vec(), b"IDLETIME".to_vec(), k]);
    }
    v
}

fn size_command(ty: &str) -> Option<&'static [u8]> {
    Some(match ty {
        "zset" => b"ZCARD",
        "hash" => b"HLEN",
        "set" => b"SCARD",
        "list" => b"LLEN",
        "string" => b"STRLEN",
        _ => return None,
    })
}

/// Where a key's commands go after a `MOVED`/`ASK` reply.
enum Redirect {
    None,
    Moved(String),
    Ask(String),
}

fn redirect_of(replies: &[Reply]) -> Redirect {
    for r in replies {
        if let Reply::Error(e) = r {
            let mut parts = e.split_whitespace();
            match (parts.next(), parts.next(), parts.next()) {
                (Some("MOVED"), Some(_), Some(addr)) => return Redirect::Moved(addr.to_string()),
                (Some("ASK"), Some(_), Some(addr)) => return Redirect::Ask(addr.to_string()),
                _ => {}
            }
        }
    }
    Redirect::None
}

/// Opens a node by `host:port` (for redirects); None where there is no such thing (the emulator).
pub type Connector<'a> = dyn FnMut(&str) -> Result<Box<dyn Node>> + 'a;

/// A node as a URL, as the command line takes it: `redis://HOST:PORT` (`rediss://` with TLS).
pub fn node_url(addr: &redis::ConnectionAddr) -> String {
    match addr {
        redis::ConnectionAddr::Tcp(..) => format!("redis://{addr}"),
        redis::ConnectionAddr::TcpTls { .. } => format!("rediss://{addr}"),
        other => other.to_string(),
    }
}

/// Reads `keys` from `node` (and from the nodes redirects name): TYPE and PTTL of every key, the
/// rest for those `sampled` says (their sizes only when `sizes`). Keys gone between SCAN and TYPE
/// come back with type `none`.
pub fn inspect(
    node: &mut dyn Node,
    keys: &[(Vec<u8>, bool)],
    sizes: bool,
    pacer: &mut Pacer,
    others: &mut HashMap<String, Box<dyn Node>>,
    connect: &mut Connector<'_>,
) -> Result<Vec<KeyInfo>> {
    let mut cmds = Vec::new();
    let mut spans = Vec::with_capacity(keys.len());
    for (k, s) in keys {
        let c = round_one(k, *s);
        spans.push((cmds.len(), c.len()));
        cmds.extend(c);
    }
    pacer.before(cmds.len());
    let mut replies = node.pipeline(&cmds)?;
    // Redirected keys: their commands again, on the node named; where they were answered is kept
    // for round two.
    let mut answered_at: Vec<Option<(String, bool)>> = vec![None; keys.len()];
    for (i, (k, s)) in keys.iter().enumerate() {
        let (at, n) = spans[i];
        let mut hops = 0;
        loop {
            let (addr, asking) = match redirect_of(&replies[at..at + n]) {
                Redirect::None => break,
                Redirect::Moved(a) => (a, false),
                Redirect::Ask(a) => (a, true),
            };
            hops += 1;
            if hops > 5 {
                return Err(Error::Redis(format!(
                    "{}: redirected more than 5 times",
                    crate::audit::patterns::printable(k)
                )));
            }
            if !others.contains_key(&addr) {
                let opened = connect(&addr)?;
                others.insert(addr.clone(), opened);
            }
            let target = others.get_mut(&addr).expect("inserted above");
            let mut again = Vec::new();
            for c in round_one(k, *s) {
                if asking {
                    again.push(vec![b"ASKING".to_vec()]);
                }
                again.push(c);
            }
            pacer.before(again.len());
            let got = target.pipeline(&again)?;
            let got: Vec<Reply> = if asking { got.into_iter().skip(1).step_by(2).collect() } else { got };
            replies.splice(at..at + n, got);
            answered_at[i] = Some((addr, asking));
        }
    }
    let mut out = Vec::with_capacity(keys.len());
    for (i, (k, s)) in keys.iter().enumerate() {
        let (at, _) = spans[i];
        let r = &replies[at..];
        let mut info = KeyInfo { key: k.clone(), ..Default::default() };
        info.ty = match &r[0] {
            Reply::Status(t) => t.clone(),
            Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            other => return Err(Error::Redis(format!("TYPE replied {other:?}"))),
        };
        info.pttl = match &r[1] {
            Reply::Int(t) => *t,
            other => return Err(Error::Redis(format!("PTTL replied {other:?}"))),
        };
        if *s {
            info.memory = match &r[2] {
                Reply::Int(n) if *n >= 0 => Some(*n as u64),
                _ => None,
            };
            info.encoding = match &r[3] {
                Reply::Bulk(b) => Some(String::from_utf8_lossy(b).into_owned()),
                Reply::Status(t) => Some(t.clone()),
                _ => None,
            };
            info.idle_s = match &r[4] {
                Reply::Int(n) if *n >= 0 => Some(*n as u64),
                _ => None,
            };
        }
        out.push(info);
    }
    // Round two: sizes of the sampled keys, by type, where round one was answered.
    let mut sized = Vec::new();
    let mut size_cmds = Vec::new();
    for (i, (k, s)) in keys.iter().enumerate() {
        if let (true, true, Some(cmd)) = (sizes, *s, size_command(&out[i].ty)) {
            let c = vec![cmd.to_vec(), k.clone()];
            match &answered_at[i] {
                None => {
                    sized.push(i);
                    size_cmds.push(c);
                }
                Some((addr, asking)) => {
                    let target = others.get_mut(addr).expect("opened in round one");
                    let mut cmds = Vec::new();
                    if *asking {
                        cmds.push(vec![b"ASKING".to_vec()]);
                    }
                    cmds.push(c);
                    pacer.before(cmds.len());
                    if let Some(Reply::Int(n)) = target.pipeline(&cmds)?.pop() {
                        out[i].size = Some(n.max(0) as u64);
                    }
                }
            }
        }
    }
    if !size_cmds.is_empty() {
        pacer.before(size_cmds.len());
        let replies = node.pipeline(&size_cmds)?;
        for (j, &i) in sized.iter().enumerate() {
            if let Reply::Int(n) = replies[j] {
                out[i].size = Some(n.max(0) as u64);
            }
        }
    }
    Ok(out)
}

/// One SCAN step: the next cursor and the keys.
pub fn scan_step(
    node: &mut dyn Node,
    cursor: &[u8],
    pattern: &str,
    count: u64,
    pacer: &mut Pacer,
) -> Result<(Vec<u8>, Vec<Vec<u8>>)> {
    pacer.before(1);
    let cmd = vec![
        b"SCAN".to_vec(),
        cursor.to_vec(),
        b"MATCH".to_vec(),
        pattern.as_bytes().to_vec(),
        b"COUNT".to_vec(),
        count.to_string().into_bytes(),
    ];
    let r = node.pipeline(&[cmd])?.pop().unwrap_or(Reply::Nil);
    match r {
        Reply::Array(parts) => match parts.as_slice() {
            [Reply::Bulk(next), Reply::Array(found)] => {
                let keys = found
                    .iter()
                    .filter_map(|k| match k {
                        Reply::Bulk(b) => Some(b.clone()),
                        _ => None,
                    })
                    .collect();
                Ok((next.clone(), keys))
            }
            _ => Err(Error::Redis(format!("{}: SCAN replied {parts:?}", node.name()))),
        },
        Reply::Error(e) => Err(Error::Redis(format!("{}: SCAN: {e}", node.name()))),
        other => Err(Error::Redis(format!("{}: SCAN replied {other:?}", node.name()))),
    }
}

/// A number from a reply (DBSIZE, an INFO field).
pub fn int_reply(r: &Reply) -> Option<i64> {
    match r {
        Reply::Int(n) => Some(*n),
        Reply::Bulk(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
        _ => None,
    }
}
