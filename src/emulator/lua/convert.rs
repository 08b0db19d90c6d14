//! Number conversions shared by the scripting paths (the Lua <-> reply rules themselves live in
//! `fast.rs`, on the raw C API).

/// C's `(long long)` cast of a double as x86-64 performs it: truncation, and the "integer indefinite"
/// value (i64::MIN) for NaN and anything out of range.
pub fn c_double_to_i64(n: f64) -> i64 {
    if n.is_nan() || n >= 9_223_372_036_854_775_808.0 || n < -9_223_372_036_854_775_808.0 {
        i64::MIN
    } else {
        n as i64
    }
}
