//! What a saved scenario file (`attack`'s and `check`'s replays) says about its scripts: the
//! built-in name, or the spec file's path relative to the scenario file itself, so that the pair
//! of files can be moved or committed together and still replay.
use std::path::{Component, Path, PathBuf};

use crate::limiter::Limiter;

/// `algorithms = ["NAME"]` for one of limitlab's scripts, else `scripts = ["PATH"]` with the spec
/// file's path relative to `dir`, the directory the scenario file is written into (which must
/// exist). One line, with its newline.
pub fn scripts_line(limiter: &Limiter, dir: &Path) -> String {
    let origin = &limiter.spec().origin;
    match limiter.variant() {
        Some(v) if origin.to_string_lossy().starts_with("scripts/") => format!("algorithms = [\"{}\"]\n", v.name()),
        _ => {
            let path = relative_to(dir, origin);
            // TOML basic strings: `\` and `"` escaped (a Windows path's separators included).
            let text = path.to_string_lossy().replace('\\', "\\\\").replace('"', "\\\"");
            format!("scripts = [\"{text}\"]\n")
        }
    }
}

/// `target` as a path relative to the directory `dir`: `../specs/my.toml`. Both are resolved first
/// (symbolic links, `..`); when either cannot be (it does not exist) or they share no root, the
/// absolute path of `target`, else `target` as given.
pub fn relative_to(dir: &Path, target: &Path) -> PathBuf {
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let (Ok(dir), Ok(target)) = (std::fs::canonicalize(dir), std::fs::canonicalize(target)) else {
        return std::path::absolute(target).unwrap_or_else(|_| target.to_path_buf());
    };
    let d: Vec<Component> = dir.components().collect();
    let t: Vec<Component> = target.components().collect();
    let common = d.iter().zip(&t).take_while(|(a, b)| a == b).count();
    // Different roots (another drive): only the absolute path names it.
    if common == 0 {
        return target;
    }
    let mut rel = PathBuf::new();
    for _ in common..d.len() {
        rel.push("..");
    }
    for c in &t[common..] {
        rel.push(c.as_os_str());
    }
    rel
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("limitlab-replay-file-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("a/b")).unwrap();
        std::fs::create_dir_all(d.join("specs")).unwrap();
        std::fs::write(d.join("specs/my.toml"), "").unwrap();
        d
    }

    #[test]
    fn paths_are_relative_to_the_directory() {
        let d = scratch("rel");
        assert_eq!(relative_to(&d.join("a/b"), &d.join("specs/my.toml")), Path::new("../../specs/my.toml"));
        assert_eq!(relative_to(&d.join("specs"), &d.join("specs/my.toml")), Path::new("my.toml"));
        assert_eq!(relative_to(&d.join("a/b/../.."), &d.join("specs/my.toml")), Path::new("specs/my.toml"));
        // A target that does not exist: its absolute path.
        let missing = relative_to(&d, Path::new("nope/x.toml"));
        assert!(missing.is_absolute() && missing.ends_with("nope/x.toml"), "{missing:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
