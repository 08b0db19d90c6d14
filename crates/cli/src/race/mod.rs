//! Concurrency: a discrete-event model of N application servers sharing one Redis (the emulator)
//! over a network with latency, comparing a non-atomic fixed window (GET, decide in the
//! application, INCR: separate round trips), the same counter under optimistic locking (WATCH,
//! GET, decide, then MULTI/INCR/EXEC, retried when EXEC fails) and the atomic Lua script
//! `scripts/fixed_window.lua`.
//!
//! # The model
//! Each application server receives its own traffic (the `[traffic]` spec, seeded per server) for
//! the same subject. A request's trip:
//! - non-atomic: the server sends `scripts/variants/fixed_window_get.lua` (one round trip), and when
//!   the count comes back decides (admit when count < limit); after `decide_us` it sends
//!   `scripts/variants/fixed_window_incr.lua` for an admitted request;
//! - atomic: the server sends `scripts/fixed_window.lua` (one round trip) and obeys its reply;
//! - WATCH/MULTI: on a connection of its own, the server sends `WATCH k` (one round trip), then
//!   `GET k` (one round trip) and decides; to refuse it sends `UNWATCH`; to admit, after
//!   `decide_us`, it sends `MULTI`, `INCR k`, `PEXPIRE k 2*window` (when the count was 0) and `EXEC`
//!   in one write (one round trip). EXEC replies a nil array when another server's INCR touched the
//!   counter after this WATCH: the server then starts again from WATCH, up to `watch_retries`
//!   times, and refuses after that. `k` is the counter the two scripts of the non-atomic limiter
//!   use (`KEYS[1]:<window index of now_ms>`).
//!
//! Every message takes the one-way latency, drawn uniformly from `latency * [1 - jitter,
//! 1 + jitter]` per message (the same draws for every limiter, so they face identical traffic and
//! network; WATCH/MULTI's third round trip and its retries draw from streams of their own). Redis runs each message when it arrives, one at a time, in arrival order, on the
//! emulator with its clock at that instant: exactly Redis's own serialization. Servers pass their
//! own clock (the request's arrival time) as `now_ms`.
//!
//! # What is measured
//! Admissions are counted per window as each limiter counts them (the window of `now_ms` for the
//! non-atomic one, the window its reply reports for the script). **Over-admitted** is the sum over
//! windows of what was admitted beyond the limit; **worst window** the most admitted in one window.
//! The script's is never above the limit (the property tests prove it for any interleaving); the
//! non-atomic limiter's grows with the requests in flight between a GET and its INCR: about the
//! arrival rate times the round trip, so with N and with latency. WATCH/MULTI is never above the
//! limit either (an EXEC only succeeds on the count its GET read), but every admission aborts the
//! transactions in flight on the same counter: under contention it pays in **aborted EXECs**
//! (round trips spent again) and in requests refused after their last retry (**gave up**), which a
//! free limit would have admitted.
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::report::table::Table;
use crate::report::{to_json, Format};
use limitlab_emulator::clock::{Micros, DEFAULT_START};
use limitlab_emulator::{ClientId, Reply};
use limitlab_emulator::{Error, Result};
use limitlab_engine::backend::emulated::EmulatedBackend;
use limitlab_engine::backend::{Backend, Script};
use limitlab_engine::limiter::{subject_key, Limiter, Params, Variant};
use limitlab_engine::traffic::{part_seed, TrafficSpec};

/// The read half of the non-atomic limiter.
pub const NONATOMIC_GET: &str = include_str!("../../scripts/variants/fixed_window_get.lua");
/// The write half of the non-atomic limiter.
pub const NONATOMIC_INCR: &str = include_str!("../../scripts/variants/fixed_window_incr.lua");
/// The embedded `simulations/race.toml`.
pub const RACE_TOML: &str = include_str!("../../simulations/race.toml");

