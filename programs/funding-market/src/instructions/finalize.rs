//! `resolve_market` and `void_market`: the oracle ends a market. It resolves never before the
//! settlement time; it may void at any time, because a settlement time can cease to exist (the
//! venue changed the symbol's funding interval) and the round should stop trading as soon as
//! that is known. A void refunds everyone, so ending early takes nothing from anyone.

use anchor_lang::prelude::*;
use anchor_spl::token::{Token, TokenAccount};

use crate::error::FundingMarketError;
use crate::events::MarketFinalized;
use crate::state::{Config, Market, MarketStatus, Outcome};
use crate::token::transfer_signed;

#[event_cpi]
#[derive(Accounts)]
pub struct Finalize<'info> {
    #[account(seeds = [Config::SEED], bump = config.bump, has_one = oracle @ FundingMarketError::NotOracle)]
    pub config: Box<Account<'info, Config>>,
    pub oracle: Signer<'info>,
    #[account(mut, seeds = [Market::SEED, market.market_id.as_ref()], bump = market.bump)]
    pub market: Box<Account<'info, Market>>,
    #[account(mut, address = market.vault)]
    pub market_vault: Box<Account<'info, TokenAccount>>,
    #[account(mut, address = config.treasury)]
    pub treasury: Box<Account<'info, TokenAccount>>,
    pub token_program: Program<'info, Token>,
}

fn require_open(market: &Market) -> Result<()> {
    require!(market.status == MarketStatus::Open, FundingMarketError::AlreadyFinalized);
    Ok(())
}

/// Records the settled rate (1e-12 units); YES wins iff it is positive. The fees held for a
/// possible void go to the treasury.
pub fn resolve(ctx: Context<Finalize>, actual_rate: i64) -> Result<()> {
    let now = Clock::get()?.unix_timestamp;
    require_open(&ctx.accounts.market)?;
    require!(now >= ctx.accounts.market.settlement_ts, FundingMarketError::TooEarly);
    let market = &mut ctx.accounts.market;
    let fees = market.fees_held;
    transfer_signed(
        &ctx.accounts.token_program,
        ctx.accounts.market_vault.to_account_info(),
        ctx.accounts.treasury.to_account_info(),
        market.to_account_info(),
        &[Market::SEED, market.market_id.as_ref(), &[market.bump]],
        fees,
    )?;
    market.fees_held = 0;
    market.status = MarketStatus::Resolved;
    market.outcome = if actual_rate > 0 { Outcome::Yes } else { Outcome::No };
    market.actual_rate = actual_rate;
    market.finalized_at = now;
    emit_cpi!(MarketFinalized { market: market.key(), voided: false, outcome: market.outcome, actual_rate, fees_to_treasury: fees, ts: now });
    Ok(())
}

/// Voids the market (no consensus on the rate, or a settlement time that no longer exists):
/// every position is refunded what it paid in net, fees included (so the fees stay in the
/// market), out of what the market vault holds — in full when it covers every claim, pro rata
/// when it does not (`Market::refund`). The treasury adds nothing: a void costs it at most the
/// round's subsidy, as any round does, so wallets that trade against each other and expect a
/// void cannot shift their gains onto it.
pub fn void(ctx: Context<Finalize>) -> Result<()> {
    let now = Clock::get()?.unix_timestamp;
    require_open(&ctx.accounts.market)?;
    let held = ctx.accounts.market_vault.amount;
    let market = &mut ctx.accounts.market;
    market.refund_pool = held.min(market.refund_claims);
    market.refund_claims_at_void = market.refund_claims;
    market.status = MarketStatus::Voided;
    market.finalized_at = now;
    emit_cpi!(MarketFinalized { market: market.key(), voided: true, outcome: Outcome::Undecided, actual_rate: 0, fees_to_treasury: 0, ts: now });
    Ok(())
}
