use anchor_lang::error::ErrorCode;
use anchor_lang::prelude::*;
use anchor_spl::token::{Token, TokenAccount, accessor};

use crate::error::FundingMarketError;
use crate::events::PositionSettled;
use crate::state::{Market, MarketStatus, Position, UserAccount};
use crate::token::transfer_signed;

/// `settle_position` for many positions of one market at once. Permissionless crank.
///
/// The remaining accounts are triples `(position, owner's vault, rent receiver)`, all writable;
/// the rent receiver must be the position's `rent_payer`. The owner's `UserAccount` is not needed
/// (the vault's address is derived from the position's wallet), and the accounts the positions
/// share (market, vaults' program, event authority, and a rent payer common to many positions)
/// appear once in a transaction, so about twice as many positions fit one as `settle_position`s.
/// Each position is paid exactly as `settle_position` pays it (`Market::payout`), closed, and
/// logged with its own `PositionSettled`. A position of another market, a vault that is not its
/// owner's, a rent receiver that did not pay the rent, or a position listed twice fails the whole
/// instruction, with the error `settle_position` gives for the same mistake.
#[event_cpi]
#[derive(Accounts)]
pub struct SettlePositions<'info> {
    #[account(mut, seeds = [Market::SEED, market.market_id.as_ref()], bump = market.bump)]
    pub market: Box<Account<'info, Market>>,
    #[account(mut, address = market.vault)]
    pub market_vault: Box<Account<'info, TokenAccount>>,
    pub token_program: Program<'info, Token>,
}

pub fn handler<'info>(ctx: Context<'info, SettlePositions<'info>>) -> Result<()> {
    let triples = ctx.remaining_accounts;
    require!(!triples.is_empty() && triples.len().is_multiple_of(3), ErrorCode::AccountNotEnoughKeys);
    require!(ctx.accounts.market.status != MarketStatus::Open, FundingMarketError::NotFinalized);
    let market_key = ctx.accounts.market.key();
    let voided = ctx.accounts.market.status == MarketStatus::Voided;
    let (market_id, bump) = (ctx.accounts.market.market_id, [ctx.accounts.market.bump]);
    let signer_seeds: &[&[u8]] = &[Market::SEED, &market_id, &bump];
    let mut vault_left = ctx.accounts.market_vault.amount;
    let ts = Clock::get()?.unix_timestamp;

    for triple in triples.chunks_exact(3) {
        let (position_info, user_vault, rent_receiver) = (&triple[0], &triple[1], &triple[2]);
        require!(position_info.is_writable && user_vault.is_writable && rent_receiver.is_writable, ErrorCode::AccountNotMutable);
        // Owned by this program with `Position`'s discriminator (a position closed earlier in
        // this instruction is owned by the system program again and fails here).
        let position: Account<'info, Position> = Account::try_from(position_info)?;
        require_keys_eq!(position.market, market_key, ErrorCode::ConstraintSeeds);
        let (vault_address, _) = Pubkey::find_program_address(&[UserAccount::VAULT_SEED, position.wallet.as_ref()], ctx.program_id);
        require_keys_eq!(user_vault.key(), vault_address, ErrorCode::ConstraintSeeds);
        require_keys_eq!(rent_receiver.key(), position.rent_payer, ErrorCode::ConstraintAddress);

        let payout = ctx.accounts.market.payout(&position)?;
        require!(payout <= vault_left, FundingMarketError::Insolvent);
        transfer_signed(
            &ctx.accounts.token_program,
            ctx.accounts.market_vault.to_account_info(),
            user_vault.clone(),
            ctx.accounts.market.to_account_info(),
            signer_seeds,
            payout,
        )?;
        vault_left -= payout;
        let user_vault_balance = accessor::amount(user_vault)?;
        ctx.accounts.market.record_settled(&position)?;
        position.close(rent_receiver.clone())?;
        let (wallet, yes_shares, no_shares) = (position.wallet, position.yes_shares, position.no_shares);
        emit_cpi!(PositionSettled { market: market_key, wallet, yes_shares, no_shares, payout, user_vault_balance, voided, ts });
    }
    Ok(())
}
