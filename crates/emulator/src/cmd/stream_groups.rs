//! Stream consumer groups as Redis 7.0.15 runs them (`t_stream.c`): XGROUP (CREATE with MKSTREAM and
//! ENTRIESREAD, SETID, DESTROY, CREATECONSUMER, DELCONSUMER, HELP), XACK, XPENDING (summary and
//! extended forms, IDLE), XCLAIM (IDLE, TIME, RETRYCOUNT, FORCE, JUSTID, LASTID), XAUTOCLAIM, XINFO
//! (STREAM [FULL [COUNT n]], GROUPS, CONSUMERS, HELP) and XSETID (ENTRIESADDED, MAXDELETEDID), with
//! their checks in Redis's order, their error texts and their keyspace events. Times (delivery,
//! seen) are on the emulator's clock. XREADGROUP is in `cmd::stream_read`.
use crate::command_spec::flags::*;
use crate::command_spec::{arg_i64, eq_ic, CommandSpec, KeySpec, SYNTAX};
use crate::core::Core;
use crate::keyspace::stream::{Consumer, ConsumerGroup, Nack, INVALID_ENTRIES_READ};
use crate::keyspace::{Stream, StreamId, Value};
use crate::reply::Reply;
use crate::settings::notify;
use crate::tri;

use super::stream_propagate;
use super::streams::{entry_reply, interval_id, parse_id, stream_mut};

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "xgroup", arity: -2, flags: 0, keys: KeySpec::NONE, handler: xgroup },
    CommandSpec { name: "xack", arity: -4, flags: WRITE, keys: KeySpec::ONE, handler: xack },
    CommandSpec { name: "xpending", arity: -3, flags: READONLY, keys: KeySpec::ONE, handler: xpending },
    CommandSpec { name: "xclaim", arity: -6, flags: WRITE, keys: KeySpec::ONE, handler: xclaim },
    CommandSpec { name: "xautoclaim", arity: -6, flags: WRITE, keys: KeySpec::ONE, handler: xautoclaim },
    CommandSpec { name: "xinfo", arity: -2, flags: 0, keys: KeySpec::NONE, handler: xinfo },
    CommandSpec { name: "xsetid", arity: -3, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: xsetid },
];

const XGROUP_HELP: &[&str] = &[
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
];

const XINFO_HELP: &[&str] = &[
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
];

const NO_SUCH_KEY: &str = "ERR no such key";

/// A name as `%s` prints it in an error (cut at a NUL; `addReplyErrorFormat` turns CR/LF into spaces).
pub(crate) fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).chars().map(|c| if c == '\r' || c == '\n' { ' ' } else { c }).collect()
}

fn help(lines: &[&str]) -> Reply {
    Reply::Array(lines.iter().map(|l| Reply::Status((*l).into())).collect())
}

/// `addReplySubcommandSyntaxError`.
fn subcommand_syntax(a: &[&[u8]]) -> Reply {
    let sub: String = cstr(&a[1][..a[1].len().min(128)]);
    Reply::Error(format!(
        "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try {} HELP.",
        cstr(a[0]).to_ascii_uppercase()
    ))
}

/// `getLongLongFromObjectOrReply` with a custom message.
fn ll_or(b: &[u8], msg: &str) -> Result<i64, Reply> {
    arg_i64(b).map_err(|_| Reply::err(format!("ERR {msg}")))
}

