//! Events, one per state change, emitted with `emit_cpi!` (inner instructions survive where
//! logs get truncated). Each carries everything the indexer needs without reading accounts.
//! Amounts: micro-USDC; shares: micro-shares; prices: millionths (YES + NO = 1,000,000);
//! timestamps: Unix seconds; rates: 1e-12.

use anchor_lang::prelude::*;

use crate::state::{Outcome, Side};

#[event]
pub struct UserCreated {
    pub wallet: Pubkey,
    pub user: Pubkey,
    pub deposit: Pubkey,
    pub vault: Pubkey,
    pub ts: i64,
}

#[event]
pub struct DepositSwept {
    pub wallet: Pubkey,
    pub amount: u64,
    pub vault_balance: u64,
    pub ts: i64,
}

#[event]
pub struct MarketCreated {
    pub market: Pubkey,
    pub market_id: [u8; 16],
    pub series: [u8; 32],
    pub open_ts: i64,
    pub close_ts: i64,
    pub settlement_ts: i64,
    pub b: u64,
    pub q_yes: u64,
    pub q_no: u64,
    pub subsidy: u64,
    pub yes_price: u64,
    pub no_price: u64,
    pub ts: i64,
}

#[event]
pub struct TradeExecuted {
    pub market: Pubkey,
    pub wallet: Pubkey,
    pub side: Side,
    /// true for a buy, false for a sell.
    pub is_buy: bool,
    pub shares: u64,
    /// Buy: USDC spent on shares (fee excluded). Sell: USDC the shares fetched (fee included).
    pub amount: u64,
    pub fee: u64,
    pub q_yes: u64,
    pub q_no: u64,
    pub yes_price: u64,
    pub no_price: u64,
    pub volume: u64,
    pub trade_count: u64,
    /// The trader's position after the trade.
    pub position_yes: u64,
    pub position_no: u64,
    pub vault_balance: u64,
    pub ts: i64,
}

#[event]
pub struct MarketFinalized {
    pub market: Pubkey,
    pub voided: bool,
    pub outcome: Outcome,
    pub actual_rate: i64,
    /// Fees moved to the treasury (0 on void: they are refunded).
    pub fees_to_treasury: u64,
    pub ts: i64,
}

#[event]
pub struct PositionSettled {
    pub market: Pubkey,
    pub wallet: Pubkey,
    pub yes_shares: u64,
    pub no_shares: u64,
    pub payout: u64,
    /// Part of `payout` drawn from the treasury because the market vault fell short (voids only).
    pub from_treasury: u64,
    pub voided: bool,
    pub ts: i64,
}

#[event]
pub struct Withdrawn {
    pub wallet: Pubkey,
    pub destination: Pubkey,
    pub amount: u64,
    pub vault_balance: u64,
    pub ts: i64,
}

#[event]
pub struct MarketClosed {
    pub market: Pubkey,
    pub returned_to_treasury: u64,
    pub ts: i64,
}
