//! Pub/Sub as Redis 7.0 does it on one node: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE and their UNs,
//! PUBLISH, SPUBLISH and PUBSUB, and the keyspace notifications (`notify-keyspace-events`) that
//! write commands publish through [`Core::notify`].
//!
//! A subscription's confirmations and the messages are pushes ([`Deliver::Push`]) queued in the
//! core's outbox for the subscriber's connection: the server writes them as RESP3 `>` frames or RESP2
//! arrays. The (un)subscribe commands answer only with those pushes (one per channel), so their own
//! reply is dropped ([`Core::no_reply`]).
use rustc_hash::FxHashMap;

use crate::clients::ClientId;
use crate::command_spec::flags::*;
use crate::command_spec::{eq_ic, CommandSpec, KeySpec};
use crate::core::Core;
use crate::deliver::Deliver;
use crate::keyspace::glob_match;
use crate::reply::Reply;
use crate::settings::notify;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "subscribe", arity: -2, flags: NOSCRIPT, keys: KeySpec::NONE, handler: subscribe },
    CommandSpec { name: "unsubscribe", arity: -1, flags: NOSCRIPT, keys: KeySpec::NONE, handler: unsubscribe },
    CommandSpec { name: "psubscribe", arity: -2, flags: NOSCRIPT, keys: KeySpec::NONE, handler: psubscribe },
    CommandSpec { name: "punsubscribe", arity: -1, flags: NOSCRIPT, keys: KeySpec::NONE, handler: punsubscribe },
    CommandSpec { name: "ssubscribe", arity: -2, flags: NOSCRIPT, keys: KeySpec::ALL, handler: ssubscribe },
    CommandSpec { name: "sunsubscribe", arity: -1, flags: NOSCRIPT, keys: KeySpec::ALL, handler: sunsubscribe },
    CommandSpec { name: "publish", arity: 3, flags: MAY_REPLICATE, keys: KeySpec::NONE, handler: publish },
    CommandSpec { name: "spublish", arity: 3, flags: MAY_REPLICATE, keys: KeySpec::ONE, handler: spublish },
    CommandSpec { name: "pubsub", arity: -2, flags: 0, keys: KeySpec::NONE, handler: pubsub },
];

/// Which of the three kinds of subscription.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    fn sub(self) -> &'static str {
        match self {
            Kind::Channel => "subscribe",
            Kind::Pattern => "psubscribe",
            Kind::Shard => "ssubscribe",
        }
    }
    fn unsub(self) -> &'static str {
        match self {
            Kind::Channel => "unsubscribe",
            Kind::Pattern => "punsubscribe",
            Kind::Shard => "sunsubscribe",
        }
    }
}

/// One client's subscriptions, each list in subscription order.
#[derive(Clone, Debug, Default)]
struct Subs {
    channels: Vec<Vec<u8>>,
    patterns: Vec<Vec<u8>>,
    shard: Vec<Vec<u8>>,
}

impl Subs {
    fn of(&mut self, kind: Kind) -> &mut Vec<Vec<u8>> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard,
        }
    }
    /// The count a confirmation carries: channels and patterns together (Redis's
    /// `clientSubscriptionsCount`), shard channels on their own.
    fn count(&self, kind: Kind) -> i64 {
        match kind {
            Kind::Shard => self.shard.len() as i64,
            _ => (self.channels.len() + self.patterns.len()) as i64,
        }
    }
}

/// A client's channels, patterns and shard channels.
pub type SubscriptionLists<'a> = (&'a [Vec<u8>], &'a [Vec<u8>], &'a [Vec<u8>]);

/// Every subscription of the node.
#[derive(Clone, Debug, Default)]
pub struct PubSub {
    /// Channel -> its subscribers, in subscription order.
    channels: FxHashMap<Vec<u8>, Vec<ClientId>>,
    /// Pattern -> its subscribers, patterns in first-subscription order.
    patterns: Vec<(Vec<u8>, Vec<ClientId>)>,
    shard: FxHashMap<Vec<u8>, Vec<ClientId>>,
    clients: FxHashMap<ClientId, Subs>,
}

impl PubSub {
    /// Whether no one subscribes to anything: publishing is then free.
    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// How many channels and patterns `id` subscribes to, and shard channels (CLIENT LIST's `sub`,
    /// `psub`, `ssub`).
    pub fn counts(&self, id: ClientId) -> (usize, usize, usize) {
        self.clients.get(&id).map_or((0, 0, 0), |s| (s.channels.len(), s.patterns.len(), s.shard.len()))
    }

