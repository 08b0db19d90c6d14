//! Trace replay: reads recorded traffic (CSV, TSV, JSON lines, common/combined access logs) into
//! arrivals, and writes arrivals back as CSV so a generated pattern can be saved and replayed.
//!
//! # Rules
//! - Nothing is silently dropped: every line that is not blank must give an arrival, or reading fails
//!   with [`Error::Parse`] naming the file and the 1-based line.
//! - Output is sorted by time; lines with equal times keep their order in the file.
//! - An `op` column (CSV/TSV) or field (JSONL) makes a line a lifecycle operation of the client
//!   instead of a request: `refund`, `reset` or `clear` ([`Op`](crate::traffic::Op)); empty or
//!   `request` is a request. The CSV writer adds the column only when some arrival needs it.
//! - Logs record times at a resolution (one second for access logs) much coarser than a limiter's
//!   window arithmetic, and how requests within one tick are placed changes results a great deal for
//!   one-second windows. [`TieRule`] makes that an explicit choice.
//!
//! # Times
//! A time's resolution is the unit of its last written digit: `1704067200` has one second,
//! `1704067200.25` a hundredth, `1704067200123` in milliseconds one millisecond, an access log's
//! `[01/Jul/1995:00:00:01 -0400]` one second. Tie rules spread equal times across that resolution, or
//! across `tick_ms` when the spec gives one (times written more finely than they were recorded).
//!
//! [`TimeFormat::Auto`] reads RFC 3339 when the value looks like a date (`2024-01-01T00:00:00.5Z`),
//! otherwise a number: milliseconds when the time column's name ends in `ms` or `millis`
//! (`time_ms`, `ts_ms`), seconds otherwise (fractions allowed).
//!
//! Note on nginx: `$msec` is when the log line was written (the end of the request), so the arrival
//! is about `$msec - $request_time`; compute that column before replaying if it matters.
use std::path::{Path, PathBuf};

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::{invalid, rng, sort_stable, Arrival};
use limitlab_emulator::clock::Micros;
use limitlab_emulator::{Error, Result};

mod delimited;
mod lines;
pub mod skipped;
mod stream;
mod validate;
mod values;
mod write;
use delimited::Columns;
pub use stream::{Scan, TraceStream};
pub(crate) use write::csv_writer;
pub use write::{read_csv, write_csv, write_csv_to, CSV_HEADER};

const CONTEXT: &str = "traffic.trace";

/// Column (or JSON field) names tried, in order, when the spec names none.
const TIME_NAMES: [&str; 7] = ["time", "timestamp", "ts", "time_ms", "timestamp_ms", "ts_ms", "at"];
const KEY_NAMES: [&str; 7] = ["key", "user", "user_id", "client", "ip", "subject", "api_key"];
const COST_NAME: &str = "cost";
const PHASE_NAME: &str = "phase";
/// The column or field of a lifecycle operation (`refund`, `reset`, `clear`; empty: a request).
const OP_NAME: &str = "op";

/// The longest tick a time's resolution is taken to be (one day): `0e30` is a time, not a resolution.
const MAX_TICK_US: i64 = 86_400_000_000;

/// How arrivals that share a timestamp are placed within its resolution (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TieRule {
    /// All at the recorded instant (the start of the tick), in file order. The default, because it
    /// changes nothing: what the file says is what is replayed.
    #[default]
    Same,
    /// `n` arrivals sharing a tick of length `r` go to `t + floor(i * r / n)`, `i = 0..n`, in file order.
    Spread,
    /// Each arrival goes to `t` plus a uniform random offset in `[0, r)` drawn from this seed (ties are
    /// visited in time order, then file order, so the result depends only on the file and the seed).
    Jitter(u64),
}

/// The layout of a trace file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    /// Comma-separated with a header line; quoting as RFC 4180.
    Csv,
    /// Tab-separated with a header line.
    Tsv,
    /// One JSON object per line.
    Jsonl,
    /// nginx/Apache common or combined log format; the key is the client address (first field).
    #[serde(alias = "common", alias = "combined", alias = "log")]
    Clf,
}

