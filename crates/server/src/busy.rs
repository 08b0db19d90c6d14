//! The server while a script runs long, as Redis 7.0's `processEventsWhileBlocked` keeps serving
//! its clients: once a script or function has run for `busy-reply-threshold` ms, the emulator's
//! count hook calls `Busy::tick` (installed with `Emulator::set_busy_handler`), which accepts new
//! connections, reads what the other clients sent and answers it: `BUSY ...` for everything but
//! the commands Redis allows then (SCRIPT KILL, FUNCTION KILL, FUNCTION STATS, SHUTDOWN NOSAVE),
//! whose answer may kill the script or stop the server.
//!
//! The tokio runtime is stuck in the hook meanwhile (its one thread runs the script), so the
//! sockets are read and written here directly, without blocking (`poll`, `recv`, `send`). Each
//! connection registers its socket ([`Busy::register`]) and parks its unread bytes in its
//! [`Entry`] while it waits for more ([`read`]), so what a busy phase reads is not lost and whole
//! requests are answered in order. Only a connection parked that way is served: the script's own
//! connection, and one in the middle of a pipelined batch (writing replies, say), wait for the
//! script's end, so a connection's requests are never answered out of order. The commands Redis
//! allows while busy that change the connection itself (AUTH, HELLO, QUIT, RESET, DISCARD, WATCH,
//! UNWATCH; MULTI is answered, and opens the transaction at the script's end), and every request of a connection not yet authenticated, also wait for the
//! script's end, and so does everything the connection sends after them.
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]
use std::cell::{Cell, RefCell};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::rc::{Rc, Weak};
use std::task::Poll;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use limitlab_emulator::clock::Stopwatch;
use limitlab_emulator::cmd;
use limitlab_emulator::lua::{BusyAction, BusyHandler, BusyScript};
use limitlab_emulator::Reply;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::conn::Conn;
use super::parse::{self, Frame};
use super::state::Server;

/// Redis's `slowevalerr`: what every client gets while a script (EVAL family) runs long.
const SLOW_EVAL: &str = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// Redis's `slowscripterr`: the same while a function runs long.
const SLOW_FUNCTION: &str = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.";
/// How often a busy phase looks at the sockets (Redis's hook runs every 100,000 instructions, about
/// as often).
const POLL_EVERY: Duration = Duration::from_millis(1);
/// Bytes asked of a socket per read.
const READ_CHUNK: usize = 16 * 1024;
/// A connection that sent more than this during one busy phase is left to its own task afterwards.
const INPUT_CAP: usize = 1 << 20;

/// The commands Redis allows while busy that change the connection or its transaction: answered
/// by the connection itself once the script ends.
const LATER: &[&str] = &["auth", "hello", "quit", "reset", "multi", "discard", "watch", "unwatch"];

/// One connection, as a busy phase sees it.
pub struct Entry {
    fd: RawFd,
    /// Its peer is 127.0.0.1 or ::1 (`--enable-debug-command local`).
    local: bool,
    /// Its task waits in [`read`] with every whole request it had answered: a busy phase may serve it.
    idle: Cell<bool>,
    /// Bytes read and not yet run (the task's buffer while it is idle).
    input: RefCell<BytesMut>,
    /// Replies of the busy phase the socket has not taken yet (the task writes them first).
    output: RefCell<Vec<u8>>,
    /// The connection's state as of its last request (it cannot change while the task is idle).
    authed: Cell<bool>,
    resp3: Cell<bool>,
    in_multi: Cell<bool>,
    /// A request refused during the busy phase inside MULTI: EXEC must fail (Redis flags the
    /// transaction on every rejected command).
    flag_multi: Cell<bool>,
    /// MULTI was answered during the busy phase (Redis allows it while busy): the connection opens
    /// the transaction once the script ends, before [`Entry::flag_multi`] applies.
    begin_multi: Cell<bool>,
    /// EXEC was refused during the busy phase: Redis answers EXECABORT and discards the
    /// transaction, which the connection does once the script ends.
    end_multi: Cell<bool>,
    /// Not served again in this phase: a request waits for the script's end, or the socket closed.
    held: Cell<bool>,
    /// The busy phase read, wrote or held it: its task is woken at the script's end.
    touched: Cell<bool>,
    wake: crate::outbox::Signal,
}

