//! A Redis dict's table sizes, tracked through the operations on it (grow, shrink, incremental
//! rehash), for MEMORY USAGE (`crate::object_size`) of hashes, sets and sorted sets.
use std::cell::Cell;

/// `DICT_HT_INITIAL_SIZE`.
pub(crate) const DICT_INITIAL: u64 = 4;
/// `HASHTABLE_MIN_FILL`: below this percentage a table is shrunk.
const DICT_MIN_FILL: u64 = 10;

/// `_dictNextExp`: the table size for a request of `size` entries.
fn next_table_size(size: u64) -> u64 {
    size.max(DICT_INITIAL).next_power_of_two()
}

/// A Redis dict's table sizes, replayed from the operations on it so MEMORY USAGE counts
/// `dictSlots` as Redis does: both tables while an incremental rehash is in progress.
///
/// Redis grows a table to the next power of two when an add finds it full, shrinks it (ZREM,
/// ZREMRANGE*, ZPOP*) when under 10% full, and then moves one bucket per lookup, add or delete
/// (`_dictRehashStep`). Which buckets are empty depends on the hash seed Redis picks at random,
/// so the model advances the rehash by the expected buckets a step walks (one non-empty bucket
/// and the empty ones before it, at most 10 of those) and ends it when the expected last
/// non-empty bucket is passed. Table sizes are exact whenever no rehash is in progress.
///
/// All state sits in `Cell`s because lookups step the rehash and lookups take `&self`.
#[derive(Clone, Debug, Default)]
pub struct DictTable {
    /// Size of table 0; 0 until the dict exists (a listpack-encoded value has none).
    size0: Cell<u64>,
    /// Size of table 1 while a rehash is in progress, else 0.
    size1: Cell<u64>,
    /// Expected buckets of table 0 the rehash has walked.
    walked: Cell<f64>,
    /// Expected buckets one rehash step walks.
    per_step: Cell<f64>,
    /// Where the rehash is expected to end: just after table 0's last non-empty bucket.
    end: Cell<f64>,
}

impl DictTable {
    /// The table of a dict built by adding `n` entries one by one to a new dict, as Redis's
    /// `zsetConvert` does when a listpack becomes a skiplist.
    pub fn grown(n: usize) -> DictTable {
        let t = DictTable::default();
        for used in 0..n {
            t.add(used);
        }
        t
    }

    /// A new dict presized with `dictExpand(n)` (as `setTypeConvert` does), then filled with `n`
    /// entries one by one.
    pub fn presized(n: usize) -> DictTable {
        let t = DictTable::default();
        t.size0.set(next_table_size(n as u64));
        for used in 0..n {
            t.add(used);
        }
        t
    }

    /// Whether the dict exists (it does from its first add on).
    pub fn exists(&self) -> bool {
        self.size0.get() > 0
    }

    /// `dictSlots`: buckets in both tables.
    pub fn slots(&self) -> u64 {
        self.size0.get() + self.size1.get()
    }

    /// Whether an incremental rehash is in progress.
    pub fn rehashing(&self) -> bool {
        self.size1.get() > 0
    }

    /// One `_dictRehashStep`, as every lookup (`dictFind`) makes on a non-empty dict.
    #[inline]
    pub fn lookup(&self) {
        if self.size1.get() == 0 {
            return;
        }
        let walked = self.walked.get() + self.per_step.get();
        if walked >= self.end.get() {
            self.size0.set(self.size1.get());
            self.size1.set(0);
            self.walked.set(0.0);
        } else {
            self.walked.set(walked);
        }
    }

    /// `dictAdd` of a new entry to a dict holding `used` entries: a rehash step, then growth when
    /// the table is full (`_dictExpandIfNeeded`; never while rehashing).
    pub fn add(&self, used: usize) {
        self.lookup();
        if self.rehashing() {
            return;
        }
        let used = used as u64;
        if self.size0.get() == 0 {
            self.size0.set(DICT_INITIAL);
        } else if used >= self.size0.get() {
            self.expand(used + 1, used);
        }
    }

    /// `dictDelete`/`dictUnlink`: a rehash step.
    #[inline]
    pub fn delete(&self) {
        self.lookup();
    }

    /// `htNeedsResize` then `dictResize`, as Redis runs after removing sorted-set members: a table
    /// more than 4 buckets big and under 10% full shrinks to the power of two that fits `used`.
    pub fn resize_if_needed(&self, used: usize) {
        let slots = self.slots();
        let used = used as u64;
        if slots > DICT_INITIAL && used * 100 / slots < DICT_MIN_FILL && !self.rehashing() {
            self.expand(used.max(DICT_INITIAL), used);
        }
    }

    /// `_dictExpand(size)` on a dict holding `used` entries: starts a rehash to the new size.
    fn expand(&self, size: u64, used: u64) {
        let new = next_table_size(size);
        let old = self.size0.get();
        if self.rehashing() || used > size || new == old {
            return;
        }
        // Table 0's non-empty buckets, expected for `used` keys hashed uniformly.
        let s = old as f64;
        let full = if used == 0 { 0.0 } else { 1.0 - (1.0 - 1.0 / s).powf(used as f64) };
        // A step walks the empty buckets before the next non-empty one (at most 10) and that one.
        let per_step: f64 = (0..10).map(|k| (1.0 - full).powi(k)).sum();
        // The empty buckets expected after the last non-empty one.
        let tail = if full > 0.0 { ((1.0 - full) / full).min(s) } else { s };
        self.size1.set(new);
        self.walked.set(0.0);
        self.per_step.set(per_step);
        self.end.set((s - tail).max(1.0));
    }
}
