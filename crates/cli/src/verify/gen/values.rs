//! Pools of argument values (edge spellings of numbers, blanks, binary bytes, TTLs, patterns) and
//! the generator's draws from them: keys, values, members, scores, indexes and expiry options.
use rand::{Rng, RngCore};

use super::state::{Family, Gen};
use crate::verify::model::TtlKind;

/// Values for strings, list elements and set/zset members: edge spellings of numbers, blanks,
/// binary and long strings. Only values are ever non-ASCII (so no error text echoes a non-UTF-8
/// byte back, which the redis crate could not read).
const VALUES: &[&[u8]] = &[
    b"",
    b"a",
    b"b",
    b"hello",
    b"Hello World",
    b"0",
    b"1",
    b"-1",
    b"7",
    b"42",
    b"100",
    b"-100",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"9223372036854775808",
    b"3.14",
    b"-0.5",
    b"1e3",
    b"1e-5",
    b"inf",
    b"-inf",
    b"+inf",
    b"nan",
    b" 1",
    b"1 ",
    b"0x1f",
    b"010",
    b"+5",
    b"00",
    b"-0",
    b"1.0",
    b"1.",
    b".5",
    b"1e400",
    b"\x00\xff\x01",
    b"ab\r\nc",
    b"h\xc3\xa9llo",
    b"12345678901234567890",
    b"a b c",
    b"\"q\"",
    b"'",
    b"\\",
    b"0.1",
    b"17179869184",
    b"-17179869185",
    b"4294967296",
    b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
];

/// Short ASCII values: hash fields' values (a hash stays a listpack, in insertion order), and any
/// argument that might be echoed in an error.
const SHORT: &[&str] = &[
    "",
    "a",
    "b",
    "v",
    "hello",
    "0",
    "1",
    "-1",
    "2",
    "10",
    "42",
    "-7",
    "3.5",
    "1e3",
    "inf",
    "-inf",
    "nan",
    "9223372036854775807",
    "-9223372036854775808",
    "1.5",
    "x y",
    "0.1",
    "5.0e3",
    "abc",
    "17179869184",
];

const INTS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "-2",
    "3",
    "5",
    "10",
    "-10",
    "100",
    "-100",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "x",
    "1.5",
    "",
    " 1",
    "+1",
    "01",
    "-0",
];

pub(super) const INCRS: &[&str] =
    &["1", "-1", "0", "5", "100", "-100", "9223372036854775807", "-9223372036854775808", "a", "1.5", ""];

/// Increments for hash fields: a value past 64 bytes (HINCRBYFLOAT prints 1e308 in full) turns the
/// hash into a hashtable, whose order Redis randomises per process.
pub(super) const HASH_FLOATS: &[&str] = &[
    "1",
    "1.5",
    "-2.5",
    "0.1",
    "-0",
    "1e10",
    "-1e-300",
    "inf",
    "-inf",
    "+inf",
    "nan",
    "abc",
    "3",
    "1.0000000000000001",
    "0x10",
    " 1",
    "",
    "5.0e3",
    "17179869184",
    "0.3333333333333333",
];

pub(super) const FLOATS: &[&str] = &[
    "1",
    "1.5",
    "-2.5",
    "0.1",
    "-0",
    "1e10",
    "1e308",
    "1e309",
    "-1e-300",
    "inf",
    "-inf",
    "+inf",
    "nan",
    "abc",
    "3",
    "1.0000000000000001",
    "0x10",
    " 1",
    "",
    "5.0e3",
    "17179869184",
    "0.3333333333333333",
];

pub(super) const FIELDS: &[&str] = &["f1", "f2", "f3", "a", "b", "n", "w", "c", "p", "t", "tok", "ts", ""];

const MEMBERS: &[&str] = &["a", "b", "c", "d", "m1", "m2", "0", "1", "-1", "10", "1:1", "x y", "", "zz"];

const SCORES: &[&str] = &[
    "0",
    "1",
    "-1",
    "1.5",
    "-2.5",
    "2",
    "3",
    "1e10",
    "inf",
    "-inf",
    "+inf",
    "nan",
    "abc",
    "0.1",
    "1e-300",
    "9007199254740993",
    "-0",
    "(1",
];

pub(super) const SCORE_BOUNDS: &[&str] =
    &["-inf", "+inf", "inf", "(1", "1", "(1.5", "2", "0", "10", "(inf", "-1", "(-inf", "x", "[1", "1e1", ""];

pub(super) const LEX_BOUNDS: &[&str] = &["-", "+", "[a", "(a", "[b", "(c", "[m", "(z", "a", "[", "(", "[1", ""];

const INDEXES: &[&str] = &["0", "1", "-1", "2", "-2", "3", "10", "-10", "100", "-100", "9223372036854775807", "x"];

