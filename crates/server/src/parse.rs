//! Requests off the wire, as Redis 7.0's `processInputBuffer` reads them: RESP multibulk frames
//! (`*N\r\n$LEN\r\n...`) and inline commands (a line of words, split like redis-cli's `sdssplitargs`),
//! with Redis's limits and `Protocol error: ...` texts, after which the connection is closed.
//!
//! The parser is stateless: each call looks at the unread bytes from their start and either finds one
//! whole request, asks for more bytes, or names the protocol error. Arguments of a multibulk frame are
//! ranges into the buffer (no copy); an inline command's are unescaped, so they are owned.
use std::ops::Range;

/// Longest inline request, or multibulk/bulk header line, without its end (`PROTO_INLINE_MAX_SIZE`).
pub const INLINE_MAX: usize = 64 * 1024;
/// Largest bulk argument (`proto-max-bulk-len`, 512 MB).
pub const MAX_BULK: i64 = 512 * 1024 * 1024;
/// Before authentication: at most this many arguments...
const UNAUTH_MAX_ARGS: i64 = 10;
/// ...each at most this long.
const UNAUTH_MAX_BULK: i64 = 16384;

/// What the front of the buffer holds.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// Not a whole request yet: read more.
    Incomplete,
    /// `n` bytes that make no command (an empty line, `*0`, `*-1`): drop them.
    Skip(usize),
    /// A multibulk request of `n` bytes whose arguments are the ranges written to the caller's vector.
    Multibulk(usize),
    /// An inline request of `n` bytes and its arguments.
    Inline(usize, Vec<Vec<u8>>),
    /// A protocol error: reply `-ERR <text>` and close the connection.
    Error(String),
}

/// Finds the first `byte` before any NUL, as C's `strchr` does on Redis's NUL-terminated query buffer.
#[inline]
fn strchr(buf: &[u8], byte: u8) -> Option<usize> {
    let i = buf.iter().position(|&c| c == byte || c == 0)?;
    (buf[i] == byte).then_some(i)
}

