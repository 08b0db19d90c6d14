//! Replies as Redis sends them, with the RESP3 types kept so scripts under `redis.setresp(3)` see them.
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]
use std::fmt::Write as _;

/// One reply of a command. Error texts carry their code (`ERR ...`, `WRONGTYPE ...`) without the `-`.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    Status(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    /// A nil bulk string.
    Nil,
    /// A nil array (e.g. a blocked or aborted reply); redis-cli prints it like `Nil`.
    NilArray,
    Array(Vec<Reply>),
    /// A double (RESP3); RESP2 sends it as a bulk string formatted like Redis 7.0 (`%.17g`).
    Double(f64),
    /// A map (RESP3); RESP2 flattens it into an array of keys and values.
    Map(Vec<(Reply, Reply)>),
    /// A set (RESP3); RESP2 sends an array.
    Set(Vec<Reply>),
    /// A boolean (RESP3, from scripts under RESP3 only).
    Bool(bool),
    /// A double as Redis's `addReplyHumanLongDouble` sends it (GEOPOS, WITHCOORD): `%.17Lf` with
    /// the trailing zeros removed, a bulk string under RESP2 and a double (`,`) under RESP3.
    HumanDouble(f64),
    /// A verbatim text (INFO, CLIENT INFO/LIST, LOLWUT, MEMORY DOCTOR): RESP3's `=LEN\r\ntxt:...`,
    /// a bulk string under RESP2.
    Verbatim(Vec<u8>),
}

