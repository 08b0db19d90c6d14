//! The subcommands of Redis 7.0's container commands (OBJECT, MEMORY, SCRIPT) with their arities:
//! what Redis's command lookup checks before a command runs or is queued in MULTI. (Run outside a
//! transaction, the handlers give the same errors themselves.)
use super::CommandSpec;
use crate::emulator::reply::Reply;

/// (container, [(subcommand, arity)]), names in lower case.
const CONTAINERS: &[(&str, &[(&str, i32)])] = &[
    ("object", &[("encoding", 3), ("freq", 3), ("help", 2), ("idletime", 3), ("refcount", 3)]),
    ("memory", &[("doctor", 2), ("help", 2), ("malloc-stats", 2), ("purge", 2), ("stats", 2), ("usage", -3)]),
    ("script", &[("debug", 3), ("exists", -3), ("flush", -2), ("help", 2), ("kill", 2), ("load", 3)]),
];

/// Why Redis's lookup refuses a container command's subcommand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    Unknown,
    Arity,
}

/// Checks `args` (whose container arity is already fine) as Redis's `lookupCommand` and arity
/// check do: `None` when it may run, else why not.
pub fn check(spec: &CommandSpec, args: &[&[u8]]) -> Option<Refusal> {
    let (_, subs) = CONTAINERS.iter().find(|(name, _)| *name == spec.name)?;
    let sub = args.get(1)?;
    let Some((_, arity)) = subs.iter().find(|(name, _)| sub.eq_ignore_ascii_case(name.as_bytes())) else {
        return Some(Refusal::Unknown);
    };
    let argc = args.len() as i32;
    let ok = if *arity >= 0 { argc == *arity } else { argc >= -arity };
    (!ok).then_some(Refusal::Arity)
}

/// The error a client gets for a refused subcommand (Redis's `rejectCommandFormat` texts).
pub fn client_error(spec: &CommandSpec, args: &[&[u8]], why: Refusal) -> Reply {
    match why {
        Refusal::Arity => Reply::Error(format!(
            "ERR wrong number of arguments for '{}|{}' command",
            spec.name,
            String::from_utf8_lossy(args[1]).to_ascii_lowercase()
        )),
        Refusal::Unknown => {
            // `%.128s` of a C string, then CR/LF turned into spaces.
            let sub = args[1];
            let end = sub.iter().take(128).position(|&c| c == 0).unwrap_or(sub.len().min(128));
            let name: String = String::from_utf8_lossy(&sub[..end])
                .chars()
                .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
                .collect();
            Reply::Error(format!("ERR unknown subcommand '{name}'. Try {} HELP.", spec.name.to_ascii_uppercase()))
        }
    }
}
