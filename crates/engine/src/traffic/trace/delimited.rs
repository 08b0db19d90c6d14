//! CSV and TSV traces, read with the `csv` crate: a header naming the columns, then one record per
//! arrival. The dialect is RFC 4180 with the delimiter as a parameter: records end at LF, CRLF or CR,
//! a field may be quoted with `"` (a quote inside doubled) and then hold delimiters and line breaks,
//! blank lines are skipped, and fields are trimmed of surrounding whitespace.
//!
//! The `csv` crate reads any text as some records: a quote left open takes in the rest of the file,
//! and text after a closing quote joins the field. A trace must not be read that way (a record
//! swallowed by an open quote is a request silently lost), so every record holding a quote is
//! checked against the fields read from it, and malformed quoting is an error naming its line.
use super::values::{parse_cost, parse_key, parse_op};
use super::{Raw, TraceSpec, COST_NAME, KEY_NAMES, OP_NAME, PHASE_NAME, TIME_NAMES};
use crate::traffic::{Arrival, Op};
use crate::Result;
use limitlab_emulator::clock::Micros;

/// The columns a CSV or TSV header names.
#[derive(Clone, Debug)]
pub(super) struct Columns {
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

/// The records of CSV or TSV text, each with the line it starts on (quoted fields may span lines).
struct Records<'a> {
    text: &'a str,
    reader: csv::Reader<&'a [u8]>,
    record: csv::StringRecord,
    delimiter: char,
    /// How many bytes of `text` the records read so far took, and the line (1-based) there.
    pos: usize,
    line: usize,
}

const NOT_CLOSED: &str = "a quoted field is not closed";
const AFTER_QUOTE: &str = "text after the closing quote of a field";
const BARE_QUOTE: &str =
    "a quote in a field that is not quoted (quote the whole field, with no space before the opening quote)";

impl<'a> Records<'a> {
    /// The records of `text`, whose first line is line `first_line` of the file.
    fn new(text: &'a str, first_line: usize, delimiter: u8) -> Records<'a> {
        // A 64 KiB buffer (the default is 8 KiB) read a 1M-line trace a fifth faster.
        let reader = csv::ReaderBuilder::new()
            .buffer_capacity(1 << 16)
            .has_headers(false)
            .flexible(true)
            .delimiter(delimiter)
            .from_reader(text.as_bytes());
        Records {
            text,
            reader,
            record: csv::StringRecord::new(),
            delimiter: delimiter as char,
            pos: 0,
            line: first_line,
        }
    }

    /// Reads the next record that is not blank into `self.record`; returns the line it starts on,
    /// `None` at the end, or (line, reason) when its quoting is malformed.
    fn next(&mut self) -> std::result::Result<Option<usize>, (usize, String)> {
        loop {
            let more = self.reader.read_record(&mut self.record).map_err(|e| (self.line, e.to_string()))?;
            if !more {
                return Ok(None);
            }
            let end = self.reader.position().byte() as usize;
            // What the record took: line ends left from the record before (and blank lines), the
            // record, and its own line end.
            let took = &self.text[self.pos..end];
            let body = took.trim_start_matches(['\r', '\n']);
            let start = self.line + took[..took.len() - body.len()].bytes().filter(|&b| b == b'\n').count();
            self.line += took.bytes().filter(|&b| b == b'\n').count();
            self.pos = end;
            let body = body.trim_end_matches(['\r', '\n']);
            if body.trim().is_empty() {
                // A line of spaces (or of tabs, between empty TSV fields) is blank too.
                continue;
            }
            if body.contains('"') {
                self.check_quoting(body, end == self.text.len()).map_err(|r| (start, r.to_owned()))?;
            }
            return Ok(Some(start));
        }
    }

    /// Checks that `body`, the text of the record just read, is its fields as RFC 4180 writes them:
    /// each one as it is (with no quote in it) or quoted, with the delimiter between. `at_end`: the
    /// record runs to the end of the text.
    fn check_quoting(&self, body: &str, at_end: bool) -> std::result::Result<(), &'static str> {
        let mut rest = body;
        for (i, field) in self.record.iter().enumerate() {
            if i > 0 {
                rest = rest.strip_prefix(self.delimiter).ok_or(AFTER_QUOTE)?;
            }
            rest = match rest.strip_prefix('"') {
                Some(quoted) => match strip_quoted(quoted, field) {
                    Some(after) => after,
                    // An open quote takes in everything to the end, and leaves an odd number of them.
                    None if at_end && body.matches('"').count() % 2 == 1 => return Err(NOT_CLOSED),
                    None => return Err(AFTER_QUOTE),
                },
                None => match rest.strip_prefix(field) {
                    Some(after) if !field.contains('"') => after,
                    _ => return Err(BARE_QUOTE),
                },
            };
        }
        if rest.is_empty() {
            Ok(())
        } else {
            Err(AFTER_QUOTE)
        }
    }
}

/// `text` after `field` written inside quotes (its own quotes doubled) and the closing quote.
fn strip_quoted<'t>(mut text: &'t str, field: &str) -> Option<&'t str> {
    for (i, piece) in field.split('"').enumerate() {
        if i > 0 {
            text = text.strip_prefix("\"\"")?;
        }
        text = text.strip_prefix(piece)?;
    }
    text.strip_prefix('"')
}

