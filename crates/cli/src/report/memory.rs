//! `limitlab memory`: what one user's rate-limit keys cost in Redis (MEMORY USAGE) for every
//! script after a window's worth of calls, what N users cost, the seed article's figures beside
//! them and, with a real Redis, the server's own figures beside the emulator's model.
use serde::Serialize;

use super::table::{thousands, Table};
use super::Format;
use limitlab_emulator::clock::{Millis, VirtualClock, DEFAULT_START};
use limitlab_emulator::used_memory::{growth, key_costs, Growth};
use limitlab_emulator::{Emulator, Reply};
use limitlab_emulator::{Error, Result};
use limitlab_engine::backend::emulated::EmulatedBackend;
use limitlab_engine::backend::real::RealRedis;
use limitlab_engine::backend::Backend;
use limitlab_engine::limiter::{subject_key, Algorithm, Limiter, Params, Variant};
use limitlab_engine::sim::standard::seed_memory;

/// The seed article's memory setting: 1,000 per minute...
pub const SEED_PARAMS: Params = Params { limit: 1000, window_ms: 60_000, burst: None };
/// ...for 1 million users.
pub const SEED_USERS: u64 = 1_000_000;
/// The seed's "MB": its totals are bytes / 2^20 (56 bytes x 1,000,000 users = 53.4).
pub const MB: f64 = 1_048_576.0;

/// The seed article's totals for 1 million users at 1,000 per minute, in its MB.
pub fn seed_total_mb(a: Algorithm) -> Option<f64> {
    match a {
        Algorithm::FixedWindow => Some(53.4),
        Algorithm::TokenBucket => Some(68.7),
        Algorithm::SlidingLog => Some(87_913.5),
        Algorithm::SlidingWindow | Algorithm::Gcra => None,
    }
}

/// The times of one user's calls: `calls` calls at the pace of `limit` per 5/6 of a window (the
/// seed's 1,000 calls in 50 s of a minute), starting 1 ms after the first window boundary at or
/// after `start_ms`. With `calls == limit` the window is full and nothing is refused yet; more
/// calls keep the same pace, so every script then refuses some and a log keeps sliding.
pub fn fill_times(params: Params, start_ms: i64, calls: u64) -> Vec<i64> {
    let w = params.window_ms as i64;
    let boundary = start_ms.div_euclid(w) * w + if start_ms.rem_euclid(w) == 0 { 0 } else { w };
    let span = (params.window_ms * 5 / 6).max(1) as u128;
    (0..calls as u128).map(|i| boundary + 1 + (i * span / params.limit as u128) as i64).collect()
}

/// A script's body behind a shim that lengthens every TTL it sets by 10^9 ms: on a real server TTLs
/// run on the wall clock while the calls' `now_ms` is simulated, and a key must not expire before it
/// is measured. MEMORY USAGE does not count expiry, so the figures are unchanged.
pub fn with_long_ttls(body: &str) -> String {
    format!(
        "local redis = (function(real)\n\
         \x20 local shim = setmetatable({{}}, {{__index = real}})\n\
         \x20 shim.call = function(cmd, ...)\n\
         \x20   local a = {{...}}\n\
         \x20   local c = string.upper(cmd)\n\
         \x20   if c == 'PEXPIRE' then a[2] = a[2] + 1000000000 end\n\
         \x20   if c == 'SET' and type(a[3]) == 'string' and string.upper(a[3]) == 'PX' then a[4] = a[4] + 1000000000 end\n\
         \x20   return real.call(cmd, unpack(a))\n\
         \x20 end\n\
         \x20 return shim\n\
         end)(redis)\n{body}"
    )
}

/// One key and its MEMORY USAGE (SAMPLES 0).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KeyUsage {
    pub key: String,
    pub bytes: u64,
}

