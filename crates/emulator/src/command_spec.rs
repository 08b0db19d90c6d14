//! What a command is to the emulator: its entry in the table ([`CommandSpec`]: name, arity,
//! flags, where its keys are, its handler) and the replies and argument readers that every
//! command shares, with Redis's texts. The table itself is in `cmd`.
use crate::clients::fingerprint;
use crate::core::Core;
use crate::reply::{Reply, ReplySink};
use crate::settings::notify;
/// Runs a command: `args[0]` is the command name as sent.
pub type Handler = fn(&mut Core, &[&[u8]]) -> Reply;

/// Runs a command writing its reply through a [`ReplySink`]: the hot read commands scripts call,
/// so that `redis.call` needs no intermediate [`Reply`]. Such a command's [`Handler`] runs the same
/// body into a sink that builds the `Reply`.
pub type Direct = fn(&mut Core, &[&[u8]], &mut dyn ReplySink);

/// Command flags, as in Redis's command table.
pub mod flags {
    /// Changes the keyspace: refused in read-only scripts (EVAL_RO) and replicas.
    pub const WRITE: u16 = 1;
    /// Only reads.
    pub const READONLY: u16 = 2;
    /// Cannot be called from a script.
    pub const NOSCRIPT: u16 = 4;
    /// May use more memory (refused under OOM; informational here).
    pub const DENYOOM: u16 = 8;
    /// Runs in the scripting layer, not in [`Core`](crate::core::Core) (EVAL, EVALSHA, SCRIPT).
    pub const SCRIPTING: u16 = 16;
    /// Commands whose keys cannot be derived from a fixed position (handled by the command).
    pub const MOVABLE_KEYS: u16 = 32;
    /// Acts on the calling client's own state, in `Emulator` (MULTI, EXEC,
    /// DISCARD, WATCH, UNWATCH), not in [`Core`](crate::core::Core).
    pub const CONNECTION: u16 = 64;
    /// May be propagated to replicas though it is not a write command (PUBLISH; PFCOUNT, which
    /// refreshes the cached cardinality in its value): refused in read-only scripts like a write.
    pub const MAY_REPLICATE: u16 = 128;
}

/// Where a command's keys are: `args[first]`, then every `step`-th argument up to `last`
/// (negative `last` counts from the end, -1 being the last argument). `first == 0` means no keys.
#[derive(Clone, Copy, Debug)]
pub struct KeySpec {
    pub first: i32,
    pub last: i32,
    pub step: i32,
    /// Commands whose keys depend on their arguments (a `numkeys` count, SORT's STORE): the keys of
    /// a call, instead of the positions above.
    pub movable: Option<MovableKeys>,
}

/// Finds the keys of a call whose keys move (see [`KeySpec::movable`]).
pub type MovableKeys = for<'a> fn(&[&'a [u8]]) -> Vec<&'a [u8]>;

impl KeySpec {
    pub const NONE: KeySpec = KeySpec::at(0, 0, 0);
    pub const ONE: KeySpec = KeySpec::at(1, 1, 1);
    pub const ALL: KeySpec = KeySpec::at(1, -1, 1);
    pub const PAIRS: KeySpec = KeySpec::at(1, -1, 2);
    pub const TWO: KeySpec = KeySpec::at(1, 2, 1);

    /// Keys at fixed positions.
    pub const fn at(first: i32, last: i32, step: i32) -> KeySpec {
        KeySpec { first, last, step, movable: None }
    }

    /// Keys found by a function of the arguments.
    pub const fn movable(find: MovableKeys) -> KeySpec {
        KeySpec { first: 0, last: 0, step: 0, movable: Some(find) }
    }

    /// The keys of a call with these arguments.
    pub fn keys<'a>(&self, args: &[&'a [u8]]) -> Vec<&'a [u8]> {
        if let Some(find) = self.movable {
            return find(args);
        }
        if self.first <= 0 || args.len() <= self.first as usize {
            return Vec::new();
        }
        let last = if self.last < 0 { args.len() as i32 + self.last } else { self.last.min(args.len() as i32 - 1) };
        let mut out = Vec::new();
        let mut i = self.first;
        while i <= last {
            out.push(args[i as usize]);
            i += self.step.max(1);
        }
        out
    }
}

/// The keys of a command with a destination at `args[1]` (when `dest`) and `numkeys` at the next
/// position, followed by that many keys (ZUNIONSTORE, ZINTERCARD, SINTERCARD, ...). A count that does
/// not parse or overruns the arguments gives the keys that are there.
pub fn numkeys_keys<'a>(args: &[&'a [u8]], dest: bool) -> Vec<&'a [u8]> {
    let at = if dest { 2 } else { 1 };
    let mut out = Vec::new();
    if dest && args.len() > 1 {
        out.push(args[1]);
    }
    let Some(n) = args.get(at).and_then(|n| crate::keyspace::parse_canonical_i64(n)) else { return out };
    if n > 0 {
        out.extend(args.iter().skip(at + 1).take(n as usize).copied());
    }
    out
}

