//! Accuracy properties of every shipped script, checked on the emulator (each script through
//! `EVALSHA`) over arbitrary arrivals: random times, subjects and costs (0, 1, the capacity, one
//! more than the capacity). 1,000 cases per script and property; failures shrink and are saved in
//! `proptest-regressions/accuracy_props.txt`, which is committed and replayed first.
//!
//! The properties, and which scripts promise them:
//! - **bound**: with clocks moving forward, the units admitted in any interval of `window_ms`
//!   milliseconds, per subject, are at most `limit` for the sliding logs, `2 * limit` for the fixed
//!   windows and the sliding window counters, and `capacity + limit` (capacity plus the rate times
//!   the window) for the token buckets and GCRA. All nine scripts. The production token bucket and
//!   GCRA also keep the tighter `capacity + floor(limit * (window_ms - 1) / window_ms)`: an interval
//!   of `window_ms` whole milliseconds refills for `window_ms - 1` of them.
//! - **remaining**: never negative, and equal to the script's Rust reference model, whatever the
//!   clocks do (callers skewed either way, time jumping back). Production scripts only: the seed
//!   article's scripts reply 1 or 0 and report no `remaining`.
//! - **retry_after**: a refusal's `retry_after_ms` is exact: the same request at
//!   `now + retry_after_ms` is admitted when nothing else arrived in between, and one millisecond
//!   earlier it is still refused. A refusal with `-1` means the cost exceeds the capacity. Production
//!   scripts only: the seed's scripts report no wait, so they promise nothing here.
//! - **TTL sufficiency**: with clocks moving forward, every reply is the same whether expired keys
//!   vanish or the emulator keeps them (`Db::expiry_enabled = false`): a TTL never drops state the
//!   script still needs. All nine scripts. `a_ttl_of_one_window_is_caught` runs the same check on a
//!   deliberately broken sliding window counter (`short_ttl`: `scripts/sliding_window.lua` with its
//!   TTL cut to one window) and requires it to fail.
//! - **clock skew**: a call whose `now_ms` is older than what the subject's state has seen (a caller
//!   whose clock lags the others') never errors, never replies a negative figure, is admitted only
//!   when the same request at the newest time would be, and never gives capacity back: a cost-0
//!   probe at the newest time shows no more `remaining` after it than before. Production scripts
//!   only: the seed's sliding log can undercount when the clock goes back (two members get the same
//!   name; see `limitlab_engine::limiter::sliding_log`'s tests), and the seed's scripts report no figures.
use limitlab::metrics::max_in_any_window;
use limitlab_engine::backend::emulated::EmulatedBackend;
use limitlab_engine::backend::Backend;
use limitlab_engine::limiter::{subject_key, Algorithm, Decision, Limiter, Params, Variant};
use limitlab_engine::spec::exec::Session;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngAlgorithm, TestError, TestRng, TestRunner};

/// The line of `scripts/sliding_window.lua` that sets the key's TTL after counting a request: to the
/// end of the next window, where the current count still weighs on the estimate as the previous one.
const TTL_LINE: &str = "call('PEXPIRE', key, lag + left + window)";
/// The same line in the broken variant: one window.
const SHORT_TTL_LINE: &str = "call('PEXPIRE', key, window)";

/// A deliberately broken sliding window counter, made from the production script by replacing its
/// TTL line: its keys live one window instead of until the end of the next, so the count of the
/// window that has just ended can vanish while it still weighs on the estimate, and the limiter
/// then admits more than it should. Never deployed; it exists to show the TTL check catching it.
fn short_ttl() -> String {
    let script = Variant::SLIDING_WINDOW.script();
    assert_eq!(
        script.matches(TTL_LINE).count(),
        1,
        "scripts/sliding_window.lua should set its TTL in exactly one line, `{TTL_LINE}`"
    );
    script.replacen(TTL_LINE, SHORT_TTL_LINE, 1)
}

/// How many subjects a case spreads its calls over.
const SUBJECTS: usize = 3;

/// The server clock at the start of every case (ms); far enough from 0 that callers may lag.
const START: i64 = 1_000_000;

