//! Streams as Redis 7.0 lays them out: a sequence of listpack nodes (a radix tree keyed by each
//! node's master ID in Redis), each holding a master entry (live count, deleted count, the first
//! entry's field names) and its entries, deleted ones included until their node goes. The model
//! keeps each node's listpack size in bytes, because Redis starts a new node when the tail's bytes
//! plus the new entry's would reach `stream-node-max-bytes` (4096) or when it holds
//! `stream-node-max-entries` (100) entries, and approximate trimming (`~`) removes whole nodes only:
//! so XTRIM and XADD with `~` remove exactly what Redis removes.
use std::collections::{BTreeMap, BTreeSet};

use super::listpack::{lp_entry, lp_int_entry};
use crate::object_size::jemalloc_usable;

/// Redis's default `stream-node-max-bytes`.
pub const NODE_MAX_BYTES: usize = 4096;
/// Redis's default `stream-node-max-entries`.
pub const NODE_MAX_ENTRIES: u64 = 100;
/// A listpack's header (total bytes, element count) and end byte.
const LP_EMPTY: usize = 7;
const FLAG_SAMEFIELDS: i64 = 2;
/// `STREAM_LISTPACK_MAX_PRE_ALLOCATE`: what a new node's listpack is allocated up front.
const LISTPACK_PREALLOC: usize = 4096;

/// A stream entry ID: milliseconds and sequence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId { ms: u64::MAX, seq: u64::MAX };

    /// `<ms>-<seq>`, as Redis prints IDs.
    pub fn to_bytes(self) -> Vec<u8> {
        format!("{}-{}", self.ms, self.seq).into_bytes()
    }
    /// `streamIncrID`: the next ID, or None after the last possible one.
    pub fn incr(self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                return None;
            }
            return Some(StreamId { ms: self.ms + 1, seq: 0 });
        }
        Some(StreamId { ms: self.ms, seq: self.seq + 1 })
    }
    /// `streamDecrID`: the previous ID, or None before 0-0.
    pub fn decr(self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                return None;
            }
            return Some(StreamId { ms: self.ms - 1, seq: u64::MAX });
        }
        Some(StreamId { ms: self.ms, seq: self.seq - 1 })
    }
}

/// One entry of a node.
#[derive(Clone, Debug)]
pub struct StreamEntry {
    pub id: StreamId,
    pub fields: Vec<(Vec<u8>, Vec<u8>)>,
    pub deleted: bool,
    /// Stored without its field names (they are the node's master fields).
    same_fields: bool,
}

/// One listpack node.
#[derive(Clone, Debug)]
pub struct StreamNode {
    pub master_id: StreamId,
    master_fields: Vec<Vec<u8>>,
    pub entries: Vec<StreamEntry>,
    /// Entries not deleted.
    pub live: u64,
    /// Entries flagged deleted.
    pub deleted: u64,
    /// Bytes of every listpack element but the two counters.
    body_bytes: usize,
    /// The listpack's allocation as `zmalloc_size` reports it: a new node is allocated
    /// `STREAM_LISTPACK_MAX_PRE_ALLOCATE` (4096) bytes, grows by exact reallocations past that,
    /// shrinks exactly, and is shrunk to fit when the next node starts (`lpShrinkToFit`).
    pub alloc: usize,
}

impl StreamEntry {
    /// An entry as read back from a node's listpack.
    pub fn from_parts(id: StreamId, fields: Vec<(Vec<u8>, Vec<u8>)>, deleted: bool, same_fields: bool) -> Self {
        StreamEntry { id, fields, deleted, same_fields }
    }
}

impl StreamNode {
    /// A node as read back from its listpack: the counters and sizes follow from the entries.
    pub fn from_parts(master_id: StreamId, master_fields: Vec<Vec<u8>>, entries: Vec<StreamEntry>) -> Self {
        let body = lp_int_entry(master_fields.len() as i64)
            + master_fields.iter().map(|f| lp_entry(f)).sum::<usize>()
            + lp_int_entry(0);
        let mut node = StreamNode {
            master_id,
            master_fields,
            entries: Vec::new(),
            live: 0,
            deleted: 0,
            body_bytes: body,
            alloc: 0,
        };
        for e in entries {
            node.body_bytes += node.entry_bytes(&e);
            if e.deleted {
                node.deleted += 1;
            } else {
                node.live += 1;
            }
            node.entries.push(e);
        }
        node.alloc = jemalloc_usable(node.lp_bytes());
        node
    }

