//! COMMAND (COUNT, INFO, DOCS, LIST, HELP, and plain COMMAND) for the commands the emulator
//! implements, and Redis 7.0.15's whole command table, which the scripting layer asks about the
//! commands the emulator does not implement (a script calling SUBSCRIBE or CLIENT KILL gets Redis's
//! refusal, not an unknown command).
//!
//! The table is Redis's own answer, recorded from a real 7.0.15 (`tests/command_table.rs` records
//! it with `LIMITLAB_RECORD=1` and otherwise checks it): `redis_commands.resp` is `COMMAND` and
//! `redis_docs.resp` is `COMMAND DOCS`, both in RESP3, sorted by name. COMMAND INFO and DOCS of an
//! emulated command reply that recorded entry, so they are Redis's byte for byte.
use std::sync::OnceLock;

use crate::command_spec::{eq_ic, CommandSpec, KeySpec};
use crate::core::Core;
use crate::keyspace::glob_match;
use crate::reply::Reply;
use rustc_hash::FxHashMap;

pub static COMMANDS: &[CommandSpec] =
    &[CommandSpec { name: "command", arity: -1, flags: 0, keys: KeySpec::NONE, handler: command }];

static INFO_RESP: &[u8] = include_bytes!("redis_commands.resp");
static DOCS_RESP: &[u8] = include_bytes!("redis_docs.resp");

/// One command of Redis 7.0.15's table (a subcommand's name is `container|sub`).
pub struct RedisCommand {
    pub name: String,
    pub arity: i64,
    pub flags: Vec<String>,
    /// The COMMAND INFO entry.
    pub info: Reply,
    pub subcommands: Vec<RedisCommand>,
}

impl RedisCommand {
    pub fn has_flag(&self, f: &str) -> bool {
        self.flags.iter().any(|x| x == f)
    }
    /// Whether a call with `argc` arguments (the name included) has a valid count.
    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i64;
        if self.arity >= 0 {
            argc == self.arity
        } else {
            argc >= -self.arity
        }
    }
    /// The subcommand `sub` of this container command.
    pub fn subcommand(&self, sub: &[u8]) -> Option<&RedisCommand> {
        self.subcommands
            .iter()
            .find(|s| s.name.split_once('|').is_some_and(|(_, n)| sub.eq_ignore_ascii_case(n.as_bytes())))
    }
}

fn from_info(info: Reply) -> Option<RedisCommand> {
    let Reply::Array(f) = &info else { return None };
    let name = match f.first()? {
        Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        _ => return None,
    };
    let arity = match f.get(1)? {
        Reply::Int(i) => *i,
        _ => return None,
    };
    let flags = match f.get(2)? {
        Reply::Set(v) | Reply::Array(v) => v
            .iter()
            .filter_map(|x| match x {
                Reply::Status(s) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let subcommands = match f.get(9) {
        Some(Reply::Array(v)) | Some(Reply::Set(v)) => v.iter().cloned().filter_map(from_info).collect(),
        _ => Vec::new(),
    };
    Some(RedisCommand { name, arity, flags, info, subcommands })
}

/// Redis 7.0.15's commands by lower-case name.
pub fn redis_table() -> &'static FxHashMap<String, RedisCommand> {
    static TABLE: OnceLock<FxHashMap<String, RedisCommand>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let (all, _) = parse_resp3(INFO_RESP).expect("the recorded COMMAND reply parses");
        let Reply::Array(entries) = all else { panic!("the recorded COMMAND reply is an array") };
        entries.into_iter().filter_map(from_info).map(|c| (c.name.clone(), c)).collect()
    })
}

/// Redis 7.0.15's COMMAND DOCS entries by name.
fn docs_table() -> &'static FxHashMap<String, Reply> {
    static TABLE: OnceLock<FxHashMap<String, Reply>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let (all, _) = parse_resp3(DOCS_RESP).expect("the recorded COMMAND DOCS reply parses");
        let Reply::Map(entries) = all else { panic!("the recorded COMMAND DOCS reply is a map") };
        entries
            .into_iter()
            .filter_map(|(k, v)| match k {
                Reply::Bulk(b) => Some((String::from_utf8_lossy(&b).into_owned(), v)),
                _ => None,
            })
            .collect()
    })
}

/// Looks a command up in Redis 7.0.15's table as a script's call would: with a subcommand for a
/// container. `Err(true)`: the name is unknown; `Err(false)`: a container's subcommand is.
pub fn redis_lookup(args: &[&[u8]]) -> Result<&'static RedisCommand, bool> {
    let name = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
    let cmd = redis_table().get(&name).ok_or(true)?;
    if !cmd.subcommands.is_empty() && args.len() >= 2 {
        return cmd.subcommand(args[1]).ok_or(false);
    }
    Ok(cmd)
}

