//! The engines a benchmark times, each running a [`Workload`]'s calls and keeping every decision:
//! the Rust reference model ("native"), the embedded emulator, and a real Redis over one connection,
//! with or without pipelining.
//!
//! Every engine formats KEYS and ARGV and reads replies through the limiter's spec (the path every
//! tool takes), so the figures differ by what runs the script, not by client code; one more engine,
//! [`emulator_direct`], calls a shipped script the hand-written way, to measure what the spec path
//! costs. Calls `0..skip` run first, untimed (warm-up, or filling a sliding log); the clock
//! covers calls `skip..skip + n` only. Decisions of all calls are returned, for checking.
//!
//! The timed calls run in [`CHUNKS`] consecutive chunks, each timed on its own, and an engine's rate
//! is its fastest chunk's. This machine is shared (a virtual machine whose host runs other work), and
//! a burst of outside load can halve a run's rate for a second or two; the fastest chunk is what the
//! engine does when nothing else intervenes. Every engine is measured the same way, so ratios stay
//! fair.
use std::hint::black_box;
use std::time::Duration;

use redis::ConnectionLike;

use super::workload::Workload;
use limitlab_emulator::clock::{Millis, Stopwatch};
use limitlab_emulator::{Emulator, Reply};
use limitlab_emulator::{Error, Result};
use limitlab_engine::backend::emulated::EmulatedBackend;
use limitlab_engine::backend::real::to_reply;
use limitlab_engine::backend::Backend;
use limitlab_engine::limiter::direct::Direct;
use limitlab_engine::limiter::{Decision, Limiter};

/// What one engine did: its decisions (all calls) and the seconds the timed calls took.
#[derive(Clone, Debug)]
pub struct Timed {
    pub decisions: Vec<Decision>,
    /// Calls timed.
    pub calls: u64,
    /// Seconds all the timed calls would take at the fastest chunk's rate (see the module notes).
    pub secs: f64,
    /// Emulator only: skiplist nodes its sorted sets visited during the timed calls (searches,
    /// walks, removals), a deterministic measure of the work the data structure did.
    pub zset_steps: Option<u64>,
}

impl Timed {
    /// Timed calls per second of wall-clock time.
    pub fn per_sec(&self) -> f64 {
        if self.secs > 0.0 {
            self.calls as f64 / self.secs
        } else {
            0.0
        }
    }
}

/// How many chunks the timed calls are split into.
pub const CHUNKS: usize = 5;

/// Runs `run(from, to)` over `start..start + n` in [`CHUNKS`] consecutive chunks (boundaries rounded
/// to multiples of `step`, e.g. a pipeline's depth), timing each. Returns the seconds `n` calls take
/// at the fastest chunk's rate.
pub fn time_chunks(
    start: usize,
    n: usize,
    step: usize,
    mut run: impl FnMut(usize, usize) -> Result<()>,
) -> Result<f64> {
    let step = step.max(1);
    let per = (n / CHUNKS).div_ceil(step).max(1) * step;
    let mut best = f64::INFINITY;
    let mut from = start;
    while from < start + n {
        let to = (from + per).min(start + n);
        let watch = Stopwatch::start();
        run(from, to)?;
        let secs = watch.elapsed_secs();
        // A short last chunk is timed but only counts when it is the only one.
        if to - from == per || from == start {
            best = best.min(secs / (to - from) as f64);
        }
        from = to;
    }
    Ok(if n == 0 { 0.0 } else { best * n as f64 })
}

/// The reference model, deciding in Rust with no script at all: the ceiling any engine could reach
/// (limitlab's own scripts only: `None` without a model).
pub fn native(w: &Workload, l: &Limiter, skip: usize, n: usize) -> Option<Timed> {
    let keys = w.keys("");
    let mut model = l.reference()?;
    let mut decisions = Vec::with_capacity(skip + n);
    for i in 0..skip {
        decisions.push(model.decide(&keys[w.user(i)], w.now_ms(i), 1));
    }
    let secs = time_chunks(skip, n, 1, |from, to| {
        for i in from..to {
            decisions.push(black_box(model.decide(&keys[w.user(i)], w.now_ms(i), 1)));
        }
        Ok(())
    })
    .expect("the native model cannot fail");
    Some(Timed { decisions, calls: n as u64, secs, zset_steps: None })
}

