//! `series`: definitions with their running statistics, and the cards the series endpoints
//! show (a series with its current round).

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use crate::domain::market::MarketStatus;
use crate::domain::series::{SeriesSpec, liquidity_for_tier};

/// A series with its statistics and its current round, if any.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct SeriesRow {
    pub id: Uuid,
    pub exchange: String,
    pub symbol: String,
    pub slug: String,
    pub display_name: String,
    pub tier: i16,
    pub total_rounds: i32,
    pub yes_rounds: i32,
    pub total_volume: i64,
    /// Mean settled rate, 1e-12 (the sum is NUMERIC in the table: it can outgrow i64).
    pub avg_rate: Option<i64>,
    pub longest_yes_streak: i32,
    pub longest_no_streak: i32,
    pub last_outcome: Option<String>,
    pub last_settled_at: Option<DateTime<Utc>>,
    #[sqlx(flatten)]
    pub current: CurrentRound,
}

/// The round a series card shows: the open one, else the next pending, else the one closing
/// or resolving. All `None` when the series has no unfinished round.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct CurrentRound {
    pub round_id: Option<Uuid>,
    pub round_number: Option<i32>,
    pub round_status: Option<MarketStatus>,
    pub round_open_ts: Option<DateTime<Utc>>,
    pub round_close_ts: Option<DateTime<Utc>>,
    pub round_settlement_ts: Option<DateTime<Utc>>,
    pub round_yes_price_ppm: Option<i32>,
    pub round_total_volume: Option<i64>,
    pub round_trade_count: Option<i32>,
    pub round_ou_prior_ppm: Option<i32>,
    pub round_ou_confidence_ppm: Option<i32>,
}

/// Series cards for the series chosen by `choose` (a query over `series s` returning whole
/// rows in listing order): the page is picked first, then each chosen series' current round is
/// looked up through the partial index on unfinished rounds — never a lookup per series in the
/// table.
fn series_cards(choose: &str) -> String {
    format!(
        "WITH chosen AS ({choose})
         SELECT s.id, s.exchange, s.symbol, s.slug, s.display_name, s.tier, s.total_rounds, s.yes_rounds,
                s.total_volume, CASE WHEN s.total_rounds > 0 THEN round(s.rate_sum / s.total_rounds)::bigint END AS avg_rate,
                s.longest_yes_streak, s.longest_no_streak, s.last_outcome, s.last_settled_at,
                c.id AS round_id, c.round_number, c.status AS round_status, c.open_ts AS round_open_ts,
                c.close_ts AS round_close_ts, c.settlement_ts AS round_settlement_ts,
                c.yes_price_ppm AS round_yes_price_ppm, c.total_volume AS round_total_volume,
                c.trade_count AS round_trade_count, c.ou_prior_ppm AS round_ou_prior_ppm,
                c.ou_confidence_ppm AS round_ou_confidence_ppm
         FROM chosen s
         LEFT JOIN LATERAL (
             SELECT * FROM markets m
             WHERE m.series_id = s.id AND m.status IN ('pending', 'open', 'closed', 'resolving')
             ORDER BY CASE m.status WHEN 'open' THEN 0 WHEN 'pending' THEN 2 ELSE 1 END, m.settlement_ts
             LIMIT 1
         ) c ON true
         ORDER BY s.tier, s.slug"
    )
}

/// A page of active series (optionally of one exchange), tier then slug, and the total.
pub async fn list_series(db: &PgPool, exchange: Option<&str>, limit: i64, offset: i64) -> Result<(Vec<SeriesRow>, i64), sqlx::Error> {
    let rows = sqlx::query_as(&series_cards(
        "SELECT * FROM series s WHERE s.active AND ($1::text IS NULL OR s.exchange = $1) ORDER BY s.tier, s.slug LIMIT $2 OFFSET $3",
    ))
    .bind(exchange)
    .bind(limit)
    .bind(offset)
    .fetch_all(db)
    .await?;
    let total = sqlx::query_scalar("SELECT count(*) FROM series WHERE active AND ($1::text IS NULL OR exchange = $1)").bind(exchange).fetch_one(db).await?;
    Ok((rows, total))
}

