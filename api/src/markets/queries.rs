//! Reads for the series and market endpoints. Rows carry integers (millionths, 1e-12 rates);
//! the routes turn them into the contract's strings.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

/// A series with its statistics and its current round, if any.
#[derive(Debug, sqlx::FromRow)]
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
#[derive(Debug, sqlx::FromRow)]
pub struct CurrentRound {
    pub round_id: Option<Uuid>,
    pub round_number: Option<i32>,
    pub round_status: Option<String>,
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
    let total = sqlx::query_scalar("SELECT count(*) FROM series WHERE active AND ($1::text IS NULL OR exchange = $1)")
        .bind(exchange)
        .fetch_one(db)
        .await?;
    Ok((rows, total))
}

pub async fn series_by_slug(db: &PgPool, slug: &str) -> Result<Option<SeriesRow>, sqlx::Error> {
    sqlx::query_as(&series_cards("SELECT * FROM series s WHERE s.slug = $1")).bind(slug).fetch_optional(db).await
}

pub async fn series_by_id(db: &PgPool, id: Uuid) -> Result<Option<SeriesRow>, sqlx::Error> {
    sqlx::query_as(&series_cards("SELECT * FROM series s WHERE s.id = $1")).bind(id).fetch_optional(db).await
}

/// A market with what its series contributes (symbol, exchange, tier).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MarketRow {
    pub id: Uuid,
    pub series_id: Uuid,
    pub symbol: String,
    pub exchange: String,
    pub tier: i16,
    pub round_number: i32,
    pub status: String,
    pub open_ts: DateTime<Utc>,
    pub close_ts: DateTime<Utc>,
    pub settlement_ts: DateTime<Utc>,
    pub liquidity_b: i64,
    pub q_yes: i64,
    pub q_no: i64,
    pub yes_price_ppm: i32,
    pub total_volume: i64,
    pub trade_count: i32,
    pub ou_prior_ppm: i32,
    pub ou_confidence_ppm: i32,
    pub outcome: Option<String>,
    pub actual_rate: Option<i64>,
    pub settled_at: Option<DateTime<Utc>>,
}

const MARKET_SELECT: &str = "
    SELECT m.id, m.series_id, s.symbol, s.exchange, s.tier, m.round_number, m.status, m.open_ts, m.close_ts,
           m.settlement_ts, m.liquidity_b, m.q_yes, m.q_no, m.yes_price_ppm, m.total_volume, m.trade_count,
           m.ou_prior_ppm, m.ou_confidence_ppm, m.outcome, m.actual_rate, m.settled_at
    FROM markets m JOIN series s ON s.id = m.series_id";

pub async fn market(db: &PgPool, id: Uuid) -> Result<Option<MarketRow>, sqlx::Error> {
    sqlx::query_as(&format!("{MARKET_SELECT} WHERE m.id = $1")).bind(id).fetch_optional(db).await
}

/// A page of markets, optionally of one status: unfinished ones soonest first, finished ones
/// latest first.
pub async fn list_markets(db: &PgPool, status: Option<&str>, limit: i64, offset: i64) -> Result<(Vec<MarketRow>, i64), sqlx::Error> {
    let rows = sqlx::query_as(&format!(
        "{MARKET_SELECT} WHERE ($1::text IS NULL OR m.status = $1)
         ORDER BY CASE WHEN m.status IN ('settled', 'voided') THEN 1 ELSE 0 END,
                  CASE WHEN m.status IN ('settled', 'voided') THEN -extract(epoch FROM m.settlement_ts) ELSE extract(epoch FROM m.settlement_ts) END,
                  m.id
         LIMIT $2 OFFSET $3"
    ))
    .bind(status)
    .bind(limit)
    .bind(offset)
    .fetch_all(db)
    .await?;
    let total = sqlx::query_scalar("SELECT count(*) FROM markets WHERE ($1::text IS NULL OR status = $1)").bind(status).fetch_one(db).await?;
    Ok((rows, total))
}

/// The series' settled (and voided) rounds, latest first.
pub async fn settled_rounds(db: &PgPool, series_id: Uuid, limit: i64, offset: i64) -> Result<(Vec<MarketRow>, i64), sqlx::Error> {
    let rows = sqlx::query_as(&format!(
        "{MARKET_SELECT} WHERE m.series_id = $1 AND m.status IN ('settled', 'voided') ORDER BY m.settlement_ts DESC LIMIT $2 OFFSET $3"
    ))
    .bind(series_id)
    .bind(limit)
    .bind(offset)
    .fetch_all(db)
    .await?;
    let total = sqlx::query_scalar("SELECT count(*) FROM markets WHERE series_id = $1 AND status IN ('settled', 'voided')")
        .bind(series_id)
        .fetch_one(db)
        .await?;
    Ok((rows, total))
}

/// The open round of a series, if any.
pub async fn open_round(db: &PgPool, series_id: Uuid) -> Result<Option<MarketRow>, sqlx::Error> {
    sqlx::query_as(&format!("{MARKET_SELECT} WHERE m.series_id = $1 AND m.status = 'open' ORDER BY m.settlement_ts LIMIT 1"))
        .bind(series_id)
        .fetch_optional(db)
        .await
}

#[derive(Debug, sqlx::FromRow)]
pub struct TradeRow {
    pub id: Uuid,
    pub market_id: Uuid,
    pub side: String,
    pub is_buy: bool,
    pub shares: i64,
    pub amount: i64,
    pub fee: i64,
    pub created_at: DateTime<Utc>,
}

/// Whose trades to list.
#[derive(Clone, Copy, Debug)]
pub enum TradesOf<'a> {
    Market(Uuid),
    Wallet(&'a str),
}

/// A page of trades, latest first (the slot orders trades of the same second), and how many
/// there are.
pub async fn trades(db: &PgPool, of: TradesOf<'_>, limit: i64, offset: i64) -> Result<(Vec<TradeRow>, i64), sqlx::Error> {
    let (filter, key) = match of {
        TradesOf::Market(id) => ("market_id = $1::UUID", id.to_string()),
        TradesOf::Wallet(wallet) => ("wallet = $1", wallet.to_owned()),
    };
    let rows = sqlx::query_as(&format!(
        "SELECT id, market_id, side, is_buy, shares, amount, fee, created_at FROM trades WHERE {filter}
         ORDER BY created_at DESC, slot DESC NULLS LAST, id LIMIT $2 OFFSET $3"
    ))
    .bind(&key)
    .bind(limit)
    .bind(offset)
    .fetch_all(db)
    .await?;
    let total = sqlx::query_scalar(&format!("SELECT count(*) FROM trades WHERE {filter}")).bind(&key).fetch_one(db).await?;
    Ok((rows, total))
}

pub async fn price_history(db: &PgPool, market_id: Uuid, limit: i64) -> Result<Vec<(DateTime<Utc>, i32)>, sqlx::Error> {
    sqlx::query_as("SELECT at, yes_price_ppm FROM market_prices WHERE market_id = $1 ORDER BY at LIMIT $2")
        .bind(market_id)
        .bind(limit)
        .fetch_all(db)
        .await
}
