//! The command table: one file per command family, each exporting a `COMMANDS` slice; a lookup by
//! lower-cased name (no allocation) finds a [`CommandSpec`], and [`dispatch`] checks arity and runs it.
use std::sync::OnceLock;

use super::core::Core;
use super::reply::Reply;
pub use crate::command_spec::*;
use rustc_hash::FxHashMap;

pub mod acl;
pub mod bitmaps;
pub mod blocking;
pub mod client;
pub mod command;
pub mod config;
pub mod databases;
pub mod dump;
pub mod geo;
pub mod hashes;
pub mod hyperloglog;
pub mod info;
pub mod keys;
pub mod lists;
pub mod memory;
pub mod monitor;
pub mod pubsub;
pub mod scripting;
pub mod server;
pub mod sets;
pub mod sort;
pub mod stream_groups;
pub mod stream_propagate;
pub mod stream_read;
pub mod streams;
pub mod strings;
pub mod transactions;
pub mod zsets;
pub mod zsets_random;
pub mod zsets_store;

/// The [`Direct`] form of a command, for those that have one.
pub fn direct(spec: &CommandSpec) -> Option<Direct> {
    match spec.name {
        "hmget" => Some(hashes::hmget_to),
        "get" => Some(strings::get_to),
        _ => None,
    }
}

fn table() -> &'static FxHashMap<&'static [u8], CommandSpec> {
    static TABLE: OnceLock<FxHashMap<&'static [u8], CommandSpec>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut m = FxHashMap::default();
        for family in [
            strings::COMMANDS,
            bitmaps::COMMANDS,
            hyperloglog::COMMANDS,
            streams::COMMANDS,
            stream_groups::COMMANDS,
            stream_read::COMMANDS,
            keys::COMMANDS,
            dump::COMMANDS,
            hashes::COMMANDS,
            zsets::COMMANDS,
            zsets_store::COMMANDS,
            zsets_random::COMMANDS,
            geo::COMMANDS,
            lists::COMMANDS,
            blocking::COMMANDS,
            pubsub::COMMANDS,
            sets::COMMANDS,
            sort::COMMANDS,
            server::COMMANDS,
            databases::COMMANDS,
            command::COMMANDS,
            client::COMMANDS,
            acl::COMMANDS,
            monitor::COMMANDS,
            config::COMMANDS,
            info::COMMANDS,
            memory::COMMANDS,
            scripting::COMMANDS,
            transactions::COMMANDS,
        ] {
            for spec in family {
                let prev = m.insert(spec.name.as_bytes(), *spec);
                assert!(prev.is_none(), "command {} defined twice", spec.name);
            }
        }
        m
    })
}

/// Finds a command by name, case-insensitively, without allocating.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    let mut buf = [0u8; 32];
    if name.len() > buf.len() {
        return None;
    }
    for (d, s) in buf.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
    }
    table().get(&buf[..name.len()])
}

/// Runs a non-scripting command from a client (arity, cluster slot rules, then the handler).
pub fn dispatch(core: &mut Core, args: &[&[u8]]) -> Reply {
    let Some(spec) = lookup(args[0]) else {
        return unknown_command(args);
    };
    dispatch_spec(core, spec, args)
}

/// [`dispatch`] for a command already looked up by name (one table lookup per call).
pub fn dispatch_spec(core: &mut Core, spec: &CommandSpec, args: &[&[u8]]) -> Reply {
    if !spec.arity_ok(args.len()) {
        return wrong_arity(spec);
    }
    if core.cluster {
        if let Some(r) = crate::cluster::check_command_slots(spec, args) {
            return r;
        }
    }
    spec.run(core, args)
}

/// A command found by [`LookupCache::find`].
#[derive(Clone, Copy)]
pub struct Found {
    pub spec: &'static CommandSpec,
    pub direct: Option<Direct>,
}

/// A few recently found commands, by their name exactly as spelled: scripts call the same handful
/// of commands with the same spelling over and over, and comparing a few bytes is cheaper than
/// folding the case and hashing. Keyed by the exact bytes, so it answers what [`lookup`] answers.
#[derive(Default)]
pub struct LookupCache {
    entries: [Option<(u8, [u8; LookupCache::MAX], Found)>; LookupCache::SLOTS],
    /// The entry the next miss replaces (round robin).
    next: usize,
}

impl LookupCache {
    const SLOTS: usize = 8;
    const MAX: usize = 24;

    /// [`lookup`] and [`direct`], through the cache.
    pub fn find(&mut self, name: &[u8]) -> Option<Found> {
        for (len, bytes, found) in self.entries.iter().flatten() {
            if *len as usize == name.len() && crate::keyspace::short_eq(&bytes[..name.len()], name) {
                return Some(*found);
            }
        }
        let spec = lookup(name)?;
        let found = Found { spec, direct: direct(spec) };
        if name.len() <= Self::MAX {
            let mut bytes = [0u8; Self::MAX];
            bytes[..name.len()].copy_from_slice(name);
            self.entries[self.next] = Some((name.len() as u8, bytes, found));
            self.next = (self.next + 1) % Self::SLOTS;
        }
        Some(found)
    }
}

/// Every command in the table (for documentation and tests).
pub fn all() -> impl Iterator<Item = &'static CommandSpec> {
    table().values()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::VirtualClock;

    /// Every command with a direct form is in the table, is found through the cache with it, and
    /// writes through a sink exactly the reply its handler returns (hits, misses, a wrong type).
    #[test]
    fn direct_forms_write_what_their_handlers_return() {
        let names = all().filter(|spec| direct(spec).is_some()).map(|spec| spec.name).collect::<Vec<_>>();
        assert!(names.contains(&"hmget") && names.contains(&"get"), "{names:?}");
        let mut core = Core::new(VirtualClock::default());
        let setup: [&[&[u8]]; 3] =
            [&[b"HSET", b"h", b"w", b"17", b"n", b""], &[b"SET", b"s", b"v"], &[b"SET", b"i", b"-42"]];
        for args in setup {
            let spec = lookup(args[0]).unwrap();
            assert!(!spec.run(&mut core, args).is_error());
        }
        let mut cache = LookupCache::default();
        for name in names {
            let found = cache.find(name.to_uppercase().as_bytes()).expect("in the table");
            let run_direct = found.direct.expect("found with its direct form");
            // Each command's own arity: HMGET takes fields, GET only the key.
            let arity = found.spec.arity;
            for args in [
                vec![name.as_bytes(), b"h", b"w", b"x", b"n", b"w"],
                vec![name.as_bytes(), b"nokey", b"a"],
                vec![name.as_bytes(), b"s", b"a"],
                vec![name.as_bytes(), b"i", b"a"],
            ] {
                let args = if arity > 0 { args[..arity as usize].to_vec() } else { args };
                let mut out = None;
                run_direct(&mut core, &args, &mut out);
                assert_eq!(out, Some(found.spec.run(&mut core, &args)), "{args:?}");
            }
        }
    }
}
