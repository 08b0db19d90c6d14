//! Criterion benchmarks of the emulator's hot paths: EVALSHA of every script on the throughput
//! workload of `limitlab bench`, single commands without Lua (INCR, GET, HMGET, HINCRBY, ZADD,
//! ZREMRANGEBYSCORE, ZCARD, PEXPIRE), and what `redis.call` adds over running the same command
//! directly. `cargo bench --bench emulator` (filters work: `cargo bench --bench emulator -- evalsha`).
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use limitlab_cli::bench::workload::Workload;
use limitlab_emulator::clock::Millis;
use limitlab_emulator::Emulator;
use limitlab_engine::backend::emulated::EmulatedBackend;
use limitlab_engine::backend::Backend;
use limitlab_engine::limiter::direct::Direct;
use limitlab_engine::limiter::Variant;

// mimalloc is the global allocator of everything built from the crate (src/lib.rs), these benchmarks
// included, so their figures match the binary's.

/// EVALSHA of each script, one call per iteration, cycling through the workload's calls (the
/// clock moves with them, so windows roll and refusals happen as in `limitlab bench`).
fn evalsha(c: &mut Criterion) {
    let mut g = c.benchmark_group("evalsha");
    g.throughput(Throughput::Elements(1)).measurement_time(Duration::from_secs(3));
    let w = Workload::throughput();
    let keys = w.keys("");
    for v in Variant::ALL {
        let l = Direct::new(v, w.params).expect("valid parameters");
        let mut emu = Emulator::new();
        let sha = emu.script_load(l.script().as_bytes()).expect("the script compiles");
        let clock = emu.clock();
        let (mut kb, mut ab) = (Vec::new(), Vec::new());
        let mut i = 0usize;
        g.bench_function(v.name(), |b| {
            b.iter(|| {
                let now = w.now_ms(i);
                clock.set_millis(Millis(now));
                l.write_keys_and_args(&keys[w.user(i)], now, 1, &mut kb, &mut ab);
                let k: [&[u8]; 1] = [kb[0].as_bytes()];
                let mut argv: [&[u8]; 5] = [b""; 5];
                for (slot, s) in argv.iter_mut().zip(ab.iter()) {
                    *slot = s.as_bytes();
                }
                i += 1;
                black_box(emu.evalsha(sha.as_bytes(), &k, &argv[..ab.len()]))
            })
        });
    }
    g.finish();
}

/// The same calls through each script's spec (`Limiter::call`, the path every tool takes): KEYS and
/// ARGV from the spec's templates, the decision from its expressions. Against `evalsha` (the
/// hand-written path), this is what a spec costs.
fn spec_path(c: &mut Criterion) {
    let mut g = c.benchmark_group("spec_path");
    g.throughput(Throughput::Elements(1)).measurement_time(Duration::from_secs(3));
    let w = Workload::throughput();
    let subjects = w.subjects();
    for v in Variant::ALL {
        let l = w.limiter(v).expect("valid parameters");
        let mut backend = EmulatedBackend::default();
        let mut session = l.session();
        let mut i = 0usize;
        g.bench_function(v.name(), |b| {
            b.iter(|| {
                let now = w.now_ms(i);
                backend.set_time_ms(now);
                let d = l.call(&mut backend, &mut session, &subjects[w.user(i)], now, 1).expect("the script runs");
                i += 1;
                black_box(d)
            })
        });
    }
    g.finish();
}

