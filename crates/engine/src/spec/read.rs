//! Reading a spec file into a [`Spec`]: each part of the TOML (the header's bounds, the policies,
//! the scripts, `[vars]` and `[let]`, the calls and the decision or the adapter, `[waive]`) checked
//! on its own, every mistake an [`Error::Invalid`] that names the file's line, the field and the
//! reason; then the whole spec compiled once with its own policy.
use std::path::{Path, PathBuf};

use toml::Spanned;

use super::expr::{self, Const};
use super::{
    adapter, also_names, compiles, family_of, load_libraries, lua_code, CallSrc, Declarative, Files, Op, Program,
    RawCall, RawSpec, Registered, Reports, ResetMeans, Spec, SpecScript, Src, Target, JUDGED_CHECKS, MAX_NAME,
    POLICY_NAMES,
};
use crate::backend::Script;
use crate::shipped::{Algorithm, Params, Variant, MAX_ARG};
use crate::toml_input::{at_line, line_of};
use limitlab_emulator::{Error, Result};

/// One spec file being read: its parsed TOML, its text (for lines), where it came from, and where
/// its scripts are read.
pub(super) struct Reader<'a> {
    pub raw: &'a RawSpec,
    pub text: &'a str,
    pub origin: &'a Path,
    pub dir: &'a Path,
    pub files: &'a dyn Files,
}

/// The header's fields: the name, the family and the bounds the author accepts, the model.
pub(super) struct Header {
    pub name: String,
    pub family: Option<Algorithm>,
    pub max_overshoot: Option<f64>,
    pub max_false_rejection_rate: Option<f64>,
    pub max_clock_lag: Option<f64>,
    pub model: Option<Variant>,
}

/// The names a call may refer to or must not take: the scripts and function libraries' functions
/// it runs, the `[vars]` and `[let]` names.
pub(super) struct Names<'n> {
    pub scripts: &'n [SpecScript],
    pub functions: &'n [(String, usize)],
    pub vars: &'n [(String, Const)],
    pub lets: &'n [(String, String)],
}

