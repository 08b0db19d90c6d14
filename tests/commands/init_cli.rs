//! `limitlab init` on the rate limiters `.ci/run` installs from npm and PyPI (pinned in
//! `.ci/package.json` and `.ci/requirements.txt`, into `.ci/node_modules` and `.ci/venv`): each
//! library recognised with its pinned version, every written script equal to the one in the
//! installed file (re-read here in a simpler way), then `limitlab check` on every written spec with
//! its verdict. And the bad input: nothing recognised, a script that is not where it should be, an
//! unknown version, a file in the way.
//!
//! Without the packages the tests that need them are skipped with the reason printed; with `CI` set
//! that is a failure.
use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::TempDir;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn limitlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_limitlab")).args(args).current_dir(root()).output().expect("limitlab runs")
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// `.ci/venv/lib/python*/site-packages`, relative to the crate.
fn site_packages() -> Option<String> {
    let lib = root().join(".ci/venv/lib");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&lib)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("site-packages")))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let p = dirs.pop()?;
    Some(p.strip_prefix(root()).unwrap().to_string_lossy().into_owned())
}

/// The pinned versions: `.ci/package.json`'s dependencies and `.ci/requirements.txt`'s `name==version`.
fn pins() -> BTreeMap<String, String> {
    let pkg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join(".ci/package.json")).unwrap()).unwrap();
    let mut out: BTreeMap<String, String> = pkg["dependencies"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect();
    for line in std::fs::read_to_string(root().join(".ci/requirements.txt")).unwrap().lines() {
        if let Some((n, v)) = line.split_once("==") {
            out.insert(n.trim().to_string(), v.trim().to_string());
        }
    }
    out
}

const NPM: [&str; 3] = ["rate-limiter-flexible", "rate-limit-redis", "@upstash/ratelimit"];
const PYPI: [(&str, &str); 2] = [("limits", "limits"), ("pyrate-limiter", "pyrate_limiter")];

/// Whether the packages are installed; the reason is printed when not (a failure in CI).
fn have_packages(test: &str) -> Option<String> {
    let sp = site_packages();
    let pins = pins();
    let mut missing = Vec::new();
    for name in NPM {
        let meta = root().join(".ci/node_modules").join(name).join("package.json");
        let ok = std::fs::read_to_string(&meta).is_ok_and(|t| t.contains(&format!("\"version\": \"{}\"", pins[name])));
        if !ok {
            missing.push(format!("{name} {}", pins[name]));
        }
    }
    for (name, dist) in PYPI {
        let ok =
            sp.as_ref().is_some_and(|sp| root().join(sp).join(format!("{dist}-{}.dist-info", pins[name])).is_dir());
        if !ok {
            missing.push(format!("{name} {}", pins[name]));
        }
    }
    if missing.is_empty() {
        return sp;
    }
    let msg = format!("{test}: {} not installed in .ci (bash .ci/run installs them)", missing.join(", "));
    if std::env::var_os("CI").is_some() {
        panic!("{msg}; CI is set, so this is an error");
    }
    eprintln!("skipping {msg}");
    None
}

fn sha1(s: &str) -> String {
    sha1_smol::Sha1::from(s.as_bytes()).digest().to_string()
}

/// A written spec's header: the package and base path, and per script its file, source and sha1.
struct Header {
    package: String,
    base: String,
    scripts: Vec<(String, String, String, String)>,
}

fn header(spec: &Path) -> Header {
    let t = std::fs::read_to_string(spec).unwrap();
    let first = t.lines().next().unwrap();
    let rest = first.strip_prefix("# Written by `limitlab init` from ").unwrap_or_else(|| panic!("{first}"));
    let (package, base) = rest.split_once(", installed in ").unwrap();
    let mut scripts = Vec::new();
    let lines: Vec<&str> = t.lines().take_while(|l| l.starts_with('#')).collect();
    for (i, l) in lines.iter().enumerate() {
        if let Some(s) = l.strip_prefix("# script `") {
            let file = s.split_once("`: ").unwrap().1.to_string();
            let field = |k: &str| lines[i + 1..i + 4].iter().find_map(|x| x.strip_prefix(k)).unwrap().to_string();
            scripts.push((file, field("#   from: "), field("#   anchor: "), field("#   sha1: ")));
        }
    }
    Header { package: package.to_string(), base: base.to_string(), scripts }
}

