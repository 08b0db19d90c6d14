//! CLIENT: the calling connection's own state (SETNAME, GETNAME, ID, INFO, NO-EVICT) and the list of
//! connections (LIST), with Redis 7.0.15's texts. CLIENT acts on the client that sends it, so it runs
//! through [`crate::Emulator::execute_as`]; only CLIENT HELP needs no connection (and is
//! the one subcommand a script may call). CLIENT SETINFO is Redis 7.2's and is unknown here, as in 7.0.
//!
//! CLIENT LIST and CLIENT INFO print Redis's fields in Redis's order. Those that describe the
//! connection's state (id, name, age, idle, flags, db, multi, cmd, user, resp) are the emulator's;
//! buffer sizes and memory are a fresh connection's typical values, and `addr`/`laddr` are the
//! ones a server gives ([`crate::Emulator::set_client_addr`]), else loopback placeholders.
use std::fmt::Write as _;

use crate::clients::{Client, ClientId};
use crate::clock::Clock as _;
use crate::command_spec::flags::*;
use crate::command_spec::{eq_ic, CommandSpec, KeySpec, SYNTAX};
use crate::core::Core;
use crate::reply::Reply;

pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "client",
    arity: -2,
    flags: CONNECTION,
    keys: KeySpec::NONE,
    handler: client_without_connection,
}];

static HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "HELP",
    "    Prints this help.",
];

fn help() -> Reply {
    Reply::Array(HELP.iter().map(|l| Reply::Status((*l).into())).collect())
}

/// CLIENT from where there is no connection (a script, or [`Core::dispatch`]): only HELP runs.
fn client_without_connection(_: &mut Core, a: &[&[u8]]) -> Reply {
    if eq_ic(a[1], "help") {
        return help();
    }
    Reply::err("ERR CLIENT acts on a client connection: send it with Emulator::execute_as")
}

/// CLIENT sent by client `id` (the subcommand and its arity were checked by the caller).
pub fn run(core: &mut Core, id: ClientId, a: &[&[u8]]) -> Reply {
    let sub = a[1];
    if eq_ic(sub, "help") {
        return help();
    }
    let now = core.now_ms();
    if eq_ic(sub, "id") {
        return Reply::Int(core.client(id).map_or(0, |c| c.id as i64));
    }
    if eq_ic(sub, "getname") {
        return core.client(id).and_then(|c| c.name.clone()).map_or(Reply::Nil, Reply::Bulk);
    }
    if eq_ic(sub, "setname") {
        let name = a[2];
        if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
            return Reply::err("ERR Client names cannot contain spaces, newlines or special characters.");
        }
        if let Some(c) = core.client(id) {
            c.name = if name.is_empty() { None } else { Some(name.to_vec()) };
        }
        return Reply::ok();
    }
    if eq_ic(sub, "no-evict") {
        let on = if eq_ic(a[2], "on") {
            true
        } else if eq_ic(a[2], "off") {
            false
        } else {
            return Reply::err(SYNTAX);
        };
        if let Some(c) = core.client(id) {
            c.no_evict = on;
        }
        return Reply::ok();
    }
    if eq_ic(sub, "info") {
        let Some(c) = core.clients.get(id.index()).and_then(Option::as_ref) else { return Reply::Nil };
        let mut line = String::new();
        info_line(&mut line, core, c, now);
        return Reply::Verbatim(line.into_bytes());
    }
    if eq_ic(sub, "list") {
        return list(core, a, now);
    }
    if eq_ic(sub, "getredir") {
        return Reply::Int(core.client(id).and_then(|c| c.tracking.as_ref()).map_or(-1, |t| t.redirect as i64));
    }
    if eq_ic(sub, "tracking") {
        return core.client_tracking(id, &a[2..]);
    }
    if eq_ic(sub, "caching") {
        return core.client_caching(id, a[2]);
    }
    if eq_ic(sub, "trackinginfo") {
        return core.tracking_info(id);
    }
    if eq_ic(sub, "unpause") {
        core.pause = None;
        return Reply::ok();
    }
    if eq_ic(sub, "pause") {
        if a.len() > 4 {
            return Reply::err("ERR unknown subcommand or wrong number of arguments for 'pause'. Try CLIENT HELP.");
        }
        return core.client_pause(&a[2..]);
    }
    if eq_ic(sub, "unblock") && (a.len() == 3 || a.len() == 4) {
        return unblock(core, a);
    }
    if eq_ic(sub, "kill") {
        return kill(core, id, a);
    }
    let name = String::from_utf8_lossy(sub).to_ascii_uppercase();
    Reply::Error(format!("ERR limitlab: CLIENT {name} is not emulated"))
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 when client `id` was blocked (and now is not).
fn unblock(core: &mut Core, a: &[&[u8]]) -> Reply {
    let mut error = false;
    if a.len() == 4 {
        if eq_ic(a[3], "error") {
            error = true;
        } else if !eq_ic(a[3], "timeout") {
            return Reply::err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
        }
    }
    let Some(n) = crate::keyspace::parse_canonical_i64(a[2]) else {
        return Reply::err(crate::command_spec::NOT_INTEGER);
    };
    let Some(target) = slot_of(core, n) else { return Reply::Int(0) };
    Reply::Int(core.unblock(target, error) as i64)
}