impl Entry {
    fn new(stream: &TcpStream, authed: bool) -> Entry {
        Entry {
            fd: stream.as_raw_fd(),
            local: stream.peer_addr().is_ok_and(|a| super::commands::local_ip(a.ip())),
            idle: Cell::new(true),
            input: RefCell::new(BytesMut::new()),
            output: RefCell::new(Vec::new()),
            authed: Cell::new(authed),
            resp3: Cell::new(false),
            in_multi: Cell::new(false),
            flag_multi: Cell::new(false),
            begin_multi: Cell::new(false),
            end_multi: Cell::new(false),
            held: Cell::new(false),
            touched: Cell::new(false),
            wake: Default::default(),
        }
    }
}

/// The connections and listening sockets a busy phase serves.
#[derive(Default)]
pub struct Busy {
    entries: RefCell<Vec<Rc<Entry>>>,
    /// `(node, listening socket)`.
    listeners: RefCell<Vec<(usize, RawFd)>>,
    /// When the current phase last looked at the sockets.
    last_poll: Cell<Option<Stopwatch>>,
    /// A busy phase is under way.
    active: Cell<bool>,
}

/// A connection's registration, undone when it is dropped (before the socket closes: declare it
/// after the stream).
pub struct Registration {
    server: Rc<Server>,
    pub entry: Rc<Entry>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.server.busy.entries.borrow_mut().retain(|e| !Rc::ptr_eq(e, &self.entry));
    }
}

impl Busy {
    /// Registers a connection's socket (or finds the entry a busy phase made when it accepted it).
    pub fn register(server: &Rc<Server>, stream: &TcpStream, authed: bool) -> Registration {
        let fd = stream.as_raw_fd();
        let found = server.busy.entries.borrow().iter().find(|e| e.fd == fd).cloned();
        let entry = found.unwrap_or_else(|| {
            let e = Rc::new(Entry::new(stream, authed));
            server.busy.entries.borrow_mut().push(e.clone());
            e
        });
        entry.idle.set(false);
        Registration { server: server.clone(), entry }
    }

    /// Makes the entry of a connection just accepted, before its task first runs: a script that runs
    /// long before then (the task waits behind it) still serves it.
    pub fn adopt(&self, stream: &TcpStream, authed: bool) {
        self.entries.borrow_mut().push(Rc::new(Entry::new(stream, authed)));
    }

    /// Registers a listening socket, for the connections that arrive while a script runs long.
    pub fn add_listener(&self, node: usize, fd: RawFd) {
        self.listeners.borrow_mut().push((node, fd));
    }

