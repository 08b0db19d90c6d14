//! The case generator: random command sequences over the emulator's command table and random calls
//! of every shipped script, each command annotated with the effects [`super::model`] checks.
//!
//! A case is a short session (1 to [`MAX_COMMANDS`] commands) on a handful of logical keys. Each key
//! leans towards one type (string, hash, sorted set, list, set, HyperLogLog, stream, or a limiter's
//! key; bit commands go to the string keys), so most
//! commands hit a key of their own type and some hit another (WRONGTYPE paths). Arguments come from
//! small pools of edge values (integer limits, float spellings, empty strings, binary bytes,
//! spaces) mixed with random numbers; one command in twenty is mangled (an argument dropped or an
//! extra one added) to walk arity and syntax errors. On a private server cases also load Redis 7
//! function libraries and call their functions (FCALL, FCALL_RO, FUNCTION LIST/STATS/DELETE/FLUSH).
//! Transactions come up in every case: MULTI queues what follows until an EXEC or DISCARD, WATCH
//! names some of the keys (which later commands touch or not), and the errors around them are sent
//! too; on a private server the case also moves between databases (SELECT, SWAPDB, MOVE, FLUSHDB).
//!
//! What is left out, and why (the comparison must be byte-exact on a server whose clock runs):
//! `TIME` (the wall clock), `XADD` with an automatic `*` ID (the server's clock), `MEMORY USAGE` of a
//! stream (the model estimates it), `RANDOMKEY` (random), `OBJECT IDLETIME` (time since last access),
//! `SCAN`, `KEYS` and `DBSIZE` on shared servers (other people's keys; KEYS walks them all and
//! blocks the server meanwhile), `FLUSHALL`/`FLUSHDB`/`SCRIPT FLUSH`
//! on shared servers (never on a server limitlab did not start), `SELECT`, `SWAPDB`, `MOVE` and
//! `COPY .. DB n` with a database that exists on shared servers (the URL may name a database, and
//! the run's keys must stay in it; private servers get all of them), `WAIT` for replicas outside a
//! transaction for more than 1 ms (it blocks), `SCRIPT DEBUG YES|SYNC` (a debugging session), Lua's `math.random`
//! (Redis keeps its stream across calls for the server's lifetime), functions on shared servers
//! (libraries are global, outside any key prefix), `PUBLISH`, `CONFIG`, `CLIENT NO-EVICT` and
//! `SORT`/`SORT_RO` on shared servers (other clients' subscribers; server settings; commands an
//! ACL user limited to its own keys, without `@dangerous`, is refused), `FUNCTION DUMP` and `FUNCTION LIST` of several
//! libraries (Redis orders them by a dict seeded at random per process), `MEMORY USAGE` of skiplists, hashtable sets and
//! of expired keys, lex ranges over a possible skiplist, and TTLs shorter than 100 s (they could expire mid-case on the server while the
//! emulator's clock stands still); [`super::model`] has the rules that keep the rest exact. `KEYS`, `SMEMBERS` and `SCAN` replies are compared
//! after sorting (their order follows Redis's hash tables); hashes are kept small and their values
//! short, so they stay listpacks whose order (insertion order) is compared exactly.
mod collections;
mod keys;
mod scripts;
mod session;
mod state;
mod strings;
mod values;

use rand::{Rng, RngCore};

use super::model::{Fx, Model};
use super::{Arg, Case, Command};
use state::{Family, Gen, B, FAMILIES};
use values::ECHOED_LONG;

pub use scripts::JUNK_SHA;

/// The most commands in one case.
pub const MAX_COMMANDS: usize = 24;

/// One random case. `private`: the server is ours, flushed before every case (DBSIZE, SCAN,
/// FLUSHALL and SCRIPT FLUSH become fair game).
pub fn case<R: RngCore>(rng: &mut R, private: bool) -> Case {
    let n = match rng.random_range(0..10) {
        0 => 1,
        1..=3 => rng.random_range(2..6),
        _ => rng.random_range(6..=MAX_COMMANDS),
    };
    let mut keys: Vec<(String, Family)> = (1..=4)
        .map(|i| {
            let f = FAMILIES[rng.random_range(0..FAMILIES.len())];
            (format!("k{i}"), f)
        })
        .collect();
    keys.push(("rate:{u1}".into(), Family::Limiter));
    keys.push(("rate:{u2}".into(), Family::Limiter));
    let now = match rng.random_range(0..4) {
        0 => rng.random_range(0..1_000_000),
        1 => 999_999_999_000_000 + rng.random_range(0..999_999),
        _ => 1_704_067_200_000 + rng.random_range(0..86_400_000),
    };
    let mut g = Gen {
        rng,
        private,
        keys,
        model: Model::new(private),
        loaded: Vec::new(),
        now,
        in_multi: false,
        watched: None,
        touch_next: false,
        force_watched: false,
    };
    let mut commands = Vec::with_capacity(n);
    let mut tries = 0;
    while commands.len() < n && tries < n * 20 {
        tries += 1;
        let mut c = g.command();
        if g.rng.random_range(0..20) == 0 {
            g.mangle(&mut c);
        }
        // Inside EXEC a string that an earlier command of the transaction stored from its own
        // arguments (SET, GETSET, INCRBYFLOAT, ...) is also held by the queued command: Redis's
        // OBJECT REFCOUNT reads 2 until EXEC ends. The emulator does not model the queue's references.
        if g.in_multi && c.args.len() > 1 && c.name() == "object" && c.args[1] == Arg::Lit(b"REFCOUNT".to_vec()) {
            continue;
        }
        if g.model.allows(&c.fx) {
            g.model.apply(&c.fx);
            commands.push(c);
        }
    }
    Case { commands }
}

