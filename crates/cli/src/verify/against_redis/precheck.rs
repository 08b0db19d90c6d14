//! Before the server: the arrivals on an emulator under the server run's prefix, refusing a script
//! that writes keys outside it, and on a cluster a call whose keys span hash slots.
use limitlab_emulator::cluster::{key_slot, CROSSSLOT};
use limitlab_emulator::Emulator;
use limitlab_emulator::{Error, Result};
use limitlab_engine::backend::emulated::EmulatedBackend;
use limitlab_engine::backend::real::RealRedis;
use limitlab_engine::backend::Backend;
use limitlab_engine::limiter::Limiter;
use limitlab_engine::sim::{run, Progress, Trace};
use limitlab_engine::spec::exec::{CallRecord, Session};
use limitlab_engine::spec::{Program, Spec, Target};
use limitlab_engine::traffic::Arrival;

/// Where a spec's call is written: `spec.toml:12` (a declarative call), or the adapter's file.
fn call_site(spec: &Spec, call: &str) -> String {
    match &spec.program {
        Program::Adapter { path, .. } => path.display().to_string(),
        Program::Declarative { calls, .. } => match calls.iter().find(|c| c.name == call) {
            Some(c) => format!("{}:{}", spec.origin.display(), c.line),
            None => spec.origin.display().to_string(),
        },
    }
}

/// A call as a phrase: ``call `r` (script main) at spec.toml:15``.
fn describe_call(spec: &Spec, c: &CallRecord) -> String {
    let target = match &spec.program {
        Program::Declarative { calls, .. } => calls.iter().find(|x| x.name == c.name).map(|x| &x.target),
        Program::Adapter { .. } => None,
    };
    let what = match target {
        Some(Target::Script(i)) => format!("script {}", spec.scripts[*i].name),
        Some(Target::Function { name, .. }) => format!("function {name}"),
        Some(Target::Command(n)) => format!("command {n}"),
        None if spec.scripts.iter().any(|s| s.name == c.target) => format!("script {}", c.target),
        None => c.target.clone(),
    };
    format!("call `{}` ({what}) at {}", c.name, call_site(spec, &c.name))
}

/// What the emulator's run under the server's prefix found (see "Before the server" in the
/// module docs).
pub struct Precheck {
    /// The decisions, for comparing with the server's on the scenario's clock.
    pub trace: Trace,
    /// Keys created outside the prefix, in order of creation.
    pub outside: Vec<String>,
}

