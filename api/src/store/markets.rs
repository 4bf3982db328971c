//! `markets`, `trades` and `market_prices`: the rounds, their trades and price history.
//! Rows carry integers (millionths, 1e-12 rates); the HTTP layer turns them into the
//! contract's strings.

use chrono::{DateTime, Utc};
use funding_market::client;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::positions;
use crate::domain::market::{MarketStatus, Side};
use crate::domain::quote::PricedMarket;

/// A market with what its series contributes (symbol, exchange, tier).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MarketRow {
    pub id: Uuid,
    pub series_id: Uuid,
    pub symbol: String,
    pub exchange: String,
    pub tier: i16,
    pub round_number: i32,
    pub status: MarketStatus,
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

impl MarketRow {
    pub fn priced(&self) -> PricedMarket {
        PricedMarket {
            status: self.status,
            open_ts: self.open_ts,
            close_ts: self.close_ts,
            liquidity_b: self.liquidity_b as u64,
            q_yes: self.q_yes as u64,
            q_no: self.q_no as u64,
        }
    }
}

pub async fn market(db: &PgPool, id: Uuid) -> Result<Option<MarketRow>, sqlx::Error> {
    sqlx::query_as(&format!("{MARKET_SELECT} WHERE m.id = $1")).bind(id).fetch_optional(db).await
}

/// A page of markets (`list_markets`), how many there are, and how many rows their count was
/// summed from (the caller compacts them when there are many).
pub struct MarketPage {
    pub rows: Vec<MarketRow>,
    pub total: i64,
    pub count_rows: i64,
}

/// A page of markets, optionally of one status: unfinished ones soonest first, finished ones
/// latest first (ties by id), and how many there are.
///
/// Neither the count nor the page scans the table: the total is summed from
/// `market_status_counts`, a page beyond it is not queried at all, and a page is read in two
/// parts (unfinished, then finished), each in the order of a partial index, with the offset
/// skipped on the index alone before the rows are read.
pub async fn list_markets(db: &PgPool, status: Option<MarketStatus>, limit: i64, offset: i64) -> Result<MarketPage, sqlx::Error> {
    let counts: Vec<(MarketStatus, i64, i64)> =
        sqlx::query_as("SELECT status, sum(n)::BIGINT, count(*) FROM market_status_counts WHERE $1::text IS NULL OR status = $1 GROUP BY status")
            .bind(status)
            .fetch_all(db)
            .await?;
    let total: i64 = counts.iter().map(|(_, n, _)| n).sum();
    let count_rows: i64 = counts.iter().map(|(_, _, rows)| rows).sum();
    let unfinished: i64 = counts.iter().filter(|(s, _, _)| !s.is_final()).map(|(_, n, _)| n).sum();
    let mut rows = Vec::new();
    if offset < unfinished {
        rows = listing_part(db, status, false, limit, offset).await?;
    }
    let wanted = limit - rows.len() as i64;
    if wanted > 0 && offset + (rows.len() as i64) < total {
        let skip = (offset - unfinished).max(0);
        rows.extend(listing_part(db, status, true, wanted, skip).await?);
    }
    Ok(MarketPage { rows, total, count_rows })
}

/// One part of the listing: the page's ids in index order (`finished`: latest first), then
/// their rows.
async fn listing_part(db: &PgPool, status: Option<MarketStatus>, finished: bool, limit: i64, offset: i64) -> Result<Vec<MarketRow>, sqlx::Error> {
    let (part, order) = if finished {
        ("m.status IN ('settled', 'voided')", "m.settlement_ts DESC, m.id")
    } else {
        ("m.status IN ('pending', 'open', 'closed', 'resolving')", "m.settlement_ts, m.id")
    };
    sqlx::query_as(&format!(
        "{MARKET_SELECT}
         JOIN unnest(ARRAY(
             SELECT m.id FROM markets m WHERE {part} AND ($1::text IS NULL OR m.status = $1)
             ORDER BY {order} LIMIT $2 OFFSET $3)) WITH ORDINALITY AS page (id, at) ON page.id = m.id
         ORDER BY page.at"
    ))
    .bind(status)
    .bind(limit)
    .bind(offset)
    .fetch_all(db)
    .await
}

