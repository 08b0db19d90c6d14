//! Integers as decimal text, appended to a buffer without going through `std::fmt`: the runner
//! writes two integers per script call (ARGV `now_ms` and `cost`) and a subject name per request,
//! and `write!` spends a few hundred instructions on each.

/// The number of decimal digits of `n` (1 for 0).
pub(crate) fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// Appends the decimal digits of `n`.
pub(crate) fn push_u64(out: &mut String, n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut v = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    // Only ASCII digits were written, so the check always passes.
    out.push_str(std::str::from_utf8(&buf[i..]).unwrap_or_default());
}

/// Appends `n` in decimal, with a `-` when negative.
pub(crate) fn push_i64(out: &mut String, n: i64) {
    if n < 0 {
        out.push('-');
    }
    push_u64(out, n.unsigned_abs());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_what_display_writes() {
        for n in [0u64, 1, 9, 10, 99, 100, 12_345, 1_704_067_200_123, u64::MAX] {
            let mut s = String::from("x");
            push_u64(&mut s, n);
            assert_eq!(s, format!("x{n}"));
            assert_eq!(digits(n), n.to_string().len());
        }
        for n in [0i64, -1, 7, -10, i64::MIN, i64::MAX] {
            let mut s = String::new();
            push_i64(&mut s, n);
            assert_eq!(s, n.to_string());
        }
    }
}
