//! Short byte strings kept inline. A rate limiter's keys (`rate:{user123456}`) and its hash fields
//! and values (`w`, `1704067`) are a few bytes each; kept inside the map's slot or the hash's field
//! list they need no allocation of their own, and, with a million keys, no cache miss of their own
//! when a lookup compares a key or reads a field.
use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// Up to this many bytes are kept inline (the value is then as big as a `Vec<u8>`: 24 bytes).
const INLINE: usize = 22;

/// A byte string: inline up to `INLINE` (22) bytes, on the heap beyond. Compares, hashes and borrows
/// as the `[u8]` it holds, so maps keyed by it are looked up with a plain `&[u8]`.
#[derive(Clone)]
pub enum SmallBytes {
    Inline { len: u8, buf: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl SmallBytes {
    pub fn new(b: &[u8]) -> SmallBytes {
        if b.len() <= INLINE {
            let mut buf = [0u8; INLINE];
            buf[..b.len()].copy_from_slice(b);
            SmallBytes::Inline { len: b.len() as u8, buf }
        } else {
            SmallBytes::Heap(b.into())
        }
    }
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match self {
            SmallBytes::Inline { len, buf } => &buf[..*len as usize],
            SmallBytes::Heap(b) => b,
        }
    }
    /// Replaces the contents (reusing the inline room when the new bytes fit in it).
    pub fn set(&mut self, b: &[u8]) {
        match self {
            SmallBytes::Inline { len, buf } if b.len() <= INLINE => {
                buf[..b.len()].copy_from_slice(b);
                *len = b.len() as u8;
            }
            _ => *self = SmallBytes::new(b),
        }
    }
}

/// `a == b`, for the names this crate compares most: a one-byte hash field (`w`, `n`) is compared
/// without a call to `memcmp`.
#[inline(always)]
pub fn short_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len()
        && match a.len() {
            0 => true,
            1 => a[0] == b[0],
            _ => a == b,
        }
}

impl Default for SmallBytes {
    fn default() -> Self {
        SmallBytes::Inline { len: 0, buf: [0; INLINE] }
    }
}

impl Deref for SmallBytes {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Borrow<[u8]> for SmallBytes {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for SmallBytes {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for SmallBytes {}

impl Hash for SmallBytes {
    /// Hashes exactly as the `[u8]` it holds (the contract `Borrow<[u8]>` requires).
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state)
    }
}

impl std::fmt::Debug for SmallBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_slice()))
    }
}

impl From<&[u8]> for SmallBytes {
    fn from(b: &[u8]) -> Self {
        SmallBytes::new(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashMap;

    #[test]
    fn inline_and_heap_forms_hold_compare_and_hash_as_their_bytes() {
        assert_eq!(std::mem::size_of::<SmallBytes>(), std::mem::size_of::<Vec<u8>>());
        let mut map: FxHashMap<SmallBytes, usize> = FxHashMap::default();
        let samples: Vec<Vec<u8>> = (0..40).map(|n| (0..n).map(|i| b'a' + (i % 26) as u8).collect()).collect();
        for (i, s) in samples.iter().enumerate() {
            let b = SmallBytes::new(s);
            assert_eq!(b.as_slice(), s.as_slice());
            assert_eq!(matches!(b, SmallBytes::Inline { .. }), s.len() <= INLINE);
            map.insert(b, i);
        }
        for (i, s) in samples.iter().enumerate() {
            assert_eq!(map.get(s.as_slice()), Some(&i), "{s:?}");
        }
        let mut b = SmallBytes::new(b"short");
        for s in &samples {
            b.set(s);
            assert_eq!(b.as_slice(), s.as_slice());
        }
        b.set(b"x");
        assert_eq!(&*b, b"x");
    }

    #[test]
    fn short_eq_is_slice_equality() {
        for n in 0..40usize {
            let a: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(short_eq(&a, &a.clone()));
            assert!(!short_eq(&a, &a[..n.saturating_sub(1)]) || n == 0);
            for at in 0..n {
                let mut b = a.clone();
                b[at] ^= 0x20;
                assert!(!short_eq(&a, &b), "length {n}, differing at {at}");
            }
        }
    }
}
