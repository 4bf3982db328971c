use anchor_lang::prelude::*;

/// The program's singleton configuration, PDA `["config"]`.
#[account]
#[derive(InitSpace)]
pub struct Config {
    /// Co-signs every `create_market` (the service's key).
    pub authority: Pubkey,
    /// Acts for users in custodial trades and withdrawals.
    pub operator: Pubkey,
    /// Resolves and voids markets.
    pub oracle: Pubkey,
    /// The USDC mint (6 decimals).
    pub usdc_mint: Pubkey,
    /// Token account owned by this config: receives fees, funds market subsidies.
    pub treasury: Pubkey,
    /// Trading fee in basis points (100 = 1 %), charged on top of the amount.
    pub fee_bps: u16,
    /// Smallest deposit swept into a user's vault, micro-USDC (1_000_000 = 1 USDC).
    pub min_deposit: u64,
    /// Smallest trade, micro-USDC (1_000_000 = 1 USDC).
    pub min_trade: u64,
    pub bump: u8,
    pub treasury_bump: u8,
}

impl Config {
    pub const SEED: &'static [u8] = b"config";
    pub const TREASURY_SEED: &'static [u8] = b"treasury";
}
