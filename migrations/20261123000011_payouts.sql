-- When a finalized round's payouts were all made: set by the projection of `MarketClosed`
-- (every position settled, the rest back in the treasury, the market account closed), by the
-- settlement crank when it finds the account already closed, or at once for a round settled off
-- chain (no one traded it: nothing to pay). The crank works on finalized rounds where it is NULL.
ALTER TABLE markets ADD COLUMN paid_out_at TIMESTAMPTZ;
CREATE INDEX markets_awaiting_payout ON markets (settlement_ts) WHERE paid_out_at IS NULL AND status IN ('settled', 'voided');
