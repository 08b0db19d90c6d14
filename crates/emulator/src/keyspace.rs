//! The in-memory keyspace: Redis's value types, expiry read from the emulator's clock, and SCAN.
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]
use std::collections::VecDeque;

use rustc_hash::{FxHashMap, FxHashSet};

/// A string value, kept as an integer when Redis would use the integer encoding.
#[derive(Clone, Debug, PartialEq)]
pub enum RStr {
    Int(i64),
    /// Bytes that Redis keeps as `embstr` (up to 44 bytes) or `raw` (longer).
    Raw(Vec<u8>),
    /// Bytes that Redis keeps as `raw` whatever their length: strings grown in place by APPEND/SETRANGE.
    Grown(Vec<u8>),
    /// Bytes kept as `raw` in an exactly sized allocation: what SETRANGE creates on a missing key
    /// (`sdsnewlen`), which has none of a grown string's spare room.
    Exact(Vec<u8>),
}

impl RStr {
    /// Builds a string value, choosing the integer encoding exactly when Redis does
    /// (`string2ll` succeeds: canonical decimal, no leading zeros or `+`, fits in i64, at most 20 bytes).
    pub fn from_bytes(b: &[u8]) -> RStr {
        match parse_canonical_i64(b) {
            Some(i) => RStr::Int(i),
            None => RStr::Raw(b.to_vec()),
        }
    }
    /// Calls `f` with the bytes of the value (an integer's digits formatted on the stack).
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            RStr::Int(i) => f(itoa::Buffer::new().format(*i).as_bytes()),
            RStr::Raw(v) | RStr::Grown(v) | RStr::Exact(v) => f(v),
        }
    }
    /// The bytes of the value (formats integers).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.with_bytes(<[u8]>::to_vec)
    }
    /// Length in bytes, as STRLEN reports it.
    pub fn len(&self) -> usize {
        match self {
            RStr::Int(i) => int_len(*i),
            RStr::Raw(v) | RStr::Grown(v) | RStr::Exact(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Number of bytes in the decimal form of `i`.
pub fn int_len(i: i64) -> usize {
    let mut n = if i < 0 { 2 } else { 1 };
    let mut u = i.unsigned_abs();
    while u >= 10 {
        u /= 10;
        n += 1;
    }
    n
}

/// C's `isspace` in the "C" locale.
pub fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// What C's `strtol`/`strtoull` skip before the digits: leading blanks, then one optional sign.
/// Returns whether the sign was a minus, and the rest (the digits, if any).
pub fn c_sign_and_digits(s: &[u8]) -> (bool, &[u8]) {
    let start = s.iter().position(|&c| !is_c_space(c)).unwrap_or(s.len());
    match s.get(start) {
        Some(b'-') => (true, &s[start + 1..]),
        Some(b'+') => (false, &s[start + 1..]),
        _ => (false, &s[start..]),
    }
}

/// Redis's `string2ll`: a strict decimal integer in i64 range.
pub fn parse_canonical_i64(b: &[u8]) -> Option<i64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    if b == b"0" {
        return Some(0);
    }
    let (neg, digits) = if b[0] == b'-' { (true, &b[1..]) } else { (false, b) };
    if digits.is_empty() || digits[0] == b'0' {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else if v > i64::MAX as u64 {
        None
    } else {
        Some(v as i64)
    }
}

pub mod dict_table;
pub mod limits;
pub mod listpack;
pub mod rng;
mod small;
pub mod stream;
mod zset;
/// Keys and small hash fields are kept inline (see its file).
pub use small::{short_eq, SmallBytes};
/// Sorted sets live in their own file: a member index plus a skiplist with spans.
/// Streams: listpack nodes with Redis's node sizes (see its file).
pub use stream::{Stream, StreamId, Trim};
pub use zset::{LexBound, LexRange, ScoreRange, ZRef, ZSet};

/// A hash that keeps insertion order, as Redis's listpack encoding does for small hashes.
///
/// Up to [`Hash::INDEX_FROM`]` - 1` fields a lookup scans `fields` (as Redis scans a listpack): a
/// rate limiter's hash has two or three fields, and a scan of those is cheaper than hashing the
/// field name, and saves a table per subject. From [`Hash::INDEX_FROM`] fields on, `index` maps
/// every field to its position; below that it is None (boxed: a hash lives inline in the keyspace
/// table's slot, and small hashes, a limiter's, never have one).
#[derive(Clone, Debug, Default)]
pub struct Hash {
    pub fields: Vec<(SmallBytes, SmallBytes)>,
    pub index: Option<Box<FxHashMap<SmallBytes, usize>>>,
    /// True once Redis would have converted the hash to a hashtable.
    pub hashtable: bool,
}

impl Hash {
    /// The field count from which lookups go through `index`.
    pub const INDEX_FROM: usize = 9;

    pub fn len(&self) -> usize {
        self.fields.len()
    }
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
    /// The position of field `f` in `fields`.
    #[inline]
    fn position(&self, f: &[u8]) -> Option<usize> {
        if self.fields.len() < Self::INDEX_FROM {
            self.fields.iter().position(|(name, _)| short_eq(name, f))
        } else {
            self.index.as_ref().and_then(|m| m.get(f)).copied()
        }
    }
    pub fn get(&self, f: &[u8]) -> Option<&[u8]> {
        self.position(f).map(|i| self.fields[i].1.as_slice())
    }
    /// Sets a field; returns true when the field is new. A listpack-encoded hash keeps its order
    /// (an existing field is replaced in place, a new one goes to the end).
    pub fn set(&mut self, f: &[u8], v: Vec<u8>) -> bool {
        self.set_bytes(f, &v)
    }
    /// [`Hash::set`] from a slice.
    pub fn set_bytes(&mut self, f: &[u8], v: &[u8]) -> bool {
        self.write(f, v.len(), |slot| slot.set(v))
    }
    /// [`Hash::set`] of an integer's decimal form, written in place without allocating when the
    /// field exists.
    pub fn set_int(&mut self, f: &[u8], n: i64) -> bool {
        self.set_bytes(f, itoa::Buffer::new().format(n).as_bytes())
    }
    /// Writes field `f` (value of `len` bytes) with `put`, which fills the value's slot.
    fn write(&mut self, f: &[u8], len: usize, put: impl FnOnce(&mut SmallBytes)) -> bool {
        // Redis converts to a hashtable when a field or value longer than hash-max-listpack-value
        // is written, or the hash grows past hash-max-listpack-entries; checking only the pair being
        // written is equivalent (it never converts back) and keeps a write O(1).
        let limits = limits::current();
        if !self.hashtable && (f.len() > limits.hash_value as usize || len > limits.hash_value as usize) {
            self.hashtable = true;
        }
        let new = match self.position(f) {
            Some(i) => {
                put(&mut self.fields[i].1);
                false
            }
            None => {
                let mut v = SmallBytes::default();
                put(&mut v);
                self.fields.push((SmallBytes::new(f), v));
                let n = self.fields.len();
                if n == Self::INDEX_FROM {
                    self.index = Some(Box::new(
                        self.fields.iter().enumerate().map(|(i, (name, _))| (name.clone(), i)).collect(),
                    ));
                } else if let Some(m) = self.index.as_mut().filter(|_| n > Self::INDEX_FROM) {
                    m.insert(SmallBytes::new(f), n - 1);
                }
                true
            }
        };
        if !self.hashtable && self.fields.len() > limits.hash_entries as usize {
            self.hashtable = true;
        }
        new
    }
    /// Removes a field; returns true when it was there. A listpack-encoded hash (at most 512 fields)
    /// keeps its order; a hashtable-encoded one has no defined order in Redis, so the last field moves
    /// into the hole and a removal stays O(1) however big the hash is.
    pub fn remove(&mut self, f: &[u8]) -> bool {
        let Some(i) = self.position(f) else { return false };
        if let Some(m) = self.index.as_mut() {
            m.remove(f);
        }
        if self.hashtable {
            self.fields.swap_remove(i);
            if let (Some(m), Some((moved, _))) = (self.index.as_mut(), self.fields.get(i)) {
                if let Some(idx) = m.get_mut(moved.as_slice()) {
                    *idx = i;
                }
            }
        } else {
            self.fields.remove(i);
            if let Some(m) = self.index.as_mut() {
                for (j, (name, _)) in self.fields.iter().enumerate().skip(i) {
                    if let Some(idx) = m.get_mut(name.as_slice()) {
                        *idx = j;
                    }
                }
            }
        }
        if self.fields.len() < Self::INDEX_FROM {
            self.index = None;
        }
        true
    }
}

/// A value stored under a key. It lives inline in the keyspace table's slot (with its key and
/// the rest of its [`Entry`]), so the types that are large and rare in a limiter's keyspace (sorted
/// sets, sets, streams) are boxed: every slot is as large as the largest variant.
#[derive(Clone, Debug)]
pub enum Value {
    Str(RStr),
    Hash(Hash),
    ZSet(Box<ZSet>),
    List(VecDeque<Vec<u8>>),
    Set(Box<SetValue>),
    Stream(Box<Stream>),
}

/// The members of a set: a hash set that is also indexable, so a random member is one draw away
/// (SPOP, SRANDMEMBER) and a removal is a swap with the last one.
pub type SetMembers = indexmap::IndexSet<Vec<u8>, rustc_hash::FxBuildHasher>;

/// A set; integer-only small sets are kept sorted like Redis's intset, so SMEMBERS orders like Redis.
#[derive(Clone, Debug, Default)]
pub struct SetValue {
    pub members: SetMembers,
    /// False while Redis 7.0 would keep the set as an intset (every member a canonical i64, at most
    /// set-max-intset-entries of them, 512 by default); it then iterates in ascending numeric order. Once true
    /// (hashtable encoding) the order is undefined, and it never goes back.
    pub hashtable: bool,
    /// The hashtable's table sizes as Redis's dict would have them (for MEMORY USAGE).
    pub dict_table: dict_table::DictTable,
}

impl SetValue {
    /// An empty set with the encoding Redis's `setTypeCreate` picks for its first member.
    pub fn for_first(member: &[u8]) -> SetValue {
        SetValue {
            members: SetMembers::default(),
            hashtable: parse_canonical_i64(member).is_none(),
            dict_table: Default::default(),
        }
    }
    pub fn len(&self) -> usize {
        self.members.len()
    }
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
    pub fn contains(&self, m: &[u8]) -> bool {
        if self.hashtable {
            self.dict_table.lookup();
        }
        self.members.contains(m)
    }
    /// Adds a member (`setTypeAdd`); returns true when it is new. On a hashtable every attempt is a
    /// `dictAdd`, which may grow the table even when the member is already there.
    pub fn insert(&mut self, m: &[u8]) -> bool {
        if self.hashtable {
            self.dict_table.add(self.members.len());
        }
        if self.members.contains(m) {
            return false;
        }
        if !self.hashtable && parse_canonical_i64(m).is_none() {
            // setTypeConvert: a dict presized for the intset's members, then this member's dictAdd.
            self.hashtable = true;
            self.dict_table = dict_table::DictTable::presized(self.members.len());
            self.dict_table.add(self.members.len());
        }
        self.members.insert(m.to_vec());
        if !self.hashtable && self.members.len() > limits::current().intset_entries as usize {
            self.hashtable = true;
            self.dict_table = dict_table::DictTable::presized(self.members.len());
        }
        true
    }
    pub fn remove(&mut self, m: &[u8]) -> bool {
        if !self.hashtable {
            return self.members.swap_remove(m);
        }
        self.dict_table.delete();
        let removed = self.members.swap_remove(m);
        if removed {
            self.dict_table.resize_if_needed(self.members.len());
        }
        removed
    }
    /// A member drawn uniformly (`setTypeRandomElement`); `None` for an empty set.
    pub fn random(&self, rng: &rng::Rng) -> Option<&[u8]> {
        if self.members.is_empty() {
            return None;
        }
        if self.hashtable {
            self.dict_table.lookup();
        }
        self.members.get_index(rng.below(self.members.len())).map(Vec::as_slice)
    }
    /// Removes and returns a member drawn uniformly (SPOP).
    pub fn pop_random(&mut self, rng: &rng::Rng) -> Option<Vec<u8>> {
        let m = self.random(rng)?.to_vec();
        self.remove(&m);
        Some(m)
    }
    /// An empty set that starts as an intset and converts as members come (what SINTERSTORE,
    /// SUNIONSTORE and SDIFFSTORE build: `createIntsetObject` then `setTypeAdd`).
    pub fn new_intset() -> SetValue {
        SetValue::default()
    }
    /// The members in the order Redis iterates them: ascending numbers for an intset, otherwise
    /// the hash table's (undefined) order.
    pub fn ordered(&self) -> Vec<&[u8]> {
        let mut v: Vec<&[u8]> = self.members.iter().map(|m| m.as_slice()).collect();
        if !self.hashtable {
            v.sort_unstable_by_key(|m| parse_canonical_i64(m).unwrap_or(0));
        }
        v
    }
}

impl Value {
    /// The name TYPE reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Hash(_) => "hash",
            Value::ZSet(_) => "zset",
            Value::List(_) => "list",
            Value::Set(_) => "set",
            Value::Stream(_) => "stream",
        }
    }
}

/// A key's value and its absolute expiry time in unix milliseconds.
#[derive(Clone, Debug)]
pub struct Entry {
    pub value: Value,
    pub expire_at: Option<i64>,
    /// When the key was last looked up or written (unix ms): OBJECT IDLETIME. Lookups that Redis
    /// makes without touching (TYPE, EXISTS, TTL, OBJECT, MEMORY USAGE) leave it.
    pub lru_ms: i64,
    /// Set by COPY of a small integer (0..10000, which Redis keeps as one shared object): the copy is
    /// an object of its own (OBJECT REFCOUNT 1) while it holds this value. A u16 (the values fit):
    /// the entry lives in the keyspace table's slot, so its size is paid once per key.
    pub unshared_int: Option<u16>,
}

impl Entry {
    /// A value with its deadline, last used at `now`.
    pub fn new(value: Value, expire_at: Option<i64>, now: i64) -> Entry {
        Entry { value, expire_at, lru_ms: now, unshared_int: None }
    }
}

/// The error text Redis gives for an operation against a key of another type.
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// One database: keys to entries. Expiry is lazy on access, with the time passed in by the caller
/// (the emulator freezes it for the duration of a script).
#[derive(Clone, Debug)]
pub struct Db {
    pub map: FxHashMap<SmallBytes, Entry>,
    /// When false, keys past their deadline are kept as if they had no deadline yet (TTLs are still
    /// stored and reported). Not a Redis feature: it lets tests show that a script's TTLs are long
    /// enough, by checking that its decisions do not change when expired keys stay. Default true.
    pub expiry_enabled: bool,
    /// When set, every key created outside a prefix is noted (see [`KeyWatch`]). Not a Redis
    /// feature: it lets a run find the keys a script names on its own, outside the run's prefix,
    /// before the same run goes to a shared server.
    pub watch: Option<Box<KeyWatch>>,
    /// The time of the latest lookup or command (unix ms): what a write stamps on an entry as its
    /// last use (see [`Entry::lru_ms`]).
    pub now_hint: i64,
    /// Keys removed because their deadline had passed (INFO's `expired_keys`).
    pub expired: u64,
    /// While a trial runs (see [`Db::begin_trial`]): the entries to put back when it ends.
    trial: Option<Box<Trial>>,
    /// The draws of SPOP, SRANDMEMBER, HRANDFIELD, ZRANDMEMBER and RANDOMKEY (seeded: see its file).
    pub rng: rng::Rng,
    /// While a replica is attached: the keys removed because their deadline had passed, in order,
    /// for the replication stream's `DEL`s (see [`crate::propagate`]). `None` otherwise.
    pub expired_log: Option<Vec<Vec<u8>>>,
}

/// The undo log of a trial: each key's entry as it was before the trial first touched it (`None`:
/// the key did not exist), and the database's own fields to put back.
#[derive(Clone, Debug)]
struct Trial {
    saved: Vec<(SmallBytes, Option<Entry>)>,
    seen: FxHashSet<SmallBytes>,
    now_hint: i64,
    watch: Option<Box<KeyWatch>>,
}

/// Keys created outside `prefix`, in the order they were first created (each once).
#[derive(Clone, Debug, Default)]
pub struct KeyWatch {
    pub prefix: Vec<u8>,
    pub outside: Vec<Vec<u8>>,
    seen: std::collections::HashSet<Vec<u8>>,
}

impl KeyWatch {
    pub fn new(prefix: &[u8]) -> KeyWatch {
        KeyWatch { prefix: prefix.to_vec(), ..KeyWatch::default() }
    }

    #[cold]
    fn created(&mut self, key: &[u8]) {
        if !key.starts_with(&self.prefix) && self.seen.insert(key.to_vec()) {
            self.outside.push(key.to_vec());
        }
    }
}

impl Default for Db {
    fn default() -> Self {
        Db {
            map: FxHashMap::default(),
            expiry_enabled: true,
            watch: None,
            now_hint: 0,
            expired: 0,
            trial: None,
            rng: rng::Rng::default(),
            expired_log: None,
        }
    }
}

impl Db {
    /// Starts a trial: from now until [`Db::end_trial`], every key a lookup or a write touches is
    /// saved as it was first, so that ending the trial puts the database back exactly as it was
    /// (keys, values, TTLs, last-use times, the key watch). A "what if" that costs the keys it
    /// touches, not a copy of the whole keyspace. Not a Redis feature; trials do not nest (a second
    /// start is ignored).
    pub fn begin_trial(&mut self) {
        if self.trial.is_none() {
            self.trial = Some(Box::new(Trial {
                saved: Vec::new(),
                seen: FxHashSet::default(),
                now_hint: self.now_hint,
                watch: self.watch.clone(),
            }));
        }
    }

    /// Ends a trial: every key it touched gets its entry back (or is removed when it did not exist).
    pub fn end_trial(&mut self) {
        let Some(t) = self.trial.take() else { return };
        for (key, entry) in t.saved {
            match entry {
                Some(e) => {
                    self.map.insert(key, e);
                }
                None => {
                    self.map.remove(&key);
                }
            }
        }
        self.now_hint = t.now_hint;
        self.watch = t.watch;
    }

    /// During a trial, saves `key`'s entry before its first change.
    #[inline]
    fn note(&mut self, key: &[u8]) {
        if let Some(t) = self.trial.as_deref_mut() {
            if !t.seen.contains(key) {
                t.seen.insert(SmallBytes::new(key));
                t.saved.push((SmallBytes::new(key), self.map.get(key).cloned()));
            }
        }
    }

    /// Notes a key removed for its deadline, while a replica is attached.
    #[cold]
    fn log_expired(&mut self, key: &[u8]) {
        if let Some(log) = &mut self.expired_log {
            log.push(key.to_vec());
        }
    }

    /// Whether an entry with deadline `expire_at` is gone at `now` (Redis's keyIsExpired: `now >
    /// when`; at its deadline a key still exists, PTTL 0).
    #[inline]
    fn expired(&self, expire_at: Option<i64>, now: i64) -> bool {
        matches!(expire_at, Some(t) if t < now && self.expiry_enabled)
    }
    /// Removes `key` if it has expired at `now`; returns true when the key is (still) present.
    #[inline]
    fn expire_if_needed(&mut self, key: &[u8], now: i64) -> bool {
        self.now_hint = now;
        match self.map.get(key) {
            None => false,
            Some(e) if self.expired(e.expire_at, now) => {
                self.note(key);
                self.map.remove(key);
                self.expired += 1;
                self.log_expired(key);
                false
            }
            Some(_) => true,
        }
    }
    /// The live entry under `key`.
    #[inline]
    pub fn get(&mut self, key: &[u8], now: i64) -> Option<&Entry> {
        self.get_mut(key, now).map(|e| &*e)
    }
    /// The live entry under `key`, mutable. One hash lookup when the key is live (a second one
    /// only to delete an expired key).
    #[inline]
    pub fn get_mut(&mut self, key: &[u8], now: i64) -> Option<&mut Entry> {
        if self.trial.is_some() {
            self.note(key);
        }
        let expiry_enabled = self.expiry_enabled;
        let entry: *mut Entry = self.map.get_mut(key)?;
        // SAFETY: `entry` points into `self.map`, which is not touched between here and the return
        // below except by `remove` on the expired path, after which `entry` is never used. (The
        // borrow checker cannot yet see that a reference returned on one path is not alive on the
        // other.)
        let expire_at = unsafe { (*entry).expire_at };
        if matches!(expire_at, Some(t) if t < now && expiry_enabled) {
            self.map.remove(key);
            self.expired += 1;
            self.log_expired(key);
            return None;
        }
        self.now_hint = now;
        // SAFETY: `entry` still points into `self.map`: nothing has touched the map since it was
        // found (only the expired path removes, and it returned), and writing `now_hint` touches
        // another field. The reference returned borrows `self` mutably, so the map cannot change
        // while it lives.
        let entry = unsafe { &mut *entry };
        entry.lru_ms = now;
        Some(entry)
    }
    /// The live entry under `key`, looked up as Redis's `LOOKUP_NOTOUCH` does (its last use stays).
    pub fn get_notouch(&mut self, key: &[u8], now: i64) -> Option<&Entry> {
        if !self.expire_if_needed(key, now) {
            return None;
        }
        self.map.get(key)
    }
    /// Stores a value, replacing any previous one and its TTL.
    pub fn set(&mut self, key: &[u8], value: Value, expire_at: Option<i64>) {
        self.note(key);
        match self.map.get_mut(key) {
            Some(e) => {
                e.value = value;
                e.expire_at = expire_at;
                e.lru_ms = self.now_hint;
                e.unshared_int = None;
            }
            None => {
                if let Some(w) = &mut self.watch {
                    w.created(key);
                }
                self.map.insert(SmallBytes::new(key), Entry::new(value, expire_at, self.now_hint));
            }
        }
    }
    /// Removes a key; returns true if a live key was removed.
    pub fn remove(&mut self, key: &[u8], now: i64) -> bool {
        if self.expire_if_needed(key, now) {
            self.note(key);
            self.map.remove(key);
            true
        } else {
            false
        }
    }
    /// Removes and returns the live entry under `key`, TTL included (RENAME moves it whole).
    pub fn take(&mut self, key: &[u8], now: i64) -> Option<Entry> {
        if self.expire_if_needed(key, now) {
            self.note(key);
            self.map.remove(key)
        } else {
            None
        }
    }
    /// Stores a whole entry (value and TTL) under `key`, replacing any previous one.
    pub fn put(&mut self, key: &[u8], mut entry: Entry) {
        entry.lru_ms = self.now_hint;
        self.note(key);
        match self.map.get_mut(key) {
            Some(e) => *e = entry,
            None => {
                if let Some(w) = &mut self.watch {
                    w.created(key);
                }
                self.map.insert(SmallBytes::new(key), entry);
            }
        }
    }
    /// Removes every key whose expiry has passed (what KEYS, SCAN and DBSIZE see).
    pub fn purge_expired(&mut self, now: i64) {
        if !self.expiry_enabled {
            return;
        }
        if self.trial.is_some() {
            let gone: Vec<SmallBytes> =
                self.map.iter().filter(|(_, e)| e.expire_at.is_some_and(|t| t < now)).map(|(k, _)| k.clone()).collect();
            for k in gone {
                self.note(&k);
            }
        }
        let before = self.map.len();
        let log = &mut self.expired_log;
        self.map.retain(|k, e| {
            let keep = e.expire_at.is_none_or(|t| t >= now);
            if let (false, Some(log)) = (keep, log.as_mut()) {
                log.push(k.as_slice().to_vec());
            }
            keep
        });
        self.expired += (before - self.map.len()) as u64;
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    pub fn clear(&mut self) {
        if self.trial.is_some() {
            let all: Vec<SmallBytes> = self.map.keys().cloned().collect();
            for k in all {
                self.note(&k);
            }
        }
        self.map.clear();
    }
    /// The live entry under `key` if it holds a `T`; WRONGTYPE otherwise.
    pub fn typed<'a, T>(
        &'a mut self,
        key: &[u8],
        now: i64,
        pick: impl FnOnce(&'a mut Value) -> Option<&'a mut T>,
    ) -> Result<Option<&'a mut T>, &'static str> {
        match self.get_mut(key, now) {
            None => Ok(None),
            Some(e) => pick(&mut e.value).map(Some).ok_or(WRONGTYPE),
        }
    }
}

/// Redis's glob matching (`stringmatchlen`): `*`, `?`, `[...]` with ranges and `^`, and `\` escapes,
/// case-folded (ASCII) when `nocase`.
///
/// Like Redis 7.0.15 it stops early on patterns with many stars: once the rest of the pattern after a
/// star matches nowhere in the rest of the string, no earlier star can help by matching more (a longer
/// match leaves less string for the same rest), so every level gives up at once. Without that,
/// `a*a*a*...b` against a long run of `a`s takes exponential time. Past 1000 nested stars a pattern
/// matches nothing, as in Redis.
pub fn glob_match(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    let mut skip_longer = false;
    glob_from(pattern, s, nocase, &mut skip_longer, 0)
}

/// Byte `i` of `b`, or NUL past its end: Redis's strings end with a NUL that its loops read.
#[inline]
fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

fn glob_from(p: &[u8], s: &[u8], nocase: bool, skip_longer: &mut bool, nesting: u32) -> bool {
    if nesting > 1000 {
        return false;
    }
    let fold = |c: u8| if nocase { c.to_ascii_lowercase() } else { c };
    let (mut pi, mut si) = (0usize, 0usize);
    while pi < p.len() && si < s.len() {
        match p[pi] {
            b'*' => {
                while pi + 1 < p.len() && p[pi + 1] == b'*' {
                    pi += 1;
                }
                if pi + 1 == p.len() {
                    return true;
                }
                while si < s.len() {
                    if glob_from(&p[pi + 1..], &s[si..], nocase, skip_longer, nesting + 1) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    si += 1;
                }
                *skip_longer = true;
                return false;
            }
            b'?' => si += 1,
            b'[' => {
                pi += 1;
                let not = at(p, pi) == b'^';
                if not {
                    pi += 1;
                }
                let c = s[si];
                let mut matched = false;
                loop {
                    if at(p, pi) == b'\\' && p.len() - pi >= 2 {
                        pi += 1;
                        if p[pi] == c {
                            matched = true;
                        }
                    } else if at(p, pi) == b']' {
                        break;
                    } else if pi >= p.len() {
                        pi -= 1;
                        break;
                    } else if p.len() - pi >= 3 && p[pi + 1] == b'-' {
                        let (mut lo, mut hi) = (p[pi], p[pi + 2]);
                        if lo > hi {
                            std::mem::swap(&mut lo, &mut hi);
                        }
                        let (lo, hi, c) = (fold(lo), fold(hi), fold(c));
                        pi += 2;
                        if c >= lo && c <= hi {
                            matched = true;
                        }
                    } else if fold(p[pi]) == fold(c) {
                        matched = true;
                    }
                    pi += 1;
                }
                if matched == not {
                    return false;
                }
                si += 1;
            }
            b => {
                let mut want = b;
                if b == b'\\' && p.len() - pi >= 2 {
                    pi += 1;
                    want = p[pi];
                }
                if fold(want) != fold(s[si]) {
                    return false;
                }
                si += 1;
            }
        }
        pi += 1;
        if si == s.len() {
            while pi < p.len() && p[pi] == b'*' {
                pi += 1;
            }
            break;
        }
    }
    pi == p.len() && si == s.len()
}

/// A stable 64-bit hash of a key (FNV-1a), used to order SCAN so a cursor survives inserts and deletes.
pub fn scan_hash(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn canonical_ints() {
        assert_eq!(parse_canonical_i64(b"123"), Some(123));
        assert_eq!(parse_canonical_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_canonical_i64(b"9223372036854775808"), None);
        assert_eq!(parse_canonical_i64(b"012"), None);
        assert_eq!(parse_canonical_i64(b"+1"), None);
        assert_eq!(parse_canonical_i64(b"-0"), None);
        assert_eq!(parse_canonical_i64(b" 1"), None);
    }
    #[test]
    fn globs() {
        assert!(glob_match(b"rate:*", b"rate:{u1}:5", false));
        assert!(glob_match(b"h?llo", b"hello", false));
        assert!(!glob_match(b"h?llo", b"hllo", false));
        assert!(glob_match(b"h[ae]llo", b"hallo", false));
        assert!(!glob_match(b"h[^e]llo", b"hello", false));
        assert!(glob_match(b"h[a-b]llo", b"hbllo", false));
        // As `stringmatchlen`: nothing matches the empty string (KEYS and SCAN never ask for `*`).
        assert!(!glob_match(b"*", b"", false));
        assert!(glob_match(b"a\\*b", b"a*b", false));
        assert!(!glob_match(b"a\\*b", b"axb", false));
        assert!(glob_match(b"*:*:*", b"a:b:c", false));
        assert!(glob_match(b"H[A-C]LLO", b"hbllo", true));
        assert!(!glob_match(b"H[A-C]LLO", b"hbllo", false));
        assert!(glob_match(b"a[\\]]b", b"a]b", false));
        assert!(!glob_match(b"a[]b", b"a]b", false));
        assert!(!glob_match(b"*a", b"", false));
        assert!(glob_match(b"a[bc", b"ab", false));
        assert!(glob_match(b"a\\", b"a\\", false));
    }

    /// A pattern of many stars against a long string that it cannot match answers at once (the
    /// skip-longer rule) and answers as plain backtracking does.
    #[test]
    fn many_stars_are_not_exponential() {
        let key = vec![b'a'; 4000];
        let mut pat = b"a*".repeat(40);
        pat.push(b'b');
        let watch = crate::clock::Stopwatch::start();
        assert!(!glob_match(&pat, &key, false));
        assert!(watch.elapsed() < std::time::Duration::from_millis(100), "{:?}", watch.elapsed());
        assert!(glob_match(&b"a*".repeat(40), &key, false));
        assert!(glob_match(b"*a*b*c", b"xxaxxbxxcc", false));
        assert!(!glob_match(b"*a*b*c", b"xxaxxbxxcd", false));
    }
}
