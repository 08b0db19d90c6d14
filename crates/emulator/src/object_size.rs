//! MEMORY USAGE as Redis 7.0.15 computes it (`objectComputeSize`, plus the key's sds and its dict
//! entry), from the emulator's values: jemalloc size classes, the robj header, sds headers, listpack
//! entry encodings, dict tables and skiplist nodes.
//!
//! Everything here was calibrated against a real `redis-server` 7.0.15 built with jemalloc 5.3 (the
//! unit tests hold the figures it printed). What the model knows exactly and what it estimates:
//! - Exact: integer, embstr and raw strings set whole; listpack hashes and sorted sets; intsets; the
//!   key and its entry (plus the 16-byte cluster slot metadata in cluster mode).
//! - Expected values: skiplist nodes. Redis draws each node's level at random (p = 1/4, seeded
//!   from the clock), so no model can predict the exact figure; [`expected_skiplist_node`] is the
//!   mean allocation of a node, and a set of 1,000 members lands within about 0.3% of a real one
//!   measured with `SAMPLES 0`. With the default 5 samples Redis extrapolates from the first five
//!   nodes, whose levels alone make its figure vary by about ±5% from call to call on a real server.
//! - Tracked with an expected rehash speed: a sorted set's dict table ([`DictTable`]): its size
//!   follows Redis's growth and shrink rules exactly, and while Redis is rehashing (both tables
//!   count) the model advances the rehash by the expected buckets per step, as hash order is seeded
//!   at random on a real server.
//! - Tracked: strings written in place by APPEND/SETRANGE keep their sds allocation (the `alloc`
//!   field, as the Vec's capacity): it grows only when a write does not fit, by `sdsMakeRoomFor`'s
//!   rule, and keeps jemalloc's spare room.
//! - Approximate: hashtable-encoded hashes and sets (their table is taken as settled, with no rehash
//!   in progress and no shrink history); lists (nodes packed from the head as RPUSH packs them);
//!   strings of 32 KB and more sent by a client rather than a script, which Redis keeps in the query
//!   buffer's allocation, 2 bytes longer.

use super::keyspace::{parse_canonical_i64, Entry, Hash, RStr, SetValue, Value, ZSet};
use super::reply::fmt_g;
pub use crate::keyspace::dict_table::DictTable;
use crate::keyspace::dict_table::DICT_INITIAL;
pub use crate::keyspace::listpack::{lp_entry, lp_int_entry, lp_str_entry};

/// `sizeof(robj)`.
pub const ROBJ: usize = 16;
/// `sizeof(dictEntry)` (key, value, next).
pub const DICT_ENTRY: usize = 24;
/// `sizeof(dict)` in 7.0 (type, two table pointers, two used counts, rehashidx, pauserehash, two
/// size exponents).
pub const DICT: usize = 56;
/// The cluster slot-to-keys links Redis 7.0 keeps in each keyspace entry's metadata in cluster mode.
pub const CLUSTER_ENTRY_METADATA: usize = 16;
/// `OBJ_COMPUTE_SIZE_DEF_SAMPLES`: elements MEMORY USAGE looks at when no SAMPLES is given.
pub const DEFAULT_SAMPLES: usize = 5;

/// `sizeof(zset)`: the dict and skiplist pointers.
const ZSET: usize = 16;
/// `sizeof(zskiplist)`: header, tail, length, level.
const ZSKIPLIST: usize = 32;
/// `ZSKIPLIST_MAXLEVEL`: the header node always has every level.
const SKIPLIST_MAX_LEVEL: usize = 32;
/// `sizeof(quicklist)` (head, tail, count, len, the fill/compress/bookmark bit fields).
const QUICKLIST: usize = 40;
/// `sizeof(quicklistNode)` (prev, next, entry, sz, the count/encoding/container bit fields).
const QUICKLIST_NODE: usize = 40;
/// A listpack's 6-byte header (total bytes, element count) and its end byte.
const LISTPACK_EMPTY: usize = 7;
/// `list-max-listpack-size -2`: a quicklist node's listpack stays within 8 KB.
/// `OBJ_ENCODING_EMBSTR_SIZE_LIMIT`.
const EMBSTR_MAX: usize = 44;
/// `SDS_MAX_PREALLOC`: growth past this adds 1 MB instead of doubling.
const SDS_MAX_PREALLOC: usize = 1024 * 1024;

