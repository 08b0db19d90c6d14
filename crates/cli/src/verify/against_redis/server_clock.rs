//! The comparison on the server's clock: the arrivals run on the server with `TIME` read around
//! every request, then replayed on the emulator at the server's milliseconds, a request that
//! crossed a millisecond at each clock it may have run at.
use super::report::Divergence;
use limitlab_emulator::Emulator;
use limitlab_emulator::{Error, Result};
use limitlab_engine::backend::emulated::EmulatedBackend;
use limitlab_engine::backend::real::RealRedis;
use limitlab_engine::backend::Backend;
use limitlab_engine::limiter::{Decision, Limiter};
use limitlab_engine::spec::exec::Session;
use limitlab_engine::traffic::Arrival;

/// How far into a millisecond of the server's clock a request may start: later ones wait for the
/// next millisecond, so that a request (a few round trips) runs within the one it starts in.
const START_BY_US: i64 = 600;

/// The server's clock, read until it is at most [`START_BY_US`] into a millisecond (three tries).
fn aligned_time(real: &mut RealRedis) -> Result<i64> {
    let mut t = real.server_time_us()?;
    for _ in 0..3 {
        let into = t.rem_euclid(1000);
        if into <= START_BY_US {
            break;
        }
        std::thread::sleep(std::time::Duration::from_micros((1000 - into + 50) as u64));
        t = real.server_time_us()?;
    }
    Ok(t)
}

/// One request as run on the server's clock: its decision, the server's milliseconds it started and
/// ended in, and, when those differ, the absolute expiry (PEXPIRETIME) of every key its calls named,
/// read right after it: what tells which of those milliseconds the request's writes ran in.
pub(super) struct ServerRun {
    pub(super) decision: Decision,
    pub(super) clock: (i64, i64),
    pub(super) expiries: Vec<(String, i64)>,
    /// How many calls the request sent: each may have run in a later millisecond than the one
    /// before it (a PTTL read 999 right after a SET PX 1000 crossed into the next).
    pub(super) calls: usize,
    /// A lifecycle operation of the traffic, played and not decided (its `decision` means nothing).
    pub(super) op: Option<limitlab_engine::traffic::Op>,
}

/// Runs the arrivals on the server with TIME read before and after every request. On an error,
/// how many requests had completed.
pub(super) fn on_server_clock(
    limiter: &Limiter,
    arrivals: &[Arrival],
    real: &mut RealRedis,
) -> std::result::Result<Vec<ServerRun>, (usize, Error)> {
    let mut session = Session::recording();
    let mut out = Vec::with_capacity(arrivals.len());
    for (i, a) in arrivals.iter().enumerate() {
        let now = a.at.as_millis().0;
        let step = |real: &mut RealRedis, session: &mut Session| -> Result<ServerRun> {
            limiter.check_call(now, a.cost)?;
            let t0 = aligned_time(real)?.div_euclid(1000);
            real.set_time_ms(t0);
            if a.op != limitlab_engine::traffic::Op::Request {
                limiter.op(real, session, a.op, &a.key, now, a.cost)?;
                session.take_calls();
                return Ok(ServerRun {
                    decision: Decision::allowed_only(false),
                    clock: (t0, t0),
                    expiries: Vec::new(),
                    calls: 0,
                    op: Some(a.op),
                });
            }
            let decision = limiter.call(real, session, &a.key, now, a.cost)?;
            let t1 = real.server_time_us()?.div_euclid(1000).max(t0);
            let calls = session.take_calls();
            let mut expiries: Vec<(String, i64)> = Vec::new();
            if t1 > t0 {
                for k in calls.iter().flat_map(|c| &c.keys) {
                    if !expiries.iter().any(|(x, _)| x == k) {
                        if let limitlab_emulator::Reply::Int(at) = real.command(&[b"PEXPIRETIME", k.as_bytes()])? {
                            expiries.push((k.clone(), at));
                        }
                    }
                }
            }
            Ok(ServerRun { decision, clock: (t0, t1), expiries, calls: calls.len(), op: None })
        };
        out.push(step(real, &mut session).map_err(|e| (i, e))?);
    }
    Ok(out)
}

/// A request is replayed at no more than this many candidate clocks: the millisecond of each of
/// its calls, never going backwards, within the milliseconds the request ran in.
const MAX_CANDIDATES: usize = 4096;

