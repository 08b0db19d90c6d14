//! Bitmaps and bitfields: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and BITFIELD_RO, with
//! Redis 7.0's argument checks in its order, its error texts, and the string encodings its writers
//! leave (a bit write turns the value into a `raw` sds, grown with zero bytes as Redis grows it).
use crate::command_spec::flags::*;
use crate::command_spec::{arg_i64, eq_ic, CommandSpec, KeySpec, NOT_INTEGER, SYNTAX};
use crate::core::Core;
use crate::keyspace::{parse_canonical_i64, RStr, Value, WRONGTYPE};
use crate::reply::Reply;
use crate::tri;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "setbit", arity: 4, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: setbit },
    CommandSpec { name: "getbit", arity: 3, flags: READONLY, keys: KeySpec::ONE, handler: getbit },
    CommandSpec { name: "bitcount", arity: -2, flags: READONLY, keys: KeySpec::ONE, handler: bitcount },
    CommandSpec { name: "bitpos", arity: -3, flags: READONLY, keys: KeySpec::ONE, handler: bitpos },
    CommandSpec { name: "bitop", arity: -4, flags: WRITE | DENYOOM, keys: KeySpec::at(2, -1, 1), handler: bitop },
    CommandSpec { name: "bitfield", arity: -2, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: bitfield },
    CommandSpec { name: "bitfield_ro", arity: -2, flags: READONLY, keys: KeySpec::ONE, handler: bitfield_ro },
];

/// Redis's default `proto-max-bulk-len`, which bounds a bit offset (in bytes).
const PROTO_MAX_BULK_LEN: i64 = 512 * 1024 * 1024;
const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const BAD_BIT: &str = "ERR bit is not an integer or out of range";
const BAD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

/// The text of a C string argument: up to its first NUL.
fn c_str(b: &[u8]) -> &[u8] {
    &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]
}

/// Redis's `getBitOffsetFromArgument`: a non-negative integer whose byte is below proto-max-bulk-len;
/// with `bits` (BITFIELD), `#N` means N times the field width.
fn bit_offset(arg: &[u8], bits: Option<u32>) -> Result<u64, Reply> {
    let hash = bits.is_some() && arg.first() == Some(&b'#');
    let digits = if hash { &arg[1..] } else { arg };
    let mut off = parse_canonical_i64(digits).ok_or_else(|| Reply::err(BAD_OFFSET))?;
    if let (true, Some(b)) = (hash, bits) {
        off = off.wrapping_mul(b as i64);
    }
    if off < 0 || (off >> 3) >= PROTO_MAX_BULK_LEN {
        return Err(Reply::err(BAD_OFFSET));
    }
    Ok(off as u64)
}

/// Redis's `getBitfieldTypeFromArgument`: `i1`..`i64` or `u1`..`u63`; returns (signed, bits).
fn bitfield_type(arg: &[u8]) -> Result<(bool, u32), Reply> {
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(Reply::err(BAD_TYPE)),
    };
    let bits = parse_canonical_i64(c_str(&arg[1..])).ok_or_else(|| Reply::err(BAD_TYPE))?;
    if bits < 1 || (signed && bits > 64) || (!signed && bits > 63) {
        return Err(Reply::err(BAD_TYPE));
    }
    Ok((signed, bits as u32))
}

/// The bytes of a string value (integers printed), or None for a missing key; WRONGTYPE otherwise.
fn read_bytes(core: &mut Core, key: &[u8]) -> Result<Option<Vec<u8>>, Reply> {
    super::strings::read_str(core, key)
}

