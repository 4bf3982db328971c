use anchor_lang::prelude::*;
use anchor_spl::token::{Token, TokenAccount};

use crate::error::FundingMarketError;
use crate::events::Withdrawn;
use crate::state::{Config, UserAccount};
use crate::token::transfer_signed;

/// Sends USDC from the user's vault to any USDC token account. Signed by the wallet (which can
/// always withdraw without the service) or the operator acting on a withdrawal request.
#[event_cpi]
#[derive(Accounts)]
pub struct Withdraw<'info> {
    #[account(seeds = [Config::SEED], bump = config.bump)]
    pub config: Box<Account<'info, Config>>,
    #[account(seeds = [UserAccount::SEED, user.wallet.as_ref()], bump = user.bump)]
    pub user: Box<Account<'info, UserAccount>>,
    #[account(mut, address = user.vault)]
    pub vault: Box<Account<'info, TokenAccount>>,
    #[account(mut, token::mint = config.usdc_mint)]
    pub destination: Box<Account<'info, TokenAccount>>,
    pub signer: Signer<'info>,
    pub token_program: Program<'info, Token>,
}

pub fn handler(ctx: Context<Withdraw>, amount: u64) -> Result<()> {
    let user = &ctx.accounts.user;
    require!(user.may_act(ctx.accounts.signer.key, &ctx.accounts.config.operator), FundingMarketError::NotWalletOrOperator);
    require!(amount > 0, FundingMarketError::ZeroAmount);
    require!(amount <= ctx.accounts.vault.amount, FundingMarketError::InsufficientBalance);
    transfer_signed(
        &ctx.accounts.token_program,
        ctx.accounts.vault.to_account_info(),
        ctx.accounts.destination.to_account_info(),
        user.to_account_info(),
        &[UserAccount::SEED, user.wallet.as_ref(), &[user.bump]],
        amount,
    )?;
    ctx.accounts.vault.reload()?;
    emit_cpi!(Withdrawn {
        wallet: user.wallet,
        destination: ctx.accounts.destination.key(),
        amount,
        vault_balance: ctx.accounts.vault.amount,
        ts: Clock::get()?.unix_timestamp,
    });
    Ok(())
}
