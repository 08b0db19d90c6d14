//! The values in a trace's fields: times (decimal numbers, RFC 3339, access-log dates), keys, costs
//! and lifecycle operations. Each parser returns the reason a value is refused; the caller names the
//! file and line.
use super::{TimeFormat, TraceSpec, MAX_TICK_US};
use crate::traffic::Op;

impl TraceSpec {
    /// Whether plain numbers in the column `name` are milliseconds.
    pub(super) fn numbers_are_millis(&self, name: &str) -> bool {
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
    pub(super) fn parse_time(&self, s: &str, millis: bool) -> std::result::Result<(i64, i64), String> {
        let date_like = s.len() >= 10 && s.as_bytes()[4] == b'-' && s.as_bytes()[..4].iter().all(u8::is_ascii_digit);
        let (at, res) = match self.time_format {
            TimeFormat::Rfc3339 => parse_rfc3339(s),
            TimeFormat::Auto if date_like => parse_rfc3339(s),
            _ => parse_decimal(s, if millis { 3 } else { 6 }),
        }?;
        // The virtual clock starts at the epoch: a time before it is a mistake in the file (a
        // sign, a column of offsets), not a request to replay.
        if at < 0 {
            return Err(format!("time `{s}` is negative (before 1970-01-01); times count from the epoch, from 0"));
        }
        Ok((at, res))
    }
}

/// A key: any non-empty text.
pub(super) fn parse_key(s: &str) -> std::result::Result<String, String> {
    if s.is_empty() {
        return Err("empty key".to_owned());
    }
    Ok(s.to_owned())
}

/// An `op` field: empty or `request` for a request, else `refund`, `reset` or `clear`.
pub(super) fn parse_op(s: &str) -> std::result::Result<Op, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(Op::Request);
    }
    Op::parse(&s.to_ascii_lowercase()).ok_or_else(|| format!("op `{s}` is not one of request, refund, reset, clear"))
}

/// A cost: an integer from 0 (0: a read-only "check" or "peek" call, which asks without taking
/// anything); an empty field means 1.
pub(super) fn parse_cost(s: &str) -> std::result::Result<u64, String> {
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
fn civil_to_micros(
    y: i64,
    mo: u32,
    d: u32,
    h: u32,
    mi: u32,
    sec: u32,
    offset_s: i64,
) -> std::result::Result<i64, String> {
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
pub(super) fn parse_clf_time(s: &str) -> std::result::Result<i64, String> {
    let b = s.as_bytes();
    let bad = || format!("date `[{s}]` is not like [01/Jul/1995:00:00:01 -0400]");
    if b.len() != 26 || b[2] != b'/' || b[6] != b'/' || b[11] != b':' || b[14] != b':' || b[17] != b':' || b[20] != b' '
    {
        return Err(bad());
    }
    let (Some(d), Some(y), Some(h), Some(mi), Some(sec), Some(oh), Some(om)) = (
        digits(b, 0, 2),
        digits(b, 7, 4),
        digits(b, 12, 2),
        digits(b, 15, 2),
        digits(b, 18, 2),
        digits(b, 22, 2),
        digits(b, 24, 2),
    ) else {
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

#[cfg(test)]
mod tests {
    use super::super::tests::T0;
    use super::*;

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
}