impl TraceFormat {
    /// The format a file name suggests: `.csv`, `.tsv`/`.tab`, `.jsonl`/`.ndjson`/`.json`, `.log`.
    /// Standard input (`-`, `/dev/stdin`) is read as CSV unless `format` says otherwise.
    pub fn from_path(path: &Path) -> Option<TraceFormat> {
        if crate::files::is_stdin(path) {
            return Some(TraceFormat::Csv);
        }
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "csv" => TraceFormat::Csv,
            "tsv" | "tab" => TraceFormat::Tsv,
            "jsonl" | "ndjson" | "json" => TraceFormat::Jsonl,
            "log" => TraceFormat::Clf,
            _ => return None,
        })
    }
}

/// How a CSV/TSV/JSONL time value is written (access logs have their own fixed form).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeFormat {
    /// See the module docs.
    #[default]
    Auto,
    /// Seconds since the epoch (or since the trace began), fractions allowed.
    #[serde(alias = "s")]
    Seconds,
    /// Milliseconds, fractions allowed.
    #[serde(alias = "ms")]
    Millis,
    /// `2024-01-01T00:00:00Z`, `2024-01-01 00:00:00.123+02:00`: an offset or `Z` is required.
    Rfc3339,
}

/// Where recorded times land on the virtual clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rebase {
    /// Shift so that the earliest arrival is at `start` (the default). With an aligned `start`, a
    /// trace whose first time is on a whole second keeps its position relative to window boundaries.
    #[default]
    First,
    /// Keep recorded times as microseconds since the epoch; `start` is ignored.
    Absolute,
    /// Recorded times are offsets from `start` (a trace beginning at 0).
    Offset,
}

/// A trace to replay. In a scenario file:
///
/// ```toml
/// [traffic]
/// kind = "trace"
/// path = "access.log"      # format from the extension unless `format` says
/// ties = "spread"          # or "same", or { jitter = 7 }
/// # tick_ms = 1000         # what `spread` and `jitter` spread across (default: as written)
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    pub path: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<TraceFormat>,
    /// CSV/TSV column or JSON field with the time; default: the first of `time`, `timestamp`, `ts`,
    /// `time_ms`, `timestamp_ms`, `ts_ms`, `at` present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_column: Option<String>,
    /// Column or field with the key; default: the first of `key`, `user`, `user_id`, `client`, `ip`,
    /// `subject`, `api_key` present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_column: Option<String>,
    /// Column or field with the cost (a positive integer); default `cost` if present, else cost 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_column: Option<String>,
    /// Column or field with the phase label; default `phase` if present, else empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase_column: Option<String>,
    #[serde(default)]
    pub time_format: TimeFormat,
    #[serde(default)]
    pub ties: TieRule,
    /// The length of one tick of the recorded times, in ms: what `spread` and `jitter` place a
    /// tick's requests across. Default: the resolution each time is written to (the unit of its
    /// last digit). Set it when times are written more finely than they were recorded, e.g.
    /// milliseconds that always fall on whole seconds (`tick_ms = 1000`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_ms: Option<u64>,
    #[serde(default)]
    pub rebase: Rebase,
    /// Skip the lines that do not read as a request (`limitlab run --skip-bad-lines`) instead of
    /// refusing the file: they are counted, and the first few named with their line and reason
    /// ([`skipped::take`]). A CSV/TSV header that lacks a column still refuses the file.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_bad_lines: bool,
}

/// How finely a trace's times are recorded: what decides whether its tie rule matters. A trace
/// whose tick is long against a limiter's window (an access log's whole seconds against a
/// one-second window) puts many requests at one instant, and where [`TieRule`] places them within
/// the tick moves the verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Ticks {
    /// The number of requests.
    pub requests: usize,
    /// The longest tick every recorded time is a whole number of (the greatest common divisor of
    /// the times as written: µs since the epoch, or since the trace's zero), in µs: 1,000,000 for
    /// an access log, or for a CSV of milliseconds that all fall on whole seconds. When every time
    /// is 0, the resolution it is written to.
    pub tick_us: i64,
    /// The resolution the times are written to (the unit of their last digit, the coarsest of
    /// them), in µs: what `spread` and `jitter` spread ties across unless `tick_ms` is set.
    pub written_us: i64,
    /// Requests that share their recorded time with another request.
    pub sharing: usize,
    /// The most requests at one recorded time.
    pub busiest: usize,
}

