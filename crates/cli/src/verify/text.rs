//! Cases as redis-cli input lines, and replies as short readable text.
use std::fmt::Write as _;

use limitlab_emulator::Reply;

/// One argument as redis-cli reads it (`sdssplitargs`): bare when it is plain printable ASCII,
/// otherwise in double quotes with `\"`, `\\`, `\n`, `\r`, `\t`, `\a`, `\b` and `\xHH` escapes.
pub fn quote(arg: &[u8]) -> String {
    let bare = !arg.is_empty() && arg.iter().all(|&b| (0x21..0x7f).contains(&b) && !matches!(b, b'"' | b'\'' | b'\\'));
    if bare {
        return String::from_utf8_lossy(arg).into_owned();
    }
    let mut s = String::with_capacity(arg.len() + 2);
    s.push('"');
    for &b in arg {
        match b {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            0x07 => s.push_str("\\a"),
            0x08 => s.push_str("\\b"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s.push('"');
    s
}

/// A command line: the quoted arguments separated by spaces.
pub fn line(args: &[Vec<u8>]) -> String {
    args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
}

/// A reply in one line: `(integer) 3`, `"text"`, `(nil)`, `(error) ERR ...`, `[1, "a"]`.
pub fn show(r: &Reply) -> String {
    let mut s = String::new();
    show_into(r, &mut s);
    s
}

fn show_into(r: &Reply, s: &mut String) {
    match r {
        Reply::Status(x) => {
            let _ = write!(s, "(status) {x}");
        }
        Reply::Error(x) => {
            let _ = write!(s, "(error) {x}");
        }
        Reply::Int(i) => {
            let _ = write!(s, "(integer) {i}");
        }
        Reply::Bulk(b) | Reply::Verbatim(b) => {
            let q = quote(b);
            if q.starts_with('"') {
                s.push_str(&q);
            } else {
                let _ = write!(s, "\"{q}\"");
            }
        }
        Reply::Nil => s.push_str("(nil)"),
        Reply::NilArray => s.push_str("(nil array)"),
        Reply::Double(d) => {
            let _ = write!(s, "(double) {}", limitlab_emulator::reply::format_double(*d));
        }
        Reply::HumanDouble(d) => {
            let _ = write!(s, "(double) {}", limitlab_emulator::reply::format_human_double(*d));
        }
        Reply::Bool(b) => {
            let _ = write!(s, "(boolean) {b}");
        }
        Reply::Array(v) | Reply::Set(v) => {
            s.push('[');
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                show_into(x, s);
            }
            s.push(']');
        }
        Reply::Map(kv) => {
            s.push('{');
            for (i, (k, x)) in kv.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                show_into(k, s);
                s.push_str(": ");
                show_into(x, s);
            }
            s.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use limitlab_emulator::split_args::split_args;

    #[test]
    fn quoted_arguments_split_back_to_themselves() {
        let args: Vec<Vec<u8>> = vec![
            b"SET".to_vec(),
            b"k".to_vec(),
            b"".to_vec(),
            b"a b".to_vec(),
            b"\"q\"".to_vec(),
            b"'".to_vec(),
            b"\\".to_vec(),
            b"\x00\xff\x07\x08\t\r\n".to_vec(),
            "h\u{e9}llo".as_bytes().to_vec(),
            b"return redis.call('GET', KEYS[1])\nreturn 1".to_vec(),
        ];
        let l = line(&args);
        assert_eq!(split_args(l.as_bytes()), Some(args));
        assert_eq!(quote(b"rate:{u1}"), "rate:{u1}");
        assert_eq!(quote(b""), "\"\"");
    }

    #[test]
    fn replies_read_like_redis_cli() {
        let r = Reply::Array(vec![Reply::Int(1), Reply::bulk("a b"), Reply::Nil, Reply::err("ERR x")]);
        assert_eq!(show(&r), "[(integer) 1, \"a b\", (nil), (error) ERR x]");
        assert_eq!(show(&Reply::bulk("ok")), "\"ok\"");
    }
}
