//! The mutation test of `limitlab check` itself: tests/mutants/ holds single-bug variants of the
//! shipped scripts and of the correct fixtures, and harmless ones, each with the verdict it deserves
//! at its base spec's policy (tests/mutants/manifest.toml). For every entry the base spec's directory
//! is copied, the mutant replaces one of its files, and `check` runs on the copy:
//!
//! - a `fail` mutant (it changes a decision at the policy, or leaves keys behind) must exit 1 with at
//!   least one of the checks in its `catch` failing that passes on the unmutated base;
//! - a `pass` mutant (harmless) must get the base's own verdict: the same exit status and the same
//!   failed checks. (A few bases fail a check by their library's design, e.g. a fixed window that
//!   counts refused requests fails `refusals`; a harmless change keeps exactly that verdict.)
//!
//! Every entry names its bug class, one of tests/mutants/README.md's, each with the real limiter
//! library's issue, pull request or changelog it was taken from.
//!
//! Every misjudged mutant is listed in one failure. The mutants run on two threads.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::Deserialize;

/// The checks `check` judges (memory and speed are figures, never failures).
const CHECKS: [&str; 15] = [
    "errors",
    "model",
    "overshoot",
    "false_rejections",
    "remaining",
    "granted",
    "refusals",
    "peek",
    "lifecycle",
    "oversized",
    "retry_after",
    "headers",
    "ttl",
    "clock_skew",
    "cluster",
];
/// Threads that run mutants at once.
const THREADS: usize = 2;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    /// The variants `check` still misjudges (issue 35's yardstick, tests/mutants/README.md): the test
    /// fails when one of them becomes judged right (take it off the list) and when any other variant
    /// is misjudged, so the list is always exactly what `check` misses.
    #[serde(default)]
    open: Vec<String>,
    mutant: Vec<Mutant>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Mutant {
    name: String,
    /// The spec whose script is mutated, from the repository root.
    base: String,
    /// The file, relative to the base spec's directory, that the mutant replaces.
    replaces: String,
    verdict: String,
    /// The bug class, one of those tests/mutants/README.md lists with its source.
    class: String,
    catch: Vec<String>,
    why: String,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn mutants_dir() -> PathBuf {
    root().join("tests/mutants")
}

fn read_manifest() -> Manifest {
    let path = mutants_dir().join("manifest.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn manifest() -> Vec<Mutant> {
    read_manifest().mutant
}

/// The bug classes of tests/mutants/README.md: each row of its table is
/// `| `class` | the bug | <source URL> what the source shows |`; the class and its source (URL and
/// summary), or the problems with a row.
fn classes() -> (Vec<(String, String)>, Vec<String>) {
    let path = mutants_dir().join("README.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut classes, mut problems) = (Vec::new(), Vec::new());
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let name = cells[0].trim_matches('`').to_string();
        let source = cells.get(2).copied().unwrap_or("");
        let url = source.strip_prefix("<https://").and_then(|s| s.split_once('>'));
        match url {
            Some((u, summary)) if !u.is_empty() && !summary.trim().is_empty() => {}
            _ => problems.push(format!("README.md: class `{name}` has no source (`<https://...> summary`)")),
        }
        if classes.iter().any(|(c, _)| *c == name) {
            problems.push(format!("README.md: class `{name}` listed twice"));
        }
        classes.push((name, source.to_string()));
    }
    (classes, problems)
}

#[test]
fn the_manifest_and_the_mutant_files_agree() {
    let all = manifest();
    let (classes, mut problems) = classes();
    if classes.len() < 20 {
        problems.push(format!("README.md lists {} bug classes, at least 20 wanted", classes.len()));
    }
    let mut names = BTreeSet::new();
    for m in &all {
        if !names.insert(m.name.as_str()) {
            problems.push(format!("{}: named twice", m.name));
        }
        match m.verdict.as_str() {
            "fail" if m.catch.is_empty() => {
                problems.push(format!("{}: a fail mutant needs the checks that catch it", m.name))
            }
            "pass" if !m.catch.is_empty() => {
                problems.push(format!("{}: a pass mutant catches nothing, catch must be []", m.name))
            }
            "fail" | "pass" => {}
            v => problems.push(format!("{}: verdict `{v}`, expected \"fail\" or \"pass\"", m.name)),
        }
        for c in &m.catch {
            if !CHECKS.contains(&c.as_str()) {
                problems.push(format!("{}: `{c}` is not a check; known: {}", m.name, CHECKS.join(", ")));
            }
        }
        if m.why.trim().is_empty() {
            problems.push(format!("{}: no why", m.name));
        }
        if !classes.iter().any(|(c, _)| *c == m.class) {
            problems.push(format!("{}: class `{}` is not one of tests/mutants/README.md's", m.name, m.class));
        }
        let base = root().join(&m.base);
        if !base.is_file() {
            problems.push(format!("{}: base {} does not exist", m.name, m.base));
        } else if !base.parent().unwrap().join(&m.replaces).is_file() {
            problems.push(format!("{}: {} has no file {} beside it to replace", m.name, m.base, m.replaces));
        }
    }
    let files: BTreeSet<String> = std::fs::read_dir(mutants_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "lua"))
        .map(|p| p.file_stem().unwrap().to_str().unwrap().to_string())
        .collect();
    for f in &files {
        if !names.contains(f.as_str()) {
            problems.push(format!("tests/mutants/{f}.lua has no entry in manifest.toml"));
        }
    }
    for n in &names {
        if !files.contains(*n) {
            problems.push(format!("{n}: no tests/mutants/{n}.lua"));
        }
    }
    let fails = all.iter().filter(|m| m.verdict == "fail").count();
    let passes = all.iter().filter(|m| m.verdict == "pass").count();
    if fails < 60 {
        problems.push(format!("{fails} fail mutants, at least 60 wanted"));
    }
    if all.len() < 250 {
        problems.push(format!("{} mutants, at least 250 wanted", all.len()));
    }
    for (c, _) in &classes {
        if !all.iter().any(|m| m.class == *c && m.verdict == "fail") {
            problems.push(format!("class `{c}` has no fail mutant"));
        }
    }
    if passes < 10 {
        problems.push(format!("{passes} pass mutants, at least 10 wanted"));
    }
    assert!(problems.is_empty(), "tests/mutants/manifest.toml:\n  {}", problems.join("\n  "));
}

/// What `check` said about one mutant.
struct Outcome {
    code: Option<i32>,
    /// The failed checks with their summaries; `None` when the output was not a report.
    failed: Option<Vec<(String, String)>>,
    stderr: String,
}

/// Copies the files of the base spec's directory into a fresh directory, puts the mutant in place of
/// the file it replaces, and runs `check` on the copy of the spec.
fn run(m: &Mutant, scratch: &Path) -> Outcome {
    let dir = scratch.join(&m.name);
    std::fs::create_dir_all(&dir).unwrap();
    let base = root().join(&m.base);
    for e in std::fs::read_dir(base.parent().unwrap()).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
    }
    if m.verdict != "base" {
        std::fs::copy(mutants_dir().join(format!("{}.lua", m.name)), dir.join(&m.replaces)).unwrap();
    }
    let spec = dir.join(base.file_name().unwrap());
    let out = Command::new(env!("CARGO_BIN_EXE_limitlab"))
        .args(["check", spec.to_str().unwrap(), "--json", "--no-save", "--no-timing"])
        .current_dir(&dir)
        .output()
        .expect("limitlab runs");
    std::fs::remove_dir_all(&dir).ok();
    let failed = serde_json::from_slice::<serde_json::Value>(&out.stdout).ok().and_then(|v| {
        let checks = v["checks"].as_array()?;
        Some(
            checks
                .iter()
                .filter(|c| c["status"] == "fail")
                .map(|c| {
                    (c["name"].as_str().unwrap_or("?").to_string(), c["summary"].as_str().unwrap_or("").to_string())
                })
                .collect(),
        )
    });
    Outcome { code: out.status.code(), failed, stderr: String::from_utf8_lossy(&out.stderr).into_owned() }
}

