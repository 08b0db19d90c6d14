//! `run --decisions FILE`: every decision of a run, one row per request per script, for the user's
//! own analysis. CSV when the file name ends in `.csv`, JSON lines when it ends in `.jsonl` or
//! `.json`.
//!
//! # Columns (CSV header; JSON lines use the same names)
//! | column | what |
//! |---|---|
//! | `script` | the script's (spec's) name |
//! | `request` | the request's number in the run, from 1 (the same for every script) |
//! | `at_us` | the arrival's time, µs since the epoch |
//! | `now_ms` | the time the script saw: `at_us` in whole ms, rounded down |
//! | `subject` | the subject (user, IP, API key) |
//! | `phase` | the traffic's phase label (empty when it has none) |
//! | `cost` | the arrival's cost |
//! | `units` | the units the report counts for it: `cost` for a script that takes a cost, else 1 |
//! | `reply` | the script's raw reply (see below) |
//! | `allowed` | the decision read from the reply (CSV `1`/`0`, JSON `true`/`false`) |
//! | `remaining`, `retry_after_ms`, `reset_ms` | the decision's other fields as the spec reads them |
//! | `exact_allowed` | an exact sliding log's decision on the same arrivals (same limit and window, counting `units`) |
//! | `verdict` | `agree`, `false_allow` (allowed, the exact log refuses) or `false_rejection` |
//! | `retry_after_honest` | on a refusal that names a wait: whether its `retry_after_ms` held (`1`/`0`): the same request then admitted, 1 ms earlier refused, as `limitlab check` judges it ([`crate::limiter::honesty`]) |
//! | `retry_after` | the `Retry-After` header value, in seconds |
//! | `ratelimit` | the `RateLimit` header value (`"default";r=19;t=1`) |
//! | `headers_honest` | for the first [`crate::metrics::HEADER_CHECKS`] decisions whose headers make a promise: whether a caller trusting `Retry-After` and `RateLimit` was admitted (`1`/`0`), as `check` judges it |
//!
//! A value that is not there is written one way in every column: empty in CSV, `null` in JSON
//! lines. That is a field the spec does not report, a field whose expression gave `nil` for this
//! decision (read as -1, as on a seed script's decision and on an admission's `retry_after_ms`),
//! a header the decision does not imply, and a judgement not made (no promise, no model and no
//! script to ask, past the headers' count).
//!
//! Rows come script by script, in the order the report lists the scripts, each in request order.
//! The report's figures follow from the rows: per script, `admitted` is the sum of `units` over
//! allowed rows (per phase: those of the phase), out of the sum of `units`; `false allows` and
//! `false rejections` count the verdicts; `max in window` is the most `units` allowed for one
//! subject within any `window_ms` of `now_ms`; `retry_after wrong` counts `retry_after_honest = 0`
//! out of the rows where it is set, and `headers wrong` `headers_honest = 0` the same way.
//!
//! # Replies
//! Written compactly, as redis-cli shows them on one line: an integer `42`; a bulk string quoted
//! with redis-cli's escapes (`"0.25"`, `"a\"b"`, `"\xff"`); `nil`; an array `[1,9,-1,1000]`; a status
//! `OK`; an error `(error) ERR ...`; a RESP3 double `0.25`, boolean `true`, map `{k:v,...}`. A spec
//! that makes one call per request writes its reply alone; a spec with several calls (or a Lua
//! adapter) writes each call made as `name=reply`, joined by `;` (split on `;` outside quotes).
//!
//! The file is written while the run streams (each script's thread writes its own part next to the
//! file; the parts are joined in script order at the end), so memory does not grow with the run.
//! The same scenario and seed give the same bytes.
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::acc::Judged;
use super::feed::Step;
use super::Record;
use crate::limiter::{Decision, Limiter, Params};
use crate::spec::exec::CallRecord;
use crate::spec::headers::headers;
use crate::spec::{Program, Reports};
use crate::traffic::csv_writer;
use limitlab_emulator::reply::format_double;
use limitlab_emulator::Reply;
use limitlab_emulator::{Error, Result};

