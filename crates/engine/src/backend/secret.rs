//! A `--redis` URL's password never leaves the connection: [`redact`] is what every message, report,
//! progress line, `describe()` and `Debug` shows instead of the URL, and [`RedisUrl`] is the URL as
//! the command line holds it, whose `Debug` and `Display` are redacted too.
//!
//! The password of `redis://user:password@host:port` (or `redis://:password@host`) and the
//! `pass=`/`password=` query values of a `redis+unix:///path?pass=...` URL are replaced by `***`.
//! It works on text that is not a valid URL as well (a mistyped URL is echoed in its error), taking
//! the user part to end at the last `@`.

/// `url` with its password (and `pass=`/`password=` query values) replaced by `***`.
pub fn redact(url: &str) -> String {
    let start = url.find("://").map_or(0, |i| i + 3);
    let mut out = match url[start..].rfind('@') {
        Some(at) => {
            let at = start + at;
            match url[start..at].find(':') {
                Some(c) => format!("{}***{}", &url[..start + c + 1], &url[at..]),
                None => url.to_string(),
            }
        }
        None => url.to_string(),
    };
    if let Some(q) = out.find('?') {
        let (head, query) = out.split_at(q + 1);
        let parts: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("pass") || k.eq_ignore_ascii_case("password") => {
                    format!("{k}=***")
                }
                _ => kv.to_string(),
            })
            .collect();
        out = format!("{head}{}", parts.join("&"));
    }
    out
}

/// A Redis URL as given on the command line: [`RedisUrl::expose`] gives the text to connect with;
/// `Debug` and `Display` show it [`redact`]ed.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisUrl(String);

impl RedisUrl {
    pub fn new(url: impl Into<String>) -> Self {
        RedisUrl(url.into())
    }

    /// The URL with its password, for connecting only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for RedisUrl {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Ok(RedisUrl(s.to_string()))
    }
}

impl std::fmt::Display for RedisUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&redact(&self.0))
    }
}

impl std::fmt::Debug for RedisUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RedisUrl({:?})", redact(&self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(redact("redis://127.0.0.1:6379/0"), "redis://127.0.0.1:6379/0");
        assert_eq!(redact("redis://ll:s3cr%40t@127.0.0.1:6379"), "redis://ll:***@127.0.0.1:6379");
        assert_eq!(redact("redis://:pw@h"), "redis://:***@h");
        assert_eq!(redact("rediss://user@h:1"), "rediss://user@h:1");
        // Not a URL, an `@` in the password, a `/` in it: still hidden.
        assert_eq!(redact("u:p@ss/w@host:1"), "u:***@host:1");
        assert_eq!(redact("redis://u:a/b@c@host"), "redis://u:***@host");
        assert_eq!(redact("redis+unix:///tmp/r.sock?db=1&pass=pw&x=2"), "redis+unix:///tmp/r.sock?db=1&pass=***&x=2");
        let u: RedisUrl = "redis://a:topsecret@h:1".parse().unwrap();
        assert_eq!(u.expose(), "redis://a:topsecret@h:1");
        assert!(!format!("{u} {u:?} {:?}", Some(&u)).contains("topsecret"));
    }
}
