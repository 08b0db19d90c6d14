//! What makes a generated case deterministic, checked over a whole command sequence: the rules a
//! case must keep so that the emulator (clock frozen during a case) and a real server (clock
//! running) must give byte-identical replies.
//!
//! The generator annotates every command with its effects ([`Fx`]); [`Model`] walks a sequence and
//! says whether it is safe. The shrinker uses the same check, so removing commands can never turn
//! a case into one whose replies legitimately depend on timing (say, a `PTTL` that used to follow a
//! `PERSIST` that was removed).
//!
//! The rules:
//! - **TTLs.** Every TTL a case sets is at least 100 s (or zero/negative, which deletes the key),
//!   so nothing expires while a case runs. A key's TTL is one of three kinds: whole seconds from
//!   now ([`TtlKind::Secs`], e.g. `EXPIRE k 100` or `PEXPIRE k 100000`), an absolute time far in
//!   the past or future ([`TtlKind::Abs`], `EXPIREAT k 4102444800`), or anything else
//!   ([`TtlKind::Ms`]: `PEXPIRE k 100500`, and whatever a script sets). `TTL` rounds to seconds, so
//!   it is exact on keys that may only have no TTL or a seconds TTL; `EXPIRETIME`/`PEXPIRETIME` are
//!   exact on keys that may only have no TTL or an absolute one; `PTTL` only on keys that never had
//!   one. The model tracks, per key, every kind it may have had (a union that only grows: safe
//!   whatever the earlier commands did or failed to do).
//! - **Counting keys.** `SET k v PXAT 1` leaves a key that is already expired; Redis drops it when
//!   something looks it up or its expiry cycle samples it, and `DBSIZE` counts it until then. So
//!   `DBSIZE` ([`Fx::CountKeys`]) only follows cases where no key had an absolute TTL.
//! - **Measuring.** `MEMORY USAGE` is exact except on a skiplist-encoded sorted set (its nodes get
//!   random levels), on a hashtable-encoded set (mid-rehash, per process hash seed), on a stream (the model only estimates it) and on a key that already expired
//!   ([`Fx::Measure`], [`Fx::Unmeasurable`]).
//! - **Lex ranges** ([`Fx::LexRange`]) only on keys that cannot be skiplists: over mixed scores
//!   a skiplist's answer depends on its random levels, so Redis differs from itself.
//! - **Scripts the server may already know.** On a server other people use, the script cache may
//!   hold anything, so `EVALSHA` and `SCRIPT EXISTS` only name scripts the same case loaded before
//!   (by `SCRIPT LOAD`, or by an `EVAL` that compiles), or digests no script has. A private server
//!   starts every case with `SCRIPT FLUSH`, where this rule is not needed. Between MULTI and
//!   EXEC/DISCARD ([`Fx::Transaction`]) nothing counts as loaded: the transaction may be discarded.
use std::collections::{HashMap, HashSet};

/// One kind of TTL a key may carry (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TtlKind {
    /// Relative, a whole number of seconds (at least 100).
    Secs,
    /// Absolute, far from now.
    Abs,
    /// Anything else: millisecond-relative, or set by a script.
    Ms,
}

impl TtlKind {
    const fn bit(self) -> u8 {
        match self {
            TtlKind::Secs => 1,
            TtlKind::Abs => 2,
            TtlKind::Ms => 4,
        }
    }
}

/// Every TTL kind.
pub const ANY_TTL: u8 = 7;

/// Which readers of a key's TTL are exact for which kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TtlRead {
    /// `TTL`: seconds, rounded.
    Secs,
    /// `EXPIRETIME`, `PEXPIRETIME`: the absolute deadline.
    Abs,
    /// `PTTL`: milliseconds left.
    Ms,
}

impl TtlRead {
    /// The kinds this reader tolerates (no TTL is always fine).
    fn allowed(self) -> u8 {
        match self {
            TtlRead::Secs => TtlKind::Secs.bit(),
            TtlRead::Abs => TtlKind::Abs.bit(),
            TtlRead::Ms => 0,
        }
    }
}

