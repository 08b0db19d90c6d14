//! The `limitlab` binary's subcommands as a user runs them: errors, `compare`, `check` (and its mutation test), `bench`, `init`, `memory`, `sweep`, `attack`, `race`, `skew`, `run --decisions`, the fixtures and the docs' specs, and the golden outputs.
//!
//! One test binary for the area (each file below is a module), so that `cargo test` links a few
//! binaries rather than one per file.
#[path = "../common/mod.rs"]
mod common;

mod attack;
mod bench_cli;
mod check_cli;
mod check_verdicts;
mod cli;
mod docs_architecture;
mod docs_figures;
mod docs_specs;
mod files_io;
mod fixtures_cli;
mod golden;
mod init_cli;
mod input_errors;
mod memory_cli;
mod mutants;
mod output_files;
mod progress;
mod race_skew;
mod redis_cli_habits;
mod run_decisions;
mod sweep_cli;
mod user_scripts;
