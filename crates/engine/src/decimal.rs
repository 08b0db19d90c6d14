//! Integers as decimal text, appended to a buffer without going through `std::fmt`: the runner
//! writes two integers per script call (ARGV `now_ms` and `cost`) and a subject name per request,
//! and `write!` spends a few hundred instructions on each.

/// The number of decimal digits of `n` (1 for 0).
pub(crate) fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// "00", "01", ..., "99": two digits per division.
const PAIRS: &str = "0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Appends the decimal digits of `n`.
pub(crate) fn push_u64(out: &mut String, n: u64) {
    // The pairs of digits below the leading one or two, lowest first (a u64 has at most 20
    // digits: at most 9 pairs below the leading digits).
    let mut low = [0u8; 10];
    let mut pairs = 0;
    let mut v = n;
    while v >= 100 {
        low[pairs] = (v % 100) as u8;
        v /= 100;
        pairs += 1;
    }
    out.reserve(2 * pairs + 2);
    let lead = v as usize * 2;
    out.push_str(if v >= 10 { &PAIRS[lead..lead + 2] } else { &PAIRS[lead + 1..lead + 2] });
    for &p in low[..pairs].iter().rev() {
        let p = p as usize * 2;
        out.push_str(&PAIRS[p..p + 2]);
    }
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
        for n in [0u64, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12_345, 1_704_067_200_123, u64::MAX] {
            let mut s = String::from("x");
            push_u64(&mut s, n);
            assert_eq!(s, format!("x{n}"));
            assert_eq!(digits(n), n.to_string().len());
        }
        for n in 0..20_000u64 {
            let mut s = String::new();
            push_u64(&mut s, n);
            assert_eq!(s, n.to_string());
        }
        for n in [0i64, -1, 7, -10, i64::MIN, i64::MAX] {
            let mut s = String::new();
            push_i64(&mut s, n);
            assert_eq!(s, n.to_string());
        }
    }
}
