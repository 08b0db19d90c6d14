//! Every file limitlab reads from the user, and every file it writes, goes through here.
//!
//! **Reading.** A regular file is read (or streamed) from disk as before. Anything else (a pipe, a
//! FIFO, a device such as `/dev/zero`, a terminal, standard input given as `-` or `/dev/stdin`) can
//! be read only once and may never end, so it is read exactly once, as a stream, up to a cap, and
//! kept: a later read of the same path (a trace is scanned, then replayed) gets the same bytes. A
//! stream longer than its cap is an error naming the file and the cap, never an allocation failure.
//! The caps: [`TEXT_CAP`] for scripts, specs, scenarios, adapters, libraries and certificates (of any
//! kind of file: all of them are read whole), [`STREAM_CAP`] for a trace that is not a regular file
//! (a regular trace file is streamed from disk and has no cap).
//!
//! **Writing.** [`write_atomic`] writes a file under a temporary name in its own directory, flushes
//! it to disk and renames it over the final name: a reader sees the old file or the whole new one,
//! and a failure (a full disk, a file size limit, an error of the writer) leaves nothing under the
//! final name and no temporary behind. Temporary files and the parts of a file written by several
//! threads ([`create_part`]) are remembered while they exist; [`clean_up_on_signals`] (the binary
//! calls it) removes them when SIGINT, SIGTERM or SIGHUP stops the process, which then dies of the
//! signal as it would have.
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use limitlab_emulator::{Error, Result};

/// The most bytes read from a script, spec, scenario, adapter, library or certificate file: 64 MiB.
pub const TEXT_CAP: u64 = 64 << 20;

/// The most bytes read from a trace that is not a regular file (a pipe, FIFO, device or standard
/// input), which is held in memory: 256 MiB. A larger trace can be saved to a file and streamed.
pub const STREAM_CAP: u64 = 256 << 20;

/// Whether `path` names standard input: `-`, or `/dev/stdin` (which would otherwise be opened, and
/// read to its end, once per pass).
pub fn is_stdin(path: &Path) -> bool {
    path == Path::new("-") || path == Path::new("/dev/stdin")
}

/// What a stream read gave, kept for the next read of the same path.
type Kept = std::result::Result<Arc<[u8]>, (std::io::ErrorKind, String)>;

/// The streams read so far, by path.
fn kept() -> MutexGuard<'static, HashMap<PathBuf, Kept>> {
    static KEPT: OnceLock<Mutex<HashMap<PathBuf, Kept>>> = OnceLock::new();
    KEPT.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `path` is read as a stream: standard input, or anything that is not a regular file.
/// (A path that cannot be looked at is left to the open that follows, which says why.)
fn is_stream(path: &Path) -> bool {
    is_stdin(path) || std::fs::metadata(path).is_ok_and(|m| !m.is_file())
}

fn too_large(cap: u64, what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::FileTooLarge,
        format!("longer than {} MiB, the most limitlab reads from {what}", cap >> 20),
    )
}

/// Reads at most `cap` bytes from `r`; more is an error.
fn read_capped(r: impl Read, cap: u64, what: &str) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    r.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(cap, what));
    }
    Ok(bytes)
}

/// A stream's bytes, read the first time it is asked for (up to `cap`) and kept.
fn stream_bytes(path: &Path, cap: u64, what: &str) -> std::io::Result<Arc<[u8]>> {
    let mut kept = kept();
    let got = kept.entry(path.to_path_buf()).or_insert_with(|| {
        let read = if path == Path::new("-") {
            read_capped(std::io::stdin().lock(), cap, what)
        } else {
            File::open(path).and_then(|f| read_capped(f, cap, what))
        };
        read.map(Arc::from).map_err(|e| (e.kind(), e.to_string()))
    });
    match got {
        Ok(b) if b.len() as u64 > cap => Err(too_large(cap, what)),
        Ok(b) => Ok(Arc::clone(b)),
        Err((kind, text)) => Err(std::io::Error::new(*kind, text.clone())),
    }
}

/// A whole file's bytes, at most `cap` of them (see the module's text for streams).
fn read_bytes_io(path: &Path, cap: u64, what: &str) -> std::io::Result<Vec<u8>> {
    if is_stream(path) {
        return stream_bytes(path, cap, what).map(|b| b.to_vec());
    }
    read_capped(File::open(path)?, cap, what)
}

/// Reads a script, spec, scenario, adapter, library or certificate: UTF-8 text of at most
/// [`TEXT_CAP`] bytes, as an I/O error (what [`std::fs::read_to_string`] gives) otherwise.
pub fn read_text_io(path: &Path) -> std::io::Result<String> {
    let bytes = read_bytes_io(path, TEXT_CAP, "a script, spec or scenario")?;
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "stream did not contain valid UTF-8"))
}

/// [`read_text_io`] with the path in its error.
pub fn read_text(path: &Path) -> Result<String> {
    read_text_io(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })
}

/// Reads a script, spec, scenario, adapter, library or certificate as bytes (at most [`TEXT_CAP`]).
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    read_bytes_io(path, TEXT_CAP, "a script, spec or scenario")
        .map_err(|source| Error::Io { path: path.to_path_buf(), source })
}

