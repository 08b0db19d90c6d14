//! The replication stream, as a Redis 7.0.15 master sends it to the replicas attached with `SYNC`
//! (or `PSYNC ? -1`): after the snapshot ([`crate::snapshot`]), every change as a RESP array of bulk
//! strings, each checked against a real Redis 7.0.15 byte for byte.
//!
//! - Only what changed the dataset goes (Redis's `server.dirty`): a write's keys are compared
//!   before and after it ([`fingerprint`]), and a handler's [`Core::touch`] counts as a change even
//!   when the value stayed (`INCRBY k 0`); FLUSHALL, FLUSHDB, SWAPDB, PUBLISH and the FUNCTION
//!   writes always go. Reads never do.
//! - Commands go as sent, or rewritten as Redis rewrites them (`rewrite`): relative TTLs become
//!   absolute (`SET ... PXAT`, `PEXPIREAT`, RESTORE's `ABSTTL`), pops that depend on chance or on
//!   blocking become plain ones (SPOP → SREM or DEL, BLPOP → LPOP, LMPOP → LPOP key count, ...),
//!   floats become the value they produced (INCRBYFLOAT → `SET ... KEEPTTL`).
//! - A key removed for its deadline goes as `DEL` (`UNLINK` under `lazyfree-lazy-expire`), where
//!   it was removed: before the command that looked it up, or alone for the active expire cycle,
//!   RANDOMKEY, SCAN, KEYS and DBSIZE.
//! - What one client call produced (a command, a transaction's EXEC, a script) is one unit:
//!   wrapped in `MULTI`/`EXEC` when it holds more than one command (Redis 7.0's
//!   `propagatePendingCommands`), preceded by a `SELECT` whenever its database is not the last one
//!   sent (and always after a replica attaches).
//! - A server that became a replica itself (REPLICAOF) sends nothing, as Redis's
//!   `replicationFeedSlaves` returns for a replica.
//!
//! Nothing here runs while no replica is attached: the only cost is one test of
//! [`Repl::active`] per command.
use crate::clients::{fingerprint, ClientId};
use crate::command_spec::{flags, CommandSpec};
use crate::core::{Core, DATABASES};
use crate::reply::Reply;

/// One attached replica.
#[derive(Clone, Debug)]
pub struct Replica {
    /// Its connection's client.
    pub client: ClientId,
    /// Its address as INFO shows it (`ip`), and the port it said it listens on (REPLCONF
    /// listening-port; 0 when it did not say).
    pub ip: String,
    pub port: u16,
}

/// The replication state of a master.
#[derive(Default)]
pub struct Repl {
    /// A replica is attached: writes are recorded.
    pub active: bool,
    /// The attached replicas.
    pub replicas: Vec<Replica>,
    /// The commands of the current unit, with their databases (Redis's `also_propagate`).
    pending: Vec<(usize, Vec<Vec<u8>>)>,
    /// Encoded stream not yet handed to the replicas' connections.
    pub out: Vec<u8>,
    /// The database the stream last selected (Redis's `slaveseldb`).
    seldb: Option<usize>,
    /// Bytes of stream produced so far (`master_repl_offset`).
    pub offset: u64,
    /// A handler counted a change ([`Core::touch`]) during the running command.
    pub touched: bool,
    /// The replication id (40 hex digits), made when the first replica attaches.
    replid: Option<String>,
    /// When the last keep-alive PING was sent (the machine's clock, ms).
    last_ping_ms: Option<i64>,
    /// Deletions that go after the current unit, each alone (a SET whose deadline has passed).
    late: Vec<(usize, Vec<Vec<u8>>)>,
    /// What the running command sent on its own (Redis's `alsoPropagate` from inside a command:
    /// `cmd::stream_propagate`), sent instead of the command.
    pub(crate) own: Vec<Vec<Vec<u8>>>,
    /// The running command is not sent as itself (Redis's `preventCommandPropagation`): only
    /// [`Repl::own`] goes.
    pub(crate) prevented: bool,
}

impl Repl {
    /// The replication id: zeros until a replica has attached, as INFO shows it before.
    pub fn replid(&self) -> &str {
        self.replid.as_deref().unwrap_or("0000000000000000000000000000000000000000")
    }

    /// Whether `id` is an attached replica.
    pub fn is_replica(&self, id: ClientId) -> bool {
        self.replicas.iter().any(|r| r.client == id)
    }
}

