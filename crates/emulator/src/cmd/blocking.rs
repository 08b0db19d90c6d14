//! The blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP) as
//! Redis 7.0 runs them.
//!
//! A blocking command that finds something to pop answers like its non-blocking form. Otherwise
//! its client waits ([`Waiter`]), unless it runs inside MULTI/EXEC or a script, where it answers
//! its timeout reply at once. A waiter is served after the command (the whole transaction, the
//! whole script) that left one of its keys holding elements of its type: [`Core::serve_ready`], run
//! by the server after every command, pops for the waiters of each such key in the order they
//! blocked, from that key, and queues their replies ([`Deliver::Unblock`]); a served BLMOVE that
//! fills another waited-on key serves that key's waiters in turn. A key that held elements for a
//! moment (MULTI: LPUSH then DEL) serves no one, and a key that became another type keeps its
//! waiters waiting (Redis 7.0 serves a key only for clients blocked on its type).
//!
//! Timeouts are deadlines on the emulator's clock: [`Core::expire_waiters`] answers the waiters
//! whose deadline has passed, and [`Core::next_deadline`] tells a server when to look again.
use crate::clients::ClientId;
use crate::clock::Clock;
use crate::command_spec::flags::*;
use crate::command_spec::{eq_ic, parse_f64, CommandSpec, KeySpec, SYNTAX};
use crate::core::Core;
use crate::deliver::Deliver;
use crate::keyspace::{parse_canonical_i64, Value};
use crate::reply::Reply;
use crate::tri;

use super::lists;
use super::zsets;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "blpop", arity: -3, flags: WRITE | NOSCRIPT, keys: KeySpec::at(1, -2, 1), handler: blpop },
    CommandSpec { name: "brpop", arity: -3, flags: WRITE | NOSCRIPT, keys: KeySpec::at(1, -2, 1), handler: brpop },
    CommandSpec { name: "blmove", arity: 6, flags: WRITE | DENYOOM | NOSCRIPT, keys: KeySpec::TWO, handler: blmove },
    CommandSpec {
        name: "brpoplpush",
        arity: 4,
        flags: WRITE | DENYOOM | NOSCRIPT,
        keys: KeySpec::TWO,
        handler: brpoplpush,
    },
    CommandSpec {
        name: "blmpop",
        arity: -5,
        flags: WRITE | MOVABLE_KEYS,
        keys: KeySpec::movable(blocking_mpop_keys),
        handler: blmpop,
    },
    CommandSpec {
        name: "bzpopmin",
        arity: -3,
        flags: WRITE | NOSCRIPT,
        keys: KeySpec::at(1, -2, 1),
        handler: bzpopmin,
    },
    CommandSpec {
        name: "bzpopmax",
        arity: -3,
        flags: WRITE | NOSCRIPT,
        keys: KeySpec::at(1, -2, 1),
        handler: bzpopmax,
    },
    CommandSpec {
        name: "bzmpop",
        arity: -5,
        flags: WRITE | MOVABLE_KEYS,
        keys: KeySpec::movable(blocking_mpop_keys),
        handler: bzmpop,
    },
];

/// BLMPOP's and BZMPOP's keys: the timeout at 1, `numkeys` at 2, then the keys.
fn blocking_mpop_keys<'a>(args: &[&'a [u8]]) -> Vec<&'a [u8]> {
    if args.len() < 2 {
        return Vec::new();
    }
    crate::command_spec::numkeys_keys(&args[1..], false)
}

/// What serving a waiter pops.
#[derive(Clone, Debug)]
enum Serve {
    /// BLPOP/BRPOP: one element, `[key, element]`.
    Pop { front: bool },
    /// BLMOVE/BRPOPLPUSH (`rpoplpush`): the element moves to `dst`; the reply is the element.
    Move { dst: Vec<u8>, from_head: bool, to_head: bool, rpoplpush: bool },
    /// BLMPOP: up to `count`, `[key, [elements]]`.
    MPop { front: bool, count: usize },
    /// BZPOPMIN/BZPOPMAX: `[key, member, score]`.
    ZPop { max: bool },
    /// BZMPOP: up to `count`, `[key, [[member, score], ...]]`.
    ZMPop { max: bool, count: usize },
    /// XREAD/XREADGROUP: the entries after an ID (`cmd::stream_read`).
    Stream(super::stream_read::StreamWait),
}

