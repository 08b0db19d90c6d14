//! Running one request through a spec: render each call's KEYS and ARGV, run it on the backend,
//! then read the decision from the replies. A [`Session`] holds the buffers a hot loop reuses (and
//! an adapter's Lua state), so it belongs to the thread that drives the backend.

pub(crate) use super::call_record::script_error;
pub use super::call_record::{describe_request, user_script_line, CallRecord};
use super::expr::{Expr, Request, Template, Value};
use super::{adapter, Program, Spec, Src, Target};
use crate::shipped::Decision;
use limitlab_emulator::Reply;
use limitlab_emulator::{Error, Result};

/// Buffers and state for running requests on one thread.
#[derive(Default)]
pub struct Session {
    pub(crate) replies: Vec<Option<Reply>>,
    /// A call's keys and args, one after the other, and where each ends (see `expr::Layout`).
    pub(crate) buf: String,
    pub(crate) ends: Vec<usize>,
    /// An adapter's Lua state, one per client process (`processes`), made at first use.
    pub(crate) adapters: Vec<adapter::AdapterState>,
    /// How many processes had state when it was last saved ([`Session::save_client`]).
    pub(crate) saved_processes: usize,
    /// The client process every request goes to while set (a "what if" asks one process: the one
    /// that took the judged request), instead of the next in turn.
    pub pin: Option<usize>,
    /// Requests run so far in this session (the next one's `seq`).
    pub seq: u64,
    /// When set, every call of every request is appended here.
    pub record: Option<Vec<CallRecord>>,
    /// The spec's function libraries were loaded (FUNCTION LOAD REPLACE) on this session's backend.
    pub(crate) libraries_loaded: bool,
}

impl Session {
    /// A session that records every call it makes (see [`Session::record`]).
    pub fn recording() -> Session {
        Session { record: Some(Vec::new()), ..Session::default() }
    }

    /// Keeps every client process's client-side state, for [`Session::restore_client`] after a
    /// "what if" (the keyspace is put back by the backend, the client's state here).
    pub fn save_client(&mut self) -> Result<()> {
        self.saved_processes = self.adapters.len();
        self.adapters.iter().try_for_each(|a| a.save())
    }

    /// Puts back the client-side state kept by [`Session::save_client`]; a process first used in
    /// between is dropped, to start afresh when next needed.
    pub fn restore_client(&mut self) -> Result<()> {
        self.adapters.truncate(self.saved_processes);
        self.adapters.iter().try_for_each(|a| a.restore())
    }

    /// The calls recorded since the last [`Session::take_calls`].
    pub fn take_calls(&mut self) -> Vec<CallRecord> {
        self.record.as_mut().map(std::mem::take).unwrap_or_default()
    }
}

/// An error in evaluating a piece of the spec, with its file, line and field.
pub(crate) fn spec_error(spec: &Spec, src: &Src, reason: String, subject: &str, now_ms: i64, cost: u64) -> Error {
    Error::Invalid {
        context: format!("{}:{}", spec.origin.display(), src.line),
        field: src.field.clone(),
        reason: format!("{reason} (`{}`), at {}", src.text, describe_request(subject, now_ms, cost)),
    }
}

/// A decision field as an integer number of ms or units: nil is "not reported" (-1); fractions
/// round up for waits (a caller who waits the rounded time is never early) and down for remaining.
pub(crate) fn field(v: &Value<'_>, up: bool) -> std::result::Result<i64, String> {
    if matches!(v, Value::Nil) {
        return Ok(Decision::NOT_REPORTED);
    }
    match v {
        Value::Int(i) => Ok(*i),
        _ => match v.as_f64() {
            Some(x) if x.is_finite() => Ok(if up { x.ceil() } else { x.floor() } as i64),
            _ => Err(format!("expected a number, got {}", v.describe())),
        },
    }
}

/// The strings of a rendered buffer that end at `ends`, the first starting at `start`.
pub(crate) fn strings(buf: &str, ends: &[usize], mut start: usize) -> Vec<String> {
    ends.iter()
        .map(|&end| {
            let s = buf[start..end].to_string();
            start = end;
            s
        })
        .collect()
}

/// Renders templates into `out` (one string each, behind `pre`), reusing its strings.
#[inline]
pub(crate) fn render(
    spec: &Spec,
    t: &[Template],
    srcs: &[Src],
    out: &mut Vec<String>,
    pre: &str,
    req: &Request<'_>,
    replies: &[Option<Reply>],
) -> Result<()> {
    if out.len() != t.len() {
        out.resize_with(t.len(), String::new);
    }
    for (i, (tm, o)) in t.iter().zip(out.iter_mut()).enumerate() {
        o.clear();
        if !pre.is_empty() {
            o.push_str(pre);
        }
        if let Err(r) = tm.render(req, replies, o) {
            return Err(spec_error(spec, &srcs[i], r, req.subject, req.now_ms, req.cost));
        }
    }
    Ok(())
}

pub(crate) fn eval<'a>(
    spec: &Spec,
    e: &'a Expr,
    src: &Option<Src>,
    req: &'a Request<'a>,
    replies: &'a [Option<Reply>],
) -> Result<Value<'a>> {
    e.eval(req, replies).map_err(|r| match src {
        Some(s) => spec_error(spec, s, r, req.subject, req.now_ms, req.cost),
        None => Error::Invalid { context: spec.origin.display().to_string(), field: "call".into(), reason: r },
    })
}

/// Where a spec's call is written: `spec.toml:12` (a declarative call), or the adapter's file.
pub fn call_site(spec: &Spec, call: &str) -> String {
    match &spec.program {
        Program::Adapter { path, .. } => path.display().to_string(),
        Program::Declarative(d) => match d.calls.iter().find(|c| c.name == call) {
            Some(c) => format!("{}:{}", spec.origin.display(), c.line),
            None => spec.origin.display().to_string(),
        },
    }
}

/// A call as a phrase: ``call `r` (script main) at spec.toml:15``.
pub fn describe_call(spec: &Spec, c: &CallRecord) -> String {
    let target = match &spec.program {
        Program::Declarative(d) => d.calls.iter().find(|x| x.name == c.name).map(|x| &x.target),
        Program::Adapter { .. } => None,
    };
    let what = match target {
        Some(Target::Script(i)) => format!("script {}", spec.scripts[*i].name),
        Some(Target::Function { name, .. }) => format!("function {name}"),
        Some(Target::Command(n)) => format!("command {n}"),
        None if spec.scripts.iter().any(|s| s.name == c.target) => format!("script {}", c.target),
        None => c.target.clone(),
    };
    format!("call `{}` ({what}) at {}", c.name, call_site(spec, &c.name))
}
