//! Recording a round's outcome and keeping its series' statistics up to date incrementally (one
//! row update per settlement, never a scan), in one transaction. The oracle calls this.

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
    sqlx::query(
        "UPDATE series SET
             total_rounds = total_rounds + 1,
             yes_rounds = yes_rounds + ($2 = 'yes')::int,
             total_volume = total_volume + $3,
             rate_sum = rate_sum + $4,
             current_streak = CASE WHEN current_streak_side = $2 THEN current_streak + 1 ELSE 1 END,
             current_streak_side = $2,
             longest_yes_streak = CASE WHEN $2 = 'yes' THEN greatest(longest_yes_streak,
                 CASE WHEN current_streak_side = 'yes' THEN current_streak + 1 ELSE 1 END) ELSE longest_yes_streak END,
             longest_no_streak = CASE WHEN $2 = 'no' THEN greatest(longest_no_streak,
                 CASE WHEN current_streak_side = 'no' THEN current_streak + 1 ELSE 1 END) ELSE longest_no_streak END,
             last_outcome = $2,
             last_settled_at = $5
         WHERE id = $1",
    )
    .bind(series_id)
    .bind(outcome)
    .bind(volume)
    .bind(rate.0)
    .bind(at)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}