/// Every way to give `calls` calls a millisecond in `lo..=hi`, never going backwards, as long as
/// there are at most [`MAX_CANDIDATES`]; otherwise the request ran in one millisecond for every
/// call (still at most [`MAX_CANDIDATES`] of them). The ones with every call in one millisecond
/// come first: a request crosses a millisecond far more rarely in the middle than around it.
fn schedules(lo: i64, hi: i64, calls: usize) -> Vec<Vec<i64>> {
    let calls = calls.max(1);
    let span = (hi - lo).max(0) as usize;
    let mut out: Vec<Vec<i64>> = (lo..=hi).take(MAX_CANDIDATES).map(|t| vec![t; calls]).collect();
    // C(calls + span, calls), stopping as soon as it passes the cap.
    let mut count: usize = 1;
    for i in 1..=calls {
        count = count.saturating_mul(span + i) / i;
        if count > MAX_CANDIDATES {
            return out;
        }
    }
    let mut cur = vec![lo; calls];
    loop {
        if cur.first() != cur.last() {
            out.push(cur.clone());
        }
        // The next nondecreasing sequence: raise the last call that can go later, and every call
        // after it to the same millisecond.
        let Some(i) = (0..calls).rev().find(|&i| cur[i] < hi) else { break };
        let t = cur[i] + 1;
        cur[i..].iter_mut().for_each(|c| *c = t);
    }
    out
}

/// The emulator with its clock set before each call to the next millisecond of a schedule (the
/// last one for calls past its end): a request replayed as the server ran it across milliseconds.
struct Scheduled<'a> {
    inner: &'a mut EmulatedBackend,
    times: &'a [i64],
    next: usize,
}

impl Scheduled<'_> {
    fn tick(&mut self) {
        if let Some(&t) = self.times.get(self.next).or(self.times.last()) {
            self.inner.set_time_ms(t);
        }
        self.next += 1;
    }
}

impl Backend for Scheduled<'_> {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn key_prefix(&self) -> &str {
        self.inner.key_prefix()
    }
    fn eval(&mut self, script: &limitlab_engine::backend::Script, keys: &[&[u8]], args: &[&[u8]]) -> Result<limitlab_emulator::Reply> {
        self.tick();
        self.inner.eval(script, keys, args)
    }
    fn command(&mut self, args: &[&[u8]]) -> Result<limitlab_emulator::Reply> {
        self.tick();
        self.inner.command(args)
    }
    fn fcall(
        &mut self,
        library: &limitlab_engine::backend::Script,
        function: &str,
        keys: &[&[u8]],
        args: &[&[u8]],
    ) -> Result<limitlab_emulator::Reply> {
        self.tick();
        self.inner.fcall(library, function, keys, args)
    }
    fn load_library(&mut self, library: &limitlab_engine::backend::Script) -> Result<limitlab_emulator::Reply> {
        self.inner.load_library(library)
    }
    fn cleanup(&mut self) -> Result<u64> {
        self.inner.cleanup()
    }
}

