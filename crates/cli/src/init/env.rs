//! Where an application's dependencies are installed, and which packages are there: a
//! `node_modules/` (each package's `package.json`) or a Python `site-packages` (each distribution's
//! `*.dist-info/METADATA`), found from the path the user gives.
use std::path::{Path, PathBuf};

use limitlab_emulator::{Error, Result};

/// The package registry a library comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registry {
    Npm,
    PyPI,
}

/// One directory of installed packages.
#[derive(Clone, Debug)]
pub struct Root {
    pub registry: Registry,
    pub dir: PathBuf,
    /// The path the user gave (files are shown relative to it).
    pub base: PathBuf,
}

/// An installed package.
#[derive(Clone, Debug)]
pub struct Installed {
    /// As the registry spells it (`@upstash/ratelimit`, `pyrate-limiter`).
    pub name: String,
    pub version: String,
    /// Where its files are: `node_modules/<name>`, or the site-packages directory for Python.
    pub dir: PathBuf,
    /// The file the name and version were read from.
    pub meta: PathBuf,
    pub root: Root,
}

impl Installed {
    /// `path` as shown to the user: relative to the path they gave, with `/` separators.
    pub fn shown(&self, path: &Path) -> String {
        shown(&self.root.base, path)
    }
}

/// `path` relative to `base` when it is under it, with `/` separators.
pub fn shown(base: &Path, path: &Path) -> String {
    let Ok(rel) = path.strip_prefix(base) else {
        return path.display().to_string();
    };
    rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/")
}

fn invalid(field: &str, reason: String) -> Error {
    Error::Invalid { context: "init".into(), field: field.into(), reason }
}

/// The package directories to look in for one PATH argument: the directory itself when it is a
/// `node_modules` or a `site-packages` (or holds `*.dist-info` directories), else its
/// `node_modules/` and the `site-packages` of a virtual environment in it (`.venv/`, `venv/`, or
/// the directory itself), `lib/python*/site-packages`.
pub fn roots(path: &Path) -> Result<Vec<Root>> {
    if !path.is_dir() {
        let what = if path.exists() { "is not a directory" } else { "does not exist" };
        return Err(invalid("PATH", format!("{} {what}", path.display())));
    }
    let base = path.to_path_buf();
    let root = |registry, dir: PathBuf| Root { registry, dir, base: base.clone() };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if name == "node_modules" {
        return Ok(vec![root(Registry::Npm, base.clone())]);
    }
    if name == "site-packages" || name == "dist-packages" || has_dist_info(path) {
        return Ok(vec![root(Registry::PyPI, base.clone())]);
    }
    let mut out = Vec::new();
    if path.join("node_modules").is_dir() {
        out.push(root(Registry::Npm, path.join("node_modules")));
    }
    for venv in [path.join(".venv"), path.join("venv"), path.to_path_buf()] {
        for sp in site_packages(&venv) {
            if !out.iter().any(|r: &Root| r.dir == sp) {
                out.push(root(Registry::PyPI, sp));
            }
        }
    }
    Ok(out)
}

fn has_dist_info(dir: &Path) -> bool {
    entries(dir).iter().any(|p| p.is_dir() && p.to_string_lossy().ends_with(".dist-info"))
}

/// `venv/lib/python*/site-packages`, in name order.
fn site_packages(venv: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = entries(&venv.join("lib"))
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("python")))
        .map(|p| p.join("site-packages"))
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

/// Reads a file as text; a missing or unreadable file is an [`Error::Io`].
pub fn read(path: &Path) -> Result<String> {
    limitlab_engine::files::read_bytes(path).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// The npm package `name` in `root` (a `node_modules`), from its `package.json`.
pub fn npm(root: &Root, name: &str) -> Option<Result<Installed>> {
    let dir = root.dir.join(name);
    let meta = dir.join("package.json");
    if !meta.is_file() {
        return None;
    }
    Some(read(&meta).and_then(|text| {
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::Parse {
            file: meta.clone(),
            line: e.line(),
            reason: e.to_string(),
        })?;
        let found = v["name"].as_str().unwrap_or_default();
        if found != name {
            return Err(Error::Parse {
                file: meta.clone(),
                line: 1,
                reason: format!("names the package `{found}`, not `{name}`"),
            });
        }
        let version = v["version"].as_str().unwrap_or("unknown").to_string();
        Ok(Installed { name: name.to_string(), version, dir, meta, root: root.clone() })
    }))
}

/// `main` of an npm package's `package.json`, relative to the package.
pub fn npm_main(pkg: &Installed) -> Option<String> {
    let text = read(&pkg.meta).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["main"].as_str().map(|s| s.trim_start_matches("./").to_string())
}

/// PEP 503's normal form of a distribution name: lower case, runs of `-`, `_`, `.` as one `-`.
pub fn normalize(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The Python distribution `name` in `root` (a site-packages), from its `*.dist-info/METADATA`.
pub fn pypi(root: &Root, name: &str) -> Option<Result<Installed>> {
    let want = normalize(name);
    for info in entries(&root.dir) {
        let file = info.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let Some(stem) = file.strip_suffix(".dist-info") else {
            continue;
        };
        // `<name>-<version>.dist-info`: the name is everything before the last `-`
        let dist = stem.rsplit_once('-').map_or(stem, |(n, _)| n);
        if normalize(dist) != want {
            continue;
        }
        let meta = info.join("METADATA");
        return Some(read(&meta).map(|text| {
            let field = |key: &str| {
                text.lines()
                    .take_while(|l| !l.is_empty())
                    .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
            };
            let version = field("Version:").unwrap_or_else(|| "unknown".into());
            let name = field("Name:").unwrap_or_else(|| name.to_string());
            Installed { name, version, dir: root.dir.clone(), meta, root: root.clone() }
        }));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_names_compare_in_normal_form() {
        assert_eq!(normalize("pyrate_limiter"), "pyrate-limiter");
        assert_eq!(normalize("Pyrate.-Limiter"), "pyrate-limiter");
        assert_eq!(normalize("limits"), "limits");
    }

    #[test]
    fn shown_paths_are_relative_with_slashes() {
        assert_eq!(shown(Path::new("/a/b"), Path::new("/a/b/c/d.js")), "c/d.js");
        assert_eq!(shown(Path::new("/x"), Path::new("/a/d.js")), "/a/d.js");
    }
}
