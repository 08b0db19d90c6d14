//! DUMP's payload, as Redis 7.0 writes and reads it (`rdb.c`): one value's type byte and body in
//! RDB version 10's encodings, then the RDB version and a CRC-64 of everything before it.
//!
//! Values are written in the encodings Redis 7.0 would hold them in (integer strings, listpack or
//! hashtable hashes, intset or hashtable sets, listpack or skiplist sorted sets, quicklists of
//! listpacks), so that a payload from the emulator restores in a real Redis and the other way
//! round. Reading also takes the older encodings a Redis 7.0 still loads (plain lists and sorted
//! sets, ziplists). Streams are in `crate::rdb_stream`.
use std::collections::VecDeque;

use crate::keyspace::{parse_canonical_i64, Hash, RStr, SetValue, Value, ZSet};
pub(crate) use crate::lua::functions::rdb::rdb_save_len as save_len;
use crate::lua::functions::rdb::{crc64, lzf_compress, lzf_decompress};
use crate::reply::fmt_g;

/// Redis 7.0's RDB version.
pub const RDB_VERSION: u16 = 10;

const T_STRING: u8 = 0;
const T_LIST: u8 = 1;
const T_SET: u8 = 2;
const T_ZSET: u8 = 3;
const T_HASH: u8 = 4;
const T_ZSET_2: u8 = 5;
const T_LIST_ZIPLIST: u8 = 10;
const T_SET_INTSET: u8 = 11;
const T_ZSET_ZIPLIST: u8 = 12;
const T_HASH_ZIPLIST: u8 = 13;
const T_LIST_QUICKLIST: u8 = 14;
const T_HASH_LISTPACK: u8 = 16;
const T_ZSET_LISTPACK: u8 = 17;
const T_LIST_QUICKLIST_2: u8 = 18;
pub(crate) const T_STREAM_LISTPACKS: u8 = 15;
pub(crate) const T_STREAM_LISTPACKS_2: u8 = 19;

/// A quicklist node holding one listpack (`QUICKLIST_NODE_CONTAINER_PACKED`), or one element as is.
const CONTAINER_PLAIN: u64 = 1;
const CONTAINER_PACKED: u64 = 2;

// ---- writing ---------------------------------------------------------------------------------------

/// `rdbEncodeInteger`: the 8, 16 or 32-bit integer encodings, when `v` fits one.
fn encode_int(out: &mut Vec<u8>, v: i64) -> bool {
    if let Ok(b) = i8::try_from(v) {
        out.extend_from_slice(&[0xC0, b as u8]);
    } else if let Ok(h) = i16::try_from(v) {
        out.push(0xC1);
        out.extend_from_slice(&h.to_le_bytes());
    } else if let Ok(w) = i32::try_from(v) {
        out.push(0xC2);
        out.extend_from_slice(&w.to_le_bytes());
    } else {
        return false;
    }
    true
}