/// The columns, in order (the CSV header).
pub const COLUMNS: [&str; 19] = [
    "script",
    "request",
    "at_us",
    "now_ms",
    "subject",
    "phase",
    "cost",
    "units",
    "reply",
    "allowed",
    "remaining",
    "retry_after_ms",
    "reset_ms",
    "exact_allowed",
    "verdict",
    "retry_after_honest",
    "retry_after",
    "ratelimit",
    "headers_honest",
];

/// The layout of a decisions file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecisionsFormat {
    /// RFC 4180 CSV with a header line.
    Csv,
    /// One JSON object per line.
    Jsonl,
}

/// Where `run --decisions` writes, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecisionsOut {
    pub path: PathBuf,
    pub format: DecisionsFormat,
}

impl DecisionsOut {
    /// The format from the file's extension: `.csv`, `.jsonl` or `.json`; anything else is an error
    /// naming the accepted ones.
    pub fn new(path: impl Into<PathBuf>) -> Result<DecisionsOut> {
        let path = path.into();
        let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        let format = match ext.as_deref() {
            Some("csv") => DecisionsFormat::Csv,
            Some("jsonl" | "json") => DecisionsFormat::Jsonl,
            _ => {
                return Err(Error::Invalid {
                    context: "--decisions".into(),
                    field: path.display().to_string(),
                    reason: "the file name must end in .csv (CSV), .jsonl or .json (JSON lines)".into(),
                })
            }
        };
        Ok(DecisionsOut { path, format })
    }

    /// Where script number `index` writes its rows before they are joined.
    fn part(&self, index: usize) -> PathBuf {
        let name = self.path.file_name().map_or_else(|| "decisions".into(), |n| n.to_string_lossy().into_owned());
        self.path.with_file_name(format!(".{name}.part{index}"))
    }

    /// Joins the parts of `count` scripts into the file (with the CSV header first) and removes
    /// them.
    pub fn assemble(&self, count: usize) -> Result<()> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| Error::Io { path, source }
        };
        let result = crate::files::write_atomic_path(&self.path, |temp| {
            let file = File::create(temp).map_err(io(temp))?;
            let mut out = BufWriter::new(file);
            if self.format == DecisionsFormat::Csv {
                let mut header = csv_writer(&mut out);
                header.write_record(COLUMNS).map_err(|e| io(temp)(e.into()))?;
                header.flush().map_err(io(temp))?;
            }
            for i in 0..count {
                let part = self.part(i);
                let mut f = File::open(&part).map_err(io(&part))?;
                std::io::copy(&mut f, &mut out).map_err(io(temp))?;
            }
            out.flush().map_err(io(temp))
        });
        self.discard(count);
        result
    }

    /// Removes the parts of `count` scripts (after a failed run, or once joined).
    pub fn discard(&self, count: usize) {
        for i in 0..count {
            crate::files::remove_part(&self.part(i));
        }
    }
}

/// One script's rows, written to its part of the file as the run goes.
pub struct DecisionWriter {
    rows: Rows,
    path: PathBuf,
    script: String,
    /// Whether each reply is written alone (a spec of one call) or as `name=reply`.
    bare: bool,
    params: Params,
    reports: Reports,
    request: u64,
    line: String,
    reply: String,
}

/// Where a part's rows go, in its format.
enum Rows {
    Csv(Box<csv::Writer<File>>),
    Jsonl(BufWriter<File>),
}

/// A JSON line.
#[derive(Serialize)]
struct Row<'a> {
    script: &'a str,
    request: u64,
    at_us: i64,
    now_ms: i64,
    subject: &'a str,
    phase: &'a str,
    cost: u64,
    units: u64,
    reply: &'a str,
    allowed: bool,
    remaining: Option<i64>,
    retry_after_ms: Option<i64>,
    reset_ms: Option<i64>,
    exact_allowed: bool,
    verdict: &'a str,
    retry_after_honest: Option<bool>,
    retry_after: Option<u64>,
    ratelimit: Option<&'a str>,
    headers_honest: Option<bool>,
}

/// A decision field as the file writes it: `None` (empty, `null`) when the spec does not report it
/// or its expression gave `nil` for this decision.
fn field(reported: bool, value: i64) -> Option<i64> {
    // A negative wait an adapter told is written as -1 (its value is not kept).
    if reported && value == Decision::TOLD_NEGATIVE {
        return Some(-1);
    }
    (reported && value != Decision::NOT_REPORTED).then_some(value)
}