/// Single commands through `Emulator::execute` (no Lua), on 100 keys in turn.
fn commands(c: &mut Criterion) {
    let mut g = c.benchmark_group("command");
    g.throughput(Throughput::Elements(1)).measurement_time(Duration::from_secs(2));
    let keys: Vec<Vec<u8>> = (0..100).map(|u| format!("rate:{{u{u}}}").into_bytes()).collect();
    let mut emu = Emulator::new();
    for k in &keys {
        emu.execute(&[b"SET", k, b"1"]);
        let h = [k.as_slice(), b":h"].concat();
        emu.execute(&[b"HSET", &h, b"w", b"28401120", b"n", b"3"]);
    }
    let mut i = 0usize;
    let mut next = || {
        i += 1;
        &keys[i % keys.len()]
    };
    g.bench_function("INCR", |b| b.iter(|| black_box(emu.execute(&[b"INCR", next()]))));
    g.bench_function("GET", |b| b.iter(|| black_box(emu.execute(&[b"GET", next()]))));
    g.bench_function("PEXPIRE", |b| b.iter(|| black_box(emu.execute(&[b"PEXPIRE", next(), b"60000"]))));
    let hkeys: Vec<Vec<u8>> = keys.iter().map(|k| [k.as_slice(), b":h"].concat()).collect();
    let mut j = 0usize;
    let mut hnext = || {
        j += 1;
        &hkeys[j % hkeys.len()]
    };
    g.bench_function("HMGET", |b| b.iter(|| black_box(emu.execute(&[b"HMGET", hnext(), b"w", b"n"]))));
    g.bench_function("HINCRBY", |b| b.iter(|| black_box(emu.execute(&[b"HINCRBY", hnext(), b"n", b"1"]))));
    g.bench_function("HSET", |b| b.iter(|| black_box(emu.execute(&[b"HSET", hnext(), b"w", b"28401121", b"n", b"0"]))));

    // A sorted set kept at 1,000 members: add the newest, drop the oldest, count.
    let mut z = Emulator::new();
    for t in 0..1000 {
        let s = t.to_string();
        z.execute(&[b"ZADD", b"log", s.as_bytes(), s.as_bytes()]);
    }
    let mut t = 1000u64;
    g.bench_function("ZADD+ZREMRANGEBYSCORE+ZCARD (1,000 members)", |b| {
        b.iter(|| {
            let s = t.to_string();
            let old = (t - 1000).to_string();
            t += 1;
            black_box(z.execute(&[b"ZADD", b"log", s.as_bytes(), s.as_bytes()]));
            black_box(z.execute(&[b"ZREMRANGEBYSCORE", b"log", b"-inf", old.as_bytes()]));
            black_box(z.execute(&[b"ZCARD", b"log"]))
        })
    });
    g.finish();
}

/// What scripting costs: an empty script, a script making one `redis.call('INCR')`, and the same
/// INCR run directly. (Script − direct) is the price of a call through Lua.
fn redis_call_overhead(c: &mut Criterion) {
    let mut g = c.benchmark_group("scripting");
    g.throughput(Throughput::Elements(1)).measurement_time(Duration::from_secs(2));
    let mut emu = Emulator::new();
    let empty = emu.script_load(b"return 1").expect("compiles");
    let one_call = emu.script_load(b"return redis.call('INCR', KEYS[1])").expect("compiles");
    let two_calls =
        emu.script_load(b"redis.call('INCR', KEYS[1]) return redis.call('INCR', KEYS[1])").expect("compiles");
    g.bench_function("EVALSHA return 1", |b| b.iter(|| black_box(emu.evalsha(empty.as_bytes(), &[], &[]))));
    g.bench_function("EVALSHA redis.call INCR", |b| {
        b.iter(|| black_box(emu.evalsha(one_call.as_bytes(), &[b"rate:{u1}"], &[])))
    });
    g.bench_function("EVALSHA 2 x redis.call INCR", |b| {
        b.iter(|| black_box(emu.evalsha(two_calls.as_bytes(), &[b"rate:{u1}"], &[])))
    });
    g.bench_function("INCR directly", |b| b.iter(|| black_box(emu.execute(&[b"INCR", b"rate:{u1}"]))));
    g.finish();
}

criterion_group!(benches, evalsha, spec_path, commands, redis_call_overhead);
criterion_main!(benches);