/// Runs one user's (`subject`'s) calls on `backend` (moving its clock where it has one) and returns
/// the keys the script's state then occupies, with their MEMORY USAGE. The key names are those the
/// calls wrote (the keys each call was given and every key a command or script created under the
/// run's prefix), found by scanning the backend's prefix, which holds this user's keys only.
pub fn run_user(backend: &mut dyn Backend, limiter: &Limiter, subject: &str, times: &[i64]) -> Result<Vec<KeyUsage>> {
    let mut session = limiter.session();
    for &t in times {
        limiter.check_call(t, 1)?;
        backend.set_time_ms(t);
        limiter.call(backend, &mut session, subject, t, 1)?;
    }
    let mut out = Vec::new();
    for k in backend.keys_under_prefix()? {
        match backend.command(&[b"MEMORY", b"USAGE", k.as_bytes(), b"SAMPLES", b"0"])? {
            Reply::Int(n) if n >= 0 => out.push(KeyUsage { key: k, bytes: n as u64 }),
            Reply::Nil => {}
            other => return Err(Error::Redis(format!("MEMORY USAGE {k} replied {other:?}"))),
        }
    }
    Ok(out)
}

/// MEMORY USAGE of each of `keys` that exists.
fn usage_of(backend: &mut dyn Backend, keys: &[String]) -> Result<Vec<KeyUsage>> {
    let mut out = Vec::new();
    for k in keys {
        match backend.command(&[b"MEMORY", b"USAGE", k.as_bytes(), b"SAMPLES", b"0"])? {
            Reply::Int(n) if n >= 0 => out.push(KeyUsage { key: k.clone(), bytes: n as u64 }),
            Reply::Nil => {}
            other => return Err(Error::Redis(format!("MEMORY USAGE {k} replied {other:?}"))),
        }
    }
    Ok(out)
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct MemoryPlan {
    pub params: Params,
    pub users: u64,
    /// The subject whose keys are measured.
    pub subject: String,
    /// The scripts, as specs (empty: the nine shipped ones).
    pub scripts: Vec<limitlab_engine::spec::SharedSpec>,
}

/// One script's row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryRow {
    pub algorithm: String,
    /// The emulator's keys for one user, each with MEMORY USAGE (Redis 7.0's, modelled).
    pub keys: Vec<KeyUsage>,
    pub bytes_per_user: u64,
    pub total_bytes: u64,
    /// The seed article's bytes per user, at its setting (1,000 per minute) only.
    pub seed_bytes_per_user: Option<u64>,
    /// The seed article's total for 1 million users, in its MB (2^20 bytes), at its setting only.
    pub seed_total_mb: Option<f64>,
    /// With a real Redis: the same calls' keys as the server measures them.
    pub real_keys: Option<Vec<KeyUsage>>,
    pub real_bytes_per_user: Option<u64>,
    pub real_total_bytes: Option<u64>,
    /// The server's `used_memory` growth for `users` users (the model of
    /// [`limitlab_emulator::used_memory`]): entries, expires, bucket arrays, allocation rounding.
    pub used_memory: Option<Growth>,
    /// Why the script could not run at these parameters (its argument rules), if it could not.
    pub skipped: Option<String>,
}

/// The whole `limitlab memory` report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryReport {
    pub limit: u64,
    pub window_ms: u64,
    pub users: u64,
    pub calls_per_user: u64,
    /// The key limitlab's scripts use for the subject (with the real server's run prefix when
    /// there is one); a spec's keys are in its row's `keys`.
    pub key: String,
    /// The subject measured (`--subject`).
    pub subject: String,
    /// The real server, when one was used.
    pub redis: Option<String>,
    pub rows: Vec<MemoryRow>,
}

