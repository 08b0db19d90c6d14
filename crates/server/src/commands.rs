//! One request, checked in the order Redis 7.0's `processCommand` checks it (unknown command, arity,
//! authentication, cluster redirection), then answered here (the commands that belong to a
//! connection or to the server: HELLO, AUTH, QUIT, RESET, SHUTDOWN, DEBUG SLEEP, CLUSTER, ASKING,
//! READONLY, READWRITE, and limitlab's CLOCK.ADVANCE/SET/GET) or by the node's emulator.
use super::cluster;
use super::conn::{Conn, MUTE_OFF, MUTE_SKIPPING, MUTE_SKIP_NEXT};
use super::outbox;
use super::resp;
use super::state::Server;
use limitlab_emulator::cmd;
use limitlab_emulator::Reply;

/// The commands the server answers itself.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Own {
    Hello,
    Auth,
    Quit,
    Reset,
    Shutdown,
    Debug,
    Clock,
    Cluster,
    Asking,
    ReadOnly,
    ReadWrite,
    Sync,
    Replconf,
}

/// `(command, its name as errors print it, Redis arity, allowed before AUTH)`.
const OWN: &[(Own, &str, i32, bool)] = &[
    (Own::Hello, "hello", -1, true),
    (Own::Auth, "auth", -2, true),
    (Own::Quit, "quit", -1, true),
    (Own::Reset, "reset", 1, true),
    (Own::Shutdown, "shutdown", -1, false),
    (Own::Debug, "debug", -2, false),
    (Own::Clock, "clock.advance", -1, false),
    (Own::Clock, "clock.set", -1, false),
    (Own::Clock, "clock.get", -1, false),
    (Own::Cluster, "cluster", -2, false),
    (Own::Asking, "asking", 1, false),
    (Own::ReadOnly, "readonly", 1, false),
    (Own::ReadWrite, "readwrite", 1, false),
    (Own::Sync, "sync", 1, false),
    (Own::Sync, "psync", -3, false),
    (Own::Replconf, "replconf", -1, false),
];

fn own(name: &[u8]) -> Option<(Own, &'static str, i32, bool)> {
    OWN.iter().find(|(_, n, _, _)| name.eq_ignore_ascii_case(n.as_bytes())).copied()
}

/// The names of the commands the server answers itself (COMMAND lists them).
pub fn own_names() -> Vec<&'static str> {
    OWN.iter().map(|(_, n, _, _)| *n).collect()
}

/// The name (as errors print it) and arity of a command the server answers itself.
pub fn own_command(name: &[u8]) -> Option<(&'static str, i32)> {
    own(name).map(|(_, n, arity, _)| (n, arity))
}

/// Replies of more elements than this are streamed.
const STREAM_OVER: usize = 1024;

const NOAUTH: &str = "NOAUTH Authentication required.";
const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// Runs one request of `conn`, appending its reply (if any) to `out`, or returning a reply of more
/// than `STREAM_OVER` elements for the connection to stream after what `out` holds.
#[inline]
pub fn execute(server: &Server, conn: &mut Conn, args: &[&[u8]], out: &mut Vec<u8>) -> Option<Reply> {
    if conn.mute != 0 {
        return execute_muted(server, conn, args, out);
    }
    execute_request(server, conn, args, out)
}

/// [`execute`] under CLIENT REPLY OFF or SKIP: the command runs, its reply is not sent (pushes are).
#[cold]
fn execute_muted(server: &Server, conn: &mut Conn, args: &[&[u8]], out: &mut Vec<u8>) -> Option<Reply> {
    if conn.mute & MUTE_SKIP_NEXT != 0 {
        conn.mute = (conn.mute & !MUTE_SKIP_NEXT) | MUTE_SKIPPING;
    }
    let r = execute_request(server, conn, args, out);
    let muted = conn.mute & (MUTE_OFF | MUTE_SKIPPING) != 0;
    conn.mute &= !MUTE_SKIPPING;
    if muted {
        None
    } else {
        r
    }
}

