//! A [`Limiter`]: a spec (a shipped script's or a user's) under the policy it runs with, and what
//! running it means: one request's calls and decision ([`call`]), lifecycle operations, the
//! judgement of its retry-after and headers ([`honesty`]) and its oracles ([`oracle`]).
//!
//! The words it speaks (variants, params, decisions, reference models) are [`crate::shipped`]'s,
//! re-exported here.
use std::sync::Arc;

use crate::spec::exec::Session;
use crate::spec::{Compiled, Reports, SharedSpec, Spec};
use limitlab_emulator::{Error, Result};

pub mod call;
pub mod honesty;
pub mod oracle;
pub mod slots;

pub use crate::shipped::{
    direct, fixed_window, gcra, sliding_log, sliding_window, subject_key, token_bucket, Algorithm, Decision, Flavor,
    Params, Reference, UnknownVariant, Variant, MAX_ARG, MAX_GCRA_TICKS, MAX_SCALED,
};

/// A limiter: a spec (a shipped script's or a user's) with the policy it runs under. Every tool
/// takes one; nothing downstream knows whether the script is limitlab's. Cheap to clone; shared
/// across threads (the per-thread state lives in a [`Session`]).
#[derive(Clone, Debug)]
pub struct Limiter {
    spec: SharedSpec,
    params: Params,
    program: Arc<Compiled>,
    takes_cost: bool,
    reports: Reports,
}

impl Limiter {
    /// A shipped script's limiter (its spec in `scripts/`), its parameters checked against what the
    /// script accepts (so a validated limiter never gets an `ERR` back for its parameters).
    pub fn new(variant: Variant, params: Params) -> Result<Limiter> {
        Limiter::from_spec(crate::spec::builtin::spec(variant), params)
    }

    /// A limiter from any spec with `params` (a spec's own policy is [`Spec::policy`]). When the
    /// spec names one of limitlab's models, its parameter rules apply.
    pub fn from_spec(spec: SharedSpec, params: Params) -> Result<Limiter> {
        if let Some(v) = spec.model {
            direct::Direct::new(v, params).map_err(|e| match e {
                Error::Invalid { field, reason, .. } => Error::Invalid { context: spec.name.clone(), field, reason },
                other => other,
            })?;
        } else {
            for (field, v) in [("limit", params.limit), ("window_ms", params.window_ms)] {
                if v == 0 || v > MAX_ARG {
                    return Err(Error::Invalid {
                        context: spec.name.clone(),
                        field: field.into(),
                        reason: format!("{v} is not an integer from 1 to {MAX_ARG}"),
                    });
                }
            }
        }
        let program = Arc::new(spec.compile(&params)?);
        Ok(Limiter { takes_cost: spec.uses_cost(), reports: spec.reports(), spec, params, program })
    }

    /// The spec's name: `fixed_window`, `seed_token_bucket`, or a user's `name`.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The spec this limiter runs.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The spec, shared.
    pub fn shared_spec(&self) -> &SharedSpec {
        &self.spec
    }

    pub(crate) fn program(&self) -> &Compiled {
        &self.program
    }

    /// The shipped script this limiter runs, when it is one of limitlab's (it has an exact model).
    pub fn variant(&self) -> Option<Variant> {
        self.spec.model
    }

    pub fn params(&self) -> Params {
        self.params
    }

    /// Whether requests pass their cost to the script; otherwise every call counts 1.
    pub fn takes_cost(&self) -> bool {
        self.takes_cost
    }

    /// Which decision fields the spec reads from the reply besides `allowed`.
    pub fn reports(&self) -> Reports {
        self.reports
    }

    /// The first script's Lua source (the only one, for limitlab's scripts).
    pub fn script(&self) -> &str {
        self.spec.scripts.first().map_or("", |s| s.script.body.as_str())
    }

    /// The first script's SHA1 in hex, as `SCRIPT LOAD` returns it (for EVALSHA).
    pub fn sha1(&self) -> &str {
        self.spec.scripts.first().map_or("", |s| s.script.sha.as_str())
    }

    /// The same limiter with its first script's body replaced (`skew`'s variant that reads TIME).
    pub fn with_script_body(&self, body: impl Into<String>) -> Limiter {
        let mut spec = (*self.spec).clone();
        if let Some(s) = spec.scripts.first_mut() {
            s.script = crate::backend::Script::new(body);
        }
        Limiter { spec: Arc::new(spec), ..self.clone() }
    }

    /// Checks one call's `now_ms` and `cost` against what the script accepts. For limitlab's
    /// scripts: `now_ms` from 0 to [`MAX_ARG`], `cost` at most [`MAX_ARG`] (ignored by seed
    /// scripts), and for GCRA the clock in ticks at most [`MAX_GCRA_TICKS`]; for any other spec,
    /// `now_ms` from 0.
    pub fn check_call(&self, now_ms: i64, cost: u64) -> Result<()> {
        match self.spec.model {
            Some(v) => direct::check_call(v, &self.params, now_ms, cost),
            None if now_ms < 0 => Err(Error::Invalid {
                context: self.spec.name.clone(),
                field: "now_ms".into(),
                reason: format!("{now_ms} is before the epoch"),
            }),
            None => Ok(()),
        }
    }

    /// A fresh exact model of this limiter's script (an empty keyspace), when limitlab has one.
    pub fn reference(&self) -> Option<Box<dyn Reference>> {
        self.spec.model.map(|v| direct::reference(v, self.params))
    }

    /// A session for running this limiter's requests on one thread.
    pub fn session(&self) -> Session {
        Session::default()
    }

    /// The overshoot bound the spec declares (or its family's), if any.
    pub fn overshoot_bound(&self) -> Option<f64> {
        self.spec.overshoot_bound(&self.params)
    }
}

/// The spec's policy with the command line's overrides: a limiter for `spec`.
pub fn limiter_with(
    spec: SharedSpec,
    limit: Option<u64>,
    window_ms: Option<u64>,
    burst: Option<u64>,
) -> Result<Limiter> {
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
    // A value from the command line is its flag's mistake, not the spec's.
    let name = spec.name.clone();
    Limiter::from_spec(spec, p).map_err(|e| match e {
        Error::Invalid { field, reason, context } => {
            let flag = match field.as_str() {
                "limit" if limit.is_some() => "--limit",
                "window_ms" if window_ms.is_some() => "--window",
                "burst" if burst.is_some() => "--burst",
                _ => return Error::Invalid { context, field, reason },
            };
            Error::Invalid {
                context: "command line".into(),
                field: flag.into(),
                reason: format!("{reason} (for {name})"),
            }
        }
        other => other,
    })
}

#[cfg(test)]
mod tests;
