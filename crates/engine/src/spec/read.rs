//! Reading a spec: the TOML file's shape, its scripts and function libraries checked as Redis would
//! load them, and every field validated with errors that point at the file, line and field.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::adapter;
use super::expr::{self, Const};
use super::types::{CallSrc, Program, Reports, ResetMeans, Spec, SpecScript, Src, Target, JUDGED_CHECKS, POLICY_NAMES};
use crate::backend::Script;
use crate::limiter::{Algorithm, Params, Variant};
use crate::toml_input::{at_line, from_toml, line_of};
use crate::traffic::Op;
use limitlab_emulator::{Error, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    family: Option<Spanned<String>>,
    max_overshoot: Option<Spanned<f64>>,
    max_false_rejection_rate: Option<Spanned<f64>>,
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

/// Where a spec reads its scripts from: the file system, or limitlab's embedded copies.
pub trait Files {
    fn read(&self, path: &Path) -> std::io::Result<String>;
}

/// Reads from the file system.
pub struct Disk;

impl Files for Disk {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        std::fs::read_to_string(path)
    }
}

/// Reads a spec's function libraries (`library = "file.lua"` and `[functions]`), loads each into a
/// scratch emulator to check it as FUNCTION LOAD would (its errors point at the file), and returns
/// them with the functions they register (name, library index).
fn load_libraries(
    raw: &RawSpec,
    text: &str,
    origin: &Path,
    dir: &Path,
    files: &dyn Files,
) -> Result<(Vec<SpecScript>, Vec<(String, usize)>)> {
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
                return Err(Error::Invalid { context: at, field, reason: format!("{}: FUNCTION LOAD fails: {e}", full.display()) })
            }
            other => return Err(Error::Invalid { context: at, field, reason: format!("FUNCTION LOAD replied {other:?}") }),
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

/// The names `[[policy.and]]` entries define for expressions: `<name>_limit`, `<name>_window_ms`,
/// `<name>_burst`.
fn also_names(also: &[(String, Params)]) -> impl Iterator<Item = String> + '_ {
    also.iter().flat_map(|(n, _)| [format!("{n}_limit"), format!("{n}_window_ms"), format!("{n}_burst")])
}

impl Spec {
    /// Reads and validates a spec file; its scripts are read relative to its directory.
    pub fn from_file(path: &Path) -> Result<Spec> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
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
        let family = match &raw.family {
            Some(f) => Some(family_of(f.get_ref()).ok_or_else(|| {
                invalid(
                    f.span(),
                    "family",
                    format!("unknown family `{}`; one of fixed_window, sliding_window, sliding_log, token_bucket, gcra", f.get_ref()),
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
        if let (Some(r), Some(x)) = (&raw.max_false_rejection_rate, max_false_rejection_rate) {
            if x > 1.0 {
                return Err(invalid(r.span(), "max_false_rejection_rate", format!("is a share of calls, from 0 to 1; got {x}")));
            }
        }
        let model = match &raw.model {
            Some(m) => Some(m.get_ref().parse::<Variant>().map_err(|e| {
                invalid(m.span(), "model", format!("{e} (a model is limitlab's exact Rust twin of one of its own scripts)"))
            })?),
            None => None,
        };
        let pol = raw.policy.get_ref();
        let positive = |v: &Spanned<i64>, field: &str| -> Result<u64> {
            let x = *v.get_ref();
            if x <= 0 {
                return Err(invalid(v.span(), field, format!("must be a positive integer, got {x}")));
            }
            Ok(x as u64)
        };
        // `limit`, `window_ms` and the optional `burst` of `[policy]` or a `[[policy.and]]`.
        let params = |limit: &Spanned<i64>, window: &Spanned<i64>, burst: &Option<Spanned<i64>>, field: &str| -> Result<Params> {
            let p = Params::new(positive(limit, &format!("{field}.limit"))?, positive(window, &format!("{field}.window_ms"))?);
            Ok(match burst {
                Some(b) => p.with_burst(positive(b, &format!("{field}.burst"))?),
                None => p,
            })
        };
        let policy = params(&pol.limit, &pol.window_ms, &pol.burst, "policy")?;
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
            let body = files
                .read(&full)
                .map_err(|e| invalid(path.span(), &format!("scripts.{sname}"), format!("cannot read {}: {e}", full.display())))?;
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
                return Err(invalid(v.span(), &format!("vars.{vname}"), format!("`{vname}` is a built-in variable; choose another name")));
            }
            if !vname.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || vname.starts_with(|c: char| c.is_ascii_digit()) {
                return Err(invalid(v.span(), &format!("vars.{vname}"), "a variable's name is letters, digits and `_`".into()));
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
            if taken || !lname.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || lname.starts_with(|c: char| c.is_ascii_digit()) {
                return Err(invalid(
                    e.span(),
                    &format!("let.{lname}"),
                    format!("`{lname}` cannot name an expression (letters, digits, `_`; not a variable's name)"),
                ));
            }
            lets.push((lname.clone(), e.get_ref().clone()));
        }
        let src = |s: &Spanned<String>, field: String| Src { text: s.get_ref().clone(), line: line_of(text, s.span().start), field };
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
                        if !valid || s == "reply" || expr::Var::ALL.iter().any(|(v, _)| *v == s) || POLICY_NAMES.contains(&s.as_str()) {
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
                            return Err(invalid(nm.span(), &format!("{field}[{n}].name"), format!("`{s}` is already used")));
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
                    keys: cr.keys.iter().enumerate().map(|(j, k)| src(k, format!("{field}[{n}].keys[{}]", j + 1))).collect(),
                    args: cr.args.iter().enumerate().map(|(j, k)| src(k, format!("{field}[{n}].args[{}]", j + 1))).collect(),
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
                Program::Declarative {
                    calls,
                    allowed: src(&d.allowed, "decision.allowed".into()),
                    remaining: d.remaining.as_ref().map(|s| src(s, "decision.remaining".into())),
                    retry_after_ms: d.retry_after_ms.as_ref().map(|s| src(s, "decision.retry_after_ms".into())),
                    reset_ms: d.reset_ms.as_ref().map(|s| src(s, "decision.reset_ms".into())),
                    granted: d.granted.as_ref().map(|s| src(s, "decision.granted".into())),
                    ops: [parse_calls(&raw.refund, "refund")?, parse_calls(&raw.reset, "reset")?, parse_calls(&raw.clear, "clear")?],
                }
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
                return Err(invalid(reason.span(), &format!("waive.{check}"), "give the reason (the report prints it)".into()));
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
        if let Some(b) = &pol.burst {
            if !spec.uses_burst() && model.is_none() {
                return Err(invalid(b.span(), "policy.burst", "no template or expression reads `burst`".into()));
            }
        }
        Ok(spec)
    }
}
