//! Events, one per state change, emitted with `emit_cpi!` (inner instructions survive where
//! logs get truncated); trades are logged with `emit!` as well, for clients that read logs. Each carries everything the indexer needs without reading accounts.
//! Amounts: micro-USDC; shares: micro-shares; prices: millionths (YES + NO = 1,000,000);
//! timestamps: Unix seconds; rates: 1e-12.

use anchor_lang::prelude::*;

use crate::state::{Outcome, Side};

#[event]
pub struct UserCreated {
    pub wallet: Pubkey,
    /// The `UserAccount` PDA.
    pub user: Pubkey,
    /// The personal deposit address (USDC token account).
    pub deposit: Pubkey,
    /// The trading balance (USDC token account).
    pub vault: Pubkey,
    /// Unix seconds.
    pub ts: i64,
}

#[event]
pub struct DepositSwept {
    pub wallet: Pubkey,
    /// Swept, micro-USDC.
    pub amount: u64,
    /// The vault after the sweep, micro-USDC.
    pub vault_balance: u64,
    /// Unix seconds.
    pub ts: i64,
}

#[event]
pub struct MarketCreated {
    pub market: Pubkey,
    /// The service's UUID.
    pub market_id: [u8; 16],
    /// Series slug, zero-padded UTF-8.
    pub series: [u8; 32],
    /// Unix seconds (also `close_ts`, `settlement_ts`, `ts`).
    pub open_ts: i64,
    pub close_ts: i64,
    pub settlement_ts: i64,
    /// LMSR liquidity, micro-USDC.
    pub b: u64,
    /// Opening quantities, micro-shares.
    pub q_yes: u64,
    pub q_no: u64,
    /// Moved from the treasury, micro-USDC.
    pub subsidy: u64,
    /// Opening prices in millionths; they sum to 1,000,000.
    pub yes_price: u64,
    pub no_price: u64,
    pub ts: i64,
}

/// Also logged as a `Program data:` line (`emit!`), which is what Anchor's `.simulate()` and
/// `addEventListener` decode; the indexer reads the inner instruction.
#[event]
#[derive(Clone)]
pub struct TradeExecuted {
    pub market: Pubkey,
    pub wallet: Pubkey,
    pub side: Side,
    /// true for a buy, false for a sell.
    pub is_buy: bool,
    /// Micro-shares bought or sold.
    pub shares: u64,
    /// Buy: USDC spent on shares (fee excluded). Sell: USDC the shares fetched (fee included).
    pub amount: u64,
    /// Micro-USDC, held in the market until resolution.
    pub fee: u64,
    /// Quantities after the trade, micro-shares.
    pub q_yes: u64,
    pub q_no: u64,
    /// Prices after the trade in millionths; they sum to 1,000,000.
    pub yes_price: u64,
    pub no_price: u64,
    /// The market's cumulative volume, micro-USDC, and trade count, after the trade.
    pub volume: u64,
    pub trade_count: u64,
    /// The trader's position after the trade, micro-shares.
    pub position_yes: u64,
    pub position_no: u64,
    /// The market vault after the trade, micro-USDC.
    pub vault_balance: u64,
    /// The trader's vault (trading balance) after the trade, micro-USDC.
    pub user_vault_balance: u64,
    /// Unix seconds.
    pub ts: i64,
}

#[event]
pub struct MarketFinalized {
    pub market: Pubkey,
    pub voided: bool,
    /// `Undecided` on a void.
    pub outcome: Outcome,
    /// The settled funding rate in units of 1e-12 (0 on a void).
    pub actual_rate: i64,
    /// Fees moved to the treasury (0 on void: they are refunded).
    pub fees_to_treasury: u64,
    /// Unix seconds.
    pub ts: i64,
}

#[event]
pub struct PositionSettled {
    pub market: Pubkey,
    pub wallet: Pubkey,
    /// The position settled, micro-shares.
    pub yes_shares: u64,
    pub no_shares: u64,
    /// Paid into the owner's vault, micro-USDC.
    pub payout: u64,
    /// The owner's vault after the payout, micro-USDC.
    pub user_vault_balance: u64,
    pub voided: bool,
    /// Unix seconds.
    pub ts: i64,
}

#[event]
pub struct Withdrawn {
    pub wallet: Pubkey,
    /// The USDC token account paid.
    pub destination: Pubkey,
    /// Micro-USDC.
    pub amount: u64,
    /// The vault after the withdrawal, micro-USDC.
    pub vault_balance: u64,
    /// Unix seconds.
    pub ts: i64,
}

#[event]
pub struct MarketClosed {
    pub market: Pubkey,
    /// Micro-USDC.
    pub returned_to_treasury: u64,
    /// Unix seconds.
    pub ts: i64,
}
