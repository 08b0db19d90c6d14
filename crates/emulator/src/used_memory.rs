//! What keys cost a Redis 7.0.15 server in `used_memory` (`INFO memory`), which is more than
//! `MEMORY USAGE` says: the growth model behind "used_memory growth per subject" in `limitlab
//! memory` and `limitlab check`.
//!
//! `used_memory` is the sum of jemalloc's usable sizes of everything Redis allocated
//! (`zmalloc_size`). `MEMORY USAGE` leaves out or rounds differently four things a key costs:
//! - **The expires dict.** A key with a TTL has a second `dictEntry` (24 bytes, so 32 in jemalloc)
//!   in `db->expires`, sharing the key's sds and holding the expiry time in the entry itself.
//! - **Bucket arrays.** The main dict and the expires dict are power-of-two tables of 8-byte
//!   bucket pointers, grown (doubled) when an add finds them full (load factor 1) and moved to the
//!   new table incrementally; once the rehash is done only the new table remains. N keys added to
//!   an empty database leave a table of `max(4, next_power_of_two(N))` buckets: between 8 and 16
//!   bytes a key, depending on where N falls between two powers of two.
//! - **Allocation rounding.** `MEMORY USAGE` adds `sizeof(dictEntry)` (24, or 40 with the cluster
//!   slot metadata) where jemalloc hands out 32 (48); the same holds for the dict entries and `dict`
//!   structs inside hashtable hashes, sets and skiplist sorted sets, and for quicklist headers and
//!   nodes (40 bytes, allocated as 48).
//! - **Shared integers.** A string holding an integer from 0 to 9999 points at one of Redis's
//!   shared objects: `MEMORY USAGE` counts its 16-byte robj, the server allocates nothing (as long as
//!   no LRU/LFU `maxmemory-policy` turns sharing off).
//!
//! Everything else (the key's sds, listpacks, intsets, skiplist nodes, embstr and raw strings) is
//! what [`super::object_size`] already computes with jemalloc's size classes, so the two models share
//! those functions. Checked against a private Redis 7.0.15 by loading N subjects through each
//! shipped script and reading `used_memory` before and after (`tests/used_memory_real.rs`,
//! `benches/used_memory.sh`).
use super::keyspace::{Entry, RStr, Value};
use super::object_size::{
    jemalloc_usable, quicklist_nodes, sds_alloc, value_usage, CLUSTER_ENTRY_METADATA, DICT_ENTRY,
};

/// `OBJ_SHARED_INTEGERS`: integers below this (and not negative) are shared objects.
pub const SHARED_INTEGERS: i64 = 10_000;
/// A bucket pointer in a dict table.
pub const BUCKET: u64 = 8;
/// What jemalloc adds to each inner `dictEntry` (24 -> 32) and to a `dict` struct (56 -> 64),
/// and to a quicklist header or node (40 -> 48).
const ROUNDING: usize = 8;

/// The allocation of one entry of the main dict: 32 bytes, or 48 in cluster mode (the 16 bytes of
/// slot-to-keys links Redis 7.0 keeps in each entry's metadata).
pub fn main_entry(cluster: bool) -> usize {
    jemalloc_usable(DICT_ENTRY + if cluster { CLUSTER_ENTRY_METADATA } else { 0 })
}

/// The allocation of one entry of the expires dict (no metadata, in cluster mode too).
pub fn expires_entry() -> usize {
    jemalloc_usable(DICT_ENTRY)
}

/// What one key costs the server, tables aside.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KeyCost {
    /// The main dict's entry and the key's sds.
    pub key: usize,
    /// The value's allocations (expected values for skiplist nodes, as in [`super::object_size`]).
    pub value: f64,
    /// The expires dict's entry, when the key has a TTL (0 otherwise).
    pub expire: usize,
}

impl KeyCost {
    pub fn bytes(&self) -> f64 {
        (self.key + self.expire) as f64 + self.value
    }
    pub fn has_ttl(&self) -> bool {
        self.expire > 0
    }
}

/// The allocations of a value as the server makes them.
pub fn value_bytes(value: &Value) -> f64 {
    let usage = value_usage(value, usize::MAX) as f64;
    match value {
        Value::Str(RStr::Int(v)) if (0..SHARED_INTEGERS).contains(v) => 0.0,
        Value::Str(_) => usage,
        Value::Hash(h) if h.hashtable => usage + (ROUNDING * (1 + h.len())) as f64,
        Value::Hash(_) => usage,
        Value::ZSet(z) if z.skiplist => usage + (ROUNDING * (1 + z.len())) as f64,
        Value::ZSet(_) => usage,
        Value::Set(s) if s.hashtable => usage + (ROUNDING * (1 + s.len())) as f64,
        Value::Set(_) => usage,
        Value::List(l) => usage + (ROUNDING * (1 + quicklist_nodes(l.iter().map(|e| e.as_slice())).len())) as f64,
        // Streams: MEMORY USAGE's figure (their rax nodes and listpacks are counted as allocated;
        // not validated against used_memory).
        _ => usage,
    }
}

/// What `key` holding `entry` costs the server, its dict buckets aside.
pub fn key_cost(key: &[u8], entry: &Entry, cluster: bool) -> KeyCost {
    // A COPY of a small integer is an object of its own while it holds that value.
    let value = match (&entry.value, entry.unshared_int) {
        (Value::Str(RStr::Int(v)), Some(u)) if *v == i64::from(u) => value_usage(&entry.value, 1) as f64,
        (v, _) => value_bytes(v),
    };
    KeyCost {
        key: main_entry(cluster) + sds_alloc(key.len()),
        value,
        expire: if entry.expire_at.is_some() { expires_entry() } else { 0 },
    }
}

