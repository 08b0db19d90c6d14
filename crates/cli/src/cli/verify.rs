//! `limitlab verify [--redis URL] [--cases N] [--seed S]`: differential fuzzing of the emulator
//! against a real Redis (see [`crate::verify`]); `verify --script SPEC [--cluster]`: a limiter's
//! decisions on the emulator and on a real Redis or Redis Cluster, call for call
//! ([`crate::verify::against_redis::check_spec`]); also the `--redis URL` option `run`, `compare` and
//! `cli` share ([`RedisArgs`]).
use std::io::{IsTerminal, Write};
use std::time::Duration;

use super::emit;
use crate::verify::{self, Options};
use limitlab_emulator::{Error, Result};
use limitlab_engine::backend::private::{PrivateCluster, PrivateRedis};
use limitlab_engine::backend::real::{RealOptions, RealRedis, DEFAULT_TIMEOUT};
use limitlab_engine::backend::secret::RedisUrl;
use limitlab_engine::backend::Backend as _;

/// `--redis URL [--redis-timeout-ms MS]`: a real server to run on as well as the emulator. Its
/// `Debug` shows the URL without its password (through [`RedisUrl`]'s).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct RedisArgs {
    /// A real Redis: redis://HOST:PORT[/DB] (user:password@ allowed); a cluster node is detected
    /// and the cluster used. run, compare and verify write only under a fresh `ll:<id>:` key prefix
    /// and remove those keys afterwards; cli sends its lines as written.
    #[arg(long, value_name = "URL")]
    pub redis: Option<RedisUrl>,
    /// How long to wait for the server (connecting, or one reply) before giving up, in ms.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_TIMEOUT.as_millis() as u64)]
    pub redis_timeout_ms: u64,
    /// Run on the server even a script that writes keys outside the run's `ll:<id>:` prefix (key
    /// names it builds from ARGV instead of taking them in KEYS). Without it such a run is refused
    /// before anything is sent, naming the keys, the spec's call and the request, because those
    /// keys would land among other clients' keys. With it, only for a server that is yours to write
    /// on: the keys that did not exist before the run are removed after it; any that did are listed
    /// and left as the run left them. Never on a Redis Cluster, which routes a call by its KEYS and
    /// refuses a script's other keys. (`verify` without --redis allows them on its private server.)
    #[arg(long)]
    pub allow_outside_keys: bool,
    /// For a rediss:// URL: trust the CA certificates in this PEM file (default: the system's).
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<std::path::PathBuf>,
}

/// A validated `--redis`: where, and how patiently. Its `Debug` shows the URL without its password
/// (through [`RedisUrl`]'s).
#[derive(Clone, Debug)]
pub struct RedisTarget {
    /// Shown redacted (see [`limitlab_engine::backend::secret`]).
    pub url: RedisUrl,
    pub options: RealOptions,
    /// `--allow-outside-keys`.
    pub allow_outside_keys: bool,
    /// `--tls-ca`, read.
    pub tls: Option<limitlab_engine::backend::real::TlsFiles>,
}

impl RedisTarget {
    /// Opens the connection (and finds out whether it is a cluster).
    pub fn connect(&self) -> Result<RealRedis> {
        let mut r = RealRedis::connect_with(self.url.expose(), self.options, self.tls.as_ref())?;
        r.set_allow_outside_keys(self.allow_outside_keys);
        Ok(r)
    }
}

impl RedisArgs {
    /// The target, checked without connecting: `None` without `--redis`.
    pub fn target(&self) -> Result<Option<RedisTarget>> {
        let options = self.options()?;
        let Some(url) = &self.redis else { return Ok(None) };
        let tls = match &self.tls_ca {
            Some(p) => Some(limitlab_engine::backend::real::TlsFiles::read(p)?),
            None => None,
        };
        limitlab_engine::backend::real::connection_info(url.expose(), tls.as_ref())?;
        Ok(Some(RedisTarget { url: url.clone(), options, allow_outside_keys: self.allow_outside_keys, tls }))
    }

