//! XREAD and XREADGROUP as Redis 7.0.15 runs them (`xreadCommand`): COUNT, BLOCK (refused in
//! scripts, answered at once in MULTI), STREAMS with `$`, `>` and IDs, XREADGROUP's GROUP and NOACK,
//! the consumer group bookkeeping of a read (last delivered ID, read counter, pending entries,
//! consumers created on first read) and the serving of blocked readers (`cmd::blocking`).
use crate::command_spec::flags::*;
use crate::command_spec::{arg_i64, eq_ic, CommandSpec, KeySpec, SYNTAX};
use crate::core::Core;
use crate::keyspace::stream::{Nack, INVALID_ENTRIES_READ};
use crate::keyspace::{StreamId, Value};
use crate::reply::Reply;
use crate::tri;

use super::stream_groups::{create_consumer, cstr};
use super::stream_propagate;
use super::streams::{entry_reply, parse_id, stream_mut};

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "xread",
        arity: -4,
        flags: READONLY | MOVABLE_KEYS,
        keys: KeySpec::movable(xread_keys),
        handler: xread,
    },
    CommandSpec {
        name: "xreadgroup",
        arity: -7,
        flags: WRITE | MOVABLE_KEYS,
        keys: KeySpec::movable(xread_keys),
        handler: xreadgroup,
    },
];

/// The keys of XREAD/XREADGROUP: the first half of what follows STREAMS (`xreadGetKeys`).
fn xread_keys<'a>(args: &[&'a [u8]]) -> Vec<&'a [u8]> {
    let Some(at) = args.iter().skip(1).position(|a| eq_ic(a, "streams")) else { return Vec::new() };
    let rest = &args[at + 2..];
    if rest.is_empty() || rest.len() % 2 != 0 {
        return Vec::new();
    }
    rest[..rest.len() / 2].to_vec()
}

/// What a blocked reader waits for: per key, the ID it wants entries after (for a group reader
/// with `>`, the group's last delivered ID at serving time instead).
#[derive(Clone, Debug)]
pub struct StreamWait {
    pub ids: Vec<StreamId>,
    pub count: usize,
    /// XREADGROUP's group, consumer and NOACK.
    pub group: Option<(Vec<u8>, Vec<u8>, bool)>,
}

/// The read of one key: `[key, entries]` in RESP2, a map entry in RESP3.
fn key_entries(key: &[u8], entries: Reply) -> (Reply, Reply) {
    (Reply::Bulk(key.to_vec()), entries)
}

/// The whole reply from the keys served: an array of `[key, entries]` pairs (RESP2) or a map (RESP3).
pub(crate) fn reads_reply(resp3: bool, served: Vec<(Reply, Reply)>) -> Reply {
    if resp3 {
        Reply::Map(served)
    } else {
        Reply::Array(served.into_iter().map(|(k, v)| Reply::Array(vec![k, v])).collect())
    }
}

fn xread(core: &mut Core, a: &[&[u8]]) -> Reply {
    xread_generic(core, a, false)
}

fn xreadgroup(core: &mut Core, a: &[&[u8]]) -> Reply {
    let r = xread_generic(core, a, true);
    // The replicas get what the read did to the group (sent from `read_group`), never the read.
    stream_propagate::prevent(core);
    r
}

/// `getTimeoutFromObjectOrReply` in milliseconds: the deadline (0 for none) on the emulator's clock.
fn parse_timeout_ms(core: &Core, b: &[u8]) -> Result<i64, Reply> {
    let t = arg_i64(b).map_err(|_| Reply::err("ERR timeout is not an integer or out of range"))?;
    super::blocking::deadline(core, t)
}

