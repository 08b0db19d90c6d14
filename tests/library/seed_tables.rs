//! The seed article's tables, reproduced: every figure of its boundary table from `compare`'s data
//! (the seed's own scripts on the emulator), and the search that found the one timing giving all of
//! them at once (documented in simulations/boundary_burst.toml).
use limitlab::sim::standard::{builtin, compare, seed_boundary, CompareOptions, STANDARD};
use limitlab::sim::Progress;
use limitlab_emulator::clock::{Micros, DEFAULT_START};
use limitlab_engine::limiter::{subject_key, Limiter, Params, Variant};
use limitlab_engine::traffic::{Anchor, BoundaryBurst, Burst, TrafficSpec};

const SEED_FOUR: [Variant; 4] =
    [Variant::SEED_FIXED_WINDOW, Variant::SEED_SLIDING_LOG, Variant::SEED_SLIDING_WINDOW, Variant::SEED_TOKEN_BUCKET];

#[test]
fn compare_reproduces_the_seed_boundary_table_with_the_seed_scripts() {
    let c =
        compare(CompareOptions { scripts: Vec::new(), seed: None, timing: false, progress: Progress::Off }).unwrap();
    assert_eq!((c.boundary_limit, c.boundary_window_ms), (100, 1000));
    let row = |v: Variant| c.boundary.iter().find(|r| r.algorithm == v.name()).unwrap();
    // The article: | Fixed window | 100 | 100 | 200 |
    let r = row(Variant::SEED_FIXED_WINDOW);
    assert_eq!((r.end_of_window, r.start_of_next, r.total), (100, 100, 200));
    // | Sliding log | 100 | 0 | 100 |
    let r = row(Variant::SEED_SLIDING_LOG);
    assert_eq!((r.end_of_window, r.start_of_next, r.total), (100, 0, 100));
    // | Sliding window | 100 | 2 | 102 |
    let r = row(Variant::SEED_SLIDING_WINDOW);
    assert_eq!((r.end_of_window, r.start_of_next, r.total), (100, 2, 102));
    // | Token bucket | 101 | 14 | 115 |
    let r = row(Variant::SEED_TOKEN_BUCKET);
    assert_eq!((r.end_of_window, r.start_of_next, r.total), (101, 14, 115));
    for v in SEED_FOUR {
        let r = row(v);
        assert_eq!(
            r.seed,
            Some((r.end_of_window, r.start_of_next, r.total)),
            "{v}: the seed figure printed beside ours"
        );
        // Both bursts fit in one window: the total is also the most admitted in any window.
        assert_eq!(r.max_in_window, r.total, "{v}");
    }
    // Every script, seed or ours, agrees with its reference model, and no production retry_after lies.
    for s in &c.accuracy {
        for r in &s.rows {
            assert_eq!(r.metrics.reference_mismatches, 0, "{} in {}", r.algorithm, s.scenario);
            assert_eq!(r.metrics.retry_wrong, 0, "{} in {}", r.algorithm, s.scenario);
        }
    }
    // The exact log is exact in every scenario.
    for s in &c.accuracy {
        let log = s.rows.iter().find(|r| r.algorithm == "sliding_log").unwrap();
        assert!(log.metrics.overshoot <= 1.0, "{}", s.scenario);
        assert_eq!(log.metrics.false_allows, 0, "{}", s.scenario);
    }
    assert_eq!(c.memory.len(), Variant::ALL.len());
    assert!(c.speed.is_none());
}

#[test]
fn the_boundary_scenario_file_is_the_timing_found_by_the_search() {
    let s = builtin(STANDARD[0].0).unwrap();
    assert_eq!(s.params, Params::new(100, 1000));
    assert_eq!(s.start_ms, DEFAULT_START.0);
    let TrafficSpec::BoundaryBurst(b) = &s.traffic else { panic!("{:?}", s.traffic) };
    assert_eq!(b.bursts.len(), 2);
    let (o1, o2) = (b.bursts[0].offset_us, b.bursts[1].offset_us);
    assert_eq!(b.bursts[0].spacing_us, b.bursts[1].spacing_us);
    assert!(feasible(b.bursts[0].spacing_us, o1, o2), "the file's timing must reproduce every figure");
}

