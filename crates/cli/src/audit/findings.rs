//! The audit's verdicts, each with its evidence and what to do. A warning is something to fix
//! (`--strict` exits 1 on one); an info is a figure to know (memory per subject).
use serde::Serialize;

use super::PatternReport;
use crate::report::memory::{megabytes, one_decimal};
use crate::report::table::thousands;

/// What a finding is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Keys without a TTL: they are never removed.
    NoTtl,
    /// TTLs far longer than the window the key names suggest.
    LongTtl,
    /// Sorted sets: a sliding log, whose memory grows with the limit.
    SlidingLog,
    /// One subject's keys in several hash slots.
    CrossSlot,
    /// Memory per subject, now and at ten times the subjects.
    Memory,
    /// Keys that do not look like a rate limiter's: listed, without limiter advice.
    OtherKeys,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::NoTtl => "no_ttl",
            Kind::LongTtl => "long_ttl",
            Kind::SlidingLog => "sliding_log",
            Kind::CrossSlot => "cross_slot",
            Kind::Memory => "memory",
            Kind::OtherKeys => "other_keys",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Warning,
    Info,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub kind: Kind,
    pub severity: Severity,
    pub pattern: String,
    pub summary: String,
    pub evidence: Vec<String>,
    pub advice: String,
}

/// `1 key`, `2 keys`, `1,000 keys`: a count with its noun in the right number.
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// How a total extrapolated from a sample is qualified: `(every key read)`, or its error bound and
/// the sample it comes from. Never "exact" for a sample, even when its keys were all alike.
pub fn bound_of(p: &PatternReport) -> String {
    if p.sampled >= p.keys {
        " (every key read)".to_string()
    } else {
        format!(
            " ± {} (95%, sampled: {} of {})",
            size(p.memory_error_bytes),
            thousands(p.sampled),
            count(p.keys, "key", "keys")
        )
    }
}

/// TTLs longer than this many windows are "far longer than needed" (a window counter needs two).
pub const LONG_TTL_WINDOWS: i64 = 10;

/// A duration in ms as `1.5 s`, `2 min`, `3.2 h`, `4.1 d`.
pub fn duration(ms: i64) -> String {
    let ms = ms as f64;
    let (v, unit) = if ms < 1000.0 {
        return format!("{} ms", ms as i64);
    } else if ms < 60_000.0 {
        (ms / 1000.0, "s")
    } else if ms < 3_600_000.0 {
        (ms / 60_000.0, "min")
    } else if ms < 86_400_000.0 {
        (ms / 3_600_000.0, "h")
    } else {
        (ms / 86_400_000.0, "d")
    };
    if (v - v.round()).abs() < 0.05 {
        format!("{} {unit}", v.round() as i64)
    } else {
        format!("{v:.1} {unit}")
    }
}

/// Bytes for a reader: `512 bytes`, `37.5 KB`, `83.9 MB` (KB and MB of 2^10 and 2^20 bytes, as
/// the seed article counts MB).
pub fn size(n: u64) -> String {
    if n < 10 * 1024 {
        format!("{} bytes", thousands(n))
    } else if n < 10 * 1024 * 1024 {
        one_decimal(n as f64 / 1024.0, "KB")
    } else {
        megabytes(n)
    }
}

/// A UTC date and time from unix ms: `2026-12-01 20:41 UTC`.
pub fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", rem / 3600, rem % 3600 / 60)
}

/// The findings for the patterns of an audit at server time `now_ms`.
pub fn judge(patterns: &[PatternReport], now_ms: i64) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut infos = Vec::new();
    let others: Vec<&PatternReport> = patterns.iter().filter(|p| !p.limiter).collect();
    for p in patterns.iter().filter(|p| p.limiter) {
        out.extend(no_ttl(p, now_ms));
        out.extend(long_ttl(p));
        out.extend(sliding_logs(p));
        out.extend(cross_slot(p));
        infos.extend(memory(p));
    }
    infos.extend(other_keys(&others));
    out.extend(infos);
    out
}

