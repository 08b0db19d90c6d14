//! `limitlab audit --redis URL | --emulator --scenario FILE [--match PATTERN] [--rate OPS_PER_S]
//! [--sample N] [--count N] [--json|--markdown] [--strict] [--tls-ca FILE]`: the seed article's
//! thirty-second audit, read-only ([`crate::audit`]).
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use super::{emit, FormatArgs};
use crate::audit::scan::{Node, RealNode};
use crate::audit::{self, Options, Progress, Target};
use crate::report::Format;
use limitlab_emulator::{Error, Result};
use limitlab_engine::backend::real::{connection_info, redact_url, TlsFiles, DEFAULT_TIMEOUT};

#[derive(Clone, clap::Args)]
pub struct Args {
    /// The server to audit: `redis://[USER:PASSWORD@]HOST:PORT[/DB]`, or `rediss://` for TLS. A
    /// cluster node is detected and every master scanned. Only read commands are sent.
    #[arg(long, value_name = "URL", required_unless_present = "emulator", conflicts_with = "emulator")]
    pub redis: Option<String>,
    /// For a rediss:// URL: trust the CA certificates in this PEM file (default: the system's).
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// How long to wait for the server (connecting, or one pipeline's replies), in ms.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_TIMEOUT.as_millis() as u64)]
    pub redis_timeout_ms: u64,
    /// Audit the emulator's keyspace at the end of a scenario (--scenario) instead of a server.
    #[arg(long, requires = "scenario")]
    pub emulator: bool,
    /// With --emulator: the scenario file whose end state is audited, once per script it runs
    /// (or per --script).
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// With --emulator: the traffic seed instead of the scenario's.
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub scripts: super::ScriptsArg,
    /// Keys to audit: SCAN's MATCH pattern (the seed article's audit: 'rate*').
    #[arg(long = "match", value_name = "PATTERN", default_value = "*")]
    pub pattern: String,
    /// At most this many commands per second (a SCAN counts one). Lower it on a busy server.
    #[arg(long, value_name = "OPS_PER_S", default_value_t = audit::DEFAULT_RATE)]
    pub rate: u64,
    /// Keys per pattern whose MEMORY USAGE, encoding and idle time are read (the others: TYPE and
    /// PTTL only); memory is extrapolated from them with a 95% error bound, and the report says
    /// "sampled" wherever a figure comes from fewer keys than the pattern has.
    #[arg(long, value_name = "N", default_value_t = audit::DEFAULT_SAMPLE)]
    pub sample: u64,
    /// Also read the sampled keys' sizes (ZCARD, HLEN, SCARD, LLEN, STRLEN): in Redis 7.0 these
    /// count as an access and reset each key's LRU clock (idle time), which the other commands
    /// of the audit leave alone; the report then says how many keys it touched.
    #[arg(long)]
    pub sizes: bool,
    /// SCAN's COUNT.
    #[arg(long, value_name = "N", default_value_t = audit::DEFAULT_COUNT)]
    pub count: u64,
    #[command(flatten)]
    pub format: FormatArgs,
    /// Exit with status 1 when there is a warning (keys without TTL, TTLs far too long, sliding
    /// logs, keys that would fail with CROSSSLOT on a cluster).
    #[arg(long)]
    pub strict: bool,
}

impl std::fmt::Debug for Args {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Args")
            .field("redis", &self.redis.as_deref().map(redact_url))
            .field("tls_ca", &self.tls_ca)
            .field("emulator", &self.emulator)
            .field("scenario", &self.scenario)
            .field("pattern", &self.pattern)
            .field("rate", &self.rate)
            .field("sample", &self.sample)
            .finish_non_exhaustive()
    }
}

/// Where the audit reads.
pub enum Source {
    Redis { url: String, tls: Option<TlsFiles>, timeout: Duration },
    Emulator { scenario: Box<limitlab_engine::sim::Scenario>, seed: u64 },
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Redis { url, .. } => write!(f, "Redis({})", redact_url(url)),
            Source::Emulator { scenario, seed } => write!(f, "Emulator({}, seed {seed})", scenario.origin.display()),
        }
    }
}

/// A validated `audit`.
#[derive(Debug)]
pub struct Plan {
    pub source: Source,
    pub options: Options,
    pub format: Format,
    pub strict: bool,
}

fn invalid(context: &str, field: &str, reason: String) -> Error {
    Error::Invalid { context: context.into(), field: field.into(), reason }
}

