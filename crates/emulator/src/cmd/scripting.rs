//! The scripting commands' entries in the table (EVAL, EVALSHA, SCRIPT, FUNCTION, FCALL and their
//! read-only forms): names, arity and flags. The Lua layer runs them.
use crate::command_spec::{flags, unknown_command, CommandSpec, KeySpec};

/// The scripting commands run in the Lua layer (`crate::lua`), not in `Core`; these entries give them names, arity and flags.
pub static COMMANDS: &[CommandSpec] = &[
    scripting_spec("eval", -3, KEYS),
    scripting_spec("evalsha", -3, KEYS),
    scripting_spec("eval_ro", -3, KEYS),
    scripting_spec("evalsha_ro", -3, KEYS),
    scripting_spec("script", -2, KeySpec::NONE),
    scripting_spec("function", -2, KeySpec::NONE),
    scripting_spec("fcall", -3, KEYS),
    scripting_spec("fcall_ro", -3, KEYS),
];

/// `numkeys` at argument 2, then that many keys (COMMAND GETKEYS reads them).
const KEYS: KeySpec = KeySpec::movable(numkeys_keys);

const fn scripting_spec(name: &'static str, arity: i32, keys: KeySpec) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags: flags::SCRIPTING | flags::NOSCRIPT | flags::MOVABLE_KEYS,
        keys,
        handler: |_, a| unknown_command(a),
    }
}

/// The keys of `EVAL script numkeys key...` (and EVALSHA, FCALL, their read-only forms): none when
/// `numkeys` is not a positive count within the arguments, as Redis's `evalGetKeys` gives none for
/// a call that will be refused.
fn numkeys_keys<'a>(a: &[&'a [u8]]) -> Vec<&'a [u8]> {
    match a.get(2).and_then(|n| crate::keyspace::parse_canonical_i64(n)) {
        Some(n) if n >= 1 && n as usize <= a.len() - 3 => a[3..3 + n as usize].to_vec(),
        _ => Vec::new(),
    }
}
