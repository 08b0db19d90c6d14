//! `limitlab run --decisions OUT`, the headers in `run --json`, and the coarse-trace warning:
//! - every figure of the report follows from the decisions file (summed here, CSV and JSON lines,
//!   built-in scripts, seed scripts, a four-call spec and a Lua adapter);
//! - a value that is not there is written one way in every column (empty, `null`);
//! - a decision's promises (retry_after, headers) get the verdict `check` gives them, in `run`,
//!   the decisions file and `compare`, for a user's spec as for a shipped script;
//! - the file is the same bytes for the same scenario and seed, whatever the thread count;
//! - `simulations/access_log_coarse.log` (an access log in whole seconds, generated here) makes
//!   `run` warn and show the verdicts under `same`, `spread` and `jitter`.
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn limitlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_limitlab")).args(args).output().expect("the binary runs")
}

fn ok(args: &[&str]) -> String {
    let out = limitlab(args);
    assert!(out.status.success(), "limitlab {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("limitlab-decisions-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A scenario with phases, costs of 2 beside costs of 1, several subjects, every built-in script
/// (production scripts count costs, seed scripts count 1), a four-call spec and a Lua adapter.
fn mixed_scenario(dir: &Path) -> PathBuf {
    let fixture = |f: &str| root().join("tests/fixtures").join(f).display().to_string();
    let text = format!(
        "name = \"sums\"\nlimit = 5\nwindow_ms = 1000\nalgorithms = \"all\"\nseed = 3\n\
         scripts = [{:?}, {:?}]\n\
         [traffic]\nkind = \"mix\"\n\
         [[traffic.parts]]\nkind = \"poisson\"\nrate = 40.0\nduration_ms = 5000\nkeys = 3\ncost = 2\nphase = \"background\"\n\
         [[traffic.parts]]\nkind = \"periodic_bursts\"\ncount = 12\nperiod_ms = 1000\nduration_ms = 5000\nspacing_us = 700\nkey = \"attacker\"\nphase = \"bursts\"\n",
        fixture("rlflex_consume.toml"),
        fixture("valkey_token_bucket.toml"),
    );
    let path = dir.join("sums.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// One decision row, as read back from either format.
#[derive(Debug, PartialEq)]
struct Row {
    script: String,
    request: u64,
    now_ms: i64,
    subject: String,
    phase: String,
    units: u64,
    reply: String,
    allowed: bool,
    exact_allowed: bool,
    verdict: String,
    retry_after_honest: Option<bool>,
    retry_after: Option<u64>,
    ratelimit: Option<String>,
    headers_honest: Option<bool>,
}

fn read_csv(path: &Path) -> Vec<Row> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let headers = r.headers().unwrap().clone();
    let want = [
        "script",
        "request",
        "at_us",
        "now_ms",
        "subject",
        "phase",
        "cost",
        "units",
        "reply",
        "allowed",
        "remaining",
        "retry_after_ms",
        "reset_ms",
        "exact_allowed",
        "verdict",
        "retry_after_honest",
        "retry_after",
        "ratelimit",
        "headers_honest",
    ];
    assert_eq!(headers.iter().collect::<Vec<_>>(), want);
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let flag = |s: &str| match s {
        "1" => true,
        "0" => false,
        other => panic!("flag {other:?}"),
    };
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            let f = |name: &str| rec.get(col(name)).unwrap().to_string();
            let opt = |name: &str| Some(f(name)).filter(|s| !s.is_empty());
            Row {
                script: f("script"),
                request: f("request").parse().unwrap(),
                now_ms: f("now_ms").parse().unwrap(),
                subject: f("subject"),
                phase: f("phase"),
                units: f("units").parse().unwrap(),
                reply: f("reply"),
                allowed: flag(&f("allowed")),
                exact_allowed: flag(&f("exact_allowed")),
                verdict: f("verdict"),
                retry_after_honest: opt("retry_after_honest").map(|s| flag(&s)),
                retry_after: opt("retry_after").map(|s| s.parse().unwrap()),
                ratelimit: opt("ratelimit"),
                headers_honest: opt("headers_honest").map(|s| flag(&s)),
            }
        })
        .collect()
}

fn read_jsonl(path: &Path) -> Vec<Row> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let s = |k: &str| v[k].as_str().unwrap().to_string();
            Row {
                script: s("script"),
                request: v["request"].as_u64().unwrap(),
                now_ms: v["now_ms"].as_i64().unwrap(),
                subject: s("subject"),
                phase: s("phase"),
                units: v["units"].as_u64().unwrap(),
                reply: s("reply"),
                allowed: v["allowed"].as_bool().unwrap(),
                exact_allowed: v["exact_allowed"].as_bool().unwrap(),
                verdict: s("verdict"),
                retry_after_honest: v["retry_after_honest"].as_bool(),
                retry_after: v["retry_after"].as_u64(),
                ratelimit: v["ratelimit"].as_str().map(String::from),
                headers_honest: v["headers_honest"].as_bool(),
            }
        })
        .collect()
}

