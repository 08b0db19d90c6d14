//! Limiter specs: a user's rate limiter described as data. A spec names the Lua script(s), says how
//! the application turns one request into calls (KEYS and ARGV from the subject, the caller's clock,
//! the cost and the policy) and how it reads the reply into a decision, and states the intended
//! policy that accuracy is judged against. limitlab's shipped scripts are specs too
//! (`scripts/*.toml`), read through the same code.
//!
//! ```toml
//! name = "upstash_fixed_window"
//! family = "fixed_window"            # optional: the algorithm, whose overshoot bound limitlab knows
//! [policy]
//! limit = 10
//! window_ms = 1000
//! [scripts]
//! main = "fixed_window.lua"          # relative to the spec's file
//! [[call]]
//! name = "hits"
//! script = "main"                    # or command = "INCRBY"
//! keys = ["rl:{${subject}}:${window_index}"]
//! args = ["${window_ms}", "${cost}"]
//! [decision]
//! allowed = "hits <= limit"
//! remaining = "max(limit - hits, 0)"
//! ```
//!
//! A call may also name a Redis 7 function instead of a script: `function = "name"` (sent as FCALL
//! name, the number of keys, the keys, the args), registered by a library the spec names with
//! `library = "file.lua"` (or several, `[functions]` with `label = "file.lua"`). Each library is
//! checked with FUNCTION LOAD when the spec is read, FUNCTION LOADed (REPLACE) on the backend before
//! a run's first call, and loaded again should a server answer "Function not found".
//!
//! Every field is documented in `docs/specs.md`. Errors point at the spec's file, line and field.
pub mod adapter;
pub mod builtin;
pub mod call_record;
pub mod exec;
pub mod expr;
pub mod headers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use toml::Spanned;

use crate::backend::Script;
use crate::shipped::{Algorithm, Params, Variant, MAX_ARG};
use crate::toml_input::{at_line, from_toml, line_of};
use expr::{Const, Expr, Scope, Template};
use limitlab_emulator::{Error, Result};

/// One Lua script a spec names.
#[derive(Clone, Debug)]
pub struct SpecScript {
    /// The name calls use (`main`).
    pub name: String,
    /// Where it was read from, as written in messages (`my_limiter.lua`, or `scripts/gcra.lua`).
    pub path: PathBuf,
    pub script: Script,
}

/// A piece of spec text with where it came from, for messages.
#[derive(Clone, Debug, PartialEq)]
pub struct Src {
    pub text: String,
    pub line: usize,
    /// The field, spelled as in the file: `call[1].keys[2]`, `decision.allowed`.
    pub field: String,
}

/// What one call of a request runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// The index of a script in [`Spec::scripts`].
    Script(usize),
    /// A plain Redis command; its arguments are the keys, then the args.
    Command(String),
    /// A Redis 7 function, called with FCALL (name, number of keys, keys, args); `library` is the
    /// index in [`Spec::libraries`] of the library that registers it.
    Function { name: String, library: usize },
}

/// One call of a request, as written.
#[derive(Clone, Debug)]
pub struct CallSrc {
    pub name: String,
    pub target: Target,
    pub keys: Vec<Src>,
    pub args: Vec<Src>,
    pub when: Option<Src>,
    pub line: usize,
    /// 0-based indices of the keys sent as written, without the run's prefix (`raw_keys`).
    pub raw_keys: Vec<usize>,
}

/// How the client side is described.
#[derive(Clone, Debug)]
pub enum Program {
    /// `[[call]]` and `[decision]` (boxed: far larger than an adapter, and read only when a spec is
    /// compiled or inspected).
    Declarative(Box<Declarative>),
    /// A Lua adapter defining `request(req)`, and the decision fields it returns besides `allowed`
    /// (`reports = [...]` in the spec; all three when not said).
    Adapter {
        path: PathBuf,
        source: String,
        reports: Reports,
        /// Which of `refund`, `reset`, `clear` ([`Op::ALL`] order) the adapter defines.
        ops: [bool; 3],
    },
}

/// A declarative program: `[[call]]` and `[decision]`.
#[derive(Clone, Debug)]
pub struct Declarative {
    pub calls: Vec<CallSrc>,
    pub allowed: Src,
    pub remaining: Option<Src>,
    pub retry_after_ms: Option<Src>,
    pub reset_ms: Option<Src>,
    /// Units admitted, for a limiter that may grant part of a request.
    pub granted: Option<Src>,
    /// The calls of each lifecycle operation (`[[refund]]`, `[[reset]]`, `[[clear]]`), in
    /// [`Op::ALL`] order; empty when the client has no such operation.
    pub ops: [Vec<CallSrc>; 3],
}

/// A validated spec. See the module documentation and `docs/specs.md`.
#[derive(Clone, Debug)]
pub struct Spec {
    pub name: String,
    pub description: String,
    /// The spec's file (or `<builtin NAME>`), for messages.
    pub origin: PathBuf,
    /// The algorithm family the author intends, when stated.
    pub family: Option<Algorithm>,
    /// The most admitted in any window over the limit that the author accepts, when stated.
    pub max_overshoot: Option<f64>,
    /// The largest share of calls an exact sliding log admits that the author accepts refused.
    pub max_false_rejection_rate: Option<f64>,
    /// How far behind the server (and the other callers) a caller's clock may be, in windows,
    /// with the limiter's keys still holding its usage for as long as its own clock counts it:
    /// the lag the author built the key's TTL for (`None`, as 0: none promised).
    pub max_clock_lag: Option<f64>,
    /// Whether the client sends requests of any cost (`weighted`), when stated; else read from
    /// the program ([`Spec::uses_cost`]).
    pub weighted: Option<bool>,
    /// The intended policy (limit per window, burst): the default when a tool is given no other.
    pub policy: Params,
    /// limitlab's exact Rust model of the script, for its own shipped scripts.
    pub model: Option<Variant>,
    pub scripts: Vec<SpecScript>,
    /// Redis 7 function libraries (`library = "file.lua"` or `[functions]`), FUNCTION LOADed (REPLACE)
    /// before a run's first call; `name` is the library's own name (from its `#!lua name=` line).
    pub libraries: Vec<SpecScript>,
    /// `[vars]`, in name order.
    pub vars: Vec<(String, Const)>,
    /// `[let]`: named expressions, in name order.
    pub lets: Vec<(String, String)>,
    pub program: Program,
    /// `[waive]`: checks of `limitlab check` the author excuses, each with the reason the report
    /// prints (`overshoot = "a fixed window on purpose"`), in name order.
    pub waive: Vec<(String, String)>,
    /// `[[policy.and]]`: further limits on the same subject, each with its name; a request passes
    /// only if every one admits it (the client's decision is their conjunction).
    pub also: Vec<(String, Params)>,
    /// What the decision's `reset_ms` promises ([`ResetMeans`]).
    pub reset_means: ResetMeans,
    /// Client processes sharing the server (`processes`): each keeps its own client-side state
    /// (an adapter's `client` table), and requests go to them in turn.
    pub processes: usize,
}

