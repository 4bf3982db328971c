//! The binary LMSR market maker on integer amounts.
//!
//! Cost function C(q) = b·ln(e^{q_yes/b} + e^{q_no/b}); p_yes = 1 / (1 + e^{(q_no - q_yes)/b}).
//! Every formula below is the LMSR's closed form rewritten in log space (softplus and
//! log-sum-exp with the maximum taken out), which is algebraically identical but never
//! overflows and never subtracts nearly equal numbers. With u = (q_other - q_side)/b,
//! p_side = 1/(1+e^u), so ln p_side = -softplus(u) and ln p_other = -softplus(-u):
//!
//! - buy with net amount c:  Δ/b = ln(1 + (e^{c/b} - 1)/p)        = softplus(ln(e^{c/b}-1) + softplus(u))
//! - cost of Δ shares:       c/b = ln(p·e^{Δ/b} + 1 - p)          = lse(Δ/b - softplus(u), -softplus(-u))
//! - sell Δ shares:          c/b = -ln(1 - p + p·e^{-Δ/b})        = -lse(-softplus(-u), -softplus(u) - Δ/b)
//!
//! Rounding: shares received and USDC paid out are rounded down, USDC charged is rounded up,
//! each after moving the exact value by the error margin [`ERROR_ULPS`] × b against the trader.
//! So every integer result is on the market maker's side of the exact real value, and the
//! market's collateral always covers C(q) ≥ max(q_yes, q_no) (the solvency invariant).

use crate::fixed::{E36, ERROR_ULPS, FRAC_BITS, ONE_U, exp_neg_parts, ln_1p_exp_neg, ln_exp_m1, ln_ratio, log_sum_exp, mul_shr, ratio, softplus};
use crate::{AMOUNT_MAX, LIQUIDITY_MAX, LIQUIDITY_MIN, LmsrError, MAX_SKEW, MICRO, PRIOR_MAX_PPM, PRIOR_MIN_PPM, QUANTITY_MAX};

/// Which outcome a trade buys or sells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    Yes,
    No,
}

impl Side {
    pub fn other(self) -> Side {
        match self {
            Side::Yes => Side::No,
            Side::No => Side::Yes,
        }
    }
}

/// A probability at 36 decimals: `Price(10^36)` is 1. Fine enough that even a price of 1e-17
/// (the edge of the domain) carries 18 significant digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Price(pub u128);

impl Price {
    /// 1.0.
    pub const ONE: Price = Price(E36);

    /// The price in millionths, rounded to nearest (ties up): what the API shows with six decimals.
    pub fn to_micro(self) -> u64 {
        const HALF_MICRO: u128 = E36 / MICRO as u128 / 2;
        ((self.0 + HALF_MICRO) / (E36 / MICRO as u128)) as u64
    }
}

/// The state of one market's LMSR: liquidity `b` and the outstanding quantities.
///
/// Precision: all three fields are integers in millionths (b in micro-USDC, q in micro-shares;
/// one share pays 1 USDC = 1,000,000 micro-USDC). The quantities include the opening offset
/// from the prior (see [`Lmsr::opening`]), so `q_yes = q0_yes + shares sold to traders`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lmsr {
    /// Liquidity parameter b, micro-USDC, in [`LIQUIDITY_MIN`, `LIQUIDITY_MAX`].
    b: u64,
    /// Outstanding YES quantity, micro-shares, ≤ [`QUANTITY_MAX`].
    q_yes: u64,
    /// Outstanding NO quantity, micro-shares, ≤ [`QUANTITY_MAX`].
    q_no: u64,
}

/// What a buy of `amount` micro-USDC (net of fee) gets, and the state after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fill {
    /// Micro-shares bought (buy) or micro-USDC paid out (sell), already rounded down.
    pub amount_out: u64,
    /// The market maker's state after the trade.
    pub after: Lmsr,
}

