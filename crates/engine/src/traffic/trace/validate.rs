//! Checking a trace's settings before its file is read: the format can be told, the columns make
//! sense for it, and `tick_ms` is within a day.
use super::{invalid, TimeFormat, TraceFormat, TraceSpec, CONTEXT, MAX_TICK_US};
use crate::Result;

impl TraceSpec {
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
                return Err(invalid(
                    CONTEXT,
                    field,
                    "access logs have fixed fields; columns apply to CSV, TSV and JSONL",
                ));
            }
            if v.as_deref().is_some_and(|c| c.trim().is_empty()) {
                return Err(invalid(CONTEXT, field, "must not be empty"));
            }
        }
        if let Some(t) = self.tick_ms {
            if t == 0 || t as i64 > MAX_TICK_US / 1000 {
                return Err(invalid(
                    CONTEXT,
                    "tick_ms",
                    format!("must be from 1 to {} (one day), got {t}", MAX_TICK_US / 1000),
                ));
            }
        }
        if format == TraceFormat::Clf && self.time_format != TimeFormat::Auto {
            return Err(invalid(CONTEXT, "time_format", "access logs have a fixed time format"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

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
}