/// The embedded emulator through the spec path ([`Limiter::call`], as every tool runs scripts): a
/// fresh emulator, its virtual clock set to each call's time.
pub fn emulator(w: &Workload, l: &Limiter, skip: usize, n: usize) -> Result<Timed> {
    let mut backend = EmulatedBackend::default();
    let mut session = l.session();
    let subjects = w.subjects();
    let mut decisions = Vec::with_capacity(skip + n);
    let mut call = |i: usize, backend: &mut EmulatedBackend, decisions: &mut Vec<Decision>| -> Result<()> {
        let now = w.now_ms(i);
        backend.set_time_ms(now);
        decisions.push(l.call(backend, &mut session, &subjects[w.user(i)], now, 1)?);
        Ok(())
    };
    for i in 0..skip {
        call(i, &mut backend, &mut decisions)?;
    }
    let steps_before = zset_steps(&backend.emu);
    let secs = time_chunks(skip, n, 1, |from, to| {
        for i in from..to {
            call(i, &mut backend, &mut decisions)?;
        }
        Ok(())
    })?;
    let zset_steps = Some(zset_steps(&backend.emu).saturating_sub(steps_before));
    Ok(Timed { decisions, calls: n as u64, secs, zset_steps })
}

/// The embedded emulator called the hand-written way ([`Direct`]: KEYS and ARGV formatted and the
/// reply read by code that knows the script), as every tool did before specs: the baseline of the
/// spec path's cost.
pub fn emulator_direct(w: &Workload, l: &Direct, skip: usize, n: usize) -> Result<Timed> {
    let mut emu = Emulator::new();
    let sha = emu.script_load(l.script().as_bytes()).map_err(|r| Error::Redis(format!("SCRIPT LOAD: {r:?}")))?;
    let clock = emu.clock();
    let keys = w.keys("");
    let (mut kbuf, mut abuf) = (Vec::with_capacity(1), Vec::with_capacity(5));
    let mut decisions = Vec::with_capacity(skip + n);
    let mut call = |i: usize, emu: &mut Emulator, decisions: &mut Vec<Decision>| -> Result<()> {
        let now = w.now_ms(i);
        clock.set_millis(Millis(now));
        l.write_keys_and_args(&keys[w.user(i)], now, 1, &mut kbuf, &mut abuf);
        let k: [&[u8]; 1] = [kbuf[0].as_bytes()];
        let mut argv: [&[u8]; 5] = [b""; 5];
        for (slot, s) in argv.iter_mut().zip(abuf.iter()) {
            *slot = s.as_bytes();
        }
        let reply = emu.evalsha(sha.as_bytes(), &k, &argv[..abuf.len()]);
        decisions.push(l.parse_reply(&reply)?);
        Ok(())
    };
    for i in 0..skip {
        call(i, &mut emu, &mut decisions)?;
    }
    let steps_before = zset_steps(&emu);
    let secs = time_chunks(skip, n, 1, |from, to| {
        for i in from..to {
            call(i, &mut emu, &mut decisions)?;
        }
        Ok(())
    })?;
    let zset_steps = Some(zset_steps(&emu).saturating_sub(steps_before));
    Ok(Timed { decisions, calls: n as u64, secs, zset_steps })
}

/// Skiplist nodes visited so far by every sorted set in the emulator's keyspace.
fn zset_steps(emu: &Emulator) -> u64 {
    emu.core()
        .db
        .map
        .values()
        .map(|e| match &e.value {
            limitlab_emulator::keyspace::Value::ZSet(z) => z.steps(),
            _ => 0,
        })
        .sum()
}