pub use crate::traffic::Op;

/// What a decision's `reset_ms` (and the `t` of the `RateLimit` header) promises, as the spec says
/// with `reset_means`; `check` judges it by that meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResetMeans {
    /// The whole quota is back: `capacity` requests of cost 1 in a row fit (the default).
    #[default]
    Quota,
    /// The next unit is back: at least one request of cost 1 fits.
    Unit,
    /// The current window ends: at least one request of cost 1 fits, and the wait is at most one
    /// window.
    Window,
}

impl ResetMeans {
    fn parse(s: &str) -> Option<ResetMeans> {
        match s.trim() {
            "quota" => Some(ResetMeans::Quota),
            "unit" => Some(ResetMeans::Unit),
            "window" => Some(ResetMeans::Window),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ResetMeans::Quota => "quota",
            ResetMeans::Unit => "unit",
            ResetMeans::Window => "window",
        }
    }
}

/// The checks of `limitlab check` that give a verdict, and so may be waived by name.
pub const JUDGED_CHECKS: [&str; 15] = [
    "errors",
    "model",
    "overshoot",
    "false_rejections",
    "remaining",
    "granted",
    "refusals",
    "peek",
    "lifecycle",
    "oversized",
    "retry_after",
    "headers",
    "ttl",
    "clock_skew",
    "cluster",
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    family: Option<Spanned<String>>,
    max_overshoot: Option<Spanned<f64>>,
    max_false_rejection_rate: Option<Spanned<f64>>,
    max_clock_lag: Option<Spanned<f64>>,
    weighted: Option<bool>,
    model: Option<Spanned<String>>,
    adapter: Option<Spanned<String>>,
    reports: Option<Spanned<Vec<String>>>,
    policy: Spanned<RawPolicy>,
    #[serde(default)]
    scripts: BTreeMap<String, Spanned<String>>,
    library: Option<Spanned<String>>,
    #[serde(default)]
    functions: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    vars: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default, rename = "let")]
    lets: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    call: Vec<Spanned<RawCall>>,
    decision: Option<Spanned<RawDecision>>,
    #[serde(default)]
    waive: BTreeMap<String, Spanned<String>>,
    reset_means: Option<Spanned<String>>,
    processes: Option<Spanned<i64>>,
    #[serde(default)]
    refund: Vec<Spanned<RawCall>>,
    #[serde(default)]
    reset: Vec<Spanned<RawCall>>,
    #[serde(default)]
    clear: Vec<Spanned<RawCall>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    limit: Spanned<i64>,
    window_ms: Spanned<i64>,
    burst: Option<Spanned<i64>>,
    #[serde(default, rename = "and")]
    and: Vec<Spanned<RawMorePolicy>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMorePolicy {
    name: Spanned<String>,
    limit: Spanned<i64>,
    window_ms: Spanned<i64>,
    burst: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    name: Option<Spanned<String>>,
    script: Option<Spanned<String>>,
    command: Option<Spanned<String>>,
    function: Option<Spanned<String>>,
    #[serde(default)]
    keys: Vec<Spanned<String>>,
    #[serde(default)]
    args: Vec<Spanned<String>>,
    when: Option<Spanned<String>>,
    #[serde(default)]
    raw_keys: Option<Spanned<Vec<i64>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDecision {
    allowed: Spanned<String>,
    remaining: Option<Spanned<String>>,
    retry_after_ms: Option<Spanned<String>>,
    reset_ms: Option<Spanned<String>>,
    granted: Option<Spanned<String>>,
}

/// The longest `name` a spec or scenario may have, in bytes: reports print it and file names
/// are made from it.
pub const MAX_NAME: usize = 200;

/// Where a spec reads its scripts from: the file system, or limitlab's embedded copies.
pub trait Files {
    fn read(&self, path: &Path) -> std::io::Result<String>;
}

/// Reads from the file system.
pub struct Disk;

impl Files for Disk {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        crate::files::read_text_io(path)
    }
}

/// The functions a spec's libraries register: each one's name and its library's index.
type Registered = Vec<(String, usize)>;

