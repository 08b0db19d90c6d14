//! `limitlab audit`: the seed article's thirty-second audit of a production Redis, done
//! thoroughly and read-only: every key matching a pattern is scanned (on every master of a
//! cluster), grouped into patterns by its name, and judged: keys without a TTL, TTLs far longer
//! than their window, sliding logs and their size, multi-key subjects without a shared hash tag,
//! and what the keys cost per subject and at ten times the subjects.
//!
//! - [`scan`]: SCAN, pipelined reads, pacing, cluster redirects; the only commands sent.
//! - [`patterns`]: key names folded into patterns, window numbers, subjects, hash tags.
//! - [`findings`]: the verdicts, each with evidence and what to do.
//! - [`report`]: text, markdown and JSON.
//!
//! The audit of an emulator ([`audit_emulator`]) reads the same commands from a simulation's end
//! state (`limitlab audit --emulator --scenario FILE`).
pub mod demo;
pub mod findings;
pub mod patterns;
pub mod report;
pub mod scan;

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use limitlab_emulator::cluster::key_slot;
use limitlab_emulator::Result;
use limitlab_emulator::{Emulator, Reply};
use scan::{inspect, scan_step, Connector, KeyInfo, Node, Pacer};

/// Default `--rate`: commands per second.
pub const DEFAULT_RATE: u64 = 100_000;
/// Default `--sample`: keys per pattern whose memory, encoding, idle time and size are read.
pub const DEFAULT_SAMPLE: u64 = 1_000;
/// Default SCAN COUNT.
pub const DEFAULT_COUNT: u64 = 1_000;
/// Keys listed as a pattern's largest.
pub const LARGEST: usize = 5;
/// Example keys kept per pattern.
pub const EXAMPLES: usize = 3;

/// A key name's folded segments: per segment index, its original text ([`patterns::KeyName::folded`]).
type Folded = Vec<(usize, String)>;

/// A key and its cluster slot.
type KeySlot<'a> = (&'a str, u16);

/// How to audit.
#[derive(Clone, Debug)]
pub struct Options {
    /// SCAN MATCH pattern.
    pub pattern: String,
    /// Commands per second, at most.
    pub rate: u64,
    /// Keys per pattern read in full.
    pub sample: u64,
    /// SCAN COUNT.
    pub count: u64,
    /// Read the sampled keys' sizes (ZCARD, HLEN, SCARD, LLEN, STRLEN), which count as an access
    /// and reset their LRU clock.
    pub sizes: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { pattern: "*".into(), rate: DEFAULT_RATE, sample: DEFAULT_SAMPLE, count: DEFAULT_COUNT, sizes: false }
    }
}

/// What one pattern's keys look like, gathered while scanning.
#[derive(Clone, Debug, Default)]
pub struct PatternStats {
    pub pattern: String,
    pub count: u64,
    pub types: BTreeMap<String, u64>,
    pub encodings: BTreeMap<String, u64>,
    /// PTTL of every key with a TTL.
    pub ttls: Vec<i64>,
    pub no_ttl: u64,
    /// Keys read in full.
    pub sampled: u64,
    /// MEMORY USAGE of the sampled keys.
    pub memory: Vec<u64>,
    /// The sampled keys with a TTL, and those without: to estimate the expires dict's share.
    pub sampled_with_ttl: u64,
    /// Sizes (ZCARD, HLEN, ...) of the sampled keys.
    pub sizes: Vec<u64>,
    /// Idle seconds of sampled keys without a TTL.
    pub idle_no_ttl: Vec<u64>,
    /// The largest sampled keys by MEMORY USAGE.
    pub largest: Vec<(String, u64)>,
    pub examples: Vec<String>,
    pub examples_no_ttl: Vec<String>,
    /// Per segment index: the largest digits-only value seen, and whether every key had one there.
    pub numbers: BTreeMap<usize, (u64, u64)>,
    /// Distinct subjects (hash tag content or first id segment), by segment choice made at the end:
    /// kept as (hash tag, folded segments) per key, compactly.
    subjects_raw: HashSet<(Option<String>, Folded)>,
    /// Whether any key had a hash tag, and how many.
    pub tagged: u64,
    /// Untagged multi-segment keys: per (family, subject-ish) the first key and its slot, for the
    /// CROSSSLOT check; resolved at the end with the window segment known.
    untagged: Vec<(Folded, String, u16)>,
    /// Keys whose size was read (an access: their LRU clock was reset).
    pub touched: u64,
}

