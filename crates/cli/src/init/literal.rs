//! Reading a Lua script out of the source file that carries it: find the assignment that names it
//! (the anchor), then decode the string literal that follows as the language itself would (a
//! JavaScript string or template literal, a Python string). What the decoder cannot be sure of (a
//! template that interpolates `${...}`, a Python f-string or `\N{...}`) is refused, never guessed.

/// A literal found in a source file: its decoded text and where it sits.
#[derive(Clone, Debug, PartialEq)]
pub struct Literal {
    /// The value the program sees.
    pub text: String,
    /// Byte offsets in the file: from the opening quote to just past the closing one.
    pub start: usize,
    pub end: usize,
}

/// Why a literal could not be read.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// No assignment or property of that name.
    NoAnchor,
    /// The anchor is followed by something that is not a string literal (a call, a variable).
    NotALiteral(String),
    /// A template literal with `${...}`: its text is only known when the program runs.
    Interpolated(String),
    /// A malformed or unsupported literal (unterminated, a bad escape, an f-string, ...).
    Bad(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NoAnchor => write!(f, "not found"),
            Refusal::NotALiteral(s) => write!(f, "not a string literal: `{s}`"),
            Refusal::Interpolated(s) => {
                write!(f, "the template literal interpolates `{s}`, so its text is only known at run time")
            }
            Refusal::Bad(s) => write!(f, "{s}"),
        }
    }
}

fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The byte offset just past `name =` or `name:` where `name` stands as a whole identifier
/// (`const incrTtlLuaScript = `, `increment: `, `PUT_ITEM = `), skipping whitespace after it. The
/// first such place in the file.
pub fn find_anchor(src: &str, name: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = src[from..].find(name).map(|i| i + from) {
        from = i + name.len();
        if src[..i].chars().next_back().is_some_and(ident_char) {
            continue;
        }
        let rest = &src[from..];
        if rest.chars().next().is_some_and(ident_char) {
            continue;
        }
        let trimmed = rest.trim_start_matches([' ', '\t']);
        let at = from + rest.len() - trimmed.len();
        let assign = (trimmed.starts_with('=') && !trimmed.starts_with("==")) || trimmed.starts_with(':');
        if assign {
            let after = &src[at + 1..];
            let value = after.trim_start();
            return Some(at + 1 + after.len() - value.len());
        }
    }
    None
}

/// The JavaScript string literal at `at` (`'...'`, `"..."` or a template literal without `${}`).
pub fn js_at(src: &str, at: usize) -> Result<Literal, Refusal> {
    let quote = match src[at..].chars().next() {
        Some(q @ ('\'' | '"' | '`')) => q,
        _ => return Err(Refusal::NotALiteral(snippet(&src[at..]))),
    };
    let mut out = String::new();
    let mut chars = src[at + 1..].char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let pos = at + 1 + i;
        match c {
            c if c == quote => return Ok(Literal { text: out, start: at, end: pos + 1 }),
            '\\' => {
                let Some((_, e)) = chars.next() else { break };
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'v' => out.push('\u{b}'),
                    '0' if !chars.peek().is_some_and(|(_, d)| d.is_ascii_digit()) => out.push('\0'),
                    '1'..='9' | '0' => return Err(Refusal::Bad(format!("an octal escape `\\{e}` at byte {pos}"))),
                    'x' => out.push(hex_char(&mut chars, 2, pos)?),
                    'u' => {
                        if chars.peek().is_some_and(|(_, d)| *d == '{') {
                            chars.next();
                            let mut digits = String::new();
                            for (_, d) in chars.by_ref() {
                                if d == '}' {
                                    break;
                                }
                                digits.push(d);
                            }
                            out.push(code_point(&digits, pos)?);
                        } else {
                            let first = hex_u32(&mut chars, 4, pos)?;
                            out.push(utf16(first, &mut chars, pos)?);
                        }
                    }
                    // a line continuation: the backslash and the line break are dropped
                    '\n' | '\u{2028}' | '\u{2029}' => {}
                    '\r' => {
                        if chars.peek().is_some_and(|(_, d)| *d == '\n') {
                            chars.next();
                        }
                    }
                    other => out.push(other),
                }
            }
            '$' if quote == '`' && chars.peek().is_some_and(|(_, d)| *d == '{') => {
                let inner: String = src[pos..].chars().take_while(|&d| d != '}').collect();
                return Err(Refusal::Interpolated(format!("{inner}}}")));
            }
            // a template literal reads CR LF and CR as LF
            '\r' if quote == '`' => {
                if chars.peek().is_some_and(|(_, d)| *d == '\n') {
                    chars.next();
                }
                out.push('\n');
            }
            '\n' | '\r' if quote != '`' => {
                return Err(Refusal::Bad(format!("a line break inside a {quote}-quoted string at byte {pos}")))
            }
            c => out.push(c),
        }
    }
    Err(Refusal::Bad(format!("the literal opened at byte {at} is never closed")))
}