/// Reads a spec's function libraries (`library = "file.lua"` and `[functions]`), loads each into a
/// scratch emulator to check it as FUNCTION LOAD would (its errors point at the file), and returns
/// them with the functions they register (name, library index).
fn load_libraries(
    raw: &RawSpec,
    text: &str,
    origin: &Path,
    dir: &Path,
    files: &dyn Files,
) -> Result<(Vec<SpecScript>, Registered)> {
    let mut wanted: Vec<(String, &Spanned<String>)> = Vec::new();
    if let Some(l) = &raw.library {
        wanted.push(("library".into(), l));
    }
    for (label, path) in &raw.functions {
        wanted.push((format!("functions.{label}"), path));
    }
    let mut libraries = Vec::new();
    let mut functions = Vec::new();
    let mut emu = limitlab_emulator::Emulator::new();
    for (field, path) in wanted {
        let at = at_line(origin, text, path.span().start);
        let full = dir.join(path.get_ref());
        let body = files.read(&full).map_err(|e| Error::Invalid {
            context: at.clone(),
            field: field.clone(),
            reason: format!("cannot read {}: {e}", full.display()),
        })?;
        let name = match emu.execute(&[b"FUNCTION", b"LOAD", body.as_bytes()]) {
            limitlab_emulator::Reply::Bulk(n) => String::from_utf8_lossy(&n).into_owned(),
            limitlab_emulator::Reply::Error(e) => {
                return Err(Error::Invalid {
                    context: at,
                    field,
                    reason: format!("{}: FUNCTION LOAD fails: {e}", full.display()),
                })
            }
            other => {
                return Err(Error::Invalid { context: at, field, reason: format!("FUNCTION LOAD replied {other:?}") })
            }
        };
        let list = emu.execute(&[b"FUNCTION", b"LIST", b"LIBRARYNAME", name.as_bytes()]);
        if let limitlab_emulator::Reply::Array(libs) = list {
            for lib in libs {
                let limitlab_emulator::Reply::Map(kv) = lib else { continue };
                for (k, v) in kv {
                    if k != limitlab_emulator::Reply::bulk("functions") {
                        continue;
                    }
                    let limitlab_emulator::Reply::Array(fs) = v else { continue };
                    for f in fs {
                        let limitlab_emulator::Reply::Map(fkv) = f else { continue };
                        if let Some((_, limitlab_emulator::Reply::Bulk(n))) =
                            fkv.iter().find(|(k, _)| *k == limitlab_emulator::Reply::bulk("name"))
                        {
                            functions.push((String::from_utf8_lossy(n).into_owned(), libraries.len()));
                        }
                    }
                }
            }
        }
        libraries.push(SpecScript { name, path: full, script: Script::new(body) });
    }
    Ok((libraries, functions))
}

/// Whether `body` compiles as a script (SCRIPT LOAD on `emu`); else the reason, pointing at the
/// script's file and line: `my.lua:3: does not compile: unexpected symbol near '=' (Redis: ERR ...)`.
fn compiles(emu: &mut limitlab_emulator::Emulator, file: &Path, body: &str) -> std::result::Result<(), String> {
    match emu.script_load(body.as_bytes()) {
        Ok(_) => Ok(()),
        Err(reply) => {
            let text = match &reply {
                limitlab_emulator::Reply::Error(e) => e.clone(),
                other => format!("{other:?}"),
            };
            // Redis: "ERR Error compiling script (new function): user_script:LINE: MESSAGE"; any
            // other refusal is of the shebang line (an unknown flag, an engine other than lua).
            match text.split_once("user_script:").and_then(|(_, rest)| rest.split_once(':')) {
                Some((l, m)) if l.parse::<usize>().is_ok() => {
                    Err(format!("{}:{l}: does not compile: {} (Redis: {text})", file.display(), m.trim()))
                }
                _ => Err(format!("{}:1: Redis 7.0 refuses it at SCRIPT LOAD: {text}", file.display())),
            }
        }
    }
}

/// The names the family field accepts.
fn family_of(s: &str) -> Option<Algorithm> {
    Some(match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
        "fixed_window" => Algorithm::FixedWindow,
        "sliding_window" | "sliding_window_counter" => Algorithm::SlidingWindow,
        "sliding_log" | "moving_window" => Algorithm::SlidingLog,
        "token_bucket" => Algorithm::TokenBucket,
        "gcra" => Algorithm::Gcra,
        _ => return None,
    })
}

/// The overshoot (most admitted in any window / limit) an algorithm can reach with these
/// parameters, as the property tests prove for limitlab's scripts: 2 for the window counters, 1 for
/// the sliding log, `(burst + limit (W - 1) / W) / limit` for the token bucket and GCRA (a full
/// bucket, then the refill of the window's other W - 1 whole milliseconds).
pub fn family_bound(family: Algorithm, params: &Params) -> f64 {
    match family {
        Algorithm::FixedWindow | Algorithm::SlidingWindow => 2.0,
        Algorithm::SlidingLog => 1.0,
        Algorithm::TokenBucket | Algorithm::Gcra => {
            let (c, l, w) = (params.capacity() as f64, params.limit as f64, params.window_ms as f64);
            (c + l * (w - 1.0) / w) / l
        }
    }
}

impl Spec {
    /// Reads and validates a spec file; its scripts are read relative to its directory.
    pub fn from_file(path: &Path) -> Result<Spec> {
        let text = crate::files::read_text(path)?;
        let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        Spec::from_toml(&text, path, &dir, &Disk)
    }