/// Parses one RESP3 value from `b`; returns it and the bytes it took.
pub fn parse_resp3(b: &[u8]) -> Option<(Reply, usize)> {
    let end = b.windows(2).position(|w| w == b"\r\n")?;
    let line = std::str::from_utf8(&b[1..end]).ok()?;
    let mut at = end + 2;
    let items = |n: usize, at: &mut usize| -> Option<Vec<Reply>> {
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let (r, used) = parse_resp3(&b[*at..])?;
            v.push(r);
            *at += used;
        }
        Some(v)
    };
    let reply = match b[0] {
        b'+' => Reply::Status(line.to_string()),
        b'-' => Reply::Error(line.to_string()),
        b':' => Reply::Int(line.parse().ok()?),
        b'_' => Reply::Nil,
        b'$' => {
            let n: i64 = line.parse().ok()?;
            if n < 0 {
                Reply::Nil
            } else {
                let data = b.get(at..at + n as usize)?.to_vec();
                at += n as usize + 2;
                Reply::Bulk(data)
            }
        }
        b'*' => Reply::Array(items(line.parse().ok()?, &mut at)?),
        b'~' => Reply::Set(items(line.parse().ok()?, &mut at)?),
        b'%' => {
            let flat = items(2 * line.parse::<usize>().ok()?, &mut at)?;
            let mut kv = Vec::with_capacity(flat.len() / 2);
            let mut it = flat.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                kv.push((k, v));
            }
            Reply::Map(kv)
        }
        _ => return None,
    };
    Some((reply, at))
}

/// The emulated commands (their names), sorted.
fn emulated() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = super::all().map(|s| s.name).collect();
    v.sort_unstable();
    v
}

static HELP: &[&str] = &[
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all Redis commands.",
    "COUNT",
    "    Return the total number of commands in this Redis server.",
    "LIST",
    "    Return a list of all commands in this Redis server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full Redis command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full Redis command.",
    "HELP",
    "    Prints this help.",
];

/// The COMMAND INFO entry of an emulated command (nil for others).
fn info_of(name: &[u8]) -> Reply {
    match super::lookup(name) {
        Some(spec) => redis_table().get(spec.name).map_or(Reply::Nil, |c| c.info.clone()),
        None => Reply::Nil,
    }
}

/// COMMAND [COUNT | LIST [FILTERBY ...] | INFO [name ...] | DOCS [name ...] | GETKEYS cmd... | HELP].
fn command(core: &mut Core, a: &[&[u8]]) -> Reply {
    let _ = core;
    if a.len() == 1 {
        return Reply::Array(emulated().into_iter().map(|n| info_of(n.as_bytes())).collect());
    }
    let sub = a[1];
    let arity_err = |s: &str| super::arity_error(&format!("command|{s}"));
    if eq_ic(sub, "count") {
        if a.len() != 2 {
            return arity_err("count");
        }
        return Reply::Int(emulated().len() as i64);
    }
    if eq_ic(sub, "help") {
        if a.len() != 2 {
            return arity_err("help");
        }
        return Reply::Array(HELP.iter().map(|l| Reply::Status((*l).into())).collect());
    }
    if eq_ic(sub, "info") {
        if a.len() == 2 {
            return Reply::Array(emulated().into_iter().map(|n| info_of(n.as_bytes())).collect());
        }
        return Reply::Array(a[2..].iter().map(|n| info_of(n)).collect());
    }
    if eq_ic(sub, "docs") {
        let names: Vec<Vec<u8>> = if a.len() == 2 {
            emulated().into_iter().map(|n| n.as_bytes().to_vec()).collect()
        } else {
            a[2..].iter().map(|n| n.to_vec()).collect()
        };
        let mut out = Vec::new();
        for n in names {
            if let Some(spec) = super::lookup(&n) {
                if let Some(d) = docs_table().get(spec.name) {
                    out.push((Reply::Bulk(spec.name.as_bytes().to_vec()), d.clone()));
                }
            }
        }
        return Reply::Map(out);
    }
    if eq_ic(sub, "list") {
        return list(a);
    }
    if eq_ic(sub, "getkeys") {
        if a.len() < 3 {
            return arity_err("getkeys");
        }
        let Some(spec) = super::lookup(a[2]) else { return Reply::err("ERR Invalid command specified") };
        if !spec.arity_ok(a.len() - 2) {
            return Reply::err("ERR Invalid number of arguments specified for command");
        }
        let keys = spec.keys.keys(&a[2..]);
        if keys.is_empty() {
            return Reply::err("ERR The command has no key arguments");
        }
        return Reply::Array(keys.into_iter().map(|k| Reply::Bulk(k.to_vec())).collect());
    }
    let end = sub.iter().take(128).position(|&c| c == 0).unwrap_or(sub.len().min(128));
    Reply::Error(format!("ERR unknown subcommand '{}'. Try COMMAND HELP.", String::from_utf8_lossy(&sub[..end])))
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT cat | PATTERN pattern].
fn list(a: &[&[u8]]) -> Reply {
    let names = emulated();
    let keep: Box<dyn Fn(&str) -> bool> = match a.len() {
        2 => Box::new(|_| true),
        5 if eq_ic(a[2], "filterby") => {
            let (how, arg) = (a[3], a[4].to_vec());
            if eq_ic(how, "module") {
                Box::new(|_| false)
            } else if eq_ic(how, "aclcat") {
                let cat = format!("@{}", String::from_utf8_lossy(&arg).to_ascii_lowercase());
                Box::new(move |n: &str| {
                    redis_table().get(n).is_some_and(|c| match &c.info {
                        Reply::Array(f) => matches!(f.get(6), Some(Reply::Set(v)) | Some(Reply::Array(v))
                            if v.iter().any(|x| matches!(x, Reply::Status(s) if *s == cat))),
                        _ => false,
                    })
                })
            } else if eq_ic(how, "pattern") {
                Box::new(move |n: &str| glob_match(&arg, n.as_bytes(), true))
            } else {
                return Reply::err(crate::command_spec::SYNTAX);
            }
        }
        _ => return Reply::err(crate::command_spec::SYNTAX),
    };
    Reply::Array(names.into_iter().filter(|n| keep(n)).map(|n| Reply::Bulk(n.as_bytes().to_vec())).collect())
}