/// One effect or requirement of a generated command, on the case's logical key names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fx {
    /// The key may now have a TTL of this kind.
    Ttl(String, TtlKind),
    /// The key may have any TTL (a script touched it).
    AnyTtl(String),
    /// `dst` may now carry any TTL `src` had, and its value (RENAME, COPY).
    CopyTtl { src: String, dst: String },
    /// Reads the key's TTL: only exact for some kinds.
    ReadTtl(String, TtlRead),
    /// Loads this digest into the script cache (SCRIPT LOAD, EVAL of a body that compiles).
    Load(String),
    /// Empties the script cache (SCRIPT FLUSH; private servers only).
    Unload,
    /// Needs this digest loaded earlier in the case (EVALSHA, SCRIPT EXISTS) on a shared server.
    NeedLoaded(String),
    /// Counts keys without looking at them (DBSIZE): a key given an absolute expiry in the past by
    /// `SET .. EXAT/PXAT` stays in Redis's count until its expiry cycle gets to it, so no key may
    /// have had an absolute TTL.
    CountKeys,
    /// The key may hold a value whose MEMORY USAGE the model cannot give exactly: a stream, a
    /// sorted set encoded as a skiplist (past 128 members, or a member past 64
    /// bytes), whose nodes have random levels, or a set encoded as a hashtable (Redis's own
    /// figure depends on its hash seed while the table is rehashed).
    Unmeasurable(String),
    /// Measures the key (MEMORY USAGE): exact only for a key that cannot be a skiplist (random node
    /// levels) and never had an absolute TTL (MEMORY USAGE reports an expired key until Redis's
    /// expiry cycle reclaims it).
    Measure(String),
    /// A lex range over the key (ZRANGEBYLEX, ZLEXCOUNT, ZRANGE .. BYLEX, ...): exact only for a
    /// key that cannot be a skiplist. Over members of different scores a lex range is undefined,
    /// and a skiplist answers it by walking its random levels, so Redis itself answers the same
    /// commands differently from run to run (a listpack is scanned in order: deterministic).
    LexRange(String),
    /// MULTI (true) or EXEC/DISCARD (false): in between, commands are queued and may never run.
    Transaction(bool),
}

/// The state [`Fx`] are checked against while walking a case.
#[derive(Clone, Debug, Default)]
pub struct Model {
    ttl: HashMap<String, u8>,
    unmeasurable: HashSet<String>,
    loaded: HashSet<String>,
    /// A private server, flushed before every case: script-cache rules do not apply.
    private: bool,
    /// Inside MULTI: what is queued may be discarded.
    in_multi: bool,
}

impl Model {
    pub fn new(private: bool) -> Model {
        Model { private, ..Model::default() }
    }

    /// The TTL kinds the key may have had so far.
    pub fn ttl_kinds(&self, key: &str) -> u8 {
        self.ttl.get(key).copied().unwrap_or(0)
    }

    /// Whether a TTL read of this kind on `key` is exact now.
    pub fn can_read(&self, key: &str, how: TtlRead) -> bool {
        self.ttl_kinds(key) & !how.allowed() == 0
    }

    /// Whether `sha` is surely in the script cache (always true on a private server, where the case
    /// starts from a known empty cache and either outcome is deterministic).
    pub fn is_loaded(&self, sha: &str) -> bool {
        self.private || self.loaded.contains(sha)
    }

    /// Whether every requirement of `fx` holds now.
    pub fn allows(&self, fx: &[Fx]) -> bool {
        fx.iter().all(|f| match f {
            Fx::ReadTtl(k, how) => self.can_read(k, *how),
            Fx::NeedLoaded(sha) => self.is_loaded(sha),
            Fx::CountKeys => self.ttl.values().all(|k| k & TtlKind::Abs.bit() == 0),
            Fx::Measure(k) => !self.unmeasurable.contains(k) && self.ttl_kinds(k) & TtlKind::Abs.bit() == 0,
            Fx::LexRange(k) => !self.unmeasurable.contains(k),
            _ => true,
        })
    }