fn execute_request(server: &Server, conn: &mut Conn, args: &[&[u8]], out: &mut Vec<u8>) -> Option<Reply> {
    server.sync_clock();
    if let Some((which, name, arity, no_auth)) = own(args[0]) {
        if !cmd::arity_ok(arity, args.len()) {
            return reply(conn, out, &cmd::arity_error(name));
        }
        if which == Own::Cluster {
            if let Err(e) = cluster::check_subcommand(args) {
                return reply(conn, out, &e);
            }
        }
        // Redis checks its protected commands right after the arity, before authentication.
        if which == Own::Debug && !server.debug_allowed(is_local(conn)) {
            server.nodes[conn.node].emu.borrow_mut().refuse_in_transaction(conn.client);
            return reply(conn, out, &Reply::err(crate::DEBUG_REFUSED));
        }
        if !no_auth && needs_auth(server, conn) {
            return reply(conn, out, &Reply::err(NOAUTH));
        }
        if !no_auth {
            let refused = server.nodes[conn.node].emu.borrow_mut().acl_refusal(conn.client, args);
            if let Some(r) = refused {
                server.nodes[conn.node].emu.borrow_mut().refuse_in_transaction(conn.client);
                return reply(conn, out, &r);
            }
        }
        if conn.subscribed && !conn.resp3 && !matches!(which, Own::Quit | Own::Reset) {
            return reply(conn, out, &subscribed_refusal(name));
        }
        let in_multi = server.nodes[conn.node].emu.borrow().in_transaction(conn.client);
        if in_multi && !matches!(which, Own::Quit | Own::Reset) {
            server.nodes[conn.node].emu.borrow_mut().refuse_in_transaction(conn.client);
            // SHUTDOWN is one of Redis's `no-multi` commands; the others Redis would queue.
            let r = if matches!(which, Own::Shutdown | Own::Sync) {
                Reply::err("ERR Command not allowed inside a transaction")
            } else {
                Reply::Error(format!("ERR '{name}' is not allowed in a transaction by limitlab serve"))
            };
            return reply(conn, out, &r);
        }
        let r = run_own(server, conn, which, args, out);
        monitor_own(server, conn, which, args, out);
        return r;
    }
    if needs_auth(server, conn) {
        let r = match cmd::lookup(args[0]) {
            None => cmd::unknown_command(args),
            Some(spec) if !spec.arity_ok(args.len()) => cmd::wrong_arity(spec),
            Some(_) => Reply::err(NOAUTH),
        };
        return reply(conn, out, &r);
    }
    if server.cluster {
        if let Some(r) = cluster::redirect(server, conn, args) {
            server.nodes[conn.node].emu.borrow_mut().refuse_in_transaction(conn.client);
            return reply(conn, out, &r);
        }
    }
    if conn.subscribed && !conn.resp3 {
        // The ACL is checked before the Pub/Sub context is.
        if cmd::lookup(args[0]).is_some_and(|s| s.arity_ok(args.len())) {
            let refused = server.nodes[conn.node].emu.borrow_mut().acl_refusal(conn.client, args);
            if let Some(r) = refused {
                return reply(conn, out, &r);
            }
        }
        if let Some(r) = subscribed_context(args) {
            return reply(conn, out, &r);
        }
    }
    if args[0].len() == 6
        && args.len() == 3
        && args[0].eq_ignore_ascii_case(b"client")
        && args[1].eq_ignore_ascii_case(b"reply")
    {
        return client_reply(server, conn, args, out);
    }
    let node = &server.nodes[conn.node];
    let mut emu = node.emu.borrow_mut();
    let r = emu.execute_as_with(conn.client, args, conn.resp3);
    if (args[0].len() == 6 && args[0].eq_ignore_ascii_case(b"config"))
        || (args[0].len() == 4 && args[0].eq_ignore_ascii_case(b"exec"))
    {
        // CONFIG SET maxclients (alone or in a transaction) applies to the next connection.
        let max = emu.core().settings.int("maxclients");
        node.max_clients.set(max.clamp(1, u32::MAX as i64) as usize);
    }
    if emu.pending() {
        drop(emu);
        return after_effects(server, conn, r, out);
    }
    drop(emu);
    // A script that ran long served the other clients meanwhile (busy.rs); SHUTDOWN NOSAVE then.
    if server.busy.after_command(server, conn) {
        return None;
    }
    // A reply of many elements (LRANGE, HGETALL, EXEC, a script's table) may hold millions: the
    // connection streams it to the socket (resp::Stream) after the replies before it.
    if resp::larger_than(&r, STREAM_OVER) {
        Some(r)
    } else {
        reply(conn, out, &r)
    }
}