/// Runs every script for one user on a fresh emulator (and, given one, on a real Redis, whose
/// keys are removed after each script) and multiplies by the number of users.
pub fn measure(plan: &MemoryPlan, mut real: Option<&mut RealRedis>) -> Result<MemoryReport> {
    if let Some(r) = &real {
        r.require_writable("memory")?;
    }
    let params = plan.params;
    let times = fill_times(params, DEFAULT_START.0, params.limit);
    let base_key = subject_key(&plan.subject);
    let key = match &real {
        Some(r) => format!("{}{base_key}", r.key_prefix()),
        None => base_key,
    };
    let at_seed_setting = params == SEED_PARAMS;
    let mut rows = Vec::new();
    let scripts: Vec<limitlab_engine::spec::SharedSpec> = if plan.scripts.is_empty() {
        Variant::ALL.iter().map(|&v| limitlab_engine::spec::builtin::spec(v)).collect()
    } else {
        plan.scripts.clone()
    };
    for spec in &scripts {
        let mut p = params;
        if !spec.uses_burst() {
            p.burst = None;
        }
        let limiter = Limiter::from_spec(std::sync::Arc::clone(spec), p)?;
        let algo = spec.model.map(|v| v.algorithm());
        let mut row = MemoryRow {
            algorithm: spec.name.clone(),
            keys: Vec::new(),
            bytes_per_user: 0,
            total_bytes: 0,
            seed_bytes_per_user: if at_seed_setting { algo.and_then(seed_memory) } else { None },
            seed_total_mb: if at_seed_setting && plan.users == SEED_USERS {
                algo.and_then(seed_total_mb)
            } else {
                None
            },
            real_keys: None,
            real_bytes_per_user: None,
            real_total_bytes: None,
            used_memory: None,
            skipped: None,
        };
        if let Some(bad) = times.iter().find_map(|&t| limiter.check_call(t, 1).err()) {
            row.skipped = Some(bad.to_string());
            rows.push(row);
            continue;
        }
        let mut emu = Emulator::with_clock(VirtualClock::starting_at(Millis(times[0])));
        if let Some(r) = &real {
            emu.set_cluster(r.is_cluster());
            if r.is_cluster() {
                // A call whose keys span slots: named with both keys and slots, before the
                // cluster-mode emulator's bare CROSSSLOT (and before anything reaches the server).
                let arrivals: Vec<limitlab_engine::traffic::Arrival> = times
                    .iter()
                    .map(|&t| limitlab_engine::traffic::Arrival {
                        at: Millis(t).as_micros(),
                        key: plan.subject.clone(),
                        cost: 1,
                        phase: String::new(),
                        op: limitlab_engine::traffic::Op::Request,
                    })
                    .collect();
                limitlab_engine::limiter::slots::check_slots(
                    "memory's user",
                    &limiter,
                    &arrivals,
                    times[0],
                    r.key_prefix(),
                    &r.describe(),
                )?;
            }
        }
        // The same key names as on the real server, prefix included: key length is part of MEMORY USAGE.
        let mut backend = match real.as_deref() {
            Some(r) => EmulatedBackend::with_prefix(emu, r.key_prefix()),
            None => EmulatedBackend::new(emu),
        };
        row.keys = run_user(&mut backend, &limiter, &plan.subject, &times)?;
        // Keys the script names itself, outside the prefix (only watched under a prefix): the
        // user's keys too. A real server gets them only when allowed (they would be written among
        // other clients' keys); they are measured there by name and removed unless they existed.
        let outside = backend.take_outside_keys();
        row.keys.extend(usage_of(&mut backend, &outside)?);
        row.bytes_per_user = row.keys.iter().map(|k| k.bytes).sum();
        row.total_bytes = row.bytes_per_user.saturating_mul(plan.users);
        row.used_memory = Some(growth(
            &key_costs(&backend.emu, row.keys.iter().map(|k| k.key.as_bytes())),
            row.bytes_per_user,
            plan.users,
        ));
        if let Some(r) = real.as_deref_mut() {
            on_redis(r, spec, &limiter, plan, &times, &outside, &mut row)?;
        }
        rows.push(row);
    }
    Ok(MemoryReport {
        limit: params.limit,
        window_ms: params.window_ms,
        users: plan.users,
        calls_per_user: params.limit,
        key,
        subject: plan.subject.clone(),
        redis: real.map(|r| r.describe()),
        rows,
    })
}