/// The production sliding log's commands for the workload's calls, sent straight to the emulator
/// with no Lua: ZRANGE -1 -1 WITHSCORES, ZREMRANGEBYSCORE, ZCARD, ZADD, PEXPIRE, as the script
/// sends them when it admits a call later than every logged one (it sends ZCOUNT only for a call
/// at the newest logged time, which this workload never makes). Times the data structure alone; returns the seconds
/// and skiplist steps of the timed calls (decisions: none).
pub fn sliding_log_commands(w: &Workload, skip: usize, n: usize) -> Result<Timed> {
    let mut emu = Emulator::new();
    let clock = emu.clock();
    let key = w.keys("")[0].clone().into_bytes();
    let window = w.params.window_ms as i64;
    let call = |i: usize, emu: &mut Emulator| -> Result<()> {
        let t = w.now_ms(i);
        clock.set_millis(Millis(t));
        let (ts, cut, member) = (t.to_string(), (t - window).to_string(), (t % window).to_string());
        let replies = [
            emu.execute(&[b"ZRANGE", &key, b"-1", b"-1", b"WITHSCORES"]),
            emu.execute(&[b"ZREMRANGEBYSCORE", &key, b"-inf", cut.as_bytes()]),
            emu.execute(&[b"ZCARD", &key]),
            emu.execute(&[b"ZADD", &key, ts.as_bytes(), member.as_bytes()]),
            emu.execute(&[b"PEXPIRE", &key, window.to_string().as_bytes()]),
        ];
        if let Some(Reply::Error(e)) = replies.iter().find(|r| r.is_error()) {
            return Err(Error::Redis(e.clone()));
        }
        black_box(replies);
        Ok(())
    };
    for i in 0..skip {
        call(i, &mut emu)?;
    }
    let steps_before = zset_steps(&emu);
    let secs = time_chunks(skip, n, 1, |from, to| {
        for i in from..to {
            call(i, &mut emu)?;
        }
        Ok(())
    })?;
    let zset_steps = Some(zset_steps(&emu).saturating_sub(steps_before));
    Ok(Timed { decisions: Vec::new(), calls: n as u64, secs, zset_steps })
}

/// A real Redis through the spec path ([`Limiter::call`] on a [`RealRedis`], one request at a time,
/// each of its calls waiting for the reply before): the engine for specs whose requests make more
/// than one call, which cannot be pipelined. Keys go under the backend's prefix.
///
/// [`RealRedis`]: limitlab_engine::backend::real::RealRedis
pub fn redis_spec(
    real: &mut limitlab_engine::backend::real::RealRedis,
    w: &Workload,
    l: &Limiter,
    skip: usize,
    n: usize,
) -> Result<Timed> {
    let mut session = l.session();
    let subjects = w.subjects();
    let mut decisions = Vec::with_capacity(skip + n);
    let mut call =
        |i: usize, real: &mut limitlab_engine::backend::real::RealRedis, decisions: &mut Vec<Decision>| -> Result<()> {
            let now = w.now_ms(i);
            real.set_time_ms(now);
            decisions.push(l.call(real, &mut session, &subjects[w.user(i)], now, 1)?);
            Ok(())
        };
    for i in 0..skip {
        call(i, real, &mut decisions)?;
    }
    let secs = time_chunks(skip, n, 1, |from, to| {
        for i in from..to {
            call(i, real, &mut decisions)?;
        }
        Ok(())
    })?;
    Ok(Timed { decisions, calls: n as u64, secs, zset_steps: None })
}

/// The decisions of the workload's first `n` calls on an emulator whose keys never expire: where
/// they differ from the emulator's own, the script's decisions depend on when keys expire, which a
/// real server decides on its wall clock.
pub fn emulator_without_expiry(w: &Workload, l: &Limiter, n: usize) -> Result<Vec<Decision>> {
    let mut backend = EmulatedBackend::default();
    backend.emu.set_expiry(false);
    let mut session = l.session();
    let subjects = w.subjects();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let now = w.now_ms(i);
        backend.set_time_ms(now);
        out.push(l.call(&mut backend, &mut session, &subjects[w.user(i)], now, 1)?);
    }
    Ok(out)
}

/// The keys the first `n` calls of the workload create outside a key prefix, on an emulator (see
/// [`EmulatedBackend::with_prefix`]): a script that names its own keys, whose runs on a real
/// server would share them.
pub fn outside_keys(w: &Workload, l: &Limiter, n: usize) -> Result<Vec<String>> {
    let mut backend = EmulatedBackend::with_prefix(Emulator::new(), "ll:bench:");
    let mut session = l.session();
    let subjects = w.subjects();
    for i in 0..n {
        let now = w.now_ms(i);
        backend.set_time_ms(now);
        l.call(&mut backend, &mut session, &subjects[w.user(i)], now, 1)?;
    }
    Ok(backend.take_outside_keys())
}

/// One plain connection to a real Redis, sending pre-encoded RESP (pipelined or not).
pub struct RedisConn {
    url: String,
    conn: redis::Connection,
    buf: Vec<u8>,
}

/// Appends one command in RESP to `buf`.
fn encode(buf: &mut Vec<u8>, args: &[&[u8]]) {
    use std::io::Write as _;
    let _ = write!(buf, "*{}\r\n", args.len());
    for a in args {
        let _ = write!(buf, "${}\r\n", a.len());
        buf.extend_from_slice(a);
        buf.extend_from_slice(b"\r\n");
    }
}

