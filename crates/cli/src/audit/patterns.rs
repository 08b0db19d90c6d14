//! Key names folded into patterns: numbers, ids, hash tags and window numbers become `*`, so
//! `rate:{user42}:28333` and `rate:{user7}:28334` are both `rate:{*}:*`.
//!
//! A name is cut into segments at `:` (hash tags are never cut). In each segment:
//! - a hash tag `{...}` keeps its braces and loses its content: `{user42}` -> `{*}`;
//! - an id-like segment (8 or more characters of letters, digits, `-` and `_`, with a digit: hex,
//!   UUIDs, base64url tokens) becomes `*` whole;
//! - otherwise every run of digits becomes `*`: `28333` -> `*`, `user42` -> `user*`,
//!   `10.0.0.1` -> `*.*.*.*`.
//!
//! Besides the pattern, [`infer`] returns what the audit needs from the name: the digits-only
//! segments' values (candidates for a window number), and the subject the key belongs to: the hash
//! tag's content when there is one, else the first folded segment that is not a window number.

/// A key name read for the audit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyName {
    /// The folded pattern.
    pub pattern: String,
    /// Per segment index, the value of a segment made of digits only (at most 18 of them).
    pub numbers: Vec<(usize, u64)>,
    /// The hash tag's content (the bytes between the first `{` and the next `}`, when not empty).
    pub hash_tag: Option<String>,
    /// Per segment index, the original text of each folded segment (hash tags excluded).
    pub folded: Vec<(usize, String)>,
}

impl KeyName {
    /// The key's subject, given which segment (if any) its pattern uses for window numbers: the
    /// hash tag's content, else the first folded segment other than the window's.
    pub fn subject(&self, window_segment: Option<usize>) -> Option<&str> {
        if let Some(t) = &self.hash_tag {
            return Some(t);
        }
        self.folded.iter().find(|(i, _)| Some(*i) != window_segment).map(|(_, s)| s.as_str())
    }
}

/// An id: 8 or more letters, digits, `-`, `_`, with a digit, and more than one run of digits (a
/// name and a number, `user1234567`, folds as `user*` instead).
fn id_like(s: &str) -> bool {
    let digit_runs = s.as_bytes().split(|b| !b.is_ascii_digit()).filter(|r| !r.is_empty()).count();
    s.len() >= 8 && digit_runs > 1 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Folds one segment without hash tags; returns the folded text and whether anything was folded.
fn fold_plain(seg: &str) -> (String, bool) {
    if id_like(seg) {
        return ("*".into(), true);
    }
    let mut out = String::with_capacity(seg.len());
    let mut in_digits = false;
    let mut folded = false;
    for c in seg.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('*');
                in_digits = true;
                folded = true;
            }
        } else {
            in_digits = false;
            out.push(c);
        }
    }
    (out, folded)
}

