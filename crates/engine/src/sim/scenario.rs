//! Scenario files (TOML): what to simulate, with which limit and window, on which scripts, from
//! which traffic. Every mistake is reported with the file, the field (and line when the file has
//! one) and the reason; nothing in here panics on user input.
//!
//! ```toml
//! name = "boundary_burst"
//! description = "200 requests at the end of a window, 200 at the start of the next"
//! limit = 100            # units per window (tokens per window for token_bucket and gcra)
//! window_ms = 1000
//! # burst = 150          # optional: token_bucket/gcra capacity (default: limit)
//! algorithms = "all"     # or a list: ["fixed_window", "seed_token_bucket", ...]
//! seed = 1               # optional, default 0; `--seed` overrides it
//! start_ms = 1704067200000   # optional: where the virtual clock starts (unix ms)
//!
//! [traffic]              # a crate::traffic::TrafficSpec, selected by `kind`
//! kind = "uniform"
//! rate = 50.0
//! duration_ms = 10000
//! ```
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use limitlab_emulator::clock::{Millis, DEFAULT_START};
use std::sync::Arc;

use crate::limiter::{Limiter, Params, Variant};
use crate::spec::{builtin, SharedSpec, Spec};
use crate::toml_input::{at_line, from_toml};
use crate::traffic::{Arrival, TrafficSpec};
use limitlab_emulator::{Error, Result};

/// A validated scenario: every selected script accepts its parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Where it came from (a path, or a name such as `<builtin boundary_burst>`), for messages.
    pub origin: PathBuf,
    pub name: String,
    pub description: String,
    pub params: Params,
    /// The scripts to run, as specs: the built-in names of `algorithms`, then the files of
    /// `scripts`, in the order written, each once.
    pub scripts: Vec<SharedSpec>,
    pub seed: u64,
    /// Where the virtual clock starts, unix ms (default [`DEFAULT_START`]); traffic offsets count
    /// from here.
    pub start_ms: i64,
    pub traffic: TrafficSpec,
}

/// The file as written, before validation.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    limit: Spanned<i64>,
    window_ms: Spanned<i64>,
    #[serde(default)]
    burst: Option<Spanned<i64>>,
    #[serde(default)]
    algorithms: Option<Spanned<toml::Value>>,
    #[serde(default)]
    scripts: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    start_ms: Option<Spanned<i64>>,
    traffic: Spanned<TrafficSpec>,
}

/// The key assigned on `line` (`limit = "x"` gives `limit`), to name the field in type errors.
fn key_on_line(text: &str, line: usize) -> Option<String> {
    let l = text.lines().nth(line.checked_sub(1)?)?;
    let (k, _) = l.split_once('=')?;
    let k = k.trim().trim_matches('"');
    (!k.is_empty() && !k.starts_with('#') && !k.starts_with('[')).then(|| k.to_string())
}

impl Scenario {
    /// Reads and validates a scenario file. Relative trace paths in it are taken relative to the
    /// file's directory.
    pub fn from_file(path: &Path) -> Result<Scenario> {
        let text = crate::files::read_text(path)?;
        let mut s = Scenario::from_toml(&text, path)?;
        // (Spec paths were resolved against the same directory while validating.)
        if let Some(dir) = path.parent() {
            s.traffic.resolve_paths(dir);
        }
        Ok(s)
    }

