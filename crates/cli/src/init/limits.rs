//! limits (PyPI), its Redis storage (`limits.storage.RedisStorage`).
//!
//! The package ships its scripts as files, `limits/resources/redis/lua_scripts/*.lua`, and registers
//! them with redis-py (`register_script`: EVALSHA, then SCRIPT LOAD on NOSCRIPT). A strategy's
//! `hit(item, identifier, cost)` runs one script on the item's key,
//! `LIMITS:LIMITER/<identifier>/<amount>/<multiples>/<granularity>`; applications (Flask-Limiter and
//! kin) then read `get_window_stats` for their headers: the remaining count and the reset time,
//! which they also send as `Retry-After`. Windows are whole seconds.
//!
//! - `FixedWindowRateLimiter`: `incr_expire.lua` (`ARGV = [expiry, cost]`, reply the count, admitted
//!   when `<= amount`); the stats are `GET` and `TTL` (whole seconds).
//! - `MovingWindowRateLimiter`: `acquire_moving_window.lua` (`ARGV = [time.time(), amount, expiry,
//!   cost]`, reply true/false); the stats run `moving_window.lua` (`ARGV = [time.time() - expiry,
//!   amount]`, reply `{oldest stamp, count}` or nil): reset is the oldest stamp plus the expiry.
//! - `SlidingWindowCounterRateLimiter`: `acquire_sliding_window.lua` on the keys `{key}/-1` and
//!   `{key}` (`ARGV = [amount, expiry, cost]`, reply true/false); the stats run `sliding_window.lua`
//!   (`ARGV = [expiry]`, reply `{previous count, its PTTL, current count, its PTTL}`), from which the
//!   client weighs the count and finds the next reset.
use super::env::{Installed, Registry};
use super::{file_script, looks_like_lua, Flags, Library, LuaSource, Outcome, Plan};

pub const LIBRARY: Library = Library { name: "limits", registry: Registry::PyPI, tested: &["5.8.0"], build };

const DIR: &str = "limits/resources/redis/lua_scripts";

const VARS: &str = r#"[vars]
prefix = "LIMITS"
namespace = "LIMITER"
"#;

const FIXED: &str = r#"
# hit: incr_expire.lua, ARGV = [expiry in seconds, cost]
[[call]]
name = "hits"
script = "incr_expire"
keys = ["${prefix}:${namespace}/${subject}/${limit}/${window_ms // 1000}/second"]
args = ["${window_ms // 1000}", "${cost}"]

# get_window_stats: GET (the count just returned) and TTL, in whole seconds
[[call]]
name = "ttl"
command = "TTL"
keys = ["${prefix}:${namespace}/${subject}/${limit}/${window_ms // 1000}/second"]

[decision]
allowed = "hits <= limit"
remaining = "max(limit - hits, 0)"
# WindowStats.reset_time - now: max(TTL, 0) seconds
retry_after_ms = "cost <= limit and max(ttl, 0) * 1000 or nil"
reset_ms = "max(ttl, 0) * 1000"
"#;

const MOVING: &str = r#"
[let]
# WindowStats.reset_time - now: the oldest stamp in the window plus the expiry (now plus the
# expiry on an empty window), in ms rounded up
reset_in_ms = "ceil(((num(stats[1]) or now_s) + window_ms // 1000 - now_s) * 1000 - 0.0005)"

# hit: acquire_moving_window.lua, ARGV = [time.time(), amount, expiry, cost]; replies true or nil
[[call]]
name = "acquired"
script = "acquire"
keys = ["${prefix}:${namespace}/${subject}/${limit}/${window_ms // 1000}/second"]
args = ["${now_s}", "${limit}", "${window_ms // 1000}", "${cost}"]

# get_window_stats: moving_window.lua, ARGV = [time.time() - expiry, amount]
[[call]]
name = "stats"
script = "stats"
keys = ["${prefix}:${namespace}/${subject}/${limit}/${window_ms // 1000}/second"]
args = ["${now_s - window_ms // 1000}", "${limit}"]

[decision]
allowed = "acquired == 1"
remaining = "limit - (stats[2] or 0)"
retry_after_ms = "cost <= limit and reset_in_ms or nil"
reset_ms = "reset_in_ms"
"#;

