//! `limitlab cli`: redis-cli's habits on the emulator (or, with `-h`/`-p`/`-u`/`--redis`, on any
//! server). See [`super::redis_cli`] for how lines are read and replies printed, and for the
//! CLOCK.* commands that move the emulator's virtual clock.
//!
//! As redis-cli does:
//! - a command on the command line (`limitlab cli SET k v`) runs once (`-r N` times, `-r -1` for
//!   ever, `-i SEC` apart) and its reply is printed; `-x` reads the last argument from stdin;
//! - without one, commands are read from stdin, one per line; at a terminal, from a prompt in
//!   redis-cli's form (`127.0.0.1:6379> `, `limitlab> ` for the emulator, `[2]` before the `>` when
//!   database 2 is selected) with line editing and history;
//! - `-a PASS` (or `--pass`, with `--user NAME`) authenticates first and `-n DB` selects a
//!   database; a refusal is printed on stderr (`AUTH failed: ...`, `SELECT 2 failed: ...`) and the
//!   commands still run. A password on the command line prints redis-cli's warning on stderr unless
//!   `--no-auth-warning` is given.
//! - replies print as redis-cli prints them: its raw form when stdout is not a terminal, its
//!   terminal form (`(integer) 1`, `"a"`, `1) ...`) when it is, or as `--raw` / `--no-raw` say.
//!
//! `limitlab cli --redis URL` sends the same lines to a real server instead, exactly as written (no
//! key prefix, and CLOCK.* goes to the server, which does not know it), so the two outputs can be
//! compared with `diff`. Point it at a server you may write to.
use std::cell::{Cell, RefCell};
use std::ffi::OsString;
use std::io::{IsTerminal, Read, Write};
use std::time::Duration;

use super::redis_cli::{self, Format};
use limitlab_emulator::clock::{Millis, VirtualClock, DEFAULT_START};
use limitlab_emulator::clock_commands::clock_command;
use limitlab_emulator::{Emulator, Reply};
use limitlab_emulator::{Error, Result};

/// What redis-cli 7.0 prints on stderr when a password is given on its command line.
pub const AUTH_WARNING: &str =
    "Warning: Using a password with '-a' or '-u' option on the command line interface may not be safe.";

/// `limitlab cli [OPTIONS] [COMMAND [ARG...]]`. Without a command, commands are read from stdin
/// (one per line, redis-cli's syntax), or at a terminal from a prompt.
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    /// Apply Redis Cluster rules (hash slots, CROSSSLOT errors).
    #[arg(long, conflicts_with_all = ["redis", "host", "port", "uri"])]
    pub cluster: bool,
    /// Start the virtual clock here (unix ms); default 2024-01-01T00:00:00Z (1704067200000).
    #[arg(long, value_name = "UNIX_MS", conflicts_with_all = ["redis", "host", "port", "uri"])]
    pub at: Option<i64>,
    #[command(flatten)]
    pub redis: super::verify::RedisArgs,
    /// Send the commands to the server at this host (a `limitlab serve` or a Redis) instead of the
    /// emulator; default 127.0.0.1 when only -p is given.
    #[arg(short = 'h', long = "host", value_name = "HOST", conflicts_with_all = ["redis", "uri"])]
    pub host: Option<String>,
    /// The server's port (with or without -h).
    #[arg(short = 'p', long = "port", value_name = "PORT", conflicts_with_all = ["redis", "uri"])]
    pub port: Option<u16>,
    /// The server as a URI, as redis-cli takes it: `redis://[USER[:PASSWORD]@]HOST[:PORT][/DB]`
    /// (rediss:// for TLS).
    #[arg(short = 'u', value_name = "URI", conflicts_with = "redis")]
    pub uri: Option<String>,
    /// Authenticate with this password first (AUTH). Prefer the REDISCLI_AUTH environment
    /// variable: a password on the command line is seen by other users of the machine.
    #[arg(short = 'a', value_name = "PASSWORD", conflicts_with = "pass")]
    pub password: Option<String>,
    /// The same as -a.
    #[arg(long = "pass", value_name = "PASSWORD")]
    pub pass: Option<String>,
    /// Authenticate as this ACL user (with -a or --pass).
    #[arg(long, value_name = "USERNAME")]
    pub user: Option<String>,
    /// Do not print the warning about a password given on the command line.
    #[arg(long)]
    pub no_auth_warning: bool,
    /// Select this database first (SELECT).
    #[arg(short = 'n', value_name = "DB")]
    pub db: Option<i64>,
    /// Run the command N times (-1: until interrupted).
    #[arg(short = 'r', value_name = "N", allow_negative_numbers = true)]
    pub repeat: Option<i64>,
    /// With -r: wait this many seconds between runs (fractions allowed: -i 0.1).
    #[arg(short = 'i', value_name = "SECONDS")]
    pub interval: Option<f64>,
    /// Read the command's last argument from stdin (all of it, newlines included).
    #[arg(short = 'x')]
    pub stdin_last: bool,
    /// Print replies as piped redis-cli does (the default when stdout is not a terminal).
    #[arg(long, conflicts_with = "no_raw")]
    pub raw: bool,
    /// Print replies as redis-cli does at a terminal: (integer) 1, 1) "a", (nil), (error) ...
    /// (the default when stdout is a terminal).
    #[arg(long)]
    pub no_raw: bool,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// The command and its arguments (`SET k v`). Without one, commands are read from stdin, one
    /// per line; at a terminal, from a prompt.
    #[arg(value_name = "COMMAND", trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<OsString>,
}