/// The report's figures of one script, recomputed from its rows: (calls, allowed calls, allowed
/// units, per phase (phase, calls, allowed calls, units, allowed units), max in window, false
/// allows, false rejections, retry checked, retry wrong, headers checked, headers wrong).
fn recompute(rows: &[&Row], window_ms: i64) -> Value {
    let mut phases: Vec<(String, u64, u64, u64, u64)> = Vec::new();
    let mut by_subject: HashMap<&str, Vec<(i64, u64)>> = HashMap::new();
    let (mut allowed_calls, mut allowed_units, mut fa, mut fr, mut checked, mut wrong) = (0, 0, 0, 0, 0, 0);
    let (mut headers_checked, mut headers_wrong) = (0, 0);
    for r in rows {
        let i = match phases.iter().position(|p| p.0 == r.phase) {
            Some(i) => i,
            None => {
                phases.push((r.phase.clone(), 0, 0, 0, 0));
                phases.len() - 1
            }
        };
        let p = &mut phases[i];
        p.1 += 1;
        p.3 += r.units;
        if r.allowed {
            p.2 += 1;
            p.4 += r.units;
            allowed_calls += 1;
            allowed_units += r.units;
            by_subject.entry(&r.subject).or_default().push((r.now_ms, r.units));
        }
        match (r.allowed, r.exact_allowed) {
            (true, false) => fa += 1,
            (false, true) => fr += 1,
            _ => {}
        }
        let want = match (r.allowed, r.exact_allowed) {
            (true, false) => "false_allow",
            (false, true) => "false_rejection",
            _ => "agree",
        };
        assert_eq!(r.verdict, want);
        if let Some(honest) = r.retry_after_honest {
            checked += 1;
            wrong += u64::from(!honest);
        }
        if let Some(honest) = r.headers_honest {
            headers_checked += 1;
            headers_wrong += u64::from(!honest);
        }
    }
    // The most units one subject had admitted within any window_ms of now_ms.
    let mut max_in_window = 0;
    for admitted in by_subject.values() {
        let (mut lo, mut sum) = (0, 0);
        for (hi, &(t, u)) in admitted.iter().enumerate() {
            sum += u;
            while t - admitted[lo].0 >= window_ms {
                sum -= admitted[lo].1;
                lo += 1;
            }
            debug_assert!(lo <= hi);
            max_in_window = max_in_window.max(sum);
        }
    }
    let phases: Vec<Value> = phases
        .into_iter()
        .map(|(phase, calls, allowed_calls, units, allowed_units)| {
            serde_json::json!({"phase": phase, "calls": calls, "allowed_calls": allowed_calls, "units": units, "allowed_units": allowed_units})
        })
        .collect();
    serde_json::json!({
        "calls": rows.len(), "allowed_calls": allowed_calls, "allowed_units": allowed_units, "phases": phases,
        "max_in_window": max_in_window, "false_allows": fa, "false_rejections": fr,
        "retry_checked": checked, "retry_wrong": wrong, "headers_checked": headers_checked, "headers_wrong": headers_wrong,
    })
}

