//! The checks of the keys a limiter leaves on the server: their TTLs, their hash slots on Redis
//! Cluster, and their memory.
use super::ctx::{at, Ctx};
use super::probes::Probes;
use super::report::{CheckResult, Status};
use super::run::Replay;
use super::sizes::TTL_WINDOWS;
use limitlab_emulator::cluster::key_slot;
use limitlab_emulator::Result;

impl Ctx<'_> {
    pub(super) fn ttl(&mut self, runs: &mut [(Replay<'_>, Probes)]) -> Result<()> {
        // The longest window of the spec's policies: a per-minute counter beside a per-second one
        // rightly lives a minute.
        let w = self
            .limiter
            .spec()
            .policies(&self.limiter.params())
            .iter()
            .map(|(_, p)| p.window_ms as i64)
            .max()
            .unwrap_or(1);
        let mut c = CheckResult::new("ttl", Status::Pass, String::new());
        let mut no_ttl = Vec::new();
        let mut too_long = Vec::new();
        let mut keys = 0;
        for ((r, probes), pat) in runs.iter_mut().zip(self.patterns) {
            for (i, why) in &probes.no_ttl {
                no_ttl.push(format!("{}: {why}", at(pat.name, *i, r)));
            }
            for (k, t) in r.keys_with_ttl()? {
                keys += 1;
                if t == -1 {
                    no_ttl.push(format!("{} left `{k}` with no TTL", pat.name));
                } else if t > TTL_WINDOWS * w {
                    too_long.push(format!(
                        "{} left `{k}` with PTTL {t} ms, more than {TTL_WINDOWS} windows after the traffic",
                        pat.name
                    ));
                }
            }
        }
        // Expiry: the same traffic with expired keys kept. A script that resets its window by
        // letting a key expire (INCR + PEXPIRE on the first hit) depends on expiry by design;
        // that is seen on sparse traffic (a refusal appears when nothing expires) and skips this.
        // Reliance is asked directly, at any capacity: a subject filled to its capacity, then one
        // request two windows later. Refused with expiry switched off only, the script frees its
        // window by letting the key expire (a pattern of a few requests never fills a capacity of
        // 100, so looking for a refusal in the sparse pattern misses it at large limits).
        let relies = {
            let p = self.limiter.params();
            let (w1, cap) = (p.window_ms as i64, p.capacity());
            let t0 = crate::attack::origin_ms(p.window_ms) + w1 / 3;
            let refused_later = |expiry: bool| -> bool {
                let mut r = Replay::new(self.limiter);
                r.backend.emu.set_expiry(expiry);
                let fill = if self.limiter.takes_cost() {
                    vec![super::ctx::arrival_at("relies", t0, cap)]
                } else {
                    (0..cap.min(crate::check::run::FULL_SIZE * 100))
                        .map(|_| super::ctx::arrival_at("relies", t0, 1))
                        .collect()
                };
                r.play(&fill, |_, _| Ok(()));
                let later = t0 + 2 * w1 + 1;
                r.play(&[super::ctx::arrival_at("relies", later, 1)], |_, _| Ok(()));
                r.played.last().is_some_and(|x| x.now_ms == later && !x.decision.allowed)
            };
            refused_later(false) && !refused_later(true)
        };
        let mut early = Vec::new();
        if !relies {
            for ((r, _), pat) in runs.iter().zip(self.patterns) {
                let mut kept = Replay::new(self.limiter);
                kept.backend.emu.set_expiry(false);
                kept.play(&pat.arrivals, |_, _| Ok(()));
                // An error met only with expired keys kept is left alone: that state (usage older
                // than its TTL) never reaches a script on a server, where an expired key is gone
                // to every read. The decisions before it are compared.
                // Only a key whose expiry let a request in counts: a script that reads a state
                // outliving its TTL more generously (a TAT behind now, unclamped, because its key
                // always expires by then) is only looser with expired keys kept, which no server
                // does.
                if let Some(i) =
                    r.played.iter().zip(&kept.played).position(|(a, b)| a.decision.allowed && !b.decision.allowed)
                {
                    early.push((
                        format!(
                            "{}: admitted when keys expire, refused when expired keys are kept: a key expired while it was still needed",
                            at(pat.name, i, r),
                        ),
                        pat,
                        i,
                    ));
                }
            }
        }
        c.evidence.extend(no_ttl.iter().take(5).cloned());
        c.evidence.extend(too_long.iter().take(5).cloned());
        for (e, _, _) in early.iter().take(5) {
            c.evidence.push(e.clone());
        }
        if let Some((_, pat, i)) = early.first() {
            c.replay = self.save(pat.name, "ttl", &pat.arrivals[..=*i]);
        }
        // The same comparison, explored: any fill, measured at the ms its keys expire and
        // anywhere up to two windows later.
        let (explored, expired_early) = if relies { (0, None) } else { self.explore_expiry() };
        if let Some((what, sent, lagging)) = &expired_early {
            c.evidence.push(what.clone());
            if c.replay.is_none() {
                let (replay, no_replay) = self.save_explored("ttl", sent, *lagging);
                c.replay = replay;
                c.evidence.extend(no_replay);
            }
        }
        let ttl_reads: usize = runs.iter().map(|(_, p)| p.ttl_checked).sum();
        let compared: usize = if relies { 0 } else { runs.iter().map(|(r, _)| r.played.len()).sum() };
        let mut dims = vec!["keys after each request", "keys after the traffic", "expiry on and off"];
        let lagging;
        if explored > 0 {
            dims.extend(["explored fills", "times at the ms keys expire and up to two windows later"]);
            if self.max_lag_ms() > 0 {
                lagging = format!("callers up to {} ms behind (max_clock_lag)", self.max_lag_ms());
                dims.push(&lagging);
            }
        }
        c.judged(keys + ttl_reads + compared + explored, &dims);
        let mut wrong = Vec::new();
        if !no_ttl.is_empty() {
            wrong.push(format!("{} key(s) without a TTL (they pile up forever)", no_ttl.len()));
        }
        if !too_long.is_empty() {
            wrong.push(format!("{} key(s) living over {TTL_WINDOWS} windows", too_long.len()));
        }
        if !early.is_empty() {
            wrong.push(format!("keys expire while still needed in {} pattern(s)", early.len()));
        }
        if expired_early.is_some() {
            wrong.push(format!("a key expired while still needed in an explored case ({explored} explored)"));
        }
        if wrong.is_empty() {
            c.summary = format!(
                "{keys} keys left by the patterns, every one with a TTL of at most {TTL_WINDOWS} windows; {}",
                if relies {
                    "the script resets its window by key expiry, so decisions with expiry switched off are not compared"
                } else {
                    "decisions are the same with expired keys kept"
                }
            );
            if explored > 0 {
                c.summary = format!("{}, and no more admitted in {explored} explored cases", c.summary);
            }
        } else {
            c.status = Status::Fail;
            c.summary = wrong.join("; ");
        }
        self.checks.push(c);
        Ok(())
    }

    pub(super) fn cluster(&mut self, runs: &[(Replay<'_>, Probes)]) {
        let mut c = CheckResult::new("cluster", Status::Pass, String::new());
        let mut calls = 0;
        'outer: for ((r, _), pat) in runs.iter().zip(self.patterns) {
            for (i, p) in r.played.iter().enumerate() {
                for call in &p.calls {
                    calls += 1;
                    let slots: Vec<(u16, &String)> = call.keys.iter().map(|k| (key_slot(k.as_bytes()), k)).collect();
                    if let Some(other) = slots.iter().find(|s| s.0 != slots[0].0) {
                        c.evidence.push(format!(
                            "{}: call `{}` ({}) names `{}` (slot {}) and `{}` (slot {}): CROSSSLOT on Redis Cluster; give them a shared hash tag, e.g. {{subject}}",
                            at(pat.name, i, r),
                            call.name,
                            call.target,
                            slots[0].1,
                            slots[0].0,
                            other.1,
                            other.0
                        ));
                        break 'outer;
                    }
                }
            }
        }
        // The keys the scripts really touch: each pattern again on an emulator in cluster mode,
        // where a script reaching a key of another slot than its KEYS' is refused as on a cluster
        // node, and a script that declares no KEYS is noted when it touches one (a cluster client
        // sends it to any node, which may not hold that key).
        let mut touched = 0usize;
        'patterns: for ((plain, _), pat) in runs.iter().zip(self.patterns) {
            let mut r = Replay::new(self.limiter);
            r.backend.emu.set_cluster(true);
            for (i, a) in pat.arrivals.iter().enumerate() {
                r.play(std::slice::from_ref(a), |_, _| Ok(()));
                if let Some(slot) = r.backend.take_keyless_slots().first() {
                    c.evidence.push(format!(
                        "{}: a script call declares no KEYS but touches a key (slot {slot}): a cluster client sends it to any node, and every node but the one holding slot {slot} refuses it; pass the keys in KEYS",
                        at(pat.name, i, &r)
                    ));
                    break 'patterns;
                }
                if let Some((_, e)) = &r.error {
                    if plain.error.as_ref().is_none_or(|(j, _)| *j > i) {
                        c.evidence.push(format!(
                            "{}: on a cluster node: {}",
                            at(pat.name, i, &r),
                            e.lines().next().unwrap_or("")
                        ));
                        break 'patterns;
                    }
                    break;
                }
                touched += 1;
            }
        }
        c.judged(calls + touched, &["patterns", "calls", "keys touched on a cluster node"]);
        if c.evidence.is_empty() {
            c.summary = format!("every one of {calls} calls names keys of one hash slot, and the scripts touch only those ({touched} requests replayed on a cluster node)");
        } else {
            c.status = Status::Fail;
            c.summary = "a call would fail on Redis Cluster".into();
        }
        self.checks.push(c);
    }

    pub(super) fn memory(&mut self, runs: &mut [(Replay<'_>, Probes)]) -> Result<()> {
        let Some(((r, _), _)) = runs.iter_mut().zip(self.patterns).find(|(_, p)| p.name == "under_limit") else {
            return Ok(());
        };
        let subjects = (r.subjects() as u64).max(1);
        let (bytes, keys, costs) = r.memory()?;
        let per = bytes / subjects;
        // The server's growth for a million subjects like these: their keys' costs (averaged over
        // the pattern's subjects) plus the tables a million subjects' keys need.
        let million = 1_000_000u64;
        let per_key_sum: f64 = costs.iter().map(|c| c.key as f64 + c.value).sum::<f64>() / subjects as f64;
        let ttl_per_subject = costs.iter().filter(|c| c.has_ttl()).count() as f64 / subjects as f64;
        let keys_m = (keys as f64 / subjects as f64 * million as f64).round() as u64;
        let ttl_m = (ttl_per_subject * million as f64).round() as u64;
        use limitlab_emulator::used_memory::{expires_entry, table_buckets, BUCKET};
        let total_m = per_key_sum * million as f64
            + (ttl_m * expires_entry() as u64 + BUCKET * (table_buckets(keys_m) + table_buckets(ttl_m))) as f64;
        let used_per = total_m / million as f64;
        let mut c = CheckResult::new(
            "memory",
            Status::Info,
            format!(
                "{per} bytes per subject (MEMORY USAGE, {:.1} keys each, Redis 7.0's model); {:.1} MB for 1,000,000 subjects; \
                 used_memory growth per subject {:.0} bytes ({:.1} MB for 1,000,000)",
                keys as f64 / subjects as f64,
                per as f64 * 1e6 / (1024.0 * 1024.0),
                used_per,
                total_m / (1024.0 * 1024.0)
            ),
        );
        c.evidence.push(format!(
            "after the under_limit pattern ({subjects} subjects at half the rate), keys alive at its end"
        ));
        c.evidence.push(
            "used_memory growth: MEMORY USAGE plus each TTL's expires-dict entry, both dicts' bucket arrays for 1,000,000 \
             subjects, dict entries as allocated (32 bytes, not 24), less shared integers 0..9999 (Redis 7.0.15, jemalloc 5.3)"
                .into(),
        );
        self.checks.push(c);
        Ok(())
    }
}