/// Every active series' card, in listing order (the series listing's full load).
pub async fn active_cards(db: &PgPool) -> Result<Vec<SeriesRow>, sqlx::Error> {
    sqlx::query_as(&series_cards("SELECT * FROM series s WHERE s.active")).fetch_all(db).await
}

/// The cards of those of `ids` that are active.
pub async fn cards_of(db: &PgPool, ids: &[Uuid]) -> Result<Vec<SeriesRow>, sqlx::Error> {
    sqlx::query_as(&series_cards("SELECT * FROM series s WHERE s.id = ANY($1) AND s.active")).bind(ids).fetch_all(db).await
}

pub async fn series_by_slug(db: &PgPool, slug: &str) -> Result<Option<SeriesRow>, sqlx::Error> {
    sqlx::query_as(&series_cards("SELECT * FROM series s WHERE s.slug = $1")).bind(slug).fetch_optional(db).await
}

pub async fn series_by_id(db: &PgPool, id: Uuid) -> Result<Option<SeriesRow>, sqlx::Error> {
    sqlx::query_as(&series_cards("SELECT * FROM series s WHERE s.id = $1")).bind(id).fetch_optional(db).await
}

/// Serialises `ensure` across processes. Replicas starting together run it at once, and
/// `ON CONFLICT` absorbs a race only on its arbiter index, (exchange, symbol): two concurrent
/// inserts of a new series collided on the other unique index, `slug`, and one replica's
/// start-up failed.
const ENSURE_LOCK: i64 = 0x7365_7269_6573_0001; // "series", 1

/// Inserts the series that do not exist yet, in one statement (start-up runs this with every
/// configured series), and sets the round length of those that exist (a series can be switched
/// to short rounds and back). Idempotent, and safe to run from several processes at once.
/// Returns how many were new.
pub async fn ensure(db: &PgPool, specs: &[SeriesSpec]) -> Result<u64, sqlx::Error> {
    let ids: Vec<Uuid> = specs.iter().map(|_| Uuid::new_v4()).collect();
    let exchanges: Vec<&str> = specs.iter().map(|s| s.exchange.id()).collect();
    let symbols: Vec<&str> = specs.iter().map(|s| s.symbol.as_str()).collect();
    let slugs: Vec<String> = specs.iter().map(SeriesSpec::slug).collect();
    let names: Vec<String> = specs.iter().map(SeriesSpec::display_name).collect();
    let tiers: Vec<i16> = specs.iter().map(|s| s.tier() as i16).collect();
    let liquidity: Vec<i64> = specs.iter().map(|s| liquidity_for_tier(s.tier()) as i64).collect();
    let intervals: Vec<i16> = specs.iter().map(|s| s.interval_hours() as i16).collect();
    let round_minutes: Vec<Option<i16>> = specs.iter().map(|s| s.round_minutes().map(|m| m as i16)).collect();
    let mut tx = db.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(ENSURE_LOCK).execute(&mut *tx).await?;
    // `xmax = 0` tells a row this statement inserted from one it updated.
    let inserted: Vec<bool> = sqlx::query_scalar(
        "INSERT INTO series (id, exchange, symbol, slug, display_name, tier, liquidity_b, interval_hours, round_minutes)
         SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::smallint[], $7::bigint[], $8::smallint[], $9::smallint[])
         ON CONFLICT (exchange, symbol) DO UPDATE SET round_minutes = EXCLUDED.round_minutes
           WHERE series.round_minutes IS DISTINCT FROM EXCLUDED.round_minutes
         RETURNING xmax = 0",
    )
    .bind(&ids)
    .bind(&exchanges)
    .bind(&symbols)
    .bind(&slugs)
    .bind(&names)
    .bind(&tiers)
    .bind(&liquidity)
    .bind(&intervals)
    .bind(&round_minutes)
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(inserted.into_iter().filter(|new| *new).count() as u64)
}
