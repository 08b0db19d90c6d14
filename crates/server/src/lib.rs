//! limitlab-server (`limitlab serve`): the emulator as a Redis 7.0 server on TCP, with a virtual clock that clients move
//! with `CLOCK.ADVANCE`, so an application in any language can test its rate limiter against it.
//!
//! Built as mini-redis is, on tokio, but on one thread: the emulator is not `Send`, and Redis itself
//! runs commands one at a time. Every connection is a task on a current-thread runtime; a task reads
//! what its client sent, runs every whole request in it against the shared emulator (no other task
//! runs meanwhile, so a script is atomic against every client), and writes all their replies at once.
//!
//! - [`parse`]: requests off the wire (multibulk and inline), with Redis's limits and protocol errors;
//! - [`resp`]: replies in RESP2 or RESP3;
//! - [`connection`]: one client's loop; [`conn`]: its state;
//! - [`commands`]: what the server answers itself (HELLO, AUTH, QUIT, RESET, SHUTDOWN, DEBUG SLEEP,
//!   CLOCK.*) and the order of Redis's checks before a command reaches the emulator;
//! - [`busy`]: while a script runs past `busy-reply-threshold`, the other clients answered from the
//!   emulator's count hook (BUSY, SCRIPT KILL, FUNCTION KILL, SHUTDOWN NOSAVE), as Redis does;
//! - [`cluster`]: `--cluster N`, N ports answering as an N-master Redis Cluster (one emulator per node);
//! - [`client`]: a small blocking RESP client, for `limitlab cli -h HOST -p PORT`.
//!
//! Nothing is ever written to disk.
pub mod busy;
pub mod client;
pub mod cluster;
pub mod commands;
pub mod conn;
pub mod connection;
pub mod outbox;
pub mod parse;
pub mod resp;
pub mod state;

use std::cell::{Cell, RefCell};
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

use limitlab_emulator::clock::{Millis, VirtualClock};
use limitlab_emulator::Emulator;
use limitlab_emulator::{Error, Result};
pub use state::{Node, Server};

/// Redis's default `maxclients`.
pub const DEFAULT_MAX_CLIENTS: usize = 10_000;

/// Redis's text when DEBUG is refused (`enable-debug-command`).
pub const DEBUG_REFUSED: &str = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.";

/// Who may run a protected command (Redis's `enable-debug-command`: `no`, `yes`, `local`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protected {
    /// Nobody (Redis's default).
    #[default]
    No,
    /// Every connection.
    Yes,
    /// Connections from 127.0.0.1 or ::1.
    Local,
}

impl Protected {
    /// As CONFIG GET shows it.
    pub fn name(self) -> &'static str {
        match self {
            Protected::No => "no",
            Protected::Yes => "yes",
            Protected::Local => "local",
        }
    }
}

/// Set by the SIGINT/SIGTERM handler, which runs even while the one thread is held by a script
/// (whose count hook then kills it) or DEBUG SLEEP (which sleeps in slices and looks): the
/// server stops within a second whatever it is doing.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

/// Whether SIGINT or SIGTERM arrived since the server started.
pub fn signalled() -> bool {
    SIGNALLED.load(Ordering::Relaxed)
}

