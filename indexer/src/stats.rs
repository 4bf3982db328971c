//! Series statistics, updated incrementally when a round settles (one row update, never a
//! scan). Shared by the oracle path (the API) and the chain path (the projection).

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// Adds one settled round (`yes` iff the rate was positive) to its series' statistics.
pub async fn record_outcome(db: &mut PgConnection, series_id: Uuid, yes: bool, volume: i64, rate: i64, at: DateTime<Utc>) -> Result<(), sqlx::Error> {
    let outcome = if yes { "yes" } else { "no" };
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
    .bind(rate)
    .bind(at)
    .execute(db)
    .await?;
    Ok(())
}