/// The deletion Redis propagates for a key removed for its deadline.
fn expire_del(core: &Core) -> &'static [u8] {
    if core.settings.flag("lazyfree-lazy-expire") {
        b"UNLINK"
    } else {
        b"DEL"
    }
}

/// Runs a command while a replica is attached, recording what it changed.
pub(crate) fn run(spec: &CommandSpec, core: &mut Core, args: &[&[u8]]) -> Reply {
    if !spec.has(flags::WRITE | flags::MAY_REPLICATE) && !subcommand_writes(spec, args) {
        let r = spec.run_unrecorded(core, args);
        // Keys a read found expired; some commands' deletions are not one unit in Redis.
        let alone = matches!(spec.name, "randomkey" | "scan" | "keys" | "dbsize");
        note_expired(core, alone);
        return r;
    }
    let db = core.selected;
    let keys = spec.keys.keys(args);
    let now = core.now_ms();
    let before: Vec<u64> = keys.iter().map(|k| fingerprint(core.db.peek(k, now))).collect();
    let outer = std::mem::replace(&mut core.repl.touched, false);
    let (outer_own, outer_prevented) = (std::mem::take(&mut core.repl.own), std::mem::take(&mut core.repl.prevented));
    let reply = spec.run_unrecorded(core, args);
    let own = std::mem::replace(&mut core.repl.own, outer_own);
    let prevented = std::mem::replace(&mut core.repl.prevented, outer_prevented);
    // A SET whose deadline has already passed leaves the key for Redis's expire cycle to delete
    // (the emulator deletes it at once): its DEL goes after the SET, as a unit of its own.
    let late_del = matches!(spec.name, "set" | "setex" | "psetex")
        && core.db.expired_log.as_ref().is_some_and(|l| l.last().is_some_and(|k| k.as_slice() == args[1]));
    if late_del {
        if let Some(log) = core.db.expired_log.as_mut() {
            log.pop();
        }
    }
    // A key the command found expired was deleted before it ran.
    note_expired(core, false);
    let now = core.now_ms();
    let changed = std::mem::replace(&mut core.repl.touched, outer)
        || always(spec.name, args, &reply)
        || keys.iter().zip(&before).any(|(k, b)| fingerprint(core.db_at(db).peek(k, now)) != *b);
    if changed || late_del {
        let cmds = if prevented { own } else { rewrite(spec.name, core, db, args, &reply) };
        // Under a script's `redis.set_repl(redis.REPL_NONE)` a command is not sent as itself (nor
        // rewritten); what it propagates on its own still goes.
        let cmds: Vec<_> = if core.script_repl_off {
            cmds.into_iter().filter(|argv| prevented || sent_on_its_own(spec.name, args, argv)).collect()
        } else {
            cmds
        };
        for argv in cmds {
            core.repl.pending.push((db, argv));
        }
    }
    if late_del {
        let del = expire_del(core).to_vec();
        core.repl.late.push((db, vec![del, args[1].to_vec()]));
    }
    reply
}

/// Whether `argv`, one of the commands `name` (called with `args`) is rewritten as, is one Redis
/// sends from inside the command (`alsoPropagate`: SPOP with a count's SREMs), not the command
/// itself or its rewrite. (The stream commands' own sends come in [`Repl::own`].)
fn sent_on_its_own(name: &str, args: &[&[u8]], argv: &[Vec<u8>]) -> bool {
    name == "spop" && args.len() == 3 && argv.first().is_some_and(|c| eq(c, "srem"))
}

/// Whether `args` name a subcommand that Redis 7.0's table flags `write` (XGROUP CREATE, SETID,
/// CREATECONSUMER, DELCONSUMER, DESTROY): the container command itself carries no such flag.
fn subcommand_writes(spec: &CommandSpec, args: &[&[u8]]) -> bool {
    args.len() >= 2
        && crate::cmd::command::subcommands(spec.name)
            .is_some_and(|subs| subs.iter().any(|s| s.write && args[1].eq_ignore_ascii_case(s.name.as_bytes())))
}