impl TraceSpec {
    /// Parses CSV or TSV `text`, whole records of the file starting at line `first_line`, onto `out`.
    /// The first chunk of a file starts with the header, which fills `columns` for the chunks after it.
    pub(super) fn parse_delimited(
        &self,
        text: &str,
        first_line: usize,
        delimiter: u8,
        columns: &mut Option<Columns>,
        out: &mut Vec<Raw>,
    ) -> Result<()> {
        let mut records = Records::new(text, first_line, delimiter);
        let cols = match columns {
            Some(c) => c,
            None => columns.insert(self.read_header(&mut records)?),
        };
        self.parse_records(&mut records, cols, out)
    }

    /// The header of a CSV or TSV trace: the columns to read.
    fn read_header(&self, records: &mut Records) -> Result<Columns> {
        let header_line = match records.next().map_err(|(line, r)| self.error(line, r))? {
            Some(line) => line,
            None => return Err(self.error(1, "no header line (the first line must name the columns)")),
        };
        let header: Vec<String> = records.record.iter().map(|h| h.trim().to_owned()).collect();
        let find = |wanted: &Option<String>, defaults: &[&str], what: &str| -> Result<Option<usize>> {
            match wanted {
                Some(name) => match header.iter().position(|h| h == name.trim()) {
                    Some(i) => Ok(Some(i)),
                    None => Err(self.error(
                        header_line,
                        format!("no column `{name}` in the header (columns: {})", header.join(", ")),
                    )),
                },
                None => {
                    let found = defaults.iter().find_map(|d| header.iter().position(|h| h.eq_ignore_ascii_case(d)));
                    if found.is_none() && !what.is_empty() {
                        return Err(self.error(
                            header_line,
                            format!("no {what} column (looked for {}); set `{what}_column`", defaults.join(", ")),
                        ));
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
        Ok(Columns {
            count: header.len(),
            time: time_col,
            key: key_col,
            cost: cost_col,
            phase: phase_col,
            op: op_col,
            millis,
        })
    }

    /// The records after a CSV or TSV header, onto `out` (a bad one skipped when `skip_bad_lines`).
    fn parse_records(&self, records: &mut Records, cols: &Columns, out: &mut Vec<Raw>) -> Result<()> {
        loop {
            let line = match records.next() {
                Ok(Some(line)) => line,
                Ok(None) => return Ok(()),
                Err((line, r)) => {
                    self.skip_or_fail(self.error(line, r))?;
                    continue;
                }
            };
            match self.parse_record(&records.record, line, cols) {
                Ok(raw) => out.push(raw),
                Err(e) => self.skip_or_fail(e)?,
            }
        }
    }

    /// One record after the header.
    fn parse_record(&self, fields: &csv::StringRecord, line: usize, cols: &Columns) -> Result<Raw> {
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
        Ok(Raw { at, res, line, arrival: Arrival { at: Micros(at), key, cost, phase, op } })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{parse_err, spec, times, T0};
    use super::super::{Rebase, TimeFormat, TraceFormat};
    use super::*;

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
        assert_eq!(
            s.parse("time,key,cost\n1,a,0\n2,a,3\n", Micros(0)).unwrap().iter().map(|a| a.cost).collect::<Vec<_>>(),
            [0, 3]
        );
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
        // Quotes are RFC 4180's: the whole field, with nothing before the opening quote or after the
        // closing one.
        let (line, reason) = parse_err(&s, "time,key\n1,a\n2, \"b\"\n");
        assert_eq!(line, 3);
        assert!(reason.starts_with("a quote in a field that is not quoted"), "{reason}");
        assert!(parse_err(&s, "time,key\n1,a\"b\n").1.starts_with("a quote in a field that is not quoted"));
        assert_eq!(parse_err(&s, "time,key\n1,\"a\" ,x\n"), (2, "text after the closing quote of a field".to_owned()));
        // An open quote is named on the line it opens, however much of the file it would take in.
        assert_eq!(parse_err(&s, "time,key\n1,\"a\n2,b\n3,c\n"), (2, "a quoted field is not closed".to_owned()));
    }

    #[test]
    fn delimited_dialect() {
        let fields = |r: &Records| r.record.iter().map(str::to_owned).collect::<Vec<_>>();
        let mut r = Records::new("a,\"b,\"\"c\"\"\",d\r\n\r\n\"x\ny\t2\"\n,\n", 1, b',');
        assert_eq!(r.next(), Ok(Some(1)));
        assert_eq!(fields(&r), ["a", "b,\"c\"", "d"]);
        assert_eq!(r.next(), Ok(Some(3)));
        assert_eq!(fields(&r), ["x\ny\t2"]);
        assert_eq!(r.next(), Ok(Some(5)));
        assert_eq!(fields(&r), ["", ""]);
        assert_eq!(r.next(), Ok(None));
        let mut r = Records::new("a\tb c\t\"d\"\n \t \nlast\t\t", 7, b'\t');
        assert_eq!(r.next(), Ok(Some(7)));
        assert_eq!(fields(&r), ["a", "b c", "d"]);
        assert_eq!(r.next(), Ok(Some(9)));
        assert_eq!(fields(&r), ["last", "", ""]);
        assert_eq!(r.next(), Ok(None));
    }
}
