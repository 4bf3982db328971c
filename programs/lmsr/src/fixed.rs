//! Signed binary fixed point with 60 fractional bits ("Q60") and the transcendental functions
//! the LMSR needs.
//!
//! Every value is an `i128` (or `u128`) holding `real × 2^60`; one ulp is 2^-60 ≈ 8.7e-19.
//! Binary rather than decimal so that rescaling after a product is a shift, and the series
//! divide by precomputed reciprocals: on SBF, where a 128-bit division is a software routine,
//! one buy then costs about ten divisions instead of about one hundred and fifty.
//! All functions are pure, integer-only and panic-free over their documented input ranges;
//! callers in `market` keep inputs inside those ranges (the domain in `lib.rs`).
//!
//! Accuracy: each function is accurate to a few ulps as stated on it; [`ERROR_ULPS`] is a
//! deliberately loose bound on the error of any composed LMSR quantity, used as a safety margin
//! before rounding so that rounding always favours the market maker. The property tests in
//! `tests/` measure the real error against a 60-digit reference.

/// Fractional bits.
pub const FRAC_BITS: u32 = 60;
/// 1.0.
pub const ONE: i128 = 1 << FRAC_BITS;
/// 1.0, unsigned.
pub const ONE_U: u128 = 1 << FRAC_BITS;
/// 10^36: the scale of prices (see `market::Price`).
pub const E36: u128 = 1_000_000_000_000_000_000_000_000_000_000_000_000;
/// ln 2 × 2^120, truncated: range reduction carries it at twice the working precision.
const LN2_Q120: u128 = 921_350_637_599_661_305_226_344_307_672_478_454;
/// 1/ln 2 × 2^60, rounded up (only used to guess k, which is then corrected).
const INV_LN2_Q60: u128 = 1_663_314_137_230_540_312;

/// Upper bound, in ulps of 2^-60, on the absolute error of any composed quantity computed in
/// `market` (measured: under 40; see the reference tests). Subtracted before flooring and added
/// before ceiling, so a result is never rounded in the trader's favour.
pub const ERROR_ULPS: u128 = 1_000;

/// Largest argument of [`exp_neg`]: beyond it e^-x < 2^-144 and the result is 0.
const EXP_ARG_MAX: i128 = 100 * ONE;

/// 2^60 / i, rounded to nearest, for the series' divisions by small integers.
const INV: [u64; 32] = {
    let mut table = [0u64; 32];
    let mut i = 1;
    while i < 32 {
        table[i] = ((ONE_U + i as u128 / 2) / i as u128) as u64;
        i += 1;
    }
    table
};
const ONE_64: u64 = 1 << FRAC_BITS;

/// a·b in Q60 for non-negative a, b < 2^61, rounded down, exactly — with 64-bit arithmetic
/// only (four 32×32-bit products), because a 128-bit multiplication is a software routine on
/// SBF. With a = ah·2^32 + al and b likewise, a·b/2^60 = 16·ah·bh + (ah·bl + al·bh)/2^28 +
/// al·bl/2^60, and the floor of the last two terms is ((ah·bl + al·bh + (al·bl >> 32)) >> 28)
/// because the discarded low 32 bits of al·bl are worth less than one unit of 2^-28.
#[inline]
pub fn mul_u60(a: u64, b: u64) -> u64 {
    debug_assert!(a < 1 << 61 && b < 1 << 61);
    let (ah, al, bh, bl) = (a >> 32, a & 0xFFFF_FFFF, b >> 32, b & 0xFFFF_FFFF);
    let mid = ah * bl + al * bh + ((al * bl) >> 32);
    ((ah * bh) << 4) + (mid >> 28)
}

/// n·2^60 / d: the Q60 value of the ratio of two integers (n < 2^67, d > 0).
#[inline]
pub fn ratio(n: i128, d: u64) -> i128 {
    (n << FRAC_BITS) / d as i128
}

/// (a·b) >> shift for u128 operands, through a 256-bit product (for conversions between
/// binary and decimal scales where the product exceeds 128 bits). `shift` in 64..=192.
pub fn mul_shr(a: u128, b: u128, shift: u32) -> u128 {
    const LO: u128 = u64::MAX as u128;
    let (a0, a1, b0, b1) = (a & LO, a >> 64, b & LO, b >> 64);
    let (p00, p01, p10, p11) = (a0 * b0, a0 * b1, a1 * b0, a1 * b1);
    let mid = (p00 >> 64) + (p01 & LO) + (p10 & LO);
    let lo = (p00 & LO) | (mid << 64);
    let hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
    debug_assert!((64..=192).contains(&shift));
    if shift >= 128 { hi >> (shift - 128) } else { (hi << (128 - shift)) | (lo >> shift) }
}