    /// `lpInsert`'s reallocation when the listpack goes from `old` to `new` bytes.
    fn resized(&mut self, old: usize, new: usize) {
        if new < old || new > self.alloc {
            self.alloc = jemalloc_usable(new);
        }
    }

    /// The live and deleted counters rewritten one after the other, as Redis replaces them.
    fn set_counts(&mut self, live: u64, deleted: u64) {
        let b0 = self.lp_bytes();
        self.live = live;
        let b1 = self.lp_bytes();
        self.resized(b0, b1);
        self.deleted = deleted;
        let b2 = self.lp_bytes();
        self.resized(b1, b2);
    }

    /// The master entry's field names.
    pub fn master_fields(&self) -> &[Vec<u8>] {
        &self.master_fields
    }

    /// The listpack's elements as Redis lays them out (integers in decimal): the master entry
    /// (live count, deleted count, field count, field names, 0), then each entry (flags, ID
    /// deltas, field count and names unless they are the master's, values, element count).
    pub fn lp_elements(&self) -> Vec<Vec<u8>> {
        let int = |v: i64| v.to_string().into_bytes();
        let mut out = vec![int(self.live as i64), int(self.deleted as i64), int(self.master_fields.len() as i64)];
        out.extend(self.master_fields.iter().cloned());
        out.push(int(0));
        for e in &self.entries {
            let flags = (e.deleted as i64) | if e.same_fields { FLAG_SAMEFIELDS } else { 0 };
            out.push(int(flags));
            out.push(int(e.id.ms.wrapping_sub(self.master_id.ms) as i64));
            out.push(int(e.id.seq.wrapping_sub(self.master_id.seq) as i64));
            if !e.same_fields {
                out.push(int(e.fields.len() as i64));
            }
            for (f, v) in &e.fields {
                if !e.same_fields {
                    out.push(f.clone());
                }
                out.push(v.clone());
            }
            let nf = e.fields.len();
            out.push(int(if e.same_fields { nf + 3 } else { 2 * nf + 4 } as i64));
        }
        out
    }

    /// The listpack's total size (`lpBytes`).
    pub fn lp_bytes(&self) -> usize {
        LP_EMPTY + lp_int_entry(self.live as i64) + lp_int_entry(self.deleted as i64) + self.body_bytes
    }

    fn entry_bytes(&self, e: &StreamEntry) -> usize {
        let flags = if e.same_fields { FLAG_SAMEFIELDS } else { 0 };
        let mut n = lp_int_entry(flags)
            + lp_int_entry(e.id.ms.wrapping_sub(self.master_id.ms) as i64)
            + lp_int_entry(e.id.seq.wrapping_sub(self.master_id.seq) as i64);
        let nf = e.fields.len();
        if !e.same_fields {
            n += lp_int_entry(nf as i64);
        }
        for (f, v) in &e.fields {
            if !e.same_fields {
                n += lp_entry(f);
            }
            n += lp_entry(v);
        }
        let lp_count = if e.same_fields { nf + 3 } else { 2 * nf + 4 };
        n + lp_int_entry(lp_count as i64)
    }

    /// The listpack's size before an entry's elements are appended, its live count already one more.
    fn live_bytes_with_one_more(&self) -> usize {
        LP_EMPTY + lp_int_entry(self.live as i64 + 1) + lp_int_entry(self.deleted as i64) + self.body_bytes
    }

    /// The node's last entry ID, deleted or not (`lpGetEdgeStreamID`).
    fn last_id(&self) -> StreamId {
        self.entries.last().map_or(self.master_id, |e| e.id)
    }
}

/// A pending entry of a consumer group (`streamNACK`): when it was last delivered (emulator clock,
/// ms), how many times, and to which consumer.
#[derive(Clone, Debug, PartialEq)]
pub struct Nack {
    pub delivery_time: i64,
    pub delivery_count: u64,
    pub consumer: Vec<u8>,
}

/// A consumer of a group (`streamConsumer`): when it was last seen and its pending IDs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Consumer {
    pub seen_time: i64,
    pub pel: BTreeSet<StreamId>,
}

/// `SCG_INVALID_ENTRIES_READ`: a group's read counter that is not known.
pub const INVALID_ENTRIES_READ: i64 = -1;

