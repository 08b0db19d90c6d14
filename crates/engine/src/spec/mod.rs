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
pub mod exec;
pub mod expr;
pub mod headers;
mod read;
mod types;

use std::path::Path;
use std::sync::Arc;

use crate::limiter::{Algorithm, Params, Variant};
use expr::{Const, Expr, Scope, Template};
use limitlab_emulator::{Error, Result};

pub use read::{Disk, Files};
pub use types::{
    CallSrc, Compiled, CompiledCall, Program, Reports, ResetMeans, SharedSpec, Spec, SpecScript, Src, Target, JUDGED_CHECKS, POLICY_NAMES,
};

pub use crate::traffic::Op;

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
            (Program::Declarative { ops, .. }, Some(i)) => !ops[i].is_empty(),
            (Program::Adapter { ops, .. }, Some(i)) => ops[i],
        }
    }

    /// Compiles the declarative program for `params` (constants folded). An adapter compiles to
    /// nothing here: its Lua state is made on the thread that runs it.
    pub fn compile(&self, params: &Params) -> Result<Compiled> {
        let consts = self.consts(params);
        let Program::Declarative { calls, allowed, remaining, retry_after_ms, reset_ms, granted, ops } = &self.program else {
            return Ok(Compiled::default());
        };
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
                let when = c.when.as_ref().map(|w| expr::compile(&w.text, &scope).map_err(|e| err(w, e))).transpose()?;
                let layout = expr::Layout::with_raw(&keys, &args, &c.raw_keys);
                out.push(CompiledCall { name: c.name.clone(), target: c.target.clone(), keys, args, layout, when, srcs: c.clone() });
                names.push(c.name.clone());
            }
            Ok((out, names))
        };
        let (out, names) = list(calls)?;
        let scope = Scope { consts: &consts, calls: &names, lets: &self.lets, depth: 0 };
        let ex = |s: &Src| -> Result<(Expr, Src)> { Ok((expr::compile(&s.text, &scope).map_err(|e| err(s, e))?, s.clone())) };
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

    /// Whether any template or expression reads `cost` (an adapter may: assumed yes).
    pub fn uses_cost(&self) -> bool {
        self.mentions("cost")
    }

    /// Whether any piece of the program mentions the word `name` (an adapter: always).
    fn mentions(&self, name: &str) -> bool {
        match &self.program {
            Program::Adapter { .. } => true,
            Program::Declarative { calls, allowed, remaining, retry_after_ms, reset_ms, granted, ops } => {
                let has = |s: &Src| s.text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).any(|w| w == name);
                calls.iter().chain(ops.iter().flatten()).any(|c| c.keys.iter().chain(&c.args).chain(&c.when).any(has))
                    || self.lets.iter().any(|(_, t)| t.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).any(|w| w == name))
                    || has(allowed)
                    || [remaining, retry_after_ms, reset_ms, granted].into_iter().flatten().any(has)
            }
        }
    }

    /// What the spec's decisions report besides `allowed`.
    pub fn reports(&self) -> Reports {
        match &self.program {
            Program::Adapter { reports, .. } => Reports { reset_means: self.reset_means, ..*reports },
            Program::Declarative { remaining, retry_after_ms, reset_ms, granted, .. } => Reports {
                remaining: remaining.is_some(),
                retry_after: retry_after_ms.is_some(),
                reset: reset_ms.is_some(),
                granted: granted.is_some(),
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
        reason: format!("{}, or the path of a spec file (.toml)", crate::limiter::UnknownVariant(name.to_string())),
    })
}

/// The spec's policy with the command line's overrides: a limiter for `spec`.
pub fn limiter_with(spec: SharedSpec, limit: Option<u64>, window_ms: Option<u64>, burst: Option<u64>) -> Result<crate::limiter::Limiter> {
    let mut p = spec.policy;
    if let Some(l) = limit {
        p.limit = l;
    }
    if let Some(w) = window_ms {
        p.window_ms = w;
    }
    if let Some(b) = burst {
        p.burst = Some(b);
    }
    crate::limiter::Limiter::from_spec(spec, p)
}

#[cfg(test)]
mod tests;