/// The usable size jemalloc 5 gives a request of `size` bytes: its size class (8, 16, 32, 48, ...,
/// 128, then four classes per doubling: 160, 192, 224, 256, 320, ...). `zmalloc_size` reports this.
pub fn jemalloc_usable(size: usize) -> usize {
    if size <= 8 {
        return 8;
    }
    if size <= 128 {
        return (size + 15) & !15;
    }
    let log2 = usize::BITS - 1 - (size - 1).leading_zeros();
    let spacing = 1usize << (log2 - 2);
    (size + spacing - 1) & !(spacing - 1)
}

/// The header of an sds string of `len` bytes created at its exact length (`sdsnewlen`): type 5
/// (1 byte) below 32 bytes, except the empty string, then types 8, 16, 32 and 64.
fn sds_header(len: usize) -> usize {
    match len {
        0 => 3,
        1..=31 => 1,
        32..=255 => 3,
        256..=65_535 => 5,
        _ if (len as u64) < (1u64 << 32) => 9,
        _ => 17,
    }
}

/// `sdsZmallocSize` of a string created at its exact length: keys, hash fields and values, set
/// and sorted-set members, raw strings.
pub fn sds_alloc(len: usize) -> usize {
    jemalloc_usable(sds_header(len) + len + 1)
}

/// The header of a growable sds whose `alloc` field is `alloc` (types 8, 16, 32, 64: never 5,
/// which cannot remember spare room).
fn grown_header(alloc: usize) -> usize {
    match alloc {
        0..=255 => 3,
        256..=65_535 => 5,
        _ if (alloc as u64) < (1u64 << 32) => 9,
        _ => 17,
    }
}

/// The largest `alloc` an sds type can record (`sdsTypeMaxSize`).
fn type_max(header: usize) -> usize {
    match header {
        3 => 255,
        5 => 65_535,
        9 => u32::MAX as usize,
        _ => usize::MAX,
    }
}

/// The `alloc` field (room for the string, header and NUL excluded) of an sds made at its exact
/// length by `sdsnewlen` (jemalloc's spare room included, as `s_malloc_usable` reports it), or None
/// for a type-5 string (under 32 bytes), which has no room to spare.
pub fn sds_new_room(len: usize) -> Option<usize> {
    let header = sds_header(len);
    if header == 1 {
        return None;
    }
    Some((jemalloc_usable(header + len + 1) - header - 1).min(type_max(header)))
}

/// `sdsMakeRoomFor` (greedy): the new `alloc` for a string of `alloc` room to hold `newlen` bytes,
/// or None when it already fits: doubled below 1 MB, plus 1 MB above, then the allocator's usable
/// size.
pub fn sds_make_room(alloc: usize, newlen: usize) -> Option<usize> {
    if newlen <= alloc {
        return None;
    }
    let want = if newlen < SDS_MAX_PREALLOC { newlen * 2 } else { newlen + SDS_MAX_PREALLOC };
    let header = grown_header(want);
    Some((jemalloc_usable(header + want + 1) - header - 1).min(type_max(header)))
}

/// The allocation behind a grown string whose `alloc` field is `alloc`.
fn sds_grown_alloc(alloc: usize) -> usize {
    jemalloc_usable(grown_header(alloc) + alloc + 1)
}

/// Bytes of a sorted-set score in a listpack: `d2string` writes integral scores below 2^52 as
/// integers (and -0 as 0), `inf`/`-inf` as such, anything else with `%.17g`, which the listpack
/// then stores as an integer when it reads as one.
pub fn lp_score_entry(s: f64) -> usize {
    if s == 0.0 {
        return lp_int_entry(0);
    }
    if s.is_infinite() {
        return lp_str_entry(if s > 0.0 { 3 } else { 4 });
    }
    if s > -4_503_599_627_370_495.0 && s < 4_503_599_627_370_496.0 && s == s.trunc() {
        return lp_int_entry(s as i64);
    }
    lp_entry(fmt_g(s, 17).as_bytes())
}

/// The allocation of a skiplist node with `level` levels: ele, score, backward and 16 bytes a level.
fn skiplist_node(level: usize) -> usize {
    jemalloc_usable(24 + 16 * level)
}