    /// Parses and validates spec text; `origin` names it in messages, scripts are read from `dir`
    /// through `files`.
    pub fn from_toml(text: &str, origin: &Path, dir: &Path, files: &dyn Files) -> Result<Spec> {
        let raw: RawSpec = from_toml(text, origin)?;
        let at = |span: std::ops::Range<usize>| at_line(origin, text, span.start);
        let invalid = |span: std::ops::Range<usize>, field: &str, reason: String| Error::Invalid {
            context: at(span),
            field: field.to_string(),
            reason,
        };
        let name = raw.name.get_ref().trim().to_string();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(invalid(raw.name.span(), "name", "must be a non-empty word (reports use it)".into()));
        }
        if name.len() > MAX_NAME {
            return Err(invalid(
                raw.name.span(),
                "name",
                format!("is {} bytes long; at most {MAX_NAME} (reports and file names use it)", name.len()),
            ));
        }
        let family = match &raw.family {
            Some(f) => Some(family_of(f.get_ref()).ok_or_else(|| {
                invalid(
                    f.span(),
                    "family",
                    format!(
                        "unknown family `{}`; one of fixed_window, sliding_window, sliding_log, token_bucket, gcra",
                        f.get_ref()
                    ),
                )
            })?),
            None => None,
        };
        let positive_f = |v: &Option<Spanned<f64>>, field: &str| -> Result<Option<f64>> {
            match v {
                Some(x) if !(x.get_ref().is_finite() && *x.get_ref() >= 0.0) => {
                    Err(invalid(x.span(), field, format!("must be a number from 0, got {}", x.get_ref())))
                }
                Some(x) => Ok(Some(*x.get_ref())),
                None => Ok(None),
            }
        };
        let max_overshoot = positive_f(&raw.max_overshoot, "max_overshoot")?;
        let max_false_rejection_rate = positive_f(&raw.max_false_rejection_rate, "max_false_rejection_rate")?;
        let max_clock_lag = positive_f(&raw.max_clock_lag, "max_clock_lag")?;
        if let (Some(r), Some(x)) = (&raw.max_clock_lag, max_clock_lag) {
            if x > 2.0 {
                return Err(invalid(
                    r.span(),
                    "max_clock_lag",
                    format!("is in windows, from 0 to 2 (the lags `check` explores); got {x}"),
                ));
            }
        }
        if let (Some(r), Some(x)) = (&raw.max_false_rejection_rate, max_false_rejection_rate) {
            if x > 1.0 {
                return Err(invalid(
                    r.span(),
                    "max_false_rejection_rate",
                    format!("is a share of calls, from 0 to 1; got {x}"),
                ));
            }
        }
        let model = match &raw.model {
            Some(m) => Some(m.get_ref().parse::<Variant>().map_err(|e| {
                invalid(
                    m.span(),
                    "model",
                    format!("{e} (a model is limitlab's exact Rust twin of one of its own scripts)"),
                )
            })?),
            None => None,
        };
        let pol = raw.policy.get_ref();
        let positive = |v: &Spanned<i64>, field: &str| -> Result<u64> {
            let x = *v.get_ref();
            if x <= 0 {
                return Err(invalid(v.span(), field, format!("must be a positive integer, got {x}")));
            }
            if x as u64 > MAX_ARG {
                return Err(invalid(v.span(), field, format!("must be at most {MAX_ARG}, got {x}")));
            }
            Ok(x as u64)
        };
        // `limit`, `window_ms` and the optional `burst` of `[policy]` or a `[[policy.and]]`.
        let params = |limit: &Spanned<i64>,
                      window: &Spanned<i64>,
                      burst: &Option<Spanned<i64>>,
                      field: &str|
         -> Result<Params> {
            let p = Params::new(
                positive(limit, &format!("{field}.limit"))?,
                positive(window, &format!("{field}.window_ms"))?,
            );
            Ok(match burst {
                Some(b) => p.with_burst(positive(b, &format!("{field}.burst"))?),
                None => p,
            })
        };
        let policy = params(&pol.limit, &pol.window_ms, &pol.burst, "policy")?;
        // A model's own rules (a window too long for the limit, a burst the script has not) are
        // the policy's mistake too: said here, at its line.
        if let Some(v) = model {
            crate::shipped::direct::Direct::new(v, policy).map_err(|e| match e {
                Error::Invalid { field, reason, .. } => {
                    let span = match field.as_str() {
                        "limit" => pol.limit.span(),
                        "burst" => pol.burst.as_ref().map_or(pol.limit.span(), |b| b.span()),
                        _ => pol.window_ms.span(),
                    };
                    invalid(span, &format!("policy.{field}"), reason)
                }
                other => other,
            })?;
        }
        let mut also: Vec<(String, Params)> = Vec::new();
        for (i, more) in pol.and.iter().enumerate() {
            let m = more.get_ref();
            let field = format!("policy.and[{}]", i + 1);
            let pname = m.name.get_ref().trim().to_string();
            let word = !pname.is_empty()
                && pname.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !pname.starts_with(|c: char| c.is_ascii_digit());
            if !word || also.iter().any(|(n, _)| *n == pname) {
                return Err(invalid(
                    m.name.span(),
                    &format!("{field}.name"),
                    format!("`{pname}` cannot name a policy (one word of letters, digits, `_`, not used twice)"),
                ));
            }
            also.push((pname, params(&m.limit, &m.window_ms, &m.burst, &field)?));
        }
        let reset_means = match &raw.reset_means {
            Some(r) => ResetMeans::parse(r.get_ref()).ok_or_else(|| {
                invalid(r.span(), "reset_means", format!("unknown meaning `{}`; one of quota (the whole quota back), unit (the next unit back), window (the current window ends)", r.get_ref()))
            })?,
            None => ResetMeans::Quota,
        };
        let processes = match &raw.processes {
            Some(n) if !(1..=64).contains(n.get_ref()) => {
                return Err(invalid(n.span(), "processes", format!("must be from 1 to 64, got {}", n.get_ref())))
            }
            Some(n) => *n.get_ref() as usize,
            None => 1,
        };

        let mut scripts = Vec::new();
        // Each script is compiled here, as SCRIPT LOAD would: a syntax error is a mistake in the
        // input, reported once with its file and line, not an error of every request.
        let mut scratch = None;
        for (sname, path) in &raw.scripts {
            let rel = PathBuf::from(path.get_ref());
            let full = dir.join(&rel);
            let body = files.read(&full).map_err(|e| {
                invalid(path.span(), &format!("scripts.{sname}"), format!("cannot read {}: {e}", full.display()))
            })?;
            if let Err(reason) = compiles(scratch.get_or_insert_with(limitlab_emulator::Emulator::new), &full, &body) {
                return Err(invalid(path.span(), &format!("scripts.{sname}"), reason));
            }
            scripts.push(SpecScript { name: sname.clone(), path: full, script: Script::new(body) });
        }

        let (libraries, functions) = load_libraries(&raw, text, origin, dir, files)?;

