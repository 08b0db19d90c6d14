//! `limitlab init PATH...`: recognise the rate-limiting libraries installed in an application's
//! dependencies (a `node_modules/`, a Python `site-packages`), read the exact Lua each one sends to
//! Redis out of its installed files, and write a limiter spec beside it that calls the script as the
//! library's client does, with the library's options as the policy. `limitlab check` then runs on
//! what was written.
//!
//! One file per library ([`rate_limiter_flexible`], [`rate_limit_redis`], [`upstash_ratelimit`],
//! [`limits`], [`pyrate_limiter`]): where its script sits, how its client builds KEYS and ARGV and
//! reads the reply, its defaults and what the spec format cannot say yet. This file finds the
//! packages, writes the files (never over a different existing file without `--force`), loads
//! each written spec and runs one request through it, and prints the summary.
//!
//! No library's Lua is shipped in limitlab: every script is read from the installed package when
//! `init` runs, and the spec's header says which file, which literal, the package's version and the
//! script's sha1.
pub mod env;
pub mod limits;
pub mod literal;
pub mod pyrate_limiter;
pub mod rate_limit_redis;
pub mod rate_limiter_flexible;
pub mod upstash_ratelimit;

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::report::emit;
use env::{Installed, Registry};
use limitlab_emulator::{Error, Result};

/// What the user asked for besides the paths: the policy and which algorithms.
#[derive(Clone, Debug, Default)]
pub struct Flags {
    pub limit: Option<u64>,
    pub window_ms: Option<u64>,
    pub burst: Option<u64>,
    /// rate-limiter-flexible's `blockDuration`, in ms.
    pub block_ms: Option<u64>,
    /// Only the specs of this algorithm (`fixed_window`, `sliding_window`, ...).
    pub algorithm: Option<String>,
}

/// A validated `limitlab init`.
#[derive(Clone, Debug)]
pub struct Options {
    pub paths: Vec<PathBuf>,
    pub out: PathBuf,
    pub force: bool,
    pub flags: Flags,
}

/// The policy a spec is written with, and where it came from (for the header and the summary).
#[derive(Clone, Debug)]
pub struct Policy {
    pub limit: u64,
    pub window_ms: u64,
    pub burst: Option<u64>,
    pub note: String,
}

impl Flags {
    /// The flags where given, else `default` (a library's documented defaults, and a phrase naming
    /// them), else limitlab's usual size, 10 per 1000 ms.
    pub fn policy(&self, default: Option<(u64, u64, &str)>) -> Policy {
        let (limit, window_ms, note) = match default {
            Some((l, w, what)) => (l, w, what.to_string()),
            None => (10, 1000, "limitlab's usual size: the library has no default".to_string()),
        };
        let given = self.limit.is_some() || self.window_ms.is_some();
        let note = match (given, self.limit, self.window_ms) {
            (false, ..) => note,
            (true, Some(_), Some(_)) => "--limit and --window".to_string(),
            (true, Some(_), None) => format!("--limit; the window from {note}"),
            (true, None, _) => format!("--window; the limit from {note}"),
        };
        Policy { limit: self.limit.unwrap_or(limit), window_ms: self.window_ms.unwrap_or(window_ms), burst: None, note }
    }
}

impl Policy {
    /// With a token bucket's capacity: `--burst`, else the limit.
    pub fn with_burst(mut self, flags: &Flags) -> Policy {
        self.burst = Some(flags.burst.unwrap_or(self.limit));
        self
    }

    /// An error line when the library counts its window in whole seconds and this one is not.
    pub fn whole_seconds(&self, option: &str) -> std::result::Result<(), String> {
        match self.window_ms % 1000 {
            0 => Ok(()),
            _ => Err(format!("a window of {} ms cannot be written: {option} is whole seconds", self.window_ms)),
        }
    }

    fn toml(&self) -> String {
        let mut s = format!("[policy]\nlimit = {}\nwindow_ms = {}\n", self.limit, self.window_ms);
        if let Some(b) = self.burst {
            let _ = writeln!(s, "burst = {b}");
        }
        s
    }

    fn describe(&self) -> String {
        match self.burst {
            Some(b) => format!("{} per {} ms, burst {b}", self.limit, self.window_ms),
            None => format!("{} per {} ms", self.limit, self.window_ms),
        }
    }
}

