//! The transaction commands' entries in the table (MULTI, EXEC, DISCARD, WATCH, UNWATCH): they act
//! on the calling client's own state, so the emulator runs them per connection (`crate::multi`).
use crate::command_spec::{flags, CommandSpec, KeySpec};
use crate::reply::Reply;

/// The transaction commands.
pub static COMMANDS: &[CommandSpec] = &[
    connection_spec("multi", 1, KeySpec::NONE),
    connection_spec("exec", 1, KeySpec::NONE),
    connection_spec("discard", 1, KeySpec::NONE),
    connection_spec("watch", -2, KeySpec::ALL),
    connection_spec("unwatch", 1, KeySpec::NONE),
];

const fn connection_spec(name: &'static str, arity: i32, keys: KeySpec) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags: flags::CONNECTION | flags::NOSCRIPT,
        keys,
        handler: |_, a| {
            let name = String::from_utf8_lossy(a[0]).to_ascii_uppercase();
            Reply::Error(format!("ERR {name} acts on a client connection: send it with Emulator::execute_as"))
        },
    }
}
