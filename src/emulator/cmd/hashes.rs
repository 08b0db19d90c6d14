//! Hashes commands.
use super::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
