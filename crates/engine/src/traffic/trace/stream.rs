//! Streaming a trace: the file is read a chunk of whole records at a time, so a trace of tens of
//! millions of lines replays in memory that does not grow with its length (only with its subjects,
//! its busiest tick and how far a tie rule moves requests past the next recorded time).
//!
//! Streaming needs the file sorted by time, as recorded traffic is; [`TraceSpec::scan`] reads it
//! once to say whether it is (and to count it), and a file that is not is read whole and sorted, as
//! before. A streamed file gives exactly the arrivals, in exactly the order, that reading it whole
//! gives: the same rebase, the same tie placement group by group (the `jitter` rule draws its offsets
//! in the same order), and the same stable order among equal times.
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{BufRead, BufReader};

use super::{invalid, Columns, Raw, Rebase, TickCount, Ticks, TraceFormat, TraceSpec, CONTEXT};
use crate::traffic::Arrival;
use limitlab_emulator::clock::Micros;
use limitlab_emulator::{Error, Result};

/// About how many bytes of records are parsed at a time (small in unit tests, so that their files
/// cross many chunk boundaries).
const CHUNK_BYTES: usize = if cfg!(test) { 1 << 14 } else { 1 << 20 };

/// Reads a trace file a chunk of whole records at a time (a quoted CSV field may span lines: a
/// chunk never ends inside one).
struct Chunks {
    reader: BufReader<Box<dyn std::io::Read + Send>>,
    /// The line the next chunk starts on.
    line: usize,
    columns: Option<Columns>,
    delimited: bool,
    first: bool,
    done: bool,
    buf: Vec<u8>,
}

impl Chunks {
    fn open(spec: &TraceSpec) -> Result<Chunks> {
        spec.validate()?;
        let file = crate::files::open_trace(&spec.path)?;
        let delimited = matches!(spec.resolved_format()?, TraceFormat::Csv | TraceFormat::Tsv);
        Ok(Chunks {
            reader: BufReader::with_capacity(1 << 16, file),
            line: 1,
            columns: None,
            delimited,
            first: true,
            done: false,
            buf: Vec::with_capacity(CHUNK_BYTES + 4096),
        })
    }

    /// Parses the next chunk onto `out` (cleared first); false once the file is done.
    fn next(&mut self, spec: &TraceSpec, out: &mut Vec<Raw>) -> Result<bool> {
        out.clear();
        if self.done {
            return Ok(false);
        }
        self.buf.clear();
        // Whole lines until the chunk is big enough and no quoted field is open (an even number
        // of quotes so far: `""` inside a field counts twice).
        let mut open_quote = false;
        loop {
            let before = self.buf.len();
            let n = self
                .reader
                .read_until(b'\n', &mut self.buf)
                .map_err(|source| Error::Io { path: spec.path.clone(), source })?;
            if n == 0 {
                self.done = true;
                break;
            }
            if self.delimited {
                let quotes = self.buf[before..].iter().filter(|&&b| b == b'"').count();
                open_quote ^= quotes % 2 == 1;
            }
            if self.buf.len() >= CHUNK_BYTES && !open_quote {
                break;
            }
        }
        if self.buf.is_empty() && !self.first {
            return Ok(false);
        }
        let text = std::str::from_utf8(&self.buf).map_err(|e| {
            let valid = &self.buf[..e.valid_up_to()];
            spec.error(self.line + valid.iter().filter(|&&b| b == b'\n').count(), "not valid UTF-8")
        })?;
        let text = if self.first { text.strip_prefix('\u{feff}').unwrap_or(text) } else { text };
        self.first = false;
        spec.parse_chunk(text, self.line, &mut self.columns, out)?;
        self.line += self.buf.iter().filter(|&&b| b == b'\n').count();
        Ok(true)
    }
}

/// What one pass over a trace file found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scan {
    /// How finely its times are recorded (exact when the file is sorted).
    pub ticks: Ticks,
    /// The first line whose time is earlier than the line before it, if any.
    pub unsorted_at: Option<usize>,
    /// The earliest time in the file, in µs as written (before any rebase).
    pub first_us: Option<i64>,
    /// The file's size in bytes.
    pub bytes: u64,
}

impl Scan {
    /// Whether the file can be streamed: sorted by time.
    pub fn sorted(&self) -> bool {
        self.unsorted_at.is_none()
    }
}