/// The most application servers in one cell.
pub const MAX_SERVERS: u32 = 1000;
/// The longest latency or decision time, in µs (ten seconds).
pub const MAX_DELAY_US: u64 = 10_000_000;

/// A race experiment, as written in its TOML file.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RaceSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub limit: u64,
    pub window_ms: u64,
    #[serde(default)]
    pub seed: u64,
    /// The numbers of application servers to try.
    pub servers: Vec<u32>,
    /// The one-way network latencies to try, in µs.
    pub latency_us: Vec<u64>,
    /// Each message's latency is uniform in `latency * [1 - jitter, 1 + jitter]`; 0 to 1.
    #[serde(default)]
    pub jitter: f64,
    /// Time the application spends between the GET's reply and sending the INCR, in µs.
    #[serde(default)]
    pub decide_us: u64,
    /// WATCH/MULTI: how many times a request starts again after its EXEC failed (default 3).
    #[serde(default = "default_watch_retries")]
    pub watch_retries: u32,
    /// What EACH application server receives.
    pub traffic: TrafficSpec,
}

impl RaceSpec {
    /// Reads and validates a race file; a relative trace path is taken from the file's directory.
    pub fn from_file(path: &Path) -> Result<RaceSpec> {
        let text = limitlab_engine::files::read_text(path)?;
        let mut s = RaceSpec::from_toml(&text, path)?;
        if let Some(dir) = path.parent() {
            s.traffic.resolve_paths(dir);
        }
        Ok(s)
    }

    /// Parses and validates race text; `origin` names it in messages.
    pub fn from_toml(text: &str, origin: &Path) -> Result<RaceSpec> {
        let spec: RaceSpec = limitlab_engine::toml_input::from_toml(text, origin)?;
        spec.validate(origin)?;
        Ok(spec)
    }

    fn validate(&self, origin: &Path) -> Result<()> {
        let invalid = |field: &str, reason: String| Error::Invalid {
            context: origin.display().to_string(),
            field: field.into(),
            reason,
        };
        if self.name.trim().is_empty() {
            return Err(invalid("name", "must not be empty".into()));
        }
        self.limiter()?;
        if self.servers.is_empty() || self.servers.iter().any(|&n| n == 0 || n > MAX_SERVERS) {
            return Err(invalid("servers", format!("must list numbers of servers from 1 to {MAX_SERVERS}")));
        }
        if self.latency_us.is_empty() || self.latency_us.iter().any(|&l| l > MAX_DELAY_US) {
            return Err(invalid("latency_us", format!("must list latencies from 0 to {MAX_DELAY_US} µs")));
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            return Err(invalid("jitter", format!("must be from 0 to 1, not {}", self.jitter)));
        }
        if self.decide_us > MAX_DELAY_US {
            return Err(invalid("decide_us", format!("must be at most {MAX_DELAY_US} µs")));
        }
        if self.watch_retries > MAX_WATCH_RETRIES {
            return Err(invalid("watch_retries", format!("must be at most {MAX_WATCH_RETRIES}")));
        }
        self.traffic.validate().map_err(|e| match e {
            Error::Invalid { context, field, reason } => {
                Error::Invalid { context: format!("{}: [traffic] {context}", origin.display()), field, reason }
            }
            other => other,
        })
    }

    /// The atomic script's limiter (its parameters also fix the non-atomic one's).
    pub fn limiter(&self) -> Result<Limiter> {
        Limiter::new(Variant::FIXED_WINDOW, Params::new(self.limit, self.window_ms))
    }
}

fn default_watch_retries() -> u32 {
    3
}

/// The most WATCH/MULTI retries.
pub const MAX_WATCH_RETRIES: u32 = 100;

/// The embedded race experiment.
pub fn builtin() -> Result<RaceSpec> {
    RaceSpec::from_toml(RACE_TOML, &PathBuf::from("simulations/race.toml"))
}

/// Which limiter a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// GET, decide, INCR: three steps, two round trips.
    NonAtomic,
    /// `scripts/fixed_window.lua`: one round trip.
    Lua,
    /// WATCH, GET, decide, MULTI/INCR/EXEC: three round trips, retried when EXEC fails.
    Watch,
}

