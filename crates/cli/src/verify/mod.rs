//! Differential validation against a real Redis: random cases run on the emulator and on a server,
//! reply for reply ([`verify`], `limitlab verify`), and the standard scenarios' decisions compared
//! call for call ([`against_redis`], `run --redis` and `compare --redis`).
//!
//! A case ([`gen`]) is a short random session of commands from the emulator's table and calls of
//! the shipped scripts. Each case runs on a fresh emulator (its clock set to the server's time and
//! standing still) and on the server under a key prefix of its own (on a private server, after
//! `FLUSHALL`, `SCRIPT FLUSH` and `FUNCTION FLUSH`). Replies are compared as a RESP2 client receives them, byte for
//! byte, after two normalisations: a nil array reads as a nil bulk string (the redis crate does not
//! tell them apart), and the replies of `KEYS`, `SMEMBERS` and `SCAN` are sorted (their order is
//! the server's hash-table order, which is randomised), in EXEC's array too. A case may leave the
//! connection in a transaction, with WATCHes or in another database; it is reset before the next. A mismatch is shrunk ([`shrink`]) and
//! printed as redis-cli lines ([`Mismatch::render`]) that reproduce it on a fresh server and on
//! `limitlab cli`; the cases are built so that no reply depends on timing ([`model`]).
pub mod against_redis;
pub mod gen;
pub mod model;
pub mod shrink;
pub mod text;
pub mod used_memory;

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use limitlab_emulator::clock::{Millis, Stopwatch, VirtualClock};
use limitlab_emulator::{Emulator, Reply};
use limitlab_emulator::{Error, Result};
use limitlab_engine::backend::real::RealRedis;
use limitlab_engine::backend::Backend;
use model::Fx;

/// One argument of a generated command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    /// A logical key name; sent with the case's prefix in front.
    Key(String),
    /// A KEYS/SCAN pattern; sent with the case's prefix in front.
    Pattern(String),
    /// Sent as is.
    Lit(Vec<u8>),
}

/// One generated command and its effects (for [`model::Model`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    pub args: Vec<Arg>,
    pub fx: Vec<Fx>,
}

impl Command {
    /// The command name in lower case.
    pub fn name(&self) -> String {
        match self.args.first() {
            Some(Arg::Lit(n)) => String::from_utf8_lossy(n).to_ascii_lowercase(),
            _ => String::new(),
        }
    }

    /// The arguments as sent, keys and patterns behind `prefix`.
    pub fn materialise(&self, prefix: &str) -> Vec<Vec<u8>> {
        self.args
            .iter()
            .map(|a| match a {
                Arg::Key(k) | Arg::Pattern(k) => {
                    let mut v = prefix.as_bytes().to_vec();
                    v.extend_from_slice(k.as_bytes());
                    v
                }
                Arg::Lit(b) => b.clone(),
            })
            .collect()
    }

    /// The redis-cli line of this command, without the prefix.
    pub fn line(&self) -> String {
        text::line(&self.materialise(""))
    }
}

/// A generated case: commands run in order on a clean keyspace.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub commands: Vec<Command>,
}

/// How [`verify`] runs.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub cases: u64,
    pub seed: u64,
    /// The server is ours: flush it before every case, and generate the commands that need that.
    pub private: bool,
    /// Stop after this many (shrunk) mismatches.
    pub max_mismatches: usize,
    /// Runs allowed for shrinking one mismatch.
    pub shrink_budget: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { cases: 2000, seed: 1, private: false, max_mismatches: 3, shrink_budget: 400 }
    }
}

/// One mismatch, shrunk.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// The case number (0-based) in the run.
    pub case: u64,
    /// Commands in the case as generated, and after shrinking.
    pub original_len: usize,
    pub commands: Vec<Command>,
    /// The last command's replies (normalised), on each side.
    pub emulator: Reply,
    pub redis: Reply,
    /// False when a second run of the shrunk case no longer mismatched (timing: a bug in verify).
    pub reproduced: bool,
    pub shrink_runs: usize,
}

