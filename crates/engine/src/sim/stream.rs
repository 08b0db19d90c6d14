//! Streaming runs: requests come chunk by chunk from a [`Feed`] and each decision is folded into
//! the metrics as it is made ([`MetricsAcc`]), so a run holds per-subject state only, never the
//! list of arrivals or of decisions. Ten million requests over a million users fit in memory this
//! way; [`super::run`] plus [`crate::metrics::measure`] would hold both lists (gigabytes).
//!
//! [`run_variants`] runs several scripts over the same arrivals. When every script is one of
//! limitlab's shipped ones (each call touches only its own subject's keys), the scripts run one
//! after another, each split by subject across the threads ([`Shard`]): the calling thread
//! produces the feed (traffic, interning, the exact log's verdicts) and every thread, with its own
//! emulator, reads the same chunks ([`super::fanout`]) and runs its own subjects' requests; the
//! shards' metrics are then merged into exactly what one thread computes, so the report does not
//! depend on the number of threads, and only one script's keys are alive at a time. Other scripts
//! (a user's may keep state across subjects) run whole, one thread each, sharing the feed.
use std::cell::RefCell;
use std::io::IsTerminal;
use std::sync::Arc;

use super::acc::{Judged, MetricsAcc};
use super::decisions_file::{DecisionWriter, DecisionsOut};
use super::feed::{Chunk, Feed, PhaseNames, Shard, Verdicts};
use super::header_summary::{HeaderAcc, HeaderSummary};
use super::{Progress, Scenario, PROGRESS_MIN};
use crate::backend::emulated::EmulatedBackend;
use crate::backend::Backend;
use crate::limiter::{Limiter, Variant};
use crate::metrics::Metrics;
use crate::spec::SharedSpec;
use crate::{Error, Result};
use limitlab_emulator::clock::Stopwatch;

/// What a streaming run produced.
#[derive(Clone, Debug)]
pub struct StreamRun {
    /// The limiter's name (its spec's).
    pub name: String,
    /// The shipped script, when it is one of limitlab's.
    pub variant: Option<Variant>,
    pub metrics: Metrics,
    /// The subjects, in order of first appearance (shared by the runs that read the same feed).
    pub subjects: Arc<Vec<String>>,
    /// The phase labels, in order of first appearance.
    pub phases: Vec<String>,
    /// The HTTP rate-limit headers the decisions imply.
    pub headers: HeaderSummary,
    /// Wall-clock seconds of the whole loop (script calls and metrics).
    pub elapsed_secs: f64,
    /// The threads that ran the script (more than one when the run was split by subject).
    pub threads: usize,
    /// Where the time went, for `run --stats`.
    pub timing: RunTiming,
}

/// Where a script's run spent its time (wall-clock and CPU figures: for `run --stats`, never in a
/// report).
#[derive(Clone, Debug, Default)]
pub struct RunTiming {
    /// The whole run of this script: feed, threads, merge.
    pub wall_secs: f64,
    /// CPU seconds of each thread that ran the script (its emulator's start and drop included).
    pub thread_cpu_secs: Vec<f64>,
    /// CPU seconds of the thread that produced the feed for the script's threads (0 when the
    /// script ran on that thread).
    pub feed_cpu_secs: f64,
    /// Wall seconds merging the threads' metrics and naming subjects and phases.
    pub merge_secs: f64,
}

/// What a streaming run does besides measuring.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Write every decision of every script here (`run --decisions`, see
    /// [`super::decisions_file`]).
    pub decisions: Option<DecisionsOut>,
}

/// A run's metrics before the subject and phase names are known, and its wall-clock seconds.
struct Folded {
    acc: MetricsAcc,
    headers: HeaderAcc,
    elapsed_secs: f64,
    /// The CPU seconds of the thread that folded it (0 when not measured).
    cpu_secs: f64,
}

/// A fold's error, with the position in the run of the step that failed (see `super::drive`).
type FoldError = (u64, Error);

impl Folded {
    fn named(self, limiter: &Limiter, subjects: &Arc<Vec<String>>, phases: &[String]) -> StreamRun {
        Folded::named_shards(vec![self], limiter, subjects, phases)
    }

