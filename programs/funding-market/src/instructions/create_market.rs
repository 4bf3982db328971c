use anchor_lang::prelude::*;
use anchor_spl::token::{Mint, Token, TokenAccount};

use crate::error::{FundingMarketError, math};
use crate::events::MarketCreated;
use crate::state::{Config, Market, MarketStatus, Outcome};
use crate::token::transfer_signed;

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Debug)]
pub struct CreateMarketParams {
    /// The service's UUID of the market.
    pub market_id: [u8; 16],
    /// Series slug, zero-padded UTF-8.
    pub series: [u8; 32],
    pub open_ts: i64,
    pub close_ts: i64,
    pub settlement_ts: i64,
    /// LMSR liquidity, micro-USDC.
    pub b: u64,
    /// Opening probability of YES in millionths (clamped to [0.02, 0.98]).
    pub prior_ppm: u32,
}

/// Creates a market and funds it with the subsidy for its opening prior, from the treasury.
/// The config authority must sign (the service co-signs); any wallet may pay the rent.
#[event_cpi]
#[derive(Accounts)]
#[instruction(params: CreateMarketParams)]
pub struct CreateMarket<'info> {
    #[account(seeds = [Config::SEED], bump = config.bump, has_one = authority @ FundingMarketError::NotAuthority)]
    pub config: Box<Account<'info, Config>>,
    pub authority: Signer<'info>,
    #[account(mut)]
    pub payer: Signer<'info>,
    #[account(
        init,
        payer = payer,
        space = 8 + Market::INIT_SPACE,
        seeds = [Market::SEED, params.market_id.as_ref()],
        bump,
    )]
    pub market: Box<Account<'info, Market>>,
    #[account(
        init,
        payer = payer,
        seeds = [Market::VAULT_SEED, market.key().as_ref()],
        bump,
        token::mint = usdc_mint,
        token::authority = market,
    )]
    pub vault: Box<Account<'info, TokenAccount>>,
    #[account(mut, address = config.treasury)]
    pub treasury: Box<Account<'info, TokenAccount>>,
    #[account(address = config.usdc_mint)]
    pub usdc_mint: Box<Account<'info, Mint>>,
    pub system_program: Program<'info, System>,
    pub token_program: Program<'info, Token>,
}

pub fn handler(ctx: Context<CreateMarket>, params: CreateMarketParams) -> Result<()> {
    require!(
        params.open_ts < params.close_ts && params.close_ts <= params.settlement_ts.saturating_sub(Market::MIN_CLOSE_BEFORE_SETTLEMENT),
        FundingMarketError::InvalidSchedule
    );
    let opening = lmsr::Lmsr::opening(params.b, params.prior_ppm).map_err(math)?;
    let subsidy = opening.subsidy();
    require!(ctx.accounts.treasury.amount >= subsidy, FundingMarketError::InsufficientBalance);
    let config = &ctx.accounts.config;
    transfer_signed(
        &ctx.accounts.token_program,
        ctx.accounts.treasury.to_account_info(),
        ctx.accounts.vault.to_account_info(),
        config.to_account_info(),
        &[Config::SEED, &[config.bump]],
        subsidy,
    )?;
    let market = &mut ctx.accounts.market;
    market.set_inner(Market {
        market_id: params.market_id,
        series: params.series,
        vault: ctx.accounts.vault.key(),
        open_ts: params.open_ts,
        close_ts: params.close_ts,
        settlement_ts: params.settlement_ts,
        b: params.b,
        q_yes: opening.q(lmsr::Side::Yes),
        q_no: opening.q(lmsr::Side::No),
        sold_yes: 0,
        sold_no: 0,
        subsidy,
        volume: 0,
        trade_count: 0,
        fees_held: 0,
        open_positions: 0,
        refund_claims: 0,
        refund_pool: 0,
        refund_claims_at_void: 0,
        status: MarketStatus::Open,
        outcome: Outcome::Undecided,
        actual_rate: 0,
        finalized_at: 0,
        bump: ctx.bumps.market,
        vault_bump: ctx.bumps.vault,
    });
    let (yes_price, no_price) = opening.prices_micro();
    emit_cpi!(MarketCreated {
        market: market.key(),
        market_id: params.market_id,
        series: params.series,
        open_ts: params.open_ts,
        close_ts: params.close_ts,
        settlement_ts: params.settlement_ts,
        b: params.b,
        q_yes: market.q_yes,
        q_no: market.q_no,
        subsidy,
        yes_price,
        no_price,
        ts: Clock::get()?.unix_timestamp,
    });
    Ok(())
}
