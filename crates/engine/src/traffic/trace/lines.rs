//! The formats of one record per line: JSON lines (one object per line, fields named as CSV columns
//! are) and common or combined access logs (the client address and the `[date]`).
use super::values::{parse_clf_time, parse_cost, parse_key, parse_op};
use super::{Raw, TraceSpec, COST_NAME, KEY_NAMES, OP_NAME, PHASE_NAME, TIME_NAMES};
use crate::traffic::{Arrival, Op};
use crate::Result;
use limitlab_emulator::clock::Micros;

impl TraceSpec {
    /// One JSON object per non-blank line.
    pub(super) fn parse_jsonl(&self, text: &str, first_line: usize, out: &mut Vec<Raw>) -> Result<()> {
        for (i, line) in text.lines().enumerate() {
            let line_no = first_line + i;
            if line.trim().is_empty() {
                continue;
            }
            match self.parse_jsonl_line(line, line_no) {
                Ok(raw) => out.push(raw),
                Err(e) => self.skip_or_fail(e)?,
            }
        }
        Ok(())
    }

    /// One JSON line.
    fn parse_jsonl_line(&self, line: &str, line_no: usize) -> Result<Raw> {
        {
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
            let (time_name, time) = pick(&self.time_column, &TIME_NAMES)
                .ok_or_else(|| err(missing(&self.time_column, &TIME_NAMES, "time")))?;
            let time_text = match time {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(n) => n.to_string(),
                other => return Err(err(format!("`{time_name}` is {other}, not a time"))),
            };
            let (at, res) = self.parse_time(time_text.trim(), self.numbers_are_millis(time_name)).map_err(err)?;
            let (key_name, key) =
                pick(&self.key_column, &KEY_NAMES).ok_or_else(|| err(missing(&self.key_column, &KEY_NAMES, "key")))?;
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
            Ok(Raw { at, res, line: line_no, arrival: Arrival { at: Micros(at), key, cost, phase, op } })
        }
    }

    /// Common or combined log format: `host ident user [dd/Mon/yyyy:HH:MM:SS +zzzz] "request" ...`.
    pub(super) fn parse_clf(&self, text: &str, first_line: usize, out: &mut Vec<Raw>) -> Result<()> {
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let line = (first_line + i, line);
            let (at, key) = match parse_clf_line(line.1) {
                Ok(v) => v,
                Err(r) => {
                    self.skip_or_fail(self.error(line.0, r))?;
                    continue;
                }
            };
            out.push(Raw {
                at,
                res: 1_000_000,
                line: line.0,
                arrival: Arrival {
                    at: Micros(at),
                    key,
                    cost: 1,
                    phase: String::new(),
                    op: crate::traffic::Op::Request,
                },
            });
        }
        Ok(())
    }
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

#[cfg(test)]
mod tests {
    use super::super::tests::{parse_err, spec, times, T0};
    use super::*;

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
        assert_eq!(
            got,
            [(t, "199.72.81.55"), (t, "10.1.1.1"), (t, "2001:db8::1"), (t + 5_000_000, "unicomp6.unicomp.net")]
        );
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
}