/// Why `check`'s verdict on `m` is wrong, or `None` when it is right; `base` is what `check` said
/// about the unmutated base spec.
fn misjudged(m: &Mutant, o: &Outcome, base: &Outcome) -> Option<String> {
    let Some(failed) = &o.failed else {
        return Some(format!("{}: no report (exit {:?}): {}", m.name, o.code, o.stderr.trim()));
    };
    let Some(base_failed) = &base.failed else {
        return Some(format!(
            "{}: no report on its base {} (exit {:?}): {}",
            m.name,
            m.base,
            base.code,
            base.stderr.trim()
        ));
    };
    let names: BTreeSet<&str> = failed.iter().map(|f| f.0.as_str()).collect();
    let base_names: BTreeSet<&str> = base_failed.iter().map(|f| f.0.as_str()).collect();
    let right = match m.verdict.as_str() {
        "fail" => {
            o.code == Some(1) && m.catch.iter().any(|c| names.contains(c.as_str()) && !base_names.contains(c.as_str()))
        }
        _ => o.code == base.code && names == base_names,
    };
    if right {
        return None;
    }
    let got = if failed.is_empty() {
        "every check passed".to_string()
    } else {
        failed.iter().map(|(n, s)| format!("{n} failed ({s})")).collect::<Vec<_>>().join("; ")
    };
    let on_base = if base_names.is_empty() {
        "nothing".to_string()
    } else {
        base_names.iter().copied().collect::<Vec<_>>().join(", ")
    };
    Some(match m.verdict.as_str() {
        "fail" => format!(
            "{} [{}] survived: wanted one of {:?} to fail (and pass on the base, which fails {on_base}), exit {:?}: {got}. The bug: {}",
            m.name, m.base, m.catch, o.code, m.why
        ),
        _ => format!(
            "{} [{}] is harmless but its verdict differs from the base's (which fails {on_base}), exit {:?}: {got}. The change: {}",
            m.name, m.base, o.code, m.why
        ),
    })
}

