//! A stream's RDB body as Redis 7.0 writes and reads it (`RDB_TYPE_STREAM_LISTPACKS_2`, and the
//! older `RDB_TYPE_STREAM_LISTPACKS` on reading): the listpack nodes, each under its 16-byte master
//! ID; the length, last ID, first ID, highest deleted ID and entries added; then each consumer
//! group with its last delivered ID, read counter, pending entries (ID, delivery time, delivery
//! count) and consumers (name, seen time, pending IDs).
use std::collections::BTreeMap;

use crate::keyspace::parse_canonical_i64;
use crate::keyspace::stream::{Consumer, ConsumerGroup, Nack, StreamEntry, StreamNode};
use crate::keyspace::{Stream, StreamId};
use crate::rdb::{listpack, lp_entries, save_len, save_string, Reader};

fn id_key(id: StreamId) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&id.ms.to_be_bytes());
    k[8..].copy_from_slice(&id.seq.to_be_bytes());
    k
}

fn key_id(k: &[u8]) -> Option<StreamId> {
    if k.len() != 16 {
        return None;
    }
    Some(StreamId { ms: u64::from_be_bytes(k[..8].try_into().ok()?), seq: u64::from_be_bytes(k[8..].try_into().ok()?) })
}

fn save_id(out: &mut Vec<u8>, id: StreamId) {
    save_len(out, id.ms);
    save_len(out, id.seq);
}

/// `rdbSaveObject`'s stream part (after the type byte).
pub fn save(out: &mut Vec<u8>, s: &Stream, compress: bool) {
    save_len(out, s.nodes.len() as u64);
    for n in &s.nodes {
        save_string(out, &id_key(n.master_id), compress);
        let elements = n.lp_elements();
        save_string(out, &listpack(elements.iter().map(Vec::as_slice)), compress);
    }
    save_len(out, s.length);
    save_id(out, s.last_id);
    save_id(out, s.first_id);
    save_id(out, s.max_deleted_entry_id);
    save_len(out, s.entries_added);
    save_len(out, s.cgroups.len() as u64);
    for (name, g) in &s.cgroups {
        save_string(out, name, compress);
        save_id(out, g.last_id);
        save_len(out, g.entries_read as u64);
        save_len(out, g.pel.len() as u64);
        for (id, nack) in &g.pel {
            out.extend_from_slice(&id_key(*id));
            out.extend_from_slice(&nack.delivery_time.to_le_bytes());
            save_len(out, nack.delivery_count);
        }
        save_len(out, g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            save_string(out, cname, compress);
            out.extend_from_slice(&c.seen_time.to_le_bytes());
            save_len(out, c.pel.len() as u64);
            for id in &c.pel {
                out.extend_from_slice(&id_key(*id));
            }
        }
    }
}

fn int(e: &[u8]) -> Option<i64> {
    parse_canonical_i64(e)
}

/// A node's entries from its listpack's elements, checked as Redis's deep integrity check does.
fn node_from(master_id: StreamId, el: &[Vec<u8>]) -> Option<StreamNode> {
    let mut it = el.iter();
    let live = int(it.next()?)?;
    let deleted = int(it.next()?)?;
    let nf = usize::try_from(int(it.next()?)?).ok()?;
    if nf > el.len() {
        return None;
    }
    let master_fields: Vec<Vec<u8>> = (0..nf).map(|_| it.next().cloned()).collect::<Option<_>>()?;
    if int(it.next()?)? != 0 {
        return None;
    }
    let mut entries = Vec::new();
    while let Some(flags) = it.next() {
        let flags = int(flags)?;
        let ms = master_id.ms.wrapping_add(int(it.next()?)? as u64);
        let seq = master_id.seq.wrapping_add(int(it.next()?)? as u64);
        let same = flags & 2 != 0;
        let fields: Vec<(Vec<u8>, Vec<u8>)> = if same {
            master_fields.iter().map(|f| Some((f.clone(), it.next()?.clone()))).collect::<Option<_>>()?
        } else {
            let n = usize::try_from(int(it.next()?)?).ok()?;
            if n > el.len() {
                return None;
            }
            (0..n).map(|_| Some((it.next()?.clone(), it.next()?.clone()))).collect::<Option<_>>()?
        };
        let lp_count = int(it.next()?)?;
        let expect = if same { fields.len() + 3 } else { 2 * fields.len() + 4 };
        if lp_count != expect as i64 {
            return None;
        }
        let id = StreamId { ms, seq };
        if entries.last().is_some_and(|e: &StreamEntry| e.id >= id) || id < master_id {
            return None;
        }
        entries.push(StreamEntry::from_parts(id, fields, flags & 1 != 0, same));
    }
    let node = StreamNode::from_parts(master_id, master_fields, entries);
    (node.live as i64 == live && node.deleted as i64 == deleted && live > 0).then_some(node)
}