        let mut vars = Vec::new();
        for (vname, v) in &raw.vars {
            if expr::Var::ALL.iter().any(|(n, _)| n == vname)
                || POLICY_NAMES.contains(&vname.as_str())
                || also_names(&also).any(|n| n == *vname)
            {
                return Err(invalid(
                    v.span(),
                    &format!("vars.{vname}"),
                    format!("`{vname}` is a built-in variable; choose another name"),
                ));
            }
            if !vname.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                || vname.starts_with(|c: char| c.is_ascii_digit())
            {
                return Err(invalid(
                    v.span(),
                    &format!("vars.{vname}"),
                    "a variable's name is letters, digits and `_`".into(),
                ));
            }
            let c = match v.get_ref() {
                toml::Value::Integer(i) => Const::Int(*i),
                toml::Value::Float(x) => Const::Num(*x),
                toml::Value::String(s) => Const::Str(s.clone()),
                toml::Value::Boolean(b) => Const::Bool(*b),
                other => {
                    return Err(invalid(
                        v.span(),
                        &format!("vars.{vname}"),
                        format!("must be a number, string or boolean, got {}", other.type_str()),
                    ))
                }
            };
            vars.push((vname.clone(), c));
        }

        let mut lets = Vec::new();
        for (lname, e) in &raw.lets {
            let taken = expr::Var::ALL.iter().any(|(n, _)| n == lname)
                || POLICY_NAMES.contains(&lname.as_str())
                || vars.iter().any(|(v, _)| v == lname)
                || lname == "reply";
            if taken
                || !lname.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                || lname.starts_with(|c: char| c.is_ascii_digit())
            {
                return Err(invalid(
                    e.span(),
                    &format!("let.{lname}"),
                    format!("`{lname}` cannot name an expression (letters, digits, `_`; not a variable's name)"),
                ));
            }
            lets.push((lname.clone(), e.get_ref().clone()));
        }
        let src = |s: &Spanned<String>, field: String| Src {
            text: s.get_ref().clone(),
            line: line_of(text, s.span().start),
            field,
        };
        let parse_calls = |list: &Vec<Spanned<RawCall>>, field: &str| -> Result<Vec<CallSrc>> {
            let mut calls = Vec::new();
            for (i, c) in list.iter().enumerate() {
                let n = i + 1;
                let cr = c.get_ref();
                let line = line_of(text, c.span().start);
                let cname = match &cr.name {
                    Some(nm) => {
                        let s = nm.get_ref().trim().to_string();
                        let valid = !s.is_empty()
                            && s.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
                            && !s.starts_with(|ch: char| ch.is_ascii_digit());
                        if !valid
                            || s == "reply"
                            || expr::Var::ALL.iter().any(|(v, _)| *v == s)
                            || POLICY_NAMES.contains(&s.as_str())
                        {
                            return Err(invalid(
                                nm.span(),
                                &format!("{field}[{n}].name"),
                                format!("`{s}` cannot name a call (letters, digits, `_`; not a variable's name)"),
                            ));
                        }
                        if calls.iter().any(|c: &CallSrc| c.name == s)
                            || vars.iter().any(|(v, _)| *v == s)
                            || lets.iter().any(|(v, _)| *v == s)
                        {
                            return Err(invalid(
                                nm.span(),
                                &format!("{field}[{n}].name"),
                                format!("`{s}` is already used"),
                            ));
                        }
                        s
                    }
                    None => format!("{}{n}", if field == "call" { "call" } else { field }),
                };
                let target = match (&cr.script, &cr.command) {
                    (None, None) if cr.function.is_some() => {
                        let f = cr.function.as_ref().expect("checked");
                        let fname = f.get_ref().trim();
                        match functions.iter().find(|(n, _)| n.eq_ignore_ascii_case(fname)) {
                            Some((_, lib)) => Target::Function { name: fname.to_string(), library: *lib },
                            None => {
                                let known: Vec<&str> = functions.iter().map(|(n, _)| n.as_str()).collect();
                                return Err(invalid(
                                    f.span(),
                                    &format!("{field}[{n}].function"),
                                    format!(
                                        "no library registers a function `{fname}` (registered: {})",
                                        if known.is_empty() { "none".to_string() } else { known.join(", ") }
                                    ),
                                ));
                            }
                        }
                    }
                    (_, _) if cr.function.is_some() => {
                        return Err(Error::Invalid {
                            context: format!("{}:{line}", origin.display()),
                            field: format!("{field}[{n}]"),
                            reason: "each call names one of `script`, `command` or `function`".into(),
                        })
                    }
                    (Some(s), None) => match scripts.iter().position(|x| x.name == *s.get_ref()) {
                        Some(ix) => Target::Script(ix),
                        None => {
                            let known: Vec<&str> = scripts.iter().map(|x| x.name.as_str()).collect();
                            return Err(invalid(
                                s.span(),
                                &format!("{field}[{n}].script"),
                                format!(
                                    "no script named `{}` in [scripts] (known: {})",
                                    s.get_ref(),
                                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                                ),
                            ));
                        }
                    },
                    (None, Some(cmd)) => {
                        let c = cmd.get_ref().trim().to_string();
                        if c.is_empty() || c.contains(char::is_whitespace) {
                            return Err(invalid(
                                cmd.span(),
                                &format!("{field}[{n}].command"),
                                "is one command name (its arguments go in keys and args)".into(),
                            ));
                        }
                        Target::Command(c)
                    }
                    _ => {
                        return Err(Error::Invalid {
                            context: format!("{}:{line}", origin.display()),
                            field: format!("{field}[{n}]"),
                            reason: "each call names either `script` or `command`".into(),
                        })
                    }
                };
                let mut raw_keys = Vec::new();
                if let Some(r) = &cr.raw_keys {
                    for &k in r.get_ref() {
                        if k < 1 || k as usize > cr.keys.len() {
                            return Err(invalid(
                                r.span(),
                                &format!("{field}[{n}].raw_keys"),
                                format!("{k} is not the number of one of the call's {} keys (from 1)", cr.keys.len()),
                            ));
                        }
                        raw_keys.push(k as usize - 1);
                    }
                }
                calls.push(CallSrc {
                    raw_keys,
                    name: cname,
                    target,
                    keys: cr
                        .keys
                        .iter()
                        .enumerate()
                        .map(|(j, k)| src(k, format!("{field}[{n}].keys[{}]", j + 1)))
                        .collect(),
                    args: cr
                        .args
                        .iter()
                        .enumerate()
                        .map(|(j, k)| src(k, format!("{field}[{n}].args[{}]", j + 1)))
                        .collect(),
                    when: cr.when.as_ref().map(|w| src(w, format!("{field}[{n}].when"))),
                    line,
                });
            }
            Ok(calls)
        };
        let program = match (&raw.adapter, raw.call.is_empty(), &raw.decision) {
            (Some(a), true, None) if !(raw.refund.is_empty() && raw.reset.is_empty() && raw.clear.is_empty()) => {
                return Err(invalid(a.span(), "adapter", "an adapter defines refund(req), reset(req) and clear(req) as Lua functions; [[refund]], [[reset]] and [[clear]] are for the declarative form".into()))
            }
            (Some(a), true, None) => {
                let full = dir.join(a.get_ref());
                let source = files
                    .read(&full)
                    .map_err(|e| invalid(a.span(), "adapter", format!("cannot read {}: {e}", full.display())))?;
                let mut reports = Reports { remaining: true, retry_after: true, reset: true, ..Reports::default() };
                if let Some(r) = &raw.reports {
                    reports = Reports::default();
                    for f in r.get_ref() {
                        match f.as_str() {
                            "remaining" => reports.remaining = true,
                            "retry_after_ms" => reports.retry_after = true,
                            "reset_ms" => reports.reset = true,
                            "granted" => reports.granted = true,
                            other => {
                                return Err(invalid(
                                    r.span(),
                                    "reports",
                                    format!("unknown decision field `{other}`; the adapter may report remaining, retry_after_ms, reset_ms, granted"),
                                ))
                            }
                        }
                    }
                }
                // Compiled (and `request` looked up) now, so a syntax error is bad input, said once.
                let made = adapter::AdapterState::new(&full, &source);
                let ops = made.as_ref().map(|st| Op::ALL.map(|o| st.defines(o.name()))).unwrap_or_default();
                if let Err(e) = made {
                    let reason = match e {
                        // "adapter FILE: syntax error: FILE:LINE: MESSAGE" -> "FILE:LINE: does not compile: MESSAGE"
                        Error::Lua(m) => match m.split_once("syntax error: ").map(|(_, at)| at.splitn(3, ':').collect::<Vec<_>>()) {
                            Some(p) if p.len() == 3 => format!("{}:{}: does not compile:{}", p[0], p[1], p[2]),
                            _ => m.trim_start_matches("adapter ").to_string(),
                        },
                        other => other.to_string(),
                    };
                    return Err(invalid(a.span(), "adapter", reason));
                }
                Program::Adapter { path: full, source, reports, ops }
            }
            (Some(a), _, _) => {
                return Err(invalid(a.span(), "adapter", "an adapter replaces [[call]] and [decision]: give one or the other".into()))
            }
            (None, _, _) if raw.reports.is_some() => {
                let r = raw.reports.as_ref().expect("checked");
                return Err(invalid(r.span(), "reports", "is for adapters; a [decision] reports the fields it defines".into()));
            }
            (None, true, _) => {
                return Err(Error::Invalid {
                    context: origin.display().to_string(),
                    field: "call".into(),
                    reason: "a spec needs at least one [[call]] (with a [decision]) or an `adapter`".into(),
                })
            }
            (None, false, None) => {
                return Err(Error::Invalid {
                    context: origin.display().to_string(),
                    field: "decision".into(),
                    reason: "missing [decision] with at least `allowed = \"...\"`".into(),
                })
            }
            (None, false, Some(d)) => {
                let calls = parse_calls(&raw.call, "call")?;
                let d = d.get_ref();
                Program::Declarative(Box::new(Declarative {
                    calls,
                    allowed: src(&d.allowed, "decision.allowed".into()),
                    remaining: d.remaining.as_ref().map(|s| src(s, "decision.remaining".into())),
                    retry_after_ms: d.retry_after_ms.as_ref().map(|s| src(s, "decision.retry_after_ms".into())),
                    reset_ms: d.reset_ms.as_ref().map(|s| src(s, "decision.reset_ms".into())),
                    granted: d.granted.as_ref().map(|s| src(s, "decision.granted".into())),
                    ops: [parse_calls(&raw.refund, "refund")?, parse_calls(&raw.reset, "reset")?, parse_calls(&raw.clear, "clear")?],
                }))
            }
        };
        let mut waive = Vec::new();
        for (check, reason) in &raw.waive {
            if !JUDGED_CHECKS.contains(&check.as_str()) {
                return Err(invalid(
                    reason.span(),
                    &format!("waive.{check}"),
                    format!("no check is named `{check}`; one of {}", JUDGED_CHECKS.join(", ")),
                ));
            }
            if reason.get_ref().trim().is_empty() {
                return Err(invalid(
                    reason.span(),
                    &format!("waive.{check}"),
                    "give the reason (the report prints it)".into(),
                ));
            }
            waive.push((check.clone(), reason.get_ref().trim().to_string()));
        }
        let spec = Spec {
            name,
            description: raw.description.trim().to_string(),
            origin: origin.to_path_buf(),
            family,
            max_overshoot,
            max_false_rejection_rate,
            max_clock_lag,
            weighted: raw.weighted,
            policy,
            model,
            scripts,
            libraries,
            vars,
            lets,
            program,
            waive,
            also,
            reset_means,
            processes,
        };
        // Compile once with the spec's own policy: an unknown variable or a malformed expression is
        // a mistake in the spec, reported now rather than at the first request.
        spec.compile(&policy)?;
        // Every `[let]` compiles on its own too: one that is never used is still a mistake when it
        // cannot mean anything (a cycle, an unknown name).
        if let Program::Declarative(d) = &spec.program {
            let consts = spec.consts(&policy);
            let names: Vec<String> = d.calls.iter().chain(d.ops.iter().flatten()).map(|c| c.name.clone()).collect();
            for (lname, e) in &raw.lets {
                let scope = expr::Scope { consts: &consts, calls: &names, lets: &spec.lets, depth: 0 };
                if let Err(r) = expr::compile(e.get_ref(), &scope) {
                    return Err(invalid(e.span(), &format!("let.{lname}"), r));
                }
            }
            // A script a request calls must answer: one with no `return` answers nil to every
            // request, and no `allowed` can read a decision from that.
            for c in &d.calls {
                if let Target::Script(i) = &c.target {
                    let sc = &spec.scripts[*i];
                    let code = lua_code(&sc.script.body);
                    let returns =
                        code.split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_')).any(|w| w == "return");
                    if !returns {
                        let at = raw.scripts.get(&sc.name).map(|p| p.span()).unwrap_or(0..0);
                        return Err(invalid(
                            at,
                            &format!("scripts.{}", sc.name),
                            format!(
                                "{} {}: the script returns nothing, so every request's reply is nil; `allowed` needs a reply that says yes or no (a script ends with `return ...`)",
                                sc.path.display(),
                                if code.trim().is_empty() { "is empty" } else { "has no `return`" }
                            ),
                        ));
                    }
                }
            }
        }
        if let Some(b) = &pol.burst {
            if !spec.uses_burst() && model.is_none() {
                return Err(invalid(b.span(), "policy.burst", "no template or expression reads `burst`".into()));
            }
        }
        Ok(spec)
    }

    /// The constants every expression may use for `params`: the policy's, then `[vars]`.
    pub fn consts(&self, params: &Params) -> Vec<(String, Const)> {
        let w = params.window_ms as i64;
        let per_s = |ms: i64| if ms % 1000 == 0 { Const::Int(ms / 1000) } else { Const::Num(ms as f64 / 1000.0) };
        let mut v = vec![
            ("limit".to_string(), Const::Int(params.limit as i64)),
            ("window_ms".to_string(), Const::Int(w)),
            ("window_s".to_string(), per_s(w)),
            ("burst".to_string(), Const::Int(params.capacity() as i64)),
            ("rate_per_s".to_string(), Const::Num(params.limit as f64 * 1000.0 / w as f64)),
        ];
        for (name, p) in &self.also {
            v.push((format!("{name}_limit"), Const::Int(p.limit as i64)));
            v.push((format!("{name}_window_ms"), Const::Int(p.window_ms as i64)));
            v.push((format!("{name}_burst"), Const::Int(p.capacity() as i64)));
        }
        v.extend(self.vars.iter().cloned());
        v
    }

    /// Every policy the spec is judged by: `params` (the first, `[policy]` with the command line's
    /// overrides) named `policy`, then each `[[policy.and]]`.
    pub fn policies(&self, params: &Params) -> Vec<(String, Params)> {
        let mut v = vec![("policy".to_string(), *params)];
        v.extend(self.also.iter().cloned());
        v
    }

    /// Whether the client has the lifecycle operation `op` (`[[refund]]` calls, or an adapter that
    /// defines `refund(req)`).
    pub fn has_op(&self, op: Op) -> bool {
        match (&self.program, op.index()) {
            (_, None) => true,
            (Program::Declarative(d), Some(i)) => !d.ops[i].is_empty(),
            (Program::Adapter { ops, .. }, Some(i)) => ops[i],
        }
    }

    /// Compiles the declarative program for `params` (constants folded). An adapter compiles to
    /// nothing here: its Lua state is made on the thread that runs it.
    pub fn compile(&self, params: &Params) -> Result<Compiled> {
        let consts = self.consts(params);
        let Program::Declarative(d) = &self.program else {
            return Ok(Compiled::default());
        };
        let Declarative { calls, allowed, remaining, retry_after_ms, reset_ms, granted, ops } = &**d;
        let err = |s: &Src, reason: String| Error::Invalid {
            context: format!("{}:{}", self.origin.display(), s.line),
            field: s.field.clone(),
            reason,
        };
        // One list of calls: each may read the replies of the calls before it.
        let list = |calls: &[CallSrc]| -> Result<(Vec<CompiledCall>, Vec<String>)> {
            let mut names: Vec<String> = Vec::new();
            let mut out = Vec::new();
            for c in calls {
                let scope = Scope { consts: &consts, calls: &names, lets: &self.lets, depth: 0 };
                let tmpl = |s: &Src| Template::compile(&s.text, &scope).map_err(|e| err(s, e));
                let keys = c.keys.iter().map(tmpl).collect::<Result<Vec<_>>>()?;
                let args = c.args.iter().map(tmpl).collect::<Result<Vec<_>>>()?;
                let when =
                    c.when.as_ref().map(|w| expr::compile(&w.text, &scope).map_err(|e| err(w, e))).transpose()?;
                let layout = expr::Layout::with_raw(&keys, &args, &c.raw_keys);
                out.push(CompiledCall {
                    name: c.name.clone(),
                    target: c.target.clone(),
                    keys,
                    args,
                    layout,
                    when,
                    srcs: c.clone(),
                });
                names.push(c.name.clone());
            }
            Ok((out, names))
        };
        let (out, names) = list(calls)?;
        let scope = Scope { consts: &consts, calls: &names, lets: &self.lets, depth: 0 };
        let ex = |s: &Src| -> Result<(Expr, Src)> {
            Ok((expr::compile(&s.text, &scope).map_err(|e| err(s, e))?, s.clone()))
        };
        Ok(Compiled {
            calls: out,
            allowed: Some(ex(allowed)?),
            remaining: remaining.as_ref().map(ex).transpose()?,
            retry_after_ms: retry_after_ms.as_ref().map(ex).transpose()?,
            reset_ms: reset_ms.as_ref().map(ex).transpose()?,
            granted: granted.as_ref().map(ex).transpose()?,
            ops: [list(&ops[0])?.0, list(&ops[1])?.0, list(&ops[2])?.0],
        })
    }

    /// Whether any template or expression reads `burst` (an adapter may: assumed yes).
    pub fn uses_burst(&self) -> bool {
        self.mentions("burst")
    }

    /// Whether the client sends requests of any cost: `weighted` when the spec says, else whether
    /// any template or expression reads `cost` (an adapter: whether its code names `cost`).
    pub fn uses_cost(&self) -> bool {
        self.weighted.unwrap_or_else(|| self.mentions("cost"))
    }

    /// Whether any piece of the program mentions the word `name`. An adapter is read as Lua text:
    /// `cost` counts when the file (comments aside) names it (`req.cost`), so a per-request client
    /// is not judged with weighted traffic it cannot send; `burst` is assumed read.
    fn mentions(&self, name: &str) -> bool {
        match &self.program {
            Program::Adapter { source, .. } if name == "cost" => {
                lua_code(source).split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).any(|w| w == name)
            }
            Program::Adapter { .. } => true,
            Program::Declarative(d) => {
                let Declarative { calls, allowed, remaining, retry_after_ms, reset_ms, granted, ops } = &**d;
                let has = |s: &Src| s.text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).any(|w| w == name);
                calls.iter().chain(ops.iter().flatten()).any(|c| c.keys.iter().chain(&c.args).chain(&c.when).any(has))
                    || self
                        .lets
                        .iter()
                        .any(|(_, t)| t.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).any(|w| w == name))
                    || has(allowed)
                    || [remaining, retry_after_ms, reset_ms, granted].into_iter().flatten().any(has)
            }
        }
    }

    /// What the spec's decisions report besides `allowed`.
    pub fn reports(&self) -> Reports {
        match &self.program {
            Program::Adapter { reports, .. } => Reports { reset_means: self.reset_means, ..*reports },
            Program::Declarative(d) => Reports {
                remaining: d.remaining.is_some(),
                retry_after: d.retry_after_ms.is_some(),
                reset: d.reset_ms.is_some(),
                granted: d.granted.is_some(),
                reset_means: self.reset_means,
            },
        }
    }

    /// The bound on overshoot this spec is judged against: `max_overshoot`, else the family's.
    pub fn overshoot_bound(&self, params: &Params) -> Option<f64> {
        self.max_overshoot.or_else(|| self.family.map(|f| family_bound(f, params)))
    }

    /// The script named in messages for a Redis error that mentions `@user_script` / a SHA: the
    /// spec's script with that SHA, if any.
    pub fn script_by_sha(&self, sha: &str) -> Option<&SpecScript> {
        self.scripts.iter().find(|s| s.script.sha == sha)
    }
}