    /// The run of the shards of one script (one `Folded` each, over disjoint subjects).
    fn named_shards(
        shards: Vec<Folded>,
        limiter: &Limiter,
        subjects: &Arc<Vec<String>>,
        phases: &[String],
    ) -> StreamRun {
        let watch = Stopwatch::start();
        let threads = shards.len();
        let elapsed_secs = shards.iter().map(|f| f.elapsed_secs).fold(0.0, f64::max);
        let thread_cpu_secs = shards.iter().map(|f| f.cpu_secs).collect();
        let (accs, headers): (Vec<MetricsAcc>, Vec<HeaderAcc>) = shards.into_iter().map(|f| (f.acc, f.headers)).unzip();
        let headers = headers.into_iter().reduce(HeaderAcc::merge).unwrap_or_else(|| HeaderAcc::new(limiter));
        let (metrics, headers) = (MetricsAcc::finish_shards(accs, subjects, phases), headers.finish());
        let timing = RunTiming { thread_cpu_secs, merge_secs: watch.elapsed_secs(), ..RunTiming::default() };
        StreamRun {
            name: limiter.name().to_string(),
            variant: limiter.variant(),
            metrics,
            subjects: Arc::clone(subjects),
            phases: phases.to_vec(),
            headers,
            elapsed_secs,
            threads,
            timing,
        }
    }
}

/// Runs `chunks` through `limiter`'s script on `backend` (the requests of `shard`'s subjects), as
/// [`super::run`] does, folding every decision into a [`MetricsAcc`] instead of keeping it, and
/// into `writer` when given. The chunks must carry the exact log's verdicts for this script
/// ([`Feed::judged`]).
fn fold<C: std::borrow::Borrow<Chunk>>(
    limiter: &Limiter,
    backend: &mut dyn Backend,
    chunks: impl Iterator<Item = C>,
    shard: Shard,
    bar: Option<&indicatif::ProgressBar>,
    writer: Option<DecisionWriter>,
) -> std::result::Result<Folded, FoldError> {
    let mut acc = MetricsAcc::sharded(limiter, shard);
    let mut headers = HeaderAcc::new(limiter);
    let weighted = limiter.takes_cost();
    let Some(mut w) = writer else {
        let elapsed_secs =
            super::drive(limiter, backend, chunks, shard, bar, false, |r, step, subject, request, _, prober| {
                headers.push(r, subject, request);
                judge(&mut acc, r, request, step.exact_admits(weighted), subject, shard.row(step), prober).map(|_| ())
            })?;
        return Ok(Folded { acc, headers, elapsed_secs, cpu_secs: 0.0 });
    };
    // The writer names phases; the chunks bring the labels as they first appear.
    let phases = RefCell::new(PhaseNames::default());
    let chunks = chunks.inspect(|c| phases.borrow_mut().learn(c.borrow()));
    let elapsed_secs =
        super::drive(limiter, backend, chunks, shard, bar, true, |r, step, subject, request, calls, prober| {
            headers.push(r, subject, request);
            let judged = judge(&mut acc, r, request, step.exact_admits(weighted), subject, shard.row(step), prober)?;
            w.write(r, step, subject, phases.borrow().name(step.phase), calls, judged)
        })?;
    w.finish().map_err(|e| (u64::MAX, e))?;
    Ok(Folded { acc, headers, elapsed_secs, cpu_secs: 0.0 })
}

/// Counts one decision into `acc`, its promises judged on the script's model or, without one, by
/// asking the script on the run's emulator ([`crate::limiter::honesty`]).
fn judge(
    acc: &mut MetricsAcc,
    r: &super::Record,
    request: u64,
    exact: bool,
    subject: &str,
    row: u32,
    prober: &mut super::Prober<'_>,
) -> Result<Judged> {
    if !prober.can_ask() {
        return acc.push_asking(r, request, exact, subject, row, None);
    }
    let mut ask = |at: i64, costs: &[u64]| prober.ask(subject, at, costs);
    acc.push_asking(r, request, exact, subject, row, Some(&mut ask))
}

