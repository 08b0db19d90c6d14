//! What a consumer group's read sends the replicas, as Redis 7.0.15 sends it: XREADGROUP itself never
//! goes (`preventCommandPropagation`); each entry a read with `>` gives a consumer goes as an XCLAIM
//! that hands it to that consumer with its delivery time and count (`streamPropagateXCLAIM`), and a
//! NOACK read moves the group instead (`XGROUP SETID ... ENTRIESREAD`, `streamPropagateGroupID`),
//! after creating its consumer when the read made it (`XGROUP CREATECONSUMER`,
//! `streamPropagateConsumerCreation`). A read of the consumer's history, or one that found nothing
//! new, sends nothing. The same holds when a blocked reader is served. XCLAIM and XAUTOCLAIM send
//! the same canonical XCLAIM per entry they claim or drop, from inside their handlers (`xclaim`,
//! `setid`, `prevent`), and are not sent as themselves.
use crate::command_spec::eq_ic;
use crate::core::Core;
use crate::keyspace::stream::{ConsumerGroup, Nack};
use crate::keyspace::{StreamId, Value};
use crate::reply::Reply;

use super::streams::parse_id;

/// An XREADGROUP's arguments: the group, the consumer, NOACK, and each key with the ID it is read
/// after (`>` for new entries).
pub(crate) struct GroupRead<'a> {
    pub group: &'a [u8],
    pub consumer: &'a [u8],
    pub noack: bool,
    pub keys: Vec<(&'a [u8], &'a [u8])>,
}