/// One Lua script read from an installed file.
#[derive(Clone, Debug)]
pub struct LuaSource {
    /// Its name in the spec's `[scripts]`.
    pub label: String,
    /// The installed file it came from.
    pub file: PathBuf,
    /// How it was found there: the literal's name, or "the whole file".
    pub anchor: String,
    pub lua: String,
}

impl LuaSource {
    pub fn sha1(&self) -> String {
        limitlab_emulator::lua::sha1_hex(self.lua.as_bytes())
    }
}

/// One spec to write.
#[derive(Clone, Debug)]
pub struct Plan {
    /// `<library>_<algorithm>`: the spec's name and its files' stem.
    pub stem: String,
    pub algorithm: &'static str,
    /// Top-level fields after `name`: description, family, ...
    pub top: String,
    pub policy: Policy,
    /// The first is `<stem>.lua`, the others `<stem>_<label>.lua`.
    pub scripts: Vec<LuaSource>,
    /// `[vars]`, `[let]`, `[[call]]` and `[decision]`.
    pub body: String,
    /// What the library's client does that the spec does not say, one line each.
    pub not_expressed: Vec<String>,
}

impl Plan {
    fn lua_name(&self, i: usize) -> String {
        match i {
            0 => format!("{}.lua", self.stem),
            _ => format!("{}_{}.lua", self.stem, self.scripts[i].label),
        }
    }
}

/// What a library's module made of an installed package.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub plans: Vec<Plan>,
    /// Scripts that could not be read or specs that could not be written, one line each.
    pub problems: Vec<String>,
    /// Anything else worth saying (where the policy came from, a companion package).
    pub notes: Vec<String>,
}

/// A library `init` knows.
pub struct Library {
    /// The registry's name of the package.
    pub name: &'static str,
    pub registry: Registry,
    /// Versions whose sources this module was written against.
    pub tested: &'static [&'static str],
    pub build: fn(&Installed, &Flags) -> Outcome,
}

/// Every library `init` recognises.
pub const LIBRARIES: [Library; 5] = [
    rate_limiter_flexible::LIBRARY,
    rate_limit_redis::LIBRARY,
    upstash_ratelimit::LIBRARY,
    limits::LIBRARY,
    pyrate_limiter::LIBRARY,
];

/// Reads the script bound to `anchor` (an assignment or a property) in the JavaScript file `rel`
/// of a package; the message says what went wrong.
pub fn js_script(
    pkg: &Installed,
    rel: &str,
    anchor: &str,
    label: &str,
) -> std::result::Result<(LuaSource, literal::Literal, String), String> {
    let file = pkg.dir.join(rel);
    let src = source_file(pkg, &file)?;
    let at = literal::find_anchor(&src, anchor)
        .ok_or_else(|| format!("script not found in {}: no `{anchor}`", pkg.shown(&file)))?;
    let lit = literal::js_at(&src, at).map_err(|r| format!("script `{anchor}` in {}: {r}", pkg.shown(&file)))?;
    let source = LuaSource { label: label.into(), file, anchor: anchor.into(), lua: lit.text.clone() };
    Ok((source, lit, src))
}

/// Reads the script bound to `anchor` in the Python file `rel` of a site-packages.
pub fn py_script(pkg: &Installed, rel: &str, anchor: &str, label: &str) -> std::result::Result<LuaSource, String> {
    let file = pkg.dir.join(rel);
    let src = source_file(pkg, &file)?;
    let at = literal::find_anchor(&src, anchor)
        .ok_or_else(|| format!("script not found in {}: no `{anchor}`", pkg.shown(&file)))?;
    let lit = literal::py_at(&src, at).map_err(|r| format!("script `{anchor}` in {}: {r}", pkg.shown(&file)))?;
    Ok(LuaSource { label: label.into(), file, anchor: anchor.into(), lua: lit.text })
}

/// Reads a `.lua` file shipped in a package, whole.
pub fn file_script(pkg: &Installed, rel: &str, label: &str) -> std::result::Result<LuaSource, String> {
    let file = pkg.dir.join(rel);
    if !file.is_file() {
        return Err(format!("script not found: no {}", pkg.shown(&file)));
    }
    let lua = env::read(&file).map_err(|e| format!("cannot read {}: {e}", pkg.shown(&file)))?;
    Ok(LuaSource { label: label.into(), file, anchor: "the whole file".into(), lua })
}

