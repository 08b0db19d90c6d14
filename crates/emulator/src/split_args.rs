//! Redis's `sdssplitargs`: how redis-cli (`limitlab cli`) and an inline request to a server
//! (`limitlab serve`) split one line of text into arguments.
use crate::keyspace::is_c_space;

/// Splits one line into arguments exactly as Redis's `sdssplitargs` does (the function redis-cli uses).
///
/// Unquoted words end at space, tab, CR or LF; blanks between words are anything C's `isspace` accepts.
/// In double quotes `\n \r \t \b \a` and `\xHH` are escapes and any other `\c` stands for `c`; in single
/// quotes only `\'` is an escape. A closing quote must be followed by a blank or the end of the line, and
/// an unclosed quote makes the whole line invalid: both give `None`. Quotes may start in the middle of a
/// word (`ab"c d"` is the one argument `abc d`).
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    // A C string ends at its first NUL.
    let line = match line.iter().position(|&b| b == 0) {
        Some(n) => &line[..n],
        None => line,
    };
    let at = |i: usize| -> u8 { line.get(i).copied().unwrap_or(0) };
    let mut args = Vec::new();
    let mut p = 0usize;
    loop {
        while p < line.len() && is_c_space(line[p]) {
            p += 1;
        }
        if p >= line.len() {
            return Some(args);
        }
        let mut cur = Vec::new();
        let (mut inq, mut insq) = (false, false);
        loop {
            let c = at(p);
            if inq {
                if c == b'\\' && at(p + 1) == b'x' && at(p + 2).is_ascii_hexdigit() && at(p + 3).is_ascii_hexdigit() {
                    cur.push(hex_val(at(p + 2)) * 16 + hex_val(at(p + 3)));
                    p += 3;
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    cur.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return None;
                } else {
                    cur.push(c);
                }
            } else if insq {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return None;
                } else {
                    cur.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => {
                        if c != 0 {
                            p += 1;
                        }
                        break;
                    }
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    other => cur.push(other),
                }
            }
            p += 1;
        }
        args.push(cur);
    }
}

fn hex_val(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        _ => b - b'A' + 10,
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> Option<Vec<String>> {
        split_args(s.as_bytes()).map(|v| v.into_iter().map(|a| String::from_utf8_lossy(&a).into_owned()).collect())
    }

    fn sv(v: &[&str]) -> Option<Vec<String>> {
        Some(v.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn splits_like_sdssplitargs() {
        assert_eq!(split("set a 1"), sv(&["set", "a", "1"]));
        assert_eq!(split("  \t "), sv(&[]));
        assert_eq!(split(""), sv(&[]));
        assert_eq!(split(r#"echo "a b" 'c d'"#), sv(&["echo", "a b", "c d"]));
        assert_eq!(split(r#"echo "\n\r\t\b\a\\\"\q""#), sv(&["echo", "\n\r\t\x08\x07\\\"q"]));
        assert_eq!(split(r#"echo "\x41\x4a\x4""#), sv(&["echo", "AJx4"]));
        assert_eq!(split(r#"echo 'it\'s' 'a\nb'"#), sv(&["echo", "it's", "a\\nb"]));
        assert_eq!(split(r#"echo ab"c d"ef"#), None, "closing quote followed by a letter");
        assert_eq!(split(r#"echo ab"c d""#), sv(&["echo", "abc d"]));
        assert_eq!(split(r#"echo 'it''s'"#), None);
        assert_eq!(split(r#"set "x"#), None);
        assert_eq!(split("set 'x"), None);
        assert_eq!(split("echo \"a\"\x0b z"), sv(&["echo", "a", "z"]));
        assert_eq!(split("ping a\x0bb"), sv(&["ping", "a\x0bb"]));
        assert_eq!(split("ping\r"), sv(&["ping"]));
        assert_eq!(split("echo x\0y"), sv(&["echo", "x"]));
        assert_eq!(split(r#""""#), sv(&[""]));
        assert_eq!(split_args(br#"echo "\x00\xff""#), Some(vec![b"echo".to_vec(), vec![0, 0xff]]));
    }
}
