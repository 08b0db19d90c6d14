//! A user's property tests of a limiter of their own, through limitlab's public API only.
use limitlab::strategies::{self, Shape};
use limitlab::Harness;
use proptest::prelude::*;

const SPEC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/limiter/token_bucket.toml");

fn traffic() -> impl Strategy<Value = Vec<limitlab::Arrival>> {
    let limiter = limitlab::load(SPEC).expect("the spec loads");
    strategies::traffic(&Shape::of(&limiter).subjects(2).max_cost(3))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

    /// A token bucket of capacity 10 refilled at 10 a second admits at most 2 x 10 units in any
    /// one-second window (a full bucket, then a window's refill), and never reports negative room.
    #[test]
    fn a_token_bucket_admits_at_most_its_burst_and_refill(traffic in traffic()) {
        let mut h = Harness::load(SPEC)?;
        for d in h.play(&traffic)? {
            prop_assert!(d.remaining >= 0, "remaining {}", d.remaining);
        }
        let most = h.max_in_any_window();
        prop_assert!(most <= 2 * h.params().limit, "{most} admitted in one window");
    }
}

/// The Lua under the emulator is limitlab's (Redis 7.0's read-only globals are one of its patches),
/// not a stock Lua that a registry's lua-src would have built.
#[test]
fn the_scripts_run_on_limitlabs_lua() {
    let dir = std::env::temp_dir().join(format!("outside-user-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("set_global.lua"), "x = 1\nreturn {1, 1}\n").unwrap();
    let spec = std::fs::read_to_string(SPEC).unwrap().replace("token_bucket.lua", "set_global.lua");
    std::fs::write(dir.join("spec.toml"), spec).unwrap();
    let mut h = Harness::load(dir.join("spec.toml").to_str().unwrap()).unwrap();
    let err = h.request("u", 1).expect_err("a script that sets a global fails");
    std::fs::remove_dir_all(&dir).ok();
    assert!(err.to_string().contains("Attempt to modify a readonly table"), "{err}");
}
