//! The scripting commands' entries in the table (EVAL, EVALSHA, SCRIPT, FUNCTION, FCALL and their
//! read-only forms): names, arity and flags. The Lua layer runs them.
use crate::command_spec::{flags, unknown_command, CommandSpec, KeySpec};

/// The scripting commands run in the Lua layer (`crate::lua`), not in `Core`; these entries give them names, arity and flags.
pub static COMMANDS: &[CommandSpec] = &[
    scripting_spec("eval", -3),
    scripting_spec("evalsha", -3),
    scripting_spec("eval_ro", -3),
    scripting_spec("evalsha_ro", -3),
    scripting_spec("script", -2),
    scripting_spec("function", -2),
    scripting_spec("fcall", -3),
    scripting_spec("fcall_ro", -3),
];

const fn scripting_spec(name: &'static str, arity: i32) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags: flags::SCRIPTING | flags::NOSCRIPT | flags::MOVABLE_KEYS,
        keys: KeySpec::NONE,
        handler: |_, a| unknown_command(a),
    }
}
