//! Finalizations (`MarketFinalized`), recorded and projected a run at a time like trades: the
//! oracle's transactions carry several, and a settlement peak is a run of them. One statement
//! records the run's events and finds their markets; the new ones are finalized together
//! (`finalize_markets`: the markets and their holders' notices in one statement, the series'
//! statistics in one more). It was five statements a finalization.
//!
//! Inside a run, the same tables as applying the events one by one in delivery order: an event
//! is new only if `chain_events` did not hold it, and only a new event of a known market
//! finalizes it (once: a final round is left as it is); series statistics take the rounds in
//! delivery order.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use super::{At, Finalized, RecordedEvents, RoundEnd, finalize_markets, time};
use chain_client::address_text;
use funding_market::events::MarketFinalized;
use funding_market::state::Outcome;

/// The run's finalizations as columns, ready to bind as arrays.
#[derive(Default)]
pub(super) struct FinalizationRun {
    events: RecordedEvents,
    market: Vec<String>,
    outcome: Vec<Finalized>,
    at: Vec<DateTime<Utc>>,
}

impl FinalizationRun {
    pub(super) fn push(&mut self, e: &MarketFinalized, at: &At<'_>, event_index: i32, data: &[u8]) {
        if !self.events.push(at, event_index, data) {
            return;
        }
        self.market.push(address_text::of(&e.market));
        self.outcome.push(match (e.voided, e.outcome) {
            (true, _) => Finalized::Voided,
            (false, Outcome::Yes) => Finalized::Settled { yes: true, actual_rate: e.actual_rate },
            (false, _) => Finalized::Settled { yes: false, actual_rate: e.actual_rate },
        });
        self.at.push(time(e.ts));
    }

    /// Records and projects the run, leaving it empty. Returns how many events were new.
    pub(super) async fn flush(&mut self, db: &mut PgConnection) -> Result<usize, sqlx::Error> {
        if self.events.is_empty() {
            return Ok(0);
        }
        let run = std::mem::take(self);
        // (position in the run from 1, its market) of each new event.
        let new: Vec<(i64, Option<Uuid>)> = sqlx::query_as_with(RECORD_FINALIZATIONS, run.events.arguments()?).bind(&run.market).fetch_all(&mut *db).await?;
        let rounds: Vec<RoundEnd> = new
            .iter()
            .filter_map(|&(ord, market_id)| {
                let i = ord as usize - 1;
                Some(RoundEnd { market_id: market_id?, outcome: run.outcome[i], at: run.at[i], signature: Some(&run.events.signature[i]) })
            })
            .collect();
        finalize_markets(db, &rounds).await?;
        Ok(new.len())
    }
}

/// Records the run's events; for each new one, in order, its place in the run and its market
/// (none when the market is unknown to the service).
const RECORD_FINALIZATIONS: &str = "
WITH input AS (
    SELECT * FROM unnest($1::TEXT[], $2::INT[], $3::INT[], $4::BIGINT[], $5::INT[], $6::BYTEA[], $7::TEXT[])
        WITH ORDINALITY AS t(signature, ix_index, event_index, slot, tx_index, data, market, ord)
), ev AS (
    INSERT INTO chain_events (signature, ix_index, event_index, slot, kind, data)
    SELECT signature, ix_index, event_index, slot, 'MarketFinalized', data FROM input ORDER BY ord
    ON CONFLICT DO NOTHING
    RETURNING signature, ix_index, event_index
)
SELECT i.ord, m.id FROM input i JOIN ev USING (signature, ix_index, event_index) LEFT JOIN markets m ON m.onchain_address = i.market
ORDER BY i.ord";
