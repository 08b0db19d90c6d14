//! The half of a run that does not depend on the script: generating the traffic, interning its
//! subjects and phases, and the exact sliding log's verdict on every request (the exact log sees
//! only the arrivals, the limit and the window, never a script's answers). A [`Feed`] does this
//! once and yields it as [`Chunk`]s of compact [`Step`]s, which every script's runner
//! (`super::drive`) reads: [`super::stream::run_variants`] hands the same chunks to each
//! script's thread instead of having every thread redo this work.
//!
//! Memory stays constant whatever the number of requests: a chunk holds at most [`CHUNK_LEN`]
//! steps, and only the subject and phase tables (one entry per distinct name) grow. Zipf traffic
//! is generated as it goes, and a trace of at least [`STREAM_MIN_BYTES`] sorted by time is read as it
//! goes ([`crate::traffic::TraceStream`]); other traffic is small and made whole first.
use std::borrow::Cow;
use std::sync::Arc;

use crate::limiter::Params;
use crate::metrics::ExactLog;
use crate::traffic::{Arrival, Op, TraceStream, TrafficSpec, ZipfIter};
use limitlab_emulator::clock::{Micros, Millis};
use limitlab_emulator::{Error, Result};
use rustc_hash::FxHashMap;

use super::Scenario;

/// The most steps in one chunk: large enough that handing a chunk to another thread costs
/// nothing per request, small enough that a few chunks in flight per script take little memory.
pub const CHUNK_LEN: usize = 4096;

/// Traces at least this big are streamed when they are sorted by time (smaller ones are read
/// whole: the same arrivals, without a second pass over the file).
pub const STREAM_MIN_BYTES: u64 = 8 << 20;

/// A chunk also ends once its subject names take this many bytes (traces may have long keys).
const CHUNK_NAME_BYTES: usize = 1 << 20;

/// Bits of [`Step::exact`].
const EXACT_WEIGHTED: u8 = 1;
const EXACT_UNIT: u8 = 2;

/// One request, as a script's runner needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub at: Micros,
    pub cost: u64,
    /// The subject's index in [`Feed::subjects`].
    pub subject: u32,
    /// The phase's index in [`Feed::phases`].
    pub phase: u32,
    /// Where the subject's name ends in its chunk's names; it starts where the previous step's ends.
    name_end: u32,
    /// The shard that runs this subject, and the subject's row in that shard's tables (see
    /// [`Feed::sharded`]; without it, shard 0 and the subject's index).
    shard: u32,
    row: u32,
    /// The exact log's verdicts ([`EXACT_WEIGHTED`], [`EXACT_UNIT`]): a bit is set when it admits.
    exact: u8,
    /// A request, or a lifecycle operation the runner plays without deciding (and the exact logs
    /// take as [`ExactLog::apply`] says).
    pub op: Op,
}

impl Step {
    /// Whether the exact sliding log admits this request, counting it as its cost (`weighted`, as
    /// the production scripts do) or as 1 (as the seed scripts do). False when that verdict was not
    /// asked of the feed (see [`Feed::judged`]).
    pub fn exact_admits(&self, weighted: bool) -> bool {
        self.exact & if weighted { EXACT_WEIGHTED } else { EXACT_UNIT } != 0
    }
}

/// A part of a run's subjects, for splitting a run across threads by subject: shard `index` of
/// `count` runs the subjects the feed placed in it ([`Feed::sharded`]), and indexes its state by
/// the rows the feed gave them ([`Shard::row`]), so each thread holds rows for its own subjects only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Every subject: a run on one thread.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count` (at least one).
    pub fn new(index: usize, count: usize) -> Shard {
        let count = count.max(1) as u32;
        Shard { index: index as u32 % count, count }
    }

    /// Whether `step`'s subject is this shard's (every subject, for a single shard).
    pub fn owns(&self, step: &Step) -> bool {
        self.count <= 1 || step.shard == self.index
    }

    /// The row of `step`'s subject in this shard's tables: its index in [`Feed::subjects`] for a
    /// single shard, else the row the feed gave it (rows are given in order of first appearance).
    pub fn row(&self, step: &Step) -> u32 {
        if self.count <= 1 {
            step.subject
        } else {
            step.row
        }
    }
}

