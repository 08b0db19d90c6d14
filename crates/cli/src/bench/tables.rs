//! `limitlab bench`'s tables: throughput per script and engine with the ratios, then the sliding
//! log against its size. Text, markdown or JSON, like every other report.
use super::{BenchReport, Measure};
use crate::report::table::{thousands, Table};
use crate::report::Format;

fn rate(m: &Measure) -> String {
    thousands(m.per_sec.round() as u64)
}

fn ratio(a: f64, b: f64) -> String {
    if a > 0.0 && b > 0.0 {
        let r = a / b;
        if r >= 10.0 {
            format!("{r:.0}x")
        } else {
            format!("{r:.1}x")
        }
    } else {
        "-".into()
    }
}

/// One line on where the figures come from.
pub fn header(r: &BenchReport) -> String {
    let redis = match (&r.redis.url, &r.redis.version) {
        (Some(u), v) => format!(
            "Redis {} ({}{})",
            v.as_deref().unwrap_or("?"),
            if r.redis.source == "private" { "private redis-server at " } else { "" },
            u
        ),
        (None, _) => "no real Redis".to_string(),
    };
    format!(
        "Machine: {} cores, {}. {redis}.{}",
        r.machine.cores,
        r.machine.cpu,
        if r.quick { " Quick run (--quick): few calls, rough figures." } else { "" }
    )
}

/// The tables, in print order.
pub fn tables(r: &BenchReport) -> Vec<Table> {
    let mut out = vec![rates(r), times(r)];
    if !r.sliding_log.is_empty() {
        out.push(sliding_log(r));
    }
    out
}

/// Decisions per second, one engine at a time, with the ratios between them and the notes.
fn rates(r: &BenchReport) -> Table {
    let mut headers: Vec<String> =
        ["Script", "Native (Rust)", "Emulator", "Redis, 1 connection"].iter().map(|s| s.to_string()).collect();
    for d in &r.pipelines {
        headers.push(format!("Redis, pipeline {d}"));
    }
    headers.extend(
        ["Emulator / Redis", "Emulator / pipelined", "Native / emulator", "Emulator, direct", "Spec path / direct"]
            .map(String::from),
    );
    let hs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut t = Table::new("Decisions per second, one engine at a time", &hs);
    for s in &r.scripts {
        let mut row = vec![s.algorithm.clone(), s.native.as_ref().map_or("-".into(), rate), rate(&s.emulator)];
        row.push(s.redis_single.as_ref().map_or("-".into(), rate));
        for d in &r.pipelines {
            let m = s.redis_pipelined.iter().find(|p| p.depth == *d);
            row.push(m.map_or("-".into(), |p| rate(&p.measure)));
        }
        row.push(s.redis_single.map_or("-".into(), |m| ratio(s.emulator.per_sec, m.per_sec)));
        row.push(s.best_pipelined().map_or("-".into(), |p| ratio(s.emulator.per_sec, p.measure.per_sec)));
        row.push(s.native.as_ref().map_or("-".into(), |n| ratio(n.per_sec, s.emulator.per_sec)));
        row.push(s.emulator_direct.as_ref().map_or("-".into(), rate));
        row.push(s.emulator_direct.as_ref().map_or("-".into(), |d| {
            format!("{:.2}", if d.per_sec > 0.0 { s.emulator.per_sec / d.per_sec } else { 0.0 })
        }));
        t.row(row);
    }
    t.note(format!("Workload: {}.", r.workload));
    let rounds = match r.sizes.rounds {
        0 | 1 => String::new(),
        n => format!(
            " Each script's engines took {n} turns each, one engine after another, and each engine's figure is its \
             fastest turn, so that a slow spell of the machine during one engine's turn does not decide a ratio."
        ),
    };
    t.note(format!(
        "Native: the script's exact Rust reference model (the ceiling). Emulator: EVALSHA on the embedded \
         emulator, in process. Redis: EVALSHA over one loopback connection, one call per round trip or N \
         per round trip (pipelined); client and server share the machine. Emulator / pipelined is against \
         the fastest depth. Emulator runs the script through its spec (KEYS, ARGV and the decision as \
         every tool reads them); Emulator, direct calls a shipped script the hand-written way, so Spec \
         path / direct is what the spec costs. Every rate is that of the fastest of 5 equal chunks of \
         the timed calls, for every engine alike: on a shared machine outside load slows some chunks.{rounds}"
    ));
    for s in &r.scripts {
        for n in &s.redis_notes {
            t.note(format!("{n}."));
        }
    }
    match &r.redis.note {
        Some(n) => t.note(format!("Redis columns empty: {n}.")),
        None if r.redis.url.is_none() => t.note("Redis columns empty: no real Redis."),
        None => {}
    }
    t.note(check_note(r));
    t
}