/// A script on a fresh emulator, with the buffers a hot loop reuses.
struct Emu {
    backend: EmulatedBackend,
    /// The limiter, its script possibly replaced; called through its spec as every tool calls it.
    limiter: Limiter,
    session: Session,
    subjects: Vec<String>,
    keys: Vec<String>,
}

impl Emu {
    /// `limiter`'s own script.
    fn new(limiter: &Limiter) -> Emu {
        Emu::with_body(limiter, limiter.script())
    }

    /// Another body with `limiter`'s KEYS, ARGV and reply (a variant of its script).
    fn with_body(limiter: &Limiter, body: &str) -> Emu {
        let limiter = limiter.with_script_body(body);
        let subjects: Vec<String> = (0..SUBJECTS).map(|i| format!("u{i}")).collect();
        Emu {
            backend: EmulatedBackend::default(),
            session: limiter.session(),
            limiter,
            keys: subjects.iter().map(|s| subject_key(s)).collect(),
            subjects,
        }
    }

    /// Keeps keys past their deadline (expiry switched off).
    fn without_expiry(self) -> Emu {
        self.backend.emu.set_expiry(false);
        self
    }

    /// One call at server time `server` with the caller's `now`; an error reply fails the case.
    fn call(&mut self, server: i64, subject: u8, now: i64, cost: u64) -> Result<Decision, TestCaseError> {
        self.backend.set_time_ms(server);
        let key = &self.keys[subject as usize];
        self.limiter.call(&mut self.backend, &mut self.session, &self.subjects[subject as usize], now, cost).map_err(
            |e| {
                TestCaseError::fail(format!(
                    "{} (server {server}, key {key}, now {now}, cost {cost}): {e}",
                    self.limiter.name()
                ))
            },
        )
    }
}

/// One arrival of a forward-moving case: `gap` ms after the previous one.
#[derive(Clone, Debug)]
struct Arrival {
    gap: i64,
    subject: u8,
    cost: u64,
}

/// Arrivals whose clock only moves forward.
#[derive(Clone, Debug)]
struct Forward {
    params: Params,
    /// The callers' clock minus the server's, constant through the case (only the retry_after
    /// property uses it; 0 elsewhere).
    offset: i64,
    arrivals: Vec<Arrival>,
}

fn params(v: Variant) -> impl Strategy<Value = Params> {
    let window = prop::sample::select(vec![1u64, 2, 3, 7, 10, 100, 999, 1000, 60_000]);
    (1u64..=12, window, prop::option::of(1u64..=15)).prop_map(move |(limit, window, burst)| {
        let p = Params::new(limit, window);
        match burst {
            Some(b) if v.takes_burst() => p.with_burst(b),
            _ => p,
        }
    })
}

/// Gaps that land on window edges often: none, a few ms, anything up to three windows.
fn gap(w: i64) -> impl Strategy<Value = i64> {
    prop_oneof![
        3 => Just(0i64),
        4 => 1i64..=3,
        3 => 0..=w,
        1 => Just(w),
        1 => Just((w - 1).max(0)),
        2 => 0..=3 * w,
    ]
}

fn cost(cap: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => Just(1u64),
        1 => Just(0u64),
        1 => Just(cap),
        1 => Just(cap + 1),
        1 => 1..=cap,
    ]
}

fn forward(v: Variant, with_offset: bool) -> impl Strategy<Value = Forward> {
    params(v).prop_flat_map(move |p| {
        let w = p.window_ms as i64;
        let arrival = (gap(w), 0u8..SUBJECTS as u8, cost(p.capacity())).prop_map(|(gap, subject, cost)| Arrival {
            gap,
            subject,
            cost,
        });
        let offset = if with_offset { prop_oneof![3 => Just(0i64), 1 => -w..=w].boxed() } else { Just(0i64).boxed() };
        (Just(p), offset, prop::collection::vec(arrival, 1..40)).prop_map(|(params, offset, arrivals)| Forward {
            params,
            offset,
            arrivals,
        })
    })
}

fn limiter(v: Variant, p: Params) -> Result<Limiter, TestCaseError> {
    Limiter::new(v, p).map_err(|e| TestCaseError::reject(e.to_string()))
}

