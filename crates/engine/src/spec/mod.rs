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
mod read;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use toml::Spanned;

use crate::backend::Script;
use crate::shipped::{Algorithm, Params, Variant};
use crate::toml_input::{at_line, from_toml};
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
    /// through `files`. Each part is read by `read::Reader` (spec/read.rs), in the file's order of dependence:
    /// the header, the policies, the scripts and libraries, `[vars]` and `[let]`, the program,
    /// `[waive]`; then the whole spec is compiled once.
    pub fn from_toml(text: &str, origin: &Path, dir: &Path, files: &dyn Files) -> Result<Spec> {
        let raw: RawSpec = from_toml(text, origin)?;
        let r = read::Reader { raw: &raw, text, origin, dir, files };
        let h = r.header()?;
        let (policy, also) = r.policies(h.model)?;
        let (reset_means, processes) = r.client()?;
        let scripts = r.scripts()?;
        let (libraries, functions) = r.libraries()?;
        let vars = r.vars(&also)?;
        let lets = r.lets(&vars)?;
        let names = read::Names { scripts: &scripts, functions: &functions, vars: &vars, lets: &lets };
        let program = r.program(&names)?;
        let waive = r.waive()?;
        let spec = Spec {
            name: h.name,
            description: raw.description.trim().to_string(),
            origin: origin.to_path_buf(),
            family: h.family,
            max_overshoot: h.max_overshoot,
            max_false_rejection_rate: h.max_false_rejection_rate,
            max_clock_lag: h.max_clock_lag,
            weighted: raw.weighted,
            policy,
            model: h.model,
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
        r.whole(&spec)?;
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