/// One limiter's figures in one cell.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Figures {
    pub admitted: u64,
    /// The most admitted in one counted window.
    pub worst_window: u64,
    /// Units admitted beyond the limit, summed over windows.
    pub over_admitted: u64,
    /// Windows in which more than the limit was admitted, and windows with any admission.
    pub windows_over: u64,
    pub windows: u64,
}

/// One (servers, latency) cell.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RaceRow {
    pub servers: u32,
    pub latency_us: u64,
    pub requests: u64,
    pub non_atomic: Figures,
    pub lua: Figures,
    pub watch: WatchFigures,
}

/// WATCH/MULTI's figures in one cell.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WatchFigures {
    #[serde(flatten)]
    pub figures: Figures,
    /// EXECs that replied a nil array (another server's INCR came between WATCH and EXEC).
    pub exec_aborted: u64,
    /// Requests refused because their last retry's EXEC failed too.
    pub gave_up: u64,
}

/// Everything `limitlab race` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RaceReport {
    pub name: String,
    pub description: String,
    pub limit: u64,
    pub window_ms: u64,
    pub seed: u64,
    pub jitter: f64,
    pub decide_us: u64,
    pub watch_retries: u32,
    pub rows: Vec<RaceRow>,
}

/// A request in flight.
struct Req {
    /// Index into the subjects.
    subject: u32,
    now_ms: i64,
    /// One-way latencies of its messages, in order: out, back, out, back.
    lat: [i64; 4],
    /// WATCH/MULTI's third round trip (MULTI..EXEC): out, back.
    lat_exec: [i64; 2],
}

/// What happens at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// The request reaches its application server.
    Arrive(u32),
    /// The GET (or the script) reaches Redis.
    Read(u32),
    /// Its reply reaches the application; `value` is the count (or 1/0 admitted).
    ReadReply(u32, i64),
    /// The INCR reaches Redis.
    Incr(u32),
    /// WATCH/MULTI: the WATCH reaches Redis.
    Watch(u32),
    /// WATCH/MULTI: MULTI, INCR, (PEXPIRE,) EXEC reach Redis.
    Exec(u32),
    /// WATCH/MULTI: EXEC's reply reaches the application (true: it ran).
    ExecReply(u32, bool),
    /// WATCH/MULTI: a refusal's UNWATCH reaches Redis.
    Unwatch(u32),
}

/// Runs every cell of `spec` with `seed`.
pub fn run(spec: &RaceSpec, seed: u64) -> Result<RaceReport> {
    let limiter = spec.limiter()?;
    let mut rows = Vec::new();
    for &servers in &spec.servers {
        let (reqs_at, subjects) = arrivals(spec, servers, seed)?;
        for (ci, &latency_us) in spec.latency_us.iter().enumerate() {
            let cell_seed = part_seed(seed ^ 0x5eed_0000_0000, (servers as u64) << 16 | ci as u64);
            let reqs = latencies(&reqs_at, latency_us, spec.jitter, cell_seed);
            let cell = Cell { reqs, latency_us, seed: cell_seed };
            let non_atomic = simulate(spec, &limiter, &cell, &subjects, Mode::NonAtomic)?.figures;
            let lua = simulate(spec, &limiter, &cell, &subjects, Mode::Lua)?.figures;
            let watch = simulate(spec, &limiter, &cell, &subjects, Mode::Watch)?;
            rows.push(RaceRow { servers, latency_us, requests: cell.reqs.len() as u64, non_atomic, lua, watch });
        }
    }
    Ok(RaceReport {
        name: spec.name.clone(),
        description: spec.description.clone(),
        limit: spec.limit,
        window_ms: spec.window_ms,
        seed,
        jitter: spec.jitter,
        decide_us: spec.decide_us,
        watch_retries: spec.watch_retries,
        rows,
    })
}

