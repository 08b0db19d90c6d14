//! Whether a limiter's calls keep to one hash slot, as Redis Cluster requires: found on the
//! emulator, before anything is sent to a cluster.
use limitlab_emulator::cluster::{key_slot, CROSSSLOT};
use limitlab_emulator::{Emulator, Error};

use crate::backend::emulated::EmulatedBackend;
use crate::backend::Backend;
use crate::limiter::Limiter;
use crate::spec::exec::{describe_call, describe_request, CallRecord, Session};
use crate::spec::Spec;
use crate::traffic::Arrival;
use limitlab_emulator::Result;

/// The CROSSSLOT error of `call` when its keys (behind `prefix`) span hash slots: the spec's call,
/// both keys as the spec names them with their slots, and the request.
pub fn crossslot_error(spec: &Spec, call: &CallRecord, prefix: &str, request: &str, target: &str) -> Option<Error> {
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
/// `start_ms`) and returns the error of the first call whose keys span hash slots , for tools that run on a cluster (`what` names the run in the request).
pub fn check_slots(
    what: &str,
    limiter: &Limiter,
    arrivals: &[Arrival],
    start_ms: i64,
    prefix: &str,
    target: &str,
) -> Result<()> {
    let mut b = EmulatedBackend::with_prefix(Emulator::new(), prefix);
    b.set_time_ms(start_ms);
    let mut session = Session::recording();
    for (i, a) in arrivals.iter().enumerate() {
        let now = a.at.as_millis().0;
        limiter.check_call(now, a.cost)?;
        b.set_time_ms(now);
        limiter.call(&mut b, &mut session, &a.key, now, a.cost)?;
        let request = format!("{}, call #{} of {what}", describe_request(&a.key, now, a.cost), i + 1);
        if let Some(e) =
            session.take_calls().iter().find_map(|c| crossslot_error(limiter.spec(), c, prefix, &request, target))
        {
            return Err(e);
        }
    }
    Ok(())
}