/// Redis's `lookupStringForBitCommand`: the string at `key` made at least `bytes` long (zero bytes
/// added), created when missing as an exactly sized raw string; an existing value is unshared into a
/// raw sds first (`dbUnshareStringValue`) and grown by `sdsgrowzero`. Returns whether it grew or was
/// created.
fn string_for_write<'a>(core: &'a mut Core, key: &[u8], bytes: usize) -> Result<(&'a mut Vec<u8>, bool), Reply> {
    let now = core.now_ms();
    if core.db.get(key, now).is_none() {
        core.db.set(key, Value::Str(RStr::Exact(vec![0u8; bytes])), None);
        let Some(Value::Str(RStr::Exact(v))) = core.db.get_mut(key, now).map(|e| &mut e.value) else {
            unreachable!("just stored")
        };
        return Ok((v, true));
    }
    let e = core.db.get_mut(key, now).expect("checked above");
    let Value::Str(s) = &mut e.value else { return Err(Reply::err(WRONGTYPE)) };
    let old = s.len();
    let v = crate::object_size::make_room(s, bytes.max(old));
    if v.len() < bytes {
        v.resize(bytes, 0);
    }
    Ok((v, bytes > old))
}

fn setbit(core: &mut Core, a: &[&[u8]]) -> Reply {
    let off = tri!(bit_offset(a[2], None));
    let on = match parse_canonical_i64(a[3]) {
        Some(v) if v & !1 == 0 => v as u8,
        _ => return Reply::err(BAD_BIT),
    };
    let byte = (off >> 3) as usize;
    let (v, grew) = tri!(string_for_write(core, a[1], byte + 1));
    let bit = 7 - (off & 7) as u8;
    let old = (v[byte] >> bit) & 1;
    v[byte] = (v[byte] & !(1 << bit)) | (on << bit);
    // As Redis 7.0's setbitCommand: the key is signalled as modified (WATCH) only when it was
    // created or grown, or the bit changed.
    if grew || old != on {
        core.touch(a[1]);
    }
    Reply::Int(old as i64)
}

fn getbit(core: &mut Core, a: &[&[u8]]) -> Reply {
    let off = tri!(bit_offset(a[2], None));
    let Some(v) = tri!(read_bytes(core, a[1])) else { return Reply::Int(0) };
    let byte = (off >> 3) as usize;
    let bit = 7 - (off & 7) as u8;
    Reply::Int(v.get(byte).map_or(0, |b| (b >> bit) & 1) as i64)
}

/// Whether a BIT|BYTE unit argument says BIT; a syntax error for anything else.
fn unit_is_bit(arg: &[u8]) -> Result<bool, Reply> {
    if eq_ic(arg, "bit") {
        Ok(true)
    } else if eq_ic(arg, "byte") {
        Ok(false)
    } else {
        Err(Reply::err(SYNTAX))
    }
}