/// The mean allocation of a skiplist node, over Redis's level distribution (`zslRandomLevel`:
/// another level with probability exactly 1/4, at most 32): about 53.3 bytes.
pub fn expected_skiplist_node() -> f64 {
    let mut mean = 0.0;
    let mut p_here = 1.0; // probability of reaching this level
    for level in 1..=SKIPLIST_MAX_LEVEL {
        let p_stop = if level == SKIPLIST_MAX_LEVEL { p_here } else { p_here * 0.75 };
        mean += p_stop * skiplist_node(level) as f64;
        p_here *= 0.25;
    }
    mean
}

/// The size of a dict table that has settled for `n` entries: the power of two Redis grows to
/// (at least 4), with no rehash in progress. Used where the table's history is not tracked.
fn settled_slots(n: usize) -> u64 {
    (n as u64).max(DICT_INITIAL).next_power_of_two()
}

/// MEMORY USAGE of a key holding `entry`: the value's size, the key's sds and its dict entry (plus
/// the cluster metadata in cluster mode). `samples` is the SAMPLES count (`usize::MAX` for 0, "all").
pub fn key_usage(key: &[u8], entry: &Entry, samples: usize, cluster: bool) -> u64 {
    let mut n = value_usage(&entry.value, samples) + sds_alloc(key.len()) as u64 + DICT_ENTRY as u64;
    if cluster {
        n += CLUSTER_ENTRY_METADATA as u64;
    }
    n
}

/// `objectComputeSize`: the value's allocations, with nested elements extrapolated from the first
/// `samples` ones (at least one).
pub fn value_usage(value: &Value, samples: usize) -> u64 {
    let samples = samples.max(1);
    match value {
        Value::Str(s) => string_usage(s) as u64,
        Value::Hash(h) => hash_usage(h, samples),
        Value::ZSet(z) => zset_usage(z, samples),
        Value::List(l) => list_usage(l.iter().map(|e| e.as_slice()), samples),
        Value::Set(s) => set_usage(s, samples),
        Value::Stream(s) => stream_usage(s, samples),
    }
}

/// `objectComputeSize` of a stream: the robj and stream structs, the radix tree of nodes
/// (`streamRadixTreeMemoryUsage`: 16 bytes per key, 244 per tree node), the listpacks' allocations
/// (the first `samples` averaged over all but the last, then the last's own), and for each consumer
/// group its struct, its pending entries list (tree and NACKs) and each consumer's struct, name length and
/// pending list tree.
fn stream_usage(s: &super::keyspace::Stream, samples: usize) -> u64 {
    const STREAM: usize = 80;
    const CG: usize = 40;
    const NACK: usize = 24;
    const CONSUMER: usize = 24;
    let rax = |keys: usize, nodes: u64| (keys * 16) as u64 + nodes * (4 + 8 * 30);
    let mut asize = (ROBJ + STREAM) as u64 + rax(s.nodes.len(), s.rax_nodes());
    let seen = samples.min(s.nodes.len());
    let lpsize: usize = s.nodes.iter().take(seen).map(|n| n.alloc).sum();
    if s.nodes.len() <= seen {
        asize += lpsize as u64;
    } else {
        let avg = lpsize / seen.max(1);
        asize += (avg * (s.nodes.len() - 1)) as u64 + s.nodes.last().map_or(0, |n| n.alloc) as u64;
    }
    for g in s.cgroups.values() {
        asize += CG as u64 + rax(g.pel.len(), super::keyspace::stream::id_rax_nodes(g.pel.keys()));
        asize += (NACK * g.pel.len()) as u64;
        for (name, c) in &g.consumers {
            asize += (CONSUMER + name.len()) as u64;
            asize += rax(c.pel.len(), super::keyspace::stream::id_rax_nodes(c.pel.iter()));
        }
    }
    asize
}

/// `asize += (double)elesize/samples*count`, with C's conversion back to `size_t`.
fn extrapolate(asize: usize, elesize: f64, seen: usize, count: usize) -> u64 {
    if seen == 0 {
        return asize as u64;
    }
    (asize as f64 + elesize / seen as f64 * count as f64) as u64
}

