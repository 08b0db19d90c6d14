//! The library's one error type. A rate limiter saying "no" is a
//! `limitlab_engine::limiter::Decision`-style outcome, never an `Err`; errors are for malformed
//! input, failing backends and broken scripts.
use std::path::PathBuf;

/// Everything that can go wrong in limitlab's library. Binaries wrap it in `anyhow`.
///
/// Every variant's message is complete on its own: `Io` ends with its source's text and also returns
/// that source from `source()`, so a printer of the whole chain must leave out a cause the message
/// already ends with (as `src/main.rs` does), or it is printed twice.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A Redis error reply (from the emulator or a real server), with its exact text.
    #[error("{0}")]
    Redis(String),
    /// Input that could not be parsed: a scenario, trace or case file.
    #[error("{}:{line}: {reason}", file.display())]
    Parse { file: PathBuf, line: usize, reason: String },
    /// A field of a scenario or an argument that has a value it cannot take.
    #[error("{context}: field `{field}`: {reason}")]
    Invalid { context: String, field: String, reason: String },
    /// A script or a spec's command answered a request with an error reply: Redis's own text, where
    /// in the user's files (`my_limiter.lua:52: the line`), and the request that triggered it.
    #[error("{reply}\n  at {at}\n  during the {request}")]
    Script { reply: String, at: String, request: String },
    /// A verdict that failed (`limitlab check`): the report was printed; this says how many.
    #[error("{0}")]
    Failed(String),
    /// The Lua engine failed outside of a script's own error handling.
    #[error("lua: {0}")]
    Lua(String),
    /// Talking to a real Redis failed.
    #[error("redis connection: {0}")]
    Connection(String),
    /// A private `redis-server` was needed (no `--redis` URL) but the program cannot be run: it is
    /// not installed, or not on the PATH. The text is the program and the system's reason.
    #[error("redis-server is not installed ({0}): install Redis 7.0, or give a running server with --redis redis://HOST:PORT")]
    NoRedisServer(String),
    /// The emulator and a real Redis answered the same thing differently (`verify`, `--redis`).
    #[error("emulator and Redis differ: {0}")]
    Mismatch(String),
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// The exit status of every command, one table (docs/specs.md, "Exit status"):
    ///
    /// | status | meaning | errors |
    /// |---|---|---|
    /// | 0 | done: every check held, every decision identical | |
    /// | 1 | a verdict: a check failed, the emulator and Redis differ | [`Self::Failed`], [`Self::Mismatch`] |
    /// | 2 | bad input or usage: arguments, a spec, a scenario or trace, a file that cannot be read, a script that does not compile, errors or runs away | [`Self::Parse`], [`Self::Invalid`], [`Self::Io`], [`Self::Script`], [`Self::Lua`] |
    /// | 3 | a server: unreachable (or no `redis-server` to start a private one), asking for a password or refusing it, no reply in time, or refusing a call for its own state (OOM, READONLY, NOPERM) | [`Self::Connection`], [`Self::Redis`], [`Self::NoRedisServer`] |
    ///
    /// (clap's own usage errors exit 2 too; a panic, which is always a bug, exits 101.)
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Failed(_) | Error::Mismatch(_) => 1,
            Error::Parse { .. } | Error::Invalid { .. } | Error::Io { .. } | Error::Script { .. } | Error::Lua(_) => 2,
            Error::Connection(_) | Error::Redis(_) | Error::NoRedisServer(_) => 3,
        }
    }
}

/// `Result` with limitlab's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<mlua::Error> for Error {
    fn from(e: mlua::Error) -> Self {
        Error::Lua(e.to_string())
    }
}
