//! Exact LMSR market-maker math for binary funding-rate markets.
//!
//! `no_std`, integer-only (no floats anywhere), no Solana or Anchor types: the on-chain program
//! and the API both call these functions, so a quote is exactly what the program will execute.
//!
//! # Units
//! - USDC amounts: `u64` micro-USDC (1 USDC = 1,000,000).
//! - Share quantities: `u64` micro-shares (a winning share pays 1 USDC).
//! - Probabilities: [`Price`] at 36 decimals; [`Lmsr::prices_micro`] gives the six-decimal view.
//! - Internal arithmetic: signed binary fixed point with 60 fractional bits ([`fixed`]),
//!   errors of a few 2^-60 ≈ 8.7e-19.
//!
//! # Domain
//! Inside it every function returns a value; outside it a [`LmsrError`], never a panic or a
//! wraparound.
//! - b in [1 USDC, 100,000 USDC] ([`LIQUIDITY_MIN`], [`LIQUIDITY_MAX`]);
//! - q_yes, q_no ≤ 10^9 shares ([`QUANTITY_MAX`]);
//! - |q_yes − q_no| ≤ 40·b ([`MAX_SKEW`]): prices stay within [4.2e-18, 1 − 4.2e-18]; a trade
//!   that would leave this band is refused (beyond it a share costs less than 1e-17 USDC);
//! - one trade's amount ≤ 10^8 USDC ([`AMOUNT_MAX`]).
//!
//! # Rounding
//! Shares bought and USDC paid out round down; USDC charged (cost, fee, subsidy) rounds up, each
//! after the exact value is moved by a safety margin larger than the arithmetic error
//! ([`fixed::ERROR_ULPS`]). The consequence the tests pin: a market's collateral (subsidy plus
//! net payments in, minus payments out) always covers max(shares sold YES, shares sold NO).
#![no_std]

pub mod fee;
pub mod fixed;
mod market;

pub use fee::{FEE_BPS, fee};
pub use market::{Fill, Lmsr, Price, Side};

/// Millionths in one unit: micro-USDC per USDC, micro-shares per share, ppm per probability 1.
pub const MICRO: u64 = 1_000_000;
/// Smallest liquidity parameter b: 1 USDC.
pub const LIQUIDITY_MIN: u64 = MICRO;
/// Largest liquidity parameter b: 100,000 USDC.
pub const LIQUIDITY_MAX: u64 = 100_000 * MICRO;
/// Largest outstanding quantity of either side: 10^9 shares.
pub const QUANTITY_MAX: u64 = 1_000_000_000 * MICRO;
/// Largest |q_yes − q_no| / b.
pub const MAX_SKEW: u64 = 40;
/// Largest net amount of one buy: 10^8 USDC.
pub const AMOUNT_MAX: u64 = 100_000_000 * MICRO;
/// The opening prior is clamped to [0.02, 0.98].
pub const PRIOR_MIN_PPM: u32 = 20_000;
/// See [`PRIOR_MIN_PPM`].
pub const PRIOR_MAX_PPM: u32 = 980_000;

/// Why a computation was refused: its inputs or its result lie outside the domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LmsrError {
    /// b outside [`LIQUIDITY_MIN`], [`LIQUIDITY_MAX`].
    LiquidityOutOfRange,
    /// A quantity above [`QUANTITY_MAX`] (given, or after the trade).
    QuantityOutOfRange,
    /// |q_yes − q_no| would exceed [`MAX_SKEW`]·b: the trade pushes a price past the domain.
    PriceOutOfDomain,
    /// A trade amount above [`AMOUNT_MAX`].
    AmountOutOfRange,
    /// A trade of zero.
    ZeroAmount,
    /// Selling more shares than are outstanding on that side.
    InsufficientShares,
    /// A prior probability of 0 or ≥ 1.
    PriorOutOfRange,
    /// A fee rate above 100 %.
    FeeOutOfRange,
}

impl core::fmt::Display for LmsrError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            LmsrError::LiquidityOutOfRange => "liquidity b outside [1, 100000] USDC",
            LmsrError::QuantityOutOfRange => "outstanding shares would exceed 1e9",
            LmsrError::PriceOutOfDomain => "trade would push the price outside the market's range",
            LmsrError::AmountOutOfRange => "amount exceeds 100000000 USDC",
            LmsrError::ZeroAmount => "amount must be positive",
            LmsrError::InsufficientShares => "more shares than are outstanding",
            LmsrError::PriorOutOfRange => "prior must be strictly between 0 and 1",
            LmsrError::FeeOutOfRange => "fee rate above 100 %",
        })
    }
}