#[test]
fn check_fails_every_bug_and_passes_every_harmless_variant() {
    let all = manifest();
    let scratch = std::env::temp_dir().join(format!("limitlab_mutants_{}", std::process::id()));
    // The bases first, each once (unmutated), then every mutant against its base's verdict.
    let mut bases: Vec<Mutant> = Vec::new();
    for m in &all {
        if !bases.iter().any(|b| b.base == m.base) {
            bases.push(Mutant {
                name: format!("base_{}", bases.len()),
                verdict: "base".into(),
                catch: Vec::new(),
                ..m.clone()
            });
        }
    }
    let on_threads = |list: &[Mutant]| -> Vec<Outcome> {
        let next = AtomicUsize::new(0);
        let out = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(m) = list.get(i) else { break };
                    let o = run(m, &scratch);
                    out.lock().unwrap().push((i, o));
                });
            }
        });
        let mut out = out.into_inner().unwrap();
        out.sort_by_key(|(i, _)| *i);
        out.into_iter().map(|(_, o)| o).collect()
    };
    let base_outcomes = on_threads(&bases);
    let outcomes = on_threads(&all);
    let mut wrong = Vec::new();
    for (i, (m, o)) in all.iter().zip(&outcomes).enumerate() {
        let b = bases.iter().position(|b| b.base == m.base).expect("every base was run");
        if let Some(why) = misjudged(m, o, &base_outcomes[b]) {
            wrong.push((i, why));
        }
    }
    std::fs::remove_dir_all(&scratch).ok();
    let fails = all.iter().filter(|m| m.verdict == "fail").count();
    let caught = fails - wrong.iter().filter(|(i, _)| all[*i].verdict == "fail").count();
    let open: BTreeSet<String> = read_manifest().open.into_iter().collect();
    for name in &open {
        assert!(all.iter().any(|m| &m.name == name), "open list: no variant named {name}");
    }
    let now_right: Vec<&String> = open.iter().filter(|n| !wrong.iter().any(|(i, _)| &all[*i].name == *n)).collect();
    let new_wrong: Vec<&str> =
        wrong.iter().filter(|(i, _)| !open.contains(&all[*i].name)).map(|w| w.1.as_str()).collect();
    eprintln!("check caught {caught} of {fails} bugs and misjudged {} of {} mutants", wrong.len(), all.len());
    assert!(
        new_wrong.is_empty() && now_right.is_empty(),
        "check caught {caught} of {fails} bugs and misjudged {} of {} mutants.\nJudged right now, take them off the open list: {now_right:?}\nMisjudged and not on the open list:\n  {}",
        wrong.len(),
        all.len(),
        new_wrong.join("\n  ")
    );
}
