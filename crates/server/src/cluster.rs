//! `--cluster N`: N ports that answer as the N masters of a Redis Cluster. Each node has its own
//! emulator (keyspace, script cache), all reading one clock; the slots are split as
//! `redis-cli --cluster create` splits them. A command whose keys live on another node gets
//! `MOVED slot host:port`; one whose keys span slots gets `CROSSSLOT`; `CLUSTER SLOTS`, `SHARDS`,
//! `NODES`, `INFO`, `MYID`, `KEYSLOT`, `COUNTKEYSINSLOT` and `GETKEYSINSLOT` describe the layout so
//! that cluster clients find their way.
use super::conn::Conn;
use super::resp::{self, write_verbatim};
use super::state::Server;
use limitlab_emulator::cluster::{common_slot, key_slot, CrossSlot, CROSSSLOT, SLOTS};
use limitlab_emulator::cmd;
use limitlab_emulator::Reply;

/// The slots of each of `n` masters, first and last, as `redis-cli --cluster create` assigns them.
pub fn slot_ranges(n: usize) -> Vec<(u16, u16)> {
    let per = SLOTS as f32 / n as f32;
    let (mut first, mut cursor) = (0i64, 0f32);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let mut last = (cursor + per - 1.0).round() as i64;
        if last > SLOTS as i64 || i == n - 1 {
            last = SLOTS as i64 - 1;
        }
        if last < first {
            last = first;
        }
        out.push((first as u16, last as u16));
        first = last + 1;
        cursor += per;
    }
    out
}

/// Node `i`'s id: 40 hex digits, the same in every run.
pub fn node_id(i: usize) -> String {
    limitlab_emulator::lua::sha1_hex(format!("limitlab serve node {i}").as_bytes())
}

/// The subcommands answered, with Redis's arity.
const SUBCOMMANDS: &[(&str, i32)] = &[
    ("slots", 2),
    ("shards", 2),
    ("nodes", 2),
    ("info", 2),
    ("myid", 2),
    ("keyslot", 3),
    ("countkeysinslot", 3),
    ("getkeysinslot", 4),
];

/// Unknown subcommands and wrong arities, which Redis reports before anything else.
pub fn check_subcommand(args: &[&[u8]]) -> Result<(), Reply> {
    let sub = args[1];
    match SUBCOMMANDS.iter().find(|(n, _)| sub.eq_ignore_ascii_case(n.as_bytes())) {
        None => Err(Reply::Error(format!(
            "ERR unknown subcommand '{}'. Try CLUSTER HELP.",
            String::from_utf8_lossy(&sub[..sub.len().min(128)])
        ))),
        Some((n, arity)) if !cmd::arity_ok(*arity, args.len()) => Err(cmd::arity_error(&format!("cluster|{n}"))),
        Some(_) => Ok(()),
    }
}

/// The keys of a command whose keys are not at fixed positions (EVAL's `numkeys`), `None` when they
/// cannot be read (the command's own error follows).
fn movable_keys<'a>(name: &str, args: &[&'a [u8]]) -> Option<Vec<&'a [u8]>> {
    match name {
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" => {
            let n = cmd::arg_i64(args.get(2)?).ok()?;
            if n < 0 || n as usize > args.len() - 3 {
                return None;
            }
            Some(args[3..3 + n as usize].to_vec())
        }
        _ => None,
    }
}

/// Where a command must go: `Some(MOVED ...)` or `Some(CROSSSLOT ...)` when not here.
pub fn redirect(server: &Server, conn: &Conn, args: &[&[u8]]) -> Option<Reply> {
    let spec = cmd::lookup(args[0])?;
    if !spec.arity_ok(args.len()) {
        return None;
    }
    let keys = if spec.has(cmd::flags::MOVABLE_KEYS) { movable_keys(spec.name, args)? } else { spec.keys.keys(args) };
    let slot = match common_slot(keys.iter().copied()) {
        Err(CrossSlot) => return Some(Reply::err(CROSSSLOT)),
        Ok(None) => return None,
        Ok(Some(s)) => s,
    };
    let owner = server.nodes.iter().find(|n| (n.slots.0..=n.slots.1).contains(&slot))?;
    if std::ptr::eq(owner, &server.nodes[conn.node]) {
        return None;
    }
    Some(Reply::Error(format!("MOVED {slot} {}", announce(owner.addr))))
}

/// `ip:port` as clients should dial it (a wildcard bind is announced as loopback).
fn announce(addr: std::net::SocketAddr) -> String {
    let ip = if addr.ip().is_unspecified() { "127.0.0.1".to_string() } else { addr.ip().to_string() };
    format!("{ip}:{}", addr.port())
}

fn ip(addr: std::net::SocketAddr) -> Reply {
    let a = announce(addr);
    Reply::bulk(a.rsplit_once(':').map_or(a.clone(), |(ip, _)| ip.to_string()).into_bytes())
}

