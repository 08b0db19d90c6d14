//! An audit as text, markdown or JSON: the patterns table, the largest keys, then the findings
//! with their evidence and advice.
use super::findings::{count, duration, size, Severity};
use super::AuditReport;
use crate::report::table::{thousands, Table};
use crate::report::Format;

fn opt_ms(v: Option<i64>) -> String {
    v.map_or("-".into(), duration)
}

fn opt_n(v: Option<u64>) -> String {
    v.map_or("-".into(), thousands)
}

fn counts(m: &std::collections::BTreeMap<String, u64>) -> String {
    if m.is_empty() {
        return "-".into();
    }
    m.iter().map(|(k, n)| format!("{k} {}", thousands(*n))).collect::<Vec<_>>().join(", ")
}

impl AuditReport {
    /// The header line.
    pub fn headline(&self) -> String {
        format!(
            "limitlab audit of {} ({}), MATCH {}: {} of {} scanned, {} read commands in {:.1} s (at most {}/s), \
             memory read for up to {} per pattern{}",
            self.target,
            if self.cluster { format!("cluster, {} masters", self.masters.len()) } else { "standalone".to_string() },
            self.pattern,
            count(self.keys, "key", "keys"),
            thousands(self.dbsize),
            thousands(self.commands),
            self.elapsed_s,
            thousands(self.rate),
            count(self.sample, "key", "keys"),
            if self.sizes_read {
                format!(
                    "\nWARNING: --sizes reset the LRU clock (OBJECT IDLETIME) of the {} whose size it read: they now \
                     look recently used to eviction and to the next audit",
                    count(self.lru_touched, "key", "keys")
                )
            } else {
                "; no key's LRU clock touched (sizes not read: --sizes reads them)".to_string()
            }
        )
    }

    /// The patterns table.
    pub fn patterns_table(&self) -> Table {
        let mut t = Table::new(
            "Patterns",
            &[
                "Pattern",
                "Keys",
                "Types",
                "Encodings (sampled)",
                "No TTL",
                "TTL min",
                "TTL median",
                "TTL max",
                "Window",
                "Size max",
                "Subjects",
                "MEMORY USAGE",
                "± 95%",
                "Per subject",
                "used_memory per subject",
            ],
        );
        t.align[2] = crate::report::table::Align::Left;
        t.align[3] = crate::report::table::Align::Left;
        for p in &self.patterns {
            t.row(vec![
                p.pattern.clone(),
                thousands(p.keys),
                counts(&p.types),
                counts(&p.encodings),
                thousands(p.no_ttl),
                opt_ms(p.ttl_min_ms),
                opt_ms(p.ttl_median_ms),
                opt_ms(p.ttl_max_ms),
                p.window_ms.map_or("-".into(), |w| duration(w as i64)),
                opt_n(p.size_max),
                if p.limiter { thousands(p.subjects) } else { "-".into() },
                size(p.memory_bytes),
                if p.sampled >= p.keys {
                    "all read".into()
                } else {
                    format!("{} (sampled {})", size(p.memory_error_bytes), thousands(p.sampled))
                },
                opt_n(p.memory_per_subject),
                opt_n(p.used_memory_per_subject),
            ]);
        }
        t.note(
            "Patterns: key names with numbers, ids and hash tags folded to *. Window: the window a digits-only segment \
             suggests (its largest value is a window number within 30 days before the server's TIME). Size: ZCARD, HLEN, \
             SCARD, LLEN or STRLEN (read with --sizes only). Subjects: - for keys not like a limiter's. MEMORY USAGE: \
             the sampled keys' mean times the count, with its 95% error bound and the keys it was read from (all read: \
             no sample). used_memory: MEMORY USAGE plus dict entries as allocated, the expires dict and the \
             bucket arrays.",
        );
        t
    }

    /// The largest keys of every pattern (sampled).
    pub fn largest_table(&self) -> Table {
        let mut t = Table::new("Largest keys (sampled)", &["Key", "Pattern", "MEMORY USAGE"]);
        let mut all: Vec<(&str, &str, u64)> = Vec::new();
        for p in &self.patterns {
            for (k, b) in &p.largest {
                all.push((k, &p.pattern, *b));
            }
        }
        all.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(b.0)));
        for (k, p, b) in all.into_iter().take(10) {
            t.row(vec![k.to_string(), p.to_string(), thousands(b)]);
        }
        t.align[1] = crate::report::table::Align::Left;
        t
    }

    /// Warnings (what `--strict` fails on).
    pub fn warnings(&self) -> usize {
        self.findings.iter().filter(|f| f.severity == Severity::Warning).count()
    }

    fn findings_text(&self, markdown: bool) -> String {
        let mut out = String::new();
        let infos = self.findings.len() - self.warnings();
        if markdown {
            out.push_str(&format!(
                "### Findings: {}, {}\n\n",
                count(self.warnings() as u64, "warning", "warnings"),
                count(infos as u64, "figure", "figures")
            ));
        } else {
            out.push_str(&format!(
                "Findings: {}, {}\n",
                count(self.warnings() as u64, "warning", "warnings"),
                count(infos as u64, "figure", "figures")
            ));
        }
        for f in &self.findings {
            let tag = match f.severity {
                Severity::Warning => "WARN",
                Severity::Info => "INFO",
            };
            if markdown {
                out.push_str(&format!("- **{tag} {}** `{}`: {}\n", f.kind.name(), f.pattern, f.summary));
                for e in &f.evidence {
                    out.push_str(&format!("  - {e}\n"));
                }
                out.push_str(&format!("  - *What to do:* {}\n", f.advice));
            } else {
                out.push_str(&format!("\n{tag} {:<12} {}: {}\n", f.kind.name(), f.pattern, f.summary));
                for e in &f.evidence {
                    out.push_str(&format!("     - {e}\n"));
                }
                out.push_str(&format!("     what to do: {}\n", f.advice));
            }
        }
        out
    }

    /// The report in `format`, ending with a newline.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Json => crate::report::to_json(self),
            Format::Text => format!(
                "{}\n\n{}\n{}\n{}",
                self.headline(),
                self.patterns_table().to_text(),
                self.largest_table().to_text(),
                self.findings_text(false)
            ),
            Format::Markdown => format!(
                "{}\n\n{}\n{}\n{}",
                self.headline(),
                self.patterns_table().to_markdown(),
                self.largest_table().to_markdown(),
                self.findings_text(true)
            ),
        }
    }
}
