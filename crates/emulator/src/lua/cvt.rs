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

    extern "C" {
        fn snprintf(buf: *mut std::os::raw::c_char, n: usize, fmt: *const std::os::raw::c_char, ...) -> i32;
    }

    fn c_g(x: f64, prec: usize) -> String {
        let fmt = std::ffi::CString::new(format!("%.{prec}g")).unwrap();
        let mut buf = [0 as std::os::raw::c_char; 64];
        // SAFETY: `fmt` is a NUL-terminated `%.<prec>g`, which takes the one double passed; snprintf
        // writes at most `buf.len()` bytes, a NUL included, so `buf` holds a C string after.
        unsafe { snprintf(buf.as_mut_ptr(), buf.len(), fmt.as_ptr(), x) };
        let bytes: Vec<u8> = buf.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn fmt_g_matches_libc() {
        let mut vals = vec![
            0.0,
            -0.0,
            1.0,
            0.1,
            0.5,
            0.25,
            2.5,
            1e15,
            1e14,
            123456789012345.0,
            1e100,
            1e-5,
            1e-4,
            0.0001234,
            1.0 / 3.0,
            2f64.powi(53),
            9.999999999999995,
            99999999999999.5,
            1e21,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
            -1.5e-10,
            123456.789,
            0.00012345678901234,
        ];
        let mut seed: u64 = 0x1234_5678_9abc_def0;
        for _ in 0..3000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let v = f64::from_bits(seed);
            if v.is_finite() {
                vals.push(v);
            }
            vals.push((seed % 100_000) as f64 / 8.0);
            vals.push((seed % 1000) as f64 * 10f64.powi((seed % 40) as i32 - 20));
        }
        for v in vals {
            for p in [1usize, 3, 14] {
                assert_eq!(fmt_g(v, p), c_g(v, p), "value {v:e} precision {p}");
            }
        }
        assert_eq!(fmt_g(f64::INFINITY, 14), "inf");
        assert_eq!(fmt_g(f64::NEG_INFINITY, 14), "-inf");
    }

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