/// A consumer group (`streamCG`): the last delivered ID, its logical read counter, the pending
/// entries list and the consumers (ordered by name, as Redis's radix tree is).
#[derive(Clone, Debug, PartialEq)]
pub struct ConsumerGroup {
    pub last_id: StreamId,
    pub entries_read: i64,
    pub pel: BTreeMap<StreamId, Nack>,
    pub consumers: BTreeMap<Vec<u8>, Consumer>,
}

impl ConsumerGroup {
    pub fn new(last_id: StreamId, entries_read: i64) -> Self {
        ConsumerGroup { last_id, entries_read, pel: BTreeMap::new(), consumers: BTreeMap::new() }
    }
}

/// A stream value.
#[derive(Clone, Debug, Default)]
pub struct Stream {
    pub nodes: Vec<StreamNode>,
    /// Live entries.
    pub length: u64,
    pub last_id: StreamId,
    /// The first live entry's ID (0-0 when empty), as Redis 7.0 records it.
    pub first_id: StreamId,
    /// The highest ID ever deleted by XDEL (or set by XSETID).
    pub max_deleted_entry_id: StreamId,
    /// How many entries were ever added.
    pub entries_added: u64,
    /// The consumer groups, by name.
    pub cgroups: BTreeMap<Vec<u8>, ConsumerGroup>,
}

/// Why an append failed.
#[derive(Debug, PartialEq)]
pub enum AppendError {
    /// The ID is not above the stream's top item (or no sequence is left for `<ms>-*`).
    NotGreater,
}

/// What trimming to do (XADD's and XTRIM's MAXLEN/MINID options).
#[derive(Clone, Copy, Debug)]
pub enum Trim {
    MaxLen(u64),
    MinId(StreamId),
}

impl Stream {
    /// `streamAppendItem`: appends an entry under `id` (given, or Err when not above the top) and
    /// returns it. `fields` are name/value pairs.
    pub fn append(&mut self, id: StreamId, fields: &[(&[u8], &[u8])]) -> Result<StreamId, AppendError> {
        if id <= self.last_id {
            return Err(AppendError::NotGreater);
        }
        let totelelen: usize = fields.iter().map(|(f, v)| f.len() + v.len()).sum();
        let need_new = match self.nodes.last() {
            None => true,
            Some(n) => n.lp_bytes() + totelelen >= NODE_MAX_BYTES || n.live + n.deleted >= NODE_MAX_ENTRIES,
        };
        if need_new {
            if let Some(tail) = self.nodes.last_mut() {
                let bytes = tail.lp_bytes();
                if tail.alloc > bytes {
                    tail.alloc = jemalloc_usable(bytes);
                }
            }
            let master_fields: Vec<Vec<u8>> = fields.iter().map(|(f, _)| f.to_vec()).collect();
            let body = lp_int_entry(master_fields.len() as i64)
                + master_fields.iter().map(|f| lp_entry(f)).sum::<usize>()
                + lp_int_entry(0);
            self.nodes.push(StreamNode {
                master_id: id,
                master_fields,
                entries: Vec::new(),
                live: 0,
                deleted: 0,
                body_bytes: body,
                alloc: jemalloc_usable(LISTPACK_PREALLOC.max(LP_EMPTY)),
            });
        } else {
            // The live count is rewritten first, then the entry appended.
            let node = self.nodes.last_mut().expect("a tail node");
            let (b0, b1) = (node.lp_bytes(), node.live_bytes_with_one_more());
            node.resized(b0, b1);
        }
        let node = self.nodes.last_mut().expect("a tail node");
        let same_fields = node.master_fields.len() == fields.len()
            && node.master_fields.iter().zip(fields).all(|(m, (f, _))| m.as_slice() == *f);
        let entry = StreamEntry {
            id,
            fields: fields.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect(),
            deleted: false,
            same_fields,
        };
        let before = node.live_bytes_with_one_more();
        node.body_bytes += node.entry_bytes(&entry);
        node.entries.push(entry);
        node.live += 1;
        let after = node.lp_bytes();
        node.resized(before, after);
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
        Ok(id)
    }

