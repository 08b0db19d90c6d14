//! C `long double` arithmetic for INCRBYFLOAT and HINCRBYFLOAT, printed as Redis prints it.
//!
//! Redis 7.0 parses with `strtold` (its `string2ld`), adds in `long double` (80-bit extended on x86-64)
//! and prints with `ld2string(.., LD_STR_HUMAN)` (`%.17Lf`, trailing zeros removed). Rust has no 80-bit
//! float, so the work is done by `csrc/longdouble.c` (compiled by `build.rs`); this module is its safe face.
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]
use std::os::raw::{c_char, c_int};

/// Redis's `MAX_LONG_DOUBLE_CHARS`: longest accepted input, and the output buffer size.
const LD_CHARS: usize = 5 * 1024;

extern "C" {
    fn limitlab_ld_valid(s: *const c_char, len: usize) -> c_int;
    fn limitlab_ld_incr(
        cur: *const c_char,
        curlen: usize,
        incr: *const c_char,
        incrlen: usize,
        out: *mut c_char,
        cap: usize,
    ) -> c_int;
    fn limitlab_ld_format(s: *const c_char, len: usize, out: *mut c_char, cap: usize) -> c_int;
}

/// The reply to an increment that is not a float (INCRBYFLOAT, HINCRBYFLOAT), or a current string
/// value that is not one (INCRBYFLOAT).
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
/// The reply when the sum overflows or is NaN.
pub const NAN_OR_INF: &str = "ERR increment would produce NaN or Infinity";
/// HINCRBYFLOAT's reply when the field holds something that is not a float.
pub const HASH_NOT_FLOAT: &str = "ERR hash value is not a float";

/// Why a float increment failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncrFloatError {
    /// The stored value does not parse (INCRBYFLOAT: [`NOT_FLOAT`]; HINCRBYFLOAT: [`HASH_NOT_FLOAT`]).
    BadCurrent,
    /// The increment does not parse ([`NOT_FLOAT`]).
    BadIncr,
    /// The sum is NaN or infinite ([`NAN_OR_INF`]).
    NanOrInf,
}

/// True when Redis's `string2ld` accepts `b`: `strtold` syntax (decimal, hex, `inf`), the whole string,
/// no leading space, not empty, under 5120 bytes, no overflow or underflow to zero, not NaN.
/// An embedded NUL makes it invalid, as in Redis 7.0 (`"1\0x"` and `"\0"` are refused).
pub fn is_valid_float(b: &[u8]) -> bool {
    if b.is_empty() || b.len() >= LD_CHARS {
        return false;
    }
    // SAFETY: the pointer and length describe a live slice; the C side only reads `len` bytes.
    unsafe { limitlab_ld_valid(b.as_ptr().cast(), b.len()) == 1 }
}

/// `current + incr` as HINCRBYFLOAT and INCRBYFLOAT compute it, returning the exact bytes Redis
/// stores and replies. Pass `b"0"` for a missing key or field. The increment is checked first.
pub fn incr_by_float_checked(current: &[u8], incr: &[u8]) -> Result<Vec<u8>, IncrFloatError> {
    // The C side rejects empty and over-long inputs itself, before reading them.
    let mut out = [0u8; LD_CHARS];
    // SAFETY: both inputs are live slices read up to their lengths; `out` is writable for `cap` bytes and
    // the C side writes at most `cap` bytes (snprintf) and returns the length written.
    let n = unsafe {
        limitlab_ld_incr(
            current.as_ptr().cast(),
            current.len(),
            incr.as_ptr().cast(),
            incr.len(),
            out.as_mut_ptr().cast(),
            out.len(),
        )
    };
    match n {
        -1 => Err(IncrFloatError::BadCurrent),
        -2 => Err(IncrFloatError::BadIncr),
        n if n >= 0 && (n as usize) < out.len() => Ok(out[..n as usize].to_vec()),
        // -3, or no room (a finite long double always fits in 5120 bytes).
        _ => Err(IncrFloatError::NanOrInf),
    }
}

