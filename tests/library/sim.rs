//! The simulator surface: the runner on the emulator, the metrics against brute-force definitions,
//! scenario files on disk, and determinism (the same scenario and seed give byte-identical reports).
use std::path::Path;

use limitlab::metrics::{max_in_any_window, measure, ExactLog};
use limitlab::sim::standard::{builtin, STANDARD};
use limitlab::sim::{run, Progress, Record, Scenario, Trace};
use limitlab::Error;
use limitlab_cli::cli::run::{report, Plan};
use limitlab_cli::report::Format;
use limitlab_emulator::clock::{Clock, Micros, Millis, DEFAULT_START};
use limitlab_engine::backend::emulated::EmulatedBackend;
use limitlab_engine::backend::Backend;
use limitlab_engine::limiter::{Decision, Limiter, Params, Variant};
use limitlab_engine::traffic::Arrival;
use proptest::prelude::*;

fn arrival(ms: i64, key: &str, cost: u64, phase: &str) -> Arrival {
    Arrival {
        at: Micros((DEFAULT_START.0 + ms) * 1000),
        key: key.into(),
        cost,
        phase: phase.into(),
        op: limitlab_engine::traffic::Op::Request,
    }
}

fn plan(file: &str, seed: Option<u64>) -> Plan {
    let scenario = builtin(file).unwrap();
    let seed = seed.unwrap_or(scenario.seed);
    Plan { scenario, seed, format: Format::Text }
}

#[test]
fn the_same_scenario_and_seed_give_byte_identical_reports() {
    for (file, _) in STANDARD {
        let a = report(&plan(file, None), Progress::Off).unwrap();
        let b = report(&plan(file, None), Progress::Off).unwrap();
        for f in [Format::Text, Format::Markdown, Format::Json] {
            assert_eq!(a.render(f), b.render(f), "{file} {f:?}");
        }
    }
    // The uniform scenario is jittered: another seed moves its arrivals.
    let s = builtin("simulations/uniform.toml").unwrap();
    assert_eq!(s.arrivals(1).unwrap(), s.arrivals(1).unwrap());
    assert_ne!(s.arrivals(1).unwrap(), s.arrivals(2).unwrap());
    let r = report(&plan("simulations/uniform.toml", Some(2)), Progress::Off).unwrap();
    assert_eq!(r.seed, 2);
}

#[test]
fn the_files_on_disk_are_the_embedded_scenarios() {
    for (file, _) in STANDARD {
        let on_disk = Scenario::from_file(Path::new(file)).unwrap();
        assert_eq!(on_disk, builtin(file).unwrap(), "{file}");
        assert_eq!(on_disk.variants(), Variant::ALL, "{file}: the standard scenarios run every script");
    }
}

#[test]
fn the_runner_drives_the_emulator_clock_and_counts_phases() {
    let l = Limiter::new(Variant::SLIDING_LOG, Params::new(2, 100)).unwrap();
    let arrivals = vec![
        arrival(0, "a", 1, "one"),
        arrival(10, "b", 2, "one"),
        arrival(20, "a", 1, "two"),
        arrival(30, "a", 1, "two"),
        arrival(100, "a", 1, "two"),
    ];
    let mut backend = EmulatedBackend::default();
    let t = run(&l, &mut backend, &arrivals, Progress::Off).unwrap();
    assert_eq!(backend.emu.clock().now_millis(), Millis(DEFAULT_START.0 + 100), "the clock follows the arrivals");
    assert_eq!(t.keys, ["a", "b"]);
    assert_eq!(t.phases, ["one", "two"]);
    let allowed: Vec<bool> = t.records.iter().map(|r| r.decision.allowed).collect();
    assert_eq!(allowed, [true, true, true, false, true]);
    assert_eq!(t.records[3].decision.retry_after_ms, 70, "refused at 30: the member at 0 leaves the window at 100");
    let m = measure(&t, &l).unwrap();
    let per_phase: Vec<(u64, u64)> = m.phases.iter().map(|p| (p.units, p.allowed_units)).collect();
    assert_eq!(per_phase, [(3, 3), (3, 2)]);
    assert_eq!((m.max_in_window, m.overshoot), (2, 1.0));
    assert_eq!((m.false_allows, m.false_rejections, m.reference_mismatches), (0, 0, 0));
    assert_eq!((m.retry_checked, m.retry_wrong), (1, 0));
    // The keys the run left behind are the script's, and cleanup removes them.
    assert_eq!(backend.cleanup().unwrap(), 2);
}

