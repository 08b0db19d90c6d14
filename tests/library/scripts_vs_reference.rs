//! Every shipped script, limitlab's five and the seed's four, makes the same decisions on the
//! emulator as its Rust reference model, on random traffic: random subjects, a caller's clock that
//! may jump back, a server clock that may disagree with it, random costs (including 0 and more than
//! the capacity). After each run the keyspace is compared too: the same keys with the same expiry
//! deadlines. 1,000 cases per script; failures shrink and are saved under
//! `proptest-regressions/scripts_vs_reference.txt`, which is committed and replayed first.
use limitlab_emulator::Reply;
use limitlab_engine::backend::emulated::EmulatedBackend;
use limitlab_engine::backend::Backend;
use limitlab_engine::limiter::{subject_key, Limiter, Params, Variant};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};

/// One call: which subject, how the clocks move, what it costs.
#[derive(Clone, Debug)]
struct Call {
    subject: u8,
    /// Server clock step in ms (never negative in `Skew` mode).
    step: i64,
    /// The caller's clock minus the server's, in `Skew` mode.
    skew: i64,
    cost: u64,
}

/// How the caller's `now_ms` relates to the server's clock.
#[derive(Clone, Copy, Debug)]
enum Clocks {
    /// They agree, and both may jump backwards (a replayed trace out of order).
    Same,
    /// The server's clock only moves forward; the caller's is off by `skew` (either way).
    Skew,
}

#[derive(Clone, Debug)]
struct Case {
    params: Params,
    clocks: Clocks,
    calls: Vec<Call>,
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

fn case(v: Variant) -> impl Strategy<Value = Case> {
    params(v).prop_flat_map(|p| {
        let w = p.window_ms as i64;
        let cap = p.capacity();
        let step = prop_oneof![
            3 => Just(0i64),
            4 => 1i64..=3,
            3 => 0..=w,
            1 => Just(w),
            2 => 0..=3 * w,
            2 => -2 * w..=0,
        ];
        let skew = prop_oneof![4 => Just(0i64), 1 => -2 * w..=2 * w];
        let cost = prop_oneof![
            6 => Just(1u64),
            1 => Just(0u64),
            1 => Just(cap),
            1 => Just(cap + 1),
            1 => 1..=cap,
        ];
        let call =
            (0u8..3, step, skew, cost).prop_map(|(subject, step, skew, cost)| Call { subject, step, skew, cost });
        let clocks = prop_oneof![Just(Clocks::Same), Just(Clocks::Skew)];
        (Just(p), clocks, prop::collection::vec(call, 1..40)).prop_map(|(params, clocks, calls)| Case {
            params,
            clocks,
            calls,
        })
    })
}

/// Runs `case` on the emulator and on the reference; returns the first difference.
fn check(v: Variant, case: &Case) -> Result<(), TestCaseError> {
    let limiter = Limiter::new(v, case.params).map_err(|e| TestCaseError::reject(e.to_string()))?;
    let mut model = limiter.reference().expect("every shipped script has a model");
    let mut backend = EmulatedBackend::default();
    let mut session = limiter.session();
    let subjects: Vec<String> = (0..3).map(|i| format!("u{i}")).collect();
    let keys: Vec<String> = subjects.iter().map(|s| subject_key(s)).collect();
    let mut server: i64 = 1_000_000;
    for (i, c) in case.calls.iter().enumerate() {
        let now = match case.clocks {
            Clocks::Same => {
                server = (server + c.step).max(0);
                server
            }
            Clocks::Skew => {
                server += c.step.max(0);
                (server + c.skew).max(0)
            }
        };
        backend.set_time_ms(server);
        let key = &keys[c.subject as usize];
        // Through the spec (scripts/<name>.toml), the path every tool takes.
        let got =
            limiter.call(&mut backend, &mut session, &subjects[c.subject as usize], now, c.cost).map_err(|e| {
                TestCaseError::fail(format!("{v} call {i} (server {server}, now {now}, cost {}): {e}", c.cost))
            })?;
        let want = model.decide_at(server, key, now, c.cost);
        prop_assert_eq!(got, want, "{} call {} (key {}, server {}, now {}, cost {})", v, i, key, server, now, c.cost);
    }
    // The same keys, with the same deadlines.
    let mut live = Vec::new();
    if let Reply::Array(names) = backend.command(&[b"KEYS", b"*"]).map_err(|e| TestCaseError::fail(e.to_string()))? {
        for n in names {
            let Reply::Bulk(name) = n else { continue };
            let deadline =
                match backend.command(&[b"PEXPIRETIME", &name]).map_err(|e| TestCaseError::fail(e.to_string()))? {
                    Reply::Int(-1) => None,
                    Reply::Int(t) => Some(t),
                    other => return Err(TestCaseError::fail(format!("PEXPIRETIME replied {other:?}"))),
                };
            live.push((String::from_utf8_lossy(&name).into_owned(), deadline));
        }
    }
    live.sort();
    prop_assert_eq!(live, model.keys(server), "{} keyspace at server {}", v, server);
    Ok(())
}

fn config() -> Config {
    Config {
        cases: 1000,
        // Cargo runs integration tests from the package root. (`SourceParallel` would look for a
        // lib.rs beside tests/ and fall back to a file inside tests/.)
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/scripts_vs_reference.txt",
        ))),
        ..Config::default()
    }
}

macro_rules! script_matches_reference {
    ($($name:ident => $v:expr),* $(,)?) => {$(
        proptest! {
            #![proptest_config(config())]
            #[test]
            fn $name(case in case($v)) {
                check($v, &case)?;
            }
        }
    )*};
}

script_matches_reference! {
    fixed_window => Variant::FIXED_WINDOW,
    sliding_window => Variant::SLIDING_WINDOW,
    sliding_log => Variant::SLIDING_LOG,
    token_bucket => Variant::TOKEN_BUCKET,
    gcra => Variant::GCRA,
    seed_fixed_window => Variant::SEED_FIXED_WINDOW,
    seed_sliding_window => Variant::SEED_SLIDING_WINDOW,
    seed_sliding_log => Variant::SEED_SLIDING_LOG,
    seed_token_bucket => Variant::SEED_TOKEN_BUCKET,
}
