//! Property tests of a limiter that is not limitlab's, written as a user of the library writes them:
//! only the public API (a spec file, `limitlab::Harness`, `limitlab::strategies`). The limiter is
//! `tests/fixtures/upstash_fixed_window.toml`, a fixed window in the style of @upstash/ratelimit.
//!
//! Failing cases are kept in `proptest-regressions/own_limiter.txt` (committed) and replayed first;
//! it holds the case that catches the off-by-one sliding log below.

use limitlab::strategies::{self, Shape};
use limitlab::Harness;
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, RngAlgorithm, TestRng, TestRunner};

const SPEC: &str = "tests/fixtures/upstash_fixed_window.toml";

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 128,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/own_limiter.txt"))),
        ..ProptestConfig::default()
    }
}

/// Two subjects, costs from 1 to 3, over four windows of the spec's policy.
fn traffic() -> impl Strategy<Value = Vec<limitlab::Arrival>> {
    let limiter = limitlab::load(SPEC).expect("the spec loads");
    strategies::traffic(&Shape::of(&limiter).subjects(2).max_cost(3))
}

/// The window bound of `spec`'s algorithm, `bound` times its limit, and `remaining` never negative.
fn admits_at_most(spec: &str, bound: u64, traffic: &[limitlab::Arrival]) -> Result<(), TestCaseError> {
    let mut h = Harness::load(spec)?;
    for d in h.play(traffic)? {
        prop_assert!(d.remaining >= 0, "remaining {}", d.remaining);
    }
    let most = h.max_in_any_window();
    prop_assert!(most <= bound * h.params().limit, "{most} admitted in one window");
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// A fixed window lets at most twice its limit through in any window (at a boundary), and never
    /// reports a negative remaining.
    #[test]
    fn never_more_than_twice_the_limit_in_any_window(traffic in traffic()) {
        admits_at_most(SPEC, 2, &traffic)?;
    }

    /// After any traffic, a refusal's retry_after is honest: the same request then is admitted, and
    /// 1 ms earlier it is not.
    #[test]
    fn retrying_when_told_succeeds_and_not_a_ms_earlier(traffic in traffic(), cost in 1..=3u64) {
        let mut h = Harness::load(SPEC)?;
        h.play(&traffic)?;
        let d = h.request("s0", cost)?;
        if !d.allowed && d.retry_after_ms >= 0 {
            h.advance(d.retry_after_ms);
            prop_assert!(h.probe("s0", cost)?.allowed, "refused at its retry_after ({} ms)", d.retry_after_ms);
            if d.retry_after_ms >= 1 {
                h.advance(-1);
                prop_assert!(!h.probe("s0", cost)?.allowed, "admitted 1 ms before its retry_after");
            }
        }
    }
}

/// The same property finds the bug of a broken limiter: the sliding log whose room test is
/// `count <= limit` admits limit + 1 in a window, above the exact bound of 1.
#[test]
fn the_window_property_catches_an_off_by_one_sliding_log() {
    let spec = "tests/fixtures/sliding_log_off_by_one.toml";
    let shape = Shape::of(&limitlab::load(spec).unwrap());
    let config = ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let found = runner.run(&strategies::traffic(&shape), |t| admits_at_most(spec, 1, &t));
    match found {
        Err(proptest::test_runner::TestError::Fail(why, minimal)) => {
            assert!(why.to_string().contains("11 admitted in one window"), "{why}");
            assert_eq!(minimal.len(), 11, "shrunk to the 11 requests that overshoot: {minimal:?}");
        }
        other => panic!("the off-by-one went unnoticed: {other:?}"),
    }
}
