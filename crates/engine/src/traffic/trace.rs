//! Trace replay: reads recorded traffic (CSV, TSV, JSON lines, common/combined access logs) into
//! arrivals, and writes arrivals back as CSV so a generated pattern can be saved and replayed.
//!
//! # Rules
//! - Nothing is silently dropped: every line that is not blank must give an arrival, or reading fails
//!   with [`Error::Parse`] naming the file and the 1-based line.
//! - Output is sorted by time; lines with equal times keep their order in the file.
//! - An `op` column (CSV/TSV) or field (JSONL) makes a line a lifecycle operation of the client
//!   instead of a request: `refund`, `reset` or `clear` ([`Op`]); empty or `request` is a request.
//!   The CSV writer adds the column only when some arrival needs it.
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
use std::io::Write;
use std::path::{Path, PathBuf};

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::{invalid, rng, sort_stable, Arrival, Op};
use limitlab_emulator::clock::Micros;
use limitlab_emulator::{Error, Result};

mod stream;
pub use stream::{Scan, TraceStream};

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

/// The header [`write_csv`] writes.
pub const CSV_HEADER: [&str; 4] = ["time", "key", "cost", "phase"];

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
    pub fn from_path(path: &Path) -> Option<TraceFormat> {
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
        let tick_us =
            if self.gcd == 0 || self.distinct < 2 { written_us } else { i64::try_from(self.gcd).unwrap_or(i64::MAX).min(MAX_TICK_US) };
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
        arrival: Arrival { at: Micros(0), key: String::new(), cost: 0, phase: String::new(), op: crate::traffic::Op::Request },
    };
}