/// The [`ClientId`] of the open connection whose CLIENT ID is `n`.
fn slot_of(core: &Core, n: i64) -> Option<ClientId> {
    let skip = core.default_client_hidden as usize;
    core.clients
        .iter()
        .enumerate()
        .skip(skip)
        .find(|(_, c)| c.as_ref().is_some_and(|c| c.id as i64 == n))
        .map(|(i, _)| ClientId(i as u32))
}

/// CLIENT KILL ip:port, or CLIENT KILL [ID id] [TYPE type] [USER user] [ADDR ip:port]
/// [LADDR ip:port] [SKIPME yes|no]: the connections go (their server closes them); the old form
/// replies OK or "No such client", the new one how many were killed.
fn kill(core: &mut Core, me: ClientId, a: &[&[u8]]) -> Reply {
    let skip = core.default_client_hidden as usize;
    let addr_of = |c: &Client, local: bool| -> String {
        match &c.addr {
            Some((p, l)) => (if local { l } else { p }).clone(),
            None if local => "127.0.0.1:6379".to_string(),
            None => format!("127.0.0.1:{}", 40000 + c.id % 20000),
        }
    };
    if a.len() == 3 {
        let target =
            core.clients.iter().enumerate().skip(skip).find_map(|(i, c)| {
                c.as_ref().filter(|c| addr_of(c, false).as_bytes() == a[2]).map(|_| ClientId(i as u32))
            });
        let Some(t) = target else { return Reply::err("ERR No such client") };
        core.outbox.push((t, crate::deliver::Deliver::Close));
        return Reply::ok();
    }
    if a.len() % 2 != 0 {
        return Reply::err(SYNTAX);
    }
    let (mut id, mut pubsub, mut normal, mut addr, mut laddr, mut skipme) = (None, None, None, None, None, true);
    for pair in a[2..].chunks(2) {
        let (opt, v) = (pair[0], pair[1]);
        if eq_ic(opt, "id") {
            match crate::keyspace::parse_canonical_i64(v) {
                Some(n) if n > 0 => id = Some(n),
                _ => return Reply::err("ERR client-id should be greater than 0"),
            }
        } else if eq_ic(opt, "type") {
            if eq_ic(v, "normal") {
                (normal, pubsub) = (Some(true), Some(false));
            } else if eq_ic(v, "pubsub") {
                (normal, pubsub) = (Some(false), Some(true));
            } else if eq_ic(v, "master") || eq_ic(v, "replica") || eq_ic(v, "slave") {
                (normal, pubsub) = (Some(false), Some(false));
            } else {
                return Reply::Error(format!("ERR Unknown client type '{}'", String::from_utf8_lossy(v)));
            }
        } else if eq_ic(opt, "user") {
            if v != b"default" {
                return Reply::Error(format!("ERR No such user '{}'", String::from_utf8_lossy(v)));
            }
        } else if eq_ic(opt, "addr") {
            addr = Some(v);
        } else if eq_ic(opt, "laddr") {
            laddr = Some(v);
        } else if eq_ic(opt, "skipme") {
            if eq_ic(v, "yes") {
                skipme = true;
            } else if eq_ic(v, "no") {
                skipme = false;
            } else {
                return Reply::err(SYNTAX);
            }
        } else {
            return Reply::err(SYNTAX);
        }
    }
    let mut killed = Vec::new();
    for (i, c) in core.clients.iter().enumerate().skip(skip) {
        let Some(c) = c else { continue };
        let cid = ClientId(i as u32);
        let sub = core.pubsub.subscribed(cid);
        let ok = id.is_none_or(|n| c.id as i64 == n)
            && addr.is_none_or(|x| addr_of(c, false).as_bytes() == x)
            && laddr.is_none_or(|x| addr_of(c, true).as_bytes() == x)
            && pubsub.is_none_or(|p| !p || sub)
            && normal.is_none_or(|n| !n || !sub)
            && normal.is_none_or(|n| n || pubsub == Some(true))
            && !(skipme && cid == me);
        if ok {
            killed.push(cid);
        }
    }
    for t in &killed {
        core.outbox.push((*t, crate::deliver::Deliver::Close));
    }
    Reply::Int(killed.len() as i64)
}

