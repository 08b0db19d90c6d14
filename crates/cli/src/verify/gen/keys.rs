//! Commands on keys of any type: existence, expiry and TTLs, renames and copies, KEYS, SCAN,
//! OBJECT, MEMORY USAGE, and SORT.
use rand::{Rng, RngCore};

use super::state::{Family, Gen, B, FAMILIES};
use super::values::{ABS_MS, ABS_SECS, BAD_NAMES, ECHOED_LONG, PATTERNS, SECS};
use crate::verify::model::{Fx, TtlKind, TtlRead};
use crate::verify::{Arg, Command};

impl<R: RngCore> Gen<'_, R> {
    pub(super) fn keys_cmd(&mut self) -> Command {
        let f = self.pick(&FAMILIES);
        let k = self.key(f);
        match self.rng.random_range(0..24) {
            0 | 1 => {
                let name = self.pick(&["DEL", "UNLINK", "EXISTS", "TOUCH"]);
                let mut b = B::new(name).key(&k);
                for _ in 0..self.rng.random_range(0..3) {
                    let k2 = self.key(f);
                    b = b.key(&k2);
                }
                b.build()
            }
            2 | 3 => {
                let (name, v, kind) = match self.rng.random_range(0..4) {
                    0 => ("EXPIRE", self.pick(SECS).to_string(), TtlKind::Secs),
                    1 => {
                        let (v, kind) = self.rel_ms();
                        ("PEXPIRE", v, kind)
                    }
                    2 => ("EXPIREAT", self.pick(ABS_SECS).to_string(), TtlKind::Abs),
                    _ => ("PEXPIREAT", self.pick(ABS_MS).to_string(), TtlKind::Abs),
                };
                let mut b = B::new(name).key(&k).lit(v).fx(Fx::Ttl(k.clone(), kind));
                let mut opts = Vec::new();
                if self.chance(35) {
                    opts.push(self.pick(&["NX", "XX", "GT", "LT", "gt", "NX XX", "a\r\nb", ECHOED_LONG]));
                    if self.chance(15) {
                        opts.push(self.pick(&["XX", "GT", "LT"]));
                    }
                }
                // GT and LT compare the new deadline with the key's: two deadlines relative to "now"
                // compare by how much time passed between them, so with a relative one the key may
                // only have had an absolute TTL (or none).
                if kind != TtlKind::Abs
                    && opts.iter().any(|o| o.eq_ignore_ascii_case("gt") || o.eq_ignore_ascii_case("lt"))
                {
                    b = b.fx(Fx::ReadTtl(k.clone(), TtlRead::Abs));
                }
                for o in opts {
                    b = b.lit(o);
                }
                b.build()
            }
            4 => B::new("TTL").key(&k).fx(Fx::ReadTtl(k.clone(), TtlRead::Secs)).build(),
            5 => B::new("PTTL").key(&k).fx(Fx::ReadTtl(k.clone(), TtlRead::Ms)).build(),
            6 => {
                let name = self.pick(&["EXPIRETIME", "PEXPIRETIME"]);
                B::new(name).key(&k).fx(Fx::ReadTtl(k.clone(), TtlRead::Abs)).build()
            }
            7 => B::new("PERSIST").key(&k).build(),
            8 | 9 => B::new("TYPE").key(&k).build(),
            10 | 11 => {
                let name = self.pick(&["RENAME", "RENAMENX"]);
                let k2 = self.key(f);
                B::new(name).key(&k).key(&k2).fx(Fx::CopyTtl { src: k.clone(), dst: k2.clone() }).build()
            }
            12 => {
                let k2 = self.key(f);
                let mut b = B::new("COPY").key(&k).key(&k2).fx(Fx::CopyTtl { src: k.clone(), dst: k2.clone() });
                if self.chance(40) {
                    b = b.lit("REPLACE");
                }
                if self.chance(15) {
                    let db = if self.private {
                        self.pick(&["0", "1", "2", "3", "15", "16", "-1", "x"])
                    } else {
                        self.pick(&["16", "-1", "x"])
                    };
                    b = b.lit("DB").lit(db);
                }
                b.build()
            }
            // KEYS walks the whole keyspace (other clients' keys too) and blocks the server meanwhile:
            // private servers only.
            13 | 14 if self.private => {
                let p = self.pick(PATTERNS);
                let mut b = B::new("KEYS");
                b.args.push(Arg::Pattern(p.to_string()));
                b.build()
            }
            15..=17 => {
                let sub = self.pick(&["ENCODING", "ENCODING", "ENCODING", "REFCOUNT", "FREQ", "encoding", "NOPE"]);
                let sub = if self.chance(10) { self.pick(BAD_NAMES) } else { sub };
                B::new("OBJECT").lit(sub).key(&k).build()
            }
            18 if self.chance(50) => B::new("OBJECT").lit(self.pick(&["HELP", "help"])).build(),
            // SORT and SORT_RO are `@dangerous` to ACLs (GET reads keys by name), which users
            // limited to their keys are often refused: private servers only.
            18 if self.private => self.sort_cmd(),
            20 | 21 => {
                let mut b = B::new("MEMORY").lit("USAGE").key(&k).fx(Fx::Measure(k.clone()));
                if self.chance(20) {
                    b = b.lit("SAMPLES").lit(self.pick(&["0", "1", "5", "-1", "x"]));
                }
                b.build()
            }
            19 if self.private => {
                let mut b = B::new("SCAN").lit("0");
                if self.chance(60) {
                    b.args.push(Arg::Lit(b"MATCH".to_vec()));
                    b.args.push(Arg::Pattern(self.pick(PATTERNS).to_string()));
                }
                b = b.lit("COUNT").lit("1000");
                if self.chance(30) {
                    b = b.lit("TYPE").lit(self.pick(&["string", "hash", "zset", "list", "set", "nosuch"]));
                }
                b.build()
            }
            _ => B::new("EXISTS").key(&k).build(),
        }
    }

    /// SORT and SORT_RO. Only ALPHA sorting: a numeric sort of a value out of a double's range
    /// leaves Redis's `errno` at ERANGE, which fails every later numeric SORT until something
    /// resets it (not modelled). `BY nosort` only with STORE (a set's own order is its hash
    /// table's, unless stored); no BY pattern (ALPHA ties by pattern are in qsort's order). SORT
    /// converts a sorted set to a skiplist.
    pub(super) fn sort_cmd(&mut self) -> Command {
        let f = self.pick(&[Family::List, Family::Set, Family::Zset, Family::List]);
        let k = self.key(f);
        let ro = self.chance(25);
        let mut b = B::new(if ro { "SORT_RO" } else { "SORT" }).key(&k).fx(Fx::Unmeasurable(k.clone()));
        let store = !ro && self.chance(30) || ro && self.chance(5);
        if self.chance(95) {
            b = b.lit("ALPHA");
        }
        if self.chance(40) {
            b = b.lit(self.pick(&["DESC", "ASC", "desc"]));
        }
        if self.chance(30) {
            let (o, c) = (self.pick(&["0", "1", "2", "-1", "10", "x"]), self.pick(&["0", "1", "2", "-1", "5"]));
            b = b.lit("LIMIT").lit(o).lit(c);
        }
        if store && self.chance(40) {
            b = b.lit("BY").lit("nosort");
        }
        for _ in 0..self.rng.random_range(0..3) {
            b = b.lit("GET");
            if self.chance(50) {
                b = b.lit("#");
            } else {
                b.args.push(Arg::Pattern(self.pick(&["k*", "*", "k*->a", "nomatch*", "k"]).to_string()));
            }
        }
        if store {
            let dst = self.key(Family::List);
            b = b.lit("STORE").key(&dst);
        }
        b.build()
    }
}