/// The columns a CSV or TSV header names.
#[derive(Clone, Debug)]
struct Columns {
    /// How many columns every record must have.
    count: usize,
    time: usize,
    key: usize,
    cost: Option<usize>,
    phase: Option<usize>,
    /// The `op` column: a lifecycle operation instead of a request (`refund`, `reset`, `clear`).
    op: Option<usize>,
    /// Plain numbers in the time column are milliseconds.
    millis: bool,
}

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
        }
    }

    /// The format to read: `format` if set, else from the extension.
    pub fn resolved_format(&self) -> Result<TraceFormat> {
        self.format.or_else(|| TraceFormat::from_path(&self.path)).ok_or_else(|| {
            invalid(CONTEXT, "format", format!("cannot tell the format of {} from its name; set `format`", self.path.display()))
        })
    }

    /// Checks the settings (not the file).
    pub fn validate(&self) -> Result<()> {
        if self.path.as_os_str().is_empty() {
            return Err(invalid(CONTEXT, "path", "must not be empty"));
        }
        let format = self.resolved_format()?;
        for (field, v) in [
            ("time_column", &self.time_column),
            ("key_column", &self.key_column),
            ("cost_column", &self.cost_column),
            ("phase_column", &self.phase_column),
        ] {
            if v.is_some() && format == TraceFormat::Clf {
                return Err(invalid(CONTEXT, field, "access logs have fixed fields; columns apply to CSV, TSV and JSONL"));
            }
            if v.as_deref().is_some_and(|c| c.trim().is_empty()) {
                return Err(invalid(CONTEXT, field, "must not be empty"));
            }
        }
        if let Some(t) = self.tick_ms {
            if t == 0 || t as i64 > MAX_TICK_US / 1000 {
                return Err(invalid(CONTEXT, "tick_ms", format!("must be from 1 to {} (one day), got {t}", MAX_TICK_US / 1000)));
            }
        }
        if format == TraceFormat::Clf && self.time_format != TimeFormat::Auto {
            return Err(invalid(CONTEXT, "time_format", "access logs have a fixed time format"));
        }
        Ok(())
    }

    /// Reads the file and returns its arrivals, sorted by time (see [`Rebase`] for where `start` goes).
    pub fn read(&self, start: Micros) -> Result<Vec<Arrival>> {
        self.parse(&self.read_text()?, start)
    }

    /// The file's text.
    fn read_text(&self) -> Result<String> {
        self.validate()?;
        let bytes = std::fs::read(&self.path).map_err(|source| Error::Io { path: self.path.clone(), source })?;
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
    fn parse_chunk(&self, text: &str, first_line: usize, columns: &mut Option<Columns>, out: &mut Vec<Raw>) -> Result<()> {
        let delimiter = match self.resolved_format()? {
            TraceFormat::Csv => b',',
            TraceFormat::Tsv => b'\t',
            TraceFormat::Jsonl => return self.parse_jsonl(text, first_line, out),
            TraceFormat::Clf => return self.parse_clf(text, first_line, out),
        };
        let mut records = Records { text, pos: 0, line: first_line, delimiter };
        let cols = match columns {
            Some(c) => c,
            None => columns.insert(self.read_header(&mut records)?),
        };
        self.parse_records(&mut records, cols, out)
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
            r.at = r.at.checked_add(shift).ok_or_else(|| invalid(CONTEXT, "rebase", "a shifted time is out of range"))?;
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

    fn error(&self, line: usize, reason: impl Into<String>) -> Error {
        Error::Parse { file: self.path.clone(), line, reason: reason.into() }
    }

    /// The header of a CSV or TSV trace (see [`Records`] for the dialect): the columns to read.
    fn read_header(&self, records: &mut Records) -> Result<Columns> {
        let mut fields = Vec::new();
        let header_line = match records.next(&mut fields).map_err(|(line, r)| self.error(line, r))? {
            Some(line) => line,
            None => return Err(self.error(1, "no header line (the first line must name the columns)")),
        };
        let header: Vec<String> = fields.iter().map(|h| h.trim().to_owned()).collect();
        let find = |wanted: &Option<String>, defaults: &[&str], what: &str| -> Result<Option<usize>> {
            match wanted {
                Some(name) => match header.iter().position(|h| h == name.trim()) {
                    Some(i) => Ok(Some(i)),
                    None => Err(self.error(header_line, format!("no column `{name}` in the header (columns: {})", header.join(", ")))),
                },
                None => {
                    let found = defaults.iter().find_map(|d| header.iter().position(|h| h.eq_ignore_ascii_case(d)));
                    if found.is_none() && !what.is_empty() {
                        return Err(
                            self.error(header_line, format!("no {what} column (looked for {}); set `{what}_column`", defaults.join(", ")))
                        );
                    }
                    Ok(found)
                }
            }
        };
        let time_col = find(&self.time_column, &TIME_NAMES, "time")?.unwrap_or(0);
        let key_col = find(&self.key_column, &KEY_NAMES, "key")?.unwrap_or(0);
        let cost_col = find(&self.cost_column, &[COST_NAME], "")?;
        let phase_col = find(&self.phase_column, &[PHASE_NAME], "")?;
        let op_col = header.iter().position(|h| h.eq_ignore_ascii_case(OP_NAME));
        let millis = self.numbers_are_millis(&header[time_col]);
        Ok(Columns { count: header.len(), time: time_col, key: key_col, cost: cost_col, phase: phase_col, op: op_col, millis })
    }

    /// The records after a CSV or TSV header, onto `out`.
    fn parse_records(&self, records: &mut Records, cols: &Columns, out: &mut Vec<Raw>) -> Result<()> {
        let mut fields = Vec::new();
        while let Some(line) = records.next(&mut fields).map_err(|(line, r)| self.error(line, r))? {
            if fields.len() != cols.count {
                return Err(self.error(line, format!("{} fields where the header has {}", fields.len(), cols.count)));
            }
            let field = |i: usize| fields[i].trim();
            let (at, res) = self.parse_time(field(cols.time), cols.millis).map_err(|r| self.error(line, r))?;
            let key = parse_key(field(cols.key)).map_err(|r| self.error(line, r))?;
            let cost = match cols.cost {
                Some(c) => parse_cost(field(c)).map_err(|r| self.error(line, r))?,
                None => 1,
            };
            let phase = cols.phase.map_or_else(String::new, |c| field(c).to_owned());
            let op = match cols.op {
                Some(c) => parse_op(field(c)).map_err(|r| self.error(line, r))?,
                None => Op::Request,
            };
            out.push(Raw { at, res, line, arrival: Arrival { at: Micros(at), key, cost, phase, op } });
        }
        Ok(())
    }

    /// One JSON object per non-blank line.
    fn parse_jsonl(&self, text: &str, first_line: usize, out: &mut Vec<Raw>) -> Result<()> {
        for (i, line) in text.lines().enumerate() {
            let line_no = first_line + i;
            if line.trim().is_empty() {
                continue;
            }
            let err = |r: String| self.error(line_no, r);
            let obj: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(line).map_err(|e| err(format!("not a JSON object: {e}")))?;
            let pick = |wanted: &Option<String>, defaults: &[&str]| -> Option<(&str, &serde_json::Value)> {
                match wanted {
                    Some(name) => obj.get_key_value(name.as_str()).map(|(k, v)| (k.as_str(), v)),
                    None => defaults.iter().find_map(|d| obj.get_key_value(*d)).map(|(k, v)| (k.as_str(), v)),
                }
            };
            let missing = |wanted: &Option<String>, defaults: &[&str], what: &str| match wanted {
                Some(name) => format!("no field `{name}`"),
                None => format!("no {what} field (looked for {}); set `{what}_column`", defaults.join(", ")),
            };
            let (time_name, time) =
                pick(&self.time_column, &TIME_NAMES).ok_or_else(|| err(missing(&self.time_column, &TIME_NAMES, "time")))?;
            let time_text = match time {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(n) => n.to_string(),
                other => return Err(err(format!("`{time_name}` is {other}, not a time"))),
            };
            let (at, res) = self.parse_time(time_text.trim(), self.numbers_are_millis(time_name)).map_err(err)?;
            let (key_name, key) = pick(&self.key_column, &KEY_NAMES).ok_or_else(|| err(missing(&self.key_column, &KEY_NAMES, "key")))?;
            let key = match key {
                serde_json::Value::String(s) => parse_key(s.trim()).map_err(err)?,
                serde_json::Value::Number(n) => n.to_string(),
                other => return Err(err(format!("`{key_name}` is {other}, not a key"))),
            };
            let cost = match pick(&self.cost_column, &[COST_NAME]) {
                None if self.cost_column.is_some() => return Err(err(missing(&self.cost_column, &[], "cost"))),
                None => 1,
                Some((_, serde_json::Value::Number(n))) => parse_cost(&n.to_string()).map_err(err)?,
                Some((_, serde_json::Value::String(s))) => parse_cost(s.trim()).map_err(err)?,
                Some((name, other)) => return Err(err(format!("`{name}` is {other}, not a cost"))),
            };
            let phase = match pick(&self.phase_column, &[PHASE_NAME]) {
                None if self.phase_column.is_some() => return Err(err(missing(&self.phase_column, &[], "phase"))),
                None => String::new(),
                Some((_, serde_json::Value::String(s))) => s.trim().to_owned(),
                Some((name, other)) => return Err(err(format!("`{name}` is {other}, not a phase label"))),
            };
            let op = match obj.get(OP_NAME) {
                None => Op::Request,
                Some(serde_json::Value::String(s)) => parse_op(s).map_err(err)?,
                Some(other) => return Err(err(format!("`{OP_NAME}` is {other}, not an operation"))),
            };
            out.push(Raw { at, res, line: line_no, arrival: Arrival { at: Micros(at), key, cost, phase, op } });
        }
        Ok(())
    }

    /// Common or combined log format: `host ident user [dd/Mon/yyyy:HH:MM:SS +zzzz] "request" ...`.
    fn parse_clf(&self, text: &str, first_line: usize, out: &mut Vec<Raw>) -> Result<()> {
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let line = (first_line + i, line);
            let (at, key) = parse_clf_line(line.1).map_err(|r| self.error(line.0, r))?;
            out.push(Raw {
                at,
                res: 1_000_000,
                line: line.0,
                arrival: Arrival { at: Micros(at), key, cost: 1, phase: String::new(), op: crate::traffic::Op::Request },
            });
        }
        Ok(())
    }

    /// Whether plain numbers in the column `name` are milliseconds.
    fn numbers_are_millis(&self, name: &str) -> bool {
        match self.time_format {
            TimeFormat::Millis => true,
            TimeFormat::Auto => {
                let n = name.to_ascii_lowercase();
                n.ends_with("ms") || n.ends_with("millis")
            }
            _ => false,
        }
    }

    /// A CSV/JSONL time: (µs, resolution in µs).
    fn parse_time(&self, s: &str, millis: bool) -> std::result::Result<(i64, i64), String> {
        let date_like = s.len() >= 10 && s.as_bytes()[4] == b'-' && s.as_bytes()[..4].iter().all(u8::is_ascii_digit);
        match self.time_format {
            TimeFormat::Rfc3339 => parse_rfc3339(s),
            TimeFormat::Auto if date_like => parse_rfc3339(s),
            _ => parse_decimal(s, if millis { 3 } else { 6 }),
        }
    }
}