impl Mismatch {
    /// The report of this mismatch: replies, then the redis-cli lines that reproduce it.
    pub fn render(&self, seed: u64) -> String {
        let mut s = format!(
            "mismatch in case {} (seed {seed}), shrunk from {} to {} commands in {} runs{}:\n  emulator: {}\n  redis:    {}\n\
             reproduce on a fresh server (FLUSHALL, SCRIPT FLUSH, FUNCTION FLUSH) and with `limitlab cli`:\n",
            self.case,
            self.original_len,
            self.commands.len(),
            self.shrink_runs,
            if self.reproduced { "" } else { " (NOT reproduced by a second run: a timing effect)" },
            text::show(&self.emulator),
            text::show(&self.redis),
        );
        for c in &self.commands {
            s.push_str(&c.line());
            s.push('\n');
        }
        s
    }
}

/// What a run of [`verify`] did.
#[derive(Clone, Debug)]
pub struct Report {
    pub backend: String,
    pub seed: u64,
    pub cases: u64,
    pub commands: u64,
    /// How often each command name was sent (both sides), including EVAL/EVALSHA of the shipped
    /// scripts under `script:<name>`.
    pub by_name: BTreeMap<String, u64>,
    pub mismatches: Vec<Mismatch>,
    /// Further mismatches that looked like one already found (same command, same replies once
    /// digits are left out), not shrunk or counted in `mismatches`.
    pub duplicates: u64,
    pub secs: f64,
    pub keys_removed: u64,
}

impl Report {
    /// The summary and every mismatch, as text.
    pub fn render(&self) -> String {
        let scripts: u64 = self.by_name.iter().filter(|(k, _)| k.starts_with("script:")).map(|(_, n)| n).sum();
        let mut s = format!(
            "verify: {} cases, {} commands ({} calls of the shipped scripts) on the emulator and on {}, seed {}, {:.1} s: {}\n",
            self.cases,
            self.commands,
            scripts,
            self.backend,
            self.seed,
            self.secs,
            if self.mismatches.is_empty() {
                "every reply identical".to_string()
            } else {
                format!("{} mismatch(es)", self.mismatches.len())
            }
        );
        let table: std::collections::HashSet<&str> = limitlab_emulator::cmd::all().map(|c| c.name).collect();
        let mut unused: Vec<&str> = table.iter().copied().filter(|n| !self.by_name.contains_key(*n)).collect();
        unused.sort();
        let used = table.len() - unused.len();
        s.push_str(&format!("commands of the emulator's table exercised: {used} of {}", table.len()));
        if !unused.is_empty() {
            s.push_str(&format!(" (not sent: {})", unused.join(", ")));
        }
        s.push('\n');
        let per_script: Vec<String> = limitlab_engine::limiter::Variant::ALL
            .iter()
            .map(|v| format!("{} {}", v.name(), self.by_name.get(&format!("script:{}", v.name())).unwrap_or(&0)))
            .collect();
        s.push_str(&format!("shipped-script calls: {}\n", per_script.join(", ")));
        if self.duplicates > 0 {
            s.push_str(&format!("mismatches like one already shown (not repeated): {}\n", self.duplicates));
        }
        if self.keys_removed > 0 {
            s.push_str(&format!("keys removed from the server: {}\n", self.keys_removed));
        }
        for m in &self.mismatches {
            s.push('\n');
            s.push_str(&m.render(self.seed));
        }
        s
    }

    /// `Ok` without mismatches, else [`Error::Mismatch`].
    pub fn into_result(self) -> Result<()> {
        if self.mismatches.is_empty() {
            return Ok(());
        }
        let m = &self.mismatches[0];
        Err(Error::Mismatch(format!(
            "{} of {} verify cases (seed {}); first: `{}` gave {} on the emulator and {} on Redis",
            self.mismatches.len(),
            self.cases,
            self.seed,
            m.commands.last().map(|c| c.line()).unwrap_or_default(),
            text::show(&m.emulator),
            text::show(&m.redis)
        )))
    }
}

/// Case `i` of a run seeded with `seed`: each case has its own stream, so any one can be rebuilt.
pub fn case_of(seed: u64, i: u64, private: bool) -> Case {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(i);
    gen::case(&mut rng, private)
}