impl DecisionWriter {
    /// A writer for script number `index` of the run (its part of `out`).
    pub fn create(out: &DecisionsOut, index: usize, limiter: &Limiter) -> Result<DecisionWriter> {
        let path = out.part(index);
        let file = crate::files::create_part(&path)?;
        let bare = matches!(limiter.spec().program, Program::Declarative(_)) && limiter.program().calls.len() == 1;
        Ok(DecisionWriter {
            rows: match out.format {
                DecisionsFormat::Csv => Rows::Csv(Box::new(csv_writer(file))),
                DecisionsFormat::Jsonl => Rows::Jsonl(BufWriter::with_capacity(1 << 16, file)),
            },
            path,
            script: limiter.name().to_string(),
            bare,
            params: limiter.params(),
            reports: limiter.reports(),
            request: 0,
            line: String::with_capacity(256),
            reply: String::with_capacity(64),
        })
    }

    /// Writes one decision: `r` made from `step` (of `subject`, in `phase`), the calls it made,
    /// and what the metrics found (the exact log's verdict among it).
    pub fn write(
        &mut self,
        r: &Record,
        step: &Step,
        subject: &str,
        phase: &str,
        calls: &[CallRecord],
        judged: Judged,
    ) -> Result<()> {
        let exact = judged.exact_admits;
        self.request += 1;
        self.reply.clear();
        for (i, c) in calls.iter().enumerate() {
            if i > 0 {
                self.reply.push(';');
            }
            if !self.bare {
                self.reply.push_str(&c.name);
                self.reply.push('=');
            }
            push_reply(&mut self.reply, &c.reply);
        }
        let d = &r.decision;
        let remaining = field(self.reports.remaining, d.remaining);
        let retry_after_ms = field(self.reports.retry_after, d.retry_after_ms);
        let reset_ms = field(self.reports.reset, d.reset_after_ms);
        let h = headers(d, self.reports, &self.params);
        let verdict = match (d.allowed, exact) {
            (true, false) => "false_allow",
            (false, true) => "false_rejection",
            _ => "agree",
        };
        // The units the metrics count: the cost for a script that takes one, else 1.
        let units = r.cost;
        let io = |source| Error::Io { path: self.path.clone(), source };
        match &mut self.rows {
            Rows::Jsonl(out) => {
                let row = Row {
                    script: &self.script,
                    request: self.request,
                    at_us: r.at.0,
                    now_ms: r.now_ms,
                    subject,
                    phase,
                    cost: step.cost,
                    units,
                    reply: &self.reply,
                    allowed: d.allowed,
                    remaining,
                    retry_after_ms,
                    reset_ms,
                    exact_allowed: exact,
                    verdict,
                    retry_after_honest: judged.retry_after_honest,
                    retry_after: h.retry_after,
                    ratelimit: h.ratelimit.as_deref(),
                    headers_honest: judged.headers_honest,
                };
                let json = serde_json::to_string(&row).map_err(|e| Error::Invalid {
                    context: "--decisions".into(),
                    field: "row".into(),
                    reason: e.to_string(),
                })?;
                self.line.clear();
                self.line.push_str(&json);
                self.line.push('\n');
                out.write_all(self.line.as_bytes()).map_err(io)
            }
            Rows::Csv(out) => {
                let num = |v: Option<i64>| v.map_or(String::new(), |x| x.to_string());
                let flag = |b: bool| if b { "1" } else { "0" };
                let fields: [&str; 19] = [
                    &self.script,
                    &self.request.to_string(),
                    &r.at.0.to_string(),
                    &r.now_ms.to_string(),
                    subject,
                    phase,
                    &step.cost.to_string(),
                    &units.to_string(),
                    &self.reply,
                    flag(d.allowed),
                    &num(remaining),
                    &num(retry_after_ms),
                    &num(reset_ms),
                    flag(exact),
                    verdict,
                    judged.retry_after_honest.map_or("", flag),
                    &h.retry_after.map_or(String::new(), |s| s.to_string()),
                    h.ratelimit.as_deref().unwrap_or(""),
                    judged.headers_honest.map_or("", flag),
                ];
                out.write_record(fields).map_err(|e| io(e.into()))
            }
        }
    }