/// Answers a CLUSTER subcommand (already checked by [`check_subcommand`]).
pub fn command(server: &Server, conn: &Conn, args: &[&[u8]], out: &mut Vec<u8>) {
    let sub = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
    let me = &server.nodes[conn.node];
    let b = |s: &str| Reply::bulk(s.as_bytes().to_vec());
    let r = match sub.as_str() {
        "myid" => b(&me.id),
        "keyslot" => Reply::Int(key_slot(args[2]) as i64),
        "slots" => Reply::Array(
            server
                .nodes
                .iter()
                .map(|n| {
                    Reply::Array(vec![
                        Reply::Int(n.slots.0 as i64),
                        Reply::Int(n.slots.1 as i64),
                        Reply::Array(vec![ip(n.addr), Reply::Int(n.addr.port() as i64), b(&n.id), Reply::Map(vec![])]),
                    ])
                })
                .collect(),
        ),
        "shards" => Reply::Array(
            server
                .nodes
                .iter()
                .map(|n| {
                    let node = Reply::Map(vec![
                        (b("id"), b(&n.id)),
                        (b("port"), Reply::Int(n.addr.port() as i64)),
                        (b("ip"), ip(n.addr)),
                        (b("endpoint"), ip(n.addr)),
                        (b("role"), b("master")),
                        (b("replication-offset"), Reply::Int(0)),
                        (b("health"), b("online")),
                    ]);
                    Reply::Map(vec![
                        (b("slots"), Reply::Array(vec![Reply::Int(n.slots.0 as i64), Reply::Int(n.slots.1 as i64)])),
                        (b("nodes"), Reply::Array(vec![node])),
                    ])
                })
                .collect(),
        ),
        "nodes" => {
            let mut text = String::new();
            for (i, n) in server.nodes.iter().enumerate() {
                let flags = if std::ptr::eq(n, me) { "myself,master" } else { "master" };
                let port = n.addr.port();
                let bus = port as u32 + 10000;
                text.push_str(&format!(
                    "{} {}@{bus} {flags} - 0 0 {} connected {}-{}\n",
                    n.id,
                    announce(n.addr),
                    i + 1,
                    n.slots.0,
                    n.slots.1
                ));
            }
            return write_verbatim(out, text.as_bytes(), conn.resp3);
        }
        "info" => {
            let n = server.nodes.len();
            let my_epoch = conn.node + 1;
            let text = format!(
                "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\ncluster_slots_pfail:0\r\n\
                 cluster_slots_fail:0\r\ncluster_known_nodes:{n}\r\ncluster_size:{n}\r\ncluster_current_epoch:{n}\r\n\
                 cluster_my_epoch:{my_epoch}\r\ncluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n\
                 total_cluster_links_buffer_limit_exceeded:0\r\n"
            );
            return write_verbatim(out, text.as_bytes(), conn.resp3);
        }
        "countkeysinslot" | "getkeysinslot" => keys_in_slot(server, conn, &sub, args),
        _ => unreachable!("check_subcommand let only known subcommands through"),
    };
    resp::write(&r, conn.resp3, out);
}

/// COUNTKEYSINSLOT and GETKEYSINSLOT, over the node's database 0 (a cluster has only that one).
fn keys_in_slot(server: &Server, conn: &Conn, sub: &str, args: &[&[u8]]) -> Reply {
    let slot = match cmd::arg_i64(args[2]) {
        Ok(s) if (0..SLOTS as i64).contains(&s) => s as u16,
        _ => return Reply::err("ERR Invalid slot"),
    };
    let count = if sub == "getkeysinslot" {
        match cmd::arg_i64(args[3]) {
            Ok(c) if c >= 0 => Some(c as usize),
            _ => return Reply::err("ERR Invalid number of keys"),
        }
    } else {
        None
    };
    let mut emu = server.nodes[conn.node].emu.borrow_mut();
    let Reply::Array(all) = emu.execute(&[b"KEYS", b"*"]) else { return Reply::Array(vec![]) };
    let keys: Vec<Reply> = all.into_iter().filter(|k| matches!(k, Reply::Bulk(b) if key_slot(b) == slot)).collect();
    match count {
        None => Reply::Int(keys.len() as i64),
        Some(c) => Reply::Array(keys.into_iter().take(c).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_split_as_redis_cli_does() {
        assert_eq!(slot_ranges(3), vec![(0, 5460), (5461, 10922), (10923, 16383)]);
        assert_eq!(slot_ranges(1), vec![(0, 16383)]);
        let r = slot_ranges(7);
        assert_eq!(r[0].0, 0);
        assert_eq!(r[6].1, 16383);
        assert!(r.windows(2).all(|w| w[0].1 + 1 == w[1].0));
        assert_eq!(node_id(0).len(), 40);
    }
}