/// The script as the installed file holds it, re-read here the simple way for each library.
fn reread(library: &str, installed: &str, anchor: &str) -> String {
    let after = |open: &str| &installed[installed.find(open).unwrap_or_else(|| panic!("no `{open}`")) + open.len()..];
    match library {
        // a template literal whose lines end in `\`: the continuations go
        "rate-limiter-flexible" => {
            let body = after("const incrTtlLuaScript = `");
            body[..body.find("`;").unwrap()].replace("\\\n", "")
        }
        // `.replaceAll(/^\s+/gm, "").trim()`: indentation and blank lines go
        "rate-limit-redis" => {
            let body = after("increment: `");
            let lit = &body[..body.find("`.replaceAll(/^\\s+/gm, \"\").trim()").unwrap()];
            lit.lines().map(str::trim_start).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("\n").trim().to_string()
        }
        "@upstash/ratelimit" => {
            let body = after(&format!("var {anchor} = `"));
            body[..body.find("`;").unwrap()].to_string()
        }
        "pyrate-limiter" => {
            let body = after(&format!("{anchor} = \"\"\""));
            body[..body.find("\"\"\"").unwrap()].to_string()
        }
        // a .lua file, whole
        "limits" => installed.to_string(),
        other => panic!("{other}"),
    }
}

/// Every spec `init` writes from the pinned packages, the checks `limitlab check` fails on it, and a
/// phrase of the first failing check's evidence. Each verdict is a property of the library:
const VERDICTS: [(&str, &[&str], &str); 11] = [
    // msBeforeNext is the key's PTTL, and Redis keeps a key through the ms its expiry names: a retry
    // exactly msBeforeNext later is still refused (1 ms early), and so is the whole quota at reset
    // and it adds the points before comparing (INCRBY in the script), so a refused request of cost 4
    // still takes the units a request of cost 1 would have had
    // and a consume of 0 points on an idle subject creates the key with its expiry (INCRBY 0, then
    // PEXPIRE): the window starts at that call, so a whole limit more fits around it (`peek`)
    (
        "rate_limiter_flexible_fixed_window",
        &["retry_after", "headers", "refusals", "peek"],
        "a wait read from PTTL is PTTL + 1",
    ),
    // the script restarts the window when PTTL is 0 or less, so timeToExpire is exact: every check holds
    ("rate_limit_redis_fixed_window", &[], ""),
    // the scripts start with `#!lua flags=allow-key-locking`, a flag Redis 7.0 refuses at SCRIPT LOAD:
    // the spec is refused when it loads (exit 2), naming the flag, before anything is judged
    ("upstash_ratelimit_fixed_window", &["<load>"], "allow-key-locking"),
    ("upstash_ratelimit_sliding_window", &["<load>"], "allow-key-locking"),
    ("upstash_ratelimit_token_bucket", &["<load>"], "allow-key-locking"),
    // the reset comes from TTL, whole seconds rounded to the nearest: late, early, or 0 while refusing
    // and the count is INCRBY'd before the comparison: a refusal takes units
    ("limits_fixed_window", &["retry_after", "headers", "refusals"], "1 ms earlier"),
    // an entry exactly `expiry` old still counts (`>=`), so oldest + expiry names the last refused ms
    ("limits_moving_window", &["retry_after", "headers"], "was refused too"),
    // the window shifts only once the current counter's PTTL is below the expiry, 1 ms after the reset
    // the stats give; and a fresh counter (PTTL twice the expiry) reports its reset as now
    // and a hit of cost 0 on an idle subject SETs the current counter to 0 with PX twice the expiry:
    // the window starts at that call, so one unit more fits a window later than without it (`peek`)
    ("limits_sliding_window", &["retry_after", "headers", "peek"], "was refused too"),
    // the log has no TTL (a background Leaker trims it, which a spec cannot say yet), and in the
    // sliding log each entry carries the caller's clock: a request from a caller behind the server
    // leaves the window early (more than the limit in one window on the server's clock)
    ("pyrate_limiter_sliding_log", &["ttl", "clock_skew"], "with no TTL"),
    // and its window is the caller's clock's: a caller behind is told to retry when its own window
    // ends, by then the server's current window, which already holds usage (`clock_skew`)
    ("pyrate_limiter_fixed_window", &["ttl", "clock_skew"], "with no TTL"),
    // integer µs GCRA, retry computed in the script, a PEXPIRE of twice the drain time; a request of
    // weight 0 still writes its TAT (now, on a fresh key), so one from a clock ahead stores a TAT in
    // the future and callers on time lose the difference
    ("pyrate_limiter_gcra", &["peek"], "it took 1 unit(s)"),
];