/// A command's entry in the table.
#[derive(Clone, Copy)]
pub struct CommandSpec {
    /// Lower-case name, as Redis prints it in errors.
    pub name: &'static str,
    /// Redis arity: `n` means exactly n arguments with the name, `-n` at least n.
    pub arity: i32,
    pub flags: u16,
    pub keys: KeySpec,
    pub handler: Handler,
}

impl CommandSpec {
    /// Runs a command whose name, arity and rules were already checked.
    ///
    /// While some client WATCHes keys, a write is watched too: the watched keys of the selected
    /// database that the command names are compared before and after it ([`fingerprint`]), and a
    /// changed one is touched ([`Core::touch`]).
    ///
    /// While a replica is attached, what the command changed is also recorded for the replication
    /// stream (see [`crate::propagate`]).
    #[inline]
    pub fn run(&self, core: &mut Core, args: &[&[u8]]) -> Reply {
        if core.repl.active {
            return crate::propagate::run(self, core, args);
        }
        self.run_unrecorded(core, args)
    }

    /// [`CommandSpec::run`] without the replication stream.
    #[inline]
    pub(crate) fn run_unrecorded(&self, core: &mut Core, args: &[&[u8]]) -> Reply {
        debug_assert!(!self.has(flags::SCRIPTING));
        core.db.now_hint = core.now_ms();
        crate::keyspace::limits::enter(core.settings.limits());
        if core.settings.notify_flags() != 0 {
            return self.run_notifying(core, args);
        }
        if (!core.watches.is_empty() || core.tracking.active()) && self.has(flags::WRITE) {
            return self.run_watched(core, args);
        }
        (self.handler)(core, args)
    }

    /// [`CommandSpec::run`] while keyspace notifications are on: the command's keys that have
    /// expired are removed first with their `expired` event (Redis's lazy expiry notifies), a
    /// write's keys that do not exist are noted, for the `new` events of those it creates, and the
    /// events of the families that do not publish their own are published after it
    /// (`cmd::pubsub`'s table).
    #[cold]
    fn run_notifying(&self, core: &mut Core, args: &[&[u8]]) -> Reply {
        let flags = core.settings.notify_flags();
        let keys = if self.keys.first > 0 || self.keys.movable.is_some() { self.keys.keys(args) } else { Vec::new() };
        let now = core.now_ms();
        if flags & notify::EXPIRED != 0 && !core.in_script() {
            for k in &keys {
                core.expire_key(k, now);
            }
        }
        if flags & notify::NEW != 0 && self.has(flags::WRITE) {
            for k in &keys {
                if core.db.peek(k, now).is_none() {
                    core.new_keys.push(k.to_vec());
                }
            }
        }
        let before = if self.has(flags::WRITE) { core.table_events_before(self, args) } else { None };
        let reply = if (!core.watches.is_empty() || core.tracking.active()) && self.has(flags::WRITE) {
            self.run_watched(core, args)
        } else {
            (self.handler)(core, args)
        };
        if let Some(before) = before {
            core.table_events_after(self, before, &reply);
        }
        core.flush_new_keys(None);
        reply
    }

    #[cold]
    fn run_watched(&self, core: &mut Core, args: &[&[u8]]) -> Reply {
        let now = core.now_ms();
        let db = core.selected;
        let mut before: Vec<(Vec<u8>, u64)> = Vec::new();
        for w in &core.watches.keys {
            if w.db == db && args[1..].contains(&w.key.as_slice()) && !before.iter().any(|(k, _)| *k == w.key) {
                before.push((w.key.clone(), fingerprint(core.db.peek(&w.key, now))));
            }
        }
        if core.tracking.active() {
            // Keys a tracking client read, or under a BCAST prefix (Redis's signalModifiedKey).
            for k in self.keys.keys(args) {
                if core.tracking.interested(k) && !before.iter().any(|(b, _)| b == k) {
                    before.push((k.to_vec(), fingerprint(core.db.peek(k, now))));
                }
            }
        }
        let reply = (self.handler)(core, args);
        let now = core.now_ms();
        for (key, was) in before {
            if fingerprint(core.db.peek(&key, now)) != was {
                core.touch_in(db, &key);
            }
        }
        reply
    }

    pub fn arity_ok(&self, argc: usize) -> bool {
        arity_ok(self.arity, argc)
    }
    pub fn has(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }
}

