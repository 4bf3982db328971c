//! Signed 18-decimal fixed point ("WAD") and the transcendental functions the LMSR needs.
//!
//! Every value here is an `i128` (or `u128`) holding `real × 10^18`. All functions are pure,
//! integer-only and panic-free over their documented input ranges; callers in `market` keep
//! inputs inside those ranges (the domain in `lib.rs`).
//!
//! Accuracy: each function is accurate to a few units in the last place (ulp = 1e-18) as stated
//! on it; [`ERROR_ULPS`] is a deliberately loose bound on the error of any composed LMSR quantity,
//! used as a safety margin before rounding so that rounding always favours the market maker.
//! The property tests in `tests/` measure the real error against a 60-digit reference.

/// 1.0 in WAD.
pub const WAD: i128 = 1_000_000_000_000_000_000;
/// 1.0 in WAD, unsigned.
pub const WAD_U: u128 = WAD as u128;
/// 10^36: the scale of [`LN2_E36`] and of prices (see `market::Price`).
pub const E36: u128 = WAD_U * WAD_U;
/// ln 2 × 10^36, truncated (true value 0.693147180559945309417232121458176568075500…).
pub const LN2_E36: u128 = 693_147_180_559_945_309_417_232_121_458_176_568;

/// Upper bound, in ulps of 1e-18, on the absolute error of any composed quantity computed in
/// `market` (measured: under 40; see the reference tests). Subtracted before flooring and added
/// before ceiling, so a result is never rounded in the trader's favour.
pub const ERROR_ULPS: u128 = 1_000;

/// Largest argument of [`exp_neg`]: beyond it e^-x < 2^-144 and the result is 0 in WAD.
const EXP_ARG_MAX: i128 = 100 * WAD;

/// e^-x as a mantissa and a binary exponent: e^-x = `m` × 2^-`k` / 10^18 with
/// `m` in (0.5e18, 1e18]. Keeping the exponent apart keeps full relative precision for tiny
/// results (prices of 1e-17 still carry 18 significant digits).
///
/// Input: 0 ≤ x ≤ 100 (WAD). Error of `m`: ≤ 3 ulps.
pub fn exp_neg_parts(x: i128) -> (u128, u32) {
    debug_assert!((0..=EXP_ARG_MAX).contains(&x));
    let x = x.clamp(0, EXP_ARG_MAX) as u128;
    // Range reduction x = k·ln2 + r, r in [0, ln2), carried at 1e36 so r loses < 1 ulp.
    let x_e36 = x * WAD_U; // ≤ 1e38 < u128::MAX
    let k = (x_e36 / LN2_E36) as u32;
    let r = ((x_e36 - k as u128 * LN2_E36) / WAD_U) as i128;
    // e^-r by Horner on the Taylor series: 1 - r(1 - r/2(1 - r/3(…))). r < 0.7, so 20 terms
    // leave a truncation error below 1e-19 and each step shrinks earlier rounding errors.
    let mut t = WAD;
    let mut i = 20;
    while i > 0 {
        t = WAD - r * t / (i * WAD);
        i -= 1;
    }
    (t as u128, k)
}

/// e^-x in WAD for x ≥ 0 (any size; 0 beyond 100). Error ≤ 3 ulps.
pub fn exp_neg(x: i128) -> i128 {
    debug_assert!(x >= 0);
    if x > EXP_ARG_MAX {
        return 0;
    }
    let (m, k) = exp_neg_parts(x);
    m.checked_shr(k).unwrap_or(0) as i128
}

