use anchor_lang::prelude::*;
use anchor_spl::token::{self, CloseAccount, Token, TokenAccount};

use crate::error::FundingMarketError;
use crate::events::MarketClosed;
use crate::state::{Config, Market, MarketStatus};
use crate::token::transfer_signed;

/// After every position is settled: what is left in the market vault (the unused subsidy and
/// the market maker's gains) returns to the treasury, and both accounts close, their rent to
/// the authority.
#[event_cpi]
#[derive(Accounts)]
pub struct CloseMarket<'info> {
    #[account(seeds = [Config::SEED], bump = config.bump, has_one = authority @ FundingMarketError::NotAuthority)]
    pub config: Box<Account<'info, Config>>,
    #[account(mut)]
    pub authority: Signer<'info>,
    #[account(mut, seeds = [Market::SEED, market.market_id.as_ref()], bump = market.bump, close = authority)]
    pub market: Box<Account<'info, Market>>,
    #[account(mut, address = market.vault)]
    pub market_vault: Box<Account<'info, TokenAccount>>,
    #[account(mut, address = config.treasury)]
    pub treasury: Box<Account<'info, TokenAccount>>,
    pub token_program: Program<'info, Token>,
}

pub fn handler(ctx: Context<CloseMarket>) -> Result<()> {
    let market = &ctx.accounts.market;
    require!(market.status != MarketStatus::Open, FundingMarketError::NotFinalized);
    require!(market.open_positions == 0, FundingMarketError::PositionsOpen);
    let seeds: &[&[u8]] = &[Market::SEED, market.market_id.as_ref(), &[market.bump]];
    let remaining = ctx.accounts.market_vault.amount;
    transfer_signed(
        &ctx.accounts.token_program,
        ctx.accounts.market_vault.to_account_info(),
        ctx.accounts.treasury.to_account_info(),
        market.to_account_info(),
        seeds,
        remaining,
    )?;
    let accounts = CloseAccount {
        account: ctx.accounts.market_vault.to_account_info(),
        destination: ctx.accounts.authority.to_account_info(),
        authority: market.to_account_info(),
    };
    token::close_account(CpiContext::new_with_signer(ctx.accounts.token_program.key(), accounts, &[seeds]))?;
    emit_cpi!(MarketClosed { market: market.key(), returned_to_treasury: remaining, ts: Clock::get()?.unix_timestamp });
    Ok(())
}
