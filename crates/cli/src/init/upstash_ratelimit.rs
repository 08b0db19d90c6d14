//! @upstash/ratelimit (npm), the single-region `Ratelimit` (`RegionRatelimit`).
//!
//! `ratelimit.limit(identifier, {rate})` runs the algorithm's `limit` script from the package's
//! `SCRIPTS` table (template literals in `dist/index.js`; the table also carries each script's sha1,
//! which `init` compares with what it read). The identifier is prefixed (`@upstash/ratelimit:` by
//! default); the limiter's options are the policy:
//!
//! - `fixedWindow(tokens, window)`: `KEYS = [prefix:id:bucket]` with `bucket = floor(now / window)`,
//!   `ARGV = [tokens, window, rate]`; reply `{count, limit}`; success is `count <= limit`.
//! - `slidingWindow(tokens, window)`: `KEYS = [prefix:id:bucket, prefix:id:bucket-1]`,
//!   `ARGV = [tokens, now, window, rate]`; reply `{remaining, limit}`, remaining `-1` when refused.
//! - `tokenBucket(refillRate, interval, maxTokens)`: `KEYS = [prefix:id]`,
//!   `ARGV = [maxTokens, interval, refillRate, now, rate]`; reply `{remaining, next refill, limit}`.
//!
//! `reset` (a timestamp: the window's end, or the next refill) is what applications send as
//! `X-RateLimit-Reset` and, on a refusal, as the time to come back.
use super::env::{Installed, Registry};
use super::{js_script, looks_like_lua, Flags, Library, LuaSource, Outcome, Plan};

pub const LIBRARY: Library = Library { name: "@upstash/ratelimit", registry: Registry::Npm, tested: &["2.2.0"], build };

const FILE: &str = "dist/index.js";

const VARS: &str = "[vars]\nprefix = \"@upstash/ratelimit\"\n";

const FIXED: &str = r#"
# fixedWindow(limit, window): the bucket is floor(now / window); ARGV = [tokens, window, rate]
[[call]]
name = "r"
script = "limit"
keys = ["${prefix}:${subject}:${window_index}"]
args = ["${limit}", "${window_ms}", "${cost}"]

[decision]
allowed = "r[1] <= r[2]"
remaining = "max(r[2] - r[1], 0)"
# reset - now: the bucket's end
retry_after_ms = "window_ms - now_ms % window_ms"
reset_ms = "window_ms - now_ms % window_ms"
"#;

const SLIDING: &str = r#"
# slidingWindow(limit, window): the current and the previous bucket; ARGV = [tokens, now, window, rate]
[[call]]
name = "r"
script = "limit"
keys = ["${prefix}:${subject}:${window_index}", "${prefix}:${subject}:${prev_window_index}"]
args = ["${limit}", "${now_ms}", "${window_ms}", "${cost}"]

[decision]
allowed = "r[1] >= 0"
remaining = "max(r[1], 0)"
# reset - now: the current bucket's end
retry_after_ms = "window_ms - now_ms % window_ms"
reset_ms = "window_ms - now_ms % window_ms"
"#;

const BUCKET: &str = r#"
# tokenBucket(refillRate = limit, interval = window, maxTokens = burst);
# ARGV = [maxTokens, interval, refillRate, now, rate]
[[call]]
name = "r"
script = "limit"
keys = ["${prefix}:${subject}"]
args = ["${burst}", "${window_ms}", "${limit}", "${now_ms}", "${cost}"]

[decision]
allowed = "r[1] >= 0"
remaining = "max(r[1], 0)"
# reset - now: the next refill
retry_after_ms = "r[2] - now_ms"
reset_ms = "r[2] - now_ms"
"#;

fn build(pkg: &Installed, flags: &Flags) -> Outcome {
    let mut out = Outcome::default();
    let algorithms: [(&str, &str, &str, &str, &str); 3] = [
        (
            "fixed_window",
            "fixedWindowLimitScript",
            "fixed_window",
            "fixedWindow: INCRBY + PEXPIRE on the first hit of a bucketed key; the client compares the count with the limit",
            FIXED,
        ),
        (
            "sliding_window",
            "slidingWindowLimitScript",
            "sliding_window",
            "slidingWindow: current and previous bucket, the previous weighted by its overlap; -1 when refused",
            SLIDING,
        ),
        (
            "token_bucket",
            "tokenBucketLimitScript",
            "token_bucket",
            "tokenBucket: a hash of refilledAt and tokens, refilled whole intervals at a time",
            BUCKET,
        ),
    ];
    for (algo, anchor, family, description, calls) in algorithms {
        let (script, _, src) = match js_script(pkg, FILE, anchor, "limit") {
            Ok(x) => x,
            Err(e) => {
                out.problems.push(format!("{algo}: {e}"));
                continue;
            }
        };
        if let Err(e) = looks_like_lua(&script, pkg).and_then(|_| same_hash(&script, &src, pkg)) {
            out.problems.push(format!("{algo}: {e}"));
            continue;
        }
        let mut policy = flags.policy(None);
        if algo == "token_bucket" {
            policy = policy.with_burst(flags);
        }
        out.plans.push(Plan {
            stem: format!("upstash_ratelimit_{algo}"),
            algorithm: algo,
            top: format!("description = \"{description}\"\nfamily = \"{family}\"\n"),
            policy,
            scripts: vec![script],
            body: format!("{VARS}{calls}"),
            not_expressed: vec![
                "ephemeralCache (on by default): after a refusal the client refuses the identifier from its own memory until reset, without calling Redis".into(),
                "timeout (5000 ms by default): a request Redis has not answered in time is admitted".into(),
            ],
        });
    }
    out
}

/// The package's `SCRIPTS` table gives each script's sha1 beside it (`script: name, hash: "..."`):
/// what was read must hash to it, or it is not what the client sends.
fn same_hash(script: &LuaSource, src: &str, pkg: &Installed) -> std::result::Result<(), String> {
    let needle = format!("script: {},", script.anchor);
    let Some(at) = src.find(&needle) else {
        return Ok(());
    };
    let rest = &src[at + needle.len()..];
    let Some(h) = rest.find("hash: \"").filter(|&h| h < 200) else {
        return Ok(());
    };
    let theirs: String = rest[h + 7..].chars().take_while(|c| c.is_ascii_hexdigit()).collect();
    match theirs == script.sha1() {
        true => Ok(()),
        false => Err(format!(
            "`{}` in {} hashes to {}, but the package sends it as {theirs}: not read as the client sends it",
            script.anchor,
            pkg.shown(&script.file),
            script.sha1()
        )),
    }
}
