//! FUNCTION DUMP's payload, as Redis's `rdb.c` writes and reads it: lengths, strings (LZF-compressed
//! past 20 bytes, with Redis's LZF), the RDB version and a CRC-64 (Jones).

pub(super) const RDB_OPCODE_FUNCTION2: u8 = 245;
pub(super) const RDB_OPCODE_FUNCTION_PRE_GA: u8 = 246;
/// Redis 7.0's RDB version.
pub(super) const RDB_VERSION: u16 = 10;

/// `rdbSaveLen`.
pub(crate) fn rdb_save_len(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.push(0x40 | (len >> 8) as u8);
        out.push(len as u8);
    } else if len <= u32::MAX as u64 {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// `rdbSaveRawString` for a library's code (never an integer: it starts with `#!`).
pub(super) fn rdb_save_string(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() > 20 {
        let mut buf = vec![0u8; s.len() - 4];
        let n = lzf_compress(s, &mut buf);
        if n > 0 {
            out.push(0xC3);
            rdb_save_len(out, n as u64);
            rdb_save_len(out, s.len() as u64);
            out.extend_from_slice(&buf[..n]);
            return;
        }
    }
    rdb_save_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// `rdbLoadLen`: (length, is it an encoding, bytes used).
pub(super) fn rdb_load_len(b: &[u8]) -> Option<(u64, bool, usize)> {
    let first = *b.first()?;
    match first >> 6 {
        0 => Some(((first & 0x3f) as u64, false, 1)),
        1 => Some(((((first & 0x3f) as u64) << 8) | *b.get(1)? as u64, false, 2)),
        3 => Some(((first & 0x3f) as u64, true, 1)),
        _ => match first {
            0x80 => Some((u32::from_be_bytes(b.get(1..5)?.try_into().ok()?) as u64, false, 5)),
            0x81 => Some((u64::from_be_bytes(b.get(1..9)?.try_into().ok()?), false, 9)),
            _ => None,
        },
    }
}

/// `rdbGenericLoadStringObject`: a string (plain, integer-encoded or LZF) and the bytes it took.
pub(super) fn rdb_load_string(b: &[u8]) -> Option<(Vec<u8>, usize)> {
    let (len, enc, mut at) = rdb_load_len(b)?;
    if enc {
        return match len {
            0 => Some(((*b.get(at)? as i8).to_string().into_bytes(), at + 1)),
            1 => {
                let v = i16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?);
                Some((v.to_string().into_bytes(), at + 2))
            }
            2 => {
                let v = i32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?);
                Some((v.to_string().into_bytes(), at + 4))
            }
            3 => {
                let (clen, _, n1) = rdb_load_len(&b[at..])?;
                at += n1;
                let (ulen, _, n2) = rdb_load_len(&b[at..])?;
                at += n2;
                let data = b.get(at..at + clen as usize)?;
                let out = lzf_decompress(data, ulen as usize)?;
                Some((out, at + clen as usize))
            }
            _ => None,
        };
    }
    let data = b.get(at..at + len as usize)?;
    Some((data.to_vec(), at + len as usize))
}

