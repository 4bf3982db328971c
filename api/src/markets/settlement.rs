//! Recording a round's outcome and its series' statistics (`indexer::stats`, shared with the
//! chain projection) in one transaction. The oracle calls this.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use crate::exchanges::FundingRate;

#[derive(Debug, thiserror::Error)]
pub enum SettleError {
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error("market {0} is not awaiting resolution")]
    NotResolving(Uuid),
}

/// Settles `market_id` with the consensus `rate` (YES iff positive) at `at`.
pub async fn record(db: &PgPool, market_id: Uuid, rate: FundingRate, at: DateTime<Utc>) -> Result<(), SettleError> {
    let outcome = if rate.is_positive() { "yes" } else { "no" };
    let mut tx = db.begin().await?;
    let settled: Option<(Uuid, i64)> = sqlx::query_as(
        "UPDATE markets SET status = 'settled', outcome = $2, actual_rate = $3, settled_at = $4
         WHERE id = $1 AND status IN ('closed', 'resolving') RETURNING series_id, total_volume",
    )
    .bind(market_id)
    .bind(outcome)
    .bind(rate.0)
    .bind(at)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((series_id, volume)) = settled else { return Err(SettleError::NotResolving(market_id)) };
    indexer::stats::record_outcome(&mut tx, series_id, rate.is_positive(), volume, rate.0, at).await?;
    tx.commit().await?;
    Ok(())
}
