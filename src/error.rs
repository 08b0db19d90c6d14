//! The library's one error type. A rate limiter saying "no" is a [`crate::Decision`]-style outcome,
//! never an `Err`; errors are for malformed input, failing backends and broken scripts.
use std::path::{Path, PathBuf};

/// Everything that can go wrong in limitlab's library. Binaries wrap it in `anyhow`.
///
/// Every variant's message is complete on its own: `Io` ends with its source's text and also returns
/// that source from `source()`, so a printer of the whole chain must leave out a cause the message
/// already ends with (as `src/main.rs` does), or it is printed twice.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A Redis error reply (from the emulator or a real server), with its exact text.
    #[error("{0}")]
    Redis(String),
    /// Input that could not be parsed: a scenario, trace or case file.
    #[error("{}:{line}: {reason}", file.display())]
    Parse { file: PathBuf, line: usize, reason: String },
    /// A field of a scenario or an argument that has a value it cannot take.
    #[error("{context}: field `{field}`: {reason}")]
    Invalid { context: String, field: String, reason: String },
    /// A script or a spec's command answered a request with an error reply: Redis's own text, where
    /// in the user's files (`my_limiter.lua:52: the line`), and the request that triggered it.
    #[error("{reply}\n  at {at}\n  during the {request}")]
    Script { reply: String, at: String, request: String },
    /// A verdict that failed (`limitlab check`): the report was printed; this says how many.
    #[error("{0}")]
    Failed(String),
    /// The Lua engine failed outside of a script's own error handling.
    #[error("lua: {0}")]
    Lua(String),
    /// Talking to a real Redis failed.
    #[error("redis connection: {0}")]
    Connection(String),
    /// The emulator and a real Redis answered the same thing differently (`verify`, `--redis`).
    #[error("emulator and Redis differ: {0}")]
    Mismatch(String),
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// `Result` with limitlab's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// 1-based line of byte offset `at` in `text`.
pub(crate) fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// `origin:line` of byte offset `at` in `text` (read from `origin`): where a message points.
pub(crate) fn at_line(origin: &Path, text: &str, at: usize) -> String {
    format!("{}:{}", origin.display(), line_of(text, at))
}

/// Reads TOML `text` (from `origin`) as a `T`. A syntax or type error is an [`Error::Parse`]
/// naming `origin` and the line the error's span starts on (line 1 when it has none).
pub(crate) fn from_toml<T: serde::de::DeserializeOwned>(text: &str, origin: &Path) -> Result<T> {
    toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |s| line_of(text, s.start));
        Error::Parse { file: origin.to_path_buf(), line, reason: e.message().trim_end().to_string() }
    })
}

impl From<mlua::Error> for Error {
    fn from(e: mlua::Error) -> Self {
        Error::Lua(e.to_string())
    }
}