/// The units a call takes as the script counts them (the seed's scripts count every call as 1).
fn units(v: Variant, cost: u64) -> u64 {
    if v.takes_cost() {
        cost
    } else {
        1
    }
}

// ---------------------------------------------------------------------------------------------
// Bound: the most admitted in any interval of window_ms.

/// The bound for `v`, and a tighter one the production token bucket and GCRA keep.
fn bounds(v: Variant, p: Params) -> (u64, u64) {
    let (l, w, cap) = (p.limit, p.window_ms, p.capacity());
    match v.algorithm() {
        Algorithm::SlidingLog => (l, l),
        Algorithm::FixedWindow | Algorithm::SlidingWindow => (2 * l, 2 * l),
        Algorithm::TokenBucket | Algorithm::Gcra => {
            let tight = if v.takes_burst() { cap + l * (w - 1) / w } else { cap + l };
            (cap + l, tight)
        }
    }
}

fn check_bound(v: Variant, case: &Forward) -> Result<(), TestCaseError> {
    let l = limiter(v, case.params)?;
    let mut emu = Emu::new(&l);
    let mut admitted: Vec<Vec<(i64, u64)>> = vec![Vec::new(); SUBJECTS];
    let mut now = START;
    for a in &case.arrivals {
        now += a.gap;
        let d = emu.call(now, a.subject, now, a.cost)?;
        if d.allowed && units(v, a.cost) > 0 {
            admitted[a.subject as usize].push((now, units(v, a.cost)));
        }
    }
    let (bound, tight) = bounds(v, case.params);
    for (s, times) in admitted.iter_mut().enumerate() {
        let (most, from) = max_in_any_window(times, case.params.window_ms as i64);
        prop_assert!(
            most <= bound,
            "{}: subject {} admitted {} in the window from {} (bound {})",
            v,
            s,
            most,
            from,
            bound
        );
        prop_assert!(
            most <= tight,
            "{}: subject {} admitted {} in the window from {} (tight bound {})",
            v,
            s,
            most,
            from,
            tight
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Remaining: never negative, equal to the reference, under any clocks.

#[derive(Clone, Debug)]
struct AnyCall {
    subject: u8,
    /// Server clock step (may be negative in `same` mode: a replayed trace out of order).
    step: i64,
    /// The caller's clock minus the server's (skew mode).
    skew: i64,
    cost: u64,
}

#[derive(Clone, Debug)]
struct AnyClocks {
    params: Params,
    /// True: the caller's clock is the server's, and both may jump back. False: the server's only
    /// moves forward and each caller is off by its own skew.
    same: bool,
    calls: Vec<AnyCall>,
}

fn any_clocks(v: Variant) -> impl Strategy<Value = AnyClocks> {
    params(v).prop_flat_map(|p| {
        let w = p.window_ms as i64;
        let step = prop_oneof![8 => gap(w), 2 => -2 * w..=0];
        let skew = prop_oneof![3 => Just(0i64), 1 => -2 * w..=2 * w];
        let call = (0u8..SUBJECTS as u8, step, skew, cost(p.capacity()))
            .prop_map(|(subject, step, skew, cost)| AnyCall { subject, step, skew, cost });
        (Just(p), any::<bool>(), prop::collection::vec(call, 1..40)).prop_map(|(params, same, calls)| AnyClocks {
            params,
            same,
            calls,
        })
    })
}

/// Replies' numbers are never negative (`retry_after_ms` -1 aside), and an admission never
/// names a wait.
fn check_signs(v: Variant, d: &Decision, at: &str) -> Result<(), TestCaseError> {
    prop_assert!(d.remaining >= 0, "{} {}: remaining {}", v, at, d.remaining);
    prop_assert!(d.reset_after_ms >= 0, "{} {}: reset_after {}", v, at, d.reset_after_ms);
    prop_assert!(d.retry_after_ms >= -1, "{} {}: retry_after {}", v, at, d.retry_after_ms);
    if d.allowed {
        prop_assert_eq!(d.retry_after_ms, -1, "{} {}: admitted with a wait", v, at);
    }
    Ok(())
}

fn check_remaining(v: Variant, case: &AnyClocks) -> Result<(), TestCaseError> {
    let l = limiter(v, case.params)?;
    let mut emu = Emu::new(&l);
    let mut model = l.reference().expect("a shipped script's model");
    let mut server = START;
    for (i, c) in case.calls.iter().enumerate() {
        let now = if case.same {
            server = (server + c.step).max(0);
            server
        } else {
            server += c.step.max(0);
            (server + c.skew).max(0)
        };
        let d = emu.call(server, c.subject, now, c.cost)?;
        let at = format!("call {i} (server {server}, now {now}, cost {})", c.cost);
        check_signs(v, &d, &at)?;
        let want = model.decide_at(server, &emu.keys[c.subject as usize], now, c.cost);
        prop_assert_eq!(d.remaining, want.remaining, "{} {}: remaining differs from the reference", v, at);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// retry_after: exact.

fn check_retry(v: Variant, case: &Forward) -> Result<(), TestCaseError> {
    let l = limiter(v, case.params)?;
    let cap = case.params.capacity();
    let mut emu = Emu::new(&l);
    let mut server = START;
    for (i, a) in case.arrivals.iter().enumerate() {
        server += a.gap;
        let now = server + case.offset;
        let d = emu.call(server, a.subject, now, a.cost)?;
        let at = format!("call {i} (now {now}, cost {})", a.cost);
        check_signs(v, &d, &at)?;
        if d.allowed {
            continue;
        }
        if d.retry_after_ms == -1 {
            prop_assert!(a.cost > cap, "{} {}: refused as never fitting, but the capacity is {}", v, at, cap);
            continue;
        }
        let wait = d.retry_after_ms;
        prop_assert!(a.cost <= cap, "{} {}: a cost above the capacity {} was given a wait", v, at, cap);
        if wait >= 1 {
            let early = emu.call(server + wait - 1, a.subject, now + wait - 1, a.cost)?;
            prop_assert!(!early.allowed, "{} {}: retry_after {} but admitted 1 ms earlier", v, at, wait);
        }
        server += wait;
        let again = emu.call(server, a.subject, now + wait, a.cost)?;
        prop_assert!(again.allowed, "{} {}: retry_after {} but refused then ({:?})", v, at, wait, again);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// TTL sufficiency: the same replies with expiry on and off.

fn check_ttl(v: Variant, body: &str, case: &Forward) -> Result<(), TestCaseError> {
    let l = limiter(v, case.params)?;
    let mut expiring = Emu::with_body(&l, body);
    let mut keeping = Emu::with_body(&l, body).without_expiry();
    let mut now = START;
    for (i, a) in case.arrivals.iter().enumerate() {
        now += a.gap;
        let with = expiring.call(now, a.subject, now, a.cost)?;
        let without = keeping.call(now, a.subject, now, a.cost)?;
        prop_assert_eq!(
            with,
            without,
            "{} call {} (subject {}, now {}, cost {}): expired keys vanishing changes the reply",
            v,
            i,
            a.subject,
            now,
            a.cost
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Clock skew: a lagging caller never refunds, never goes negative, never errors.

#[derive(Clone, Debug)]
enum Step {
    /// The server's clock moves on by `gap` and the caller's agrees.
    OnTime { gap: i64, subject: u8, cost: u64 },
    /// A caller whose clock is `lag` ms behind the server's (which does not move).
    Lagging { lag: i64, subject: u8, cost: u64 },
}

#[derive(Clone, Debug)]
struct Skewed {
    params: Params,
    steps: Vec<Step>,
}

fn skewed(v: Variant) -> impl Strategy<Value = Skewed> {
    params(v).prop_flat_map(|p| {
        let w = p.window_ms as i64;
        let cap = p.capacity();
        let on_time = (gap(w), 0u8..SUBJECTS as u8, cost(cap)).prop_map(|(gap, subject, cost)| Step::OnTime {
            gap,
            subject,
            cost,
        });
        let lag = prop_oneof![2 => 1i64..=3, 2 => 1..=w, 1 => Just(w), 1 => 1..=3 * w];
        let lagging =
            (lag, 0u8..SUBJECTS as u8, cost(cap)).prop_map(|(lag, subject, cost)| Step::Lagging { lag, subject, cost });
        let step = prop_oneof![3 => on_time, 2 => lagging];
        (Just(p), prop::collection::vec(step, 1..40)).prop_map(|(params, steps)| Skewed { params, steps })
    })
}

fn check_skew(v: Variant, case: &Skewed) -> Result<(), TestCaseError> {
    let l = limiter(v, case.params)?;
    let mut emu = Emu::new(&l);
    let mut server = START;
    for (i, s) in case.steps.iter().enumerate() {
        match *s {
            Step::OnTime { gap, subject, cost } => {
                server += gap;
                let d = emu.call(server, subject, server, cost)?;
                check_signs(v, &d, &format!("step {i} (on time {server}, cost {cost})"))?;
            }
            Step::Lagging { lag, subject, cost } => {
                let now = server - lag;
                let at = format!("step {i} (server {server}, lagging now {now}, cost {cost})");
                let before = emu.call(server, subject, server, 0)?;
                let d = emu.call(server, subject, now, cost)?;
                check_signs(v, &d, &at)?;
                let after = emu.call(server, subject, server, 0)?;
                if d.allowed && cost > 0 {
                    prop_assert!(
                        cost as i64 <= before.remaining,
                        "{} {}: admitted, but at the newest time only {} remained",
                        v,
                        at,
                        before.remaining
                    );
                }
                prop_assert!(
                    after.remaining <= before.remaining,
                    "{} {}: refunded: remaining at the newest time went from {} to {}",
                    v,
                    at,
                    before.remaining,
                    after.remaining
                );
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------

fn config() -> Config {
    Config {
        cases: 1000,
        // Cargo runs integration tests from the package root.
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/accuracy_props.txt"))),
        ..Config::default()
    }
}

macro_rules! properties {
    ($check:ident, $strategy:expr, [$($name:ident => $v:expr),* $(,)?]) => {$(
        proptest! {
            #![proptest_config(config())]
            #[test]
            fn $name(case in $strategy($v)) {
                $check($v, &case)?;
            }
        }
    )*};
}

fn forward_plain(v: Variant) -> impl Strategy<Value = Forward> {
    forward(v, false)
}

fn forward_offset(v: Variant) -> impl Strategy<Value = Forward> {
    forward(v, true)
}

fn check_own_ttl(v: Variant, case: &Forward) -> Result<(), TestCaseError> {
    check_ttl(v, v.script(), case)
}

properties!(check_bound, forward_plain, [
    bound_fixed_window => Variant::FIXED_WINDOW,
    bound_sliding_window => Variant::SLIDING_WINDOW,
    bound_sliding_log => Variant::SLIDING_LOG,
    bound_token_bucket => Variant::TOKEN_BUCKET,
    bound_gcra => Variant::GCRA,
    bound_seed_fixed_window => Variant::SEED_FIXED_WINDOW,
    bound_seed_sliding_window => Variant::SEED_SLIDING_WINDOW,
    bound_seed_sliding_log => Variant::SEED_SLIDING_LOG,
    bound_seed_token_bucket => Variant::SEED_TOKEN_BUCKET,
]);

properties!(check_remaining, any_clocks, [
    remaining_fixed_window => Variant::FIXED_WINDOW,
    remaining_sliding_window => Variant::SLIDING_WINDOW,
    remaining_sliding_log => Variant::SLIDING_LOG,
    remaining_token_bucket => Variant::TOKEN_BUCKET,
    remaining_gcra => Variant::GCRA,
]);

properties!(check_retry, forward_offset, [
    retry_after_fixed_window => Variant::FIXED_WINDOW,
    retry_after_sliding_window => Variant::SLIDING_WINDOW,
    retry_after_sliding_log => Variant::SLIDING_LOG,
    retry_after_token_bucket => Variant::TOKEN_BUCKET,
    retry_after_gcra => Variant::GCRA,
]);

properties!(check_own_ttl, forward_plain, [
    ttl_fixed_window => Variant::FIXED_WINDOW,
    ttl_sliding_window => Variant::SLIDING_WINDOW,
    ttl_sliding_log => Variant::SLIDING_LOG,
    ttl_token_bucket => Variant::TOKEN_BUCKET,
    ttl_gcra => Variant::GCRA,
    ttl_seed_fixed_window => Variant::SEED_FIXED_WINDOW,
    ttl_seed_sliding_window => Variant::SEED_SLIDING_WINDOW,
    ttl_seed_sliding_log => Variant::SEED_SLIDING_LOG,
    ttl_seed_token_bucket => Variant::SEED_TOKEN_BUCKET,
]);

properties!(check_skew, skewed, [
    skew_fixed_window => Variant::FIXED_WINDOW,
    skew_sliding_window => Variant::SLIDING_WINDOW,
    skew_sliding_log => Variant::SLIDING_LOG,
    skew_token_bucket => Variant::TOKEN_BUCKET,
    skew_gcra => Variant::GCRA,
]);

/// The switch the TTL property relies on: with expiry off, a key outlives its deadline.
#[test]
fn switching_expiry_off_keeps_keys_past_their_deadline() {
    for (enabled, want) in
        [(true, limitlab_emulator::Reply::Nil), (false, limitlab_emulator::Reply::Bulk(b"1".to_vec()))]
    {
        let mut b = EmulatedBackend::default();
        b.emu.set_expiry(enabled);
        b.set_time_ms(START);
        b.command(&[b"SET", b"k", b"1", b"PX", b"10"]).unwrap();
        b.set_time_ms(START + 11);
        assert_eq!(b.command(&[b"GET", b"k"]).unwrap(), want, "expiry_enabled = {enabled}");
    }
}

/// The broken variant differs from the production script in its TTL line only, so what the TTL
/// check catches in it is that line and nothing else.
#[test]
fn the_broken_variant_is_the_production_script_but_for_one_line() {
    let good: Vec<&str> = Variant::SLIDING_WINDOW.script().lines().collect();
    let bad = short_ttl();
    let bad: Vec<&str> = bad.lines().collect();
    assert_eq!(good.len(), bad.len());
    let diff: Vec<(&&str, &&str)> = good.iter().zip(&bad).filter(|(g, b)| g != b).collect();
    assert_eq!(diff.len(), 1, "{diff:?}");
    assert!(diff[0].0.contains(TTL_LINE), "{diff:?}");
    assert!(diff[0].1.contains(SHORT_TTL_LINE), "{diff:?}");
}

/// A hand-made case: two requests at 500 ms with limit 2 per second. At 1,600 ms the previous
/// window still weighs 2 * 400 / 1000 = 0.8, so one more fits and none remain; the broken variant's
/// key died at 1,500 ms, so it sees an empty window and reports one remaining.
#[test]
fn a_ttl_of_one_window_changes_a_reply() {
    let p = Params::new(2, 1000);
    let case = Forward {
        params: p,
        offset: 0,
        arrivals: vec![
            Arrival { gap: 500 - START % 1000, subject: 0, cost: 2 },
            Arrival { gap: 1100, subject: 0, cost: 1 },
        ],
    };
    assert!(check_ttl(Variant::SLIDING_WINDOW, Variant::SLIDING_WINDOW.script(), &case).is_ok());
    let e = check_ttl(Variant::SLIDING_WINDOW, &short_ttl(), &case).unwrap_err().to_string();
    assert!(e.contains("call 1") && e.contains("expired keys vanishing changes the reply"), "{e}");
}

/// The property itself, run on the broken variant from a fixed seed, finds a counterexample (and
/// shrinks it to a small one).
#[test]
fn a_ttl_of_one_window_is_caught() {
    let config = Config { cases: 1000, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let bad = short_ttl();
    let result =
        runner.run(&forward_plain(Variant::SLIDING_WINDOW), |case| check_ttl(Variant::SLIDING_WINDOW, &bad, &case));
    match result {
        Err(TestError::Fail(reason, case)) => {
            assert!(reason.to_string().contains("expired keys vanishing changes the reply"), "{reason}");
            eprintln!("the TTL check's counterexample for the broken variant: {case:?}\n{reason}");
            assert!(case.arrivals.len() <= 10, "shrinks to a few calls: {case:?}");
        }
        other => panic!("the broken variant passed the TTL check: {other:?}"),
    }
}