pub(super) const PATTERNS: &[&str] =
    &["*", "k*", "k?", "rate:*", "*{u1}*", "[a-k]*", "k[12]", "nomatch*", "\\*", "*1*", "?"];

/// Relative seconds: long enough to outlast a case, zero and negatives (delete), and errors.
pub(super) const SECS: &[&str] = &[
    "100",
    "1000",
    "86400",
    "31536000",
    "0",
    "-1",
    "-100",
    "abc",
    "1.5",
    "",
    "9223372036854775807",
    "9223372036854775",
    "-9223372036854775808",
];
/// Relative ms that are whole seconds (a `TTL` reads them exactly).
const MS_SECS: &[&str] = &["100000", "86400000"];
/// Relative ms that are not whole seconds.
const MS_ODD: &[&str] = &["100500", "123456789"];
/// Relative ms that delete or fail.
const MS_OTHER: &[&str] = &["0", "-1", "x", "9223372036854775807", "-9223372036854775808"];
/// Absolute seconds, far in the past or the future.
pub(super) const ABS_SECS: &[&str] = &["4102444800", "4102444801", "1", "1000000000", "0", "-1", "x"];
pub(super) const ABS_MS: &[&str] = &["4102444800000", "4102444800123", "1", "1000000000000", "0", "-5"];

/// A long ASCII argument: Redis cuts echoed arguments in error texts at 128 bytes.
pub(super) const ECHOED_LONG: &str = "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz0123456789";

/// Subcommand and option names that do not exist: Redis echoes them (cut, with CR/LF as spaces).
pub(super) const BAD_NAMES: &[&str] = &["nope", "a\nb", "x\r\ny", ECHOED_LONG, ""];

impl<R: RngCore> Gen<'_, R> {
    pub(super) fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.rng.random_range(0..xs.len())]
    }

    pub(super) fn chance(&mut self, percent: u32) -> bool {
        self.rng.random_range(0..100) < percent
    }

    /// A key that leans towards `f` (85%), or any key.
    pub(super) fn key(&mut self, f: Family) -> String {
        if let Some((k, wf)) = &self.watched {
            if *wf == f && (self.force_watched || self.rng.random_range(0..100) < 40) {
                return k.clone();
            }
        }
        let matching: Vec<&String> = self.keys.iter().filter(|(_, kf)| *kf == f).map(|(k, _)| k).collect();
        if !matching.is_empty() && self.rng.random_range(0..100) < 85 {
            return matching[self.rng.random_range(0..matching.len())].clone();
        }
        self.keys[self.rng.random_range(0..self.keys.len())].0.clone()
    }

    pub(super) fn value(&mut self) -> Vec<u8> {
        if self.chance(15) {
            return self.rng.random_range(-1000i64..100_000).to_string().into_bytes();
        }
        self.pick(VALUES).to_vec()
    }

    pub(super) fn short(&mut self) -> String {
        if self.chance(15) {
            return self.rng.random_range(-1000i64..1000).to_string();
        }
        self.pick(SHORT).to_string()
    }

    pub(super) fn int(&mut self) -> String {
        if self.chance(25) {
            return self.rng.random_range(-20i64..20).to_string();
        }
        self.pick(INTS).to_string()
    }

    pub(super) fn member(&mut self) -> String {
        if self.chance(20) {
            return format!("m{}", self.rng.random_range(0..40));
        }
        self.pick(MEMBERS).to_string()
    }

    pub(super) fn score(&mut self) -> String {
        if self.chance(30) {
            return self.rng.random_range(-5i64..20).to_string();
        }
        self.pick(SCORES).to_string()
    }

    pub(super) fn index(&mut self) -> String {
        if self.chance(30) {
            return self.rng.random_range(-6i64..8).to_string();
        }
        self.pick(INDEXES).to_string()
    }

    /// A `(option, value, kind)` for SET/GETEX-style expiry options.
    pub(super) fn expiry_option(&mut self) -> (&'static str, String, TtlKind) {
        match self.rng.random_range(0..4) {
            0 => ("EX", self.pick(SECS).to_string(), TtlKind::Secs),
            1 => {
                let (v, kind) = self.rel_ms();
                ("PX", v, kind)
            }
            2 => ("EXAT", self.pick(ABS_SECS).to_string(), TtlKind::Abs),
            _ => ("PXAT", self.pick(ABS_MS).to_string(), TtlKind::Abs),
        }
    }

    pub(super) fn rel_ms(&mut self) -> (String, TtlKind) {
        match self.rng.random_range(0..3) {
            0 => (self.pick(MS_SECS).to_string(), TtlKind::Secs),
            1 => (self.pick(MS_ODD).to_string(), TtlKind::Ms),
            _ => (self.pick(MS_OTHER).to_string(), TtlKind::Secs),
        }
    }
}
