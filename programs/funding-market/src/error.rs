//! The program's errors, each a distinct code for clients and tests to match on.

use anchor_lang::prelude::*;

#[error_code]
pub enum FundingMarketError {
    #[msg("fee above 100 %")]
    FeeTooHigh,
    #[msg("minimum amounts must be positive")]
    ZeroMinimum,
}