/// `streamCreateConsumer`: a new consumer seen now, with its keyspace event; false when it exists.
pub(crate) fn create_consumer(core: &mut Core, key: &[u8], group: &[u8], name: &[u8]) -> bool {
    let now = core.now_ms();
    let created = match stream_mut(core, key) {
        Ok(Some(s)) => match s.cgroups.get_mut(group) {
            Some(g) if !g.consumers.contains_key(name) => {
                g.consumers.insert(name.to_vec(), Consumer { seen_time: now, pel: Default::default() });
                true
            }
            _ => false,
        },
        _ => false,
    };
    if created {
        core.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    created
}

fn xgroup(core: &mut Core, a: &[&[u8]]) -> Reply {
    let opt = a[1];
    let mut mkstream = false;
    let mut entries_read = INVALID_ENTRIES_READ;
    let mut exists = false;
    if a.len() >= 4 {
        if eq_ic(opt, "create") {
            let mut i = 5;
            while i < a.len() {
                if eq_ic(a[i], "mkstream") {
                    mkstream = true;
                    i += 1;
                } else if eq_ic(a[i], "entriesread") && i + 1 < a.len() {
                    entries_read = tri!(arg_i64(a[i + 1]));
                    if entries_read < 0 && entries_read != INVALID_ENTRIES_READ {
                        return Reply::err("ERR value for ENTRIESREAD must be positive or -1");
                    }
                    i += 2;
                } else {
                    return subcommand_syntax(a);
                }
            }
        }
        exists = tri!(stream_mut(core, a[2])).is_some();
    }
    let (key, group) = (a.get(2).copied().unwrap_or_default(), a.get(3).copied().unwrap_or_default());
    let mut group_exists = false;
    if a.len() >= 4 && !mkstream {
        let Some(s) = tri!(stream_mut(core, key)) else {
            return Reply::err(
                "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use \
                 the MKSTREAM option to create an empty stream automatically.",
            );
        };
        group_exists = s.cgroups.contains_key(group);
        if !group_exists && (eq_ic(opt, "setid") || eq_ic(opt, "createconsumer") || eq_ic(opt, "delconsumer")) {
            return Reply::Error(format!(
                "NOGROUP No such consumer group '{}' for key name '{}'",
                cstr(group),
                cstr(key)
            ));
        }
    } else if a.len() >= 4 {
        group_exists = tri!(stream_mut(core, key)).is_some_and(|s| s.cgroups.contains_key(group));
    }
    let n = a.len();
    if n == 2 && eq_ic(opt, "help") {
        return help(XGROUP_HELP);
    }
    if eq_ic(opt, "create") && (5..=8).contains(&n) {
        let id = if a[4] == b"$" {
            tri!(stream_mut(core, key)).map_or(StreamId::MIN, |s| s.last_id)
        } else {
            tri!(parse_id(a[4], 0, true, false)).0
        };
        if !exists {
            core.db.set(key, Value::Stream(Box::default()), None);
            core.touch(key);
        }
        if group_exists {
            return Reply::err("BUSYGROUP Consumer Group name already exists");
        }
        let s = tri!(stream_mut(core, key)).expect("present");
        s.cgroups.insert(group.to_vec(), ConsumerGroup::new(id, entries_read));
        core.touch(key);
        core.notify(notify::STREAM, "xgroup-create", key);
        return Reply::ok();
    }
    if eq_ic(opt, "setid") && (n == 5 || n == 7) {
        let s = tri!(stream_mut(core, key)).expect("present");
        let id = if a[4] == b"$" { s.last_id } else { tri!(parse_id(a[4], 0, false, false)).0 };
        if n == 7 {
            if !eq_ic(a[5], "entriesread") {
                return subcommand_syntax(a);
            }
            entries_read = tri!(arg_i64(a[6]));
            if entries_read < 0 && entries_read != INVALID_ENTRIES_READ {
                return Reply::err("ERR value for ENTRIESREAD must be positive or -1");
            }
        }
        let s = tri!(stream_mut(core, key)).expect("present");
        let g = s.cgroups.get_mut(group).expect("checked");
        g.last_id = id;
        g.entries_read = entries_read;
        core.touch(key);
        core.notify(notify::STREAM, "xgroup-setid", key);
        return Reply::ok();
    }
    if eq_ic(opt, "destroy") && n == 4 {
        if !group_exists {
            return Reply::Int(0);
        }
        let s = tri!(stream_mut(core, key)).expect("present");
        s.cgroups.remove(group);
        core.touch(key);
        core.notify(notify::STREAM, "xgroup-destroy", key);
        return Reply::Int(1);
    }
    if eq_ic(opt, "createconsumer") && n == 5 {
        let created = create_consumer(core, key, group, a[4]);
        if created {
            core.touch(key);
        }
        return Reply::Int(created as i64);
    }
    if eq_ic(opt, "delconsumer") && n == 5 {
        let s = tri!(stream_mut(core, key)).expect("present");
        let g = s.cgroups.get_mut(group).expect("checked");
        let Some(c) = g.consumers.remove(a[4]) else { return Reply::Int(0) };
        for id in &c.pel {
            g.pel.remove(id);
        }
        core.touch(key);
        core.notify(notify::STREAM, "xgroup-delconsumer", key);
        return Reply::Int(c.pel.len() as i64);
    }
    subcommand_syntax(a)
}

/// The group `group` of the stream at `key`, or the NOGROUP error XPENDING, XCLAIM and XAUTOCLAIM
/// give (after WRONGTYPE).
fn group_or_nogroup<'a>(core: &'a mut Core, key: &[u8], group: &[u8]) -> Result<&'a mut Stream, Reply> {
    let nogroup = || Reply::Error(format!("NOGROUP No such key '{}' or consumer group '{}'", cstr(key), cstr(group)));
    match stream_mut(core, key)? {
        Some(s) if s.cgroups.contains_key(group) => Ok(s),
        _ => Err(nogroup()),
    }
}

