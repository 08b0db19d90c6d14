//! Runs one shipped script `CALLS` times through `limitlab bench`'s emulator engines, through its
//! spec ([`Limiter::call`], the path every tool takes) or the hand-written way ([`Direct`]), for
//! counting what the spec path costs per call with callgrind:
//!
//! ```sh
//! cargo build --release --example spec_cost
//! for n in 2000 22000; do for path in spec direct; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/spec_cost fixed_window $path $n 2>&1 | grep 'refs'
//! done; done
//! ```
//!
//! Instructions per call are `(I(22000) - I(2000)) / 20000`: the start-up (the emulator, the Lua
//! state, the spec) cancels out. The calls are `limitlab bench`'s throughput workload (100 users,
//! limit 8 per 1,000 ms, one call per virtual ms).
use limitlab_cli::bench::engines;
use limitlab_cli::bench::workload::Workload;
use limitlab_engine::limiter::direct::Direct;
use limitlab_engine::limiter::Variant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = || -> ! {
        eprintln!("usage: spec_cost SCRIPT spec|direct [CALLS]  (SCRIPT: a shipped script's name)");
        std::process::exit(2);
    };
    let (Some(name), Some(path)) = (args.get(1), args.get(2)) else { usage() };
    let Ok(v) = name.parse::<Variant>() else { usage() };
    let Ok(calls) = args.get(3).map_or(Ok(20_000), |s| s.parse::<usize>()) else { usage() };
    let w = Workload::throughput();
    let t = match path.as_str() {
        "spec" => engines::emulator(&w, &w.limiter(v).expect("valid parameters"), 0, calls),
        "direct" => engines::emulator_direct(&w, &Direct::new(v, w.params).expect("valid parameters"), 0, calls),
        _ => usage(),
    }
    .unwrap_or_else(|e| {
        eprintln!("spec_cost: {e}");
        std::process::exit(1);
    });
    let allowed = t.decisions.iter().filter(|d| d.allowed).count();
    println!("{v} {path}: {calls} calls, {allowed} allowed, {:.3} us per call", t.secs * 1e6 / calls.max(1) as f64);
}
