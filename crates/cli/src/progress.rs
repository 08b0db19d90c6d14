//! Whether a command shows progress, and the spinner of those whose work has no count to show.
//! Progress goes to stderr, only when stderr is a terminal and the report is not JSON (`--json`,
//! `--junit`): a piped or redirected run, and a machine-read one, stay silent, so their stderr is
//! empty and their output byte-identical from run to run.
use std::io::IsTerminal;
use std::time::Duration;

/// The rule: progress only at a terminal, and not for a machine-read report.
pub fn decide(machine_read: bool, stderr_is_terminal: bool) -> bool {
    stderr_is_terminal && !machine_read
}

/// [`decide`] for this process's stderr.
pub fn wanted(machine_read: bool) -> bool {
    decide(machine_read, std::io::stderr().is_terminal())
}

/// The engine's progress setting for a run (its bars show only for runs long enough to notice).
pub fn sim(machine_read: bool) -> limitlab_engine::sim::Progress {
    if wanted(machine_read) {
        limitlab_engine::sim::Progress::Auto
    } else {
        limitlab_engine::sim::Progress::Off
    }
}

/// A spinner with the time elapsed, for work without a count (an attack search); cleared when
/// dropped.
pub struct Spinner(Option<indicatif::ProgressBar>);

impl Spinner {
    /// Starts `label`'s spinner saying `what`, when [`wanted`] (drawn at once, then every tick).
    pub fn start(machine_read: bool, label: &str, what: &str) -> Spinner {
        Spinner(wanted(machine_read).then(|| {
            let b = indicatif::ProgressBar::new_spinner();
            if let Ok(style) = indicatif::ProgressStyle::with_template("{prefix:>20} {spinner} {msg} ({elapsed})") {
                b.set_style(style);
            }
            b.set_prefix(label.to_string());
            b.set_message(what.to_string());
            b.tick();
            b.enable_steady_tick(Duration::from_millis(120));
            b
        }))
    }

    /// Says what the work is at.
    pub fn at(&self, what: &str) {
        if let Some(b) = &self.0 {
            b.set_message(what.to_string());
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(b) = self.0.take() {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_only_at_a_terminal_and_never_for_json() {
        assert!(decide(false, true));
        assert!(!decide(true, true));
        assert!(!decide(false, false));
        assert!(!decide(true, false));
        // Under `cargo test` stderr is captured, not a terminal.
        if !std::io::stderr().is_terminal() {
            assert!(!wanted(false));
            assert_eq!(sim(false), limitlab_engine::sim::Progress::Off);
            assert!(Spinner::start(false, "t", "x").0.is_none());
        }
    }
}
