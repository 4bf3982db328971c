use anchor_lang::prelude::*;

use crate::error::FundingMarketError;
use crate::math::SafeMath;
use crate::state::Position;

/// One round: is the funding rate positive at `settlement_ts`? PDA `["market", market_id]`.
/// Its USDC (subsidy, traders' payments, fees until resolution) sits in `vault`, a token
/// account at PDA `["market_vault", market]` whose authority is this account.
#[account]
#[derive(InitSpace)]
pub struct Market {
    /// The service's UUID of the market (16 bytes).
    pub market_id: [u8; 16],
    /// The series slug (`{exchange}-{symbol}`), UTF-8, zero-padded.
    pub series: [u8; 32],
    pub vault: Pubkey,
    /// Trading opens (Unix s).
    pub open_ts: i64,
    /// Trading stops (Unix s): at least 5 minutes before settlement.
    pub close_ts: i64,
    /// The funding settlement the question is about (Unix s).
    pub settlement_ts: i64,
    /// LMSR liquidity b, micro-USDC.
    pub b: u64,
    /// LMSR outstanding quantities, micro-shares, including the opening offset.
    pub q_yes: u64,
    pub q_no: u64,
    /// Shares held by traders, micro-shares (= q minus the opening offset).
    pub sold_yes: u64,
    pub sold_no: u64,
    /// Moved from the treasury at creation: the LMSR's worst-case loss, micro-USDC.
    pub subsidy: u64,
    /// Sum of trade amounts (net of fees), micro-USDC.
    pub volume: u64,
    pub trade_count: u64,
    /// Fees collected and held for a possible void, micro-USDC; sent to the treasury on
    /// resolution.
    pub fees_held: u64,
    /// Positions not yet settled.
    pub open_positions: u32,
    /// What a void would owe, micro-USDC: the sum over open positions of their refund claim
    /// (`Position::refund_claim`), kept with every trade.
    pub refund_claims: u64,
    /// Set when voided, micro-USDC: what the refunds share, `min(market vault, refund_claims)`
    /// at that moment (see `settle_position`). 0 otherwise.
    pub refund_pool: u64,
    /// Set when voided: `refund_claims` at that moment, the denominator of every refund.
    pub refund_claims_at_void: u64,
    pub status: MarketStatus,
    pub outcome: Outcome,
    /// The settled funding rate, in units of 1e-12 (0.0001 = 100_000_000).
    pub actual_rate: i64,
    /// When it was resolved or voided (Unix s), 0 before.
    pub finalized_at: i64,
    pub bump: u8,
    pub vault_bump: u8,
}

impl Market {
    pub const SEED: &'static [u8] = b"market";
    pub const VAULT_SEED: &'static [u8] = b"market_vault";
    /// Trading stops at least this long before settlement (contract: 5 minutes).
    pub const MIN_CLOSE_BEFORE_SETTLEMENT: i64 = 300;

    /// A voided market's refund for a position claiming `claim`: the claim in full when the
    /// market vault covers every claim, else its pro-rata share of the vault, rounded down (the
    /// dust returns to the treasury with `close_market`). The treasury never adds to a refund.
    pub fn refund(&self, claim: u64) -> Result<u64> {
        if self.refund_claims_at_void == 0 {
            return Ok(0);
        }
        let share = claim as u128 * self.refund_pool as u128 / self.refund_claims_at_void as u128;
        Ok(u64::try_from(share).map_err(|_| FundingMarketError::Overflow)?)
    }

    /// What `position` is paid when it settles: on resolution, one micro-USDC for each winning
    /// micro-share; on a void, its refund (`refund`). `NotFinalized` while the market is open.
    pub fn payout(&self, position: &Position) -> Result<u64> {
        match (self.status, self.outcome) {
            (MarketStatus::Open, _) => err!(FundingMarketError::NotFinalized),
            (MarketStatus::Voided, _) => self.refund(position.refund_claim()),
            (MarketStatus::Resolved, Outcome::Yes) => Ok(position.yes_shares),
            (MarketStatus::Resolved, _) => Ok(position.no_shares),
        }
    }

    /// Takes a settled position's shares out of the market's books.
    pub fn record_settled(&mut self, position: &Position) -> Result<()> {
        self.sold_yes = self.sold_yes.saturating_sub(position.yes_shares);
        self.sold_no = self.sold_no.saturating_sub(position.no_shares);
        self.open_positions = self.open_positions.safe_sub(1)?;
        Ok(())
    }

    /// Records a position's claim changing from `before` to `after` (a trade).
    pub fn update_refund_claims(&mut self, before: u64, after: u64) -> Result<()> {
        self.refund_claims = self.refund_claims.safe_sub(before)?.safe_add(after)?;
        Ok(())
    }

    pub fn lmsr(&self) -> Result<lmsr::Lmsr> {
        lmsr::Lmsr::new(self.b, self.q_yes, self.q_no).map_err(|e| crate::error::math(e).into())
    }
}

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Copy, Debug, PartialEq, Eq, InitSpace)]
pub enum MarketStatus {
    Open,
    Resolved,
    Voided,
}

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Copy, Debug, PartialEq, Eq, InitSpace)]
pub enum Outcome {
    Undecided,
    Yes,
    No,
}

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Copy, Debug, PartialEq, Eq, InitSpace)]
pub enum Side {
    Yes,
    No,
}

impl From<Side> for lmsr::Side {
    fn from(side: Side) -> lmsr::Side {
        match side {
            Side::Yes => lmsr::Side::Yes,
            Side::No => lmsr::Side::No,
        }
    }
}
