//! `positions`, `trades` (as cost basis), `trader_stats` and `vault_balances`: a wallet's
//! holdings and results as the projection keeps them (`domain::portfolio` computes on them).

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use crate::domain::market::Side;
use crate::domain::portfolio::{OpenPosition, PeriodStart, SortBy, Totals};

#[derive(sqlx::FromRow)]
struct OpenPositionRow {
    market_id: Uuid,
    symbol: String,
    exchange: String,
    side: Side,
    shares: i64,
    basis: i64,
    price_ppm: i64,
    settlement_ts: DateTime<Utc>,
}

impl From<OpenPositionRow> for OpenPosition {
    fn from(r: OpenPositionRow) -> OpenPosition {
        OpenPosition {
            market_id: r.market_id,
            symbol: r.symbol,
            exchange: r.exchange,
            side: r.side,
            shares: r.shares,
            basis: r.basis,
            price_ppm: r.price_ppm,
            settlement_ts: r.settlement_ts,
        }
    }
}

#[derive(sqlx::FromRow)]
struct TotalsRow {
    realized_pnl: i64,
    volume: i64,
    trades: i64,
    settled: i64,
    wins: i64,
}

impl From<TotalsRow> for Totals {
    fn from(r: TotalsRow) -> Totals {
        Totals { realized_pnl: r.realized_pnl, volume: r.volume, trades: r.trades, settled: r.settled, wins: r.wins }
    }
}

/// The wallet's available balance (`AVAILABLE`).
pub async fn available_balance(db: &PgPool, wallet: &str) -> Result<u64, sqlx::Error> {
    let balance: i64 = sqlx::query_scalar(AVAILABLE).bind(wallet).fetch_one(db).await?;
    Ok(balance as u64)
}

/// What the wallet whose address is the parameter `$wallet` (e.g. `"$1"`) can spend
/// (micro-USDC), as an SQL expression: its vault less what its withdrawals reserve — those
/// pending or processing whose transaction has not been projected yet (once it is, the vault
/// balance itself is lower). One expression, so both are read at the same moment. Never below
/// zero (a wallet can spend its vault with its own signature, past the service's reservations).
/// A macro so that statements reading it with other columns (`markets::plans_for_traders`) are
/// literals too.
macro_rules! available_sql {
    ($wallet:literal) => {
        concat!(
            "GREATEST(0, COALESCE((SELECT balance FROM vault_balances WHERE wallet = ",
            $wallet,
            "), 0) - COALESCE((SELECT sum(amount) FROM withdrawals w WHERE w.wallet = ",
            $wallet,
            " AND w.status IN ('pending', 'processing') AND NOT EXISTS (SELECT 1 FROM chain_withdrawals c WHERE c.signature = w.signature)), 0))::BIGINT"
        )
    };
}
pub(crate) use available_sql;

/// The wallet's available balance (`available_sql`) as a statement of its own.
pub const AVAILABLE: &str = concat!("SELECT ", available_sql!("$1"));

/// The wallet's available balance (`available_sql`) and the cost basis of its open position
/// sides (as `open_positions` values them, each side at least zero), micro-USDC, read in one
/// statement: a payout landing between two reads would move its amount from one to the other
/// and show a total it never had.
pub async fn balance(db: &PgPool, wallet: &str) -> Result<(u64, i64), sqlx::Error> {
    let (available, locked): (i64, i64) = sqlx::query_as(concat!(
        "SELECT ",
        available_sql!("$1"),
        ", (SELECT COALESCE(sum(CASE WHEN yes_shares > 0 THEN GREATEST(yes_basis, 0) ELSE 0 END
                               + CASE WHEN no_shares > 0 THEN GREATEST(no_basis, 0) ELSE 0 END), 0)
            FROM positions WHERE wallet = $1)::BIGINT"
    ))
    .bind(wallet)
    .fetch_one(db)
    .await?;
    Ok((available as u64, locked))
}