impl Reply {
    pub fn ok() -> Reply {
        Reply::Status("OK".into())
    }
    pub fn err(s: impl Into<String>) -> Reply {
        Reply::Error(s.into())
    }
    pub fn bulk(b: impl Into<Vec<u8>>) -> Reply {
        Reply::Bulk(b.into())
    }
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }
    /// The RESP2 form of this reply: doubles become bulk strings, maps and sets become arrays.
    pub fn into_resp2(self) -> Reply {
        match self {
            Reply::Double(d) => Reply::Bulk(format_double(d).into_bytes()),
            Reply::HumanDouble(d) => Reply::Bulk(format_human_double(d).into_bytes()),
            Reply::Verbatim(t) => Reply::Bulk(t),
            Reply::Map(kv) => {
                let mut v = Vec::with_capacity(kv.len() * 2);
                for (k, x) in kv {
                    v.push(k.into_resp2());
                    v.push(x.into_resp2());
                }
                Reply::Array(v)
            }
            Reply::Set(v) | Reply::Array(v) => Reply::Array(v.into_iter().map(Reply::into_resp2).collect()),
            Reply::Bool(b) => Reply::Int(b as i64),
            other => other,
        }
    }
    /// Encodes the reply in RESP2, as a server writes it on the wire.
    pub fn write_resp2(&self, out: &mut Vec<u8>) {
        match self {
            Reply::Status(s) => {
                out.push(b'+');
                out.extend_from_slice(s.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            Reply::Error(s) => {
                out.push(b'-');
                out.extend_from_slice(s.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            Reply::Int(i) => {
                let _ = write!(ByteWriter(out), ":{i}\r\n");
            }
            Reply::Bulk(b) => {
                let _ = write!(ByteWriter(out), "${}\r\n", b.len());
                out.extend_from_slice(b);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Nil => out.extend_from_slice(b"$-1\r\n"),
            Reply::NilArray => out.extend_from_slice(b"*-1\r\n"),
            Reply::Array(v) | Reply::Set(v) => {
                let _ = write!(ByteWriter(out), "*{}\r\n", v.len());
                for x in v {
                    x.write_resp2(out);
                }
            }
            Reply::Map(kv) => {
                let _ = write!(ByteWriter(out), "*{}\r\n", kv.len() * 2);
                for (k, x) in kv {
                    k.write_resp2(out);
                    x.write_resp2(out);
                }
            }
            Reply::Double(d) => Reply::Bulk(format_double(*d).into_bytes()).write_resp2(out),
            Reply::HumanDouble(d) => Reply::Bulk(format_human_double(*d).into_bytes()).write_resp2(out),
            Reply::Verbatim(t) => Reply::Bulk(t.clone()).write_resp2(out),
            Reply::Bool(b) => Reply::Int(*b as i64).write_resp2(out),
        }
    }
}

/// Where a command writes its reply. Commands return a [`Reply`]; a few hot read commands write
/// theirs through this instead (see [`crate::cmd::Direct`]), so that `redis.call` turns
/// what they read into Lua values without building a `Reply` first. `Option<Reply>` is the sink
/// that builds the `Reply`, so a command written this way has one body for both.
pub trait ReplySink {
    /// The whole reply at once (errors, and replies not worth writing piece by piece).
    fn reply(&mut self, r: Reply);
    /// An array of `n` bulk strings, `None` for a nil one (HMGET).
    fn bulks(&mut self, n: usize, items: &mut dyn Iterator<Item = Option<&[u8]>>);
    /// One bulk string, `None` for nil (GET).
    fn bulk(&mut self, b: Option<&[u8]>);
}

impl ReplySink for Option<Reply> {
    fn reply(&mut self, r: Reply) {
        *self = Some(r);
    }
    fn bulks(&mut self, n: usize, items: &mut dyn Iterator<Item = Option<&[u8]>>) {
        let mut v = Vec::with_capacity(n);
        v.extend(items.map(|x| x.map_or(Reply::Nil, |b| Reply::Bulk(b.to_vec()))));
        *self = Some(Reply::Array(v));
    }
    fn bulk(&mut self, b: Option<&[u8]>) {
        *self = Some(b.map_or(Reply::Nil, |b| Reply::Bulk(b.to_vec())));
    }
}

struct ByteWriter<'a>(&'a mut Vec<u8>);
impl std::fmt::Write for ByteWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Formats a double as Redis 7.0's `addReplyDouble` does: `inf`, `-inf`, else `%.17g`.
pub fn format_double(d: f64) -> String {
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    fmt_g(d, 17)
}

/// A double as Redis 7.0's `ld2string(.., LD_STR_HUMAN)` prints it (`addReplyHumanLongDouble`):
/// `%.17Lf` of the value (exact, as the double widened to a `long double` is the same number), the
/// trailing zeros and a trailing dot removed, `-0` printed as `0`.
pub fn format_human_double(d: f64) -> String {
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let s = format!("{d:.17}");
    let s = strip_zeros(&s);
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// C's `printf("%.<prec>g", d)` as glibc prints it (`nan`/`inf` spelled as glibc does).
pub fn fmt_g(d: f64, prec: usize) -> String {
    let mut out = Vec::with_capacity(24);
    write_g(&mut out, d, prec);
    // SAFETY: write_g writes ASCII only (digits, signs, `.`, `e`, and the words of glibc).
    unsafe { String::from_utf8_unchecked(out) }
}

/// [`fmt_g`] appended to `out`, with no allocation of its own when `|d|` is between about 1e-22
/// and 2^127 (every number a script sends, in practice): the `prec` significant digits are the
/// exact value `m * 2^e` scaled by a power of ten and rounded half to even, in 128-bit integers,
/// which is what glibc's exact conversion gives. Anything else takes the general path.
pub fn write_g(out: &mut Vec<u8>, d: f64, prec: usize) {
    let p = prec.max(1);
    if d.is_finite() && d != 0.0 && p <= 17 {
        if d.abs() < POW10_F64[p] && d == (d as i64) as f64 {
            // An integer of at most p digits prints as its digits.
            out.extend_from_slice(itoa::Buffer::new().format(d as i64).as_bytes());
            return;
        }
        if let Some((digits, exp)) = exact_digits(d.abs(), p) {
            if d < 0.0 {
                out.push(b'-');
            }
            write_g_digits(out, digits, exp, p);
            return;
        }
    }
    out.extend_from_slice(fmt_g_general(d, p).as_bytes());
}

/// 10^0 ..= 10^17 as doubles (all exact).
const POW10_F64: [f64; 18] =
    [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17];

/// 10^0 ..= 10^38, every power of ten a `u128` holds.
const POW10: [u128; 39] = {
    let mut t = [1u128; 39];
    let mut i = 1;
    while i < 39 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// The `p` significant digits of `a > 0` (finite) rounded half to even, as an integer of exactly `p`
/// digits, and the decimal exponent of the first: `a ≈ digits * 10^(exp + 1 - p)`. None when the
/// exact arithmetic would not fit in 128 bits.
fn exact_digits(a: f64, p: usize) -> Option<(u128, i32)> {
    let bits = a.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    if biased == 0 {
        return None; // subnormal: far below the range of the fast path
    }
    let m = u128::from((bits & ((1 << 52) - 1)) | (1 << 52));
    // a = m * 2^e, and 2^top <= a < 2^(top + 1): the decimal exponent is within one of top * log10(2).
    let e = biased - 1075;
    let top = e + 52;
    let mut x = (top * 78_913) >> 18; // floor(top * log10(2)), exact for |top| < 2,620
    for _ in 0..3 {
        // digits = round(a * 10^s), with a * 10^s = num / den, both integers.
        let s = p as i32 - 1 - x;
        let mut num = m;
        let mut den = 1u128;
        if s >= 0 {
            num = num.checked_mul(*POW10.get(s as usize)?)?;
        } else {
            den = *POW10.get((-s) as usize)?;
        }
        if e >= 0 {
            if num.leading_zeros() <= e as u32 {
                return None;
            }
            num <<= e;
        } else {
            if den.leading_zeros() <= (-e) as u32 {
                return None;
            }
            den <<= -e;
        }
        // (Over a power of two, when the number has a fraction: a shift and a mask.)
        let (mut q, r) = if s >= 0 && e < 0 { (num >> -e, num & (den - 1)) } else { (num / den, num % den) };
        // Round half to even (glibc rounds the exact value in the default rounding mode).
        if r > den - r || (r == den - r && q & 1 == 1) {
            q += 1;
        }
        if q < POW10[p - 1] {
            x -= 1;
        } else if q >= POW10[p] {
            x += 1;
        } else {
            return Some((q, x));
        }
    }
    None
}

/// `%.<p>g` of a positive number given as its `p` digits and decimal exponent (see
/// [`exact_digits`]): the `%e` style below 10^-4 or from 10^p, else the `%f` style, with trailing
/// zeros of the fraction (and a bare point) removed.
fn write_g_digits(out: &mut Vec<u8>, digits: u128, exp: i32, p: usize) {
    // Exactly p digits (the first is not zero), below 10^17: a u64.
    let mut itoa = itoa::Buffer::new();
    let all = itoa.format(digits as u64).as_bytes();
    // The digits left once the fraction's trailing zeros go (the first digit is never zero).
    let kept = all.iter().rposition(|&c| c != b'0').map_or(1, |i| i + 1);
    if exp < -4 || exp >= p as i32 {
        out.push(all[0]);
        if kept > 1 {
            out.push(b'.');
            out.extend_from_slice(&all[1..kept]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let e = exp.unsigned_abs();
        if e < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(itoa::Buffer::new().format(e).as_bytes());
    } else if exp >= 0 {
        let int = exp as usize + 1;
        out.extend_from_slice(&all[..int]);
        if kept > int {
            out.push(b'.');
            out.extend_from_slice(&all[int..kept]);
        }
    } else {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-exp - 1) as usize));
        out.extend_from_slice(&all[..kept]);
    }
}

/// `%.<p>g` through the standard library's exact formatting: the fallback of [`write_g`].
fn fmt_g_general(d: f64, p: usize) -> String {
    if d.is_nan() {
        return if d.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // An integer of at most p digits prints as its digits (p <= 17 keeps 10^p within i64).
    if p <= 17 && d.fract() == 0.0 && d.abs() < 10f64.powi(p as i32) {
        return (d as i64).to_string();
    }
    // Use exponential formatting to find the decimal exponent after rounding to p digits.
    let e_repr = format!("{:.*e}", p - 1, d);
    let (mantissa, exp) = e_repr.split_once('e').expect("exponent");
    let exp: i32 = exp.parse().expect("exponent digits");
    if exp < -4 || exp >= p as i32 {
        let m = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{:.*}", decimals, d)).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn g_formatting_matches_c() {
        assert_eq!(fmt_g(0.1, 17), "0.10000000000000001");
        assert_eq!(fmt_g(1e20, 17), "1e+20");
        assert_eq!(fmt_g(100.0, 17), "100");
        assert_eq!(fmt_g(1700000000123456.0, 14), "1.7000000001235e+15");
        assert_eq!(fmt_g(0.0001, 17), "0.0001");
        assert_eq!(fmt_g(0.00001, 17), "1.0000000000000001e-05");
        assert_eq!(fmt_g(-2.5, 14), "-2.5");
        assert_eq!(fmt_g(123456789012345678.0, 17), "1.2345678901234568e+17");
        assert_eq!(fmt_g(1e15, 14), "1e+15");
        assert_eq!(fmt_g(1e14, 14), "1e+14");
        assert_eq!(fmt_g(1e13, 14), "10000000000000");
    }

    extern "C" {
        fn snprintf(buf: *mut std::os::raw::c_char, n: usize, fmt: *const std::os::raw::c_char, ...) -> i32;
    }

    /// C's own `%.*g`, through the C library.
    fn c_g(d: f64, prec: usize) -> String {
        let mut buf = [0 as std::os::raw::c_char; 64];
        // SAFETY: the buffer's size is passed; the format takes an int precision and a double.
        let n = unsafe { snprintf(buf.as_mut_ptr(), buf.len(), c"%.*g".as_ptr(), prec as i32, d) };
        let bytes: Vec<u8> = buf[..n as usize].iter().map(|&c| c as u8).collect();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn g_formatting_of_integers_and_fractions_matches_the_c_library() {
        let mut values = vec![1.0, 7.0, 0.5, 2.5, 1e-5, 123.456, 9007199254740992.0, 9007199254740993.0];
        for k in 0..=18 {
            let p = 10f64.powi(k);
            values.extend([p, p - 1.0, p + 1.0, p * 1.5, 1_704_067_200_000.0 + k as f64]);
        }
        for v in values {
            for d in [v, -v] {
                for prec in [1, 2, 6, 13, 14, 15, 16, 17] {
                    assert_eq!(fmt_g(d, prec), c_g(d, prec), "{d} at %.{prec}g");
                }
            }
        }
    }

    #[test]
    fn g_formatting_of_any_double_at_any_precision_matches_the_c_library() {
        // Ties at every precision (rounded half to even), values either side of a power of ten
        // (where the exponent moves when rounding carries), the ends of the 128-bit fast path,
        // and a token bucket's fractional counts.
        let mut values = vec![
            0.5,
            2.5,
            0.125,
            0.375,
            1.25,
            9.5,
            99.5,
            999.5,
            0.000095,
            0.00009999999999999999,
            9.999999999999999e16,
            99999999999999990.0,
            1e-22,
            1e-23,
            1.7e38,
            3.4e38,
            2f64.powi(126),
            2f64.powi(127),
            2f64.powi(128),
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            7.992,
            // cjson's numbers (`%.14g`) at the edges of plain and exponent notation.
            0.0,
            -0.0,
            0.1,
            0.25,
            1e-4,
            2f64.powi(53),
            1e15,
            1e14,
            123456789012345.0,
            1e100,
            0.0001234,
            1.0 / 3.0,
            9.999999999999995,
            99999999999999.5,
            1e21,
            -1.5e-10,
            123456.789,
            0.00012345678901234,
        ];
        // Multiples of 1/8 and three-digit integers scaled by 10^-20 ..= 10^19.
        let mut seed: u64 = 0x1234_5678_9abc_def0;
        for _ in 0..3000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            values.push((seed % 100_000) as f64 / 8.0);
            values.push((seed % 1000) as f64 * 10f64.powi((seed % 40) as i32 - 20));
        }
        for i in 0..2000 {
            values.push(i as f64 * 8.0 / 1000.0);
            values.push(8.0 - i as f64 / 7.0);
        }
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let v = f64::from_bits(seed);
            if v.is_finite() {
                values.push(v);
            }
            // Mostly inside the fast path's range: a 53-bit mantissa scaled by 10^-25 ..= 10^40.
            let m = (seed >> 11) as f64;
            values.push(m * 10f64.powi((seed % 66) as i32 - 40));
        }
        for v in values {
            for d in [v, -v] {
                for prec in 1..=17 {
                    assert_eq!(fmt_g(d, prec), c_g(d, prec), "{d:e} at %.{prec}g");
                }
            }
        }
        assert_eq!(fmt_g(f64::INFINITY, 14), "inf");
        assert_eq!(fmt_g(f64::NEG_INFINITY, 14), "-inf");
    }
}