const SLIDING: &str = r#"
[let]
expiry = "window_ms // 1000"
# the stats reply, as the client reads it: counts, and PTTLs in seconds (0 for a missing key)
pc = "num(stats[1]) or 0"
pt = "max(num(stats[2]) or 0, 0) / 1000"
cc = "num(stats[3]) or 0"
ct = "max(num(stats[4]) or 0, 0) / 1000"
weighted = "pc * pt / expiry + cc"
# when each counter next lets a unit go (1e18 for none), plus 1 so that 0 stays true
pr1 = "pc > 0 and pt % (expiry / max(pc, 1)) + 1 or 1e18"
cr1 = "cc > 0 and ct % expiry + 1 or 1e18"
reset_in_s = "min(pr1, cr1) < 1e18 and min(pr1, cr1) - 1 or 0"

# hit: acquire_sliding_window.lua on {key}/-1 and {key}, ARGV = [amount, expiry, cost]
[[call]]
name = "acquired"
script = "acquire"
keys = ["${prefix}:{${namespace}/${subject}/${limit}/${window_ms // 1000}/second}/-1", "${prefix}:{${namespace}/${subject}/${limit}/${window_ms // 1000}/second}"]
args = ["${limit}", "${window_ms // 1000}", "${cost}"]

# get_window_stats: sliding_window.lua, ARGV = [expiry]
[[call]]
name = "stats"
script = "stats"
keys = ["${prefix}:{${namespace}/${subject}/${limit}/${window_ms // 1000}/second}/-1", "${prefix}:{${namespace}/${subject}/${limit}/${window_ms // 1000}/second}"]
args = ["${window_ms // 1000}"]

[decision]
allowed = "acquired == 1"
remaining = "max(0, limit - floor(weighted))"
# WindowStats.reset_time - now
retry_after_ms = "cost <= limit and ceil(reset_in_s * 1000 - 0.0005) or nil"
reset_ms = "ceil(reset_in_s * 1000 - 0.0005)"
"#;

type Algo = (&'static str, &'static str, &'static str, &'static [(&'static str, &'static str)], &'static str);

const ALGORITHMS: [Algo; 3] = [
    (
        "fixed_window",
        "fixed_window",
        "FixedWindowRateLimiter: INCRBY + EXPIRE on the first hit; stats from GET and TTL",
        &[("incr_expire", "incr_expire.lua")],
        FIXED,
    ),
    (
        "moving_window",
        "sliding_log",
        "MovingWindowRateLimiter: a list of time.time() stamps trimmed to the limit; stats from the oldest stamp in the window",
        &[("acquire", "acquire_moving_window.lua"), ("stats", "moving_window.lua")],
        MOVING,
    ),
    (
        "sliding_window",
        "sliding_window",
        "SlidingWindowCounterRateLimiter: current and previous counters, the previous weighted by its remaining TTL",
        &[("acquire", "acquire_sliding_window.lua"), ("stats", "sliding_window.lua")],
        SLIDING,
    ),
];

fn build(pkg: &Installed, flags: &Flags) -> Outcome {
    let mut out = Outcome::default();
    let policy = flags.policy(None);
    if let Err(e) = policy.whole_seconds("a RateLimitItem's expiry") {
        out.problems.push(e);
        return out;
    }
    'algos: for (algo, family, description, files, calls) in ALGORITHMS {
        let mut scripts: Vec<LuaSource> = Vec::new();
        for (label, file) in files {
            match file_script(pkg, &format!("{DIR}/{file}"), label).and_then(|s| looks_like_lua(&s, pkg).map(|_| s)) {
                Ok(s) => scripts.push(s),
                Err(e) => {
                    out.problems.push(format!("{algo}: {e}"));
                    continue 'algos;
                }
            }
        }
        out.plans.push(Plan {
            stem: format!("limits_{algo}"),
            algorithm: algo,
            // limits' WindowStats.reset_time is when the next unit is back for the moving and
            // sliding windows (docs/specs.md, "Reset: what it means"); the fixed window's is the
            // whole quota's.
            top: format!(
                "description = \"{description}\"\nfamily = \"{family}\"\n{}",
                if algo == "fixed_window" { "" } else { "reset_means = \"unit\"\n" }
            ),
            policy: policy.clone(),
            scripts,
            body: format!("{VARS}{calls}"),
            not_expressed: Vec::new(),
        });
    }
    out
}