    /// The handler each node's emulator calls while a script runs long.
    pub fn handler(server: &Rc<Server>) -> BusyHandler {
        let weak: Weak<Server> = Rc::downgrade(server);
        Rc::new(move |script: &BusyScript<'_>| match weak.upgrade() {
            Some(server) => server.busy.tick(&server, script),
            None => BusyAction::Continue,
        })
    }

    /// One tick of a busy phase: new connections accepted, the idle ones read and answered.
    fn tick(&self, server: &Rc<Server>, script: &BusyScript<'_>) -> BusyAction {
        if self.last_poll.get().is_some_and(|t| t.elapsed() < POLL_EVERY) {
            return BusyAction::Continue;
        }
        self.last_poll.set(Some(Stopwatch::start()));
        self.active.set(true);
        if server.stopping.get() {
            return BusyAction::Kill;
        }
        self.accept(server);
        let ready: Vec<Rc<Entry>> =
            self.entries.borrow().iter().filter(|e| e.idle.get() && !e.held.get()).cloned().collect();
        if ready.is_empty() {
            return BusyAction::Continue;
        }
        let mut fds: Vec<libc::pollfd> = ready
            .iter()
            .map(|e| {
                let out = if e.output.borrow().is_empty() { 0 } else { libc::POLLOUT };
                libc::pollfd { fd: e.fd, events: libc::POLLIN | out, revents: 0 }
            })
            .collect();
        // SAFETY: `fds` is a live array of `fds.len()` pollfd structs; a timeout of 0 never blocks.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
        if n <= 0 {
            return BusyAction::Continue;
        }
        let mut action = BusyAction::Continue;
        for (e, p) in ready.iter().zip(&fds) {
            if p.revents == 0 {
                continue;
            }
            e.touched.set(true);
            if p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                fill(e);
            }
            if action == BusyAction::Continue {
                action = self.answer(server, e, script);
            }
            flush(e);
        }
        action
    }

    /// Accepts the connections waiting on every listening socket, as the accept loop would.
    fn accept(&self, server: &Rc<Server>) {
        let listeners = self.listeners.borrow().clone();
        for (node, lfd) in listeners {
            loop {
                // SAFETY: `lfd` is a listening socket the server owns for as long as it runs
                // (registered by the accept loop's setup); null address arguments are allowed.
                let fd = unsafe {
                    libc::accept4(
                        lfd,
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                    )
                };
                if fd < 0 {
                    break;
                }
                // SAFETY: accept4 returned a new socket that nothing else owns.
                let std_stream = unsafe { std::net::TcpStream::from_raw_fd(fd) };
                let _ = std_stream.set_nodelay(true);
                // Inside the runtime (the hook runs in a task), so the stream can join its reactor.
                let Ok(stream) = TcpStream::from_std(std_stream) else { continue };
                if !server.nodes[node].admit() {
                    tokio::task::spawn_local(super::connection::refuse(stream));
                    continue;
                }
                self.adopt(&stream, server.requirepass.is_none());
                tokio::task::spawn_local(super::connection::handle(server.clone(), node, stream));
            }
        }
    }

    /// Answers the whole requests in `e`'s input, in order, until one must wait for the script's end.
    fn answer(&self, server: &Server, e: &Entry, script: &BusyScript<'_>) -> BusyAction {
        let mut action = BusyAction::Continue;
        let mut ranges = Vec::new();
        loop {
            if !e.output.borrow().is_empty() && !flush(e) {
                // The client does not read its replies: the rest waits.
                return action;
            }
            let mut input = e.input.borrow_mut();
            let (n, reply) = {
                let buf = &input[..];
                // The running script holds the emulator: its `proto-max-bulk-len` cannot be read
                // now, and the default applies to the requests answered meanwhile.
                let (n, inline) = match parse::next(buf, e.authed.get(), parse::MAX_BULK, &mut ranges) {
                    Frame::Incomplete => return action,
                    Frame::Skip(n) => (n, None),
                    Frame::Multibulk(n) => (n, Some(None)),
                    Frame::Inline(n, owned) => (n, Some(Some(owned))),
                    Frame::Error(_) => {
                        // The connection answers it (and closes) itself.
                        e.held.set(true);
                        return action;
                    }
                };
                let reply = match &inline {
                    None => None,
                    Some(inline) => {
                        let args: Vec<&[u8]> = match inline {
                            Some(owned) => owned.iter().map(Vec::as_slice).collect(),
                            None => ranges.iter().map(|r| &buf[r.clone()]).collect(),
                        };
                        match decide(server, e, &args, script, &mut action) {
                            Some(r) => Some(r),
                            None => {
                                e.held.set(true);
                                if server.stopping.get() {
                                    // SHUTDOWN NOSAVE: nothing after it is answered.
                                    drop(args);
                                    input.clear();
                                }
                                return action;
                            }
                        }
                    }
                };
                (n, reply)
            };
            input.advance(n);
            drop(input);
            if let Some(r) = reply {
                if e.in_multi.get() && matches!(r, Reply::Error(_)) {
                    e.flag_multi.set(true);
                }
                super::resp::write(&r, e.resp3.get(), &mut e.output.borrow_mut());
            }
            if action != BusyAction::Continue {
                return action;
            }
        }
    }

    /// After every command a connection ran (so after a script that ran long): wakes the
    /// connections the busy phase served, so they go on with what it left them. Returns whether
    /// the server is stopping (SHUTDOWN NOSAVE during the phase): the command gets no reply.
    pub fn after_command(&self, server: &Server, conn: &mut Conn) -> bool {
        if self.active.replace(false) {
            self.last_poll.set(None);
            for e in self.entries.borrow().iter() {
                e.held.set(false);
                if e.touched.replace(false) {
                    e.wake.signal();
                }
            }
        }
        if server.stopping.get() {
            conn.close = true;
            return true;
        }
        false
    }
}