    fn options(&self) -> Result<RealOptions> {
        if self.redis_timeout_ms == 0 || self.redis_timeout_ms > 3_600_000 {
            return Err(Error::Invalid {
                context: "--redis-timeout-ms".into(),
                field: "MS".into(),
                reason: format!("must be from 1 to 3600000, got {}", self.redis_timeout_ms),
            });
        }
        Ok(RealOptions { timeout: Duration::from_millis(self.redis_timeout_ms) })
    }
}

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub redis: RedisArgs,
    /// How many random cases to run.
    #[arg(long, default_value_t = 2000)]
    pub cases: u64,
    /// The seed of the cases (each case has its own stream of it).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Stop after this many mismatches (each is shrunk first).
    #[arg(long, default_value_t = 3)]
    pub max_mismatches: usize,
    /// Instead of random cases, check this limiter (repeatable): a spec file (my_limiter.toml) or a
    /// built-in name. The traffic patterns of `limitlab check`, sized from its policy, run on the
    /// emulator and on the server, and every decision must be identical. Before anything is sent,
    /// the arrivals run on an emulator under the server run's key prefix: a script that writes keys
    /// outside it, or (on a cluster) a call whose keys span hash slots, is reported with the keys
    /// (and slots), the spec's call and the request.
    #[arg(long = "script", value_name = "NAME|SPEC")]
    pub scripts: Vec<String>,
    /// With --script: run on a Redis Cluster, a private one of three masters unless --redis names
    /// a cluster node.
    #[arg(long)]
    pub cluster: bool,
}

/// A validated `verify`.
#[derive(Debug)]
pub struct Plan {
    /// `None`: start a private redis-server.
    pub target: Option<RedisTarget>,
    pub timeout: RealOptions,
    pub options: Options,
    /// `--script`: limiters to check instead of random cases.
    pub scripts: Vec<limitlab_engine::spec::SharedSpec>,
    pub cluster: bool,
}

impl Plan {
    pub fn new(a: Args) -> Result<Plan> {
        let timeout = a.redis.options()?;
        if a.max_mismatches == 0 {
            return Err(Error::Invalid {
                context: "verify".into(),
                field: "--max-mismatches".into(),
                reason: "must be at least 1".into(),
            });
        }
        if a.cluster && a.scripts.is_empty() {
            return Err(Error::Invalid {
                context: "verify".into(),
                field: "--cluster".into(),
                reason:
                    "checks the limiters given with --script on a cluster (the random cases need one standalone server)"
                        .into(),
            });
        }
        Ok(Plan {
            target: a.redis.target()?,
            timeout,
            options: Options { cases: a.cases, seed: a.seed, max_mismatches: a.max_mismatches, ..Options::default() },
            scripts: a.scripts.iter().map(|n| limitlab_engine::spec::resolve(n)).collect::<Result<_>>()?,
            cluster: a.cluster,
        })
    }
}

