//! The public market-data reads: funding-interval changes (`/v1/intervals…`) and crowd
//! positioning (`/v1/crowd…`), over what the collectors recorded.

use chrono::{DateTime, Utc};

use super::notices::Current;
use super::{Page, ServiceError, Services};
use crate::domain::exchange::Exchange;
use crate::domain::market_data::{self, Analysis, CrowdSort, IntervalChange, PerpFilter, ThreadSort};
use crate::store::crowd::{self, CrowdRow, CrowdSummaryRow};
use crate::store::intervals::{self, ChangeRow, IntervalStatsRow, PerpRow};

/// How many symbols `/v1/intervals/stats` lists as most changed.
pub const MOST_CHANGED: i64 = 10;

/// The channel on which the collectors' writes are notified (the statement triggers
/// `notify_market_data` on `perps`, `interval_changes`, `crowd_latest` and `crowd_history`).
pub const NOTICE_CHANNEL: &str = "fm_market_data";

/// The version of what these reads return, taken now: a response read at it is the response
/// while it holds (only the collectors' sweeps move it). No version while changes cannot be
/// heard.
pub fn current(services: &Services) -> Current {
    Current::take(|| services.market_data_version.current(&services.db))
}

/// The venue's id and the symbol as stored (upper case, except Hyperliquid's own coin names
/// such as `kPEPE`, which are matched as given), or NOT_FOUND.
fn perp_key(exchange: &str, symbol: &str) -> Result<(Exchange, String), ServiceError> {
    let venue = Exchange::parse(&exchange.to_ascii_lowercase())
        .ok_or_else(|| ServiceError::NotFound(format!("no exchange {exchange:?}: binance, bybit, okx or hyperliquid")))?;
    Ok((venue, symbol.to_owned()))
}

async fn find_perp(services: &Services, exchange: &str, symbol: &str) -> Result<PerpRow, ServiceError> {
    let (venue, symbol) = perp_key(exchange, symbol)?;
    if let Some(perp) = intervals::perp(&services.db, venue.id(), &symbol).await? {
        return Ok(perp);
    }
    let upper = symbol.to_ascii_uppercase();
    match upper != symbol {
        true => intervals::perp(&services.db, venue.id(), &upper).await?,
        false => None,
    }
    .ok_or_else(|| ServiceError::NotFound(format!("{} lists no perp {symbol:?}", venue.name())))
}

pub async fn changes(services: &Services, filter: &PerpFilter, page: Page) -> Result<(Vec<ChangeRow>, i64), ServiceError> {
    Ok(intervals::changes(&services.db, filter, page.limit, page.offset).await?)
}

pub async fn stats(services: &Services) -> Result<IntervalStatsRow, ServiceError> {
    Ok(intervals::stats(&services.db, MOST_CHANGED).await?)
}

pub async fn threaded(services: &Services, filter: &PerpFilter, sort: ThreadSort, descending: bool, page: Page) -> Result<(Vec<PerpRow>, i64), ServiceError> {
    Ok(intervals::threaded(&services.db, filter, sort, descending, page.limit, page.offset).await?)
}

/// A perp with its changes, newest first.
pub async fn interval_history(services: &Services, exchange: &str, symbol: &str) -> Result<(PerpRow, Vec<ChangeRow>), ServiceError> {
    let perp = find_perp(services, exchange, symbol).await?;
    let history = intervals::history(&services.db, &perp.exchange, &perp.symbol).await?;
    Ok((perp, history))
}

pub async fn analysis(services: &Services, exchange: &str, symbol: &str, now: DateTime<Utc>) -> Result<(PerpRow, Analysis), ServiceError> {
    let (perp, history) = interval_history(services, exchange, symbol).await?;
    let changes: Vec<IntervalChange> =
        history.iter().map(|c| IntervalChange { from_minutes: c.from_minutes, to_minutes: c.to_minutes, changed_at: c.changed_at }).collect();
    let analysis = market_data::analyse(perp.first_seen_at, &changes, now);
    Ok((perp, analysis))
}

pub async fn crowd_leaderboard(services: &Services, filter: &PerpFilter, sort: CrowdSort, page: Page) -> Result<(Vec<CrowdRow>, i64), ServiceError> {
    Ok(crowd::leaderboard(&services.db, filter, sort, page.limit, page.offset).await?)
}

pub async fn crowd_summary(services: &Services, filter: &PerpFilter) -> Result<(CrowdSummaryRow, Option<CrowdRow>, Option<CrowdRow>), ServiceError> {
    Ok(crowd::summary(&services.db, filter).await?)
}

/// A perp's latest reading and its history since `since`, oldest first.
pub async fn crowd_detail(
    services: &Services,
    exchange: &str,
    symbol: &str,
    since: DateTime<Utc>,
) -> Result<(CrowdRow, Vec<(DateTime<Utc>, i32, i32)>), ServiceError> {
    let (venue, _) = perp_key(exchange, symbol)?;
    if venue == Exchange::Hyperliquid {
        return Err(ServiceError::NotFound("Hyperliquid publishes no long/short ratio: its perps have no crowd data".into()));
    }
    let perp = find_perp(services, exchange, symbol).await?;
    let latest = crowd::latest(&services.db, &perp.exchange, &perp.symbol)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("no crowd reading for {} {} yet", venue.name(), perp.symbol)))?;
    let history = crowd::history(&services.db, &perp.exchange, &perp.symbol, since).await?;
    Ok((latest, history))
}