impl Serve {
    fn zset(&self) -> bool {
        matches!(self, Serve::ZPop { .. } | Serve::ZMPop { .. })
    }
    fn stream(&self) -> bool {
        matches!(self, Serve::Stream(_))
    }

    /// What serving a waiter from `key` with reply `r` is propagated as (Redis's
    /// `serveClientBlockedOnList` and the like): a plain pop, or nothing when nothing was popped.
    fn propagated(&self, key: &[u8], r: &Reply) -> Option<Vec<Vec<u8>>> {
        if matches!(r, Reply::Nil | Reply::NilArray | Reply::Error(_)) {
            return None;
        }
        let side = |head: bool| if head { b"left".to_vec() } else { b"right".to_vec() };
        let count = |r: &Reply| match r {
            Reply::Array(kv) => match kv.get(1) {
                Some(Reply::Array(items)) => items.len().to_string().into_bytes(),
                _ => b"0".to_vec(),
            },
            _ => b"0".to_vec(),
        };
        let k = key.to_vec();
        Some(match self {
            Serve::Pop { front } => vec![if *front { b"LPOP".to_vec() } else { b"RPOP".to_vec() }, k],
            Serve::Move { dst, rpoplpush: true, .. } => vec![b"RPOPLPUSH".to_vec(), k, dst.clone()],
            Serve::Move { dst, from_head, to_head, .. } => {
                vec![b"LMOVE".to_vec(), k, dst.clone(), side(*from_head), side(*to_head)]
            }
            Serve::MPop { front, .. } => vec![if *front { b"LPOP".to_vec() } else { b"RPOP".to_vec() }, k, count(r)],
            Serve::ZPop { max } => vec![if *max { b"ZPOPMAX".to_vec() } else { b"ZPOPMIN".to_vec() }, k],
            Serve::ZMPop { max, .. } => {
                vec![if *max { b"ZPOPMAX".to_vec() } else { b"ZPOPMIN".to_vec() }, k, count(r)]
            }
            // A served XREAD writes nothing; a served XREADGROUP's XCLAIM/XGROUP SETID are not
            // propagated yet (docs/fidelity.md).
            Serve::Stream(_) => return None,
        })
    }

    /// The reply on timeout: a nil for BLMOVE/BRPOPLPUSH, a nil array for the others.
    fn timeout_reply(&self) -> Reply {
        match self {
            Serve::Move { .. } => Reply::Nil,
            _ => Reply::NilArray,
        }
    }
}

/// A client waiting on keys.
#[derive(Clone, Debug)]
pub struct Waiter {
    pub client: ClientId,
    db: usize,
    keys: Vec<Vec<u8>>,
    serve: Serve,
    /// When it times out (emulator clock, ms); None blocks forever.
    pub deadline: Option<i64>,
    resp3: bool,
}

/// The clients blocked on keys, in the order they blocked.
#[derive(Clone, Debug, Default)]
pub struct Blocking {
    waiters: Vec<Waiter>,
    /// Whether clients may block at all: only behind a server, where another connection can serve
    /// them. An embedding program's client gets the timeout reply at once instead.
    pub enabled: bool,
}

impl Blocking {
    /// How many clients are blocked (INFO's `blocked_clients`).
    pub fn count(&self) -> usize {
        self.waiters.len()
    }
    /// Whether `id` is blocked.
    pub fn is_blocked(&self, id: ClientId) -> bool {
        self.waiters.iter().any(|w| w.client == id)
    }
    /// Whether any client is blocked.
    #[inline]
    pub fn any(&self) -> bool {
        !self.waiters.is_empty()
    }
    /// Removes `id`'s wait (a closed connection, CLIENT UNBLOCK), returning it.
    pub fn remove(&mut self, id: ClientId) -> Option<Waiter> {
        let i = self.waiters.iter().position(|w| w.client == id)?;
        Some(self.waiters.remove(i))
    }
}

/// `getTimeoutFromObjectOrReply` in seconds: the deadline (0 for none) on the emulator's clock.
fn parse_timeout(core: &Core, b: &[u8]) -> Result<i64, Reply> {
    let Some(secs) = parse_f64(b) else { return Err(Reply::err("ERR timeout is not a float or out of range")) };
    let ms = secs * 1000.0;
    // C's cast of an out-of-range double gives LLONG_MIN on x86-64.
    let t = if ms.is_finite() && ms < 9.2e18 && ms > -9.2e18 { ms as i64 } else { i64::MIN };
    deadline(core, t)
}

