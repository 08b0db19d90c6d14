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

/// Whose a script is: the seed article's, limitlab's own, or the user's (a spec file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    Seed,
    Production,
    User,
}

impl Owner {
    /// The owner of a report row's script, from its name: limitlab's names are its built-in ones;
    /// any other is a spec file's.
    pub fn of(name: &str) -> Owner {
        match name.parse::<limitlab_engine::limiter::Variant>() {
            Ok(v) if v.flavor() == limitlab_engine::limiter::Flavor::Seed => Owner::Seed,
            Ok(_) => Owner::Production,
            Err(_) => Owner::User,
        }
    }

    /// The owner of a limiter's script: its exact model says it is limitlab's.
    pub fn of_variant(v: Option<limitlab_engine::limiter::Variant>) -> Owner {
        match v {
            Some(v) if v.flavor() == limitlab_engine::limiter::Flavor::Seed => Owner::Seed,
            Some(_) => Owner::Production,
            None => Owner::User,
        }
    }
}

/// A script's name in a table: `seed_token_bucket (Token bucket)` for limitlab's scripts (with the
/// seed article's name of the algorithm), `my_limiter (your spec)` for a spec file's.
pub(crate) fn script_label(name: &str) -> String {
    match name.parse::<limitlab_engine::limiter::Variant>() {
        Ok(v) => format!("{name} ({})", limitlab_engine::sim::standard::seed_name(v.algorithm())),
        Err(_) => format!("{name} (your spec)"),
    }
}

/// The note saying whose the rows' scripts are, for a table with the scripts `names`.
pub(crate) fn owners_note<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let owners: Vec<Owner> = names.into_iter().map(Owner::of).collect();
    let has = |o: Owner| owners.contains(&o);
    let mut parts = Vec::new();
    if has(Owner::Seed) {
        parts.push("seed_* rows run the article's own snippets (scripts/seed/)".to_string());
    }
    if has(Owner::Production) {
        parts.push(match (has(Owner::Seed), has(Owner::User)) {
            (true, false) => "the others are limitlab's production scripts".to_string(),
            (false, false) => "every row is one of limitlab's production scripts (scripts/)".to_string(),
            (_, true) => {
                "rows named after an algorithm (fixed_window, ...) are limitlab's production scripts".to_string()
            }
        });
    }
    if has(Owner::User) {
        parts.push("rows marked (your spec) run your spec files".to_string());
    }
    let mut note = parts.join("; ") + ".";
    // A sentence's capital, except on `seed_*`, a script name.
    if !note.starts_with("seed_*") {
        note[..1].make_ascii_uppercase();
    }
    note
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_say_whose_script_they_run() {
        assert_eq!(
            owners_note(["seed_fixed_window", "fixed_window"]),
            "seed_* rows run the article's own snippets (scripts/seed/); the others are limitlab's production scripts."
        );
        assert_eq!(
            owners_note(["my_limiter", "token_bucket"]),
            "Rows named after an algorithm (fixed_window, ...) are limitlab's production scripts; rows marked \
             (your spec) run your spec files."
        );
        assert_eq!(owners_note(["my_limiter"]), "Rows marked (your spec) run your spec files.");
        assert_eq!(owners_note(["gcra"]), "Every row is one of limitlab's production scripts (scripts/).");
        assert_eq!(script_label("my_limiter"), "my_limiter (your spec)");
        assert_eq!(script_label("seed_token_bucket"), "seed_token_bucket (Token bucket)");
        assert_eq!(Owner::of("seed_sliding_log"), Owner::Seed);
        assert_eq!(Owner::of_variant(None), Owner::User);
    }
}
