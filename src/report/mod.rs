//! Tables (human text, markdown, JSON) and plots of simulation results.
pub mod compare;
pub mod memory;
pub mod plot;
pub mod run;
pub mod table;

use serde::Serialize;

/// How a report is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// Aligned columns for a terminal.
    #[default]
    Text,
    /// GitHub-flavoured markdown tables.
    Markdown,
    /// One pretty-printed JSON document.
    Json,
}

/// Pretty JSON with a final newline. Report types hold only strings, integers, floats and
/// options, which always serialize.
pub(crate) fn to_json<T: Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
