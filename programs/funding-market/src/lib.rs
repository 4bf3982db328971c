//! Funding-rate prediction markets: binary YES/NO markets on whether a perpetual's funding
//! rate is positive at settlement, priced by an LMSR market maker (the `lmsr` crate, shared
//! with the API so quotes equal execution).
//!
//! This file only routes instructions; each lives in `instructions/`, accounts in `state/`.

use anchor_lang::prelude::*;

#[cfg(not(target_os = "solana"))]
pub mod client;
pub mod error;
pub mod events;
pub mod instructions;
pub mod math;
pub mod state;
mod token;

use instructions::*;
use state::Side;

declare_id!("98ey5bZy5fsSRR6XLhB8Yy3kUPpviZSDL9pq9oL14g7J");

#[program]
pub mod funding_market {
    use super::*;

    /// Creates the singleton `Config` and the treasury token account. Once, signed by the
    /// program's upgrade authority.
    pub fn initialize(ctx: Context<Initialize>, params: InitializeParams) -> Result<()> {
        instructions::initialize::handler(ctx, params)
    }

    /// Creates a trader's account with its deposit and vault token accounts. Anyone may pay.
    pub fn create_user(ctx: Context<CreateUser>) -> Result<()> {
        instructions::create_user::handler(ctx)
    }

    /// Moves the deposit account's USDC into the vault once it reaches `min_deposit`.
    pub fn sweep_deposit(ctx: Context<SweepDeposit>) -> Result<()> {
        instructions::sweep_deposit::handler(ctx)
    }

    /// Creates a market, funded from the treasury; the config authority must sign.
    pub fn create_market(ctx: Context<CreateMarket>, params: CreateMarketParams) -> Result<()> {
        instructions::create_market::handler(ctx, params)
    }

    /// Spends `usdc_amount` (+ fee) micro-USDC on `side`; at least `min_shares` micro-shares.
    pub fn buy_shares(ctx: Context<BuyShares>, side: Side, usdc_amount: u64, min_shares: u64) -> Result<()> {
        instructions::trade::buy(ctx, side, usdc_amount, min_shares)
    }

    /// Sells `shares` micro-shares of `side`; at least `min_usdc_out` micro-USDC after the fee.
    pub fn sell_shares(ctx: Context<SellShares>, side: Side, shares: u64, min_usdc_out: u64) -> Result<()> {
        instructions::trade::sell(ctx, side, shares, min_usdc_out)
    }

    /// The oracle records the settled rate (1e-12 units); YES wins iff it is positive.
    pub fn resolve_market(ctx: Context<Finalize>, actual_rate: i64) -> Result<()> {
        instructions::finalize::resolve(ctx, actual_rate)
    }

    /// The oracle voids the market; every position is refunded.
    pub fn void_market(ctx: Context<Finalize>) -> Result<()> {
        instructions::finalize::void(ctx)
    }

    /// Pays a position out into its owner's vault and closes it. Permissionless.
    pub fn settle_position(ctx: Context<SettlePosition>) -> Result<()> {
        instructions::settle_position::handler(ctx)
    }

    /// Pays out and closes many positions of one market: `(position, owner's vault, rent
    /// receiver)` triples in the remaining accounts. Permissionless.
    pub fn settle_positions<'info>(ctx: Context<'info, SettlePositions<'info>>) -> Result<()> {
        instructions::settle_positions::handler(ctx)
    }

    /// Sends `amount` micro-USDC from the user's vault to a USDC token account.
    pub fn withdraw(ctx: Context<Withdraw>, amount: u64) -> Result<()> {
        instructions::withdraw::handler(ctx, amount)
    }

    /// Returns a finished market's remaining USDC to the treasury and closes its accounts.
    pub fn close_market(ctx: Context<CloseMarket>) -> Result<()> {
        instructions::close_market::handler(ctx)
    }
}
