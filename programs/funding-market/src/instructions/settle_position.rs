use anchor_lang::prelude::*;
use anchor_spl::token::{Token, TokenAccount};

use crate::error::FundingMarketError;
use crate::events::PositionSettled;
use crate::state::{Market, MarketStatus, Position, UserAccount};
use crate::token::transfer_signed;

/// Pays a position out into its owner's vault and closes it. Permissionless crank.
///
/// Resolved: each winning micro-share pays one micro-USDC (the market vault always holds enough,
/// see `trade::require_solvent`). Voided: the position gets back what it paid in net, fees
/// included (`paid_in - paid_out`, never negative), or — when the market vault could not cover
/// every such claim at the void (a trader who sold at a profit took some of it) — its pro-rata
/// share of the vault (`Market::refund`), rounded down. Nothing is ever drawn from the treasury.
#[event_cpi]
#[derive(Accounts)]
pub struct SettlePosition<'info> {
    #[account(mut, seeds = [Market::SEED, market.market_id.as_ref()], bump = market.bump)]
    pub market: Box<Account<'info, Market>>,
    #[account(mut, address = market.vault)]
    pub market_vault: Box<Account<'info, TokenAccount>>,
    #[account(
        mut,
        seeds = [Position::SEED, market.key().as_ref(), position.wallet.as_ref()],
        bump = position.bump,
        close = rent_receiver,
    )]
    pub position: Box<Account<'info, Position>>,
    #[account(seeds = [UserAccount::SEED, position.wallet.as_ref()], bump = user.bump)]
    pub user: Box<Account<'info, UserAccount>>,
    #[account(mut, address = user.vault)]
    pub user_vault: Box<Account<'info, TokenAccount>>,
    /// CHECK: receives the position's rent; must be whoever paid it.
    #[account(mut, address = position.rent_payer)]
    pub rent_receiver: UncheckedAccount<'info>,
    pub token_program: Program<'info, Token>,
}

pub fn handler(ctx: Context<SettlePosition>) -> Result<()> {
    let market = &ctx.accounts.market;
    let payout = market.payout(&ctx.accounts.position)?;
    require!(payout <= ctx.accounts.market_vault.amount, FundingMarketError::Insolvent);

    transfer_signed(
        &ctx.accounts.token_program,
        ctx.accounts.market_vault.to_account_info(),
        ctx.accounts.user_vault.to_account_info(),
        market.to_account_info(),
        &[Market::SEED, market.market_id.as_ref(), &[market.bump]],
        payout,
    )?;

    ctx.accounts.user_vault.reload()?;
    let user_vault_balance = ctx.accounts.user_vault.amount;
    let position = &ctx.accounts.position;
    let (yes_shares, no_shares, wallet) = (position.yes_shares, position.no_shares, position.wallet);
    ctx.accounts.market.record_settled(position)?;
    let voided = ctx.accounts.market.status == MarketStatus::Voided;
    emit_cpi!(PositionSettled {
        market: ctx.accounts.market.key(),
        wallet,
        yes_shares,
        no_shares,
        payout,
        user_vault_balance,
        voided,
        ts: Clock::get()?.unix_timestamp
    });
    Ok(())
}