/// e^-x as a mantissa and a binary exponent: e^-x = `m` × 2^-`k` / 2^60 with
/// `m` in (0.5, 1] × 2^60. Keeping the exponent apart keeps full relative precision for tiny
/// results (prices of 1e-17 still carry 17 significant digits).
///
/// Input: 0 ≤ x ≤ 100 (Q60). Error of `m`: ≤ 3 ulps.
pub fn exp_neg_parts(x: i128) -> (u128, u32) {
    debug_assert!((0..=EXP_ARG_MAX).contains(&x));
    let x = x.clamp(0, EXP_ARG_MAX) as u128;
    // Range reduction x = k·ln2 + r, r in [0, ln2), carried at 2^-120 so r loses < 1 ulp.
    let x_q120 = x << FRAC_BITS; // ≤ 100·2^120 < 2^127
    let mut k = ((x * INV_LN2_Q60) >> (2 * FRAC_BITS)) as u32; // x·(1/ln2) ≤ 2^127.2
    while k as u128 * LN2_Q120 > x_q120 {
        k -= 1;
    }
    while (k as u128 + 1) * LN2_Q120 <= x_q120 {
        k += 1;
    }
    let r = ((x_q120 - k as u128 * LN2_Q120) >> FRAC_BITS) as u64;
    // e^-r by Horner on the Taylor series: 1 - r(1 - r/2(1 - r/3(…))). r < 0.7, so 20 terms
    // leave a truncation error below 2^-65 and each step shrinks earlier rounding errors.
    // Every partial value stays in [0, 1]: 64-bit arithmetic suffices.
    let mut t = ONE_64;
    let mut i = 20;
    while i > 0 {
        t = ONE_64 - mul_u60(mul_u60(r, t), INV[i]);
        i -= 1;
    }
    (t as u128, k)
}

/// e^-x in Q60 for x ≥ 0 (any size; 0 beyond 100). Error ≤ 3 ulps.
pub fn exp_neg(x: i128) -> i128 {
    debug_assert!(x >= 0);
    if x > EXP_ARG_MAX {
        return 0;
    }
    let (m, k) = exp_neg_parts(x);
    m.checked_shr(k).unwrap_or(0) as i128
}

/// Natural logarithm of a positive Q60 value `y` (real y = `y` / 2^60), `y` ≤ u128::MAX.
/// Error ≤ 6 ulps (measured ≤ 4.1).
///
/// No division: y = 2^e·m with m in [1, 2); m = c·(1 + t) with c = 1 + k/64 from m's top six
/// fractional bits, so t = (m − c)/c < 1/64 comes from a multiplication by the tabulated 1/c;
/// ln y = e·ln 2 + ln c (tabulated) + ln(1 + t), the last by eleven terms of its series.
pub fn ln(y: u128) -> i128 {
    debug_assert!(y > 0);
    if y == 0 {
        return i128::MIN / 2; // unreachable for callers; -∞ stand-in without panicking
    }
    // Right shifts round to nearest (a floor would bias every large input low).
    let mut e = (128 - y.leading_zeros() as i32) - (FRAC_BITS as i32 + 1);
    let mut m = match e {
        1.. => (y >> e) + ((y >> (e - 1)) & 1),
        0 => y,
        _ => y << (-e),
    };
    if m == 2 * ONE_U {
        // Rounding carried into the next power of two.
        m = ONE_U;
        e += 1;
    }
    let k = ((m - ONE_U) >> (FRAC_BITS - 6)) as usize;
    let c = ONE_U + ((k as u128) << (FRAC_BITS - 6));
    let t = mul_u60((m - c) as u64, INV_C[k]);
    // ln(1 + t) = t(1 − t(1/2 − t(1/3 − …))): with t < 1/64 every partial value is positive,
    // and eleven terms leave a truncation error below 2^-66.
    let mut a = INV[11];
    let mut n = 10;
    while n > 0 {
        a = INV[n] - mul_u60(t, a);
        n -= 1;
    }
    let ln_m = (LN_C[k] + mul_u60(t, a)) as i128;
    let e_ln2 = ((e.unsigned_abs() as u128 * LN2_Q120 + (1 << (FRAC_BITS - 1))) >> FRAC_BITS) as i128;
    ln_m + if e >= 0 { e_ln2 } else { -e_ln2 }
}

/// 2^60 / (1 + k/64) = 2^66 / (64 + k), rounded down, k = 0..63.
const INV_C: [u64; 64] = {
    let mut table = [0u64; 64];
    let mut k = 0;
    while k < 64 {
        table[k] = ((1u128 << 66) / (64 + k as u128)) as u64;
        k += 1;
    }
    table
};

