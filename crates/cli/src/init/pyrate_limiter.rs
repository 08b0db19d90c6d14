//! pyrate-limiter (PyPI), its two Redis stores.
//!
//! - `RedisBucket` keeps a log in a sorted set and runs `LuaScript.PUT_ITEM` (a triple-quoted string
//!   in `pyrate_limiter/buckets/redis_bucket.py`) with `KEYS = [bucket_key]` and
//!   `ARGV = [now ms, weight, item name, number of rates, then per rate: window start, limit,
//!   blocking rank]`; reply `{-1, -1}` when admitted, else `{failing rate's index, blocking stamp}`.
//!   The algorithm decides the window's start and the retry: `SlidingWindowLog` (the default:
//!   `now - interval`, blocking rank `limit - weight`, retry `stamp + interval - now + 1`) or
//!   `FixedWindow` (`now - now % interval`, no blocking entry, retry to the window's end).
//! - `RedisStateStore` with `GCRA` (or `TokenBucket`, the same) runs `_GCRA_LUA` (in
//!   `pyrate_limiter/abstracts/algorithm.py`) with `KEYS = [key]` and `ARGV = [now ms, weight, ttl
//!   ms, number of rates, then per rate: emission interval in µs, burst]`; reply `{-1, 0}` when
//!   admitted, else `{index, retry ms}` (`-1`: the weight can never fit).
//!
//! The key is the application's choice (one bucket per identity, through a bucket factory); the
//! spec names it `pyrate:<subject>`.
use super::env::{Installed, Registry};
use super::{looks_like_lua, py_script, Flags, Library, Outcome, Plan};

pub const LIBRARY: Library = Library { name: "pyrate-limiter", registry: Registry::PyPI, tested: &["4.5.1"], build };

const VARS: &str =
    "[vars]\n# the bucket's key is the application's choice: one bucket per identity\nprefix = \"pyrate:\"\n";

const LOG: &str = r#"
# RedisBucket.put with SlidingWindowLog: one rate; the item's name made unique per request
[[call]]
name = "r"
script = "put_item"
keys = ["${prefix}${subject}"]
args = ["${now_ms}", "${cost}", "${subject}:${seq}:", "1", "${now_ms - window_ms}", "${limit}", "${limit - cost}"]

[decision]
allowed = "r[1] == -1"
# SlidingWindowLog.retry_after: the blocking entry's stamp + interval - now + 1
retry_after_ms = "r[1] ~= -1 and cost <= limit and r[2] >= 0 and r[2] + window_ms - now_ms + 1 or nil"
"#;

const FIXED: &str = r#"
# RedisBucket.put with FixedWindow: the window starts at now - now % interval; no blocking entry
[[call]]
name = "r"
script = "put_item"
keys = ["${prefix}${subject}"]
args = ["${now_ms}", "${cost}", "${subject}:${seq}:", "1", "${window_start_ms}", "${limit}", "-1"]

[decision]
allowed = "r[1] == -1"
# FixedWindow.retry_after: to the window's end
retry_after_ms = "r[1] ~= -1 and cost <= limit and window_ms - now_ms % window_ms or nil"
"#;

const GCRA: &str = r#"
# RedisStateStore.check with GCRA: ARGV = [now, weight, ttl = ceil(2 burst interval / limit), 1 rate,
# emission = max(1, ceil(interval * 1000 / limit)) µs, burst]
[[call]]
name = "r"
script = "gcra"
keys = ["${prefix}${subject}"]
args = ["${now_ms}", "${cost}", "${(2 * burst * window_ms + limit - 1) // limit}", "1", "${max(1, (window_ms * 1000 + limit - 1) // limit)}", "${burst}"]

[decision]
allowed = "r[1] == -1"
retry_after_ms = "r[1] ~= -1 and r[2] >= 0 and r[2] or nil"
"#;

fn build(pkg: &Installed, flags: &Flags) -> Outcome {
    let mut out = Outcome::default();
    let log_notes = || {
        vec![
            "the Leaker: a background task trims the sorted set (ZREMRANGEBYSCORE) every leak_interval (10 s by default); the script itself sets no TTL".to_string(),
            "the Limiter's waiting: with a max_delay a refused acquire sleeps and tries again inside the client".to_string(),
        ]
    };
    match py_script(pkg, "pyrate_limiter/buckets/redis_bucket.py", "PUT_ITEM", "put_item")
        .and_then(|s| looks_like_lua(&s, pkg).map(|_| s))
    {
        Ok(script) => {
            for (algo, family, description, calls) in [
                (
                    "sliding_log",
                    "sliding_log",
                    "RedisBucket + SlidingWindowLog: ZCOUNT over (now - interval, now], ZADD per unit admitted",
                    LOG,
                ),
                (
                    "fixed_window",
                    "fixed_window",
                    "RedisBucket + FixedWindow: the same log, counted from the window's start",
                    FIXED,
                ),
            ] {
                out.plans.push(Plan {
                    stem: format!("pyrate_limiter_{algo}"),
                    algorithm: algo,
                    top: format!("description = \"{description}\"\nfamily = \"{family}\"\n"),
                    policy: flags.policy(None),
                    scripts: vec![script.clone()],
                    body: format!("{VARS}{calls}"),
                    not_expressed: log_notes(),
                });
            }
        }
        Err(e) => out.problems.push(format!("RedisBucket: {e}")),
    }
    match py_script(pkg, "pyrate_limiter/abstracts/algorithm.py", "_GCRA_LUA", "gcra").and_then(|s| looks_like_lua(&s, pkg).map(|_| s)) {
        Ok(script) => out.plans.push(Plan {
            stem: "pyrate_limiter_gcra".into(),
            algorithm: "gcra",
            top: "description = \"RedisStateStore + GCRA: one theoretical arrival time per rate, in integer µs, in a hash with a PEXPIRE\"\nfamily = \"gcra\"\n".into(),
            policy: flags.policy(None).with_burst(flags),
            scripts: vec![script],
            body: format!("{VARS}{GCRA}"),
            not_expressed: vec!["the Limiter's waiting: with a max_delay a refused acquire sleeps and tries again inside the client".into()],
        }),
        Err(e) => out.problems.push(format!("GCRA: {e}")),
    }
    out
}
