//! A call as it went to the backend ([`CallRecord`]), and how requests and script errors are
//! named in messages: what the spec's runner and its adapters share.
use std::path::Path;

use limitlab_emulator::{Error, Reply};

/// One call as it went to the backend, for tools that look at what a spec does (`check`,
/// `run --decisions`).
#[derive(Clone, Debug, PartialEq)]
pub struct CallRecord {
    /// The call's name in the spec (`call1`, `hits`, or the adapter's script/command name).
    pub name: String,
    /// The script's name in the spec, or the command.
    pub target: String,
    /// The keys as sent (with the backend's prefix).
    pub keys: Vec<String>,
    pub args: Vec<String>,
    pub reply: Reply,
}

/// What identifies a request in messages.
pub fn describe_request(subject: &str, now_ms: i64, cost: u64) -> String {
    format!("request (subject `{subject}`, now_ms {now_ms}, cost {cost})")
}

/// A script's error reply as a [`Error::Script`]: Redis's text, the user's file and line with the
/// line itself, and the request.
pub(crate) fn script_error(path: &Path, body: &str, reply: &str, request: String) -> Error {
    let line = user_script_line(reply);
    let at = match line {
        Some(n) => {
            let text = body.lines().nth(n.saturating_sub(1)).unwrap_or("").trim();
            format!("{}:{n}: {text}", path.display())
        }
        None => path.display().to_string(),
    };
    Error::Script { reply: reply.to_string(), at, request }
}

/// The `@user_script:N` line of a Redis script error, if it names one.
pub fn user_script_line(err: &str) -> Option<usize> {
    let i = match err.find("user_script:") {
        Some(i) => i + "user_script:".len(),
        // A function's error: `... on @user_function:N.` (the library's own line numbers).
        None => err.find("user_function:")? + "user_function:".len(),
    };
    let digits: String = err[i..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}
