//! Conformance: every `tests/cases/NAME.txt` is run through the emulator and through a real `redis-cli`
//! + `redis-server`, and both outputs must equal `tests/cases/NAME.out` byte for byte.
//!
//! A case file holds one redis-cli command per line, in redis-cli's quoting syntax; lines starting with `#`
//! are comments and are not sent. Each file starts on an empty database with an empty script cache.
//! `NAME.out` is what a piped real redis-cli printed for the file; with `LIMITLAB_RECORD=1` the real arm
//! rewrites it instead of comparing. `LIMITLAB_CASES=strings,keys` limits a run to some files.
//!
//! When a file differs, its commands are replayed one line at a time to point at the first differing one.
use crate::common;

use std::io::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{redis_server_version, RedisServer};
use limitlab_cli::cli::redis_cli;
use limitlab_emulator::clock::{Clock, SystemClock};
use limitlab_emulator::Emulator;

/// The case files the project is meant to have; the line-count floor applies once all of them exist.
const EXPECTED_FILES: &[&str] =
    &["strings", "keys", "server", "scripting", "hashes", "zsets", "lists", "sets", "lua_libs"];

/// The least number of command lines, over all case files, once [`EXPECTED_FILES`] all exist.
const MIN_CASE_LINES: usize = 300;

/// How many differing commands to show per file before giving up on it.
const MAX_SHOWN_DIFFS: usize = 1;

struct Case {
    name: String,
    txt: PathBuf,
    out: PathBuf,
    /// The lines to send, without comments, each without its `\n`.
    lines: Vec<Vec<u8>>,
    /// For each of `lines`, its 1-based line number in the .txt file.
    line_numbers: Vec<usize>,
}

impl Case {
    /// The input as piped to redis-cli: every non-comment line, each ending in `\n`.
    fn input(&self) -> Vec<u8> {
        let mut v = Vec::new();
        for l in &self.lines {
            v.extend_from_slice(l);
            v.push(b'\n');
        }
        v
    }
    /// Lines that send something (not blank).
    fn command_count(&self) -> usize {
        self.lines.iter().filter(|l| l.iter().any(|b| !b.is_ascii_whitespace())).count()
    }
    fn expected(&self) -> Option<Vec<u8>> {
        std::fs::read(&self.out).ok()
    }
}

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("cases")
}

fn load_cases() -> Vec<Case> {
    let filter: Option<Vec<String>> = std::env::var("LIMITLAB_CASES")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.split(',').map(|x| x.trim().to_string()).collect());
    let mut cases = Vec::new();
    let Ok(rd) = std::fs::read_dir(cases_dir()) else {
        return cases;
    };
    for entry in rd.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("txt") {
            continue;
        }
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if let Some(f) = &filter {
            if !f.contains(&name) {
                continue;
            }
        }
        let text = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        // A final "\n" ends the last line rather than starting an empty one.
        let body = text.strip_suffix(b"\n").unwrap_or(&text);
        let (mut lines, mut line_numbers) = (Vec::new(), Vec::new());
        if !text.is_empty() {
            for (i, l) in body.split(|&b| b == b'\n').enumerate() {
                if !l.starts_with(b"#") {
                    lines.push(l.to_vec());
                    line_numbers.push(i + 1);
                }
            }
        }
        cases.push(Case { out: path.with_extension("out"), txt: path, name, lines, line_numbers });
    }
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    cases
}