/// Arrivals as (µs, subject index), and the subjects' names.
type Arrivals = (Vec<(i64, u32)>, Vec<String>);

/// Every server's arrivals, merged in time order (ties: the lower server first).
fn arrivals(spec: &RaceSpec, servers: u32, seed: u64) -> Result<Arrivals> {
    let start = DEFAULT_START.as_micros();
    let mut all: Vec<(i64, u32, String)> = Vec::new();
    for s in 0..servers {
        let list = spec.traffic.arrivals(start, part_seed(seed, s as u64))?;
        limitlab_engine::traffic::requests_only(&list, "race")?;
        for a in list {
            all.push((a.at.0, s, a.key));
        }
    }
    all.sort_by_key(|a| (a.0, a.1));
    let mut names: HashMap<String, u32> = HashMap::new();
    let mut keys = Vec::new();
    let out = all
        .into_iter()
        .map(|(at, _, key)| {
            let next = names.len() as u32;
            let i = *names.entry(key.clone()).or_insert_with(|| {
                keys.push(key.clone());
                next
            });
            (at, i)
        })
        .collect();
    Ok((out, keys))
}

/// One-way latencies: uniform in `latency * [1 - jitter, 1 + jitter]` (µs, at least 0).
struct Latency {
    rng: ChaCha8Rng,
    base: i64,
    spread: i64,
}

impl Latency {
    fn new(latency_us: u64, jitter: f64, seed: u64) -> Latency {
        let spread = (latency_us as f64 * jitter).round() as i64;
        Latency { rng: ChaCha8Rng::seed_from_u64(seed), base: latency_us as i64, spread }
    }
    fn draw(&mut self) -> i64 {
        if self.spread > 0 {
            (self.base + self.rng.random_range(-self.spread..=self.spread)).max(0)
        } else {
            self.base
        }
    }
}

/// Draws each request's one-way latencies: four from the cell's stream, which every limiter shares,
/// and WATCH/MULTI's third round trip from a stream of its own.
fn latencies(reqs: &[(i64, u32)], latency_us: u64, jitter: f64, seed: u64) -> Vec<(i64, Req)> {
    let mut shared = Latency::new(latency_us, jitter, seed);
    let mut exec = Latency::new(latency_us, jitter, seed ^ 0x0ec0_0000_0000_0000);
    reqs.iter()
        .map(|&(at, subject)| {
            let lat = [shared.draw(), shared.draw(), shared.draw(), shared.draw()];
            let lat_exec = [exec.draw(), exec.draw()];
            (at, Req { subject, now_ms: at.div_euclid(1000), lat, lat_exec })
        })
        .collect()
}

/// One (servers, latency) cell: the requests with their latencies.
struct Cell {
    reqs: Vec<(i64, Req)>,
    latency_us: u64,
    seed: u64,
}

/// A WATCH/MULTI request in flight: its connection and its tries so far.
struct Tx {
    client: ClientId,
    tries: u32,
    /// The count the last GET read.
    count: i64,
    /// The latencies of the current try: WATCH out, back, GET out, back, EXEC out, back.
    lat: [i64; 6],
}