impl Lmsr {
    /// A state inside the domain, or the reason it is not.
    pub fn new(b: u64, q_yes: u64, q_no: u64) -> Result<Self, LmsrError> {
        if !(LIQUIDITY_MIN..=LIQUIDITY_MAX).contains(&b) {
            return Err(LmsrError::LiquidityOutOfRange);
        }
        if q_yes > QUANTITY_MAX || q_no > QUANTITY_MAX {
            return Err(LmsrError::QuantityOutOfRange);
        }
        if q_yes.abs_diff(q_no) as u128 > MAX_SKEW as u128 * b as u128 {
            return Err(LmsrError::PriceOutOfDomain);
        }
        Ok(Lmsr { b, q_yes, q_no })
    }

    /// Liquidity parameter b, micro-USDC.
    pub fn b(&self) -> u64 {
        self.b
    }

    /// Outstanding quantity of `side`, micro-shares.
    pub fn q(&self, side: Side) -> u64 {
        match side {
            Side::Yes => self.q_yes,
            Side::No => self.q_no,
        }
    }

    /// The opening state for a prior probability of YES, in millionths (clamped to
    /// [`PRIOR_MIN_PPM`], [`PRIOR_MAX_PPM`] = [0.02, 0.98]): q_yes - q_no = b·ln(p/(1-p)),
    /// with the smaller quantity 0. Fund it with [`Lmsr::subsidy`].
    pub fn opening(b: u64, prior_yes_ppm: u32) -> Result<Self, LmsrError> {
        if prior_yes_ppm == 0 || prior_yes_ppm as u64 >= MICRO {
            return Err(LmsrError::PriorOutOfRange);
        }
        let p = prior_yes_ppm.clamp(PRIOR_MIN_PPM, PRIOR_MAX_PPM) as u64;
        let (hi, lo) = if p * 2 >= MICRO { (p, MICRO - p) } else { (MICRO - p, p) };
        // Rounding q0 either way is harmless: the subsidy is computed from the q0 actually used.
        let skew = ((b as u128 * ln_ratio(hi, lo) as u128) >> FRAC_BITS) as u64;
        let (q_yes, q_no) = if p * 2 >= MICRO { (skew, 0) } else { (0, skew) };
        Lmsr::new(b, q_yes, q_no)
    }

    /// The market maker's worst-case loss from this state, rounded up, in micro-USDC:
    /// C(q) - min(q_yes, q_no). Moved into the market at creation, it makes the market solvent
    /// whatever is traded: for an opening prior p this is b·ln(1/min(p, 1-p)).
    pub fn subsidy(&self) -> u64 {
        let skew = self.q_yes.abs_diff(self.q_no);
        skew + ceil_times_b(self.b, ln_1p_exp_neg(ratio(skew as i128, self.b)))
    }

    /// The exact-to-18-digits price of `side`.
    pub fn price(&self, side: Side) -> Price {
        // p_small = e/(1+e) with e = e^{-|q_yes - q_no|/b} = m·2^-k. The mantissa product is
        // taken at 2^-120 before the shift, and converted to 10^-36 through a 256-bit product,
        // so tiny prices keep their digits.
        let skew = self.q_yes.abs_diff(self.q_no);
        let (m, k) = exp_neg_parts(ratio(skew as i128, self.b));
        let inv_one_plus_e = (1u128 << (2 * FRAC_BITS)) / (ONE_U + (m >> k));
        let small_q120 = (m * inv_one_plus_e) >> k;
        let small = mul_shr(small_q120, E36, 2 * FRAC_BITS);
        let side_is_cheap = match side {
            Side::Yes => self.q_yes <= self.q_no,
            Side::No => self.q_no < self.q_yes,
        };
        if side_is_cheap { Price(small) } else { Price(E36 - small) }
    }

    /// The two prices in millionths, as the API shows them: YES rounded to nearest and NO its
    /// complement, so the two always sum to exactly 1.000000.
    pub fn prices_micro(&self) -> (u64, u64) {
        let yes = self.price(Side::Yes).to_micro();
        (yes, MICRO - yes)
    }