/// Folds records, in time order, into [`Ticks`]: the same figures whether a file is read whole
/// ([`TraceSpec::parse_ticks`]) or a chunk at a time ([`TraceSpec::scan`]).
#[derive(Debug, Default)]
struct TickCount {
    gcd: u64,
    /// The coarsest resolution seen (0 before any record: then 1).
    written: i64,
    requests: usize,
    distinct: usize,
    sharing: usize,
    busiest: usize,
    /// The time being counted and how many records had it.
    group: Option<(i64, usize)>,
}

impl TickCount {
    fn add(&mut self, r: &Raw) {
        self.requests += 1;
        self.gcd = gcd(self.gcd, r.at.unsigned_abs());
        self.written = self.written.max(r.res);
        match self.group {
            Some((at, len)) if at == r.at => self.group = Some((at, len + 1)),
            _ => {
                self.close_group();
                self.group = Some((r.at, 1));
            }
        }
    }

    fn close_group(&mut self) {
        if let Some((_, len)) = self.group.take() {
            if len > 1 {
                self.sharing += len;
            }
            self.busiest = self.busiest.max(len);
            self.distinct += 1;
        }
    }

    fn finish(mut self) -> Ticks {
        self.close_group();
        let written_us = self.written.max(1);
        // One instant (or none) says nothing of a tick beyond how finely it is written: the gcd of a
        // single time is the time itself, a "tick" of decades.
        let tick_us = if self.gcd == 0 || self.distinct < 2 {
            written_us
        } else {
            i64::try_from(self.gcd).unwrap_or(i64::MAX).min(MAX_TICK_US)
        };
        Ticks { requests: self.requests, tick_us, written_us, sharing: self.sharing, busiest: self.busiest }
    }
}