/// `rdbSaveRawString`: short canonical integers as integers, strings over 20 bytes LZF-compressed
/// when that saves room (and `compress`, the `rdbcompression` setting), else the bytes.
pub(crate) fn save_string(out: &mut Vec<u8>, s: &[u8], compress: bool) {
    if s.len() <= 11 {
        if let Some(v) = parse_canonical_i64(s) {
            if encode_int(out, v) {
                return;
            }
        }
    }
    if compress && s.len() > 20 {
        let mut buf = vec![0u8; s.len() - 4];
        let n = lzf_compress(s, &mut buf);
        if n > 0 {
            out.push(0xC3);
            save_len(out, n as u64);
            save_len(out, s.len() as u64);
            out.extend_from_slice(&buf[..n]);
            return;
        }
    }
    save_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// `d2string` of Redis 7.0: integral scores in (-(2^52 - 1), 2^52) as integers, else `%.17g`.
fn d2string(d: f64) -> String {
    if d.is_nan() {
        "nan".into()
    } else if d.is_infinite() {
        if d > 0.0 { "inf" } else { "-inf" }.into()
    } else if d == 0.0 {
        if d.is_sign_negative() { "-0" } else { "0" }.into()
    } else if d > -4_503_599_627_370_495.0 && d < 4_503_599_627_370_496.0 && d == d.trunc() {
        (d as i64).to_string()
    } else {
        fmt_g(d, 17)
    }
}

/// `lpEncodeBacklen`: the entry's length, written to be read from its end.
fn lp_backlen(out: &mut Vec<u8>, l: usize) {
    let l = l as u64;
    let groups = match l {
        0..=127 => 1,
        128..=16_382 => 2,
        16_383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    };
    for g in (0..groups).rev() {
        let b = ((l >> (7 * g)) & 127) as u8;
        out.push(if g == groups - 1 && groups > 1 {
            b
        } else if groups > 1 {
            b | 128
        } else {
            b
        });
    }
}

/// Appends one listpack entry: an integer encoding when `e` reads as one (`lpStringToInt64`),
/// else a string with a 6, 12 or 32-bit length.
fn lp_push(out: &mut Vec<u8>, e: &[u8]) {
    let start = out.len();
    match parse_canonical_i64(e) {
        Some(v) if (0..=127).contains(&v) => out.push(v as u8),
        Some(v) if (-4096..=4095).contains(&v) => {
            let u = (v as u64) & 0x1fff;
            out.extend_from_slice(&[0xC0 | (u >> 8) as u8, u as u8]);
        }
        Some(v) if i16::try_from(v).is_ok() => {
            out.push(0xF1);
            out.extend_from_slice(&(v as i16).to_le_bytes());
        }
        Some(v) if (-8_388_608..=8_388_607).contains(&v) => {
            out.push(0xF2);
            out.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
        }
        Some(v) if i32::try_from(v).is_ok() => {
            out.push(0xF3);
            out.extend_from_slice(&(v as i32).to_le_bytes());
        }
        Some(v) => {
            out.push(0xF4);
            out.extend_from_slice(&v.to_le_bytes());
        }
        None if e.len() < 64 => {
            out.push(0x80 | e.len() as u8);
            out.extend_from_slice(e);
        }
        None if e.len() < 4096 => {
            out.extend_from_slice(&[0xE0 | (e.len() >> 8) as u8, e.len() as u8]);
            out.extend_from_slice(e);
        }
        None => {
            out.push(0xF0);
            out.extend_from_slice(&(e.len() as u32).to_le_bytes());
            out.extend_from_slice(e);
        }
    }
    let len = out.len() - start;
    lp_backlen(out, len);
}

/// A listpack of `entries`: total bytes, element count (65535 when larger), the entries, 0xFF.
pub(crate) fn listpack<'a>(entries: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut lp = vec![0u8; 6];
    let mut n = 0usize;
    for e in entries {
        lp_push(&mut lp, e);
        n += 1;
    }
    lp.push(0xFF);
    let total = lp.len() as u32;
    lp[..4].copy_from_slice(&total.to_le_bytes());
    lp[4..6].copy_from_slice(&(n.min(65535) as u16).to_le_bytes());
    lp
}

