//! `buy_shares` and `sell_shares`: the LMSR trades, signed by the wallet or by the operator
//! acting for it. Prices come from the shared `lmsr` crate, so they equal the API's quotes.

use anchor_lang::prelude::*;
use anchor_spl::token::{Token, TokenAccount};

use crate::error::{FundingMarketError, math};
use crate::events::TradeExecuted;
use crate::math::SafeMath;
use crate::state::{Config, Market, MarketStatus, Position, Side, UserAccount};
use crate::token::transfer_signed;

#[event_cpi]
#[derive(Accounts)]
pub struct BuyShares<'info> {
    #[account(seeds = [Config::SEED], bump = config.bump)]
    pub config: Box<Account<'info, Config>>,
    #[account(mut, seeds = [Market::SEED, market.market_id.as_ref()], bump = market.bump)]
    pub market: Box<Account<'info, Market>>,
    #[account(mut, address = market.vault)]
    pub market_vault: Box<Account<'info, TokenAccount>>,
    #[account(seeds = [UserAccount::SEED, user.wallet.as_ref()], bump = user.bump)]
    pub user: Box<Account<'info, UserAccount>>,
    #[account(mut, address = user.vault)]
    pub user_vault: Box<Account<'info, TokenAccount>>,
    #[account(
        init_if_needed,
        payer = signer,
        space = 8 + Position::INIT_SPACE,
        seeds = [Position::SEED, market.key().as_ref(), user.wallet.as_ref()],
        bump,
    )]
    pub position: Box<Account<'info, Position>>,
    /// The wallet, or the operator acting for it; pays a new position's rent.
    #[account(mut)]
    pub signer: Signer<'info>,
    pub system_program: Program<'info, System>,
    pub token_program: Program<'info, Token>,
}

#[event_cpi]
#[derive(Accounts)]
pub struct SellShares<'info> {
    #[account(seeds = [Config::SEED], bump = config.bump)]
    pub config: Box<Account<'info, Config>>,
    #[account(mut, seeds = [Market::SEED, market.market_id.as_ref()], bump = market.bump)]
    pub market: Box<Account<'info, Market>>,
    #[account(mut, address = market.vault)]
    pub market_vault: Box<Account<'info, TokenAccount>>,
    #[account(seeds = [UserAccount::SEED, user.wallet.as_ref()], bump = user.bump)]
    pub user: Box<Account<'info, UserAccount>>,
    #[account(mut, address = user.vault)]
    pub user_vault: Box<Account<'info, TokenAccount>>,
    #[account(mut, seeds = [Position::SEED, market.key().as_ref(), user.wallet.as_ref()], bump = position.bump)]
    pub position: Box<Account<'info, Position>>,
    pub signer: Signer<'info>,
    pub token_program: Program<'info, Token>,
}

/// Trading is allowed while the market is open and open_ts <= now < close_ts.
fn require_tradeable(market: &Market, now: i64) -> Result<()> {
    require!(market.status == MarketStatus::Open, FundingMarketError::MarketClosed);
    require!(now >= market.open_ts, FundingMarketError::MarketNotOpen);
    require!(now < market.close_ts, FundingMarketError::MarketClosed);
    Ok(())
}

/// The market's vault must hold the fees it keeps plus a full payout of either side.
fn require_solvent(market: &Market, vault: &mut Account<TokenAccount>) -> Result<()> {
    vault.reload()?;
    let owed = market.sold_yes.max(market.sold_no).checked_add(market.fees_held).ok_or(FundingMarketError::Overflow)?;
    require!(vault.amount >= owed, FundingMarketError::Insolvent);
    Ok(())
}

fn add(a: u64, b: u64) -> Result<u64> {
    Ok(a.safe_add(b)?)
}

fn sub(a: u64, b: u64) -> Result<u64> {
    Ok(a.safe_sub(b)?)
}

/// How a trade changes the shares traders hold of its side.
enum Sold {
    Bought(u64),
    Returned(u64),
}

/// The one place a trade changes the market: the LMSR state after the fill, the shares held by
/// traders, volume (net of fees), the trade count and the fees held.
fn record_trade(market: &mut Market, after: &lmsr::Lmsr, side: Side, sold: Sold, volume: u64, fee: u64) -> Result<()> {
    market.q_yes = after.q(lmsr::Side::Yes);
    market.q_no = after.q(lmsr::Side::No);
    let held = match side {
        Side::Yes => &mut market.sold_yes,
        Side::No => &mut market.sold_no,
    };
    *held = match sold {
        Sold::Bought(shares) => held.safe_add(shares)?,
        Sold::Returned(shares) => held.safe_sub(shares)?,
    };
    market.volume = market.volume.safe_add(volume)?;
    market.trade_count = market.trade_count.safe_add(1)?;
    market.fees_held = market.fees_held.safe_add(fee)?;
    Ok(())
}