/// Plays one cell with one limiter on a fresh emulator.
fn simulate(spec: &RaceSpec, limiter: &Limiter, cell: &Cell, subjects: &[String], mode: Mode) -> Result<WatchFigures> {
    let reqs = &cell.reqs;
    let keys: Vec<String> = subjects.iter().map(|s| subject_key(s)).collect();
    let mut session = limiter.session();
    let mut backend = EmulatedBackend::default();
    let clock = backend.emu.clock();
    let get = Script::new(NONATOMIC_GET);
    let incr = Script::new(NONATOMIC_INCR);
    let window = spec.window_ms as i64;
    let window_arg = spec.window_ms.to_string();
    let mut queue: BinaryHeap<Reverse<(i64, u64, Ev)>> = BinaryHeap::with_capacity(reqs.len() * 2);
    let mut seq = 0u64;
    let mut push = |q: &mut BinaryHeap<Reverse<(i64, u64, Ev)>>, at: i64, ev: Ev| {
        q.push(Reverse((at, seq, ev)));
        seq += 1;
    };
    for (i, (at, _)) in reqs.iter().enumerate() {
        push(&mut queue, *at, Ev::Arrive(i as u32));
    }
    // (subject, window) -> admitted
    let mut counted: HashMap<(u32, i64), u64> = HashMap::new();
    let mut now = String::new();
    // WATCH/MULTI: the requests in flight, and the latencies of their retries.
    let mut txs: Vec<Option<Tx>> = Vec::new();
    let mut retry_lat = Latency::new(cell.latency_us, spec.jitter, cell.seed ^ 0x7e7_0000_0000_0000);
    if mode == Mode::Watch {
        txs.resize_with(reqs.len(), || None);
    }
    let (mut exec_aborted, mut gave_up) = (0u64, 0u64);
    let counter_key = |r: &Req| format!("{}:{}", keys[r.subject as usize], r.now_ms.div_euclid(window));
    while let Some(Reverse((t, _, ev))) = queue.pop() {
        match ev {
            Ev::Arrive(i) if mode == Mode::Watch => {
                let r = &reqs[i as usize].1;
                let client = backend.emu.connect();
                let lat = [r.lat[0], r.lat[1], r.lat[2], r.lat[3], r.lat_exec[0], r.lat_exec[1]];
                txs[i as usize] = Some(Tx { client, tries: 0, count: 0, lat });
                push(&mut queue, t + lat[0], Ev::Watch(i));
            }
            Ev::Arrive(i) => push(&mut queue, t + reqs[i as usize].1.lat[0], Ev::Read(i)),
            Ev::Watch(i) => {
                let r = &reqs[i as usize].1;
                let tx = txs[i as usize].as_ref().expect("a request in flight");
                clock.set_micros(Micros(t));
                let key = counter_key(r);
                ok_reply(backend.emu.execute_as(tx.client, &[b"WATCH", key.as_bytes()]))?;
                // The WATCH's reply comes back, then the GET goes out.
                push(&mut queue, t + tx.lat[1] + tx.lat[2], Ev::Read(i));
            }
            Ev::Read(i) if mode == Mode::Watch => {
                let r = &reqs[i as usize].1;
                let tx = txs[i as usize].as_ref().expect("a request in flight");
                clock.set_micros(Micros(t));
                let key = counter_key(r);
                let count = match backend.emu.execute_as(tx.client, &[b"GET", key.as_bytes()]) {
                    Reply::Nil => 0,
                    Reply::Bulk(b) => std::str::from_utf8(&b).ok().and_then(|s| s.parse::<i64>().ok()).unwrap_or(0),
                    other => return Err(Error::Redis(format!("GET replied {other:?}"))),
                };
                push(&mut queue, t + tx.lat[3], Ev::ReadReply(i, count));
            }
            Ev::ReadReply(i, count) if mode == Mode::Watch => {
                let tx = txs[i as usize].as_mut().expect("a request in flight");
                tx.count = count;
                if (count as u64) < spec.limit {
                    push(&mut queue, t + spec.decide_us as i64 + tx.lat[4], Ev::Exec(i));
                } else {
                    push(&mut queue, t + tx.lat[4], Ev::Unwatch(i));
                }
            }
            Ev::Exec(i) => {
                let r = &reqs[i as usize].1;
                let tx = txs[i as usize].as_ref().expect("a request in flight");
                clock.set_micros(Micros(t));
                let key = counter_key(r);
                let ran = exec(&mut backend.emu, tx, &key, window)?;
                push(&mut queue, t + tx.lat[5], Ev::ExecReply(i, ran));
            }
            Ev::ExecReply(i, ran) => {
                let r = &reqs[i as usize].1;
                let tx = txs[i as usize].as_mut().expect("a request in flight");
                if ran {
                    *counted.entry((r.subject, r.now_ms.div_euclid(window))).or_default() += 1;
                    backend.emu.disconnect(tx.client);
                    txs[i as usize] = None;
                } else {
                    exec_aborted += 1;
                    tx.tries += 1;
                    if tx.tries > spec.watch_retries {
                        gave_up += 1;
                        backend.emu.disconnect(tx.client);
                        txs[i as usize] = None;
                    } else {
                        for l in &mut tx.lat {
                            *l = retry_lat.draw();
                        }
                        push(&mut queue, t + tx.lat[0], Ev::Watch(i));
                    }
                }
            }
            Ev::Unwatch(i) => {
                let tx = txs[i as usize].take().expect("a request in flight");
                clock.set_micros(Micros(t));
                ok_reply(backend.emu.execute_as(tx.client, &[b"UNWATCH"]))?;
                backend.emu.disconnect(tx.client);
            }
            Ev::Read(i) => {
                let r = &reqs[i as usize].1;
                clock.set_micros(Micros(t));
                let key = keys[r.subject as usize].as_bytes();
                let value = match mode {
                    Mode::NonAtomic | Mode::Watch => {
                        set_decimal(&mut now, r.now_ms);
                        int_reply(backend.eval(&get, &[key], &[window_arg.as_bytes(), now.as_bytes()])?)?
                    }
                    Mode::Lua => {
                        let d = limiter.call(&mut backend, &mut session, &subjects[r.subject as usize], r.now_ms, 1)?;
                        if d.allowed {
                            // The window the script counted it in ends reset_after_ms after now.
                            let w = (r.now_ms + d.reset_after_ms).div_euclid(window) - 1;
                            *counted.entry((r.subject, w)).or_default() += 1;
                        }
                        i64::from(d.allowed)
                    }
                };
                push(&mut queue, t + r.lat[1], Ev::ReadReply(i, value));
            }
            Ev::ReadReply(i, value) => {
                let r = &reqs[i as usize].1;
                if mode == Mode::NonAtomic && (value as u64) < spec.limit {
                    *counted.entry((r.subject, r.now_ms.div_euclid(window))).or_default() += 1;
                    push(&mut queue, t + spec.decide_us as i64 + r.lat[2], Ev::Incr(i));
                }
            }
            Ev::Incr(i) => {
                let r = &reqs[i as usize].1;
                clock.set_micros(Micros(t));
                set_decimal(&mut now, r.now_ms);
                let key = keys[r.subject as usize].as_bytes();
                int_reply(backend.eval(&incr, &[key], &[window_arg.as_bytes(), now.as_bytes()])?)?;
            }
        }
    }
    Ok(WatchFigures { figures: figures(&counted, spec.limit), exec_aborted, gave_up })
}