/// XACK key group id [id ...]: IDs checked before any is acknowledged.
fn xack(core: &mut Core, a: &[&[u8]]) -> Reply {
    let (key, group) = (a[1], a[2]);
    match tri!(stream_mut(core, key)) {
        Some(s) if s.cgroups.contains_key(group) => {}
        _ => return Reply::Int(0),
    }
    let mut ids = Vec::with_capacity(a.len() - 3);
    for arg in &a[3..] {
        ids.push(tri!(parse_id(arg, 0, true, false)).0);
    }
    let s = tri!(stream_mut(core, key)).expect("present");
    let g = s.cgroups.get_mut(group).expect("present");
    let mut acked = 0;
    for id in ids {
        if let Some(nack) = g.pel.remove(&id) {
            if let Some(c) = g.consumers.get_mut(&nack.consumer) {
                c.pel.remove(&id);
            }
            acked += 1;
        }
    }
    if acked > 0 {
        core.touch(key);
    }
    Reply::Int(acked)
}

/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]].
fn xpending(core: &mut Core, a: &[&[u8]]) -> Reply {
    let n = a.len();
    if n != 3 && !(6..=9).contains(&n) {
        return Reply::err(SYNTAX);
    }
    let (mut start, mut end, mut count, mut minidle) = (StreamId::MIN, StreamId::MAX, 0i64, 0i64);
    let mut consumer: Option<&[u8]> = None;
    if n >= 6 {
        let mut at = 3;
        if eq_ic(a[3], "idle") {
            minidle = tri!(arg_i64(a[4]));
            if n < 8 {
                return Reply::err(SYNTAX);
            }
            at += 2;
        }
        count = tri!(arg_i64(a[at + 2])).max(0);
        let (s, ex) = tri!(interval_id(a[at], 0));
        start = s;
        if ex {
            match start.incr() {
                Some(x) => start = x,
                None => return Reply::err("ERR invalid start ID for the interval"),
            }
        }
        let (e, ex) = tri!(interval_id(a[at + 1], u64::MAX));
        end = e;
        if ex {
            match end.decr() {
                Some(x) => end = x,
                None => return Reply::err("ERR invalid end ID for the interval"),
            }
        }
        if at + 3 < n {
            consumer = Some(a[at + 3]);
        }
    }
    let now = core.now_ms();
    let s = tri!(group_or_nogroup(core, a[1], a[2]));
    let g = &s.cgroups[a[2]];
    if n == 3 {
        if g.pel.is_empty() {
            return Reply::Array(vec![Reply::Int(0), Reply::Nil, Reply::Nil, Reply::NilArray]);
        }
        let first = g.pel.keys().next().expect("not empty");
        let last = g.pel.keys().next_back().expect("not empty");
        let consumers = g
            .consumers
            .iter()
            .filter(|(_, c)| !c.pel.is_empty())
            .map(|(name, c)| Reply::Array(vec![Reply::Bulk(name.clone()), Reply::Bulk(c.pel.len().to_string().into())]))
            .collect();
        return Reply::Array(vec![
            Reply::Int(g.pel.len() as i64),
            Reply::Bulk(first.to_bytes()),
            Reply::Bulk(last.to_bytes()),
            Reply::Array(consumers),
        ]);
    }
    let ids: Vec<StreamId> = match consumer {
        Some(name) => match g.consumers.get(name) {
            None => return Reply::Array(Vec::new()),
            Some(c) => c.pel.range(start..).copied().collect(),
        },
        None => g.pel.range(start..).map(|(id, _)| *id).collect(),
    };
    let mut out = Vec::new();
    for id in ids {
        if count == 0 || id > end {
            break;
        }
        let nack = &g.pel[&id];
        if minidle != 0 && now - nack.delivery_time < minidle {
            continue;
        }
        count -= 1;
        out.push(Reply::Array(vec![
            Reply::Bulk(id.to_bytes()),
            Reply::Bulk(nack.consumer.clone()),
            Reply::Int((now - nack.delivery_time).max(0)),
            Reply::Int(nack.delivery_count as i64),
        ]));
    }
    Reply::Array(out)
}

