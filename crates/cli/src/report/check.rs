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
        match &c.coverage {
            Some(cov) => {
                let _ = writeln!(s, "{} {:<17} [{}] {}", c.status.label(), c.name, cov.describe(), c.summary);
            }
            None => {
                let _ = writeln!(s, "{} {:<17} {}", c.status.label(), c.name, c.summary);
            }
        }
        for e in &c.evidence {
            let _ = writeln!(s, "       {e}");
        }
        if let Some(d) = &c.decided_at {
            let _ = writeln!(s, "       decided at {}", d.describe());
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
    if let Some(why) = &t.shortened {
        s.push_str(&format!("; {why}"));
    }
    s
}

/// The report as pretty JSON.
pub fn json(r: &CheckReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default() + "\n"
}

/// `s` with every character XML 1.0 cannot carry (control characters other than tab, line feed and
/// carriage return; U+FFFE and U+FFFF), which no character reference may stand for either, written
/// visibly instead: `\x01`, `\u{fffe}`. The XML writer escapes the rest.
fn xml_chars(s: &str) -> std::borrow::Cow<'_, str> {
    let allowed = |c: char| !matches!(c, '\0'..='\x08' | '\x0b' | '\x0c' | '\x0e'..='\x1f' | '\u{fffe}' | '\u{ffff}');
    if s.chars().all(allowed) {
        return s.into();
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            c if allowed(c) => o.push(c),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(o, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    o.into()
}

/// The report as JUnit XML: one test suite, one test case per check; failures carry the summary
/// as their message and the evidence as their text; skipped checks are `<skipped/>`; figures are
/// passing cases with the figure in `system-out`.
pub fn junit(r: &CheckReport) -> String {
    use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
    let fails = r.checks.iter().filter(|c| c.status == Status::Fail).count().to_string();
    let skips = r.checks.iter().filter(|c| matches!(c.status, Status::Skip | Status::Waived)).count().to_string();
    let tests = r.checks.len().to_string();
    let mut w = quick_xml::Writer::new_with_indent(Vec::new(), b' ', 2);
    // A Vec never fails to take bytes: the writes below cannot fail.
    let mut put = |e: Event| w.write_event(e).expect("writing to memory");
    fn start<'a>(name: &'a str, attrs: &[(&'a str, &'a str)]) -> BytesStart<'a> {
        BytesStart::new(name).with_attributes(attrs.iter().map(|&(k, v)| (k, xml_chars(v))))
    }
    put(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)));
    put(Event::Start(start(
        "testsuites",
        &[("name", "limitlab check"), ("tests", &tests), ("failures", &fails), ("skipped", &skips)],
    )));
    let suite = format!("limitlab check {}", r.spec);
    put(Event::Start(start(
        "testsuite",
        &[("name", &suite), ("tests", &tests), ("failures", &fails), ("skipped", &skips)],
    )));
    put(Event::Start(BytesStart::new("properties")));
    for (k, v) in [
        ("spec", r.origin.clone()),
        ("limit", r.limit.to_string()),
        ("window_ms", r.window_ms.to_string()),
        ("capacity", r.burst.to_string()),
        ("seed", r.seed.to_string()),
    ] {
        put(Event::Empty(start("property", &[("name", k), ("value", &v)])));
    }
    put(Event::End(BytesEnd::new("properties")));
    let classname = format!("limitlab.check.{}", r.spec);
    for c in &r.checks {
        put(Event::Start(start("testcase", &[("classname", &classname), ("name", c.name)])));
        let mut body = c.coverage.as_ref().map(|cov| format!("judged: {}\n", cov.describe())).unwrap_or_default();
        body.push_str(&c.evidence.join("\n"));
        if let Some(d) = &c.decided_at {
            body.push_str(&format!("\ndecided at {}", d.describe()));
        }
        if let Some(p) = &c.replay {
            body.push_str(&format!("\nreplay: limitlab run {p}"));
        }
        let (element, text) = match c.status {
            Status::Fail => ("failure", Some(body)),
            Status::Skip | Status::Waived => ("skipped", None),
            Status::Pass | Status::Info => {
                ("system-out", Some(format!("{}\n{body}", c.summary).trim_end().to_string()))
            }
        };
        let attrs: &[(&str, &str)] = if element == "system-out" { &[] } else { &[("message", &c.summary)] };
        match text {
            Some(text) => {
                put(Event::Start(start(element, attrs)));
                put(Event::Text(BytesText::new(&xml_chars(&text))));
                put(Event::End(BytesEnd::new(element)));
            }
            None => put(Event::Empty(start(element, attrs))),
        }
        put(Event::End(BytesEnd::new("testcase")));
    }
    put(Event::End(BytesEnd::new("testsuite")));
    put(Event::End(BytesEnd::new("testsuites")));
    let mut s = String::from_utf8(w.into_inner()).expect("the writer was given UTF-8 only");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use limitlab_engine::check::{CheckResult, Traffic};
    use quick_xml::events::Event;

    fn report() -> CheckReport {
        let check = |name, status, summary: &str, evidence: &[&str]| CheckResult {
            name,
            status,
            summary: summary.into(),
            evidence: evidence.iter().map(|e| e.to_string()).collect(),
            replay: None,
            coverage: None,
            decided_at: None,
        };
        CheckReport {
            spec: "a<b>".into(),
            origin: "dir/a&b.toml".into(),
            limit: 10,
            window_ms: 1000,
            burst: 10,
            seed: 1,
            bound: None,
            bound_source: String::new(),
            traffic: Traffic { patterns: Vec::new(), scaled: false, cost_per_call: 1, shortened: None, search: None },
            checks: vec![
                check(
                    "refusals",
                    Status::Fail,
                    "reply \"x\" \u{1}",
                    &["GET 'k' -> \u{0}\u{1b}[0m", "tab\tand\u{fffe}"],
                ),
                check("memory", Status::Info, "12 bytes", &[]),
                check("cluster", Status::Skip, "no keys", &[]),
            ],
            not_written: Vec::new(),
        }
    }

    #[test]
    fn junit_is_well_formed_xml_with_no_forbidden_characters() {
        let x = junit(&report());
        assert!(!x.contains("&#"), "{x}");
        assert!(
            x.starts_with(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"limitlab check\" tests=\"3\""
            ),
            "{x}"
        );
        assert!(x.contains("\n    <testcase classname=\"limitlab.check.a&lt;b&gt;\" name=\"refusals\">\n      <failure message=\"reply &quot;x&quot; \\x01\">"), "{x}");
        assert!(x.contains("\n      <skipped message=\"no keys\"/>\n    </testcase>\n"), "{x}");
        assert!(x.ends_with("</testcase>\n  </testsuite>\n</testsuites>\n"), "{x}");
        // A reader finds every element closed and the text as written, control characters shown.
        let mut r = quick_xml::Reader::from_str(&x);
        let (mut texts, mut depth, mut cases) = (Vec::new(), 0, 0);
        loop {
            match r.read_event().unwrap() {
                Event::Start(e) => {
                    depth += 1;
                    cases += (e.name().as_ref() == b"testcase") as usize;
                }
                Event::Empty(e) => cases += (e.name().as_ref() == b"testcase") as usize,
                Event::End(_) => depth -= 1,
                Event::Text(t) => texts.push(t.decode().unwrap().into_owned()),
                Event::GeneralRef(g) => {
                    let name = g.decode().unwrap();
                    let c = match name.as_ref() {
                        "apos" => "'",
                        "quot" => "\"",
                        "lt" => "<",
                        "gt" => ">",
                        "amp" => "&",
                        other => panic!("a reference to {other}"),
                    };
                    texts.push(c.to_string());
                }
                Event::Eof => break,
                _ => {}
            }
        }
        assert_eq!((depth, cases), (0, 3));
        let text = texts.concat();
        assert!(text.contains("GET 'k' -> \\x00\\x1b[0m\ntab\tand\\u{fffe}"), "{text:?}");
    }
}
