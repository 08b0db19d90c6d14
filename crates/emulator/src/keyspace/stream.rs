//! Streams as Redis 7.0 lays them out: a sequence of listpack nodes (a radix tree keyed by each
//! node's master ID in Redis), each holding a master entry (live count, deleted count, the first
//! entry's field names) and its entries, deleted ones included until their node goes. The model
//! keeps each node's listpack size in bytes, because Redis starts a new node when the tail's bytes
//! plus the new entry's would reach `stream-node-max-bytes` (4096) or when it holds
//! `stream-node-max-entries` (100) entries, and approximate trimming (`~`) removes whole nodes only:
//! so XTRIM and XADD with `~` remove exactly what Redis removes.
use super::listpack::{lp_entry, lp_int_entry};

/// Redis's default `stream-node-max-bytes`.
pub const NODE_MAX_BYTES: usize = 4096;
/// Redis's default `stream-node-max-entries`.
pub const NODE_MAX_ENTRIES: u64 = 100;
/// A listpack's header (total bytes, element count) and end byte.
const LP_EMPTY: usize = 7;
const FLAG_SAMEFIELDS: i64 = 2;

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
}

impl StreamNode {
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

    /// The node's last entry ID, deleted or not (`lpGetEdgeStreamID`).
    fn last_id(&self) -> StreamId {
        self.entries.last().map_or(self.master_id, |e| e.id)
    }
}

/// A stream value.
#[derive(Clone, Debug, Default)]
pub struct Stream {
    pub nodes: Vec<StreamNode>,
    /// Live entries.
    pub length: u64,
    pub last_id: StreamId,
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
            });
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
        node.body_bytes += node.entry_bytes(&entry);
        node.entries.push(entry);
        node.live += 1;
        self.length += 1;
        self.last_id = id;
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
            node.live -= 1;
            node.deleted += 1;
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
            node.live -= from_node;
            node.deleted += from_node;
            break;
        }
        removed
    }

    /// Live entries with IDs in `[start, end]`, in order (reversed with `rev`), at most `count`
    /// (0: all).
    pub fn range(&self, start: StreamId, end: StreamId, count: usize, rev: bool) -> Vec<&StreamEntry> {
        let mut out = Vec::new();
        if start > end {
            return out;
        }
        let live = |e: &&StreamEntry| !e.deleted && e.id >= start && e.id <= end;
        if rev {
            for e in self.nodes.iter().rev().flat_map(|n| n.entries.iter().rev()).filter(live) {
                if count != 0 && out.len() == count {
                    break;
                }
                out.push(e);
            }
        } else {
            for e in self.nodes.iter().flat_map(|n| n.entries.iter()).filter(live) {
                if count != 0 && out.len() == count {
                    break;
                }
                out.push(e);
            }
        }
        out
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
