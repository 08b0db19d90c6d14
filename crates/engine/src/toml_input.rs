//! Reading the user's TOML files (specs, scenarios, race and skew files): every error names the
//! file and the line, as [`Error::Parse`] or in an `origin:line` prefix.
use std::path::Path;

use limitlab_emulator::{Error, Result};

/// 1-based line of byte offset `at` in `text`.
pub fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// `origin:line` of byte offset `at` in `text` (read from `origin`): where a message points.
pub fn at_line(origin: &Path, text: &str, at: usize) -> String {
    format!("{}:{}", origin.display(), line_of(text, at))
}

/// Reads TOML `text` (from `origin`) as a `T`. A syntax or type error is an [`Error::Parse`]
/// naming `origin` and the line the error's span starts on (line 1 when it has none).
pub fn from_toml<T: serde::de::DeserializeOwned>(text: &str, origin: &Path) -> Result<T> {
    toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |s| line_of(text, s.start));
        Error::Parse { file: origin.to_path_buf(), line, reason: e.message().trim_end().to_string() }
    })
}