/// A reader of delimited records that knows its line numbers (quoted fields may span lines).
///
/// The dialect is RFC 4180 with the delimiter as a parameter: fields are separated by the delimiter,
/// records end at LF or CRLF; a field may be quoted with `"` (spaces before the opening quote and
/// after the closing one are allowed), with `""` for a quote inside; blank lines are skipped. An
/// unterminated quote or text after a closing quote is an error, not a guess.
struct Records<'a> {
    text: &'a str,
    pos: usize,
    /// The line (1-based) at `pos`.
    line: usize,
    delimiter: u8,
}

impl<'a> Records<'a> {
    /// Reads the next record into `fields`; returns the line it starts on, `None` at the end, or
    /// (line, reason).
    fn next(&mut self, fields: &mut Vec<std::borrow::Cow<'a, str>>) -> std::result::Result<Option<usize>, (usize, String)> {
        let text = self.text;
        let b = text.as_bytes();
        fields.clear();
        // Skip blank (or whitespace-only) lines.
        loop {
            if self.pos >= b.len() {
                return Ok(None);
            }
            let end = b[self.pos..].iter().position(|&c| c == b'\n').map_or(b.len(), |i| self.pos + i);
            if !text[self.pos..end].trim().is_empty() {
                break;
            }
            self.pos = (end + 1).min(b.len());
            self.line += 1;
        }
        let start_line = self.line;
        loop {
            // One field.
            let mut i = self.pos;
            while i < b.len() && b[i] == b' ' && self.delimiter != b' ' {
                i += 1;
            }
            if b.get(i) == Some(&b'"') {
                let mut value = String::new();
                let mut j = i + 1;
                let mut chunk = j;
                loop {
                    match b[j..].iter().position(|&c| c == b'"' || c == b'\n') {
                        None => return Err((start_line, "a quoted field is not closed".to_owned())),
                        Some(k) => {
                            j += k;
                            if b[j] == b'\n' {
                                self.line += 1;
                                j += 1;
                                continue;
                            }
                            // A quote: doubled means a literal quote, single closes the field.
                            value.push_str(&text[chunk..j]);
                            if b.get(j + 1) == Some(&b'"') {
                                value.push('"');
                                j += 2;
                                chunk = j;
                            } else {
                                j += 1;
                                break;
                            }
                        }
                    }
                }
                while j < b.len() && b[j] == b' ' && self.delimiter != b' ' {
                    j += 1;
                }
                if b.get(j) == Some(&b'\r') && b.get(j + 1) == Some(&b'\n') {
                    j += 1;
                }
                match b.get(j) {
                    None | Some(b'\n') => {}
                    Some(&c) if c == self.delimiter => {}
                    Some(_) => return Err((self.line, "text after the closing quote of a field".to_owned())),
                }
                fields.push(std::borrow::Cow::Owned(value));
                self.pos = j;
            } else {
                let end = b[self.pos..].iter().position(|&c| c == self.delimiter || c == b'\n').map_or(b.len(), |k| self.pos + k);
                let mut value = &text[self.pos..end];
                if b.get(end) != Some(&self.delimiter) {
                    value = value.strip_suffix('\r').unwrap_or(value);
                }
                fields.push(std::borrow::Cow::Borrowed(value));
                self.pos = end;
            }
            // After the field: a delimiter (another field follows), or the end of the record.
            match b.get(self.pos) {
                Some(&c) if c == self.delimiter => self.pos += 1,
                Some(b'\n') => {
                    self.pos += 1;
                    self.line += 1;
                    return Ok(Some(start_line));
                }
                _ => return Ok(Some(start_line)),
            }
        }
    }
}

/// A key: any non-empty text.
fn parse_key(s: &str) -> std::result::Result<String, String> {
    if s.is_empty() {
        return Err("empty key".to_owned());
    }
    Ok(s.to_owned())
}

/// An `op` field: empty or `request` for a request, else `refund`, `reset` or `clear`.
fn parse_op(s: &str) -> std::result::Result<Op, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(Op::Request);
    }
    Op::parse(&s.to_ascii_lowercase()).ok_or_else(|| format!("op `{s}` is not one of request, refund, reset, clear"))
}

/// A cost: an integer from 0 (0: a read-only "check" or "peek" call, which asks without taking
/// anything); an empty field means 1.
fn parse_cost(s: &str) -> std::result::Result<u64, String> {
    if s.is_empty() {
        return Ok(1);
    }
    s.parse::<u64>().map_err(|_| format!("cost `{s}` is not an integer from 0"))
}