    /// What `id` subscribes to: channels, patterns, shard channels.
    pub fn subscriptions(&self, id: ClientId) -> Option<SubscriptionLists<'_>> {
        self.clients.get(&id).map(|s| (s.channels.as_slice(), s.patterns.as_slice(), s.shard.as_slice()))
    }

    /// Whether `id` is in Pub/Sub mode (subscribed to anything).
    pub fn subscribed(&self, id: ClientId) -> bool {
        self.clients.contains_key(&id)
    }

    /// Channels with at least one subscriber, patterns (PUBSUB NUMPAT) and shard channels.
    pub fn totals(&self) -> (usize, usize, usize) {
        (self.channels.len(), self.patterns.len(), self.shard.len())
    }

    fn table(&mut self, kind: Kind) -> &mut FxHashMap<Vec<u8>, Vec<ClientId>> {
        match kind {
            Kind::Shard => &mut self.shard,
            _ => &mut self.channels,
        }
    }

    /// Adds a subscription; false when `id` already had it.
    fn add(&mut self, id: ClientId, kind: Kind, name: &[u8]) -> bool {
        let subs = self.clients.entry(id).or_default();
        if subs.of(kind).iter().any(|c| c == name) {
            return false;
        }
        subs.of(kind).push(name.to_vec());
        if kind == Kind::Pattern {
            match self.patterns.iter_mut().find(|(p, _)| p == name) {
                Some((_, v)) => v.push(id),
                None => self.patterns.push((name.to_vec(), vec![id])),
            }
        } else {
            self.table(kind).entry(name.to_vec()).or_default().push(id);
        }
        true
    }

    /// Removes a subscription; false when `id` did not have it.
    fn remove(&mut self, id: ClientId, kind: Kind, name: &[u8]) -> bool {
        let Some(subs) = self.clients.get_mut(&id) else { return false };
        let list = subs.of(kind);
        let Some(i) = list.iter().position(|c| c == name) else { return false };
        list.remove(i);
        if subs.channels.is_empty() && subs.patterns.is_empty() && subs.shard.is_empty() {
            self.clients.remove(&id);
        }
        if kind == Kind::Pattern {
            if let Some(i) = self.patterns.iter().position(|(p, _)| p == name) {
                self.patterns[i].1.retain(|c| *c != id);
                if self.patterns[i].1.is_empty() {
                    self.patterns.remove(i);
                }
            }
        } else {
            let table = self.table(kind);
            if let Some(v) = table.get_mut(name) {
                v.retain(|c| *c != id);
                if v.is_empty() {
                    table.remove(name);
                }
            }
        }
        true
    }

    /// A closed connection's subscriptions go.
    pub fn drop_client(&mut self, id: ClientId) {
        let Some(subs) = self.clients.get(&id).cloned() else { return };
        for c in &subs.channels {
            self.remove(id, Kind::Channel, c);
        }
        for p in &subs.patterns {
            self.remove(id, Kind::Pattern, p);
        }
        for s in &subs.shard {
            self.remove(id, Kind::Shard, s);
        }
        self.clients.remove(&id);
    }
}

fn bulk(b: &[u8]) -> Reply {
    Reply::Bulk(b.to_vec())
}

/// The confirmation of a (un)subscription: `[kind, name or nil, count]`.
fn confirm(core: &mut Core, id: ClientId, what: &str, name: Option<&[u8]>, count: i64) {
    let frame = vec![bulk(what.as_bytes()), name.map_or(Reply::Nil, bulk), Reply::Int(count)];
    core.outbox.push((id, Deliver::Push(frame)));
}

fn subscribe_generic(core: &mut Core, a: &[&[u8]], kind: Kind) -> Reply {
    let id = core.caller;
    core.no_reply = true;
    for name in &a[1..] {
        core.pubsub.add(id, kind, name);
        let n = core.pubsub.clients.get(&id).map_or(0, |s| s.count(kind));
        confirm(core, id, kind.sub(), Some(name), n);
    }
    Reply::NilArray
}