impl<'a> GroupRead<'a> {
    /// The arguments of an XREADGROUP that ran (so they are well formed); None otherwise.
    pub(crate) fn parse(args: &[&'a [u8]]) -> Option<GroupRead<'a>> {
        let (mut group, mut consumer, mut noack) = (None, None, false);
        let mut i = 1;
        while i < args.len() {
            let a = args[i];
            if eq_ic(a, "group") && i + 2 < args.len() {
                group = Some(args[i + 1]);
                consumer = Some(args[i + 2]);
                i += 3;
            } else if eq_ic(a, "count") || eq_ic(a, "block") {
                i += 2;
            } else if eq_ic(a, "noack") {
                noack = true;
                i += 1;
            } else if eq_ic(a, "streams") {
                let rest = &args[i + 1..];
                if rest.is_empty() || rest.len() % 2 != 0 {
                    return None;
                }
                let n = rest.len() / 2;
                let keys = rest[..n].iter().copied().zip(rest[n..].iter().copied()).collect();
                return Some(GroupRead { group: group?, consumer: consumer?, noack, keys });
            } else {
                return None;
            }
        }
        None
    }

    /// Whether the consumer exists in each key's group now (taken before the read runs, to tell
    /// the consumers it creates).
    pub(crate) fn consumers_exist(&self, core: &mut Core, db: usize) -> Vec<bool> {
        let now = core.now_ms();
        self.keys
            .iter()
            .map(|(key, _)| match core.db_at(db).peek(key, now).map(|e| &e.value) {
                Some(Value::Stream(s)) => {
                    s.cgroups.get(self.group).is_some_and(|g| g.consumers.contains_key(self.consumer))
                }
                _ => false,
            })
            .collect()
    }
}

/// The entries of each key a read's reply holds, in the reply's order (`[key, entries]` pairs in
/// RESP2, a map in RESP3): the key and its entries' IDs.
fn served(reply: &Reply) -> Vec<(&[u8], Vec<&[u8]>)> {
    fn ids(entries: &Reply) -> Vec<&[u8]> {
        let Reply::Array(es) = entries else { return Vec::new() };
        es.iter()
            .filter_map(|e| match e {
                Reply::Array(parts) => match parts.first() {
                    Some(Reply::Bulk(id)) => Some(id.as_slice()),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }
    fn pair<'r>(k: &'r Reply, v: &'r Reply) -> Option<(&'r [u8], Vec<&'r [u8]>)> {
        let Reply::Bulk(k) = k else { return None };
        Some((k.as_slice(), ids(v)))
    }
    match reply {
        Reply::Array(kv) => kv
            .iter()
            .filter_map(|x| match x {
                Reply::Array(p) if p.len() == 2 => pair(&p[0], &p[1]),
                _ => None,
            })
            .collect(),
        Reply::Map(kv) => kv.iter().filter_map(|(k, v)| pair(k, v)).collect(),
        _ => Vec::new(),
    }
}

/// What the read `read` (whose reply is `reply`) sends the replicas, given whether its consumer
/// existed in each key's group before it ran.
pub(crate) fn effects(
    core: &mut Core,
    db: usize,
    read: &GroupRead,
    existed: &[bool],
    reply: &Reply,
) -> Vec<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut served = served(reply).into_iter().peekable();
    for (i, (key, from)) in read.keys.iter().enumerate() {
        // A key is in the reply exactly when it was served: a history read, or new entries.
        let Some((_, ids)) = served.next_if(|(k, _)| k == key) else { continue };
        let history = !eq_ic(from, ">");
        out.extend(key_effects(core, db, read, key, existed.get(i).copied().unwrap_or(true), history, &ids));
    }
    out
}

/// What serving one key of a group read sends: see the module's comment.
pub(crate) fn key_effects(
    core: &mut Core,
    db: usize,
    read: &GroupRead,
    key: &[u8],
    existed: bool,
    history: bool,
    ids: &[&[u8]],
) -> Vec<Vec<Vec<u8>>> {
    let v = |parts: &[&[u8]]| parts.iter().map(|p| p.to_vec()).collect::<Vec<_>>();
    let mut out = Vec::new();
    if !existed && read.noack {
        out.push(v(&[b"XGROUP", b"CREATECONSUMER", key, read.group, read.consumer]));
    }
    if history || ids.is_empty() {
        return out;
    }
    let now = core.now_ms();
    let Some(Value::Stream(s)) = core.db_at(db).peek(key, now).map(|e| &e.value) else { return out };
    let Some(g) = s.cgroups.get(read.group) else { return out };
    if read.noack {
        out.push(setid_argv(key, read.group, g));
        return out;
    }
    for id in ids {
        let Some(nack) = parse_id(id, 0, true, false).ok().and_then(|(sid, _): (StreamId, bool)| g.pel.get(&sid))
        else {
            continue;
        };
        // Each entry is new to the group, so the group's last ID when it was read is its own.
        out.push(xclaim_argv(key, read.group, id, nack, id));
    }
    out
}

/// Redis's `streamPropagateXCLAIM`, from inside XCLAIM or XAUTOCLAIM while a replica is attached:
/// the XCLAIM that gives the entry `id` (as the command named it) to `nack`'s consumer, with its
/// delivery time and count and the group's last ID, sent instead of the command (which is not sent
/// as itself once it claimed or dropped anything, or moved the group).
pub(crate) fn xclaim(core: &mut Core, key: &[u8], group: &[u8], id: &[u8], nack: &Nack, last_id: StreamId) {
    if !core.repl.active {
        return;
    }
    let argv = xclaim_argv(key, group, id, nack, &last_id.to_bytes());
    core.repl.own.push(argv);
}

/// `XCLAIM key group consumer 0 id TIME ms RETRYCOUNT n FORCE JUSTID LASTID last`: the entry `id`
/// given to `nack`'s consumer with its delivery time and count, the group's last ID `last`.
fn xclaim_argv(key: &[u8], group: &[u8], id: &[u8], nack: &Nack, last: &[u8]) -> Vec<Vec<u8>> {
    let (time, count) = (nack.delivery_time.to_string(), nack.delivery_count.to_string());
    let parts: [&[u8]; 14] = [
        b"XCLAIM",
        key,
        group,
        &nack.consumer,
        b"0",
        id,
        b"TIME",
        time.as_bytes(),
        b"RETRYCOUNT",
        count.as_bytes(),
        b"FORCE",
        b"JUSTID",
        b"LASTID",
        last,
    ];
    parts.iter().map(|p| p.to_vec()).collect()
}

/// Redis's `streamPropagateGroupID`, from inside a command while a replica is attached.
pub(crate) fn setid(core: &mut Core, key: &[u8], group: &[u8], g: &ConsumerGroup) {
    if core.repl.active {
        let argv = setid_argv(key, group, g);
        core.repl.own.push(argv);
    }
}

/// `XGROUP SETID key group last-id ENTRIESREAD n`: the group's last ID and read counter.
fn setid_argv(key: &[u8], group: &[u8], g: &ConsumerGroup) -> Vec<Vec<u8>> {
    let (last, read) = (g.last_id.to_bytes(), g.entries_read.to_string());
    let parts: [&[u8]; 7] = [b"XGROUP", b"SETID", key, group, &last, b"ENTRIESREAD", read.as_bytes()];
    parts.iter().map(|p| p.to_vec()).collect()
}

/// Redis's `preventCommandPropagation`: the running command goes only as what it sent on its own.
pub(crate) fn prevent(core: &mut Core) {
    if core.repl.active {
        core.repl.prevented = true;
    }
}