/// Shows a command the server answered itself to the MONITOR clients, its passwords redacted as
/// Redis redacts them (AUTH's arguments, HELLO's AUTH pair), and routes what that left.
fn monitor_own(server: &Server, conn: &mut Conn, which: Own, args: &[&[u8]], out: &mut Vec<u8>) {
    let mut dels = Vec::new();
    {
        let mut emu = server.nodes[conn.node].emu.borrow_mut();
        let mut shown: Vec<&[u8]> = args.to_vec();
        match which {
            Own::Auth => shown[1..].iter_mut().for_each(|a| *a = b"(redacted)"),
            Own::Hello => {
                if let Some(i) = shown.iter().position(|a| a.eq_ignore_ascii_case(b"auth")) {
                    if i + 2 < shown.len() {
                        shown[i + 1] = b"(redacted)";
                        shown[i + 2] = b"(redacted)";
                    }
                }
            }
            _ => {}
        }
        emu.feed_monitors(conn.client, &shown);
        if !emu.pending() {
            return;
        }
        emu.after_command(conn.client, &mut dels);
    }
    let node = conn.node;
    outbox::route(server, node, Some(conn), dels, out);
}

/// Writes `r` to `out` whole: nothing is left to stream.
#[inline]
fn reply(conn: &Conn, out: &mut Vec<u8>, r: &Reply) -> Option<Reply> {
    // CLIENT REPLY OFF or SKIP: nothing is sent.
    if conn.mute & (MUTE_OFF | MUTE_SKIPPING) == 0 {
        resp::write(r, conn.resp3, out);
    }
    None
}

/// After a command that left deliveries, blocked its client, or runs while clients are blocked:
/// blocked clients whose keys are now ready are served, every delivery is routed (this
/// connection's own pushes go before its reply), and the reply is sent unless the client blocked
/// or answered with pushes only.
#[cold]
fn after_effects(server: &Server, conn: &mut Conn, r: Reply, out: &mut Vec<u8>) -> Option<Reply> {
    let mut dels = Vec::new();
    let (silent, blocked, subscribed) = {
        let mut emu = server.nodes[conn.node].emu.borrow_mut();
        let silent = emu.after_command(conn.client, &mut dels);
        (silent, emu.is_blocked(conn.client), emu.is_subscribed(conn.client))
    };
    conn.blocked = blocked;
    conn.subscribed = subscribed;
    let closing = dels.iter().any(|(to, d)| *to == conn.client && *d == limitlab_emulator::Deliver::Close);
    let node = conn.node;
    // A kill of this very connection closes it after its reply.
    let dels: Vec<_> =
        dels.into_iter().filter(|(to, d)| !(*to == conn.client && *d == limitlab_emulator::Deliver::Close)).collect();
    // A MONITOR line of this connection's own command follows its reply.
    let (own_lines, dels): (Vec<_>, Vec<_>) = dels.into_iter().partition(|(to, d)| {
        *to == conn.client && matches!(d, limitlab_emulator::Deliver::Raw(_) | limitlab_emulator::Deliver::Late(_))
    });
    outbox::route(server, node, Some(conn), dels, out);
    if blocked {
        server.timer_kick.notify_one();
    }
    let r = if silent {
        None
    } else if resp::larger_than(&r, STREAM_OVER) {
        Some(r)
    } else {
        reply(conn, out, &r)
    };
    for (_, d) in own_lines {
        outbox::write_delivery(conn, d, out);
    }
    if closing {
        conn.close = true;
    }
    r
}

/// Redis's refusal of a command other than the Pub/Sub ones, PING, QUIT and RESET from a RESP2
/// client in Pub/Sub mode.
fn subscribed_refusal(name: &str) -> Reply {
    Reply::Error(format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    ))
}