    /// `streamDeleteItem`: flags the entry deleted (its node goes when it was the node's last live
    /// one); true when it was there.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some(ni) = self.nodes.iter().rposition(|n| n.master_id <= id) else { return false };
        let node = &mut self.nodes[ni];
        let Some(e) = node.entries.iter_mut().find(|e| e.id == id && !e.deleted) else { return false };
        e.deleted = true;
        if node.live == 1 {
            self.nodes.remove(ni);
        } else {
            let (live, deleted) = (node.live - 1, node.deleted + 1);
            node.set_counts(live, deleted);
        }
        self.length -= 1;
        true
    }

    /// `streamTrim`: removes entries from the head. `approx` removes whole nodes only; `limit` (0:
    /// none) bounds the entries removed. Returns how many were removed.
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
        let mut removed = 0u64;
        while let Some(node) = self.nodes.first() {
            if let Trim::MaxLen(max) = how {
                if self.length <= max {
                    break;
                }
            }
            let entries = node.live;
            if limit != 0 && removed + entries > limit {
                break;
            }
            let remove_node = match how {
                Trim::MaxLen(max) => self.length - entries >= max,
                Trim::MinId(min) => node.last_id() < min,
            };
            if remove_node {
                self.nodes.remove(0);
                self.length -= entries;
                removed += entries;
                continue;
            }
            if approx {
                break;
            }
            let length = &mut self.length;
            let node = &mut self.nodes[0];
            let mut from_node = 0u64;
            for e in node.entries.iter_mut() {
                let stop = match how {
                    Trim::MaxLen(max) => *length <= max,
                    Trim::MinId(min) => e.id >= min,
                };
                if stop {
                    break;
                }
                if !e.deleted {
                    e.deleted = true;
                    removed += 1;
                    from_node += 1;
                    *length -= 1;
                }
            }
            let (live, deleted) = (node.live - from_node, node.deleted + from_node);
            node.set_counts(live, deleted);
            break;
        }
        if removed > 0 {
            self.first_id = if self.length == 0 { StreamId::MIN } else { self.edge_id(true) };
        }
        removed
    }

    /// Every node's listpack allocated at its exact size, as a duplicate (`streamDup`) or a
    /// loaded stream holds them.
    pub fn fit_allocations(&mut self) {
        for n in &mut self.nodes {
            n.alloc = jemalloc_usable(n.lp_bytes());
        }
    }

    /// `streamGetEdgeID` skipping tombstones: the first (or last) live ID; MAX (or MIN) when empty.
    pub fn edge_id(&self, first: bool) -> StreamId {
        let live = |e: &&StreamEntry| !e.deleted;
        let found = if first {
            self.nodes.iter().flat_map(|n| n.entries.iter()).find(live)
        } else {
            self.nodes.iter().rev().flat_map(|n| n.entries.iter().rev()).find(live)
        };
        match found {
            Some(e) => e.id,
            None if first => StreamId::MAX,
            None => StreamId::MIN,
        }
    }

    /// The live entry `id`, if any.
    pub fn entry(&self, id: StreamId) -> Option<&StreamEntry> {
        let ni = self.nodes.partition_point(|n| n.master_id <= id).checked_sub(1)?;
        let entries = &self.nodes[ni].entries;
        let at = entries.binary_search_by(|e| e.id.cmp(&id)).ok()?;
        Some(&entries[at]).filter(|e| !e.deleted)
    }

    /// XDEL's deletion (`xdelCommand`): deletes each ID, keeping the first ID and the highest
    /// deleted ID up to date; returns how many were deleted.
    pub fn xdel(&mut self, ids: &[StreamId]) -> u64 {
        let mut deleted = 0;
        let mut first_entry = false;
        for &id in ids {
            if self.delete(id) {
                first_entry |= id == self.first_id;
                if id > self.max_deleted_entry_id {
                    self.max_deleted_entry_id = id;
                }
                deleted += 1;
            }
        }
        if deleted > 0 {
            if self.length == 0 {
                self.first_id = StreamId::MIN;
            } else if first_entry {
                self.first_id = self.edge_id(true);
            }
        }
        deleted
    }

    /// `streamRangeHasTombstones`: whether a deleted entry may lie in `[start, MAX]`.
    pub fn range_has_tombstones(&self, start: StreamId) -> bool {
        if self.length == 0 || self.max_deleted_entry_id == StreamId::MIN {
            return false;
        }
        if self.first_id > self.max_deleted_entry_id {
            return false;
        }
        start <= self.max_deleted_entry_id
    }

    /// `streamEstimateDistanceFromFirstEverEntry`: the logical read counter of `id`, or
    /// [`INVALID_ENTRIES_READ`] when it cannot be known.
    pub fn estimate_distance(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        if self.length == 0 && id <= self.last_id {
            return self.entries_added as i64;
        }
        if id == self.last_id {
            return self.entries_added as i64;
        }
        if id > self.last_id {
            return INVALID_ENTRIES_READ;
        }
        if self.max_deleted_entry_id == StreamId::MIN || self.max_deleted_entry_id < self.first_id {
            if id < self.first_id {
                return (self.entries_added - self.length) as i64;
            }
            if id == self.first_id {
                return (self.entries_added - self.length + 1) as i64;
            }
        }
        INVALID_ENTRIES_READ
    }

    /// `streamReplyWithCGLag`'s figure: the group's lag, or None when it cannot be known.
    pub fn lag(&self, g: &ConsumerGroup) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read != INVALID_ENTRIES_READ && !self.range_has_tombstones(g.last_id) {
            return Some(self.entries_added as i64 - g.entries_read);
        }
        let read = self.estimate_distance(g.last_id);
        (read != INVALID_ENTRIES_READ).then(|| self.entries_added as i64 - read)
    }

    /// The number of nodes of Redis's radix tree holding the listpacks, keyed by each node's
    /// master ID as 16 big-endian bytes (a compressed trie: a node per branching point, one per
    /// run of single-child bytes, one per key).
    pub fn rax_nodes(&self) -> u64 {
        id_rax_nodes(self.nodes.iter().map(|n| &n.master_id))
    }

    /// Live entries with IDs in `[start, end]`, in order (reversed with `rev`), at most `count`
    /// (0: all).
    pub fn range(&self, start: StreamId, end: StreamId, count: usize, rev: bool) -> Vec<&StreamEntry> {
        let mut out = Vec::new();
        if start > end {
            return out;
        }
        // Only the nodes that may hold IDs in the range (found by binary search, as Redis seeks its
        // radix tree): from the first whose last entry reaches `start` to the last starting by `end`.
        let from = self.nodes.partition_point(|n| n.last_id() < start);
        let to = self.nodes.partition_point(|n| n.master_id <= end).max(from);
        let nodes = &self.nodes[from..to];
        let live = |e: &&StreamEntry| !e.deleted && e.id >= start && e.id <= end;
        if rev {
            for e in nodes.iter().rev().flat_map(|n| n.entries.iter().rev()).filter(live) {
                if count != 0 && out.len() == count {
                    break;
                }
                out.push(e);
            }
        } else {
            for e in nodes.iter().flat_map(|n| n.entries.iter()).filter(live) {
                if count != 0 && out.len() == count {
                    break;
                }
                out.push(e);
            }
        }
        out
    }
}

