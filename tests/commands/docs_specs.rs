//! The specs shown in docs/specs.md (and README.md) load, and the worked ones behave like the
//! fixtures they are taken from.
//!
//! Every ```toml block of docs/specs.md that starts with `name =` is a whole spec: it is parsed with
//! `Spec::from_toml`, its scripts read from tests/fixtures/. Other ```toml blocks are fragments and
//! must be valid TOML. A spec whose name is a fixture's runs the same traffic as the fixture through
//! `Harness` and must decide the same. README.md's blocks that hold a `[[call]]` or an `adapter`
//! are checked the same way.
use crate::common;

use std::path::PathBuf;
use std::sync::Arc;

use limitlab::{Arrival, Harness, Limiter, Spec};
use limitlab_engine::spec::Disk;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The fenced blocks of `lang` in a markdown file: (the line of the opening fence, the text).
fn blocks(text: &str, lang: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        match &mut open {
            None if t.starts_with("```") && t[3..].trim() == lang => open = Some((i + 1, String::new())),
            None => {}
            Some(_) if t.starts_with("```") => out.push(open.take().unwrap()),
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
        }
    }
    assert!(open.is_none(), "a ```{lang} block is not closed");
    out
}

fn parse(doc: &str, line: usize, text: &str) -> Spec {
    let origin = PathBuf::from(format!("{doc} (block at line {line})"));
    Spec::from_toml(text, &origin, &root().join("tests/fixtures"), &Disk).unwrap_or_else(|e| panic!("{e}"))
}

/// The fixtures' specs, by spec name.
fn fixtures() -> Vec<Spec> {
    let mut v: Vec<Spec> =
        common::fixture_specs().iter().map(|p| Spec::from_file(p).unwrap_or_else(|e| panic!("{e}"))).collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

/// A deterministic mix: bursts at a window boundary, a spell of steady overload, sparse requests,
/// costs from 1 to 3, two subjects.
fn traffic(window_ms: i64) -> Vec<Arrival> {
    let start = limitlab_emulator::clock::DEFAULT_START.0;
    let mut v = Vec::new();
    let mut push = |ms: i64, key: &str, cost: u64| {
        v.push(Arrival {
            at: limitlab_emulator::clock::Micros((start + ms) * 1000),
            key: key.into(),
            cost,
            phase: String::new(),
            op: limitlab_engine::traffic::Op::Request,
        })
    };
    for i in 0..25 {
        push(window_ms - 50 + i, "a", 1);
    }
    for i in 0..25 {
        push(window_ms + i, "a", 1);
    }
    let mut x = 7u64;
    for i in 0..120 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        push(2 * window_ms + i * window_ms / 40, if x >> 63 == 0 { "a" } else { "b" }, 1 + (x >> 40) % 3);
    }
    for i in 0..8 {
        push(6 * window_ms + i * (3 * window_ms / 2), "b", 1);
    }
    v.sort_by_key(|a| a.at);
    v
}

#[test]
fn every_spec_in_docs_specs_md_loads_and_every_fragment_is_toml() {
    let doc = std::fs::read_to_string(root().join("docs/specs.md")).unwrap();
    let (mut specs, mut fragments) = (0, 0);
    for (line, text) in blocks(&doc, "toml") {
        if text.starts_with("name =") {
            parse("docs/specs.md", line, &text);
            specs += 1;
        } else {
            text.parse::<toml::Table>().unwrap_or_else(|e| panic!("docs/specs.md, block at line {line}: {e}"));
            fragments += 1;
        }
    }
    assert!(specs >= 9, "{specs} specs");
    assert!(fragments >= 5, "{fragments} fragments");
}

