//! The command-line interface: one module per subcommand.
pub mod redis_cli;
