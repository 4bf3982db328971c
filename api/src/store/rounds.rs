//! The scheduler's statements over `series` and `markets`: active series, a series' unfinished
//! future rounds, creating a round, marking one to be voided, and moving statuses with the clock.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use crate::domain::market::MarketStatus;

/// An active series, as the scheduler plans it.
#[derive(sqlx::FromRow)]
pub struct ActiveSeries {
    pub id: Uuid,
    pub exchange: String,
    pub symbol: String,
    pub slug: String,
    pub liquidity_b: i64,
    pub interval_hours: i16,
    /// Short rounds: minutes between settlements whatever the venue's interval.
    pub round_minutes: Option<i16>,
}

pub async fn active_series(db: &PgPool) -> Result<Vec<ActiveSeries>, sqlx::Error> {
    sqlx::query_as("SELECT id, exchange, symbol, slug, liquidity_b, interval_hours, round_minutes FROM series WHERE active ORDER BY slug").fetch_all(db).await
}

pub async fn set_interval(db: &PgPool, series_id: Uuid, interval_hours: i16) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE series SET interval_hours = $2 WHERE id = $1").bind(series_id).bind(interval_hours).execute(db).await?;
    Ok(())
}

/// The series' rounds settling after `now` that are not finished, resolving or being voided:
/// (id, settlement).
pub async fn future_rounds(db: &PgPool, series_id: Uuid, now: DateTime<Utc>) -> Result<Vec<(Uuid, DateTime<Utc>)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, settlement_ts FROM markets WHERE series_id = $1 AND settlement_ts > $2
         AND status IN ('pending', 'open', 'closed') AND void_reason IS NULL",
    )
    .bind(series_id)
    .bind(now)
    .fetch_all(db)
    .await
}

/// Marks an unfinished round to be voided because its settlement time no longer exists: it
/// closes at once (no more trades through the API) and the oracle voids it — on chain, then the
/// crank refunds every position — on its next pass. Whether it was marked.
pub async fn mark_for_void(db: &PgPool, id: Uuid) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE markets SET void_reason = 'interval_change', status = 'closed'
         WHERE id = $1 AND status IN ('pending', 'open', 'closed') AND void_reason IS NULL",
    )
    .bind(id)
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The latest settlement of the series before `settlement` (voided rounds aside).
pub async fn previous_settlement(db: &PgPool, series_id: Uuid, settlement: DateTime<Utc>) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
    sqlx::query_scalar("SELECT max(settlement_ts) FROM markets WHERE series_id = $1 AND settlement_ts < $2 AND status <> 'voided' AND void_reason IS NULL")
        .bind(series_id)
        .bind(settlement)
        .fetch_one(db)
        .await
}

/// A round to create.
pub struct NewRound {
    pub id: Uuid,
    pub series_id: Uuid,
    pub open_ts: DateTime<Utc>,
    pub close_ts: DateTime<Utc>,
    pub settlement_ts: DateTime<Utc>,
    pub liquidity_b: i64,
    pub q_yes: i64,
    pub q_no: i64,
    pub yes_price_ppm: i32,
    pub ou_prior_ppm: i32,
    pub ou_confidence_ppm: i32,
    /// The program account's address, known before the account exists (a PDA of the id).
    pub onchain_address: String,
    pub now: DateTime<Utc>,
}

/// Inserts the round (numbered after the series' last) and its opening price point, unless the
/// series already has a round at that settlement time. Whether it was inserted.
///
/// The series row is locked first: two writers numbering rounds of one series at once would
/// both read the same `max(round_number)` (a unique violation for the second), so they take
/// turns, and the second reads the first's round.
pub async fn insert(db: &PgPool, r: &NewRound) -> Result<bool, sqlx::Error> {
    let mut tx = db.begin().await?;
    sqlx::query("SELECT 1 FROM series WHERE id = $1 FOR UPDATE").bind(r.series_id).execute(&mut *tx).await?;
    let inserted = sqlx::query(
        "INSERT INTO markets (id, series_id, round_number, open_ts, close_ts, settlement_ts, status, liquidity_b, q_yes, q_no,
                              yes_price_ppm, ou_prior_ppm, ou_confidence_ppm, onchain_address)
         SELECT $1, $2, COALESCE(max(round_number), 0) + 1, $3, $4, $5, 'pending', $6, $7, $8, $9, $10, $11, $12
         FROM markets WHERE series_id = $2
         ON CONFLICT (series_id, settlement_ts) DO NOTHING",
    )
    .bind(r.id)
    .bind(r.series_id)
    .bind(r.open_ts)
    .bind(r.close_ts)
    .bind(r.settlement_ts)
    .bind(r.liquidity_b)
    .bind(r.q_yes)
    .bind(r.q_no)
    .bind(r.yes_price_ppm)
    .bind(r.ou_prior_ppm)
    .bind(r.ou_confidence_ppm)
    .bind(&r.onchain_address)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if inserted == 1 {
        sqlx::query("INSERT INTO market_prices (market_id, at, yes_price_ppm) VALUES ($1, $2, $3)")
            .bind(r.id)
            .bind(r.now)
            .bind(r.yes_price_ppm)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(inserted == 1)
}

/// Moves every unfinished round to the status its times give it at `now`.
pub async fn advance_statuses(db: &PgPool, now: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "WITH due AS (
             SELECT id, CASE WHEN $1 >= settlement_ts THEN 'resolving'
                             WHEN $1 >= close_ts THEN 'closed'
                             WHEN $1 >= open_ts THEN 'open'
                             ELSE 'pending' END AS status
             FROM markets WHERE status IN ('pending', 'open', 'closed') AND void_reason IS NULL)
         UPDATE markets m SET status = due.status FROM due WHERE m.id = due.id AND m.status <> due.status",
    )
    .bind(now)
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// A round's status (tests and workers check transitions with it).
pub async fn status(db: &PgPool, id: Uuid) -> Result<Option<MarketStatus>, sqlx::Error> {
    sqlx::query_scalar("SELECT status FROM markets WHERE id = $1").bind(id).fetch_optional(db).await
}
