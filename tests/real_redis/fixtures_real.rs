//! Every fixture spec in tests/fixtures/ on a private `redis-server` and on a private three-master
//! Redis Cluster, decision for decision against the emulator, through the library
//! (`limitlab_cli::verify::against_redis::check_run`, what `run --redis` does).
//!
//! Each fixture runs two small scenarios written for its own policy (limit L per window W): the
//! boundary burst (2L requests in the last seventh of a window, 2L in the first fiftieth of the
//! next) and a uniform stream of two subjects at 2.5 L per W for five windows. Every decision must
//! equal the emulator's, and the server must be left empty (the servers are private, so DBSIZE is
//! exact).
//!
//! The server's clock, which a run cannot set, is handled the way `run --redis` handles it (see
//! `limitlab_cli::verify::against_redis`):
//! - `redis_rate_gcra` reads `TIME` inside its script. On the server it runs behind a one-line shim
//!   that answers `TIME` with the emulator's virtual clock (the only change; everything else is the
//!   server's), so both sides decide at the same time and the comparison is on the scenario's clock.
//! - `rate_limit_redis` and the `rlflex_*` fixtures read `PTTL`, i.e. the server's wall clock: a scenario of
//!   several virtual seconds runs in milliseconds there. They are compared with the emulator's clock
//!   set to the server's TIME at every request (read around each request, each started early in a
//!   server millisecond); their decisions then follow the wall clock, not the scenario's times, and
//!   must still be identical.
//! - `sliding_window_short_ttl` (counters that live one window, one too few) decides differently
//!   when its keys expire, and the server expires keys on its wall clock: on the scenario's clock the
//!   emulator drops the previous window's counter after one virtual second while the server still
//!   has it. `run --redis` then compares again on the server's clock, where they agree; the report
//!   says so with the first difference seen. Same for any fixture whose decisions depend on expiry.
//!
//! On the cluster every hash-tagged fixture is identical; `sliding_window_crossslot` (and
//! `upstash_dynamic_limit`, whose second key is sent as "") is refused
//! before anything is sent, with both keys and their slots; `escaping_key` (no KEYS: the script
//! names its own key) is refused on both, naming the key, the spec's call and the request, unless
//! `--allow-outside-keys` (standalone only: a cluster cannot route a call without KEYS).
use crate::common;

use std::path::{Path, PathBuf};

use common::{RedisCluster, RedisServer, TempDir};
use limitlab::sim::{Progress, Scenario};
use limitlab::Error;
use limitlab_cli::verify::against_redis::{check_run, ClockUsed, RedisCheck};
use limitlab_engine::backend::real::{RealOptions, RealRedis};
use limitlab_engine::spec::Spec;

fn fixtures() -> Vec<PathBuf> {
    let v = common::fixture_specs();
    assert!(v.len() >= 15, "{} fixtures", v.len());
    v
}

fn stem(p: &Path) -> &str {
    p.file_stem().unwrap().to_str().unwrap()
}

