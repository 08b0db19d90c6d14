//! Running one request through a spec: render each call's KEYS and ARGV, run it on the backend,
//! then read the decision from the replies. A [`Session`] holds the buffers a hot loop reuses (and
//! an adapter's Lua state), so it belongs to the thread that drives the backend.
use std::path::Path;

use super::expr::{Expr, Request, Template, Value};
use super::{adapter, CompiledCall, Spec, Src, Target};
use crate::backend::Backend;
use crate::limiter::{Decision, Limiter};
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
    buf: String,
    ends: Vec<usize>,
    /// An adapter's Lua state, one per client process (`processes`), made at first use.
    pub(crate) adapters: Vec<adapter::AdapterState>,
    /// How many processes had state when it was last saved ([`Session::save_client`]).
    saved_processes: usize,
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
fn field(v: &Value<'_>, up: bool) -> std::result::Result<i64, String> {
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

impl Limiter {
    /// Runs one request: every call of the spec on `backend` (keys under its prefix), then the
    /// decision. A Redis error reply from a call, a failed expression or a reply of the wrong shape
    /// is an `Err` naming the spec's or script's file and line and the request.
    pub fn call(&self, backend: &mut dyn Backend, s: &mut Session, subject: &str, now_ms: i64, cost: u64) -> Result<Decision> {
        let spec = self.spec();
        if let super::Program::Adapter { .. } = &spec.program {
            let st = self.process(s, s.pin.unwrap_or_else(|| self.next_process(s)))?;
            let req = Request { subject, now_ms, cost, window_ms: self.params().window_ms as i64, seq: s.seq };
            s.seq += 1;
            return s.adapters[st].request(self, backend, &req, &mut s.record);
        }
        if !s.libraries_loaded && !spec.libraries.is_empty() {
            for lib in &spec.libraries {
                if let Reply::Error(e) = backend.load_library(&lib.script)? {
                    return Err(script_error(&lib.path, &lib.script.body, &e, "loading the library before the run".into()));
                }
            }
            s.libraries_loaded = true;
        }
        let prog = self.program();
        let req = Request { subject, now_ms, cost, window_ms: self.params().window_ms as i64, seq: s.seq };
        s.seq += 1;
        self.run_calls(backend, s, &prog.calls, &req)?;
        self.decision_of(&req, &s.replies)
    }

    /// Runs `calls` in order into `s.replies` (nil for a call whose `when` is false).
    fn run_calls(&self, backend: &mut dyn Backend, s: &mut Session, calls: &[CompiledCall], req: &Request<'_>) -> Result<()> {
        s.replies.clear();
        for c in calls {
            let run = match &c.when {
                Some(w) => eval(self.spec(), w, &c.srcs.when, req, &s.replies)?.truthy(),
                None => true,
            };
            if !run {
                s.replies.push(None);
                continue;
            }
            let reply = self.run_call(backend, s, c, req)?;
            s.replies.push(Some(reply));
        }
        Ok(())
    }

    /// Client process `i`, its adapter state made when first needed; `i` itself (0 for a spec
    /// without an adapter).
    fn process(&self, s: &mut Session, i: usize) -> Result<usize> {
        let super::Program::Adapter { path, source, .. } = &self.spec().program else { return Ok(0) };
        while s.adapters.len() <= i {
            s.adapters.push(adapter::AdapterState::new(path, source)?);
        }
        Ok(i)
    }

    /// The client process that took the last request (the first one before any): the one a "what
    /// if" about that request's decision asks.
    pub fn last_process(&self, s: &Session) -> usize {
        let n = self.spec().processes.max(1) as u64;
        ((s.seq + n - 1) % n) as usize
    }

    /// The client process that will take the next request.
    pub fn next_process(&self, s: &Session) -> usize {
        (s.seq % self.spec().processes.max(1) as u64) as usize
    }

    /// Runs a lifecycle operation (`op`: refund, reset, clear) for `subject` (a refund gives back a
    /// request of `cost`): the spec's `[[refund]]` (...) calls, or the adapter's `refund(req)` (...)
    /// in the process that handled the last request. An operation the client does not have is an
    /// error saying so.
    pub fn op(&self, backend: &mut dyn Backend, s: &mut Session, op: super::Op, subject: &str, now_ms: i64, cost: u64) -> Result<()> {
        let spec = self.spec();
        let Some(ix) = op.index() else { return self.call(backend, s, subject, now_ms, cost).map(|_| ()) };
        if !spec.has_op(op) {
            return Err(Error::Invalid {
                context: spec.origin.display().to_string(),
                field: op.name().into(),
                reason: format!(
                    "the traffic asks for a {} (subject `{subject}`, now_ms {now_ms}), but the spec has no [[{}]] calls (or the adapter no {}(req))",
                    op.name(),
                    op.name(),
                    op.name()
                ),
            });
        }
        let req = Request { subject, now_ms, cost, window_ms: self.params().window_ms as i64, seq: s.seq };
        if let super::Program::Adapter { .. } = &spec.program {
            let st = self.process(s, s.pin.unwrap_or_else(|| self.last_process(s)))?;
            return s.adapters[st].op(op.name(), self, backend, &req, &mut s.record);
        }
        self.run_calls(backend, s, &self.program().ops[ix], &req)
    }

    /// Runs `f` as a "what if" on the session: the client's state, `seq` and the pinned process
    /// are put back afterwards (the caller puts back the keyspace), and while it runs every request
    /// goes to one client process: the one pinned already, else the one that took the last
    /// request.
    pub(crate) fn what_if<T>(&self, s: &mut Session, f: impl FnOnce(&mut Session) -> Result<T>) -> Result<T> {
        let (seq, pin) = (s.seq, s.pin);
        s.save_client()?;
        s.pin = Some(pin.unwrap_or_else(|| self.last_process(s)));
        let out = f(s);
        s.seq = seq;
        s.pin = pin;
        s.restore_client()?;
        out
    }

    /// The decision from a request's replies (`None`: a skipped call).
    fn decision_of(&self, req: &Request<'_>, replies: &[Option<Reply>]) -> Result<Decision> {
        let (spec, prog) = (self.spec(), self.program());
        let (subject, now_ms, cost) = (req.subject, req.now_ms, req.cost);
        let (e, src) = prog.allowed.as_ref().expect("a declarative program has `allowed`");
        // The common shapes (`reply[1] == 1`, `reply[2]`) on integer replies are read directly;
        // everything else is evaluated. Both give the same answers (see `Expr::quick_truth`).
        let allowed = match e.quick_truth(replies) {
            Some(b) => b,
            None => e.eval(req, replies).map_err(|r| spec_error(spec, src, r, subject, now_ms, cost))?.admits(),
        };
        let mut d = Decision::allowed_only(allowed);
        for (slot, f, up) in [
            (&mut d.remaining, &prog.remaining, false),
            (&mut d.retry_after_ms, &prog.retry_after_ms, true),
            (&mut d.reset_after_ms, &prog.reset_ms, true),
            (&mut d.granted, &prog.granted, false),
        ] {
            if let Some((e, src)) = f {
                *slot = match e.reply_int(replies) {
                    Some(i) => i,
                    None => {
                        let v = e.eval(req, replies).map_err(|r| spec_error(spec, src, r, subject, now_ms, cost))?;
                        field(&v, up).map_err(|r| spec_error(spec, src, r, subject, now_ms, cost))?
                    }
                };
            }
        }
        Ok(d)
    }

    /// The script of a spec that makes exactly one call, to a script, with no condition: such a
    /// request can be pipelined ([`Limiter::render_single`], [`Limiter::read_single`]).
    pub fn single_script(&self) -> Option<&crate::backend::Script> {
        match (self.program().calls.as_slice(), &self.spec().program) {
            ([c], super::Program::Declarative { .. }) if c.when.is_none() => match c.target {
                Target::Script(i) => Some(&self.spec().scripts[i].script),
                Target::Command(_) | Target::Function { .. } => None,
            },
            _ => None,
        }
    }

    /// KEYS (behind `prefix`) and ARGV of a [`Limiter::single_script`] spec's one call, into
    /// buffers a hot loop reuses.
    pub fn render_single(
        &self,
        prefix: &str,
        subject: &str,
        now_ms: i64,
        cost: u64,
        keys: &mut Vec<String>,
        args: &mut Vec<String>,
    ) -> Result<()> {
        let c = &self.program().calls[0];
        let req = Request { subject, now_ms, cost, window_ms: self.params().window_ms as i64, seq: 0 };
        render(self.spec(), &c.keys, &c.srcs.keys, keys, prefix, &req, &[])?;
        for &i in &c.srcs.raw_keys {
            if let Some(k) = keys.get_mut(i) {
                k.drain(..prefix.len());
            }
        }
        render(self.spec(), &c.args, &c.srcs.args, args, "", &req, &[])
    }

    /// The decision from the reply of a [`Limiter::single_script`] spec's one call. `replies` is a
    /// buffer the caller reuses.
    pub fn read_single(&self, reply: Reply, subject: &str, now_ms: i64, cost: u64, replies: &mut Vec<Option<Reply>>) -> Result<Decision> {
        let req = Request { subject, now_ms, cost, window_ms: self.params().window_ms as i64, seq: 0 };
        if let Reply::Error(e) = &reply {
            let sc = &self.spec().scripts[match self.program().calls[0].target {
                Target::Script(i) => i,
                Target::Command(_) | Target::Function { .. } => 0,
            }];
            return Err(script_error(&sc.path, &sc.script.body, e, describe_request(subject, now_ms, cost)));
        }
        replies.clear();
        replies.push(Some(reply));
        self.decision_of(&req, replies)
    }

    fn run_call(&self, backend: &mut dyn Backend, s: &mut Session, c: &CompiledCall, req: &Request<'_>) -> Result<Reply> {
        let spec = self.spec();
        if let Err((i, r)) = c.layout.render(req, &s.replies, backend.key_prefix(), &mut s.buf, &mut s.ends) {
            let src = if i < c.srcs.keys.len() { &c.srcs.keys[i] } else { &c.srcs.args[i - c.srcs.keys.len()] };
            return Err(spec_error(spec, src, r, req.subject, req.now_ms, req.cost));
        }
        let (buf, ends) = (s.buf.as_bytes(), s.ends.as_slice());
        let nkeys = c.layout.keys();
        let reply = {
            // The strings as slices of `buf`: on the stack up to 8 keys and args in all.
            let mut stack: [&[u8]; 8] = [b""; 8];
            let mut spill: Vec<&[u8]> = Vec::new();
            let all: &mut [&[u8]] = if ends.len() <= stack.len() {
                &mut stack[..ends.len()]
            } else {
                spill.resize(ends.len(), b"");
                &mut spill
            };
            let mut start = 0;
            for (slot, &end) in all.iter_mut().zip(ends) {
                *slot = &buf[start..end];
                start = end;
            }
            let (k, a): (&[&[u8]], &[&[u8]]) = all.split_at(nkeys);
            match &c.target {
                Target::Script(i) => backend.eval(&spec.scripts[*i].script, k, a)?,
                Target::Command(name) => {
                    let mut argv: Vec<&[u8]> = Vec::with_capacity(1 + k.len() + a.len());
                    argv.push(name.as_bytes());
                    argv.extend_from_slice(k);
                    argv.extend_from_slice(a);
                    backend.command(&argv)?
                }
                Target::Function { name, library } => backend.fcall(&spec.libraries[*library].script, name, k, a)?,
            }
        };
        if let Some(rec) = &mut s.record {
            rec.push(CallRecord {
                name: c.name.clone(),
                target: match &c.target {
                    Target::Script(i) => spec.scripts[*i].name.clone(),
                    Target::Command(n) | Target::Function { name: n, .. } => n.clone(),
                },
                keys: strings(&s.buf, &s.ends[..nkeys], 0),
                args: strings(&s.buf, &s.ends[nkeys..], s.ends[..nkeys].last().copied().unwrap_or(0)),
                reply: reply.clone(),
            });
        }
        if let Reply::Error(e) = &reply {
            let request = describe_request(req.subject, req.now_ms, req.cost);
            return Err(match &c.target {
                Target::Script(i) => {
                    let sc = &spec.scripts[*i];
                    script_error(&sc.path, &sc.script.body, e, request)
                }
                Target::Function { library, .. } => {
                    let lib = &spec.libraries[*library];
                    script_error(&lib.path, &lib.script.body, e, request)
                }
                Target::Command(n) => Error::Script {
                    reply: e.clone(),
                    at: format!("{}:{} (call `{}`: command {n})", spec.origin.display(), c.srcs.line, c.name),
                    request,
                },
            });
        }
        Ok(reply)
    }
}

/// The strings of a rendered buffer that end at `ends`, the first starting at `start`.
fn strings(buf: &str, ends: &[usize], mut start: usize) -> Vec<String> {
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
fn render(
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

fn eval<'a>(spec: &Spec, e: &'a Expr, src: &Option<Src>, req: &'a Request<'a>, replies: &'a [Option<Reply>]) -> Result<Value<'a>> {
    e.eval(req, replies).map_err(|r| match src {
        Some(s) => spec_error(spec, s, r, req.subject, req.now_ms, req.cost),
        None => Error::Invalid { context: spec.origin.display().to_string(), field: "call".into(), reason: r },
    })
}