/// Where the commands go.
#[derive(Debug)]
pub enum Target {
    /// A fresh emulator.
    Emulator { cluster: bool, at: Millis },
    /// A server over a plain RESP connection.
    Server { host: String, port: u16 },
    /// A server through the redis client (`--redis URL`, or `-u rediss://...`).
    Redis(super::verify::RedisTarget),
}

#[derive(Debug)]
pub struct Plan {
    pub target: Target,
    pub format: Format,
    /// AUTH first: (user, password).
    pub auth: Option<(Option<String>, String)>,
    /// Print [`AUTH_WARNING`] on stderr.
    pub warn_password: bool,
    /// SELECT first (when not 0).
    pub db: i64,
    /// The command from the command line (empty: read commands from stdin).
    pub command: Vec<Vec<u8>>,
    /// How many times to run it (negative: for ever).
    pub repeat: i64,
    /// The wait between two runs.
    pub interval: Option<Duration>,
    /// `-x`: the last argument is stdin.
    pub stdin_last: bool,
    /// Read commands at a prompt (no command given and stdin is a terminal).
    pub interactive: bool,
}

fn invalid(field: &str, reason: String) -> Error {
    Error::Invalid { context: "cli".into(), field: field.into(), reason }
}

impl Plan {
    pub fn new(a: Args) -> Result<Plan> {
        let at = a.at.unwrap_or(DEFAULT_START.0);
        if !(0..=limitlab_engine::limiter::MAX_ARG as i64).contains(&at) {
            return Err(invalid(
                "--at",
                format!("must be a unix time in ms from 0 to {}, got {at}", limitlab_engine::limiter::MAX_ARG),
            ));
        }
        let mut password = a.password.or(a.pass);
        let mut user = a.user;
        let mut db = a.db;
        let mut warn_password = password.is_some();
        let target = if let Some(uri) = &a.uri {
            let info = redis::IntoConnectionInfo::into_connection_info(uri.as_str())
                .map_err(|e| invalid("-u", format!("{e} (redis://[USER[:PASSWORD]@]HOST[:PORT][/DB])")))?;
            let settings = info.redis_settings();
            if let Some(p) = settings.password() {
                warn_password = true;
                password = password.or(Some(p.to_owned()));
                user = user.or(settings.username().map(str::to_owned));
            }
            db = db.or(Some(settings.db()).filter(|&d| d != 0));
            match info.addr() {
                redis::ConnectionAddr::Tcp(host, port) => Target::Server { host: host.clone(), port: *port },
                redis::ConnectionAddr::TcpTls { .. } => {
                    // TLS goes through the redis client; AUTH and SELECT are sent as commands.
                    let mut args = a.redis.clone();
                    args.redis = Some(uri.parse().map_err(|e| invalid("-u", format!("{e}")))?);
                    Target::Redis(args.target()?.expect("a URL was given"))
                }
                other => return Err(invalid("-u", format!("{other}: only redis:// and rediss:// URIs"))),
            }
        } else if let Some(t) = a.redis.target()? {
            Target::Redis(t)
        } else {
            match (a.host, a.port) {
                (None, None) => Target::Emulator { cluster: a.cluster, at: Millis(at) },
                (h, p) => Target::Server { host: h.unwrap_or_else(|| "127.0.0.1".into()), port: p.unwrap_or(6379) },
            }
        };
        if password.is_none() {
            // As redis-cli: the password from the environment, without a warning.
            password = std::env::var("REDISCLI_AUTH").ok().filter(|p| !p.is_empty());
        }
        if user.is_some() && password.is_none() {
            return Err(invalid("--user", "needs a password (-a or --pass)".into()));
        }
        let interval = match a.interval {
            None => None,
            Some(s) if s.is_finite() && (0.0..=86_400.0).contains(&s) => Some(Duration::from_secs_f64(s)),
            Some(s) => return Err(invalid("-i", format!("must be from 0 to 86400 seconds, got {s}"))),
        };
        let command: Vec<Vec<u8>> = a.command.into_iter().map(OsString::into_encoded_bytes).collect();
        if a.stdin_last && command.is_empty() {
            return Err(invalid("-x", "needs a command on the command line (limitlab cli -x SET key < file)".into()));
        }
        let format = if a.no_raw || (!a.raw && std::io::stdout().is_terminal()) { Format::Human } else { Format::Raw };
        let interactive = command.is_empty() && std::io::stdin().is_terminal();
        Ok(Plan {
            target,
            format,
            auth: password.map(|p| (user, p)),
            warn_password: warn_password && !a.no_auth_warning,
            db: db.unwrap_or(0),
            command,
            repeat: a.repeat.unwrap_or(1),
            interval,
            stdin_last: a.stdin_last,
            interactive,
        })
    }
}