/// Checks that `rows` give every figure of the JSON report `report`.
fn assert_rows_give_the_report(rows: &[Row], report: &Value) {
    let window_ms = report["window_ms"].as_i64().unwrap();
    let results = report["results"].as_array().unwrap();
    let arrivals = report["arrivals"].as_u64().unwrap() as usize;
    assert_eq!(rows.len(), arrivals * results.len(), "one row per request per script");
    // Scripts in the report's order, each in request order.
    for (i, res) in results.iter().enumerate() {
        let name = res["algorithm"].as_str().unwrap();
        let mine: Vec<&Row> = rows[i * arrivals..(i + 1) * arrivals].iter().collect();
        assert!(mine.iter().all(|r| r.script == name), "{name}: rows out of order");
        assert!(mine.iter().enumerate().all(|(k, r)| r.request == k as u64 + 1), "{name}");
        let m = &res["metrics"];
        let got = recompute(&mine, window_ms);
        for k in [
            "calls",
            "allowed_calls",
            "allowed_units",
            "phases",
            "max_in_window",
            "false_allows",
            "false_rejections",
            "retry_checked",
            "retry_wrong",
            "headers_checked",
            "headers_wrong",
        ] {
            assert_eq!(got[k], m[k], "{name}: {k}");
        }
        // The header summary agrees with the rows' header columns.
        let h = &res["headers"];
        let with_ratelimit = mine.iter().filter(|r| r.ratelimit.is_some()).count() as u64;
        let with_retry = mine.iter().filter(|r| r.retry_after.is_some()).count() as u64;
        let refused = mine.iter().filter(|r| !r.allowed).count() as u64;
        assert_eq!(h["with_ratelimit"].as_u64(), Some(with_ratelimit), "{name}");
        assert_eq!(h["with_retry_after"].as_u64(), Some(with_retry), "{name}");
        assert_eq!(h["refused_without_retry_after"].as_u64(), Some(refused - with_retry), "{name}");
        assert_eq!(h["max_retry_after"].as_u64(), mine.iter().filter_map(|r| r.retry_after).max(), "{name}");
        for s in h["samples"].as_array().unwrap() {
            let r = mine[s["request"].as_u64().unwrap() as usize - 1];
            assert_eq!(
                (s["subject"].as_str(), s["allowed"].as_bool()),
                (Some(r.subject.as_str()), Some(r.allowed)),
                "{name}"
            );
            assert_eq!(s["ratelimit"].as_str(), r.ratelimit.as_deref(), "{name}");
            assert_eq!(s["retry_after"].as_u64(), r.retry_after, "{name}");
        }
    }
}