/// A pattern, summed up.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PatternReport {
    pub pattern: String,
    /// Whether the keys look like a rate limiter's (a window number, a limiter's word in the name,
    /// or an explicit `--match`); the others get no limiter findings.
    pub limiter: bool,
    pub keys: u64,
    pub types: BTreeMap<String, u64>,
    pub encodings: BTreeMap<String, u64>,
    pub no_ttl: u64,
    pub ttl_min_ms: Option<i64>,
    pub ttl_median_ms: Option<i64>,
    pub ttl_max_ms: Option<i64>,
    /// The window the pattern's window numbers suggest, in ms.
    pub window_ms: Option<u64>,
    /// The segment (0-based, `:`-separated) holding the window number.
    pub window_segment: Option<usize>,
    /// The newest key's window number there.
    pub window_newest: Option<u64>,
    pub sampled: u64,
    /// MEMORY USAGE summed over the pattern's keys: the sampled keys' mean times the count.
    pub memory_bytes: u64,
    /// The 95% error bound of `memory_bytes` (0 when every key was sampled).
    pub memory_error_bytes: u64,
    /// The server's `used_memory` for these keys (the model of
    /// [`limitlab_emulator::used_memory`]: dict entries as allocated, the expires dict's entries,
    /// bucket arrays at load factor 1).
    pub used_memory_bytes: u64,
    pub subjects: u64,
    pub memory_per_subject: Option<u64>,
    pub used_memory_per_subject: Option<u64>,
    pub size_min: Option<u64>,
    pub size_median: Option<u64>,
    pub size_max: Option<u64>,
    pub idle_max_s: Option<u64>,
    pub idle_median_s: Option<u64>,
    pub largest: Vec<(String, u64)>,
    pub examples: Vec<String>,
    pub examples_no_ttl: Vec<String>,
    pub hash_tagged: u64,
    /// Subjects with keys of this pattern in more than one hash slot, with two such keys.
    pub cross_slot_subjects: u64,
    pub cross_slot_example: Option<(String, u16, String, u16)>,
}

/// The whole audit.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct AuditReport {
    /// The server (its URL without the password), or `emulator`.
    pub target: String,
    pub cluster: bool,
    pub masters: Vec<String>,
    pub pattern: String,
    /// DBSIZE summed over the masters at the start.
    pub dbsize: u64,
    /// Keys scanned that matched.
    pub keys: u64,
    pub commands: u64,
    pub rate: u64,
    pub sample: u64,
    /// Whether sizes were read (`--sizes`), and of how many keys: each such read reset a key's LRU
    /// clock (the other commands leave it as it was).
    pub sizes_read: bool,
    pub lru_touched: u64,
    pub elapsed_s: f64,
    /// The server's time at the start (TIME), in ms.
    pub server_time_ms: i64,
    pub patterns: Vec<PatternReport>,
    pub findings: Vec<findings::Finding>,
}