    /// Flushes the part to disk.
    pub fn finish(mut self) -> Result<()> {
        match &mut self.rows {
            Rows::Csv(out) => out.flush(),
            Rows::Jsonl(out) => out.flush(),
        }
        .map_err(|source| Error::Io { path: self.path.clone(), source })
    }
}

/// Appends `reply` in the compact one-line form of the module documentation.
pub fn push_reply(out: &mut String, reply: &Reply) {
    match reply {
        Reply::Int(i) => out.push_str(itoa::Buffer::new().format(*i)),
        Reply::Bulk(b) => push_quoted(out, b),
        Reply::Nil | Reply::NilArray => out.push_str("nil"),
        Reply::Status(s) => out.push_str(s),
        Reply::Error(e) => {
            out.push_str("(error) ");
            out.push_str(e);
        }
        Reply::Double(d) => out.push_str(&format_double(*d)),
        Reply::HumanDouble(d) => out.push_str(&limitlab_emulator::reply::format_human_double(*d)),
        Reply::Verbatim(b) => push_quoted(out, b),
        Reply::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Reply::Array(v) | Reply::Set(v) => {
            out.push('[');
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_reply(out, x);
            }
            out.push(']');
        }
        Reply::Map(kv) => {
            out.push('{');
            for (i, (k, v)) in kv.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_reply(out, k);
                out.push(':');
                push_reply(out, v);
            }
            out.push('}');
        }
    }
}

/// A reply in the compact form (see [`push_reply`]).
pub fn reply_text(reply: &Reply) -> String {
    let mut s = String::new();
    push_reply(&mut s, reply);
    s
}

/// A bulk string quoted as redis-cli quotes it (its `sdscatrepr`): `\\`, `\"`, `\n`, `\r`, `\t`,
/// `\a`, `\b` escaped, other bytes outside printable ASCII as `\xhh`.
fn push_quoted(out: &mut String, b: &[u8]) {
    out.push('"');
    for &c in b {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            7 => out.push_str("\\a"),
            8 => out.push_str("\\b"),
            0x20..=0x7e => out.push(c as char),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\x");
                out.push(HEX[(c >> 4) as usize] as char);
                out.push(HEX[(c & 15) as usize] as char);
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_read_like_redis_cli_on_one_line() {
        let cases: [(Reply, &str); 9] = [
            (Reply::Array(vec![Reply::Int(1), Reply::Int(9), Reply::Int(-1), Reply::Int(1000)]), "[1,9,-1,1000]"),
            (Reply::bulk("0.25"), "\"0.25\""),
            (Reply::Nil, "nil"),
            (Reply::Array(vec![]), "[]"),
            (
                Reply::Array(vec![Reply::Nil, Reply::bulk("a\"b\\\n"), Reply::Bulk(vec![0xff, b' '])]),
                "[nil,\"a\\\"b\\\\\\n\",\"\\xff \"]",
            ),
            (Reply::ok(), "OK"),
            (Reply::err("ERR bad"), "(error) ERR bad"),
            (Reply::Double(0.25), "0.25"),
            (Reply::Map(vec![(Reply::bulk("k"), Reply::Bool(true))]), "{\"k\":true}"),
        ];
        for (r, want) in cases {
            assert_eq!(reply_text(&r), want, "{r:?}");
        }
    }

    #[test]
    fn the_extension_picks_the_format() {
        assert_eq!(DecisionsOut::new("d.csv").unwrap().format, DecisionsFormat::Csv);
        assert_eq!(DecisionsOut::new("d.JSONL").unwrap().format, DecisionsFormat::Jsonl);
        assert_eq!(DecisionsOut::new("a/d.json").unwrap().format, DecisionsFormat::Jsonl);
        for bad in ["d.txt", "d", "d.csv.gz"] {
            let e = DecisionsOut::new(bad).unwrap_err().to_string();
            assert!(e.contains(".csv") && e.contains(".jsonl") && e.contains(".json") && e.contains(bad), "{e}");
        }
        assert_eq!(DecisionsOut::new("out/d.csv").unwrap().part(2), Path::new("out/.d.csv.part2"));
    }
}