/// Runs `feed` through `limiter`'s script on `backend` on this thread, streaming. `bar` shows
/// progress when given.
pub fn run_streaming(
    limiter: &Limiter,
    backend: &mut dyn Backend,
    mut feed: Feed,
    bar: Option<&indicatif::ProgressBar>,
) -> Result<StreamRun> {
    let folded = fold(limiter, backend, feed.by_ref(), Shard::ALL, bar, None);
    if let Some(e) = feed.take_error() {
        return Err(e);
    }
    let folded = folded.map_err(|(_, e)| e)?;
    let (subjects, phases) = feed.into_names();
    Ok(folded.named(limiter, &Arc::new(subjects), &phases))
}

/// Runs one script of `s` over `chunks` (the requests of `shard`'s subjects) on a fresh emulator
/// (built here: the emulator stays on the thread that uses it), writing its decisions as script
/// number `index` when `opts` asks.
fn fold_on_emulator<C: std::borrow::Borrow<Chunk>>(
    limiter: &Limiter,
    start_ms: i64,
    chunks: impl Iterator<Item = C>,
    shard: Shard,
    bar: Option<&indicatif::ProgressBar>,
    opts: &RunOptions,
    index: usize,
) -> std::result::Result<Folded, FoldError> {
    let cpu = thread_cpu_secs();
    let writer =
        opts.decisions.as_ref().map(|d| DecisionWriter::create(d, index, limiter)).transpose().map_err(|e| (0, e))?;
    let mut backend = EmulatedBackend::default();
    backend.set_time_ms(start_ms);
    let folded = fold(limiter, &mut backend, chunks, shard, bar, writer);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    drop(backend);
    let used = thread_cpu_since(cpu);
    folded.map(|f| Folded { cpu_secs: used, ..f })
}

/// Runs each of `scripts` over the scenario's arrivals for `seed`, streaming, on fresh emulators,
/// on `jobs` threads besides this one (0: the default, see below). Results come in the order of
/// `scripts` and are the same whatever `jobs` is.
///
/// When every script is a shipped one and the arrivals come in time order, the scripts run one
/// after another, each split by subject across `jobs` threads (default: the cores available; see
/// the module documentation). Otherwise they run in waves of `jobs` scripts, one thread each
/// (default: every script at once, up to twice the cores), each wave reading one feed.
pub fn run_variants(
    s: &Scenario,
    seed: u64,
    scripts: &[SharedSpec],
    jobs: usize,
    progress: Progress,
) -> Result<Vec<StreamRun>> {
    run_variants_with(s, seed, scripts, jobs, progress, &RunOptions::default())
}

/// [`run_variants`], doing what `opts` asks besides: with [`RunOptions::decisions`], every
/// decision goes to that file (each script's rows to a part of its own, joined in the order of
/// `scripts` once every script is done; nothing is left behind when the run fails).
pub fn run_variants_with(
    s: &Scenario,
    seed: u64,
    scripts: &[SharedSpec],
    jobs: usize,
    progress: Progress,
    opts: &RunOptions,
) -> Result<Vec<StreamRun>> {
    let runs = run_variants_inner(s, seed, scripts, jobs, progress, opts);
    if let Some(d) = &opts.decisions {
        match &runs {
            Ok(_) => d.assemble(scripts.len())?,
            Err(_) => d.discard(scripts.len()),
        }
    }
    runs
}