impl PatternStats {
    fn add(&mut self, info: &KeyInfo, name: &patterns::KeyName, sample_limit: u64) {
        let key = patterns::printable(&info.key);
        self.count += 1;
        *self.types.entry(info.ty.clone()).or_default() += 1;
        if let Some(e) = &info.encoding {
            *self.encodings.entry(e.clone()).or_default() += 1;
        }
        if info.pttl >= 0 {
            self.ttls.push(info.pttl);
        } else if info.pttl == -1 {
            self.no_ttl += 1;
            if self.examples_no_ttl.len() < EXAMPLES {
                self.examples_no_ttl.push(key.clone());
            }
            // An integer value from 0 to 9999 is one of Redis's shared objects, whose idle time is
            // not the key's: only values known to be longer (STRLEN of 5 or more) are dated.
            let shared = info.encoding.as_deref() == Some("int") && info.size.is_none_or(|n| n < 5);
            if let (Some(i), false) = (info.idle_s, shared) {
                self.idle_no_ttl.push(i);
            }
        }
        if self.examples.len() < EXAMPLES {
            self.examples.push(key.clone());
        }
        if let Some(m) = info.memory {
            self.sampled += 1;
            self.memory.push(m);
            if info.pttl >= 0 {
                self.sampled_with_ttl += 1;
            }
            self.largest.push((key.clone(), m));
            self.largest.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            self.largest.truncate(LARGEST);
        }
        let _ = sample_limit;
        if let Some(s) = info.size {
            self.touched += 1;
            self.sizes.push(s);
        }
        for &(i, v) in &name.numbers {
            let e = self.numbers.entry(i).or_insert((0, 0));
            e.0 = e.0.max(v);
            e.1 += 1;
        }
        if name.hash_tag.is_some() {
            self.tagged += 1;
        } else if !name.folded.is_empty() {
            self.untagged.push((name.folded.clone(), key, key_slot(&info.key)));
        }
        self.subjects_raw.insert((name.hash_tag.clone(), name.folded.clone()));
    }

    fn report(&self, now_ms: i64, cluster: bool, all_limiter: bool) -> PatternReport {
        // The window: a digits-only segment present in every key whose largest value reads as a
        // recent window number.
        let (window_segment, window_ms, window_newest) = self
            .numbers
            .iter()
            .filter(|(_, &(_, n))| n == self.count)
            .find_map(|(&i, &(max, _))| patterns::window_of(max, now_ms).map(|w| (Some(i), Some(w), Some(max))))
            .unwrap_or((None, None, None));
        // Subjects: hash tag content, else the first folded segment other than the window's.
        let mut subjects: HashSet<&str> = HashSet::new();
        for (tag, folded) in &self.subjects_raw {
            let s = match tag {
                Some(t) => Some(t.as_str()),
                None => folded.iter().find(|(i, _)| Some(*i) != window_segment).map(|(_, s)| s.as_str()),
            };
            if let Some(s) = s {
                subjects.insert(s);
            }
        }
        // CROSSSLOT: untagged keys of one subject in different slots.
        // Per subject: its first key, and the first of its keys in another slot.
        let mut by_subject: HashMap<&str, (KeySlot<'_>, Option<KeySlot<'_>>)> = HashMap::new();
        for (folded, key, slot) in &self.untagged {
            let Some((_, s)) = folded.iter().find(|(i, _)| Some(*i) != window_segment) else { continue };
            let (first, other) = by_subject.entry(s.as_str()).or_insert(((key.as_str(), *slot), None));
            if other.is_none() && first.1 != *slot {
                *other = Some((key.as_str(), *slot));
            }
        }
        let mut crossing: Vec<(&str, u16, &str, u16)> =
            by_subject.values().filter_map(|&((k, s), o)| o.map(|(k2, s2)| (k, s, k2, s2))).collect();
        crossing.sort();
        let mut ttls = self.ttls.clone();
        ttls.sort_unstable();
        let mut sizes = self.sizes.clone();
        sizes.sort_unstable();
        let mut idle = self.idle_no_ttl.clone();
        idle.sort_unstable();
        let (memory_bytes, memory_error_bytes) = extrapolate(&self.memory, self.count);
        let used = used_memory_estimate(self, memory_bytes, cluster);
        let limiter = all_limiter || window_ms.is_some() || patterns::limiter_name(&self.pattern);
        // Subjects are a limiter's notion: other keys (a queue, a config key) have none.
        let subjects_n = if limiter { subjects.len() as u64 } else { 0 };
        PatternReport {
            pattern: self.pattern.clone(),
            limiter,
            keys: self.count,
            types: self.types.clone(),
            encodings: self.encodings.clone(),
            no_ttl: self.no_ttl,
            ttl_min_ms: ttls.first().copied(),
            ttl_median_ms: median(&ttls),
            ttl_max_ms: ttls.last().copied(),
            window_ms,
            window_segment,
            window_newest,
            sampled: self.sampled,
            memory_bytes,
            memory_error_bytes,
            used_memory_bytes: used,
            subjects: subjects_n,
            memory_per_subject: (subjects_n > 0).then(|| memory_bytes / subjects_n),
            used_memory_per_subject: (subjects_n > 0).then(|| used / subjects_n),
            size_min: sizes.first().copied(),
            size_median: median(&sizes),
            size_max: sizes.last().copied(),
            idle_max_s: idle.last().copied(),
            idle_median_s: median(&idle),
            largest: self.largest.clone(),
            examples: self.examples.clone(),
            examples_no_ttl: self.examples_no_ttl.clone(),
            hash_tagged: self.tagged,
            cross_slot_subjects: crossing.len() as u64,
            cross_slot_example: crossing.first().map(|(a, b, c, d)| (a.to_string(), *b, c.to_string(), *d)),
        }
    }
}