/// The Python string literal at `at`: `'...'`, `"..."`, `'''...'''` or `"""..."""`, with an optional
/// `r`/`u` prefix. f-strings and byte strings are refused.
pub fn py_at(src: &str, at: usize) -> Result<Literal, Refusal> {
    let rest = &src[at..];
    let prefix_len = rest.chars().take_while(|c| c.is_ascii_alphabetic()).count();
    let prefix = rest[..prefix_len].to_ascii_lowercase();
    if !matches!(prefix.as_str(), "" | "r" | "u") {
        return match prefix.contains('f') {
            true => Err(Refusal::Interpolated(format!("{prefix}-string"))),
            false => Err(Refusal::NotALiteral(snippet(rest))),
        };
    }
    let raw = prefix == "r";
    let body_at = at + prefix_len;
    let q = match src[body_at..].chars().next() {
        Some(q @ ('\'' | '"')) => q,
        _ => return Err(Refusal::NotALiteral(snippet(rest))),
    };
    let triple: String = std::iter::repeat_n(q, 3).collect();
    let (close, open_len) = if src[body_at..].starts_with(&triple) { (triple.clone(), 3) } else { (q.to_string(), 1) };
    let start_text = body_at + open_len;
    let mut out = String::new();
    let mut chars = src[start_text..].char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let pos = start_text + i;
        if src[pos..].starts_with(&close) {
            return Ok(Literal { text: out, start: at, end: pos + close.len() });
        }
        match c {
            '\\' if raw => {
                out.push('\\');
                if let Some((_, e)) = chars.next() {
                    out.push(e);
                }
            }
            '\\' => {
                let Some((_, e)) = chars.next() else { break };
                match e {
                    '\n' => {}
                    '\\' | '\'' | '"' => out.push(e),
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'a' => out.push('\u{7}'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'v' => out.push('\u{b}'),
                    '0'..='7' => {
                        let mut v = e.to_digit(8).unwrap_or(0);
                        for _ in 0..2 {
                            match chars.peek().and_then(|(_, d)| d.to_digit(8)) {
                                Some(d) => {
                                    v = v * 8 + d;
                                    chars.next();
                                }
                                None => break,
                            }
                        }
                        out.push(
                            char::from_u32(v)
                                .ok_or_else(|| Refusal::Bad(format!("a bad octal escape at byte {pos}")))?,
                        );
                    }
                    'x' => out.push(hex_char(&mut chars, 2, pos)?),
                    'u' => out.push(hex_char(&mut chars, 4, pos)?),
                    'U' => out.push(hex_char(&mut chars, 8, pos)?),
                    'N' => return Err(Refusal::Bad(format!("a named escape `\\N{{...}}` at byte {pos}"))),
                    // Python keeps an unknown escape as it is written
                    other => {
                        out.push('\\');
                        out.push(other);
                    }
                }
            }
            '\n' if open_len == 1 => {
                return Err(Refusal::Bad(format!("a line break inside a one-line string at byte {pos}")))
            }
            c => out.push(c),
        }
    }
    Err(Refusal::Bad(format!("the literal opened at byte {at} is never closed")))
}

type Chars<'a> = std::iter::Peekable<std::str::CharIndices<'a>>;

fn hex_u32(chars: &mut Chars<'_>, n: usize, pos: usize) -> Result<u32, Refusal> {
    let mut v = 0u32;
    for _ in 0..n {
        let d = chars
            .next()
            .and_then(|(_, d)| d.to_digit(16))
            .ok_or_else(|| Refusal::Bad(format!("a bad hex escape at byte {pos}")))?;
        v = v * 16 + d;
    }
    Ok(v)
}

fn hex_char(chars: &mut Chars<'_>, n: usize, pos: usize) -> Result<char, Refusal> {
    let v = hex_u32(chars, n, pos)?;
    char::from_u32(v).ok_or_else(|| Refusal::Bad(format!("escape U+{v:04X} at byte {pos} is not a character")))
}

fn code_point(digits: &str, pos: usize) -> Result<char, Refusal> {
    u32::from_str_radix(digits, 16)
        .ok()
        .and_then(char::from_u32)
        .ok_or_else(|| Refusal::Bad(format!("a bad `\\u{{{digits}}}` escape at byte {pos}")))
}

/// A `\uXXXX` escape, joined with the `\uXXXX` after it when the two are a surrogate pair.
fn utf16(first: u32, chars: &mut Chars<'_>, pos: usize) -> Result<char, Refusal> {
    if (0xD800..0xDC00).contains(&first) {
        let mut look = chars.clone();
        if look.next().is_some_and(|(_, c)| c == '\\') && look.next().is_some_and(|(_, c)| c == 'u') {
            if let Ok(second) = hex_u32(&mut look, 4, pos) {
                if (0xDC00..0xE000).contains(&second) {
                    *chars = look;
                    let v = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                    return char::from_u32(v)
                        .ok_or_else(|| Refusal::Bad(format!("a bad surrogate pair at byte {pos}")));
                }
            }
        }
    }
    char::from_u32(first).ok_or_else(|| {
        Refusal::Bad(format!("a lone surrogate `\\u{first:04X}` at byte {pos}: not text Redis can be sent"))
    })
}

