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
//! An optional third argument sets the number of users (then visited in a scattered order, as at
//! scale, where each call finds its key cold in the caches); the wall time per call is printed too.
use limitlab_emulator::clock::Millis;
use limitlab_emulator::Emulator;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let number = |i: usize, default: usize| args.get(i).map_or(Ok(default), |s| s.parse::<usize>());
    let (Some(path), Ok(calls), Ok(users)) = (args.get(1), number(2, 20_000), number(3, 100)) else {
        eprintln!("usage: script_cost SCRIPT.lua|- [CALLS] [USERS]  (whole numbers)");
        std::process::exit(2);
    };
    let users = users.max(1);
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
    let keys: Vec<String> = (0..users).map(|u| format!("rate:{{user{u}}}")).collect();
    // With many users, a stride that is prime to their number visits them all in a scattered order.
    let stride = if users > 100 { (users / 2 + 7919) | 1 } else { 1 };
    let mut errors = 0usize;
    let watch = limitlab_emulator::clock::Stopwatch::start();
    for i in 0..calls {
        let now = 1_704_067_200_000 + i as i64;
        clock.set_millis(Millis(now));
        let now = now.to_string();
        let user = (i.wrapping_mul(stride)) % keys.len();
        let reply = emu.evalsha(sha.as_bytes(), &[keys[user].as_bytes()], &[b"8", b"1000", now.as_bytes()]);
        errors += usize::from(reply.is_error());
    }
    let secs = watch.elapsed_secs();
    println!(
        "{calls} calls over {users} users, {errors} error replies, {:.3} us per call",
        secs * 1e6 / calls.max(1) as f64
    );
}