/// A WATCHed request's transaction: MULTI, INCR of its window's counter (with the counter's TTL
/// when the count read was 0, so that the TTL comes with the first INCR), EXEC. Whether it ran
/// (EXEC is refused when a watched key changed).
fn exec(emu: &mut limitlab_emulator::Emulator, tx: &Tx, key: &str, window: i64) -> Result<bool> {
    ok_reply(emu.execute_as(tx.client, &[b"MULTI"]))?;
    emu.execute_as(tx.client, &[b"INCR", key.as_bytes()]);
    if tx.count == 0 {
        let ttl = (2 * window).to_string();
        emu.execute_as(tx.client, &[b"PEXPIRE", key.as_bytes(), ttl.as_bytes()]);
    }
    match emu.execute_as(tx.client, &[b"EXEC"]) {
        Reply::Array(replies) => match replies.first() {
            Some(Reply::Int(n)) if *n == tx.count + 1 => Ok(true),
            other => Err(Error::Redis(format!("EXEC's INCR replied {other:?} after a GET of {}", tx.count))),
        },
        Reply::NilArray | Reply::Nil => Ok(false),
        other => Err(Error::Redis(format!("EXEC replied {other:?}"))),
    }
}

/// What was admitted per (subject, window): in all, in how many windows, the most in one, and what
/// went over `limit`.
fn figures(counted: &HashMap<(u32, i64), u64>, limit: u64) -> Figures {
    let mut f = Figures::default();
    let mut windows: Vec<(&(u32, i64), &u64)> = counted.iter().collect();
    windows.sort();
    for (_, &n) in windows {
        f.admitted += n;
        f.windows += 1;
        f.worst_window = f.worst_window.max(n);
        if n > limit {
            f.over_admitted += n - limit;
            f.windows_over += 1;
        }
    }
    f
}