/// The reply to one request during a busy phase, in the order of Redis's `processCommand`
/// checks; None when it must wait for the script's end.
fn decide(server: &Server, e: &Entry, args: &[&[u8]], s: &BusyScript<'_>, action: &mut BusyAction) -> Option<Reply> {
    let name = args[0];
    if e.authed.get() && args.len() == 1 && name.eq_ignore_ascii_case(b"multi") && !e.in_multi.get() {
        // MULTI is allowed while busy (Redis's `allow_busy`): the commands after it are refused
        // with BUSY and flag the transaction, so its EXEC fails and none of it runs half-way.
        e.in_multi.set(true);
        e.begin_multi.set(true);
        return Some(Reply::ok());
    }
    if !e.authed.get() || LATER.iter().any(|l| name.eq_ignore_ascii_case(l.as_bytes())) {
        return None;
    }
    if let Some((own, arity)) = super::commands::own_command(name) {
        if !cmd::arity_ok(arity, args.len()) {
            return Some(cmd::arity_error(own));
        }
        if own == "debug" && !server.debug_allowed(e.local) {
            // Checked before BUSY, as Redis checks its protected commands.
            return Some(Reply::err(crate::DEBUG_REFUSED));
        }
    } else {
        match cmd::lookup(name) {
            None => return Some(cmd::unknown_command(args)),
            Some(spec) if !spec.arity_ok(args.len()) => return Some(cmd::wrong_arity(spec)),
            Some(_) => {}
        }
    }
    let busy = || Reply::err(if s.eval { SLOW_EVAL } else { SLOW_FUNCTION });
    let is = |i: usize, w: &str| args.len() > i && args[i].eq_ignore_ascii_case(w.as_bytes());
    let kill = is(0, "script") || is(0, "function");
    let allowed =
        (kill && args.len() == 2 && is(1, "kill")) || (is(0, "function") && args.len() == 2 && is(1, "stats"));
    if !allowed && !is(0, "shutdown") {
        if e.in_multi.get() && args.len() == 1 && is(0, "exec") {
            // Redis's rejectCommand on EXEC: the transaction is aborted with the reason, and ends.
            e.in_multi.set(false);
            e.flag_multi.set(false);
            e.end_multi.set(true);
            let why = if s.eval { SLOW_EVAL } else { SLOW_FUNCTION };
            return Some(Reply::Error(format!("EXECABORT Transaction discarded because of: {why}")));
        }
        return Some(busy());
    }
    if e.in_multi.get() {
        // Queued by the transaction: the connection does that once the script ends.
        return None;
    }
    if is(0, "shutdown") {
        let flags_ok = args[1..]
            .iter()
            .all(|a| ["nosave", "save", "now", "force"].iter().any(|f| a.eq_ignore_ascii_case(f.as_bytes())));
        if args.len() == 2 && is(1, "abort") {
            return Some(Reply::err("ERR No shutdown in progress."));
        }
        if !flags_ok {
            return Some(Reply::err(cmd::SYNTAX));
        }
        if !args[1..].iter().any(|a| a.eq_ignore_ascii_case(b"nosave")) {
            return Some(busy());
        }
        // SHUTDOWN NOSAVE: the script is killed, whatever it wrote, and the server stops without a
        // reply to anyone.
        server.stopping.set(true);
        server.stop.notify_one();
        for e in server.busy.entries.borrow().iter() {
            e.held.set(true);
        }
        // The caller ([`Busy::answer`]) holds `e.input` and drops what follows the request.
        *action = BusyAction::Kill;
        return None;
    }
    if is(1, "stats") {
        return Some(if s.eval { busy() } else { s.function_stats() });
    }
    // SCRIPT KILL / FUNCTION KILL (Redis's scriptKill).
    let by_eval = is(0, "script");
    Some(if s.wrote {
        Reply::err(UNKILLABLE)
    } else if by_eval != s.eval {
        // SCRIPT KILL cannot stop a function, nor FUNCTION KILL a script.
        busy()
    } else {
        *action = BusyAction::Kill;
        Reply::ok()
    })
}

/// Reads what the socket has (without blocking) into the entry's input; a closed or failed socket
/// is held (its task sees the end itself).
fn fill(e: &Entry) {
    let mut input = e.input.borrow_mut();
    loop {
        if input.len() > INPUT_CAP {
            e.held.set(true);
            return;
        }
        input.reserve(READ_CHUNK);
        let spare = input.spare_capacity_mut();
        // SAFETY: `spare` is writable memory of `spare.len()` bytes owned by `input`; recv writes at
        // most that many and returns how many it wrote, which are then marked initialised.
        let n = unsafe { libc::recv(e.fd, spare.as_mut_ptr().cast(), spare.len(), libc::MSG_DONTWAIT) };
        if n > 0 {
            let len = input.len() + n as usize;
            // SAFETY: recv initialised the first `n` bytes of the spare capacity.
            unsafe { input.set_len(len) };
            continue;
        }
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock {
            return;
        }
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        // The end of the stream, or an error: the task finds it again on its next read.
        e.held.set(true);
        return;
    }
}

