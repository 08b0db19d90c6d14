//! A fast, non-cryptographic hasher for the emulator's own tables (keyspace, hash fields, sorted-set
//! members, command table), in the style of rustc's FxHash: eight bytes per multiply.
//!
//! Why not the standard library's SipHash: it is built to resist hash flooding from untrusted input,
//! and costs about 20 instructions per byte of a short key; a script call hashes its key several
//! times (the keyspace, then the fields), which made hashing a fifth of the command layer's time.
//! The emulator's keys come from the user's own scripts and traffic, so flooding is not a concern.
//! Iteration order is not part of any contract here (Redis's own order is its dict's, which the
//! emulator does not reproduce; SCAN orders by its own stable hash).
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// The multiplier: odd, with well-spread bits (the one rustc-hash 2 uses).
const K: u64 = 0xf135_7aea_2e62_a9c5;

/// FxHash-style hasher: `h = (h + word) * K` per 8-byte word, then one xor-shift-multiply round at
/// the end, so the high bits (the best mixed by the multiplies) also reach the low bits that pick
/// a bucket.
#[derive(Clone, Copy, Default)]
pub struct FxHasher {
    h: u64,
}

impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.h = self.h.wrapping_add(w).wrapping_mul(K);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut tail = [0u8; 8];
            tail[..rest.len()].copy_from_slice(rest);
            // The length keeps "a" and "a\0" apart.
            self.add(u64::from_le_bytes(tail) ^ ((rest.len() as u64) << 59));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        let h = (self.h ^ (self.h >> 32)).wrapping_mul(K);
        h ^ (h >> 29)
    }
}

/// Builds [`FxHasher`]s (no per-map random state).
pub type FxBuildHasher = BuildHasherDefault<FxHasher>;
/// A `HashMap` with [`FxHasher`].
pub type FxHashMap<K, V> = HashMap<K, V, FxBuildHasher>;
/// A `HashSet` with [`FxHasher`].
pub type FxHashSet<T> = HashSet<T, FxBuildHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    fn h(b: &[u8]) -> u64 {
        FxBuildHasher::default().hash_one(b)
    }

    #[test]
    fn keys_that_differ_anywhere_hash_apart() {
        assert_ne!(h(b"a"), h(b"a\0"));
        assert_ne!(h(b""), h(b"\0"));
        assert_ne!(h(b"rate:{u1}"), h(b"rate:{u2}"));
        assert_ne!(h(b"12345678a"), h(b"12345678b"));
        // A slice and the Vec holding it hash alike (lookups by &[u8] in maps keyed by Vec<u8>).
        assert_eq!(FxBuildHasher::default().hash_one(b"key".to_vec()), FxBuildHasher::default().hash_one(&b"key"[..]));
    }

    #[test]
    fn bucket_bits_spread_over_similar_keys() {
        // The low 10 bits (a 1024-bucket table) of 100,000 keys that differ only in their digits
        // fill every bucket about evenly.
        let mut buckets = [0u32; 1024];
        for i in 0..100_000 {
            buckets[(h(format!("rate:{{u{i}}}").as_bytes()) & 1023) as usize] += 1;
        }
        let (lo, hi) = (buckets.iter().min().unwrap(), buckets.iter().max().unwrap());
        assert!(*lo > 40 && *hi < 160, "{lo}..{hi}");
        // And the top 7 bits (hashbrown's control bytes) take every value.
        let mut top = [false; 128];
        for i in 0..10_000 {
            top[(h(format!("u{i}").as_bytes()) >> 57) as usize] = true;
        }
        assert!(top.iter().all(|&t| t));
    }
}
