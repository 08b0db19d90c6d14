//! The `used_memory` model against a private, empty Redis at N subjects for every shipped script
//! (`benches/used_memory.sh` runs it at 1,000,000; `tests/used_memory_real.rs` at 10,000 and
//! 100,000). Prints one line per script: measured growth, the model's, their difference.
//!
//! `cargo run --release --example used_memory -- redis://127.0.0.1:PORT/ SUBJECTS [LIMIT [SCRIPTS]]`
//! (LIMIT per minute, default 10; each subject makes LIMIT calls; SCRIPTS a comma-separated list
//! of shipped script names, default all of them). The server is flushed after each script: give
//! it a private one.
use limitlab_cli::verify::used_memory::check;
use limitlab_engine::limiter::{Limiter, Params, Variant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(url), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<u64>().ok())) else {
        eprintln!("usage: used_memory URL SUBJECTS [LIMIT [SCRIPTS]]");
        std::process::exit(2);
    };
    let limit: u64 = match args.get(3).map(|l| l.parse()) {
        None => 10,
        Some(Ok(l)) => l,
        Some(Err(_)) => {
            eprintln!("used_memory: LIMIT must be a whole number, got {:?}", args[3]);
            std::process::exit(2);
        }
    };
    let variants: Vec<Variant> = match args.get(4) {
        None => Variant::ALL.to_vec(),
        Some(list) => match list.split(',').map(str::parse).collect::<Result<Vec<Variant>, _>>() {
            Ok(v) => v,
            Err(e) => {
                eprintln!("used_memory: {e}");
                std::process::exit(2);
            }
        },
    };
    let params = Params::new(limit, 60_000);
    println!(
        "{:<20} {:>9} {:>9} {:>14} {:>14} {:>8} {:>14} {:>8} {:>14}",
        "script", "subjects", "keys", "measured", "model", "error", "from one", "error", "MEMORY USAGE"
    );
    let mut worst: f64 = 0.0;
    for v in variants {
        let limiter = Limiter::new(v, params).expect("the shipped scripts take these parameters");
        let clock = limitlab_emulator::clock::Stopwatch::start();
        match check(url, &limiter, n, limit, |_| {}) {
            Ok(r) => {
                worst = worst.max(r.error().abs()).max(r.extrapolation_error().abs());
                println!(
                    "{:<20} {:>9} {:>9} {:>14} {:>14.0} {:>+7.2}% {:>14.0} {:>+7.2}% {:>14}   ({:.0} s)",
                    r.script,
                    r.subjects,
                    r.keys,
                    r.measured,
                    r.predicted,
                    r.error() * 100.0,
                    r.extrapolated,
                    r.extrapolation_error() * 100.0,
                    r.memory_usage,
                    clock.elapsed_secs()
                );
            }
            Err(e) => {
                eprintln!("{v}: {e}");
                std::process::exit(1);
            }
        }
    }
    println!("worst difference: {:.2}%", worst * 100.0);
    if worst > 0.02 {
        std::process::exit(1);
    }
}
