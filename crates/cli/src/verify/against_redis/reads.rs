//! What a spec reads of the server's clock (`TIME`, `PTTL`, ...) and where it sets absolute expiry
//! times: what decides on which clock its run is compared.
use limitlab_engine::spec::{Program, Spec, Target};

/// Where the spec's scripts set an absolute expiry (`PXAT`/`EXAT` of SET, `EXPIREAT`,
/// `PEXPIREAT`): `PXAT at limiter.lua:12`. Such a deadline comes from the scenario's clock and is
/// read against the server's.
pub fn absolute_expiries(spec: &Spec) -> Vec<String> {
    const ABSOLUTE: [&str; 4] = ["PXAT", "EXAT", "PEXPIREAT", "EXPIREAT"];
    let mut out = Vec::new();
    for sc in spec.scripts.iter().chain(&spec.libraries) {
        for (c, line) in limitlab_engine::backend::reads_commands(&sc.script.body, &ABSOLUTE) {
            out.push(format!("{c} at {}:{line}", sc.path.display()));
        }
    }
    if let Program::Declarative { calls, .. } = &spec.program {
        for c in calls {
            for a in c.args.iter().filter(|a| ABSOLUTE.iter().any(|x| x.eq_ignore_ascii_case(a.text.trim()))) {
                out.push(format!("{} at {}:{} (call `{}`)", a.text.trim().to_ascii_uppercase(), spec.origin.display(), a.line, c.name));
            }
            if let Target::Command(n) = &c.target {
                if ABSOLUTE.iter().any(|x| x.eq_ignore_ascii_case(n)) {
                    out.push(format!("{} at {}:{} (call `{}`)", n.to_ascii_uppercase(), spec.origin.display(), c.line, c.name));
                }
            }
        }
    }
    out
}

/// Whether a [`clock_reads`] entry is a script's `TIME`, which the shim answers on the server.
pub(super) fn shimmed_time(read: &str) -> bool {
    read.starts_with("TIME ") && !read.ends_with("(function library)")
}

/// Commands whose replies depend on the server's clock. `TIME` is answered by the shim of
/// [`limitlab_engine::backend::real`]; the others make a spec compare on the server's clock.
pub const CLOCK_READS: [&str; 5] = ["TIME", "PTTL", "TTL", "PEXPIRETIME", "EXPIRETIME"];

/// What `spec` reads of the server's clock, as `PTTL at file:line`: commands of [`CLOCK_READS`]
/// named in its scripts' or adapter's string literals, and spec calls that are such commands.
pub fn clock_reads(spec: &Spec) -> Vec<String> {
    let mut out = Vec::new();
    for sc in &spec.scripts {
        for (c, line) in limitlab_engine::backend::reads_commands(&sc.script.body, &CLOCK_READS) {
            out.push(format!("{c} at {}:{line}", sc.path.display()));
        }
    }
    // A function library is loaded once and called with FCALL: no shim reaches its TIME, so it
    // counts as reading the server's clock like a TTL.
    for lib in &spec.libraries {
        for (c, line) in limitlab_engine::backend::reads_commands(&lib.script.body, &CLOCK_READS) {
            out.push(format!("{c} at {}:{line} (function library)", lib.path.display()));
        }
    }
    match &spec.program {
        Program::Adapter { path, source, .. } => {
            for (c, line) in limitlab_engine::backend::reads_commands(source, &CLOCK_READS) {
                out.push(format!("{c} at {}:{line}", path.display()));
            }
        }
        Program::Declarative { calls, .. } => {
            for c in calls {
                if let Target::Command(n) = &c.target {
                    if let Some(x) = CLOCK_READS.iter().find(|x| x.eq_ignore_ascii_case(n)) {
                        out.push(format!("{x} at {}:{} (call `{}`)", spec.origin.display(), c.line, c.name));
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod clock_tests {
    use super::*;
    use limitlab_engine::limiter::Variant;

    #[test]
    fn what_each_fixture_reads_of_the_server_clock() {
        let reads = |f: &str| {
            clock_reads(
                &Spec::from_file(std::path::Path::new(&format!("{}/../../tests/fixtures/{f}.toml", env!("CARGO_MANIFEST_DIR")))).unwrap(),
            )
        };
        assert_eq!(reads("redis_rate_gcra"), ["TIME at tests/fixtures/redis_rate_gcra.lua:30"]);
        assert_eq!(reads("rate_limit_redis"), ["PTTL at tests/fixtures/rate_limit_redis.lua:23"]);
        let rl = reads("rlflex_consume");
        assert!(rl.iter().all(|r| r.starts_with("PTTL at tests/fixtures/rlflex_consume.")), "{rl:?}");
        assert!(rl.iter().any(|r| r.ends_with("(call `block_ttl`)")), "{rl:?}");
        // A comment that names PTTL is not a call.
        assert!(reads("fixed_window_no_ttl").is_empty());
        for v in Variant::ALL {
            assert!(clock_reads(&limitlab_engine::spec::builtin::spec(v)).is_empty(), "{v}");
        }
    }
}