/// Where a feed split by subject puts each subject ([`Feed::sharded`]): a subject, when it first
/// appears, goes to the shard that has been given the fewest steps so far (the first of them on a
/// tie), so a hot subject does not leave the other shards idle; the choice depends only on the
/// steps before it, so it is the same on every pass over the same arrivals.
struct Placement {
    /// (shard, row) of every subject, by index.
    of: Vec<(u32, u32)>,
    /// The steps given to each shard so far.
    load: Vec<u64>,
    /// The rows each shard has given out.
    rows: Vec<u32>,
}

impl Placement {
    fn new(shards: usize) -> Placement {
        Placement { of: Vec::new(), load: vec![0; shards], rows: vec![0; shards] }
    }

    /// The shard and row of `subject` (new subjects come with the next index).
    fn place(&mut self, subject: u32) -> (u32, u32) {
        let (shard, row) = match self.of.get(subject as usize) {
            Some(&p) => p,
            None => {
                let shard = (0..self.load.len()).min_by_key(|&i| self.load[i]).unwrap_or(0);
                let p = (shard as u32, self.rows[shard]);
                self.rows[shard] += 1;
                self.of.push(p);
                p
            }
        };
        self.load[shard as usize] += 1;
        (shard, row)
    }
}

/// Consecutive requests of a feed, with their subjects' names.
#[derive(Clone, Debug, Default)]
pub struct Chunk {
    steps: Vec<Step>,
    /// Every step's subject name, one after the other.
    names: String,
    /// The phase labels first seen in this chunk, in order: their indices follow those of the
    /// earlier chunks' (see [`PhaseNames`]).
    new_phases: Vec<String>,
}

impl Chunk {
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The phase labels this chunk introduces (see [`PhaseNames`]).
    pub fn new_phases(&self) -> &[String] {
        &self.new_phases
    }

    /// Each step with its subject's name.
    pub fn iter(&self) -> impl Iterator<Item = (&Step, &str)> + '_ {
        let mut start = 0;
        self.steps.iter().map(move |s| {
            let end = s.name_end as usize;
            let name = self.names.get(start..end).unwrap_or_default();
            start = end;
            (s, name)
        })
    }
}

/// A reader's table of phase labels, learnt chunk by chunk: a script's thread reading a shared
/// feed can name each step's phase without the feed's own table.
#[derive(Clone, Debug, Default)]
pub struct PhaseNames(Vec<String>);

impl PhaseNames {
    /// Learns the labels `chunk` introduces; call it for every chunk, in order.
    pub fn learn(&mut self, chunk: &Chunk) {
        self.0.extend(chunk.new_phases.iter().cloned());
    }

    /// The label of phase index `i` (`""` if unknown).
    pub fn name(&self, i: u32) -> &str {
        self.0.get(i as usize).map_or("", String::as_str)
    }
}

/// Interns strings into dense indices, in order of first appearance.
#[derive(Default)]
struct Interner {
    index: FxHashMap<String, u32>,
    names: Vec<String>,
}

impl Interner {
    fn get(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.index.insert(s.to_string(), i);
        self.names.push(s.to_string());
        i
    }
}

/// Where the requests come from.
enum Source<'a> {
    /// Zipf users, streamed. Users are told apart by rank, so a request costs no string unless its
    /// user is new (the subject table then gets the user's name).
    Zipf { it: Box<ZipfIter>, ranks: RankIndex, subjects: Vec<String> },
    /// A list of arrivals (small sources, generated whole, and the batch runner's slices).
    Listed { arrivals: Cow<'a, [Arrival]>, next: usize, subjects: Interner },
    /// A big trace sorted by time, read as it goes; a failure to read it on (the file changed since
    /// it was scanned) ends the feed and is kept for [`Feed::take_error`].
    Trace { it: Box<TraceStream>, subjects: Interner, error: Option<Error> },
}

/// Each Zipf rank's subject index, given in order of first appearance. Ranks run from 1 to the
/// number of users, so up to [`RankIndex::DENSE_MAX`] users it is an array indexed by rank (4
/// bytes a user, zeroed pages that the system maps only once touched): one load where a hash map
/// hashed, probed and, at a million users, missed the cache twice as often (its entries are four
/// times as wide). Past that bound (a sparse run over a huge population), a hash map.
#[derive(Debug)]
enum RankIndex {
    /// The subject index plus one, by rank (0: not seen yet).
    Dense(Vec<u32>),
    Sparse(FxHashMap<u64, u32>),
}