fn run_variants_inner(
    s: &Scenario,
    seed: u64,
    scripts: &[SharedSpec],
    jobs: usize,
    progress: Progress,
    opts: &RunOptions,
) -> Result<Vec<StreamRun>> {
    let limiters = scripts.iter().map(|spec| s.limiter(spec)).collect::<Result<Vec<Limiter>>>()?;
    let variants = &limiters;
    // The first wave's feed, built first so that traffic errors come before anything runs.
    let mut first = Some(Feed::scenario(s, seed)?);
    let total = first.as_ref().map_or(0, Feed::len);
    let by_subject = opts.decisions.is_none()
        && variants.iter().all(keeps_to_its_subject)
        && first.as_ref().is_some_and(Feed::in_time_order);
    let multi = (progress == Progress::Auto && total >= PROGRESS_MIN && std::io::stderr().is_terminal())
        .then(indicatif::MultiProgress::new);
    let bars: Vec<Option<indicatif::ProgressBar>> = variants
        .iter()
        .map(|v| {
            multi.as_ref().map(|m| {
                let b = m.add(indicatif::ProgressBar::new(total as u64));
                if let Ok(style) = indicatif::ProgressStyle::with_template("{prefix:>20} {bar:40} {pos}/{len} ({eta})")
                {
                    b.set_style(style);
                }
                b.set_prefix(v.name().to_string());
                b
            })
        })
        .collect();
    let mut out = Vec::with_capacity(variants.len());
    if by_subject {
        let shards = if jobs == 0 { super::parallel::default_jobs() } else { jobs };
        // The first script's feed judges every request both ways the scripts count and keeps the
        // verdicts; the later scripts' feeds read them instead of keeping exact logs of their own.
        let weights: Vec<bool> = variants.iter().map(Limiter::takes_cost).collect();
        let mut verdicts: Option<Arc<Verdicts>> = None;
        for (l, bar) in variants.iter().zip(&bars) {
            let watch = Stopwatch::start();
            let feed = match (first.take(), &verdicts) {
                (Some(f), _) => f.judged(s.params, &weights).recording(),
                (None, Some(v)) => Feed::scenario(s, seed)?.replaying(Arc::clone(v)),
                (None, None) => Feed::scenario(s, seed)?.judged(s.params, &weights),
            };
            let (mut run, kept) = run_split(s, feed.sharded(shards), l, shards, bar.as_ref())?;
            if verdicts.is_none() {
                verdicts = kept.map(Arc::new);
            }
            run.timing.wall_secs = watch.elapsed_secs();
            out.push(run);
        }
        return Ok(out);
    }
    let jobs = if jobs == 0 { default_script_jobs(variants.len()) } else { jobs }.clamp(1, variants.len().max(1));
    for (n, (wave, bars)) in variants.chunks(jobs).zip(bars.chunks(jobs)).enumerate() {
        let feed = match first.take() {
            Some(f) => f,
            None => Feed::scenario(s, seed)?,
        };
        let weights: Vec<bool> = wave.iter().map(Limiter::takes_cost).collect();
        for run in run_wave(s, feed.judged(s.params, &weights), wave, bars, opts, n * jobs) {
            // The first error, in the order of `variants`: later waves cannot come before it.
            out.push(run?);
        }
    }
    Ok(out)
}

/// One wave of [`run_variants`]: `wave`'s scripts (numbers `first..` of the run) over one feed,
/// each on its own thread (or on this one, with the feed, for a single script).
fn run_wave(
    s: &Scenario,
    mut feed: Feed,
    wave: &[Limiter],
    bars: &[Option<indicatif::ProgressBar>],
    opts: &RunOptions,
    first: usize,
) -> Vec<Result<StreamRun>> {
    let bar = |i: usize| bars.get(i).and_then(Option::as_ref);
    let folded: Vec<std::result::Result<Folded, FoldError>> = match wave {
        [l] => vec![fold_on_emulator(l, s.start_ms, feed.by_ref(), Shard::ALL, bar(0), opts, first)],
        _ => super::fanout::fan_out(&mut feed, wave.len(), |i, chunks| {
            fold_on_emulator(&wave[i], s.start_ms, chunks, Shard::ALL, bar(i), opts, first + i)
        }),
    };
    if let Some(e) = feed.take_error() {
        return vec![Err(e)];
    }
    let (subjects, phases) = feed.into_names();
    let subjects = Arc::new(subjects);
    folded.into_iter().zip(wave).map(|(f, l)| f.map(|f| f.named(l, &subjects, &phases)).map_err(|e| e.1)).collect()
}

/// Threads for [`run_variants`] when the scripts run whole, one thread each, and no number is
/// given: every script at once, up to twice the cores. The operating system shares the cores
/// between them, which balances three scripts on two cores better than running two and then one.
pub fn default_script_jobs(scripts: usize) -> usize {
    scripts.clamp(1, 2 * super::parallel::default_jobs())
}

/// Whether each of `limiter`'s calls touches only its own subject's keys, so that a run can be
/// split by subject: limitlab's shipped scripts, as shipped (a user's spec or script may keep state
/// across subjects, or name a model without running its script).
fn keeps_to_its_subject(limiter: &Limiter) -> bool {
    limiter.variant().is_some_and(|v| Arc::ptr_eq(limiter.shared_spec(), &crate::spec::builtin::spec(v)))
}