/// A name of letters, digits and `_`, not starting with a digit.
fn is_word(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

impl Reader<'_> {
    /// The mistake at `span` in field `field`, said with the file's line.
    fn invalid(&self, span: std::ops::Range<usize>, field: &str, reason: String) -> Error {
        Error::Invalid { context: at_line(self.origin, self.text, span.start), field: field.to_string(), reason }
    }

    /// A piece of the file's text with its line, for messages about an expression or a template.
    fn src(&self, s: &Spanned<String>, field: String) -> Src {
        Src { text: s.get_ref().clone(), line: line_of(self.text, s.span().start), field }
    }

    /// The name, the family, the bounds and the model.
    pub fn header(&self) -> Result<Header> {
        let raw = self.raw;
        let name = raw.name.get_ref().trim().to_string();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(self.invalid(raw.name.span(), "name", "must be a non-empty word (reports use it)".into()));
        }
        if name.len() > MAX_NAME {
            return Err(self.invalid(
                raw.name.span(),
                "name",
                format!("is {} bytes long; at most {MAX_NAME} (reports and file names use it)", name.len()),
            ));
        }
        let family = match &raw.family {
            Some(f) => Some(family_of(f.get_ref()).ok_or_else(|| {
                self.invalid(
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
        // A number from 0 up to `most` (inclusive), where `unit` says what it counts.
        let bounded = |v: &Option<Spanned<f64>>, field: &str, most: Option<(f64, &str)>| -> Result<Option<f64>> {
            let Some(x) = v else { return Ok(None) };
            let n = *x.get_ref();
            if !(n.is_finite() && n >= 0.0) {
                return Err(self.invalid(x.span(), field, format!("must be a number from 0, got {n}")));
            }
            match most {
                Some((m, unit)) if n > m => Err(self.invalid(x.span(), field, format!("{unit}; got {n}"))),
                _ => Ok(Some(n)),
            }
        };
        let max_overshoot = bounded(&raw.max_overshoot, "max_overshoot", None)?;
        let max_clock_lag = bounded(
            &raw.max_clock_lag,
            "max_clock_lag",
            Some((2.0, "is in windows, from 0 to 2 (the lags `check` explores)")),
        )?;
        let max_false_rejection_rate = bounded(
            &raw.max_false_rejection_rate,
            "max_false_rejection_rate",
            Some((1.0, "is a share of calls, from 0 to 1")),
        )?;
        let model = match &raw.model {
            Some(m) => Some(m.get_ref().parse::<Variant>().map_err(|e| {
                self.invalid(
                    m.span(),
                    "model",
                    format!("{e} (a model is limitlab's exact Rust twin of one of its own scripts)"),
                )
            })?),
            None => None,
        };
        Ok(Header { name, family, max_overshoot, max_false_rejection_rate, max_clock_lag, model })
    }

    /// A positive integer field, at most [`MAX_ARG`].
    fn positive(&self, v: &Spanned<i64>, field: &str) -> Result<u64> {
        let x = *v.get_ref();
        if x <= 0 {
            return Err(self.invalid(v.span(), field, format!("must be a positive integer, got {x}")));
        }
        if x as u64 > MAX_ARG {
            return Err(self.invalid(v.span(), field, format!("must be at most {MAX_ARG}, got {x}")));
        }
        Ok(x as u64)
    }

    /// `limit`, `window_ms` and the optional `burst` of `[policy]` or a `[[policy.and]]`.
    fn params(
        &self,
        limit: &Spanned<i64>,
        window: &Spanned<i64>,
        burst: &Option<Spanned<i64>>,
        field: &str,
    ) -> Result<Params> {
        let p = Params::new(
            self.positive(limit, &format!("{field}.limit"))?,
            self.positive(window, &format!("{field}.window_ms"))?,
        );
        Ok(match burst {
            Some(b) => p.with_burst(self.positive(b, &format!("{field}.burst"))?),
            None => p,
        })
    }

    /// `[policy]` (checked against the model's own rules, when there is a model) and the further
    /// limits of `[[policy.and]]`, each with its name.
    pub fn policies(&self, model: Option<Variant>) -> Result<(Params, Vec<(String, Params)>)> {
        let pol = self.raw.policy.get_ref();
        let policy = self.params(&pol.limit, &pol.window_ms, &pol.burst, "policy")?;
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
                    self.invalid(span, &format!("policy.{field}"), reason)
                }
                other => other,
            })?;
        }
        let mut also: Vec<(String, Params)> = Vec::new();
        for (i, more) in pol.and.iter().enumerate() {
            let m = more.get_ref();
            let field = format!("policy.and[{}]", i + 1);
            let pname = m.name.get_ref().trim().to_string();
            if !is_word(&pname) || also.iter().any(|(n, _)| *n == pname) {
                return Err(self.invalid(
                    m.name.span(),
                    &format!("{field}.name"),
                    format!("`{pname}` cannot name a policy (one word of letters, digits, `_`, not used twice)"),
                ));
            }
            also.push((pname, self.params(&m.limit, &m.window_ms, &m.burst, &field)?));
        }
        Ok((policy, also))
    }

    /// `reset_means` (default: the whole quota) and `processes` (default 1).
    pub fn client(&self) -> Result<(ResetMeans, usize)> {
        let raw = self.raw;
        let reset_means = match &raw.reset_means {
            Some(r) => ResetMeans::parse(r.get_ref()).ok_or_else(|| {
                self.invalid(r.span(), "reset_means", format!("unknown meaning `{}`; one of quota (the whole quota back), unit (the next unit back), window (the current window ends)", r.get_ref()))
            })?,
            None => ResetMeans::Quota,
        };
        let processes = match &raw.processes {
            Some(n) if !(1..=64).contains(n.get_ref()) => {
                return Err(self.invalid(n.span(), "processes", format!("must be from 1 to 64, got {}", n.get_ref())))
            }
            Some(n) => *n.get_ref() as usize,
            None => 1,
        };
        Ok((reset_means, processes))
    }

    /// `[scripts]`, each read and compiled as SCRIPT LOAD would: a syntax error is a mistake in the
    /// input, reported once with its file and line, not an error of every request.
    pub fn scripts(&self) -> Result<Vec<SpecScript>> {
        let mut scripts = Vec::new();
        let mut scratch = None;
        for (sname, path) in &self.raw.scripts {
            let full = self.dir.join(PathBuf::from(path.get_ref()));
            let body = self.files.read(&full).map_err(|e| {
                self.invalid(path.span(), &format!("scripts.{sname}"), format!("cannot read {}: {e}", full.display()))
            })?;
            if let Err(reason) = compiles(scratch.get_or_insert_with(limitlab_emulator::Emulator::new), &full, &body) {
                return Err(self.invalid(path.span(), &format!("scripts.{sname}"), reason));
            }
            scripts.push(SpecScript { name: sname.clone(), path: full, script: Script::new(body) });
        }
        Ok(scripts)
    }

    /// The function libraries (`library`) and the functions they register, with their library.
    pub fn libraries(&self) -> Result<(Vec<SpecScript>, Registered)> {
        load_libraries(self.raw, self.text, self.origin, self.dir, self.files)
    }

    /// `[vars]`: named constants, none taking a built-in name.
    pub fn vars(&self, also: &[(String, Params)]) -> Result<Vec<(String, Const)>> {
        let mut vars = Vec::new();
        for (vname, v) in &self.raw.vars {
            let field = format!("vars.{vname}");
            if expr::Var::ALL.iter().any(|(n, _)| n == vname)
                || POLICY_NAMES.contains(&vname.as_str())
                || also_names(also).any(|n| n == *vname)
            {
                return Err(self.invalid(
                    v.span(),
                    &field,
                    format!("`{vname}` is a built-in variable; choose another name"),
                ));
            }
            if !is_word(vname) {
                return Err(self.invalid(v.span(), &field, "a variable's name is letters, digits and `_`".into()));
            }
            let c = match v.get_ref() {
                toml::Value::Integer(i) => Const::Int(*i),
                toml::Value::Float(x) => Const::Num(*x),
                toml::Value::String(s) => Const::Str(s.clone()),
                toml::Value::Boolean(b) => Const::Bool(*b),
                other => {
                    return Err(self.invalid(
                        v.span(),
                        &field,
                        format!("must be a number, string or boolean, got {}", other.type_str()),
                    ))
                }
            };
            vars.push((vname.clone(), c));
        }
        Ok(vars)
    }

    /// `[let]`: named expressions, none taking a variable's name.
    pub fn lets(&self, vars: &[(String, Const)]) -> Result<Vec<(String, String)>> {
        let mut lets = Vec::new();
        for (lname, e) in &self.raw.lets {
            let taken = expr::Var::ALL.iter().any(|(n, _)| n == lname)
                || POLICY_NAMES.contains(&lname.as_str())
                || vars.iter().any(|(v, _)| v == lname)
                || lname == "reply";
            if taken || !is_word(lname) {
                return Err(self.invalid(
                    e.span(),
                    &format!("let.{lname}"),
                    format!("`{lname}` cannot name an expression (letters, digits, `_`; not a variable's name)"),
                ));
            }
            lets.push((lname.clone(), e.get_ref().clone()));
        }
        Ok(lets)
    }

    /// The name of call number `n` of `field` (`call`, `refund`, ...): its own, checked against the
    /// names taken, or `call1`, `refund2`, ...
    fn call_name(&self, cr: &RawCall, field: &str, n: usize, taken: &[CallSrc], names: &Names<'_>) -> Result<String> {
        let Some(nm) = &cr.name else {
            return Ok(format!("{}{n}", if field == "call" { "call" } else { field }));
        };
        let s = nm.get_ref().trim().to_string();
        if !is_word(&s)
            || s == "reply"
            || expr::Var::ALL.iter().any(|(v, _)| *v == s)
            || POLICY_NAMES.contains(&s.as_str())
        {
            return Err(self.invalid(
                nm.span(),
                &format!("{field}[{n}].name"),
                format!("`{s}` cannot name a call (letters, digits, `_`; not a variable's name)"),
            ));
        }
        if taken.iter().any(|c| c.name == s)
            || names.vars.iter().any(|(v, _)| *v == s)
            || names.lets.iter().any(|(v, _)| *v == s)
        {
            return Err(self.invalid(nm.span(), &format!("{field}[{n}].name"), format!("`{s}` is already used")));
        }
        Ok(s)
    }

    /// What call number `n` of `field` runs: one of the spec's scripts, a Redis command, or a
    /// function of its libraries. `line` is the call's line in the file.
    fn call_target(&self, cr: &RawCall, field: &str, n: usize, line: usize, names: &Names<'_>) -> Result<Target> {
        let whole = |reason: &str| Error::Invalid {
            context: format!("{}:{line}", self.origin.display()),
            field: format!("{field}[{n}]"),
            reason: reason.into(),
        };
        let listed = |known: Vec<&str>| if known.is_empty() { "none".to_string() } else { known.join(", ") };
        match (&cr.script, &cr.command, &cr.function) {
            (None, None, Some(f)) => {
                let fname = f.get_ref().trim();
                match names.functions.iter().find(|(n, _)| n.eq_ignore_ascii_case(fname)) {
                    Some((_, lib)) => Ok(Target::Function { name: fname.to_string(), library: *lib }),
                    None => Err(self.invalid(
                        f.span(),
                        &format!("{field}[{n}].function"),
                        format!(
                            "no library registers a function `{fname}` (registered: {})",
                            listed(names.functions.iter().map(|(n, _)| n.as_str()).collect())
                        ),
                    )),
                }
            }
            (_, _, Some(_)) => Err(whole("each call names one of `script`, `command` or `function`")),
            (Some(s), None, None) => match names.scripts.iter().position(|x| x.name == *s.get_ref()) {
                Some(ix) => Ok(Target::Script(ix)),
                None => Err(self.invalid(
                    s.span(),
                    &format!("{field}[{n}].script"),
                    format!(
                        "no script named `{}` in [scripts] (known: {})",
                        s.get_ref(),
                        listed(names.scripts.iter().map(|x| x.name.as_str()).collect())
                    ),
                )),
            },
            (None, Some(cmd), None) => {
                let c = cmd.get_ref().trim().to_string();
                if c.is_empty() || c.contains(char::is_whitespace) {
                    return Err(self.invalid(
                        cmd.span(),
                        &format!("{field}[{n}].command"),
                        "is one command name (its arguments go in keys and args)".into(),
                    ));
                }
                Ok(Target::Command(c))
            }
            _ => Err(whole("each call names either `script` or `command`")),
        }
    }

    /// The calls of `list` (`[[call]]`, `[[refund]]`, ...; `field` names them in messages).
    pub fn calls(&self, list: &[Spanned<RawCall>], field: &str, names: &Names<'_>) -> Result<Vec<CallSrc>> {
        let mut calls: Vec<CallSrc> = Vec::new();
        for (i, c) in list.iter().enumerate() {
            let n = i + 1;
            let cr = c.get_ref();
            let line = line_of(self.text, c.span().start);
            let name = self.call_name(cr, field, n, &calls, names)?;
            let target = self.call_target(cr, field, n, line, names)?;
            let mut raw_keys = Vec::new();
            if let Some(r) = &cr.raw_keys {
                for &k in r.get_ref() {
                    if k < 1 || k as usize > cr.keys.len() {
                        return Err(self.invalid(
                            r.span(),
                            &format!("{field}[{n}].raw_keys"),
                            format!("{k} is not the number of one of the call's {} keys (from 1)", cr.keys.len()),
                        ));
                    }
                    raw_keys.push(k as usize - 1);
                }
            }
            let each = |list: &[Spanned<String>], what: &str| -> Vec<Src> {
                list.iter().enumerate().map(|(j, k)| self.src(k, format!("{field}[{n}].{what}[{}]", j + 1))).collect()
            };
            calls.push(CallSrc {
                raw_keys,
                name,
                target,
                keys: each(&cr.keys, "keys"),
                args: each(&cr.args, "args"),
                when: cr.when.as_ref().map(|w| self.src(w, format!("{field}[{n}].when"))),
                line,
            });
        }
        Ok(calls)
    }

    /// The adapter at `a`: read, compiled (its `request` looked up now, so that a syntax error is
    /// bad input, said once), with the fields its `reports` lists and the operations it defines.
    fn adapter(&self, a: &Spanned<String>) -> Result<Program> {
        let full = self.dir.join(a.get_ref());
        let source = self
            .files
            .read(&full)
            .map_err(|e| self.invalid(a.span(), "adapter", format!("cannot read {}: {e}", full.display())))?;
        let mut reports = Reports { remaining: true, retry_after: true, reset: true, ..Reports::default() };
        if let Some(r) = &self.raw.reports {
            reports = Reports::default();
            for f in r.get_ref() {
                match f.as_str() {
                    "remaining" => reports.remaining = true,
                    "retry_after_ms" => reports.retry_after = true,
                    "reset_ms" => reports.reset = true,
                    "granted" => reports.granted = true,
                    other => {
                        return Err(self.invalid(
                            r.span(),
                            "reports",
                            format!("unknown decision field `{other}`; the adapter may report remaining, retry_after_ms, reset_ms, granted"),
                        ))
                    }
                }
            }
        }
        let made = adapter::AdapterState::new(&full, &source);
        let ops = made.as_ref().map(|st| Op::ALL.map(|o| st.defines(o.name()))).unwrap_or_default();
        if let Err(e) = made {
            let reason = match e {
                // "adapter FILE: syntax error: FILE:LINE: MESSAGE" -> "FILE:LINE: does not compile: MESSAGE"
                Error::Lua(m) => {
                    match m.split_once("syntax error: ").map(|(_, at)| at.splitn(3, ':').collect::<Vec<_>>()) {
                        Some(p) if p.len() == 3 => format!("{}:{}: does not compile:{}", p[0], p[1], p[2]),
                        _ => m.trim_start_matches("adapter ").to_string(),
                    }
                }
                other => other.to_string(),
            };
            return Err(self.invalid(a.span(), "adapter", reason));
        }
        Ok(Program::Adapter { path: full, source, reports, ops })
    }

    /// The program: an adapter, or the calls with their `[decision]` and lifecycle operations.
    pub fn program(&self, names: &Names<'_>) -> Result<Program> {
        let raw = self.raw;
        let spec_level = |field: &str, reason: &str| Error::Invalid {
            context: self.origin.display().to_string(),
            field: field.into(),
            reason: reason.into(),
        };
        match (&raw.adapter, raw.call.is_empty(), &raw.decision) {
            (Some(a), true, None) if !(raw.refund.is_empty() && raw.reset.is_empty() && raw.clear.is_empty()) => {
                Err(self.invalid(a.span(), "adapter", "an adapter defines refund(req), reset(req) and clear(req) as Lua functions; [[refund]], [[reset]] and [[clear]] are for the declarative form".into()))
            }
            (Some(a), true, None) => self.adapter(a),
            (Some(a), _, _) => Err(self.invalid(
                a.span(),
                "adapter",
                "an adapter replaces [[call]] and [decision]: give one or the other".into(),
            )),
            (None, _, _) if raw.reports.is_some() => {
                let r = raw.reports.as_ref().expect("checked");
                Err(self.invalid(r.span(), "reports", "is for adapters; a [decision] reports the fields it defines".into()))
            }
            (None, true, _) => {
                Err(spec_level("call", "a spec needs at least one [[call]] (with a [decision]) or an `adapter`"))
            }
            (None, false, None) => Err(spec_level("decision", "missing [decision] with at least `allowed = \"...\"`")),
            (None, false, Some(d)) => {
                let d = d.get_ref();
                let field = |s: &Option<Spanned<String>>, name: &str| {
                    s.as_ref().map(|s| self.src(s, format!("decision.{name}")))
                };
                Ok(Program::Declarative(Box::new(Declarative {
                    calls: self.calls(&raw.call, "call", names)?,
                    allowed: self.src(&d.allowed, "decision.allowed".into()),
                    remaining: field(&d.remaining, "remaining"),
                    retry_after_ms: field(&d.retry_after_ms, "retry_after_ms"),
                    reset_ms: field(&d.reset_ms, "reset_ms"),
                    granted: field(&d.granted, "granted"),
                    ops: [
                        self.calls(&raw.refund, "refund", names)?,
                        self.calls(&raw.reset, "reset", names)?,
                        self.calls(&raw.clear, "clear", names)?,
                    ],
                })))
            }
        }
    }

    /// `[waive]`: the checks the author excuses, each by a name `check` knows and with a reason.
    pub fn waive(&self) -> Result<Vec<(String, String)>> {
        let mut waive = Vec::new();
        for (check, reason) in &self.raw.waive {
            let field = format!("waive.{check}");
            if !JUDGED_CHECKS.contains(&check.as_str()) {
                return Err(self.invalid(
                    reason.span(),
                    &field,
                    format!("no check is named `{check}`; one of {}", JUDGED_CHECKS.join(", ")),
                ));
            }
            if reason.get_ref().trim().is_empty() {
                return Err(self.invalid(reason.span(), &field, "give the reason (the report prints it)".into()));
            }
            waive.push((check.clone(), reason.get_ref().trim().to_string()));
        }
        Ok(waive)
    }

    /// What only the whole spec can tell, compiled once with its own policy: an unknown variable
    /// or a malformed expression, a `[let]` that cannot mean anything even unused (a cycle, an
    /// unknown name), a script a request calls that returns nothing, a `burst` nothing reads.
    pub fn whole(&self, spec: &Spec) -> Result<()> {
        let policy = spec.policy;
        spec.compile(&policy)?;
        if let Program::Declarative(d) = &spec.program {
            let consts = spec.consts(&policy);
            let names: Vec<String> = d.calls.iter().chain(d.ops.iter().flatten()).map(|c| c.name.clone()).collect();
            for (lname, e) in &self.raw.lets {
                let scope = expr::Scope { consts: &consts, calls: &names, lets: &spec.lets, depth: 0 };
                if let Err(r) = expr::compile(e.get_ref(), &scope) {
                    return Err(self.invalid(e.span(), &format!("let.{lname}"), r));
                }
            }
            // A script a request calls must answer: one with no `return` answers nil to every
            // request, and no `allowed` can read a decision from that.
            for c in &d.calls {
                let Target::Script(i) = &c.target else { continue };
                let sc = &spec.scripts[*i];
                let code = lua_code(&sc.script.body);
                let returns = code.split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_')).any(|w| w == "return");
                if !returns {
                    let at = self.raw.scripts.get(&sc.name).map(|p| p.span()).unwrap_or(0..0);
                    return Err(self.invalid(
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
        if let Some(b) = &self.raw.policy.get_ref().burst {
            if !spec.uses_burst() && spec.model.is_none() {
                return Err(self.invalid(b.span(), "policy.burst", "no template or expression reads `burst`".into()));
            }
        }
        Ok(())
    }
}