/// Writes what the socket takes of the entry's pending replies (without blocking); true when
/// nothing is left.
fn flush(e: &Entry) -> bool {
    let mut out = e.output.borrow_mut();
    while !out.is_empty() {
        // SAFETY: `out` is a live buffer of `out.len()` bytes; send only reads them.
        let n = unsafe { libc::send(e.fd, out.as_ptr().cast(), out.len(), libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
        if n > 0 {
            out.drain(..n as usize);
            continue;
        }
        let err = std::io::Error::last_os_error().kind();
        if n < 0 && err == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n < 0 && err == std::io::ErrorKind::WouldBlock {
            return false;
        }
        // The peer is gone: its task finds out itself.
        out.clear();
        e.held.set(true);
        return true;
    }
    true
}

/// Waits for more of the client's bytes, as the connection's read would, with its unanswered bytes
/// parked in its entry meanwhile (a busy phase may read and answer them). Returns false at the end
/// of the stream. Afterwards `inbuf` holds every byte not yet answered, and the replies a busy
/// phase could not write yet have been written.
pub async fn read(
    server: &Server,
    conn: &Conn,
    entry: &Entry,
    stream: &mut TcpStream,
    inbuf: &mut BytesMut,
) -> std::io::Result<bool> {
    let early = !entry.input.borrow().is_empty();
    let got = if early {
        // A connection accepted during a busy phase: what the phase read before its task started.
        let mut input = entry.input.borrow_mut();
        inbuf.extend_from_slice(&input);
        input.clear();
        Ok(true)
    } else {
        std::mem::swap(&mut *entry.input.borrow_mut(), inbuf);
        entry.authed.set(conn.authed);
        entry.resp3.set(conn.resp3);
        entry.in_multi.set(server.nodes[conn.node].emu.borrow().in_transaction(conn.client));
        entry.idle.set(true);
        let got = wait(entry, &conn.outbox, stream).await;
        entry.idle.set(false);
        std::mem::swap(&mut *entry.input.borrow_mut(), inbuf);
        got
    };
    if entry.begin_multi.replace(false) {
        let _ = server.nodes[conn.node].emu.borrow_mut().execute_as(conn.client, &[b"MULTI"]);
    }
    if entry.flag_multi.replace(false) {
        server.nodes[conn.node].emu.borrow_mut().refuse_in_transaction(conn.client);
    }
    if entry.end_multi.replace(false) {
        let _ = server.nodes[conn.node].emu.borrow_mut().execute_as(conn.client, &[b"DISCARD"]);
    }
    let out = std::mem::take(&mut *entry.output.borrow_mut());
    if !out.is_empty() {
        stream.write_all(&out).await?;
    }
    got
}

/// Waits until the socket has bytes (read into the entry), a busy phase wakes the connection, or
/// another client's command left it a delivery (a message, the reply that unblocks it).
///
/// The read goes through `AsyncRead::poll_read`, which takes a read that did not fill the buffer
/// as proof the socket is drained (epoll is edge-triggered: bytes that arrive later raise a new
/// event), so an unpipelined request costs one `read`, as in Redis, instead of a second one that
/// only learns `EAGAIN` (`try_read_buf` keeps the readiness until it sees `EAGAIN`).
async fn wait(entry: &Entry, outbox: &crate::outbox::Outbox, stream: &mut TcpStream) -> std::io::Result<bool> {
    use tokio::io::{AsyncRead, ReadBuf};
    std::future::poll_fn(|cx| {
        if entry.wake.poll_signal(cx).is_ready() || outbox.signal.poll_signal(cx).is_ready() {
            return Poll::Ready(Ok(true));
        }
        // Borrowed only while polled: a busy phase reads into the entry while the task waits.
        let mut input = entry.input.borrow_mut();
        input.reserve(READ_CHUNK);
        let mut buf = ReadBuf::uninit(input.spare_capacity_mut());
        match std::pin::Pin::new(&mut *stream).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) => {
                let n = buf.filled().len();
                // SAFETY: `poll_read` initialised the first `n` bytes of the spare capacity
                // (`ReadBuf::filled`), which are the bytes right after the buffer's length.
                unsafe { bytes::BufMut::advance_mut(&mut *input, n) };
                Poll::Ready(Ok(n > 0))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}