fn xread_generic(core: &mut Core, a: &[&[u8]], xreadgroup: bool) -> Reply {
    let mut timeout: Option<i64> = None;
    let mut count: i64 = 0;
    let mut streams_arg = 0;
    let mut streams_count = 0;
    let mut group: Option<(&[u8], &[u8])> = None;
    let mut noack = false;
    let mut i = 1;
    while i < a.len() {
        let moreargs = a.len() - i - 1;
        let o = a[i];
        if eq_ic(o, "block") && moreargs > 0 {
            if core.in_script() {
                return Reply::Error(format!(
                    "ERR {} command is not allowed with BLOCK option from scripts",
                    cstr(a[0])
                ));
            }
            i += 1;
            timeout = Some(tri!(parse_timeout_ms(core, a[i])));
        } else if eq_ic(o, "count") && moreargs > 0 {
            i += 1;
            count = tri!(arg_i64(a[i])).max(0);
        } else if eq_ic(o, "streams") && moreargs > 0 {
            streams_arg = i + 1;
            streams_count = a.len() - streams_arg;
            if streams_count % 2 != 0 {
                return Reply::err(
                    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
                );
            }
            streams_count /= 2;
            break;
        } else if eq_ic(o, "group") && moreargs >= 2 {
            if !xreadgroup {
                return Reply::err("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.");
            }
            group = Some((a[i + 1], a[i + 2]));
            i += 2;
        } else if eq_ic(o, "noack") {
            if !xreadgroup {
                return Reply::err("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.");
            }
            noack = true;
        } else {
            return Reply::err(SYNTAX);
        }
        i += 1;
    }
    if streams_arg == 0 {
        return Reply::err(SYNTAX);
    }
    if xreadgroup && group.is_none() {
        return Reply::err("ERR Missing GROUP option for XREADGROUP");
    }
    // The IDs (`>` is MAX), each key checked for its type and group first.
    let keys = &a[streams_arg..streams_arg + streams_count];
    let mut ids = Vec::with_capacity(streams_count);
    for (k, &arg) in a[streams_arg + streams_count..].iter().enumerate() {
        let key = keys[k];
        let s = tri!(stream_mut(core, key));
        if let Some((g, _)) = group {
            if !s.as_ref().is_some_and(|s| s.cgroups.contains_key(g)) {
                return Reply::Error(format!(
                    "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                    cstr(key),
                    cstr(g)
                ));
            }
        }
        if arg == b"$" {
            if xreadgroup {
                return Reply::err(
                    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this \
                     consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just \
                     return an empty result set.",
                );
            }
            ids.push(s.map_or(StreamId::MIN, |s| s.last_id));
            continue;
        }
        if arg == b">" {
            if !xreadgroup {
                return Reply::err(
                    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> \
                     option.",
                );
            }
            ids.push(StreamId::MAX);
            continue;
        }
        ids.push(tri!(parse_id(arg, 0, true, false)).0);
    }
    let count = count as usize;
    let mut served = Vec::new();
    for (k, &key) in keys.iter().enumerate() {
        let Some(s) = tri!(stream_mut(core, key)) else { continue };
        let mut gt = ids[k];
        let mut history = false;
        let serve = match group {
            Some((g, _)) => {
                if ids[k] != StreamId::MAX {
                    history = true;
                    true
                } else if s.length > 0 {
                    let last = s.cgroups[g].last_id;
                    gt = last;
                    s.edge_id(false) > last
                } else {
                    false
                }
            }
            None => s.length > 0 && s.edge_id(false) > gt,
        };
        if !serve {
            continue;
        }
        let entries = match group {
            None => read_after(core, key, gt, count),
            Some((g, consumer)) => {
                let now = core.now_ms();
                let s = stream_mut(core, key).ok().flatten().expect("present");
                let exists = s.cgroups[g].consumers.contains_key(consumer);
                if !exists {
                    create_consumer(core, key, g, consumer);
                    if noack {
                        stream_propagate::consumer_created(core, key, g, consumer);
                    }
                }
                let s = stream_mut(core, key).ok().flatten().expect("present");
                s.cgroups.get_mut(g).expect("present").consumers.get_mut(consumer).expect("present").seen_time = now;
                core.touch(key);
                if history {
                    read_history(core, key, g, consumer, gt, count)
                } else {
                    read_group(core, key, g, consumer, gt, count, noack)
                }
            }
        };
        served.push(key_entries(key, entries));
    }
    if !served.is_empty() {
        return reads_reply(core.resp3, served);
    }
    if let Some(deadline) = timeout {
        let group = group.map(|(g, c)| (g.to_vec(), c.to_vec(), noack));
        return super::blocking::block_stream(core, keys, deadline, StreamWait { ids, count, group });
    }
    Reply::NilArray
}

/// XREAD's entries of `key` after `gt`, at most `count` (0: all).
pub(crate) fn read_after(core: &mut Core, key: &[u8], gt: StreamId, count: usize) -> Reply {
    let Ok(Some(s)) = stream_mut(core, key) else { return Reply::Array(Vec::new()) };
    let Some(start) = gt.incr() else { return Reply::Array(Vec::new()) };
    Reply::Array(s.range(start, StreamId::MAX, count, false).into_iter().map(entry_reply).collect())
}

