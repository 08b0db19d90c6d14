//! Figures in the docs that cannot go stale: every command output and figure quoted in README.md and
//! docs/*.md comes from a command recorded beside it, and this test runs those commands again.
//!
//! Three markers, each an HTML comment on a line of its own (invisible when the page is rendered):
//!
//! - `<!-- output: ARGS -->` before a fenced block: the block is what `limitlab ARGS` prints. A line
//!   `...` in the block stands for any number of lines left out; a first line `$ limitlab ...` is the
//!   prompt and is not compared. Every other line must be an output line, in order (trailing spaces
//!   aside).
//! - `<!-- figures: ARGS -->` before a paragraph, list item or table: every figure in it (below) occurs
//!   in what `limitlab ARGS` prints (`1,085` and `1085` are the same figure); several commands are
//!   separated by ` ; `.
//! - `<!-- source: PATH... -->` (files or folders) before a paragraph, list item or table that states constants of the
//!   code (a default, a limit, a corpus's size): every figure in it occurs in one of those files
//!   (`50_000` is `50,000`), so changing the constant without the page fails here.
//! - `<!-- measured: MACHINE, DATE -->` before a paragraph, or before a heading for its whole section:
//!   the figures there are a measurement (timings, a real Redis's memory, a long benchmark) from a named
//!   machine and date (`YYYY-MM-DD`), which this test cannot repeat and does not check.
//!
//! A figure is a number in running text, outside backticks, code blocks and links, that is not a
//! version or a date: one with a decimal point, a `%` or `x` after it, or of two digits or more.
//! Every figure must be under one of the markers; a page with one outside them fails with its file
//! and line. In ARGS, `{tmp}` is a fresh temporary directory; the commands run at the top of the
//! repository, with output files sent to that directory.
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

use crate::common::TempDir;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pages whose figures are checked.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

#[derive(Debug, Clone, PartialEq)]
enum Marker {
    Output(String),
    Figures(String),
    Source(String),
    Measured(String),
}

fn marker(line: &str) -> Option<Marker> {
    let t = line.trim();
    let body = t.strip_prefix("<!--")?.strip_suffix("-->")?.trim();
    let (kind, rest) = body.split_once(':')?;
    let rest = rest.trim().to_string();
    match kind.trim() {
        "output" => Some(Marker::Output(rest)),
        "figures" => Some(Marker::Figures(rest)),
        "source" => Some(Marker::Source(rest)),
        "measured" => Some(Marker::Measured(rest)),
        _ => None,
    }
}

/// A page cut into the pieces the markers apply to.
#[derive(Debug)]
struct Piece {
    /// 1-based line of the piece's first line.
    line: usize,
    kind: PieceKind,
    text: String,
    /// The marker in force for it, and the line of that marker.
    marker: Option<(Marker, usize)>,
}

#[derive(Debug, PartialEq)]
enum PieceKind {
    Code,
    Prose,
    Heading(usize),
}

fn pieces(text: &str) -> Vec<Piece> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut pending: Option<(Marker, usize)> = None;
    // A `measured` marker before a heading covers the section: (marker, its line, heading level).
    let mut section: Option<(Marker, usize, usize)> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim_start();
        if let Some(m) = marker(line) {
            pending = Some((m, i + 1));
            i += 1;
            continue;
        }
        if t.is_empty() {
            i += 1;
            continue;
        }
        if t.starts_with("```") {
            let start = i;
            let mut body = String::new();
            i += 1;
            while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                body.push_str(lines[i]);
                body.push('\n');
                i += 1;
            }
            i += 1;
            let m = pending.take().or_else(|| section.as_ref().map(|(m, l, _)| (m.clone(), *l)));
            out.push(Piece { line: start + 1, kind: PieceKind::Code, text: body, marker: m });
            continue;
        }
        if t.starts_with('#') {
            let level = t.chars().take_while(|&c| c == '#').count();
            if section.as_ref().is_some_and(|(_, _, l)| level <= *l) {
                section = None;
            }
            if let Some((m @ Marker::Measured(_), l)) = pending.take() {
                section = Some((m, l, level));
            }
            out.push(Piece { line: i + 1, kind: PieceKind::Heading(level), text: t.to_string(), marker: None });
            i += 1;
            continue;
        }
        // A paragraph, list item or table: up to a blank line, a fence, a heading or a marker.
        let start = i;
        let mut body = String::new();
        while i < lines.len() {
            let l = lines[i].trim_start();
            if l.is_empty() || l.starts_with("```") || l.starts_with('#') || marker(lines[i]).is_some() {
                break;
            }
            body.push_str(lines[i]);
            body.push('\n');
            i += 1;
        }
        let m = pending.take().or_else(|| section.as_ref().map(|(m, l, _)| (m.clone(), *l)));
        out.push(Piece { line: start + 1, kind: PieceKind::Prose, text: body, marker: m });
    }
    out
}