/// JavaScript's `\s`: white space and line terminators.
fn js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

fn js_line_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// `s.replaceAll(/^\s+/gm, "")`: at the start of every line, the run of white space there (line
/// breaks included, so blank lines go too) is removed.
pub fn js_strip_line_starts(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut line_start = true;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if line_start && js_space(c) {
            while chars.peek().is_some_and(|&d| js_space(d)) {
                chars.next();
            }
            // the run's last character decides whether the next one starts a line; a run ends
            // before a non-space, so what follows is copied
            line_start = false;
            continue;
        }
        out.push(c);
        line_start = js_line_break(c);
    }
    out
}

/// `s.trim()` in JavaScript.
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(js_space)
}

fn snippet(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    line.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn js(src: &str) -> Result<String, Refusal> {
        js_at(src, find_anchor(src, "s").expect("anchor")).map(|l| l.text)
    }

    fn py(src: &str) -> Result<String, Refusal> {
        py_at(src, find_anchor(src, "s").expect("anchor")).map(|l| l.text)
    }

    #[test]
    fn anchors_are_whole_names_assigned_or_given_as_properties() {
        let src = "var cachedS = 'x';\nvar s2 = 'y';\nif (s == 1) {}\nconst s = 'z';";
        let at = find_anchor(src, "s").unwrap();
        assert_eq!(&src[at..], "'z';");
        assert_eq!(find_anchor("{ s: `a` }", "s"), Some(5));
        assert_eq!(find_anchor("let t = 1", "s"), None);
    }

    #[test]
    fn js_escapes_decode_as_javascript_does() {
        assert_eq!(js(r#"s = "a\nb\t\"c\" \\ \x41\u0042\u{43} \q""#).unwrap(), "a\nb\t\"c\" \\ ABC q");
        assert_eq!(js(r"s = 'it\'s'").unwrap(), "it's");
        assert_eq!(js(r"s = '\uD83D\uDE00'").unwrap(), "\u{1F600}");
        assert_eq!(js("s = '\\0'").unwrap(), "\0");
        assert!(matches!(js(r"s = '\012'"), Err(Refusal::Bad(_))));
        assert!(matches!(js("s = 'a\nb'"), Err(Refusal::Bad(_))));
        assert!(matches!(js("s = 'open"), Err(Refusal::Bad(_))));
        assert!(matches!(js("s = other + 'x'"), Err(Refusal::NotALiteral(_))));
    }

    #[test]
    fn template_literals_keep_lines_and_drop_line_continuations() {
        // rate-limiter-flexible writes its script with `\` at each line's end: one long line
        assert_eq!(js("s = `a \\\nb \\\r\nc`").unwrap(), "a b c");
        assert_eq!(
            js("s = `line 1\n  line 2\r\nline 3 \\`quoted\\` \\${x}`;").unwrap(),
            "line 1\n  line 2\nline 3 `quoted` ${x}"
        );
        assert_eq!(js("s = `cost $5 {a}`").unwrap(), "cost $5 {a}");
        match js("s = `return {x, ${missing}}`") {
            Err(Refusal::Interpolated(what)) => assert_eq!(what, "${missing}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn python_strings_decode_as_python_does() {
        assert_eq!(
            py("s = \"\"\"\n    local a = 1\n    return 'x'\n    \"\"\"").unwrap(),
            "\n    local a = 1\n    return 'x'\n    "
        );
        assert_eq!(py(r#"s = "a\n\tb\x41\101\u0042 \d""#).unwrap(), "a\n\tbAAB \\d");
        assert_eq!(py("s = '''one \\\ntwo'''").unwrap(), "one two");
        assert_eq!(py(r"s = r'\n\d'").unwrap(), r"\n\d");
        assert!(matches!(py("s = f'{x}'"), Err(Refusal::Interpolated(_))));
        assert!(matches!(py(r"s = '\N{DASH}'"), Err(Refusal::Bad(_))));
        assert!(matches!(py("s = 'a\nb'"), Err(Refusal::Bad(_))));
    }

    #[test]
    fn replace_all_line_starts_then_trim_as_javascript() {
        // `.replaceAll(/^\s+/gm, "").trim()`: indentation and blank lines go, trailing spaces stay
        let s = "\n\t      local a = 1\n\n\t      if a then   \n\t        return a\n\t      end\n\t\t";
        assert_eq!(js_trim(&js_strip_line_starts(s)), "local a = 1\nif a then   \nreturn a\nend");
        assert_eq!(js_strip_line_starts("  a\n b"), "a\nb");
    }
}