/// Replays the arrivals on a fresh emulator (keys under `prefix`), its clock set to the server's
/// millisecond of each request. A request whose calls may have run in several milliseconds runs
/// under each candidate clock ([`schedules`]) on a copy of the keyspace and keeps the first that
/// decides as the server did and leaves the keys it named with the server's expiry times (several
/// clocks can give the same decision and differ only in the expiry they write). Returns the
/// decisions and how many requests had candidates.
pub(super) fn replay_at(limiter: &Limiter, arrivals: &[Arrival], prefix: &str, runs: &[ServerRun]) -> Result<(Vec<Decision>, usize)> {
    let mut b = EmulatedBackend::with_prefix(Emulator::new(), prefix);
    let mut session = limiter.session();
    let mut out = Vec::with_capacity(arrivals.len());
    let mut uncertain = 0;
    for (a, run) in arrivals.iter().zip(runs) {
        let now = a.at.as_millis().0;
        let (lo, hi) = run.clock;
        if let Some(op) = run.op {
            b.set_time_ms(lo);
            limiter.op(&mut b, &mut session, op, &a.key, now, a.cost)?;
            continue;
        }
        if lo == hi {
            b.set_time_ms(lo);
            out.push(limiter.call(&mut b, &mut session, &a.key, now, a.cost)?);
            continue;
        }
        uncertain += 1;
        let saved = b.emu.snapshot_db();
        let seq = session.seq;
        // The client's own state goes back with the keyspace before every candidate.
        session.save_client()?;
        let candidates = schedules(lo, hi, run.calls);
        // (candidate, whether its expiries agree too)
        let mut best: Option<(usize, bool)> = None;
        for (c, times) in candidates.iter().enumerate() {
            b.emu.restore_db(saved.clone());
            session.seq = seq;
            session.restore_client()?;
            let d = limiter.call(&mut Scheduled { inner: &mut b, times, next: 0 }, &mut session, &a.key, now, a.cost)?;
            if d != run.decision {
                continue;
            }
            let agrees = run.expiries.iter().all(|(k, at)| {
                *at == -2 || matches!(b.command(&[b"PEXPIRETIME", k.as_bytes()]), Ok(limitlab_emulator::Reply::Int(e)) if e == *at)
            });
            if best.is_none() || agrees {
                best = Some((c, agrees));
            }
            if agrees {
                break;
            }
        }
        let times = &candidates[best.map_or(0, |(c, _)| c)];
        b.emu.restore_db(saved);
        session.seq = seq;
        session.restore_client()?;
        out.push(limiter.call(&mut Scheduled { inner: &mut b, times, next: 0 }, &mut session, &a.key, now, a.cost)?);
    }
    Ok((out, uncertain))
}

/// The first request where two runs of `arrivals` decided differently.
pub(super) fn first_difference(limiter: &Limiter, arrivals: &[Arrival], emulator: &[Decision], redis: &[Decision]) -> Option<Divergence> {
    (0..arrivals.len().min(emulator.len()).min(redis.len())).find(|&i| emulator[i] != redis[i]).map(|i| {
        let a = &arrivals[i];
        Divergence {
            call: i + 1,
            subject: a.key.clone(),
            now_ms: a.at.as_millis().0,
            cost: if limiter.takes_cost() { a.cost } else { 1 },
            emulator: emulator[i],
            redis: redis[i],
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_across_milliseconds_is_tried_with_each_call_in_either() {
        // One millisecond: one clock.
        assert_eq!(schedules(5, 5, 3), vec![vec![5, 5, 5]]);
        // Two milliseconds, four calls: both uniform clocks first, then the three crossings.
        let s = schedules(5, 6, 4);
        assert_eq!(s[..2], [vec![5; 4], vec![6; 4]]);
        assert_eq!(s.len(), 5);
        for x in [vec![5, 5, 5, 6], vec![5, 5, 6, 6], vec![5, 6, 6, 6]] {
            assert!(s.contains(&x), "{x:?} in {s:?}");
        }
        assert!(s.iter().all(|t| t.windows(2).all(|w| w[0] <= w[1])));
        // Three milliseconds, three calls: C(5, 3) = 10, all different.
        let s = schedules(0, 2, 3);
        assert_eq!(s.len(), 10);
        let mut d = s.clone();
        d.sort();
        d.dedup();
        assert_eq!(d.len(), 10);
        // Too many mixed clocks (a long stall): every uniform one, capped.
        let s = schedules(0, 99, 8);
        assert_eq!(s.len(), 100);
        assert!(s.iter().all(|t| t.iter().all(|&x| x == t[0])));
        assert_eq!(schedules(0, 1_000_000, 2).len(), MAX_CANDIDATES);
    }

    #[test]
    fn a_scheduled_replay_sets_each_call_to_its_millisecond() {
        let mut b = EmulatedBackend::with_prefix(Emulator::new(), "t:");
        let times = [1_000, 1_001];
        let mut s = Scheduled { inner: &mut b, times: &times, next: 0 };
        assert_eq!(s.command(&[b"SET", b"t:k", b"1", b"PX", b"1000"]).unwrap(), limitlab_emulator::Reply::Status("OK".into()));
        // Read one millisecond later, as a server that crossed into the next one answers.
        assert_eq!(s.command(&[b"PTTL", b"t:k"]).unwrap(), limitlab_emulator::Reply::Int(999));
        // Past the schedule's end, the last millisecond holds.
        assert_eq!(s.command(&[b"PTTL", b"t:k"]).unwrap(), limitlab_emulator::Reply::Int(999));
    }
}