/// Cuts `name` at `:` outside braces (Redis's hash tag is the first `{...}`; braces elsewhere are
/// left as they are).
fn segments(name: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in name.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ':' if depth == 0 => {
                out.push(&name[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&name[start..]);
    out
}

/// The hash tag of a key as Redis Cluster reads it: the bytes between the first `{` and the first
/// `}` after it, when there are any.
pub fn hash_tag(name: &[u8]) -> Option<&[u8]> {
    let open = name.iter().position(|&b| b == b'{')?;
    let close = name[open + 1..].iter().position(|&b| b == b'}')?;
    (close > 0).then(|| &name[open + 1..open + 1 + close])
}

/// Reads a key name (bytes that are not UTF-8 are shown as `\xNN`).
pub fn infer(raw: &[u8]) -> KeyName {
    let name = printable(raw);
    let hash_tag = hash_tag(raw).map(|t| String::from_utf8_lossy(t).into_owned());
    let mut pattern = String::with_capacity(name.len());
    let mut numbers = Vec::new();
    let mut folded = Vec::new();
    let mut tag_done = false;
    for (i, seg) in segments(&name).into_iter().enumerate() {
        if i > 0 {
            pattern.push(':');
        }
        if !seg.is_empty() && seg.len() <= 18 && seg.bytes().all(|b| b.is_ascii_digit()) {
            numbers.push((i, seg.parse().unwrap_or(0)));
        }
        // The first non-empty `{...}` in the segment: its content folds to `*`.
        if let (false, Some(open)) = (tag_done, seg.find('{')) {
            if let Some(len) = seg[open + 1..].find('}').filter(|&l| l > 0) {
                tag_done = true;
                let (before, rest) = seg.split_at(open);
                let after = &rest[len + 2..];
                let (b, _) = fold_plain(before);
                let (a, _) = fold_plain(after);
                pattern.push_str(&b);
                pattern.push_str("{*}");
                pattern.push_str(&a);
                continue;
            }
        }
        let (f, did) = fold_plain(seg);
        if did {
            folded.push((i, seg.to_string()));
        }
        pattern.push_str(&f);
    }
    KeyName { pattern, numbers, hash_tag, folded }
}

/// A key name as text: UTF-8 as it is, other bytes as `\xNN`.
pub fn printable(raw: &[u8]) -> String {
    match std::str::from_utf8(raw) {
        Ok(s) => s.to_string(),
        Err(_) => raw
            .iter()
            .map(|&b| if b.is_ascii_graphic() || b == b' ' { (b as char).to_string() } else { format!("\\x{b:02x}") })
            .collect(),
    }
}

/// Window lengths (ms) a window number is tried against, shortest first.
pub const WINDOW_CANDIDATES_MS: [u64; 9] =
    [1_000, 10_000, 60_000, 300_000, 600_000, 900_000, 3_600_000, 86_400_000, 604_800_000];

/// How far back the newest key of a pattern may have been written for its window numbers to be
/// read as such: keys left from windows up to 30 days ago still tell their window (a long TTL is
/// what the audit looks for), and no two candidate lengths (at least 1.5x apart) can both read a
/// number as that recent.
pub const WINDOW_LOOKBACK_MS: u64 = 30 * 86_400_000;

/// The window a pattern's window numbers suggest: for the segment at some index whose values run
/// up to `max` (the newest key's window), the candidate length `w` (ms, or seconds-based numbers
/// counted in ms) for which window `max` started at most [`WINDOW_LOOKBACK_MS`] (or two windows)
/// before `now_ms`, and not after it. Returns the window in ms.
pub fn window_of(max: u64, now_ms: i64) -> Option<u64> {
    if max == 0 || now_ms <= 0 {
        return None;
    }
    let now = now_ms as u64;
    WINDOW_CANDIDATES_MS.into_iter().find(|&w| {
        let current = now / w;
        current >= max && (current - max).saturating_mul(w) <= WINDOW_LOOKBACK_MS.max(2 * w)
    })
}

/// Words in key names that rate limiters use (`rate:{user42}`, `ratelimit:...`, `throttle:...`,
/// `LIMITS:...`, `quota:...`, `bucket:...`), matched anywhere in a lowercase name.
const LIMITER_WORDS: [&str; 8] = ["rate", "limit", "throttl", "quota", "bucket", "gcra", "sliding", "leaky"];

/// Short segments that name a limiter's keys by custom (rate-limiter-flexible's `rlflx`, `rl`,
/// `tb`, `sw`, `tat`, ...), matched as a whole `:`/`_`/`-`/`.` separated segment.
const LIMITER_SEGMENTS: [&str; 9] = ["rl", "rlflx", "tb", "sw", "sl", "fw", "tat", "tokens", "window"];

/// Whether a pattern's name looks like a rate limiter's keys: a limiter word in it, or a segment
/// limiters use. (A pattern with window numbers counts too; [`super::audit`] adds that.)
pub fn limiter_name(pattern: &str) -> bool {
    let p = pattern.to_ascii_lowercase();
    LIMITER_WORDS.iter().any(|w| p.contains(w))
        || p.split([':', '_', '-', '.', '{', '}', '/']).any(|s| LIMITER_SEGMENTS.contains(&s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(k: &str) -> String {
        infer(k.as_bytes()).pattern
    }

    #[test]
    fn folding() {
        assert_eq!(p("rate:{user42}:28333"), "rate:{*}:*");
        assert_eq!(p("rate:{user42}"), "rate:{*}");
        assert_eq!(p("ratelimit:user42:28333"), "ratelimit:user*:*");
        assert_eq!(p("session:3f2a9c1e-77aa-4b1c-9d2e-0123456789ab"), "session:*");
        assert_eq!(p("cache:page:home"), "cache:page:home");
        assert_eq!(p("ip:10.0.0.1"), "ip:*.*.*.*");
        assert_eq!(p("config"), "config");
        assert_eq!(p("rl:user1234567"), "rl:user*");
        assert_eq!(p("tok:a9f3c2e1b7"), "tok:*");
        assert_eq!(p("tb:{a:b}:x"), "tb:{*}:x");
        assert_eq!(p("sw:{u1}:cur"), "sw:{*}:cur");
        assert_eq!(p(""), "");
    }

    #[test]
    fn limiter_names() {
        for yes in [
            "rate:{*}:*",
            "ratelimit:user*:*",
            "rl:user*",
            "rlflx:*",
            "LIMITS:*",
            "throttle:*",
            "tb:{*}:x",
            "api_quota:*",
        ] {
            assert!(limiter_name(yes), "{yes}");
        }
        for no in ["session:*", "queue:jobs", "tag:red", "config:mode", "cache:page:home", "tok:*", "user:*"] {
            assert!(!limiter_name(no), "{no}");
        }
    }

    #[test]
    fn windows_of_keys_left_from_the_past() {
        let now = 1_796_000_000_000i64;
        let minute = now as u64 / 60_000;
        assert_eq!(window_of(minute, now), Some(60_000));
        // The newest key written an hour, or 20 days, ago: still a minute's window number.
        assert_eq!(window_of(minute - 60, now), Some(60_000));
        assert_eq!(window_of(minute - 20 * 1440, now), Some(60_000));
        assert_eq!(window_of(minute - 40 * 1440, now), None);
        // A window in the future is no window number.
        assert_eq!(window_of(minute + 5, now), None);
        assert_eq!(window_of(now as u64 / 1000 - 5, now), Some(1000));
        assert_eq!(window_of(12345, now), None);
    }

    #[test]
    fn subjects_and_numbers() {
        let k = infer(b"ratelimit:user42:28333");
        assert_eq!(k.numbers, vec![(2, 28333)]);
        assert_eq!(k.subject(Some(2)), Some("user42"));
        assert_eq!(k.subject(None), Some("user42"));
        let k = infer(b"fw:28333:user7");
        assert_eq!(k.subject(Some(1)), Some("user7"));
        let k = infer(b"rate:{user42}:28333");
        assert_eq!(k.subject(Some(2)), Some("user42"));
        assert_eq!(hash_tag(b"a{}b{c}"), None);
        assert_eq!(hash_tag(b"a{bc}d"), Some(&b"bc"[..]));
    }

    #[test]
    fn windows() {
        let now = 1_764_620_000_000i64;
        assert_eq!(window_of((now / 60_000) as u64, now), Some(60_000));
        assert_eq!(window_of((now / 60_000) as u64 - 1, now), Some(60_000));
        assert_eq!(window_of((now / 1000) as u64, now), Some(1000));
        assert_eq!(window_of(42, now), None);
    }
}