fn load_id(r: &mut Reader) -> Option<StreamId> {
    Some(StreamId { ms: r.len()?, seq: r.len()? })
}

fn load_ms(r: &mut Reader) -> Option<i64> {
    Some(i64::from_le_bytes(r.bytes(8)?.try_into().ok()?))
}

/// Reads a stream body (`v2`: `RDB_TYPE_STREAM_LISTPACKS_2`); None for a corrupt one.
pub(crate) fn load(r: &mut Reader, v2: bool) -> Option<Stream> {
    let mut s = Stream::default();
    let nodes = r.len()?;
    if nodes > r.b.len() as u64 {
        return None;
    }
    for _ in 0..nodes {
        let master_id = key_id(&r.string()?)?;
        let lp = r.string()?;
        let el = lp_entries(&lp)?;
        let node = node_from(master_id, &el)?;
        if s.nodes.last().is_some_and(|p| p.entries.last().map_or(p.master_id, |e| e.id) >= master_id) {
            return None;
        }
        s.nodes.push(node);
    }
    s.length = r.len()?;
    if s.length != s.nodes.iter().map(|n| n.live).sum::<u64>() {
        return None;
    }
    s.last_id = load_id(r)?;
    if v2 {
        s.first_id = load_id(r)?;
        s.max_deleted_entry_id = load_id(r)?;
        s.entries_added = r.len()?;
    } else {
        s.first_id = if s.length == 0 { StreamId::MIN } else { s.edge_id(true) };
        s.entries_added = s.length;
    }
    let groups = r.len()?;
    if groups > r.b.len() as u64 {
        return None;
    }
    for _ in 0..groups {
        let name = r.string()?;
        let last_id = load_id(r)?;
        let entries_read = if v2 { r.len()? as i64 } else { s.estimate_distance(last_id) };
        let mut g = ConsumerGroup::new(last_id, entries_read);
        let pel = r.len()?;
        if pel > r.b.len() as u64 {
            return None;
        }
        let mut nacks: BTreeMap<StreamId, (i64, u64)> = BTreeMap::new();
        for _ in 0..pel {
            let id = key_id(r.bytes(16)?)?;
            let time = load_ms(r)?;
            let count = r.len()?;
            if nacks.insert(id, (time, count)).is_some() {
                return None;
            }
        }
        let consumers = r.len()?;
        if consumers > r.b.len() as u64 {
            return None;
        }
        for _ in 0..consumers {
            let cname = r.string()?;
            let seen_time = load_ms(r)?;
            let n = r.len()?;
            if n > r.b.len() as u64 {
                return None;
            }
            let mut c = Consumer { seen_time, pel: Default::default() };
            for _ in 0..n {
                let id = key_id(r.bytes(16)?)?;
                let (time, count) = *nacks.get(&id)?;
                if g.pel
                    .insert(id, Nack { delivery_time: time, delivery_count: count, consumer: cname.clone() })
                    .is_some()
                {
                    return None;
                }
                c.pel.insert(id);
            }
            if g.consumers.insert(cname, c).is_some() {
                return None;
            }
        }
        // Every pending entry belongs to a consumer (Redis refuses a PEL entry without one).
        if g.pel.len() != nacks.len() {
            return None;
        }
        if s.cgroups.insert(name, g).is_some() {
            return None;
        }
    }
    Some(s)
}
