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
/// Largest bulk argument by default (`proto-max-bulk-len`, 512 MB; CONFIG SET changes it).
pub const MAX_BULK: i64 = 512 * 1024 * 1024;
/// A bulk argument at least this long is read into a query buffer of its own
/// (`PROTO_MBULK_BIG_ARG`): the bytes before it no longer count in the buffer.
const BIG_ARG: usize = 32 * 1024;
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
/// waits for AUTH, when Redis refuses long requests outright; `max_bulk` is `proto-max-bulk-len`.
/// A multibulk request's arguments are written to `args` as ranges of `buf`.
pub fn next(buf: &[u8], authenticated: bool, max_bulk: i64, args: &mut Vec<Range<usize>>) -> Frame {
    match buf.first() {
        None => Frame::Incomplete,
        Some(b'*') => multibulk(buf, authenticated, max_bulk, args),
        Some(_) => inline(buf),
    }
}

/// Whether a whole request outgrew `client-query-buffer-limit` while it was read: Redis reads an
/// argument of 32 KB or more into a query buffer of its own, and closes the client once that buffer
/// (the argument and its CRLF) is over the limit, before running anything in it.
pub fn big_argument_over(args: &[Range<usize>], limit: i64) -> bool {
    args.iter().any(|r| r.len() >= BIG_ARG && (r.len() + 2) as i64 > limit)
}

/// The bytes of an incomplete request that Redis's query buffer would hold: what follows the
/// arguments already read whole, or, while a big argument (32 KB or more) is being read, that
/// argument's bytes so far (Redis moves it to a buffer of its own). `client-query-buffer-limit`
/// applies to this. Only called when the unread bytes are near the limit.
pub fn pending_query_bytes(buf: &[u8]) -> usize {
    if buf.first() != Some(&b'*') {
        return buf.len();
    }
    let Some(cr) = strchr(buf, b'\r') else { return buf.len() };
    let Some(count) = string2ll(&buf[1..cr]) else { return buf.len() };
    let mut pos = cr + 2;
    for _ in 0..count.max(0) {
        let rest = buf.get(pos..).unwrap_or_default();
        let Some(cr) = strchr(rest, b'\r') else { return rest.len() };
        let Some(len) = string2ll(rest.get(1..cr).unwrap_or_default()).filter(|n| *n >= 0) else {
            return rest.len();
        };
        let (start, len) = (pos + cr + 2, len as usize);
        if buf.len() < start + len + 2 {
            return if len >= BIG_ARG { buf.len().saturating_sub(start) } else { rest.len() };
        }
        pos = start + len + 2;
    }
    buf.len().saturating_sub(pos)
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

fn multibulk(buf: &[u8], authenticated: bool, max_bulk: i64, args: &mut Vec<Range<usize>>) -> Frame {
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
            Some(n) if (0..=max_bulk).contains(&n) => n as usize,
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
        let f = next(b, true, MAX_BULK, &mut r);
        (f, r.into_iter().map(|x| b[x].to_vec()).collect())
    }

    /// What Redis's query buffer holds of an incomplete request: after the whole arguments, or a
    /// big argument's own bytes.
    #[test]
    fn pending_query_bytes_follow_redis_buffers() {
        let mut big = b"*2\r\n$4\r\nECHO\r\n$40000\r\n".to_vec();
        big.extend(vec![b'x'; 1000]);
        assert_eq!(pending_query_bytes(&big), 1000);
        let small = b"*2\r\n$4\r\nECHO\r\n$400\r\nabc";
        assert_eq!(pending_query_bytes(small), 9);
        assert_eq!(pending_query_bytes(b"PING"), 4);
        let r = vec![0..10usize, 0..40_000];
        assert!(big_argument_over(&r, 39_000) && !big_argument_over(&r, 40_002));
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
        // A smaller proto-max-bulk-len (CONFIG SET) refuses more.
        assert_eq!(next(b"*1\r\n$1048577\r\n", true, 1 << 20, &mut Vec::new()), err("invalid bulk length"));
        assert_eq!(next(b"*1\r\n$1048576\r\n", true, 1 << 20, &mut Vec::new()), Frame::Incomplete);
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
        assert_eq!(next(b"*11\r\n", false, MAX_BULK, &mut r), err("unauthenticated multibulk length"));
        assert_eq!(next(b"*10\r\n", false, MAX_BULK, &mut r), Frame::Incomplete);
        assert_eq!(next(b"*1\r\n$16385\r\n", false, MAX_BULK, &mut r), err("unauthenticated bulk length"));
        assert_eq!(next(b"*1\r\n$16384\r\n", false, MAX_BULK, &mut r), Frame::Incomplete);
    }
}