/// Redis's `lzf_compress` (liblzf 3.x with HLOG 16, VERY_FAST, unaligned 16-bit compares): the
/// compressed length, or 0 when the output does not fit `out`. Its hash table starts empty here
/// (Redis leaves it uninitialised on the stack, which can only ever find a match this misses).
pub(crate) fn lzf_compress(input: &[u8], out: &mut [u8]) -> usize {
    const HLOG: u32 = 16;
    const HSIZE: usize = 1 << HLOG;
    const MAX_LIT: usize = 1 << 5;
    const MAX_OFF: usize = 1 << 13;
    const MAX_REF: usize = (1 << 8) + (1 << 3);
    let in_len = input.len();
    let out_len = out.len();
    if in_len == 0 || out_len == 0 {
        return 0;
    }
    let frst = |p: usize| ((input[p] as u32) << 8) | input[p + 1] as u32;
    let next = |v: u32, p: usize| (v << 8) | input[p + 2] as u32;
    let idx = |h: u32| (((h >> (3 * 8 - HLOG)).wrapping_sub(h.wrapping_mul(5))) & (HSIZE as u32 - 1)) as usize;
    // Positions + 1 (0 = empty).
    let mut htab = vec![0usize; HSIZE];
    let (mut ip, mut op) = (0usize, 0usize);
    let mut lit: usize = 0;
    op += 1; // start run
    let mut hval = frst(ip);
    while ip + 2 < in_len {
        hval = next(hval, ip);
        let slot = idx(hval);
        let r = htab[slot];
        htab[slot] = ip + 1;
        let matched = r != 0 && {
            let rf = r - 1;
            rf < ip
                && ip - rf - 1 < MAX_OFF
                && rf > 0
                && input[rf] == input[ip]
                && input[rf + 1] == input[ip + 1]
                && input[rf + 2] == input[ip + 2]
        };
        if matched {
            let rf = r - 1;
            let off = ip - rf - 1;
            let mut len = 2usize;
            let maxlen = (in_len - ip - len).min(MAX_REF);
            out[op - lit - 1] = (lit as u8).wrapping_sub(1);
            if lit == 0 {
                op -= 1;
            }
            if op + 3 + 1 >= out_len {
                return 0;
            }
            // liblzf's loop as written (16 unrolled compares first when far from the end), which
            // decides the lengths it encodes near the end of the input.
            'found: {
                if maxlen > 16 {
                    for _ in 0..16 {
                        len += 1;
                        if input[rf + len] != input[ip + len] {
                            break 'found;
                        }
                    }
                }
                loop {
                    len += 1;
                    if !(len < maxlen && input[rf + len] == input[ip + len]) {
                        break;
                    }
                }
            }
            len -= 2;
            ip += 1;
            if len < 7 {
                out[op] = ((off >> 8) + (len << 5)) as u8;
                op += 1;
            } else {
                out[op] = ((off >> 8) + (7 << 5)) as u8;
                out[op + 1] = (len - 7) as u8;
                op += 2;
            }
            out[op] = off as u8;
            op += 1;
            lit = 0;
            op += 1;
            ip += len + 1;
            if ip + 2 >= in_len {
                break;
            }
            ip -= 2;
            hval = frst(ip);
            hval = next(hval, ip);
            htab[idx(hval)] = ip + 1;
            ip += 1;
            hval = next(hval, ip);
            htab[idx(hval)] = ip + 1;
            ip += 1;
        } else {
            if op >= out_len {
                return 0;
            }
            lit += 1;
            out[op] = input[ip];
            op += 1;
            ip += 1;
            if lit == MAX_LIT {
                out[op - lit - 1] = (lit - 1) as u8;
                lit = 0;
                op += 1;
            }
        }
    }
    if op + 3 > out_len {
        return 0;
    }
    while ip < in_len {
        lit += 1;
        out[op] = input[ip];
        op += 1;
        ip += 1;
        if lit == MAX_LIT {
            out[op - lit - 1] = (lit - 1) as u8;
            lit = 0;
            op += 1;
        }
    }
    out[op - lit - 1] = (lit as u8).wrapping_sub(1);
    if lit == 0 {
        op -= 1;
    }
    op
}

/// `lzf_decompress` into exactly `len` bytes (None for a corrupt stream).
pub(crate) fn lzf_decompress(input: &[u8], len: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(len);
    let mut ip = 0;
    while ip < input.len() {
        let ctrl = input[ip] as usize;
        ip += 1;
        if ctrl < 1 << 5 {
            let n = ctrl + 1;
            out.extend_from_slice(input.get(ip..ip + n)?);
            ip += n;
        } else {
            let mut n = ctrl >> 5;
            if n == 7 {
                n += *input.get(ip)? as usize;
                ip += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + *input.get(ip)? as usize + 1;
            ip += 1;
            let start = out.len().checked_sub(back)?;
            for k in 0..n + 2 {
                let c = out[start + k];
                out.push(c);
            }
        }
        if out.len() > len {
            return None;
        }
    }
    (out.len() == len).then_some(out)
}

/// Redis's `crc64` (Jones polynomial, reflected, as `crc64.c` computes it).
pub(crate) fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    const POLY: u64 = 0xad93_d235_94c9_35a9;
    // Redis's bitwise reference: bits fed low first into a left-shifting register, reflected at the end.
    for &c in data {
        let mut i = 1u8;
        while i != 0 {
            let mut bit = crc & 0x8000_0000_0000_0000 != 0;
            if c & i != 0 {
                bit = !bit;
            }
            crc <<= 1;
            if bit {
                crc ^= POLY;
            }
            i = i.wrapping_shl(1);
        }
    }
    crc.reverse_bits()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_matches_redis() {
        // crc64.c's test vector.
        assert_eq!(crc64(0, b"123456789"), 0xe9c6d914c4b8d9ca);
    }

    #[test]
    fn lzf_round_trips() {
        let s = b"#!lua name=mylib\nredis.register_function('f1', function(keys, args) return redis.call('incr', keys[1]) end) redis.register_function('f2', function(keys, args) return redis.call('incr', keys[1]) end)";
        let mut buf = vec![0u8; s.len() - 4];
        let n = lzf_compress(s, &mut buf);
        assert!(n > 0 && n < s.len());
        assert_eq!(lzf_decompress(&buf[..n], s.len()).unwrap(), s.to_vec());
    }
}
