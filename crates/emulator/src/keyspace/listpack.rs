//! The sizes of listpack entries (integers, strings), as Redis 7.0 encodes them: what a small
//! hash, set, sorted set or stream node costs, for MEMORY USAGE (`crate::object_size`).

/// Bytes of a listpack entry holding the integer `v` (7-bit, 13, 16, 24, 32 or 64-bit encodings,
/// plus the one-byte back length).
pub fn lp_int_entry(v: i64) -> usize {
    let enc = if (0..=127).contains(&v) {
        1
    } else if (-4096..=4095).contains(&v) {
        2
    } else if (-32_768..=32_767).contains(&v) {
        3
    } else if (-8_388_608..=8_388_607).contains(&v) {
        4
    } else if (i32::MIN as i64..=i32::MAX as i64).contains(&v) {
        5
    } else {
        9
    };
    enc + 1
}

/// Bytes of a listpack entry holding a string of `len` bytes (6, 12 or 32-bit length headers).
pub fn lp_str_entry(len: usize) -> usize {
    let header = match len {
        0..=63 => 1,
        64..=4095 => 2,
        _ => 5,
    };
    header + len + lp_backlen(header + len)
}

/// Bytes of a listpack entry for `b`: an integer when it is one in canonical form
/// (`lpStringToInt64`), else a string.
pub fn lp_entry(b: &[u8]) -> usize {
    match super::parse_canonical_i64(b) {
        Some(v) => lp_int_entry(v),
        None => lp_str_entry(b.len()),
    }
}

/// Bytes of a listpack entry's back-length field for an entry of `l` bytes.
fn lp_backlen(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16_382 => 2,
        16_383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}