/// ln(1 + k/64) × 2^60, rounded to nearest, k = 0..63 (computed at 60 digits).
const LN_C: [u64; 64] = [
    0,
    17875110068750280,
    35477307009321985,
    52814799206541282,
    69895430200825139,
    86726699994914057,
    103315784827581626,
    119669555544806966,
    135794594686119519,
    151697212392459053,
    167383461231764586,
    182859150029464525,
    198129856782957177,
    213200940731932963,
    228077553649899151,
    242764650416438875,
    257266998924493878,
    271589189372239037,
    285735642984858962,
    299710620207691992,
    313518228408730497,
    327162429125319017,
    340647044887039015,
    353975765644180082,
    367152154828845215,
    380179655073598274,
    393061593610613396,
    405801187372510129,
    418401547814437287,
    430865685475487961,
    443196514296174253,
    455396855707451055,
    467469442505642749,
    479416922526585443,
    491241862131341475,
    502946749514964734,
    514533997848987755,
    526005948267558232,
    537364872706467888,
    548612976603685369,
    559752401469422381,
    570785227333224374,
    581713475075080035,
    592539108647084071,
    603264037191762267,
    613890117062773631,
    624419153753339093,
    634852903737407334,
    645193076228253727,
    655441334858916161,
    665599299288599926,
    675668546738931165,
    685650613463703312,
    695546996155541899,
    705359153292709077,
    715088506429078866,
    724736441430136626,
    734304309657690431,
    743793429105827201,
    753205085490501710,
    762540533295011191,
    771800996773481633,
    780987670914373246,
    790101722365901496,
];

/// ln(n / d) in Q60 for positive integers n, d < 2^64: both logarithms are taken at full
/// relative precision, so tiny ratios (a 1 USDC trade against b = 100,000 USDC) keep it too.
/// Error ≤ 10 ulps.
pub fn ln_ratio(n: u64, d: u64) -> i128 {
    ln((n as u128) << FRAC_BITS) - ln((d as u128) << FRAC_BITS)
}

/// ln(1 + e^-x) in Q60 for x ≥ 0. Error ≤ 6 ulps.
pub fn ln_1p_exp_neg(x: i128) -> i128 {
    debug_assert!(x >= 0);
    ln((ONE + exp_neg(x)) as u128)
}

/// softplus(u) = ln(1 + e^u) in Q60, for any u: max(u, 0) + ln(1 + e^-|u|). Error ≤ 6 ulps.
pub fn softplus(u: i128) -> i128 {
    u.max(0) + ln_1p_exp_neg(u.abs())
}

/// ln(e^x + e^y) in Q60: the larger argument taken out, so nothing overflows. Error ≤ 6 ulps.
pub fn log_sum_exp(x: i128, y: i128) -> i128 {
    x.max(y) + ln_1p_exp_neg((x - y).abs())
}

/// ln(e^s - 1) for s = n/d > 0 (n, d positive integers, n < 2^67): the log of the LMSR's
/// growth factor.
///
/// For s < 1 it is ln(n/d) + ln((e^s - 1)/s), which keeps full relative precision however small
/// s is; for s ≥ 1 it is s + ln(1 - e^-s), where nothing cancels. Error ≤ 16 ulps: three
/// logarithms plus the series (measured against the reference).
pub fn ln_exp_m1(n: u64, d: u64) -> i128 {
    let s = ratio(n as i128, d);
    if s >= ONE {
        s + ln((ONE - exp_neg(s)) as u128)
    } else {
        // (e^s - 1)/s = 1 + s/2 (1 + s/3 (1 + s/4 (…))), 20 terms for s < 1; every partial
        // value is in [1, e - 1) < 2: 64-bit arithmetic suffices.
        let s = s as u64;
        let mut t = ONE_64;
        let mut i = 20;
        while i > 0 {
            t = ONE_64 + mul_u60(mul_u60(s, t), INV[i + 1]);
            i -= 1;
        }
        ln_ratio(n, d) + ln(t as u128)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LN2_Q60: i128 = 799_144_290_325_165_979;

    #[test]
    fn exact_points() {
        assert_eq!(exp_neg(0), ONE);
        assert_eq!(ln(ONE_U), 0);
        assert!((ln(2 * ONE_U) - LN2_Q60).abs() <= 2);
        assert_eq!(exp_neg(EXP_ARG_MAX + 1), 0);
    }

    #[test]
    fn ln_covers_the_whole_u128_range_without_panicking() {
        for bits in 0..128 {
            let expected = ((bits - 60) * LN2_Q120 as i128) >> FRAC_BITS;
            assert!((ln(1u128 << bits) - expected).abs() < 4, "bits {bits}");
        }
        let _ = ln(u128::MAX);
    }

    #[test]
    fn mul_u60_is_the_exact_floor() {
        let cases = [(0, 0), (1, 1), (ONE_64, ONE_64), ((1 << 61) - 1, (1 << 61) - 1), (123_456_789_012_345, 987_654_321_098_765_432)];
        for (a, b) in cases {
            assert_eq!(mul_u60(a, b) as u128, (a as u128 * b as u128) >> FRAC_BITS, "{a} {b}");
        }
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (a, b) = (x >> 3, x.rotate_left(29) >> 3);
            assert_eq!(mul_u60(a, b) as u128, (a as u128 * b as u128) >> FRAC_BITS);
        }
    }

    #[test]
    fn mul_shr_is_the_exact_256_bit_product_shifted() {
        assert_eq!(mul_shr(u128::MAX, u128::MAX, 128), u128::MAX - 1);
        assert_eq!(mul_shr(1 << 100, 1 << 100, 120), 1 << 80);
        assert_eq!(mul_shr(3, E36, 64), (3 * E36) >> 64);
        assert_eq!(mul_shr(u128::MAX, 2, 64), (u128::MAX >> 63));
    }
}