/// A blocked group reader was served: what serving it did to the group goes as a unit of its own
/// (in MULTI/EXEC when it is more than one command), as Redis's `afterCommand` for the reader.
pub(crate) fn served_unit(core: &mut Core, db: usize, cmds: Vec<Vec<Vec<u8>>>) {
    if core.repl.active && !cmds.is_empty() {
        core.repl.pending.extend(cmds.into_iter().map(|c| (db, c)));
        flush(core);
    }
}

/// The commands Redis propagates whatever they changed (when they succeed).
fn always(name: &str, args: &[&[u8]], reply: &Reply) -> bool {
    if reply.is_error() {
        return false;
    }
    match name {
        "flushall" | "flushdb" | "publish" | "spublish" | "swapdb" => true,
        "function" => args.get(1).is_some_and(|s| {
            ["load", "delete", "flush", "restore"].iter().any(|w| s.eq_ignore_ascii_case(w.as_bytes()))
        }),
        _ => false,
    }
}

/// A FUNCTION call (run by the scripting engine, not [`run`]) while a replica is attached.
pub(crate) fn record_function(core: &mut Core, args: &[&[u8]], reply: &Reply) {
    if always("function", args, reply) {
        let db = core.selected;
        core.repl.pending.push((db, owned(args)));
    }
}

/// Moves the keys the selected database removed for their deadline into the stream: into the
/// current unit, or each as a unit of its own (`alone`).
fn note_expired(core: &mut Core, alone: bool) {
    let Some(log) = core.db.expired_log.as_mut() else { return };
    if log.is_empty() {
        return;
    }
    let keys = std::mem::take(log);
    let db = core.selected;
    let del = expire_del(core);
    for k in keys {
        let op = vec![del.to_vec(), k];
        if alone && core.repl.pending.is_empty() {
            emit(core, db, &op);
        } else {
            core.repl.pending.push((db, op));
        }
    }
}

/// An eviction (`maxmemory`): `DEL` (or `UNLINK` under `lazyfree-lazy-eviction`) as a unit.
pub(crate) fn evicted(core: &mut Core, db: usize, key: &[u8]) {
    if !core.repl.active {
        return;
    }
    let del: &[u8] = if core.settings.flag("lazyfree-lazy-eviction") { b"UNLINK" } else { b"DEL" };
    emit(core, db, &[del.to_vec(), key.to_vec()]);
}

/// A blocked client was served: the pop its command amounts to goes as a unit of its own.
pub(crate) fn served(core: &mut Core, db: usize, argv: Vec<Vec<u8>>) {
    if core.repl.active {
        emit(core, db, &argv);
    }
}

/// Ends a unit: what it recorded goes to the stream, in `MULTI`/`EXEC` when it is more than one
/// command. Called after every top-level call while a replica is attached.
pub fn flush(core: &mut Core) {
    if !core.repl.active {
        return;
    }
    // Deadlines met in a database the command did not select (MOVE, COPY ... DB).
    expired_elsewhere(core, false);
    note_expired(core, false);
    if core.repl.pending.is_empty() {
        return;
    }
    let ops = std::mem::take(&mut core.repl.pending);
    let late = std::mem::take(&mut core.repl.late);
    if core.master.is_some() {
        // A replica's writes come from its master: it sends nothing of its own.
        return;
    }
    let wrap = ops.len() > 1;
    if wrap {
        emit(core, ops[0].0, &[b"MULTI".to_vec()]);
    }
    for (db, argv) in &ops {
        emit(core, *db, argv);
    }
    if wrap {
        emit(core, ops[ops.len() - 1].0, &[b"EXEC".to_vec()]);
    }
    for (db, argv) in &late {
        emit(core, *db, argv);
    }
}

/// [`note_expired`] for the databases other than the selected one.
fn expired_elsewhere(core: &mut Core, alone: bool) {
    for i in 0..DATABASES {
        if i != core.selected && core.db_at(i).expired_log.as_ref().is_some_and(|l| !l.is_empty()) {
            let selected = core.selected;
            core.select(i);
            note_expired(core, alone);
            core.select(selected);
        }
    }
}

/// After the active expire cycle: each key it removed goes as a unit of its own.
pub fn flush_expired(core: &mut Core) {
    if core.repl.active {
        expired_elsewhere(core, true);
        note_expired(core, true);
        flush(core);
    }
}