/// Folds `market_status_counts` into one row per status that has markets (the trigger appends a
/// row per change).
/// Safe beside writers and other compactions: each deletes only rows it sees, and adds back
/// exactly their sum in the same transaction.
pub async fn compact_status_counts(db: &PgPool) -> Result<(), sqlx::Error> {
    sqlx::query(
        "WITH folded AS (DELETE FROM market_status_counts RETURNING status, n)
         INSERT INTO market_status_counts (status, n) SELECT status, sum(n) FROM folded GROUP BY status HAVING sum(n) <> 0",
    )
    .execute(db)
    .await?;
    Ok(())
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
    let total =
        sqlx::query_scalar("SELECT count(*) FROM markets WHERE series_id = $1 AND status IN ('settled', 'voided')").bind(series_id).fetch_one(db).await?;
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
    pub side: Side,
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

/// One trade by id.
pub async fn trade(db: &PgPool, id: Uuid) -> Result<Option<TradeRow>, sqlx::Error> {
    sqlx::query_as("SELECT id, market_id, side, is_buy, shares, amount, fee, created_at FROM trades WHERE id = $1").bind(id).fetch_optional(db).await
}

pub async fn price_history(db: &PgPool, market_id: Uuid, limit: i64) -> Result<Vec<(DateTime<Utc>, i32)>, sqlx::Error> {
    sqlx::query_as("SELECT at, yes_price_ppm FROM market_prices WHERE market_id = $1 ORDER BY at LIMIT $2").bind(market_id).bind(limit).fetch_all(db).await
}

/// One trade of a transaction, as its event names it: a transaction can hold several (on
/// several markets, buys and sells, of one wallet or more).
pub struct TradeInTransaction<'a> {
    pub signature: &'a str,
    pub wallet: &'a str,
    /// The market's program address.
    pub market_address: &'a str,
    pub side: Side,
    pub is_buy: bool,
    /// Micro-shares.
    pub shares: u64,
}

/// The id the projection gave that trade.
pub async fn trade_id(db: &PgPool, trade: &TradeInTransaction<'_>) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT t.id FROM trades t JOIN markets m ON m.id = t.market_id
         WHERE t.signature = $1 AND t.wallet = $2 AND m.onchain_address = $3 AND t.side = $4 AND t.is_buy = $5 AND t.shares = $6
         ORDER BY t.id LIMIT 1",
    )
    .bind(trade.signature)
    .bind(trade.wallet)
    .bind(trade.market_address)
    .bind(trade.side.as_str())
    .bind(trade.is_buy)
    .bind(trade.shares as i64)
    .fetch_optional(db)
    .await
}

/// What the service knows of a market, enough to trade it and to create it on chain.
#[derive(Debug, sqlx::FromRow)]
pub struct MarketPlan {
    pub id: Uuid,
    pub slug: String,
    pub open_ts: DateTime<Utc>,
    pub close_ts: DateTime<Utc>,
    pub settlement_ts: DateTime<Utc>,
    pub liquidity_b: i64,
    pub ou_prior_ppm: i32,
    pub status: MarketStatus,
    pub onchain_address: Option<String>,
}

/// `MarketPlan`'s columns (`m` the market, `s` its series); a macro so that the statements
/// reading them stay literals.
macro_rules! plan_columns {
    () => {
        "m.id, s.slug, m.open_ts, m.close_ts, m.settlement_ts, m.liquidity_b, m.ou_prior_ppm, m.status, m.onchain_address"
    };
}

pub async fn plan(db: &PgPool, id: Uuid) -> Result<Option<MarketPlan>, sqlx::Error> {
    sqlx::query_as(concat!("SELECT ", plan_columns!(), " FROM markets m JOIN series s ON s.id = m.series_id WHERE m.id = $1")).bind(id).fetch_optional(db).await
}

/// What a trade reads of its trader beside the market's plan: what the wallet can spend
/// (`positions::available_sql`, a buy) or the shares of one side it holds in the market
/// (micro-shares, a sell).
#[derive(Clone, Copy, Debug)]
pub enum TraderAmount {
    Spendable,
    Shares(Side),
}

impl TraderAmount {
    /// As `plans_for_traders` takes it: 0 spendable, 1 YES shares, 2 NO shares.
    fn code(self) -> i16 {
        match self {
            TraderAmount::Spendable => 0,
            TraderAmount::Shares(Side::Yes) => 1,
            TraderAmount::Shares(Side::No) => 2,
        }
    }
}

/// A trade's read: market, trader's wallet, and which amount.
pub struct TradeRead {
    pub market: Uuid,
    pub wallet: String,
    pub amount: TraderAmount,
}