/// Moves the pending entry `id` of `g` to `consumer` (which exists).
fn reassign(g: &mut ConsumerGroup, id: StreamId, consumer: &[u8]) {
    let nack = g.pel.get_mut(&id).expect("pending");
    if nack.consumer != consumer {
        if let Some(old) = g.consumers.get_mut(&nack.consumer) {
            old.pel.remove(&id);
        }
        nack.consumer = consumer.to_vec();
        g.consumers.get_mut(consumer).expect("created").pel.insert(id);
    }
}

/// Looks up (refreshing its seen time) or creates the claiming consumer, once per command.
fn claimer(core: &mut Core, key: &[u8], group: &[u8], name: &[u8], done: &mut bool) {
    if *done {
        return;
    }
    *done = true;
    let now = core.now_ms();
    let s = stream_mut(core, key).ok().flatten().expect("present");
    let g = s.cgroups.get_mut(group).expect("present");
    match g.consumers.get_mut(name) {
        Some(c) => c.seen_time = now,
        None => {
            create_consumer(core, key, group, name);
        }
    }
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME ms] [RETRYCOUNT n] [FORCE]
/// [JUSTID] [LASTID id].
fn xclaim(core: &mut Core, a: &[&[u8]]) -> Reply {
    let (key, group, name) = (a[1], a[2], a[3]);
    tri!(group_or_nogroup(core, key, group));
    let minidle = tri!(ll_or(a[4], "Invalid min-idle-time argument for XCLAIM")).max(0);
    let mut ids = Vec::new();
    let mut j = 5;
    while j < a.len() {
        match parse_id(a[j], 0, true, false) {
            Ok((id, _)) => ids.push(id),
            Err(_) => break,
        }
        j += 1;
    }
    let now = core.now_ms();
    let (mut force, mut justid) = (false, false);
    let mut retrycount: i64 = -1;
    let mut deliverytime: i64 = -1;
    let mut changed = false;
    let mut lastid = None;
    while j < a.len() {
        let moreargs = j + 1 < a.len();
        let opt = a[j];
        if eq_ic(opt, "force") {
            force = true;
        } else if eq_ic(opt, "justid") {
            justid = true;
        } else if eq_ic(opt, "idle") && moreargs {
            j += 1;
            deliverytime = now.wrapping_sub(tri!(ll_or(a[j], "Invalid IDLE option argument for XCLAIM")));
        } else if eq_ic(opt, "time") && moreargs {
            j += 1;
            deliverytime = tri!(ll_or(a[j], "Invalid TIME option argument for XCLAIM"));
        } else if eq_ic(opt, "retrycount") && moreargs {
            j += 1;
            retrycount = tri!(ll_or(a[j], "Invalid RETRYCOUNT option argument for XCLAIM"));
        } else if eq_ic(opt, "lastid") && moreargs {
            j += 1;
            lastid = Some(tri!(parse_id(a[j], 0, true, false)).0);
        } else {
            return Reply::Error(format!("ERR Unrecognized XCLAIM option '{}'", cstr(opt)));
        }
        j += 1;
    }
    // LASTID moves the group once every option is read (an option refused later leaves it).
    let mut propagate_last_id = false;
    if let Some(id) = lastid {
        let g = tri!(group_or_nogroup(core, key, group)).cgroups.get_mut(group).expect("present");
        if id > g.last_id {
            g.last_id = id;
            changed = true;
            propagate_last_id = true;
        }
    }
    if deliverytime == -1 || deliverytime < 0 || deliverytime > now {
        deliverytime = now;
    }
    let mut out = Vec::new();
    let mut have_consumer = false;
    for (k, id) in ids.into_iter().enumerate() {
        // The ID as the command named it: what the replicas' XCLAIM names.
        let id_arg = a[5 + k];
        let s = tri!(group_or_nogroup(core, key, group));
        let live = s.entry(id).is_some();
        let g = s.cgroups.get_mut(group).expect("present");
        if !live {
            if let Some(nack) = g.pel.remove(&id) {
                if let Some(c) = g.consumers.get_mut(&nack.consumer) {
                    c.pel.remove(&id);
                }
                let last = g.last_id;
                changed = true;
                stream_propagate::xclaim(core, key, group, id_arg, &nack, last);
                propagate_last_id = false;
            }
            continue;
        }
        let mut created_now = false;
        if force && !g.pel.contains_key(&id) {
            g.pel.insert(id, Nack { delivery_time: now, delivery_count: 1, consumer: Vec::new() });
            created_now = true;
        }
        let Some(nack) = g.pel.get(&id) else { continue };
        if !created_now && minidle != 0 && now - nack.delivery_time < minidle {
            continue;
        }
        claimer(core, key, group, name, &mut have_consumer);
        let s = tri!(group_or_nogroup(core, key, group));
        let g = s.cgroups.get_mut(group).expect("present");
        if created_now {
            // A NACK made by FORCE belongs to no consumer yet.
            g.pel.get_mut(&id).expect("pending").consumer = name.to_vec();
            g.consumers.get_mut(name).expect("created").pel.insert(id);
        } else {
            reassign(g, id, name);
        }
        let nack = g.pel.get_mut(&id).expect("pending");
        nack.delivery_time = deliverytime;
        if retrycount >= 0 {
            nack.delivery_count = retrycount as u64;
        } else if !justid {
            nack.delivery_count += 1;
        }
        let (nack, last) = (nack.clone(), g.last_id);
        changed = true;
        out.push(if justid { Reply::Bulk(id.to_bytes()) } else { s.entry(id).map_or(Reply::Nil, entry_reply) });
        stream_propagate::xclaim(core, key, group, id_arg, &nack, last);
        propagate_last_id = false;
    }
    if propagate_last_id {
        let g = tri!(group_or_nogroup(core, key, group)).cgroups[group].clone();
        stream_propagate::setid(core, key, group, &g);
    }
    if changed || have_consumer {
        core.touch(key);
    }
    stream_propagate::prevent(core);
    Reply::Array(out)
}

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]: claims up to COUNT
/// pending entries idle long enough from `start` on, looking at no more than 10 × COUNT, dropping
/// those deleted from the stream; replies the next cursor, the claimed entries and the dropped IDs.
fn xautoclaim(core: &mut Core, a: &[&[u8]]) -> Reply {
    let (key, group, name) = (a[1], a[2], a[3]);
    let minidle = tri!(ll_or(a[4], "Invalid min-idle-time argument for XAUTOCLAIM")).max(0);
    let (mut start, ex) = tri!(interval_id(a[5], 0));
    if ex {
        match start.incr() {
            Some(x) => start = x,
            None => return Reply::err("ERR invalid start ID for the interval"),
        }
    }
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < a.len() {
        if eq_ic(a[j], "count") && j + 1 < a.len() {
            let max_count = i64::MAX / 16;
            count = match crate::keyspace::parse_canonical_i64(a[j + 1]) {
                Some(c) if (1..=max_count).contains(&c) => c,
                _ => return Reply::err("ERR COUNT must be > 0"),
            };
            j += 1;
        } else if eq_ic(a[j], "justid") {
            justid = true;
        } else {
            return Reply::err(SYNTAX);
        }
        j += 1;
    }
    tri!(group_or_nogroup(core, key, group));
    let now = core.now_ms();
    let mut attempts = count.saturating_mul(10);
    let mut claimed = Vec::new();
    let mut deleted = Vec::new();
    let mut have_consumer = false;
    let mut cursor = start;
    let mut eof = false;
    loop {
        if attempts == 0 {
            break;
        }
        attempts -= 1;
        if count == 0 {
            break;
        }
        let s = tri!(group_or_nogroup(core, key, group));
        let Some((&id, nack)) = s.cgroups[group].pel.range(cursor..).next() else {
            eof = true;
            break;
        };
        let delivery_time = nack.delivery_time;
        cursor = match id.incr() {
            Some(n) => n,
            None => {
                eof = true;
                StreamId::MAX
            }
        };
        if s.entry(id).is_none() {
            let g = s.cgroups.get_mut(group).expect("present");
            let nack = g.pel.remove(&id).expect("pending");
            if let Some(c) = g.consumers.get_mut(&nack.consumer) {
                c.pel.remove(&id);
            }
            let last = g.last_id;
            stream_propagate::xclaim(core, key, group, &id.to_bytes(), &nack, last);
            deleted.push(Reply::Bulk(id.to_bytes()));
            count -= 1;
            if eof {
                break;
            }
            continue;
        }
        if minidle != 0 && now - delivery_time < minidle {
            if eof {
                break;
            }
            continue;
        }
        claimer(core, key, group, name, &mut have_consumer);
        let s = tri!(group_or_nogroup(core, key, group));
        let g = s.cgroups.get_mut(group).expect("present");
        reassign(g, id, name);
        let nack = g.pel.get_mut(&id).expect("pending");
        nack.delivery_time = now;
        if !justid {
            nack.delivery_count += 1;
        }
        let (nack, last) = (nack.clone(), g.last_id);
        claimed.push(if justid { Reply::Bulk(id.to_bytes()) } else { s.entry(id).map_or(Reply::Nil, entry_reply) });
        stream_propagate::xclaim(core, key, group, &id.to_bytes(), &nack, last);
        count -= 1;
        if eof {
            break;
        }
    }
    let s = tri!(group_or_nogroup(core, key, group));
    let next = if eof { None } else { s.cgroups[group].pel.range(cursor..).next().map(|(id, _)| *id) };
    if !claimed.is_empty() || !deleted.is_empty() || have_consumer {
        core.touch(key);
    }
    stream_propagate::prevent(core);
    Reply::Array(vec![
        Reply::Bulk(next.unwrap_or(StreamId::MIN).to_bytes()),
        Reply::Array(claimed),
        Reply::Array(deleted),
    ])
}