/// A decimal number (sign, digits, optional fraction, optional exponent) times 10^`scale`, rounded down,
/// with the resolution of its last digit (at least 1).
fn parse_decimal(s: &str, scale: i32) -> std::result::Result<(i64, i64), String> {
    let bad = || format!("time `{s}` is not a number");
    let bytes = s.as_bytes();
    let mut i = 0;
    let negative = match bytes.first() {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    // Collect the significant digits as an integer, and how many of them follow the point.
    let mut mantissa: i128 = 0;
    let mut digits = 0;
    let mut frac_digits: i32 = 0;
    let mut seen_point = false;
    while i < bytes.len() {
        match bytes[i] {
            b @ b'0'..=b'9' => {
                if mantissa > i128::MAX / 100 {
                    return Err(format!("time `{s}` has too many digits"));
                }
                mantissa = mantissa * 10 + (b - b'0') as i128;
                digits += 1;
                frac_digits += seen_point as i32;
            }
            b'.' if !seen_point => seen_point = true,
            b'e' | b'E' => break,
            _ => return Err(bad()),
        }
        i += 1;
    }
    if digits == 0 {
        return Err(bad());
    }
    let mut exponent: i32 = 0;
    if i < bytes.len() {
        exponent = s[i + 1..].parse::<i32>().map_err(|_| bad())?;
        if exponent.abs() > 40 {
            return Err(format!("time `{s}` is out of range"));
        }
    }
    // value = mantissa * 10^(scale + exponent - frac_digits) units.
    let power = scale + exponent - frac_digits;
    let (value, res) = if power >= 0 {
        let p = 10i128.checked_pow(power as u32).ok_or_else(|| format!("time `{s}` is out of range"))?;
        (mantissa.checked_mul(p).ok_or_else(|| format!("time `{s}` is out of range"))?, p)
    } else {
        let p = 10i128.checked_pow((-power) as u32).unwrap_or(i128::MAX);
        // Floor: for a negative time, dropped digits move it earlier.
        let q = mantissa / p;
        let q = if negative && mantissa % p != 0 { q + 1 } else { q };
        (q, 1)
    };
    let value = if negative { -value } else { value };
    let value = i64::try_from(value).map_err(|_| format!("time `{s}` is out of range"))?;
    // A tick longer than a day is no resolution a log has; cap it so tie rules stay sensible.
    Ok((value, i64::try_from(res).unwrap_or(i64::MAX).min(MAX_TICK_US)))
}

/// Days from 1970-01-01 to the given proleptic Gregorian date.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// Fixed-width digits at `s[at..at + n]`.
fn digits(s: &[u8], at: usize, n: usize) -> Option<u32> {
    let part = s.get(at..at + n)?;
    part.iter().try_fold(0u32, |acc, &b| b.is_ascii_digit().then(|| acc * 10 + (b - b'0') as u32))
}

/// µs since the epoch of a civil date and time at a UTC offset in seconds, checking ranges.
fn civil_to_micros(y: i64, mo: u32, d: u32, h: u32, mi: u32, sec: u32, offset_s: i64) -> std::result::Result<i64, String> {
    if !(1..=12).contains(&mo) {
        return Err(format!("month {mo} is not 1 to 12"));
    }
    if d == 0 || d > days_in_month(y, mo) {
        return Err(format!("day {d} is not in {y:04}-{mo:02}"));
    }
    if h > 23 || mi > 59 || sec > 60 {
        return Err(format!("time of day {h:02}:{mi:02}:{sec:02} is out of range"));
    }
    let days = days_from_civil(y, mo, d);
    // A leap second (60) becomes the first second of the next minute.
    let secs = days * 86_400 + h as i64 * 3600 + mi as i64 * 60 + sec as i64 - offset_s;
    Ok(secs * 1_000_000)
}

/// RFC 3339: `YYYY-MM-DD(T|t| )HH:MM:SS[.frac](Z|z|±HH:MM)`. Returns (µs, resolution in µs).
fn parse_rfc3339(s: &str) -> std::result::Result<(i64, i64), String> {
    let b = s.as_bytes();
    let bad = || format!("time `{s}` is not RFC 3339 (like 2024-01-01T00:00:00.5Z)");
    let (Some(y), Some(mo), Some(d), Some(h), Some(mi), Some(sec)) =
        (digits(b, 0, 4), digits(b, 5, 2), digits(b, 8, 2), digits(b, 11, 2), digits(b, 14, 2), digits(b, 17, 2))
    else {
        return Err(bad());
    };
    if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' || b[16] != b':' {
        return Err(bad());
    }
    let mut i = 19;
    let (mut frac_us, mut res) = (0i64, 1_000_000i64);
    if b.get(i) == Some(&b'.') {
        i += 1;
        let begin = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - begin < 6 {
                frac_us = frac_us * 10 + (b[i] - b'0') as i64;
                res /= 10;
            }
            i += 1;
        }
        if i == begin {
            return Err(bad());
        }
        for _ in (i - begin).min(6)..6 {
            frac_us *= 10;
        }
    }
    let offset_s = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) if i + 6 == b.len() && b[i + 3] == b':' => {
            let (Some(oh), Some(om)) = (digits(b, i + 1, 2), digits(b, i + 4, 2)) else { return Err(bad()) };
            if oh > 23 || om > 59 {
                return Err(bad());
            }
            let o = oh as i64 * 3600 + om as i64 * 60;
            if sign == b'-' {
                -o
            } else {
                o
            }
        }
        None => return Err(format!("time `{s}` has no UTC offset (add `Z` or `+HH:MM`)")),
        _ => return Err(bad()),
    };
    let at = civil_to_micros(y as i64, mo, d, h, mi, sec, offset_s).map_err(|r| format!("time `{s}`: {r}"))?;
    Ok((at + frac_us, res.max(1)))
}

