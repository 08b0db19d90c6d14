//! docs/architecture.md's file maps hold the tree as it is: every source file of the workspace (the
//! crates' sources and build scripts, the root package, the test binaries' files) is named in a map
//! with what it is for, and every path a map names exists. A file added without a line there, or a
//! line left behind by a file moved or removed, fails here.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The paths the maps name (relative to the repository root). A map is a fenced block of lines
/// `PATH  what it is`: a path at the start of a line is the repository's (one ending in `/` opens a
/// folder), a path indented by two spaces is the open folder's; deeper lines continue a description.
fn mapped(doc: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut fenced = false;
    // Whether the block is a map: its first line names a path (the layers' diagram does not).
    let mut map = false;
    let mut first = false;
    let mut folder = String::new();
    for line in doc.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            first = fenced;
            folder.clear();
            continue;
        }
        if !fenced || line.trim().is_empty() {
            continue;
        }
        if first {
            first = false;
            map = line.split_whitespace().next().is_some_and(|t| t.contains('/') || t.contains('.'));
        }
        if !map {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let Some(path) = line.split_whitespace().next() else { continue };
        match indent {
            0 if path.ends_with('/') => folder = path.to_string(),
            0 => {
                out.insert(path.to_string());
            }
            2 => {
                out.insert(format!("{folder}{path}"));
            }
            _ => {}
        }
    }
    out
}

/// Every file under `dir` (recursively) whose name ends in `.rs`, relative to the root.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p.strip_prefix(root()).unwrap().to_path_buf());
        }
    }
}

#[test]
fn the_file_maps_name_every_source_file_and_nothing_else() {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let named = mapped(&doc);
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    for e in std::fs::read_dir(root().join("crates")).unwrap() {
        let krate = e.unwrap().path();
        rust_files(&krate.join("src"), &mut files);
        if krate.join("build.rs").is_file() {
            files.push(krate.join("build.rs").strip_prefix(root()).unwrap().to_path_buf());
        }
    }
    // Each test area's own files (a folder of tests/ with Rust files in it, not below).
    for area in std::fs::read_dir(root().join("tests")).unwrap() {
        let dir = area.unwrap().path();
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "rs") {
                files.push(p.strip_prefix(root()).unwrap().to_path_buf());
            }
        }
    }
    let unnamed: Vec<String> =
        files.iter().map(|p| p.to_string_lossy().into_owned()).filter(|p| !named.contains(p)).collect();
    let gone: Vec<&String> = named.iter().filter(|p| !root().join(p.trim_end_matches('/')).exists()).collect();
    assert!(
        unnamed.is_empty() && gone.is_empty(),
        "docs/architecture.md's file maps:\n  not named ({}): {}\n  named but not in the tree ({}): {}",
        unnamed.len(),
        unnamed.join(", "),
        gone.len(),
        gone.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
    );
    // The parser reads the maps at all: the root package's two files and this one are among them.
    for p in ["src/lib.rs", "src/main.rs", "tests/commands/docs_architecture.rs"] {
        assert!(named.contains(p), "{p} not read from the maps: {named:?}");
    }
}

/// The functions of the workspace's sources longer than `most` lines, as (file, name, lines): a
/// function starts at a line `fn NAME` (after any qualifiers) and ends at the first line holding
/// only `}` at the indentation it started at.
fn long_functions(most: usize) -> Vec<(String, String, usize)> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    for e in std::fs::read_dir(root().join("crates")).unwrap() {
        rust_files(&e.unwrap().path().join("src"), &mut files);
    }
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(root().join(&f)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let body = line.trim_start();
            let indent = line.len() - body.len();
            let words: Vec<&str> = body.split_whitespace().collect();
            let Some(at) = words.iter().position(|w| *w == "fn") else { continue };
            let qualifiers =
                ["pub", "pub(crate)", "pub(super)", "const", "async", "unsafe", "extern", "\"C\"", "\"C-unwind\""];
            if !words[..at].iter().all(|w| qualifiers.contains(w)) || words.len() <= at + 1 {
                continue;
            }
            let name: String = words[at + 1].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let close = " ".repeat(indent) + "}";
            if let Some(end) = lines[i + 1..].iter().position(|l| *l == close) {
                // A declaration without a body (`fn f();` in a trait) is not a function of its own.
                if lines[i..=i + end].iter().any(|l| l.trim_end().ends_with(';') && !l.contains('{'))
                    && !lines[i..=i + end].iter().any(|l| l.contains('{'))
                {
                    continue;
                }
                let n = end + 2;
                if n > most {
                    out.push((f.to_string_lossy().into_owned(), name, n));
                }
            }
        }
    }
    out.sort();
    out
}

/// No function is over 150 lines but those docs/architecture.md names with why (Redis's own C is one
/// long function there too); a new one fails here, and so does one of those that got shorter.
#[test]
fn no_function_is_over_150_lines_but_the_ones_the_page_explains() {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let long = long_functions(150);
    let unexplained: Vec<String> = long
        .iter()
        .filter(|(f, name, _)| !(doc.contains(&format!("`{name}` in `{f}`"))))
        .map(|(f, name, n)| format!("{f}: {name} ({n} lines)"))
        .collect();
    assert!(
        unexplained.is_empty(),
        "functions over 150 lines that docs/architecture.md does not explain: {unexplained:?}"
    );
    for (f, name, n) in &long {
        assert!(
            doc.contains(&format!("`{name}` in `{f}` ({n},")),
            "docs/architecture.md: `{name}` in `{f}` is {n} lines now"
        );
    }
    // The reader finds functions at all: the longest the page names is found.
    assert!(long.iter().any(|(_, name, _)| name == "value"), "{long:?}");
}