fn bulk(s: &str) -> Reply {
    Reply::Bulk(s.as_bytes().to_vec())
}

fn id_reply(id: StreamId) -> Reply {
    Reply::Bulk(id.to_bytes())
}

fn entries_read_reply(g: &ConsumerGroup) -> Reply {
    if g.entries_read != INVALID_ENTRIES_READ {
        Reply::Int(g.entries_read)
    } else {
        Reply::Nil
    }
}

fn lag_reply(s: &Stream, g: &ConsumerGroup) -> Reply {
    s.lag(g).map_or(Reply::Nil, Reply::Int)
}

/// XINFO CONSUMERS key group | GROUPS key | STREAM key [FULL [COUNT count]] | HELP.
fn xinfo(core: &mut Core, a: &[&[u8]]) -> Reply {
    if eq_ic(a[1], "help") {
        if a.len() != 2 {
            return subcommand_syntax(a);
        }
        return help(XINFO_HELP);
    }
    let (opt, key) = (a[1], a[2]);
    let now = core.now_ms();
    let Some(s) = tri!(stream_mut(core, key)) else { return Reply::err(NO_SUCH_KEY) };
    let s: &Stream = s;
    if eq_ic(opt, "consumers") && a.len() == 4 {
        let Some(g) = s.cgroups.get(a[3]) else {
            return Reply::Error(format!(
                "NOGROUP No such consumer group '{}' for key name '{}'",
                cstr(a[3]),
                cstr(key)
            ));
        };
        return Reply::Array(
            g.consumers
                .iter()
                .map(|(name, c)| {
                    Reply::Map(vec![
                        (bulk("name"), Reply::Bulk(name.clone())),
                        (bulk("pending"), Reply::Int(c.pel.len() as i64)),
                        (bulk("idle"), Reply::Int((now - c.seen_time).max(0))),
                    ])
                })
                .collect(),
        );
    }
    if eq_ic(opt, "groups") && a.len() == 3 {
        return Reply::Array(
            s.cgroups
                .iter()
                .map(|(name, g)| {
                    Reply::Map(vec![
                        (bulk("name"), Reply::Bulk(name.clone())),
                        (bulk("consumers"), Reply::Int(g.consumers.len() as i64)),
                        (bulk("pending"), Reply::Int(g.pel.len() as i64)),
                        (bulk("last-delivered-id"), id_reply(g.last_id)),
                        (bulk("entries-read"), entries_read_reply(g)),
                        (bulk("lag"), lag_reply(s, g)),
                    ])
                })
                .collect(),
        );
    }
    if eq_ic(opt, "stream") {
        return xinfo_stream(s, a);
    }
    subcommand_syntax(a)
}