fn unsubscribe_generic(core: &mut Core, a: &[&[u8]], kind: Kind) -> Reply {
    let id = core.caller;
    core.no_reply = true;
    let names: Vec<Vec<u8>> = if a.len() > 1 {
        a[1..].iter().map(|n| n.to_vec()).collect()
    } else {
        core.pubsub.clients.get_mut(&id).map_or_else(Vec::new, |s| s.of(kind).clone())
    };
    if names.is_empty() {
        let n = core.pubsub.clients.get(&id).map_or(0, |s| s.count(kind));
        confirm(core, id, kind.unsub(), None, n);
    }
    for name in &names {
        core.pubsub.remove(id, kind, name);
        let n = core.pubsub.clients.get(&id).map_or(0, |s| s.count(kind));
        confirm(core, id, kind.unsub(), Some(name), n);
    }
    Reply::NilArray
}

fn subscribe(core: &mut Core, a: &[&[u8]]) -> Reply {
    subscribe_generic(core, a, Kind::Channel)
}
fn unsubscribe(core: &mut Core, a: &[&[u8]]) -> Reply {
    unsubscribe_generic(core, a, Kind::Channel)
}
fn psubscribe(core: &mut Core, a: &[&[u8]]) -> Reply {
    subscribe_generic(core, a, Kind::Pattern)
}
fn punsubscribe(core: &mut Core, a: &[&[u8]]) -> Reply {
    unsubscribe_generic(core, a, Kind::Pattern)
}
fn ssubscribe(core: &mut Core, a: &[&[u8]]) -> Reply {
    if core.in_exec {
        return Reply::err("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client");
    }
    subscribe_generic(core, a, Kind::Shard)
}
fn sunsubscribe(core: &mut Core, a: &[&[u8]]) -> Reply {
    unsubscribe_generic(core, a, Kind::Shard)
}

fn publish(core: &mut Core, a: &[&[u8]]) -> Reply {
    Reply::Int(core.publish(a[1], a[2]) as i64)
}

fn spublish(core: &mut Core, a: &[&[u8]]) -> Reply {
    let Some(subs) = core.pubsub.shard.get(a[1]) else { return Reply::Int(0) };
    let subs = subs.clone();
    for id in &subs {
        let frame = vec![bulk(b"smessage"), bulk(a[1]), bulk(a[2])];
        core.outbox.push((*id, Deliver::Push(frame)));
    }
    Reply::Int(subs.len() as i64)
}

/// PUBSUB CHANNELS [pattern] | NUMSUB [channel ...] | NUMPAT | SHARDCHANNELS [pattern] |
/// SHARDNUMSUB [channel ...] | HELP (subcommand names and arities checked by the caller).
fn pubsub(core: &mut Core, a: &[&[u8]]) -> Reply {
    let sub = a[1];
    let ps = &core.pubsub;
    if eq_ic(sub, "help") {
        const HELP: &[&str] = &[
            "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
            "HELP",
            "    Prints this help.",
        ];
        return Reply::Array(HELP.iter().map(|l| Reply::Status((*l).into())).collect());
    }
    let shard = eq_ic(sub, "shardchannels") || eq_ic(sub, "shardnumsub");
    let table = if shard { &ps.shard } else { &ps.channels };
    if eq_ic(sub, "channels") || eq_ic(sub, "shardchannels") {
        let pat = a.get(2).copied();
        let v = table.keys().filter(|c| pat.is_none_or(|p| glob_match(p, c, false))).map(|c| bulk(c)).collect();
        return Reply::Array(v);
    }
    if eq_ic(sub, "numsub") || eq_ic(sub, "shardnumsub") {
        let mut v = Vec::with_capacity(2 * (a.len() - 2));
        for c in &a[2..] {
            v.push(bulk(c));
            v.push(Reply::Int(table.get(*c).map_or(0, |s| s.len() as i64)));
        }
        return Reply::Array(v);
    }
    if eq_ic(sub, "numpat") {
        return Reply::Int(ps.patterns.len() as i64);
    }
    Reply::Error(format!("ERR unknown subcommand '{}'. Try PUBSUB HELP.", String::from_utf8_lossy(sub)))
}

impl Core {
    /// PUBLISH: queues the message for every subscriber of `channel` and of a matching pattern;
    /// returns how many receive it.
    pub fn publish(&mut self, channel: &[u8], msg: &[u8]) -> usize {
        if self.pubsub.is_empty() {
            return 0;
        }
        let mut n = 0;
        if let Some(subs) = self.pubsub.channels.get(channel) {
            for id in subs {
                let frame = vec![bulk(b"message"), bulk(channel), bulk(msg)];
                self.outbox.push((*id, Deliver::Push(frame)));
                n += 1;
            }
        }
        for (pat, subs) in &self.pubsub.patterns {
            if glob_match(pat, channel, false) {
                for id in subs {
                    let frame = vec![bulk(b"pmessage"), bulk(pat), bulk(channel), bulk(msg)];
                    self.outbox.push((*id, Deliver::Push(frame)));
                    n += 1;
                }
            }
        }
        n
    }