/// The nodes of Redis's radix tree keyed by these IDs (sorted) as 16 big-endian bytes.
pub fn id_rax_nodes<'a>(ids: impl Iterator<Item = &'a StreamId>) -> u64 {
    let keys: Vec<[u8; 16]> = ids
        .map(|id| {
            let mut k = [0u8; 16];
            k[..8].copy_from_slice(&id.ms.to_be_bytes());
            k[8..].copy_from_slice(&id.seq.to_be_bytes());
            k
        })
        .collect();
    let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    rax_count(&refs)
}

/// The nodes of a compressed radix tree over `keys` (sorted, distinct, none a prefix of another).
fn rax_count(keys: &[&[u8]]) -> u64 {
    match keys {
        [] => 1,
        [[]] => 1,
        [_] => 2,
        _ => {
            let common = (0..).take_while(|&i| keys.iter().all(|k| k.len() > i && k[i] == keys[0][i])).count();
            if common > 0 {
                let rest: Vec<&[u8]> = keys.iter().map(|k| &k[common..]).collect();
                return 1 + rax_count(&rest);
            }
            let mut n = 1;
            let mut i = 0;
            while i < keys.len() {
                let c = keys[i][0];
                let j = keys[i..].iter().position(|k| k[0] != c).map_or(keys.len(), |p| i + p);
                let rest: Vec<&[u8]> = keys[i..j].iter().map(|k| &k[1..]).collect();
                n += rax_count(&rest);
                i = j;
            }
            n
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    #[test]
    fn nodes_split_at_100_entries_and_approx_trims_whole_nodes() {
        let mut s = Stream::default();
        for i in 1..=250u64 {
            s.append(id(i, 0), &[(b"f", b"v")]).unwrap();
        }
        assert_eq!(s.nodes.len(), 3);
        assert_eq!(s.trim(Trim::MaxLen(120), true, 0), 100);
        assert_eq!(s.length, 150);
        assert_eq!(s.trim(Trim::MaxLen(120), false, 0), 30);
        assert_eq!(s.length, 120);
        assert_eq!(s.nodes[0].deleted, 30);
        assert_eq!(s.append(id(3, 0), &[(b"f", b"v")]), Err(AppendError::NotGreater));
    }

    #[test]
    fn node_bytes_follow_listpack_encodings() {
        let mut s = Stream::default();
        s.append(id(1, 0), &[(b"field", b"value")]).unwrap();
        // header 6 + end 1; count 1, deleted 0, numfields 1, "field" (7), 0 terminator;
        // flags, ms diff, seq diff, "value" (7), lp-count: 7 + 2 + 2 + 2 + 7 + 2 + 2 + 2 + 2 + 7 + 2 = 37.
        assert_eq!(s.nodes[0].lp_bytes(), 37);
        let big = vec![b'x'; 4041];
        s.append(id(2, 0), &[(b"field", &big)]).unwrap();
        // 37 + flags, ms, seq (2 each), the value (2 + 4041 + 2), lp-count (2): 4090 bytes, and 4090 + 6 reaches 4096.
        assert_eq!(s.nodes[0].lp_bytes(), 4090);
        assert_eq!(s.nodes.len(), 1);
        s.append(id(3, 0), &[(b"field", b"v")]).unwrap();
        assert_eq!(s.nodes.len(), 2, "the tail node was full in bytes");
    }

    #[test]
    fn ranges_and_lookups_seek_the_right_nodes() {
        let mut s = Stream::default();
        for i in 1..=350u64 {
            s.append(id(i, i % 3), &[(b"f", b"v")]).unwrap();
        }
        assert_eq!(s.nodes.len(), 4);
        let ids = |v: Vec<&StreamEntry>| v.iter().map(|e| e.id.ms).collect::<Vec<_>>();
        assert_eq!(ids(s.range(id(99, 0), id(102, 0), 0, false)), [99, 100, 101, 102]);
        assert_eq!(ids(s.range(id(100, 1), id(201, 0), 2, true)), [201, 200]);
        assert_eq!(ids(s.range(id(350, 3), StreamId::MAX, 0, false)), Vec::<u64>::new());
        assert_eq!(ids(s.range(StreamId::MIN, id(1, 0), 0, false)), Vec::<u64>::new());
        assert_eq!(s.range(StreamId::MIN, StreamId::MAX, 0, false).len(), 350);
        assert_eq!(s.entry(id(101, 2)).map(|e| e.id), Some(id(101, 2)));
        assert!(s.entry(id(101, 0)).is_none());
        assert_eq!(s.xdel(&[id(1, 1), id(101, 2)]), 2);
        assert!(s.entry(id(101, 2)).is_none());
        assert_eq!((s.first_id, s.max_deleted_entry_id, s.entries_added, s.length), (id(2, 2), id(101, 2), 350, 348));
        // Redis 7.0.15 reports 4 radix tree keys and 11 nodes for this stream.
        assert_eq!((s.nodes.len(), s.rax_nodes()), (4, 11));
    }

    #[test]
    fn radix_tree_nodes_count_as_redis_counts_them() {
        assert_eq!(rax_count(&[]), 1);
        assert_eq!(rax_count(&[b"abc"]), 2);
        // "ab" then a branch on c/d, each followed by its leaf.
        assert_eq!(rax_count(&[b"abc", b"abd"]), 4);
        // A branch at the root, one side compressed.
        assert_eq!(rax_count(&[b"axy", b"bxy"]), 5);
    }

    #[test]
    fn deleting_the_last_live_entry_drops_its_node() {
        let mut s = Stream::default();
        s.append(id(1, 0), &[(b"a", b"1")]).unwrap();
        s.append(id(1, 1), &[(b"a", b"2")]).unwrap();
        assert!(s.delete(id(1, 0)));
        assert!(!s.delete(id(1, 0)));
        assert_eq!(s.nodes[0].deleted, 1);
        assert!(s.delete(id(1, 1)));
        assert!(s.nodes.is_empty());
        assert_eq!(s.length, 0);
        assert_eq!(s.last_id, id(1, 1));
    }
}
