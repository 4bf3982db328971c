use anchor_lang::prelude::*;
use anchor_spl::token::{Token, TokenAccount};

use crate::error::FundingMarketError;
use crate::events::DepositSwept;
use crate::state::{Config, UserAccount};
use crate::token::transfer_signed;

/// Moves everything in the deposit account into the vault, once it reaches the minimum
/// deposit. Permissionless: anyone can crank it (the webhook, reconciliation, the user).
#[event_cpi]
#[derive(Accounts)]
pub struct SweepDeposit<'info> {
    #[account(seeds = [Config::SEED], bump = config.bump)]
    pub config: Box<Account<'info, Config>>,
    #[account(seeds = [UserAccount::SEED, user.wallet.as_ref()], bump = user.bump)]
    pub user: Box<Account<'info, UserAccount>>,
    #[account(mut, address = user.deposit)]
    pub deposit: Box<Account<'info, TokenAccount>>,
    #[account(mut, address = user.vault)]
    pub vault: Box<Account<'info, TokenAccount>>,
    pub token_program: Program<'info, Token>,
}

pub fn handler(ctx: Context<SweepDeposit>) -> Result<()> {
    let amount = ctx.accounts.deposit.amount;
    require!(amount >= ctx.accounts.config.min_deposit, FundingMarketError::BelowMinimumDeposit);
    let user = &ctx.accounts.user;
    transfer_signed(
        &ctx.accounts.token_program,
        ctx.accounts.deposit.to_account_info(),
        ctx.accounts.vault.to_account_info(),
        user.to_account_info(),
        &[UserAccount::SEED, user.wallet.as_ref(), &[user.bump]],
        amount,
    )?;
    ctx.accounts.vault.reload()?;
    emit_cpi!(DepositSwept { wallet: user.wallet, amount, vault_balance: ctx.accounts.vault.amount, ts: Clock::get()?.unix_timestamp });
    Ok(())
}