/// One script over `feed`, split by subject across `shards` threads (the feed produced on this
/// one, placed in as many shards: [`Feed::sharded`]), or on this thread alone for one shard. The
/// first error of the run, in request order, whichever shard met it, is the run's error: the one a
/// run on one thread stops at. Also gives the verdicts the feed kept, when it was recording.
fn run_split(
    s: &Scenario,
    mut feed: Feed,
    limiter: &Limiter,
    shards: usize,
    bar: Option<&indicatif::ProgressBar>,
) -> Result<(StreamRun, Option<Verdicts>)> {
    let opts = RunOptions::default();
    let cpu = thread_cpu_secs();
    let folded = if shards <= 1 {
        vec![fold_on_emulator(limiter, s.start_ms, feed.by_ref(), Shard::ALL, bar, &opts, 0)]
    } else {
        super::fanout::fan_out(&mut feed, shards, |i, chunks| {
            let bar = if i == 0 { bar } else { None };
            fold_on_emulator(limiter, s.start_ms, chunks, Shard::new(i, shards), bar, &opts, 0)
        })
    };
    let feed_cpu_secs = if shards <= 1 { 0.0 } else { thread_cpu_since(cpu) };
    if let Some(e) = feed.take_error() {
        return Err(e);
    }
    let mut parts = Vec::with_capacity(folded.len());
    let mut first_error: Option<FoldError> = None;
    for f in folded {
        match f {
            Ok(part) => parts.push(part),
            Err(e) => {
                if first_error.as_ref().is_none_or(|f| e.0 < f.0) {
                    first_error = Some(e);
                }
            }
        }
    }
    if let Some((_, e)) = first_error {
        return Err(e);
    }
    let verdicts = feed.take_verdicts();
    let (subjects, phases) = feed.into_names();
    let mut run = Folded::named_shards(parts, limiter, &Arc::new(subjects), &phases);
    run.timing.feed_cpu_secs = feed_cpu_secs;
    Ok((run, verdicts))
}

/// The process's peak resident memory in bytes (VmHWM in /proc/self/status), where there is one.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The process's CPU time so far (user and system), in seconds, from /proc/self/stat (whose clock
/// ticks are USER_HZ, 100 per second on Linux).
pub fn cpu_secs() -> Option<f64> {
    stat_cpu_secs("/proc/self/stat")
}

/// The calling thread's CPU time so far, as [`cpu_secs`] reads the process's.
pub fn thread_cpu_secs() -> Option<f64> {
    stat_cpu_secs("/proc/thread-self/stat")
}

/// The calling thread's CPU seconds since `start` (a [`thread_cpu_secs`] reading), 0 where the
/// system does not say.
fn thread_cpu_since(start: Option<f64>) -> f64 {
    thread_cpu_secs().zip(start).map_or(0.0, |(end, start)| end - start)
}