#[test]
fn a_call_the_script_cannot_take_stops_the_run_with_its_field() {
    let l = Limiter::new(Variant::FIXED_WINDOW, Params::new(2, 100)).unwrap();
    let bad = vec![Arrival {
        at: Micros(-5_000),
        key: "a".into(),
        cost: 1,
        phase: String::new(),
        op: limitlab_engine::traffic::Op::Request,
    }];
    let e = run(&l, &mut EmulatedBackend::default(), &bad, Progress::Off).unwrap_err();
    assert!(matches!(&e, Error::Invalid { field, .. } if field == "now_ms"), "{e}");
}

#[test]
fn a_lying_retry_after_is_caught() {
    // Hand-made trace: the second call is refused with a retry_after that is 1 ms short.
    let l = Limiter::new(Variant::FIXED_WINDOW, Params::new(1, 1000)).unwrap();
    let t0 = DEFAULT_START.0;
    let record = |ms: i64, d: Decision| Record {
        at: Micros((t0 + ms) * 1000),
        now_ms: t0 + ms,
        key: 0,
        phase: 0,
        cost: 1,
        decision: d,
    };
    let ok = Decision { allowed: true, remaining: 0, retry_after_ms: -1, reset_after_ms: 1000, granted: -1 };
    let no = Decision { allowed: false, remaining: 0, retry_after_ms: 899, reset_after_ms: 900, granted: -1 };
    let trace = Trace {
        name: "fixed_window".into(),
        variant: Some(Variant::FIXED_WINDOW),
        params: l.params(),
        keys: vec!["a".into()],
        phases: vec![String::new()],
        records: vec![record(0, ok), record(100, no)],
        elapsed_secs: 0.0,
    };
    let m = measure(&trace, &l).unwrap();
    assert_eq!((m.retry_checked, m.retry_wrong), (1, 1));
    assert_eq!(m.reference_mismatches, 1, "the script would have said 900");
}

#[test]
fn the_seed_fixed_window_doubles_at_the_boundary_and_the_metrics_say_so() {
    let s = builtin("simulations/boundary_burst.toml").unwrap();
    let arrivals = s.arrivals(s.seed).unwrap();
    let l = s.builtin_limiter(Variant::SEED_FIXED_WINDOW).unwrap();
    let t = run(&l, &mut EmulatedBackend::default(), &arrivals, Progress::Off).unwrap();
    let m = measure(&t, &l).unwrap();
    assert_eq!(m.phases[0].phase, "end of window");
    assert_eq!(m.phases[1].phase, "start of next window");
    assert_eq!(m.max_in_window, 200);
    assert_eq!(m.overshoot, 2.0);
    assert_eq!(m.false_allows, 100, "every admission of the second burst exceeds the exact limit");
    assert_eq!(m.worst_subject.as_deref(), Some("user"));
    assert_eq!(m.worst_window_start_ms, Some(DEFAULT_START.0 + 1000 - 140));
}

/// The most units in any `[s, s + w)`, by trying every start.
fn brute_max(times: &[(i64, u64)], w: i64) -> u64 {
    times.iter().map(|&(s, _)| times.iter().filter(|t| t.0 >= s && t.0 < s + w).map(|t| t.1).sum()).max().unwrap_or(0)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn worst_window_matches_brute_force(mut times in prop::collection::vec((0i64..200, 0u64..4), 0..40), w in 1i64..50) {
        let want = brute_max(&times, w);
        let (got, start) = max_in_any_window(&mut times, w);
        prop_assert_eq!(got, want);
        if got > 0 {
            let at: u64 = times.iter().filter(|t| t.0 >= start && t.0 < start + w).map(|t| t.1).sum();
            prop_assert_eq!(at, got);
        }
    }

    #[test]
    fn exact_log_never_exceeds_the_limit_and_admits_whatever_fits(
        calls in prop::collection::vec((0u32..2, -20i64..40, 0u64..4), 1..60),
        limit in 1u64..6,
        w in 1i64..30,
    ) {
        let mut log = ExactLog::new(Params::new(limit, w as u64));
        let mut admitted: Vec<Vec<(i64, u64)>> = vec![Vec::new(); 2];
        let (mut now, mut newest) = (1000i64, 1000i64);
        for (subject, step, cost) in calls {
            // Back in time, but never more than a window behind the newest call (see ExactLog).
            now = (now + step).max(newest - w);
            newest = newest.max(now);
            let mut with = admitted[subject as usize].clone();
            with.push((now, cost));
            // Admissible: every interval of length w containing `now` stays within the limit.
            let fits = cost <= limit
                && (now - w + 1..=now).all(|s| with.iter().filter(|t| t.0 >= s && t.0 < s + w).map(|t| t.1).sum::<u64>() <= limit);
            let got = log.decide(subject, now, cost);
            prop_assert_eq!(got, fits, "subject {} at {} cost {}", subject, now, cost);
            if got && cost > 0 {
                admitted[subject as usize].push((now, cost));
            }
            prop_assert!(brute_max(&admitted[subject as usize], w) <= limit);
        }
    }
}