const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/// An access log's `dd/Mon/yyyy:HH:MM:SS ±hhmm`, in µs.
fn parse_clf_time(s: &str) -> std::result::Result<i64, String> {
    let b = s.as_bytes();
    let bad = || format!("date `[{s}]` is not like [01/Jul/1995:00:00:01 -0400]");
    if b.len() != 26 || b[2] != b'/' || b[6] != b'/' || b[11] != b':' || b[14] != b':' || b[17] != b':' || b[20] != b' ' {
        return Err(bad());
    }
    let (Some(d), Some(y), Some(h), Some(mi), Some(sec), Some(oh), Some(om)) =
        (digits(b, 0, 2), digits(b, 7, 4), digits(b, 12, 2), digits(b, 15, 2), digits(b, 18, 2), digits(b, 22, 2), digits(b, 24, 2))
    else {
        return Err(bad());
    };
    let month = b[3..6].to_ascii_lowercase();
    let Some(mo) = MONTHS.iter().position(|m| m.as_bytes() == month) else { return Err(bad()) };
    if oh > 23 || om > 59 {
        return Err(bad());
    }
    let offset = (oh as i64 * 3600 + om as i64 * 60)
        * match b[21] {
            b'+' => 1,
            b'-' => -1,
            _ => return Err(bad()),
        };
    civil_to_micros(y as i64, mo as u32 + 1, d, h, mi, sec, offset).map_err(|r| format!("date `[{s}]`: {r}"))
}

/// (time, client address) of one access-log line.
fn parse_clf_line(line: &str) -> std::result::Result<(i64, String), String> {
    let host = line.split([' ', '\t']).next().unwrap_or("");
    if host.is_empty() || host.starts_with('[') {
        return Err("no client address at the start of the line".to_owned());
    }
    let open = line.find('[').ok_or("no [date] field")?;
    let close = line[open..].find(']').map(|c| open + c).ok_or("unterminated [date] field")?;
    let at = parse_clf_time(&line[open + 1..close])?;
    Ok((at, host.to_owned()))
}

/// Formats µs as seconds with six decimals (`1704067200.000500`, `-0.250000`): exact, and read back
/// exactly by the CSV reader.
fn format_seconds(us: i64) -> String {
    let sign = if us < 0 { "-" } else { "" };
    let a = us.unsigned_abs();
    format!("{sign}{}.{:06}", a / 1_000_000, a % 1_000_000)
}

/// Writes arrivals as CSV (`time,key,cost,phase`, time in seconds with six decimals) to `out`; `path`
/// only names the destination in errors. Keys must be non-empty and, like phases, have no surrounding
/// whitespace, which the reader would trim: such arrivals are refused rather than changed.
pub fn write_csv_to<W: Write>(mut out: W, arrivals: &[Arrival], path: &Path) -> Result<()> {
    let io = |e: std::io::Error| Error::Io { path: path.to_owned(), source: e };
    let mut line = String::with_capacity(128);
    line.push_str(&CSV_HEADER.join(","));
    // An `op` column only when some arrival is a lifecycle operation: request-only traces keep the
    // four columns every other reader knows.
    let ops = arrivals.iter().any(|a| a.op != Op::Request);
    if ops {
        line.push_str(",op");
    }
    line.push('\n');
    out.write_all(line.as_bytes()).map_err(io)?;
    for (i, a) in arrivals.iter().enumerate() {
        if a.key.is_empty() || a.key.trim() != a.key {
            return Err(invalid("write_csv", &format!("arrivals[{i}].key"), format!("{:?} would not read back the same", a.key)));
        }
        if a.phase.trim() != a.phase {
            return Err(invalid("write_csv", &format!("arrivals[{i}].phase"), format!("{:?} would not read back the same", a.phase)));
        }
        line.clear();
        line.push_str(&format_seconds(a.at.0));
        line.push(',');
        push_csv_field(&mut line, &a.key);
        line.push(',');
        line.push_str(&super::numbered("", a.cost));
        line.push(',');
        push_csv_field(&mut line, &a.phase);
        if ops {
            line.push(',');
            line.push_str(a.op.name());
        }
        line.push('\n');
        out.write_all(line.as_bytes()).map_err(io)?;
    }
    out.flush().map_err(io)
}

/// Appends a CSV field, quoted when it holds a comma, a quote or a line break.
fn push_csv_field(line: &mut String, field: &str) {
    if field.contains([',', '"', '\n', '\r']) {
        line.push('"');
        for c in field.chars() {
            if c == '"' {
                line.push('"');
            }
            line.push(c);
        }
        line.push('"');
    } else {
        line.push_str(field);
    }
}

