//! Loads the audit's mixed rate-limit keyspace (`limitlab_cli::audit::demo::Mix`) into a server, for
//! `benches/audit.sh` (a million keys) and `benches/audit_sample.sh` (the README's sample report).
//!
//! `cargo run --release --example audit_populate -- redis://127.0.0.1:PORT/ small|KEYS`
//! The server should be a private one: the keys are written as named, at the server's time.
use limitlab_cli::audit::demo::{load, Mix};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(url), Some(size)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: audit_populate URL small|KEYS");
        std::process::exit(2);
    };
    let mix = match size.as_str() {
        "small" => Mix::small(),
        n => Mix::scaled(n.parse().unwrap_or_else(|_| {
            eprintln!("audit_populate: `{n}` is not a number of keys");
            std::process::exit(2)
        })),
    };
    let mut c = redis::Client::open(url.as_str()).and_then(|c| c.get_connection()).unwrap_or_else(|e| {
        eprintln!("audit_populate: {e}");
        std::process::exit(1)
    });
    let (s, us): (i64, i64) = redis::cmd("TIME").query(&mut c).expect("TIME");
    load(&mut c, &mix, s * 1000 + us / 1000).unwrap_or_else(|e| {
        eprintln!("audit_populate: {e}");
        std::process::exit(1)
    });
    println!("{} keys loaded", mix.keys());
}
