//! `/v1/intervals…`: funding-interval changes of every listed perp (public).

use std::collections::BTreeMap;

use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::market_filter;
use crate::domain::exchange::Exchange;
use crate::domain::market_data::{ThreadSort, interval_label};
use crate::http::AppState;
use crate::http::envelope::Data;
use crate::http::error::ApiError;
use crate::http::extract::{ApiPath, ApiQuery, one_of};
use crate::http::openapi::{Envelope, ErrorEnvelope, PerpParams};
use crate::http::page::ZeroBasedPage;
use crate::services::market_data;
use crate::store::intervals::ChangeRow;

/// Page sizes: the threaded view's default is the contract's 30.
pub const THREADED_LIMIT: i64 = 30;
pub const CHANGES_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 200;

#[derive(Deserialize)]
pub struct ChangesQuery {
    exchange: Option<String>,
    search: Option<String>,
    #[serde(flatten)]
    page: ZeroBasedPage,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Change {
    id: String,
    exchange: String,
    symbol: String,
    from_interval: String,
    to_interval: String,
    changed_at: DateTime<Utc>,
}

impl From<ChangeRow> for Change {
    fn from(c: ChangeRow) -> Change {
        Change {
            id: c.id.to_string(),
            exchange: c.exchange,
            symbol: c.symbol,
            from_interval: interval_label(c.from_minutes),
            to_interval: interval_label(c.to_minutes),
            changed_at: c.changed_at,
        }
    }
}

/// `GET /v1/intervals`: every change, newest first; `exchange` and `search` filters, a
/// zero-indexed `page` of `limit` (default 50).
#[utoipa::path(
    get,
    path = "/v1/intervals",
    tag = "intervals",
    params(PerpParams, ZeroBasedPage),
    responses((status = 200, description = "Changes, newest first", body = Envelope<Vec<Change>>))
)]
pub async fn changes(State(state): State<AppState>, ApiQuery(q): ApiQuery<ChangesQuery>) -> Result<Data<Vec<Change>>, ApiError> {
    let filter = market_filter(q.exchange.as_deref(), q.search.as_deref())?;
    let (page, mut meta) = q.page.resolve(CHANGES_LIMIT, MAX_LIMIT)?;
    let (rows, total) = market_data::changes(&state.services, &filter, page).await?;
    meta.total = Some(total as u64);
    Ok(Data::paged(rows.into_iter().map(Change::from).collect(), meta))
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = IntervalStats)]
pub struct Stats {
    total_changes: i64,
    exchanges: BTreeMap<&'static str, i64>,
    most_changed_symbols: Vec<SymbolChanges>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct SymbolChanges {
    symbol: String,
    changes: i64,
}

/// `GET /v1/intervals/stats`: totals; every venue appears in `exchanges` (0 when it has none),
/// and the ten symbols changed most, their changes summed across venues.
#[utoipa::path(
    get,
    path = "/v1/intervals/stats",
    tag = "intervals",
    responses((status = 200, description = "Totals", body = Envelope<Stats>))
)]
pub async fn stats(State(state): State<AppState>) -> Result<Data<Stats>, ApiError> {
    let stats = market_data::stats(&state.services).await?;
    let mut exchanges: BTreeMap<&'static str, i64> = Exchange::ALL.iter().map(|e| (e.id(), 0)).collect();
    for (exchange, n) in stats.per_exchange {
        if let Some(count) = Exchange::parse(&exchange).and_then(|e| exchanges.get_mut(e.id())) {
            *count = n;
        }
    }
    let most_changed_symbols = stats.most_changed.into_iter().map(|(symbol, changes)| SymbolChanges { symbol, changes }).collect();
    Ok(Data::new(Stats { total_changes: stats.total_changes, exchanges, most_changed_symbols }))
}

#[derive(Deserialize)]
pub struct ThreadedQuery {
    exchange: Option<String>,
    search: Option<String>,
    sort: Option<String>,
    order: Option<String>,
    #[serde(flatten)]
    page: ZeroBasedPage,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Thread {
    symbol: String,
    exchange: String,
    change_count: i32,
    current_interval: String,
    last_changed_at: Option<DateTime<Utc>>,
}

fn sort_name(s: ThreadSort) -> &'static str {
    match s {
        ThreadSort::Changes => "changes",
        ThreadSort::Symbol => "symbol",
    }
}