/// A string's robj and its sds. An integer counts its 16-byte robj whether or not it is one of the
/// shared integers 0..9999 (which a maxmemory LRU/LFU policy turns off): MEMORY USAGE gives 48 for
/// `k`=5 either way.
fn string_usage(s: &RStr) -> usize {
    match s {
        RStr::Int(_) => ROBJ,
        // The robj and an sdshdr8 string in one allocation.
        RStr::Raw(b) if b.len() <= EMBSTR_MAX => jemalloc_usable(ROBJ + 3 + b.len() + 1),
        RStr::Raw(b) | RStr::Exact(b) => ROBJ + sds_alloc(b.len()),
        // A grown string's Vec capacity is its sds `alloc` (cmd/strings.rs keeps it so).
        RStr::Grown(b) => ROBJ + sds_grown_alloc(b.capacity()),
    }
}

fn hash_usage(h: &Hash, samples: usize) -> u64 {
    if !h.hashtable {
        let bytes: usize = h.fields.iter().map(|(f, v)| lp_entry(f) + lp_entry(v)).sum();
        return (ROBJ + jemalloc_usable(LISTPACK_EMPTY + bytes)) as u64;
    }
    let asize = ROBJ + DICT + 8 * settled_slots(h.len()) as usize;
    let mut elesize = 0usize;
    let mut seen = 0usize;
    for (f, v) in h.fields.iter().take(samples) {
        elesize += sds_alloc(f.len()) + sds_alloc(v.len()) + DICT_ENTRY;
        seen += 1;
    }
    extrapolate(asize, elesize as f64, seen, h.len())
}

fn zset_usage(z: &ZSet, samples: usize) -> u64 {
    if !z.skiplist {
        let bytes: usize = z.iter().map(|(m, s)| lp_entry(m) + lp_score_entry(s)).sum();
        return (ROBJ + jemalloc_usable(LISTPACK_EMPTY + bytes)) as u64;
    }
    let slots = if z.dict_table.exists() { z.dict_table.slots() } else { settled_slots(z.len()) };
    let header = skiplist_node(SKIPLIST_MAX_LEVEL);
    let asize = ROBJ + ZSET + ZSKIPLIST + DICT + 8 * slots as usize + header;
    let node = expected_skiplist_node();
    let mut elesize = 0.0;
    let mut seen = 0usize;
    for (m, _) in z.iter().take(samples) {
        elesize += (sds_alloc(m.len()) + DICT_ENTRY) as f64 + node;
        seen += 1;
    }
    extrapolate(asize, elesize, seen, z.len())
}

fn set_usage(s: &SetValue, samples: usize) -> u64 {
    if !s.hashtable {
        // An intset: 8 bytes of header, then every member at the widest member's width.
        let width = s
            .members
            .iter()
            .map(|m| match parse_canonical_i64(m).unwrap_or(i64::MAX) {
                v if i16::try_from(v).is_ok() => 2,
                v if i32::try_from(v).is_ok() => 4,
                _ => 8,
            })
            .max()
            .unwrap_or(2);
        return (ROBJ + jemalloc_usable(8 + width * s.len())) as u64;
    }
    let slots = if s.dict_table.exists() { s.dict_table.slots() } else { settled_slots(s.len()) };
    let asize = ROBJ + DICT + 8 * slots as usize;
    let mut elesize = 0usize;
    let mut seen = 0usize;
    for m in s.members.iter().take(samples) {
        elesize += DICT_ENTRY + sds_alloc(m.len());
        seen += 1;
    }
    extrapolate(asize, elesize as f64, seen, s.len())
}

/// The listpack sizes of a quicklist's nodes holding `elements` in order, packed the way RPUSH
/// packs them: an element joins the tail node while `list-max-listpack-size` allows it, by the
/// node's bytes, the element's length and Redis's per-entry overhead estimate, or by the node's
/// element count (`_quicklistNodeAllowInsert`).
pub fn quicklist_nodes<'a>(elements: impl Iterator<Item = &'a [u8]>) -> Vec<usize> {
    let fill = crate::keyspace::limits::current().list_fill;
    let mut nodes: Vec<(usize, usize)> = Vec::new();
    for e in elements {
        match nodes.last_mut() {
            Some((bytes, count)) if crate::keyspace::limits::quicklist_node_allows(fill, *bytes, *count, e.len()) => {
                *bytes += lp_entry(e);
                *count += 1;
            }
            _ => nodes.push((LISTPACK_EMPTY + lp_entry(e), 1)),
        }
    }
    nodes.into_iter().map(|(bytes, _)| bytes).collect()
}