    /// Redis's `notifyKeyspaceEvent`: when `notify-keyspace-events` enables `class` (a
    /// [`notify`] flag), publishes `event` on `__keyspace@<db>__:<key>` and `key` on
    /// `__keyevent@<db>__:<event>`, each as its K/E flag allows. Free when notifications are off.
    #[inline]
    pub fn notify(&mut self, class: u32, event: &str, key: &[u8]) {
        let flags = self.settings.notify_flags();
        if flags & class == 0 || flags & (notify::KEYSPACE | notify::KEYEVENT) == 0 {
            return;
        }
        self.notify_now(flags, event, key);
    }

    #[cold]
    fn notify_now(&mut self, flags: u32, event: &str, key: &[u8]) {
        self.flush_new_keys(Some(key));
        if self.pubsub.is_empty() {
            return;
        }
        let db = itoa::Buffer::new().format(self.selected).to_string();
        if flags & notify::KEYSPACE != 0 {
            let mut ch = Vec::with_capacity(16 + key.len());
            ch.extend_from_slice(b"__keyspace@");
            ch.extend_from_slice(db.as_bytes());
            ch.extend_from_slice(b"__:");
            ch.extend_from_slice(key);
            self.publish(&ch, event.as_bytes());
        }
        if flags & notify::KEYEVENT != 0 {
            let mut ch = Vec::with_capacity(16 + event.len());
            ch.extend_from_slice(b"__keyevent@");
            ch.extend_from_slice(db.as_bytes());
            ch.extend_from_slice(b"__:");
            ch.extend_from_slice(event.as_bytes());
            self.publish(&ch, key);
        }
    }

    /// Publishes the `new` events of the keys a write created (noted before it ran, see
    /// [`crate::command_spec::CommandSpec::run`]), before the event of the write itself as Redis's
    /// `dbAdd` does; `key`, when given, is the key the write's own event is about.
    pub(crate) fn flush_new_keys(&mut self, key: Option<&[u8]>) {
        if self.new_keys.is_empty() {
            return;
        }
        let now = self.now_ms();
        let keys = std::mem::take(&mut self.new_keys);
        let mut rest = Vec::new();
        for k in keys {
            let created = self.db.peek(&k, now).is_some();
            if created && key.is_none_or(|x| x == k.as_slice()) {
                self.notify(notify::NEW, "new", &k);
            } else if !created || key.is_some() {
                rest.push(k);
            }
        }
        if key.is_some() {
            self.new_keys = rest;
        }
    }
}

/// When a command's keyspace event fires.
#[derive(Clone, Copy, PartialEq)]
enum When {
    /// Whenever the command succeeds (SET fires over an equal value, as in Redis).
    Ok,
    /// When the key's contents or TTL changed.
    Changed,
    /// When the command replied 1 (EXPIRE, PERSIST, SETNX, ...).
    One,
    /// When the key existed before and is gone after (DEL, UNLINK, GETDEL).
    Deleted,
}

/// Which of a command's keys get its event.
#[derive(Clone, Copy, PartialEq)]
enum Keys {
    First,
    All,
}