/// Installs the handler that sets [`SIGNALLED`] (once per process; tokio's own runs beside it).
fn watch_signals() -> Result<()> {
    static INSTALLED: std::sync::OnceLock<std::result::Result<(), String>> = std::sync::OnceLock::new();
    let done = INSTALLED.get_or_init(|| {
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: the action only stores to an atomic, which is async-signal-safe, and
            // allocates nothing.
            unsafe { signal_hook_registry::register(sig, || SIGNALLED.store(true, Ordering::Relaxed)) }
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    done.clone().map_err(|e| io_err("signal handlers".into(), std::io::Error::other(e)))
}

/// How a server is started.
#[derive(Clone, Debug)]
pub struct Options {
    /// The address to listen on (127.0.0.1 unless told otherwise).
    pub bind: IpAddr,
    /// The first port; 0 lets the system pick (each node its own).
    pub port: u16,
    /// The virtual clock's start (unix ms).
    pub at: Millis,
    /// Follow the machine's clock instead of a virtual one (CLOCK.ADVANCE then shifts it).
    pub wall: bool,
    /// `Some(n)`: n ports answering as an n-master cluster.
    pub cluster: Option<usize>,
    /// The default user's password (Redis's `requirepass`).
    pub requirepass: Option<Vec<u8>>,
    /// The script budget (loop iterations and calls) of every node's emulator; None: no budget, as in
    /// Redis (SCRIPT KILL and FUNCTION KILL stop a long script).
    pub script_budget: Option<u64>,
    /// Connections beyond this many are refused with Redis's text (CONFIG SET maxclients changes it).
    pub max_clients: usize,
    /// Who may run DEBUG (Redis's `enable-debug-command`).
    pub enable_debug_command: Protected,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            bind: IpAddr::from([127, 0, 0, 1]),
            port: 6379,
            at: limitlab_emulator::clock::DEFAULT_START,
            wall: false,
            cluster: None,
            requirepass: None,
            script_budget: None,
            max_clients: DEFAULT_MAX_CLIENTS,
            enable_debug_command: Protected::No,
        }
    }
}

fn io_err(what: String, source: std::io::Error) -> Error {
    Error::Io { path: what.into(), source }
}

/// Why [`run`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// A client sent SHUTDOWN.
    Shutdown,
    /// The process received this signal (`SIGINT`, `SIGTERM`): the command under way finished
    /// first, except a script still running (killed at its next count-hook tick) and `DEBUG
    /// SLEEP` (which ends its sleep), so that the server stops within a second.
    Signal(&'static str),
}

/// Binds the ports, calls `ready` with the addresses listened on, and serves until SHUTDOWN or
/// SIGINT/SIGTERM.
pub fn run(opts: Options, ready: impl FnOnce(&[SocketAddr])) -> Result<Stopped> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| io_err("the tokio runtime".into(), e))?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, serve(opts, ready))
}

