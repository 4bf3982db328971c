//! Series statistics, updated incrementally when a round settles (one row update, never a
//! scan). Shared by the oracle path (the API) and the chain path (the projection).

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// A settled round as its series' statistics take it.
#[derive(Clone, Copy, Debug)]
pub struct SettledRound {
    pub series_id: Uuid,
    /// Whether the rate was positive.
    pub yes: bool,
    /// The round's traded volume, micro-USDC.
    pub volume: i64,
    /// The settled rate, 1e-12.
    pub rate: i64,
    pub at: DateTime<Utc>,
}

/// Adds one settled round to its series' statistics.
pub async fn record_outcome(db: &mut PgConnection, round: SettledRound) -> Result<(), sqlx::Error> {
    record_outcomes(db, &[round]).await
}

/// Adds settled rounds to their series' statistics, in order: one statement for each stretch of
/// rounds of distinct series (a series' streaks depend on the order of its rounds, and one
/// `UPDATE` changes a row once).
pub async fn record_outcomes(db: &mut PgConnection, rounds: &[SettledRound]) -> Result<(), sqlx::Error> {
    let mut rest = rounds;
    while !rest.is_empty() {
        let mut seen = std::collections::HashSet::new();
        let stretch = rest.iter().take_while(|r| seen.insert(r.series_id)).count();
        let (now, later) = rest.split_at(stretch);
        sqlx::query(RECORD_OUTCOMES)
            .bind(now.iter().map(|r| r.series_id).collect::<Vec<_>>())
            .bind(now.iter().map(|r| if r.yes { "yes" } else { "no" }).collect::<Vec<_>>())
            .bind(now.iter().map(|r| r.volume).collect::<Vec<_>>())
            .bind(now.iter().map(|r| r.rate).collect::<Vec<_>>())
            .bind(now.iter().map(|r| r.at).collect::<Vec<_>>())
            .execute(&mut *db)
            .await?;
        rest = later;
    }
    Ok(())
}

const RECORD_OUTCOMES: &str = "
UPDATE series SET
    total_rounds = total_rounds + 1,
    yes_rounds = yes_rounds + (o.outcome = 'yes')::int,
    total_volume = total_volume + o.volume,
    rate_sum = rate_sum + o.rate,
    current_streak = CASE WHEN current_streak_side = o.outcome THEN current_streak + 1 ELSE 1 END,
    current_streak_side = o.outcome,
    longest_yes_streak = CASE WHEN o.outcome = 'yes' THEN greatest(longest_yes_streak,
        CASE WHEN current_streak_side = 'yes' THEN current_streak + 1 ELSE 1 END) ELSE longest_yes_streak END,
    longest_no_streak = CASE WHEN o.outcome = 'no' THEN greatest(longest_no_streak,
        CASE WHEN current_streak_side = 'no' THEN current_streak + 1 ELSE 1 END) ELSE longest_no_streak END,
    last_outcome = o.outcome,
    last_settled_at = o.at
FROM unnest($1::UUID[], $2::TEXT[], $3::BIGINT[], $4::BIGINT[], $5::TIMESTAMPTZ[]) AS o(series_id, outcome, volume, rate, at)
WHERE series.id = o.series_id";
