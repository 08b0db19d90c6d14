//! Logarithm and exponential built from `+ - * /` only, so generators give bit-identical output everywhere.
//!
//! `f64::ln`, `exp`, `ln_1p` and `exp_m1` call the platform's libm, and glibc, musl, macOS and Windows
//! disagree in the last bit now and then. One flipped bit is enough to move an arrival by a microsecond
//! or to turn a Zipf rejection test the other way, and a seeded run would then differ between machines.
//! IEEE 754 makes the four basic operations (and `round`, `floor`, bit manipulation) exact everywhere, so
//! these versions, accurate to a few ulps, are reproducible.

/// ln(2) split in two (fdlibm's constants): the high part's mantissa ends in 21 zero bits, so
/// `k * LN2_HI` is exact for every exponent `k` that occurs here (|k| < 2^21).
const LN2_HI: f64 = 6.931_471_803_691_238e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
const LOG2_E: f64 = std::f64::consts::LOG2_E;

/// `2 * atanh(s) = ln((1 + s) / (1 - s))` for |s| <= 0.172, by its odd series (11 terms is below an ulp
/// there: s² <= 0.0295 and 0.0295^12 / 25 < 1e-19).
fn two_atanh(s: f64) -> f64 {
    let z = s * s;
    // Horner over 1/3, 1/5, ..., 1/23.
    let mut p = 1.0 / 23.0;
    let mut k = 21.0;
    while k >= 3.0 {
        p = p * z + 1.0 / k;
        k -= 2.0;
    }
    2.0 * s + 2.0 * s * z * p
}

/// Natural logarithm. `ln(0) = -inf`, negative or NaN input gives NaN.
pub fn ln(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_infinite() {
        return f64::INFINITY;
    }
    let mut bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64;
    if e == 0 {
        // Subnormal: scale into the normal range first (exact).
        bits = (x * 18_014_398_509_481_984.0).to_bits(); // 2^54
        e = ((bits >> 52) & 0x7ff) as i64 - 54;
    }
    e -= 1023;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    // m in (sqrt(1/2), sqrt(2)]: s = (m-1)/(m+1) has |s| <= 0.1716.
    let s = (m - 1.0) / (m + 1.0);
    let k = e as f64;
    k * LN2_HI + (two_atanh(s) + k * LN2_LO)
}

/// `ln(1 + x)`, accurate for small `x`.
pub fn ln_1p(x: f64) -> f64 {
    if x.is_nan() || x < -1.0 {
        return f64::NAN;
    }
    if x.abs() < 0.25 {
        // 1 + x = (1 + s) / (1 - s) with s = x / (2 + x), |s| < 0.143; no cancellation.
        two_atanh(x / (2.0 + x))
    } else {
        ln(1.0 + x)
    }
}

/// `e^r` for |r| <= 0.35 by Taylor's series (15 terms: 0.35^15 / 15! < 1e-19).
fn exp_small(r: f64) -> f64 {
    let mut p = 1.0;
    let mut n = 15.0;
    while n >= 1.0 {
        p = 1.0 + p * r / n;
        n -= 1.0;
    }
    p
}

/// Multiplies by 2^k without overflowing in between (k from -1100 to 1100).
fn scale(x: f64, k: i64) -> f64 {
    let pow2 = |k: i64| f64::from_bits(((k + 1023) as u64) << 52);
    if k > 1023 {
        x * pow2(1023) * pow2(k - 1023)
    } else if k < -1022 {
        x * pow2(-1022) * pow2(k + 1022)
    } else {
        x * pow2(k)
    }
}

/// `e^x`.
pub fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x > 709.8 {
        return f64::INFINITY;
    }
    if x < -745.2 {
        return 0.0;
    }
    let k = (x * LOG2_E).round();
    let r = (x - k * LN2_HI) - k * LN2_LO;
    scale(exp_small(r), k as i64)
}

/// `e^x - 1`, accurate for small `x`.
pub fn exp_m1(x: f64) -> f64 {
    if x.abs() < 0.35 {
        // x * (1 + x/2 * (1 + x/3 * (1 + ...))): no cancellation.
        let mut p = 1.0;
        let mut n = 17.0;
        while n >= 2.0 {
            p = 1.0 + p * x / n;
            n -= 1.0;
        }
        x * p
    } else {
        exp(x) - 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, ulps: f64) -> bool {
        a == b || ((a - b).abs() <= ulps * f64::EPSILON * b.abs().max(f64::MIN_POSITIVE))
    }

    #[test]
    fn ln2_high_part_has_a_short_mantissa() {
        assert_eq!(LN2_HI.to_bits() & 0x1f_ffff, 0);
        assert_eq!(LN2_HI + LN2_LO, std::f64::consts::LN_2);
    }

    #[test]
    fn ln_matches_std() {
        let mut x = 1e-310;
        while x < 1e300 {
            assert!(close(ln(x), x.ln(), 4.0), "ln({x}) = {} vs {}", ln(x), x.ln());
            x *= 1.37;
        }
        for x in [0.5, 0.999_999_9, 1.0, 1.000_000_1, 2.0, std::f64::consts::E, 10.0] {
            assert!(close(ln(x), x.ln(), 4.0) || (ln(x) - x.ln()).abs() < 1e-22, "ln({x})");
        }
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
        assert!(ln(-1.0).is_nan());
    }

    #[test]
    fn exp_matches_std() {
        let mut x = -740.0;
        while x < 709.0 {
            assert!(close(exp(x), x.exp(), 4.0), "exp({x}) = {} vs {}", exp(x), x.exp());
            x += 0.731;
        }
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(1000.0), f64::INFINITY);
        assert_eq!(exp(-1000.0), 0.0);
    }

    #[test]
    fn small_argument_forms_match_std() {
        for i in -390..=400 {
            let x = i as f64 * 0.002_537;
            assert!(close(ln_1p(x), x.ln_1p(), 4.0) || x == 0.0, "ln_1p({x})");
            assert!(close(exp_m1(x), x.exp_m1(), 4.0) || x == 0.0, "exp_m1({x})");
        }
        for x in [1e-300, 1e-12, -1e-9, 3e-5, 0.9, -0.9, 5.0, 40.0] {
            assert!(close(ln_1p(x), x.ln_1p(), 4.0), "ln_1p({x})");
            assert!(close(exp_m1(x), x.exp_m1(), 4.0), "exp_m1({x})");
        }
        assert_eq!(ln_1p(-1.0), f64::NEG_INFINITY);
    }
}
