//! Tests of the limiter surface (names, parameters, arguments, replies) and properties of the
//! reference models: what the reply fields promise, checked by asking cloned models.
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use limitlab_emulator::Reply;

#[test]
fn names_round_trip_and_unknown_names_list_the_valid_ones() {
    for v in Variant::ALL {
        assert_eq!(v.name().parse::<Variant>(), Ok(v));
        assert_eq!(v.to_string(), v.name());
    }
    assert_eq!("Token-Bucket".parse::<Variant>(), Ok(Variant::TOKEN_BUCKET));
    let e = "leaky".parse::<Variant>().unwrap_err().to_string();
    assert_eq!(
        e,
        "unknown algorithm `leaky`; valid names: fixed_window, sliding_window, sliding_log, token_bucket, gcra, \
         seed_fixed_window, seed_sliding_window, seed_sliding_log, seed_token_bucket"
    );
    assert_eq!(Variant::new(Algorithm::Gcra, Flavor::Seed), None);
    assert_eq!(Variant::new(Algorithm::Gcra, Flavor::Ours), Some(Variant::GCRA));
}

#[test]
fn parameters_are_checked_as_the_scripts_check_them() {
    assert!(Limiter::new(Variant::FIXED_WINDOW, Params::new(0, 1000)).is_err());
    assert!(Limiter::new(Variant::FIXED_WINDOW, Params::new(1, MAX_ARG + 1)).is_err());
    assert!(Limiter::new(Variant::FIXED_WINDOW, Params::new(1, 1000).with_burst(2)).is_err());
    assert!(Limiter::new(Variant::SLIDING_WINDOW, Params::new(1 << 20, 1 << 30)).is_ok());
    let e = Limiter::new(Variant::SLIDING_WINDOW, Params::new(1 << 21, 1 << 30)).unwrap_err();
    assert_eq!(e.to_string(), "sliding_window: field `window_ms`: limit * window_ms must not exceed 2^50: with limit 2097152, window_ms is at most 536870912");
    assert!(Limiter::new(Variant::TOKEN_BUCKET, Params::new(1, 1 << 30).with_burst(1 << 21)).is_err());
    // The seed scripts check nothing, so neither does the limiter beyond the basic ranges.
    assert!(Limiter::new(Variant::SEED_SLIDING_WINDOW, Params::new(1 << 21, 1 << 30)).is_ok());

    let g = Limiter::new(Variant::GCRA, Params::new(6007, 1000)).unwrap();
    assert!(g.check_call(1_704_067_200_000, 1).is_err(), "6007 ticks per ms overflow 2^51");
    let g = Limiter::new(Variant::GCRA, Params::new(1000, 60_000)).unwrap();
    assert!(g.check_call(1_704_067_200_000, 1).is_ok());
    assert!(g.check_call(-1, 1).is_err());
    assert!(g.check_call(0, MAX_ARG + 1).is_err());
}

#[test]
fn arguments_follow_the_contract() {
    // Through the spec (scripts/token_bucket.toml), as every tool formats them.
    let l = Limiter::new(Variant::TOKEN_BUCKET, Params::new(100, 1000).with_burst(150)).unwrap();
    let (mut k, mut a) = (Vec::new(), Vec::new());
    l.render_single("", "user42", 1_704_067_200_123, 2, &mut k, &mut a).unwrap();
    assert_eq!(k, ["rate:{user42}"]);
    assert_eq!(a, ["100", "1000", "1704067200123", "2", "150"]);
    // The hand-written path formats the same.
    let d = direct::Direct::new(Variant::TOKEN_BUCKET, Params::new(100, 1000).with_burst(150)).unwrap();
    assert_eq!(d.keys_and_args(&subject_key("user42"), 1_704_067_200_123, 2), (k.clone(), a.clone()));
    let l = Limiter::new(Variant::SEED_FIXED_WINDOW, Params::new(100, 1000)).unwrap();
    l.render_single("ll:1:", "r", 5, 3, &mut k, &mut a).unwrap();
    assert_eq!(
        (k.as_slice(), a.as_slice()),
        (&["ll:1:rate:{r}".to_string()][..], &["100", "1000", "5"].map(String::from)[..])
    );
    // Without a burst the spec passes the limit as the burst, which the script takes as its default.
    let l = Limiter::new(Variant::GCRA, Params::new(100, 1000)).unwrap();
    l.render_single("", "x", 7, 1, &mut k, &mut a).unwrap();
    assert_eq!(a, ["100", "1000", "7", "1", "100"]);
    let d = direct::Direct::new(Variant::GCRA, Params::new(100, 1000)).unwrap();
    d.write_keys_and_args("rate:{x}", 7, 1, &mut k, &mut a);
    assert_eq!(a, ["100", "1000", "7", "1"]);
    // The SHA1 EVALSHA needs is the script's, as SCRIPT LOAD returns it.
    assert_eq!(l.sha1(), sha1_smol::Sha1::from(gcra::SCRIPT).digest().to_string());
}