/// What a trace read as a stream is called in the error past its cap.
const STREAM_TRACE: &str = "a trace that is not a regular file (save it to a file)";

/// A trace: a regular file opened to be streamed (no cap), or a stream's kept bytes (at most
/// [`STREAM_CAP`]).
pub fn open_trace(path: &Path) -> Result<Box<dyn Read + Send>> {
    let io = |source| Error::Io { path: path.to_path_buf(), source };
    if is_stream(path) {
        let bytes = stream_bytes(path, STREAM_CAP, STREAM_TRACE).map_err(io)?;
        return Ok(Box::new(std::io::Cursor::new(bytes)));
    }
    Ok(Box::new(File::open(path).map_err(io)?))
}

/// A trace's size in bytes (a stream's is read, as [`open_trace`] does).
pub fn trace_len(path: &Path) -> Result<u64> {
    if is_stream(path) {
        // The kept bytes: their length, not a read through them.
        return stream_bytes(path, STREAM_CAP, STREAM_TRACE)
            .map(|b| b.len() as u64)
            .map_err(|source| Error::Io { path: path.to_path_buf(), source });
    }
    std::fs::metadata(path).map(|m| m.len()).map_err(|source| Error::Io { path: path.to_path_buf(), source })
}

/// A trace's whole bytes (a regular file's without a cap, a stream's up to [`STREAM_CAP`]).
pub fn read_trace(path: &Path) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_trace(path)?.read_to_end(&mut bytes).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    Ok(bytes)
}

// ---------------------------------------------------------------------------------------------
// Writing.

/// The temporary files and parts that exist now; a signal's clean-up takes the lock and keeps it.
fn live() -> MutexGuard<'static, Vec<PathBuf>> {
    static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

fn forget(path: &Path) {
    live().retain(|p| p != path);
}

/// Creates (or truncates) `path`, a part of a file that [`remove_part`] removes once joined; until
/// then a signal's clean-up removes it too.
pub fn create_part(path: &Path) -> Result<File> {
    let mut live = live();
    let file = File::create(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    live.push(path.to_path_buf());
    Ok(file)
}

/// Removes a part made by [`create_part`] (a missing one is not an error).
pub fn remove_part(path: &Path) {
    let _ = std::fs::remove_file(path);
    forget(path);
}

/// A file being written under a temporary name beside its final one.
struct Temp {
    file: Option<tempfile::NamedTempFile>,
    path: PathBuf,
}

impl Temp {
    fn new(target: &Path) -> Result<Temp> {
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = target.file_name().map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
        // The final name's extension last, for writers that choose a format by it (an image's).
        let suffix = target.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
        let mut live = live();
        // Created as any new file would be (0666 less the umask), not owner-only as temporary
        // files usually are: it becomes the user's output.
        use std::os::unix::fs::PermissionsExt;
        let file = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(&suffix)
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(dir)
            .map_err(|source| Error::Io { path: target.to_path_buf(), source })?;
        let path = file.path().to_path_buf();
        live.push(path.clone());
        Ok(Temp { file: Some(file), path })
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        // Removes the file unless it was renamed (NamedTempFile's own drop).
        self.file.take();
        forget(&self.path);
    }
}

/// Writes `target` atomically: `write` gets the path of a new temporary file in the same
/// directory (for writers that open a path themselves, as the image encoders do) and writes it
/// whole; then it is flushed to disk and renamed to `target`. On any error the temporary file is
/// removed, `target` is left as it was, and the error names `target`.
pub fn write_atomic_path(target: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    write_atomic_paths(&[target.to_path_buf()], |temps| write(&temps[0]))
}

/// [`write_atomic_path`] for files written together (a plot's PNG and SVG): all are renamed once
/// all are written, and on an error none is left under its final name.
pub fn write_atomic_paths(targets: &[PathBuf], write: impl FnOnce(&[PathBuf]) -> Result<()>) -> Result<()> {
    let mut temps = targets.iter().map(|t| Temp::new(t)).collect::<Result<Vec<Temp>>>()?;
    let paths: Vec<PathBuf> = temps.iter().map(|t| t.path.clone()).collect();
    // An error about a temporary file names the final one.
    let named = |e: Error| match e {
        Error::Io { path, source } => {
            let at = paths.iter().position(|p| *p == path).map_or(path, |i| targets[i].clone());
            Error::Io { path: at, source }
        }
        other => other,
    };
    write(&paths).map_err(named)?;
    for (t, target) in temps.iter().zip(targets) {
        // A file written over keeps its mode (a report a team made read-only for others stays
        // so), as a file rewritten in place would; a new one has the umask's.
        if let Ok(old) = std::fs::metadata(target) {
            std::fs::set_permissions(&t.path, old.permissions())
                .map_err(|source| Error::Io { path: target.clone(), source })?;
        }
        // Reopened: the writer may have replaced the file rather than written into it.
        File::open(&t.path).and_then(|f| f.sync_all()).map_err(|source| Error::Io { path: target.clone(), source })?;
    }
    let mut renamed: Vec<&PathBuf> = Vec::new();
    for (t, target) in temps.iter_mut().zip(targets) {
        let file = t.file.take().expect("a temporary file until persisted");
        if let Err(e) = file.persist(target) {
            // Nothing half done: the files already renamed go too.
            for r in renamed {
                let _ = std::fs::remove_file(r);
            }
            return Err(Error::Io { path: target.clone(), source: e.error });
        }
        renamed.push(target);
    }
    drop(temps);
    // The renames made durable (a directory that cannot be synced is not an error).
    for target in targets {
        if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = File::open(dir).and_then(|d| d.sync_all());
        }
    }
    Ok(())
}