    /// Micro-shares of `side` that a net payment of `amount` micro-USDC buys (rounded down),
    /// and the state after the purchase.
    pub fn buy(&self, side: Side, amount: u64) -> Result<Fill, LmsrError> {
        if amount == 0 {
            return Err(LmsrError::ZeroAmount);
        }
        if amount > AMOUNT_MAX {
            return Err(LmsrError::AmountOutOfRange);
        }
        let z = ln_exp_m1(amount, self.b) + softplus(self.skew_against(side));
        let shares = floor_times_b(self.b, softplus(z));
        let after = self.with_delta(side, shares as i128)?;
        Ok(Fill { amount_out: shares, after })
    }

    /// Micro-USDC (net of fee) that buying `shares` micro-shares of `side` costs, rounded up.
    pub fn cost(&self, side: Side, shares: u64) -> Result<u64, LmsrError> {
        if shares == 0 {
            return Err(LmsrError::ZeroAmount);
        }
        self.with_delta(side, shares as i128)?;
        let u = self.skew_against(side);
        let t = ratio(shares as i128, self.b);
        let c = log_sum_exp(t - softplus(u), -softplus(-u));
        Ok(ceil_times_b(self.b, c + 1)) // +1 ulp: t above was rounded down
    }

    /// Micro-USDC paid out for selling `shares` micro-shares of `side` (rounded down), and the
    /// state after the sale.
    pub fn sell(&self, side: Side, shares: u64) -> Result<Fill, LmsrError> {
        if shares == 0 {
            return Err(LmsrError::ZeroAmount);
        }
        let after = self.with_delta(side, -(shares as i128))?;
        let u = self.skew_against(side);
        let t = ratio(shares as i128, self.b);
        let c = -log_sum_exp(-softplus(-u), -softplus(u) - t);
        Ok(Fill { amount_out: floor_times_b(self.b, c), after })
    }

    /// u = (q_other - q_side)/b in Q60: how far `side` trails the other outcome.
    fn skew_against(&self, side: Side) -> i128 {
        let (q_side, q_other) = match side {
            Side::Yes => (self.q_yes, self.q_no),
            Side::No => (self.q_no, self.q_yes),
        };
        ratio(q_other as i128 - q_side as i128, self.b)
    }

    /// The state with `delta` micro-shares added to (or, negative, removed from) `side`.
    fn with_delta(&self, side: Side, delta: i128) -> Result<Lmsr, LmsrError> {
        let q = match side {
            Side::Yes => self.q_yes,
            Side::No => self.q_no,
        } as i128;
        let moved = q + delta;
        if moved < 0 {
            return Err(LmsrError::InsufficientShares);
        }
        let moved = u64::try_from(moved).map_err(|_| LmsrError::QuantityOutOfRange)?;
        match side {
            Side::Yes => Lmsr::new(self.b, moved, self.q_no),
            Side::No => Lmsr::new(self.b, self.q_yes, moved),
        }
    }
}

/// b·x rounded down after subtracting the error margin; 0 if that is negative.
/// Inputs: b ≤ `LIQUIDITY_MAX` (< 2^37), |x| < 2^87 (Q60), so b·x fits in i128.
fn floor_times_b(b: u64, x: i128) -> u64 {
    let exact = b as i128 * x - (b as u128 * ERROR_ULPS) as i128;
    if exact <= 0 { 0 } else { (exact >> FRAC_BITS) as u64 }
}

/// b·x rounded up after adding the error margin; 0 if x ≤ 0.
fn ceil_times_b(b: u64, x: i128) -> u64 {
    if x <= 0 {
        return 0;
    }
    let exact = b as u128 * x as u128 + b as u128 * ERROR_ULPS;
    exact.div_ceil(ONE_U) as u64
}