#[test]
fn worked_specs_decide_as_their_fixtures_do() {
    let doc = std::fs::read_to_string(root().join("docs/specs.md")).unwrap();
    let fixtures = fixtures();
    let mut compared = std::collections::BTreeSet::new();
    for (line, text) in blocks(&doc, "toml").into_iter().filter(|(_, t)| t.starts_with("name =")) {
        let shown = parse("docs/specs.md", line, &text);
        let Some(fixture) = fixtures.iter().find(|f| f.name == shown.name) else { continue };
        let run = |spec: Spec| {
            let policy = spec.policy;
            let mut h = Harness::new(Limiter::from_spec(Arc::new(spec), policy).unwrap());
            h.play(&traffic(policy.window_ms as i64)).unwrap_or_else(|e| panic!("{e}"))
        };
        assert_eq!(
            run(shown),
            run(fixture.clone()),
            "docs/specs.md line {line}: `{}` decides differently from its fixture",
            fixture.name
        );
        compared.insert(fixture.name.clone());
    }
    let want = [
        "kong_period_counter",
        "limits_moving_window",
        "rate_limit_redis",
        "redis_rate_gcra",
        "rlflex_consume_block",
        "upstash_fixed_window",
        "upstash_sliding_window",
        "valkey_token_bucket",
    ];
    for w in want {
        assert!(compared.contains(w), "docs/specs.md has no worked spec for `{w}`");
    }
}

#[test]
fn the_adapters_shown_are_the_fixtures() {
    let doc = std::fs::read_to_string(root().join("docs/specs.md")).unwrap();
    let valkey = std::fs::read_to_string(root().join("tests/fixtures/valkey_token_bucket_adapter.lua")).unwrap();
    let block = std::fs::read_to_string(root().join("tests/fixtures/rlflex_memory_block_adapter.lua")).unwrap();
    let shown = blocks(&doc, "lua");
    assert_eq!(shown.len(), 2);
    // The worked adapter is the end of the valkey fixture's; the client-state excerpt is a piece of
    // the memory-block fixture's.
    assert_eq!(
        shown.iter().filter(|(_, b)| valkey.ends_with(b.as_str())).count(),
        1,
        "the valkey adapter in docs/specs.md is not the end of its fixture"
    );
    assert_eq!(
        shown.iter().filter(|(_, b)| block.contains(b.as_str())).count(),
        1,
        "the client-state excerpt in docs/specs.md is not in tests/fixtures/rlflex_memory_block_adapter.lua"
    );
}

#[test]
fn the_reference_names_every_variable_constant_and_function() {
    let doc = std::fs::read_to_string(root().join("docs/specs.md")).unwrap();
    let mut names: Vec<&str> = limitlab_engine::spec::expr::Var::ALL.iter().map(|(n, _)| *n).collect();
    names.extend(limitlab_engine::spec::POLICY_NAMES);
    names.extend(["floor(x)", "ceil(x)", "round(x)", "min(a, b, ...)", "max(a, b, ...)", "abs(x)", "num(x)"]);
    names.extend([
        "name",
        "description",
        "family",
        "max_overshoot",
        "max_false_rejection_rate",
        "max_clock_lag",
        "weighted",
        "adapter",
        "model",
    ]);
    names.extend(["script", "command", "keys", "args", "when", "allowed", "remaining", "retry_after_ms", "reset_ms"]);
    names.extend([
        "granted",
        "reset_means",
        "processes",
        "[[policy.and]]",
        "[[refund]]",
        "[[reset]]",
        "[[clear]]",
        "client",
    ]);
    names.extend(limitlab_engine::spec::JUDGED_CHECKS);
    for n in names {
        assert!(doc.contains(&format!("`{n}`")), "docs/specs.md does not mention `{n}`");
    }
}

#[test]
fn specs_in_the_readme_load() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut specs = 0;
    for (line, text) in blocks(&readme, "toml") {
        if text.contains("[[call]]") || text.contains("adapter =") {
            parse("README.md", line, &text);
            specs += 1;
        }
    }
    assert!(specs >= 1, "the README's \"Test your own limiter\" shows a spec");
}