#[test]
fn replies_are_read_as_the_specs_say() {
    use limitlab_emulator::Reply;
    let ours = Limiter::new(Variant::FIXED_WINDOW, Params::new(3, 1000)).unwrap();
    let mut buf = Vec::new();
    let r = Reply::Array(vec![Reply::Int(0), Reply::Int(0), Reply::Int(500), Reply::Int(500)]);
    assert_eq!(
        ours.read_single(r.clone(), "u", 0, 1, &mut buf).unwrap(),
        Decision { allowed: false, remaining: 0, retry_after_ms: 500, reset_after_ms: 500, granted: -1 }
    );
    let e = ours.read_single(Reply::err("ERR invalid cost"), "u", 0, 1, &mut buf).unwrap_err();
    assert!(matches!(&e, Error::Script { reply, .. } if reply == "ERR invalid cost"), "{e}");
    let e = ours.read_single(Reply::Int(1), "u", 0, 1, &mut buf).unwrap_err().to_string();
    assert!(
        e.starts_with("scripts/fixed_window.toml:22: field `decision.allowed`: index 1 of 1, which is not an array"),
        "{e}"
    );
    let seed = Limiter::new(Variant::SEED_FIXED_WINDOW, Params::new(3, 1000)).unwrap();
    assert_eq!(seed.read_single(Reply::Int(1), "u", 0, 1, &mut buf).unwrap(), Decision::allowed_only(true));
    assert_eq!(seed.read_single(Reply::Nil, "u", 0, 1, &mut buf).unwrap(), Decision::allowed_only(false));
    // The hand-written reader is strict about the shape.
    let d = direct::Direct::new(Variant::FIXED_WINDOW, Params::new(3, 1000)).unwrap();
    assert_eq!(d.parse_reply(&r).unwrap(), ours.read_single(r, "u", 0, 1, &mut buf).unwrap());
    assert!(d.parse_reply(&Reply::Array(vec![Reply::Int(2), Reply::Int(0), Reply::Int(0), Reply::Int(0)])).is_err());
}

/// Parameters for one randomized run of `v`.
fn random_params(rng: &mut ChaCha8Rng, v: Variant) -> Params {
    let limit = rng.random_range(1..=8);
    let window = [1, 3, 7, 10, 100, 999, 1000][rng.random_range(0..7)];
    let p = Params::new(limit, window);
    if v.takes_burst() && rng.random_bool(0.5) {
        p.with_burst(rng.random_range(1..=10))
    } else {
        p
    }
}

/// The next call's time: mostly small steps, sometimes none, sometimes past whole windows.
fn step(rng: &mut ChaCha8Rng, window: i64) -> i64 {
    match rng.random_range(0..10) {
        0..=2 => 0,
        3..=5 => rng.random_range(1..=3),
        6..=7 => rng.random_range(0..=window),
        8 => window,
        _ => rng.random_range(0..=3 * window),
    }
}

fn random_cost(rng: &mut ChaCha8Rng, capacity: u64) -> u64 {
    match rng.random_range(0..10) {
        0 => 0,
        1 => capacity,
        2 => capacity + 1,
        3 => rng.random_range(1..=capacity),
        _ => 1,
    }
}

/// Drives every variant with monotone random traffic and calls `check` before each call with the
/// model, the limiter, the call and the model's decision.
fn for_random_runs(
    runs: u64,
    calls: usize,
    mut check: impl FnMut(&Limiter, &dyn Reference, &str, i64, u64, Decision, u64),
) {
    for v in Variant::ALL {
        for seed in 0..runs {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let limiter = Limiter::new(v, random_params(&mut rng, v)).unwrap();
            let mut model = limiter.reference().unwrap();
            let mut now = 1_000_000;
            for _ in 0..calls {
                now += step(&mut rng, limiter.params().window_ms as i64);
                let key = ["rate:{a}", "rate:{b}"][rng.random_range(0..2)];
                let cost = random_cost(&mut rng, limiter.params().capacity());
                let before = model.boxed_clone();
                let d = model.decide(key, now, cost);
                check(&limiter, before.as_ref(), key, now, cost, d, seed);
            }
        }
    }
}