/// Running text without what is not a claim: code spans, link targets, HTML comments.
fn strip_code(text: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '`' {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        // Link targets: ](...)
        if c == ']' && chars.peek() == Some(&'(') {
            for d in chars.by_ref() {
                if d == ')' {
                    break;
                }
            }
            out.push(' ');
            continue;
        }
        out.push(c);
    }
    out
}

/// The figures of a text: (the figure as written, its value with thousands separators removed).
fn figures(text: &str) -> Vec<(String, String)> {
    let text = strip_code(text);
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() || (i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len()
            && (b[i].is_ascii_digit()
                || ((b[i] == b',' || b[i] == b'.' || b[i] == b'-' || b[i] == b':')
                    && i + 1 < b.len()
                    && b[i + 1].is_ascii_digit()))
        {
            i += 1;
        }
        let raw = &text[start..i];
        // Part of a word or a name (`sha1`, `h2`, `v8`, `seed_1`): not a figure.
        if i < b.len() && (b[i].is_ascii_alphabetic() && b[i] != b'x' || b[i] == b'_') {
            continue;
        }
        let before = text[..start].trim_end();
        let is_version = raw.matches('.').count() >= 2
            || ["Redis", "Lua", "version", "Python", "Node", "edition", "Valkey", "RESP", "v"]
                .iter()
                .any(|w| before.ends_with(w));
        let is_date = raw.contains('-') || raw.contains(':');
        let is_issue = before.ends_with('#');
        let suffix_marks = i < b.len() && (b[i] == b'%' || b[i] == b'x');
        let value = raw.replace(',', "");
        let digits = value.chars().filter(|c| c.is_ascii_digit()).count();
        let is_figure = value.contains('.') || suffix_marks || digits >= 2;
        if is_figure && !is_version && !is_date && !is_issue {
            out.push((raw.to_string(), value));
        }
    }
    out
}

/// Every number in a command's output, separators removed, for `figures:` markers.
fn numbers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut skipping = false;
    let b = text.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        let joins = (c == b',' || c == b'.' || c == b'_')
            && !cur.is_empty()
            && i + 1 < b.len()
            && b[i + 1].is_ascii_digit()
            && b[i - 1].is_ascii_digit();
        if c.is_ascii_digit() {
            // Digits inside a name (`u64`, `sha1`) are not a number.
            let inside_name = cur.is_empty() && i > 0 && (b[i - 1].is_ascii_alphabetic() || b[i - 1] == b'_');
            if inside_name {
                skipping = true;
            }
            if !skipping {
                cur.push(c as char);
            }
        } else if joins && !skipping {
            if c == b'.' {
                cur.push('.');
            }
        } else {
            skipping = false;
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Runs `limitlab ARGS` once per distinct ARGS.
struct Runner {
    tmp: TempDir,
    cache: HashMap<String, Result<String, String>>,
}

impl Runner {
    fn run(&mut self, args: &str) -> Result<String, String> {
        if let Some(r) = self.cache.get(args) {
            return r.clone();
        }
        let dir = self.tmp.path().to_string();
        let argv: Vec<String> = args.split_whitespace().map(|a| a.replace("{tmp}", &dir)).collect();
        let out = Command::new(env!("CARGO_BIN_EXE_limitlab"))
            .args(&argv)
            .current_dir(root())
            .env("LIMITLAB_OUT", &dir)
            .output()
            .map_err(|e| format!("limitlab {args}: {e}"));
        let r = out.and_then(|o| {
            let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&o.stderr));
            // Exit 1 is a failed check, which docs quote on purpose; 2 and 3 are errors.
            match o.status.code() {
                Some(0) | Some(1) => Ok(text),
                _ => Err(format!("limitlab {args} exited with {}: {text}", o.status)),
            }
        });
        self.cache.insert(args.to_string(), r.clone());
        r
    }
}

