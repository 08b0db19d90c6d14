//! Runs one Lua script many times on the embedded emulator, for counting what a call costs with
//! callgrind (instruction counts do not depend on what else the machine is doing; wall clock does):
//!
//! ```sh
//! cargo build --release --example script_cost
//! valgrind --tool=callgrind --callgrind-out-file=cg.out target/release/examples/script_cost scripts/fixed_window.lua 20000
//! callgrind_annotate --inclusive=yes cg.out | grep 'Scripting::evalsha \['   # divide by the call count
//! ```
//!
//! The calls are `limitlab bench`'s: 100 users in turn, one call per virtual millisecond, ARGV
//! `8 1000 now_ms` (limit 8 per 1,000 ms). A script given as `-` is `return 1` (the per-call floor).
use limitlab::clock::Millis;
use limitlab::emulator::Emulator;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), calls) = (args.get(1), args.get(2).map_or(Ok(20_000), |s| s.parse::<usize>())) else {
        eprintln!("usage: script_cost SCRIPT.lua|- [CALLS]");
        std::process::exit(2);
    };
    let Ok(calls) = calls else {
        eprintln!("script_cost: CALLS must be a whole number");
        std::process::exit(2);
    };
    let body = if path == "-" {
        b"return 1".to_vec()
    } else {
        std::fs::read(path).unwrap_or_else(|e| {
            eprintln!("script_cost: {path}: {e}");
            std::process::exit(2);
        })
    };
    let mut emu = Emulator::new();
    let sha = emu.script_load(&body).unwrap_or_else(|e| {
        eprintln!("script_cost: {path}: {e:?}");
        std::process::exit(1);
    });
    let clock = emu.clock();
    let keys: Vec<String> = (0..100).map(|u| format!("rate:{{user{u}}}")).collect();
    let mut errors = 0usize;
    for i in 0..calls {
        let now = 1_704_067_200_000 + i as i64;
        clock.set_millis(Millis(now));
        let now = now.to_string();
        let reply = emu.evalsha(sha.as_bytes(), &[keys[i % keys.len()].as_bytes()], &[b"8", b"1000", now.as_bytes()]);
        errors += usize::from(reply.is_error());
    }
    println!("{calls} calls, {errors} error replies");
}