/// Redis's `string2ll`: a decimal without `+`, blanks or leading zeros, in range.
fn string2ll(b: &[u8]) -> Option<i64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    let (neg, digits) = match b[0] {
        b'-' => (true, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if digits[0] == b'0' && (digits.len() > 1 || neg) {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        let d = (d - b'0') as i64;
        v = v.checked_mul(10)?;
        v = if neg { v.checked_sub(d)? } else { v.checked_add(d)? };
    }
    Some(v)
}

/// Reads the request at the front of `buf`. `authenticated` is false while a `--requirepass` server
/// waits for AUTH, when Redis refuses long requests outright. A multibulk request's arguments are
/// written to `args` as ranges of `buf`.
pub fn next(buf: &[u8], authenticated: bool, args: &mut Vec<Range<usize>>) -> Frame {
    match buf.first() {
        None => Frame::Incomplete,
        Some(b'*') => multibulk(buf, authenticated, args),
        Some(_) => inline(buf),
    }
}

fn inline(buf: &[u8]) -> Frame {
    let Some(nl) = strchr(buf, b'\n') else {
        if buf.len() > INLINE_MAX {
            return Frame::Error("Protocol error: too big inline request".into());
        }
        return Frame::Incomplete;
    };
    let line = if nl > 0 && buf[nl - 1] == b'\r' { &buf[..nl - 1] } else { &buf[..nl] };
    match limitlab_emulator::split_args::split_args(line) {
        None => Frame::Error("Protocol error: unbalanced quotes in request".into()),
        Some(a) if a.is_empty() => Frame::Skip(nl + 1),
        Some(a) => Frame::Inline(nl + 1, a),
    }
}

fn multibulk(buf: &[u8], authenticated: bool, args: &mut Vec<Range<usize>>) -> Frame {
    args.clear();
    let Some(cr) = strchr(buf, b'\r') else {
        if buf.len() > INLINE_MAX {
            return Frame::Error("Protocol error: too big mbulk count string".into());
        }
        return Frame::Incomplete;
    };
    if cr + 1 >= buf.len() {
        return Frame::Incomplete;
    }
    let count = match string2ll(&buf[1..cr]) {
        Some(n) if n <= i32::MAX as i64 => n,
        _ => return Frame::Error("Protocol error: invalid multibulk length".into()),
    };
    if count > UNAUTH_MAX_ARGS && !authenticated {
        return Frame::Error("Protocol error: unauthenticated multibulk length".into());
    }
    let mut pos = cr + 2;
    if count <= 0 {
        return Frame::Skip(pos);
    }
    for _ in 0..count {
        let rest = &buf[pos..];
        let Some(cr) = strchr(rest, b'\r') else {
            if rest.len() > INLINE_MAX {
                return Frame::Error("Protocol error: too big bulk count string".into());
            }
            return Frame::Incomplete;
        };
        if cr + 1 >= rest.len() {
            return Frame::Incomplete;
        }
        if rest[0] != b'$' {
            return Frame::Error(format!("Protocol error: expected '$', got '{}'", rest[0] as char));
        }
        let len = match string2ll(&rest[1..cr]) {
            Some(n) if (0..=MAX_BULK).contains(&n) => n as usize,
            _ => return Frame::Error("Protocol error: invalid bulk length".into()),
        };
        if len as i64 > UNAUTH_MAX_BULK && !authenticated {
            return Frame::Error("Protocol error: unauthenticated bulk length".into());
        }
        let start = pos + cr + 2;
        // Redis skips the two bytes after the data without looking at them.
        if buf.len() < start + len + 2 {
            return Frame::Incomplete;
        }
        args.push(start..start + len);
        pos = start + len + 2;
    }
    Frame::Multibulk(pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(b: &[u8]) -> (Frame, Vec<Vec<u8>>) {
        let mut r = Vec::new();
        let f = next(b, true, &mut r);
        (f, r.into_iter().map(|x| b[x].to_vec()).collect())
    }

    #[test]
    fn frames() {
        assert_eq!(
            parse(b"*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nrest"),
            (Frame::Multibulk(22), vec![b"ECHO".to_vec(), b"hi".to_vec()])
        );
        assert_eq!(parse(b"*2\r\n$4\r\nECHO\r\n$2\r\nhi\r").0, Frame::Incomplete);
        assert_eq!(parse(b"*1\r\n$4\r\nPINGxx").0, Frame::Multibulk(14));
        assert_eq!(parse(b"*0\r\nPING").0, Frame::Skip(4));
        assert_eq!(parse(b"*-5\r\n").0, Frame::Skip(5));
        assert_eq!(parse(b"PING\r\nx").0, Frame::Inline(6, vec![b"PING".to_vec()]));
        assert_eq!(parse(b"set a 'b c'\n").0, Frame::Inline(12, vec![b"set".to_vec(), b"a".to_vec(), b"b c".to_vec()]));
        assert_eq!(parse(b"  \r\n").0, Frame::Skip(4));
        assert_eq!(parse(b"ping a\0b\r\n").0, Frame::Incomplete);
        assert_eq!(parse(b"*1\n$4\nPING\n").0, Frame::Incomplete);
        let err = |s: &str| Frame::Error(format!("Protocol error: {s}"));
        assert_eq!(parse(b"*abc\r\n").0, err("invalid multibulk length"));
        assert_eq!(parse(b"*2147483648\r\n").0, err("invalid multibulk length"));
        assert_eq!(parse(b"*2147483647\r\n").0, Frame::Incomplete);
        assert_eq!(parse(b"*01\r\n").0, err("invalid multibulk length"));
        assert_eq!(parse(b"*+1\r\n").0, err("invalid multibulk length"));
        assert_eq!(parse(b"*1\r\n$-1\r\n").0, err("invalid bulk length"));
        assert_eq!(parse(b"*1\r\n$ 4\r\n").0, err("invalid bulk length"));
        assert_eq!(parse(b"*1\r\n$536870913\r\n").0, err("invalid bulk length"));
        assert_eq!(parse(b"*1\r\n$536870912\r\n").0, Frame::Incomplete);
        assert_eq!(parse(b"*1\r\nx3\r\n").0, err("expected '$', got 'x'"));
        assert_eq!(parse(b"set \"a b\r\n").0, err("unbalanced quotes in request"));
        assert_eq!(parse(&vec![b'a'; INLINE_MAX + 1]).0, err("too big inline request"));
        let mut big = b"*".to_vec();
        big.extend(vec![b'1'; INLINE_MAX + 1]);
        assert_eq!(parse(&big).0, err("too big mbulk count string"));
        let mut big = b"*1\r\n$".to_vec();
        big.extend(vec![b'1'; INLINE_MAX + 1]);
        assert_eq!(parse(&big).0, err("too big bulk count string"));
        let mut r = Vec::new();
        assert_eq!(next(b"*11\r\n", false, &mut r), err("unauthenticated multibulk length"));
        assert_eq!(next(b"*10\r\n", false, &mut r), Frame::Incomplete);
        assert_eq!(next(b"*1\r\n$16385\r\n", false, &mut r), err("unauthenticated bulk length"));
        assert_eq!(next(b"*1\r\n$16384\r\n", false, &mut r), Frame::Incomplete);
    }
}
