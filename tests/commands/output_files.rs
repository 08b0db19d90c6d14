//! Where commands write files: one output directory (`--out DIR`, default `limitlab-out/` in the
//! current directory), never a shipped file; names that say which script and which check; a
//! directory that cannot be written costs a warning and exit status 2, not the results; saved scenario files name
//! spec files relative to themselves.
use std::path::Path;
use std::process::{Command, Output};

use super::common::TempDir;

fn limitlab_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_limitlab")).current_dir(cwd).args(args).output().expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A working directory holding a copy of a fixture spec and its Lua under `specs/`.
fn workdir(tag: &str) -> TempDir {
    let dir = TempDir::new(tag);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let specs = dir.0.join("specs");
    std::fs::create_dir_all(&specs).unwrap();
    for f in ["upstash_fixed_window.toml", "upstash_fixed_window.lua"] {
        std::fs::copy(root.join(f), specs.join(f)).unwrap();
    }
    dir
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// A short attack on the copied spec.
const ATTACK: [&str; 7] =
    ["attack", "--script", "specs/upstash_fixed_window.toml", "--budget", "40", "--iterations", "20"];

const ATTACK_FILES: [&str; 6] = [
    "attack_upstash_fixed_window.png",
    "attack_upstash_fixed_window.svg",
    "attack_upstash_fixed_window_false_rejections.csv",
    "attack_upstash_fixed_window_false_rejections.toml",
    "attack_upstash_fixed_window_overshoot.csv",
    "attack_upstash_fixed_window_overshoot.toml",
];

#[test]
fn attack_writes_only_into_the_output_directory_and_its_scenarios_replay_from_anywhere() {
    let dir = workdir("out-attack");
    let out = limitlab_in(&dir.0, &ATTACK);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    // The working directory gained limitlab-out/ and nothing else.
    assert_eq!(listing(&dir.0), ["limitlab-out", "specs"]);
    assert_eq!(listing(&dir.0.join("limitlab-out")), ATTACK_FILES);
    let report = text(&out.stdout);
    assert!(report.contains("trace: limitlab-out/attack_upstash_fixed_window_overshoot.csv"), "{report}");
    // The scenario names the spec relative to itself, not by an absolute path.
    let scenario =
        std::fs::read_to_string(dir.0.join("limitlab-out/attack_upstash_fixed_window_overshoot.toml")).unwrap();
    assert!(scenario.contains("\nscripts = [\"../specs/upstash_fixed_window.toml\"]\n"), "{scenario}");
    assert!(!scenario.contains(dir.path()), "{scenario}");
    // Moved together, the files still replay (from another working directory).
    let moved = TempDir::new("out-attack-moved");
    std::fs::create_dir_all(moved.0.join("specs")).unwrap();
    std::fs::create_dir_all(moved.0.join("results")).unwrap();
    for f in ["upstash_fixed_window.toml", "upstash_fixed_window.lua"] {
        std::fs::copy(dir.0.join("specs").join(f), moved.0.join("specs").join(f)).unwrap();
    }
    for f in ATTACK_FILES {
        std::fs::copy(dir.0.join("limitlab-out").join(f), moved.0.join("results").join(f)).unwrap();
    }
    let replay = Command::new(env!("CARGO_BIN_EXE_limitlab"))
        .current_dir(std::env::temp_dir())
        .args(["run", "--json", &moved.0.join("results/attack_upstash_fixed_window_overshoot.toml").to_string_lossy()])
        .output()
        .unwrap();
    assert!(replay.status.success(), "{}", text(&replay.stderr));
    let v: serde_json::Value = serde_json::from_slice(&replay.stdout).unwrap();
    assert_eq!(v["results"][0]["metrics"]["max_in_window"].as_u64(), Some(20), "{v}");
}

#[test]
fn the_global_out_flag_goes_before_or_after_the_subcommand() {
    let dir = workdir("out-flag");
    for (args, into) in
        [([&["--out", "a"][..], &ATTACK[..]].concat(), "a"), ([&ATTACK[..], &["--out", "b/c"][..]].concat(), "b/c")]
    {
        let out = limitlab_in(&dir.0, &args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(listing(&dir.0.join(into)), ATTACK_FILES, "{args:?}");
    }
    assert!(!dir.0.join("limitlab-out").exists());
}

/// An output directory that cannot be made (under a plain file: even root cannot): the report
/// prints in full, one line on stderr names every file not written, and the exit status is 2.
#[test]
fn an_unwritable_output_directory_costs_one_warning_not_the_results() {
    let dir = workdir("out-unwritable");
    std::fs::write(dir.0.join("blocker"), "").unwrap();
    let out = limitlab_in(&dir.0, &[&ATTACK[..], &["--out", "blocker/out", "--json"][..]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["results"].as_array().map(Vec::len), Some(2), "{v}");
    assert!(v["results"][0].get("trace").is_none(), "a file not written is not reported as written: {v}");
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 2, "{err}");
    assert!(err.starts_with("limitlab: warning: 6 files not written ("), "{err}");
    assert!(err.lines().nth(1).unwrap().ends_with(": 6 files not written (see the warning above)"), "{err}");
    for f in ATTACK_FILES {
        assert!(err.contains(&format!("blocker/out/{f}")), "{f}: {err}");
    }

    // check: the verdict (1, a failing check) and its report as without the files.
    let spec = "specs/upstash_fixed_window.toml";
    let ok = limitlab_in(&dir.0, &["check", spec, "--no-timing"]);
    let blocked = limitlab_in(&dir.0, &["check", spec, "--no-timing", "--out", "blocker/out"]);
    assert_eq!(blocked.status.code(), Some(1), "{}", text(&blocked.stderr));
    assert_eq!(ok.status.code(), Some(1));
    let (ok_text, blocked_text) = (text(&ok.stdout), text(&blocked.stdout));
    assert!(
        ok_text.contains("replay: limitlab run limitlab-out/check_upstash_fixed_window_refusals.toml"),
        "{ok_text}"
    );
    assert_eq!(
        blocked_text,
        ok_text.replace("       replay: limitlab run limitlab-out/check_upstash_fixed_window_refusals.toml\n", "")
    );
    let err = text(&blocked.stderr);
    assert!(
        err.starts_with(
            "limitlab: warning: 2 files not written (Not a directory (os error 20)): \
             blocker/out/check_upstash_fixed_window_refusals.csv, blocker/out/check_upstash_fixed_window_refusals.toml;"
        ),
        "{err}"
    );
    // check's replays carry the script's and the check's names, and the spec's relative path.
    assert_eq!(
        listing(&dir.0.join("limitlab-out")),
        ["check_upstash_fixed_window_refusals.csv", "check_upstash_fixed_window_refusals.toml"]
    );
    let toml = std::fs::read_to_string(dir.0.join("limitlab-out/check_upstash_fixed_window_refusals.toml")).unwrap();
    assert!(toml.contains("\nscripts = [\"../specs/upstash_fixed_window.toml\"]\n"), "{toml}");
}

/// `plot --script` names its pictures after the scripts too: the shipped plots/boundary_burst.png
/// stays as it is, even with `--out plots`.
#[test]
fn plot_never_replaces_the_scenarios_own_picture() {
    let dir = workdir("out-plot");
    std::fs::create_dir_all(dir.0.join("plots")).unwrap();
    std::fs::write(dir.0.join("plots/boundary_burst.png"), "shipped").unwrap();
    let args = ["plot", "--script", "specs/upstash_fixed_window.toml", "--script", "token_bucket"];
    let out = limitlab_in(&dir.0, &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "wrote limitlab-out/boundary_burst_upstash_fixed_window_token_bucket.png and \
         limitlab-out/boundary_burst_upstash_fixed_window_token_bucket.svg\n"
    );
    let out = limitlab_in(&dir.0, &[&args[..], &["--out", "plots"][..]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(dir.0.join("plots/boundary_burst.png")).unwrap(), "shipped");
    assert_eq!(
        listing(&dir.0.join("plots")),
        [
            "boundary_burst.png",
            "boundary_burst_upstash_fixed_window_token_bucket.png",
            "boundary_burst_upstash_fixed_window_token_bucket.svg"
        ]
    );
}