#[test]
fn expiry_never_changes_a_decision_while_clocks_agree() {
    // The TTLs are long enough: a model whose keys never expire decides the same.
    for v in Variant::ALL {
        for seed in 0..40 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let limiter = Limiter::new(v, random_params(&mut rng, v)).unwrap();
            let (mut expiring, mut forever) = (limiter.reference().unwrap(), limiter.reference().unwrap());
            let mut now = 1_000_000;
            for i in 0..400 {
                now += step(&mut rng, limiter.params().window_ms as i64);
                let key = ["rate:{a}", "rate:{b}"][rng.random_range(0..2)];
                let cost = random_cost(&mut rng, limiter.params().capacity());
                let a = expiring.decide(key, now, cost);
                let b = forever.decide_at(0, key, now, cost);
                assert_eq!(a, b, "{v} seed {seed} call {i}: now {now} cost {cost}");
            }
        }
    }
}

#[test]
fn retry_after_is_the_first_ms_that_admits_the_same_request() {
    for_random_runs(30, 300, |l, before, key, now, cost, d, seed| {
        if l.variant().unwrap().flavor() == Flavor::Seed || d.allowed {
            return;
        }
        let v = l.variant().unwrap();
        if d.retry_after_ms == -1 {
            assert!(cost > l.params().capacity(), "{v} seed {seed}: -1 only when it never fits");
            return;
        }
        assert!(d.retry_after_ms >= 1, "{v} seed {seed}: {d:?}");
        let mut early = before.boxed_clone();
        let mut on_time = before.boxed_clone();
        let at = now + d.retry_after_ms;
        assert!(!early.decide(key, at - 1, cost).allowed, "{v} seed {seed}: admitted before retry_after at {now}");
        assert!(on_time.decide(key, at, cost).allowed, "{v} seed {seed}: refused at retry_after from {now}");
    });
}

#[test]
fn reset_after_is_when_the_whole_quota_is_back() {
    for_random_runs(30, 300, |l, before, key, now, cost, d, seed| {
        if l.variant().unwrap().flavor() == Flavor::Seed {
            return;
        }
        let v = l.variant().unwrap();
        let mut after = before.boxed_clone();
        after.decide(key, now, cost);
        let whole = l.params().capacity() as i64;
        let mut probe = after.boxed_clone();
        let at = probe.decide(key, now + d.reset_after_ms, 0);
        assert_eq!(at.remaining, whole, "{v} seed {seed}: not whole at reset_after from {now}: {d:?}");
        if d.reset_after_ms > 0 {
            let mut probe = after.boxed_clone();
            let early = probe.decide(key, now + d.reset_after_ms - 1, 0);
            assert!(early.remaining < whole, "{v} seed {seed}: whole before reset_after from {now}: {d:?}");
        }
    });
}

#[test]
fn remaining_is_how_many_more_units_fit_at_once() {
    for_random_runs(30, 300, |l, before, key, now, cost, d, seed| {
        if l.variant().unwrap().flavor() == Flavor::Seed {
            return;
        }
        let v = l.variant().unwrap();
        let mut after = before.boxed_clone();
        after.decide(key, now, cost);
        let rem = d.remaining as u64;
        if rem > 0 {
            assert!(after.boxed_clone().decide(key, now, rem).allowed, "{v} seed {seed}: {d:?}");
        }
        assert!(!after.boxed_clone().decide(key, now, rem + 1).allowed, "{v} seed {seed}: {d:?}");
    });
}

#[test]
fn token_bucket_and_gcra_admit_the_same_requests() {
    for seed in 0..100 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let params = random_params(&mut rng, Variant::GCRA);
        let mut tb = token_bucket::Model::new(params);
        let mut gcra = gcra::Model::new(params);
        let mut now = 1_000_000;
        for i in 0..500 {
            now += step(&mut rng, params.window_ms as i64);
            let key = ["rate:{a}", "rate:{b}"][rng.random_range(0..2)];
            let cost = random_cost(&mut rng, params.capacity());
            assert_eq!(tb.decide(key, now, cost), gcra.decide(key, now, cost), "seed {seed} call {i} {params:?}");
        }
    }
}

