//! [`FaultProxy`]: a TCP proxy in front of a Redis server that injects faults at exact commands, for
//! tests of how a client copes (a reply lost after the command ran, a connection closed in the
//! middle of a reply or of a pipelined batch, a server that stops answering, an error reply such as
//! `LOADING` that a real server cannot be made to give on cue, a server restarted behind a
//! connection that stays up).
//!
//! It understands RESP: it reads one whole command from the client, decides by [`Rule`]s what to
//! do with it, and, when it forwards it, reads the server's whole reply before relaying it. So a
//! fault lands on an exact command (the Nth `EVALSHA`, whatever else the client sent), pipelined
//! commands are handled one by one in order, and the counters say exactly what reached the server.
//! Nothing here waits on time: a test waits for a counter or a state with [`FaultProxy::wait_until`]
//! (generous bound, panics with the state when it runs out).
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What happens to a command a [`Rule`] picks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Answered with this error (`-` and the text, e.g. `LOADING Redis is loading the dataset in
    /// memory`) instead of being forwarded: the server never sees it.
    Error(String),
    /// The client's connection is closed; the command is not forwarded (it cannot have run).
    CloseBeforeSend,
    /// The command is forwarded and runs; the client's connection is closed before any of the
    /// reply is relayed (the reply is lost).
    CloseAfterSend,
    /// The command runs; only the first N bytes of its reply are relayed, then the connection is
    /// closed.
    CutReply(usize),
    /// The command runs; its reply is held (the client sees a server that stopped answering)
    /// until [`FaultProxy::release`], then relayed if the client is still there.
    Hold,
    /// The command waits in the proxy, not forwarded, until [`FaultProxy::resume`]; then it goes to
    /// the server (a new connection when [`FaultProxy::reconnect`] was called meanwhile).
    Pause,
}

/// Which commands get a [`Fault`]: of the commands named `name` (upper case; `*` for any), those
/// after the first `skip`, `times` of them.
#[derive(Clone, Debug)]
pub struct Rule {
    pub name: String,
    pub skip: u64,
    pub times: u64,
    pub fault: Fault,
    matched: u64,
}

impl Rule {
    pub fn new(name: &str, skip: u64, times: u64, fault: Fault) -> Rule {
        Rule { name: name.to_ascii_uppercase(), skip, times, fault, matched: 0 }
    }
}

/// What the proxy saw and did, for tests to wait on and assert.
#[derive(Debug, Default)]
pub struct ProxyState {
    upstream: u16,
    /// Bumped by [`FaultProxy::reconnect`]: each client connection opens a new server connection
    /// before its next command.
    epoch: u64,
    stopping: bool,
    rules: Vec<Rule>,
    /// Commands received from clients, per name (upper case).
    pub received: HashMap<String, u64>,
    /// Commands forwarded to the server, per name.
    pub forwarded: HashMap<String, u64>,
    /// The first line of every error reply relayed from the server, in order.
    pub server_errors: Vec<String>,
    /// Faults applied, in order: (command name, fault).
    pub applied: Vec<(String, Fault)>,
    /// Commands waiting at a [`Fault::Pause`] now.
    pub paused: usize,
    resumed: u64,
    released: u64,
    /// Client connections accepted.
    pub connections: u64,
}

impl ProxyState {
    /// Commands named `name` forwarded to the server.
    pub fn forwarded(&self, name: &str) -> u64 {
        self.forwarded.get(&name.to_ascii_uppercase()).copied().unwrap_or(0)
    }

    /// Commands named `name` received from clients.
    pub fn received(&self, name: &str) -> u64 {
        self.received.get(&name.to_ascii_uppercase()).copied().unwrap_or(0)
    }

    /// How many faults were applied.
    pub fn faults(&self) -> usize {
        self.applied.len()
    }
}

struct Shared {
    state: Mutex<ProxyState>,
    cv: Condvar,
    /// Client sockets, to close them when the proxy is dropped.
    clients: Mutex<Vec<TcpStream>>,
}

/// A fault-injecting proxy on a loopback port in front of `127.0.0.1:upstream` (see the module
/// docs). Dropping it stops it and closes every connection.
pub struct FaultProxy {
    port: u16,
    shared: Arc<Shared>,
}

/// How long [`FaultProxy::wait_until`] waits by default: generous, for loaded machines.
pub const WAIT: Duration = Duration::from_secs(60);

