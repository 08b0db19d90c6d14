//! Commands on the string keys: plain strings and counters, bitmaps and bitfields, HyperLogLogs.
use rand::{Rng, RngCore};

use super::state::{Family, Gen, B};
use super::values::{FLOATS, INCRS, SECS};
use crate::verify::model::{Fx, TtlKind};
use crate::verify::Command;

impl<R: RngCore> Gen<'_, R> {
    pub(super) fn string_cmd(&mut self) -> Command {
        let k = self.key(Family::String);
        match self.rng.random_range(0..26) {
            0 | 1 => B::new("GET").key(&k).build(),
            2..=4 => {
                let v = self.value();
                let mut b = B::new("SET").key(&k).lit(v);
                let mut opts: Vec<Vec<u8>> = Vec::new();
                let mut fx = Vec::new();
                if self.chance(30) {
                    opts.push(self.pick(&[&b"NX"[..], b"XX", b"nx"]).to_vec());
                }
                if self.chance(20) {
                    opts.push(b"GET".to_vec());
                }
                if self.chance(50) {
                    if self.chance(15) {
                        opts.push(b"KEEPTTL".to_vec());
                    } else {
                        let (o, v, kind) = self.expiry_option();
                        opts.push(o.as_bytes().to_vec());
                        opts.push(v.into_bytes());
                        fx.push(Fx::Ttl(k.clone(), kind));
                    }
                }
                // Options in any order (pairs kept together), sometimes a conflicting extra.
                if opts.len() > 1 && self.chance(30) {
                    opts.swap(0, 1);
                }
                if self.chance(5) {
                    opts.push(self.pick(&[&b"NX"[..], b"KEEPTTL", b"EX", b"XX"]).to_vec());
                }
                for o in opts {
                    b = b.lit(o);
                }
                for f in fx {
                    b = b.fx(f);
                }
                b.build()
            }
            5 => B::new("SETNX").key(&k).lit(self.value()).build(),
            6 => {
                let s = self.pick(SECS);
                let v = self.value();
                B::new("SETEX").key(&k).lit(s).lit(v).fx(Fx::Ttl(k.clone(), TtlKind::Secs)).build()
            }
            7 => {
                let (ms, kind) = self.rel_ms();
                let v = self.value();
                B::new("PSETEX").key(&k).lit(ms).lit(v).fx(Fx::Ttl(k.clone(), kind)).build()
            }
            8 => {
                let mut b = B::new("GETEX").key(&k);
                if self.chance(70) {
                    if self.chance(20) {
                        b = b.lit("PERSIST");
                    } else {
                        let (o, v, kind) = self.expiry_option();
                        b = b.lit(o).lit(v).fx(Fx::Ttl(k.clone(), kind));
                    }
                }
                b.build()
            }
            9 => B::new("GETSET").key(&k).lit(self.value()).build(),
            10 => B::new("GETDEL").key(&k).build(),
            11 => {
                let mut b = B::new("MGET");
                for _ in 0..self.rng.random_range(1..4) {
                    let k = self.key(Family::String);
                    b = b.key(&k);
                }
                b.build()
            }
            12 | 13 => {
                let name = if self.chance(70) { "MSET" } else { "MSETNX" };
                let mut b = B::new(name);
                for _ in 0..self.rng.random_range(1..4) {
                    let k = self.key(Family::String);
                    let v = self.value();
                    b = b.key(&k).lit(v);
                }
                b.build()
            }
            14 => B::new("APPEND").key(&k).lit(self.value()).build(),
            15 => B::new("STRLEN").key(&k).build(),
            16 => {
                let name = if self.chance(80) { "GETRANGE" } else { "SUBSTR" };
                let (s, e) = (self.index(), self.index());
                B::new(name).key(&k).lit(s).lit(e).build()
            }
            17 => {
                let off = self.pick(&["0", "1", "3", "10", "100", "-1", "x", "536870912", "1000000000"]);
                let v = self.value();
                B::new("SETRANGE").key(&k).lit(off).lit(v).build()
            }
            18 => {
                let k2 = self.key(Family::String);
                let mut b = B::new("LCS").key(&k).key(&k2);
                if self.chance(30) {
                    b = b.lit("LEN");
                }
                if self.chance(40) {
                    b = b.lit("IDX");
                    if self.chance(50) {
                        let n = self.pick(&["0", "1", "2", "3", "-1", "x"]);
                        b = b.lit("MINMATCHLEN").lit(n);
                    }
                    if self.chance(50) {
                        b = b.lit("WITHMATCHLEN");
                    }
                }
                b.build()
            }
            19 | 20 => B::new(self.pick(&["INCR", "DECR"])).key(&k).build(),
            21 | 22 => {
                let name = self.pick(&["INCRBY", "DECRBY"]);
                let n = if self.chance(50) { self.pick(INCRS).to_string() } else { self.int() };
                B::new(name).key(&k).lit(n).build()
            }
            23 | 24 => {
                let f = self.pick(FLOATS);
                B::new("INCRBYFLOAT").key(&k).lit(f).build()
            }
            _ => {
                // A string built by APPEND or SETRANGE keeps the raw encoding.
                let v = self.short();
                B::new("SET").key(&k).lit(v).build()
            }
        }
    }

    /// Bitmaps and bitfields on the string keys: offsets stay small (a valid offset near the 512 MB
    /// limit would make both servers allocate it), with the invalid ones around the limit.
    pub(super) fn bits_cmd(&mut self) -> Command {
        const OFFSETS: &[&str] = &["0", "1", "7", "8", "15", "63", "64", "100", "-1", "x", "", "4294967296", "01"];
        const BIT_TYPES: &[&str] = &["u1", "u8", "i8", "u16", "i5", "u63", "i64", "u64", "i65", "x8", "u0", "U8"];
        const FIELD_OFFSETS: &[&str] = &["0", "3", "8", "#0", "#1", "#7", "100", "-1", "#-1", "x", "#"];
        const FIELD_VALUES: &[&str] = &[
            "0",
            "1",
            "-1",
            "100",
            "127",
            "128",
            "255",
            "256",
            "-129",
            "9223372036854775807",
            "-9223372036854775808",
            "x",
            "1.5",
        ];
        let k = self.key(Family::String);
        let offset = |g: &mut Self| -> String {
            if g.chance(60) {
                g.rng.random_range(0i64..200).to_string()
            } else {
                g.pick(OFFSETS).to_string()
            }
        };
        let range = |g: &mut Self, b: B| -> B {
            let b = b.lit(g.index()).lit(g.index());
            if g.chance(40) {
                b.lit(g.pick(&["BIT", "BYTE", "bit", "nope"]))
            } else {
                b
            }
        };
        match self.rng.random_range(0..14) {
            0..=2 => {
                let (o, v) = (offset(self), self.pick(&["0", "1", "1", "2", "-1", "x"]));
                B::new("SETBIT").key(&k).lit(o).lit(v).build()
            }
            3 | 4 => {
                let o = offset(self);
                B::new("GETBIT").key(&k).lit(o).build()
            }
            5 | 6 => {
                let b = B::new("BITCOUNT").key(&k);
                if self.chance(60) {
                    range(self, b).build()
                } else {
                    b.build()
                }
            }
            7 | 8 => {
                let bit = self.pick(&["0", "1", "1", "0", "2", "x"]);
                let mut b = B::new("BITPOS").key(&k).lit(bit);
                match self.rng.random_range(0..3) {
                    0 => {}
                    1 => b = b.lit(self.index()),
                    _ => b = range(self, b),
                }
                b.build()
            }
            9 => {
                let op = self.pick(&["AND", "OR", "XOR", "NOT", "not", "NOR"]);
                let dest = self.key(Family::String);
                let mut b = B::new("BITOP").lit(op).key(&dest);
                for _ in 0..self.rng.random_range(1..4) {
                    let src = self.key(Family::String);
                    b = b.key(&src);
                }
                b.build()
            }
            _ => {
                let ro = self.chance(25);
                let mut b = B::new(if ro { "BITFIELD_RO" } else { "BITFIELD" }).key(&k);
                for _ in 0..self.rng.random_range(1..5) {
                    let ty = if self.chance(70) {
                        let bits = self.rng.random_range(1..=16);
                        format!("{}{bits}", self.pick(&["u", "i"]))
                    } else {
                        self.pick(BIT_TYPES).to_string()
                    };
                    let off = if self.chance(60) {
                        self.rng.random_range(0i64..120).to_string()
                    } else {
                        self.pick(FIELD_OFFSETS).to_string()
                    };
                    let val = if self.chance(50) {
                        self.rng.random_range(-300i64..300).to_string()
                    } else {
                        self.pick(FIELD_VALUES).to_string()
                    };
                    b = match self.rng.random_range(0..10) {
                        0..=3 => b.lit("GET").lit(ty).lit(off),
                        4 | 5 => b.lit("SET").lit(ty).lit(off).lit(val),
                        6 | 7 => b.lit("INCRBY").lit(ty).lit(off).lit(val),
                        8 => b.lit("OVERFLOW").lit(self.pick(&["WRAP", "SAT", "FAIL", "fail", "nope"])),
                        _ => b.lit(self.pick(&["GET", "SET", "FOO", "OVERFLOW"])),
                    };
                }
                b.build()
            }
        }
    }

    /// HyperLogLogs: PFADD of a few elements from a pool (or a few hundred, past the sparse limit),
    /// PFCOUNT of one to three keys, PFMERGE, and GET of the representation itself.
    pub(super) fn hll_cmd(&mut self) -> Command {
        let k = self.key(Family::Hll);
        let element = |g: &mut Self| -> String {
            if g.chance(50) {
                format!("e{}", g.rng.random_range(0..2000))
            } else {
                g.member()
            }
        };
        match self.rng.random_range(0..12) {
            0..=3 => {
                let mut b = B::new("PFADD").key(&k);
                let n = if self.chance(4) { self.rng.random_range(200..900) } else { self.rng.random_range(0..5) };
                let base = self.rng.random_range(0..10_000);
                for i in 0..n {
                    b = if n > 5 { b.lit(format!("x{}", base + i)) } else { b.lit(element(self)) };
                }
                b.build()
            }
            4..=6 => {
                let mut b = B::new("PFCOUNT").key(&k);
                for _ in 0..self.rng.random_range(0..3) {
                    let other = self.key(Family::Hll);
                    b = b.key(&other);
                }
                b.build()
            }
            7 | 8 => {
                let dest = self.key(Family::Hll);
                let mut b = B::new("PFMERGE").key(&dest);
                for _ in 0..self.rng.random_range(0..3) {
                    let src = self.key(Family::Hll);
                    b = b.key(&src);
                }
                b.build()
            }
            9 => B::new("GET").key(&k).build(),
            10 => B::new("STRLEN").key(&k).build(),
            _ => B::new("OBJECT").lit("ENCODING").key(&k).build(),
        }
    }
}
