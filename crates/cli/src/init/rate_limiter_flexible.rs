//! rate-limiter-flexible (npm), `RateLimiterRedis`.
//!
//! `consume(key, points)` runs one script (`incrTtlLuaScript` in `lib/RateLimiterRedis.js`, a
//! template literal whose lines end in `\`, so the script is one line) on
//! `KEYS = [keyPrefix + ':' + key]` (`rlflx:` by default) with
//! `ARGV = [points to consume, duration in whole seconds, the limiter's points, its duration]`; the
//! script does `SET key 0 EX duration NX`, `INCRBY`, `PTTL` and replies `{consumed, pttl}`. The client
//! refuses when consumed is above `points`, reports `remainingPoints = max(points - consumed, 0)` and
//! `msBeforeNext = pttl`. With `blockDuration` the refusal that first crosses the limit rewrites the
//! key (`SET key consumed EX blockDuration`, in a MULTI with PTTL) and reports the block's length.
use std::fmt::Write as _;

use super::env::{Installed, Registry};
use super::{js_script, looks_like_lua, toml_str, Flags, Library, Outcome, Plan};

pub const LIBRARY: Library =
    Library { name: "rate-limiter-flexible", registry: Registry::Npm, tested: &["11.4.0"], build };

fn build(pkg: &Installed, flags: &Flags) -> Outcome {
    let mut out = Outcome::default();
    let policy = flags.policy(None);
    if let Err(e) = policy.whole_seconds("duration") {
        out.problems.push(e);
        return out;
    }
    if let Some(b) = flags.block_ms {
        if b % 1000 != 0 || b == 0 {
            out.problems.push(format!("--block {b}: blockDuration is whole seconds, above 0"));
            return out;
        }
    }
    let script = match js_script(pkg, "lib/RateLimiterRedis.js", "incrTtlLuaScript", "incr_ttl") {
        Ok((s, ..)) => s,
        Err(e) => {
            out.problems.push(e);
            return out;
        }
    };
    if let Err(e) = looks_like_lua(&script, pkg) {
        out.problems.push(e);
        return out;
    }
    let block_s = flags.block_ms.map(|b| b / 1000);
    let mut body = String::new();
    let _ = writeln!(body, "[vars]\nkey_prefix = {}", toml_str("rlflx"));
    if let Some(b) = block_s {
        let _ = writeln!(body, "# blockDuration, in seconds\nblock_s = {b}");
    }
    body.push_str(
        r#"
# consume(subject, cost): the script on keyPrefix:key; ARGV are the points to consume, the duration
# in whole seconds, then the limiter's points and duration (sent, not read by the script)
[[call]]
name = "r"
script = "incr_ttl"
keys = ["${key_prefix}:${subject}"]
args = ["${cost}", "${window_ms // 1000}", "${limit}", "${window_ms // 1000}"]
"#,
    );
    let (retry, reset) = match block_s {
        Some(_) => {
            body.push_str(
                r#"
# blockDuration: the refusal that first crosses the limit keeps the key, with the block's expiry
[[call]]
name = "block"
command = "SET"
when = "r[1] > limit and r[1] <= limit + cost"
keys = ["${key_prefix}:${subject}"]
args = ["${r[1]}", "EX", "${block_s}"]
"#,
            );
            ("cost <= limit and (block and block_s * 1000 or r[2]) or nil", "block and block_s * 1000 or r[2]")
        }
        None => ("cost <= limit and r[2] or nil", "r[2]"),
    };
    let _ = write!(
        body,
        r#"
[decision]
allowed = "r[1] <= limit"
# remainingPoints
remaining = "max(limit - r[1], 0)"
# msBeforeNext: the key's PTTL, which the middleware sends as Retry-After and X-RateLimit-Reset
retry_after_ms = "{retry}"
reset_ms = "{reset}"
"#
    );
    let mut top = String::from(
        "description = \"RateLimiterRedis.consume: SET NX EX + INCRBY + PTTL in one script; the client compares consumed points with points\"\nfamily = \"fixed_window\"\n",
    );
    if block_s.is_some() {
        top.push_str("# a refusal blocks the subject for blockDuration: refusing what an exact log would admit is the\n# point, so the false_rejections check accepts any share\nmax_false_rejection_rate = 1.0\n");
    }
    out.plans.push(Plan {
        stem: "rate_limiter_flexible_fixed_window".into(),
        algorithm: "fixed_window",
        top,
        policy,
        scripts: vec![script],
        body,
        not_expressed: vec![
            "inMemoryBlockOnConsumed / inMemoryBlockDuration: a block kept in the client's memory, refusing without calling Redis \
             (a hand-written adapter says it with its `client` table: see tests/fixtures/rlflex_memory_block.toml in limitlab's repository)"
                .into(),
            "execEvenly: the client delays admitted requests to spread them over the duration".into(),
            "insuranceLimiter: another limiter that decides while Redis fails".into(),
        ],
    });
    out.notes.push(match block_s {
        Some(b) => format!("blockDuration {b} s (--block)"),
        None => "blockDuration 0, the default (--block MS writes a block)".into(),
    });
    out
}