impl FaultProxy {
    /// A proxy in front of the server on `upstream`, with no rules yet.
    pub fn start(upstream: u16) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port for the proxy");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            state: Mutex::new(ProxyState { upstream, ..Default::default() }),
            cv: Condvar::new(),
            clients: Mutex::new(Vec::new()),
        });
        let s = shared.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.state.lock().unwrap().stopping {
                    return;
                }
                let Ok(client) = conn else { continue };
                let _ = client.set_nodelay(true);
                if let Ok(c) = client.try_clone() {
                    s.clients.lock().unwrap().push(c);
                }
                s.state.lock().unwrap().connections += 1;
                let s2 = s.clone();
                std::thread::spawn(move || serve(client, &s2));
            }
        });
        FaultProxy { port, shared }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT/` of the proxy.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Adds a rule (rules are tried in the order added; the first that picks a command applies).
    pub fn rule(&self, rule: Rule) {
        self.lock().rules.push(rule);
    }

    /// Lets every command waiting at a [`Fault::Pause`] go on.
    pub fn resume(&self) {
        self.lock().resumed += 1;
        self.shared.cv.notify_all();
    }

    /// Relays every reply held by [`Fault::Hold`].
    pub fn release(&self) {
        self.lock().released += 1;
        self.shared.cv.notify_all();
    }

    /// Makes every client connection open a new server connection (to `upstream`) before its next
    /// command, as a proxy does when the server behind it restarted or moved. The new connection
    /// starts fresh: no AUTH, database 0.
    pub fn reconnect(&self, upstream: u16) {
        let mut st = self.lock();
        st.upstream = upstream;
        st.epoch += 1;
    }

    /// The state, locked (to read counters).
    pub fn lock(&self) -> MutexGuard<'_, ProxyState> {
        self.shared.state.lock().unwrap()
    }

    /// Waits until `cond` holds for the state, up to [`WAIT`]; panics with `what` and the state
    /// when it does not.
    pub fn wait_until(&self, what: &str, cond: impl Fn(&ProxyState) -> bool) {
        let deadline = Instant::now() + WAIT;
        let mut st = self.lock();
        while !cond(&st) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "proxy: waited {} s for {what}; state: {st:?}", WAIT.as_secs());
            st = self.shared.cv.wait_timeout(st, left.min(Duration::from_millis(200))).unwrap().0;
        }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.lock().stopping = true;
        self.shared.cv.notify_all();
        for c in self.shared.clients.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
        // Wake the accept loop so that it sees `stopping`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// One client connection: command by command, as the rules say.
fn serve(client: TcpStream, shared: &Shared) {
    let mut reader = BufReader::new(client.try_clone().expect("clone the client socket"));
    let mut client = client;
    let mut upstream: Option<(u64, BufReader<TcpStream>)> = None;
    while let Ok(Some((name, raw))) = read_command(&mut reader) {
        let fault = {
            let mut st = shared.state.lock().unwrap();
            *st.received.entry(name.clone()).or_default() += 1;
            let mut picked = None;
            for r in st.rules.iter_mut() {
                if r.name == "*" || r.name == name {
                    r.matched += 1;
                    if picked.is_none() && r.matched > r.skip && r.matched <= r.skip + r.times {
                        picked = Some(r.fault.clone());
                    }
                }
            }
            if let Some(f) = &picked {
                st.applied.push((name.clone(), f.clone()));
            }
            shared.cv.notify_all();
            picked
        };
        match &fault {
            Some(Fault::Error(text)) => {
                if client.write_all(format!("-{text}\r\n").as_bytes()).is_err() {
                    break;
                }
                continue;
            }
            Some(Fault::CloseBeforeSend) => break,
            Some(Fault::Pause) => {
                let mut st = shared.state.lock().unwrap();
                let seen = st.resumed;
                st.paused += 1;
                shared.cv.notify_all();
                while st.resumed == seen && !st.stopping {
                    st = shared.cv.wait(st).unwrap();
                }
                st.paused -= 1;
                if st.stopping {
                    break;
                }
            }
            _ => {}
        }
        // Forward, on the current server connection.
        let (epoch, port) = {
            let st = shared.state.lock().unwrap();
            (st.epoch, st.upstream)
        };
        if upstream.as_ref().is_none_or(|(e, _)| *e != epoch) {
            match TcpStream::connect(("127.0.0.1", port)) {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    upstream = Some((epoch, BufReader::new(s)));
                }
                Err(_) => break,
            }
        }
        let (_, up) = upstream.as_mut().unwrap();
        if up.get_mut().write_all(&raw).is_err() {
            break;
        }
        {
            let mut st = shared.state.lock().unwrap();
            *st.forwarded.entry(name.clone()).or_default() += 1;
            shared.cv.notify_all();
        }
        let mut reply = Vec::new();
        if read_reply(up, &mut reply).is_err() {
            break;
        }
        if reply.first() == Some(&b'-') {
            let line = String::from_utf8_lossy(&reply[1..reply.len() - 2]).into_owned();
            shared.state.lock().unwrap().server_errors.push(line);
            shared.cv.notify_all();
        }
        match fault {
            Some(Fault::CloseAfterSend) => break,
            Some(Fault::CutReply(n)) => {
                let _ = client.write_all(&reply[..n.min(reply.len())]);
                break;
            }
            Some(Fault::Hold) => {
                let mut st = shared.state.lock().unwrap();
                let seen = st.released;
                while st.released == seen && !st.stopping {
                    st = shared.cv.wait(st).unwrap();
                }
            }
            _ => {}
        }
        if client.write_all(&reply).is_err() {
            break;
        }
    }
    let _ = client.shutdown(Shutdown::Both);
}

/// One command from a client (a RESP array of bulk strings): its name in upper case and its bytes.
fn read_command(r: &mut BufReader<TcpStream>) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut raw = Vec::new();
    let n = read_line(r, &mut raw)?;
    let Some(n) = n else { return Ok(None) };
    let count: usize = parse_len(&n, b'*')?;
    let mut name = String::new();
    for i in 0..count {
        let l = read_line(r, &mut raw)?.ok_or_else(eof)?;
        let len = parse_len(&l, b'$')?;
        let start = raw.len();
        raw.resize(start + len + 2, 0);
        r.read_exact(&mut raw[start..])?;
        if i == 0 {
            name = String::from_utf8_lossy(&raw[start..start + len]).to_ascii_uppercase();
        }
    }
    Ok(Some((name, raw)))
}

/// One whole reply (any RESP2 or RESP3 type), its bytes appended to `out`.
fn read_reply(r: &mut BufReader<TcpStream>, out: &mut Vec<u8>) -> std::io::Result<()> {
    let line = read_line(r, out)?.ok_or_else(eof)?;
    let n = || -> std::io::Result<i64> {
        std::str::from_utf8(&line[1..]).ok().and_then(|s| s.parse().ok()).ok_or_else(|| bad(&line))
    };
    match line.first() {
        Some(b'$' | b'=' | b'!') => {
            let len = n()?;
            if len >= 0 {
                let start = out.len();
                out.resize(start + len as usize + 2, 0);
                r.read_exact(&mut out[start..])?;
            }
        }
        Some(b'*' | b'~' | b'>') => {
            for _ in 0..n()?.max(0) {
                read_reply(r, out)?;
            }
        }
        Some(b'%' | b'|') => {
            for _ in 0..n()?.max(0) * 2 {
                read_reply(r, out)?;
            }
        }
        Some(_) => {}
        None => return Err(bad(&line)),
    }
    Ok(())
}

/// Reads a `\r\n`-terminated line, appending it (with the terminator) to `raw`; returns it without
/// the terminator, or `None` at the end of the stream.
fn read_line(r: &mut BufReader<TcpStream>, raw: &mut Vec<u8>) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    if r.read_until(b'\n', &mut line)? == 0 {
        return Ok(None);
    }
    if !line.ends_with(b"\r\n") {
        return Err(eof());
    }
    raw.extend_from_slice(&line);
    line.truncate(line.len() - 2);
    Ok(Some(line))
}

fn parse_len(line: &[u8], kind: u8) -> std::io::Result<usize> {
    if line.first() != Some(&kind) {
        return Err(bad(line));
    }
    std::str::from_utf8(&line[1..]).ok().and_then(|s| s.parse().ok()).ok_or_else(|| bad(line))
}

fn eof() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "connection closed")
}

fn bad(line: &[u8]) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not RESP: {:?}", String::from_utf8_lossy(line)))
}
