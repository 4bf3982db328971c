//! Payouts (`PositionSettled`) and market closes (`MarketClosed`), recorded and projected a run
//! at a time like trades: a settlement crank's transaction pays a round's positions and closes
//! it, and settling many rounds is a run of such transactions. Two statements per run (it was
//! five per payout and two per close) keep the projection's lock short while rounds are paid.
//!
//! Inside a run, the same tables as applying the events one by one in delivery order:
//! - an event is new only if `chain_events` did not hold it; only new payouts of known markets
//!   are projected;
//! - each new payout is kept (`settlements`, once per position, with its realized P&L),
//!   notified (`outbox`, once) and its position removed;
//! - a vault balance takes the latest payout by (slot, position in the block), ties to the one
//!   delivered later, if not before the balance stored;
//! - a resolved (not voided) position's realised P&L — the payout less the position's cost basis
//!   (its buys' cost less its sells' proceeds, fees included, kept on the position by the trade
//!   projection) — adds up per (wallet, day), with one settled and, if above zero, one win each;
//! - a new close marks its market paid out (`paid_out_at`, `close_signature`) unless it already
//!   is. Closes are applied after the run's payouts: a close writes only its market's row, which
//!   no payout writes, so the order between them changes nothing.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use super::{At, RecordedEvents, time};
use chain_client::address_text;
use funding_market::events::{MarketClosed, PositionSettled};

/// The run's payouts and closes as columns, ready to bind as arrays.
#[derive(Default)]
pub(super) struct PayoutRun {
    events: RecordedEvents,
    market: Vec<String>,
    wallet: Vec<String>,
    yes_shares: Vec<i64>,
    no_shares: Vec<i64>,
    payout: Vec<i64>,
    voided: Vec<bool>,
    at: Vec<DateTime<Utc>>,
    balance: Vec<i64>,
    closes: Closes,
}

/// The run's `MarketClosed` events.
#[derive(Default)]
struct Closes {
    events: RecordedEvents,
    market: Vec<String>,
    at: Vec<DateTime<Utc>>,
}

impl PayoutRun {
    pub(super) fn push(&mut self, e: &PositionSettled, at: &At<'_>, event_index: i32, data: &[u8]) {
        if !self.events.push(at, event_index, data) {
            return;
        }
        self.market.push(address_text::of(&e.market));
        self.wallet.push(address_text::of(&e.wallet));
        self.yes_shares.push(e.yes_shares as i64);
        self.no_shares.push(e.no_shares as i64);
        self.payout.push(e.payout as i64);
        self.voided.push(e.voided);
        self.at.push(time(e.ts));
        self.balance.push(e.user_vault_balance as i64);
    }

    pub(super) fn push_close(&mut self, e: &MarketClosed, at: &At<'_>, event_index: i32, data: &[u8]) {
        if !self.closes.events.push(at, event_index, data) {
            return;
        }
        self.closes.market.push(address_text::of(&e.market));
        self.closes.at.push(time(e.ts));
    }

    /// Records and projects the run, leaving it empty. Returns how many events were new.
    pub(super) async fn flush(&mut self, db: &mut PgConnection) -> Result<usize, sqlx::Error> {
        let run = std::mem::take(self);
        let closes = &run.closes;
        let mut recorded = 0;
        if !run.events.is_empty() {
            recorded += run.flush_payouts(db).await?;
        }
        if !closes.events.is_empty() {
            let (new,): (i64,) = sqlx::query_as_with(PROJECT_CLOSES, closes.events.arguments()?).bind(&closes.market).bind(&closes.at).fetch_one(db).await?;
            recorded += new as usize;
        }
        Ok(recorded)
    }

    async fn flush_payouts(&self, db: &mut PgConnection) -> Result<usize, sqlx::Error> {
        let (recorded,): (i64,) = sqlx::query_as_with(PROJECT_PAYOUTS, self.events.arguments()?)
            .bind(&self.market)
            .bind(&self.wallet)
            .bind(&self.yes_shares)
            .bind(&self.no_shares)
            .bind(&self.payout)
            .bind(&self.voided)
            .bind(&self.at)
            .bind(&self.balance)
            .fetch_one(db)
            .await?;
        Ok(recorded as usize)
    }
}