/// Keys without a TTL: never removed.
fn no_ttl(p: &PatternReport, now_ms: i64) -> Option<Finding> {
    if p.no_ttl == 0 {
        return None;
    }
    let mut evidence = vec![format!("{} of {}: PTTL -1 (no TTL)", thousands(p.no_ttl), count(p.keys, "key", "keys"))];
    evidence.push(format!("for example {}", p.examples_no_ttl.join(", ")));
    if let Some(idle) = p.idle_max_s {
        evidence.push(format!(
            "OBJECT IDLETIME of the sampled ones: median {}, up to {}: the oldest untouched since {} at least",
            duration(p.idle_median_s.unwrap_or(0) as i64 * 1000),
            duration(idle as i64 * 1000),
            utc(now_ms - idle as i64 * 1000)
        ));
    } else if p.encodings.contains_key("int") {
        evidence.push(
            "their age is unknown: small integer values (0 to 9999) are Redis's shared objects, whose idle time is \
             not the key's"
                .into(),
        );
    }
    if p.no_ttl < p.keys {
        evidence.push(format!("{} keys of the same pattern do have a TTL", thousands(p.keys - p.no_ttl)));
    }
    Some(Finding {
        kind: Kind::NoTtl,
        severity: Severity::Warning,
        pattern: p.pattern.clone(),
        summary: format!(
            "{} without a TTL: never removed, one more for every subject that ever called",
            count(p.no_ttl, "key", "keys")
        ),
        evidence,
        advice: "Set a TTL whenever the script writes the key: PEXPIRE to two windows for a window counter, one \
                 window for a sliding log, the time to refill for a bucket. Keys already there stay until \
                 something expires or deletes them (the audit never writes)."
            .into(),
    })
}

/// TTLs far longer than the window the keys count.
fn long_ttl(p: &PatternReport) -> Option<Finding> {
    let (Some(w), Some(max)) = (p.window_ms, p.ttl_max_ms) else { return None };
    if max <= LONG_TTL_WINDOWS * w as i64 {
        return None;
    }
    Some(Finding {
        kind: Kind::LongTtl,
        severity: Severity::Warning,
        pattern: p.pattern.clone(),
        summary: format!(
            "TTLs up to {} on keys of a {} window ({:.0} windows; two are enough)",
            duration(max),
            duration(w as i64),
            max as f64 / w as f64
        ),
        evidence: vec![
            format!(
                "segment {} of the names is the number of a {} window: the newest key's window began {}",
                p.window_segment.unwrap_or(0) + 1,
                duration(w as i64),
                utc(p.window_newest.unwrap_or(0) as i64 * w as i64)
            ),
            format!(
                "PTTL: min {}, median {}, max {} over {} with a TTL",
                duration(p.ttl_min_ms.unwrap_or(0)),
                duration(p.ttl_median_ms.unwrap_or(0)),
                duration(max),
                count(p.keys - p.no_ttl, "key", "keys")
            ),
        ],
        advice: format!(
            "Expire a window's key two windows after it starts ({}): each key then lives {:.0}x shorter, \
             and the pattern holds about {:.0}x fewer keys.",
            duration(2 * w as i64),
            max as f64 / (2 * w) as f64,
            max as f64 / (2 * w) as f64
        ),
    })
}

/// Sliding logs: sorted sets, whose memory grows with the limit.
fn sliding_logs(p: &PatternReport) -> Option<Finding> {
    let zsets = p.types.get("zset").copied().unwrap_or(0);
    if zsets == 0 {
        return None;
    }
    let mut evidence = vec![format!(
        "{} of {} {} sorted {}",
        thousands(zsets),
        count(p.keys, "key", "keys"),
        if zsets == 1 { "is a" } else { "are" },
        if zsets == 1 { "set" } else { "sets" }
    )];
    if let (Some(min), Some(med), Some(max)) = (p.size_min, p.size_median, p.size_max) {
        evidence.push(format!(
            "ZCARD of the {} sampled: min {}, median {}, max {}: the limit is at least {}",
            thousands(p.sampled),
            thousands(min),
            thousands(med),
            thousands(max),
            thousands(max)
        ));
    } else {
        evidence.push(
            "entries not counted: ZCARD would reset each key's LRU clock (--sizes counts them and says how \
             many keys it touched)"
                .into(),
        );
    }
    if !p.encodings.is_empty() {
        let enc: Vec<String> = p.encodings.iter().map(|(e, n)| format!("{e} {}", thousands(*n))).collect();
        evidence.push(format!("encodings: {} (skiplist past 128 entries: about 100 bytes an entry)", enc.join(", ")));
    }
    if let Some((k, b)) = p.largest.first() {
        evidence.push(format!("largest: {k}, {} bytes", thousands(*b)));
    }
    if let Some(per) = p.memory_per_subject {
        evidence.push(format!(
            "{} per subject over {}: {} now, {} at 10x the subjects",
            thousands(per),
            count(p.subjects, "subject", "subjects"),
            size(p.memory_bytes),
            size(p.memory_bytes * 10)
        ));
    }
    Some(Finding {
        kind: Kind::SlidingLog,
        severity: Severity::Warning,
        pattern: p.pattern.clone(),
        summary: match p.size_max {
            Some(max) => format!(
                "sliding logs: {}, up to {} each, {} in all",
                count(zsets, "sorted set", "sorted sets"),
                count(max, "entry", "entries"),
                size(p.memory_bytes)
            ),
            None => {
                format!("sliding logs: {}, {} in all", count(zsets, "sorted set", "sorted sets"), size(p.memory_bytes))
            }
        },
        evidence,
        advice: "A sliding log keeps one entry per request in the window, so its memory grows with the limit \
                 (the seed article: 88 GB for a million users at 1,000 a minute). A sliding window counter \
                 (two integers) or a token bucket (one small hash) holds the same limit within a few percent \
                 for about 100 bytes a subject; keep the log for small limits and few subjects."
            .into(),
    })
}