/// A reply as a RESP2 client sees it, with the order-free replies sorted (see the module docs).
pub fn normalise(name: &str, r: Reply) -> Reply {
    fn nil_arrays(r: Reply) -> Reply {
        match r {
            Reply::NilArray => Reply::Nil,
            Reply::Array(v) => Reply::Array(v.into_iter().map(nil_arrays).collect()),
            other => other,
        }
    }
    fn sort(v: &mut [Reply]) {
        v.sort_by(|a, b| match (a, b) {
            (Reply::Bulk(x), Reply::Bulk(y)) => x.cmp(y),
            _ => std::cmp::Ordering::Equal,
        });
    }
    let mut r = nil_arrays(r.into_resp2());
    match (name, &mut r) {
        ("keys" | "smembers", Reply::Array(v)) => sort(v),
        ("scan", Reply::Array(v)) => {
            if let Some(Reply::Array(keys)) = v.get_mut(1) {
                sort(keys);
            }
        }
        _ => {}
    }
    r
}

/// Runs one case on a fresh emulator and on the server under `prefix`. Returns the first
/// mismatching command with both replies, or `None`. `names` counts what was sent.
fn run_case(
    cmds: &[Command],
    real: &mut dyn Backend,
    prefix: &str,
    opts: &Options,
    clock: Millis,
    mut names: Option<&mut BTreeMap<String, u64>>,
) -> Result<Option<(usize, Reply, Reply)>> {
    if opts.private {
        real.command(&[b"FLUSHALL"])?;
        real.command(&[b"SCRIPT", b"FLUSH"])?;
        real.command(&[b"FUNCTION", b"FLUSH"])?;
    }
    let mut emu = Emulator::with_clock(VirtualClock::starting_at(clock));
    // The names of the commands queued since MULTI, to normalise EXEC's replies one by one.
    let mut queued: Vec<String> = Vec::new();
    let mut found = None;
    for (i, c) in cmds.iter().enumerate() {
        let args = c.materialise(prefix);
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let name = c.name();
        let (e, r) = (emu.execute(&refs), real.command(&refs)?);
        let (e, r) = if name == "exec" {
            (normalise_exec(&queued, e), normalise_exec(&queued, r))
        } else {
            (normalise(&name, e), normalise(&name, r))
        };
        match (name.as_str(), &e) {
            ("multi", Reply::Status(_)) | ("exec" | "discard", _) => queued.clear(),
            (_, Reply::Status(s)) if s == "QUEUED" => queued.push(name.clone()),
            _ => {}
        }
        if let Some(n) = names.as_deref_mut() {
            *n.entry(script_name(c).unwrap_or_else(|| name.clone())).or_default() += 1;
        }
        if e != r {
            found = Some((i, e, r));
            break;
        }
    }
    reset_connection(cmds, real, opts)?;
    Ok(found)
}

/// EXEC's array normalised element by element, each as the reply of the command queued there.
fn normalise_exec(queued: &[String], r: Reply) -> Reply {
    match r {
        Reply::Array(v) if v.len() == queued.len() => {
            Reply::Array(v.into_iter().zip(queued).map(|(x, name)| normalise(name, x)).collect())
        }
        other => normalise("exec", other),
    }
}

/// A case may end inside a transaction, with WATCHes, or in another database: the server's
/// connection, which the next case shares, goes back to a clean state (the emulator is new anyway).
fn reset_connection(cmds: &[Command], real: &mut dyn Backend, opts: &Options) -> Result<()> {
    let used = |names: &[&str]| cmds.iter().any(|c| names.contains(&c.name().as_str()));
    if used(&["multi"]) {
        real.command(&[b"DISCARD"])?;
    }
    if used(&["watch"]) {
        real.command(&[b"UNWATCH"])?;
    }
    // A connection's name and eviction flag stay with it.
    if used(&["client"]) {
        real.command(&[b"CLIENT", b"SETNAME", b""])?;
        // (Shared servers never get NO-EVICT: it is a server setting, `@dangerous` to ACLs.)
        if opts.private {
            real.command(&[b"CLIENT", b"NO-EVICT", b"off"])?;
        }
    }
    // Only private servers get SELECT with an index that exists.
    if opts.private && used(&["select"]) {
        real.command(&[b"SELECT", b"0"])?;
    }
    Ok(())
}

