//! `limitlab serve`: the emulator as a Redis server (see [`limitlab_server`]). The first line on stdout
//! says where it listens (`listening on 127.0.0.1:PORT`, every port of a cluster on that one line,
//! separated by spaces), so a test harness can start it with `--port 0` and read the port. SIGINT and
//! SIGTERM stop it between commands (a script still running is killed, `DEBUG SLEEP` cut short): the
//! one under way finishes and is answered, then it prints
//! `received SIGINT, stopped after the command under way` and exits with status 0.
use std::io::Write;
use std::net::IpAddr;

use limitlab_emulator::clock::{Millis, DEFAULT_START};
use limitlab_emulator::{Error, Result};
use limitlab_server::{Options, Protected, DEFAULT_MAX_CLIENTS};

/// Redis's port, serve's when `--port` is not given.
pub const DEFAULT_PORT: u16 = 6379;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The port to listen on (0: any free port, printed on the first line). With --cluster N, N
    /// ports from this one. Without it, Redis's 6379, unless another server answers there on
    /// 127.0.0.1 or ::1 (a local Redis): then serve refuses to start and asks for --port.
    #[arg(long)]
    pub port: Option<u16>,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Start the virtual clock here (unix ms); default 2024-01-01T00:00:00Z (1704067200000).
    #[arg(long, value_name = "UNIX_MS")]
    pub at: Option<i64>,
    /// `virtual`: time moves only with CLOCK.ADVANCE / CLOCK.SET; `wall`: it follows the machine's
    /// clock (CLOCK.ADVANCE then shifts it).
    #[arg(long, default_value = "virtual", value_parser = ["virtual", "wall"])]
    pub clock: String,
    /// Answer as an N-master Redis Cluster on N ports (MOVED, CROSSSLOT, CLUSTER SLOTS/SHARDS/NODES).
    #[arg(long, value_name = "N")]
    pub cluster: Option<usize>,
    /// The password every connection must give with AUTH or HELLO ... AUTH first.
    #[arg(long, value_name = "PASSWORD")]
    pub requirepass: Option<String>,
    /// Kill a script after this many loop iterations and function calls (default: none, as in Redis:
    /// a long script is stopped with SCRIPT KILL or FUNCTION KILL from another connection).
    #[arg(long, value_name = "N")]
    pub script_budget: Option<u64>,
    /// Refuse connections beyond this many ("max number of clients reached"); CONFIG SET
    /// maxclients changes it while running.
    #[arg(long, default_value_t = DEFAULT_MAX_CLIENTS)]
    pub maxclients: usize,
    /// Who may run DEBUG (Redis's `enable-debug-command`): `no` (Redis's default: refused with
    /// Redis's text), `yes`, or `local` (connections from 127.0.0.1 or ::1).
    #[arg(long, value_name = "no|yes|local", default_value = "no", value_parser = ["no", "yes", "local"])]
    pub enable_debug_command: String,
    /// Exit as soon as standard input reaches its end. A test harness starts the server with stdin a
    /// pipe it never writes to: when the harness exits, even killed by SIGKILL, the system closes
    /// the pipe and the server goes too, so no server outlives its test run.
    #[arg(long)]
    pub exit_with_stdin: bool,
}

pub fn plan(a: Args) -> Result<Options> {
    let invalid = |field: &str, reason: String| Error::Invalid { context: "serve".into(), field: field.into(), reason };
    let at = a.at.unwrap_or(DEFAULT_START.0);
    if !(0..=limitlab_engine::limiter::MAX_ARG as i64).contains(&at) {
        return Err(invalid(
            "--at",
            format!("must be a unix time in ms from 0 to {}, got {at}", limitlab_engine::limiter::MAX_ARG),
        ));
    }
    if let Some(n) = a.cluster {
        if !(1..=64).contains(&n) {
            return Err(invalid("--cluster", format!("must be 1 to 64 masters, got {n}")));
        }
        let port = a.port.unwrap_or(DEFAULT_PORT);
        if port != 0 && port as usize + n - 1 > u16::MAX as usize {
            return Err(invalid("--port", format!("{n} ports from {port} run past 65535")));
        }
    }
    if a.script_budget == Some(0) {
        return Err(invalid("--script-budget", "must be at least 1".into()));
    }
    if a.maxclients == 0 {
        return Err(invalid("--maxclients", "must be at least 1".into()));
    }
    if a.port.is_none() {
        if let Some(other) = answering(DEFAULT_PORT) {
            return Err(invalid(
                "--port",
                format!(
                    "not given, and Redis's default {DEFAULT_PORT} is taken: another server answers on {other} \
                     (a local Redis?); pass --port N, or --port 0 for any free port"
                ),
            ));
        }
    }
    Ok(Options {
        bind: a.bind,
        port: a.port.unwrap_or(DEFAULT_PORT),
        at: Millis(at),
        wall: a.clock == "wall",
        cluster: a.cluster,
        requirepass: a.requirepass.map(String::into_bytes),
        script_budget: a.script_budget,
        max_clients: a.maxclients,
        enable_debug_command: match a.enable_debug_command.as_str() {
            "yes" => Protected::Yes,
            "local" => Protected::Local,
            _ => Protected::No,
        },
    })
}

/// The first loopback address (127.0.0.1, then ::1) where a server accepts a connection on `port`
/// within 300 ms. Binding 127.0.0.1 beside a Redis on ::1 alone succeeds, and a client of
/// `localhost:6379` would then reach either, so a bind that works is not enough.
pub fn answering(port: u16) -> Option<std::net::SocketAddr> {
    let addrs = [IpAddr::from([127, 0, 0, 1]), IpAddr::from(std::net::Ipv6Addr::LOCALHOST)];
    addrs
        .into_iter()
        .map(|ip| std::net::SocketAddr::new(ip, port))
        .find(|a| std::net::TcpStream::connect_timeout(a, std::time::Duration::from_millis(300)).is_ok())
}

/// `--exit-with-stdin`: a thread that reads stdin to its end (or a read error), then ends the process.
/// The server keeps nothing on disk, so there is nothing to save or flush first.
pub fn exit_when_stdin_closes() {
    std::thread::spawn(|| {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        // Not eprintln!, which panics (and so never exits) when stderr's reader is gone too, as it
        // is when the parent that held both pipes died.
        let _ = writeln!(std::io::stderr(), "limitlab serve: standard input closed (--exit-with-stdin), exiting");
        std::process::exit(0);
    });
}

pub fn run(opts: Options, out: &mut dyn Write) -> Result<()> {
    let mut failed = None;
    let why = limitlab_server::run(opts, |addrs| {
        let list: Vec<String> = addrs.iter().map(|a| a.to_string()).collect();
        if let Err(source) = writeln!(out, "listening on {}", list.join(" ")).and_then(|_| out.flush()) {
            failed = Some(Error::Io { path: "<stdout>".into(), source });
        }
    })?;
    if let (limitlab_server::Stopped::Signal(name), None) = (why, &failed) {
        // One line, and exit status 0: a stop asked for is not a failure. A closed stdout (the
        // harness gone) is no reason to fail either.
        let _ = writeln!(out, "received {name}, stopped after the command under way").and_then(|_| out.flush());
    }
    failed.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_another_server_holds_on_either_loopback_address_is_found() {
        for ip in ["127.0.0.1", "::1"] {
            // No ::1 on this machine: nothing to hold there.
            let Ok(held) = std::net::TcpListener::bind((ip, 0)) else { continue };
            let port = held.local_addr().expect("bound").port();
            assert_eq!(answering(port).map(|a| a.ip().to_string()), Some(ip.to_string()), "{ip}");
        }
    }
}
