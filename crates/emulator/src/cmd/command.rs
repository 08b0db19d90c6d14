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

/// The commands this server runs (their names), sorted: the emulator's table and the commands a
/// server in front of it answers itself ([`Core::server_commands`]).
fn emulated(core: &Core) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = super::all().map(|s| s.name).collect();
    v.extend(core.server_commands.iter().copied().filter(|n| super::lookup(n.as_bytes()).is_none()));
    v.sort_unstable();
    v.dedup();
    v
}

/// The name under which this server runs `name` (any case), if it does.
fn served(core: &Core, name: &[u8]) -> Option<&'static str> {
    if let Some(spec) = super::lookup(name) {
        return Some(spec.name);
    }
    core.server_commands.iter().copied().find(|n| name.eq_ignore_ascii_case(n.as_bytes()))
}

/// `(name, arity, flags, summary, arguments as (name, type))`.
type LimitlabCommand =
    (&'static str, i64, &'static [&'static str], &'static str, &'static [(&'static str, &'static str)]);

/// limitlab's own commands (the virtual clock's), as COMMAND describes them: `(name, arity, flags,
/// summary, arguments)`. Keyless, so a cluster client may send them to any node.
const LIMITLAB_COMMANDS: &[LimitlabCommand] = &[
    (
        "clock.advance",
        2,
        &["fast"],
        "Moves the virtual clock forward (or back) by a number of milliseconds.",
        &[("milliseconds", "integer")],
    ),
    ("clock.get", 1, &["readonly", "fast"], "Returns the virtual clock's time in unix milliseconds.", &[]),
    (
        "clock.set",
        2,
        &["fast"],
        "Sets the virtual clock to a unix time in milliseconds.",
        &[("unix-time-milliseconds", "integer")],
    ),
];

/// The COMMAND INFO entry of one of limitlab's own commands.
fn limitlab_info(name: &str) -> Option<Reply> {
    let (name, arity, flags, _, _) = LIMITLAB_COMMANDS.iter().find(|c| c.0 == name)?;
    let status = |s: &str| Reply::Status(s.to_string());
    Some(Reply::Array(vec![
        Reply::Bulk(name.as_bytes().to_vec()),
        Reply::Int(*arity),
        Reply::Set(flags.iter().map(|f| status(f)).collect()),
        Reply::Int(0),
        Reply::Int(0),
        Reply::Int(0),
        Reply::Set(vec![status("@fast")]),
        Reply::Set(vec![]),
        Reply::Set(vec![]),
        Reply::Set(vec![]),
    ]))
}

/// limitlab's own commands with their COMMAND INFO entries (for the ACL rules that name them).
pub(crate) fn limitlab_entries() -> Vec<(String, Reply)> {
    LIMITLAB_COMMANDS.iter().filter_map(|c| limitlab_info(c.0).map(|i| (c.0.to_string(), i))).collect()
}

/// The COMMAND DOCS entry of one of limitlab's own commands.
fn limitlab_docs(name: &str) -> Option<Reply> {
    let (_, _, _, summary, args) = LIMITLAB_COMMANDS.iter().find(|c| c.0 == name)?;
    let b = |s: &str| Reply::Bulk(s.as_bytes().to_vec());
    let mut doc = vec![
        (b("summary"), b(summary)),
        (b("since"), b("0.1.0")),
        (b("group"), b("module")),
        (b("complexity"), b("O(1)")),
        (b("module"), b("limitlab")),
    ];
    if !args.is_empty() {
        let arguments = args
            .iter()
            .map(|(n, t)| Reply::Map(vec![(b("name"), b(n)), (b("type"), b(t)), (b("display_text"), b(n))]))
            .collect();
        doc.push((b("arguments"), Reply::Array(arguments)));
    }
    Some(Reply::Map(doc))
}

/// The COMMAND INFO entry of a command this server runs (nil for others).
fn info_of(core: &Core, name: &[u8]) -> Reply {
    let Some(n) = served(core, name) else { return Reply::Nil };
    redis_table().get(n).map(|c| c.info.clone()).or_else(|| limitlab_info(n)).unwrap_or(Reply::Nil)
}

/// The COMMAND DOCS entry of a command this server runs.
fn docs_of(name: &str) -> Option<Reply> {
    docs_table().get(name).cloned().or_else(|| limitlab_docs(name))
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

/// COMMAND [COUNT | LIST [FILTERBY ...] | INFO [name ...] | DOCS [name ...] | GETKEYS cmd... |
/// GETKEYSANDFLAGS cmd... | HELP].
fn command(core: &mut Core, a: &[&[u8]]) -> Reply {
    let all = emulated(core);
    if a.len() == 1 {
        return Reply::Array(all.iter().map(|n| info_of(core, n.as_bytes())).collect());
    }
    let sub = a[1];
    let arity_err = |s: &str| super::arity_error(&format!("command|{s}"));
    if eq_ic(sub, "count") {
        if a.len() != 2 {
            return arity_err("count");
        }
        return Reply::Int(all.len() as i64);
    }
    if eq_ic(sub, "help") {
        if a.len() != 2 {
            return arity_err("help");
        }
        return Reply::Array(HELP.iter().map(|l| Reply::Status((*l).into())).collect());
    }
    if eq_ic(sub, "info") {
        if a.len() == 2 {
            return Reply::Array(all.iter().map(|n| info_of(core, n.as_bytes())).collect());
        }
        return Reply::Array(a[2..].iter().map(|n| info_of(core, n)).collect());
    }
    if eq_ic(sub, "docs") {
        let names: Vec<&'static str> =
            if a.len() == 2 { all } else { a[2..].iter().filter_map(|n| served(core, n)).collect() };
        let mut out = Vec::new();
        for n in names {
            if let Some(d) = docs_of(n) {
                out.push((Reply::Bulk(n.as_bytes().to_vec()), d));
            }
        }
        return Reply::Map(out);
    }
    if eq_ic(sub, "list") {
        return list(&all, a);
    }
    if eq_ic(sub, "getkeys") || eq_ic(sub, "getkeysandflags") {
        let with_flags = eq_ic(sub, "getkeysandflags");
        if a.len() < 3 {
            return arity_err(if with_flags { "getkeysandflags" } else { "getkeys" });
        }
        return getkeys(core, &a[2..], with_flags);
    }
    let end = sub.iter().take(128).position(|&c| c == 0).unwrap_or(sub.len().min(128));
    Reply::Error(format!("ERR unknown subcommand '{}'. Try COMMAND HELP.", String::from_utf8_lossy(&sub[..end])))
}

/// A field of a RESP3 map reply.
fn field<'a>(m: &'a Reply, name: &str) -> Option<&'a Reply> {
    match m {
        Reply::Map(kv) => kv.iter().find(|(k, _)| matches!(k, Reply::Bulk(b) if b == name.as_bytes())).map(|(_, v)| v),
        _ => None,
    }
}

fn int_field(m: &Reply, name: &str) -> Option<i64> {
    match field(m, name)? {
        Reply::Int(i) => Some(*i),
        _ => None,
    }
}

fn str_field(m: &Reply, name: &str) -> Option<String> {
    match field(m, name)? {
        Reply::Bulk(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Reply::Status(s) => Some(s.clone()),
        _ => None,
    }
}

fn items(r: Option<&Reply>) -> &[Reply] {
    match r {
        Some(Reply::Array(v)) | Some(Reply::Set(v)) => v,
        _ => &[],
    }
}

fn spec_flags(spec: &Reply) -> Vec<String> {
    items(field(spec, "flags"))
        .iter()
        .filter_map(|f| match f {
            Reply::Status(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

/// A key found in a call: its position and its key spec's flags.
pub(crate) type FoundKey = (usize, Vec<String>);

/// The keys of a call by a command's key specs, as Redis 7.0's `getKeysUsingKeySpecs` finds them;
/// None when a spec does not apply to the arguments (a count out of range, an incomplete spec),
/// where Redis falls back to the command's own key finder.
fn keys_by_specs(specs: &[Reply], args: &[&[u8]], arity: i64) -> Option<Vec<FoundKey>> {
    let argc = args.len() as i64;
    let mut out = Vec::new();
    for spec in specs {
        let flags = spec_flags(spec);
        if flags.iter().any(|f| f == "not_key") {
            continue;
        }
        let bs = field(spec, "begin_search")?;
        let bs_spec = field(bs, "spec")?;
        let first = match str_field(bs, "type")?.as_str() {
            "index" => int_field(bs_spec, "index")?,
            "keyword" => {
                let keyword = str_field(bs_spec, "keyword")?;
                let from = int_field(bs_spec, "startfrom")?;
                let (start, end) = if from > 0 { (from, argc - 1) } else { (argc + from, 1) };
                let mut found = 0;
                let mut i = start;
                loop {
                    if i >= argc || i < 1 {
                        break;
                    }
                    if args[i as usize].eq_ignore_ascii_case(keyword.as_bytes()) {
                        found = i + 1;
                        break;
                    }
                    if i == end {
                        break;
                    }
                    i = if start <= end { i + 1 } else { i - 1 };
                }
                if found == 0 {
                    continue;
                }
                found
            }
            _ => return None,
        };
        let fk = field(spec, "find_keys")?;
        let fk_spec = field(fk, "spec")?;
        let (first, last, step) = match str_field(fk, "type")?.as_str() {
            "range" => {
                let lastkey = int_field(fk_spec, "lastkey")?;
                let step = int_field(fk_spec, "keystep")?;
                let limit = int_field(fk_spec, "limit")?;
                let last = if lastkey >= 0 {
                    first + lastkey
                } else if limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (first, last, step)
            }
            "keynum" => {
                let idx = int_field(fk_spec, "keynumidx")?;
                if idx >= argc - first {
                    return None;
                }
                let n = crate::keyspace::parse_canonical_i64(args[(first + idx) as usize]).filter(|n| *n >= 0)?;
                let first = first + int_field(fk_spec, "firstkey")?;
                (first, first + n - 1, int_field(fk_spec, "keystep")?)
            }
            _ => return None,
        };
        if last >= argc || last < first || first >= argc {
            return None;
        }
        let mut i = first;
        while i <= last {
            if i >= argc || i < first {
                if arity < 0 {
                    i += step.max(1);
                    continue;
                }
                return None;
            }
            out.push((i as usize, flags.clone()));
            i += step.max(1);
        }
        if flags.iter().any(|f| f == "incomplete") {
            return None;
        }
    }
    Some(out)
}

/// The key of SET and BITFIELD, whose flags depend on the arguments (their key specs say
/// `variable_flags`): Redis's `setGetKeys` and `bitfieldGetKeys`.
fn variable_flag_keys(name: &str, call: &[&[u8]]) -> Option<Vec<FoundKey>> {
    let flags = |f: &[&str]| f.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let rw = flags(&["RW", "access", "update"]);
    let key_flags = match name {
        "set" => {
            if call.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get")) {
                rw
            } else {
                flags(&["OW", "update"])
            }
        }
        "bitfield" => {
            let mut read_only = true;
            let mut i = 2;
            while i < call.len() {
                let left = call.len() - i - 1;
                let a = call[i];
                if a.eq_ignore_ascii_case(b"get") && left >= 2 {
                    i += 2;
                } else if a.eq_ignore_ascii_case(b"overflow") && left >= 1 {
                    i += 1;
                } else {
                    read_only = false;
                    break;
                }
                i += 1;
            }
            if read_only {
                flags(&["RO", "access"])
            } else {
                rw
            }
        }
        _ => return None,
    };
    (call.len() > 1).then(|| vec![(1, key_flags)])
}

/// COMMAND GETKEYS / GETKEYSANDFLAGS of a full command (Redis's `getKeysSubcommandImpl`): by the
/// command's key specs, else by the emulator's own key finder for the command.
fn getkeys(core: &Core, call: &[&[u8]], with_flags: bool) -> Reply {
    let Some(name) = served(core, call[0]) else { return Reply::err("ERR Invalid command specified") };
    let Some(top) = redis_table().get(name) else {
        return Reply::err("ERR The command has no key arguments");
    };
    let cmd = match (top.subcommands.is_empty(), call.get(1)) {
        (false, Some(sub)) => match top.subcommand(sub) {
            Some(s) => s,
            None => return Reply::err("ERR Invalid command specified"),
        },
        _ => top,
    };
    let Reply::Array(info) = &cmd.info else { return Reply::err("ERR Invalid command specified") };
    let specs = items(info.get(8));
    let emulated_keys = super::lookup(name.as_bytes()).filter(|s| s.keys.first > 0 || s.keys.movable.is_some());
    let has_keys = specs.iter().any(|s| !spec_flags(s).iter().any(|f| f == "not_key"))
        || (cmd.has_flag("movablekeys") && emulated_keys.is_some());
    if !has_keys {
        return Reply::err("ERR The command has no key arguments");
    }
    if !cmd.arity_ok(call.len()) {
        return Reply::err("ERR Invalid number of arguments specified for command");
    }
    let keys = find_keys(name, specs, cmd.arity, emulated_keys, call);
    if keys.is_empty() {
        if cmd.has_flag("no_mandatory_keys") {
            return Reply::Array(vec![]);
        }
        return Reply::err("ERR Invalid arguments specified for command");
    }
    Reply::Array(
        keys.into_iter()
            .map(|(pos, flags)| {
                let key = Reply::Bulk(call[pos].to_vec());
                if with_flags {
                    Reply::Array(vec![key, Reply::Set(flags.into_iter().map(Reply::Status).collect())])
                } else {
                    key
                }
            })
            .collect(),
    )
}

/// The keys of a call and their key specs' flags: by the command's key specs, else by the
/// emulator's own key finder for the command (with the first spec's flags).
fn find_keys(name: &str, specs: &[Reply], arity: i64, emulated: Option<&CommandSpec>, call: &[&[u8]]) -> Vec<FoundKey> {
    let variable = specs.iter().any(|s| spec_flags(s).iter().any(|f| f == "variable_flags"));
    let found = if variable { variable_flag_keys(name, call) } else { keys_by_specs(specs, call, arity) };
    match found {
        Some(k) => k,
        None => {
            let flags = specs.first().map(spec_flags).unwrap_or_default();
            let found = emulated.map(|s| s.keys.keys(call)).unwrap_or_default();
            found
                .into_iter()
                .filter_map(|k| call.iter().position(|a| std::ptr::eq(*a, k)).map(|p| (p, flags.clone())))
                .collect()
        }
    }
}

/// The keys an ACL check looks at: every key of a call (by Redis 7.0.15's key specs) with its
/// spec's flags; none for a command Redis does not have.
pub(crate) fn keys_and_flags(call: &[&[u8]]) -> Vec<FoundKey> {
    let name = String::from_utf8_lossy(call[0]).to_ascii_lowercase();
    let Some(top) = redis_table().get(&name) else { return Vec::new() };
    let cmd = match (top.subcommands.is_empty(), call.get(1)) {
        (false, Some(sub)) => match top.subcommand(sub) {
            Some(s) => s,
            None => return Vec::new(),
        },
        _ => top,
    };
    let Reply::Array(info) = &cmd.info else { return Vec::new() };
    let specs = items(info.get(8));
    let emulated = super::lookup(name.as_bytes()).filter(|s| s.keys.first > 0 || s.keys.movable.is_some());
    if specs.is_empty() && !(cmd.has_flag("movablekeys") && emulated.is_some()) {
        return Vec::new();
    }
    find_keys(&top.name, specs, cmd.arity, emulated, call)
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT cat | PATTERN pattern].
fn list(names: &[&'static str], a: &[&[u8]]) -> Reply {
    let filter = match a.len() {
        5 if eq_ic(a[3], "module") => Filter::Module,
        5 if eq_ic(a[3], "aclcat") => {
            Filter::AclCat(format!("@{}", String::from_utf8_lossy(a[4]).to_ascii_lowercase()))
        }
        5 if eq_ic(a[3], "pattern") => Filter::Pattern(a[4].to_vec()),
        _ => Filter::All,
    };
    let keep: Box<dyn Fn(&str) -> bool> = match a.len() {
        2 => Box::new(|_| true),
        5 if eq_ic(a[2], "filterby") => {
            let (how, arg) = (a[3], a[4].to_vec());
            if eq_ic(how, "module") {
                let module = arg.clone();
                Box::new(move |n: &str| {
                    module.eq_ignore_ascii_case(b"limitlab") && LIMITLAB_COMMANDS.iter().any(|c| c.0 == n)
                })
            } else if eq_ic(how, "aclcat") {
                let cat = format!("@{}", String::from_utf8_lossy(&arg).to_ascii_lowercase());
                Box::new(move |n: &str| {
                    let info = redis_table().get(n).map(|c| c.info.clone()).or_else(|| limitlab_info(n));
                    info.is_some_and(|i| in_acl_category(&i, &cat))
                })
            } else if eq_ic(how, "pattern") {
                Box::new(move |n: &str| glob_match(&arg, n.as_bytes(), true))
            } else {
                return Reply::err(crate::command_spec::SYNTAX);
            }
        }
        _ => return Reply::err(crate::command_spec::SYNTAX),
    };
    // Containers are followed by their subcommands (`config|get`), as Redis lists them.
    let mut out = Vec::new();
    for n in names {
        if keep(n) {
            out.push(Reply::Bulk(n.as_bytes().to_vec()));
        }
        for sub in redis_table().get(*n).map(|c| c.subcommands.as_slice()).unwrap_or(&[]) {
            let in_cat = |cat: &str| in_acl_category(&sub.info, cat);
            let keep_sub = match &filter {
                Filter::All => true,
                Filter::Module => false,
                Filter::AclCat(cat) => in_cat(cat),
                Filter::Pattern(p) => glob_match(p, sub.name.as_bytes(), true),
            };
            if keep_sub {
                out.push(Reply::Bulk(sub.name.as_bytes().to_vec()));
            }
        }
    }
    Reply::Array(out)
}

/// Whether a COMMAND INFO entry lists ACL category `cat` (`@read`).
fn in_acl_category(info: &Reply, cat: &str) -> bool {
    let Reply::Array(f) = info else { return false };
    items(f.get(6)).iter().any(|x| matches!(x, Reply::Status(s) if s == cat))
}

/// What COMMAND LIST keeps.
enum Filter {
    All,
    Module,
    AclCat(String),
    Pattern(Vec<u8>),
}

/// A subcommand of a command that has them (Redis 7.0's `<command>|<subcommand>` entries): its
/// arity (counting the command and the subcommand), whether scripts may call it, and whether it writes.
pub struct Sub {
    pub name: &'static str,
    pub arity: i32,
    pub noscript: bool,
    /// Flagged `write` (what the replicas are sent when it changes the dataset).
    pub write: bool,
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
                        write: s.has_flag("write"),
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