/// Lua source without its comments (`-- ...` to the end of the line, and `--[[ ... ]]`), roughly:
/// enough to tell whether code (not a comment) names a word. Strings are kept.
pub(crate) fn lua_code(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(i) = rest.find("--") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let level = after.strip_prefix('[').map(|a| a.chars().take_while(|&c| c == '=').count());
        match level.filter(|&n| after[1 + n..].starts_with('[')) {
            Some(n) => {
                let close = format!("]{}]", "=".repeat(n));
                rest = match after.find(&close) {
                    Some(j) => &after[j + close.len()..],
                    None => "",
                };
            }
            None => {
                rest = match after.find('\n') {
                    Some(j) => &after[j..],
                    None => "",
                };
            }
        }
    }
    out.push_str(rest);
    out
}

/// A script as the command line names it: one of limitlab's built-in names (`fixed_window`,
/// `seed_token_bucket`, ...), or the path of a spec file (`my_limiter.toml`).
pub fn resolve(name: &str) -> Result<SharedSpec> {
    if let Ok(v) = name.parse::<Variant>() {
        return Ok(builtin::spec(v));
    }
    let path = Path::new(name);
    if path.extension().is_some_and(|e| e == "toml") || path.exists() {
        return Ok(Arc::new(Spec::from_file(path)?));
    }
    Err(Error::Invalid {
        context: "script".into(),
        field: "script".into(),
        reason: format!("{}, or the path of a spec file (.toml)", crate::shipped::UnknownVariant(name.to_string())),
    })
}