impl RankIndex {
    /// The most users given an array (64 MB of address space at most).
    const DENSE_MAX: u64 = 1 << 24;

    fn new(users: u64) -> RankIndex {
        if users <= Self::DENSE_MAX {
            RankIndex::Dense(vec![0; users as usize + 1])
        } else {
            RankIndex::Sparse(FxHashMap::default())
        }
    }

    /// The subject of `rank`, which becomes `next` when the rank is new.
    #[inline]
    fn subject(&mut self, rank: u64, next: u32) -> u32 {
        match self {
            RankIndex::Dense(v) => {
                let i = rank as usize;
                if i >= v.len() {
                    // A rank past the users (the sampler never gives one): kept correct all the same.
                    v.resize(i + 1, 0);
                }
                let slot = &mut v[i];
                if *slot == 0 {
                    *slot = next + 1;
                    next
                } else {
                    *slot - 1
                }
            }
            RankIndex::Sparse(m) => *m.entry(rank).or_insert(next),
        }
    }
}

/// The exact log's verdicts on every step of a feed, both ways of counting, two bits a step: what
/// a pass that judged them ([`Feed::recording`]) leaves for later passes over the same arrivals
/// ([`Feed::replaying`]), which then keep no exact log at all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdicts {
    /// Four steps a byte, the first in the low bits.
    bits: Vec<u8>,
    len: usize,
}

impl Verdicts {
    fn push(&mut self, exact: u8) {
        let (byte, shift) = (self.len / 4, self.len % 4 * 2);
        if shift == 0 {
            self.bits.push(0);
        }
        self.bits[byte] |= (exact & 3) << shift;
        self.len += 1;
    }

    fn get(&self, i: usize) -> u8 {
        self.bits.get(i / 4).map_or(0, |b| b >> (i % 4 * 2) & 3)
    }

    /// The number of steps.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Where a feed's verdicts go or come from.
enum Memo {
    Off,
    Record(Verdicts),
    Replay(Arc<Verdicts>, usize),
}

/// The exact logs a feed keeps: one per way of counting that its scripts need.
struct Judges {
    weighted: Option<ExactLog>,
    unit: Option<ExactLog>,
    memo: Memo,
}

impl Judges {
    /// The verdicts of a request; a lifecycle operation is applied to the logs instead (no verdict).
    fn judge(&mut self, op: Op, subject: u32, now_ms: i64, cost: u64) -> u8 {
        if let Memo::Replay(v, next) = &mut self.memo {
            *next += 1;
            return v.get(*next - 1);
        }
        let exact = self.judge_anew(op, subject, now_ms, cost);
        if let Memo::Record(v) = &mut self.memo {
            v.push(exact);
        }
        exact
    }

    fn judge_anew(&mut self, op: Op, subject: u32, now_ms: i64, cost: u64) -> u8 {
        if op == Op::Request {
            return self.verdicts(subject, now_ms, cost);
        }
        if let Some(log) = &mut self.weighted {
            log.apply(op, subject, cost);
        }
        if let Some(log) = &mut self.unit {
            log.apply(op, subject, 1);
        }
        0
    }

    fn verdicts(&mut self, subject: u32, now_ms: i64, cost: u64) -> u8 {
        let mut bits = 0;
        if let Some(log) = &mut self.weighted {
            if log.decide(subject, now_ms, cost) {
                bits |= EXACT_WEIGHTED;
            }
        }
        if let Some(log) = &mut self.unit {
            if log.decide(subject, now_ms, 1) {
                bits |= EXACT_UNIT;
            }
        }
        bits
    }
}

/// A run's requests, chunk by chunk (see the module documentation).
pub struct Feed<'a> {
    source: Source<'a>,
    phases: Interner,
    judges: Judges,
    placement: Option<Placement>,
    len: usize,
    /// Whether every step has been given.
    done: bool,
}

