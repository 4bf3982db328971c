//! The program's errors, each a distinct code for clients and tests to match on.

use anchor_lang::prelude::*;

#[error_code]
pub enum FundingMarketError {
    #[msg("fee above 100 %")]
    FeeTooHigh,
    #[msg("minimum amounts must be positive")]
    ZeroMinimum,
    #[msg("signer is neither the wallet nor the operator")]
    NotWalletOrOperator,
    #[msg("signer is not the config authority")]
    NotAuthority,
    #[msg("signer is not the oracle")]
    NotOracle,
    #[msg("open < close <= settlement - 300 s is required")]
    InvalidSchedule,
    #[msg("trading has not opened yet")]
    MarketNotOpen,
    #[msg("market is not open for trading")]
    MarketClosed,
    #[msg("amount below the minimum trade")]
    TradeTooSmall,
    #[msg("amount must be positive")]
    ZeroAmount,
    #[msg("slippage bound violated")]
    SlippageExceeded,
    #[msg("not enough USDC in the vault")]
    InsufficientBalance,
    #[msg("not enough shares in the position")]
    InsufficientShares,
    #[msg("deposit below the minimum")]
    BelowMinimumDeposit,
    #[msg("settlement time not reached")]
    TooEarly,
    #[msg("market already resolved or voided")]
    AlreadyFinalized,
    #[msg("market not resolved or voided yet")]
    NotFinalized,
    #[msg("positions remain unsettled")]
    PositionsOpen,
    #[msg("market vault would not cover the shares outstanding")]
    Insolvent,
    #[msg("the trade buys no shares")]
    NoShares,
    #[msg("LMSR: liquidity outside the domain")]
    LiquidityOutOfRange,
    #[msg("LMSR: quantity outside the domain")]
    QuantityOutOfRange,
    #[msg("LMSR: the trade would push the price outside the market's range")]
    PriceOutOfDomain,
    #[msg("LMSR: amount outside the domain")]
    AmountOutOfRange,
    #[msg("LMSR: prior outside (0, 1)")]
    PriorOutOfRange,
    #[msg("arithmetic overflow")]
    Overflow,
    #[msg("initialize must be signed by the program's upgrade authority")]
    NotUpgradeAuthority,
}

/// The program error for a math-domain error.
pub fn math(e: lmsr::LmsrError) -> FundingMarketError {
    use lmsr::LmsrError::*;
    match e {
        LiquidityOutOfRange => FundingMarketError::LiquidityOutOfRange,
        QuantityOutOfRange => FundingMarketError::QuantityOutOfRange,
        PriceOutOfDomain => FundingMarketError::PriceOutOfDomain,
        AmountOutOfRange => FundingMarketError::AmountOutOfRange,
        ZeroAmount => FundingMarketError::ZeroAmount,
        InsufficientShares => FundingMarketError::InsufficientShares,
        PriorOutOfRange => FundingMarketError::PriorOutOfRange,
        FeeOutOfRange => FundingMarketError::FeeTooHigh,
    }
}