#[test]
fn the_decisions_file_gives_every_figure_of_the_report() {
    let dir = scratch("sums");
    let scenario = mixed_scenario(&dir);
    let (csv, jsonl) = (dir.join("d.csv"), dir.join("d.jsonl"));
    let report: Value =
        serde_json::from_str(&ok(&["run", scenario.to_str().unwrap(), "--json", "--decisions", csv.to_str().unwrap()]))
            .unwrap();
    let again: Value = serde_json::from_str(&ok(&[
        "run",
        scenario.to_str().unwrap(),
        "--json",
        "--decisions",
        jsonl.to_str().unwrap(),
    ]))
    .unwrap();
    assert_eq!(report, again);
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 11, "nine built-in scripts and two specs");
    // The traffic is what this test means it to be: phases, both costs, refusals of every kind.
    assert!(results.iter().all(|r| r["metrics"]["phases"].as_array().unwrap().len() == 2));
    assert!(results.iter().any(|r| r["metrics"]["false_allows"].as_u64() > Some(0)));
    assert!(results.iter().any(|r| r["metrics"]["false_rejections"].as_u64() > Some(0)));
    assert!(results.iter().any(|r| r["metrics"]["retry_checked"].as_u64() > Some(0)));
    // Every script that reports a wait has it judged, the two specs (no model: their scripts are
    // asked) as the built-in ones (their models are); seed scripts report none.
    for r in results {
        let (name, m) = (r["algorithm"].as_str().unwrap(), &r["metrics"]);
        let judged = m["retry_checked"].as_u64() > Some(0) && m["headers_checked"].as_u64() > Some(0);
        assert_eq!(judged, !name.starts_with("seed_"), "{name}: {m}");
    }
    let (c, j) = (read_csv(&csv), read_jsonl(&jsonl));
    assert_eq!(c, j, "CSV and JSON lines hold the same rows");
    assert_rows_give_the_report(&c, &report);
    // Units: production scripts count the cost (2 in the background), seed scripts count 1.
    let units =
        |script: &str| c.iter().filter(|r| r.script == script && r.phase == "background").map(|r| r.units).max();
    assert_eq!((units("fixed_window"), units("seed_fixed_window")), (Some(2), Some(1)));
    // Raw replies: one call alone, several as name=reply.
    let first = |script: &str| c.iter().find(|r| r.script == script).unwrap();
    assert!(first("fixed_window").reply.starts_with("[1,"), "{}", first("fixed_window").reply);
    assert_eq!(first("seed_fixed_window").reply, "1");
    let flex = &first("rlflex_consume_block").reply;
    assert!(flex.starts_with("blocked=nil;hits=[") && flex.contains(";block_ttl="), "{flex}");
    // Nothing is left beside the files.
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["d.csv", "d.jsonl", "sums.toml"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_decisions_file_is_the_same_bytes_every_time_and_on_any_number_of_threads() {
    let dir = scratch("determinism");
    let scenario = mixed_scenario(&dir);
    let mut files = Vec::new();
    for (i, jobs) in ["1", "3", "11", "1"].iter().enumerate() {
        let out = dir.join(format!("d{i}.jsonl"));
        ok(&["run", scenario.to_str().unwrap(), "--jobs", jobs, "--decisions", out.to_str().unwrap()]);
        files.push(std::fs::read(&out).unwrap());
    }
    assert!(files.iter().all(|f| *f == files[0]));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_text_report_is_the_same_with_or_without_decisions() {
    let dir = scratch("same-report");
    let out = dir.join("d.csv");
    let file = root().join("simulations/boundary_burst.toml");
    let file = file.to_str().unwrap();
    for format in [&[][..], &["--markdown"][..], &["--json"][..]] {
        let plain = ok(&[&["run", file][..], format].concat());
        let with = ok(&[&["run", file, "--decisions", out.to_str().unwrap()][..], format].concat());
        assert_eq!(plain, with, "{format:?}");
    }
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 1 + 9 * 400);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_decisions_file_of_another_kind_is_refused_before_anything_runs() {
    let dir = scratch("bad-ext");
    let out = dir.join("d.txt");
    let r = limitlab(&[
        "run",
        root().join("simulations/uniform.toml").to_str().unwrap(),
        "--decisions",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(2));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("d.txt") && err.contains(".csv") && err.contains(".jsonl") && err.contains(".json"), "{err}");
    assert!(r.stdout.is_empty());
    assert!(!out.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A 64-bit SplitMix generator: the access log's only randomness, so the file can be regenerated
/// byte for byte anywhere.
struct SplitMix(u64);

impl SplitMix {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }
}

/// `simulations/access_log_coarse.log`: 3,000 requests over one minute from 4 clients (each
/// request picks its second and its client uniformly), in common log format, times in whole
/// seconds as web servers write them; lines of one second in the order drawn.
fn coarse_access_log() -> String {
    let mut rng = SplitMix(30);
    let mut requests: Vec<(u64, usize, u64)> = (0..3000)
        .map(|i| {
            let second = rng.below(60);
            let client = rng.below(100) / 25;
            (second, i, client)
        })
        .collect();
    requests.sort();
    let paths = ["/api/orders", "/api/items", "/api/items/42", "/api/cart", "/login", "/api/search?q=lamp"];
    let mut out = String::new();
    for (second, _, client) in requests {
        let path = paths[rng.below(paths.len() as u64) as usize];
        let bytes = 200 + rng.below(4000);
        out.push_str(&format!(
            "203.0.113.{} - - [01/Jul/2024:12:{:02}:{:02} +0000] \"GET {path} HTTP/1.1\" 200 {bytes}\n",
            10 + client,
            second / 60,
            second % 60
        ));
    }
    out
}

#[test]
fn the_coarse_access_log_is_what_its_generator_writes() {
    let path = root().join("simulations/access_log_coarse.log");
    let want = coarse_access_log();
    if std::env::var_os("LIMITLAB_REGENERATE").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let got = std::fs::read_to_string(&path).unwrap();
    assert!(
        got == want,
        "{} differs from its generator; LIMITLAB_REGENERATE=1 cargo test --test run_decisions rewrites it",
        path.display()
    );
    assert_eq!(got.lines().count(), 3000);
}

#[test]
fn a_coarse_trace_is_reported_with_the_verdict_under_each_tie_rule() {
    let file = root().join("simulations/access_log_coarse.toml");
    let file = file.to_str().unwrap();
    let text = ok(&["run", file]);
    assert!(
        text.contains("WARNING: coarse trace access_log_coarse.log: every recorded time is a multiple of 1,000 ms, against a 1000 ms window; 3,000 of 3,000 requests share their time with another"),
        "{text}"
    );
    // The case: the sliding window counter under `same`, `spread` and `jitter`.
    let row = |ties: &str| -> Vec<String> {
        let line = text
            .lines()
            .find(|l| l.starts_with("sliding_window ") && l.contains(ties))
            .unwrap_or_else(|| panic!("{ties}: {text}"));
        line.split("  ").map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect()
    };
    // algorithm, ties, admitted, refused, false allows, false rejections, max in window, overshoot
    assert_eq!(row("same (chosen)")[2..6], ["2306 / 3000", "694", "0", "679"]);
    assert_eq!(row("spread")[2..6], ["2972 / 3000", "28", "13", "15"]);
    assert_eq!(row("jitter (seed 0)")[1], "jitter (seed 0)");
    let markdown = ok(&["run", file, "--markdown"]);
    assert!(markdown.contains("**Warning:** coarse trace access_log_coarse.log"), "{markdown}");
    assert!(markdown.contains("| sliding_window | spread | 2972 / 3000 | 28 | 13 | 15 |"), "{markdown}");
    let json: Value = serde_json::from_str(&ok(&["run", file, "--json"])).unwrap();
    let c = &json["coarse_trace"];
    assert_eq!(c["traces"][0]["path"], "access_log_coarse.log");
    assert_eq!(c["traces"][0]["tick_us"], 1_000_000);
    assert_eq!(c["traces"][0]["ties"], "same");
    let verdicts = c["verdicts"].as_array().unwrap();
    let rules: Vec<(&str, bool)> =
        verdicts.iter().map(|v| (v["ties"].as_str().unwrap(), v["chosen"].as_bool().unwrap())).collect();
    assert_eq!(rules, [("same", true), ("spread", false), ("jitter", false)]);
    let sw = |v: &Value| {
        v["results"].as_array().unwrap().iter().find(|r| r["algorithm"] == "sliding_window").unwrap().clone()
    };
    assert_eq!(
        (sw(&verdicts[0])["refused"].as_u64(), sw(&verdicts[0])["false_rejections"].as_u64()),
        (Some(694), Some(679))
    );
    assert_eq!(
        (sw(&verdicts[1])["refused"].as_u64(), sw(&verdicts[1])["false_rejections"].as_u64()),
        (Some(28), Some(15))
    );
    // The chosen rule's verdict is the report's own.
    let main = json["results"].as_array().unwrap().iter().find(|r| r["algorithm"] == "sliding_window").unwrap();
    assert_eq!(main["metrics"]["false_rejections"].as_u64(), Some(679));
    // --seed moves the jitter, not the rest.
    let seeded: Value = serde_json::from_str(&ok(&["run", file, "--json", "--seed", "5"])).unwrap();
    assert_eq!(seeded["coarse_trace"]["verdicts"][2]["jitter_seed"], 5);
    assert_eq!(seeded["coarse_trace"]["verdicts"][1], verdicts[1]);
}

#[test]
fn a_trace_chosen_spread_is_still_reported_coarse_and_fine_traces_are_not() {
    let dir = scratch("spread");
    let log = root().join("simulations/access_log_coarse.log");
    let scenario = dir.join("spread.toml");
    std::fs::write(
        &scenario,
        format!("name = \"s\"\nlimit = 20\nwindow_ms = 1000\nalgorithms = [\"sliding_window\"]\n[traffic]\nkind = \"trace\"\npath = {:?}\nties = \"spread\"\n", log.display().to_string()),
    )
    .unwrap();
    let json: Value = serde_json::from_str(&ok(&["run", scenario.to_str().unwrap(), "--json"])).unwrap();
    let rules: Vec<(&str, bool)> = json["coarse_trace"]["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["ties"].as_str().unwrap(), v["chosen"].as_bool().unwrap()))
        .collect();
    assert_eq!(rules, [("same", false), ("spread", true), ("jitter", false)]);
    assert_eq!(json["results"][0]["metrics"]["false_rejections"].as_u64(), Some(15));
    // A window ten times the tick or more: not coarse, no warning.
    std::fs::write(
        &scenario,
        std::fs::read_to_string(&scenario).unwrap().replace("window_ms = 1000", "window_ms = 10001"),
    )
    .unwrap();
    let text = ok(&["run", scenario.to_str().unwrap()]);
    assert!(!text.contains("coarse"), "{text}");
    // The attack traces are written to the µs and are not coarse either.
    for f in
        ["simulations/attack_sliding_window_overshoot.toml", "simulations/attack_sliding_window_false_rejections.toml"]
    {
        let json: Value = serde_json::from_str(&ok(&["run", root().join(f).to_str().unwrap(), "--json"])).unwrap();
        assert!(json.get("coarse_trace").is_none(), "{f}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_json_shows_the_policy_and_sample_header_values() {
    let json: Value = serde_json::from_str(&ok(&[
        "run",
        root().join("simulations/access_log_coarse.toml").to_str().unwrap(),
        "--json",
    ]))
    .unwrap();
    let sw = json["results"].as_array().unwrap().iter().find(|r| r["algorithm"] == "sliding_window").unwrap();
    let h = &sw["headers"];
    assert_eq!(h["policy"], "\"default\";q=20;w=1");
    assert_eq!(h["with_ratelimit"], 3000);
    assert_eq!(h["with_retry_after"], 694);
    let samples = h["samples"].as_array().unwrap();
    assert_eq!(samples[0]["what"], "first allowed");
    assert_eq!(samples[0]["request"], 1);
    assert!(samples[0]["ratelimit"].as_str().unwrap().starts_with("\"default\";r=19;t="), "{h}");
    assert!(samples.iter().any(|s| s["what"] == "first refused" && s["retry_after"].as_u64() >= Some(1)), "{h}");
}

#[test]
fn whole_seconds_written_in_milliseconds_are_spread_across_the_second() {
    // The access log as a CSV of epoch milliseconds: the same recorded times, written finely.
    let dir = scratch("millis");
    let log = std::fs::read_to_string(root().join("simulations/access_log_coarse.log")).unwrap();
    let spec = limitlab_engine::traffic::TraceSpec::new(root().join("simulations/access_log_coarse.log"));
    let arrivals = spec.parse(&log, limitlab_emulator::clock::Micros(1_704_067_200_000_000)).unwrap();
    let mut csv = String::from("time_ms,key\n");
    for a in &arrivals {
        csv.push_str(&format!("{},{}\n", a.at.0 / 1000, a.key));
    }
    std::fs::write(dir.join("log.csv"), csv).unwrap();
    let scenario = dir.join("ms.toml");
    std::fs::write(
        &scenario,
        "name = \"ms\"\nlimit = 20\nwindow_ms = 1000\nalgorithms = [\"sliding_window\"]\n[traffic]\nkind = \"trace\"\npath = \"log.csv\"\n",
    )
    .unwrap();
    let text = ok(&["run", scenario.to_str().unwrap()]);
    assert!(text.contains("Its times are written to 1 ms, finer than they were recorded"), "{text}");
    let json: Value = serde_json::from_str(&ok(&["run", scenario.to_str().unwrap(), "--json"])).unwrap();
    let v = json["coarse_trace"]["verdicts"].as_array().unwrap();
    let got: Vec<(&str, Option<u64>, bool, u64, u64)> = v
        .iter()
        .map(|v| {
            let r = &v["results"][0];
            (
                v["ties"].as_str().unwrap(),
                v["tick_ms"].as_u64(),
                v["chosen"].as_bool().unwrap(),
                r["refused"].as_u64().unwrap(),
                r["false_rejections"].as_u64().unwrap(),
            )
        })
        .collect();
    // The same verdicts as the access log's: spread across the second, not within the millisecond.
    assert_eq!(got[..2], [("same", None, true, 694, 679), ("spread", Some(1000), false, 28, 15)]);
    assert_eq!((got[2].0, got[2].1), ("jitter", Some(1000)));
    // Chosen spread without tick_ms: shown first as chosen, then the rules across the tick.
    std::fs::write(&scenario, std::fs::read_to_string(&scenario).unwrap() + "ties = \"spread\"\n").unwrap();
    let json: Value = serde_json::from_str(&ok(&["run", scenario.to_str().unwrap(), "--json"])).unwrap();
    let v = json["coarse_trace"]["verdicts"].as_array().unwrap();
    let rules: Vec<(&str, Option<u64>, bool)> = v
        .iter()
        .map(|v| (v["ties"].as_str().unwrap(), v["tick_ms"].as_u64(), v["chosen"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        rules,
        [("spread", None, true), ("same", None, false), ("spread", Some(1000), false), ("jitter", Some(1000), false)]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_absent_value_is_written_one_way_in_every_column() {
    let dir = scratch("absent");
    let scenario = mixed_scenario(&dir);
    let (csv, jsonl) = (dir.join("d.csv"), dir.join("d.jsonl"));
    ok(&["run", scenario.to_str().unwrap(), "--decisions", csv.to_str().unwrap()]);
    ok(&["run", scenario.to_str().unwrap(), "--decisions", jsonl.to_str().unwrap()]);
    let optional =
        ["remaining", "retry_after_ms", "reset_ms", "retry_after_honest", "retry_after", "ratelimit", "headers_honest"];
    let mut r = csv::Reader::from_path(&csv).unwrap();
    let headers = r.headers().unwrap().clone();
    let lines: Vec<Value> =
        std::fs::read_to_string(&jsonl).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut absent: HashMap<String, usize> = HashMap::new();
    let mut rows = 0;
    for (rec, j) in r.records().zip(&lines) {
        let rec = rec.unwrap();
        rows += 1;
        assert_eq!(j.as_object().unwrap().len(), headers.len(), "every column on every line: {j}");
        for (h, field) in headers.iter().zip(rec.iter()) {
            let v = &j[h];
            if optional.contains(&h) {
                // Absent: empty in CSV and null in JSON, never a sentinel such as -1.
                assert_eq!(field.is_empty(), v.is_null(), "{h}: CSV {field:?}, JSON {v}");
                assert_ne!(field, "-1", "{h}: {j}");
                if field.is_empty() {
                    *absent.entry(h.to_string()).or_default() += 1;
                }
            } else {
                assert!(!v.is_null(), "{h} is always there: {j}");
            }
        }
        let script = j["script"].as_str().unwrap();
        if script.starts_with("seed_") {
            // A seed script reports `allowed` only.
            for h in [
                "remaining",
                "retry_after_ms",
                "reset_ms",
                "retry_after_honest",
                "retry_after",
                "ratelimit",
                "headers_honest",
            ] {
                assert!(j[h].is_null(), "{script}: {h}: {j}");
            }
        }
        if j["allowed"] == true {
            // An admission names no wait (the shipped scripts reply -1, the specs give nil).
            assert!(j["retry_after_ms"].is_null() && j["retry_after_honest"].is_null(), "{j}");
        }
    }
    assert_eq!(rows, lines.len());
    assert!(
        optional.iter().all(|h| absent.get(*h) > Some(&0)),
        "every optional column is absent somewhere: {absent:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A fixed window whose window opens with the first hit (INCRBY, PEXPIRE on the first hit, reply
/// `{hits, pttl}`), and a spec of it whose wait is the key's PTTL plus `off` ms. Redis keeps a key
/// through the ms its expiry names, so `off = 1` is exact and `off = 0` is 1 ms short
/// (rate-limiter-flexible's `msBeforeNext`): a retry then is refused.
fn counter_spec(dir: &Path, name: &str, off: i64) -> PathBuf {
    std::fs::write(
        dir.join("counter.lua"),
        "local hits = redis.call('INCRBY', KEYS[1], ARGV[2])\n\
         if hits == tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end\n\
         return {hits, redis.call('PTTL', KEYS[1])}\n",
    )
    .unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "name = \"{name}\"\nfamily = \"fixed_window\"\n\n[policy]\nlimit = 10\nwindow_ms = 1000\n\n\
             [scripts]\nmain = \"counter.lua\"\n\n[vars]\noff = {off}\n\n\
             [[call]]\nname = \"r\"\nscript = \"main\"\nkeys = [\"c:{{${{subject}}}}\"]\nargs = [\"${{window_ms}}\", \"${{cost}}\"]\n\n\
             [decision]\nallowed = \"r[1] <= limit\"\nremaining = \"max(limit - r[1], 0)\"\n\
             retry_after_ms = \"cost <= limit and r[2] + off or nil\"\nreset_ms = \"r[2] + off\"\n"
        ),
    )
    .unwrap();
    path
}

/// `check --json`'s verdict on `spec`: (check name, status, the first evidence line naming a
/// request, the replay's path).
fn check_verdicts(spec: &Path, out: &Path) -> Vec<(String, String, Option<String>, Option<String>)> {
    let o = limitlab(&["check", spec.to_str().unwrap(), "--json", "--no-timing", "--out", out.to_str().unwrap()]);
    let v: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let ev = c["evidence"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .find(|e| e.contains(" request #"))
                .map(String::from);
            (
                c["name"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
                ev,
                c["replay"].as_str().map(String::from),
            )
        })
        .collect()
}

#[test]
fn a_users_spec_gets_the_verdict_check_gives_on_every_promise() {
    let dir = scratch("one-truth");
    let short = counter_spec(&dir, "pttl_short", 0);
    let exact = counter_spec(&dir, "pttl_exact", 1);
    let uniform = root().join("simulations/uniform.toml");
    let uniform = uniform.to_str().unwrap();

    // check: the short wait fails retry_after and headers, the exact one passes both.
    let verdicts = check_verdicts(&short, &dir.join("out"));
    for (name, column) in [("retry_after", "retry_after_honest"), ("headers", "headers_honest")] {
        let (_, status, evidence, replay) = verdicts.iter().find(|c| c.0 == name).unwrap();
        assert_eq!(status, "fail", "{name}: {verdicts:?}");
        // The replay ends with the request check named: run judges it the same way.
        let evidence = evidence.as_deref().unwrap();
        let replay = replay.as_deref().unwrap();
        let d = dir.join(format!("{name}.csv"));
        let text = ok(&["run", replay, "--decisions", d.to_str().unwrap()]);
        let rows = read_csv(&d);
        let last = rows.last().unwrap();
        assert!(evidence.contains(&format!("now_ms {}", last.now_ms)), "{evidence} / {last:?}");
        let judged = if column == "retry_after_honest" { last.retry_after_honest } else { last.headers_honest };
        assert_eq!(judged, Some(false), "{name}: {evidence}\n{last:?}\n{text}");
    }
    let verdicts = check_verdicts(&exact, &dir.join("out"));
    for name in ["retry_after", "headers"] {
        let (_, status, _, _) = verdicts.iter().find(|c| c.0 == name).unwrap();
        assert_eq!(status, "pass", "{name}: {verdicts:?}");
    }

    // run, on traffic of its own: both specs are judged (no `-`), and only the short one is wrong.
    let json: Value = serde_json::from_str(&ok(&[
        "run",
        uniform,
        "--script",
        short.to_str().unwrap(),
        "--script",
        exact.to_str().unwrap(),
        "--json",
    ]))
    .unwrap();
    let m = |i: usize, k: &str| json["results"][i]["metrics"][k].as_u64().unwrap();
    assert!(m(0, "retry_checked") > 0 && m(0, "retry_wrong") > 0 && m(0, "headers_wrong") > 0, "{json}");
    assert_eq!(m(0, "retry_wrong"), m(0, "retry_checked"), "every wait of the short spec is 1 ms short");
    assert!(m(1, "retry_checked") > 0 && m(1, "headers_checked") > 0, "{json}");
    assert_eq!((m(1, "retry_wrong"), m(1, "headers_wrong")), (0, 0), "{json}");
    let text = ok(&["run", uniform, "--script", short.to_str().unwrap()]);
    let row = text.lines().find(|l| l.starts_with("pttl_short ")).unwrap();
    let n = m(0, "retry_checked");
    assert!(row.contains(&format!("{n} of {n}")) && !row.trim_end().ends_with('-'), "{row}");

    // compare: the same judgement in every accuracy table.
    let c: Value = serde_json::from_str(&ok(&[
        "compare",
        "--script",
        short.to_str().unwrap(),
        "--script",
        exact.to_str().unwrap(),
        "--json",
        "--no-timing",
    ]))
    .unwrap();
    for s in c["accuracy"].as_array().unwrap() {
        let rows = s["rows"].as_array().unwrap();
        let (a, b) = (&rows[0]["metrics"], &rows[1]["metrics"]);
        assert!(a["retry_checked"].as_u64() > Some(0), "{}: {a}", s["scenario"]);
        assert_eq!(a["retry_wrong"], a["retry_checked"], "{}", s["scenario"]);
        assert_eq!(b["retry_wrong"].as_u64(), Some(0), "{}", s["scenario"]);
    }
    let uniform_rows = &c["accuracy"].as_array().unwrap().iter().find(|s| s["scenario"] == "uniform").unwrap()["rows"];
    assert_eq!(
        uniform_rows[0]["metrics"], json["results"][0]["metrics"],
        "compare and run measure the uniform scenario alike"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