/// An open session: where commands run.
enum Backend {
    Emulator(Box<Emulator>),
    Server { client: limitlab_server::client::Client, name: String },
    Redis(Box<limitlab_engine::backend::real::RealRedis>),
}

impl Backend {
    fn open(target: &Target) -> Result<Backend> {
        Ok(match target {
            Target::Emulator { cluster, at } => {
                let mut emu = Emulator::with_clock(VirtualClock::starting_at(*at));
                emu.set_cluster(*cluster);
                Backend::Emulator(Box::new(emu))
            }
            Target::Server { host, port } => {
                let client = limitlab_server::client::Client::connect(host, *port)
                    .map_err(|e| Error::Connection(format!("could not connect to {host}:{port}: {e}")))?;
                Backend::Server { client, name: format!("{host}:{port}") }
            }
            Target::Redis(t) => {
                let mut real = t.connect()?;
                real.set_auto_cleanup(false);
                // A BUSY or LOADING reply is printed at once, as redis-cli prints it.
                real.set_wait_out_refusals(false);
                Backend::Redis(Box::new(real))
            }
        })
    }

    /// One command's reply; `Err` when the connection failed (the session ends there, as
    /// redis-cli's would lose its connection).
    fn exec(&mut self, args: &[Vec<u8>]) -> Result<Reply> {
        match self {
            Backend::Emulator(emu) if args.first().is_some_and(|a| a.eq_ignore_ascii_case(b"auth")) => {
                Ok(emulator_auth(args))
            }
            Backend::Emulator(emu) => Ok(clock_command(args, emu).unwrap_or_else(|| emu.execute_owned(args))),
            Backend::Server { client, name } => {
                client.command(args).map_err(|e| Error::Connection(format!("{name}: {e}")))
            }
            Backend::Redis(real) => {
                use limitlab_engine::backend::Backend as _;
                let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                real.command(&refs)
            }
        }
    }
}