/// The end of `getTimeoutFromObjectOrReply`, for a timeout already in ms (BLPOP's seconds, XREAD's
/// ms): the deadline on the emulator's clock, 0 for none.
pub(crate) fn deadline(core: &Core, t: i64) -> Result<i64, Reply> {
    if t < 0 {
        return Err(Reply::err("ERR timeout is negative"));
    }
    if t > 0 {
        let now = core.now_ms();
        if t > i64::MAX - now {
            return Err(Reply::err("ERR timeout is out of range"));
        }
        return Ok(t + now);
    }
    Ok(0)
}

/// The parsed arguments of LMPOP/ZMPOP and their blocking forms: the keys are
/// `a[first..first + n]`.
pub(crate) struct Mpop {
    pub first: usize,
    pub n: usize,
    /// RIGHT (lists) or MAX (sorted sets).
    pub right: bool,
    pub count: usize,
}

/// Parses `numkeys key [key ...] LEFT|RIGHT [COUNT count]` (or MIN|MAX) from `a[numkeys_at]` on,
/// with Redis's checks in Redis's order.
pub(crate) fn parse_mpop(a: &[&[u8]], numkeys_at: usize, words: (&str, &str)) -> Result<Mpop, Reply> {
    let n = match parse_canonical_i64(a[numkeys_at]) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err(Reply::err("ERR numkeys should be greater than 0")),
    };
    let where_at = (numkeys_at as u64).saturating_add(n).saturating_add(1);
    if where_at >= a.len() as u64 {
        return Err(Reply::err(SYNTAX));
    }
    let where_at = where_at as usize;
    let right = if eq_ic(a[where_at], words.0) {
        false
    } else if eq_ic(a[where_at], words.1) {
        true
    } else {
        return Err(Reply::err(SYNTAX));
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < a.len() {
        if count.is_none() && eq_ic(a[j], "count") && j + 1 < a.len() {
            j += 1;
            match parse_canonical_i64(a[j]) {
                Some(c) if c >= 1 => count = Some(c as usize),
                _ => return Err(Reply::err("ERR count should be greater than 0")),
            }
        } else {
            return Err(Reply::err(SYNTAX));
        }
        j += 1;
    }
    Ok(Mpop { first: numkeys_at + 1, n: n as usize, right, count: count.unwrap_or(1) })
}

/// Whether the caller may block: not inside MULTI/EXEC or a script (Redis's `CLIENT_DENY_BLOCKING`),
/// and only behind a server.
fn may_block(core: &Core) -> bool {
    core.blocking.enabled && !core.in_exec && !core.in_script()
}

/// Blocks the caller on `keys` (or answers the timeout reply when it may not block).
fn block(core: &mut Core, keys: &[&[u8]], deadline: i64, serve: Serve) -> Reply {
    if !may_block(core) {
        return serve.timeout_reply();
    }
    let w = Waiter {
        client: core.caller,
        db: core.selected,
        keys: keys.iter().map(|k| k.to_vec()).collect(),
        serve,
        deadline: (deadline > 0).then_some(deadline),
        resp3: core.resp3,
    };
    core.blocking.waiters.push(w);
    Reply::NilArray
}

/// Blocks an XREAD/XREADGROUP caller on `keys` (a nil array when it may not block).
pub(crate) fn block_stream(
    core: &mut Core,
    keys: &[&[u8]],
    deadline: i64,
    wait: super::stream_read::StreamWait,
) -> Reply {
    block(core, keys, deadline, Serve::Stream(wait))
}

fn bpop(core: &mut Core, a: &[&[u8]], front: bool) -> Reply {
    let deadline = tri!(parse_timeout(core, a[a.len() - 1]));
    let keys = &a[1..a.len() - 1];
    for key in keys {
        if let Some(r) = tri!(lists::pop_one(core, key, front)) {
            return r;
        }
    }
    block(core, keys, deadline, Serve::Pop { front })
}

fn blpop(core: &mut Core, a: &[&[u8]]) -> Reply {
    bpop(core, a, true)
}
fn brpop(core: &mut Core, a: &[&[u8]]) -> Reply {
    bpop(core, a, false)
}