/// The keyspace events of the commands whose handlers do not publish their own (Redis's
/// `notifyKeyspaceEvent` calls, by command): the class, the event, when it fires, on which keys.
fn table_event(name: &str) -> Option<(u32, &'static str, When, Keys)> {
    use notify::*;
    use Keys::*;
    use When::*;
    Some(match name {
        "set" | "setex" | "psetex" | "getset" => (STRING, "set", Ok, First),
        "setnx" => (STRING, "set", One, First),
        "mset" => (STRING, "set", Ok, All),
        "msetnx" => (STRING, "set", One, All),
        "append" => (STRING, "append", Ok, First),
        "setrange" => (STRING, "setrange", Changed, First),
        "incr" | "decr" | "incrby" | "decrby" => (STRING, "incrby", Ok, First),
        "incrbyfloat" => (STRING, "incrbyfloat", Ok, First),
        "setbit" | "bitfield" => (STRING, "setbit", Changed, First),
        "bitop" => (STRING, "set", Changed, First),
        "pfadd" => (STRING, "pfadd", Changed, First),
        "pfmerge" => (STRING, "pfadd", Ok, First),
        "getdel" | "del" | "unlink" => (GENERIC, "del", Deleted, All),
        "expire" | "pexpire" | "expireat" | "pexpireat" => (GENERIC, "expire", One, First),
        "persist" => (GENERIC, "persist", One, First),
        "restore" => (GENERIC, "restore", Ok, First),
        "sort" => (LIST, "sortstore", Changed, All),
        "sadd" => (SET, "sadd", Changed, First),
        "srem" => (SET, "srem", Changed, First),
        "spop" => (SET, "spop", Changed, First),
        "sinterstore" => (SET, "sinterstore", Ok, First),
        "sunionstore" => (SET, "sunionstore", Ok, First),
        "sdiffstore" => (SET, "sdiffstore", Ok, First),
        "hset" | "hmset" => (HASH, "hset", Ok, First),
        "hsetnx" => (HASH, "hset", One, First),
        "hincrby" => (HASH, "hincrby", Ok, First),
        "hincrbyfloat" => (HASH, "hincrbyfloat", Ok, First),
        "hdel" => (HASH, "hdel", Changed, First),
        "zadd" => (ZSET, "zadd", Changed, First),
        "zincrby" => (ZSET, "zincr", Ok, First),
        // GEOADD runs as ZADD (Redis rewrites it), so its event is ZADD's.
        "geoadd" => (ZSET, "zadd", Changed, First),
        "zrem" => (ZSET, "zrem", Changed, First),
        "zremrangebyscore" => (ZSET, "zremrangebyscore", Changed, First),
        "zremrangebyrank" => (ZSET, "zremrangebyrank", Changed, First),
        "zremrangebylex" => (ZSET, "zremrangebylex", Changed, First),
        "zpopmin" => (ZSET, "zpopmin", Changed, First),
        "zpopmax" => (ZSET, "zpopmax", Changed, First),
        "zunionstore" => (ZSET, "zunionstore", Ok, First),
        "zinterstore" => (ZSET, "zinterstore", Ok, First),
        "zdiffstore" => (ZSET, "zdiffstore", Ok, First),
        "zrangestore" => (ZSET, "zrangestore", Ok, First),
        "xdel" => (STREAM, "xdel", Changed, First),
        "xtrim" => (STREAM, "xtrim", Changed, First),
        _ => return None,
    })
}

/// The keys a table event is about, with each one's state before the command.
pub(crate) struct Before {
    keys: Vec<(Vec<u8>, u64)>,
}

impl Core {
    /// Before a write while notifications are on: notes the digests of the keys its event may be
    /// about (see [`Core::table_events_after`]).
    pub(crate) fn table_events_before(&mut self, spec: &CommandSpec, args: &[&[u8]]) -> Option<Before> {
        let (_, _, _, which) = table_event(spec.name)?;
        let now = self.now_ms();
        let mut keys = spec.keys.keys(args);
        if spec.name == "sort" {
            // SORT's event is about its STORE key only.
            keys.retain(|k| !std::ptr::eq(*k, args[1]));
        } else if which == Keys::First {
            keys.truncate(1);
        }
        let keys = keys.into_iter().map(|k| (k.to_vec(), crate::clients::fingerprint(self.db.peek(k, now)))).collect();
        Some(Before { keys })
    }

    /// After the write: publishes its event for each key as [`table_event`] says, and `del` for a
    /// key it emptied.
    pub(crate) fn table_events_after(&mut self, spec: &CommandSpec, before: Before, reply: &Reply) {
        let Some((class, event, when, _)) = table_event(spec.name) else { return };
        if reply.is_error() || matches!(reply, Reply::Nil | Reply::NilArray) && when == When::Ok {
            return;
        }
        let now = self.now_ms();
        for (key, was) in before.keys {
            let is = crate::clients::fingerprint(self.db.peek(&key, now));
            let fire = match when {
                When::Ok => true,
                When::Changed => is != was,
                When::One => *reply == Reply::Int(1),
                When::Deleted => was != 0 && is == 0,
            };
            if fire {
                self.notify(class, event, &key);
            }
            if when != When::Deleted && was != 0 && is == 0 {
                self.notify(notify::GENERIC, "del", &key);
            }
        }
    }
}