/// The plans of the markets `reads` name, each with its trader's amount, in one statement (the
/// reads of concurrent trades, `services::trade_plans`): one answer per read, in order, `None`
/// where there is no such market.
pub async fn plans_for_traders(db: &mut PgConnection, reads: &[TradeRead]) -> Result<Vec<Option<(MarketPlan, u64)>>, sqlx::Error> {
    let markets: Vec<Uuid> = reads.iter().map(|r| r.market).collect();
    let wallets: Vec<&str> = reads.iter().map(|r| r.wallet.as_str()).collect();
    let amounts: Vec<i16> = reads.iter().map(|r| r.amount.code()).collect();
    // Each read looks up its market on its own (`OFFSET 0` keeps the planner from flattening
    // the subquery into a join, which on a small table — or with a plan made while it was
    // small — scans every market). A CASE evaluates only its matching branch, so a buy reads
    // no position and a sell no withdrawals.
    let rows: Vec<TraderPlanRow> = sqlx::query_as(concat!(
        "SELECT r.ord, found.* FROM unnest($1::UUID[], $2::TEXT[], $3::SMALLINT[]) WITH ORDINALITY AS r(id, wallet, amount, ord) ",
        "CROSS JOIN LATERAL (SELECT ",
        plan_columns!(),
        ", CASE WHEN r.amount = 0 THEN ",
        positions::available_sql!("r.wallet"),
        " ELSE COALESCE((SELECT CASE WHEN r.amount = 1 THEN p.yes_shares ELSE p.no_shares END FROM positions p ",
        "WHERE p.market_id = m.id AND p.wallet = r.wallet), 0) END AS amount ",
        "FROM markets m JOIN series s ON s.id = m.series_id WHERE m.id = r.id OFFSET 0) found"
    ))
    .bind(&markets)
    .bind(&wallets)
    .bind(&amounts)
    .fetch_all(db)
    .await?;
    let mut found: Vec<Option<(MarketPlan, u64)>> = reads.iter().map(|_| None).collect();
    for row in rows {
        found[row.ord as usize - 1] = Some((row.plan, row.amount as u64));
    }
    Ok(found)
}

/// `plans_for_traders` for one read, on a connection of the pool.
pub async fn plan_for_trader(db: &PgPool, read: TradeRead) -> Result<Option<(MarketPlan, u64)>, sqlx::Error> {
    Ok(plans_for_traders(&mut *db.acquire().await?, std::slice::from_ref(&read)).await?.pop().flatten())
}

/// A row of `plans_for_traders`: its read's place (from 1), the plan, the amount.
#[derive(sqlx::FromRow)]
struct TraderPlanRow {
    ord: i64,
    #[sqlx(flatten)]
    plan: MarketPlan,
    amount: i64,
}

/// Records the market's program address where an older row lacks it (the scheduler sets it at
/// creation), so its events are projected even before its creation is indexed.
pub async fn link(db: &PgPool, plan: &MarketPlan) -> Result<(), sqlx::Error> {
    if plan.onchain_address.is_none() {
        sqlx::query("UPDATE markets SET onchain_address = $2 WHERE id = $1 AND onchain_address IS NULL")
            .bind(plan.id)
            .bind(client::market_pda(plan.id.as_bytes()).to_string())
            .execute(db)
            .await?;
    }
    Ok(())
}

/// A market's status, its row locked until the transaction ends.
pub async fn lock_status(tx: &mut sqlx::PgConnection, id: Uuid) -> Result<Option<MarketStatus>, sqlx::Error> {
    sqlx::query_scalar("SELECT status FROM markets WHERE id = $1 FOR UPDATE").bind(id).fetch_optional(tx).await
}

/// Finalized rounds whose payouts are not all made yet, oldest settlement first.
pub async fn awaiting_payout(db: &PgPool, limit: i64) -> Result<Vec<Uuid>, sqlx::Error> {
    sqlx::query_scalar("SELECT id FROM markets WHERE paid_out_at IS NULL AND status IN ('settled', 'voided') ORDER BY settlement_ts, id LIMIT $1")
        .bind(limit)
        .fetch_all(db)
        .await
}

/// The wallets holding a position in the market (the projection: a settled position is gone).
pub async fn position_wallets(db: &PgPool, market_id: Uuid) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar("SELECT wallet FROM positions WHERE market_id = $1 ORDER BY wallet").bind(market_id).fetch_all(db).await
}

/// Records that every payout of the round was made (kept if already recorded: the projection of
/// `MarketClosed` usually has, and then no row is written and no notice sent).
pub async fn mark_paid_out(db: impl sqlx::PgExecutor<'_>, market_id: Uuid, at: DateTime<Utc>) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE markets SET paid_out_at = $2 WHERE id = $1 AND paid_out_at IS NULL").bind(market_id).bind(at).execute(db).await?;
    Ok(())
}