/// Time per decision, with the Redis server's own time inside EVALSHA.
fn times(r: &BenchReport) -> Table {
    let mut t = Table::new(
        "Time per decision (µs): where it goes",
        &[
            "Script",
            "Native (Rust)",
            "Emulator",
            "Redis server, inside EVALSHA",
            "Redis, 1 connection",
            "Redis, pipelined (best)",
            "Redis server / emulator",
        ],
    );
    let us = |per_sec: f64| if per_sec > 0.0 { format!("{:.2}", 1e6 / per_sec) } else { "-".into() };
    for s in &r.scripts {
        let emu_us = if s.emulator.per_sec > 0.0 { 1e6 / s.emulator.per_sec } else { 0.0 };
        t.row(vec![
            s.algorithm.clone(),
            s.native
                .as_ref()
                .map_or("-".into(), |n| format!("{:.3}", if n.per_sec > 0.0 { 1e6 / n.per_sec } else { 0.0 })),
            us(s.emulator.per_sec),
            s.redis_server_usec.map_or("-".into(), |u| format!("{u:.2}")),
            s.redis_single.map_or("-".into(), |m| us(m.per_sec)),
            s.best_pipelined().map_or("-".into(), |p| us(p.measure.per_sec)),
            s.redis_server_usec.map_or("-".into(), |u| ratio(u, emu_us)),
        ]);
    }
    t.note(
        "Redis server, inside EVALSHA: the server's own time per call (INFO commandstats, before and after \
         the runs), running the same Lua 5.1 the emulator runs; it excludes reading requests and writing \
         replies. It bounds what one Redis core can do however many clients pipeline to it, and the \
         emulator, which runs the same interpreter, cannot be many times faster than it.",
    );
    t
}

/// The sliding log with its log full, against the log's size L.
fn sliding_log(r: &BenchReport) -> Table {
    let depth = r.sliding_log.iter().find_map(|l| l.redis_pipelined.map(|p| p.depth));
    let redis_h = depth.map_or("Redis, pipelined".to_string(), |d| format!("Redis, pipeline {d}"));
    let mut t = Table::new(
        "Sliding log, log full: decisions per second against its size L",
        &[
            "L",
            "Native (Rust)",
            "Emulator",
            "Emulator (seed script)",
            &redis_h,
            "Emulator µs per decision",
            "Commands only, no Lua",
            "Skiplist steps per decision",
        ],
    );
    for l in &r.sliding_log {
        let us = if l.emulator.per_sec > 0.0 { 1e6 / l.emulator.per_sec } else { 0.0 };
        t.row(vec![
            thousands(l.l),
            rate(&l.native),
            rate(&l.emulator),
            rate(&l.seed_emulator),
            l.redis_pipelined.map_or("-".into(), |p| rate(&p.measure)),
            format!("{us:.2}"),
            thousands(l.commands_per_sec.round() as u64),
            format!("{:.1}", l.zset_steps_per_call),
        ]);
    }
    if let (Some(a), Some(b)) = (r.sliding_log.first(), r.sliding_log.last()) {
        if b.l > a.l && a.emulator.per_sec > 0.0 && b.emulator.per_sec > 0.0 && a.commands_per_sec > 0.0 {
            t.note(format!(
                "From L = {} to {}: the log is {} times longer and log2 L {:.1} times larger; skiplist steps \
                 per decision grow {:.1} times, the commands' time per call {:.2} times, the script's time per \
                 decision {:.2} times (linear growth would be {}x).",
                thousands(a.l),
                thousands(b.l),
                thousands(b.l / a.l),
                (b.l as f64).log2() / (a.l.max(2) as f64).log2(),
                b.zset_steps_per_call / a.zset_steps_per_call.max(1e-9),
                a.commands_per_sec / b.commands_per_sec.max(1e-9),
                a.emulator.per_sec / b.emulator.per_sec,
                thousands(b.l / a.l)
            ));
        }
    }
    t.note(
        "Limit L per L ms, one user, one call per ms: after L untimed calls fill the log, every call \
         removes the entry that just left the window and adds its own (ZRANGE, ZREMRANGEBYSCORE, ZCARD, \
         ZADD, PEXPIRE on a zset of L members). Commands only: those five commands sent to the \
         emulator without Lua. Skiplist steps: nodes the emulator's sorted set visited per decision \
         (searches, walks, removals), counted, not timed.",
    );
    t
}

/// Whether every engine decided as the reference did.
fn check_note(r: &BenchReport) -> String {
    let mut compared = 0;
    for s in &r.scripts {
        compared += s.native.as_ref().map_or(0, |n| n.check.compared) + s.emulator.check.compared;
        compared += s.emulator_direct.as_ref().map_or(0, |d| d.check.compared);
        compared += s.redis_single.map_or(0, |m| m.check.compared);
        compared += s.redis_pipelined.iter().map(|p| p.measure.check.compared).sum::<u64>();
    }
    for l in &r.sliding_log {
        compared += l.native.check.compared + l.emulator.check.compared + l.seed_emulator.check.compared;
        compared += l.redis_pipelined.map_or(0, |p| p.measure.check.compared);
    }
    // A script without a Rust model is checked against the emulator's own decisions.
    let reference = if r.scripts.iter().all(|s| s.native.is_some()) {
        "the reference model's"
    } else {
        "the reference's (the exact Rust model; for a script without one, the emulator's own)"
    };
    match r.differ() {
        0 => format!("Checked: every engine's decisions equal {reference} ({} calls compared).", thousands(compared)),
        n => format!(
            "MISMATCH: {} of {} calls decided differently from the reference model (see --json).",
            thousands(n),
            thousands(compared)
        ),
    }
}

/// The report in `format`, ending with a newline.
pub fn render(r: &BenchReport, format: Format) -> String {
    match format {
        Format::Json => crate::report::to_json(r),
        Format::Text | Format::Markdown => {
            let mut s = header(r);
            s.push('\n');
            for t in tables(r) {
                s.push('\n');
                s.push_str(&if format == Format::Text { t.to_text() } else { t.to_markdown() });
            }
            s
        }
    }
}
