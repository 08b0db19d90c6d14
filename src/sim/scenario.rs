//! Scenario files (TOML): what to simulate, with which limits and which scripts.