#[test]
fn a_probe_answers_as_a_copy_would_and_leaves_the_model_unchanged() {
    // Two models in lockstep, one of them probed before every call at a random later time (often
    // past its keys' deadlines, so the probe also drops and recreates keys): the probe answers as
    // a copy of the model would, and the probed model keeps deciding exactly as the other.
    for v in Variant::ALL {
        for seed in 0..30 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let limiter = Limiter::new(v, random_params(&mut rng, v)).unwrap();
            let window = limiter.params().window_ms as i64;
            let (mut probed, mut plain) = (limiter.reference().unwrap(), limiter.reference().unwrap());
            let mut now = 1_000_000;
            for i in 0..300 {
                now += step(&mut rng, window);
                let key = ["rate:{a}", "rate:{b}"][rng.random_range(0..2)];
                let cost = random_cost(&mut rng, limiter.params().capacity());
                let later = now + rng.random_range(0..=3 * window);
                let probe_key = ["rate:{a}", "rate:{b}"][rng.random_range(0..2)];
                let want = probed.boxed_clone().decide(probe_key, later, cost);
                assert_eq!(probed.probe(probe_key, later, cost), want, "{v} seed {seed} call {i}");
                assert_eq!(probed.keys(i64::MIN), plain.keys(i64::MIN), "{v} seed {seed} call {i}");
                assert_eq!(probed.decide(key, now, cost), plain.decide(key, now, cost), "{v} seed {seed} call {i}");
            }
        }
    }
}

#[test]
fn clock_skew_never_refunds_and_never_goes_negative() {
    // Calls from a clock that lags behind never see more room than a call at the newest time.
    for v in Variant::ALL.into_iter().filter(|v| v.flavor() == Flavor::Ours) {
        for seed in 0..40 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let limiter = Limiter::new(v, random_params(&mut rng, v)).unwrap();
            let mut model = limiter.reference().unwrap();
            let mut newest = 1_000_000i64;
            for _ in 0..300 {
                newest += step(&mut rng, limiter.params().window_ms as i64);
                let lag =
                    if rng.random_bool(0.3) { rng.random_range(0..=2 * limiter.params().window_ms as i64) } else { 0 };
                let cost = random_cost(&mut rng, limiter.params().capacity());
                let straight = model.boxed_clone().decide_at(newest, "rate:{a}", newest, 0);
                let d = model.decide_at(newest, "rate:{a}", newest - lag, cost);
                assert!(d.remaining >= 0 && d.reset_after_ms >= 0, "{v} seed {seed}: {d:?}");
                let shown = if d.allowed { d.remaining + cost as i64 } else { d.remaining };
                assert!(
                    shown <= straight.remaining,
                    "{v} seed {seed}: lag {lag} saw {d:?}, newest time saw {straight:?}"
                );
            }
        }
    }
}