/// AUTH on the emulator, which has no password: Redis 7.0's replies when none is configured (the
/// default user takes any password; no other user exists).
fn emulator_auth(args: &[Vec<u8>]) -> Reply {
    match args.len() {
        2 => Reply::err(
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your \
             configuration is correct?",
        ),
        3 if args[1] == b"default" => Reply::ok(),
        3 => Reply::err("WRONGPASS invalid username-password pair or user is disabled."),
        0 | 1 => limitlab_emulator::command_spec::arity_error("auth"),
        _ => Reply::err("ERR syntax error"),
    }
}

/// The prompt for `host` (None: the emulator) with database `db` selected: redis-cli's
/// `127.0.0.1:6379> `, `127.0.0.1:6379[2]> `.
pub fn prompt(host: Option<&str>, db: i64) -> String {
    let db = if db != 0 { format!("[{db}]") } else { String::new() };
    format!("{}{db}> ", host.unwrap_or("limitlab"))
}

pub fn run(plan: Plan, out: &mut dyn Write) -> Result<()> {
    let io = |source| Error::Io { path: "<stdin/stdout>".into(), source };
    let mut backend = Backend::open(&plan.target)?;
    if plan.warn_password {
        eprintln!("{AUTH_WARNING}");
    }
    if let Some((user, pass)) = &plan.auth {
        let mut cmd = vec![b"AUTH".to_vec()];
        cmd.extend(user.iter().map(|u| u.clone().into_bytes()));
        cmd.push(pass.clone().into_bytes());
        if let Reply::Error(e) = backend.exec(&cmd)? {
            eprintln!("AUTH failed: {e}");
        }
    }
    let mut db = 0;
    if plan.db != 0 {
        match backend.exec(&[b"SELECT".to_vec(), plan.db.to_string().into_bytes()])? {
            Reply::Error(e) => eprintln!("SELECT {} failed: {e}", plan.db),
            _ => db = plan.db,
        }
    }
    if !plan.command.is_empty() {
        let mut cmd = plan.command.clone();
        if plan.stdin_last {
            let mut last = Vec::new();
            std::io::stdin().lock().read_to_end(&mut last).map_err(io)?;
            cmd.push(last);
        }
        let mut i: i64 = 0;
        while plan.repeat < 0 || i < plan.repeat {
            if i > 0 {
                if let Some(d) = plan.interval {
                    limitlab_emulator::clock::pause(d);
                }
            }
            let reply = backend.exec(&cmd)?;
            let mut buf = Vec::new();
            redis_cli::write_command_reply(&cmd, reply, plan.format, &mut buf);
            out.write_all(&buf).and_then(|_| out.flush()).map_err(io)?;
            i = i.saturating_add(1);
        }
        return Ok(());
    }
    let failure: RefCell<Option<Error>> = RefCell::new(None);
    let db = Cell::new(db);
    let mut exec = |args: &[Vec<u8>]| -> Reply {
        if failure.borrow().is_some() {
            return Reply::Nil;
        }
        match backend.exec(args) {
            Ok(r) => {
                // redis-cli follows SELECT for its prompt.
                if matches!(&r, Reply::Status(s) if s == "OK")
                    && args.len() == 2
                    && args[0].eq_ignore_ascii_case(b"select")
                {
                    if let Some(n) = std::str::from_utf8(&args[1]).ok().and_then(|s| s.parse().ok()) {
                        db.set(n);
                    }
                }
                r
            }
            Err(e) => {
                *failure.borrow_mut() = Some(e);
                Reply::Nil
            }
        }
    };
    let stop = || failure.borrow().is_some();
    if plan.interactive {
        let host = match &plan.target {
            Target::Emulator { .. } => None,
            Target::Server { host, port } => Some(format!("{host}:{port}")),
            Target::Redis(t) => Some(t.url.to_string()),
        };
        repl(host.as_deref(), &db, plan.format, &mut exec, &stop, out)?;
    } else {
        let stdin = std::io::stdin();
        let input = StopAfter { inner: stdin.lock(), stop: &stop };
        redis_cli::run_on_with(input, &mut *out, plan.format, &mut exec).map_err(io)?;
    }
    failure.into_inner().map_or(Ok(()), Err)
}