impl Feed<'static> {
    /// The arrivals of `s` for `seed`. Zipf traffic streams in constant memory; other sources are
    /// generated whole first (they are small). Errors name the scenario file.
    pub fn scenario(s: &Scenario, seed: u64) -> Result<Feed<'static>> {
        Feed::scenario_streaming_from(s, seed, STREAM_MIN_BYTES)
    }

    /// [`Feed::scenario`], streaming a trace sorted by time once its file has `min_bytes`.
    pub fn scenario_streaming_from(s: &Scenario, seed: u64, min_bytes: u64) -> Result<Feed<'static>> {
        if let TrafficSpec::Trace(t) = &s.traffic {
            let named = |e: Error| match e {
                Error::Invalid { context, field, reason } => {
                    Error::Invalid { context: format!("{}: [traffic] {context}", s.origin.display()), field, reason }
                }
                other => other,
            };
            let big = crate::files::trace_len(&t.path).is_ok_and(|n| n >= min_bytes);
            if big {
                let scan = t.scan().map_err(named)?;
                if scan.sorted() {
                    let it = t.stream(Millis(s.start_ms).as_micros(), &scan).map_err(named)?;
                    let source = Source::Trace { it: Box::new(it), subjects: Interner::default(), error: None };
                    return Ok(Feed::new(source, scan.ticks.requests));
                }
            }
        }
        if let TrafficSpec::ZipfUsers(z) = &s.traffic {
            s.traffic.validate().map_err(|e| match e {
                Error::Invalid { context, field, reason } => {
                    Error::Invalid { context: format!("{}: [traffic] {context}", s.origin.display()), field, reason }
                }
                other => other,
            })?;
            if let Some(it) = z.iter(Millis(s.start_ms).as_micros(), seed) {
                let len = it.len();
                let source = Source::Zipf { it: Box::new(it), ranks: RankIndex::new(z.users), subjects: Vec::new() };
                return Ok(Feed::new(source, len));
            }
        }
        let arrivals = s.arrivals(seed)?;
        let len = arrivals.len();
        Ok(Feed::new(Source::Listed { arrivals: Cow::Owned(arrivals), next: 0, subjects: Interner::default() }, len))
    }
}

impl<'a> Feed<'a> {
    /// `arrivals` in the order given.
    pub fn arrivals(arrivals: &'a [Arrival]) -> Feed<'a> {
        let len = arrivals.len();
        Feed::new(Source::Listed { arrivals: Cow::Borrowed(arrivals), next: 0, subjects: Interner::default() }, len)
    }

    fn new(source: Source<'a>, len: usize) -> Feed<'a> {
        let judges = Judges { weighted: None, unit: None, memo: Memo::Off };
        Feed { source, phases: Interner::default(), judges, placement: None, len, done: false }
    }

    /// The same feed with the exact log's verdicts (limit and window from `params`) for every
    /// request, as the scripts are judged (`weighted[i]`: whether script i reads costs): with each
    /// request's cost when one of them reads costs, counting each request as 1 when one does not.
    pub fn judged(mut self, params: Params, weighted: &[bool]) -> Feed<'a> {
        let log = || Some(ExactLog::new(params));
        self.judges.weighted = if weighted.iter().any(|&w| w) { log() } else { None };
        self.judges.unit = if weighted.iter().any(|&w| !w) { log() } else { None };
        self
    }

    /// The same feed, keeping every step's verdicts (both ways of counting, whichever this feed
    /// judges) for [`Feed::take_verdicts`].
    pub fn recording(mut self) -> Feed<'a> {
        self.judges.memo = Memo::Record(Verdicts::default());
        self
    }

    /// The verdicts kept by [`Feed::recording`], once the feed has given every step (`None`
    /// before, or when not recording).
    pub fn take_verdicts(&mut self) -> Option<Verdicts> {
        match &mut self.judges.memo {
            Memo::Record(v) if self.done => Some(std::mem::take(v)),
            _ => None,
        }
    }

