//! Writing arrivals as a CSV trace that reads back identically, and the one CSV dialect every CSV
//! file limitlab writes uses (traces here, `run --decisions` in `sim::decisions`).
use std::io::Write;
use std::path::Path;

use super::{Rebase, TraceFormat, TraceSpec, OP_NAME};
use crate::traffic::{invalid, Arrival, Op};
use limitlab_emulator::clock::Micros;
use limitlab_emulator::{Error, Result};

/// The header [`write_csv`] writes.
pub const CSV_HEADER: [&str; 4] = ["time", "key", "cost", "phase"];

/// A writer of limitlab's CSV files: comma-separated records ended by `\n`, a field quoted (RFC 4180,
/// a quote inside doubled) only when it holds a comma, a quote or a line break, as the `csv` crate
/// writes by default. Any RFC 4180 reader reads every field back exactly as it was.
pub(crate) fn csv_writer<W: Write>(out: W) -> csv::Writer<W> {
    csv::WriterBuilder::new().buffer_capacity(1 << 16).from_writer(out)
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
pub fn write_csv_to<W: Write>(out: W, arrivals: &[Arrival], path: &Path) -> Result<()> {
    let io = |e: csv::Error| Error::Io { path: path.to_owned(), source: e.into() };
    let mut w = csv_writer(out);
    // An `op` column only when some arrival is a lifecycle operation: request-only traces keep the
    // four columns every other reader knows.
    let ops = arrivals.iter().any(|a| a.op != Op::Request);
    let mut header = CSV_HEADER.to_vec();
    if ops {
        header.push(OP_NAME);
    }
    w.write_record(&header).map_err(io)?;
    for (i, a) in arrivals.iter().enumerate() {
        if a.key.is_empty() || a.key.trim() != a.key {
            return Err(invalid(
                "write_csv",
                &format!("arrivals[{i}].key"),
                format!("{:?} would not read back the same", a.key),
            ));
        }
        if a.phase.trim() != a.phase {
            return Err(invalid(
                "write_csv",
                &format!("arrivals[{i}].phase"),
                format!("{:?} would not read back the same", a.phase),
            ));
        }
        w.write_field(format_seconds(a.at.0)).map_err(io)?;
        w.write_field(&a.key).map_err(io)?;
        w.write_field(itoa::Buffer::new().format(a.cost)).map_err(io)?;
        w.write_field(&a.phase).map_err(io)?;
        if ops {
            w.write_field(a.op.name()).map_err(io)?;
        }
        w.write_record(None::<&[u8]>).map_err(io)?;
    }
    w.flush().map_err(|source| Error::Io { path: path.to_owned(), source })
}

/// Writes arrivals to a CSV file that [`read_csv`] (or a `kind = "trace"` spec with
/// `rebase = "absolute"`) reads back identically. See [`write_csv_to`].
pub fn write_csv(path: impl AsRef<Path>, arrivals: &[Arrival]) -> Result<()> {
    let path = path.as_ref();
    crate::files::write_atomic_path(path, |temp| {
        let file = std::fs::File::create(temp).map_err(|source| Error::Io { path: temp.to_owned(), source })?;
        write_csv_to(file, arrivals, temp)
    })
}

/// Reads a CSV file as written by [`write_csv`]: absolute times, ties left as they are.
pub fn read_csv(path: impl AsRef<Path>) -> Result<Vec<Arrival>> {
    let spec = TraceSpec { format: Some(TraceFormat::Csv), rebase: Rebase::Absolute, ..TraceSpec::new(path.as_ref()) };
    spec.read(Micros(0))
}

#[cfg(test)]
mod tests {
    use super::super::tests::T0;
    use super::*;

    #[test]
    fn fields_are_quoted_only_when_they_must_be() {
        let mut w = csv_writer(Vec::new());
        w.write_record(["a", "\"default\";r=1", "x,y", " pad", "two\nlines", "cr\r", "tab\there", ""]).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(text, "a,\"\"\"default\"\";r=1\",\"x,y\", pad,\"two\nlines\",\"cr\r\",tab\there,\n");
    }

    #[test]
    fn csv_round_trip() {
        let dir = std::env::temp_dir().join(format!("limitlab-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("round.csv");
        let mut arrivals = crate::traffic::BoundaryBurst::classic(1000).arrivals(T0, 0);
        arrivals.extend(
            crate::traffic::Poisson { keys: 5, cost: 3, ..crate::traffic::Poisson::new(100.0, 3000) }.arrivals(T0, 9),
        );
        arrivals.push(Arrival {
            at: Micros(1_500_001),
            key: "comma, \"quoted\" key".into(),
            cost: 7,
            phase: "x y".into(),
            op: Op::Request,
        });
        arrivals.push(Arrival {
            at: Micros(0),
            key: "ünïcode\tkey".into(),
            cost: u64::MAX,
            phase: String::new(),
            op: Op::Request,
        });
        arrivals.push(Arrival {
            at: Micros(1),
            key: "two\r\nlines".into(),
            cost: 0,
            phase: "\"p\"".into(),
            op: Op::Request,
        });
        crate::traffic::sort_stable(&mut arrivals);
        write_csv(&path, &arrivals).unwrap();
        assert_eq!(read_csv(&path).unwrap(), arrivals);
        // The same file through a scenario-style spec.
        let s = TraceSpec { rebase: Rebase::Absolute, ..TraceSpec::new(&path) };
        assert_eq!(s.read(Micros(0)).unwrap(), arrivals);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("time,key,cost,phase\n0.000000,"), "{}", &text[..60]);
        assert!(text.contains("\n1.500001,"), "{}", &text[..120]);
        // A time before the epoch is refused when read back, at its line.
        std::fs::write(&path, "time,key\n1,a\n-1.5,b\n").unwrap();
        let e = read_csv(&path).unwrap_err().to_string();
        assert!(
            e.ends_with("round.csv:3: time `-1.5` is negative (before 1970-01-01); times count from the epoch, from 0"),
            "{e}"
        );
        // Lifecycle operations add the `op` column, and read back.
        arrivals.push(Arrival { at: Micros(T0.0 + 1), key: "k".into(), cost: 2, phase: String::new(), op: Op::Refund });
        crate::traffic::sort_stable(&mut arrivals);
        write_csv(&path, &arrivals).unwrap();
        assert!(std::fs::read_to_string(&path).unwrap().starts_with("time,key,cost,phase,op\n"));
        assert_eq!(read_csv(&path).unwrap(), arrivals);
        // Refused rather than changed.
        let bad = [Arrival { at: Micros(0), key: " padded".into(), cost: 1, phase: String::new(), op: Op::Request }];
        assert!(matches!(write_csv(&path, &bad), Err(Error::Invalid { field, .. }) if field == "arrivals[0].key"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