/// The buckets of a dict that `n` adds grew from empty, once its rehash has finished: none for an
/// empty dict, else `max(4, next_power_of_two(n))` (a table is full at load factor 1 and grows
/// only when the next add finds it full).
pub fn table_buckets(n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        n.max(4).next_power_of_two()
    }
}

/// The `used_memory` growth of N subjects whose keys each cost what one subject's do, added to an
/// empty database.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Growth {
    pub subjects: u64,
    /// Keys in all (subjects x keys per subject).
    pub keys: u64,
    /// Keys with a TTL.
    pub keys_with_ttl: u64,
    /// Entries, key strings and values: subjects x one subject's.
    pub entries_and_values: f64,
    /// The expires dict's entries.
    pub expires_entries: u64,
    /// The main dict's bucket array, in bytes.
    pub main_table: u64,
    /// The expires dict's bucket array, in bytes.
    pub expires_table: u64,
    /// The whole growth, in bytes.
    pub total: f64,
    /// `total / subjects`.
    pub per_subject: f64,
    /// Bytes a subject's keys report in MEMORY USAGE (the model of [`super::object_size`]), for contrast.
    pub memory_usage_per_subject: u64,
}

/// The growth for `subjects` subjects with one subject's keys `one` (with their MEMORY USAGE sum).
pub fn growth(one: &[KeyCost], memory_usage_per_subject: u64, subjects: u64) -> Growth {
    let per_key: f64 = one.iter().map(|c| (c.key as f64) + c.value).sum();
    let ttl = one.iter().filter(|c| c.has_ttl()).count() as u64;
    let keys = one.len() as u64 * subjects;
    let keys_with_ttl = ttl * subjects;
    let expires_entries = keys_with_ttl * expires_entry() as u64;
    let main_table = BUCKET * table_buckets(keys);
    let expires_table = BUCKET * table_buckets(keys_with_ttl);
    let entries_and_values = per_key * subjects as f64;
    let total = entries_and_values + (expires_entries + main_table + expires_table) as f64;
    Growth {
        subjects,
        keys,
        keys_with_ttl,
        entries_and_values,
        expires_entries,
        main_table,
        expires_table,
        total,
        per_subject: if subjects == 0 { 0.0 } else { total / subjects as f64 },
        memory_usage_per_subject,
    }
}

/// The growth a whole keyspace (`(key, entry)` pairs added to an empty database) predicts: what
/// the validation compares with a server loaded the same way.
pub fn keyspace_growth<'a>(entries: impl Iterator<Item = (&'a [u8], &'a Entry)>, cluster: bool) -> f64 {
    let (mut bytes, mut keys, mut ttl) = (0.0, 0u64, 0u64);
    for (k, e) in entries {
        let c = key_cost(k, e, cluster);
        bytes += c.bytes();
        keys += 1;
        ttl += c.has_ttl() as u64;
    }
    bytes + (BUCKET * (table_buckets(keys) + table_buckets(ttl))) as f64
}

/// What each of `keys` that exists on `emu` now costs the server in `used_memory`, tables aside
/// ([`key_cost`]).
pub fn key_costs<'a>(emu: &crate::emulator::Emulator, keys: impl IntoIterator<Item = &'a [u8]>) -> Vec<KeyCost> {
    let mut core = emu.core();
    let cluster = core.cluster;
    let now = core.now_ms();
    keys.into_iter().filter_map(|k| core.db.get(k, now).map(|e| key_cost(k, e, cluster))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::Hash;

    fn entry(value: Value, ttl: bool) -> Entry {
        Entry::new(value, ttl.then_some(1), 0)
    }

    #[test]
    fn tables_double_at_load_factor_one() {
        assert_eq!(table_buckets(0), 0);
        assert_eq!(table_buckets(1), 4);
        assert_eq!(table_buckets(4), 4);
        assert_eq!(table_buckets(5), 8);
        assert_eq!(table_buckets(1 << 20), 1 << 20);
        assert_eq!(table_buckets((1 << 20) + 1), 1 << 21);
    }

    #[test]
    fn the_issue_s_million_keys() {
        // `SET ratelimit:user:NNNNNNN 1 PX 120000` a million times: used_memory grew by
        // 112,807,288 bytes on a private Redis 7.0.15 (redis-cli --pipe, INFO before and after;
        // the 30 KB over the model are the loading client's buffers); MEMORY USAGE says 72 a key.
        let key = b"ratelimit:user:0000001";
        let e = entry(Value::Str(RStr::Int(1)), true);
        let c = key_cost(key, &e, false);
        assert_eq!((c.key, c.value, c.expire), (32 + 32, 0.0, 32));
        let g = growth(&[c], 72, 1_000_000);
        assert_eq!(g.main_table, 8 << 20);
        assert_eq!(g.total, 112_777_216.0);
        assert!((112_807_288.0 - g.total) / g.total < 0.001);
    }

    #[test]
    fn hashes_and_integers() {
        let mut h = Hash::default();
        h.set(b"w", b"28333".to_vec());
        h.set(b"n", b"7".to_vec());
        let hv = Value::Hash(h);
        // A listpack hash: the same as MEMORY USAGE's value part.
        assert_eq!(value_bytes(&hv), value_usage(&hv, 0) as f64);
        assert_eq!(value_bytes(&Value::Str(RStr::Int(9999))), 0.0);
        assert_eq!(value_bytes(&Value::Str(RStr::Int(10_000))), 16.0);
        assert_eq!(value_bytes(&Value::Str(RStr::Int(-1))), 16.0);
        assert_eq!(main_entry(true), 48);
    }
}
