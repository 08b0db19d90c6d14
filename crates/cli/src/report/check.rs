//! `check`'s report as text, JSON and JUnit XML (which CI systems read).
use std::fmt::Write as _;

use limitlab_engine::check::{CheckReport, Status, Traffic};

/// The report for a terminal or a log.
pub fn text(r: &CheckReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "limitlab check {} ({}): limit {} per {} ms, capacity {}, seed {}",
        r.spec, r.origin, r.limit, r.window_ms, r.burst, r.seed
    );
    let _ = writeln!(
        s,
        "overshoot bound: {}",
        match r.bound {
            Some(b) => format!("{b:.3} ({})", r.bound_source),
            None => r.bound_source.clone(),
        }
    );
    let _ = writeln!(s, "{}", traffic_line(&r.traffic));
    s.push('\n');
    for c in &r.checks {
        let _ = writeln!(s, "{} {:<17} {}", c.status.label(), c.name, c.summary);
        for e in &c.evidence {
            let _ = writeln!(s, "       {e}");
        }
        if let Some(p) = &c.replay {
            let _ = writeln!(s, "       replay: limitlab run {p}");
        }
    }
    let count = |st: Status| r.checks.iter().filter(|c| c.status == st).count();
    let figures = count(Status::Info);
    let waived = match count(Status::Waived) {
        0 => String::new(),
        n => format!("{n} waived, "),
    };
    let _ = writeln!(
        s,
        "\n{} passed, {} failed, {waived}{} skipped, {figures} figure{}",
        count(Status::Pass),
        count(Status::Fail),
        count(Status::Skip),
        if figures == 1 { "" } else { "s" }
    );
    s
}

/// One line: the requests each pattern sent, and the attack search's.
pub fn traffic_line(t: &Traffic) -> String {
    let each: Vec<String> = t.patterns.iter().map(|p| format!("{} {}", p.name, p.requests)).collect();
    let total: usize = t.patterns.iter().map(|p| p.requests).sum();
    let mut s = format!(
        "traffic: {} requests per pattern ({total} in all{}; played again with expired keys kept and on a cluster node)",
        each.join(", "),
        if t.scaled { ", patterns scaled to the policy's size" } else { "" }
    );
    match &t.search {
        Some(a) => s.push_str(&format!(
            "; attack search: {} patterns of up to {} requests at limit {}{} ({} requests), {} confirmed on the emulator",
            a.evaluations,
            a.budget,
            a.limit,
            if a.scaled { ", narrowed from the policy's" } else { "" },
            a.requests,
            a.confirmed
        )),
        None => s.push_str("; no attack search at this policy"),
    }
    s
}

/// The report as pretty JSON.
pub fn json(r: &CheckReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default() + "\n"
}

fn xml(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => o.push_str(&format!("&#x{:x};", c as u32)),
            c => o.push(c),
        }
    }
    o
}

/// The report as JUnit XML: one test suite, one test case per check; failures carry the summary
/// as their message and the evidence as their text; skipped checks are `<skipped/>`; figures are
/// passing cases with the figure in `system-out`.
pub fn junit(r: &CheckReport) -> String {
    let fails = r.checks.iter().filter(|c| c.status == Status::Fail).count();
    let skips = r.checks.iter().filter(|c| matches!(c.status, Status::Skip | Status::Waived)).count();
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(s, "<testsuites name=\"limitlab check\" tests=\"{}\" failures=\"{fails}\" skipped=\"{skips}\">", r.checks.len());
    let _ = writeln!(
        s,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{fails}\" skipped=\"{skips}\">",
        xml(&format!("limitlab check {}", r.spec)),
        r.checks.len()
    );
    let _ = writeln!(s, "    <properties>");
    for (k, v) in [
        ("spec", r.origin.clone()),
        ("limit", r.limit.to_string()),
        ("window_ms", r.window_ms.to_string()),
        ("capacity", r.burst.to_string()),
        ("seed", r.seed.to_string()),
    ] {
        let _ = writeln!(s, "      <property name=\"{k}\" value=\"{}\"/>", xml(&v));
    }
    let _ = writeln!(s, "    </properties>");
    for c in &r.checks {
        let _ = write!(s, "    <testcase classname=\"{}\" name=\"{}\">", xml(&format!("limitlab.check.{}", r.spec)), c.name);
        let mut body = c.evidence.join("\n");
        if let Some(p) = &c.replay {
            body.push_str(&format!("\nreplay: limitlab run {p}"));
        }
        match c.status {
            Status::Fail => {
                let _ = write!(s, "\n      <failure message=\"{}\">{}</failure>\n    ", xml(&c.summary), xml(&body));
            }
            Status::Skip | Status::Waived => {
                let _ = write!(s, "\n      <skipped message=\"{}\"/>\n    ", xml(&c.summary));
            }
            Status::Pass | Status::Info => {
                let _ = write!(s, "\n      <system-out>{}</system-out>\n    ", xml(format!("{}\n{body}", c.summary).trim_end()));
            }
        }
        s.push_str("</testcase>\n");
    }
    s.push_str("  </testsuite>\n</testsuites>\n");
    s
}