/// The text of a package's file; a missing one means the script is not where this library keeps it.
fn source_file(pkg: &Installed, file: &Path) -> std::result::Result<String, String> {
    if !file.is_file() {
        return Err(format!("script not found: no {}", pkg.shown(file)));
    }
    env::read(file).map_err(|e| format!("cannot read {}: {e}", pkg.shown(file)))
}

/// A script that does not call Redis is not the one being looked for.
pub fn looks_like_lua(s: &LuaSource, pkg: &Installed) -> std::result::Result<(), String> {
    match s.lua.contains("redis.call") || s.lua.contains("redis.pcall") {
        true => Ok(()),
        false => {
            Err(format!("`{}` in {} does not look like a Redis script (no redis.call)", s.anchor, pkg.shown(&s.file)))
        }
    }
}

/// A TOML basic string.
pub fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// One file `init` writes.
struct Out {
    path: PathBuf,
    text: String,
}

/// Runs `init`, printing the summary to `out`. Bad input (no path, nothing recognised, nothing
/// that could be written, a file in the way) is an [`Error::Invalid`], exit status 2.
pub fn run(opts: &Options, out: &mut dyn Write) -> Result<()> {
    let mut report = String::new();
    let mut files: Vec<Out> = Vec::new();
    let mut written_specs: Vec<(PathBuf, String)> = Vec::new();
    let mut found_any = false;
    let mut problems_any = false;
    // where each spec's lines end in the report, for what its first request says
    let mut spec_ends: Vec<usize> = Vec::new();
    for path in &opts.paths {
        let roots = env::roots(path)?;
        if roots.is_empty() {
            let _ = writeln!(report, "{}: no node_modules/ or Python site-packages there", path.display());
            continue;
        }
        for root in &roots {
            let _ = writeln!(report, "{}:", root.dir.display());
            let mut here = 0;
            for lib in LIBRARIES.iter().filter(|l| l.registry == root.registry) {
                let found = match lib.registry {
                    Registry::Npm => env::npm(root, lib.name),
                    Registry::PyPI => env::pypi(root, lib.name),
                };
                let pkg = match found {
                    None => continue,
                    Some(Err(e)) => {
                        let _ = writeln!(report, "  {}: recognised, but its metadata cannot be read: {e}", lib.name);
                        problems_any = true;
                        continue;
                    }
                    Some(Ok(p)) => p,
                };
                here += 1;
                found_any = true;
                let tested = lib.tested.contains(&pkg.version.as_str());
                let status = if tested {
                    "a tested version".to_string()
                } else {
                    format!(
                        "untested version (init knows {}): read as the tested ones; check what it wrote",
                        lib.tested.join(", ")
                    )
                };
                let _ = writeln!(report, "  {} {} ({status}), {}", pkg.name, pkg.version, pkg.shown(&pkg.meta));
                let mut outcome = (lib.build)(&pkg, &opts.flags);
                if let Some(algo) = &opts.flags.algorithm {
                    let want = algo.replace('-', "_").to_ascii_lowercase();
                    let offered: Vec<&str> = outcome.plans.iter().map(|p| p.algorithm).collect();
                    outcome.plans.retain(|p| p.algorithm == want);
                    if outcome.plans.is_empty() && !offered.is_empty() {
                        let _ = writeln!(report, "    --algorithm {algo}: not one of {}", offered.join(", "));
                    }
                }
                for n in &outcome.notes {
                    let _ = writeln!(report, "    {n}");
                }
                for p in &outcome.problems {
                    problems_any = true;
                    let _ = writeln!(report, "    recognised {} {}, but {p}", pkg.name, pkg.version);
                }
                for plan in &outcome.plans {
                    let toml_path = opts.out.join(format!("{}.toml", plan.stem));
                    let _ = writeln!(
                        report,
                        "    {}: {}, policy {} ({})",
                        plan.algorithm,
                        shown_out(&toml_path),
                        plan.policy.describe(),
                        plan.policy.note
                    );
                    for (i, s) in plan.scripts.iter().enumerate() {
                        let lua_path = opts.out.join(plan.lua_name(i));
                        let _ = writeln!(
                            report,
                            "      {} <- {} ({}), sha1 {}",
                            shown_out(&lua_path),
                            pkg.shown(&s.file),
                            s.anchor,
                            s.sha1()
                        );
                        files.push(Out { path: lua_path, text: s.lua.clone() });
                    }
                    for n in &plan.not_expressed {
                        let _ = writeln!(report, "      not expressed: {n}");
                    }
                    files.push(Out { path: toml_path.clone(), text: spec_text(plan, &pkg, tested) });
                    spec_ends.push(report.len());
                    written_specs.push((toml_path, plan.stem.clone()));
                }
            }
            if here == 0 {
                let names: Vec<&str> =
                    LIBRARIES.iter().filter(|l| l.registry == root.registry).map(|l| l.name).collect();
                let _ = writeln!(report, "  no rate limiter init knows ({})", names.join(", "));
            }
        }
    }
    if files.is_empty() {
        emit(out, &report)?;
        let reason = match (found_any, problems_any) {
            (false, _) => format!(
                "nothing recognised in {}: init knows {}",
                opts.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
                LIBRARIES.iter().map(|l| l.name).collect::<Vec<_>>().join(", ")
            ),
            (true, _) => "recognised libraries, but no spec could be written (see above)".to_string(),
        };
        return Err(Error::Invalid { context: "init".into(), field: "PATH".into(), reason });
    }
    write_all(&files, &opts.out, opts.force)?;
    // Each written spec must load, and one request must run: say what a first request gets.
    let mut inserts: Vec<(usize, String)> = Vec::new();
    for (at, (path, stem)) in spec_ends.iter().zip(&written_specs) {
        let line = match smoke(path) {
            Ok(()) => continue,
            // The library's own script is refused by Redis 7.0 (SCRIPT LOAD or compilation): the
            // finding is the library's, and `check` says it at load, exit 2.
            Err(SmokeError::Load(e))
                if e.contains("Redis 7.0 refuses it at SCRIPT LOAD") || e.contains("does not compile") =>
            {
                let why = e.split_once("(Redis: ").map_or(e.as_str(), |(_, r)| r.trim_end_matches(')'));
                let why = why.rsplit_once("SCRIPT LOAD: ").map_or(why, |(_, r)| r);
                format!("      Redis 7.0 refuses the library's script: {why}\n        so `limitlab check` stops when it loads {stem} (exit 2)\n")
            }
            Err(SmokeError::Load(e)) => {
                format!("      the written spec does not load ({e}); please report this\n")
            }
            Err(SmokeError::Request(e)) => {
                let first = e.lines().next().unwrap_or_default().to_string();
                format!("      a first request on the emulator (Redis 7.0) fails: {first}\n        so `limitlab check` fails `errors` for {stem}\n")
            }
        };
        inserts.push((*at, line));
    }
    for (at, line) in inserts.into_iter().rev() {
        report.insert_str(at, &line);
    }
    let _ = writeln!(report, "\nwrote {} files in {}; next:", files.len(), opts.out.display());
    for (path, _) in &written_specs {
        let _ = writeln!(report, "  limitlab check {}", path.display());
    }
    emit(out, &report)
}

