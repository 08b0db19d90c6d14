//! Replies onto the wire in RESP2 or RESP3 (after `HELLO 3`), as Redis 7.0's `addReply*` functions
//! write them: under RESP3 maps (`%`), sets (`~`), doubles (`,`), booleans (`#`) and a single null
//! (`_`); under RESP2 maps and sets are flat arrays, doubles bulk strings in `%.17g`, and nil is
//! `$-1` or `*-1`.
use crate::emulator::reply::format_double;
use crate::emulator::Reply;

/// Appends `n` in decimal.
#[inline]
pub fn push_int(out: &mut Vec<u8>, n: i64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let neg = n < 0;
    let mut v = n.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if neg {
        out.push(b'-');
    }
    out.extend_from_slice(&buf[i..]);
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
        Reply::Bool(b) if resp3 => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
        Reply::Bool(b) => header(out, b':', *b as i64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