/// A subcommand of a command that has them (Redis 7.0's `<command>|<subcommand>` entries): its
/// arity (counting the command and the subcommand) and whether scripts may call it.
pub struct Sub {
    pub name: &'static str,
    pub arity: i32,
    pub noscript: bool,
}

/// The subcommands of a command that has them, from Redis 7.0.15's table
/// ([`redis_table`]).
pub fn subcommands(command: &str) -> Option<&'static [Sub]> {
    static SUBS: std::sync::OnceLock<rustc_hash::FxHashMap<&'static str, Vec<Sub>>> = std::sync::OnceLock::new();
    let all = SUBS.get_or_init(|| {
        redis_table()
            .values()
            .filter(|c| !c.subcommands.is_empty())
            .map(|c| {
                let subs = c
                    .subcommands
                    .iter()
                    .map(|s| Sub {
                        name: s.name.split_once('|').map_or(s.name.as_str(), |(_, n)| n),
                        arity: s.arity as i32,
                        noscript: s.has_flag("noscript"),
                    })
                    .collect();
                (c.name.as_str(), subs)
            })
            .collect()
    });
    all.get(command).map(Vec::as_slice)
}

/// What Redis's command lookup says of a container command's subcommand before the command runs or
/// is queued (outside MULTI the handlers say the same themselves): unknown, or a wrong number of
/// arguments (texts of `rejectCommandFormat`).
pub(crate) fn subcommand_refusal(spec: &CommandSpec, args: &[&[u8]]) -> Option<Reply> {
    let subs = subcommands(spec.name)?;
    let given = args.get(1)?;
    let Some(sub) = subs.iter().find(|s| given.eq_ignore_ascii_case(s.name.as_bytes())) else {
        // `%.128s` of a C string, then CR/LF turned into spaces.
        let end = given.iter().take(128).position(|&c| c == 0).unwrap_or(given.len().min(128));
        let name: String = String::from_utf8_lossy(&given[..end])
            .chars()
            .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
            .collect();
        return Some(Reply::Error(format!(
            "ERR unknown subcommand '{name}'. Try {} HELP.",
            spec.name.to_ascii_uppercase()
        )));
    };
    if !crate::command_spec::arity_ok(sub.arity, args.len()) {
        return Some(crate::command_spec::arity_error(&format!("{}|{}", spec.name, sub.name)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command_spec::flags::*;

    /// The recorded table parses, holds Redis 7.0.15's 240 commands, and agrees with the emulator's
    /// own table on every command the emulator implements: the arity and whether scripts may call it.
    #[test]
    fn the_recorded_table_agrees_with_the_emulators() {
        let t = redis_table();
        assert_eq!(t.len(), 240);
        assert!(t["client"].subcommand(b"SETNAME").is_some_and(|s| s.has_flag("noscript")));
        for spec in super::super::all() {
            let r = t.get(spec.name).unwrap_or_else(|| panic!("{} is not a Redis 7.0 command", spec.name));
            assert_eq!(r.arity, spec.arity as i64, "arity of {}", spec.name);
            // A container's subcommands say whether scripts may call them (the scripting layer
            // refuses SCRIPT and FUNCTION itself, HELP aside).
            if r.subcommands.is_empty() {
                assert_eq!(r.has_flag("noscript"), spec.has(NOSCRIPT), "noscript of {}", spec.name);
            }
            if spec.has(WRITE) {
                assert!(r.has_flag("write"), "{} writes", spec.name);
            }
            assert!(docs_table().contains_key(spec.name), "docs of {}", spec.name);
        }
    }
}
