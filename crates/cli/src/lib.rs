//! limitlab's command line, the top layer: the subcommands ([`cli`]), their reports and plots
//! ([`report`]), and the tools that only the command line runs: [`verify`] (the emulator against a
//! real Redis), [`audit`] (read-only audits of a live Redis), [`bench`](mod@bench), [`race`],
//! [`skew`] and [`init`] (specs for installed client libraries).
pub mod audit;
pub mod bench;
pub mod cli;
pub mod init;
pub mod output;
pub mod progress;
pub mod race;
pub mod report;
pub mod skew;
pub mod verify;