/// A status reply (WATCH, MULTI, UNWATCH answer OK).
fn ok_reply(r: Reply) -> Result<()> {
    match r {
        Reply::Status(_) => Ok(()),
        other => Err(Error::Redis(format!("expected OK, got {other:?}"))),
    }
}

/// Writes `n` in decimal into `buf`, keeping its allocation.
fn set_decimal(buf: &mut String, n: i64) {
    use std::fmt::Write as _;
    buf.clear();
    let _ = write!(buf, "{n}");
}

fn int_reply(r: Reply) -> Result<i64> {
    match r {
        Reply::Int(n) => Ok(n),
        Reply::Error(e) => Err(Error::Redis(e)),
        other => Err(Error::Redis(format!("expected an integer reply, got {other:?}"))),
    }
}

impl RaceReport {
    pub fn table(&self) -> Table {
        let mut t = Table::new(
            format!(
                "{}: limit {} per {} ms, fixed window, {}",
                self.name, self.limit, self.window_ms, self.description
            ),
            &[
                "servers",
                "latency (one way)",
                "requests",
                "GET+INCR admitted",
                "worst window",
                "over the limit",
                "Lua admitted",
                "worst window",
                "over the limit",
                "WATCH/MULTI admitted",
                "worst window",
                "over the limit",
                "aborted EXECs",
                "gave up",
            ],
        );
        for r in &self.rows {
            t.row(vec![
                r.servers.to_string(),
                fmt_us(r.latency_us),
                r.requests.to_string(),
                r.non_atomic.admitted.to_string(),
                r.non_atomic.worst_window.to_string(),
                r.non_atomic.over_admitted.to_string(),
                r.lua.admitted.to_string(),
                r.lua.worst_window.to_string(),
                r.lua.over_admitted.to_string(),
                r.watch.figures.admitted.to_string(),
                r.watch.figures.worst_window.to_string(),
                r.watch.figures.over_admitted.to_string(),
                r.watch.exec_aborted.to_string(),
                r.watch.gave_up.to_string(),
            ]);
        }
        t.note(format!(
            "Worst window: the most admitted in one counted window (limit {}). Over the limit: units admitted beyond \
             the limit, summed over windows. WATCH/MULTI: aborted EXECs replied nil (another server's INCR came \
             between WATCH and EXEC) and were tried again, up to {} times; gave up: refused after the last. Latency \
             jitter ±{:.0}%, {} µs between a GET's reply and its INCR (or MULTI..EXEC); seed {}.",
            self.limit,
            self.watch_retries,
            self.jitter * 100.0,
            self.decide_us,
            self.seed
        ));
        t
    }

    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Text => self.table().to_text(),
            Format::Markdown => self.table().to_markdown(),
            Format::Json => to_json(self),
        }
    }
}