/// Two specs are the same when they have the same name, origin and scripts.
impl PartialEq for Spec {
    fn eq(&self, other: &Spec) -> bool {
        self.name == other.name
            && self.origin == other.origin
            && self.scripts.len() == other.scripts.len()
            && self.scripts.iter().zip(&other.scripts).all(|(a, b)| a.script.sha == b.script.sha)
    }
}

/// The names the policy defines for expressions.
pub const POLICY_NAMES: [&str; 5] = ["limit", "window_ms", "window_s", "burst", "rate_per_s"];

/// The names `[[policy.and]]` entries define for expressions: `<name>_limit`, `<name>_window_ms`,
/// `<name>_burst`.
fn also_names(also: &[(String, Params)]) -> impl Iterator<Item = String> + '_ {
    also.iter().flat_map(|(n, _)| [format!("{n}_limit"), format!("{n}_window_ms"), format!("{n}_burst")])
}

/// Which fields a spec's decisions carry besides `allowed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
pub struct Reports {
    pub remaining: bool,
    pub retry_after: bool,
    pub reset: bool,
    /// The decision says how many units it granted (a partial grant).
    pub granted: bool,
    /// What `reset_ms` promises (the spec's `reset_means`).
    pub reset_means: ResetMeans,
}

/// One call, compiled for a policy.
#[derive(Clone, Debug)]
pub struct CompiledCall {
    pub name: String,
    pub target: Target,
    pub keys: Vec<Template>,
    pub args: Vec<Template>,
    /// `keys` and `args` as the hot path renders them.
    pub layout: expr::Layout,
    pub when: Option<Expr>,
    pub srcs: CallSrc,
}

/// A declarative program compiled for a policy (empty for an adapter).
#[derive(Clone, Debug, Default)]
pub struct Compiled {
    pub calls: Vec<CompiledCall>,
    pub allowed: Option<(Expr, Src)>,
    pub remaining: Option<(Expr, Src)>,
    pub retry_after_ms: Option<(Expr, Src)>,
    pub reset_ms: Option<(Expr, Src)>,
    pub granted: Option<(Expr, Src)>,
    /// The calls of each lifecycle operation, in [`Op::ALL`] order.
    pub ops: [Vec<CompiledCall>; 3],
}

/// A spec shared between the limiters and threads that use it.
pub type SharedSpec = Arc<Spec>;

#[cfg(test)]
mod tests;