/// A RESP2 client in Pub/Sub mode: PING answers `["pong", message]`, the (un)subscribe commands run,
/// anything else is refused (`None`: run it).
fn subscribed_context(args: &[&[u8]]) -> Option<Reply> {
    const ALLOWED: &[&str] = &["subscribe", "ssubscribe", "unsubscribe", "sunsubscribe", "psubscribe", "punsubscribe"];
    let name = args[0];
    if ALLOWED.iter().any(|a| name.eq_ignore_ascii_case(a.as_bytes())) {
        return None;
    }
    let spec = cmd::lookup(name)?;
    if !spec.arity_ok(args.len()) {
        return None;
    }
    if spec.name == "ping" {
        if args.len() > 2 {
            return None;
        }
        let msg = args.get(1).map_or(Vec::new(), |m| m.to_vec());
        return Some(Reply::Array(vec![Reply::bulk(b"pong".to_vec()), Reply::Bulk(msg)]));
    }
    let full = match cmd::command::subcommands(spec.name) {
        Some(subs) if args.len() > 1 => subs
            .iter()
            .find(|s| args[1].eq_ignore_ascii_case(s.name.as_bytes()))
            .map_or(spec.name.to_string(), |s| format!("{}|{}", spec.name, s.name)),
        _ => spec.name.to_string(),
    };
    if spec.name == "exec" {
        // Redis's rejectCommand on EXEC ends the transaction with the reason.
        let Reply::Error(e) = subscribed_refusal(&full) else { unreachable!("an error") };
        return Some(Reply::Error(format!("EXECABORT Transaction discarded because of: {}", &e[4..])));
    }
    Some(subscribed_refusal(&full))
}

/// CLIENT REPLY ON|OFF|SKIP: ON answers OK; OFF and SKIP answer nothing.
fn client_reply(server: &Server, conn: &mut Conn, args: &[&[u8]], out: &mut Vec<u8>) -> Option<Reply> {
    let mode = args[2];
    if mode.eq_ignore_ascii_case(b"on") {
        conn.mute = 0;
        return reply(conn, out, &Reply::ok());
    }
    if mode.eq_ignore_ascii_case(b"off") {
        conn.mute |= MUTE_OFF;
        return None;
    }
    if mode.eq_ignore_ascii_case(b"skip") {
        if conn.mute & MUTE_OFF == 0 {
            conn.mute |= MUTE_SKIP_NEXT;
        }
        return None;
    }
    let _ = server;
    reply(conn, out, &Reply::err(cmd::SYNTAX))
}

fn run_own(server: &Server, conn: &mut Conn, which: Own, args: &[&[u8]], out: &mut Vec<u8>) -> Option<Reply> {
    let r = match which {
        Own::Hello => hello(server, conn, args),
        Own::Auth => auth(server, conn, args),
        Own::Quit => {
            conn.close = true;
            Reply::ok()
        }
        Own::Reset => {
            // Redis's clearClientConnectionState: the client (and its id) stays.
            server.nodes[conn.node].emu.borrow_mut().reset_client(conn.client);
            conn.resp3 = false;
            conn.authed = !server.nodes[conn.node].emu.borrow().auth_required(conn.client);
            conn.subscribed = false;
            conn.mute = 0;
            Reply::Status("RESET".into())
        }
        Own::Shutdown => {
            let ok = args[1..]
                .iter()
                .all(|a| ["nosave", "save", "now", "force"].iter().any(|f| a.eq_ignore_ascii_case(f.as_bytes())));
            if args.len() == 2 && args[1].eq_ignore_ascii_case(b"abort") {
                Reply::err("ERR No shutdown in progress.")
            } else if !ok {
                Reply::err(cmd::SYNTAX)
            } else {
                // Redis exits without replying: the client sees the connection close.
                server.stopping.set(true);
                server.stop.notify_one();
                conn.close = true;
                return None;
            }
        }
        Own::Debug => debug(args),
        Own::Clock => {
            let emu = server.nodes[conn.node].emu.borrow();
            let owned: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
            let r = limitlab_emulator::clock_commands::clock_command(&owned, &emu)
                .unwrap_or_else(|| cmd::unknown_command(args));
            drop(emu);
            server.clock_moved();
            // Time moved: blocked clients time out and keys expire, with their notifications.
            server.tick();
            r
        }
        Own::Cluster => {
            if !server.cluster {
                Reply::err("ERR This instance has cluster support disabled")
            } else {
                cluster::command(server, conn, args, out);
                return None;
            }
        }
        Own::Sync => return sync(server, conn, args, out),
        // ACK and GETACK get no reply.
        Own::Replconf => replconf(conn, args)?,
        Own::Asking | Own::ReadOnly | Own::ReadWrite => {
            if server.cluster {
                Reply::ok()
            } else {
                Reply::err("ERR This instance has cluster support disabled")
            }
        }
    };
    reply(conn, out, &r)
}