impl TraceSpec {
    /// Reads the file once, a chunk at a time: its [`Ticks`] and whether it is sorted by time. For
    /// a file that is not sorted, the tie counts (`sharing`, `busiest`) are left at what the sorted
    /// part had; [`TraceSpec::ticks`] reads such a file whole instead.
    pub fn scan(&self) -> Result<Scan> {
        let bytes = crate::files::trace_len(&self.path)?;
        let mut chunks = Chunks::open(self)?;
        let mut raws = Vec::new();
        let mut count = TickCount::default();
        let mut unsorted_at = None;
        let mut first_us: Option<i64> = None;
        let mut last: Option<i64> = None;
        while chunks.next(self, &mut raws)? {
            for r in &raws {
                if last.is_some_and(|l| r.at < l) && unsorted_at.is_none() {
                    unsorted_at = Some(r.line);
                }
                last = Some(r.at);
                first_us = Some(first_us.map_or(r.at, |f| f.min(r.at)));
                count.add(r);
            }
        }
        Ok(Scan { ticks: count.finish(), unsorted_at, first_us, bytes })
    }

    /// The arrivals of a file sorted by time (see [`TraceSpec::scan`]), one at a time, exactly as
    /// [`TraceSpec::read`] gives them. A line found out of order, or a file that changed since the
    /// scan, ends the stream with an error naming the line.
    pub fn stream(&self, start: Micros, scan: &Scan) -> Result<TraceStream> {
        let shift = match self.rebase {
            Rebase::Absolute => 0,
            Rebase::Offset => start.0,
            Rebase::First => scan.first_us.map_or(0, |first| start.0.saturating_sub(first)),
        };
        Ok(TraceStream {
            chunks: Chunks::open(self)?,
            jitter: self.jitter_rng(),
            spec: self.clone(),
            raws: Vec::new(),
            next: 0,
            shift,
            group: Vec::new(),
            last_line: (0, i64::MIN),
            pending: BinaryHeap::new(),
            seq: 0,
            safe_until: i64::MIN,
            finished: false,
        })
    }
}

/// An arrival placed by its tie rule and waiting for every earlier one to be known.
struct Pending {
    at: i64,
    /// Its place in time-then-file order, which keeps equal times in file order.
    seq: u64,
    arrival: Arrival,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// A sorted trace's arrivals, one at a time (see [`TraceSpec::stream`]).
pub struct TraceStream {
    spec: TraceSpec,
    chunks: Chunks,
    jitter: Option<rand_chacha::ChaCha8Rng>,
    /// The current chunk, and the next of its records to take.
    raws: Vec<Raw>,
    next: usize,
    shift: i64,
    /// The records of the time being read (ties), placed once the next time shows up.
    group: Vec<Raw>,
    /// The line and time (as written) of the last record read, to catch a file out of order.
    last_line: (usize, i64),
    pending: BinaryHeap<Reverse<Pending>>,
    seq: u64,
    /// Every arrival still to come is at or after this time (the latest recorded time read).
    safe_until: i64,
    finished: bool,
}

impl TraceStream {
    /// The next record of the file, or None at its end.
    fn next_raw(&mut self) -> Result<Option<Raw>> {
        while self.next >= self.raws.len() {
            self.next = 0;
            if !self.chunks.next(&self.spec, &mut self.raws)? {
                return Ok(None);
            }
        }
        let r = std::mem::replace(&mut self.raws[self.next], Raw::EMPTY);
        self.next += 1;
        Ok(Some(r))
    }

    /// Places the current group by the tie rule and queues it.
    fn flush_group(&mut self) {
        let mut group = std::mem::take(&mut self.group);
        self.spec.place_group(&mut group, &mut self.jitter);
        for r in group.drain(..) {
            self.seq += 1;
            self.pending.push(Reverse(Pending { at: r.at, seq: self.seq, arrival: r.arrival }));
        }
        self.group = group;
    }

    fn advance(&mut self) -> Result<Option<Arrival>> {
        loop {
            if let Some(Reverse(top)) = self.pending.peek() {
                if top.at <= self.safe_until || self.finished {
                    let Reverse(p) = self.pending.pop().expect("peeked");
                    return Ok(Some(Arrival { at: Micros(p.at), ..p.arrival }));
                }
            }
            if self.finished {
                return Ok(None);
            }
            let Some(mut r) = self.next_raw()? else {
                self.flush_group();
                self.finished = true;
                continue;
            };
            if r.at < self.last_line.1 {
                return Err(self.spec.error(
                    r.line,
                    format!(
                        "the time goes back from line {} (a streamed trace must be sorted by time; was the file changed while it was read?)",
                        self.last_line.0
                    ),
                ));
            }
            self.last_line = (r.line, r.at);
            r.at =
                r.at.checked_add(self.shift)
                    .ok_or_else(|| invalid(CONTEXT, "rebase", "a shifted time is out of range"))?;
            if self.group.first().is_some_and(|g| g.at != r.at) {
                self.flush_group();
                self.safe_until = r.at;
            }
            self.group.push(r);
        }
    }
}

impl Iterator for TraceStream {
    type Item = Result<Arrival>;