/// Natural logarithm of a positive WAD value `y` (real y = `y` / 10^18), `y` ≤ u128::MAX.
/// Error ≤ 6 ulps (≤ 3 for y < 2^64; above, the normalising shift truncates the mantissa).
pub fn ln(y: u128) -> i128 {
    debug_assert!(y > 0);
    if y == 0 {
        return i128::MIN / 2; // unreachable for callers; -∞ stand-in without panicking
    }
    // Normalise y = m·2^k with m in [WAD/√2, WAD·√2): the series below then converges fast.
    const SQRT2_WAD: u128 = 1_414_213_562_373_095_049;
    const INV_SQRT2_WAD: u128 = 707_106_781_186_547_524;
    let wad_bits = 128 - WAD_U.leading_zeros() as i32; // 60
    let mut k = (128 - y.leading_zeros() as i32) - wad_bits;
    let shift = |v: u128, k: i32| if k >= 0 { v >> k } else { v << (-k) };
    let mut m = shift(y, k);
    // y < 2^128 and k ≥ -60 keep the left shift in range; at most two corrections are needed.
    while m >= SQRT2_WAD {
        k += 1;
        m = shift(y, k);
    }
    while m < INV_SQRT2_WAD {
        k -= 1;
        m = shift(y, k);
    }
    let m = m as i128;
    // ln m = 2·atanh(z), z = (m-1)/(m+1), |z| < 0.172: 2(z + z³/3 + z⁵/5 + …), 14 terms.
    let z = (m - WAD) * WAD / (m + WAD);
    let w = z * z / WAD;
    let mut s = 0i128;
    let mut j: i128 = 14;
    while j >= 0 {
        s = WAD / (2 * j + 1) + w * s / WAD;
        j -= 1;
    }
    let ln_m = 2 * z * s / WAD;
    ln_m + k as i128 * LN2_E36 as i128 / WAD
}

/// ln(n / d) in WAD for positive integers n, d ≤ 2^64: both logarithms are taken at full
/// relative precision, so tiny ratios (a 1 USDC trade against b = 100,000 USDC) keep it too.
/// Error ≤ 8 ulps.
pub fn ln_ratio(n: u64, d: u64) -> i128 {
    ln(n as u128 * WAD_U) - ln(d as u128 * WAD_U)
}

/// ln(1 + e^-x) in WAD for x ≥ 0. Error ≤ 6 ulps.
pub fn ln_1p_exp_neg(x: i128) -> i128 {
    debug_assert!(x >= 0);
    ln((WAD + exp_neg(x)) as u128)
}

/// softplus(u) = ln(1 + e^u) in WAD, for any u: max(u, 0) + ln(1 + e^-|u|). Error ≤ 6 ulps.
pub fn softplus(u: i128) -> i128 {
    u.max(0) + ln_1p_exp_neg(u.abs())
}

/// ln(e^x + e^y) in WAD: the larger argument taken out, so nothing overflows. Error ≤ 6 ulps.
pub fn log_sum_exp(x: i128, y: i128) -> i128 {
    x.max(y) + ln_1p_exp_neg((x - y).abs())
}

/// ln(e^s - 1) for s = n/d > 0 (n, d positive integers): the log of the LMSR's growth factor.
///
/// For s < 1 it is ln(n/d) + ln((e^s - 1)/s), which keeps full relative precision however small
/// s is; for s ≥ 1 it is s + ln(1 - e^-s), where nothing cancels. Error ≤ 10 ulps (measured against the reference).
pub fn ln_exp_m1(n: u64, d: u64) -> i128 {
    let s = n as i128 * WAD / d as i128;
    if s >= WAD {
        s + ln((WAD - exp_neg(s)) as u128)
    } else {
        // (e^s - 1)/s = 1 + s/2 (1 + s/3 (1 + s/4 (…))), 20 terms for s < 1.
        let mut t = WAD;
        let mut i: i128 = 20;
        while i > 0 {
            t = WAD + s * t / ((i + 1) * WAD);
            i -= 1;
        }
        ln_ratio(n, d) + ln(t as u128)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_points() {
        assert_eq!(exp_neg(0), WAD);
        assert_eq!(ln(WAD_U), 0);
        assert!((ln(2 * WAD_U) - (LN2_E36 / WAD_U) as i128).abs() <= 2);
        assert_eq!(exp_neg(EXP_ARG_MAX + 1), 0);
    }

    #[test]
    fn ln_covers_the_whole_u128_range_without_panicking() {
        for bits in 0..128 {
            let y = 1u128 << bits;
            let expected = bits as i128 * (LN2_E36 / WAD_U) as i128 - ln_wad_of_1e18();
            assert!((ln(y) - expected).abs() < 200, "bits {bits}");
        }
        let _ = ln(u128::MAX);
    }

    fn ln_wad_of_1e18() -> i128 {
        // ln(10^18) = 41.446531673892822312…
        41_446_531_673_892_822_312
    }
}