/// Shows bytes readably on one line: printable ASCII as is, the rest escaped (`\n`, `\xHH`).
fn show(b: &[u8]) -> String {
    let mut s = String::new();
    for &c in b {
        match c {
            b'\n' => s.push_str("\\n"),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s
}

/// Given each command's output in order, finds the first command whose output does not match `expected`
/// at the same offset, and describes it.
fn first_difference(case: &Case, chunks: &[(usize, Vec<u8>)], expected: &[u8], arm: &str) -> String {
    let mut at = 0usize;
    let mut shown = 0usize;
    let mut report = String::new();
    for (line_no, chunk) in chunks {
        let end = at + chunk.len();
        if expected.get(at..end) != Some(chunk.as_slice()) {
            // Show as many lines of the expected text as the actual output has.
            let want_lines = chunk.iter().filter(|&&b| b == b'\n').count().max(1);
            let mut want_end = at;
            let mut seen = 0;
            while want_end < expected.len() && seen < want_lines {
                if expected[want_end] == b'\n' {
                    seen += 1;
                }
                want_end += 1;
            }
            report.push_str(&format!(
                "  {}.txt line {}: first differing command:\n    {}\n    expected (.out byte {at}): \"{}\"\n    {arm} printed: \"{}\"\n",
                case.name,
                case.line_numbers[*line_no - 1],
                show(&case.lines[*line_no - 1]),
                show(&expected[at.min(expected.len())..want_end.min(expected.len())]),
                show(chunk),
            ));
            shown += 1;
            if shown >= MAX_SHOWN_DIFFS {
                return report;
            }
        }
        at = end;
    }
    if at != expected.len() {
        report.push_str(&format!(
            "  {}: all commands matched, but the .out has {} bytes, the {arm} printed {at}: extra expected text: {}\n",
            case.name,
            expected.len(),
            show(&expected[at.min(expected.len())..])
        ));
    }
    report
}

/// A fresh emulator whose clock starts at the real time, so absolute timestamps in cases
/// (`EXPIREAT k 1700000000`) fall where they do on a real server.
fn fresh_emulator() -> Emulator {
    let emu = Emulator::new();
    emu.clock().set_micros(SystemClock.now_micros());
    emu
}

/// Runs a whole case file through `redis_cli::run` on a fresh emulator, as `limitlab cli` would.
fn run_file_on_emulator(case: &Case) -> Vec<u8> {
    let mut emu = fresh_emulator();
    let mut out = Vec::new();
    redis_cli::run(&case.input()[..], &mut out, &mut emu).expect("writing to a Vec cannot fail");
    out
}

/// Runs a case on a fresh emulator one line at a time, to tell which command printed what:
/// `(1-based index among sent lines, output)`.
fn run_lines_on_emulator(case: &Case) -> Vec<(usize, Vec<u8>)> {
    let mut emu = fresh_emulator();
    let mut chunks = Vec::with_capacity(case.lines.len());
    for (i, line) in case.lines.iter().enumerate() {
        let mut input = line.clone();
        input.push(b'\n');
        let mut out = Vec::new();
        redis_cli::run(&input[..], &mut out, &mut emu).expect("writing to a Vec cannot fail");
        chunks.push((i + 1, out));
    }
    chunks
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

#[test]
fn emulator_matches_recorded_redis_cli_output() {
    let cases = load_cases();
    let mut failures = Vec::new();
    let mut passed = 0;
    let mut total_lines = 0;
    for case in &cases {
        total_lines += case.command_count();
        let Some(expected) = case.expected() else {
            failures.push(format!("  {}: no {} (record it with LIMITLAB_RECORD=1)\n", case.name, case.out.display()));
            continue;
        };
        let got = match catch_unwind(AssertUnwindSafe(|| run_file_on_emulator(case))) {
            Ok(g) => g,
            Err(p) => {
                failures.push(format!("  {}: the emulator panicked: {}\n", case.name, panic_text(p)));
                continue;
            }
        };
        if got == expected {
            passed += 1;
            continue;
        }
        // Replay line by line to point at the first command that differs.
        match catch_unwind(AssertUnwindSafe(|| run_lines_on_emulator(case))) {
            Ok(chunks) => failures.push(first_difference(case, &chunks, &expected, "emulator")),
            Err(p) => failures.push(format!(
                "  {}: differs, and the emulator panicked on replay: {}\n",
                case.name,
                panic_text(p)
            )),
        }
    }
    println!("conformance (emulator): {} case files, {total_lines} command lines, {passed} files match", cases.len());
    if !failures.is_empty() {
        panic!(
            "{} of {} case files differ from their .out on the emulator:\n{}",
            failures.len(),
            cases.len(),
            failures.concat()
        );
    }
}

/// Pipes `input` through `redis-cli -p port`, as a user would.
fn redis_cli(port: u16, input: &[u8]) -> Vec<u8> {
    let mut child = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("redis-cli starts");
    {
        let mut stdin = child.stdin.take().expect("stdin is piped");
        // A large input could fill the pipe while redis-cli's output fills the other: write from a thread.
        let input = input.to_vec();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let out = child.wait_with_output().expect("redis-cli runs");
        let _ = writer.join();
        if !out.stderr.is_empty() {
            eprintln!("redis-cli stderr: {}", String::from_utf8_lossy(&out.stderr));
        }
        out.stdout
    }
}

/// Whether a real server's output `got` for `case` is the recording `expected` but for TTLs read
/// later than when recorded: the case ran for `elapsed`, so a `TTL` (`PTTL`) of a key with an
/// expiry may be up to `elapsed` rounded up to whole seconds (milliseconds) lower than recorded,
/// never higher, never another sign. Everything else must be byte for byte the same.
///
/// The output is split per command by the line counts the emulator prints for each (its virtual
/// clock does not move, so its TTLs are the recorded ones); when the emulator does not print the
/// recording, nothing is split and nothing is tolerated. Returns how many TTL reads differed.
fn matches_but_for_elapsed_ttls(
    case: &Case,
    got: &[u8],
    expected: &[u8],
    elapsed: std::time::Duration,
) -> Option<usize> {
    let chunks = catch_unwind(AssertUnwindSafe(|| run_lines_on_emulator(case))).ok()?;
    let emulated: Vec<u8> = chunks.iter().flat_map(|(_, c)| c.iter().copied()).collect();
    if emulated != expected {
        return None;
    }
    let mut got_lines = got.split_inclusive(|&b| b == b'\n');
    let mut tolerated = 0;
    for (line_no, chunk) in &chunks {
        let n = chunk.iter().filter(|&&b| b == b'\n').count();
        let mine: Vec<u8> = got_lines.by_ref().take(n).flatten().copied().collect();
        if mine == *chunk {
            continue;
        }
        let command = String::from_utf8_lossy(&case.lines[line_no - 1]).trim().to_ascii_uppercase();
        let slack = match command.split_whitespace().next() {
            Some("TTL") => elapsed.as_secs() as i64 + 1,
            Some("PTTL") => elapsed.as_millis() as i64 + 1,
            _ => return None,
        };
        let int = |b: &[u8]| std::str::from_utf8(b).ok()?.trim_end_matches('\n').parse::<i64>().ok();
        let (Some(want), Some(have)) = (int(chunk), int(&mine)) else { return None };
        if !(want > 0 && have > 0 && have <= want && want - have <= slack) {
            return None;
        }
        tolerated += 1;
    }
    got_lines.next().is_none().then_some(tolerated)
}

fn reset_server(port: u16) {
    let out = redis_cli(port, b"FLUSHALL\nSCRIPT FLUSH\n");
    assert_eq!(out, b"OK\nOK\n", "resetting the server");
}

#[test]
fn real_redis_matches_recorded_output() {
    let Some(server) = RedisServer::start_or_skip_needing("real_redis_matches_recorded_output", &["redis-cli"]) else {
        return;
    };
    let version = redis_server_version();
    if !version.contains("v=7.0.") {
        eprintln!("warning: the .out files were recorded with Redis 7.0; this is {version}");
    }
    let record = std::env::var("LIMITLAB_RECORD").map(|v| v == "1").unwrap_or(false);
    let port = server.port();
    let cases = load_cases();
    let mut failures = Vec::new();
    let mut total_lines = 0;
    for case in &cases {
        total_lines += case.command_count();
        reset_server(port);
        let started = std::time::Instant::now();
        let got = redis_cli(port, &case.input());
        let elapsed = started.elapsed();
        if record {
            std::fs::write(&case.out, &got).unwrap_or_else(|e| panic!("writing {}: {e}", case.out.display()));
            println!("recorded {} ({} bytes)", case.out.display(), got.len());
            continue;
        }
        let Some(expected) = case.expected() else {
            failures.push(format!("  {}: no {} (record it with LIMITLAB_RECORD=1)\n", case.name, case.out.display()));
            continue;
        };
        if got == expected {
            continue;
        }
        // A TTL read a second boundary (or more, on a loaded machine) after its expiry was set.
        if let Some(n) = matches_but_for_elapsed_ttls(case, &got, &expected, elapsed) {
            println!("{}: {n} TTL reads lower than recorded, within the {elapsed:?} the case took", case.name);
            continue;
        }
        // Find the command: replay it one line per redis-cli call on a fresh database.
        reset_server(port);
        let chunks: Vec<(usize, Vec<u8>)> = case
            .lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let mut input = l.clone();
                input.push(b'\n');
                (i + 1, redis_cli(port, &input))
            })
            .collect();
        let replayed: Vec<u8> = chunks.iter().flat_map(|(_, c)| c.iter().copied()).collect();
        let detail = if replayed == got {
            first_difference(case, &chunks, &expected, "real redis-cli")
        } else {
            format!(
                "  {}: the real output differs from {} (and could not be split per command)\n",
                case.name,
                case.out.display()
            )
        };
        failures.push(format!(
            "{detail}    ({} is stale or the case depends on time/order; re-record with LIMITLAB_RECORD=1)\n",
            case.txt.display()
        ));
    }
    println!("conformance (real redis, {version}): {} case files, {total_lines} command lines", cases.len());
    if !failures.is_empty() {
        panic!("{} case files differ on the real server:\n{}", failures.len(), failures.concat());
    }
}

#[test]
fn case_files_have_enough_lines() {
    let cases = load_cases();
    let total: usize = cases.iter().map(Case::command_count).sum();
    for c in &cases {
        println!("{:>12}: {} command lines", c.name, c.command_count());
        assert!(c.out.exists() || std::env::var("LIMITLAB_RECORD").is_ok(), "{} has no .out file", c.name);
    }
    println!("total: {total} command lines in {} case files", cases.len());
    let missing: Vec<&str> =
        EXPECTED_FILES.iter().copied().filter(|n| !cases_dir().join(format!("{n}.txt")).exists()).collect();
    if std::env::var("LIMITLAB_CASES").is_ok() || !missing.is_empty() {
        println!("line floor not checked yet (missing: {missing:?})");
        return;
    }
    assert!(total >= MIN_CASE_LINES, "only {total} case lines, want at least {MIN_CASE_LINES}");
}

/// redis-cli's own output that no command produces (help text, REPL notices) matches the real redis-cli.
#[test]
fn cli_only_lines_match_real_redis_cli() {
    let Some(server) = RedisServer::start_or_skip_needing("cli_only_lines_match_real_redis_cli", &["redis-cli"]) else {
        return;
    };
    let input = b"help\n?\n2 help\n:set hints\n:set x\n:foo\nrestart\nclear\n\n  \n\"x\n0 ping\n";
    let real = redis_cli(server.port(), input);
    let mut ours = Vec::new();
    redis_cli::run_on(&input[..], &mut ours, |_| limitlab_emulator::Reply::ok()).unwrap();
    assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&real));
}

