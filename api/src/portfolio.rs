//! A wallet's positions, trades and results, from the projection (integers throughout).
//!
//! Cost basis of a position side: what its buys cost (fees included) less what its sells
//! returned (net of fees), never below zero. Realized P&L is booked at settlement
//! (`trader_stats`, kept by the projection); unrealized P&L is an open side's value at the
//! market's current price less its basis.

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::PgPool;
use uuid::Uuid;

#[derive(Debug, sqlx::FromRow)]
pub struct OpenPosition {
    pub market_id: Uuid,
    pub symbol: String,
    pub exchange: String,
    /// `yes` or `no`.
    pub side: String,
    /// Micro-shares held.
    pub shares: i64,
    /// Micro-USDC.
    pub basis: i64,
    /// The side's current price, millionths.
    pub price_ppm: i64,
    pub settlement_ts: DateTime<Utc>,
}

impl OpenPosition {
    /// What the shares are worth at the current price, micro-USDC (rounded down).
    pub fn value(&self) -> i64 {
        (self.shares as i128 * self.price_ppm as i128 / 1_000_000) as i64
    }

    pub fn unrealized_pnl(&self) -> i64 {
        self.value() - self.basis
    }

    /// Basis per share, micro-USDC (rounded down).
    pub fn avg_price(&self) -> i64 {
        (self.basis as i128 * 1_000_000 / self.shares.max(1) as i128) as i64
    }
}

/// The wallet's open position sides in markets not yet settled or voided.
pub async fn open_positions(db: &PgPool, wallet: &str) -> Result<Vec<OpenPosition>, sqlx::Error> {
    sqlx::query_as(
        "WITH held AS (
             SELECT market_id, 'yes' AS side, yes_shares AS shares FROM positions WHERE wallet = $1 AND yes_shares > 0
             UNION ALL
             SELECT market_id, 'no', no_shares FROM positions WHERE wallet = $1 AND no_shares > 0),
         basis AS (
             SELECT market_id, side, sum(CASE WHEN is_buy THEN amount + fee ELSE -(amount - fee) END) AS basis
             FROM trades WHERE wallet = $1 GROUP BY market_id, side)
         SELECT h.market_id, s.symbol, s.exchange, h.side, h.shares, GREATEST(COALESCE(b.basis, 0), 0)::BIGINT AS basis,
                (CASE WHEN h.side = 'yes' THEN m.yes_price_ppm ELSE 1000000 - m.yes_price_ppm END)::BIGINT AS price_ppm,
                m.settlement_ts
         FROM held h
         JOIN markets m ON m.id = h.market_id
         JOIN series s ON s.id = m.series_id
         LEFT JOIN basis b ON b.market_id = h.market_id AND b.side = h.side
         WHERE m.status NOT IN ('settled', 'voided')
         ORDER BY m.settlement_ts, h.market_id, h.side",
    )
    .bind(wallet)
    .fetch_all(db)
    .await
}

/// A wallet's totals over a period (from `trader_stats`).
#[derive(Debug, Default, sqlx::FromRow)]
pub struct Totals {
    pub realized_pnl: i64,
    pub volume: i64,
    pub trades: i64,
    pub settled: i64,
    pub wins: i64,
}

impl Totals {
    /// Wins over settled positions, in millionths (0 with none settled).
    pub fn win_rate_ppm(&self) -> i64 {
        if self.settled == 0 { 0 } else { self.wins * 1_000_000 / self.settled }
    }
}

pub async fn totals(db: &PgPool, wallet: &str) -> Result<Totals, sqlx::Error> {
    sqlx::query_as(
        "SELECT COALESCE(sum(realized_pnl), 0)::BIGINT AS realized_pnl, COALESCE(sum(volume), 0)::BIGINT AS volume,
                COALESCE(sum(trades), 0)::BIGINT AS trades, COALESCE(sum(settled), 0)::BIGINT AS settled,
                COALESCE(sum(wins), 0)::BIGINT AS wins
         FROM trader_stats WHERE wallet = $1",
    )
    .bind(wallet)
    .fetch_one(db)
    .await
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortBy {
    Pnl,
    WinRate,
    Volume,
}

#[derive(Debug, sqlx::FromRow)]
pub struct LeaderRow {
    pub wallet: String,
    pub display_name: Option<String>,
    pub realized_pnl: i64,
    pub volume: i64,
    pub trades: i64,
    pub settled: i64,
    pub wins: i64,
}

/// Traders active since `since` (all time when `None`), best first by `sort`; ties by volume,
/// then wallet, so the order is stable.
pub async fn leaderboard(db: &PgPool, since: Option<NaiveDate>, sort: SortBy, limit: i64) -> Result<Vec<LeaderRow>, sqlx::Error> {
    let order = match sort {
        SortBy::Pnl => "realized_pnl DESC, volume DESC, wallet",
        SortBy::WinRate => "(CASE WHEN settled = 0 THEN 0 ELSE wins::NUMERIC / settled END) DESC, settled DESC, volume DESC, wallet",
        SortBy::Volume => "volume DESC, realized_pnl DESC, wallet",
    };
    sqlx::query_as(&format!(
        "WITH period AS (
             SELECT wallet, sum(realized_pnl)::BIGINT AS realized_pnl, sum(volume)::BIGINT AS volume, sum(trades)::BIGINT AS trades,
                    sum(settled)::BIGINT AS settled, sum(wins)::BIGINT AS wins
             FROM trader_stats WHERE $1::DATE IS NULL OR day >= $1 GROUP BY wallet)
         SELECT p.wallet, u.display_name, p.realized_pnl, p.volume, p.trades, p.settled, p.wins
         FROM period p LEFT JOIN users u ON u.wallet_address = p.wallet
         ORDER BY {order} LIMIT $2"
    ))
    .bind(since)
    .bind(limit)
    .fetch_all(db)
    .await
}