fn stat_cpu_secs(path: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(path).ok()?;
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let (utime, stime): (u64, u64) = (f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?);
    Some((utime + stime) as f64 / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::Params;
    use crate::sim::standard::{builtin, run_on_emulator, STANDARD};
    use crate::spec::builtin::spec;
    use crate::traffic::Arrival;
    use limitlab_emulator::clock::{Micros, DEFAULT_START};

    fn all() -> Vec<SharedSpec> {
        Variant::ALL.iter().map(|&v| spec(v)).collect()
    }

    #[test]
    fn streaming_metrics_equal_the_batch_metrics_on_every_standard_scenario() {
        for (file, _) in STANDARD {
            let s = builtin(file).unwrap();
            let arrivals = s.arrivals(s.seed).unwrap();
            let runs = run_variants(&s, s.seed, &all(), 2, Progress::Off).unwrap();
            for (v, r) in Variant::ALL.iter().zip(&runs) {
                let (trace, m, _) = run_on_emulator(&s, &spec(*v), &arrivals, Progress::Off).unwrap();
                assert_eq!(r.variant, Some(*v));
                assert_eq!(r.metrics, m, "{file} {v}");
                assert_eq!(*r.subjects, trace.keys, "{file} {v}");
                assert_eq!(r.phases, trace.phases, "{file} {v}");
            }
        }
    }

    /// A scenario from its TOML text.
    fn scenario(text: &str) -> Scenario {
        Scenario::from_toml(text, std::path::Path::new("test.toml")).unwrap()
    }

    #[test]
    fn the_shared_feed_gives_every_script_the_metrics_of_a_run_of_its_own() {
        // Zipf traffic (the streamed source), with costs so that production and seed scripts are
        // judged differently, and a mix (a listed source): every job count gives each script the
        // metrics it gets when run alone, on its own feed, and the batch metrics.
        let zipf = scenario(
            "name = \"z\"\nlimit = 4\nwindow_ms = 500\nburst = 6\nalgorithms = \"all\"\n\
             [traffic]\nkind = \"zipf_users\"\nusers = 300\ns = 1.1\nrequests = 9000\nduration_ms = 6000\ncost = 2\nphase = \"p\"\n",
        );
        let mix = scenario(
            "name = \"m\"\nlimit = 10\nwindow_ms = 1000\nalgorithms = \"all\"\n[traffic]\nkind = \"mix\"\n\
             [[traffic.parts]]\nkind = \"zipf_users\"\nusers = 50\nrequests = 3000\nduration_ms = 6000\nphase = \"bg\"\n\
             [[traffic.parts]]\nkind = \"poisson\"\nrate = 300.0\nduration_ms = 6000\nkey = \"attacker\"\n",
        );
        for s in [zipf, mix] {
            let arrivals = s.arrivals(9).unwrap();
            let alone: Vec<StreamRun> = Variant::ALL
                .iter()
                .map(|v| {
                    let limiter = s.builtin_limiter(*v).unwrap();
                    let mut backend = EmulatedBackend::default();
                    backend.set_time_ms(s.start_ms);
                    let feed = Feed::scenario(&s, 9).unwrap().judged(s.params, &[v.takes_cost()]);
                    run_streaming(&limiter, &mut backend, feed, None).unwrap()
                })
                .collect();
            for (v, r) in Variant::ALL.iter().zip(&alone) {
                let (_, m, _) = run_on_emulator(&s, &spec(*v), &arrivals, Progress::Off).unwrap();
                assert_eq!(r.metrics, m, "{} {v}", s.name);
            }
            for jobs in [1, 2, 4, 9] {
                let shared = run_variants(&s, 9, &all(), jobs, Progress::Off).unwrap();
                for (a, b) in alone.iter().zip(&shared) {
                    assert_eq!(
                        (a.variant, &a.metrics, &a.subjects, &a.phases),
                        (b.variant, &b.metrics, &b.subjects, &b.phases),
                        "{} jobs {jobs}",
                        s.name
                    );
                }
            }
        }
    }

    #[test]
    fn a_run_split_by_subject_gives_the_same_results_whatever_the_thread_count() {
        // Zipf users, hot enough that the scripts refuse, the headers' checks stop at their cap
        // and subjects tie for the worst window; with costs, so that the production and seed
        // scripts are judged differently, and a burst.
        let s = scenario(
            "name = \"z\"\nlimit = 5\nwindow_ms = 1000\nburst = 8\nalgorithms = \"all\"\n\
             [traffic]\nkind = \"zipf_users\"\nusers = 3000\ns = 1.05\nrequests = 30000\nduration_ms = 20000\ncost = 2\nphase = \"p\"\n",
        );
        let one = run_variants(&s, 5, &all(), 1, Progress::Off).unwrap();
        for (v, r) in Variant::ALL.iter().zip(&one) {
            // The same as the script's run on its own feed, unsplit.
            let limiter = s.builtin_limiter(*v).unwrap();
            let mut backend = EmulatedBackend::default();
            backend.set_time_ms(s.start_ms);
            let feed = Feed::scenario(&s, 5).unwrap().judged(s.params, &[v.takes_cost()]);
            let alone = run_streaming(&limiter, &mut backend, feed, None).unwrap();
            assert_eq!((&alone.metrics, &alone.headers), (&r.metrics, &r.headers), "{v}");
            assert_eq!(r.threads, 1);
        }
        assert!(one.iter().any(|r| r.metrics.headers_checked == crate::metrics::HEADER_CHECKS));
        assert!(one.iter().all(|r| r.metrics.allowed_calls < r.metrics.calls && r.headers.samples.len() >= 2));
        for jobs in [2, 3, 4, 7] {
            let split = run_variants(&s, 5, &all(), jobs, Progress::Off).unwrap();
            for (a, b) in one.iter().zip(&split) {
                assert_eq!(b.threads, jobs);
                assert_eq!(
                    (&a.metrics, &a.headers, &a.subjects, &a.phases),
                    (&b.metrics, &b.headers, &b.subjects, &b.phases),
                    "{} on {jobs} threads",
                    a.name
                );
            }
        }
    }

    #[test]
    fn a_split_run_fails_at_the_first_failing_request_whichever_shard_meets_it() {
        // Subject `b` (shard 1 of 2) fails at request 5, `c` (shard 0) at request 7: the run fails
        // at request 5, as a run on one thread does, though shard 0 fails without knowing of it.
        let max = crate::shipped::MAX_ARG;
        let arrivals: Vec<Arrival> = [("a", 1), ("b", 1), ("c", 1), ("a", 1), ("b", max + 1), ("a", 1), ("c", max + 2)]
            .iter()
            .enumerate()
            .map(|(i, &(key, cost))| Arrival {
                at: Micros((DEFAULT_START.0 + i as i64) * 1000),
                key: key.into(),
                cost,
                phase: String::new(),
                op: crate::traffic::Op::Request,
            })
            .collect();
        let s = builtin("simulations/uniform.toml").unwrap();
        let limiter = s.builtin_limiter(Variant::FIXED_WINDOW).unwrap();
        let feed = || Feed::arrivals(&arrivals).judged(s.params, &[true]);
        let mut backend = EmulatedBackend::default();
        let want = run_streaming(&limiter, &mut backend, feed(), None).unwrap_err().to_string();
        assert!(want.contains(&(max + 1).to_string()), "{want}");
        for shards in [1, 2, 3] {
            let got = run_split(&s, feed().sharded(shards), &limiter, shards, None).unwrap_err().to_string();
            assert_eq!(got, want, "{shards} shards");
        }
    }

    #[test]
    fn arrivals_out_of_time_order_stop_every_script_at_the_same_call() {
        // No traffic source produces them (they all sort), but a caller's list may: each script
        // stops at the call that goes back, alone or reading a shared feed.
        let arrivals: Vec<Arrival> = [(0, "a"), (5, "b"), (3, "a"), (9, "b")]
            .iter()
            .map(|&(ms, key)| Arrival {
                at: Micros((DEFAULT_START.0 + ms) * 1000),
                key: key.into(),
                cost: 1,
                phase: String::new(),
                op: crate::traffic::Op::Request,
            })
            .collect();
        let want = "call #3 (subject `a`): field `now_ms`: 1704067200003 is before the previous call's 1704067200005: \
                    a streaming run needs arrivals in time order";
        let variants = [Variant::FIXED_WINDOW, Variant::SEED_TOKEN_BUCKET];
        let weights = [true, false];
        let limiters: Vec<Limiter> =
            variants.iter().map(|v| Limiter::new(*v, Params::new(10, 1000)).unwrap()).collect();
        for l in &limiters {
            let mut backend = EmulatedBackend::default();
            let feed = Feed::arrivals(&arrivals).judged(l.params(), &weights);
            assert_eq!(run_streaming(l, &mut backend, feed, None).unwrap_err().to_string(), want);
        }
        let mut feed = Feed::arrivals(&arrivals).judged(Params::new(10, 1000), &weights);
        let errors = super::super::fanout::fan_out(&mut feed, 2, |i, chunks| {
            let mut backend = EmulatedBackend::default();
            fold(&limiters[i], &mut backend, chunks, Shard::ALL, None, None).err().map(|e| e.1.to_string())
        });
        assert_eq!(errors, [Some(want.to_string()), Some(want.to_string())]);
    }

    #[test]
    fn process_figures_are_read_from_proc() {
        if std::path::Path::new("/proc/self/status").exists() {
            assert!(peak_rss_bytes().is_some_and(|b| b > 1 << 20));
            assert!(cpu_secs().is_some_and(|c| c >= 0.0));
        }
    }
}