/// Whether `conn` must authenticate first (Redis's `authRequired`). A connection that did (or
/// needed not) stays so; one that did not asks the emulator again, since CONFIG SET requirepass or
/// ACL SETUSER default may have opened the door since.
fn needs_auth(server: &Server, conn: &mut Conn) -> bool {
    if conn.authed {
        return false;
    }
    conn.authed = !server.nodes[conn.node].emu.borrow().auth_required(conn.client);
    !conn.authed
}

/// AUTH / HELLO AUTH against the ACL users; the connection is that user's when it succeeds.
fn password_ok(server: &Server, conn: &mut Conn, user: &[u8], pass: &[u8], command: &'static str) -> bool {
    let ok = server.nodes[conn.node].emu.borrow_mut().authenticate(conn.client, user, pass, command);
    if ok {
        conn.authed = true;
    }
    ok
}

/// SYNC, or PSYNC (always answered `+FULLRESYNC`): the connection becomes a replica. It is sent
/// the snapshot now, then the replication stream (`limitlab_emulator::propagate`) as the
/// emulator hands it over; what it sends from then on (REPLCONF ACK) gets no reply, as from a
/// replica in Redis.
fn sync(server: &Server, conn: &mut Conn, args: &[&[u8]], out: &mut Vec<u8>) -> Option<Reply> {
    let node = &server.nodes[conn.node];
    if server.cluster {
        return reply(conn, out, &Reply::err("ERR limitlab serve does not replicate in cluster mode"));
    }
    let mut emu = node.emu.borrow_mut();
    if emu.is_replica(conn.client) {
        return None;
    }
    if emu.core().master.is_some() {
        return reply(conn, out, &Reply::err("NOMASTERLINK Can't SYNC while not connected with my master"));
    }
    let psync = args[0].eq_ignore_ascii_case(b"psync");
    let ip = conn.addrs.as_ref().and_then(|(peer, _)| peer.rsplit_once(':')).map_or("", |(ip, _)| ip);
    let ip = ip.trim_start_matches('[').trim_end_matches(']').to_string();
    let snapshot = emu.attach_replica(conn.client, psync, &ip, conn.replica_port);
    let mut dels = Vec::new();
    emu.after_command(conn.client, &mut dels);
    drop(emu);
    out.extend_from_slice(&snapshot);
    conn.mute = MUTE_OFF;
    outbox::route(server, conn.node, Some(conn), dels, out);
    None
}

/// REPLCONF, as a master answers a replica before and after SYNC: OK to the options of the
/// handshake (the listening port is kept for INFO), nothing to ACK and GETACK.
fn replconf(conn: &mut Conn, args: &[&[u8]]) -> Option<Reply> {
    if args.len() % 2 == 0 {
        return Some(Reply::err(cmd::SYNTAX));
    }
    for pair in args[1..].chunks(2) {
        let (opt, value) = (pair[0], pair[1]);
        if opt.eq_ignore_ascii_case(b"listening-port") {
            match std::str::from_utf8(value).ok().and_then(|v| v.parse::<u16>().ok()) {
                Some(p) => conn.replica_port = p,
                None => return Some(Reply::err("ERR value is not an integer or out of range")),
            }
        } else if opt.eq_ignore_ascii_case(b"ack") || opt.eq_ignore_ascii_case(b"getack") {
            return None;
        } else if !["ip-address", "capa", "rdb-only"].iter().any(|o| opt.eq_ignore_ascii_case(o.as_bytes())) {
            return Some(Reply::Error(format!("ERR Unrecognized REPLCONF option: {}", String::from_utf8_lossy(opt))));
        }
    }
    Some(Reply::ok())
}

fn auth(server: &Server, conn: &mut Conn, args: &[&[u8]]) -> Reply {
    if args.len() > 3 {
        return Reply::err(cmd::SYNTAX);
    }
    let (user, pass): (&[u8], &[u8]) = if args.len() == 2 { (b"default", args[1]) } else { (args[1], args[2]) };
    if args.len() == 2 && server.nodes[conn.node].emu.borrow().default_user_nopass() {
        return Reply::err(
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
        );
    }
    if password_ok(server, conn, user, pass, "auth") {
        Reply::ok()
    } else {
        Reply::err(WRONGPASS)
    }
}

