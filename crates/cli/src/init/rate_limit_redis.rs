//! rate-limit-redis (npm), the Redis store of express-rate-limit.
//!
//! The store's `increment(key)` runs the `increment` script of its `scripts` table (a template
//! literal in the package's `main`, `dist/index.cjs`, sent after `.replaceAll(/^\s+/gm, "").trim()`,
//! which `init` applies too) with `KEYS = [prefix + key]` (`rl:` by default) and
//! `ARGV = [windowMs]`. The script replies `{totalHits, timeToExpire}`, restarting the count with
//! `SET key 1 PX windowMs` when the PTTL is 0 or less. express-rate-limit refuses when
//! `totalHits > limit`, reports `remaining = max(limit - totalHits, 0)`, and sends the reset time
//! (`now + timeToExpire`) as `RateLimit-Reset` and, on a refusal, as `Retry-After`.
use super::env::{self, Installed, Registry};
use super::literal::{js_strip_line_starts, js_trim};
use super::{js_script, looks_like_lua, Flags, Library, Outcome, Plan};

pub const LIBRARY: Library = Library { name: "rate-limit-redis", registry: Registry::Npm, tested: &["6.0.1"], build };

/// What the package does to the literal before sending it; `init` knows this one transformation.
const TRANSFORM: &str = r#".replaceAll(/^\s+/gm, "").trim()"#;

fn build(pkg: &Installed, flags: &Flags) -> Outcome {
    let mut out = Outcome::default();
    // express-rate-limit's own defaults: windowMs 60000, limit 5
    let policy = flags.policy(Some((5, 60_000, "express-rate-limit's defaults, limit 5 and windowMs 60000")));
    if let Some(Ok(erl)) = env::npm(&pkg.root, "express-rate-limit") {
        out.notes.push(format!("express-rate-limit {} beside it: its middleware is the client", erl.version));
    }
    let main = env::npm_main(pkg).unwrap_or_else(|| "dist/index.cjs".into());
    let (mut script, lit, src) = match js_script(pkg, &main, "increment", "increment") {
        Ok(x) => x,
        Err(e) => {
            out.problems.push(e);
            return out;
        }
    };
    let after = &src[lit.end..];
    if after.starts_with(TRANSFORM) {
        script.lua = js_trim(&js_strip_line_starts(&script.lua)).to_string();
        script.anchor = format!("increment, then {TRANSFORM}");
    } else if after.starts_with('.') {
        let call: String = after.chars().take_while(|&c| c != ',' && c != '\n').collect();
        out.problems.push(format!(
            "the script `increment` in {} is changed by `{call}` before it is sent, which init does not know",
            pkg.shown(&script.file)
        ));
        return out;
    }
    if let Err(e) = looks_like_lua(&script, pkg) {
        out.problems.push(e);
        return out;
    }
    let body = r#"[vars]
prefix = "rl:"

# increment(key): KEYS = [prefix + key], ARGV = [windowMs]; one hit per request, whatever its cost
[[call]]
name = "r"
script = "increment"
keys = ["${prefix}${subject}"]
args = ["${window_ms}"]

[decision]
allowed = "r[1] <= limit"
remaining = "max(limit - r[1], 0)"
# resetTime - now: what express-rate-limit sends as Retry-After and RateLimit-Reset
retry_after_ms = "r[2]"
reset_ms = "r[2]"
"#;
    out.plans.push(Plan {
        stem: "rate_limit_redis_fixed_window".into(),
        algorithm: "fixed_window",
        top: "description = \"RedisStore.increment: PTTL, then SET PX on a new window or INCR; express-rate-limit compares totalHits with limit\"\nfamily = \"fixed_window\"\n".into(),
        policy,
        scripts: vec![script],
        body: body.into(),
        not_expressed: vec![
            "skipFailedRequests / skipSuccessfulRequests: express-rate-limit sends DECR after the response, a call after the decision".into(),
            "a request's cost: the store counts one hit per request".into(),
        ],
    });
    out
}