/// The wallet's open position sides: every position not yet paid (the projection deletes a
/// position when its `PositionSettled` arrives), so a finalized round's positions stay here,
/// valued at what they will pay (a settled round: 1 or 0 per share), until the crank pays them.
pub async fn open_positions(db: &PgPool, wallet: &str) -> Result<Vec<OpenPosition>, sqlx::Error> {
    let rows: Vec<OpenPositionRow> = sqlx::query_as(
        "WITH held AS (
             SELECT market_id, 'yes' AS side, yes_shares AS shares, yes_basis AS basis FROM positions WHERE wallet = $1 AND yes_shares > 0
             UNION ALL
             SELECT market_id, 'no', no_shares, no_basis FROM positions WHERE wallet = $1 AND no_shares > 0)
         SELECT h.market_id, s.symbol, s.exchange, h.side, h.shares, GREATEST(h.basis, 0)::BIGINT AS basis,
                (CASE WHEN m.status = 'settled' THEN CASE WHEN m.outcome = h.side THEN 1000000 ELSE 0 END
                      WHEN h.side = 'yes' THEN m.yes_price_ppm ELSE 1000000 - m.yes_price_ppm END)::BIGINT AS price_ppm,
                m.settlement_ts
         FROM held h
         JOIN markets m ON m.id = h.market_id
         JOIN series s ON s.id = m.series_id
         ORDER BY m.settlement_ts, h.market_id, h.side",
    )
    .bind(wallet)
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(OpenPosition::from).collect())
}

pub async fn totals(db: &PgPool, wallet: &str) -> Result<Totals, sqlx::Error> {
    let row: TotalsRow = sqlx::query_as(
        "SELECT COALESCE(sum(realized_pnl), 0)::BIGINT AS realized_pnl, COALESCE(sum(volume), 0)::BIGINT AS volume,
                COALESCE(sum(trades), 0)::BIGINT AS trades, COALESCE(sum(settled), 0)::BIGINT AS settled,
                COALESCE(sum(wins), 0)::BIGINT AS wins
         FROM trader_stats WHERE wallet = $1",
    )
    .bind(wallet)
    .fetch_one(db)
    .await?;
    Ok(row.into())
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct LeaderRow {
    pub wallet: String,
    pub display_name: Option<String>,
    pub realized_pnl: i64,
    pub volume: i64,
    pub trades: i64,
    pub settled: i64,
    pub wins: i64,
}

/// Traders active since `since` (all time when `None`), best first by `sort`
/// (`SortBy::ranks_before` is the same order), so the order is stable.
pub async fn leaderboard(db: &PgPool, since: Option<PeriodStart>, sort: SortBy, limit: i64) -> Result<Vec<LeaderRow>, sqlx::Error> {
    let order = match sort {
        SortBy::Pnl => "realized_pnl DESC, volume DESC, wallet COLLATE \"C\"",
        SortBy::WinRate => "(CASE WHEN settled = 0 THEN 0 ELSE wins::NUMERIC / settled END) DESC, settled DESC, volume DESC, wallet COLLATE \"C\"",
        SortBy::Volume => "volume DESC, realized_pnl DESC, wallet COLLATE \"C\"",
    };
    // All time reads the totals the triggers keep (ranking every trader: the service ranks
    // all time from a book in memory, `services::leaderboard_cache`, and reads here only while
    // it cannot hear changes or when its book was dropped); whole days add up their day rows; an
    // instant adds up the trades and settlements after it.
    // Sorted outside the aggregates: an expression in ORDER BY names the input columns.
    let traders = match since {
        None => &format!("{ALL_TIME_TOTALS} WHERE $1::DATE IS NULL"),
        Some(PeriodStart::Day(_)) => &format!("SELECT * FROM ({PERIOD_TOTALS} WHERE day >= $1 GROUP BY wallet) period"),
        Some(PeriodStart::After(_)) => {
            "SELECT * FROM (
                 SELECT wallet, sum(pnl)::BIGINT AS realized_pnl, sum(volume)::BIGINT AS volume, sum(trades)::BIGINT AS trades,
                        sum(settled)::BIGINT AS settled, sum(wins)::BIGINT AS wins
                 FROM (SELECT wallet, 0::BIGINT AS pnl, amount AS volume, 1 AS trades, 0 AS settled, 0 AS wins
                       FROM trades WHERE created_at > $1 AND wallet IS NOT NULL
                       UNION ALL
                       SELECT wallet, realized_pnl, 0, 0, 1, (realized_pnl > 0)::INT
                       FROM settlements WHERE at > $1 AND realized_pnl IS NOT NULL) happened
                 GROUP BY wallet) period"
        }
    };
    let sql = format!(
        "WITH top AS ({traders} ORDER BY {order} LIMIT $2)
         SELECT p.wallet, u.display_name, p.realized_pnl, p.volume, p.trades, p.settled, p.wins
         FROM top p LEFT JOIN users u ON u.wallet_address = p.wallet
         ORDER BY {order}"
    );
    let query = sqlx::query_as(&sql);
    let query = match since {
        None => query.bind(None::<NaiveDate>),
        Some(PeriodStart::Day(day)) => query.bind(day),
        Some(PeriodStart::After(instant)) => query.bind(instant),
    };
    query.bind(limit).fetch_all(db).await
}