impl Runner {
    /// The outputs of several commands separated by ` ; `, one after the other.
    fn run_all(&mut self, args: &str) -> Result<String, String> {
        let mut all = String::new();
        for one in args.split(" ; ") {
            all.push_str(&self.run(one.trim())?);
            all.push('\n');
        }
        Ok(all)
    }
}

/// A quoted block against the output: `...` lines skip, every other line in order.
fn block_matches(block: &str, output: &str) -> Result<(), String> {
    let want: Vec<&str> = block.lines().map(str::trim_end).collect();
    let got: Vec<&str> = output.lines().map(str::trim_end).collect();
    let want: &[&str] = match want.first() {
        Some(first) if first.starts_with("$ limitlab") => &want[1..],
        _ => &want[..],
    };
    // Each run of lines between `...` must appear, in order; without a leading `...` it must start
    // the output, and without a trailing one end it.
    let mut pos = 0;
    let mut anchored = true;
    for (n, chunk) in want.split(|l| l.trim() == "...").enumerate() {
        if n > 0 {
            anchored = false;
        }
        if chunk.is_empty() {
            continue;
        }
        let found = if anchored {
            (got.len() >= chunk.len() && got[..chunk.len()] == *chunk).then_some(0)
        } else {
            (pos..=got.len().saturating_sub(chunk.len())).find(|&s| got[s..s + chunk.len()] == *chunk)
        };
        match found {
            Some(s) => pos = s + chunk.len(),
            None => {
                let first = chunk[0];
                let near = got.iter().find(|g| g.split_whitespace().next() == first.split_whitespace().next());
                return Err(format!("the lines from {first:?} are not in the output (nearest: {near:?})"));
            }
        }
    }
    if want.last().is_none_or(|l| l.trim() != "...") && pos != got.len() {
        return Err(format!("the output goes on after the quoted block: {:?}", got.get(pos)));
    }
    Ok(())
}

fn is_date(s: &str) -> bool {
    s.split(|c: char| !(c.is_ascii_digit() || c == '-')).any(|w| {
        let p: Vec<&str> = w.split('-').collect();
        p.len() == 3 && p[0].len() == 4 && p[1].len() == 2 && p[2].len() == 2
    })
}

/// A file's text, or every file's under a folder.
fn source_text(path: &std::path::Path) -> std::io::Result<String> {
    if !path.is_dir() {
        return Ok(String::from_utf8_lossy(&std::fs::read(path)?).into_owned());
    }
    let mut all = String::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    entries.sort();
    for e in entries {
        all.push_str(&source_text(&e)?);
        all.push('\n');
    }
    Ok(all)
}