/// Admitted per burst for the four seed scripts, on their reference models (which the property
/// tests show decide exactly as the scripts do on the emulator).
fn admitted(spacing_us: u64, first_offset_us: i64, second_offset_us: i64) -> Vec<(u64, u64)> {
    let burst = |offset_us, phase: &str| Burst {
        count: 200,
        spacing_us,
        offset_us,
        anchor: Anchor::First,
        phase: phase.into(),
        key: None,
    };
    let g = BoundaryBurst {
        window_ms: 1000,
        boundary: 1,
        key: "user".into(),
        cost: 1,
        bursts: vec![burst(first_offset_us, "end"), burst(second_offset_us, "start")],
    };
    let arrivals = g.arrivals(Micros(DEFAULT_START.0 * 1000), 0);
    SEED_FOUR
        .iter()
        .map(|&v| {
            let mut model =
                Limiter::new(v, Params::new(100, 1000)).unwrap().reference().expect("a shipped script has a model");
            let key = subject_key("user");
            let (mut end, mut start) = (0, 0);
            for a in &arrivals {
                if model.decide(&key, a.at.as_millis().0, 1).allowed {
                    if a.phase == "end" {
                        end += 1
                    } else {
                        start += 1
                    }
                }
            }
            (end, start)
        })
        .collect()
}

fn feasible(spacing_us: u64, o1: i64, o2: i64) -> bool {
    let got = admitted(spacing_us, o1, o2);
    SEED_FOUR
        .iter()
        .zip(&got)
        .all(|(v, &(e, s))| seed_boundary(v.algorithm()).map(|(se, ss, _)| (se, ss)) == Some((e, s)))
}

/// The search. Two bursts of 200 at one spacing: the first starting `o1` before the boundary (whole
/// milliseconds), the second starting `o2` after it. It prints the feasible region per spacing and
/// checks the facts the scenario file's comment relies on:
/// - the token bucket's 101 needs the first burst to last 10 to 19 ms (1 token refilled);
/// - the sliding window's 2 needs the second burst to end 11 to 20 ms after the boundary (its
///   estimate lets one request through per 10 ms of the new window);
/// - the token bucket's 115 then fixes the span: 15 tokens refilled (0.1 per ms) from the first
///   burst's first request to the second's last, 150 to 160 ms, so the first burst starts about
///   140 ms before the boundary.
#[test]
fn search_for_the_timing_of_the_seed_boundary_table() {
    let mut found = Vec::new();
    for spacing in [25u64, 50, 75, 100, 125] {
        let mut region: Vec<(i64, i64)> = Vec::new();
        for o1_ms in (100..=300).rev() {
            for o2_us in (0..=5_000).step_by(1000) {
                if feasible(spacing, -o1_ms * 1000, o2_us) {
                    region.push((-o1_ms, o2_us));
                }
            }
        }
        if let (Some(lo), Some(hi)) = (region.first(), region.last()) {
            println!(
                "spacing {spacing} µs: {} timings, first burst from {} to {} ms, second from {} to {} µs",
                region.len(),
                lo.0,
                hi.0,
                region.iter().map(|r| r.1).min().unwrap(),
                region.iter().map(|r| r.1).max().unwrap()
            );
        } else {
            println!("spacing {spacing} µs: none");
        }
        found.extend(region.into_iter().map(|(o1, o2)| (spacing, o1, o2)));
    }
    assert!(!found.is_empty());
    // With 200 requests 75 µs apart (each burst lasts 14.925 ms) a first burst starting 140 ms
    // before the boundary and a second starting at it gives every figure.
    assert!(found.contains(&(75, -140, 0)));
    for &(spacing, o1, o2) in &found {
        let first_burst_ms = (199 * spacing as i64) / 1000;
        assert!((10..20).contains(&first_burst_ms), "token bucket 101 needs 10..20 ms of refill: {spacing} {o1} {o2}");
        let second_end_ms = (o2 + 199 * spacing as i64) / 1000;
        assert!((11..=20).contains(&second_end_ms), "sliding window 2 needs an end 11..20 ms in: {spacing} {o1} {o2}");
        let refill_ms = second_end_ms - o1;
        assert!(
            (150..=160).contains(&refill_ms),
            "token bucket 115 needs about 15 tokens of refill: {spacing} {o1} {o2}"
        );
    }
}
