//! `perps` and `interval_changes`: every listed perp's funding interval, and its changes.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::{PgPool, Postgres, QueryBuilder};

use crate::domain::market_data::{PerpFilter, ThreadSort};

/// A perp with its interval and the summary of its changes.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PerpRow {
    pub exchange: String,
    pub symbol: String,
    pub interval_minutes: i32,
    pub listed: bool,
    pub first_seen_at: DateTime<Utc>,
    pub change_count: i32,
    pub last_changed_at: Option<DateTime<Utc>>,
}

/// A change of an interval.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ChangeRow {
    pub id: i64,
    pub exchange: String,
    pub symbol: String,
    pub from_minutes: i32,
    pub to_minutes: i32,
    pub changed_at: DateTime<Utc>,
}

/// A change recorded by [`record_listing`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedChange {
    pub symbol: String,
    pub from_minutes: i32,
    pub to_minutes: i32,
}

/// What one listing changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListingReport {
    /// Perps seen for the first time (their interval recorded, no change).
    pub new: usize,
    pub changes: Vec<RecordedChange>,
    /// Perps listed again after a listing without them (at another interval, also a change).
    pub relisted: usize,
    /// Perps the venue no longer lists (their crowd reading is dropped; history kept).
    pub delisted: usize,
}

impl ListingReport {
    /// Whether the listing changed nothing (and so wrote nothing).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Records a venue's whole listing (`(symbol, interval minutes)`, no symbol twice) observed at
/// `now`, in one transaction: a new perp's interval is recorded without a change; a different
/// interval than the one recorded is a change (`changed_at` = `now`); a recorded perp missing
/// from the listing is marked not listed, and one in it again listed. Each change is also
/// counted in its venue's and its symbol's totals (`interval_changes_by_exchange`,
/// `interval_changes_by_symbol`). Only those rows are written: a listing that changes nothing
/// writes nothing (and so notifies no market-data read).
/// The venue's recording is serialized by a transaction lock (its collector holds a worker lock
/// too), so two writers could not both record one change.
pub async fn record_listing(db: &PgPool, exchange: &str, listing: &[(String, i32)], now: DateTime<Utc>) -> Result<ListingReport, sqlx::Error> {
    let mut tx = db.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('fm-listing:' || $1, 0))").bind(exchange).execute(&mut *tx).await?;
    let known: Vec<(String, i32, bool)> =
        sqlx::query_as("SELECT symbol, interval_minutes, listed FROM perps WHERE exchange = $1").bind(exchange).fetch_all(&mut *tx).await?;
    let known: HashMap<&str, (i32, bool)> = known.iter().map(|(symbol, minutes, listed)| (symbol.as_str(), (*minutes, *listed))).collect();
    let mut report = ListingReport::default();
    // The perps to insert or update: new, changed, or listed again.
    let (mut written, mut written_minutes) = (Vec::new(), Vec::new());
    for (symbol, minutes) in listing {
        let write = match known.get(symbol.as_str()) {
            None => {
                report.new += 1;
                true
            }
            Some(&(before, listed)) => {
                if before != *minutes {
                    report.changes.push(RecordedChange { symbol: symbol.clone(), from_minutes: before, to_minutes: *minutes });
                }
                if !listed {
                    report.relisted += 1;
                }
                before != *minutes || !listed
            }
        };
        if write {
            written.push(symbol.as_str());
            written_minutes.push(*minutes);
        }
    }
    let listed_now: HashSet<&str> = listing.iter().map(|(symbol, _)| symbol.as_str()).collect();
    let delisted: Vec<&str> = known.iter().filter(|(symbol, (_, listed))| *listed && !listed_now.contains(*symbol)).map(|(symbol, _)| *symbol).collect();
    if !written.is_empty() {
        sqlx::query(
            "INSERT INTO perps (exchange, symbol, interval_minutes, first_seen_at)
             SELECT $1, symbol, minutes, $4 FROM unnest($2::text[], $3::int[]) AS l(symbol, minutes)
             ON CONFLICT (exchange, symbol) DO UPDATE SET
                 interval_minutes = EXCLUDED.interval_minutes,
                 listed = TRUE,
                 change_count = perps.change_count + (perps.interval_minutes <> EXCLUDED.interval_minutes)::int,
                 last_changed_at = CASE WHEN perps.interval_minutes <> EXCLUDED.interval_minutes THEN $4 ELSE perps.last_changed_at END",
        )
        .bind(exchange)
        .bind(&written)
        .bind(&written_minutes)
        .bind(now)
        .execute(&mut *tx)
        .await?;
    }
    if !report.changes.is_empty() {
        let changed: Vec<&str> = report.changes.iter().map(|c| c.symbol.as_str()).collect();
        let from: Vec<i32> = report.changes.iter().map(|c| c.from_minutes).collect();
        let to: Vec<i32> = report.changes.iter().map(|c| c.to_minutes).collect();
        sqlx::query(
            "INSERT INTO interval_changes (exchange, symbol, from_minutes, to_minutes, changed_at)
             SELECT $1, symbol, from_minutes, to_minutes, $5 FROM unnest($2::text[], $3::int[], $4::int[]) AS c(symbol, from_minutes, to_minutes)",
        )
        .bind(exchange)
        .bind(&changed)
        .bind(&from)
        .bind(&to)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        // The totals `/v1/intervals/stats` reads. A symbol's row is shared by the venues that
        // list it: each recording locks its symbols' rows in one order, so two venues'
        // recordings wait for each other rather than deadlock.
        sqlx::query(
            "INSERT INTO interval_changes_by_exchange (exchange, changes) VALUES ($1, $2)
             ON CONFLICT (exchange) DO UPDATE SET changes = interval_changes_by_exchange.changes + EXCLUDED.changes",
        )
        .bind(exchange)
        .bind(report.changes.len() as i64)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO interval_changes_by_symbol (symbol, changes)
             SELECT symbol, 1 FROM unnest($1::text[]) AS c(symbol) ORDER BY symbol
             ON CONFLICT (symbol) DO UPDATE SET changes = interval_changes_by_symbol.changes + 1",
        )
        .bind(&changed)
        .execute(&mut *tx)
        .await?;
    }
    if !delisted.is_empty() {
        sqlx::query("UPDATE perps SET listed = FALSE WHERE exchange = $1 AND symbol = ANY($2)").bind(exchange).bind(&delisted).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM crowd_latest WHERE exchange = $1 AND symbol = ANY($2)").bind(exchange).bind(&delisted).execute(&mut *tx).await?;
    }
    report.delisted = delisted.len();
    tx.commit().await?;
    Ok(report)
}