/// A real server read a TTL after a second boundary passed since its expiry was set: not a
/// difference (issue 36: `getex.txt` failed on a loaded machine with 99 for 100). The pause is made
/// sure of, not hoped for: the case is cut after its first `GETEX k EX 100`, and the rest sent 1.6 s
/// later, when `TTL k` is 98 or less (Redis rounds to the nearest second).
#[test]
fn real_redis_ttls_read_after_a_second_boundary_still_match() {
    let Some(server) =
        RedisServer::start_or_skip_needing("real_redis_ttls_read_after_a_second_boundary_still_match", &["redis-cli"])
    else {
        return;
    };
    let port = server.port();
    let case = load_cases().into_iter().find(|c| c.name == "getex").expect("tests/cases/getex.txt");
    let cut = 1 + case.lines.iter().position(|l| l == b"GETEX k EX 100").expect("a GETEX k EX 100 line");
    let part = |lines: &[Vec<u8>]| lines.iter().flat_map(|l| l.iter().copied().chain([b'\n'])).collect::<Vec<u8>>();
    reset_server(port);
    let started = std::time::Instant::now();
    let mut got = redis_cli(port, &part(&case.lines[..cut]));
    let before_pause = got.len();
    std::thread::sleep(std::time::Duration::from_millis(1600));
    got.extend(redis_cli(port, &part(&case.lines[cut..])));
    let elapsed = started.elapsed();
    let expected = case.expected().unwrap();
    assert_ne!(got, expected, "the pause changes the TTLs read");
    // At least the TTL read across the pause (later reads may cross a boundary too on a loaded
    // machine).
    let tolerated = matches_but_for_elapsed_ttls(&case, &got, &expected, elapsed);
    assert!(tolerated.is_some_and(|n| n >= 1), "{tolerated:?}");

    // The read across the pause: `TTL k`, the first line after it, 98 or less (Redis rounds).
    let text = String::from_utf8(got.clone()).unwrap();
    let (head, tail) = text.split_at(before_pause);
    let (ttl, rest) = tail.split_once('\n').unwrap();
    assert!(ttl.parse::<i64>().is_ok_and(|t| (1..=98).contains(&t)), "TTL k after the pause: {ttl}");
    // Anything else differing is still a difference: a TTL higher than recorded, or another line.
    let higher = format!("{head}101\n{rest}");
    assert_eq!(matches_but_for_elapsed_ttls(&case, higher.as_bytes(), &expected, elapsed), None);
    let other = text.replacen("\nv\n", "\nw\n", 1);
    assert_ne!(other, text);
    assert_eq!(matches_but_for_elapsed_ttls(&case, other.as_bytes(), &expected, elapsed), None);
    // A TTL lower by more than the time the case took is a difference too (98 or less for 100 is
    // two seconds or more; a case that took none allows one).
    assert_eq!(matches_but_for_elapsed_ttls(&case, &got, &expected, std::time::Duration::ZERO), None);
}