/// Normalises a start/end range over `total` units as Redis does: negatives from the end, clamped.
fn clamp_range(mut start: i64, mut end: i64, total: i64) -> (i64, i64) {
    if start < 0 {
        start += total;
    }
    if end < 0 {
        end += total;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= total {
        end = total - 1;
    }
    (start, end)
}

fn bit_at(v: &[u8], i: i64) -> u8 {
    (v[(i >> 3) as usize] >> (7 - (i & 7))) & 1
}

/// BITCOUNT key [start end [BYTE|BIT]]: the key is looked up first (a missing key is 0 whatever
/// follows), then the range.
fn bitcount(core: &mut Core, a: &[&[u8]]) -> Reply {
    let Some(v) = tri!(read_bytes(core, a[1])) else { return Reply::Int(0) };
    let (first, last) = match a.len() {
        2 => (0, v.len() as i64 * 8 - 1),
        4 | 5 => {
            let start = tri!(arg_i64(a[2]));
            let end = tri!(arg_i64(a[3]));
            if start < 0 && end < 0 && start > end {
                return Reply::Int(0);
            }
            let isbit = if a.len() == 5 { tri!(unit_is_bit(a[4])) } else { false };
            let total = if isbit { v.len() as i64 * 8 } else { v.len() as i64 };
            let (s, e) = clamp_range(start, end, total);
            if s > e {
                return Reply::Int(0);
            }
            if isbit {
                (s, e)
            } else {
                (s * 8, e * 8 + 7)
            }
        }
        _ => return Reply::err(SYNTAX),
    };
    if first > last {
        return Reply::Int(0);
    }
    let mut n = 0i64;
    let (fb, lb) = (first >> 3, last >> 3);
    for (i, byte) in v[fb as usize..=lb as usize].iter().enumerate() {
        let at = fb + i as i64;
        let mut b = *byte;
        if at == fb {
            b &= 0xffu8 >> (first & 7);
        }
        if at == lb {
            b &= 0xffu8 << (7 - (last & 7));
        }
        n += b.count_ones() as i64;
    }
    Reply::Int(n)
}

/// BITPOS key bit [start [end [BYTE|BIT]]]: the bit argument first, then the key (missing: -1 for a
/// set bit, 0 for a clear one), then the range. Looking for a clear bit without an explicit end, the
/// string counts as followed by zeros.
fn bitpos(core: &mut Core, a: &[&[u8]]) -> Reply {
    let bit = match parse_canonical_i64(a[2]) {
        Some(b) if b == 0 || b == 1 => b as u8,
        Some(_) => return Reply::err("ERR The bit argument must be 1 or 0."),
        None => return Reply::err(NOT_INTEGER),
    };
    let Some(v) = tri!(read_bytes(core, a[1])) else { return Reply::Int(if bit == 1 { -1 } else { 0 }) };
    let len = v.len() as i64;
    let (first, last, end_given) = match a.len() {
        3 => (0, len * 8 - 1, false),
        4..=6 => {
            let start = tri!(arg_i64(a[3]));
            let isbit = if a.len() == 6 { tri!(unit_is_bit(a[5])) } else { false };
            let (end, end_given) = if a.len() >= 5 { (tri!(arg_i64(a[4])), true) } else { (len - 1, false) };
            let total = if isbit { len * 8 } else { len };
            let (s, e) = clamp_range(start, end, total);
            if s > e {
                return Reply::Int(-1);
            }
            if isbit {
                (s, e, end_given)
            } else {
                (s * 8, e * 8 + 7, end_given)
            }
        }
        _ => return Reply::err(SYNTAX),
    };
    if first > last {
        return Reply::Int(-1);
    }
    for i in first..=last {
        if bit_at(&v, i) == bit {
            return Reply::Int(i);
        }
    }
    if bit == 0 && !end_given {
        Reply::Int(last + 1)
    } else {
        Reply::Int(-1)
    }
}

/// BITOP AND|OR|XOR|NOT destkey key...: missing keys read as empty (zero-padded) strings; an all-empty
/// result deletes the destination; the result is a raw string and has no TTL.
fn bitop(core: &mut Core, a: &[&[u8]]) -> Reply {
    #[derive(PartialEq)]
    enum Op {
        And,
        Or,
        Xor,
        Not,
    }
    let op = match a[1] {
        o if eq_ic(o, "and") => Op::And,
        o if eq_ic(o, "or") => Op::Or,
        o if eq_ic(o, "xor") => Op::Xor,
        o if eq_ic(o, "not") => Op::Not,
        _ => return Reply::err(SYNTAX),
    };
    if op == Op::Not && a.len() != 4 {
        return Reply::err("ERR BITOP NOT must be called with a single source key.");
    }
    let mut srcs = Vec::with_capacity(a.len() - 3);
    for k in &a[3..] {
        srcs.push(tri!(read_bytes(core, k)).unwrap_or_default());
    }
    let maxlen = srcs.iter().map(Vec::len).max().unwrap_or(0);
    let dest = a[2];
    if maxlen == 0 {
        let now = core.now_ms();
        if core.db.remove(dest, now) {
            core.touch(dest);
        }
        return Reply::Int(0);
    }
    let mut res = vec![0u8; maxlen];
    for (j, out) in res.iter_mut().enumerate() {
        let byte = |s: &Vec<u8>| s.get(j).copied().unwrap_or(0);
        let mut o = byte(&srcs[0]);
        if op == Op::Not {
            o = !o;
        }
        for s in &srcs[1..] {
            match op {
                Op::And => o &= byte(s),
                Op::Or => o |= byte(s),
                Op::Xor => o ^= byte(s),
                Op::Not => {}
            }
        }
        *out = o;
    }
    core.db.set(dest, Value::Str(RStr::Exact(res)), None);
    core.touch(dest);
    Reply::Int(maxlen as i64)
}

/// BITFIELD's overflow behaviours.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq)]
enum FieldOp {
    Get,
    Set,
    IncrBy,
}

struct Field {
    op: FieldOp,
    signed: bool,
    bits: u32,
    offset: u64,
    value: i64,
    overflow: Overflow,
}

/// Reads `bits` bits at bit `offset` of `p` (zero beyond its end), most significant first.
fn get_unsigned(p: &[u8], offset: u64, bits: u32) -> u64 {
    let mut v = 0u64;
    for j in 0..bits as u64 {
        let o = offset + j;
        let b = p.get((o >> 3) as usize).map_or(0, |byte| (byte >> (7 - (o & 7))) & 1);
        v = (v << 1) | b as u64;
    }
    v
}

fn get_signed(p: &[u8], offset: u64, bits: u32) -> i64 {
    let v = get_unsigned(p, offset, bits) as i64;
    if bits < 64 && v & (1i64 << (bits - 1)) != 0 {
        v | (-1i64 << bits)
    } else {
        v
    }
}

/// Writes the low `bits` bits of `value` at bit `offset` of `p` (which is long enough).
fn set_bits(p: &mut [u8], offset: u64, bits: u32, value: u64) {
    for j in 0..bits as u64 {
        let bitval = ((value >> (bits as u64 - 1 - j)) & 1) as u8;
        let o = offset + j;
        let byte = (o >> 3) as usize;
        let shift = 7 - (o & 7);
        p[byte] = (p[byte] & !(1 << shift)) | (bitval << shift);
    }
}

/// Redis's `checkUnsignedBitfieldOverflow`: 0 when `value + incr` fits in `bits` unsigned bits,
/// else 1 (overflow) or -1 (underflow) with the value to store under WRAP or SAT.
pub fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> (i32, u64) {
    let max: u64 = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let maxincr = max.wrapping_sub(value) as i64;
    let minincr = (value as i64).wrapping_neg();
    let wrap = || {
        let res = value.wrapping_add(incr as u64);
        if bits == 64 {
            res
        } else {
            res & !(u64::MAX << bits)
        }
    };
    if value > max || (incr > 0 && incr > maxincr) {
        let limit = match ow {
            Overflow::Wrap => wrap(),
            Overflow::Sat => max,
            Overflow::Fail => 0,
        };
        return (1, limit);
    }
    if incr < 0 && incr < minincr {
        let limit = match ow {
            Overflow::Wrap => wrap(),
            Overflow::Sat => 0,
            Overflow::Fail => 0,
        };
        return (-1, limit);
    }
    (0, 0)
}

/// Redis's `checkSignedBitfieldOverflow`, as [`unsigned_overflow`] for signed fields.
pub fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> (i32, i64) {
    let max: i64 = if bits == 64 { i64::MAX } else { (1i64 << (bits - 1)) - 1 };
    let min = -max - 1;
    let maxincr = (max as u64).wrapping_sub(value as u64) as i64;
    let minincr = min.wrapping_sub(value);
    let wrap = || {
        let c = (value as u64).wrapping_add(incr as u64);
        let c = if bits < 64 {
            let mask = u64::MAX << bits;
            if c & (1u64 << (bits - 1)) != 0 {
                c | mask
            } else {
                c & !mask
            }
        } else {
            c
        };
        c as i64
    };
    if value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr) {
        let limit = match ow {
            Overflow::Wrap => wrap(),
            Overflow::Sat => max,
            Overflow::Fail => 0,
        };
        return (1, limit);
    }
    if value < min || (bits != 64 && incr < minincr) || (value < 0 && incr < 0 && incr < minincr) {
        let limit = match ow {
            Overflow::Wrap => wrap(),
            Overflow::Sat => min,
            Overflow::Fail => 0,
        };
        return (-1, limit);
    }
    (0, 0)
}