impl Plan {
    pub fn new(a: Args) -> Result<Plan> {
        if a.rate == 0 {
            return Err(invalid("--rate", "OPS_PER_S", "must be at least 1".into()));
        }
        if a.sample == 0 {
            return Err(invalid("--sample", "N", "must be at least 1".into()));
        }
        if !(1..=1_000_000).contains(&a.count) {
            return Err(invalid("--count", "N", format!("must be from 1 to 1000000, got {}", a.count)));
        }
        if a.redis_timeout_ms == 0 || a.redis_timeout_ms > 3_600_000 {
            return Err(invalid(
                "--redis-timeout-ms",
                "MS",
                format!("must be from 1 to 3600000, got {}", a.redis_timeout_ms),
            ));
        }
        let source = match (&a.redis, &a.scenario) {
            (Some(url), _) => {
                let tls = a.tls_ca.as_deref().map(TlsFiles::read).transpose()?;
                connection_info(url, tls.as_ref())?;
                Source::Redis { url: url.clone(), tls, timeout: Duration::from_millis(a.redis_timeout_ms) }
            }
            (None, Some(file)) => {
                let mut scenario = limitlab_engine::sim::Scenario::from_file(file)?;
                a.scripts.apply(&mut scenario)?;
                let seed = a.seed.unwrap_or(scenario.seed);
                Source::Emulator { scenario: Box::new(scenario), seed }
            }
            (None, None) => {
                return Err(invalid("audit", "--redis", "give --redis URL, or --emulator --scenario FILE".into()))
            }
        };
        Ok(Plan {
            source,
            options: Options { pattern: a.pattern, rate: a.rate, sample: a.sample, count: a.count, sizes: a.sizes },
            format: a.format.format(),
            strict: a.strict,
        })
    }
}

/// An indicatif bar on stderr, for keys against DBSIZE.
struct Bar(Option<indicatif::ProgressBar>);

impl Progress for Bar {
    fn start(&mut self, total: u64) {
        if let Some(b) = &self.0 {
            b.set_length(total.max(1));
        }
    }
    fn advance(&mut self, done: u64, scanned: u64) {
        if let Some(b) = &self.0 {
            b.set_position(scanned);
            b.set_message(format!("{done} keys read"));
        }
    }
    fn finish(&mut self) {
        if let Some(b) = self.0.take() {
            b.finish_and_clear();
        }
    }
}

fn bar(format: Format, label: &str) -> Bar {
    if !crate::progress::wanted(format == Format::Json) {
        return Bar(None);
    }
    let b = indicatif::ProgressBar::new(1);
    b.set_style(
        indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} keys scanned, {msg}, ETA {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    b.set_prefix(label.to_string());
    Bar(Some(b))
}

/// Opens every master of the server at `url` (the server itself when standalone).
pub fn real_target(url: &str, tls: Option<&TlsFiles>, timeout: Duration) -> Result<Target<'static>> {
    let info = connection_info(url, tls)?;
    let shown = redact_url(url);
    let mut probe = RealNode::open(&info, tls, timeout)?;
    let r = probe.pipeline(&[vec![b"INFO".to_vec(), b"cluster".to_vec()]])?;
    let cluster = matches!(r.first(), Some(limitlab_emulator::Reply::Bulk(b)) if String::from_utf8_lossy(b).contains("cluster_enabled:1"));
    let mut nodes: Vec<Box<dyn Node>> = Vec::new();
    if cluster {
        let masters = limitlab_engine::backend::real::masters_of(&info, timeout).map_err(|e| {
            Error::Connection(format!("{shown}: CLUSTER SLOTS: {}", limitlab_engine::backend::real::redact_error(&e)))
        })?;
        for (h, p) in masters {
            let i = info.clone().set_addr(limitlab_engine::backend::real::same_kind(info.addr(), h, p));
            nodes.push(Box::new(RealNode::open(&i, tls, timeout)?));
        }
    } else {
        nodes.push(Box::new(probe));
    }
    let tls_owned = tls.cloned();
    let connect = move |addr: &str| -> Result<Box<dyn Node>> {
        let (h, p) = addr
            .rsplit_once(':')
            .and_then(|(h, p)| p.parse::<u16>().ok().map(|p| (h.to_string(), p)))
            .ok_or_else(|| Error::Redis(format!("a redirect to `{addr}`, which is not host:port")))?;
        let i = info.clone().set_addr(limitlab_engine::backend::real::same_kind(info.addr(), h, p));
        Ok(Box::new(RealNode::open(&i, tls_owned.as_ref(), timeout)?) as Box<dyn Node>)
    };
    Ok(Target { name: shown, cluster, nodes, connect: Box::new(connect) })
}

pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    let mut warnings = 0;
    match &plan.source {
        Source::Redis { url, tls, timeout } => {
            let mut target = real_target(url, tls.as_ref(), *timeout)?;
            let mut progress = bar(plan.format, "audit");
            let report = audit::audit(&mut target, &plan.options, &mut progress)?;
            warnings += report.warnings();
            emit(out, &report.render(plan.format))?;
        }
        Source::Emulator { scenario, seed } => {
            let arrivals = scenario.arrivals(*seed)?;
            let mut reports = Vec::new();
            for spec in &scenario.scripts {
                let (_, _, mut backend) = limitlab_engine::sim::standard::run_on_emulator(
                    scenario,
                    spec,
                    &arrivals,
                    limitlab_engine::sim::Progress::Off,
                )?;
                let mut progress = bar(plan.format, &spec.name);
                let mut report = audit::audit_emulator(&mut backend.emu, &plan.options, &mut progress)?;
                report.target =
                    format!("the emulator after {} with {} (seed {seed})", scenario.origin.display(), spec.name);
                warnings += report.warnings();
                reports.push(report);
            }
            let text = match plan.format {
                Format::Json => crate::report::to_json(&reports),
                f => reports.iter().map(|r| r.render(f)).collect::<Vec<_>>().join("\n"),
            };
            emit(out, &text)?;
        }
    }
    if plan.strict && warnings > 0 {
        return Err(Error::Failed(format!("{warnings} warnings (--strict)")));
    }
    Ok(())
}