impl<R: RngCore> Gen<'_, R> {
    /// Drops the last argument or adds one at the end, for arity and syntax errors. Nothing moves:
    /// a literal shifted into a key's place would be a key outside the case's prefix (on a shared
    /// server, someone else's). The added argument is sent behind the prefix for the same reason
    /// (it may land where a key is read: `DEL k1 x`). A mangled command may no longer load its
    /// script, so it loses its [`Fx::Load`]; every other effect is a "may", which stays true.
    pub(super) fn mangle(&mut self, c: &mut Command) {
        // COMMAND INFO or DOCS without a name describes every command: Redis's are more than the
        // emulator's.
        if c.name() == "command" {
            return;
        }
        c.fx.retain(|f| !matches!(f, Fx::Load(_)));
        // `DISCARD x` is refused and the transaction goes on (`EXEC x` does end it).
        if c.name() == "discard" {
            c.fx.retain(|f| !matches!(f, Fx::Transaction(false)));
        }
        if c.args.len() > 1 && self.chance(50) {
            c.args.pop();
        } else {
            let extra = self.pick(&["x", "1", "EX", "NX", "WITHSCORES", "LIMIT", "", "-1", "a\r\nb", ECHOED_LONG]);
            // Where the command's key spec puts a key (`DEL k1 x`, `MSET k1 v x`), the extra one is a
            // key too, under the case's prefix: a server reads it as a key, and on a shared server
            // every key a run names must be its own (an ACL user limited to `ll:*` would be refused).
            let at = c.args.len() as i32;
            let is_key = limitlab_emulator::cmd::lookup(c.name().as_bytes()).is_some_and(|spec| {
                let k = spec.keys;
                let last = if k.last < 0 { at + 1 + k.last } else { k.last };
                k.first > 0 && at >= k.first && at <= last && (at - k.first) % k.step.max(1) == 0
            });
            c.args.push(if is_key { Arg::Key(extra.to_string()) } else { Arg::Lit(extra.as_bytes().to_vec()) });
        }
    }

    pub(super) fn command(&mut self) -> Command {
        // A transaction in progress ends now and then; transactions and WATCH come up in any case,
        // switches between databases on private servers only.
        if self.in_multi && self.chance(20) {
            return self.end_transaction();
        }
        // Right after a WATCH, often a command on the watched key: a write touches it (or, if it
        // changes nothing, may not), a read never does.
        if std::mem::take(&mut self.touch_next) && !self.in_multi && self.chance(60) {
            if let Some((_, f)) = self.watched.clone() {
                self.force_watched = true;
                let c = match f {
                    Family::String => self.string_cmd(),
                    Family::Hash => self.hash_cmd(),
                    Family::Zset => self.zset_cmd(),
                    Family::List => self.list_cmd(),
                    Family::Set => self.set_cmd(),
                    Family::Limiter => self.limiter_cmd(),
                    Family::Hll => self.hll_cmd(),
                    Family::Stream => self.stream_cmd(),
                };
                self.force_watched = false;
                return c;
            }
        }
        // After a WATCH, a transaction soon follows (a few commands in between may touch the keys).
        if !self.in_multi && self.watched.is_some() && self.chance(30) {
            self.in_multi = true;
            return B::new("MULTI").fx(Fx::Transaction(true)).build();
        }
        if self.chance(8) {
            return self.transaction_cmd();
        }
        if self.private && self.chance(5) {
            return self.database_cmd();
        }
        match self.rng.random_range(0..100) {
            0..=14 => self.string_cmd(),
            15..=25 => self.keys_cmd(),
            26..=34 => self.hash_cmd(),
            35..=45 => self.zset_cmd(),
            46..=53 => self.list_cmd(),
            54..=59 => self.set_cmd(),
            60..=63 => self.bits_cmd(),
            64..=65 => self.hll_cmd(),
            66..=68 => self.stream_cmd(),
            69..=71 => self.server_cmd(),
            72..=82 => self.snippet_cmd(),
            83..=88 if self.private => self.function_cmd(),
            _ => self.limiter_cmd(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn cases_are_deterministic_and_safe() {
        for seed in 0..200u64 {
            let a = case(&mut ChaCha8Rng::seed_from_u64(seed), false);
            let b = case(&mut ChaCha8Rng::seed_from_u64(seed), false);
            assert_eq!(a.commands, b.commands, "seed {seed}");
            assert!(!a.commands.is_empty() && a.commands.len() <= MAX_COMMANDS);
            assert!(Model::check(false, a.commands.iter().map(|c| c.fx.as_slice())), "seed {seed}");
            for c in &a.commands {
                let name = c.name();
                assert!(!["flushall", "flushdb", "dbsize", "scan", "time", "randomkey", "swapdb", "move"]
                    .contains(&name.as_str()));
            }
        }
    }

    /// On a shared server nothing reaches past the run's keys and connection: no PUBLISH (in a
    /// script either), no CONFIG, no CLIENT NO-EVICT, no SORT. (What
    /// an ACL user limited to `~ll:*`, no channels and no `@dangerous` may run; tests/security.)
    #[test]
    fn shared_cases_stay_within_their_keys() {
        for seed in 0..3000u64 {
            for c in case(&mut ChaCha8Rng::seed_from_u64(seed), false).commands {
                let line = c.line().to_ascii_lowercase();
                let name = c.name();
                assert!(
                    !["publish", "config", "sort", "sort_ro"].contains(&name.as_str()) && !line.contains("'publish'"),
                    "{line}"
                );
                assert!(!(name == "client" && line.contains("no-evict")), "{line}");
            }
        }
    }

    /// Every argument Redis reads as a key is one of the case's keys (sent behind its prefix), so
    /// a run on a shared server never touches a key of someone else's.
    #[test]
    fn keys_are_only_ever_the_cases_own() {
        use limitlab_emulator::cmd::{self, flags};
        for seed in 0..3000u64 {
            for private in [false, true] {
                for c in case(&mut ChaCha8Rng::seed_from_u64(seed), private).commands {
                    let args = c.materialise("P:");
                    let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                    let Some(spec) = cmd::lookup(refs[0]) else { continue };
                    let mut key_at: Vec<usize> = Vec::new();
                    if spec.has(flags::SCRIPTING) {
                        if spec.name.starts_with("eval") && refs.len() >= 3 {
                            // (More keys than arguments is refused before anything runs.)
                            if let Some(n) = std::str::from_utf8(refs[2]).ok().and_then(|s| s.parse::<usize>().ok()) {
                                if 3 + n <= refs.len() {
                                    key_at.extend(3..3 + n);
                                }
                            }
                        }
                    } else if spec.arity_ok(refs.len())
                        && !(spec.keys.step == 2 && refs.len() % 2 == 0)
                        && !(spec.name == "object" && refs[1].eq_ignore_ascii_case(b"help"))
                    {
                        // (OBJECT HELP takes no key.)
                        // (MSET with a key and no value is an arity error before any key is read.)
                        let keys = spec.keys.keys(&refs);
                        for (i, a) in refs.iter().enumerate().skip(1) {
                            if keys.iter().any(|k| std::ptr::eq(k.as_ptr(), a.as_ptr())) {
                                key_at.push(i);
                            }
                        }
                    }
                    for i in key_at {
                        assert!(
                            matches!(c.args[i], Arg::Key(_)),
                            "seed {seed}: argument {i} of `{}` is read as a key",
                            c.line()
                        );
                    }
                }
            }
        }
    }

    /// The CI-sized run sees transactions of every outcome, and database switches.
    #[test]
    fn transactions_of_every_outcome_come_up() {
        use limitlab_emulator::{Emulator, Reply};
        let (mut ran, mut watch_aborted, mut exec_aborted, mut moved) = (0, 0, 0, 0);
        for i in 0..2000u64 {
            let case = crate::verify::case_of(20240101, i, true);
            let mut emu = Emulator::new();
            for c in &case.commands {
                let args = c.materialise("");
                let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                let r = emu.execute(&refs);
                match (c.name().as_str(), &r) {
                    ("exec", Reply::Array(_)) => ran += 1,
                    ("exec", Reply::NilArray) => watch_aborted += 1,
                    ("exec", Reply::Error(e)) if e.starts_with("EXECABORT") => exec_aborted += 1,
                    ("select" | "swapdb" | "move", r) if !r.is_error() => moved += 1,
                    _ => {}
                }
            }
        }
        println!(
            "EXEC ran {ran}, aborted by WATCH {watch_aborted}, by EXECABORT {exec_aborted}; database switches {moved}"
        );
        assert!(ran > 200 && watch_aborted > 20 && exec_aborted > 20 && moved > 200);
    }
}