/// One user's keys measured on the real server `r` too (the script with long TTLs, so that nothing
/// expires while it is measured), the run's keys removed after, and the keys the script wrote
/// outside the run's prefix removed unless they existed; refused before anything is sent when the
/// script writes outside the prefix where that is not allowed.
fn on_redis(
    r: &mut RealRedis,
    spec: &limitlab_engine::spec::SharedSpec,
    limiter: &Limiter,
    plan: &MemoryPlan,
    times: &[i64],
    outside: &[String],
    row: &mut MemoryRow,
) -> Result<()> {
    if !outside.is_empty() && (r.is_cluster() || !r.allow_outside_keys()) {
        return Err(Error::Invalid {
            context: format!("memory, spec {}", spec.origin.display()),
            field: "keys".into(),
            reason: format!(
                "the script writes keys outside the run's key prefix `{}` ({}), which on {} would land among \
                 other clients' keys; nothing was sent. Pass them in KEYS, or on a standalone server that is \
                 yours, add --allow-outside-keys",
                r.key_prefix(),
                outside.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "),
                r.describe()
            ),
        });
    }
    let mut existed = Vec::new();
    for k in outside {
        if matches!(r.command(&[b"EXISTS", k.as_bytes()])?, Reply::Int(n) if n > 0) {
            existed.push(k.clone());
        }
    }
    let shimmed = limiter.with_script_body(with_long_ttls(limiter.script()));
    let measured = run_user(r, &shimmed, &plan.subject, times).and_then(|mut m| {
        m.extend(usage_of(r, outside)?);
        Ok(m)
    });
    let cleaned = r.cleanup();
    let measured = match measured {
        Ok(m) => m,
        // A failure (connection lost, timeout, an error reply such as OOM): which script, how
        // far, what became of the keys.
        Err(e) => {
            let keys = match &cleaned {
                Ok(n) => format!("{n} keys of the run were removed"),
                Err(c) => format!("its keys under `{}` could not be removed ({c})", r.key_prefix()),
            };
            let done = format!(
                "memory on {}, script `{}`: stopped while filling one user's keys ({} calls): {e}; {keys}",
                r.describe(),
                spec.name,
                times.len()
            );
            return Err(match e {
                Error::Connection(_) => Error::Connection(done),
                _ => Error::Redis(done),
            });
        }
    };
    for k in outside.iter().filter(|k| !existed.contains(k)) {
        r.command(&[b"UNLINK", k.as_bytes()])?;
    }
    cleaned?;
    let bytes: u64 = measured.iter().map(|k| k.bytes).sum();
    row.real_bytes_per_user = Some(bytes);
    row.real_total_bytes = Some(bytes.saturating_mul(plan.users));
    row.real_keys = Some(measured);
    Ok(())
}

/// `n` bytes in the seed's MB (2^20 bytes), one decimal, thousands separated: `87,913.5 MB`.
pub fn megabytes(n: u64) -> String {
    one_decimal(n as f64 / MB, "MB")
}

fn seed_mb(mb: f64) -> String {
    one_decimal(mb, "MB")
}

/// `x` with one decimal, thousands separated, then the unit: `87,913.5 MB`, `2,573.4 KB`.
pub fn one_decimal(x: f64, unit: &str) -> String {
    let tenths = (x * 10.0).round() as u64;
    format!("{}.{} {unit}", thousands(tenths / 10), tenths % 10)
}

use super::script_label as label;
use super::Owner;