/// `script:<variant>` when `c` runs (or loads) a shipped script.
fn script_name(c: &Command) -> Option<String> {
    let name = c.name();
    let body = match (name.as_str(), c.args.get(1), c.args.get(2)) {
        ("eval" | "eval_ro", Some(Arg::Lit(b)), _) => b.clone(),
        ("evalsha" | "evalsha_ro", Some(Arg::Lit(sha)), _) => {
            let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
            return limitlab_engine::limiter::Variant::ALL
                .iter()
                .find(|v| limitlab_engine::backend::Script::new(v.script()).sha == sha)
                .map(|v| format!("script:{}", v.name()));
        }
        _ => return None,
    };
    limitlab_engine::limiter::Variant::ALL
        .iter()
        .find(|v| v.script().as_bytes() == body.as_slice())
        .map(|v| format!("script:{}", v.name()))
}

/// What makes two mismatches look alike: the command, and both replies without their digits.
fn signature(c: &Command, e: &Reply, r: &Reply) -> String {
    let strip =
        |s: String| -> String { s.chars().filter(|c| !c.is_ascii_digit() && !c.is_whitespace()).take(60).collect() };
    format!("{}|{}|{}", c.name(), strip(text::show(e)), strip(text::show(r)))
}

/// The server's clock (TIME), for the emulators' clocks.
fn server_time(real: &mut dyn Backend) -> Result<Millis> {
    match real.command(&[b"TIME"])? {
        Reply::Array(v) if v.len() == 2 => {
            let num = |r: &Reply| match r {
                Reply::Bulk(b) => std::str::from_utf8(b).ok().and_then(|s| s.parse::<i64>().ok()),
                _ => None,
            };
            match (num(&v[0]), num(&v[1])) {
                (Some(s), Some(us)) => Ok(Millis(s * 1000 + us / 1000)),
                _ => Err(Error::Redis(format!("TIME replied {v:?}"))),
            }
        }
        other => Err(Error::Redis(format!("TIME replied {other:?}"))),
    }
}

/// [`verify_on`] a real server, which must be a standalone one (a case's keys are in any slots).
pub fn verify(real: &mut RealRedis, opts: &Options, progress: impl FnMut(u64)) -> Result<Report> {
    if real.is_cluster() {
        return Err(Error::Invalid {
            context: "verify".into(),
            field: "--redis".into(),
            reason: format!("{} is a cluster node; verify needs a standalone server", real.url()),
        });
    }
    real.require_writable("verify")?;
    verify_on(real, opts, progress)
}

