//! CONFIG GET (and HELP, RESETSTAT, REWRITE) over Redis 7.0.15's parameters, with the values of a
//! server started as limitlab starts its private ones (`--save '' --appendonly no`, port 6379).
//!
//! The parameters and their values are Redis's own (`redis_config.resp` is a real 7.0.15's
//! `CONFIG GET *`, sorted); `cluster-enabled` follows the emulator's cluster mode. As in Redis, an
//! exact name (no `*`, `?` or `[`) is answered under the spelling it was asked with, a pattern under
//! the parameters' names (matched without regard to case); several parameters come in name order
//! (Redis's order is its hash table's, which changes from run to run). CONFIG SET validates and
//! stores them (`crate::settings`), and the commands whose behaviour a parameter changes read it there.

use crate::command_spec::{eq_ic, CommandSpec, KeySpec};
use crate::core::Core;
use crate::keyspace::glob_match;
use crate::reply::Reply;

pub static COMMANDS: &[CommandSpec] =
    &[CommandSpec { name: "config", arity: -2, flags: 0, keys: KeySpec::NONE, handler: config }];

use crate::settings::defaults;

static HELP: &[&str] = &[
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
    "HELP",
    "    Prints this help.",
];

/// A parameter's value on this server.
fn value(core: &Core, name: &str) -> Vec<u8> {
    match name {
        "cluster-enabled" => {
            if core.cluster {
                b"yes".to_vec()
            } else {
                b"no".to_vec()
            }
        }
        _ => core.settings.get(crate::settings::canonical(name.as_bytes()).unwrap_or(name)).to_vec(),
    }
}

/// CONFIG GET|SET|RESETSTAT|REWRITE|HELP (the subcommand and its arity were checked by the caller).
fn config(core: &mut Core, a: &[&[u8]]) -> Reply {
    let sub = a[1];
    if eq_ic(sub, "help") {
        return Reply::Array(HELP.iter().map(|l| Reply::Status((*l).into())).collect());
    }
    if eq_ic(sub, "resetstat") {
        core.stats.reset();
        for db in 0..crate::core::DATABASES {
            core.db_at(db).expired = 0;
        }
        return Reply::ok();
    }
    if eq_ic(sub, "rewrite") {
        return Reply::err("ERR The server is running without a config file");
    }
    if eq_ic(sub, "set") {
        return match core.settings.config_set(&a[2..]) {
            Ok(()) => {
                // `requirepass` is the default user's password (Redis's `updateRequirePass`).
                if a[2..].chunks(2).any(|p| eq_ic(p[0], "requirepass")) {
                    let pass = core.settings.get("requirepass").to_vec();
                    core.acl.set_requirepass(&pass);
                }
                Reply::ok()
            }
            Err(e) => e,
        };
    }
    // GET pattern [pattern ...]
    let mut out: Vec<(Vec<u8>, &'static str)> = Vec::new();
    let seen = |out: &mut Vec<(Vec<u8>, &'static str)>, key: Vec<u8>, name: &'static str| {
        if !out.iter().any(|(k, _)| k.eq_ignore_ascii_case(&key)) {
            out.push((key, name));
        }
    };
    for pat in &a[2..] {
        let exact = !pat.iter().any(|c| matches!(c, b'*' | b'?' | b'['));
        for (name, _) in defaults() {
            if exact {
                if pat.eq_ignore_ascii_case(name.as_bytes()) {
                    seen(&mut out, pat.to_vec(), name.as_str());
                }
            } else if glob_match(pat, name.as_bytes(), true) {
                seen(&mut out, name.as_bytes().to_vec(), name.as_str());
            }
        }
    }
    out.sort();
    Reply::Map(out.into_iter().map(|(key, name)| (Reply::Bulk(key), Reply::Bulk(value(core, name)))).collect())
}