/// An intset of canonical integers: the narrowest encoding holding all, then the sorted values.
fn intset(members: &[i64]) -> Vec<u8> {
    let width: usize = members
        .iter()
        .map(|&v| {
            if i16::try_from(v).is_ok() {
                2
            } else if i32::try_from(v).is_ok() {
                4
            } else {
                8
            }
        })
        .max()
        .unwrap_or(2);
    let mut sorted = members.to_vec();
    sorted.sort_unstable();
    let mut out = Vec::with_capacity(8 + width * sorted.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(sorted.len() as u32).to_le_bytes());
    for v in sorted {
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    out
}

/// The elements of a list grouped into quicklist nodes as RPUSH fills them: an element joins the
/// tail node while `list-max-listpack-size` allows it (`_quicklistNodeAllowInsert`, see
/// [`crate::keyspace::limits::quicklist_node_allows`]).
fn quicklist_groups(list: &VecDeque<Vec<u8>>) -> Vec<Vec<&[u8]>> {
    let fill = crate::keyspace::limits::current().list_fill;
    let mut groups: Vec<(usize, Vec<&[u8]>)> = Vec::new();
    for e in list {
        let entry = crate::keyspace::listpack::lp_entry(e);
        match groups.last_mut() {
            Some((bytes, g)) if crate::keyspace::limits::quicklist_node_allows(fill, *bytes, g.len(), e.len()) => {
                *bytes += entry;
                g.push(e);
            }
            _ => groups.push((7 + entry, vec![e])),
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

/// The body of a value as `rdbSaveObject` writes it, after its type byte; `None` for a stream.
fn save_object(out: &mut Vec<u8>, v: &Value, compress: bool) -> Option<()> {
    match v {
        Value::Str(s) => {
            out.push(T_STRING);
            match s {
                RStr::Int(i) => {
                    if !encode_int(out, *i) {
                        let t = i.to_string();
                        save_len(out, t.len() as u64);
                        out.extend_from_slice(t.as_bytes());
                    }
                }
                RStr::Raw(b) | RStr::Grown(b) | RStr::Exact(b) => save_string(out, b, compress),
            }
        }
        Value::List(l) => {
            out.push(T_LIST_QUICKLIST_2);
            let groups = quicklist_groups(l);
            save_len(out, groups.len() as u64);
            for g in groups {
                save_len(out, CONTAINER_PACKED);
                save_string(out, &listpack(g.into_iter()), compress);
            }
        }
        Value::Set(s) if !s.hashtable => {
            out.push(T_SET_INTSET);
            let ints: Vec<i64> = s.members.iter().filter_map(|m| parse_canonical_i64(m)).collect();
            save_string(out, &intset(&ints), compress);
        }
        Value::Set(s) => {
            out.push(T_SET);
            save_len(out, s.len() as u64);
            for m in &s.members {
                save_string(out, m, compress);
            }
        }
        Value::Hash(h) if !h.hashtable => {
            out.push(T_HASH_LISTPACK);
            let lp = listpack(h.fields.iter().flat_map(|(f, v)| [f.as_slice(), v.as_slice()]));
            save_string(out, &lp, compress);
        }
        Value::Hash(h) => {
            out.push(T_HASH);
            save_len(out, h.len() as u64);
            for (f, v) in &h.fields {
                save_string(out, f, compress);
                save_string(out, v, compress);
            }
        }
        Value::ZSet(z) if !z.skiplist => {
            out.push(T_ZSET_LISTPACK);
            let scores: Vec<(Vec<u8>, String)> = z.iter().map(|(m, s)| (m.to_vec(), d2string(s))).collect();
            let lp = listpack(scores.iter().flat_map(|(m, s)| [m.as_slice(), s.as_bytes()]));
            save_string(out, &lp, compress);
        }
        Value::ZSet(z) => {
            out.push(T_ZSET_2);
            save_len(out, z.len() as u64);
            let all: Vec<(&[u8], f64)> = z.iter().collect();
            for (m, s) in all.into_iter().rev() {
                save_string(out, m, compress);
                out.extend_from_slice(&s.to_le_bytes());
            }
        }
        Value::Stream(st) => {
            out.push(T_STREAM_LISTPACKS_2);
            crate::rdb_stream::save(out, st, compress);
        }
    }
    Some(())
}

/// A key and its value as an RDB file holds them (`rdbSaveKeyValuePair` without the deadline): the
/// value's type byte, the key, the value's body. `None` for a stream.
pub(crate) fn save_key_value(out: &mut Vec<u8>, key: &[u8], v: &Value, compress: bool) -> Option<()> {
    let mut obj = Vec::new();
    save_object(&mut obj, v, compress)?;
    out.push(obj[0]);
    save_string(out, key, compress);
    out.extend_from_slice(&obj[1..]);
    Some(())
}

/// A string as an RDB file holds it (`rdbSaveRawString`).
pub(crate) fn save_raw_string(out: &mut Vec<u8>, s: &[u8], compress: bool) {
    save_string(out, s, compress);
}

/// DUMP's payload for `v` (`createDumpPayload`): the object, the RDB version (2 bytes, little
/// endian) and the CRC-64 of all that (8 bytes, little endian). `None` for a stream.
pub fn dump(v: &Value, compress: bool) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    save_object(&mut out, v, compress)?;
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    Some(out)
}

/// `verifyDumpPayload`: at least the footer, a version this server reads, and a matching CRC.
pub fn payload_ok(p: &[u8]) -> bool {
    if p.len() < 10 {
        return false;
    }
    let footer = &p[p.len() - 10..];
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    if version > RDB_VERSION {
        return false;
    }
    let crc = u64::from_le_bytes(footer[2..].try_into().unwrap_or_default());
    crc64(0, &p[..p.len() - 8]) == crc
}

// ---- reading ---------------------------------------------------------------------------------------

/// A cursor over a payload; every read fails (`None`) past the end instead of panicking.
pub(crate) struct Reader<'a> {
    pub(crate) b: &'a [u8],
    pub(crate) at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    pub(crate) fn byte(&mut self) -> Option<u8> {
        Some(self.bytes(1)?[0])
    }
    /// `rdbLoadLenByRef`: the length, or the special encoding number with `true`.
    fn len_or_enc(&mut self) -> Option<(u64, bool)> {
        let first = self.byte()?;
        match first >> 6 {
            0 => Some(((first & 0x3f) as u64, false)),
            1 => Some(((((first & 0x3f) as u64) << 8) | self.byte()? as u64, false)),
            3 => Some(((first & 0x3f) as u64, true)),
            _ => match first {
                0x80 => Some((u32::from_be_bytes(self.bytes(4)?.try_into().ok()?) as u64, false)),
                0x81 => Some((u64::from_be_bytes(self.bytes(8)?.try_into().ok()?), false)),
                _ => None,
            },
        }
    }
    pub(crate) fn len(&mut self) -> Option<u64> {
        match self.len_or_enc()? {
            (n, false) => Some(n),
            _ => None,
        }
    }
    /// `rdbGenericLoadStringObject`: plain, integer-encoded or LZF-compressed.
    pub(crate) fn string(&mut self) -> Option<Vec<u8>> {
        let (len, enc) = self.len_or_enc()?;
        if !enc {
            return Some(self.bytes(usize::try_from(len).ok()?)?.to_vec());
        }
        match len {
            0 => Some((self.byte()? as i8).to_string().into_bytes()),
            1 => Some(i16::from_le_bytes(self.bytes(2)?.try_into().ok()?).to_string().into_bytes()),
            2 => Some(i32::from_le_bytes(self.bytes(4)?.try_into().ok()?).to_string().into_bytes()),
            3 => {
                let clen = usize::try_from(self.len()?).ok()?;
                let ulen = usize::try_from(self.len()?).ok()?;
                // A compressed string is at most 1 GB (proto-max-bulk-len's ceiling): refuse more
                // before allocating it.
                if ulen > 1 << 30 {
                    return None;
                }
                lzf_decompress(self.bytes(clen)?, ulen)
            }
            _ => None,
        }
    }
    /// A binary double (`rdbLoadBinaryDoubleValue`).
    fn binary_double(&mut self) -> Option<f64> {
        Some(f64::from_le_bytes(self.bytes(8)?.try_into().ok()?))
    }
    /// A double written as text (`rdbLoadDoubleValue`): 253 nan, 254 +inf, 255 -inf.
    fn text_double(&mut self) -> Option<f64> {
        match self.byte()? {
            253 => Some(f64::NAN),
            254 => Some(f64::INFINITY),
            255 => Some(f64::NEG_INFINITY),
            n => std::str::from_utf8(self.bytes(n as usize)?).ok()?.trim().parse().ok(),
        }
    }
}

/// The entries of a listpack (integers in decimal), checked whole: header sizes, every entry's
/// bounds and back length, the count, the end byte.
pub(crate) fn lp_entries(lp: &[u8]) -> Option<Vec<Vec<u8>>> {
    if lp.len() < 7 || u32::from_le_bytes(lp[..4].try_into().ok()?) as usize != lp.len() {
        return None;
    }
    let count = u16::from_le_bytes([lp[4], lp[5]]) as usize;
    let mut r = Reader { b: lp, at: 6 };
    let mut out = Vec::new();
    loop {
        let start = r.at;
        let b = r.byte()?;
        if b == 0xFF {
            break;
        }
        let int = |r: &mut Reader, n: usize| -> Option<i64> {
            let raw = r.bytes(n)?;
            let mut buf = [0u8; 8];
            buf[..n].copy_from_slice(raw);
            let shift = 64 - 8 * n as u32;
            Some((i64::from_le_bytes(buf) << shift) >> shift)
        };
        let e = if b & 0x80 == 0 {
            (b as i64).to_string().into_bytes()
        } else if b & 0xC0 == 0x80 {
            r.bytes((b & 0x3f) as usize)?.to_vec()
        } else if b & 0xE0 == 0xC0 {
            let u = (((b & 0x1f) as i64) << 8) | r.byte()? as i64;
            (if u >= 1 << 12 { u - (1 << 13) } else { u }).to_string().into_bytes()
        } else if b & 0xF0 == 0xE0 {
            let n = (((b & 0x0f) as usize) << 8) | r.byte()? as usize;
            r.bytes(n)?.to_vec()
        } else {
            match b {
                0xF0 => {
                    let n = u32::from_le_bytes(r.bytes(4)?.try_into().ok()?) as usize;
                    r.bytes(n)?.to_vec()
                }
                0xF1 => int(&mut r, 2)?.to_string().into_bytes(),
                0xF2 => int(&mut r, 3)?.to_string().into_bytes(),
                0xF3 => int(&mut r, 4)?.to_string().into_bytes(),
                0xF4 => int(&mut r, 8)?.to_string().into_bytes(),
                _ => return None,
            }
        };
        let mut back = Vec::new();
        lp_backlen(&mut back, r.at - start);
        if r.bytes(back.len())? != back.as_slice() {
            return None;
        }
        out.push(e);
    }
    if r.at != lp.len() || (count != 65535 && count != out.len()) {
        return None;
    }
    Some(out)
}

/// The entries of a ziplist (the encoding before listpacks), checked whole.
fn zl_entries(zl: &[u8]) -> Option<Vec<Vec<u8>>> {
    if zl.len() < 11 || u32::from_le_bytes(zl[..4].try_into().ok()?) as usize != zl.len() {
        return None;
    }
    let count = u16::from_le_bytes([zl[8], zl[9]]) as usize;
    let mut r = Reader { b: zl, at: 10 };
    let mut out = Vec::new();
    loop {
        let b = r.byte()?;
        if b == 0xFF {
            break;
        }
        if b == 0xFE {
            r.bytes(4)?;
        }
        let enc = r.byte()?;
        let signed = |r: &mut Reader, n: usize| -> Option<Vec<u8>> {
            let raw = r.bytes(n)?;
            let mut buf = [0u8; 8];
            buf[..n].copy_from_slice(raw);
            let shift = 64 - 8 * n as u32;
            Some(((i64::from_le_bytes(buf) << shift) >> shift).to_string().into_bytes())
        };
        let e = match enc >> 6 {
            0 => r.bytes((enc & 0x3f) as usize)?.to_vec(),
            1 => {
                let n = (((enc & 0x3f) as usize) << 8) | r.byte()? as usize;
                r.bytes(n)?.to_vec()
            }
            2 => {
                let n = u32::from_be_bytes(r.bytes(4)?.try_into().ok()?) as usize;
                r.bytes(n)?.to_vec()
            }
            _ => match enc {
                0xC0 => signed(&mut r, 2)?,
                0xD0 => signed(&mut r, 4)?,
                0xE0 => signed(&mut r, 8)?,
                0xF0 => signed(&mut r, 3)?,
                0xFE => signed(&mut r, 1)?,
                0xF1..=0xFD => ((enc & 0x0f) as i64 - 1).to_string().into_bytes(),
                _ => return None,
            },
        };
        out.push(e);
    }
    if r.at != zl.len() || (count != 65535 && count != out.len()) {
        return None;
    }
    Some(out)
}

/// A hash from field/value pairs; `None` for an odd count, a repeated field, or no fields.
fn hash_from(flat: Vec<Vec<u8>>) -> Option<Value> {
    if flat.is_empty() || flat.len() % 2 != 0 {
        return None;
    }
    let mut h = Hash::default();
    let mut it = flat.into_iter();
    while let (Some(f), Some(v)) = (it.next(), it.next()) {
        if !h.set(&f, v) {
            return None;
        }
    }
    Some(Value::Hash(h))
}

/// A sorted set from member/score pairs (scores as text); `None` for a bad score, a repeated
/// member, or no members.
fn zset_from_text(flat: Vec<Vec<u8>>) -> Option<Value> {
    if flat.is_empty() || flat.len() % 2 != 0 {
        return None;
    }
    let mut z = ZSet::new();
    let mut it = flat.into_iter();
    while let (Some(m), Some(s)) = (it.next(), it.next()) {
        let score = crate::command_spec::parse_f64(&s)?;
        if score.is_nan() || z.insert(&m, score).is_some() {
            return None;
        }
    }
    Some(Value::ZSet(Box::new(z)))
}

/// A set from its members (intset while they allow it); `None` for a repeat or no members.
fn set_from(members: Vec<Vec<u8>>) -> Option<Value> {
    if members.is_empty() {
        return None;
    }
    let mut s = SetValue::new_intset();
    for m in members {
        if !s.insert(&m) {
            return None;
        }
    }
    Some(Value::Set(Box::new(s)))
}

/// Reads `n` strings (refusing counts the payload cannot hold before allocating for them).
fn strings(r: &mut Reader, n: u64) -> Option<Vec<Vec<u8>>> {
    if n > (r.b.len() - r.at) as u64 {
        return None;
    }
    (0..n).map(|_| r.string()).collect()
}

/// The value in a DUMP payload (`rdbLoadObjectType` then `rdbLoadObject`): `None` is Redis's
/// "Bad data format" (unknown type, truncated or inconsistent data, an empty value). The footer
/// is checked apart ([`payload_ok`]).
pub fn load(p: &[u8]) -> Option<Value> {
    let body = p.get(..p.len().checked_sub(10)?)?;
    let mut r = Reader { b: body, at: 0 };
    let t = r.byte()?;
    match t {
        T_STRING => Some(Value::Str(RStr::from_bytes(&r.string()?))),
        T_LIST => {
            let n = r.len()?;
            let items = strings(&mut r, n)?;
            (!items.is_empty()).then(|| Value::List(items.into()))
        }
        T_LIST_ZIPLIST => {
            let items = zl_entries(&r.string()?)?;
            (!items.is_empty()).then(|| Value::List(items.into()))
        }
        T_LIST_QUICKLIST | T_LIST_QUICKLIST_2 => {
            let nodes = r.len()?;
            if nodes > body.len() as u64 {
                return None;
            }
            let mut list = VecDeque::new();
            for _ in 0..nodes {
                let container = if t == T_LIST_QUICKLIST_2 { r.len()? } else { CONTAINER_PACKED };
                let blob = r.string()?;
                match container {
                    CONTAINER_PLAIN => list.push_back(blob),
                    CONTAINER_PACKED => {
                        let items = if t == T_LIST_QUICKLIST_2 { lp_entries(&blob)? } else { zl_entries(&blob)? };
                        list.extend(items);
                    }
                    _ => return None,
                }
            }
            (!list.is_empty()).then_some(Value::List(list))
        }
        T_SET => {
            let n = r.len()?;
            set_from(strings(&mut r, n)?)
        }
        T_SET_INTSET => {
            let blob = r.string()?;
            let width = u32::from_le_bytes(blob.get(..4)?.try_into().ok()?) as usize;
            let n = u32::from_le_bytes(blob.get(4..8)?.try_into().ok()?) as usize;
            if !matches!(width, 2 | 4 | 8) || blob.len() != 8 + width.checked_mul(n)? {
                return None;
            }
            let mut prev: Option<i64> = None;
            let mut members = Vec::with_capacity(n);
            for c in blob[8..].chunks_exact(width) {
                let mut buf = [0u8; 8];
                buf[..width].copy_from_slice(c);
                let shift = 64 - 8 * width as u32;
                let v = (i64::from_le_bytes(buf) << shift) >> shift;
                if prev.is_some_and(|p| p >= v) {
                    return None;
                }
                prev = Some(v);
                members.push(v.to_string().into_bytes());
            }
            set_from(members)
        }
        T_HASH => {
            let n = r.len()?;
            hash_from(strings(&mut r, n.checked_mul(2)?)?)
        }
        T_STREAM_LISTPACKS | T_STREAM_LISTPACKS_2 => {
            crate::rdb_stream::load(&mut r, t == T_STREAM_LISTPACKS_2).map(|s| Value::Stream(Box::new(s)))
        }
        T_HASH_LISTPACK => hash_from(lp_entries(&r.string()?)?),
        T_HASH_ZIPLIST => hash_from(zl_entries(&r.string()?)?),
        T_ZSET_LISTPACK => zset_from_text(lp_entries(&r.string()?)?),
        T_ZSET_ZIPLIST => zset_from_text(zl_entries(&r.string()?)?),
        T_ZSET | T_ZSET_2 => {
            let n = r.len()?;
            if n == 0 || n > body.len() as u64 {
                return None;
            }
            let mut members = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let m = r.string()?;
                let s = if t == T_ZSET_2 { r.binary_double()? } else { r.text_double()? };
                if s.is_nan() {
                    return None;
                }
                members.push((m, s));
            }
            let mut z = ZSet::new();
            for (m, s) in &members {
                if z.insert(m, *s).is_some() {
                    return None;
                }
            }
            Some(Value::ZSet(Box::new(z)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(v: &Value) -> Value {
        let p = dump(v, true).expect("dumpable");
        assert!(payload_ok(&p));
        load(&p).expect("loads")
    }

    /// Payloads Redis 7.0.15 produced (DUMP after the commands named), byte for byte.
    #[test]
    fn writes_what_redis_writes() {
        // SET s 1
        let one = Value::Str(RStr::Int(1));
        assert_eq!(dump(&one, true).unwrap(), b"\x00\xc0\x01\x0a\x00\x26\x78\xe7\xb6\xd1\x01\x11\xfc".to_vec());
        // SET s hello
        let hello = Value::Str(RStr::Raw(b"hello".to_vec()));
        assert_eq!(dump(&hello, true).unwrap()[..7], *b"\x00\x05hello");
    }

    #[test]
    fn every_type_round_trips() {
        let mut h = Hash::default();
        for (f, v) in [("a", "1"), ("b", "hello"), ("n", "-70000"), ("big", "9223372036854775808")] {
            h.set(f.as_bytes(), v.as_bytes().to_vec());
        }
        let Value::Hash(back) = round_trip(&Value::Hash(h.clone())) else { panic!() };
        assert_eq!(back.fields, h.fields);
        let mut z = ZSet::new();
        for (m, s) in [("a", 1.0), ("b", 2.5), ("c", -3.0), ("d", f64::INFINITY), ("e", 1e300)] {
            z.insert(m.as_bytes(), s);
        }
        let Value::ZSet(zb) = round_trip(&Value::ZSet(Box::new(z.clone()))) else { panic!() };
        assert_eq!(zb.iter().collect::<Vec<_>>(), z.iter().collect::<Vec<_>>());
        z.convert_to_skiplist();
        let Value::ZSet(zb) = round_trip(&Value::ZSet(Box::new(z.clone()))) else { panic!() };
        assert_eq!(zb.iter().collect::<Vec<_>>(), z.iter().collect::<Vec<_>>());
        let list: VecDeque<Vec<u8>> = (0..3000).map(|i| format!("element-{i}").into_bytes()).collect();
        let Value::List(lb) = round_trip(&Value::List(list.clone())) else { panic!() };
        assert_eq!(lb, list);
        for members in [vec!["1", "-5", "70000", "9000000000"], vec!["x", "1", "y"]] {
            let mut s = SetValue::new_intset();
            for m in &members {
                s.insert(m.as_bytes());
            }
            let Value::Set(sb) = round_trip(&Value::Set(Box::new(s.clone()))) else { panic!() };
            assert_eq!(sb.hashtable, s.hashtable);
            let mut a: Vec<_> = sb.members.iter().cloned().collect();
            let mut b: Vec<_> = s.members.iter().cloned().collect();
            a.sort();
            b.sort();
            assert_eq!(a, b);
        }
        let long = Value::Str(RStr::Raw(b"x".repeat(1000)));
        let p = dump(&long, true).unwrap();
        assert!(p.len() < 100, "compressed: {}", p.len());
        let Value::Str(RStr::Raw(b)) = load(&p).unwrap() else { panic!() };
        assert_eq!(b, b"x".repeat(1000));
    }

    /// Truncations and flipped bytes are refused (by the CRC, or by the reader), never a panic.
    #[test]
    fn bad_payloads_are_refused() {
        let mut h = Hash::default();
        h.set(b"f", b"v".to_vec());
        let p = dump(&Value::Hash(h), true).unwrap();
        for cut in 0..p.len() {
            assert!(!payload_ok(&p[..cut]) || load(&p[..cut]).is_none() || cut == p.len());
            let _ = load(&p[..cut]);
        }
        let mut bad = p.clone();
        bad[3] ^= 0x55;
        assert!(!payload_ok(&bad));
        let _ = load(&bad);
        let mut newer = p.clone();
        let n = newer.len();
        newer[n - 10] = 11;
        assert!(!payload_ok(&newer));
    }
}
