//! The command line on every fixture spec in tests/fixtures/, as a user runs it with small budgets:
//! `attack` (traces and plots into a temporary directory), `memory` (with and without a private
//! `redis-server`), `bench --no-redis --quick` and `bench --quick` against that server, `run` of the
//! attack's own replay scenario with `--redis`, `verify --script` on the server and on a private
//! three-master cluster. Every command must succeed and leave the servers empty, except where a
//! fixture is broken for that very command: `escaping_key` (its script names its key outside KEYS)
//! is refused before anything is sent to a server unless `--allow-outside-keys`, and on a cluster
//! always; `sliding_window_crossslot` is refused on a cluster naming both keys and their slots.
//!
//! The servers come from tests/common (`RedisServer`, `RedisCluster`); without `redis-server` the
//! server arms print why and pass, unless `CI` is set.
use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::{RedisCluster, RedisServer, TempDir};

fn limitlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_limitlab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("limitlab runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs limitlab and asserts it succeeded; returns stdout.
fn ok(args: &[&str]) -> String {
    let out = limitlab(args);
    assert!(
        out.status.success(),
        "limitlab {}: exit {:?}\n{}{}",
        args.join(" "),
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Runs limitlab and asserts it failed with `code`; returns stderr.
fn fails(args: &[&str], code: i32) -> String {
    let out = limitlab(args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "limitlab {}:\n{}{}",
        args.join(" "),
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stderr)
}

/// Every fixture spec, relative to the crate (as a user in the repository types it), with the
/// name its spec gives (reports and file names use it).
fn fixtures() -> Vec<(String, String)> {
    let v = common::fixture_specs();
    assert!(v.len() >= 15, "{} fixtures", v.len());
    v.iter()
        .map(|p| {
            let name = limitlab::Spec::from_file(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).name;
            (format!("tests/fixtures/{}", p.file_name().unwrap().to_str().unwrap()), name)
        })
        .collect()
}

/// A boundary-burst scenario file sized from the spec's policy (2L requests at the end of a window,
/// 2L at the start of the next), naming a built-in script that `--script` replaces. (Not the
/// attack's own replay scenario: a pattern whose requests all share one instant does not load
/// since traces infer a tick from their times, a problem of its own.)
fn boundary_scenario(spec: &str, dir: &TempDir) -> String {
    let s = limitlab::Spec::from_file(Path::new(env!("CARGO_MANIFEST_DIR")).join(spec).as_path()).unwrap();
    let (l, w) = (s.policy.limit, s.policy.window_ms);
    // The placeholder script must take the burst when the policy has one.
    let (burst, placeholder) = match s.policy.burst {
        Some(b) => (format!("burst = {b}\n"), "gcra"),
        None => (String::new(), "fixed_window"),
    };
    let text = format!(
        "name = \"boundary\"\nlimit = {l}\nwindow_ms = {w}\n{burst}algorithms = [\"{placeholder}\"]\n\
         [traffic]\nkind = \"boundary_burst\"\nwindow_ms = {w}\nboundary = 1\n\
         [[traffic.bursts]]\ncount = {n}\nspacing_us = {sp}\noffset_us = -{off}\n\
         [[traffic.bursts]]\ncount = {n}\nspacing_us = {sp}\noffset_us = 0\n",
        n = 2 * l,
        off = w * 1000 / 7,
        sp = w * 1000 / 7 / (2 * l),
    );
    let file = dir.0.join(format!("{}.scenario.toml", s.name));
    std::fs::write(&file, text).unwrap();
    file.to_str().unwrap().to_string()
}

fn dbsize(url: &str) -> i64 {
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    redis::cmd("DBSIZE").query(&mut c).unwrap()
}

#[test]
fn attack_memory_and_bench_on_the_emulator() {
    let dir = TempDir::new("fixtures-cli-emulator");
    for (spec, name) in fixtures() {
        let s = ok(&["attack", "--script", &spec, "--budget", "40", "--iterations", "30", "--out", dir.path()]);
        assert!(s.contains(&name), "{spec}: {s}");
        for f in [
            format!("attack_{name}.svg"),
            format!("attack_{name}_overshoot.toml"),
            format!("attack_{name}_overshoot.csv"),
        ] {
            assert!(dir.0.join(&f).is_file(), "{spec}: attack wrote no {f}");
        }
        let s = ok(&["memory", "--script", &spec, "--users", "1000", "--limit", "10/sec"]);
        // The row of the user's script, labelled as theirs.
        let row = s
            .lines()
            .find(|l| l.starts_with(&format!("{name} (your spec) ")))
            .unwrap_or_else(|| panic!("{spec}: no row\n{s}"));
        let keys: u64 = row.split("  ").map(str::trim).filter(|c| !c.is_empty()).nth(1).unwrap().parse().unwrap();
        assert!(keys >= 1, "{spec}: a user leaves at least one key: {row}");
        let s = ok(&["bench", "--no-redis", "--quick", "--only", &spec]);
        assert!(s.contains(&name) && s.contains("Checked: every engine's decisions equal"), "{spec}: {s}");
    }
}

#[test]
fn run_memory_bench_and_verify_on_a_private_redis() {
    let Some(server) = RedisServer::start_or_skip("fixtures_cli redis") else { return };
    let url = server.url();
    let dir = TempDir::new("fixtures-cli-redis");
    for (spec, name) in fixtures() {
        let scenario = boundary_scenario(&spec, &dir);
        let run = ["run", scenario.as_str(), "--script", spec.as_str(), "--redis", url.as_str()];
        let memory =
            ["memory", "--script", spec.as_str(), "--users", "1000", "--limit", "10/sec", "--redis", url.as_str()];
        let verify = ["verify", "--script", spec.as_str(), "--redis", url.as_str()];
        if name == "escaping_key" {
            // Refused before anything is sent: the key, the spec's call, the request.
            for args in [&run[..], &memory[..], &verify[..]] {
                let e = fails(args, 2);
                assert!(e.contains("outside the run's key prefix") && e.contains("`rl:{"), "{args:?}: {e}");
                assert!(e.contains("--allow-outside-keys"), "{e}");
                assert_eq!(dbsize(&url), 0, "{args:?}: nothing may be sent");
            }
            let e = fails(&run, 2);
            assert!(e.contains("call `hits` (script main) at tests/fixtures/escaping_key.toml:16"), "{e}");
            // On a server that is ours: it runs, and the keys it made outside are removed.
            for args in [&run[..], &memory[..], &verify[..]] {
                let mut a = args.to_vec();
                a.push("--allow-outside-keys");
                ok(&a);
                assert_eq!(dbsize(&url), 0, "{a:?}: keys left behind");
            }
            // bench leaves its Redis columns empty for it, saying why.
            let s = ok(&["bench", "--quick", "--only", &spec, "--redis", &url, "--pipeline", "16"]);
            assert!(
                s.contains("escaping_key: not run on Redis: its script writes keys outside the run's prefix"),
                "{s}"
            );
            assert_eq!(dbsize(&url), 0);
            continue;
        }
        let s = ok(&run);
        assert!(s.contains("decisions against the emulator's, call for call") && !s.contains("DIFFER"), "{spec}: {s}");
        assert_eq!(dbsize(&url), 0, "{spec}: run --redis left keys");
        let s = ok(&memory);
        let row =
            s.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{spec}: no row\n{s}"));
        assert!(row.ends_with("+0.00%"), "{spec}: the model and the server measure the same keys: {row}");
        assert_eq!(dbsize(&url), 0, "{spec}: memory --redis left keys");
        let s = ok(&verify);
        assert!(s.contains("every decision identical"), "{spec}: {s}");
        // The headline says on which clock: a spec that reads PTTL is compared on the server's,
        // and only a spec that reads no clock can be identical on the scenario's throughout.
        let reads_ttl =
            limitlab_cli::verify::against_redis::clock_reads(&limitlab::Spec::from_file(Path::new(&spec)).unwrap())
                .iter()
                .any(|r| !r.starts_with("TIME "));
        if reads_ttl {
            assert!(
                s.contains("on the server's clock, which the spec reads")
                    && !s.contains("identical on the scenario's clock"),
                "{spec}: {s}"
            );
        }
        if s.contains("only on the server's clock after differing") {
            assert!(s.contains("The cause: "), "{spec}: the notes say why: {s}");
        }
        assert_eq!(dbsize(&url), 0, "{spec}: verify left keys");
        let s = ok(&["bench", "--quick", "--only", &spec, "--redis", &url, "--pipeline", "16"]);
        let row =
            s.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{spec}: no row\n{s}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_ne!(cols[3], "-", "{spec}: a Redis, 1 connection figure: {row}");
        assert!(s.contains("Checked: every engine's decisions equal"), "{spec}: {s}");
        assert_eq!(dbsize(&url), 0, "{spec}: bench left keys");
    }
}

#[test]
fn verify_on_a_private_cluster() {
    // `verify --cluster` starts a private cluster of its own; the helper's cluster is the
    // `--redis` of a cluster node.
    let Some(cluster) = RedisCluster::start_or_skip("fixtures_cli cluster") else { return };
    let node_urls: Vec<String> = cluster.ports().iter().map(|p| format!("redis://127.0.0.1:{p}/")).collect();
    let all = fixtures();
    let tagged: Vec<&(String, String)> = all
        .iter()
        .filter(|(_, n)| n != "sliding_window_crossslot" && n != "escaping_key" && n != "upstash_dynamic_limit")
        .collect();
    let mut args = vec!["verify", "--cluster"];
    for (spec, _) in &tagged {
        args.extend(["--script", spec.as_str()]);
    }
    let s = ok(&args);
    assert_eq!(s.matches("every decision identical").count(), tagged.len(), "{s}");
    assert!(s.contains("a private Redis Cluster of 3 masters"), "{s}");
    // The same against the helper's cluster, through --redis.
    let mut with_url = args.clone();
    with_url.extend(["--redis", node_urls[0].as_str()]);
    let s = ok(&with_url);
    assert_eq!(s.matches("every decision identical").count(), tagged.len(), "{s}");
    for u in &node_urls {
        assert_eq!(dbsize(u), 0, "keys left on {u}");
    }
    // The cross-slot fixture: both keys and their slots, before anything is sent.
    let e = fails(
        &["verify", "--cluster", "--script", "tests/fixtures/sliding_window_crossslot.toml", "--redis", &node_urls[1]],
        2,
    );
    assert!(e.contains("CROSSSLOT Keys in request don't hash to the same slot"), "{e}");
    assert!(e.contains("call `r` (script main) at tests/fixtures/sliding_window_crossslot.toml:"), "{e}");
    let slot = |k: &str| limitlab_emulator::cluster::key_slot(k.as_bytes());
    for k in ["rl:b:1704067200", "rl:b:1704067199"] {
        assert!(e.contains(&format!("`{k}` (slot {})", slot(k))), "{k}: {e}");
    }
    // The escaping one is refused on a cluster even when allowed.
    let e = fails(
        &[
            "verify",
            "--cluster",
            "--script",
            "tests/fixtures/escaping_key.toml",
            "--allow-outside-keys",
            "--redis",
            &node_urls[2],
        ],
        2,
    );
    assert!(e.contains("on Redis Cluster a script may only touch the keys it is given in KEYS"), "{e}");
    // memory on the cluster: the cross-slot fixture is named the same way, the others measure.
    let e = fails(
        &[
            "memory",
            "--script",
            "tests/fixtures/sliding_window_crossslot.toml",
            "--limit",
            "10/sec",
            "--redis",
            &node_urls[0],
        ],
        2,
    );
    assert!(e.contains("CROSSSLOT") && e.contains("(slot ") && e.contains("call `r` (script main)"), "{e}");
    for (spec, name) in &tagged {
        let s = ok(&["memory", "--script", spec, "--limit", "10/sec", "--users", "1000", "--redis", &node_urls[0]]);
        let row =
            s.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{spec}: no row\n{s}"));
        assert!(row.ends_with("+0.00%"), "{spec} on the cluster: {row}");
    }
    // --cluster with a standalone server, or without --script, is a usage error.
    let e = fails(&["verify", "--cluster"], 2);
    assert!(e.contains("--cluster"), "{e}");
    for u in &node_urls {
        assert_eq!(dbsize(u), 0, "keys left on {u}");
    }
}