/// `250 µs`, `1 ms`, `2.5 ms`.
pub fn fmt_us(us: u64) -> String {
    if us < 1000 {
        format!("{us} µs")
    } else if us % 1000 == 0 {
        format!("{} ms", us / 1000)
    } else {
        format!("{} ms", us as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(servers: Vec<u32>, latency_us: Vec<u64>) -> RaceSpec {
        let text = format!(
            "name = \"t\"\nlimit = 20\nwindow_ms = 1000\nseed = 3\nservers = {servers:?}\nlatency_us = {latency_us:?}\n\
             jitter = 0.5\ndecide_us = 20\n[traffic]\nkind = \"poisson\"\nrate = 30.0\nduration_ms = 3000\n"
        );
        RaceSpec::from_toml(&text, Path::new("t.toml")).unwrap()
    }

    #[test]
    fn the_script_never_over_admits_and_the_pieces_do_under_load() {
        let r = run(&spec(vec![1, 8], vec![0, 2000]), 3).unwrap();
        for row in &r.rows {
            assert_eq!(row.lua.over_admitted, 0, "{row:?}");
            assert!(row.lua.worst_window <= 20, "{row:?}");
            // WATCH/MULTI never admits on a stale count.
            assert_eq!(row.watch.figures.over_admitted, 0, "{row:?}");
            assert!(row.watch.figures.worst_window <= 20, "{row:?}");
        }
        // Alone, nothing aborts; eight servers 2 ms away abort and retry.
        assert_eq!(r.rows[0].watch.exec_aborted, 0);
        assert_eq!(r.rows[0].watch.figures.admitted, r.rows[0].lua.admitted);
        assert!(r.rows[3].watch.exec_aborted > 0, "{:?}", r.rows[3]);
        // One server at 30/s with no latency: nothing is in flight at once.
        assert_eq!(r.rows[0].non_atomic.over_admitted, 0);
        // Eight servers (240/s) with 2 ms each way: about one request per round trip in flight.
        assert!(r.rows[3].non_atomic.over_admitted > 0, "{:?}", r.rows[3]);
        assert_eq!(r, run(&spec(vec![1, 8], vec![0, 2000]), 3).unwrap(), "deterministic");
    }

    #[test]
    fn without_latency_the_pieces_are_exact_too() {
        // Zero latency and no decision time: every GET is followed by its INCR before anything else.
        let mut s = spec(vec![4], vec![0]);
        s.decide_us = 0;
        s.jitter = 0.0;
        let r = run(&s, 1).unwrap();
        assert_eq!(r.rows[0].non_atomic.over_admitted, 0, "{:?}", r.rows[0]);
        assert_eq!(r.rows[0].non_atomic.admitted, r.rows[0].lua.admitted);
        assert_eq!(r.rows[0].watch.figures.admitted, r.rows[0].lua.admitted);
        assert_eq!(r.rows[0].watch.exec_aborted, 0);
    }

    #[test]
    fn without_retries_a_failed_exec_refuses() {
        let mut s = spec(vec![8], vec![2000]);
        s.watch_retries = 0;
        let r = run(&s, 3).unwrap();
        let w = &r.rows[0].watch;
        assert!(w.exec_aborted > 0 && w.gave_up == w.exec_aborted, "{w:?}");
        s.watch_retries = 10;
        let more = run(&s, 3).unwrap();
        assert!(more.rows[0].watch.figures.admitted >= w.figures.admitted, "{:?} {w:?}", more.rows[0].watch);
        s.watch_retries = 101;
        assert!(s.validate(Path::new("t.toml")).is_err());
    }

    #[test]
    fn bad_files_name_the_field() {
        let e = RaceSpec::from_toml("name = \"t\"\nlimit = 20\nwindow_ms = 1000\nservers = []\nlatency_us = [1]\n[traffic]\nkind = \"poisson\"\nrate = 3.0\nduration_ms = 30\n", Path::new("r.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("field `servers`"), "{e}");
        let e = RaceSpec::from_toml("name = \"t\"\nlimt = 20\n", Path::new("r.toml")).unwrap_err().to_string();
        assert!(e.starts_with("r.toml:2:"), "{e}");
        assert_eq!(fmt_us(250), "250 µs");
        assert_eq!(fmt_us(2500), "2.5 ms");
        assert_eq!(fmt_us(1000), "1 ms");
    }

    #[test]
    fn the_embedded_file_is_valid() {
        builtin().unwrap();
    }
}