/// Where the prompt keeps its history: `LIMITLAB_CLI_HISTFILE` (empty or `/dev/null`: none), else
/// `~/.limitlab_cli_history`, as redis-cli keeps `~/.rediscli_history` (`REDISCLI_HISTFILE`).
fn history_file() -> Option<std::path::PathBuf> {
    match std::env::var_os("LIMITLAB_CLI_HISTFILE") {
        Some(p) if p.is_empty() || p == "/dev/null" => None,
        Some(p) => Some(p.into()),
        None => std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| std::path::Path::new(&h).join(".limitlab_cli_history")),
    }
}

/// The prompt at a terminal: a line at a time, with line editing and history, until `quit`,
/// `exit`, Ctrl-D or Ctrl-C (as redis-cli's prompt ends).
fn repl(
    host: Option<&str>,
    db: &Cell<i64>,
    format: Format,
    exec: &mut dyn FnMut(&[Vec<u8>]) -> Reply,
    stop: &dyn Fn() -> bool,
    out: &mut dyn Write,
) -> Result<()> {
    use rustyline::error::ReadlineError;
    let io = |source| Error::Io { path: "<stdin/stdout>".into(), source };
    let mut editor = rustyline::DefaultEditor::new()
        .map_err(|e| Error::Io { path: "<terminal>".into(), source: std::io::Error::other(e) })?;
    let history = history_file();
    if let Some(h) = &history {
        // A missing or unreadable history file starts an empty history, as in redis-cli.
        let _ = editor.load_history(h);
    }
    while !stop() {
        let line = match editor.readline(&prompt(host, db.get())) {
            Ok(l) => l,
            Err(ReadlineError::Eof | ReadlineError::Interrupted) => break,
            Err(e) => return Err(Error::Io { path: "<terminal>".into(), source: std::io::Error::other(e) }),
        };
        let trimmed = line.trim();
        // redis-cli keeps every non-empty line but those that carry a password.
        let secret = trimmed.split_ascii_whitespace().next().is_some_and(|w| w.eq_ignore_ascii_case("auth"));
        if !trimmed.is_empty() && !secret && editor.add_history_entry(line.as_str()).unwrap_or(false) {
            if let Some(h) = &history {
                let _ = editor.append_history(h);
            }
        }
        let go_on = redis_cli::run_line(line.as_bytes(), &mut *out, format, &mut |a: &[Vec<u8>]| exec(a))
            .and_then(|g| out.flush().map(|_| g))
            .map_err(io)?;
        if !go_on {
            break;
        }
    }
    Ok(())
}

/// Input that ends once `stop` says so.
struct StopAfter<'a, R> {
    inner: R,
    stop: &'a dyn Fn() -> bool,
}

impl<R: std::io::Read> std::io::Read for StopAfter<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if (self.stop)() {
            return Ok(0);
        }
        self.inner.read(buf)
    }
}

impl<R: std::io::BufRead> std::io::BufRead for StopAfter<'_, R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if (self.stop)() {
            return Ok(&[]);
        }
        self.inner.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        self.inner.consume(n)
    }
}
