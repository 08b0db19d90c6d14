//! The encoding thresholds CONFIG SET changes (`hash-max-listpack-*`, `zset-max-listpack-*`,
//! `set-max-intset-entries`, `list-max-listpack-size`, and their `ziplist` aliases), where the value
//! types read them when a write may convert a value, as Redis reads its `server.*` fields then.
//!
//! The types have no handle on the server's settings, so the thresholds of the server a command runs
//! on are made current for the thread when the command starts ([`enter`], from
//! [`crate::command_spec::CommandSpec::run`]): a conversion happens on a write with the thresholds of
//! that moment, and a change of setting converts nothing by itself, as in Redis.
use std::cell::Cell;

/// The thresholds; [`Default`] is Redis 7.0's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodingLimits {
    /// `hash-max-listpack-entries`.
    pub hash_entries: u32,
    /// `hash-max-listpack-value`.
    pub hash_value: u32,
    /// `zset-max-listpack-entries`.
    pub zset_entries: u32,
    /// `zset-max-listpack-value`.
    pub zset_value: u32,
    /// `set-max-intset-entries`.
    pub intset_entries: u32,
    /// `list-max-listpack-size` (the quicklist's fill: a node's byte limit when negative, its
    /// element count when positive).
    pub list_fill: i32,
}

impl Default for EncodingLimits {
    fn default() -> Self {
        EncodingLimits {
            hash_entries: 512,
            hash_value: 64,
            zset_entries: 128,
            zset_value: 64,
            intset_entries: 512,
            list_fill: -2,
        }
    }
}

fn clamp(n: i64) -> u32 {
    n.clamp(0, i64::from(u32::MAX)) as u32
}

impl EncodingLimits {
    /// The thresholds of a server's settings.
    pub fn of(settings: &crate::settings::Settings) -> EncodingLimits {
        EncodingLimits {
            hash_entries: clamp(settings.int("hash-max-listpack-entries")),
            hash_value: clamp(settings.int("hash-max-listpack-value")),
            zset_entries: clamp(settings.int("zset-max-listpack-entries")),
            zset_value: clamp(settings.int("zset-max-listpack-value")),
            intset_entries: clamp(settings.int("set-max-intset-entries")),
            list_fill: settings.int("list-max-listpack-size").clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32,
        }
    }
}

thread_local! {
    static CURRENT: Cell<EncodingLimits> = Cell::new(EncodingLimits::default());
}

/// Makes `limits` the thresholds of the writes that follow on this thread.
#[inline]
pub fn enter(limits: EncodingLimits) {
    CURRENT.with(|c| c.set(limits));
}

/// The thresholds in force.
#[inline]
pub fn current() -> EncodingLimits {
    CURRENT.with(Cell::get)
}

/// Redis 7.0's quicklist node limits (`quicklistNodeExceedsLimit`): whether a node of `count`
/// elements and `bytes` listpack bytes may take one more element of `len` bytes under
/// `list-max-listpack-size` `fill` (`_quicklistNodeAllowInsert`, with its 8-byte overestimate of an
/// entry's overhead). A negative fill limits a node's bytes (4 KB to 64 KB), a positive one its
/// elements (at least one), within 8 KB.
pub fn quicklist_node_allows(fill: i32, bytes: usize, count: usize, len: usize) -> bool {
    const OPTIMIZATION_LEVEL: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
    const SIZE_SAFETY_LIMIT: usize = 8192;
    const SIZE_ESTIMATE_OVERHEAD: usize = 8;
    let new_sz = bytes + len + SIZE_ESTIMATE_OVERHEAD;
    if fill < 0 {
        let level = ((-i64::from(fill)) - 1).min(4) as usize;
        return new_sz <= OPTIMIZATION_LEVEL[level];
    }
    new_sz <= SIZE_SAFETY_LIMIT && count < (fill.max(1) as usize)
}