/// `GET /v1/intervals/threaded`: every tracked perp (those never changed too, with
/// `change_count` 0 and `last_changed_at` null), sorted by `changes` (default) or `symbol`,
/// `order` `desc` (default) or `asc`.
#[utoipa::path(
    get,
    path = "/v1/intervals/threaded",
    tag = "intervals",
    params(
        PerpParams,
        ("sort" = Option<String>, Query, description = "changes (default) or symbol", pattern = "^(changes|symbol)$"),
        ("order" = Option<String>, Query, description = "desc (default) or asc", pattern = "^(desc|asc)$"),
        ZeroBasedPage,
    ),
    responses((status = 200, description = "Every tracked perp", body = Envelope<Vec<Thread>>))
)]
pub async fn threaded(State(state): State<AppState>, ApiQuery(q): ApiQuery<ThreadedQuery>) -> Result<Data<Vec<Thread>>, ApiError> {
    let filter = market_filter(q.exchange.as_deref(), q.search.as_deref())?;
    let sort = one_of("sort", q.sort.as_deref().unwrap_or("changes"), &[ThreadSort::Changes, ThreadSort::Symbol], sort_name)?;
    let descending = one_of("order", q.order.as_deref().unwrap_or("desc"), &[true, false], |d| if d { "desc" } else { "asc" })?;
    let (page, mut meta) = q.page.resolve(THREADED_LIMIT, MAX_LIMIT)?;
    let (rows, total) = market_data::threaded(&state.services, &filter, sort, descending, page).await?;
    meta.total = Some(total as u64);
    let threads = rows
        .into_iter()
        .map(|p| Thread {
            symbol: p.symbol,
            exchange: p.exchange,
            change_count: p.change_count,
            current_interval: interval_label(p.interval_minutes),
            last_changed_at: p.last_changed_at,
        })
        .collect();
    Ok(Data::paged(threads, meta))
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = IntervalDetail)]
pub struct Detail {
    exchange: String,
    symbol: String,
    current_interval: String,
    history: Vec<HistoryEntry>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = IntervalChange)]
struct HistoryEntry {
    from_interval: String,
    to_interval: String,
    changed_at: DateTime<Utc>,
}

/// `GET /v1/intervals/{exchange}/{symbol}`: the current interval and every change, newest first.
#[utoipa::path(
    get,
    path = "/v1/intervals/{exchange}/{symbol}",
    tag = "intervals",
    params(
        ("exchange" = String, Path, description = "binance, bybit, okx or hyperliquid"),
        ("symbol" = String, Path, description = "The venue symbol, e.g. BTCUSDT"),
    ),
    responses(
        (status = 200, description = "The current interval and every change", body = Envelope<Detail>),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
    )
)]
pub async fn detail(State(state): State<AppState>, ApiPath((exchange, symbol)): ApiPath<(String, String)>) -> Result<Data<Detail>, ApiError> {
    let (perp, history) = market_data::interval_history(&state.services, &exchange, &symbol).await?;
    let history = history
        .into_iter()
        .map(|c| HistoryEntry { from_interval: interval_label(c.from_minutes), to_interval: interval_label(c.to_minutes), changed_at: c.changed_at })
        .collect();
    Ok(Data::new(Detail { exchange: perp.exchange, symbol: perp.symbol, current_interval: interval_label(perp.interval_minutes), history }))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct AnalysisBody {
    exchange: String,
    symbol: String,
    total_changes: i64,
    avg_days_between_changes: f64,
    most_common_direction: String,
    volatility_score: f64,
}

/// `GET /v1/intervals/{exchange}/{symbol}/analysis` (definitions: `domain::market_data::Analysis`).
#[utoipa::path(
    get,
    path = "/v1/intervals/{exchange}/{symbol}/analysis",
    tag = "intervals",
    params(
        ("exchange" = String, Path, description = "binance, bybit, okx or hyperliquid"),
        ("symbol" = String, Path, description = "The venue symbol, e.g. BTCUSDT"),
    ),
    responses(
        (status = 200, description = "How often and how the interval changes", body = Envelope<AnalysisBody>),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
    )
)]
pub async fn analysis(State(state): State<AppState>, ApiPath((exchange, symbol)): ApiPath<(String, String)>) -> Result<Data<AnalysisBody>, ApiError> {
    let (perp, a) = market_data::analysis(&state.services, &exchange, &symbol, Utc::now()).await?;
    Ok(Data::new(AnalysisBody {
        exchange: perp.exchange,
        symbol: perp.symbol,
        total_changes: a.total_changes,
        avg_days_between_changes: a.avg_days_between_changes,
        most_common_direction: a.most_common_direction,
        volatility_score: a.volatility_score,
    }))
}
