//! Running a limiter: one request's calls on a backend and the decision they make
//! ([`Limiter::call`]), lifecycle operations ([`Limiter::op`]), the adapter's processes, and the
//! "what if" bookkeeping of client state that the oracles and the honesty judge use.
use crate::backend::Backend;
use crate::limiter::{Decision, Limiter};
use crate::spec::exec::*;
use crate::spec::expr::Request;
use crate::spec::{adapter, CompiledCall, Program, Target};
use limitlab_emulator::Reply;
use limitlab_emulator::{Error, Result};

/// The words a spec error starts with when `allowed` reads a whole reply array: a mistake in the
/// spec whatever the script answers, so `check` stops with it (exit 2) instead of judging.
pub const WHOLE_ARRAY: &str = "the whole reply is an array";

impl Limiter {
    /// What the adapter runs under: this limiter's spec, policy and reported fields.
    fn policy(&self) -> adapter::Policy<'_> {
        adapter::Policy { spec: self.spec(), params: self.params(), reports: self.reports() }
    }

    /// Runs one request: every call of the spec on `backend` (keys under its prefix), then the
    /// decision. A Redis error reply from a call, a failed expression or a reply of the wrong shape
    /// is an `Err` naming the spec's or script's file and line and the request.
    pub fn call(
        &self,
        backend: &mut dyn Backend,
        s: &mut Session,
        subject: &str,
        now_ms: i64,
        cost: u64,
    ) -> Result<Decision> {
        let spec = self.spec();
        if let Program::Adapter { .. } = &spec.program {
            let st = self.process(s, s.pin.unwrap_or_else(|| self.next_process(s)))?;
            let req = Request { subject, now_ms, cost, window_ms: self.params().window_ms as i64, seq: s.seq };
            s.seq += 1;
            return s.adapters[st].request(&self.policy(), backend, &req, &mut s.record);
        }
        if !s.libraries_loaded && !spec.libraries.is_empty() {
            for lib in &spec.libraries {
                if let Reply::Error(e) = backend.load_library(&lib.script)? {
                    return Err(script_error(
                        &lib.path,
                        &lib.script.body,
                        &e,
                        "loading the library before the run".into(),
                    ));
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
    fn run_calls(
        &self,
        backend: &mut dyn Backend,
        s: &mut Session,
        calls: &[CompiledCall],
        req: &Request<'_>,
    ) -> Result<()> {
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
        let Program::Adapter { path, source, .. } = &self.spec().program else { return Ok(0) };
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
    pub fn op(
        &self,
        backend: &mut dyn Backend,
        s: &mut Session,
        op: crate::spec::Op,
        subject: &str,
        now_ms: i64,
        cost: u64,
    ) -> Result<()> {
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
        if let Program::Adapter { .. } = &spec.program {
            let st = self.process(s, s.pin.unwrap_or_else(|| self.last_process(s)))?;
            return s.adapters[st].op(op.name(), &self.policy(), backend, &req, &mut s.record);
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
            None => match e.eval(req, replies).map_err(|r| spec_error(spec, src, r, subject, now_ms, cost))? {
                // A whole reply array is no admission: Lua's truth would read it as "yes" for every
                // request. The spec means one of its elements.
                crate::spec::expr::Value::Arr(a) => {
                    return Err(spec_error(
                        spec,
                        src,
                        format!(
                            "{WHOLE_ARRAY}: `allowed` reads a reply array of {} element(s), not one value; name the element that says yes or no, e.g. `r[1] == 1`",
                            a.len()
                        ),
                        subject,
                        now_ms,
                        cost,
                    ))
                }
                v => v.admits(),
            },
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
            ([c], Program::Declarative(_)) if c.when.is_none() => match c.target {
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
    pub fn read_single(
        &self,
        reply: Reply,
        subject: &str,
        now_ms: i64,
        cost: u64,
        replies: &mut Vec<Option<Reply>>,
    ) -> Result<Decision> {
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

    fn run_call(
        &self,
        backend: &mut dyn Backend,
        s: &mut Session,
        c: &CompiledCall,
        req: &Request<'_>,
    ) -> Result<Reply> {
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