/// A subject's keys in more than one hash slot: CROSSSLOT on a cluster.
fn cross_slot(p: &PatternReport) -> Option<Finding> {
    if p.cross_slot_subjects == 0 {
        return None;
    }
    let mut evidence = vec![format!(
        "{} {} keys of this pattern in more than one hash slot; {} of {} {} a hash tag",
        count(p.cross_slot_subjects, "subject", "subjects"),
        if p.cross_slot_subjects == 1 { "has" } else { "have" },
        thousands(p.hash_tagged),
        count(p.keys, "key", "keys"),
        if p.keys == 1 { "has" } else { "have" },
    )];
    if let Some((a, sa, b, sb)) = &p.cross_slot_example {
        evidence.push(format!("for example {a} (slot {sa}) and {b} (slot {sb})"));
    }
    Some(Finding {
        kind: Kind::CrossSlot,
        severity: Severity::Warning,
        pattern: p.pattern.clone(),
        summary: format!(
            "{} keys lack a shared hash tag: a script touching two of them (a sliding window reads \
             the current and the previous window) fails with CROSSSLOT on Redis Cluster",
            if p.cross_slot_subjects == 1 {
                "1 subject's".to_string()
            } else {
                format!("{} subjects'", thousands(p.cross_slot_subjects))
            }
        ),
        evidence,
        advice: "Put the subject in a hash tag so that all its keys share a slot: rate:{user42}:28333 instead \
                 of rate:user42:28333. A script that touches one key per call is unaffected."
            .into(),
    })
}

/// The memory the subjects take (information).
fn memory(p: &PatternReport) -> Option<Finding> {
    if p.subjects == 0 {
        return None;
    }
    let (Some(per), Some(used)) = (p.memory_per_subject, p.used_memory_per_subject) else { return None };
    let bound = bound_of(p);
    Some(Finding {
        kind: Kind::Memory,
        severity: Severity::Info,
        pattern: p.pattern.clone(),
        summary: format!(
            "{}, {} bytes each in MEMORY USAGE, about {} in used_memory; {} now, {} at 10x the subjects",
            count(p.subjects, "subject", "subjects"),
            thousands(per),
            thousands(used),
            size(p.used_memory_bytes),
            size(p.used_memory_bytes * 10)
        ),
        evidence: vec![format!("MEMORY USAGE of {}: {}{bound}", count(p.keys, "key", "keys"), size(p.memory_bytes))],
        advice: "Plan with the used_memory figure: it is what maxmemory and the host see (MEMORY USAGE leaves \
                 out the expires dict, the bucket arrays and the allocator's rounding of dict entries)."
            .into(),
    })
}

/// Keys that do not look like a rate limiter's (information).
fn other_keys(others: &[&PatternReport]) -> Option<Finding> {
    if others.is_empty() {
        return None;
    }
    let keys: u64 = others.iter().map(|p| p.keys).sum();
    let evidence = others
        .iter()
        .map(|p| {
            let types: Vec<String> = p.types.keys().cloned().collect();
            format!("{}: {} ({})", p.pattern, count(p.keys, "key", "keys"), types.join(", "))
        })
        .collect();
    Some(Finding {
        kind: Kind::OtherKeys,
        severity: Severity::Info,
        pattern: if others.len() == 1 { others[0].pattern.clone() } else { "*".into() },
        summary: format!(
            "{} in {} {} not look like a rate limiter's (no window number in the names, no limiter's word such \
             as rate or limit): counted above, no limiter advice for them",
            count(keys, "key", "keys"),
            count(others.len() as u64, "pattern", "patterns"),
            if keys == 1 { "does" } else { "do" },
        ),
        evidence,
        advice: "Nothing, if they are not a limiter's. If they are, audit them by name: --match 'PATTERN' makes \
                 every key it matches a limiter's."
            .into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(1_704_067_200_000), "2024-01-01 00:00 UTC");
        assert_eq!(utc(1_764_620_460_000), "2025-12-01 20:21 UTC");
        assert_eq!(duration(120_000), "2 min");
        assert_eq!(duration(1500), "1.5 s");
        assert_eq!(duration(86_400_000 * 3), "3 d");
        assert_eq!(duration(12), "12 ms");
    }

    #[test]
    fn sizes_group_thousands_in_every_unit() {
        assert_eq!(size(2240), "2,240 bytes");
        assert_eq!(size(18_022), "17.6 KB");
        assert_eq!(size(2_635_162), "2,573.4 KB");
        assert_eq!(size(20 * 1024 * 1024), "20.0 MB");
    }
}