impl Ticks {
    /// Whether the tick is coarse against a window of `window_ms`: at least a tenth of it.
    pub fn coarse_for(&self, window_ms: u64) -> bool {
        self.requests > 0 && (self.tick_us as i128) * 10 >= window_ms as i128 * 1000
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// One parsed line before rebasing and tie handling.
struct Raw {
    at: i64,
    /// The length of the time's tick, in µs (at least 1).
    res: i64,
    /// The line of the file it starts on.
    line: usize,
    arrival: Arrival,
}

impl Raw {
    /// A placeholder left where a record was taken out of a chunk.
    const EMPTY: Raw = Raw {
        at: 0,
        res: 1,
        line: 0,
        arrival: Arrival {
            at: Micros(0),
            key: String::new(),
            cost: 0,
            phase: String::new(),
            op: crate::traffic::Op::Request,
        },
    };
}

/// The columns a CSV or TSV header names.
impl TraceSpec {
    /// A trace at `path` with every other setting at its default.
    pub fn new(path: impl Into<PathBuf>) -> TraceSpec {
        TraceSpec {
            path: path.into(),
            format: None,
            time_column: None,
            key_column: None,
            cost_column: None,
            phase_column: None,
            time_format: TimeFormat::Auto,
            ties: TieRule::Same,
            tick_ms: None,
            rebase: Rebase::First,
            skip_bad_lines: false,
        }
    }

    /// The format to read: `format` if set, else from the extension.
    pub fn resolved_format(&self) -> Result<TraceFormat> {
        self.format.or_else(|| TraceFormat::from_path(&self.path)).ok_or_else(|| {
            invalid(
                CONTEXT,
                "format",
                format!("cannot tell the format of {} from its name; set `format`", self.path.display()),
            )
        })
    }

    /// Reads the file and returns its arrivals, sorted by time (see [`Rebase`] for where `start` goes).
    pub fn read(&self, start: Micros) -> Result<Vec<Arrival>> {
        self.parse(&self.read_text()?, start)
    }

    /// The file's text.
    fn read_text(&self) -> Result<String> {
        self.validate()?;
        let bytes = crate::files::read_trace(&self.path)?;
        String::from_utf8(bytes).map_err(|e| {
            let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
            self.error(line, "not valid UTF-8")
        })
    }

    /// Reads the file and tells how finely its times are recorded (see [`Ticks`]): a chunk at a time
    /// when it is sorted by time, whole when it is not.
    pub fn ticks(&self) -> Result<Ticks> {
        let scan = self.scan()?;
        if scan.sorted() {
            return Ok(scan.ticks);
        }
        self.parse_ticks(&self.read_text()?)
    }

    /// [`TraceSpec::ticks`] of trace text, as [`TraceSpec::parse`] reads it.
    pub fn parse_ticks(&self, text: &str) -> Result<Ticks> {
        let mut raws = self.parse_raws(text)?;
        raws.sort_by_key(|r| r.at);
        let mut count = TickCount::default();
        raws.iter().for_each(|r| count.add(r));
        Ok(count.finish())
    }

    /// The lines of trace text, in file order, before rebasing and tie handling.
    fn parse_raws(&self, text: &str) -> Result<Vec<Raw>> {
        self.validate()?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut out = Vec::new();
        self.parse_chunk(text, 1, &mut None, &mut out)?;
        Ok(out)
    }

    /// Parses `text`, whole records of the file starting at line `first_line`, onto `out`. For CSV
    /// and TSV the first chunk starts with the header, which fills `columns` for the chunks after it.
    fn parse_chunk(
        &self,
        text: &str,
        first_line: usize,
        columns: &mut Option<Columns>,
        out: &mut Vec<Raw>,
    ) -> Result<()> {
        let delimiter = match self.resolved_format()? {
            TraceFormat::Csv => b',',
            TraceFormat::Tsv => b'\t',
            TraceFormat::Jsonl => return self.parse_jsonl(text, first_line, out),
            TraceFormat::Clf => return self.parse_clf(text, first_line, out),
        };
        self.parse_delimited(text, first_line, delimiter, columns, out)
    }

    /// Parses trace text as if read from [`TraceSpec::path`] (which names the file in errors and, when
    /// `format` is unset, gives the format).
    pub fn parse(&self, text: &str, start: Micros) -> Result<Vec<Arrival>> {
        let mut raws = self.parse_raws(text)?;
        // Rebase, then place ties, then sort (stable: file order among equal times).
        let shift = match self.rebase {
            Rebase::Absolute => 0,
            Rebase::Offset => start.0,
            Rebase::First => raws.iter().map(|r| r.at).min().map_or(0, |first| start.0.saturating_sub(first)),
        };
        for r in &mut raws {
            r.at =
                r.at.checked_add(shift).ok_or_else(|| invalid(CONTEXT, "rebase", "a shifted time is out of range"))?;
        }
        raws.sort_by_key(|r| r.at);
        self.place_ties(&mut raws);
        let mut out: Vec<Arrival> = raws.into_iter().map(|r| Arrival { at: Micros(r.at), ..r.arrival }).collect();
        sort_stable(&mut out);
        Ok(out)
    }

    /// Applies the tie rule to `raws`, sorted by time.
    fn place_ties(&self, raws: &mut [Raw]) {
        if self.ties == TieRule::Same {
            return;
        }
        let mut jitter = self.jitter_rng();
        for group in raws.chunk_by_mut(|a, b| a.at == b.at) {
            self.place_group(group, &mut jitter);
        }
    }

    /// The random source of the `jitter` rule (None for the other rules).
    fn jitter_rng(&self) -> Option<rand_chacha::ChaCha8Rng> {
        match self.ties {
            TieRule::Jitter(seed) => Some(rng(seed)),
            _ => None,
        }
    }

    /// Applies the tie rule to one group of arrivals recorded at the same time (groups are visited
    /// in time order, so that `jitter` draws the same offsets however the file is read).
    fn place_group(&self, group: &mut [Raw], jitter: &mut Option<rand_chacha::ChaCha8Rng>) {
        if self.ties == TieRule::Same {
            return;
        }
        let res = match self.tick_ms {
            Some(t) => t as i64 * 1000,
            None => group.iter().map(|r| r.res).max().unwrap_or(1),
        };
        let n = group.len() as i64;
        for (i, r) in group.iter_mut().enumerate() {
            let offset = match jitter {
                Some(g) => g.random_range(0..res as u64) as i64,
                // i < n and res fit easily in i128.
                None => ((i as i128 * res as i128) / n as i128) as i64,
            };
            r.at = r.at.saturating_add(offset);
        }
    }

    /// A bad line's error: returned, or with `skip_bad_lines` recorded ([`skipped`]) and dropped.
    fn skip_or_fail(&self, e: Error) -> Result<()> {
        match e {
            Error::Parse { file, line, reason } if self.skip_bad_lines => {
                skipped::record(&file, line, reason);
                Ok(())
            }
            e => Err(e),
        }
    }

    fn error(&self, line: usize, reason: impl Into<String>) -> Error {
        Error::Parse { file: self.path.clone(), line, reason: reason.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2024-01-01T00:00:00Z.
    pub(super) const T0: Micros = Micros(1_704_067_200_000_000);

    /// A trace named `name` that keeps its times as written.
    pub(super) fn spec(name: &str) -> TraceSpec {
        TraceSpec { rebase: Rebase::Absolute, ..TraceSpec::new(name) }
    }

    /// The line and reason of the error reading `text` gives.
    pub(super) fn parse_err(s: &TraceSpec, text: &str) -> (usize, String) {
        match s.parse(text, T0) {
            Err(Error::Parse { file, line, reason }) => {
                assert_eq!(file, s.path);
                (line, reason)
            }
            other => panic!("{other:?}"),
        }
    }

    pub(super) fn times(v: &[Arrival]) -> Vec<i64> {
        v.iter().map(|a| a.at.0).collect()
    }

    #[test]
    fn tie_rules() {
        let text = "time,key\n10,a\n10,b\n10,c\n10,d\n11,e\n10.5,f\n";
        let same = spec("t.csv").parse(text, Micros(0)).unwrap();
        assert_eq!(times(&same), [10_000_000, 10_000_000, 10_000_000, 10_000_000, 10_500_000, 11_000_000]);
        let spread = TraceSpec { ties: TieRule::Spread, ..spec("t.csv") }.parse(text, Micros(0)).unwrap();
        let got: Vec<_> = spread.iter().map(|a| (a.at.0, a.key.as_str())).collect();
        assert_eq!(
            got,
            [
                (10_000_000, "a"),
                (10_250_000, "b"),
                (10_500_000, "c"),
                (10_500_000, "f"),
                (10_750_000, "d"),
                (11_000_000, "e")
            ]
        );
        let jitter = |seed| TraceSpec { ties: TieRule::Jitter(seed), ..spec("t.csv") }.parse(text, Micros(0)).unwrap();
        let j = jitter(1);
        assert_eq!(j, jitter(1));
        assert_ne!(j, jitter(2));
        assert!(j.is_sorted_by_key(|a| a.at));
        for a in &j {
            let base = match a.key.as_str() {
                "e" => 11_000_000,
                "f" => 10_500_000,
                _ => 10_000_000,
            };
            let res = if a.key == "f" { 100_000 } else { 1_000_000 };
            assert!(a.at.0 >= base && a.at.0 < base + res, "{a:?}");
        }
    }

    #[test]
    fn ticks_tell_how_finely_times_are_recorded() {
        let line = |s: u32| format!("1.2.3.4 - - [01/Jul/1995:00:00:{s:02} -0400] \"GET / HTTP/1.0\" 200 1\n");
        let log = [line(1), line(1), line(1), line(3), line(4)].concat();
        let t = TraceSpec::new("x.log").parse_ticks(&log).unwrap();
        assert_eq!(t, Ticks { requests: 5, tick_us: 1_000_000, written_us: 1_000_000, sharing: 3, busiest: 3 });
        assert!(t.coarse_for(1000) && t.coarse_for(10_000) && !t.coarse_for(10_001));
        // Milliseconds that all fall on whole seconds: written finely, recorded coarsely.
        let t = spec("t.csv").parse_ticks("time_ms,key\n1704067200000,a\n1704067201000,b\n").unwrap();
        assert_eq!((t.tick_us, t.written_us, t.sharing, t.busiest), (1_000_000, 1000, 0, 1));
        // A burst pattern written to the µs (as `attack` saves them) is as fine as its times.
        let t = spec("t.csv")
            .parse_ticks("time,key\n1704067200.000000,a\n1704067200.000000,a\n1704067201.001000,a\n")
            .unwrap();
        assert_eq!((t.tick_us, t.written_us, t.sharing), (11_000, 1, 2));
        assert!(!t.coarse_for(1000));
        // One instant, at zero or not: its written resolution; nothing at all: never coarse.
        let t = spec("t.csv").parse_ticks("time_ms,key\n1704067200999,a\n1704067200999,b\n").unwrap();
        assert_eq!((t.tick_us, t.written_us, t.busiest), (1000, 1000, 2));
        // Times years apart on whole days: a tick of at most a day (what `tick_ms` accepts).
        let t = spec("t.csv").parse_ticks("time,key\n0,a\n315360000,b\n").unwrap();
        assert_eq!(t.tick_us, MAX_TICK_US);
        assert_eq!(spec("t.csv").parse_ticks("time,key\n0,a\n0,b\n").unwrap().tick_us, 1_000_000);
        assert!(!spec("t.csv").parse_ticks("time,key\n").unwrap().coarse_for(1));
    }

    #[test]
    fn a_tick_spreads_ties_across_it_whatever_the_written_resolution() {
        let text = "time_ms,key\n1000,a\n1000,b\n2000,c\n";
        let s = TraceSpec { ties: TieRule::Spread, ..spec("t.csv") };
        assert_eq!(times(&s.parse(text, Micros(0)).unwrap()), [1_000_000, 1_000_500, 2_000_000]);
        let s = TraceSpec { tick_ms: Some(1000), ..s };
        assert_eq!(times(&s.parse(text, Micros(0)).unwrap()), [1_000_000, 1_500_000, 2_000_000]);
        let j = TraceSpec { ties: TieRule::Jitter(3), ..s.clone() }.parse(text, Micros(0)).unwrap();
        assert!(j.iter().filter(|a| a.key != "c").all(|a| (1_000_000..2_000_000).contains(&a.at.0)), "{j:?}");
        assert!(
            matches!(TraceSpec { tick_ms: Some(0), ..s.clone() }.validate(), Err(Error::Invalid { field, .. }) if field == "tick_ms")
        );
        assert!(TraceSpec { tick_ms: Some(86_400_001), ..s }.validate().is_err());
    }

    #[test]
    fn spread_a_busy_second_of_an_access_log() {
        let line = "1.2.3.4 - - [01/Jul/1995:00:00:01 -0400] \"GET / HTTP/1.0\" 200 1\n";
        let s = TraceSpec { ties: TieRule::Spread, ..TraceSpec::new("x.log") };
        let v = s.parse(&line.repeat(3), T0).unwrap();
        assert_eq!(times(&v), [T0.0, T0.0 + 333_333, T0.0 + 666_666]);
    }

    #[test]
    fn file_errors() {
        let missing = TraceSpec::new("/nonexistent/limitlab/t.csv");
        assert!(matches!(missing.read(T0), Err(Error::Io { .. })));
        let dir = std::env::temp_dir().join(format!("limitlab-trace-utf8-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.csv");
        std::fs::write(&path, b"time,key\n1,a\n2,\xff\n").unwrap();
        match TraceSpec::new(&path).read(T0) {
            Err(Error::Parse { line, reason, .. }) => assert_eq!((line, reason.as_str()), (3, "not valid UTF-8")),
            other => panic!("{other:?}"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn toml_forms() {
        let s: TraceSpec =
            toml::from_str("path = \"a.log\"\nformat = \"combined\"\nties = \"spread\"\nrebase = \"offset\"\n")
                .unwrap();
        assert_eq!((s.format, s.ties, s.rebase), (Some(TraceFormat::Clf), TieRule::Spread, Rebase::Offset));
        let s: TraceSpec = toml::from_str("path = \"a.csv\"\ntime_format = \"ms\"\nties = { jitter = 3 }\n").unwrap();
        assert_eq!((s.time_format, s.ties), (TimeFormat::Millis, TieRule::Jitter(3)));
        assert!(toml::from_str::<TraceSpec>("path = \"a.csv\"\nties = \"random\"\n").is_err());
        let s: TraceSpec = toml::from_str("path = \"a.csv\"\nties = \"spread\"\ntick_ms = 1000\n").unwrap();
        assert_eq!(s.tick_ms, Some(1000));
    }
}