    /// Applies the effects of one command.
    pub fn apply(&mut self, fx: &[Fx]) {
        for f in fx {
            match f {
                Fx::Ttl(k, kind) => *self.ttl.entry(k.clone()).or_default() |= kind.bit(),
                Fx::AnyTtl(k) => *self.ttl.entry(k.clone()).or_default() |= ANY_TTL,
                Fx::CopyTtl { src, dst } => {
                    let s = self.ttl_kinds(src);
                    *self.ttl.entry(dst.clone()).or_default() |= s;
                    if self.unmeasurable.contains(src) {
                        self.unmeasurable.insert(dst.clone());
                    }
                }
                Fx::Unmeasurable(k) => {
                    self.unmeasurable.insert(k.clone());
                }
                Fx::Load(sha) => {
                    if !self.in_multi {
                        self.loaded.insert(sha.clone());
                    }
                }
                Fx::Transaction(on) => self.in_multi = *on,
                Fx::Unload => self.loaded.clear(),
                Fx::ReadTtl(..) | Fx::NeedLoaded(_) | Fx::CountKeys | Fx::Measure(_) | Fx::LexRange(_) => {}
            }
        }
    }

    /// Whether a whole sequence of commands (their effects) is safe from a fresh start.
    pub fn check<'a>(private: bool, seq: impl IntoIterator<Item = &'a [Fx]>) -> bool {
        let mut m = Model::new(private);
        for fx in seq {
            if !m.allows(fx) {
                return false;
            }
            m.apply(fx);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(s: &str) -> String {
        s.to_string()
    }

    #[test]
    fn ttl_reads_follow_the_kinds_a_key_may_have() {
        let set_secs = vec![Fx::Ttl(k("a"), TtlKind::Secs)];
        let ttl = vec![Fx::ReadTtl(k("a"), TtlRead::Secs)];
        let pttl = vec![Fx::ReadTtl(k("a"), TtlRead::Ms)];
        let exptime = vec![Fx::ReadTtl(k("a"), TtlRead::Abs)];
        assert!(Model::check(false, [pttl.as_slice(), ttl.as_slice(), exptime.as_slice()]));
        assert!(Model::check(false, [set_secs.as_slice(), ttl.as_slice()]));
        assert!(!Model::check(false, [set_secs.as_slice(), pttl.as_slice()]));
        assert!(!Model::check(false, [set_secs.as_slice(), exptime.as_slice()]));
        let rename = vec![Fx::CopyTtl { src: k("a"), dst: k("b") }];
        let ttl_b = vec![Fx::ReadTtl(k("b"), TtlRead::Abs)];
        assert!(!Model::check(false, [set_secs.as_slice(), rename.as_slice(), ttl_b.as_slice()]));
        assert!(Model::check(false, [rename.as_slice(), ttl_b.as_slice()]));
    }

    #[test]
    fn evalsha_needs_a_load_on_shared_servers_only() {
        let load = vec![Fx::Load(k("abc"))];
        let call = vec![Fx::NeedLoaded(k("abc"))];
        assert!(!Model::check(false, [call.as_slice()]));
        assert!(Model::check(false, [load.as_slice(), call.as_slice()]));
        assert!(!Model::check(false, [load.as_slice(), [Fx::Unload].as_slice(), call.as_slice()]));
        assert!(Model::check(true, [call.as_slice()]));
        // A load queued in a transaction may never happen.
        let (multi, exec) = ([Fx::Transaction(true)], [Fx::Transaction(false)]);
        assert!(!Model::check(false, [&multi[..], load.as_slice(), &exec[..], call.as_slice()]));
        assert!(Model::check(false, [&multi[..], &exec[..], load.as_slice(), call.as_slice()]));
    }
}