pub fn buy(ctx: Context<BuyShares>, side: Side, usdc_amount: u64, min_shares: u64) -> Result<()> {
    let now = Clock::get()?.unix_timestamp;
    let config = &ctx.accounts.config;
    let user = &ctx.accounts.user;
    require!(user.may_act(ctx.accounts.signer.key, &config.operator), FundingMarketError::NotWalletOrOperator);
    require_tradeable(&ctx.accounts.market, now)?;
    require!(usdc_amount >= config.min_trade, FundingMarketError::TradeTooSmall);
    let fee = lmsr::fee(usdc_amount, config.fee_bps).map_err(math)?;
    let debit = add(usdc_amount, fee)?;
    require!(ctx.accounts.user_vault.amount >= debit, FundingMarketError::InsufficientBalance);

    let fill = ctx.accounts.market.lmsr()?.buy(side.into(), usdc_amount).map_err(math)?;
    let shares = fill.amount_out;
    require!(shares > 0, FundingMarketError::NoShares);
    require!(shares >= min_shares, FundingMarketError::SlippageExceeded);

    transfer_signed(
        &ctx.accounts.token_program,
        ctx.accounts.user_vault.to_account_info(),
        ctx.accounts.market_vault.to_account_info(),
        user.to_account_info(),
        &[UserAccount::SEED, user.wallet.as_ref(), &[user.bump]],
        debit,
    )?;

    let market = &mut ctx.accounts.market;
    record_trade(market, &fill.after, side, Sold::Bought(shares), usdc_amount, fee)?;

    let position = &mut ctx.accounts.position;
    if position.market == Pubkey::default() {
        position.market = market.key();
        position.wallet = user.wallet;
        position.rent_payer = ctx.accounts.signer.key();
        position.bump = ctx.bumps.position;
        market.open_positions = market.open_positions.safe_add(1)?;
    }
    let claim = position.refund_claim();
    *position.shares_mut(side) = add(*position.shares_mut(side), shares)?;
    position.paid_in = add(position.paid_in, debit)?;
    position.fees_paid = add(position.fees_paid, fee)?;
    market.update_refund_claims(claim, position.refund_claim())?;

    require_solvent(market, &mut ctx.accounts.market_vault)?;
    ctx.accounts.user_vault.reload()?;
    let balances = (ctx.accounts.market_vault.amount, ctx.accounts.user_vault.amount);
    let event = trade_event(market, position, side, true, shares, usdc_amount, fee, balances, now);
    emit!(event.clone());
    emit_cpi!(event);
    Ok(())
}

pub fn sell(ctx: Context<SellShares>, side: Side, shares: u64, min_usdc_out: u64) -> Result<()> {
    let now = Clock::get()?.unix_timestamp;
    let config = &ctx.accounts.config;
    let user = &ctx.accounts.user;
    require!(user.may_act(ctx.accounts.signer.key, &config.operator), FundingMarketError::NotWalletOrOperator);
    require_tradeable(&ctx.accounts.market, now)?;
    require!(shares > 0, FundingMarketError::ZeroAmount);
    require!(*ctx.accounts.position.shares_mut(side) >= shares, FundingMarketError::InsufficientShares);

    let fill = ctx.accounts.market.lmsr()?.sell(side.into(), shares).map_err(math)?;
    let proceeds = fill.amount_out;
    let fee = lmsr::fee(proceeds, config.fee_bps).map_err(math)?;
    let received = sub(proceeds, fee)?;
    require!(received >= min_usdc_out, FundingMarketError::SlippageExceeded);

    let market = &mut ctx.accounts.market;
    transfer_signed(
        &ctx.accounts.token_program,
        ctx.accounts.market_vault.to_account_info(),
        ctx.accounts.user_vault.to_account_info(),
        market.to_account_info(),
        &[Market::SEED, market.market_id.as_ref(), &[market.bump]],
        received,
    )?;
    record_trade(market, &fill.after, side, Sold::Returned(shares), proceeds, fee)?;

    let position = &mut ctx.accounts.position;
    let claim = position.refund_claim();
    *position.shares_mut(side) = sub(*position.shares_mut(side), shares)?;
    position.paid_out = add(position.paid_out, received)?;
    position.fees_paid = add(position.fees_paid, fee)?;
    market.update_refund_claims(claim, position.refund_claim())?;

    require_solvent(market, &mut ctx.accounts.market_vault)?;
    ctx.accounts.user_vault.reload()?;
    let balances = (ctx.accounts.market_vault.amount, ctx.accounts.user_vault.amount);
    let event = trade_event(market, position, side, false, shares, proceeds, fee, balances, now);
    emit!(event.clone());
    emit_cpi!(event);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn trade_event(
    market: &Market,
    position: &Position,
    side: Side,
    is_buy: bool,
    shares: u64,
    amount: u64,
    fee: u64,
    (vault_balance, user_vault_balance): (u64, u64),
    ts: i64,
) -> TradeExecuted {
    let (yes_price, no_price) = lmsr::Lmsr::new(market.b, market.q_yes, market.q_no).map(|l| l.prices_micro()).unwrap_or((0, 0));
    TradeExecuted {
        market: position.market,
        wallet: position.wallet,
        side,
        is_buy,
        shares,
        amount,
        fee,
        q_yes: market.q_yes,
        q_no: market.q_no,
        yes_price,
        no_price,
        volume: market.volume,
        trade_count: market.trade_count,
        position_yes: position.yes_shares,
        position_no: position.no_shares,
        vault_balance,
        user_vault_balance,
        ts,
    }
}