fn list_usage<'a>(elements: impl Iterator<Item = &'a [u8]>, samples: usize) -> u64 {
    let nodes = quicklist_nodes(elements);
    let asize = ROBJ + QUICKLIST;
    let mut elesize = 0usize;
    let mut seen = 0usize;
    for &bytes in nodes.iter().take(samples) {
        elesize += QUICKLIST_NODE + jemalloc_usable(bytes);
        seen += 1;
    }
    extrapolate(asize, elesize as f64, seen, nodes.len())
}

/// Makes room in a string value for `newlen` bytes and returns its bytes, as Redis's
/// `dbUnshareStringValue` + `sdsMakeRoomFor` do for APPEND and SETRANGE: an integer or embstr is
/// first copied into an sds of its exact length (`sdsnewlen`, keeping jemalloc's spare room beyond
/// 31 bytes), a raw string keeps its sds (trimmed when SET left over a tenth of it spare); then the
/// sds grows only when `newlen` does not fit, greedily. A string left with spare room becomes
/// `Grown`, whose Vec capacity is its sds `alloc` (the memory model reads it).
pub fn make_room(s: &mut RStr, newlen: usize) -> &mut Vec<u8> {
    const EMBSTR_MAX: usize = 44;
    let (bytes, alloc) = match std::mem::replace(s, RStr::Int(0)) {
        RStr::Grown(v) => {
            let alloc = v.capacity();
            (v, Some(alloc))
        }
        RStr::Int(i) => {
            let v = i.to_string().into_bytes();
            let alloc = sds_new_room(v.len());
            (v, alloc)
        }
        RStr::Raw(v) if v.len() <= EMBSTR_MAX => {
            let alloc = sds_new_room(v.len());
            (v, alloc)
        }
        RStr::Raw(v) => {
            // trimStringObjectIfNeeded: over a tenth spare, the sds is shrunk to its length.
            let room = sds_new_room(v.len()).unwrap_or(v.len());
            let alloc = if room - v.len() > v.len() / 10 { v.len() } else { room };
            (v, Some(alloc))
        }
        RStr::Exact(v) => {
            let alloc = sds_new_room(v.len());
            (v, alloc)
        }
    };
    let current = alloc.unwrap_or(bytes.len());
    let new_alloc = sds_make_room(current, newlen);
    *s = match (alloc, new_alloc) {
        // A type-5 sds that needs no room stays exactly sized.
        (None, None) => RStr::Exact(bytes),
        (Some(a), None) | (_, Some(a)) => RStr::Grown(with_capacity(bytes, a)),
    };
    match s {
        RStr::Grown(v) | RStr::Exact(v) => v,
        RStr::Int(_) | RStr::Raw(_) => unreachable!("set above"),
    }
}