/// CLIENT LIST [TYPE normal|master|replica|slave|pubsub] [ID id ...]: one line per client, by id
/// (for ID, in the order asked).
fn list(core: &Core, a: &[&[u8]], now: i64) -> Reply {
    let mut clients: Vec<&Client> = core.connections().collect();
    clients.sort_by_key(|c| c.id);
    let mut out = String::new();
    if a.len() == 4 && eq_ic(a[2], "type") {
        let t = a[3];
        if eq_ic(t, "normal") {
            for c in clients {
                info_line(&mut out, core, c, now);
            }
        } else if !["master", "replica", "slave", "pubsub"].iter().any(|n| eq_ic(t, n)) {
            return Reply::Error(format!("ERR Unknown client type '{}'", String::from_utf8_lossy(t)));
        }
    } else if a.len() > 3 && eq_ic(a[2], "id") {
        for x in &a[3..] {
            let Some(n) = crate::keyspace::parse_canonical_i64(x) else {
                return Reply::err("ERR Invalid client ID");
            };
            if let Some(c) = clients.iter().find(|c| c.id as i64 == n) {
                info_line(&mut out, core, c, now);
            }
        }
    } else if a.len() != 2 {
        return Reply::err(SYNTAX);
    } else {
        for c in clients {
            info_line(&mut out, core, c, now);
        }
    }
    Reply::Verbatim(out.into_bytes())
}

/// Client `id`'s CLIENT LIST line (with its `\n`); empty when it is gone.
pub(crate) fn line_of(core: &Core, id: ClientId) -> String {
    let now = core.clock.now_millis().0;
    let mut out = String::new();
    if let Some(c) = core.clients.get(id.index()).and_then(Option::as_ref) {
        info_line(&mut out, core, c, now);
    }
    out
}

/// One CLIENT LIST line (with its `\n`), fields in Redis 7.0's order.
fn info_line(out: &mut String, core: &Core, c: &Client, now: i64) {
    let slot = core.client_by_number(c.id);
    let (sub, psub, ssub) = slot.map_or((0, 0, 0), |id| core.pubsub.counts(id));
    let blocked = slot.is_some_and(|id| core.blocking.is_blocked(id) || core.is_postponed(id));
    let (addr, laddr) = match &c.addr {
        Some((a, l)) => (a.clone(), l.clone()),
        None => (format!("127.0.0.1:{}", 40000 + c.id % 20000), "127.0.0.1:6379".to_string()),
    };
    let mut flags = String::new();
    if c.monitor {
        flags.push('O');
    } else if c.replica {
        flags.push('S');
    }
    if sub + psub + ssub > 0 {
        flags.push('P');
    }
    if c.multi.is_some() || c.executing.is_some() {
        flags.push('x');
    }
    if blocked {
        flags.push('b');
    }
    if let Some(t) = &c.tracking {
        flags.push('t');
        if t.broken_redirect {
            flags.push('R');
        }
        if t.bcast {
            flags.push('B');
        }
    }
    if c.dirty_cas {
        flags.push('d');
    }
    if c.no_evict {
        flags.push('e');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let multi = c.multi.as_ref().map(|m| m.queue.len()).or(c.executing).map_or(-1, |n| n as i64);
    let cmd = match c.last_cmd {
        None => "NULL".to_string(),
        Some((n, None)) => n.to_string(),
        Some((n, Some(s))) => format!("{n}|{s}"),
    };
    let name = c.name.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
    let _ = writeln!(
        out,
        "id={} addr={addr} laddr={laddr} fd=8 name={name} age={} idle={} flags={flags} db={} sub={sub} psub={psub} ssub={ssub} multi={multi} \
         qbuf=26 qbuf-free=20448 argv-mem=10 multi-mem=0 rbs=1024 rbp=0 obl=0 oll=0 omem=0 tot-mem=22426 events=r cmd={cmd} \
         user={} redir={} resp={}",
        c.id,
        (now - c.created_ms).max(0) / 1000,
        (now - c.last_ms).max(0) / 1000,
        c.db,
        String::from_utf8_lossy(c.user.as_deref().unwrap_or(b"default")),
        c.tracking.as_ref().map_or(-1, |t| t.redirect as i64),
        if c.resp3 { 3 } else { 2 },
    );
}