/// Every page's problems, as `file:line: reason`.
fn problems(runner: &mut Runner) -> Vec<String> {
    let mut out = Vec::new();
    for page in pages() {
        let name = page.strip_prefix(root()).unwrap().display().to_string();
        let text = std::fs::read_to_string(&page).unwrap();
        for p in pieces(&text) {
            let at = format!("{name}:{}", p.line);
            match (&p.kind, &p.marker) {
                (PieceKind::Code, Some((Marker::Output(args), _))) => match runner.run(args) {
                    Ok(output) => {
                        if let Err(e) = block_matches(&p.text, &output) {
                            out.push(format!("{at}: the block quoted as `limitlab {args}`: {e}"));
                        }
                    }
                    Err(e) => out.push(format!("{at}: {e}")),
                },
                (PieceKind::Code, _) => {}
                (PieceKind::Heading(_), _) => {}
                (PieceKind::Prose, Some((Marker::Output(_), l))) => {
                    out.push(format!("{name}:{l}: an `output:` marker must stand before a fenced block"))
                }
                (PieceKind::Prose, Some((Marker::Figures(args), _))) => match runner.run_all(args) {
                    Ok(output) => {
                        let have = numbers(&output);
                        for (raw, value) in figures(&p.text) {
                            if !have.contains(&value) {
                                out.push(format!("{at}: {raw} is not in what `limitlab {args}` prints"));
                            }
                        }
                    }
                    Err(e) => out.push(format!("{at}: {e}")),
                },
                (PieceKind::Prose, Some((Marker::Source(paths), _))) => {
                    let mut have = Vec::new();
                    for path in paths.split_whitespace() {
                        match source_text(&root().join(path)) {
                            Ok(code) => have.extend(numbers(&code)),
                            Err(e) => out.push(format!("{at}: {path}: {e}")),
                        }
                    }
                    for (raw, value) in figures(&p.text) {
                        if !have.contains(&value) {
                            out.push(format!("{at}: {raw} is not in {paths}"));
                        }
                    }
                }
                (PieceKind::Prose, Some((Marker::Measured(what), l))) => {
                    if !is_date(what) || what.split(',').count() < 2 {
                        out.push(format!("{name}:{l}: a `measured:` marker names the machine and a date (YYYY-MM-DD)"));
                    }
                }
                (PieceKind::Prose, None) => {
                    let f = figures(&p.text);
                    if !f.is_empty() {
                        let list: Vec<String> = f.into_iter().map(|(raw, _)| raw).take(6).collect();
                        out.push(format!(
                            "{at}: figures with no command and no measurement beside them: {}",
                            list.join(", ")
                        ));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn every_figure_in_the_docs_comes_from_a_command_run_again_here() {
    let mut runner = Runner { tmp: TempDir::new("docs-figures"), cache: HashMap::new() };
    let found = problems(&mut runner);
    assert!(found.is_empty(), "{} figure(s) in the docs are stale or unsourced:\n{}", found.len(), found.join("\n"));
}

#[test]
fn the_checker_catches_a_changed_figure_and_an_unsourced_one() {
    // A block and a paragraph whose figures are right, then the same with one figure changed.
    let out = "Speed: 1,085 per second\nmore\nlast 2.00\n";
    assert!(block_matches("$ limitlab x\nSpeed: 1,085 per second\n...\n", out).is_ok());
    assert!(block_matches("Speed: 1,085 per second\n...\nlast 2.00\n", out).is_ok());
    assert!(block_matches("Speed: 1,086 per second\n...\n", out).is_err());
    assert!(block_matches("Speed: 1,085 per second\nmore\n", out).is_err(), "a block that stops early says ...");
    assert_eq!(numbers("FLOOD_MAX: u64 = 50_000; x 0.05"), vec!["50000", "0.05"]);
    let have = numbers(out);
    assert!(figures("the speed is 1,085 a second, overshoot 2.00").iter().all(|(_, v)| have.contains(v)));
    assert!(!figures("the speed is 1,086 a second").iter().all(|(_, v)| have.contains(v)));
    // What is not a figure: versions, dates, code, names, single digits.
    assert!(figures("Redis 7.0.15 on 2026-12-02, `bench --budget 400`, seed_1, sha1, 3 runs").is_empty());
    assert_eq!(figures("a 4.2x gap and 15% more").len(), 2);
    // An unmarked paragraph with a figure is reported.
    let pieces = pieces("# T\n\nIt takes 153 s.\n\n<!-- measured: a 2-core VM, 2026-12-02 -->\nIt took 153 s.\n");
    let unmarked: Vec<&Piece> = pieces.iter().filter(|p| p.kind == PieceKind::Prose && p.marker.is_none()).collect();
    assert_eq!(unmarked.len(), 1);
    assert_eq!(unmarked[0].line, 3);
}

#[test]
fn a_measured_marker_before_a_heading_covers_its_section_only() {
    let text =
        "<!-- measured: a 2-core VM, 2026-12-02 -->\n## Speed\n\n99 a second.\n\n### More\n\n98.\n\n## Next\n\n97.\n";
    let p = pieces(text);
    let marked: Vec<usize> =
        p.iter().filter(|p| p.kind == PieceKind::Prose && p.marker.is_some()).map(|p| p.line).collect();
    let unmarked: Vec<usize> =
        p.iter().filter(|p| p.kind == PieceKind::Prose && p.marker.is_none()).map(|p| p.line).collect();
    assert_eq!(marked, vec![4, 8]);
    assert_eq!(unmarked, vec![12]);
}