/// The median of sorted values (the lower middle for an even count).
pub fn median<T: Copy>(sorted: &[T]) -> Option<T> {
    if sorted.is_empty() {
        None
    } else {
        Some(sorted[(sorted.len() - 1) / 2])
    }
}

/// The total over `count` keys from a sample of their sizes, and the 95% error bound of that total
/// (normal approximation with the finite-population correction: 0 when every key was sampled).
pub fn extrapolate(sample: &[u64], count: u64) -> (u64, u64) {
    let n = sample.len() as f64;
    if sample.is_empty() {
        return (0, 0);
    }
    let mean = sample.iter().map(|&x| x as f64).sum::<f64>() / n;
    let total = (mean * count as f64).round() as u64;
    if sample.len() as u64 >= count || sample.len() < 2 {
        return (total, 0);
    }
    let var = sample.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let fpc = ((count as f64 - n) / (count as f64 - 1.0)).max(0.0);
    let se = count as f64 * (var / n).sqrt() * fpc.sqrt();
    (total, (1.96 * se).round() as u64)
}

/// `used_memory` for a pattern's keys: MEMORY USAGE plus each dict entry's rounding (24 -> 32
/// bytes, 40 -> 48 in a cluster), the expires entry of each key with a TTL (32), and their share
/// of the two dicts' bucket arrays (8 bytes a bucket; a table at load factor between 1/2 and 1,
/// taken here as 3/4: 10.7 bytes a key). Shared integers are not told apart here (MEMORY USAGE
/// counts them).
fn used_memory_estimate(s: &PatternStats, memory_bytes: u64, _cluster: bool) -> u64 {
    let keys = s.count as f64;
    let with_ttl = s.ttls.len() as f64;
    let buckets = 8.0 / 0.75;
    (memory_bytes as f64 + keys * 8.0 + with_ttl * 32.0 + (keys + with_ttl) * buckets).round() as u64
}

/// Where an audit reads from: the nodes to scan (every master) and how to reach a node a redirect
/// names.
pub struct Target<'a> {
    pub name: String,
    pub cluster: bool,
    pub nodes: Vec<Box<dyn Node + 'a>>,
    pub connect: Box<Connector<'a>>,
}

/// A progress bar's hooks: total keys (DBSIZE) at the start, then keys done.
pub trait Progress {
    fn start(&mut self, _total: u64) {}
    fn advance(&mut self, _done: u64, _scanned_estimate: u64) {}
    fn finish(&mut self) {}
}

/// No progress shown.
pub struct Quiet;
impl Progress for Quiet {}

