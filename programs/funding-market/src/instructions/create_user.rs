use anchor_lang::prelude::*;
use anchor_spl::token::{Mint, Token, TokenAccount};

use crate::events::UserCreated;
use crate::state::{Config, UserAccount};

/// Creates a trader's account and its deposit and vault token accounts. Anyone may pay; the
/// wallet need not sign (the service creates accounts lazily for its users).
#[event_cpi]
#[derive(Accounts)]
pub struct CreateUser<'info> {
    #[account(seeds = [Config::SEED], bump = config.bump)]
    pub config: Box<Account<'info, Config>>,
    /// CHECK: any wallet address; only its key is used, as a seed.
    pub wallet: UncheckedAccount<'info>,
    #[account(
        init,
        payer = payer,
        space = 8 + UserAccount::INIT_SPACE,
        seeds = [UserAccount::SEED, wallet.key().as_ref()],
        bump,
    )]
    pub user: Box<Account<'info, UserAccount>>,
    #[account(
        init,
        payer = payer,
        seeds = [UserAccount::DEPOSIT_SEED, wallet.key().as_ref()],
        bump,
        token::mint = usdc_mint,
        token::authority = user,
    )]
    pub deposit: Box<Account<'info, TokenAccount>>,
    #[account(
        init,
        payer = payer,
        seeds = [UserAccount::VAULT_SEED, wallet.key().as_ref()],
        bump,
        token::mint = usdc_mint,
        token::authority = user,
    )]
    pub vault: Box<Account<'info, TokenAccount>>,
    #[account(address = config.usdc_mint)]
    pub usdc_mint: Box<Account<'info, Mint>>,
    #[account(mut)]
    pub payer: Signer<'info>,
    pub system_program: Program<'info, System>,
    pub token_program: Program<'info, Token>,
}

pub fn handler(ctx: Context<CreateUser>) -> Result<()> {
    let user = &mut ctx.accounts.user;
    user.wallet = ctx.accounts.wallet.key();
    user.deposit = ctx.accounts.deposit.key();
    user.vault = ctx.accounts.vault.key();
    user.bump = ctx.bumps.user;
    emit_cpi!(UserCreated { wallet: user.wallet, user: user.key(), deposit: user.deposit, vault: user.vault, ts: Clock::get()?.unix_timestamp });
    Ok(())
}