/// Writes arrivals to a CSV file that [`read_csv`] (or a `kind = "trace"` spec with
/// `rebase = "absolute"`) reads back identically. See [`write_csv_to`].
pub fn write_csv(path: impl AsRef<Path>, arrivals: &[Arrival]) -> Result<()> {
    let path = path.as_ref();
    let file = std::fs::File::create(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
    write_csv_to(std::io::BufWriter::new(file), arrivals, path)
}

/// Reads a CSV file as written by [`write_csv`]: absolute times, ties left as they are.
pub fn read_csv(path: impl AsRef<Path>) -> Result<Vec<Arrival>> {
    let spec = TraceSpec { format: Some(TraceFormat::Csv), rebase: Rebase::Absolute, ..TraceSpec::new(path.as_ref()) };
    spec.read(Micros(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: Micros = Micros(1_704_067_200_000_000); // 2024-01-01T00:00:00Z

    fn spec(name: &str) -> TraceSpec {
        TraceSpec { rebase: Rebase::Absolute, ..TraceSpec::new(name) }
    }

    fn parse_err(s: &TraceSpec, text: &str) -> (usize, String) {
        match s.parse(text, T0) {
            Err(Error::Parse { file, line, reason }) => {
                assert_eq!(file, s.path);
                (line, reason)
            }
            other => panic!("{other:?}"),
        }
    }

    fn times(v: &[Arrival]) -> Vec<i64> {
        v.iter().map(|a| a.at.0).collect()
    }

    #[test]
    fn decimal_times() {
        assert_eq!(parse_decimal("1704067200", 6), Ok((T0.0, 1_000_000)));
        assert_eq!(parse_decimal("1704067200.25", 6), Ok((T0.0 + 250_000, 10_000)));
        assert_eq!(parse_decimal("1704067200.0000005", 6), Ok((T0.0, 1)));
        assert_eq!(parse_decimal("1704067200000", 3), Ok((T0.0, 1000)));
        assert_eq!(parse_decimal("12.5", 3), Ok((12_500, 100)));
        assert_eq!(parse_decimal("1.7040672e9", 6), Ok((1_704_067_200_000_000, 100_000_000)));
        assert_eq!(parse_decimal("1e-7", 6), Ok((0, 1)));
        assert_eq!(parse_decimal("0e30", 6), Ok((0, MAX_TICK_US)));
        assert_eq!(parse_decimal("-0.25", 6), Ok((-250_000, 10_000)));
        assert_eq!(parse_decimal("-0.0000015", 6), Ok((-2, 1)));
        assert_eq!(parse_decimal("+3", 6), Ok((3_000_000, 1_000_000)));
        for bad in ["", "-", ".", "1..2", "1.2.3", "abc", "1e", "1e99", "99999999999999999999", "1,5", " 1"] {
            assert!(parse_decimal(bad, 6).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn rfc3339_times() {
        assert_eq!(parse_rfc3339("2024-01-01T00:00:00Z"), Ok((T0.0, 1_000_000)));
        assert_eq!(parse_rfc3339("2024-01-01t00:00:00.5z"), Ok((T0.0 + 500_000, 100_000)));
        assert_eq!(parse_rfc3339("2024-01-01 01:00:00.000123+01:00"), Ok((T0.0 + 123, 1)));
        assert_eq!(parse_rfc3339("2023-12-31T19:00:00.123456789-05:00"), Ok((T0.0 + 123_456, 1)));
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Ok((0, 1_000_000)));
        assert_eq!(parse_rfc3339("2024-02-29T12:00:00Z").map(|t| t.0), Ok(T0.0 + (59 * 86_400 + 43_200) * 1_000_000));
        assert_eq!(parse_rfc3339("1995-07-01T04:00:01Z").map(|t| t.0), Ok(804_571_201_000_000));
        for bad in [
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00+0100",
            "2024-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:00:00.Z",
            "2024-01-01X00:00:00Z",
            "2024-1-01T00:00:00Z",
            "2024-01-01T00:00:00Zjunk",
        ] {
            assert!(parse_rfc3339(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn csv_with_seconds_and_defaults() {
        let text = "time,key,cost\n1704067200.5,alice,2\n1704067200.25,bob,\n\n1704067201,\"carol, jr\",1\n";
        let v = spec("t.csv").parse(text, Micros(0)).unwrap();
        let got: Vec<_> = v.iter().map(|a| (a.at.0 - T0.0, a.key.as_str(), a.cost)).collect();
        assert_eq!(got, [(250_000, "bob", 1), (500_000, "alice", 2), (1_000_000, "carol, jr", 1)]);
        assert!(v.iter().all(|a| a.phase.is_empty()));
    }

    #[test]
    fn tsv_with_named_millis_column_and_rebase() {
        let text = "user\tts_ms\tphase\nx\t1000\tp1\ny\t1500\tp2\n";
        let s = TraceSpec::new("t.tsv");
        let v = s.parse(text, T0).unwrap();
        assert_eq!(times(&v), [T0.0, T0.0 + 500_000]);
        assert_eq!(v[1].phase, "p2");
        let v = TraceSpec { rebase: Rebase::Offset, ..s.clone() }.parse(text, T0).unwrap();
        assert_eq!(times(&v), [T0.0 + 1_000_000, T0.0 + 1_500_000]);
        // Explicit format and columns.
        let s = TraceSpec {
            format: Some(TraceFormat::Tsv),
            time_column: Some("ts_ms".into()),
            key_column: Some("phase".into()),
            time_format: TimeFormat::Seconds,
            rebase: Rebase::Absolute,
            ..TraceSpec::new("data.txt")
        };
        let v = s.parse(text, T0).unwrap();
        assert_eq!(times(&v), [1_000_000_000, 1_500_000_000]);
        assert_eq!(v[0].key, "p1");
    }

    #[test]
    fn csv_rfc3339_column() {
        let text = "timestamp,ip\n2024-01-01T00:00:01Z,10.0.0.1\n2024-01-01T00:00:00.5Z,10.0.0.2\n";
        let v = spec("t.csv").parse(text, Micros(0)).unwrap();
        assert_eq!(times(&v), [T0.0 + 500_000, T0.0 + 1_000_000]);
        assert_eq!(v[0].key, "10.0.0.2");
    }

    #[test]
    fn csv_errors_name_the_line() {
        let s = spec("bad.csv");
        assert_eq!(parse_err(&s, "time,key\n1,a\n2\n").0, 3);
        let (line, reason) = parse_err(&s, "time,key\n1,a\n\n2,b,c\n");
        assert_eq!((line, reason.as_str()), (4, "3 fields where the header has 2"));
        let (line, reason) = parse_err(&s, "time,key\n1,a\nsoon,b\n");
        assert_eq!((line, reason.as_str()), (3, "time `soon` is not a number"));
        assert_eq!(parse_err(&s, "time,key\n1,\n").0, 2);
        // A cost of 0 is a read-only "peek" call; a negative one is an error on its line.
        assert_eq!(s.parse("time,key,cost\n1,a,0\n2,a,3\n", Micros(0)).unwrap().iter().map(|a| a.cost).collect::<Vec<_>>(), [0, 3]);
        assert_eq!(parse_err(&s, "time,key,cost\n1,a,1\n2,a,-1\n").0, 3);
        let (line, reason) = parse_err(&s, "when,key\n1,a\n");
        assert_eq!(line, 1);
        assert!(reason.contains("no time column"), "{reason}");
        assert!(parse_err(&s, "time,who\n1,a\n").1.contains("no key column"));
        let named = TraceSpec { cost_column: Some("weight".into()), ..s.clone() };
        assert!(parse_err(&named, "time,key\n1,a\n").1.contains("no column `weight`"));
        assert_eq!(parse_err(&s, "time,key\n1,a\n2,\"b\n"), (3, "a quoted field is not closed".to_owned()));
        assert_eq!(parse_err(&s, "time,key\n1,\"a\"b\n"), (2, "text after the closing quote of a field".to_owned()));
        // Line numbers count blank lines, CRLF endings and line breaks inside quoted fields.
        assert_eq!(parse_err(&s, "time,key\r\n1,a\r\n\r\n  \r\n2,b,c\r\n").0, 5);
        assert_eq!(parse_err(&s, "\ntime,key\n1,\"a\nb\"\"\n\"\nx,c\n").0, 6);
        assert_eq!(parse_err(&s, "\n\nwhen,key\n").0, 3);
        assert_eq!(parse_err(&s, "").1, "no header line (the first line must name the columns)");
    }

    #[test]
    fn delimited_dialect() {
        let mut r = Records { text: "a, \"b,\"\"c\"\"\" ,d\r\n\r\n\"x\ny\t2\"\n,\n", pos: 0, line: 1, delimiter: b',' };
        let mut f = Vec::new();
        assert_eq!(r.next(&mut f), Ok(Some(1)));
        assert_eq!(f, ["a", "b,\"c\"", "d"]);
        assert_eq!(r.next(&mut f), Ok(Some(3)));
        assert_eq!(f, ["x\ny\t2"]);
        assert_eq!(r.next(&mut f), Ok(Some(5)));
        assert_eq!(f, ["", ""]);
        assert_eq!(r.next(&mut f), Ok(None));
        let mut r = Records { text: "a\tb c\t\"d\"\nlast\t\t", pos: 0, line: 1, delimiter: b'\t' };
        assert_eq!(r.next(&mut f), Ok(Some(1)));
        assert_eq!(f, ["a", "b c", "d"]);
        assert_eq!(r.next(&mut f), Ok(Some(2)));
        assert_eq!(f, ["last", "", ""]);
        assert_eq!(r.next(&mut f), Ok(None));
    }

    #[test]
    fn jsonl() {
        let text = concat!(
            "{\"ts\": 1704067200.5, \"user\": \"a\", \"cost\": 3, \"phase\": \"x\"}\n",
            "\n",
            "{\"ts\": \"2024-01-01T00:00:00Z\", \"user\": 42}\n",
            "{\"time_ms\": 1704067200250, \"key\": \"c\", \"cost\": \"2\"}\n",
        );
        let v = spec("t.jsonl").parse(text, Micros(0)).unwrap();
        let got: Vec<_> = v.iter().map(|a| (a.at.0 - T0.0, a.key.as_str(), a.cost, a.phase.as_str())).collect();
        assert_eq!(got, [(0, "42", 1, ""), (250_000, "c", 2, ""), (500_000, "a", 3, "x")]);
        let s = spec("t.jsonl");
        let (line, reason) = parse_err(&s, "{\"ts\": 1, \"key\": \"a\"}\n\n{\"ts\": 2, \"key\": \"a\"\n");
        assert_eq!(line, 3);
        assert!(reason.starts_with("not a JSON object"), "{reason}");
        assert_eq!(parse_err(&s, "[1, 2]\n").0, 1);
        assert!(parse_err(&s, "{\"key\": \"a\"}\n").1.contains("no time field"));
        assert!(parse_err(&s, "{\"ts\": 1}\n").1.contains("no key field"));
        assert!(parse_err(&s, "{\"ts\": true, \"key\": \"a\"}\n").1.contains("not a time"));
        assert!(parse_err(&s, "{\"ts\": 1, \"key\": \"a\", \"cost\": 1.5}\n").1.contains("cost"));
        assert!(parse_err(&s, "{\"ts\": 1, \"key\": \"\"}\n").1.contains("empty key"));
    }

    #[test]
    fn access_logs() {
        let text = concat!(
            "199.72.81.55 - - [01/Jul/1995:00:00:01 -0400] \"GET /history/apollo/ HTTP/1.0\" 200 6245\n",
            "unicomp6.unicomp.net - - [01/Jul/1995:00:00:06 -0400] \"GET /shuttle/countdown/ HTTP/1.0\" 200 3985\n",
            "10.1.1.1 - frank [01/Jul/1995:00:00:01 -0400] \"GET / HTTP/1.1\" 200 12 \"http://x/\" \"Mozilla/5.0\"\n",
            "\n",
            "2001:db8::1 - - [01/jul/1995:04:00:01 +0000] \"GET / HTTP/1.1\" 304 0\n",
        );
        let v = spec("access.log").parse(text, Micros(0)).unwrap();
        let got: Vec<_> = v.iter().map(|a| (a.at.0, a.key.as_str())).collect();
        let t = 804_571_201_000_000; // 1995-07-01T04:00:01Z
        assert_eq!(got, [(t, "199.72.81.55"), (t, "10.1.1.1"), (t, "2001:db8::1"), (t + 5_000_000, "unicomp6.unicomp.net")]);
        // Rebase to the start: the earliest line lands on it.
        let v = TraceSpec::new("access.log").parse(text, T0).unwrap();
        assert_eq!(times(&v), [T0.0, T0.0, T0.0, T0.0 + 5_000_000]);
        let s = spec("access.log");
        let (line, reason) = parse_err(
            &s,
            "1.2.3.4 - - [01/Jul/1995:00:00:01 -0400] \"GET /\" 200 1\n1.2.3.4 - - [32/Jul/1995:00:00:01 -0400] \"GET /\" 200 1\n",
        );
        assert_eq!(line, 2);
        assert!(reason.contains("day 32"), "{reason}");
        assert_eq!(parse_err(&s, "1.2.3.4 - - 01/Jul/1995:00:00:01 -0400 \"GET /\"\n").1, "no [date] field");
        assert!(parse_err(&s, "1.2.3.4 - - [01/Jly/1995:00:00:01 -0400] x\n").1.contains("not like"));
        assert!(parse_err(&s, "1.2.3.4 - - [01/Jul/1995:00:00:01] x\n").1.contains("not like"));
        assert_eq!(parse_err(&s, "[01/Jul/1995:00:00:01 -0400]\n").1, "no client address at the start of the line");
        assert_eq!(parse_err(&s, "ok - - [01/Jul/1995:00:00:01 -0400\n").1, "unterminated [date] field");
    }

    #[test]
    fn tie_rules() {
        let text = "time,key\n10,a\n10,b\n10,c\n10,d\n11,e\n10.5,f\n";
        let same = spec("t.csv").parse(text, Micros(0)).unwrap();
        assert_eq!(times(&same), [10_000_000, 10_000_000, 10_000_000, 10_000_000, 10_500_000, 11_000_000]);
        let spread = TraceSpec { ties: TieRule::Spread, ..spec("t.csv") }.parse(text, Micros(0)).unwrap();
        let got: Vec<_> = spread.iter().map(|a| (a.at.0, a.key.as_str())).collect();
        assert_eq!(got, [(10_000_000, "a"), (10_250_000, "b"), (10_500_000, "c"), (10_500_000, "f"), (10_750_000, "d"), (11_000_000, "e")]);
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
        let t = spec("t.csv").parse_ticks("time,key\n1704067200.000000,a\n1704067200.000000,a\n1704067201.001000,a\n").unwrap();
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
        assert!(matches!(TraceSpec { tick_ms: Some(0), ..s.clone() }.validate(), Err(Error::Invalid { field, .. }) if field == "tick_ms"));
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
    fn csv_round_trip() {
        let dir = std::env::temp_dir().join(format!("limitlab-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("round.csv");
        let mut arrivals = crate::traffic::BoundaryBurst::classic(1000).arrivals(T0, 0);
        arrivals.extend(crate::traffic::Poisson { keys: 5, cost: 3, ..crate::traffic::Poisson::new(100.0, 3000) }.arrivals(T0, 9));
        arrivals.push(Arrival {
            at: Micros(-1_500_001),
            key: "comma, \"quoted\" key".into(),
            cost: 7,
            phase: "x y".into(),
            op: crate::traffic::Op::Request,
        });
        arrivals.push(Arrival {
            at: Micros(0),
            key: "ünïcode\tkey".into(),
            cost: u64::MAX,
            phase: String::new(),
            op: crate::traffic::Op::Request,
        });
        crate::traffic::sort_stable(&mut arrivals);
        write_csv(&path, &arrivals).unwrap();
        assert_eq!(read_csv(&path).unwrap(), arrivals);
        // The same file through a scenario-style spec.
        let s = TraceSpec { rebase: Rebase::Absolute, ..TraceSpec::new(&path) };
        assert_eq!(s.read(Micros(0)).unwrap(), arrivals);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("time,key,cost,phase\n-1.500001,"), "{}", &text[..60]);
        // Refused rather than changed.
        let bad = [Arrival { at: Micros(0), key: " padded".into(), cost: 1, phase: String::new(), op: crate::traffic::Op::Request }];
        assert!(matches!(write_csv(&path, &bad), Err(Error::Invalid { field, .. }) if field == "arrivals[0].key"));
        std::fs::remove_dir_all(&dir).unwrap();
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
    fn validation() {
        let field = |s: TraceSpec| match s.validate() {
            Err(Error::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        TraceSpec::new("a.csv").validate().unwrap();
        assert_eq!(field(TraceSpec::new("a.dat")), "format");
        assert_eq!(field(TraceSpec::new("")), "path");
        assert_eq!(field(TraceSpec { time_column: Some("t".into()), ..TraceSpec::new("a.log") }), "time_column");
        assert_eq!(field(TraceSpec { key_column: Some(" ".into()), ..TraceSpec::new("a.csv") }), "key_column");
        assert_eq!(field(TraceSpec { time_format: TimeFormat::Millis, ..TraceSpec::new("a.log") }), "time_format");
        TraceSpec { format: Some(TraceFormat::Clf), ..TraceSpec::new("a.dat") }.validate().unwrap();
    }

    #[test]
    fn toml_forms() {
        let s: TraceSpec = toml::from_str("path = \"a.log\"\nformat = \"combined\"\nties = \"spread\"\nrebase = \"offset\"\n").unwrap();
        assert_eq!((s.format, s.ties, s.rebase), (Some(TraceFormat::Clf), TieRule::Spread, Rebase::Offset));
        let s: TraceSpec = toml::from_str("path = \"a.csv\"\ntime_format = \"ms\"\nties = { jitter = 3 }\n").unwrap();
        assert_eq!((s.time_format, s.ties), (TimeFormat::Millis, TieRule::Jitter(3)));
        assert!(toml::from_str::<TraceSpec>("path = \"a.csv\"\nties = \"random\"\n").is_err());
        let s: TraceSpec = toml::from_str("path = \"a.csv\"\nties = \"spread\"\ntick_ms = 1000\n").unwrap();
        assert_eq!(s.tick_ms, Some(1000));
    }
}