const PROJECT_PAYOUTS: &str = "
WITH input AS (
    -- A trader's day is the UTC date of the event.
    SELECT t.*, (t.at AT TIME ZONE 'UTC')::DATE AS day
    FROM unnest($1::TEXT[], $2::INT[], $3::INT[], $4::BIGINT[], $5::INT[], $6::BYTEA[], $7::TEXT[], $8::TEXT[],
                         $9::BIGINT[], $10::BIGINT[], $11::BIGINT[], $12::BOOL[], $13::TIMESTAMPTZ[], $14::BIGINT[])
        WITH ORDINALITY AS t(signature, ix_index, event_index, slot, tx_index, data, market, wallet, yes_shares, no_shares,
                             payout, voided, at, balance, ord)
), ev AS (
    INSERT INTO chain_events (signature, ix_index, event_index, slot, kind, data)
    SELECT signature, ix_index, event_index, slot, 'PositionSettled', data FROM input ORDER BY ord
    ON CONFLICT DO NOTHING
    RETURNING signature, ix_index, event_index
), new AS (
    SELECT i.*, m.id AS market_id
    FROM input i JOIN ev USING (signature, ix_index, event_index) JOIN markets m ON m.onchain_address = i.market
), settlement AS (
    -- With the realized P&L `outcome` computes (the position as it stood before `closed`).
    INSERT INTO settlements (market_id, wallet, yes_shares, no_shares, payout, voided, at, signature, realized_pnl)
    SELECT n.market_id, n.wallet, n.yes_shares, n.no_shares, n.payout, n.voided, n.at, n.signature,
           CASE WHEN n.voided THEN NULL ELSE (n.payout - COALESCE(p.yes_basis + p.no_basis, 0))::BIGINT END
    FROM new n LEFT JOIN positions p ON p.market_id = n.market_id AND p.wallet = n.wallet ORDER BY n.ord
    ON CONFLICT DO NOTHING
), notice AS (
    INSERT INTO outbox (kind, market_id, wallet, payload)
    SELECT 'settlement_payout', market_id, wallet, jsonb_build_object('payout', payout, 'voided', voided) FROM new ORDER BY ord
    ON CONFLICT DO NOTHING
), closed AS (
    DELETE FROM positions p USING new n WHERE p.market_id = n.market_id AND p.wallet = n.wallet
), balance AS (
    INSERT INTO vault_balances (wallet, balance, slot, tx_index, updated_at)
    SELECT DISTINCT ON (wallet) wallet, balance, slot, tx_index, at FROM new ORDER BY wallet, slot DESC, tx_index DESC, ord DESC
    ON CONFLICT (wallet) DO UPDATE SET balance = EXCLUDED.balance, slot = EXCLUDED.slot, tx_index = EXCLUDED.tx_index,
        updated_at = EXCLUDED.updated_at
    WHERE (vault_balances.slot, vault_balances.tx_index) <= (EXCLUDED.slot, EXCLUDED.tx_index)
), outcome AS (
    -- The position's cost basis (buys' cost less sells' proceeds, both sides) as it stood
    -- before this statement deleted it.
    SELECT n.wallet, n.day, (n.payout - COALESCE(p.yes_basis + p.no_basis, 0))::BIGINT AS pnl
    FROM new n LEFT JOIN positions p ON p.market_id = n.market_id AND p.wallet = n.wallet
    WHERE NOT n.voided
), stats AS (
    INSERT INTO trader_stats (wallet, day, realized_pnl, settled, wins)
    SELECT wallet, day, sum(pnl)::BIGINT, count(*), count(*) FILTER (WHERE pnl > 0) FROM outcome GROUP BY wallet, day
    ON CONFLICT (wallet, day) DO UPDATE SET realized_pnl = trader_stats.realized_pnl + EXCLUDED.realized_pnl,
        settled = trader_stats.settled + EXCLUDED.settled, wins = trader_stats.wins + EXCLUDED.wins
)
SELECT count(*) FROM ev";

const PROJECT_CLOSES: &str = "
WITH input AS (
    SELECT * FROM unnest($1::TEXT[], $2::INT[], $3::INT[], $4::BIGINT[], $5::INT[], $6::BYTEA[], $7::TEXT[], $8::TIMESTAMPTZ[])
        WITH ORDINALITY AS t(signature, ix_index, event_index, slot, tx_index, data, market, at, ord)
), ev AS (
    INSERT INTO chain_events (signature, ix_index, event_index, slot, kind, data)
    SELECT signature, ix_index, event_index, slot, 'MarketClosed', data FROM input ORDER BY ord
    ON CONFLICT DO NOTHING
    RETURNING signature, ix_index, event_index
), closed AS (
    UPDATE markets m SET paid_out_at = i.at, close_signature = i.signature
    FROM input i JOIN ev USING (signature, ix_index, event_index)
    WHERE m.onchain_address = i.market AND m.paid_out_at IS NULL
)
SELECT count(*) FROM ev";