async fn serve(opts: Options, ready: impl FnOnce(&[SocketAddr])) -> Result<Stopped> {
    let n = opts.cluster.unwrap_or(1);
    let mut listeners = Vec::with_capacity(n);
    for i in 0..n {
        let port = if opts.port == 0 { 0 } else { opts.port.checked_add(i as u16).unwrap_or(0) };
        let addr = SocketAddr::new(opts.bind, port);
        let l = tokio::net::TcpListener::bind(addr).await.map_err(|e| io_err(format!("listening on {addr}"), e))?;
        listeners.push(l);
    }
    let addrs: Vec<SocketAddr> = listeners
        .iter()
        .map(|l| l.local_addr())
        .collect::<std::io::Result<_>>()
        .map_err(|e| io_err("local address".into(), e))?;
    let clock = VirtualClock::starting_at(opts.at);
    let ranges = cluster::slot_ranges(n);
    let nodes = addrs
        .iter()
        .enumerate()
        .map(|(i, &addr)| {
            let mut emu = Emulator::with_clock(clock.clone());
            emu.set_cluster(opts.cluster.is_some());
            emu.hide_default_client();
            emu.set_port(addr.port());
            emu.declare_server_commands(&commands::own_names());
            emu.set_wall_offset(opts.wall.then_some(0));
            // As in Redis, a script runs until it ends or a client kills it (SCRIPT KILL, FUNCTION
            // KILL, SHUTDOWN NOSAVE: busy.rs), unless a budget is given.
            emu.set_script_budget(opts.script_budget.unwrap_or(u64::MAX));
            emu.enable_blocking();
            emu.set_stop_flag(Some(&SIGNALLED));
            {
                let mut core = emu.core();
                let settings = &mut core.settings;
                settings.force("maxclients", opts.max_clients.to_string().into_bytes());
                settings.force("enable-debug-command", opts.enable_debug_command.name().as_bytes().to_vec());
                // The listener is bound once: CONFIG SET port/bind are refused as Redis refuses an
                // immutable parameter, rather than answered OK with nothing moved.
                settings.fix("port");
                settings.fix("bind");
            }
            if let Some(p) = &opts.requirepass {
                // The default user's password, as `requirepass` in Redis's configuration.
                let _ = emu.execute(&[b"CONFIG", b"SET", b"requirepass", p]);
            }
            Node {
                emu: RefCell::new(emu),
                addr,
                id: cluster::node_id(i),
                slots: ranges[i],
                outboxes: RefCell::new(Default::default()),
                max_clients: Cell::new(opts.max_clients),
                clients: Cell::new(0),
            }
        })
        .collect();
    let server = Rc::new(Server {
        nodes,
        cluster: opts.cluster.is_some(),
        clock,
        wall_offset: opts.wall.then(|| Cell::new(0)),
        requirepass: opts.requirepass.clone(),
        debug: opts.enable_debug_command,
        clients: Cell::new(0),
        closed_since_collect: Cell::new(0),
        stopping: Cell::new(false),
        stop: tokio::sync::Notify::new(),
        busy: busy::Busy::default(),
        timer_kick: tokio::sync::Notify::new(),
    });
    for node in &server.nodes {
        node.emu.borrow_mut().set_busy_handler(Some(busy::Busy::handler(&server)));
    }
    server.sync_clock();
    watch_signals()?;
    SIGNALLED.store(false, Ordering::Relaxed);
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt()).map_err(|e| io_err("SIGINT handler".into(), e))?;
    let mut terminate = signal(SignalKind::terminate()).map_err(|e| io_err("SIGTERM handler".into(), e))?;
    ready(&addrs);
    for (node, l) in listeners.into_iter().enumerate() {
        server.busy.add_listener(node, std::os::fd::AsRawFd::as_raw_fd(&l));
        tokio::task::spawn_local(accept_loop(server.clone(), node, l));
    }
    if opts.wall {
        tokio::task::spawn_local(wall_timer(server.clone()));
    }
    let why = {
        let mut stop = std::pin::pin!(server.stop.notified());
        std::future::poll_fn(|cx| {
            use std::future::Future;
            use std::task::Poll;
            if stop.as_mut().poll(cx).is_ready() {
                Poll::Ready(Stopped::Shutdown)
            } else if interrupt.poll_recv(cx).is_ready() {
                Poll::Ready(Stopped::Signal("SIGINT"))
            } else if terminate.poll_recv(cx).is_ready() {
                Poll::Ready(Stopped::Signal("SIGTERM"))
            } else {
                Poll::Pending
            }
        })
        .await
    };
    if why != Stopped::Shutdown {
        // The signal is seen between commands: the one under way has finished; its connection's
        // task gets to write the reply before the tasks are dropped.
        server.stopping.set(true);
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
    }
    Ok(why)
}

/// `--clock wall`: time passes by itself, so blocked clients time out and keys expire (with their
/// notifications) without a command to notice; this wakes for the next deadline, or every 100 ms.
async fn wall_timer(server: Rc<Server>) {
    loop {
        let wait = std::time::Duration::from_millis(server.next_wake_ms());
        {
            let sleep = std::pin::pin!(tokio::time::sleep(wait));
            let kick = std::pin::pin!(server.timer_kick.notified());
            let mut sleep = sleep;
            let mut kick = kick;
            std::future::poll_fn(|cx| {
                use std::future::Future;
                if sleep.as_mut().poll(cx).is_ready() || kick.as_mut().poll(cx).is_ready() {
                    std::task::Poll::Ready(())
                } else {
                    std::task::Poll::Pending
                }
            })
            .await;
        }
        if server.stopping.get() {
            return;
        }
        server.sync_clock();
        server.tick();
    }
}

async fn accept_loop(server: Rc<Server>, node: usize, listener: tokio::net::TcpListener) {
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            // Out of descriptors and the like: Redis logs and goes on accepting.
            Err(_) => {
                tokio::task::yield_now().await;
                continue;
            }
        };
        if server.stopping.get() {
            return;
        }
        let _ = stream.set_nodelay(true);
        if !server.nodes[node].admit() {
            tokio::task::spawn_local(connection::refuse(stream));
            continue;
        }
        server.busy.adopt(&stream, server.requirepass.is_none());
        tokio::task::spawn_local(connection::handle(server.clone(), node, stream));
    }
}