    /// The same feed, its verdicts read from `verdicts` (recorded on a pass over the same arrivals
    /// that judged both ways of counting its scripts need) instead of judged anew.
    pub fn replaying(mut self, verdicts: Arc<Verdicts>) -> Feed<'a> {
        self.judges = Judges { weighted: None, unit: None, memo: Memo::Replay(verdicts, 0) };
        self
    }

    /// The same feed, its subjects placed in `shards` shards by load (see [`Shard`]).
    pub fn sharded(mut self, shards: usize) -> Feed<'a> {
        self.placement = (shards > 1).then(|| Placement::new(shards));
        self
    }

    /// The error that ended a streamed trace early, once (see `Source::Trace`); every runner of a
    /// feed asks after its last chunk.
    pub fn take_error(&mut self) -> Option<Error> {
        match &mut self.source {
            Source::Trace { error, .. } => error.take(),
            _ => None,
        }
    }

    /// Whether the requests come in time order, which a run split by subject needs (each shard
    /// sees only its own subjects' calls, so it could not tell): Zipf traffic and a streamed trace
    /// come sorted; a list is checked.
    pub fn in_time_order(&self) -> bool {
        match &self.source {
            Source::Listed { arrivals, .. } => arrivals.windows(2).all(|w| w[0].at <= w[1].at),
            Source::Zipf { .. } | Source::Trace { .. } => true,
        }
    }

    /// The number of requests, all chunks together.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The subjects seen so far, in order of first appearance (all of them once the feed is done).
    pub fn subjects(&self) -> &[String] {
        match &self.source {
            Source::Zipf { subjects, .. } => subjects,
            Source::Listed { subjects, .. } | Source::Trace { subjects, .. } => &subjects.names,
        }
    }

    /// The phase labels seen so far, in order of first appearance.
    pub fn phases(&self) -> &[String] {
        &self.phases.names
    }

    /// The subject and phase tables.
    pub fn into_names(self) -> (Vec<String>, Vec<String>) {
        let subjects = match self.source {
            Source::Zipf { subjects, .. } => subjects,
            Source::Listed { subjects, .. } | Source::Trace { subjects, .. } => subjects.names,
        };
        (subjects, self.phases.names)
    }
}