fn bmove(core: &mut Core, src: &[u8], dst: &[u8], sides: (bool, bool), rpoplpush: bool, timeout: &[u8]) -> Reply {
    let (from_head, to_head) = sides;
    let deadline = tri!(parse_timeout(core, timeout));
    if tri!(lists::has_elements(core, src)) {
        return lists::lmove_keys(core, src, dst, from_head, to_head);
    }
    block(core, &[src], deadline, Serve::Move { dst: dst.to_vec(), from_head, to_head, rpoplpush })
}

/// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout.
fn blmove(core: &mut Core, a: &[&[u8]]) -> Reply {
    let from = tri!(lists::parse_side(a[3]));
    let to = tri!(lists::parse_side(a[4]));
    bmove(core, a[1], a[2], (from, to), false, a[5])
}

/// BRPOPLPUSH source destination timeout.
fn brpoplpush(core: &mut Core, a: &[&[u8]]) -> Reply {
    bmove(core, a[1], a[2], (false, true), true, a[3])
}

/// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count].
fn blmpop(core: &mut Core, a: &[&[u8]]) -> Reply {
    let m = tri!(parse_mpop(a, 2, ("left", "right")));
    let deadline = tri!(parse_timeout(core, a[1]));
    let keys = &a[m.first..m.first + m.n];
    for key in keys {
        if tri!(lists::has_elements(core, key)) {
            return lists::mpop(core, &[key], !m.right, m.count);
        }
    }
    block(core, keys, deadline, Serve::MPop { front: !m.right, count: m.count })
}

fn bzpop(core: &mut Core, a: &[&[u8]], max: bool) -> Reply {
    let deadline = tri!(parse_timeout(core, a[a.len() - 1]));
    let keys = &a[1..a.len() - 1];
    for key in keys {
        if tri!(zsets::has_members(core, key)) {
            return zsets::bzpop_one(core, key, max);
        }
    }
    block(core, keys, deadline, Serve::ZPop { max })
}

fn bzpopmin(core: &mut Core, a: &[&[u8]]) -> Reply {
    bzpop(core, a, false)
}
fn bzpopmax(core: &mut Core, a: &[&[u8]]) -> Reply {
    bzpop(core, a, true)
}

/// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count].
fn bzmpop(core: &mut Core, a: &[&[u8]]) -> Reply {
    let m = tri!(parse_mpop(a, 2, ("min", "max")));
    let deadline = tri!(parse_timeout(core, a[1]));
    let keys = &a[m.first..m.first + m.n];
    for key in keys {
        if tri!(zsets::has_members(core, key)) {
            return zsets::zmpop_keys(core, &[key], m.right, m.count);
        }
    }
    block(core, keys, deadline, Serve::ZMPop { max: m.right, count: m.count })
}

impl Core {
    /// Whether `key` (selected database) holds elements of the type `w` waits for.
    fn ready_for(&mut self, key: &[u8], zset: bool) -> bool {
        let now = self.now_ms();
        match self.db.peek(key, now).map(|e| &e.value) {
            Some(Value::List(l)) => !zset && !l.is_empty(),
            Some(Value::ZSet(z)) => zset && !z.is_empty(),
            _ => false,
        }
    }

    /// Serves `w` from `key` (its database selected), as its command would have.
    fn serve_one(&mut self, w: &Waiter, key: &[u8]) -> Reply {
        match &w.serve {
            Serve::Pop { front } => match lists::pop_one(self, key, *front) {
                Ok(Some(r)) => r,
                Ok(None) => Reply::NilArray,
                Err(e) => e,
            },
            Serve::Move { dst, from_head, to_head, .. } => lists::lmove_keys(self, key, dst, *from_head, *to_head),
            Serve::MPop { front, count } => lists::mpop(self, &[key], *front, *count),
            Serve::ZPop { max } => zsets::bzpop_one(self, key, *max),
            Serve::ZMPop { max, count } => zsets::zmpop_keys(self, &[key], *max, *count),
            Serve::Stream(_) => Reply::NilArray,
        }
    }