#[derive(sqlx::FromRow)]
struct PeriodTotalsRow {
    wallet: String,
    #[sqlx(flatten)]
    totals: TotalsRow,
}

impl From<PeriodTotalsRow> for (String, Totals) {
    fn from(r: PeriodTotalsRow) -> (String, Totals) {
        (r.wallet, r.totals.into())
    }
}

const PERIOD_TOTALS: &str = "SELECT wallet, sum(realized_pnl)::BIGINT AS realized_pnl, sum(volume)::BIGINT AS volume,
        sum(trades)::BIGINT AS trades, sum(settled)::BIGINT AS settled, sum(wins)::BIGINT AS wins
    FROM trader_stats";

/// The totals of all time, one row per trader, kept by the triggers of `trader_stats`.
const ALL_TIME_TOTALS: &str = "SELECT wallet, realized_pnl, volume, trades, settled, wins FROM trader_totals";

/// Every trader's totals over the UTC days from `day` on, or of all time when `None`: the
/// traders `leaderboard` ranks for `PeriodStart::Day(day)` or all time.
pub async fn period_totals(db: &PgPool, day: Option<NaiveDate>) -> Result<Vec<(String, Totals)>, sqlx::Error> {
    let rows: Vec<PeriodTotalsRow> = match day {
        Some(day) => sqlx::query_as(&format!("{PERIOD_TOTALS} WHERE day >= $1 GROUP BY wallet")).bind(day).fetch_all(db).await?,
        None => sqlx::query_as(ALL_TIME_TOTALS).fetch_all(db).await?,
    };
    Ok(rows.into_iter().map(Into::into).collect())
}

/// `period_totals` of `wallets` only: a wallet with no statistics in the period is absent.
pub async fn period_totals_of(db: &PgPool, day: Option<NaiveDate>, wallets: &[String]) -> Result<Vec<(String, Totals)>, sqlx::Error> {
    let rows: Vec<PeriodTotalsRow> = match day {
        Some(day) => {
            sqlx::query_as(&format!("{PERIOD_TOTALS} WHERE wallet = ANY($2) AND day >= $1 GROUP BY wallet")).bind(day).bind(wallets).fetch_all(db).await?
        }
        None => sqlx::query_as(&format!("{ALL_TIME_TOTALS} WHERE wallet = ANY($1)")).bind(wallets).fetch_all(db).await?,
    };
    Ok(rows.into_iter().map(Into::into).collect())
}

/// The display names of those of `wallets` that have one.
pub async fn display_names(db: &PgPool, wallets: &[String]) -> Result<Vec<(String, String)>, sqlx::Error> {
    sqlx::query_as("SELECT wallet_address, display_name FROM users WHERE wallet_address = ANY($1) AND display_name IS NOT NULL")
        .bind(wallets)
        .fetch_all(db)
        .await
}