/// `v` with a capacity of exactly `cap` (at least its length).
fn with_capacity(mut v: Vec<u8>, cap: usize) -> Vec<u8> {
    if v.capacity() == cap {
        return v;
    }
    if v.capacity() > cap {
        v.shrink_to(cap);
        if v.capacity() == cap {
            return v;
        }
    }
    let mut w = Vec::with_capacity(cap);
    w.extend_from_slice(&v);
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::Hash;
    use std::collections::VecDeque;

    fn usage(key: &str, value: Value, samples: usize) -> u64 {
        key_usage(key.as_bytes(), &Entry::new(value, None, 0), samples, false)
    }
    fn s(v: &str) -> Value {
        Value::Str(RStr::from_bytes(v.as_bytes()))
    }
    fn hash(pairs: &[(&str, &str)]) -> Value {
        let mut h = Hash::default();
        for (f, v) in pairs {
            h.set(f.as_bytes(), v.as_bytes().to_vec());
        }
        Value::Hash(h)
    }
    fn zset(pairs: &[(f64, &str)]) -> Box<ZSet> {
        let mut z = ZSet::new();
        for (sc, m) in pairs {
            z.insert(m.as_bytes(), *sc);
        }
        Box::new(z)
    }

    #[test]
    fn size_classes() {
        let cases = [
            (1, 8),
            (8, 8),
            (9, 16),
            (17, 32),
            (33, 48),
            (128, 128),
            (129, 160),
            (256, 256),
            (257, 320),
            (536, 640),
            (3463, 3584),
            (32_772, 40_960),
            (65_536, 65_536),
            (65_537, 81_920),
            (6_000_012, 6_291_456),
        ];
        for (n, c) in cases {
            assert_eq!(jemalloc_usable(n), c, "size {n}");
        }
    }

    // Every figure below is what `MEMORY USAGE` printed on a real Redis 7.0.15 (jemalloc 5.3.0).
    #[test]
    fn strings_match_redis() {
        for v in ["0", "5", "9999", "10000", "12345", "-1", "1700000000000", "9223372036854775807"] {
            assert_eq!(usage("k", s(v), 5), 48, "integer {v}");
        }
        assert_eq!(usage("ratelimit:user:123", s("12345"), 5), 72);
        assert_eq!(usage("rate:{user42}", s("5"), 5), 56);
        let x = |n: usize| "x".repeat(n);
        let cases = [
            (1, 64),
            (10, 64),
            (20, 80),
            (30, 96),
            (44, 96),
            (45, 112),
            (60, 112),
            (100, 160),
            (200, 272),
            (252, 304),
            (253, 368),
            (256, 368),
            (1000, 1072),
            (5000, 5168),
            (32_700, 32_816),
            (32_766, 41_008),
            (60_000, 65_584),
            (65_528, 65_584),
            (65_531, 81_968),
            (100_000, 114_736),
            (1_000_000, 1_048_624),
        ];
        for (n, want) in cases {
            assert_eq!(usage("k", s(&x(n)), 5), want, "string of {n} bytes");
        }
        // Key lengths: sds type 5 below 32 bytes, then types 8 and 16.
        for (klen, want) in [(1, 48), (2, 48), (13, 56), (31, 88), (32, 88), (36, 88), (300, 360)] {
            assert_eq!(usage(&"a".repeat(klen), s("5"), 5), want, "key of {klen} bytes");
        }
    }

    #[test]
    fn hashes_match_redis() {
        assert_eq!(usage("h", hash(&[("n", "60000000"), ("t", "1700000000000")]), 5), 80);
        assert_eq!(usage("h", hash(&[("a", "1")]), 5), 64);
        assert_eq!(usage("h", hash(&[("tok", "999.50000000000011"), ("ts", "1700000000000")]), 5), 96);
        assert_eq!(usage("h", hash(&[("w", "28333333"), ("n", "17")]), 5), 80);
        let ints = [("f", "127"), ("g", "128"), ("i", "-4096"), ("j", "4095"), ("l", "32767"), ("m", "32768")];
        assert_eq!(usage("h", hash(&ints), 5), 96);
        // The production scripts' documented figure.
        assert_eq!(usage("rate:{user42}", hash(&[("n", "60000000"), ("t", "1700000000000")]), 5), 88);
        for (n, want) in [(1, 64), (2, 80), (3, 80), (10, 144), (100, 1072)] {
            let pairs: Vec<(String, String)> = (1..=n).map(|i| (format!("f{i}"), format!("v{i}"))).collect();
            let refs: Vec<(&str, &str)> = pairs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
            assert_eq!(usage("h", hash(&refs), 0), want, "{n} fields");
        }
    }

    #[test]
    fn listpack_zsets_match_redis() {
        assert_eq!(usage("z", Value::ZSet(zset(&[(1_700_000_000_000.0, "1700000000000:0")])), 5), 96);
        assert_eq!(usage("z", Value::ZSet(zset(&[(1.5, "a")])), 5), 64);
        let members: Vec<(f64, String)> =
            (1..=128).map(|i| ((1_700_000_000_000i64 + i) as f64, format!("{}:0", 1_700_000_000_000i64 + i))).collect();
        let refs: Vec<(f64, &str)> = members.iter().map(|(s, m)| (*s, m.as_str())).collect();
        assert_eq!(usage("z", Value::ZSet(zset(&refs)), 5), 3632);
        // Score encodings, found by growing the member until the listpack changed size class.
        for (score, bytes) in [
            (0.0, 2),
            (-0.0, 2),
            (f64::INFINITY, 5),
            (0.1, 21),
            (1e20, 7),
            (1.5, 5),
            (4_503_599_627_370_496.0, 10),
            (2_147_483_648.0, 10),
            (-1e-300, 9),
        ] {
            assert_eq!(lp_score_entry(score), bytes, "score {score}");
        }
    }

    #[test]
    fn sets_match_redis() {
        let set = |members: Vec<String>| {
            let mut s = SetValue::for_first(members[0].as_bytes());
            for m in &members {
                s.insert(m.as_bytes());
            }
            Value::Set(Box::new(s))
        };
        let ints = |n: usize| (1..=n).map(|i| i.to_string()).collect::<Vec<_>>();
        for (n, want) in [(1, 64), (2, 64), (3, 64), (10, 80), (100, 272), (512, 1328), (513, 24_712), (1000, 40_296)] {
            assert_eq!(usage("s", set(ints(n)), 0), want, "{n} integers");
        }
        assert_eq!(usage("s", set(vec!["1".into(), "70000".into()]), 5), 64);
        assert_eq!(usage("s", set(vec!["1".into(), "7000000000".into()]), 5), 80);
        // String members: settled tables (Redis was seen mid-rehash at 5, 9 and 100 members).
        for (n, want) in [(1, 168), (2, 200), (4, 264), (8, 424)] {
            let m: Vec<String> = (1..=n).map(|i| format!("m{i}")).collect();
            assert_eq!(usage("s", set(m), 0), want, "{n} strings");
        }
    }

    #[test]
    fn lists_match_redis() {
        let list = |v: Vec<String>| Value::List(v.into_iter().map(String::into_bytes).collect::<VecDeque<_>>());
        let vs = |n: usize| (1..=n).map(|i| format!("v{i}")).collect::<Vec<_>>();
        for (n, want_all, want_5) in [
            (1, 144, 144),
            (2, 144, 144),
            (3, 160, 160),
            (10, 176, 176),
            (100, 640, 640),
            (1000, 6272, 6272),
            (5000, 34_336, 34_336),
        ] {
            assert_eq!(usage("l", list(vs(n)), usize::MAX), want_all, "{n} elements, all sampled");
            assert_eq!(usage("l", list(vs(n)), 5), want_5, "{n} elements");
        }
        for (len, n, all, five, one) in [
            (100, 200, 21_712, 21_712, 24_784),
            (30, 300, 9896, 9896, 16_552),
            (60, 150, 9640, 9640, 16_552),
            (250, 40, 10_408, 10_408, 16_552),
            (300, 40, 13_480, 13_480, 16_552),
            (1, 20_000, 60_824, 65_944, 65_944),
        ] {
            let v = vec!["y".repeat(len); n];
            assert_eq!(usage("l", list(v.clone()), usize::MAX), all, "{n} x {len} bytes, all");
            assert_eq!(usage("l", list(v.clone()), 5), five, "{n} x {len} bytes, 5");
            assert_eq!(usage("l", list(v), 1), one, "{n} x {len} bytes, 1");
        }
    }

    #[test]
    fn skiplist_node_mean() {
        let m = expected_skiplist_node();
        assert!((m - 53.33).abs() < 0.05, "{m}");
    }

    #[test]
    fn dict_growth_and_rehash() {
        let t = DictTable::grown(4);
        assert_eq!((t.slots(), t.rehashing()), (4, false));
        // The fifth add grows the table; the rehash has not moved yet.
        t.add(4);
        assert_eq!((t.slots(), t.rehashing()), (12, true));
        for _ in 0..10 {
            t.lookup();
        }
        assert_eq!((t.slots(), t.rehashing()), (8, false));
        // 128 entries settle in 128 buckets; the 129th starts a rehash to 256 that about 80
        // lookups finish (Redis: 69 to 78 on a real server).
        let t = DictTable::grown(128);
        assert_eq!(t.slots(), 128);
        t.lookup();
        t.add(128);
        assert_eq!(t.slots(), 384);
        let mut steps = 0;
        while t.rehashing() {
            t.lookup();
            steps += 1;
        }
        assert!((60..=90).contains(&steps), "{steps}");
        assert_eq!(t.slots(), 256);
        // Under 10% full, a table shrinks.
        t.resize_if_needed(26);
        assert_eq!(t.slots(), 256);
        t.resize_if_needed(20);
        assert_eq!(t.slots(), 256 + 32);
    }
}