/// INCRBYFLOAT's arithmetic: `current + incr` (pass `b"0"` for a missing key), with INCRBYFLOAT's
/// error texts ([`NOT_FLOAT`] for either operand, [`NAN_OR_INF`]).
pub fn incr_by_float(current: &[u8], incr: &[u8]) -> Result<Vec<u8>, &'static str> {
    incr_by_float_checked(current, incr).map_err(|e| match e {
        IncrFloatError::BadCurrent | IncrFloatError::BadIncr => NOT_FLOAT,
        IncrFloatError::NanOrInf => NAN_OR_INF,
    })
}

/// Parses `b` with `string2ld` and prints it back as `ld2string(LD_STR_HUMAN)` does (`None` if invalid).
/// Infinities print as `inf`/`-inf`.
pub fn format_human(b: &[u8]) -> Option<Vec<u8>> {
    if b.is_empty() || b.len() >= LD_CHARS {
        return None;
    }
    let mut out = [0u8; LD_CHARS];
    // SAFETY: as in `incr_by_float_checked`.
    let n = unsafe { limitlab_ld_format(b.as_ptr().cast(), b.len(), out.as_mut_ptr().cast(), out.len()) };
    if n >= 0 && (n as usize) < out.len() {
        Some(out[..n as usize].to_vec())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inc(cur: &str, by: &str) -> Result<String, &'static str> {
        incr_by_float(cur.as_bytes(), by.as_bytes()).map(|v| String::from_utf8(v).unwrap())
    }

    // Every expected value below was printed by a real Redis 7.0.15 (x86-64) for
    // `SET k <cur>` then `INCRBYFLOAT k <by>`.
    #[test]
    fn sums_print_like_redis() {
        assert_eq!(inc("10.5", "0.1").unwrap(), "10.6");
        assert_eq!(inc("0", "3.0").unwrap(), "3");
        assert_eq!(inc("0", "5e3").unwrap(), "5000");
        assert_eq!(inc("0", "1.5e-7").unwrap(), "0.00000015");
        assert_eq!(inc("0", "-1.5e20").unwrap(), "-150000000000000000000");
        assert_eq!(inc("0.1", "0.2").unwrap(), "0.3");
        assert_eq!(inc("10.6", "0x10").unwrap(), "26.6");
        assert_eq!(inc("-0", "-0").unwrap(), "0");
        assert_eq!(inc("1", "-1.00000000000000000001").unwrap(), "0");
        assert_eq!(inc("123", "1").unwrap(), "124");
        let big = inc("26.6", "1e308").unwrap();
        assert_eq!(big, "99999999999999999996685879655845645660560099847415567207797047994921734868838061872100126921888539320446747225054013223152134749593960583597420814430196418767959100019603190778663109604507106667939153395788938914560543563061268364901618630217086589253444881623791300855757318142424510452728255046343928578048");
    }

    #[test]
    fn errors_match_redis() {
        assert_eq!(inc("1", "inf"), Err(NAN_OR_INF));
        assert_eq!(inc("1", "-inf"), Err(NAN_OR_INF));
        for bad in ["nan", " 1", "1 ", "", "1e5000", "1e-5000", "abc", "1e"] {
            assert_eq!(inc("1", bad), Err(NOT_FLOAT), "{bad:?}");
        }
        assert_eq!(inc("abc", "1"), Err(NOT_FLOAT));
        assert_eq!(inc("", "1"), Err(NOT_FLOAT));
        assert_eq!(incr_by_float_checked(b"abc", b"x"), Err(IncrFloatError::BadIncr));
        assert_eq!(incr_by_float_checked(b"abc", b"1"), Err(IncrFloatError::BadCurrent));
        assert_eq!(incr_by_float_checked(b"", b"1"), Err(IncrFloatError::BadCurrent));
    }

    #[test]
    fn validity() {
        assert!(is_valid_float(b"1.5"));
        assert!(is_valid_float(b"-.5e-3"));
        assert!(is_valid_float(b"inf"));
        assert!(is_valid_float(b"0x1p3"));
        assert!(!is_valid_float(b"nan"));
        assert!(!is_valid_float(b"+"));
        assert!(!is_valid_float(&vec![b'1'; 5120]));
        assert!(!is_valid_float(b"1\0abc"));
        assert!(!is_valid_float(b"\0"));
        assert_eq!(format_human(b"1e3").unwrap(), b"1000");
        assert_eq!(format_human(b"-inf").unwrap(), b"-inf");
    }
}
