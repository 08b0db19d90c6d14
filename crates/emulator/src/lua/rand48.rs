//! Redis's deterministic `math.random`: its own `lrand48` stream, shared by all scripts of a server.
use std::cell::Cell;

/// The 48-bit linear congruential generator behind POSIX `lrand48`, as Redis's `rand.c` implements it.
#[derive(Debug)]
pub struct Rand48 {
    x: Cell<u64>,
}

const A: u64 = 0x5_DEEC_E66D;
const C: u64 = 0xB;
const MASK: u64 = (1 << 48) - 1;
/// `REDIS_LRAND48_MAX`.
const LRAND48_MAX: i64 = i32::MAX as i64;

impl Default for Rand48 {
    fn default() -> Self {
        Rand48 { x: Cell::new(0x1234_ABCD_330E) }
    }
}

impl Rand48 {
    pub fn next(&self) -> i32 {
        let x = (A.wrapping_mul(self.x.get()).wrapping_add(C)) & MASK;
        self.x.set(x);
        (x >> 17) as i32
    }
    /// A draw in [0, 1), as `redis_math_random` computes it.
    pub fn next_unit(&self) -> f64 {
        (self.next() as i64 % LRAND48_MAX) as f64 / LRAND48_MAX as f64
    }
    pub fn seed(&self, seed: i32) {
        self.x.set((((seed as u32) as u64) << 16) | 0x330E);
    }
}