impl RedisConn {
    /// Connects to a standalone server (no cluster routing: every key goes to this node).
    pub fn connect(url: &str, timeout: Duration) -> Result<RedisConn> {
        // Messages name the server without its password.
        let shown = limitlab_engine::backend::secret::redact(url);
        let fail = |e: redis::RedisError| Error::Connection(format!("{shown}: {e}"));
        let client = redis::Client::open(url).map_err(fail)?;
        let conn = client.get_connection_with_timeout(timeout).map_err(fail)?;
        conn.set_read_timeout(Some(timeout)).map_err(fail)?;
        conn.set_write_timeout(Some(timeout)).map_err(fail)?;
        Ok(RedisConn { url: shown, conn, buf: Vec::new() })
    }

    /// Runs one command and returns its reply (error replies included as [`Reply::Error`]).
    pub fn command(&mut self, args: &[&[u8]]) -> Result<Reply> {
        self.buf.clear();
        encode(&mut self.buf, args);
        let v = self.conn.req_packed_command(&self.buf).map_err(|e| Error::Connection(format!("{}: {e}", self.url)))?;
        Ok(to_reply(v))
    }

    /// The server's `redis_version`, from INFO server.
    pub fn version(&mut self) -> Option<String> {
        match self.command(&[b"INFO", b"server"]).ok()? {
            Reply::Bulk(b) => String::from_utf8_lossy(&b)
                .lines()
                .find_map(|l| l.strip_prefix("redis_version:").map(|v| v.trim().to_string())),
            _ => None,
        }
    }

