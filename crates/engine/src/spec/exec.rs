//! Running one request through a spec: render each call's KEYS and ARGV, run it on the backend,
//! then read the decision from the replies. A [`Session`] holds the buffers a hot loop reuses (and
//! an adapter's Lua state), so it belongs to the thread that drives the backend.
use std::path::Path;

use super::adapter;
use super::expr::{Expr, Request, Template, Value};
use super::types::{Spec, Src};
use crate::limiter::Decision;
use limitlab_emulator::Reply;
use limitlab_emulator::{Error, Result};

/// One call as it went to the backend, for tools that look at what a spec does (`check`,
/// `run --decisions`).
#[derive(Clone, Debug, PartialEq)]
pub struct CallRecord {
    /// The call's name in the spec (`call1`, `hits`, or the adapter's script/command name).
    pub name: String,
    /// The script's name in the spec, or the command.
    pub target: String,
    /// The keys as sent (with the backend's prefix).
    pub keys: Vec<String>,
    pub args: Vec<String>,
    pub reply: Reply,
}

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

/// What identifies a request in messages.
pub fn describe_request(subject: &str, now_ms: i64, cost: u64) -> String {
    format!("request (subject `{subject}`, now_ms {now_ms}, cost {cost})")
}

/// An error in evaluating a piece of the spec, with its file, line and field.
pub(crate) fn spec_error(spec: &Spec, src: &Src, reason: String, subject: &str, now_ms: i64, cost: u64) -> Error {
    Error::Invalid {
        context: format!("{}:{}", spec.origin.display(), src.line),
        field: src.field.clone(),
        reason: format!("{reason} (`{}`), at {}", src.text, describe_request(subject, now_ms, cost)),
    }
}

/// The `@user_script:N` line of a Redis script error, if it names one.
pub fn user_script_line(err: &str) -> Option<usize> {
    let i = match err.find("user_script:") {
        Some(i) => i + "user_script:".len(),
        // A function's error: `... on @user_function:N.` (the library's own line numbers).
        None => err.find("user_function:")? + "user_function:".len(),
    };
    let digits: String = err[i..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// A script's error reply as a [`Error::Script`]: Redis's text, the user's file and line with the
/// line itself, and the request.
pub(crate) fn script_error(path: &Path, body: &str, reply: &str, request: String) -> Error {
    let line = user_script_line(reply);
    let at = match line {
        Some(n) => {
            let text = body.lines().nth(n.saturating_sub(1)).unwrap_or("").trim();
            format!("{}:{n}: {text}", path.display())
        }
        None => path.display().to_string(),
    };
    Error::Script { reply: reply.to_string(), at, request }
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