/// Writes `target` atomically (see [`write_atomic_path`]) through a buffered writer.
pub fn write_atomic(target: &Path, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    write_atomic_path(target, |temp| {
        let io = |source| Error::Io { path: temp.to_path_buf(), source };
        let mut out = BufWriter::with_capacity(1 << 16, File::create(temp).map_err(io)?);
        write(&mut out).map_err(io)?;
        out.into_inner().map_err(|e| io(e.into_error()))?.sync_all().map_err(io)
    })
}

/// Writes `bytes` to `target` atomically.
pub fn write_bytes(target: &Path, bytes: impl AsRef<[u8]>) -> Result<()> {
    write_atomic(target, |w| w.write_all(bytes.as_ref()))
}

/// Makes SIGINT, SIGTERM and SIGHUP remove the temporary files and parts that exist, then stop the
/// process as the signal would have. For the binary's commands that write files (not `serve`,
/// which stops on its own terms); calling it again does nothing.
pub fn clean_up_on_signals() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        static WRITE_FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` has room for the two descriptors pipe() writes.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return;
        }
        WRITE_FD.store(fds[1], std::sync::atomic::Ordering::SeqCst);
        let read_fd = fds[0];
        let spawned = std::thread::Builder::new().name("signal clean-up".into()).spawn(move || {
            let mut sig = [0u8; 1];
            // SAFETY: reads one byte into `sig` from the pipe this thread owns the reading end of.
            while unsafe { libc::read(read_fd, sig.as_mut_ptr().cast(), 1) } != 1 {}
            let live = live();
            for p in live.iter() {
                let _ = std::fs::remove_file(p);
            }
            // The lock is kept: no new temporary file is made while the process dies.
            std::mem::forget(live);
            let sig = libc::c_int::from(sig[0]);
            // SAFETY: restoring the default action and raising the signal ends the process as the
            // signal would have without limitlab's handler.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::raise(sig);
            }
            std::process::exit(128 + sig);
        });
        if spawned.is_err() {
            return;
        }
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: the action only calls write(2), which is async-signal-safe.
            let _ = unsafe {
                signal_hook_registry::register(sig, move || {
                    let fd = WRITE_FD.load(std::sync::atomic::Ordering::SeqCst);
                    let b = sig as u8;
                    libc::write(fd, (&b as *const u8).cast(), 1);
                })
            };
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("limitlab-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn names(d: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn an_atomic_write_leaves_the_whole_file_or_nothing() {
        let d = dir("atomic");
        let p = d.join("a.csv");
        write_bytes(&p, "one").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "one");
        // The umask's mode, as std::fs::write gives, not a temporary file's 0600.
        let plain = d.join("plain");
        std::fs::write(&plain, "x").unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&p), mode(&plain));
        std::fs::remove_file(&plain).unwrap();
        let e = write_atomic(&p, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("a.csv") && e.to_string().contains("disk full"), "{e}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "one", "the old file is kept");
        // A file written over keeps its own mode.
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_bytes(&p, "two").unwrap();
        assert_eq!((std::fs::read_to_string(&p).unwrap().as_str(), mode(&p)), ("two", 0o640));
        write_bytes(&p, "one").unwrap();
        let q = d.join("b.png");
        assert!(write_atomic_path(&q, |t| {
            assert!(t.to_string_lossy().ends_with(".png"), "{t:?}");
            std::fs::write(t, "x").unwrap();
            Err(Error::Io { path: t.into(), source: std::io::Error::other("no") })
        })
        .is_err());
        assert_eq!(names(&d), ["a.csv"], "no temporary file and no b.png");
        assert!(live().is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_stream_is_read_once_up_to_its_cap() {
        let e = read_text(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(e.starts_with("/dev/zero: longer than 64 MiB"), "{e}");
        // What the first read found is what every later read of the path gets.
        let again = read_trace(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(again.contains("longer than 64 MiB"), "{again}");
        assert_eq!(read_capped(&[7u8; 10][..], 10, "x").unwrap(), [7u8; 10]);
        let e = read_capped(&[7u8; 11][..], 10 << 20, "x").unwrap();
        assert_eq!(e.len(), 11);
        assert_eq!(
            read_capped(&[0u8; (1 << 20) + 1][..], 1 << 20, "a test").unwrap_err().to_string(),
            "longer than 1 MiB, the most limitlab reads from a test"
        );
        assert_eq!(read_bytes(Path::new("/dev/null")).unwrap(), b"");
    }
}