/// Runs `limiter` over `arrivals` on an emulator under `real`'s key prefix, its clock starting at
/// `start_ms`, before anything is sent to `real`. Refuses (with the keys, the spec's call and the
/// request) a script that writes keys outside the prefix unless `real` allows it, and on a cluster
/// a call whose keys span hash slots.
pub fn precheck(
    scenario: &str,
    limiter: &Limiter,
    arrivals: &[Arrival],
    start_ms: i64,
    real: &RealRedis,
    progress: Progress,
) -> Result<Precheck> {
    let prefix = real.key_prefix().to_string();
    let mut emu = EmulatedBackend::with_prefix(Emulator::new(), &prefix);
    emu.set_time_ms(start_ms);
    let trace = run(limiter, &mut emu, arrivals, progress)?;
    let outside = emu.take_outside_keys();
    if outside.is_empty() && !real.is_cluster() {
        return Ok(Precheck { trace, outside });
    }
    let spec = limiter.spec();
    let mut b = EmulatedBackend::with_prefix(Emulator::new(), &prefix);
    b.set_time_ms(start_ms);
    let mut session = Session::recording();
    let mut first_outside: Option<String> = None;
    for (i, a) in arrivals.iter().enumerate() {
        let now = a.at.as_millis().0;
        limiter.check_call(now, a.cost)?;
        b.set_time_ms(now);
        limiter.call(&mut b, &mut session, &a.key, now, a.cost)?;
        let calls = session.take_calls();
        let request =
            || format!("{}, call #{} of scenario `{scenario}`", limitlab_engine::spec::exec::describe_request(&a.key, now, a.cost), i + 1);
        if real.is_cluster() {
            if let Some(e) = calls.iter().find_map(|c| crossslot_error(spec, c, &prefix, &request(), &real.describe())) {
                return Err(e);
            }
        }
        let out = b.take_outside_keys();
        if first_outside.is_none() && !out.is_empty() {
            let calls: Vec<String> = calls.iter().map(|c| describe_call(spec, c)).collect();
            let keys: Vec<String> = out.iter().map(|k| format!("`{k}`")).collect();
            first_outside = Some(format!(
                "the {} made {} and created {}",
                request(),
                if calls.is_empty() { "no call".to_string() } else { calls.join(", ") },
                keys.join(", ")
            ));
            if !real.is_cluster() {
                break;
            }
        }
    }
    if !outside.is_empty() && (real.is_cluster() || !real.allow_outside_keys()) {
        let shown: Vec<String> = outside.iter().take(10).map(|k| format!("`{k}`")).collect();
        let why = if real.is_cluster() {
            // Redis Cluster routes a call by its KEYS and refuses, inside the script, a key of
            // another node (or, in 7.0, of another slot than the declared ones).
            "on Redis Cluster a script may only touch the keys it is given in KEYS, which route the call: \
             these would fail there (\"Script attempted to access a non local key\"). Pass every key the script \
             writes in KEYS (the spec's `keys = [...]`), with one hash tag"
                .to_string()
        } else {
            "on a shared server these keys would land among other clients' keys, where the run could not tell \
             them apart to remove them. Pass every key the script writes in KEYS (the spec's `keys = [...]`, which \
             limitlab puts under the run's prefix), or, on a server that is yours to write on, add \
             --allow-outside-keys (then the ones that did not exist before the run are removed after it)"
                .to_string()
        };
        return Err(Error::Invalid {
            context: format!("scenario `{scenario}`, spec {}", spec.origin.display()),
            field: "keys".into(),
            reason: format!(
                "the script writes keys outside the run's key prefix `{prefix}` (it builds their names itself, not from \
                 KEYS): {}. In all the arrivals create {} such key(s): {}{}. Nothing was sent to {}: {why}",
                first_outside.unwrap_or_default(),
                outside.len(),
                shown.join(", "),
                if outside.len() > shown.len() { ", ..." } else { "" },
                real.describe()
            ),
        });
    }
    Ok(Precheck { trace, outside })
}

/// The CROSSSLOT error of `call` when its keys (behind `prefix`) span hash slots: the spec's call,
/// both keys as the spec names them with their slots, and the request.
fn crossslot_error(spec: &Spec, call: &CallRecord, prefix: &str, request: &str, target: &str) -> Option<Error> {
    let keys: Vec<&str> = call.keys.iter().map(|k| k.strip_prefix(prefix).unwrap_or(k)).collect();
    let first = keys.first()?;
    let other = keys.iter().find(|k| key_slot(k.as_bytes()) != key_slot(first.as_bytes()))?;
    Some(Error::Script {
        reply: CROSSSLOT.to_string(),
        at: format!(
            "{}: its keys `{first}` (slot {}) and `{other}` (slot {}) are in different hash slots, so Redis Cluster \
             refuses the call; give every key of the call the same hash tag, such as {{${{subject}}}}",
            describe_call(spec, call),
            key_slot(first.as_bytes()),
            key_slot(other.as_bytes())
        ),
        request: format!("{request}; found on the emulator before anything was sent to {target}"),
    })
}

/// Runs `arrivals` through `limiter` on an emulator under `prefix` (its clock starting at
/// `start_ms`) and returns the error of the first call whose keys span hash slots (see
/// [`precheck`]), for tools that run on a cluster (`what` names the run in the request).
pub fn check_slots(what: &str, limiter: &Limiter, arrivals: &[Arrival], start_ms: i64, prefix: &str, target: &str) -> Result<()> {
    let mut b = EmulatedBackend::with_prefix(Emulator::new(), prefix);
    b.set_time_ms(start_ms);
    let mut session = Session::recording();
    for (i, a) in arrivals.iter().enumerate() {
        let now = a.at.as_millis().0;
        limiter.check_call(now, a.cost)?;
        b.set_time_ms(now);
        limiter.call(&mut b, &mut session, &a.key, now, a.cost)?;
        let request = format!("{}, call #{} of {what}", limitlab_engine::spec::exec::describe_request(&a.key, now, a.cost), i + 1);
        if let Some(e) = session.take_calls().iter().find_map(|c| crossslot_error(limiter.spec(), c, prefix, &request, target)) {
            return Err(e);
        }
    }
    Ok(())
}
