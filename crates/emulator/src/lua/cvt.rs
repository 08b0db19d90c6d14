//! C's number conversions as the libraries' C originals get them on x86-64 with glibc: a double
//! cast to an integer, and `printf("%.<prec>g")`.

/// 2^63 as a double.
const TWO63: f64 = 9_223_372_036_854_775_808.0;

/// A double to a 64-bit integer the way x86-64 `cvttsd2si` does: truncation toward zero, and
/// `i64::MIN` for NaN or anything out of range.
pub(crate) fn cvt_i64(x: f64) -> i64 {
    if x.is_nan() || !(-TWO63..TWO63).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// A double to a 32-bit int the way the 32-bit `cvttsd2si` does (`i32::MIN` when out of range).
pub(crate) fn cvt_i32(x: f64) -> i32 {
    if x.is_nan() || x >= 2_147_483_648.0 || x <= -2_147_483_649.0 {
        i32::MIN
    } else {
        x as i32
    }
}

/// A double to an unsigned 64-bit integer as gcc compiles `(unsigned long)d` on x86-64:
/// below 2^63 a plain signed conversion (so negatives wrap and NaN gives 2^63), above it the
/// value less 2^63 converted and the top bit flipped (so 2^64 and beyond give 0).
pub(crate) fn cvt_u64(x: f64) -> u64 {
    if x.is_nan() || x < TWO63 {
        cvt_i64(x) as u64
    } else {
        (cvt_i64(x - TWO63) as u64) ^ (1u64 << 63)
    }
}

/// C's `printf("%.<prec>g", x)` as glibc prints it (used for cjson numbers): the one in `reply`.
pub(crate) use crate::reply::fmt_g;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_follow_x86() {
        assert_eq!(cvt_i64(f64::NAN), i64::MIN);
        assert_eq!(cvt_i64(1e300), i64::MIN);
        assert_eq!(cvt_i64(-1.9), -1);
        assert_eq!(cvt_u64(2f64.powi(64)), 0);
        assert_eq!(cvt_u64(2f64.powi(63)), 1u64 << 63);
        assert_eq!(cvt_u64(f64::NAN), 1u64 << 63);
        assert_eq!(cvt_u64(-1.0), u64::MAX);
        assert_eq!(cvt_i32(2f64.powi(40)), i32::MIN);
        assert_eq!(cvt_i32(-2147483648.5), -2147483648);
    }
}