/// The two scenarios for `spec`, sized from its policy, as files in `dir`.
fn scenarios(spec: &Path, dir: &Path) -> Vec<Scenario> {
    let s = Spec::from_file(spec).unwrap();
    let (l, w) = (s.policy.limit, s.policy.window_ms);
    let burst = s.policy.burst.map_or(String::new(), |b| format!("burst = {b}\n"));
    let head = |name: &str| {
        format!(
            "name = \"{name}\"\nlimit = {l}\nwindow_ms = {w}\n{burst}seed = 7\nscripts = [{:?}]\n",
            spec.canonicalize().unwrap().to_str().unwrap()
        )
    };
    let boundary = format!(
        "{}[traffic]\nkind = \"boundary_burst\"\nwindow_ms = {w}\nboundary = 1\n\
         [[traffic.bursts]]\ncount = {n}\nspacing_us = {sp1}\noffset_us = -{off}\nphase = \"end of window\"\n\
         [[traffic.bursts]]\ncount = {n}\nspacing_us = {sp2}\noffset_us = 0\nphase = \"start of next window\"\n",
        head("boundary_burst"),
        n = 2 * l,
        // the first burst over the window's last seventh, the second over the next one's first fiftieth
        off = w * 1000 / 7,
        sp1 = w * 1000 / 7 / (2 * l),
        sp2 = w * 1000 / 50 / (2 * l),
    );
    let uniform = format!(
        "{}[traffic]\nkind = \"uniform\"\nrate = {}\nduration_ms = {}\nkey = \"user\"\nkeys = 2\njitter = 0.5\n",
        head("uniform"),
        2.5 * l as f64 * 1000.0 / w as f64,
        5 * w
    );
    [("boundary_burst", boundary), ("uniform", uniform)]
        .into_iter()
        .map(|(name, text)| {
            let file = dir.join(format!("{}_{name}.toml", stem(spec)));
            std::fs::write(&file, text).unwrap();
            Scenario::from_file(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        })
        .collect()
}

fn connect(url: &str) -> RealRedis {
    RealRedis::connect(url, RealOptions::default()).expect("connects")
}

fn dbsize(url: &str) -> i64 {
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    redis::cmd("DBSIZE").query(&mut c).unwrap()
}

/// Asserts a check identical and the server empty; returns the calls compared.
fn assert_identical(fixture: &str, check: &RedisCheck, urls: &[String]) -> usize {
    assert!(check.identical(), "{fixture}: decided differently:\n{}", check.render(limitlab_cli::report::Format::Text));
    for url in urls {
        assert_eq!(dbsize(url), 0, "{fixture}: keys left on {url}");
    }
    check.checks.iter().map(|c| c.calls).sum()
}

#[test]
fn every_fixture_decides_on_a_private_redis_as_on_the_emulator() {
    let Some(server) = RedisServer::start_or_skip("fixtures_real standalone") else { return };
    let url = server.url();
    let dir = TempDir::new("fixtures-real-standalone");
    let (mut calls, mut fixtures_run) = (0, 0);
    let mut on_server_clock = Vec::new();
    for spec in fixtures() {
        let name = stem(&spec);
        for s in scenarios(&spec, &dir.0) {
            let mut real = connect(&url);
            if name == "escaping_key" {
                let e = check_run(&s, s.seed, &mut real, Progress::Off).unwrap_err();
                let m = e.to_string();
                assert!(matches!(e, Error::Invalid { .. }), "{m}");
                for want in [
                    "outside the run's key prefix",
                    "`rl:{user",
                    "escaping_key.toml:16",
                    "call `hits` (script main)",
                    "subject `user",
                    "--allow-outside-keys",
                ] {
                    assert!(m.contains(want), "`{want}` not in: {m}");
                }
                assert_eq!(dbsize(&url), 0, "refused before anything was sent");
                // Allowed (this server is ours): it runs, and the keys it made outside are removed.
                real.set_allow_outside_keys(true);
                let check = check_run(&s, s.seed, &mut real, Progress::Off).unwrap();
                assert!(
                    check.checks[0].outside_keys.iter().all(|k| k.starts_with("rl:{user")),
                    "{:?}",
                    check.checks[0]
                );
                assert!(!check.checks[0].outside_keys.is_empty());
                calls += assert_identical(name, &check, std::slice::from_ref(&url));
                continue;
            }
            let check =
                check_run(&s, s.seed, &mut real, Progress::Off).unwrap_or_else(|e| panic!("{name} / {}: {e}", s.name));
            calls += assert_identical(name, &check, std::slice::from_ref(&url));
            let c = &check.checks[0];
            assert!(c.outside_keys.is_empty(), "{name}: {:?}", c.outside_keys);
            match name {
                "redis_rate_gcra" => {
                    assert_eq!(
                        c.reads_clock,
                        ["TIME at tests/fixtures/redis_rate_gcra.lua:30"].map(|r| fix_path(r, &spec))
                    );
                    assert_eq!(c.clock, ClockUsed::Scenario, "TIME is answered with the virtual clock");
                }
                "rate_limit_redis"
                | "rlflex_consume"
                | "rlflex_lifecycle"
                | "rlflex_memory_block"
                | "rlflex_union"
                | "batched_counter" => {
                    assert!(c.reads_clock.iter().all(|r| r.starts_with("PTTL at ")), "{:?}", c.reads_clock);
                    assert_eq!(c.clock, ClockUsed::Server, "{name}: a spec that reads PTTL runs on the server's clock");
                    assert!(c.scenario_divergence.is_none());
                }
                _ => assert!(c.reads_clock.is_empty(), "{name}: {:?}", c.reads_clock),
            }
            if c.clock == ClockUsed::Server {
                on_server_clock.push(format!("{name}/{}", s.name));
            }
        }
        fixtures_run += 1;
    }
    eprintln!("{fixtures_run} fixtures, {calls} calls compared with a private redis-server; on the server's clock: {on_server_clock:?}");
    assert!(fixtures_run >= 15 && calls > 2000, "{fixtures_run} fixtures, {calls} calls");
}

/// `reads_clock` names the script by the path the spec was loaded with (here absolute).
fn fix_path(r: &str, spec: &Path) -> String {
    let dir = spec.canonicalize().unwrap().parent().unwrap().to_path_buf();
    r.replace("tests/fixtures/", &format!("{}/", dir.display()))
}

#[test]
fn on_a_cluster_hash_tagged_fixtures_agree_and_the_crossslot_one_is_named() {
    let Some(cluster) = RedisCluster::start_or_skip("fixtures_real cluster") else { return };
    let urls: Vec<String> = cluster.ports().iter().map(|p| format!("redis://127.0.0.1:{p}/")).collect();
    let dir = TempDir::new("fixtures-real-cluster");
    let (mut calls, mut agreed) = (0, 0);
    for spec in fixtures() {
        let name = stem(&spec);
        for s in scenarios(&spec, &dir.0) {
            let mut real = connect(&cluster.url());
            assert!(real.is_cluster());
            match name {
                "sliding_window_crossslot" => {
                    let e = check_run(&s, s.seed, &mut real, Progress::Off).unwrap_err();
                    let m = e.to_string();
                    assert!(matches!(e, Error::Script { .. }), "{m}");
                    assert!(m.starts_with("CROSSSLOT Keys in request don't hash to the same slot"), "{m}");
                    assert!(
                        m.contains("call `r` (script main) at") && m.contains("sliding_window_crossslot.toml:14"),
                        "{m}"
                    );
                    // Both keys, as the spec names them, with their slots (the boundary burst's first
                    // request is subject `user` in window 1704067200).
                    let (k1, k2) = match s.name.as_str() {
                        "boundary_burst" => ("rl:user:1704067200", "rl:user:1704067199"),
                        _ => ("rl:user0:1704067200", "rl:user0:1704067199"),
                    };
                    let slot = |k: &str| limitlab_emulator::cluster::key_slot(k.as_bytes());
                    assert!(m.contains(&format!("`{k1}` (slot {})", slot(k1))), "{m}");
                    assert!(m.contains(&format!("`{k2}` (slot {})", slot(k2))), "{m}");
                    assert_ne!(slot(k1), slot(k2));
                    assert!(m.contains("subject `user") && m.contains("before anything was sent"), "{m}");
                }
                "escaping_key" => {
                    let e = check_run(&s, s.seed, &mut real, Progress::Off).unwrap_err();
                    assert!(e.to_string().contains("outside the run's key prefix"), "{e}");
                }
                // The dynamic limit's key goes as "" (raw_keys): slot 0, not the counter's.
                "upstash_dynamic_limit" => {
                    let e = check_run(&s, s.seed, &mut real, Progress::Off).unwrap_err();
                    let m = e.to_string();
                    assert!(m.starts_with("CROSSSLOT Keys in request don't hash to the same slot"), "{m}");
                    assert!(m.contains("`` (slot 0)") && m.contains("before anything was sent"), "{m}");
                }
                _ => {
                    let check = check_run(&s, s.seed, &mut real, Progress::Off)
                        .unwrap_or_else(|e| panic!("{name} / {} on the cluster: {e}", s.name));
                    calls += assert_identical(name, &check, &urls);
                    agreed += 1;
                }
            }
            for u in &urls {
                assert_eq!(dbsize(u), 0, "{name}: keys left on {u}");
            }
        }
    }
    eprintln!("cluster: {agreed} fixture scenarios identical, {calls} calls compared");
    assert!(agreed >= 26, "{agreed}");
}

/// One step of a client's life: a request (its decision is compared) or a lifecycle operation.
enum Step {
    Req(&'static str, u64),
    Op(limitlab_engine::spec::Op, &'static str, u64),
}

/// Runs `steps` (all in one virtual ms) through `limiter` on `backend`; the decisions of the
/// requests, as (allowed, remaining) (what does not read the server's wall clock).
fn life(
    limiter: &limitlab::Limiter,
    backend: &mut dyn limitlab_engine::backend::Backend,
    steps: &[Step],
    now: i64,
) -> Vec<(bool, i64)> {
    let mut session = limiter.session();
    backend.set_time_ms(now);
    let mut out = Vec::new();
    for s in steps {
        match s {
            Step::Req(subject, cost) => {
                let d = limiter.call(backend, &mut session, subject, now, *cost).unwrap_or_else(|e| panic!("{e}"));
                out.push((d.allowed, d.remaining));
            }
            Step::Op(op, subject, cost) => {
                limiter.op(backend, &mut session, *op, subject, now, *cost).unwrap_or_else(|e| panic!("{e}"))
            }
        }
    }
    out
}

#[test]
fn lifecycle_calls_and_peeks_decide_on_a_private_redis_and_cluster_as_on_the_emulator() {
    use limitlab_engine::spec::Op::{Clear, Refund, Reset};
    use Step::{Op, Req};
    let Some(server) = RedisServer::start_or_skip("fixtures_real lifecycle") else { return };
    let Some(cluster) = RedisCluster::start_or_skip("fixtures_real lifecycle cluster") else { return };
    let curls: Vec<String> = cluster.ports().iter().map(|p| format!("redis://127.0.0.1:{p}/")).collect();
    // A window of a minute: no key of the run can expire on the server's wall clock meanwhile.
    let now = 1_704_067_200_000;
    let fill = |subject: &'static str, n: usize| (0..n).map(move |_| Req(subject, 1));
    // rate-limiter-flexible: 8 taken, a request of 2, its reward, then what fits; a delete.
    let mut rlflex: Vec<Step> = fill("a", 8).collect();
    rlflex.extend([Req("a", 2), Op(Refund, "a", 2), Req("a", 1), Req("a", 1), Req("a", 1), Op(Reset, "a", 0)]);
    rlflex.extend(fill("a", 11));
    // Python limits: peeks (cost 0) between hits, a clear(item) of one subject; the storage-wide
    // reset only on one server (its script lists keys with KEYS, which a cluster cannot).
    let mut limits: Vec<Step> = fill("a", 5).collect();
    limits.extend([Req("a", 0), Req("b", 3), Req("b", 0)]);
    limits.extend(fill("a", 6));
    limits.extend([Req("a", 0), Op(Reset, "a", 0), Req("a", 0), Req("b", 1)]);
    let mut limits_clear: Vec<Step> = Vec::new();
    limits_clear.extend([Op(Clear, "a", 0), Req("b", 0), Req("a", 0)]);
    limits_clear.extend(fill("b", 11));
    for (stem, steps, clear) in
        [("rlflex_lifecycle", &rlflex, None), ("limits_peek_clear", &limits, Some(&limits_clear))]
    {
        let spec = std::sync::Arc::new(Spec::from_file(Path::new(&format!("tests/fixtures/{stem}.toml"))).unwrap());
        let mut params = spec.policy;
        params.window_ms = 60_000;
        let limiter = limitlab::Limiter::from_spec(spec, params).unwrap();
        let mut emu = limitlab_engine::backend::emulated::EmulatedBackend::default();
        let want = life(&limiter, &mut emu, steps, now);
        // Something was refused and something admitted: the sequence says something.
        assert!(want.iter().any(|d| d.0) && want.iter().any(|d| !d.0), "{stem}: {want:?}");
        for (url, on_cluster) in [(server.url(), false), (cluster.url(), true)] {
            let mut real = connect(&url);
            let got = life(&limiter, &mut real, steps, now);
            assert_eq!(got, want, "{stem} on {url}");
            if let Some(clear) = clear.filter(|_| !on_cluster) {
                let want = life(&limiter, &mut emu, clear, now);
                let got = life(&limiter, &mut real, clear, now);
                assert_eq!(got, want, "{stem} clear on {url}");
            }
            limitlab_engine::backend::Backend::cleanup(&mut real).unwrap();
        }
        assert_eq!(dbsize(&server.url()), 0, "{stem}");
        for u in &curls {
            assert_eq!(dbsize(u), 0, "{stem} on {u}");
        }
    }
}

/// A trace whose lifecycle operations sit among its requests (`op` column): rate-limiter-flexible's
/// reward and delete, and Python limits' clear(item) and storage.reset(), with peeks of cost 0.
const LIFE_TRACE: &str = "time,key,cost,phase,op\n\
    1704067200.100,a,4,,\n1704067200.110,a,4,,\n1704067200.120,a,4,,\n\
    1704067200.130,a,4,,refund\n1704067200.140,a,4,,\n1704067200.150,a,1,,\n\
    1704067200.160,b,0,,\n1704067200.170,a,0,,\n1704067200.180,a,1,,reset\n\
    1704067200.190,a,6,,\n1704067200.200,b,6,,\n1704067200.210,b,6,,\n\
    1704067200.220,x,0,,clear\n1704067200.230,a,6,,\n1704067200.240,b,6,,\n";

#[test]
fn a_trace_with_lifecycle_operations_decides_on_a_private_redis_as_on_the_emulator() {
    let Some(server) = RedisServer::start_or_skip("fixtures_real lifecycle trace") else { return };
    let dir = TempDir::new("fixtures-real-life-trace");
    std::fs::write(dir.0.join("life.csv"), LIFE_TRACE).unwrap();
    for (stem, ops) in [("rlflex_lifecycle", ["refund", "reset"]), ("limits_peek_clear", ["reset", "clear"])] {
        let spec = Path::new("tests/fixtures").join(format!("{stem}.toml")).canonicalize().unwrap();
        // Only the operations the client has; the others are plain requests of the same cost.
        let csv: String = LIFE_TRACE
            .lines()
            .map(|l| match l.rsplit_once(',') {
                Some((head, op)) if !op.is_empty() && l.starts_with("17") && !ops.contains(&op) => format!("{head},\n"),
                _ => format!("{l}\n"),
            })
            .collect();
        std::fs::write(dir.0.join(format!("{stem}.csv")), &csv).unwrap();
        let toml = format!(
            "name = \"{stem}_life\"\nlimit = 10\nwindow_ms = 60000\nscripts = [{:?}]\n[traffic]\nkind = \"trace\"\npath = \"{stem}.csv\"\nrebase = \"absolute\"\n",
            spec.to_str().unwrap()
        );
        let file = dir.0.join(format!("{stem}.toml"));
        std::fs::write(&file, toml).unwrap();
        let s = Scenario::from_file(&file).unwrap();
        let arrivals = s.arrivals(s.seed).unwrap();
        let n_ops = arrivals.iter().filter(|a| a.op != limitlab_engine::traffic::Op::Request).count();
        assert_eq!(n_ops, 2, "{stem}: the two operations it has: {csv}");
        // On the emulator the operations act: the requests after a refund, reset or clear get room
        // they would not have without it.
        let limiter = s.limiter(&s.scripts[0]).unwrap();
        let (with, _) = limitlab::sim::run_emulated(&limiter, &arrivals, s.start_ms, Progress::Off).unwrap();
        let requests_only: Vec<limitlab::Arrival> =
            arrivals.iter().filter(|a| a.op == limitlab_engine::traffic::Op::Request).cloned().collect();
        let (without, _) = limitlab::sim::run_emulated(&limiter, &requests_only, s.start_ms, Progress::Off).unwrap();
        assert_eq!(with.records.len(), requests_only.len(), "{stem}: operations make no record");
        let admitted = |t: &limitlab::sim::Trace| t.records.iter().filter(|r| r.decision.allowed).count();
        assert!(
            admitted(&with) > admitted(&without),
            "{stem}: {} admitted with the operations, {} without",
            admitted(&with),
            admitted(&without)
        );
        // And a private Redis decides the same, call for call, leaving nothing.
        let mut real = connect(&server.url());
        let check = check_run(&s, s.seed, &mut real, Progress::Off).unwrap_or_else(|e| panic!("{stem}: {e}"));
        assert_identical(stem, &check, &[server.url()]);
    }
    // The CSV writer keeps the operations.
    let s = Scenario::from_file(&dir.0.join("rlflex_lifecycle.toml")).unwrap();
    let arrivals = s.arrivals(s.seed).unwrap();
    let back = dir.0.join("back.csv");
    limitlab_engine::traffic::write_csv(&back, &arrivals).unwrap();
    let text = std::fs::read_to_string(&back).unwrap();
    assert!(
        text.starts_with("time,key,cost,phase,op\n") && text.contains(",refund\n") && text.contains(",reset\n"),
        "{text}"
    );
    // A misspelt operation is an error naming its line.
    std::fs::write(
        dir.0.join("rlflex_lifecycle.csv"),
        "time,key,cost,op\n1704067200.1,a,1,\n1704067200.2,a,1,refnud\n",
    )
    .unwrap();
    let e = Scenario::from_file(&dir.0.join("rlflex_lifecycle.toml"))
        .and_then(|s| s.arrivals(s.seed))
        .unwrap_err()
        .to_string();
    assert!(e.contains(":3") && e.contains("op `refnud` is not one of request, refund, reset, clear"), "{e}");
}
