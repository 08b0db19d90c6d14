//! Connections: what Redis keeps per client (the selected database, a MULTI queue, the WATCHed keys
//! and whether one of them was touched), and the fingerprint that tells whether a write changed a
//! watched key.
//!
//! The emulator serves any number of clients ([`super::Emulator::connect`]); each command names the
//! client that sends it ([`super::Emulator::execute_as`]), and [`super::Emulator::execute`] is client 0,
//! which always exists. A client costs a few words until it uses MULTI or WATCH.
use std::hash::{Hash as _, Hasher};

use super::keyspace::{Entry, RStr, Value};

/// A connection to the emulator (an index into its client table; ids of closed clients are reused).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId(pub(crate) u32);

impl ClientId {
    /// The client [`super::Emulator::execute`], `eval` and `evalsha` speak for.
    pub const DEFAULT: ClientId = ClientId(0);

    /// The id as a number (for display).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One client's state.
#[derive(Debug, Default)]
pub struct Client {
    /// The selected database.
    pub db: usize,
    /// Between MULTI and EXEC/DISCARD: the queued commands.
    pub multi: Option<Multi>,
    /// A watched key was touched (Redis's `CLIENT_DIRTY_CAS`): the next EXEC replies a nil array.
    pub dirty_cas: bool,
    /// How many entries of [`Watches`] are this client's.
    pub watching: usize,
    /// CLIENT ID: unique for the server's life, never reused (ids of [`ClientId`] are).
    pub id: u64,
    /// CLIENT SETNAME.
    pub name: Option<Vec<u8>>,
    /// CLIENT NO-EVICT ON.
    pub no_evict: bool,
    /// Attached as a replica (SYNC): CLIENT LIST's `S` flag.
    pub replica: bool,
    /// When the connection was opened and when its last command started (virtual clock, ms), for
    /// CLIENT LIST's `age` and `idle`.
    pub created_ms: i64,
    pub last_ms: i64,
    /// The last command it sent (`cmd=` in CLIENT LIST): the name, and the subcommand of a container.
    pub last_cmd: Option<(&'static str, Option<&'static str>)>,
    /// While EXEC runs this client's transaction: how many commands it queued (Redis keeps the
    /// client in MULTI until EXEC returns, as CLIENT INFO shows from inside).
    pub executing: Option<usize>,
    /// The protocol it speaks (`HELLO 3`): CLIENT LIST's `resp=`.
    pub resp3: bool,
    /// CLIENT TRACKING ON: its mode.
    pub tracking: Option<Box<crate::tracking::ClientTracking>>,
    /// It sent MONITOR (CLIENT LIST's `O`).
    pub monitor: bool,
    /// The ACL user it is authenticated as; None for `default`.
    pub user: Option<Vec<u8>>,
    /// It authenticated (or needed not: the default user had no password when it connected).
    pub authenticated: bool,
    /// The peer's and the server's address as a server gives them (`addr=`, `laddr=`); None for
    /// an in-process client.
    pub addr: Option<(String, String)>,
}

/// A transaction being queued.
#[derive(Debug, Default)]
pub struct Multi {
    pub queue: Vec<Vec<Vec<u8>>>,
    /// A command was refused while queueing (Redis's `CLIENT_DIRTY_EXEC`): EXEC replies EXECABORT.
    pub dirty_exec: bool,
    /// Cluster mode: the slot of the keys queued so far (a transaction keeps to one slot)...
    pub slot: Option<u16>,
    /// ...and whether a queued command's keys were in another one (EXEC then replies CROSSSLOT).
    pub cross_slot: bool,
    /// The union of the queued commands' Redis flags ([`crate::admission::rflags`]), and whether
    /// one of them lacks `stale`: what EXEC is checked as (Redis's `mstate.cmd_flags`/`cmd_inv_flags`).
    pub flags: u8,
    pub any_not_stale: bool,
}

/// One WATCHed key.
#[derive(Clone, Debug)]
pub struct Watched {
    pub client: ClientId,
    pub db: usize,
    pub key: Vec<u8>,
    /// The key's deadline when WATCH ran, if it was live then and had one. Redis fails EXEC when a
    /// watched key that was live at WATCH has expired since (`isWatchedKeyExpired`), whether or not
    /// something deleted it in between (which touches it): both come down to this deadline having
    /// passed, as long as nothing else touched the key.
    pub deadline: Option<i64>,
}

/// Every WATCHed key of every client, in WATCH order.
#[derive(Clone, Debug, Default)]
pub struct Watches {
    pub keys: Vec<Watched>,
}

impl Watches {
    /// True when no client watches anything: the write path then skips every check.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// A digest of a key's logical state (absent, or type, contents and deadline), to tell whether a
/// write changed it. Encodings, allocation and other bookkeeping are left out: Redis touches a key
/// when its contents change, whatever the encoding does.
pub fn fingerprint(entry: Option<&Entry>) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let Some(e) = entry else { return 0 };
    e.expire_at.hash(&mut h);
    match &e.value {
        Value::Str(s) => {
            1u8.hash(&mut h);
            match s {
                RStr::Int(i) => itoa::Buffer::new().format(*i).as_bytes().hash(&mut h),
                RStr::Raw(v) | RStr::Grown(v) | RStr::Exact(v) => v.as_slice().hash(&mut h),
            }
        }
        Value::Hash(x) => {
            2u8.hash(&mut h);
            for (f, v) in &x.fields {
                f.as_slice().hash(&mut h);
                v.as_slice().hash(&mut h);
            }
        }
        Value::ZSet(z) => {
            3u8.hash(&mut h);
            for (m, s) in z.iter() {
                m.hash(&mut h);
                s.to_bits().hash(&mut h);
            }
        }
        Value::List(l) => {
            4u8.hash(&mut h);
            l.len().hash(&mut h);
            for item in l {
                item.hash(&mut h);
            }
        }
        Value::Set(s) => {
            5u8.hash(&mut h);
            // Members in no particular order: combine their own digests order-free.
            let mut acc = 0u64;
            for m in &s.members {
                let mut mh = std::collections::hash_map::DefaultHasher::new();
                m.hash(&mut mh);
                acc = acc.wrapping_add(mh.finish());
            }
            s.members.len().hash(&mut h);
            acc.hash(&mut h);
        }
        Value::Stream(s) => {
            6u8.hash(&mut h);
            s.length.hash(&mut h);
            s.last_id.hash(&mut h);
            for n in &s.nodes {
                for e in &n.entries {
                    e.id.hash(&mut h);
                    e.deleted.hash(&mut h);
                }
            }
            (s.first_id, s.max_deleted_entry_id, s.entries_added).hash(&mut h);
            for (name, g) in &s.cgroups {
                (name, g.last_id, g.entries_read).hash(&mut h);
                for (id, n) in &g.pel {
                    (id, n.delivery_time, n.delivery_count, &n.consumer).hash(&mut h);
                }
                for (c, cons) in &g.consumers {
                    (c, cons.seen_time).hash(&mut h);
                }
            }
        }
    }
    // Never 0, which stands for a missing key.
    h.finish() | 1
}
