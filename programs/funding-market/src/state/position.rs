use anchor_lang::prelude::*;

use super::Side;

/// A wallet's holding in one market, PDA `["position", market, wallet]`. Closed when settled.
#[account]
#[derive(InitSpace, Default)]
pub struct Position {
    pub market: Pubkey,
    pub wallet: Pubkey,
    /// Micro-shares.
    pub yes_shares: u64,
    pub no_shares: u64,
    /// Everything paid into the market on buys (amount + fee), micro-USDC.
    pub paid_in: u64,
    /// Everything received from the market on sells (after fee), micro-USDC.
    pub paid_out: u64,
    /// Fees paid, micro-USDC (already inside `paid_in` / deducted from `paid_out`).
    pub fees_paid: u64,
    /// Who paid the account's rent; it gets it back when the position closes.
    pub rent_payer: Pubkey,
    pub bump: u8,
}

impl Position {
    pub const SEED: &'static [u8] = b"position";

    /// What the position would claim on a void: what it paid in net, fees included, never
    /// negative (a position that sold at a profit claims nothing).
    pub fn refund_claim(&self) -> u64 {
        self.paid_in.saturating_sub(self.paid_out)
    }

    pub fn shares_mut(&mut self, side: Side) -> &mut u64 {
        match side {
            Side::Yes => &mut self.yes_shares,
            Side::No => &mut self.no_shares,
        }
    }
}
