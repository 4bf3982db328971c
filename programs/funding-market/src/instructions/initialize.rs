use anchor_lang::prelude::*;
use anchor_lang::solana_program::bpf_loader_upgradeable;
use anchor_spl::token::{Mint, Token, TokenAccount};

use crate::error::FundingMarketError;
use crate::state::Config;

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Debug)]
pub struct InitializeParams {
    pub authority: Pubkey,
    pub operator: Pubkey,
    pub oracle: Pubkey,
    /// Basis points; at most 10_000.
    pub fee_bps: u16,
    /// Micro-USDC.
    pub min_deposit: u64,
    /// Micro-USDC.
    pub min_trade: u64,
}

/// Creates the config once. Only the program's upgrade authority (whoever deployed it) can: on a
/// fresh deployment anyone could otherwise call it first and choose the authority, operator,
/// oracle and mint (Anchor's guidance for initialisers). The upgrade authority is read from the
/// program's ProgramData account, whose address the upgradeable loader derives from the
/// program id.
#[derive(Accounts)]
pub struct Initialize<'info> {
    #[account(init, payer = payer, space = 8 + Config::INIT_SPACE, seeds = [Config::SEED], bump)]
    pub config: Box<Account<'info, Config>>,
    #[account(
        init,
        payer = payer,
        seeds = [Config::TREASURY_SEED],
        bump,
        token::mint = usdc_mint,
        token::authority = config,
    )]
    pub treasury: Box<Account<'info, TokenAccount>>,
    pub usdc_mint: Box<Account<'info, Mint>>,
    #[account(mut)]
    pub payer: Signer<'info>,
    pub upgrade_authority: Signer<'info>,
    #[account(
        seeds = [crate::ID.as_ref()],
        bump,
        seeds::program = bpf_loader_upgradeable::ID,
        constraint = program_data.upgrade_authority_address == Some(upgrade_authority.key()) @ FundingMarketError::NotUpgradeAuthority,
    )]
    pub program_data: Box<Account<'info, ProgramData>>,
    pub system_program: Program<'info, System>,
    pub token_program: Program<'info, Token>,
}

pub fn handler(ctx: Context<Initialize>, params: InitializeParams) -> Result<()> {
    // The fee rule is the shared math's: one definition for program and API.
    lmsr::fee(0, params.fee_bps).map_err(|_| FundingMarketError::FeeTooHigh)?;
    require!(params.min_deposit > 0 && params.min_trade > 0, FundingMarketError::ZeroMinimum);
    let config = &mut ctx.accounts.config;
    config.set_inner(Config {
        authority: params.authority,
        operator: params.operator,
        oracle: params.oracle,
        usdc_mint: ctx.accounts.usdc_mint.key(),
        treasury: ctx.accounts.treasury.key(),
        fee_bps: params.fee_bps,
        min_deposit: params.min_deposit,
        min_trade: params.min_trade,
        bump: ctx.bumps.config,
        treasury_bump: ctx.bumps.treasury,
    });
    Ok(())
}