/// The scripts on the emulator, call for call against their references, with the emulator's clock
/// as the server clock: here keys really expire, so the TTLs are checked to the millisecond and
/// the references' expiry is exercised, with windows as short as 1 ms and lagging callers.
///
/// The emulator currently expires a key when its clock reaches the deadline; Redis 7.0 waits until
/// the clock is past it (`keyIsExpired`: `now > when`), as the references do. Until that is fixed,
/// keys with PTTL 0 are not compared and no lagging call is made while one exists; with the
/// emulator fixed this test passes unchanged (checked with a local patch).
#[test]
fn scripts_on_the_emulator_decide_exactly_as_their_references() {
    use limitlab_emulator::clock::{Millis, VirtualClock};
    use limitlab_emulator::Emulator;

    for v in Variant::ALL {
        for seed in 0..12 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let limiter = Limiter::new(v, random_params(&mut rng, v)).unwrap();
            let window = limiter.params().window_ms as i64;
            let mut newest = 1_704_067_200_000 + rng.random_range(0..=window);
            let clock = VirtualClock::starting_at(Millis(newest));
            let mut emu = Emulator::with_clock(clock.clone());
            let sha = emu.script_load(limiter.script().as_bytes()).unwrap_or_else(|e| panic!("{v}: {e:?}"));
            assert_eq!(sha, limiter.sha1());
            let mut model = limiter.reference().unwrap();
            let direct = direct::Direct::new(v, limiter.params()).unwrap();
            let (mut keys, mut args) = (Vec::new(), Vec::new());
            for i in 0..300 {
                newest += step(&mut rng, window);
                clock.set_millis(Millis(newest));
                let lag = if rng.random_bool(0.1) { rng.random_range(1..=2 * window) } else { 0 };
                // No lagging call in a key's last millisecond, where the emulator and Redis
                // currently disagree (see below): a lagging caller can still use such a key.
                let at_deadline = model.keys(newest).iter().any(|(_, d)| *d == Some(newest));
                let now = if at_deadline { newest } else { newest - lag };
                let key = ["rate:{a}", "rate:{b}"][rng.random_range(0..2)];
                let cost = if v.takes_cost() { random_cost(&mut rng, limiter.params().capacity()) } else { 1 };
                direct.write_keys_and_args(key, now, cost, &mut keys, &mut args);
                let k: Vec<&[u8]> = keys.iter().map(|s| s.as_bytes()).collect();
                let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
                let reply = emu.evalsha(sha.as_bytes(), &k, &a);
                let context =
                    format!("{v} seed {seed} call {i}: {:?} now {now} (server {newest}) cost {cost}", limiter.params());
                let got = direct.parse_reply(&reply).unwrap_or_else(|e| panic!("{context}: {e}"));
                assert_eq!(got, model.decide_at(newest, key, now, cost), "{context}");

                let mut real: Vec<(String, i64)> = match emu.execute(&[b"KEYS", b"*"]) {
                    Reply::Array(names) => names
                        .iter()
                        .map(|n| {
                            let Reply::Bulk(n) = n else { panic!("{context}: KEYS gave {n:?}") };
                            let ttl = match emu.execute(&[b"PTTL", n]) {
                                Reply::Int(t) => t,
                                other => panic!("{context}: PTTL gave {other:?}"),
                            };
                            (String::from_utf8_lossy(n).into_owned(), ttl)
                        })
                        .collect(),
                    other => panic!("{context}: KEYS gave {other:?}"),
                };
                // A key in the last millisecond of its TTL (PTTL 0) is left out on both sides: Redis
                // 7.0 still has it (a key expires once the clock is past its deadline), but the
                // emulator currently drops it a millisecond early. The scripts' TTLs are long enough
                // that this never changes a decision of a caller whose clock agrees with the server.
                real.retain(|(_, ttl)| *ttl != 0);
                real.sort();
                let modelled: Vec<(String, i64)> = model
                    .keys(newest)
                    .into_iter()
                    .map(|(k, d)| (k, d.map_or(-1, |d| d - newest)))
                    .filter(|(_, ttl)| *ttl != 0)
                    .collect();
                assert_eq!(real, modelled, "{context}: keys and PTTLs");
            }
        }
    }
}

#[test]
fn seed_scripts_reproduce_the_measured_boundary_burst() {
    // research/anchors-measured.md, limit 100 per 1000 ms: 200 requests two per ms ending 50 ms
    // before a window boundary, 200 more from 20 ms after it. Measured on a real Redis with
    // straightforward seed scripts: fixed 100 + 100, token bucket 109 + 17, sliding counter
    // 100 + 12, sliding log 100 + 0.
    let boundary = 1_704_067_200_000i64;
    let expect = [
        (Variant::SEED_FIXED_WINDOW, (100, 100)),
        (Variant::SEED_TOKEN_BUCKET, (109, 17)),
        (Variant::SEED_SLIDING_WINDOW, (100, 12)),
        (Variant::SEED_SLIDING_LOG, (100, 0)),
        // The production scripts: the same, except that the counter refuses an estimate that
        // would exceed the limit instead of one that already has.
        (Variant::FIXED_WINDOW, (100, 100)),
        (Variant::TOKEN_BUCKET, (109, 17)),
        (Variant::GCRA, (109, 17)),
        (Variant::SLIDING_WINDOW, (100, 11)),
        (Variant::SLIDING_LOG, (100, 0)),
    ];
    for (v, want) in expect {
        let mut m = Limiter::new(v, Params::new(100, 1000)).unwrap().reference().unwrap();
        let mut count = |from: i64| (0..200).filter(|i| m.decide("rate:{k}", from + i / 2, 1).allowed).count();
        let before = count(boundary - 150);
        let after = count(boundary + 20);
        assert_eq!((before, after), want, "{v}");
    }
}
