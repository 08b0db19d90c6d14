//! What a spec is once read: its scripts, calls and decision as written, the policy and checks it
//! names, what its decisions report, and the program compiled for a policy.
use std::path::PathBuf;
use std::sync::Arc;

use super::expr::{self, Const, Expr, Template};
use crate::backend::Script;
use crate::limiter::{Algorithm, Params, Variant};

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
    /// `[[call]]` and `[decision]`.
    Declarative {
        calls: Vec<CallSrc>,
        allowed: Src,
        remaining: Option<Src>,
        retry_after_ms: Option<Src>,
        reset_ms: Option<Src>,
        /// Units admitted, for a limiter that may grant part of a request.
        granted: Option<Src>,
        /// The calls of each lifecycle operation (`[[refund]]`, `[[reset]]`, `[[clear]]`), in
        /// [`Op::ALL`](crate::traffic::Op::ALL) order; empty when the client has no such operation.
        ops: [Vec<CallSrc>; 3],
    },
    /// A Lua adapter defining `request(req)`, and the decision fields it returns besides `allowed`
    /// (`reports = [...]` in the spec; all three when not said).
    Adapter {
        path: PathBuf,
        source: String,
        reports: Reports,
        /// Which of `refund`, `reset`, `clear` ([`Op::ALL`](crate::traffic::Op::ALL) order) the adapter defines.
        ops: [bool; 3],
    },
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
    pub(super) fn parse(s: &str) -> Option<ResetMeans> {
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
    /// The calls of each lifecycle operation, in [`Op::ALL`](crate::traffic::Op::ALL) order.
    pub ops: [Vec<CompiledCall>; 3],
}

/// A spec shared between the limiters and threads that use it.
pub type SharedSpec = Arc<Spec>;