/// Audits `target`.
pub fn audit(target: &mut Target<'_>, opts: &Options, progress: &mut dyn Progress) -> Result<AuditReport> {
    let mut pacer = Pacer::new(opts.rate);
    // DBSIZE of every master (for the progress bar's ETA), and the time (for window numbers).
    let mut dbsize = 0u64;
    for n in target.nodes.iter_mut() {
        pacer.before(1);
        let r = n.pipeline(&[vec![b"DBSIZE".to_vec()]])?;
        dbsize += r.first().and_then(scan::int_reply).unwrap_or(0).max(0) as u64;
    }
    pacer.before(1);
    let now_ms = match target.nodes[0].pipeline(&[vec![b"TIME".to_vec()]])?.pop() {
        Some(Reply::Array(v)) if v.len() == 2 => {
            let s = scan::int_reply(&v[0]).unwrap_or(0);
            let us = scan::int_reply(&v[1]).unwrap_or(0);
            s * 1000 + us / 1000
        }
        _ => 0,
    };
    progress.start(dbsize);
    let mut stats: HashMap<String, PatternStats> = HashMap::new();
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    let mut others: HashMap<String, Box<dyn Node>> = HashMap::new();
    let mut keys_done = 0u64;
    let mut scan_calls = 0u64;
    for ni in 0..target.nodes.len() {
        let mut cursor = b"0".to_vec();
        loop {
            let node = &mut target.nodes[ni];
            let (next, keys) = scan_step(node.as_mut(), &cursor, &opts.pattern, opts.count, &mut pacer)?;
            scan_calls += 1;
            let mut batch = Vec::with_capacity(keys.len());
            let mut names = Vec::with_capacity(keys.len());
            let mut pending: HashMap<String, u64> = HashMap::new();
            for k in keys {
                if target.cluster && !seen.insert(k.clone()) {
                    continue;
                }
                let name = patterns::infer(&k);
                let st = stats
                    .entry(name.pattern.clone())
                    .or_insert_with(|| PatternStats { pattern: name.pattern.clone(), ..Default::default() });
                // Sampled: the first `sample` keys of each pattern in SCAN order (hash order, which
                // has nothing to do with the names).
                let in_batch = pending.entry(name.pattern.clone()).or_default();
                let sampled = st.count + *in_batch < opts.sample;
                *in_batch += 1;
                batch.push((k, sampled));
                names.push(name);
            }
            if !batch.is_empty() {
                let infos = inspect(node.as_mut(), &batch, opts.sizes, &mut pacer, &mut others, &mut target.connect)?;
                for (info, name) in infos.iter().zip(&names) {
                    if info.ty == "none" {
                        continue; // expired or deleted since SCAN
                    }
                    let st = stats.get_mut(&name.pattern).expect("made above");
                    st.add(info, name, opts.sample);
                    keys_done += 1;
                }
            }
            progress.advance(keys_done, (scan_calls * opts.count).min(dbsize));
            if next == b"0" {
                break;
            }
            cursor = next;
        }
    }
    progress.finish();
    // `--match` other than `*`: the user named the limiter's keys.
    let all_limiter = opts.pattern != "*";
    let mut patterns: Vec<PatternReport> =
        stats.values().map(|s| s.report(now_ms, target.cluster, all_limiter)).collect();
    patterns.sort_by(|a, b| b.keys.cmp(&a.keys).then_with(|| a.pattern.cmp(&b.pattern)));
    let findings = findings::judge(&patterns, now_ms);
    Ok(AuditReport {
        target: target.name.clone(),
        cluster: target.cluster,
        masters: target.nodes.iter().map(|n| n.name()).collect(),
        pattern: opts.pattern.clone(),
        dbsize,
        keys: keys_done,
        commands: pacer.sent(),
        rate: opts.rate,
        sample: opts.sample,
        sizes_read: opts.sizes,
        lru_touched: stats.values().map(|s| s.touched).sum(),
        elapsed_s: pacer.elapsed_secs(),
        server_time_ms: now_ms,
        patterns,
        findings,
    })
}

/// Audits an emulator's keyspace (a simulation's end state).
pub fn audit_emulator(emu: &mut Emulator, opts: &Options, progress: &mut dyn Progress) -> Result<AuditReport> {
    let cluster = emu.is_cluster();
    let mut target = Target {
        name: "emulator".into(),
        cluster,
        nodes: vec![Box::new(scan::EmulatorNode(emu))],
        connect: Box::new(|addr: &str| {
            Err(limitlab_emulator::Error::Redis(format!("the emulator has no node {addr}")))
        }),
    };
    audit(&mut target, opts, progress)
}