    fn next(&mut self) -> Option<Result<Arrival>> {
        match self.advance() {
            Ok(a) => a.map(Ok),
            Err(e) => {
                self.finished = true;
                self.pending.clear();
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::TieRule;
    use super::*;

    fn write(name: &str, text: impl AsRef<[u8]>) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("limitlab-stream-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// Streaming gives what reading whole gives, for every format, tie rule and rebase, across
    /// chunk boundaries (the texts are made longer than a chunk).
    #[test]
    fn streamed_equals_read_whole() {
        let mut csv = String::from("time_ms,key,cost,phase\n");
        let mut jsonl = String::new();
        let mut log = String::new();
        let mut t = 1_704_067_200_000u64;
        for i in 0..60_000u64 {
            t += [0, 0, 1, 7, 250, 1000][(i % 6) as usize];
            let key =
                if i % 5 == 0 { format!("\"quoted, \"\"user\"\"\n{}\"", i % 7) } else { format!("user{}", i % 11) };
            csv.push_str(&format!("{t},{key},{},p{}\n", i % 3 + 1, i % 2));
            jsonl.push_str(&format!("{{\"time_ms\": {t}, \"key\": \"u{}\"}}\n", i % 13));
            log.push_str(&format!(
                "10.0.0.{} - - [01/Jan/2024:00:{:02}:{:02} +0000] \"GET / HTTP/1.1\" 200 1\n",
                i % 9,
                i / 1000 % 60,
                i % 1000 * 60 / 1000
            ));
        }
        assert!(csv.len() > 2 * CHUNK_BYTES);
        let log = {
            // An access log sorted by time: minutes then seconds as generated above are not.
            let mut lines: Vec<&str> = log.lines().collect();
            lines.sort_by_key(|l| l[l.find('[').unwrap()..l.find(']').unwrap()].to_string());
            lines.join("\n") + "\n"
        };
        for (name, text) in [("t.csv", &csv), ("t.jsonl", &jsonl), ("t.log", &log)] {
            let path = write(name, text);
            for ties in [TieRule::Same, TieRule::Spread, TieRule::Jitter(3)] {
                for (rebase, tick_ms) in [(Rebase::Absolute, None), (Rebase::First, Some(1000)), (Rebase::Offset, None)]
                {
                    let spec = TraceSpec { ties, rebase, tick_ms, ..TraceSpec::new(&path) };
                    let start = Micros(5_000_000);
                    let whole = spec.read(start).unwrap();
                    let scan = spec.scan().unwrap();
                    assert!(scan.sorted(), "{name}");
                    assert_eq!(scan.ticks, spec.parse_ticks(text).unwrap(), "{name}");
                    let streamed: Vec<Arrival> = spec.stream(start, &scan).unwrap().map(|a| a.unwrap()).collect();
                    assert_eq!(streamed.len(), whole.len(), "{name} {ties:?} {rebase:?}");
                    assert!(streamed == whole, "{name} {ties:?} {rebase:?}: streamed and whole differ");
                }
            }
        }
    }

    #[test]
    fn out_of_order_and_bad_lines_are_named() {
        let path = write("u.csv", "time,key\n3,a\n1,b\n2,c\n");
        let spec = TraceSpec::new(&path);
        let scan = spec.scan().unwrap();
        assert_eq!(scan.unsorted_at, Some(3));
        let err = spec.stream(Micros(0), &scan).unwrap().find_map(|a| a.err()).unwrap();
        assert!(matches!(&err, Error::Parse { line: 3, reason, .. } if reason.contains("from line 2")), "{err}");
        let path = write("bad.csv", "time,key\n1,a\n2,b,c\n");
        let err = TraceSpec::new(&path).scan().unwrap_err();
        assert!(matches!(&err, Error::Parse { line: 3, .. }), "{err}");
        let path = write("bad.jsonl", b"{\"time\": 1, \"key\": \"a\"}\n\xff\n");
        let err = TraceSpec::new(&path).scan().unwrap_err();
        assert!(matches!(&err, Error::Parse { line: 2, reason, .. } if reason.contains("UTF-8")), "{err}");
    }
}