/// `verify --script`: each limiter on the emulator and on the server (or cluster), call for call.
fn run_scripts(plan: &Plan, out: &mut dyn Write) -> Result<()> {
    let (mut server, mut cluster) = (None, None);
    let (mut real, backend) = match &plan.target {
        Some(t) => {
            let r = t.connect()?;
            if plan.cluster && !r.is_cluster() {
                return Err(Error::Invalid {
                    context: "verify".into(),
                    field: "--cluster".into(),
                    reason: format!("{} is not a cluster node (leave out --redis for a private cluster)", t.url),
                });
            }
            let d = limitlab_engine::backend::Backend::describe(&r);
            (r, d)
        }
        None if plan.cluster => {
            let c = cluster.insert(PrivateCluster::start()?);
            let mut r = RealRedis::connect(&c.url(), plan.timeout)?;
            // The cluster is ours: a script's keys outside the prefix may be written (and removed).
            r.set_allow_outside_keys(true);
            let ports: Vec<String> = c.ports().iter().map(u16::to_string).collect();
            (
                r,
                format!(
                    "a private Redis Cluster of 3 masters on 127.0.0.1 ports {} (Redis {})",
                    ports.join(", "),
                    c.version()
                ),
            )
        }
        None => {
            let s = server.insert(PrivateRedis::start()?);
            let mut r = RealRedis::connect(&s.url(), plan.timeout)?;
            // Its keys outside the prefix are removed: only once this connection is known to reach it.
            s.confirm(|a| r.command(a))?;
            r.set_allow_outside_keys(true);
            (r, format!("a private redis-server on 127.0.0.1:{} (Redis {})", s.port(), s.version()))
        }
    };
    let mut text = String::new();
    // A spec that differs, or that cannot run (refused before the server, an error on it), does
    // not stop the others: each is reported, and the first problem decides the exit status.
    let (mut failures, mut first_error) = (Vec::new(), None);
    for spec in &plan.scripts {
        let checked =
            limitlab_engine::limiter::limiter_with(std::sync::Arc::clone(spec), None, None, None).and_then(|l| {
                crate::verify::against_redis::check_spec(
                    &l,
                    plan.options.seed,
                    &mut real,
                    limitlab_engine::sim::Progress::Auto,
                )
            });
        let mut check = match checked {
            Ok(c) => c,
            Err(e) if plan.scripts.len() == 1 => return Err(e),
            Err(e) => {
                text.push_str(&format!("verify {} ({}): not checked:\n{e}\n\n", spec.name, spec.origin.display()));
                first_error.get_or_insert(e);
                continue;
            }
        };
        check.backend = backend.clone();
        let calls: usize = check.checks.iter().map(|c| c.calls).sum();
        text.push_str(&format!(
            "verify {} ({}): {} patterns, {calls} requests on the emulator and on {backend}: {}\n",
            spec.name,
            spec.origin.display(),
            check.checks.len(),
            check.headline()
        ));
        text.push_str(&check.render(crate::report::Format::Text));
        text.push('\n');
        match check.into_result() {
            Ok(()) => {}
            Err(Error::Mismatch(m)) => failures.push(m),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    emit(out, &text)?;
    drop((server, cluster));
    if !failures.is_empty() {
        return Err(Error::Mismatch(failures.join("; ")));
    }
    match first_error {
        None => Ok(()),
        // Said in full above; the status is the first error's.
        Some(e) => Err(match e {
            Error::Invalid { .. } => Error::Invalid {
                context: "verify".into(),
                field: "--script".into(),
                reason: "some limiters could not be checked (see above)".into(),
            },
            other => other,
        }),
    }
}

/// Runs the cases against `--redis`, or against a private redis-server started for the purpose;
/// with `--script`, checks those limiters instead (`run_scripts`).
pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    if !plan.scripts.is_empty() {
        return run_scripts(&plan, out);
    }
    let mut options = plan.options;
    let mut server;
    let (mut real, backend) = match &plan.target {
        Some(t) => {
            let r = t.connect()?;
            let d = limitlab_engine::backend::Backend::describe(&r);
            (r, d)
        }
        None => {
            server = PrivateRedis::start()?;
            options.private = true;
            let mut r = RealRedis::connect(&server.url(), plan.timeout)?;
            // Every case starts with FLUSHALL: only once this connection is known to reach our child.
            server.confirm(|a| r.command(a))?;
            (r, format!("a private redis-server on 127.0.0.1:{} (Redis {})", server.port(), server.version()))
        }
    };
    let bar = (options.cases >= 500 && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(options.cases);
        if let Ok(style) = indicatif::ProgressStyle::with_template("verify {bar:40} {pos}/{len} ({eta})") {
            b.set_style(style);
        }
        b
    });
    let mut report = verify::verify(&mut real, &options, |n| {
        if let Some(b) = &bar {
            if n % 25 == 0 {
                b.set_position(n);
            }
        }
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    report.backend = backend;
    emit(out, &report.render())?;
    report.into_result()
}