    /// The server's own count of EVALSHA calls and the microseconds it spent running them (INFO
    /// commandstats: time inside the command, without reading the request or writing the reply).
    pub fn evalsha_stats(&mut self) -> Option<(u64, u64)> {
        let Reply::Bulk(b) = self.command(&[b"INFO", b"commandstats"]).ok()? else { return None };
        let text = String::from_utf8_lossy(&b);
        let Some(line) = text.lines().find_map(|l| l.strip_prefix("cmdstat_evalsha:")) else { return Some((0, 0)) };
        let field = |name: &str| -> Option<u64> {
            line.split(',')
                .find_map(|kv| kv.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
                .and_then(|v| v.trim().parse().ok())
        };
        Some((field("calls")?, field("usec")?))
    }

    /// Runs the workload's calls with EVALSHA, `depth` calls per round trip (1: no pipelining),
    /// on keys behind `prefix`. The spec must make one script call per request
    /// ([`Limiter::single_script`]).
    pub fn run(
        &mut self,
        w: &Workload,
        l: &Limiter,
        prefix: &str,
        depth: usize,
        skip: usize,
        n: usize,
    ) -> Result<Timed> {
        let Some(script) = l.single_script() else {
            return Err(Error::Invalid {
                context: l.name().to_string(),
                field: "call".into(),
                reason: "pipelining needs a spec that makes one script call per request".into(),
            });
        };
        match self.command(&[b"SCRIPT", b"LOAD", script.body.as_bytes()])? {
            Reply::Bulk(_) => {}
            other => return Err(Error::Redis(format!("SCRIPT LOAD replied {other:?}"))),
        }
        let depth = depth.max(1);
        let subjects = w.subjects();
        let sha = script.sha.as_bytes().to_vec();
        let (mut kbuf, mut abuf) = (Vec::with_capacity(1), Vec::with_capacity(5));
        let mut replies_buf = Vec::with_capacity(1);
        let mut decisions = Vec::with_capacity(skip + n);
        let mut batch = |from: usize, to: usize, this: &mut RedisConn, decisions: &mut Vec<Decision>| -> Result<()> {
            this.buf.clear();
            for i in from..to {
                l.render_single(prefix, &subjects[w.user(i)], w.now_ms(i), 1, &mut kbuf, &mut abuf)?;
                let numkeys = kbuf.len().to_string();
                let mut args: Vec<&[u8]> = Vec::with_capacity(3 + kbuf.len() + abuf.len());
                args.extend([b"EVALSHA".as_slice(), &sha, numkeys.as_bytes()]);
                args.extend(kbuf.iter().map(|k| k.as_bytes()));
                args.extend(abuf.iter().map(|a| a.as_bytes()));
                encode(&mut this.buf, &args);
            }
            let replies = if to - from == 1 {
                this.conn.req_packed_command(&this.buf).map(|v| vec![v])
            } else {
                this.conn.req_packed_commands(&this.buf, 0, to - from)
            }
            .map_err(|e| {
                let what = if to - from == 1 {
                    format!("EVALSHA (call {} of this run)", from + 1)
                } else {
                    format!("a pipelined batch of {} EVALSHA (calls {} to {} of this run)", to - from, from + 1, to)
                };
                Error::Connection(format!(
                    "{}: {what} failed after {} calls had been decided: {e}. Each call sent may or may not have run \
                     (the replies of a batch are read together, and are lost together); none was sent again, since \
                     a script run twice counts twice",
                    this.url,
                    decisions.len()
                ))
            })?;
            for (i, v) in (from..to).zip(replies) {
                decisions.push(l.read_single(to_reply(v), &subjects[w.user(i)], w.now_ms(i), 1, &mut replies_buf)?);
            }
            Ok(())
        };
        // Calls from..end, `depth` per round trip.
        let mut batches =
            |from: usize, end: usize, this: &mut RedisConn, decisions: &mut Vec<Decision>| -> Result<()> {
                let mut i = from;
                while i < end {
                    let to = (i + depth).min(end);
                    batch(i, to, this, decisions)?;
                    i = to;
                }
                Ok(())
            };
        batches(0, skip, self, &mut decisions)?;
        let secs = time_chunks(skip, n, depth, |from, end| batches(from, end, self, &mut decisions))?;
        Ok(Timed { decisions, calls: n as u64, secs, zset_steps: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workload::Check;
    use limitlab_engine::limiter::Variant;

    #[test]
    fn resp_encoding() {
        let mut b = Vec::new();
        encode(&mut b, &[b"GET", b"k"]);
        assert_eq!(b, b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
    }

    #[test]
    fn a_full_sliding_log_costs_log_l_skiplist_steps_per_call() {
        let steps = |l: u64| {
            let w = Workload::full_log(l);
            let t = sliding_log_commands(&w, l as usize, 500).unwrap();
            t.zset_steps.unwrap() as f64 / 500.0
        };
        let (a, b, c) = (steps(256), steps(2048), steps(16_384));
        // log2 L goes 8, 11, 14: the steps grow by about as much each time L grows 8 times.
        assert!(a < b && b < c, "{a} {b} {c}");
        assert!(c < 2.0 * b && b < 2.0 * a, "{a} {b} {c}");
        assert!(
            (c - b) < 2.0 * (b - a) && (b - a) < 2.0 * (c - b),
            "steps per decade of L should be even: {a} {b} {c}"
        );
    }

    #[test]
    fn time_chunks_runs_every_call_once_in_step_aligned_chunks() {
        for (start, n, step) in [(0, 10, 1), (7, 23, 1), (100, 1000, 16), (5, 3, 64), (0, 0, 1), (2, 101, 10)] {
            let mut seen = Vec::new();
            let mut ranges = Vec::new();
            let secs = time_chunks(start, n, step, |from, to| {
                ranges.push((from, to));
                seen.extend(from..to);
                Ok(())
            })
            .unwrap();
            assert_eq!(seen, (start..start + n).collect::<Vec<_>>(), "{start} {n} {step}");
            for &(from, _) in &ranges {
                assert_eq!((from - start) % step, 0, "chunks start on multiples of the step");
            }
            assert!(ranges.len() <= CHUNKS + 1 && (n == 0 || !ranges.is_empty()));
            assert!(secs >= 0.0);
            if n > 0 {
                assert!(secs.is_finite(), "a rate was measured");
            }
        }
        // An error stops the run and comes back.
        let r = time_chunks(0, 10, 1, |from, _| if from >= 4 { Err(Error::Redis("boom".into())) } else { Ok(()) });
        assert!(matches!(r, Err(Error::Redis(m)) if m == "boom"));
    }

    #[test]
    fn emulator_and_native_decide_as_the_reference() {
        let w = Workload::throughput();
        for v in Variant::ALL {
            let l = w.limiter(v).unwrap();
            let want = w.reference_decisions(&l, 600).unwrap();
            let e = emulator(&w, &l, 100, 500).unwrap();
            assert_eq!(e.decisions.len(), 600);
            assert_eq!(Check::of(&e.decisions, &want).differ, 0, "{v}");
            let d = emulator_direct(&w, &Direct::new(v, w.params).unwrap(), 100, 500).unwrap();
            assert_eq!(d.decisions, want, "{v}: the hand-written path decides as the spec path");
            let nat = native(&w, &l, 100, 500).unwrap();
            assert_eq!(nat.decisions, want, "{v}");
            assert_eq!(nat.calls, 500);
        }
    }
}
