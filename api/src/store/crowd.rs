//! `crowd_latest` and `crowd_history`: long/short account shares and open interest per perp.

use chrono::{DateTime, Utc};
use sqlx::{PgPool, QueryBuilder};

use super::intervals::push_where;
use crate::domain::market_data::{CrowdSort, PerpFilter};

/// A perp's latest reading.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct CrowdRow {
    pub exchange: String,
    pub symbol: String,
    pub long_ppm: i32,
    pub short_ppm: i32,
    pub open_interest_cents: Option<i64>,
    pub updated_at: DateTime<Utc>,
}

/// One reading to record.
#[derive(Clone, Copy, Debug)]
pub struct Reading {
    pub long_ppm: i32,
    pub short_ppm: i32,
    pub open_interest_cents: Option<i64>,
    /// The venue's bucket time.
    pub observed_at: DateTime<Utc>,
}

/// Records a reading of a listed perp: into the history (once per bucket time), and as the
/// latest unless a newer bucket is recorded already.
pub async fn record(db: &PgPool, exchange: &str, symbol: &str, reading: Reading, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    sqlx::query(
        "WITH history AS (
             INSERT INTO crowd_history (exchange, symbol, ts, long_ppm, short_ppm) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT DO NOTHING)
         INSERT INTO crowd_latest (exchange, symbol, long_ppm, short_ppm, open_interest_cents, observed_at, updated_at)
         VALUES ($1, $2, $4, $5, $6, $3, $7)
         ON CONFLICT (exchange, symbol) DO UPDATE SET
             long_ppm = EXCLUDED.long_ppm, short_ppm = EXCLUDED.short_ppm,
             open_interest_cents = COALESCE(EXCLUDED.open_interest_cents, crowd_latest.open_interest_cents),
             observed_at = EXCLUDED.observed_at, updated_at = EXCLUDED.updated_at
         WHERE crowd_latest.observed_at <= EXCLUDED.observed_at",
    )
    .bind(exchange)
    .bind(symbol)
    .bind(reading.observed_at)
    .bind(reading.long_ppm)
    .bind(reading.short_ppm)
    .bind(reading.open_interest_cents)
    .bind(now)
    .execute(db)
    .await?;
    Ok(())
}

/// Deletes history older than `before`; how many rows went.
pub async fn prune(db: &PgPool, before: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query("DELETE FROM crowd_history WHERE ts < $1").bind(before).execute(db).await?.rows_affected())
}

/// Latest readings ranked (ties by exchange and symbol), with how many match.
pub async fn leaderboard(db: &PgPool, filter: &PerpFilter, sort: CrowdSort, limit: i64, offset: i64) -> Result<(Vec<CrowdRow>, i64), sqlx::Error> {
    let rows = ranked(db, filter, sort, limit, offset).await?;
    let mut count = QueryBuilder::new("SELECT count(*) FROM crowd_latest");
    push_where(filter, &mut count);
    let total = count.build_query_scalar().fetch_one(db).await?;
    Ok((rows, total))
}

/// Latest readings ranked (ties by exchange and symbol), read off the ranking's index.
async fn ranked(db: &PgPool, filter: &PerpFilter, sort: CrowdSort, limit: i64, offset: i64) -> Result<Vec<CrowdRow>, sqlx::Error> {
    let mut q = QueryBuilder::new("SELECT exchange, symbol, long_ppm, short_ppm, open_interest_cents, updated_at FROM crowd_latest");
    push_where(filter, &mut q);
    q.push(match sort {
        CrowdSort::MostShorted => " ORDER BY short_ppm DESC, exchange, symbol",
        CrowdSort::MostLonged => " ORDER BY long_ppm DESC, exchange, symbol",
    });
    q.push(" LIMIT ").push_bind(limit).push(" OFFSET ").push_bind(offset);
    q.build_query_as().fetch_all(db).await
}

/// Averages and extremes over the latest readings.
#[derive(Debug, sqlx::FromRow)]
pub struct CrowdSummaryRow {
    pub tracked: i64,
    /// Mean long share, millionths (rounded); `None` when nothing is tracked.
    pub avg_long_ppm: Option<i64>,
    pub avg_short_ppm: Option<i64>,
    pub updated_at: Option<DateTime<Utc>>,
}

pub async fn summary(db: &PgPool, filter: &PerpFilter) -> Result<(CrowdSummaryRow, Option<CrowdRow>, Option<CrowdRow>), sqlx::Error> {
    let mut q = QueryBuilder::new(
        "SELECT count(*) AS tracked, round(avg(long_ppm))::bigint AS avg_long_ppm, round(avg(short_ppm))::bigint AS avg_short_ppm,
                max(updated_at) AS updated_at FROM crowd_latest",
    );
    push_where(filter, &mut q);
    let summary = q.build_query_as().fetch_one(db).await?;
    // The extremes alone: the count a leaderboard adds is the summary's `tracked`.
    let longed = ranked(db, filter, CrowdSort::MostLonged, 1, 0).await?;
    let shorted = ranked(db, filter, CrowdSort::MostShorted, 1, 0).await?;
    Ok((summary, longed.into_iter().next(), shorted.into_iter().next()))
}

pub async fn latest(db: &PgPool, exchange: &str, symbol: &str) -> Result<Option<CrowdRow>, sqlx::Error> {
    sqlx::query_as("SELECT exchange, symbol, long_ppm, short_ppm, open_interest_cents, updated_at FROM crowd_latest WHERE exchange = $1 AND symbol = $2")
        .bind(exchange)
        .bind(symbol)
        .fetch_optional(db)
        .await
}

/// A perp's readings since `since`, oldest first: (time, long, short).
pub async fn history(db: &PgPool, exchange: &str, symbol: &str, since: DateTime<Utc>) -> Result<Vec<(DateTime<Utc>, i32, i32)>, sqlx::Error> {
    sqlx::query_as("SELECT ts, long_ppm, short_ppm FROM crowd_history WHERE exchange = $1 AND symbol = $2 AND ts >= $3 ORDER BY ts")
        .bind(exchange)
        .bind(symbol)
        .bind(since)
        .fetch_all(db)
        .await
}
