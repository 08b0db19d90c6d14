//! Scripts given with `--script` as spec files are shown as the user's, never as limitlab's: in
//! `compare`'s tables and notes, and in `plot`'s panels (whose seed panel is not drawn empty).
use std::process::{Command, Output};

fn limitlab(cwd: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_limitlab")).current_dir(cwd).args(args).output().expect("the binary runs")
}

const SPEC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/upstash_fixed_window.toml");

#[test]
fn compare_labels_a_spec_as_yours() {
    let dir = super::common::TempDir::new("user-compare");
    let out = limitlab(&dir.0, &["compare", "--script", SPEC, "--no-timing"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(!s.contains("production scripts"), "{s}");
    assert!(!s.contains("seed_* rows"), "{s}");
    assert!(s.contains("\nupstash_fixed_window (your spec)  "), "{s}");
    assert!(s.contains("\nRows marked (your spec) run your spec files.\n"), "{s}");
}

#[test]
fn plot_draws_a_spec_in_a_panel_of_its_own() {
    let dir = super::common::TempDir::new("user-plot");
    let out = limitlab(&dir.0, &["plot", "--script", SPEC, "--script", "token_bucket"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let svg = std::fs::read_to_string(dir.0.join("limitlab-out/boundary_burst_upstash_fixed_window_token_bucket.svg"))
        .unwrap();
    let at = |text: &str| svg.find(&format!(">\n{text}\n<")).unwrap_or_else(|| panic!("no {text} in the SVG"));
    // Two panels: limitlab's token bucket, then the user's script; no empty seed panel.
    assert!(!svg.contains("seed article's scripts"), "an empty seed panel");
    assert!(at("limitlab&apos;s production scripts") < at("token_bucket"));
    assert!(at("token_bucket") < at("Your scripts"));
    assert!(at("Your scripts") < at("upstash_fixed_window"));
}