/// The reply to a command Redis does not know, with Redis's text.
pub fn unknown_command(args: &[&[u8]]) -> Reply {
    // Redis 7.0 (processCommand): the name cut at 128 bytes, then `'arg' ` per argument while the list is
    // under 128 bytes, each cut to what is left of those 128; `%s` stops at a NUL, and every error has its
    // CR/LF turned into spaces.
    let cstr = |b: &'_ [u8]| -> usize { b.iter().position(|&c| c == 0).unwrap_or(b.len()) };
    let mut msg = b"ERR unknown command '".to_vec();
    msg.extend_from_slice(&args[0][..cstr(args[0]).min(128)]);
    msg.extend_from_slice(b"', with args beginning with: ");
    let start = msg.len();
    for a in &args[1..] {
        let used = msg.len() - start;
        if used >= 128 {
            break;
        }
        msg.push(b'\'');
        msg.extend_from_slice(&a[..cstr(a).min(128 - used)]);
        msg.extend_from_slice(b"' ");
    }
    for c in msg.iter_mut() {
        if *c == b'\r' || *c == b'\n' {
            *c = b' ';
        }
    }
    Reply::Error(String::from_utf8_lossy(&msg).into_owned())
}

/// Whether `argc` arguments (the command's name among them) meet Redis arity `arity`: exactly
/// `arity` of them, or at least `-arity` when it is negative. Commands, subcommands and the
/// commands of `limitlab serve` all count this way.
pub fn arity_ok(arity: i32, argc: usize) -> bool {
    let argc = argc as i32;
    if arity >= 0 {
        argc == arity
    } else {
        argc >= -arity
    }
}

/// Redis's reply to a wrong number of arguments from a client, for the command as its errors name
/// it (`get`, `object|help`).
pub fn arity_error(name: &str) -> Reply {
    Reply::Error(format!("ERR wrong number of arguments for '{name}' command"))
}

/// The arity error reply for a command.
pub fn wrong_arity(spec: &CommandSpec) -> Reply {
    arity_error(spec.name)
}

/// The same, for a call from a script (`luaRedisGenericCommand`'s words).
pub const SCRIPT_ARITY: &str = "ERR Wrong number of args calling Redis command from script";

// ---- argument helpers shared by the families -------------------------------------------------

pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
pub const SYNTAX: &str = "ERR syntax error";

/// Parses an integer argument as Redis's `getLongLongFromObject` does.
pub fn arg_i64(b: &[u8]) -> Result<i64, Reply> {
    crate::keyspace::parse_canonical_i64(b).ok_or_else(|| Reply::err(NOT_INTEGER))
}

/// Parses a float argument as Redis's `getLongDoubleFromObject`/`strtold` does: no spaces, no NaN.
pub fn parse_f64(b: &[u8]) -> Option<f64> {
    if b.is_empty() || b[0].is_ascii_whitespace() || b[b.len() - 1].is_ascii_whitespace() {
        return None;
    }
    let s = std::str::from_utf8(b).ok()?;
    let lower = s.to_ascii_lowercase();
    let v = match lower.trim_start_matches(['+', '-']) {
        "inf" | "infinity" => {
            if lower.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        }
        t if t.starts_with("nan") => return None,
        _ => {
            if lower.starts_with("0x") || lower.starts_with("-0x") || lower.starts_with("+0x") {
                parse_hex_float(&lower)?
            } else {
                s.parse::<f64>().ok()?
            }
        }
    };
    if v.is_nan() {
        None
    } else {
        Some(v)
    }
}

fn parse_hex_float(s: &str) -> Option<f64> {
    let (neg, rest) = match s.as_bytes()[0] {
        b'-' => (true, &s[3..]),
        b'+' => (false, &s[3..]),
        _ => (false, &s[2..]),
    };
    let (mant, exp) = match rest.split_once('p') {
        Some((m, e)) => (m, e.parse::<i32>().ok()?),
        None => (rest, 0),
    };
    let (ip, fp) = mant.split_once('.').unwrap_or((mant, ""));
    if ip.is_empty() && fp.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in ip.chars() {
        v = v * 16.0 + c.to_digit(16)? as f64;
    }
    let mut scale = 1.0 / 16.0;
    for c in fp.chars() {
        v += c.to_digit(16)? as f64 * scale;
        scale /= 16.0;
    }
    let v = v * 2f64.powi(exp);
    Some(if neg { -v } else { v })
}

/// Compares an option name case-insensitively.
#[inline]
pub fn eq_ic(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

/// Shorthand for a handler's early return on a parse error.
#[macro_export]
macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(r) => return r,
        }
    };
}

/// Redis's `getIntFromObjectOrReply`: an integer that fits a C int, with its two error texts.
pub fn arg_i32(b: &[u8]) -> Result<i32, Reply> {
    let v = crate::keyspace::parse_canonical_i64(b).ok_or_else(|| Reply::err(NOT_INTEGER))?;
    i32::try_from(v).map_err(|_| Reply::err("ERR value is out of range, value must between -2147483648 and 2147483647"))
}