fn hello(server: &Server, conn: &mut Conn, args: &[&[u8]]) -> Reply {
    let mut ver = None;
    let mut next = 1;
    if args.len() >= 2 {
        match cmd::arg_i64(args[1]) {
            Ok(v) if (2..=3).contains(&v) => ver = Some(v),
            Ok(_) => return Reply::err("NOPROTO unsupported protocol version"),
            Err(_) => return Reply::err("ERR Protocol version is not an integer or out of range"),
        }
        next = 2;
    }
    let (mut creds, mut name) = (None, None);
    let mut j = next;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let opt = args[j];
        if opt.eq_ignore_ascii_case(b"auth") && more >= 2 {
            creds = Some((args[j + 1], args[j + 2]));
            j += 3;
        } else if opt.eq_ignore_ascii_case(b"setname") && more >= 1 {
            let n = args[j + 1];
            if n.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
                return Reply::err("ERR Client names cannot contain spaces, newlines or special characters.");
            }
            name = Some(n);
            j += 2;
        } else {
            return Reply::Error(format!("ERR Syntax error in HELLO option '{}'", String::from_utf8_lossy(opt)));
        }
    }
    if let Some((user, pass)) = creds {
        if !password_ok(server, conn, user, pass, "hello") {
            return Reply::err(WRONGPASS);
        }
    }
    if needs_auth(server, conn) {
        return Reply::err(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
        );
    }
    if let Some(n) = name {
        // The name lives with the emulator's client (CLIENT SETNAME/GETNAME).
        let _ = server.nodes[conn.node].emu.borrow_mut().execute_as(conn.client, &[b"CLIENT", b"SETNAME", n]);
    }
    if let Some(v) = ver {
        conn.resp3 = v == 3;
        server.nodes[conn.node].emu.borrow_mut().set_client_resp3(conn.client, conn.resp3);
    }
    let id = server.nodes[conn.node].emu.borrow().client_number(conn.client);
    let b = |s: &str| Reply::bulk(s.as_bytes().to_vec());
    Reply::Map(vec![
        (b("server"), b("redis")),
        (b("version"), b("7.0.15")),
        (b("proto"), Reply::Int(if conn.resp3 { 3 } else { 2 })),
        (b("id"), Reply::Int(id as i64)),
        (b("mode"), b(if server.cluster { "cluster" } else { "standalone" })),
        (b("role"), b("master")),
        (b("modules"), Reply::Array(vec![])),
    ])
}

/// Whether the connection's peer is 127.0.0.1 or ::1 (Redis's `islocalClient`).
fn is_local(conn: &Conn) -> bool {
    conn.addrs
        .as_ref()
        .and_then(|(peer, _)| peer.parse::<std::net::SocketAddr>().ok())
        .is_some_and(|a| local_ip(a.ip()))
}

/// 127.0.0.1 or ::1, the addresses Redis takes for a local client.
pub fn local_ip(ip: std::net::IpAddr) -> bool {
    ip == std::net::IpAddr::from([127, 0, 0, 1]) || ip == std::net::IpAddr::from(std::net::Ipv6Addr::LOCALHOST)
}

/// DEBUG (once `--enable-debug-command` allows it): only `SLEEP seconds`, which blocks the whole
/// server as Redis's does (`DEBUG SLEEP 0` is the no-op clients send), for as long as asked, but
/// in slices: SIGINT or SIGTERM ends the sleep, so the server stops within a second.
fn debug(args: &[&[u8]]) -> Reply {
    use limitlab_emulator::clock::Deadline;
    if args[1].eq_ignore_ascii_case(b"sleep") && args.len() == 3 {
        // Redis reads the seconds with strtod and no check: what does not parse sleeps 0.
        let secs = std::str::from_utf8(args[2]).ok().and_then(|s| s.trim().parse::<f64>().ok()).unwrap_or(0.0);
        if secs > 0.0 {
            // Too long to represent: until a signal.
            let until = std::time::Duration::try_from_secs_f64(secs).ok().and_then(Deadline::try_after);
            const SLICE: std::time::Duration = std::time::Duration::from_millis(10);
            while !crate::signalled() {
                let left = until.map_or(SLICE, |u| u.left());
                if left.is_zero() {
                    break;
                }
                limitlab_emulator::clock::pause(left.min(SLICE));
            }
        }
        return Reply::ok();
    }
    Reply::Error(format!(
        "ERR unknown subcommand '{}'. limitlab serve answers only DEBUG SLEEP.",
        String::from_utf8_lossy(args[1])
    ))
}
