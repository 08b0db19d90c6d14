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

/// C's `printf("%.<prec>g", d)` for finite `d` (and `nan`/`inf` spelled as glibc does).
pub fn fmt_g(d: f64, prec: usize) -> String {
    if d.is_nan() {
        return if d.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let p = if prec == 0 { 1 } else { prec };
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
}