#[test]
fn init_reads_the_installed_scripts_and_check_judges_what_it_wrote() {
    let Some(sp) = have_packages("init_reads_the_installed_scripts_and_check_judges_what_it_wrote") else {
        return;
    };
    let dir = TempDir::new("init-ci");
    let out = limitlab(&["init", ".ci/node_modules", sp.as_str(), "--out", dir.path()]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let pins = pins();
    for name in NPM.iter().copied().chain(PYPI.iter().map(|p| p.0)) {
        let line = format!("  {name} {} (a tested version)", pins[name]);
        assert!(stdout.contains(&line), "`{line}` not in:\n{stdout}");
    }
    assert!(stdout.contains("not expressed: ephemeralCache"), "{stdout}");
    assert!(
        stdout.contains(
            "Redis 7.0 refuses the library's script: ERR Unexpected flag in script shebang: allow-key-locking"
        ),
        "{stdout}"
    );

    let mut specs: Vec<PathBuf> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    specs.sort();
    let stems: BTreeSet<String> = specs.iter().map(|p| p.file_stem().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(stems, VERDICTS.iter().map(|v| v.0.to_string()).collect(), "{stdout}");

    for spec in &specs {
        let stem = spec.file_stem().unwrap().to_string_lossy().into_owned();
        // The Lua is the installed file's: sha1 as recorded, and equal to a simpler re-reading.
        let h = header(spec);
        let (library, version) = h.package.rsplit_once(' ').unwrap();
        assert_eq!(pins[library], version, "{stem}");
        assert!(!h.scripts.is_empty(), "{stem}");
        for (file, from, anchor, recorded) in &h.scripts {
            let lua = std::fs::read_to_string(dir.0.join(file)).unwrap();
            assert_eq!(&sha1(&lua), recorded, "{stem}: {file}");
            let installed = std::fs::read_to_string(root().join(&h.base).join(from))
                .unwrap_or_else(|e| panic!("{stem}: {from}: {e}"));
            assert_eq!(lua, reread(library, &installed, anchor), "{stem}: {file} differs from {from}");
            assert!(lua.contains("redis.call"), "{stem}");
            if library == "@upstash/ratelimit" {
                // the package carries each script's sha1 beside it: the one it sends with EVALSHA
                let table = &installed[installed.find(&format!("script: {anchor},")).unwrap()..];
                let theirs: String = table[table.find("hash: \"").unwrap() + 7..].chars().take(40).collect();
                assert_eq!(&theirs, recorded, "{stem}");
            }
        }

        // The verdict.
        let out = limitlab(&["check", spec.to_str().unwrap(), "--json", "--no-save", "--no-timing"]);
        let (_, want, phrase) = VERDICTS.iter().find(|x| x.0 == stem).unwrap();
        if want == &["<load>"] {
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{stem}: refused when the spec loads: {err}");
            assert!(err.contains(phrase) && err.contains("SCRIPT LOAD"), "{stem}: {err}");
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{stem}: {e}\n{}", String::from_utf8_lossy(&out.stderr)));
        let checks = v["checks"].as_array().unwrap();
        let failed: BTreeSet<&str> =
            checks.iter().filter(|c| c["status"] == "fail").map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(failed, want.iter().copied().collect::<BTreeSet<_>>(), "{stem}: {v:#}");
        match want.first() {
            None => assert_eq!(out.status.code(), Some(0), "{stem}"),
            Some(first) => {
                assert_eq!(out.status.code(), Some(1), "{stem}: a failed check exits 1");
                let c = checks.iter().find(|c| c["name"] == *first).unwrap();
                let evidence = format!("{} {}", c["summary"], c["evidence"]);
                assert!(evidence.contains(phrase), "{stem}: `{phrase}` not in {evidence}");
            }
        }
    }
}

#[test]
fn a_project_directory_is_searched_for_node_modules_and_a_venv() {
    let Some(_) = have_packages("a_project_directory_is_searched_for_node_modules_and_a_venv") else {
        return;
    };
    let dir = TempDir::new("init-project");
    let out = limitlab(&[
        "init",
        ".ci",
        "--out",
        dir.path(),
        "--algorithm",
        "fixed-window",
        "--limit",
        "20",
        "--window",
        "2s",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    for name in NPM.iter().copied().chain(PYPI.iter().map(|p| p.0)) {
        assert!(stdout.contains(&format!("  {name} ")), "{name} not in:\n{stdout}");
    }
    // only fixed windows, at the policy given
    let written: BTreeSet<String> =
        std::fs::read_dir(&dir.0).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(written.iter().all(|f| f.contains("fixed_window")), "{written:?}");
    assert_eq!(written.iter().filter(|f| f.ends_with(".toml")).count(), 5, "{written:?}");
    let spec = std::fs::read_to_string(dir.0.join("limits_fixed_window.toml")).unwrap();
    assert!(
        spec.contains("limit = 20\nwindow_ms = 2000\n")
            && spec.contains("# policy: 20 per 2000 ms (--limit and --window)"),
        "{spec}"
    );
}

/// A package named like a known library, with a script of our own in the place the library keeps
/// its own, so that the tests below need nothing installed.
pub(super) fn fake_rlflex(dir: &Path, version: &str, script: Option<&str>) -> PathBuf {
    let pkg = dir.join("node_modules/rate-limiter-flexible");
    std::fs::create_dir_all(pkg.join("lib")).unwrap();
    std::fs::write(
        pkg.join("package.json"),
        format!("{{\"name\": \"rate-limiter-flexible\", \"version\": \"{version}\"}}"),
    )
    .unwrap();
    let js = match script {
        Some(lua) => {
            format!("const other = 1;\nconst incrTtlLuaScript = `{lua}`;\nmodule.exports = {{}};\n")
        }
        None => "const renamedScript = `return 1`;\n".to_string(),
    };
    std::fs::write(pkg.join("lib/RateLimiterRedis.js"), js).unwrap();
    dir.join("node_modules")
}

/// consumed and the key's PTTL, the shape the client reads (our own few lines).
pub(super) const OWN_SCRIPT: &str = "local n = redis.call('incrby', KEYS[1], ARGV[1]) \\\nif n == tonumber(ARGV[1]) then redis.call('expire', KEYS[1], ARGV[2]) end \\\nreturn {n, redis.call('pttl', KEYS[1])}";

#[test]
fn nothing_recognised_exits_2_and_says_what_init_knows() {
    let dir = TempDir::new("init-empty");
    std::fs::create_dir_all(dir.0.join("node_modules/left-pad")).unwrap();
    std::fs::write(
        dir.0.join("node_modules/left-pad/package.json"),
        "{\"name\": \"left-pad\", \"version\": \"1.3.0\"}",
    )
    .unwrap();
    let out = limitlab(&["init", dir.path(), "--out", &format!("{}/out", dir.path())]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("nothing recognised in")
            && stderr.contains("rate-limiter-flexible, rate-limit-redis, @upstash/ratelimit, limits, pyrate-limiter"),
        "{stderr}"
    );
    assert!(stdout.contains("no rate limiter init knows"), "{stdout}");
    // One prefix: the binary's own, then the command's (not "limitlab: limitlab init: ...").
    assert!(stderr.starts_with("limitlab: init: "), "{stderr}");
    assert!(!dir.0.join("out").exists());
    let out = limitlab(&["init", &format!("{}/nope", dir.path())]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("does not exist"), "{}", text(&out).1);
}

#[test]
fn an_unknown_version_is_read_and_said_untested_and_a_missing_script_is_named() {
    let dir = TempDir::new("init-unknown");
    let nm = fake_rlflex(&dir.0, "99.0.0", Some(OWN_SCRIPT));
    let out_dir = dir.0.join("out");
    let out = limitlab(&["init", nm.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("rate-limiter-flexible 99.0.0 (untested version (init knows 11.4.0)"), "{stdout}");
    let lua = std::fs::read_to_string(out_dir.join("rate_limiter_flexible_fixed_window.lua")).unwrap();
    assert_eq!(lua, OWN_SCRIPT.replace("\\\n", ""));
    let spec = std::fs::read_to_string(out_dir.join("rate_limiter_flexible_fixed_window.toml")).unwrap();
    assert!(spec.contains("(a version init was not written against"), "{spec}");
    // what it wrote loads and runs
    let out = limitlab(&[
        "check",
        out_dir.join("rate_limiter_flexible_fixed_window.toml").to_str().unwrap(),
        "--no-save",
        "--no-timing",
        "--iterations",
        "20",
    ]);
    assert!(text(&out).0.contains("PASS errors"), "{}", text(&out).0);

    let dir = TempDir::new("init-noscript");
    let nm = fake_rlflex(&dir.0, "11.4.0", None);
    let out = limitlab(&["init", nm.to_str().unwrap(), "--out", dir.0.join("out").to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("recognised rate-limiter-flexible 11.4.0, but script not found in rate-limiter-flexible/lib/RateLimiterRedis.js: no `incrTtlLuaScript`"),
        "{stdout}"
    );
    assert!(stderr.contains("no spec could be written"), "{stderr}");

    let dir = TempDir::new("init-interpolated");
    let nm = fake_rlflex(&dir.0, "11.4.0", Some("return redis.call('get', '${key}')"));
    let out = limitlab(&["init", nm.to_str().unwrap(), "--out", dir.0.join("out").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).0.contains("interpolates `${key}`"), "{}", text(&out).0);
}

#[test]
fn an_existing_file_is_kept_unless_forced() {
    let dir = TempDir::new("init-force");
    let nm = fake_rlflex(&dir.0, "11.4.0", Some(OWN_SCRIPT));
    let out_dir = dir.0.join("out");
    let args = ["init", nm.to_str().unwrap(), "--out", out_dir.to_str().unwrap()];
    assert_eq!(limitlab(&args).status.code(), Some(0));
    // the same files again: nothing in the way
    assert_eq!(limitlab(&args).status.code(), Some(0));
    let spec = out_dir.join("rate_limiter_flexible_fixed_window.toml");
    std::fs::write(&spec, "# mine\n").unwrap();
    let out = limitlab(&args);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("rate_limiter_flexible_fixed_window.toml") && text(&out).1.contains("--force"),
        "{}",
        text(&out).1
    );
    assert_eq!(std::fs::read_to_string(&spec).unwrap(), "# mine\n");
    let mut forced = args.to_vec();
    forced.push("--force");
    assert_eq!(limitlab(&forced).status.code(), Some(0));
    assert!(std::fs::read_to_string(&spec).unwrap().starts_with("# Written by `limitlab init`"));
}