fn shown_out(p: &Path) -> String {
    p.display().to_string()
}

/// The spec's text: the header (where each script came from), then the fields.
fn spec_text(plan: &Plan, pkg: &Installed, tested: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Written by `limitlab init` from {} {}, installed in {}",
        pkg.name,
        pkg.version,
        pkg.root.base.display()
    );
    if !tested {
        let _ = writeln!(
            s,
            "# (a version init was not written against: compare the calls below with the package's client)"
        );
    }
    for (i, src) in plan.scripts.iter().enumerate() {
        let _ = writeln!(s, "# script `{}`: {}", src.label, plan.lua_name(i));
        let _ = writeln!(s, "#   from: {}", pkg.shown(&src.file));
        let _ = writeln!(s, "#   anchor: {}", src.anchor);
        let _ = writeln!(s, "#   sha1: {}", src.sha1());
    }
    let _ = writeln!(s, "# policy: {} ({})", plan.policy.describe(), plan.policy.note);
    for n in &plan.not_expressed {
        let _ = writeln!(s, "# not expressed: {n}");
    }
    let _ = writeln!(s, "\nname = {}", toml_str(&plan.stem));
    s.push_str(&plan.top);
    s.push('\n');
    s.push_str(&plan.policy.toml());
    s.push_str("\n[scripts]\n");
    for (i, src) in plan.scripts.iter().enumerate() {
        let _ = writeln!(s, "{} = {}", src.label, toml_str(&plan.lua_name(i)));
    }
    s.push('\n');
    s.push_str(&plan.body);
    s
}

