//! What consumer-group commands send the replicas, as Redis 7.0.15 sends it: not the command itself
//! (`preventCommandPropagation`, see `prevent`) but, from inside the handler (`alsoPropagate`),
//! what it did to the group.
//! - XREADGROUP: each entry a read with `>` gives a consumer goes as an XCLAIM that hands it to that
//!   consumer with its delivery time and count (`streamPropagateXCLAIM`); a NOACK read moves the
//!   group instead (`XGROUP SETID ... ENTRIESREAD`, `streamPropagateGroupID`), after creating its
//!   consumer when the read made it (`XGROUP CREATECONSUMER`, `streamPropagateConsumerCreation`). A
//!   read of the consumer's history, or one that found nothing new, sends nothing. A blocked reader
//!   when it is served sends the same, as a unit of its own (`cmd::blocking`).
//! - XCLAIM and XAUTOCLAIM: the same canonical XCLAIM per entry they claim or drop from the pending
//!   list, and XCLAIM an XGROUP SETID when only its LASTID moved the group.
//!
//! What a command sends this way collects in `propagate::Repl::own` while a replica is
//! attached; nothing is built otherwise.
use crate::core::Core;
use crate::keyspace::stream::{ConsumerGroup, Nack};
use crate::keyspace::StreamId;

/// Sends `argv` to the replicas from inside the running command, while one is attached.
fn also(core: &mut Core, argv: Vec<Vec<u8>>) {
    core.repl.own.push(argv);
}

/// Redis's `streamPropagateXCLAIM`: the XCLAIM that gives the entry `id` (as the command named it)
/// to `nack`'s consumer, with its delivery time and count and the group's last ID `last_id`.
pub(crate) fn xclaim(core: &mut Core, key: &[u8], group: &[u8], id: &[u8], nack: &Nack, last_id: StreamId) {
    if core.repl.active {
        also(core, xclaim_argv(key, group, id, nack, &last_id.to_bytes()));
    }
}

/// Redis's `streamPropagateGroupID`: `XGROUP SETID key group last-id ENTRIESREAD n`.
pub(crate) fn setid(core: &mut Core, key: &[u8], group: &[u8], g: &ConsumerGroup) {
    if core.repl.active {
        let (last, read) = (g.last_id.to_bytes(), g.entries_read.to_string());
        also(core, argv(&[b"XGROUP", b"SETID", key, group, &last, b"ENTRIESREAD", read.as_bytes()]));
    }
}

/// Redis's `streamPropagateConsumerCreation`: `XGROUP CREATECONSUMER key group consumer`.
pub(crate) fn consumer_created(core: &mut Core, key: &[u8], group: &[u8], consumer: &[u8]) {
    if core.repl.active {
        also(core, argv(&[b"XGROUP", b"CREATECONSUMER", key, group, consumer]));
    }
}

/// Redis's `preventCommandPropagation`: the running command goes only as what it sent on its own.
pub(crate) fn prevent(core: &mut Core) {
    if core.repl.active {
        core.repl.prevented = true;
    }
}

/// `XCLAIM key group consumer 0 id TIME ms RETRYCOUNT n FORCE JUSTID LASTID last`: the entry `id`
/// given to `nack`'s consumer with its delivery time and count, the group's last ID `last`.
pub(crate) fn xclaim_argv(key: &[u8], group: &[u8], id: &[u8], nack: &Nack, last: &[u8]) -> Vec<Vec<u8>> {
    let (time, count) = (nack.delivery_time.to_string(), nack.delivery_count.to_string());
    argv(&[
        b"XCLAIM",
        key,
        group,
        &nack.consumer,
        b"0",
        id,
        b"TIME",
        time.as_bytes(),
        b"RETRYCOUNT",
        count.as_bytes(),
        b"FORCE",
        b"JUSTID",
        b"LASTID",
        last,
    ])
}

fn argv(parts: &[&[u8]]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.to_vec()).collect()
}