/// The `WHERE` of a filtered listing (over a table with `exchange` and `symbol`). The search is
/// a `LIKE` on `upper(symbol)`, the expression the trigram indexes of `perps` and
/// `interval_changes` hold (migration 61).
pub(super) fn push_where<'a>(filter: &'a PerpFilter, q: &mut QueryBuilder<'a, Postgres>) {
    q.push(" WHERE TRUE");
    if let Some(exchange) = &filter.exchange {
        q.push(" AND exchange = ").push_bind(exchange);
    }
    if let Some(search) = &filter.search {
        q.push(" AND upper(symbol) LIKE ").push_bind(containing(&search.to_uppercase()));
    }
}

/// The `LIKE` pattern matching every text that contains `text`: its `%`, `_` and `\` escaped
/// (`\` is `LIKE`'s escape character), and `%` either side.
fn containing(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// Interval changes, newest first, with how many match.
pub async fn changes(db: &PgPool, filter: &PerpFilter, limit: i64, offset: i64) -> Result<(Vec<ChangeRow>, i64), sqlx::Error> {
    let mut q = QueryBuilder::new("SELECT id, exchange, symbol, from_minutes, to_minutes, changed_at FROM interval_changes");
    push_where(filter, &mut q);
    q.push(" ORDER BY changed_at DESC, id DESC LIMIT ").push_bind(limit).push(" OFFSET ").push_bind(offset);
    let rows = q.build_query_as().fetch_all(db).await?;
    let mut count = QueryBuilder::new("SELECT count(*) FROM interval_changes");
    push_where(filter, &mut count);
    let total = count.build_query_scalar().fetch_one(db).await?;
    Ok((rows, total))
}

/// Totals over every change: all, per exchange, and the symbols changed most (across venues).
pub struct IntervalStatsRow {
    pub total_changes: i64,
    pub per_exchange: Vec<(String, i64)>,
    pub most_changed: Vec<(String, i64)>,
}

/// Read from the totals [`record_listing`] keeps (a row per venue with changes, and the
/// `most_changed` symbols off their index), not summed over every perp.
pub async fn stats(db: &PgPool, most_changed: i64) -> Result<IntervalStatsRow, sqlx::Error> {
    let per_exchange: Vec<(String, i64)> = sqlx::query_as("SELECT exchange, changes FROM interval_changes_by_exchange ORDER BY exchange").fetch_all(db).await?;
    let most_changed = sqlx::query_as("SELECT symbol, changes FROM interval_changes_by_symbol ORDER BY changes DESC, symbol LIMIT $1")
        .bind(most_changed)
        .fetch_all(db)
        .await?;
    Ok(IntervalStatsRow { total_changes: per_exchange.iter().map(|(_, n)| n).sum(), per_exchange, most_changed })
}

/// Every perp with its change count, current interval and last change, sorted (ties by
/// exchange and symbol), with how many match.
pub async fn threaded(
    db: &PgPool,
    filter: &PerpFilter,
    sort: ThreadSort,
    descending: bool,
    limit: i64,
    offset: i64,
) -> Result<(Vec<PerpRow>, i64), sqlx::Error> {
    let mut q = QueryBuilder::new("SELECT exchange, symbol, interval_minutes, listed, first_seen_at, change_count, last_changed_at FROM perps");
    push_where(filter, &mut q);
    let direction = if descending { "DESC" } else { "ASC" };
    match sort {
        ThreadSort::Changes => q.push(format!(" ORDER BY change_count {direction}, exchange, symbol")),
        ThreadSort::Symbol => q.push(format!(" ORDER BY symbol {direction}, exchange")),
    };
    q.push(" LIMIT ").push_bind(limit).push(" OFFSET ").push_bind(offset);
    let rows = q.build_query_as().fetch_all(db).await?;
    let mut count = QueryBuilder::new("SELECT count(*) FROM perps");
    push_where(filter, &mut count);
    let total = count.build_query_scalar().fetch_one(db).await?;
    Ok((rows, total))
}

pub async fn perp(db: &PgPool, exchange: &str, symbol: &str) -> Result<Option<PerpRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT exchange, symbol, interval_minutes, listed, first_seen_at, change_count, last_changed_at
         FROM perps WHERE exchange = $1 AND symbol = $2",
    )
    .bind(exchange)
    .bind(symbol)
    .fetch_optional(db)
    .await
}

/// A perp's changes, newest first.
pub async fn history(db: &PgPool, exchange: &str, symbol: &str) -> Result<Vec<ChangeRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, exchange, symbol, from_minutes, to_minutes, changed_at FROM interval_changes
         WHERE exchange = $1 AND symbol = $2 ORDER BY changed_at DESC, id DESC",
    )
    .bind(exchange)
    .bind(symbol)
    .fetch_all(db)
    .await
}