/// Runs `opts.cases` random cases on the emulator and on `real`, shrinking every mismatch (up to
/// `opts.max_mismatches`). `progress` is called after every case with the number done.
pub fn verify_on(real: &mut dyn Backend, opts: &Options, mut progress: impl FnMut(u64)) -> Result<Report> {
    let watch = Stopwatch::start();
    let start = server_time(real)?;
    let base = real.key_prefix().to_string();
    let mut report = Report {
        backend: real.describe(),
        seed: opts.seed,
        cases: 0,
        commands: 0,
        by_name: BTreeMap::new(),
        mismatches: Vec::new(),
        duplicates: 0,
        secs: 0.0,
        keys_removed: 0,
    };
    let mut shrink_no = 0u64;
    let mut seen = std::collections::HashSet::new();
    for i in 0..opts.cases {
        let case = case_of(opts.seed, i, opts.private);
        let clock = Millis(start.0 + (watch.elapsed_secs() * 1000.0) as i64);
        let prefix = format!("{base}{i}:");
        report.cases += 1;
        report.commands += case.commands.len() as u64;
        let found = match run_case(&case.commands, real, &prefix, opts, clock, Some(&mut report.by_name)) {
            Ok(f) => f,
            Err(e) => return Err(stopped(real, &base, i, opts.cases, report.mismatches.len(), e)),
        };
        if let Some((at, e, r)) = &found {
            let at = *at;
            if !seen.insert(signature(&case.commands[at], e, r)) {
                report.duplicates += 1;
                progress(i + 1);
                continue;
            }
            let original_len = case.commands.len();
            let mut cmds = case.commands;
            cmds.truncate(at + 1);
            let mut attempt = |c: &[Command]| -> Result<Option<usize>> {
                shrink_no += 1;
                let p = format!("{base}s{shrink_no}:");
                Ok(run_case(c, real, &p, opts, clock, None)?.map(|(i, _, _)| i))
            };
            let (cmds, runs) = shrink::shrink(cmds, opts.private, opts.shrink_budget, &mut attempt)?;
            shrink_no += 1;
            let p = format!("{base}s{shrink_no}:");
            let last = run_case(&cmds, real, &p, opts, clock, None)?;
            let (reproduced, emulator, redis) = match last {
                Some((_, e, r)) => (true, e, r),
                None => match found {
                    Some((_, e, r)) => (false, e, r),
                    None => (false, Reply::Nil, Reply::Nil),
                },
            };
            report.mismatches.push(Mismatch {
                case: i,
                original_len,
                commands: cmds,
                emulator,
                redis,
                reproduced,
                shrink_runs: runs,
            });
            if report.mismatches.len() >= opts.max_mismatches {
                break;
            }
        }
        // On a shared server, keep the run's footprint small.
        if !opts.private && i % 250 == 249 {
            report.keys_removed += real.cleanup()?;
        }
        progress(i + 1);
    }
    report.keys_removed += real.cleanup()?;
    report.secs = watch.elapsed_secs();
    Ok(report)
}

/// The error of a run that stopped in case `i` (0-based): how far it got, and what became of
/// its keys (removed on a fresh connection, or the prefix left behind named).
fn stopped(real: &mut dyn Backend, base: &str, i: u64, cases: u64, mismatches: usize, e: Error) -> Error {
    let keys = match real.cleanup() {
        Ok(n) => format!("{n} keys of the run were removed"),
        Err(c) => format!("its keys under `{base}` could not be removed ({c})"),
    };
    let so_far = match mismatches {
        0 => "every reply identical until then".to_string(),
        n => format!("{n} mismatch(es) found until then"),
    };
    let why = match &e {
        Error::Connection(m) | Error::Redis(m) => m.clone(),
        other => other.to_string(),
    };
    let msg = format!("verify stopped in case {} of {cases} ({i} cases done, {so_far}): {why}; {keys}", i + 1);
    match e {
        Error::Connection(_) => Error::Connection(msg),
        _ => Error::Redis(msg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_free_replies_are_sorted() {
        let keys = Reply::Array(vec![Reply::bulk("b"), Reply::bulk("a")]);
        assert_eq!(normalise("keys", keys.clone()), Reply::Array(vec![Reply::bulk("a"), Reply::bulk("b")]));
        assert_eq!(normalise("lrange", keys.clone()), keys);
        assert_eq!(normalise("get", Reply::NilArray), Reply::Nil);
        assert_eq!(normalise("zscore", Reply::Double(1.5)), Reply::bulk("1.5"));
    }

    #[test]
    fn commands_render_without_the_prefix() {
        let c = Command {
            args: vec![Arg::Lit(b"SET".to_vec()), Arg::Key("k1".into()), Arg::Lit(b"a b".to_vec())],
            fx: vec![],
        };
        assert_eq!(c.materialise("ll:x:1:")[1], b"ll:x:1:k1");
        assert_eq!(c.line(), "SET k1 \"a b\"");
    }

    #[test]
    fn shipped_script_calls_are_named() {
        let body = limitlab_engine::limiter::Variant::GCRA.script();
        let c = Command {
            args: vec![Arg::Lit(b"EVAL".to_vec()), Arg::Lit(body.as_bytes().to_vec()), Arg::Lit(b"0".to_vec())],
            fx: vec![],
        };
        assert_eq!(script_name(&c).as_deref(), Some("script:gcra"));
    }
}