/// Writes one command to the stream, after a `SELECT` when `db` is not the stream's database.
fn emit(core: &mut Core, db: usize, argv: &[Vec<u8>]) {
    if core.master.is_some() {
        return;
    }
    let start = core.repl.out.len();
    if core.repl.seldb != Some(db) {
        let n = db.to_string();
        encode(&mut core.repl.out, &[b"SELECT", n.as_bytes()]);
        core.repl.seldb = Some(db);
    }
    encode(&mut core.repl.out, argv);
    core.repl.offset += (core.repl.out.len() - start) as u64;
}

/// A command as a RESP array of bulk strings.
fn encode<A: AsRef<[u8]>>(out: &mut Vec<u8>, argv: &[A]) {
    out.push(b'*');
    out.extend_from_slice(itoa::Buffer::new().format(argv.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in argv {
        let a = a.as_ref();
        out.push(b'$');
        out.extend_from_slice(itoa::Buffer::new().format(a.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

fn owned(args: &[&[u8]]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.to_vec()).collect()
}

fn eq(a: &[u8], w: &str) -> bool {
    a.eq_ignore_ascii_case(w.as_bytes())
}

/// The deadline of `key` in database `db` after the command, as text.
fn deadline(core: &mut Core, db: usize, key: &[u8]) -> Option<Vec<u8>> {
    let now = core.now_ms();
    let t = core.db_at(db).peek(key, now)?.expire_at?;
    Some(t.to_string().into_bytes())
}

/// What a command that changed the dataset is propagated as (Redis's `rewriteClientCommandVector`
/// and `alsoPropagate` calls, per command).
fn rewrite(name: &str, core: &mut Core, db: usize, args: &[&[u8]], reply: &Reply) -> Vec<Vec<Vec<u8>>> {
    let v = |parts: &[&[u8]]| parts.iter().map(|p| p.to_vec()).collect::<Vec<_>>();
    let gone = |core: &mut Core, key: &[u8]| {
        let now = core.now_ms();
        core.db_at(db).peek(key, now).is_none()
    };
    match name {
        "set" => {
            let now = core.now_ms();
            let at = (3..args.len().saturating_sub(1)).find_map(|i| {
                let n = crate::keyspace::parse_canonical_i64(args[i + 1])?;
                let a = args[i];
                let t = if eq(a, "ex") {
                    now.checked_add(n.checked_mul(1000)?)?
                } else if eq(a, "px") {
                    now.checked_add(n)?
                } else if eq(a, "exat") {
                    n.checked_mul(1000)?
                } else if eq(a, "pxat") {
                    n
                } else {
                    return None;
                };
                Some(t.to_string().into_bytes())
            });
            if let Some(t) = at {
                return vec![v(&[b"SET", args[1], args[2], b"PXAT", &t])];
            }
        }
        "setex" | "psetex" if args.len() == 4 => {
            let now = core.now_ms();
            let unit = if name == "setex" { 1000 } else { 1 };
            let t = crate::keyspace::parse_canonical_i64(args[2]).and_then(|n| now.checked_add(n.checked_mul(unit)?));
            if let Some(t) = t {
                return vec![v(&[b"SET", args[1], args[3], b"PXAT", t.to_string().as_bytes()])];
            }
        }
        "getset" => {
            let mut out = owned(args);
            out[0] = b"SET".to_vec();
            return vec![out];
        }
        "getdel" => return vec![v(&[b"DEL", args[1]])],
        "getex" => {
            if gone(core, args[1]) {
                return vec![v(&[expire_del(core), args[1]])];
            }
            if args[2..].iter().any(|a| eq(a, "persist")) {
                return vec![v(&[b"PERSIST", args[1]])];
            }
            if let Some(t) = deadline(core, db, args[1]) {
                return vec![v(&[b"PEXPIREAT", args[1], &t])];
            }
        }
        "expire" | "pexpire" | "expireat" | "pexpireat" => {
            if gone(core, args[1]) {
                return vec![v(&[expire_del(core), args[1]])];
            }
            let mut out = owned(args);
            if name != "pexpireat" {
                out[0] = b"PEXPIREAT".to_vec();
                if let Some(t) = deadline(core, db, args[1]) {
                    out[2] = t;
                }
            }
            return vec![out];
        }
        "incrbyfloat" => {
            if let Reply::Bulk(n) = reply {
                return vec![v(&[b"SET", args[1], n, b"KEEPTTL"])];
            }
        }
        "hincrbyfloat" => {
            if let Reply::Bulk(n) = reply {
                return vec![v(&[b"HSET", args[1], args[2], n])];
            }
        }
        "spop" => {
            if args.len() == 2 {
                if let Reply::Bulk(m) = reply {
                    return vec![v(&[b"SREM", args[1], m])];
                }
            } else if gone(core, args[1]) {
                return vec![v(&[b"DEL", args[1]])];
            } else if let Reply::Array(ms) | Reply::Set(ms) = reply {
                return ms
                    .iter()
                    .filter_map(|m| match m {
                        Reply::Bulk(m) => Some(v(&[b"SREM", args[1], m])),
                        _ => None,
                    })
                    .collect();
            }
        }
        "blpop" | "brpop" => {
            if let Reply::Array(kv) = reply {
                if let Some(Reply::Bulk(key)) = kv.first() {
                    let op: &[u8] = if name == "blpop" { b"LPOP" } else { b"RPOP" };
                    return vec![v(&[op, key])];
                }
            }
        }
        "bzpopmin" | "bzpopmax" => {
            if let Reply::Array(kv) = reply {
                if let Some(Reply::Bulk(key)) = kv.first() {
                    let op: &[u8] = if name == "bzpopmin" { b"ZPOPMIN" } else { b"ZPOPMAX" };
                    return vec![v(&[op, key])];
                }
            }
        }
        "blmove" => return vec![v(&[b"LMOVE", args[1], args[2], args[3], args[4]])],
        "brpoplpush" => return vec![v(&[b"RPOPLPUSH", args[1], args[2]])],
        "lmpop" | "blmpop" | "zmpop" | "bzmpop" => {
            let at = if name.starts_with('b') { 2 } else { 1 };
            if let Some(op) = mpop(name, args, at, reply) {
                return vec![op];
            }
        }
        "xadd" | "xtrim" => return vec![stream_args(name, core, db, args, reply)],
        "restore" => {
            let ttl = crate::keyspace::parse_canonical_i64(args[2]).unwrap_or(0);
            let abs = args[4..].iter().any(|a| eq(a, "absttl"));
            if ttl != 0 && !abs {
                if let Some(t) = deadline(core, db, args[1]) {
                    let mut out = owned(args);
                    out[2] = t;
                    out.push(b"ABSTTL".to_vec());
                    return vec![out];
                }
            }
        }
        _ => {}
    }
    vec![owned(args)]
}

/// XADD with the ID it generated (for `*` and `<ms>-*`), and XADD or XTRIM with an approximate
/// trim (`~`) made exact at what it left (`MAXLEN = <length>`, `MINID = <first id>`), as Redis
/// rewrites them for its replicas.
fn stream_args(name: &str, core: &mut Core, db: usize, args: &[&[u8]], reply: &Reply) -> Vec<Vec<u8>> {
    let mut out = owned(args);
    let mut i = 2;
    let mut approx_at = None;
    while i < args.len() {
        let a = args[i];
        if name == "xadd" && eq(a, "nomkstream") {
            i += 1;
        } else if eq(a, "maxlen") || eq(a, "minid") {
            if args.get(i + 1).is_some_and(|m| *m == b"~") {
                approx_at = Some(i + 1);
                i += 1;
            } else if args.get(i + 1).is_some_and(|m| *m == b"=") {
                i += 1;
            }
            i += 2;
        } else if eq(a, "limit") {
            i += 2;
        } else {
            break;
        }
    }
    if name == "xadd" && i < args.len() && (args[i] == b"*" || args[i].ends_with(b"-*")) {
        if let Reply::Bulk(id) = reply {
            out[i] = id.clone();
        }
    }
    if let Some(at) = approx_at {
        let now = core.now_ms();
        if let Some(crate::keyspace::Value::Stream(s)) = core.db_at(db).peek(args[1], now).map(|e| &e.value) {
            out[at] = b"=".to_vec();
            if at + 1 < out.len() {
                out[at + 1] = if eq(args[at - 1], "maxlen") {
                    s.length.to_string().into_bytes()
                } else {
                    use crate::keyspace::stream::StreamId;
                    let all = s.range(StreamId::MIN, StreamId::MAX, 1, false);
                    all.first().map_or(b"0-0".to_vec(), |e| e.id.to_bytes())
                };
            }
        }
    }
    out
}

/// LMPOP/BLMPOP as `LPOP|RPOP key count`, ZMPOP/BZMPOP as `ZPOPMIN|ZPOPMAX key count` (`count`
/// being how many it popped); `numkeys` is at `args[at]`.
fn mpop(name: &str, args: &[&[u8]], at: usize, reply: &Reply) -> Option<Vec<Vec<u8>>> {
    let Reply::Array(kv) = reply else { return None };
    let (Some(Reply::Bulk(key)), Some(Reply::Array(items))) = (kv.first(), kv.get(1)) else { return None };
    let n = crate::keyspace::parse_canonical_i64(args.get(at)?)? as usize;
    let side = args.get(at + 1 + n)?;
    let op: &[u8] = match (name.ends_with("zmpop"), eq(side, "left") || eq(side, "min")) {
        (false, true) => b"LPOP",
        (false, false) => b"RPOP",
        (true, true) => b"ZPOPMIN",
        (true, false) => b"ZPOPMAX",
    };
    Some(vec![op.to_vec(), key.clone(), items.len().to_string().into_bytes()])
}

/// Attaches client `id` as a replica: the stream starts with a `SELECT`, and from now on every
/// change is recorded. Keys already past their deadline are removed first, unseen (Redis's active
/// expire cycle would have removed them before), so that they do not come as `DEL`s later.
pub(crate) fn attach(core: &mut Core, replica: Replica) {
    flush(core);
    let now = core.now_ms();
    let was_active = core.repl.active;
    for i in 0..DATABASES {
        let db = core.db_at(i);
        db.purge_expired(now);
        if !was_active {
            db.expired_log = Some(Vec::new());
        }
    }
    if was_active {
        // Their deletions, and whatever the stream holds, go to the replicas already attached.
        flush(core);
        if !core.repl.out.is_empty() {
            let bytes = std::mem::take(&mut core.repl.out);
            for r in &core.repl.replicas {
                core.outbox.push((r.client, crate::deliver::Deliver::Raw(bytes.clone())));
            }
        }
    }
    if core.repl.replid.is_none() {
        core.repl.replid = Some(new_replid(core));
    }
    if let Some(c) = core.client(replica.client) {
        c.replica = true;
    }
    core.repl.replicas.retain(|r| r.client != replica.client);
    core.repl.replicas.push(replica);
    core.repl.active = true;
    core.repl.seldb = None;
}

/// Redis's replication cron: every `repl-ping-replica-period` seconds of the machine's time, the
/// replicas are sent a `ping` (in the database last selected, so without a `SELECT`), which keeps
/// a real replica's link from timing out.
pub(crate) fn keepalive(core: &mut Core) {
    use crate::clock::Clock;
    if !core.repl.active || core.master.is_some() {
        return;
    }
    let now = crate::clock::SystemClock.now_millis().0;
    let period = std::str::from_utf8(core.settings.get("repl-ping-replica-period"))
        .ok()
        .and_then(|p| p.parse::<i64>().ok())
        .unwrap_or(10)
        .max(1);
    let last = *core.repl.last_ping_ms.get_or_insert(now);
    if now - last >= period * 1000 {
        core.repl.last_ping_ms = Some(now);
        let start = core.repl.out.len();
        encode(&mut core.repl.out, &[b"ping"]);
        core.repl.offset += (core.repl.out.len() - start) as u64;
    }
}

/// Forgets replica `id` (its connection closed); with the last one, recording stops.
pub fn detach(core: &mut Core, id: ClientId) {
    if !core.repl.is_replica(id) {
        return;
    }
    core.repl.replicas.retain(|r| r.client != id);
    if core.repl.replicas.is_empty() {
        core.repl.active = false;
        core.repl.pending.clear();
        core.repl.out.clear();
        core.repl.last_ping_ms = None;
        for i in 0..DATABASES {
            core.db_at(i).expired_log = None;
        }
    }
}

/// A replication id: 40 hex digits, from the machine's clock and the process (Redis draws it from
/// /dev/urandom; nothing depends on its value).
fn new_replid(core: &Core) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut out = String::with_capacity(40);
    use crate::clock::Clock;
    let seed = crate::clock::SystemClock.now_micros().0 ^ core.started_ms;
    for i in 0..3u64 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_i64(seed);
        h.write_u64(i);
        h.write_u32(std::process::id());
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out.truncate(40);
    out
}
