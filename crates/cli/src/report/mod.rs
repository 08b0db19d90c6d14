//! Tables (human text, markdown, JSON) and plots of simulation results.
pub mod attack;
pub mod attack_plot;
pub mod check;
pub mod compare;
pub mod memory;
pub mod plot;
pub mod run;
pub mod table;

use std::io::Write;

use limitlab_emulator::{Error, Result};
use serde::Serialize;

/// The note under every `retry_after wrong` column (`run`, `compare`, `sweep`).
pub const RETRY_NOTE: &str =
    "retry_after wrong: of the refusals that name a wait, those whose retry_after did not hold: \
                              the same request then refused, or 1 ms earlier admitted (as `limitlab check` judges it); \
                              - when the script reports no wait.";

/// The note under every `headers wrong` column.
pub fn headers_note() -> String {
    format!(
        "headers wrong: of the first {} decisions of a run whose Retry-After or RateLimit header makes a promise, \
         those where a caller trusting it was refused (as `limitlab check` judges it); - when no header makes one.",
        limitlab_engine::metrics::HEADER_CHECKS
    )
}

/// A judgement's column: `wrong of checked`, or `-` when nothing was judged.
pub(crate) fn judged(wrong: u64, checked: u64, num: impl Fn(u64) -> String) -> String {
    if checked == 0 {
        "-".into()
    } else {
        format!("{} of {}", num(wrong), num(checked))
    }
}

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

/// Writes `text` to `out`; a closed pipe or full disk becomes an [`Error::Io`] on `<stdout>`.
pub fn emit(out: &mut dyn Write, text: &str) -> Result<()> {
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|source| Error::Io { path: "<stdout>".into(), source })
}
