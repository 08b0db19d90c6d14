//! The lines a trace read with `skip_bad_lines` left out, per file: how many, and the first few
//! with their reasons, for the command to report when it is done. A file may be read more than
//! once in a run (a scan, then the replay, then once per tie rule): a line counts once.
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How many bad lines are named with their reason; the rest are counted.
pub const NAMED: usize = 5;

/// The bad lines of one file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    pub file: PathBuf,
    /// Lines skipped.
    pub count: usize,
    /// The first [`NAMED`] (line, reason), in line order.
    pub first: Vec<(usize, String)>,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lines = if self.count == 1 { "line" } else { "lines" };
        write!(f, "{}: skipped {} bad {lines}", self.file.display(), self.count)?;
        for (i, (line, reason)) in self.first.iter().enumerate() {
            write!(f, "{} line {line}: {reason}", if i == 0 { ":" } else { ";" })?;
        }
        if self.count > self.first.len() {
            write!(f, "; ...")?;
        }
        Ok(())
    }
}

#[derive(Default)]
struct File {
    lines: HashSet<usize>,
    first: BTreeMap<usize, String>,
}

static SKIPPED: Mutex<BTreeMap<PathBuf, File>> = Mutex::new(BTreeMap::new());

/// Records that `line` of `file` was skipped for `reason`.
pub(super) fn record(file: &Path, line: usize, reason: String) {
    let mut all = SKIPPED.lock().unwrap_or_else(|p| p.into_inner());
    let f = all.entry(file.to_path_buf()).or_default();
    if f.lines.insert(line) {
        f.first.insert(line, reason);
        if f.first.len() > NAMED {
            f.first.pop_last();
        }
    }
}

/// The files with skipped lines since the last call, in path order (and forgets them).
pub fn take() -> Vec<Skipped> {
    let mut all = SKIPPED.lock().unwrap_or_else(|p| p.into_inner());
    std::mem::take(&mut *all)
        .into_iter()
        .map(|(file, f)| Skipped { file, count: f.lines.len(), first: f.first.into_iter().collect() })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{Rebase, TraceSpec};
    use super::*;
    use limitlab_emulator::clock::Micros;

    fn skipping(name: &str) -> TraceSpec {
        TraceSpec { rebase: Rebase::Absolute, skip_bad_lines: true, ..TraceSpec::new(name) }
    }

    /// Every format skips its bad lines with `skip_bad_lines`, counts each once however often the
    /// file is read, and names the first few; without it the first bad line refuses the file.
    #[test]
    fn bad_lines_are_skipped_and_counted() {
        let log = "1.2.3.4 - - [01/Jul/1995:00:00:01 -0400] \"GET /\" 200 1\nno date here\n\
                   1.2.3.4 - - [01/Jul/1995:00:00:02 -0400] \"GET /\" 200 1\n";
        let s = skipping("skip-test-access.log");
        assert_eq!(s.parse(log, Micros(0)).unwrap().len(), 2);
        assert_eq!(s.parse(log, Micros(0)).unwrap().len(), 2, "a second read");
        let csv = "time,key\n1,a\nx,b\n2\n3,c\n";
        assert_eq!(skipping("skip-test.csv").parse(csv, Micros(0)).unwrap().len(), 2);
        let jsonl = "{\"ts\": 1, \"key\": \"a\"}\n{\"ts\": 2\n{\"ts\": 3, \"key\": \"b\"}\n";
        assert_eq!(skipping("skip-test.jsonl").parse(jsonl, Micros(0)).unwrap().len(), 2);
        let mut many = String::new();
        for i in 0..8 {
            many.push_str(&format!("{i},k\nbad{i}\n"));
        }
        assert_eq!(skipping("skip-test-many.csv").parse(&format!("time,key\n{many}"), Micros(0)).unwrap().len(), 8);
        let mine: Vec<Skipped> =
            take().into_iter().filter(|s| s.file.to_string_lossy().starts_with("skip-test")).collect();
        let got: Vec<(String, usize, Vec<usize>)> = mine
            .iter()
            .map(|s| (s.file.display().to_string(), s.count, s.first.iter().map(|f| f.0).collect()))
            .collect();
        assert_eq!(
            got,
            [
                ("skip-test-access.log".to_string(), 1, vec![2]),
                ("skip-test-many.csv".to_string(), 8, vec![3, 5, 7, 9, 11]),
                ("skip-test.csv".to_string(), 2, vec![3, 4]),
                ("skip-test.jsonl".to_string(), 1, vec![2]),
            ]
        );
        assert_eq!(mine[0].to_string(), "skip-test-access.log: skipped 1 bad line: line 2: no [date] field");
        assert!(mine[1].to_string().ends_with("; ..."), "{}", mine[1]);
        assert!(mine[2].to_string().contains("line 4: 1 fields where the header has 2"), "{}", mine[2]);
        // Without the setting, the first bad line refuses the file.
        let strict = TraceSpec { skip_bad_lines: false, ..skipping("skip-test-strict.csv") };
        assert!(matches!(strict.parse(csv, Micros(0)), Err(limitlab_emulator::Error::Parse { line: 3, .. })));
    }
}