    /// Redis's `handleClientsBlockedOnKeys`, run after every top-level command while clients are
    /// blocked: every waited-on key that holds elements of its waiters' type serves them, first
    /// blocked first, while it has elements; and again, as long as serving made another key ready.
    pub fn serve_ready(&mut self) {
        if self.blocking.waiters.is_empty() {
            return;
        }
        let (selected, caller, resp3) = (self.selected, self.caller, self.resp3);
        loop {
            let mut served = false;
            let mut i = 0;
            while i < self.blocking.waiters.len() {
                let (db, zset) = (self.blocking.waiters[i].db, self.blocking.waiters[i].serve.zset());
                self.select(db);
                if self.blocking.waiters[i].serve.stream() {
                    // Stream readers are not consumers of the key: each is served when its key
                    // has entries after its ID, in blocking order.
                    if self.serve_stream_waiter(i) {
                        served = true;
                        i = 0;
                    } else {
                        i += 1;
                    }
                    continue;
                }
                let found = (0..self.blocking.waiters[i].keys.len()).find(|&k| {
                    let key = self.blocking.waiters[i].keys[k].clone();
                    self.ready_for(&key, zset)
                });
                let Some(k) = found else {
                    i += 1;
                    continue;
                };
                let key = self.blocking.waiters[i].keys[k].clone();
                // The first waiter on this key (and type) in blocking order is served first.
                let first = (0..self.blocking.waiters.len())
                    .find(|&j| {
                        let w = &self.blocking.waiters[j];
                        w.db == db && !w.serve.stream() && w.serve.zset() == zset && w.keys.contains(&key)
                    })
                    .unwrap_or(i);
                let w = self.blocking.waiters.remove(first);
                self.caller = w.client;
                self.resp3 = w.resp3;
                let r = self.serve_one(&w, &key);
                if self.repl.active {
                    if let Some(argv) = w.serve.propagated(&key, &r) {
                        crate::propagate::served(self, db, argv);
                    }
                }
                self.outbox.push((w.client, Deliver::Unblock(r)));
                served = true;
                i = 0;
            }
            if !served {
                break;
            }
        }
        self.select(selected);
        self.caller = caller;
        self.resp3 = resp3;
    }

    /// Serves the stream reader `i` (its database selected) if one of its keys is ready for it.
    fn serve_stream_waiter(&mut self, i: usize) -> bool {
        let Serve::Stream(wait) = self.blocking.waiters[i].serve.clone() else { return false };
        let (client, resp3) = (self.blocking.waiters[i].client, self.blocking.waiters[i].resp3);
        let keys = self.blocking.waiters[i].keys.clone();
        self.caller = client;
        self.resp3 = resp3;
        for (k, key) in keys.iter().enumerate() {
            if let Some(r) = super::stream_read::serve_waiter(self, key, k, &wait, resp3) {
                // A group read served sends the replicas what it did to the group.
                let sent = std::mem::take(&mut self.repl.own);
                crate::propagate::served_unit(self, self.selected, sent);
                self.blocking.waiters.remove(i);
                self.outbox.push((client, Deliver::Unblock(r)));
                return true;
            }
        }
        false
    }

    /// Answers, with their timeout reply, the waiters whose deadline is before `now` (the
    /// emulator's clock).
    pub fn expire_waiters(&mut self) {
        let now = self.clock.now_millis().0;
        let mut i = 0;
        while i < self.blocking.waiters.len() {
            if self.blocking.waiters[i].deadline.is_some_and(|d| d < now) {
                let w = self.blocking.waiters.remove(i);
                self.outbox.push((w.client, Deliver::Unblock(w.serve.timeout_reply())));
            } else {
                i += 1;
            }
        }
    }

    /// The earliest deadline of a waiter (emulator clock, ms).
    pub fn next_deadline(&self) -> Option<i64> {
        self.blocking.waiters.iter().filter_map(|w| w.deadline).min()
    }

    /// CLIENT UNBLOCK: ends `id`'s wait with its timeout reply, or with an UNBLOCKED error; false
    /// when it was not blocked.
    pub fn unblock(&mut self, id: ClientId, error: bool) -> bool {
        let Some(w) = self.blocking.remove(id) else { return false };
        let r =
            if error { Reply::err("UNBLOCKED client unblocked via CLIENT UNBLOCK") } else { w.serve.timeout_reply() };
        self.outbox.push((id, Deliver::Unblock(r)));
        true
    }
}
