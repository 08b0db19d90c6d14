//! Commands on the connection and the server: transactions and WATCH, databases, PING and ECHO,
//! SCRIPT, CLIENT, CONFIG and COMMAND.
use rand::{Rng, RngCore};

use super::scripts::JUNK_SHA;
use super::state::{Gen, B, FAMILIES};
use super::values::{BAD_NAMES, ECHOED_LONG};
use crate::verify::model::Fx;
use crate::verify::Command;

impl<R: RngCore> Gen<'_, R> {
    /// MULTI, WATCH, UNWATCH, and the errors around them (EXEC or DISCARD without MULTI, MULTI or
    /// WATCH inside one, a command refused while queueing).
    pub(super) fn transaction_cmd(&mut self) -> Command {
        let watch = |g: &mut Self| {
            let mut b = B::new(if g.chance(90) { "WATCH" } else { "watch" });
            for _ in 0..g.rng.random_range(1..=3) {
                let f = g.pick(&FAMILIES);
                let k = g.key(f);
                b = b.key(&k);
                g.watched = Some((k, f));
            }
            g.touch_next = true;
            b.build()
        };
        if !self.in_multi {
            match self.rng.random_range(0..20) {
                0..=6 => {
                    self.in_multi = true;
                    B::new(self.pick(&["MULTI", "MULTI", "multi"])).fx(Fx::Transaction(true)).build()
                }
                7..=15 => watch(self),
                16 => B::new("UNWATCH").build(),
                17 => B::new("EXEC").fx(Fx::Transaction(false)).build(),
                18 => B::new("DISCARD").fx(Fx::Transaction(false)).build(),
                _ => B::new("WAIT").lit(self.pick(&["0", "x", "-1"])).lit(self.pick(&["0", "5", "x", "-1"])).build(),
            }
        } else {
            match self.rng.random_range(0..10) {
                0 | 1 => watch(self),
                2 => B::new("MULTI").fx(Fx::Transaction(true)).build(),
                3 | 4 => B::new("UNWATCH").build(),
                // Refused while queueing: the transaction will abort.
                5 => B::new(self.pick(&["NOSUCHCMD", "nosuch"])).build(),
                6 => B::new(self.pick(&["GET", "SET", "HSET", "ZADD", "INCR"])).build(),
                // Does not block inside a transaction.
                // (1 ms: should shrinking leave it out of its MULTI, it blocks for that long.)
                7 => B::new("WAIT").lit(self.pick(&["0", "1", "2"])).lit("1").build(),
                _ => self.end_transaction(),
            }
        }
    }

    /// EXEC (mostly) or DISCARD.
    pub(super) fn end_transaction(&mut self) -> Command {
        self.in_multi = false;
        self.watched = None;
        B::new(self.pick(&["EXEC", "EXEC", "EXEC", "exec", "DISCARD"])).fx(Fx::Transaction(false)).build()
    }

    /// The databases, on a private server: SELECT, SWAPDB, MOVE, FLUSHDB, DBSIZE (COPY .. DB n is
    /// with the key commands). Mostly databases 0 to 3, so that keys meet again.
    pub(super) fn database_cmd(&mut self) -> Command {
        const DBS: &[&str] = &["0", "0", "1", "2", "3", "15"];
        const BAD_DBS: &[&str] = &["16", "-1", "x", "4294967296"];
        let db = |g: &mut Self| if g.chance(90) { g.pick(DBS) } else { g.pick(BAD_DBS) };
        match self.rng.random_range(0..12) {
            0..=3 => {
                let d = db(self);
                B::new("SELECT").lit(d).build()
            }
            4 | 5 => {
                let (a, b) = (db(self), db(self));
                B::new("SWAPDB").lit(a).lit(b).build()
            }
            6..=8 => {
                let f = self.pick(&FAMILIES);
                let k = self.key(f);
                let d = db(self);
                // (The model's TTL kinds are per key name, whatever the database: nothing to add.)
                B::new("MOVE").key(&k).lit(d).build()
            }
            9 if self.chance(40) => B::new("FLUSHDB").build(),
            _ => B::new("DBSIZE").fx(Fx::CountKeys).build(),
        }
    }

    pub(super) fn server_cmd(&mut self) -> Command {
        if self.chance(35) {
            return self.client_server_cmd();
        }
        match self.rng.random_range(0..11) {
            10 => {
                // Unknown to Redis and to the emulator: the error echoes name and arguments.
                let mut b = B::new(self.pick(&["NOSUCHCMD", "no\nsuch", ECHOED_LONG]));
                for _ in 0..self.rng.random_range(0..3) {
                    b = b.lit(self.pick(BAD_NAMES));
                }
                b.build()
            }
            0 => B::new("PING").build(),
            1 => B::new("PING").lit(self.value()).build(),
            2 => B::new("ECHO").lit(self.value()).build(),
            // SELECT 0 (or COPY .. DB 0) on a server whose URL names another database would move
            // the session out of the database the cleanup looks at: shared servers only get
            // indexes that fail.
            3 => {
                let db = if self.private {
                    self.pick(&["0", "0", "1", "2", "15", "16", "-1", "x", "99999999999"])
                } else {
                    self.pick(&["16", "-1", "x", "99999999999"])
                };
                B::new("SELECT").lit(db).build()
            }
            4 | 5 if self.private => B::new("DBSIZE").fx(Fx::CountKeys).build(),
            6 if self.private && self.chance(30) => {
                let mut b = B::new(self.pick(&["FLUSHALL", "FLUSHDB"]));
                if self.chance(40) {
                    b = b.lit(self.pick(&["SYNC", "ASYNC", "x"]));
                }
                b.build()
            }
            7 => {
                let sub = self.pick(&["KILL", "HELP", "nope", "LOAD", "EXISTS", "DEBUG", "a\nb", ECHOED_LONG]);
                B::new("SCRIPT").lit(sub).build()
            }
            8 if self.private && self.chance(30) => {
                let mut b = B::new("SCRIPT").lit("FLUSH").fx(Fx::Unload);
                if self.chance(30) {
                    b = b.lit(self.pick(&["SYNC", "ASYNC", "x"]));
                }
                b.build()
            }
            _ => {
                let mut b = B::new("SCRIPT").lit("EXISTS");
                for _ in 0..self.rng.random_range(1..3) {
                    let sha = if !self.loaded.is_empty() && self.chance(60) {
                        self.pick_loaded()
                    } else {
                        JUNK_SHA.to_string()
                    };
                    if sha != JUNK_SHA {
                        b = b.fx(Fx::NeedLoaded(sha.clone()));
                    }
                    b = b.lit(sha);
                }
                b.build()
            }
        }
    }

    /// What clients send around their scripts: PUBLISH, CONFIG GET of one parameter, CLIENT
    /// SETNAME/GETNAME/NO-EVICT/HELP, COMMAND INFO and DOCS of commands without subcommands (a
    /// container's subcommands come in Redis's hash order), and their errors.
    ///
    /// On a shared server only what stays within the run's own connection and keys: no PUBLISH
    /// (other clients' subscribers would get it), no CONFIG and no CLIENT NO-EVICT (server
    /// settings; an ACL user without `@dangerous` is refused them).
    pub(super) fn client_server_cmd(&mut self) -> Command {
        let pick = if self.private { self.rng.random_range(0..8) } else { self.pick(&[2, 3, 5, 6]) };
        match pick {
            0 => {
                let mut b = B::new("PUBLISH").lit(self.pick(&["ch", "rate:events"]));
                if self.chance(90) {
                    b = b.lit(self.value());
                }
                b.build()
            }
            1 => {
                let p = self.pick(&[
                    "maxmemory",
                    "maxmemory-policy",
                    "lua-time-limit",
                    "busy-reply-threshold",
                    "databases",
                    "cluster-enabled",
                    "MAXMEMORY",
                    "maxmemory-p*",
                    "databas?s",
                    "nosuch",
                    "hash-max-ziplist-entries",
                ]);
                B::new("CONFIG").lit("GET").lit(p).build()
            }
            2 => {
                let name = self.pick(&["limiter", "", "a b", "app-1", "x"]);
                B::new("CLIENT").lit("SETNAME").lit(name).build()
            }
            3 => B::new("CLIENT").lit(self.pick(&["GETNAME", "getname", "HELP", "NOPE", "SETINFO"])).build(),
            4 => B::new("CLIENT").lit("NO-EVICT").lit(self.pick(&["on", "OFF", "maybe"])).build(),
            5 | 6 => {
                let sub = self.pick(&["INFO", "DOCS", "info"]);
                let name = self.pick(&[
                    "get",
                    "set",
                    "incrby",
                    "pexpire",
                    "zadd",
                    "lpos",
                    "sort",
                    "zunionstore",
                    "publish",
                    "nosuch",
                    "hmget",
                ]);
                B::new("COMMAND").lit(sub).lit(name).build()
            }
            _ => B::new("CONFIG").lit(self.pick(&["HELP", "REWRITE", "NOPE", "GET"])).build(),
        }
    }
}
