//! Replies onto the wire in RESP2 or RESP3 (after `HELLO 3`), as Redis 7.0's `addReply*` functions
//! write them: under RESP3 maps (`%`), sets (`~`), doubles (`,`), booleans (`#`) and a single null
//! (`_`); under RESP2 maps and sets are flat arrays, doubles bulk strings in `%.17g`, and nil is
//! `$-1` or `*-1`.
use limitlab_emulator::reply::format_double;
use limitlab_emulator::Reply;

/// Appends `n` in decimal.
#[inline]
pub fn push_int(out: &mut Vec<u8>, n: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// `<type><n>\r\n`.
#[inline]
fn header(out: &mut Vec<u8>, t: u8, n: i64) {
    out.push(t);
    push_int(out, n);
    out.extend_from_slice(b"\r\n");
}

/// A bulk string.
#[inline]
pub fn write_bulk(out: &mut Vec<u8>, b: &[u8]) {
    header(out, b'$', b.len() as i64);
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
}

/// An error line: Redis turns CR and LF inside an error text into spaces.
pub fn write_error(out: &mut Vec<u8>, text: &str) {
    out.push(b'-');
    out.extend(text.bytes().map(|c| if c == b'\r' || c == b'\n' { b' ' } else { c }));
    out.extend_from_slice(b"\r\n");
}

/// A verbatim text (`CLUSTER INFO`, `CLUSTER NODES`): `=LEN\r\ntxt:...` under RESP3, a bulk string
/// under RESP2.
pub fn write_verbatim(out: &mut Vec<u8>, text: &[u8], resp3: bool) {
    if !resp3 {
        return write_bulk(out, text);
    }
    header(out, b'=', text.len() as i64 + 4);
    out.extend_from_slice(b"txt:");
    out.extend_from_slice(text);
    out.extend_from_slice(b"\r\n");
}

/// One reply in the client's protocol.
pub fn write(reply: &Reply, resp3: bool, out: &mut Vec<u8>) {
    match reply {
        Reply::Status(s) => {
            out.push(b'+');
            out.extend_from_slice(s.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        Reply::Error(s) => write_error(out, s),
        Reply::Int(i) => header(out, b':', *i),
        Reply::Bulk(b) => write_bulk(out, b),
        Reply::Nil if resp3 => out.extend_from_slice(b"_\r\n"),
        Reply::NilArray if resp3 => out.extend_from_slice(b"_\r\n"),
        Reply::Nil => out.extend_from_slice(b"$-1\r\n"),
        Reply::NilArray => out.extend_from_slice(b"*-1\r\n"),
        Reply::Array(v) => {
            header(out, b'*', v.len() as i64);
            for x in v {
                write(x, resp3, out);
            }
        }
        Reply::Set(v) => {
            header(out, if resp3 { b'~' } else { b'*' }, v.len() as i64);
            for x in v {
                write(x, resp3, out);
            }
        }
        Reply::Map(kv) => {
            if resp3 {
                header(out, b'%', kv.len() as i64);
            } else {
                header(out, b'*', kv.len() as i64 * 2);
            }
            for (k, x) in kv {
                write(k, resp3, out);
                write(x, resp3, out);
            }
        }
        Reply::Double(d) => {
            let text = format_double(*d);
            if resp3 {
                out.push(b',');
                out.extend_from_slice(text.as_bytes());
                out.extend_from_slice(b"\r\n");
            } else {
                write_bulk(out, text.as_bytes());
            }
        }
        Reply::HumanDouble(d) => {
            let text = limitlab_emulator::reply::format_human_double(*d);
            if resp3 {
                out.push(b',');
                out.extend_from_slice(text.as_bytes());
                out.extend_from_slice(b"\r\n");
            } else {
                write_bulk(out, text.as_bytes());
            }
        }
        Reply::Verbatim(t) => write_verbatim(out, t, resp3),
        Reply::Bool(b) if resp3 => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
        Reply::Bool(b) => header(out, b':', *b as i64),
    }
}

/// Whether `r` holds more than `n` elements at any depth (counting only as far as needed): the
/// replies worth streaming. A limiter's few-element reply is written whole, as before.
pub fn larger_than(r: &Reply, n: usize) -> bool {
    fn take(len: usize, left: &mut usize) -> bool {
        if len > *left {
            return true;
        }
        *left -= len;
        false
    }
    fn walk(r: &Reply, left: &mut usize) -> bool {
        match r {
            Reply::Array(v) | Reply::Set(v) => take(v.len(), left) || v.iter().any(|x| walk(x, left)),
            Reply::Map(kv) => take(kv.len() * 2, left) || kv.iter().any(|(k, x)| walk(k, left) || walk(x, left)),
            _ => false,
        }
    }
    let mut left = n;
    walk(r, &mut left)
}

/// A reply written out a piece at a time. [`Stream::fill`] appends to a buffer until it holds a
/// chunk or the reply is done, taking the reply apart as it goes: each element's bytes are freed
/// once encoded, so a reply of millions of elements is never held both as values and as bytes,
/// and the connection hands each chunk to the socket before encoding more (what Redis does from
/// its reply list). The bytes are exactly [`write()`]'s.
pub struct Stream {
    stack: Vec<Pending>,
    resp3: bool,
}

enum Pending {
    One(Reply),
    Items(std::vec::IntoIter<Reply>),
    Pairs(std::vec::IntoIter<(Reply, Reply)>),
}

impl Stream {
    pub fn new(reply: Reply, resp3: bool) -> Stream {
        Stream { stack: vec![Pending::One(reply)], resp3 }
    }

    /// Appends to `out` until it holds at least `chunk` bytes (false: there is more) or the reply
    /// is written (true). Each call writes something, whatever `out` held.
    pub fn fill(&mut self, out: &mut Vec<u8>, chunk: usize) -> bool {
        let start = out.len();
        while out.len() < chunk || out.len() == start {
            let next = match self.stack.last_mut() {
                None => return true,
                Some(Pending::Items(it)) => it.next(),
                Some(Pending::Pairs(it)) => it.next().map(|(k, v)| {
                    self.stack.push(Pending::One(v));
                    k
                }),
                Some(Pending::One(_)) => match self.stack.pop() {
                    Some(Pending::One(r)) => Some(r),
                    _ => unreachable!("the top is a single reply"),
                },
            };
            match next {
                None => {
                    self.stack.pop();
                }
                Some(r) => self.open(r, out),
            }
        }
        self.stack.is_empty()
    }

    /// Writes a scalar whole, or an aggregate's header with its elements to follow.
    fn open(&mut self, r: Reply, out: &mut Vec<u8>) {
        let resp3 = self.resp3;
        match r {
            Reply::Array(v) => {
                header(out, b'*', v.len() as i64);
                self.stack.push(Pending::Items(v.into_iter()));
            }
            Reply::Set(v) => {
                header(out, if resp3 { b'~' } else { b'*' }, v.len() as i64);
                self.stack.push(Pending::Items(v.into_iter()));
            }
            Reply::Map(kv) => {
                let n = kv.len() as i64;
                if resp3 {
                    header(out, b'%', n);
                } else {
                    header(out, b'*', n * 2);
                }
                self.stack.push(Pending::Pairs(kv.into_iter()));
            }
            scalar => write(&scalar, resp3, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_counted_at_every_depth() {
        let flat = Reply::Array((0..10).map(Reply::Int).collect());
        assert!(!larger_than(&flat, 10) && larger_than(&flat, 9));
        let nested = Reply::Array(vec![Reply::Int(1), Reply::Map(vec![(Reply::Int(2), flat.clone())])]);
        // 2 + 2 + 10 elements.
        assert!(!larger_than(&nested, 14) && larger_than(&nested, 13));
        assert!(!larger_than(&Reply::bulk("x"), 0));
    }

    /// Streamed in chunks of any size, a reply's bytes are `write`'s.
    #[test]
    fn a_streamed_reply_is_written_byte_for_byte() {
        let nested = Reply::Array(vec![
            Reply::Int(1),
            Reply::Map(vec![
                (Reply::bulk("a"), Reply::Array(vec![Reply::Nil, Reply::Double(2.5)])),
                (Reply::Array(vec![]), Reply::Set(vec![Reply::bulk("x"), Reply::Bool(false)])),
            ]),
            Reply::Array((0..300).map(|i| Reply::bulk(i.to_string())).collect()),
            Reply::err("ERR x"),
            Reply::NilArray,
            Reply::Map(vec![]),
        ]);
        for r in [nested, Reply::Int(7), Reply::Array(vec![]), Reply::bulk("")] {
            for resp3 in [false, true] {
                let mut whole = Vec::new();
                write(&r, resp3, &mut whole);
                for chunk in [0, 1, 2, 7, 64, 1 << 20] {
                    let (mut s, mut got, mut out) = (Stream::new(r.clone(), resp3), Vec::new(), Vec::new());
                    let mut rounds = 0;
                    loop {
                        let done = s.fill(&mut out, chunk);
                        assert!(done || out.len() >= chunk);
                        got.append(&mut out);
                        rounds += 1;
                        if done {
                            break;
                        }
                    }
                    assert_eq!(got, whole, "{r:?} resp3 {resp3} chunk {chunk}");
                    if chunk == 1 << 20 {
                        assert_eq!(rounds, 1);
                    }
                }
            }
        }
    }

    fn both(r: &Reply) -> (String, String) {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        write(r, false, &mut a);
        write(r, true, &mut b);
        (String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap())
    }

    #[test]
    fn shapes() {
        assert_eq!(both(&Reply::Int(-12)), (":-12\r\n".into(), ":-12\r\n".into()));
        assert_eq!(both(&Reply::Int(i64::MIN)).0, ":-9223372036854775808\r\n");
        assert_eq!(both(&Reply::Nil), ("$-1\r\n".into(), "_\r\n".into()));
        assert_eq!(both(&Reply::NilArray), ("*-1\r\n".into(), "_\r\n".into()));
        assert_eq!(both(&Reply::Double(1.5)), ("$3\r\n1.5\r\n".into(), ",1.5\r\n".into()));
        assert_eq!(both(&Reply::Double(f64::INFINITY)).1, ",inf\r\n");
        let m = Reply::Map(vec![(Reply::bulk("a"), Reply::Int(1))]);
        assert_eq!(both(&m), ("*2\r\n$1\r\na\r\n:1\r\n".into(), "%1\r\n$1\r\na\r\n:1\r\n".into()));
        assert_eq!(both(&Reply::Set(vec![Reply::bulk("x")])).1, "~1\r\n$1\r\nx\r\n");
        assert_eq!(both(&Reply::Bool(true)), (":1\r\n".into(), "#t\r\n".into()));
        assert_eq!(both(&Reply::err("ERR a\r\nb")).0, "-ERR a  b\r\n");
        let mut v = Vec::new();
        write_verbatim(&mut v, b"k:v\r\n", true);
        assert_eq!(v, b"=9\r\ntxt:k:v\r\n\r\n");
    }
}
