//! Where limitlab writes files: one directory, named by the global `--out DIR` (default
//! [`DEFAULT_DIR`], `limitlab-out/` in the current directory), made when the first file is written.
//! Every file is written atomically (a temporary name beside it, then renamed: see
//! [`limitlab_engine::files`]), so a file is there whole or not at all. A file that cannot be
//! written (a read-only directory, a full disk) does not stop the command: its results still print,
//! [`OutDir::warn`] says once on stderr what was not written and why, and the command then fails
//! ([`OutDir::failure`]), so that its exit status is not 0.
use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};

use limitlab_emulator::{Error, Result};
use limitlab_engine::check::NotWritten;

/// The output directory when `--out` is not given: beside the user's work, never one of the
/// directories limitlab ships (`simulations/`, `plots/`).
pub const DEFAULT_DIR: &str = "limitlab-out";

/// The output directory of one command, and the files it could not write there.
#[derive(Debug)]
pub struct OutDir {
    dir: PathBuf,
    not_written: RefCell<Vec<NotWritten>>,
}

impl OutDir {
    pub fn new(dir: impl Into<PathBuf>) -> OutDir {
        OutDir { dir: dir.into(), not_written: RefCell::new(Vec::new()) }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes the file `name` in the directory with `write` (which gets the path of a temporary
    /// file beside it, renamed to `name` once written whole), making the directory first. Returns the path when written; otherwise remembers the failure for
    /// [`OutDir::warn`] and returns `None`.
    pub fn write(&self, name: &str, write: impl FnOnce(&Path) -> Result<()>) -> Option<PathBuf> {
        self.write_all(&[name], |paths| write(&paths[0])).map(|mut p| p.remove(0))
    }

    /// [`OutDir::write`] for files written together (a plot's PNG and SVG): all are remembered as
    /// not written when `write` fails.
    pub fn write_all(&self, names: &[&str], write: impl FnOnce(&[PathBuf]) -> Result<()>) -> Option<Vec<PathBuf>> {
        let paths: Vec<PathBuf> = names.iter().map(|n| self.dir.join(n)).collect();
        let done = std::fs::create_dir_all(&self.dir)
            .map_err(|source| Error::Io { path: self.dir.clone(), source })
            .and_then(|()| limitlab_engine::files::write_atomic_paths(&paths, write));
        match done {
            Ok(()) => Some(paths),
            Err(e) => {
                let reason = match e {
                    Error::Io { source, .. } => source.to_string(),
                    other => other.to_string(),
                };
                self.note(paths.into_iter().map(|path| NotWritten { path, reason: reason.clone() }));
                None
            }
        }
    }

    /// Remembers files a lower layer could not write (`check`'s replays).
    pub fn note(&self, files: impl IntoIterator<Item = NotWritten>) {
        let mut known = self.not_written.borrow_mut();
        for f in files {
            // Each file once, with the first reason it was not written.
            if !known.iter().any(|k| k.path == f.path) {
                known.push(f);
            }
        }
    }

    /// The warning about the files not written, one line; `None` when every file was written.
    pub fn warning(&self) -> Option<String> {
        let files = self.not_written.borrow();
        if files.is_empty() {
            return None;
        }
        let n = files.len();
        let names: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
        let mut reasons: Vec<&str> = Vec::new();
        for f in files.iter() {
            if !reasons.contains(&f.reason.as_str()) {
                reasons.push(&f.reason);
            }
        }
        Some(format!(
            "limitlab: warning: {n} {} not written ({}): {}; the results above are complete without {}; \
             --out DIR writes elsewhere",
            if n == 1 { "file" } else { "files" },
            reasons.join("; "),
            names.join(", "),
            if n == 1 { "it" } else { "them" },
        ))
    }

    /// The error a command that wrote everything else ends with when a file was not written (exit
    /// status 2, as for any file that cannot be written).
    pub fn failure(&self) -> Option<Error> {
        let files = self.not_written.borrow();
        let first = files.first()?;
        Some(Error::Io {
            path: first.path.clone(),
            source: std::io::Error::other(format!(
                "{} not written (see the warning above)",
                if files.len() == 1 { "1 file".to_string() } else { format!("{} files", files.len()) }
            )),
        })
    }

    /// Prints [`OutDir::warning`] on `err`, when there is one.
    pub fn warn(&self, err: &mut dyn Write) {
        if let Some(w) = self.warning() {
            let _ = writeln!(err, "{w}");
        }
    }
}

/// A file name part from a script's or scenario's name: letters, digits, `-` and `_` kept, anything
/// else `_`, so that a name never makes a path of its own.
pub fn file_part(name: &str) -> String {
    let s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    if s.is_empty() {
        "_".to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_cannot_be_written_is_reported_once_not_fatal() {
        let base = std::env::temp_dir().join(format!("limitlab-outdir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        // A directory under a plain file cannot be made, even by root.
        std::fs::write(base.join("file"), "").unwrap();
        let out = OutDir::new(base.join("file/out"));
        assert_eq!(out.warning(), None);
        assert_eq!(
            out.write("a.csv", |p| std::fs::write(p, "x").map_err(|source| Error::Io { path: p.into(), source })),
            None
        );
        assert_eq!(out.write("b.toml", |_| Ok(())), None);
        let w = out.warning().unwrap();
        assert!(w.starts_with("limitlab: warning: 2 files not written ("), "{w}");
        assert!(w.contains("file/out/a.csv, ") && w.contains("file/out/b.toml;"), "{w}");
        assert_eq!(w.lines().count(), 1, "{w}");

        let ok = OutDir::new(base.join("made/here"));
        let p = ok.write("c.txt", |p| std::fs::write(p, "c").map_err(|source| Error::Io { path: p.into(), source }));
        assert_eq!(p, Some(base.join("made/here/c.txt")));
        assert_eq!(std::fs::read_to_string(base.join("made/here/c.txt")).unwrap(), "c");
        assert_eq!(ok.warning(), None);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn names_never_make_paths() {
        assert_eq!(file_part("my limiter/../x"), "my_limiter____x");
        assert_eq!(file_part("token_bucket"), "token_bucket");
        assert_eq!(file_part(""), "_");
    }
}