fn bitfield(core: &mut Core, a: &[&[u8]]) -> Reply {
    bitfield_generic(core, a, false)
}

fn bitfield_ro(core: &mut Core, a: &[&[u8]]) -> Reply {
    bitfield_generic(core, a, true)
}

/// BITFIELD / BITFIELD_RO: every operation is parsed (and checked) before the key is read; a write
/// grows the string to the farthest bit written before any operation runs.
fn bitfield_generic(core: &mut Core, a: &[&[u8]], ro: bool) -> Reply {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut readonly = true;
    let mut highest: u64 = 0;
    let mut j = 2;
    while j < a.len() {
        let remargs = a.len() - j - 1;
        let sub = a[j];
        let op = if eq_ic(sub, "get") && remargs >= 2 {
            FieldOp::Get
        } else if eq_ic(sub, "set") && remargs >= 3 {
            FieldOp::Set
        } else if eq_ic(sub, "incrby") && remargs >= 3 {
            FieldOp::IncrBy
        } else if eq_ic(sub, "overflow") && remargs >= 1 {
            let t = a[j + 1];
            overflow = if eq_ic(t, "wrap") {
                Overflow::Wrap
            } else if eq_ic(t, "sat") {
                Overflow::Sat
            } else if eq_ic(t, "fail") {
                Overflow::Fail
            } else {
                return Reply::err("ERR Invalid OVERFLOW type specified");
            };
            j += 2;
            continue;
        } else {
            return Reply::err(SYNTAX);
        };
        let (signed, bits) = tri!(bitfield_type(a[j + 1]));
        let offset = tri!(bit_offset(a[j + 2], Some(bits)));
        let mut value = 0;
        if op != FieldOp::Get {
            readonly = false;
            highest = highest.max(offset + bits as u64 - 1);
            value = tri!(arg_i64(a[j + 3]));
        }
        ops.push(Field { op, signed, bits, offset, value, overflow });
        j += if op == FieldOp::Get { 3 } else { 4 };
    }
    let key = a[1];
    if readonly {
        let v = tri!(read_bytes(core, key)).unwrap_or_default();
        return Reply::Array(
            ops.iter()
                .map(|f| {
                    if f.signed {
                        Reply::Int(get_signed(&v, f.offset, f.bits))
                    } else {
                        Reply::Int(get_unsigned(&v, f.offset, f.bits) as i64)
                    }
                })
                .collect(),
        );
    }
    if ro {
        return Reply::err("ERR BITFIELD_RO only supports the GET subcommand");
    }
    let (v, _) = tri!(string_for_write(core, key, (highest >> 3) as usize + 1));
    let mut out = Vec::with_capacity(ops.len());
    let mut changes = 0;
    for f in &ops {
        match f.op {
            FieldOp::Get => out.push(if f.signed {
                Reply::Int(get_signed(v, f.offset, f.bits))
            } else {
                Reply::Int(get_unsigned(v, f.offset, f.bits) as i64)
            }),
            FieldOp::Set | FieldOp::IncrBy if f.signed => {
                let old = get_signed(v, f.offset, f.bits);
                let (of, newval, ret) = if f.op == FieldOp::IncrBy {
                    let (of, lim) = signed_overflow(old, f.value, f.bits, f.overflow);
                    let n = if of != 0 { lim } else { old.wrapping_add(f.value) };
                    (of, n, n)
                } else {
                    let (of, lim) = signed_overflow(f.value, 0, f.bits, f.overflow);
                    (of, if of != 0 { lim } else { f.value }, old)
                };
                if of != 0 && f.overflow == Overflow::Fail {
                    out.push(Reply::Nil);
                } else {
                    out.push(Reply::Int(ret));
                    set_bits(v, f.offset, f.bits, newval as u64);
                    changes += 1;
                }
            }
            FieldOp::Set | FieldOp::IncrBy => {
                let old = get_unsigned(v, f.offset, f.bits);
                let (of, newval, ret) = if f.op == FieldOp::IncrBy {
                    let (of, lim) = unsigned_overflow(old, f.value, f.bits, f.overflow);
                    let n = if of != 0 { lim } else { old.wrapping_add(f.value as u64) };
                    (of, n, n)
                } else {
                    let (of, lim) = unsigned_overflow(f.value as u64, 0, f.bits, f.overflow);
                    (of, if of != 0 { lim } else { f.value as u64 }, old)
                };
                if of != 0 && f.overflow == Overflow::Fail {
                    out.push(Reply::Nil);
                } else {
                    out.push(Reply::Int(ret as i64));
                    set_bits(v, f.offset, f.bits, newval);
                    changes += 1;
                }
            }
        }
    }
    if changes > 0 {
        core.touch(key);
    }
    Reply::Array(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values worked out from Redis's definitions (two's complement, masks of `bits` bits).
    #[test]
    fn unsigned_overflow_rules() {
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Wrap), (1, 4));
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Sat), (1, 255));
        assert_eq!(unsigned_overflow(250, 5, 8, Overflow::Sat), (0, 0));
        assert_eq!(unsigned_overflow(3, -4, 8, Overflow::Wrap), (-1, 255));
        assert_eq!(unsigned_overflow(3, -4, 8, Overflow::Sat), (-1, 0));
        // SET of a negative value: as u64 it is above the maximum.
        assert_eq!(unsigned_overflow(-1i64 as u64, 0, 8, Overflow::Wrap), (1, 255));
        assert_eq!(unsigned_overflow(-1i64 as u64, 0, 8, Overflow::Sat), (1, 255));
        assert_eq!(unsigned_overflow(300, 0, 8, Overflow::Wrap), (1, 44));
        assert_eq!(unsigned_overflow(0, i64::MAX, 63, Overflow::Wrap), (0, 0));
        assert_eq!(unsigned_overflow(1, i64::MAX, 63, Overflow::Wrap), (1, 0));
    }

    #[test]
    fn signed_overflow_rules() {
        assert_eq!(signed_overflow(100, 100, 8, Overflow::Wrap), (1, -56));
        assert_eq!(signed_overflow(100, 100, 8, Overflow::Sat), (1, 127));
        assert_eq!(signed_overflow(-100, -100, 8, Overflow::Wrap), (-1, 56));
        assert_eq!(signed_overflow(-100, -100, 8, Overflow::Sat), (-1, -128));
        assert_eq!(signed_overflow(-128, 0, 8, Overflow::Sat), (0, 0));
        assert_eq!(signed_overflow(200, 0, 8, Overflow::Wrap), (1, -56));
        assert_eq!(signed_overflow(i64::MAX, 1, 64, Overflow::Wrap), (1, i64::MIN));
        assert_eq!(signed_overflow(i64::MAX, 1, 64, Overflow::Sat), (1, i64::MAX));
        assert_eq!(signed_overflow(i64::MIN, -1, 64, Overflow::Sat), (-1, i64::MIN));
        assert_eq!(signed_overflow(i64::MIN, -1, 64, Overflow::Wrap), (-1, i64::MAX));
        assert_eq!(signed_overflow(-1, 0, 1, Overflow::Wrap), (0, 0));
        assert_eq!(signed_overflow(1, 0, 1, Overflow::Wrap), (1, -1));
    }

    #[test]
    fn bit_fields_read_and_write_msb_first() {
        let mut p = vec![0u8; 2];
        set_bits(&mut p, 7, 5, 23);
        assert_eq!(p, [0b0000_0001, 0b0111_0000]);
        assert_eq!(get_unsigned(&p, 7, 5), 23);
        assert_eq!(get_signed(&p, 7, 5), 23 - 32);
        assert_eq!(get_unsigned(&p, 12, 64), 0);
    }
}
