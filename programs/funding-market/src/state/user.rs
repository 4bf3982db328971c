use anchor_lang::prelude::*;

/// A trader, PDA `["user", wallet]`. Owns two USDC token accounts: `deposit` (the personal
/// deposit address, PDA `["deposit", wallet]`) and `vault` (the trading balance, PDA
/// `["vault", wallet]`), both with this account as their token authority.
#[account]
#[derive(InitSpace)]
pub struct UserAccount {
    pub wallet: Pubkey,
    pub deposit: Pubkey,
    pub vault: Pubkey,
    pub bump: u8,
}

impl UserAccount {
    pub const SEED: &'static [u8] = b"user";
    pub const DEPOSIT_SEED: &'static [u8] = b"deposit";
    pub const VAULT_SEED: &'static [u8] = b"vault";

    /// Whether `signer` may act for this user: the wallet itself, or the config operator.
    pub fn may_act(&self, signer: &Pubkey, operator: &Pubkey) -> bool {
        signer == &self.wallet || signer == operator
    }
}