impl MemoryReport {
    /// The report as one table.
    pub fn table(&self) -> Table {
        let users = thousands(self.users);
        let mut headers: Vec<String> = vec![
            "Algorithm".into(),
            "Keys".into(),
            "Bytes per user".into(),
            format!("{users} users"),
            "Seed article: per user".into(),
            format!("Seed article: {} users", thousands(SEED_USERS)),
            "used_memory growth per user".into(),
            format!("used_memory growth, {users} users"),
        ];
        if self.redis.is_some() {
            headers.extend([
                "Real Redis: per user".into(),
                format!("Real Redis: {users} users"),
                "Model vs real".into(),
            ]);
        }
        let h: Vec<&str> = headers.iter().map(String::as_str).collect();
        let mut t = Table::new(
            format!(
                "Memory per user: limit {} per {} ms, {} calls in the window, {}",
                thousands(self.limit),
                thousands(self.window_ms),
                thousands(self.calls_per_user),
                self.keys_title()
            ),
            &h,
        );
        let mut skipped = Vec::new();
        for r in &self.rows {
            if let Some(why) = &r.skipped {
                let mut cells = vec![label(&r.algorithm)];
                cells.resize(headers.len(), "-".into());
                t.row(cells);
                skipped.push(format!("{}: not run ({why}).", r.algorithm));
                continue;
            }
            let mut cells = vec![
                label(&r.algorithm),
                r.keys.len().to_string(),
                thousands(r.bytes_per_user),
                megabytes(r.total_bytes),
                r.seed_bytes_per_user.map_or("-".into(), thousands),
                r.seed_total_mb.map_or("-".into(), seed_mb),
            ];
            match &r.used_memory {
                Some(g) => {
                    cells.push(thousands(g.per_subject.round() as u64));
                    cells.push(megabytes(g.total.round() as u64));
                }
                None => cells.extend(["-".into(), "-".into()]),
            }
            if self.redis.is_some() {
                match (r.real_bytes_per_user, r.real_total_bytes) {
                    (Some(b), Some(total)) => {
                        cells.push(thousands(b));
                        cells.push(megabytes(total));
                        cells.push(if b == 0 {
                            "-".into()
                        } else {
                            format!("{:+.2}%", (r.bytes_per_user as f64 - b as f64) / b as f64 * 100.0)
                        });
                    }
                    _ => cells.extend(["-".into(), "-".into(), "-".into()]),
                }
            }
            t.row(cells);
        }
        t.note(
            "Bytes: MEMORY USAGE key SAMPLES 0 of each key one user's calls leave, on the emulator's model of Redis 7.0 \
             (jemalloc size classes; skiplist nodes at their expected size, as Redis draws node levels at random).",
        );
        t.note(
            "used_memory growth: what the server's INFO used_memory grows by for that many users added to an empty \
             database (Redis 7.0.15, jemalloc 5.3): MEMORY USAGE's bytes plus the expires dict's entry of a key with a \
             TTL (32 bytes), both dicts' bucket arrays (8 bytes a bucket, tables of a power of two at load factor 1), \
             dict entries and structs as allocated (32 bytes, not 24), less the shared integers 0 to 9999.",
        );
        t.note("MB: 2^20 bytes, as the seed article counts (56 bytes x 1,000,000 users = 53.4 MB).");
        if self.limit == SEED_PARAMS.limit && self.window_ms == SEED_PARAMS.window_ms {
            if self.users != SEED_USERS {
                t.note("The seed article's totals are for 1,000,000 users only.");
            }
        } else {
            t.note("The seed article measured a limit of 1,000 per minute only; its figures are left out here.");
        }
        if let Some(server) = &self.redis {
            t.note(format!(
                "Real Redis: the same calls on {server} (every TTL lengthened so no key expires before it is measured), \
                 under a run prefix in the key name, which both columns include; the keys were deleted afterwards."
            ));
        }
        for r in self.rows.iter().filter(|r| !self.uses_own_key(r)) {
            let names: Vec<&str> = r.keys.iter().map(|k| k.key.as_str()).collect();
            t.note(match names.len() {
                0 => format!("{}: no key left after the calls.", r.algorithm),
                1 => format!("{}'s key: {}.", r.algorithm, names[0]),
                _ => format!("{}'s keys: {}.", r.algorithm, names.join(", ")),
            });
        }
        if self.rows.iter().any(|r| Owner::of(&r.algorithm) == Owner::User) {
            t.note(super::owners_note(self.rows.iter().map(|r| r.algorithm.as_str())));
        }
        for s in skipped {
            t.note(s);
        }
        t
    }