/// XREADGROUP with `>`: the entries after `gt`, each moving the group's last delivered ID (and its
/// read counter) and, unless NOACK, becoming pending for `consumer`.
pub(crate) fn read_group(
    core: &mut Core,
    key: &[u8],
    group: &[u8],
    consumer: &[u8],
    gt: StreamId,
    count: usize,
    noack: bool,
) -> Reply {
    let now = core.now_ms();
    // What the replicas get (see `stream_propagate`), built only while one is attached.
    let record = core.repl.active;
    let mut sent = Vec::new();
    let mut moved = false;
    let Ok(Some(s)) = stream_mut(core, key) else { return Reply::Array(Vec::new()) };
    let Some(start) = gt.incr() else { return Reply::Array(Vec::new()) };
    let entries: Vec<(StreamId, Reply)> =
        s.range(start, StreamId::MAX, count, false).into_iter().map(|e| (e.id, entry_reply(e))).collect();
    let mut out = Vec::with_capacity(entries.len());
    for (id, reply) in entries {
        let g = &s.cgroups[group];
        if id > g.last_id {
            moved = true;
            let read = if g.entries_read != INVALID_ENTRIES_READ && !s.range_has_tombstones(id) {
                Some(g.entries_read + 1)
            } else if s.entries_added > 0 {
                Some(s.estimate_distance(id))
            } else {
                None
            };
            let g = s.cgroups.get_mut(group).expect("present");
            if let Some(r) = read {
                g.entries_read = r;
            }
            g.last_id = id;
        }
        if !noack {
            let g = s.cgroups.get_mut(group).expect("present");
            if let Some(old) = g.pel.get(&id).map(|n| n.consumer.clone()) {
                if let Some(c) = g.consumers.get_mut(&old) {
                    c.pel.remove(&id);
                }
            }
            let nack = Nack { delivery_time: now, delivery_count: 1, consumer: consumer.to_vec() };
            if record {
                // The entry is new to the group, so the group's last ID is its own.
                let id = id.to_bytes();
                sent.push(stream_propagate::xclaim_argv(key, group, &id, &nack, &id));
            }
            g.pel.insert(id, nack);
            g.consumers.get_mut(consumer).expect("present").pel.insert(id);
        }
        out.push(reply);
    }
    core.repl.own.extend(sent);
    if noack && moved {
        let g = stream_mut(core, key).ok().flatten().expect("present").cgroups[group].clone();
        stream_propagate::setid(core, key, group, &g);
    }
    Reply::Array(out)
}

/// XREADGROUP with an ID: the consumer's pending entries after `gt` (a deleted one as `[id, nil]`),
/// each counted as delivered again.
fn read_history(core: &mut Core, key: &[u8], group: &[u8], consumer: &[u8], gt: StreamId, count: usize) -> Reply {
    let now = core.now_ms();
    let Ok(Some(s)) = stream_mut(core, key) else { return Reply::Array(Vec::new()) };
    let Some(start) = gt.incr() else { return Reply::Array(Vec::new()) };
    let pel: Vec<StreamId> = {
        let c = &s.cgroups[group].consumers[consumer];
        let it = c.pel.range(start..).copied();
        if count == 0 {
            it.collect()
        } else {
            it.take(count).collect()
        }
    };
    let mut out = Vec::with_capacity(pel.len());
    for id in pel {
        match s.entry(id) {
            Some(e) => {
                out.push(entry_reply(e));
                let nack = s.cgroups.get_mut(group).expect("present").pel.get_mut(&id).expect("pending");
                nack.delivery_time = now;
                nack.delivery_count += 1;
            }
            None => out.push(Reply::Array(vec![Reply::Bulk(id.to_bytes()), Reply::NilArray])),
        }
    }
    Reply::Array(out)
}

/// What serving a blocked reader on `key` (its `k`th key) would do now: None when not ready, else
/// the reply (an entries read, or the error that ends a group reader's wait).
pub(crate) fn serve_waiter(core: &mut Core, key: &[u8], k: usize, w: &StreamWait, resp3: bool) -> Option<Reply> {
    let now = core.now_ms();
    let stream = match core.db.peek(key, now).map(|e| &e.value) {
        Some(Value::Stream(s)) => Some(&**s),
        _ => None,
    };
    let Some(s) = stream else {
        return w.group.as_ref().map(|_| Reply::err("UNBLOCKED the stream key no longer exists"));
    };
    let gt = match &w.group {
        Some((g, _, _)) => match s.cgroups.get(g) {
            None => return Some(Reply::err("NOGROUP the consumer group this client was blocked on no longer exists")),
            Some(g) => g.last_id,
        },
        None => w.ids[k],
    };
    if s.last_id <= gt {
        return None;
    }
    let entries = match &w.group {
        None => read_after(core, key, gt, w.count),
        Some((g, consumer, noack)) => {
            let s = stream_mut(core, key).ok().flatten().expect("present");
            match s.cgroups.get_mut(g.as_slice()).expect("present").consumers.get_mut(consumer.as_slice()) {
                Some(c) => c.seen_time = now,
                None => {
                    create_consumer(core, key, g, consumer);
                    if *noack {
                        stream_propagate::consumer_created(core, key, g, consumer);
                    }
                }
            }
            core.touch(key);
            read_group(core, key, g, consumer, gt, w.count, *noack)
        }
    };
    Some(reads_reply(resp3, vec![key_entries(key, entries)]))
}