    /// Parses and validates scenario text; `origin` names it in messages.
    pub fn from_toml(text: &str, origin: &Path) -> Result<Scenario> {
        let raw: Raw = from_toml(text, origin).map_err(|e| match e {
            Error::Parse { file, line, reason } => {
                let reason = match key_on_line(text, line) {
                    Some(k) if !reason.contains('`') => format!("field `{k}`: {reason}"),
                    _ => reason,
                };
                Error::Parse { file, line, reason }
            }
            other => other,
        })?;
        let at = |span: std::ops::Range<usize>| at_line(origin, text, span.start);
        let invalid = |span: std::ops::Range<usize>, field: &str, reason: String| Error::Invalid {
            context: at(span),
            field: field.to_string(),
            reason,
        };
        let positive = |v: &Spanned<i64>, field: &str| -> Result<u64> {
            let x = *v.get_ref();
            if x <= 0 {
                return Err(invalid(v.span(), field, format!("must be a positive integer, got {x}")));
            }
            if x as u64 > crate::shipped::MAX_ARG {
                return Err(invalid(v.span(), field, format!("must be at most {}, got {x}", crate::shipped::MAX_ARG)));
            }
            Ok(x as u64)
        };
        if raw.name.get_ref().trim().is_empty() {
            return Err(invalid(raw.name.span(), "name", "must not be empty".into()));
        }
        let name_len = raw.name.get_ref().trim().len();
        if name_len > crate::spec::MAX_NAME {
            return Err(invalid(
                raw.name.span(),
                "name",
                format!("is {name_len} bytes long; at most {} (reports and file names use it)", crate::spec::MAX_NAME),
            ));
        }
        let limit = positive(&raw.limit, "limit")?;
        let window_ms = positive(&raw.window_ms, "window_ms")?;
        let burst = raw.burst.as_ref().map(|b| positive(b, "burst")).transpose()?;
        let start_ms = match &raw.start_ms {
            None => DEFAULT_START.0,
            Some(s) => {
                let x = *s.get_ref();
                if !(0..=crate::limiter::MAX_ARG as i64).contains(&x) {
                    return Err(invalid(
                        s.span(),
                        "start_ms",
                        format!("must be a unix time in ms from 0 to {}, got {x}", crate::limiter::MAX_ARG),
                    ));
                }
                x
            }
        };

        let mut scripts = selected_scripts(&raw, origin, text)?;
        let mut seen = std::collections::HashSet::new();
        scripts.retain(|s| seen.insert(s.name.clone()));

        if let Some(b) = &raw.burst {
            if !scripts.iter().any(|s| s.uses_burst()) {
                return Err(invalid(
                    b.span(),
                    "burst",
                    "only token_bucket and gcra take a burst, and neither is selected".into(),
                ));
            }
        }

        let traffic_span = raw.traffic.span();
        let traffic = raw.traffic.into_inner();
        traffic.validate().map_err(|e| match e {
            Error::Invalid { context, field, reason } => {
                Error::Invalid { context: format!("{}: [traffic] {context}", at(traffic_span.clone())), field, reason }
            }
            other => other,
        })?;

        let s = Scenario {
            origin: origin.to_path_buf(),
            name: raw.name.into_inner(),
            description: raw.description,
            params: Params { limit, window_ms, burst },
            scripts,
            seed: raw.seed,
            start_ms,
            traffic,
        };
        // Every selected script must accept the parameters before anything runs.
        for spec in &s.scripts {
            s.limiter(spec).map_err(|e| match e {
                Error::Invalid { context, field, reason } => Error::Invalid {
                    context: format!("{}", origin.display()),
                    field,
                    reason: format!("{context}: {reason}"),
                },
                other => other,
            })?;
        }
        Ok(s)
    }

    /// The limiter of `spec` under this scenario's parameters (the burst only goes to the
    /// scripts that take one).
    pub fn limiter(&self, spec: &SharedSpec) -> Result<Limiter> {
        let mut p = self.params;
        if !spec.uses_burst() {
            p.burst = None;
        }
        Limiter::from_spec(Arc::clone(spec), p)
    }

    /// The limiter of a shipped script under this scenario's parameters.
    pub fn builtin_limiter(&self, variant: Variant) -> Result<Limiter> {
        self.limiter(&builtin::spec(variant))
    }

    /// The shipped scripts among this scenario's, in order (their names when all are shipped).
    pub fn variants(&self) -> Vec<Variant> {
        self.scripts.iter().filter_map(|s| s.model).collect()
    }

    /// The scenario's arrivals for `seed` (the file's own seed unless overridden).
    pub fn arrivals(&self, seed: u64) -> Result<Vec<Arrival>> {
        self.traffic.arrivals(Millis(self.start_ms).as_micros(), seed).map_err(|e| match e {
            Error::Invalid { context, field, reason } => {
                Error::Invalid { context: format!("{}: [traffic] {context}", self.origin.display()), field, reason }
            }
            other => other,
        })
    }
}