/// Writes every file, or none: a file that exists with other content is left alone unless
/// `force`, and the error names each one.
fn write_all(files: &[Out], dir: &Path, force: bool) -> Result<()> {
    let in_the_way: Vec<String> = files
        .iter()
        .filter(|f| std::fs::read(&f.path).is_ok_and(|old| old != f.text.as_bytes()))
        .map(|f| f.path.display().to_string())
        .collect();
    if !in_the_way.is_empty() && !force {
        return Err(Error::Invalid {
            context: "init".into(),
            field: "--out".into(),
            reason: format!(
                "{} already exist with other content (--force overwrites): {}",
                in_the_way.len(),
                in_the_way.join(", ")
            ),
        });
    }
    std::fs::create_dir_all(dir).map_err(|source| Error::Io { path: dir.to_path_buf(), source })?;
    // All renamed into place once all are written whole; on an error none is left.
    let targets: Vec<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
    limitlab_engine::files::write_atomic_paths(&targets, |temps| {
        for (f, temp) in files.iter().zip(temps) {
            std::fs::write(temp, &f.text).map_err(|source| Error::Io { path: temp.clone(), source })?;
        }
        Ok(())
    })
}

enum SmokeError {
    Load(String),
    Request(String),
}

/// Loads a written spec and runs one request of cost 1 through it on the emulator.
fn smoke(path: &Path) -> std::result::Result<(), SmokeError> {
    let limiter = limitlab_engine::load(path).map_err(|e| SmokeError::Load(e.to_string()))?;
    let mut h = limitlab_engine::Harness::new(limiter);
    h.request("user42", 1).map(|_| ()).map_err(|e| SmokeError::Request(e.to_string()))
}

/// A duration: whole ms (`1500`), or a number with a unit, `ms`, `s`, `m`, `h` or `d` (`1s`,
/// `1.5 s`, `10m`), as @upstash/ratelimit writes windows.
pub fn parse_duration_ms(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let n: f64 = num.parse().map_err(|_| format!("`{s}` is not a duration (1000, 1000ms, 1s, 1.5 s, 10m, 1h, 1d)"))?;
    let mult = match unit {
        "" | "ms" => 1.0,
        "s" => 1e3,
        "m" => 60e3,
        "h" => 3600e3,
        "d" => 86400e3,
        other => return Err(format!("unknown unit `{other}` in `{s}` (ms, s, m, h, d)")),
    };
    let ms = (n * mult).round();
    if !(1.0..=1e15).contains(&ms) {
        return Err(format!("`{s}` is not a window of at least 1 ms"));
    }
    Ok(ms as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_ms_or_with_units() {
        assert_eq!(parse_duration_ms("1500"), Ok(1500));
        assert_eq!(parse_duration_ms("1s"), Ok(1000));
        assert_eq!(parse_duration_ms("1.5 s"), Ok(1500));
        assert_eq!(parse_duration_ms("10m"), Ok(600_000));
        assert_eq!(parse_duration_ms("250ms"), Ok(250));
        assert!(parse_duration_ms("1 fortnight").is_err());
        assert!(parse_duration_ms("0").is_err());
    }

    #[test]
    fn the_policy_says_where_it_came_from() {
        let f = Flags::default();
        let p = f.policy(Some((5, 60_000, "the defaults, limit 5 and windowMs 60000")));
        assert_eq!((p.limit, p.window_ms), (5, 60_000));
        assert_eq!(p.note, "the defaults, limit 5 and windowMs 60000");
        let f = Flags { limit: Some(3), ..Flags::default() };
        let p = f.policy(None);
        assert_eq!((p.limit, p.window_ms), (3, 1000));
        assert!(p.note.starts_with("--limit"), "{}", p.note);
        assert_eq!(f.policy(None).with_burst(&f).burst, Some(3));
    }
}