/// `xinfoReplyWithStreamInfo`.
fn xinfo_stream(s: &Stream, a: &[&[u8]]) -> Reply {
    let args = &a[3..];
    let mut full = true;
    let mut count: i64 = 10;
    if args.is_empty() {
        full = false;
    } else {
        if !eq_ic(args[0], "full") {
            return subcommand_syntax(a);
        }
        if args.len() > 1 {
            if args.len() != 3 || !eq_ic(args[1], "count") {
                return subcommand_syntax(a);
            }
            count = tri!(arg_i64(args[2]));
            if count < 0 {
                count = 10;
            }
        }
    }
    let mut m = vec![
        (bulk("length"), Reply::Int(s.length as i64)),
        (bulk("radix-tree-keys"), Reply::Int(s.nodes.len() as i64)),
        (bulk("radix-tree-nodes"), Reply::Int(s.rax_nodes() as i64)),
        (bulk("last-generated-id"), id_reply(s.last_id)),
        (bulk("max-deleted-entry-id"), id_reply(s.max_deleted_entry_id)),
        (bulk("entries-added"), Reply::Int(s.entries_added as i64)),
        (bulk("recorded-first-entry-id"), id_reply(s.first_id)),
    ];
    if !full {
        m.push((bulk("groups"), Reply::Int(s.cgroups.len() as i64)));
        let first = s.range(StreamId::MIN, StreamId::MAX, 1, false);
        m.push((bulk("first-entry"), first.first().map_or(Reply::Nil, |e| entry_reply(e))));
        let last = s.range(StreamId::MIN, StreamId::MAX, 1, true);
        m.push((bulk("last-entry"), last.first().map_or(Reply::Nil, |e| entry_reply(e))));
        return Reply::Map(m);
    }
    let limit = if count == 0 { usize::MAX } else { count as usize };
    let entries = s.range(StreamId::MIN, StreamId::MAX, if count == 0 { 0 } else { count as usize }, false);
    m.push((bulk("entries"), Reply::Array(entries.into_iter().map(entry_reply).collect())));
    let groups = s
        .cgroups
        .iter()
        .map(|(name, g)| {
            let pending = g
                .pel
                .iter()
                .take(limit)
                .map(|(id, n)| {
                    Reply::Array(vec![
                        id_reply(*id),
                        Reply::Bulk(n.consumer.clone()),
                        Reply::Int(n.delivery_time),
                        Reply::Int(n.delivery_count as i64),
                    ])
                })
                .collect();
            let consumers = g
                .consumers
                .iter()
                .map(|(cname, c)| {
                    let pel = c
                        .pel
                        .iter()
                        .take(limit)
                        .map(|id| {
                            let n = &g.pel[id];
                            Reply::Array(vec![
                                id_reply(*id),
                                Reply::Int(n.delivery_time),
                                Reply::Int(n.delivery_count as i64),
                            ])
                        })
                        .collect();
                    Reply::Map(vec![
                        (bulk("name"), Reply::Bulk(cname.clone())),
                        (bulk("seen-time"), Reply::Int(c.seen_time)),
                        (bulk("pel-count"), Reply::Int(c.pel.len() as i64)),
                        (bulk("pending"), Reply::Array(pel)),
                    ])
                })
                .collect();
            Reply::Map(vec![
                (bulk("name"), Reply::Bulk(name.clone())),
                (bulk("last-delivered-id"), id_reply(g.last_id)),
                (bulk("entries-read"), entries_read_reply(g)),
                (bulk("lag"), lag_reply(s, g)),
                (bulk("pel-count"), Reply::Int(g.pel.len() as i64)),
                (bulk("pending"), Reply::Array(pending)),
                (bulk("consumers"), Reply::Array(consumers)),
            ])
        })
        .collect();
    m.push((bulk("groups"), Reply::Array(groups)));
    Reply::Map(m)
}

/// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id].
fn xsetid(core: &mut Core, a: &[&[u8]]) -> Reply {
    let (id, _) = tri!(parse_id(a[2], 0, true, false));
    let mut entries_added: i64 = -1;
    let mut max_xdel = StreamId::MIN;
    let mut i = 3;
    while i < a.len() {
        let moreargs = i + 1 < a.len();
        if eq_ic(a[i], "entriesadded") && moreargs {
            entries_added = tri!(arg_i64(a[i + 1]));
            if entries_added < 0 {
                return Reply::err("ERR entries_added must be positive");
            }
            i += 2;
        } else if eq_ic(a[i], "maxdeletedid") && moreargs {
            max_xdel = tri!(parse_id(a[i + 1], 0, true, false)).0;
            if id < max_xdel {
                return Reply::err("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id");
            }
            i += 2;
        } else {
            return Reply::err(SYNTAX);
        }
    }
    let key = a[1];
    let Some(s) = tri!(stream_mut(core, key)) else { return Reply::err(NO_SUCH_KEY) };
    if s.length > 0 {
        if id < s.edge_id(false) {
            return Reply::err("ERR The ID specified in XSETID is smaller than the target stream top item");
        }
        if entries_added != -1 && s.length > entries_added as u64 {
            return Reply::err("ERR The entries_added specified in XSETID is smaller than the target stream length");
        }
    }
    if id < s.max_deleted_entry_id {
        return Reply::err("ERR The ID specified in XSETID is smaller than current max_deleted_entry_id");
    }
    s.last_id = id;
    if entries_added != -1 {
        s.entries_added = entries_added as u64;
    }
    if max_xdel != StreamId::MIN {
        s.max_deleted_entry_id = max_xdel;
    }
    core.touch(key);
    core.notify(notify::STREAM, "xsetid", key);
    Reply::ok()
}