/// The scripts a scenario selects: `algorithms` (built-in names, or "all") and `scripts` (spec
/// files, relative to the scenario), in that order; at least one.
fn selected_scripts(raw: &Raw, origin: &Path, text: &str) -> Result<Vec<SharedSpec>> {
    let at = |span: std::ops::Range<usize>| at_line(origin, text, span.start);
    let invalid = |span: std::ops::Range<usize>, field: &str, reason: String| Error::Invalid {
        context: at(span),
        field: field.to_string(),
        reason,
    };
    let mut scripts: Vec<SharedSpec> = Vec::new();
    if let Some(algos) = &raw.algorithms {
        let span = algos.span();
        let names: Vec<String> = match algos.get_ref() {
            toml::Value::String(s) => vec![s.clone()],
            toml::Value::Array(a) => {
                let mut v = Vec::with_capacity(a.len());
                for x in a {
                    match x {
                        toml::Value::String(s) => v.push(s.clone()),
                        other => {
                            return Err(invalid(
                                span,
                                "algorithms",
                                format!("expected algorithm names (strings), got {other}"),
                            ))
                        }
                    }
                }
                v
            }
            other => {
                return Err(invalid(span, "algorithms", format!("expected \"all\" or a list of names, got {other}")))
            }
        };
        for n in &names {
            if n.trim().eq_ignore_ascii_case("all") {
                scripts.extend(Variant::ALL.iter().map(|&v| builtin::spec(v)));
                continue;
            }
            let v: Variant = n
                .parse()
                .map_err(|e: crate::limiter::UnknownVariant| invalid(span.clone(), "algorithms", e.to_string()))?;
            scripts.push(builtin::spec(v));
        }
        if names.is_empty() {
            return Err(invalid(span, "algorithms", "names no algorithm; use \"all\" or a list of names".into()));
        }
    }
    if let Some(files) = &raw.scripts {
        let dir = origin.parent().unwrap_or(Path::new(""));
        for f in files.get_ref() {
            let spec = Spec::from_file(&dir.join(f)).map_err(|e| Error::Invalid {
                context: at(files.span()),
                field: "scripts".into(),
                reason: e.to_string(),
            })?;
            scripts.push(Arc::new(spec));
        }
    }
    if scripts.is_empty() {
        return Err(Error::Invalid {
            context: origin.display().to_string(),
            field: "algorithms".into(),
            reason: "names no script; give `algorithms` (\"all\" or built-in names) or `scripts` (spec files)".into(),
        });
    }
    Ok(scripts)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "t"
limit = 10
window_ms = 1000
algorithms = ["fixed_window", "seed-token-bucket"]
[traffic]
kind = "uniform"
rate = 20.0
duration_ms = 1000
"#;

    fn err(text: &str) -> String {
        Scenario::from_toml(text, Path::new("s.toml")).unwrap_err().to_string()
    }

    #[test]
    fn a_good_file_validates() {
        let s = Scenario::from_toml(GOOD, Path::new("s.toml")).unwrap();
        assert_eq!(s.variants(), [Variant::FIXED_WINDOW, Variant::SEED_TOKEN_BUCKET]);
        assert_eq!(s.params, Params::new(10, 1000));
        assert_eq!(s.start_ms, DEFAULT_START.0);
        assert_eq!(s.seed, 0);
        let all =
            Scenario::from_toml(&GOOD.replace(r#"["fixed_window", "seed-token-bucket"]"#, "\"all\""), Path::new("s"))
                .unwrap();
        assert_eq!(all.variants(), Variant::ALL);
    }

    #[test]
    fn errors_name_file_field_and_reason() {
        assert_eq!(
            err(&GOOD.replace("limit = 10", "limit = 0")),
            "s.toml:3: field `limit`: must be a positive integer, got 0"
        );
        assert_eq!(
            err(&GOOD.replace("window_ms = 1000", "window_ms = -5")),
            "s.toml:4: field `window_ms`: must be a positive integer, got -5"
        );
        let e = err(&GOOD.replace("\"fixed_window\"", "\"leaky\""));
        assert!(
            e.starts_with("s.toml:5: field `algorithms`: unknown algorithm `leaky`; valid names: fixed_window,"),
            "{e}"
        );
        let e = err(&GOOD.replace("limit = 10", "limit = \"ten\""));
        assert!(e.starts_with("s.toml:3: field `limit`: invalid type"), "{e}");
        let e = err(&GOOD.replace("limit = 10", "limt = 10"));
        assert!(e.starts_with("s.toml:3: unknown field `limt`"), "{e}");
        let e = err(&GOOD.replace("window_ms = 1000", "window_ms = 1000 1000"));
        assert!(e.starts_with("s.toml:4: "), "{e}");
        let e = err(&GOOD.replace("rate = 20.0", "rate = -1.0"));
        assert!(e.starts_with("s.toml:6: [traffic]") && e.contains("field `rate`"), "{e}");
        let e = err(&GOOD.replace("algorithms = [\"fixed_window\", \"seed-token-bucket\"]", "algorithms = []"));
        assert!(e.contains("field `algorithms`: names no algorithm"), "{e}");
        let e =
            err(&GOOD.replace("algorithms = [\"fixed_window\", \"seed-token-bucket\"]", "scripts = [\"nope.toml\"]"));
        assert!(e.starts_with("s.toml:5: field `scripts`: nope.toml: No such file"), "{e}");
        let e = err(&GOOD.replace("algorithms = [\"fixed_window\", \"seed-token-bucket\"]", ""));
        assert!(e.contains("field `algorithms`: names no script"), "{e}");
        let e = err(&GOOD.replace("window_ms = 1000", "window_ms = 1000\nburst = 5"));
        assert_eq!(e, "s.toml:5: field `burst`: only token_bucket and gcra take a burst, and neither is selected");
    }
}
