//! `oracle_observations` and the oracle's columns of `markets`: the rounds awaiting a verdict,
//! the readings taken, the retry schedule, and what `/v1/markets/{id}/resolution` shows.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

/// A round the oracle has to decide.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AwaitingRound {
    pub id: Uuid,
    pub exchange: String,
    pub symbol: String,
    pub settlement_ts: DateTime<Utc>,
    /// Set: void it whatever the rate (`interval_change`).
    pub void_reason: Option<String>,
    pub oracle_attempts: i32,
}

/// Rounds awaiting the oracle at `now`, oldest settlement first: closed or resolving, past their
/// settlement time (or to be voided early), and due for an attempt.
pub async fn awaiting(db: &PgPool, now: DateTime<Utc>, limit: i64) -> Result<Vec<AwaitingRound>, sqlx::Error> {
    sqlx::query_as(
        "SELECT m.id, s.exchange, s.symbol, m.settlement_ts, m.void_reason, m.oracle_attempts
         FROM markets m JOIN series s ON s.id = m.series_id
         WHERE m.status IN ('closed', 'resolving') AND (m.settlement_ts <= $1 OR m.void_reason IS NOT NULL)
           AND (m.oracle_next_at IS NULL OR m.oracle_next_at <= $1)
         ORDER BY m.settlement_ts, m.id LIMIT $2",
    )
    .bind(now)
    .bind(limit)
    .fetch_all(db)
    .await
}

/// One reading of a source: a rate (1e-12) or why there was none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewObservation {
    pub source: String,
    pub reading: Result<i64, String>,
    pub fetched_at: DateTime<Utc>,
}

/// Appends the readings of one attempt.
pub async fn record(db: &PgPool, market_id: Uuid, observations: &[NewObservation]) -> Result<(), sqlx::Error> {
    let sources: Vec<&str> = observations.iter().map(|o| o.source.as_str()).collect();
    let rates: Vec<Option<i64>> = observations.iter().map(|o| o.reading.as_ref().ok().copied()).collect();
    let errors: Vec<Option<&str>> = observations.iter().map(|o| o.reading.as_ref().err().map(String::as_str)).collect();
    let times: Vec<DateTime<Utc>> = observations.iter().map(|o| o.fetched_at).collect();
    sqlx::query(
        "INSERT INTO oracle_observations (market_id, source, rate, error, fetched_at)
         SELECT $1, * FROM UNNEST($2::text[], $3::bigint[], $4::text[], $5::timestamptz[])",
    )
    .bind(market_id)
    .bind(sources)
    .bind(rates)
    .bind(errors)
    .bind(times)
    .execute(db)
    .await?;
    Ok(())
}

/// Each source's first successful reading of the round: (source, rate).
pub async fn readings(db: &PgPool, market_id: Uuid) -> Result<Vec<(String, i64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT DISTINCT ON (source) source, rate FROM oracle_observations
         WHERE market_id = $1 AND rate IS NOT NULL ORDER BY source, id",
    )
    .bind(market_id)
    .fetch_all(db)
    .await
}

/// Counts an attempt that reached no verdict and sets when to try again.
pub async fn retry_at(db: &PgPool, market_id: Uuid, next_at: DateTime<Utc>) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE markets SET oracle_attempts = oracle_attempts + 1, oracle_next_at = $2 WHERE id = $1")
        .bind(market_id)
        .bind(next_at)
        .execute(db)
        .await?;
    Ok(())
}

/// Records why a round is (to be) voided, unless a reason is already recorded.
pub async fn set_void_reason(db: &PgPool, market_id: Uuid, reason: &str) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE markets SET void_reason = COALESCE(void_reason, $2) WHERE id = $1").bind(market_id).bind(reason).execute(db).await?;
    Ok(())
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ObservationRow {
    pub source: String,
    pub rate: Option<i64>,
    pub error: Option<String>,
    pub fetched_at: DateTime<Utc>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ResolutionRow {
    pub oracle_attempts: i32,
    pub void_reason: Option<String>,
    pub finalize_signature: Option<String>,
    pub close_signature: Option<String>,
    pub paid_out_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PayoutRow {
    pub wallet: String,
    pub payout: i64,
    pub voided: bool,
    pub signature: Option<String>,
    pub at: DateTime<Utc>,
}

/// The round's oracle state, transactions and readings (oldest first), and its payouts.
pub async fn resolution(db: &PgPool, market_id: Uuid) -> Result<Option<(ResolutionRow, Vec<ObservationRow>, Vec<PayoutRow>)>, sqlx::Error> {
    let Some(row) = sqlx::query_as("SELECT oracle_attempts, void_reason, finalize_signature, close_signature, paid_out_at FROM markets WHERE id = $1")
        .bind(market_id)
        .fetch_optional(db)
        .await?
    else {
        return Ok(None);
    };
    let observations = sqlx::query_as("SELECT source, rate, error, fetched_at FROM oracle_observations WHERE market_id = $1 ORDER BY id")
        .bind(market_id)
        .fetch_all(db)
        .await?;
    let payouts = sqlx::query_as("SELECT wallet, payout, voided, signature, at FROM settlements WHERE market_id = $1 ORDER BY at, wallet")
        .bind(market_id)
        .fetch_all(db)
        .await?;
    Ok(Some((row, observations, payouts)))
}