    /// Whether a row's script keeps the subject in limitlab's key alone (or did not run).
    fn uses_own_key(&self, r: &MemoryRow) -> bool {
        r.skipped.is_some() || (r.keys.len() == 1 && r.keys[0].key == self.key)
    }

    /// The title's end: `key rate:{user42}` when every script keeps the subject in that key, else
    /// `subject user42` (each script's keys in a note).
    fn keys_title(&self) -> String {
        if self.rows.iter().all(|r| self.uses_own_key(r)) {
            format!("key {}", self.key)
        } else {
            format!("subject {}", self.subject)
        }
    }

    /// The report in `format`, ending with a newline.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Json => super::to_json(self),
            Format::Text => self.table().to_text(),
            Format::Markdown => self.table().to_markdown(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_times_start_after_a_boundary() {
        let p = Params::new(4, 60_000);
        assert_eq!(
            fill_times(p, 1_704_067_200_000, 4),
            vec![1_704_067_200_001, 1_704_067_212_501, 1_704_067_225_001, 1_704_067_237_501]
        );
        assert_eq!(fill_times(p, 1_704_067_200_001, 1), vec![1_704_067_260_001]);
        // More calls than ms in the window: several in the same ms.
        let t = fill_times(Params::new(10, 6), 0, 12);
        assert_eq!(t, vec![1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]);
    }

    #[test]
    fn megabytes_as_the_seed_counts() {
        assert_eq!(megabytes(56 * 1_000_000), "53.4 MB");
        assert_eq!(megabytes(72 * 1_000_000), "68.7 MB");
        assert_eq!(megabytes(92_184 * 1_000_000), "87,913.5 MB");
        assert_eq!(seed_mb(87_913.5), "87,913.5 MB");
    }

    #[test]
    fn the_shim_keeps_the_script_working() {
        let mut e = Emulator::new();
        let body =
            with_long_ttls("redis.call('SET', KEYS[1], 1, 'PX', 100) redis.call('PEXPIRE', KEYS[2], 5) return 1");
        assert_eq!(e.eval(body.as_bytes(), &[b"a", b"a"], &[]), Reply::Int(1));
        let Reply::Int(ttl) = e.execute(&[b"PTTL", b"a"]) else { panic!() };
        assert_eq!(ttl, 1_000_000_005);
    }

    #[test]
    fn every_script_at_the_seed_setting() {
        let plan = MemoryPlan { params: SEED_PARAMS, users: SEED_USERS, subject: "user42".into(), scripts: Vec::new() };
        let r = measure(&plan, None).unwrap();
        assert_eq!(r.rows.len(), Variant::ALL.len());
        let row = |name: &str| r.rows.iter().find(|x| x.algorithm == name).unwrap();
        // Documented in the scripts' headers: 88 bytes for a listpack hash, 56 for GCRA's integer.
        assert_eq!(row("fixed_window").bytes_per_user, 88);
        assert_eq!(row("token_bucket").bytes_per_user, 88);
        assert_eq!(row("gcra").bytes_per_user, 56);
        assert_eq!(row("seed_fixed_window").keys.len(), 1);
        assert_eq!(row("seed_fixed_window").seed_total_mb, Some(53.4));
        let log = row("sliding_log");
        assert!(log.bytes_per_user > 80_000 && log.bytes_per_user < 110_000, "{}", log.bytes_per_user);
        assert_eq!(log.total_bytes, log.bytes_per_user * 1_000_000);
        let text = r.render(Format::Text);
        assert!(text.contains("87,913.5 MB"), "{text}");
    }
}