impl Iterator for Feed<'_> {
    type Item = Chunk;

    fn next(&mut self) -> Option<Chunk> {
        let mut chunk = Chunk::default();
        let Feed { source, phases, judges, placement, .. } = self;
        let known_phases = phases.names.len();
        match source {
            Source::Zipf { it, ranks, subjects } => {
                chunk.steps.reserve(it.len().min(CHUNK_LEN));
                let phase = phases.get(it.phase());
                while chunk.steps.len() < CHUNK_LEN && chunk.names.len() < CHUNK_NAME_BYTES {
                    let Some((at, rank)) = it.next_rank() else { break };
                    let next = subjects.len() as u32;
                    let subject = ranks.subject(rank, next);
                    if subject == next {
                        subjects.push(crate::traffic::numbered(it.key_prefix(), rank));
                    }
                    chunk.names.push_str(it.key_prefix());
                    chunk.names.push_str(itoa::Buffer::new().format(rank));
                    let cost = it.cost();
                    let exact = judges.judge(Op::Request, subject, at.as_millis().0, cost);
                    chunk.steps.push(Step {
                        at,
                        cost,
                        subject,
                        phase,
                        name_end: chunk.names.len() as u32,
                        shard: 0,
                        row: subject,
                        exact,
                        op: Op::Request,
                    });
                }
            }
            Source::Listed { arrivals, next, subjects } => {
                let rest = arrivals.get(*next..).unwrap_or_default();
                chunk.steps.reserve(rest.len().min(CHUNK_LEN));
                for a in rest.iter().take(CHUNK_LEN) {
                    if chunk.names.len() >= CHUNK_NAME_BYTES {
                        break;
                    }
                    let subject = subjects.get(&a.key);
                    let phase = phases.get(&a.phase);
                    chunk.names.push_str(&a.key);
                    let exact = judges.judge(a.op, subject, a.at.as_millis().0, a.cost);
                    chunk.steps.push(Step {
                        at: a.at,
                        cost: a.cost,
                        subject,
                        phase,
                        name_end: chunk.names.len() as u32,
                        shard: 0,
                        row: subject,
                        exact,
                        op: a.op,
                    });
                }
                *next += chunk.steps.len();
            }
            Source::Trace { it, subjects, error } => {
                chunk.steps.reserve(CHUNK_LEN);
                while chunk.steps.len() < CHUNK_LEN && chunk.names.len() < CHUNK_NAME_BYTES && error.is_none() {
                    let a = match it.next() {
                        Some(Ok(a)) => a,
                        Some(Err(e)) => {
                            *error = Some(e);
                            break;
                        }
                        None => break,
                    };
                    let subject = subjects.get(&a.key);
                    let phase = phases.get(&a.phase);
                    chunk.names.push_str(&a.key);
                    let exact = judges.judge(a.op, subject, a.at.as_millis().0, a.cost);
                    chunk.steps.push(Step {
                        at: a.at,
                        cost: a.cost,
                        subject,
                        phase,
                        name_end: chunk.names.len() as u32,
                        shard: 0,
                        row: subject,
                        exact,
                        op: a.op,
                    });
                }
            }
        }
        if let Some(p) = placement {
            for step in &mut chunk.steps {
                (step.shard, step.row) = p.place(step.subject);
            }
        }
        if !chunk.is_empty() {
            chunk.new_phases = phases.names.get(known_phases..).unwrap_or_default().to_vec();
        }
        self.done = chunk.is_empty();
        (!chunk.is_empty()).then_some(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::standard::{builtin, STANDARD};

    /// What the feed gives, request by request: (time, subject name, subject, phase, cost).
    fn unpacked(feed: &mut Feed) -> Vec<(Micros, String, u32, u32, u64)> {
        let mut out = Vec::new();
        for chunk in feed.by_ref() {
            assert!(chunk.len() <= CHUNK_LEN);
            out.extend(chunk.iter().map(|(s, name)| (s.at, name.to_string(), s.subject, s.phase, s.cost)));
        }
        out
    }

    #[test]
    fn a_feed_interns_the_arrivals_in_order_of_first_appearance() {
        for (file, _) in STANDARD {
            let s = builtin(file).unwrap();
            let arrivals = s.arrivals(s.seed).unwrap();
            let mut feed = Feed::scenario(&s, s.seed).unwrap();
            assert_eq!(feed.len(), arrivals.len());
            let steps = unpacked(&mut feed);
            let (subjects, phases) = feed.into_names();
            assert_eq!(steps.len(), arrivals.len(), "{file}");
            for (a, (at, name, subject, phase, cost)) in arrivals.iter().zip(&steps) {
                assert_eq!((a.at, &a.key, a.cost), (*at, name, *cost), "{file}");
                assert_eq!(subjects[*subject as usize], a.key, "{file}");
                assert_eq!(phases[*phase as usize], a.phase, "{file}");
            }
            let mut firsts = Vec::new();
            for a in &arrivals {
                if !firsts.contains(&a.key) {
                    firsts.push(a.key.clone());
                }
            }
            assert_eq!(subjects, firsts, "{file}");
        }
    }

    #[test]
    fn a_reader_learns_the_phase_names_chunk_by_chunk() {
        // Phases that first appear in later chunks, and come back.
        let label = |i: usize| ["a", "", "b", "a", "c"][i * 5 / 12_000].to_string();
        let arrivals: Vec<Arrival> = (0..12_000)
            .map(|i| Arrival {
                at: Micros(i as i64),
                key: format!("k{}", i % 7),
                cost: 1,
                phase: label(i),
                op: crate::traffic::Op::Request,
            })
            .collect();
        let mut feed = Feed::arrivals(&arrivals);
        let mut names = PhaseNames::default();
        let mut seen = Vec::new();
        for chunk in feed.by_ref() {
            names.learn(&chunk);
            seen.extend(chunk.iter().map(|(s, _)| names.name(s.phase).to_string()));
        }
        assert_eq!(seen, arrivals.iter().map(|a| a.phase.clone()).collect::<Vec<_>>());
        assert_eq!(feed.into_names().1, ["a", "", "b", "c"]);
    }

    #[test]
    fn zipf_traffic_streams_by_rank_with_the_same_requests_and_names() {
        let text = "name = \"z\"\nlimit = 3\nwindow_ms = 100\nalgorithms = \"all\"\n\
                    [traffic]\nkind = \"zipf_users\"\nusers = 500\nrequests = 10000\nduration_ms = 2000\ncost = 2\nphase = \"p\"\n";
        let s = Scenario::from_toml(text, std::path::Path::new("zipf.toml")).unwrap();
        let arrivals = s.arrivals(4).unwrap();
        let weights: Vec<bool> = s.scripts.iter().map(|x| x.uses_cost()).collect();
        let mut zipf = Feed::scenario(&s, 4).unwrap().judged(s.params, &weights);
        let mut listed = Feed::arrivals(&arrivals).judged(s.params, &weights);
        assert_eq!(zipf.len(), listed.len());
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for c in zipf.by_ref() {
            a.extend(c.iter().map(|(s, n)| (*s, n.to_string())));
        }
        for c in listed.by_ref() {
            b.extend(c.iter().map(|(s, n)| (*s, n.to_string())));
        }
        assert_eq!(a.len(), 10_000);
        assert_eq!(a, b, "names, indices and verdicts");
        assert_eq!(zipf.into_names(), listed.into_names());
    }

    #[test]
    fn ranks_get_subjects_in_order_of_first_appearance_dense_or_sparse() {
        let ranks = [3u64, 1, 3, 5, 1, 9, 5];
        let want = [0u32, 1, 0, 2, 1, 3, 2];
        // A dense index of 5 users, given a rank past them too (grows); a sparse one.
        for mut index in [RankIndex::new(5), RankIndex::Sparse(FxHashMap::default())] {
            let mut next = 0;
            let got: Vec<u32> = ranks
                .iter()
                .map(|&r| {
                    let s = index.subject(r, next);
                    if s == next {
                        next += 1;
                    }
                    s
                })
                .collect();
            assert_eq!(got, want, "{index:?}");
        }
        assert!(matches!(RankIndex::new(RankIndex::DENSE_MAX), RankIndex::Dense(_)));
        assert!(matches!(RankIndex::new(RankIndex::DENSE_MAX + 1), RankIndex::Sparse(_)));
    }

    #[test]
    fn verdicts_are_the_exact_logs_with_each_cost_and_with_unit_cost() {
        let arrivals: Vec<Arrival> = [(0, "a", 2), (1, "a", 2), (2, "b", 3), (3, "a", 1), (4, "a", 1)]
            .iter()
            .map(|&(ms, key, cost)| Arrival {
                at: Micros(ms * 1000),
                key: key.into(),
                cost,
                phase: String::new(),
                op: crate::traffic::Op::Request,
            })
            .collect();
        let params = Params::new(3, 1000);
        let both = [
            crate::limiter::Variant::FIXED_WINDOW.takes_cost(),
            crate::limiter::Variant::SEED_FIXED_WINDOW.takes_cost(),
        ];
        let steps: Vec<Step> = Feed::arrivals(&arrivals).judged(params, &both).flat_map(|c| c.steps).collect();
        let weighted: Vec<bool> = steps.iter().map(|s| s.exact_admits(true)).collect();
        let unit: Vec<bool> = steps.iter().map(|s| s.exact_admits(false)).collect();
        assert_eq!(weighted, [true, false, true, true, false]);
        assert_eq!(unit, [true, true, true, true, false]);
        let none: Vec<Step> = Feed::arrivals(&arrivals).flat_map(|c| c.steps).collect();
        assert!(none.iter().all(|s| !s.exact_admits(true) && !s.exact_admits(false)));
    }

    /// Zipf traffic with costs, judged both ways (production and seed scripts together).
    fn zipf_scenario() -> Scenario {
        let text = "name = \"z\"\nlimit = 3\nwindow_ms = 100\nalgorithms = \"all\"\n\
                    [traffic]\nkind = \"zipf_users\"\nusers = 400\nrequests = 20000\nduration_ms = 3000\ncost = 2\n";
        Scenario::from_toml(text, std::path::Path::new("zipf.toml")).unwrap()
    }

    #[test]
    fn verdicts_kept_from_one_pass_replay_on_the_next() {
        let s = zipf_scenario();
        let both = [true, false];
        let judged: Vec<Step> = Feed::scenario(&s, 2).unwrap().judged(s.params, &both).flat_map(|c| c.steps).collect();
        let mut recording = Feed::scenario(&s, 2).unwrap().judged(s.params, &both).recording();
        assert!(recording.take_verdicts().is_none(), "nothing before the feed is done");
        let recorded: Vec<Step> = recording.by_ref().flat_map(|c| c.steps).collect();
        let verdicts = recording.take_verdicts().unwrap();
        assert_eq!(verdicts.len(), judged.len());
        let replayed: Vec<Step> =
            Feed::scenario(&s, 2).unwrap().replaying(Arc::new(verdicts)).flat_map(|c| c.steps).collect();
        assert_eq!(recorded, judged);
        assert_eq!(replayed, judged);
        assert!(judged.iter().any(|s| s.exact_admits(true) != s.exact_admits(false)), "the two ways differ here");
    }

    #[test]
    fn subjects_are_placed_by_load_where_they_first_appear() {
        // `hot` sends every third request: the subjects after it go to the other shards until
        // their loads catch up, so no shard ends more than one subject's requests ahead.
        let arrivals: Vec<Arrival> = (0..6_000)
            .map(|i| Arrival {
                at: Micros(i),
                key: if i % 3 == 0 { "hot".into() } else { format!("u{}", i / 6) },
                cost: 1,
                phase: String::new(),
                op: Op::Request,
            })
            .collect();
        for shards in [2usize, 3] {
            let steps: Vec<Step> = Feed::arrivals(&arrivals).sharded(shards).flat_map(|c| c.steps).collect();
            let mut load = vec![0u64; shards];
            let mut rows: Vec<Vec<u32>> = vec![Vec::new(); shards];
            for st in &steps {
                load[st.shard as usize] += 1;
                let r = &mut rows[st.shard as usize];
                // Rows are given in order of first appearance within the shard, each subject keeps its own.
                match r.iter().position(|&k| k == st.subject) {
                    Some(row) => assert_eq!(row as u32, st.row),
                    None => {
                        assert_eq!(st.row as usize, r.len());
                        r.push(st.subject);
                    }
                }
            }
            assert_eq!(steps[0].shard, 0, "the first subject goes to the first shard");
            let (lo, hi) = (load.iter().min().unwrap(), load.iter().max().unwrap());
            assert!(hi - lo <= 6 * shards as u64, "{shards} shards: loads {load:?}");
            // A split by subject index would give the hot subject's shard a third more than its share.
            assert!(*hi <= 6_000 / shards as u64 + 6, "{load:?}");
            let again: Vec<Step> = Feed::arrivals(&arrivals).sharded(shards).flat_map(|c| c.steps).collect();
            assert_eq!(again, steps, "the same placement on every pass");
        }
        // Unsharded: shard 0, and the row is the subject.
        assert!(Feed::arrivals(&arrivals).flat_map(|c| c.steps).all(|s| s.shard == 0 && s.row == s.subject));
    }

    /// A big sorted trace is streamed, and the feed is the one reading it whole gives: the same
    /// steps, names, verdicts and tables, with the scenario's start and tie rule.
    #[test]
    fn a_streamed_trace_feeds_what_the_whole_trace_feeds() {
        let dir = std::env::temp_dir().join(format!("limitlab-feed-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut csv = String::from("time,key,cost\n");
        for i in 0..30_000u64 {
            csv.push_str(&format!(
                "{}.{:03},user{},{}\n",
                1_704_067_200 + i / 40,
                i % 40 * 25 % 1000 / 100 * 100,
                i * 7 % 97,
                i % 3 + 1
            ));
        }
        std::fs::write(dir.join("t.csv"), &csv).unwrap();
        let toml = "name = \"t\"\nlimit = 10\nwindow_ms = 1000\nalgorithms = [\"fixed_window\"]\n\
                    [traffic]\nkind = \"trace\"\npath = \"t.csv\"\nrebase = \"first\"\nties = { jitter = 5 }\n";
        std::fs::write(dir.join("s.toml"), toml).unwrap();
        let s = Scenario::from_file(&dir.join("s.toml")).unwrap();
        let weights = [true];
        let mut streamed = Feed::scenario_streaming_from(&s, 1, 0).unwrap().judged(s.params, &weights);
        let mut whole = Feed::scenario_streaming_from(&s, 1, u64::MAX).unwrap().judged(s.params, &weights);
        assert!(matches!(streamed.source, Source::Trace { .. }) && matches!(whole.source, Source::Listed { .. }));
        assert_eq!(streamed.len(), 30_000);
        assert_eq!(streamed.len(), whole.len());
        let (a, b) = (unpacked(&mut streamed), unpacked(&mut whole));
        assert_eq!(a.len(), 30_000);
        assert!(a == b, "streamed and whole feeds differ");
        assert!(streamed.take_error().is_none());
        assert_eq!(streamed.into_names(), whole.into_names());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
