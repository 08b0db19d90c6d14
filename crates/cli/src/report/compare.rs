//! `limitlab compare`'s tables, laid out like the seed article's: the boundary bug measured,
//! accuracy across scenarios, memory per user and speed, with the article's figures beside ours.
use super::table::{thousands, Table};
use super::Format;
use limitlab_engine::limiter::{Flavor, Variant};
use limitlab_engine::sim::standard::Comparison;

/// The seed's scripts first, in the order of the article's boundary table, then ours.
fn order(name: &str) -> usize {
    const SEED_ORDER: [Variant; 4] = [
        Variant::SEED_FIXED_WINDOW,
        Variant::SEED_SLIDING_LOG,
        Variant::SEED_SLIDING_WINDOW,
        Variant::SEED_TOKEN_BUCKET,
    ];
    let v: Option<Variant> = name.parse().ok();
    match v {
        Some(v) if v.flavor() == Flavor::Seed => SEED_ORDER.iter().position(|&s| s == v).unwrap_or(0),
        Some(v) => 4 + Variant::ALL.iter().position(|&s| s == v).unwrap_or(0),
        None => 100,
    }
}

use super::script_label as label;

fn sorted<T>(rows: &[T], name: impl Fn(&T) -> &str) -> Vec<&T> {
    let mut v: Vec<&T> = rows.iter().collect();
    v.sort_by_key(|r| order(name(r)));
    v
}

/// The tables of a comparison, in print order.
pub fn tables(c: &Comparison) -> Vec<Table> {
    let mut out = Vec::new();

    let mut t = Table::new(
        format!(
            "The boundary bug, measured: limit {} per {} ms, 200 requests at the end of a window, 200 at the start of the next",
            c.boundary_limit, c.boundary_window_ms
        ),
        &["Algorithm", "End of window", "Start of next window", "Total within ~0.3 s", "Most in any window", "Seed article"],
    );
    for r in sorted(&c.boundary, |r| &r.algorithm) {
        let seed = r.seed.map_or("-".to_string(), |(e, s, t)| format!("{e} + {s} = {t}"));
        t.row(vec![
            label(&r.algorithm),
            r.end_of_window.to_string(),
            r.start_of_next.to_string(),
            r.total.to_string(),
            r.max_in_window.to_string(),
            seed,
        ]);
    }
    t.note(super::owners_note(c.boundary.iter().map(|r| r.algorithm.as_str())));
    t.note("Timing and why: simulations/boundary_burst.toml.");
    out.push(t);

    for s in &c.accuracy {
        let mut t = Table::new(
            format!(
                "Accuracy, {}: {} (limit {} per {} ms, seed {})",
                s.scenario, s.description, s.limit, s.window_ms, s.seed
            ),
            &[
                "Algorithm",
                "Admitted",
                "Most in any window",
                "Overshoot",
                "False allows",
                "False rejections",
                "retry_after wrong",
                "headers wrong",
            ],
        );
        for r in sorted(&s.rows, |r| &r.algorithm) {
            let m = &r.metrics;
            let asked: u64 = m.phases.iter().map(|p| p.units).sum();
            t.row(vec![
                label(&r.algorithm),
                format!("{} of {}", thousands(m.allowed_units), thousands(asked)),
                thousands(m.max_in_window),
                format!("{:.2}", m.overshoot),
                thousands(m.false_allows),
                thousands(m.false_rejections),
                super::judged(m.retry_wrong, m.retry_checked, thousands),
                super::judged(m.headers_wrong, m.headers_checked, thousands),
            ]);
        }
        out.push(t);
    }
    if let Some(t) = out.last_mut() {
        t.note("Overshoot: the most admitted in any window for one subject, over the limit (1.00 is exact).");
        t.note("False allows/rejections: calls an exact sliding log, run on the same arrivals, decided the other way.");
        t.note(super::RETRY_NOTE);
        t.note(super::headers_note());
    }

    let method = c.memory.first().map_or("key sizes", |m| m.method.as_str());
    let mut t = Table::new(
        format!(
            "Memory per user: limit {} per {} ms, {} requests inside the window",
            thousands(c.memory_limit),
            thousands(c.memory_window_ms),
            thousands(c.memory_requests)
        ),
        &["Algorithm", "Bytes per user", "Keys per user", "Seed article"],
    );
    for r in sorted(&c.memory, |r| &r.algorithm) {
        t.row(vec![
            label(&r.algorithm),
            thousands(r.bytes_per_user),
            format!("{}", r.keys_per_user),
            r.seed_bytes.map_or("-".into(), |b| format!("{} bytes", thousands(b))),
        ]);
    }
    if method == "MEMORY USAGE" {
        t.note(
            "Bytes: MEMORY USAGE key SAMPLES 0 of each key on the emulator, which models Redis 7.0's allocations \
             (these keys: exact, or within 0.5% for sorted sets past 128 members, whose node levels Redis draws at \
             random); the seed measured a real Redis. `limitlab memory` totals them for N users.",
        );
    } else {
        t.note("Bytes: key sizes (key name plus payload), as the backend refused MEMORY USAGE: a floor, not Redis's allocation; the seed measured MEMORY USAGE on a real Redis.");
    }
    out.push(t);

    if let Some(speed) = &c.speed {
        let mut t = Table::new(
            "Speed: decisions per second",
            &["Algorithm", "Decisions", "Decisions/s (emulator)", "Seed article (real Redis)"],
        );
        for r in sorted(speed, |r| &r.algorithm) {
            t.row(vec![
                label(&r.algorithm),
                thousands(r.decisions),
                thousands(r.per_sec.round() as u64),
                r.seed_per_sec.map_or("-".into(), |n| format!("{}/s", thousands(n))),
            ]);
        }
        t.note("The emulator runs in-process, with no network: one call is a Lua run, not a round trip. Wall-clock figures vary from run to run (--no-timing leaves them out).");
        t.note("These are the standard scenarios' decisions timed end to end: a few thousand per script, each scenario on a fresh emulator (its first calls load the script and find cold caches), with the bookkeeping of the accuracy figures in each decision. `limitlab bench` times warm calls alone, several times faster: quote bench for speed.");
        out.push(t);
    }
    out
}

/// The comparison in `format`, ending with a newline.
pub fn render(c: &Comparison, format: Format) -> String {
    match format {
        Format::Json => super::to_json(c),
        Format::Text => {
            let mut s = String::new();
            for (i, t) in tables(c).iter().enumerate() {
                if i > 0 {
                    s.push('\n');
                }
                s.push_str(&t.to_text());
            }
            s
        }
        Format::Markdown => {
            let mut s = String::new();
            for (i, t) in tables(c).iter().enumerate() {
                if i > 0 {
                    s.push('\n');
                }
                s.push_str(&t.to_markdown());
            }
            s
        }
    }
}
