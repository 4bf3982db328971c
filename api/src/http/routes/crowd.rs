//! `/v1/crowd…`: how the crowd is positioned on every perp of the venues that publish a
//! long/short account ratio (Binance, Bybit, OKX; Hyperliquid publishes none) (public).

use axum::extract::State;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::market_filter;
use crate::domain::market_data::{CrowdSort, net_position_ppm, shown_share_ppm};
use crate::domain::money::{places, ppm};
use crate::http::AppState;
use crate::http::envelope::Data;
use crate::http::error::ApiError;
use crate::http::extract::{ApiPath, ApiQuery, one_of};
use crate::http::openapi::{Envelope, ErrorEnvelope, PerpParams};
use crate::http::page::ZeroBasedPage;
use crate::services::market_data;
use crate::store::crowd::CrowdRow;

/// The contract's default page size.
pub const LEADERBOARD_LIMIT: i64 = 30;
pub const MAX_LIMIT: i64 = 200;
/// History a detail shows unless `hours` says otherwise; at most a year can be asked (what is
/// kept is `FM_CROWD_RETENTION_DAYS`).
pub const HISTORY_HOURS: i64 = 24;
pub const MAX_HISTORY_HOURS: i64 = 24 * 365;

/// A share as a fraction with four decimals (`0.6617`), as the venues publish them.
fn share(value_ppm: i64) -> String {
    ppm(shown_share_ppm(value_ppm as i32), 4)
}

/// The net position (already a difference of shown shares), signed, four decimals.
fn net(value_ppm: i64) -> String {
    ppm(value_ppm, 4)
}

#[derive(Deserialize)]
pub struct LeaderboardQuery {
    sort: Option<String>,
    exchange: Option<String>,
    search: Option<String>,
    #[serde(flatten)]
    page: ZeroBasedPage,
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = CrowdEntry)]
pub struct Entry {
    rank: i64,
    exchange: String,
    symbol: String,
    long_pct: String,
    short_pct: String,
    net_position: String,
    updated_at: DateTime<Utc>,
}

fn sort_name(s: CrowdSort) -> &'static str {
    match s {
        CrowdSort::MostShorted => "most_shorted",
        CrowdSort::MostLonged => "most_longed",
    }
}

/// `GET /v1/crowd/leaderboard`: perps ranked by short share (`most_shorted`, default) or long
/// share (`most_longed`); ranks count from 1 across pages of the filtered list.
#[utoipa::path(
    get,
    path = "/v1/crowd/leaderboard",
    tag = "crowd",
    params(
        ("sort" = Option<String>, Query, description = "most_shorted (default) or most_longed", pattern = "^(most_shorted|most_longed)$"),
        PerpParams,
        ZeroBasedPage,
    ),
    responses(
        (status = 200, description = "Perps ranked by crowd share", body = Envelope<Vec<Entry>>),
    )
)]
pub async fn leaderboard(State(state): State<AppState>, ApiQuery(q): ApiQuery<LeaderboardQuery>) -> Result<Data<Vec<Entry>>, ApiError> {
    let filter = market_filter(q.exchange.as_deref(), q.search.as_deref())?;
    let sort = one_of("sort", q.sort.as_deref().unwrap_or("most_shorted"), &[CrowdSort::MostShorted, CrowdSort::MostLonged], sort_name)?;
    let (page, mut meta) = q.page.resolve(LEADERBOARD_LIMIT, MAX_LIMIT)?;
    let (rows, total) = market_data::crowd_leaderboard(&state.services, &filter, sort, page).await?;
    meta.total = Some(total as u64);
    let entries = rows
        .into_iter()
        .enumerate()
        .map(|(i, r)| Entry {
            rank: page.offset + i as i64 + 1,
            net_position: net(net_position_ppm(r.long_ppm, r.short_ppm)),
            long_pct: share(r.long_ppm as i64),
            short_pct: share(r.short_ppm as i64),
            exchange: r.exchange,
            symbol: r.symbol,
            updated_at: r.updated_at,
        })
        .collect();
    Ok(Data::paged(entries, meta))
}

#[derive(Deserialize)]
pub struct SummaryQuery {
    exchange: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = CrowdSummary)]
pub struct Summary {
    total_symbols_tracked: i64,
    avg_long_pct: Option<String>,
    avg_short_pct: Option<String>,
    most_longed: Option<Longed>,
    most_shorted: Option<Shorted>,
    updated_at: Option<DateTime<Utc>>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = MostLonged)]
struct Longed {
    exchange: String,
    symbol: String,
    long_pct: String,
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = MostShorted)]
struct Shorted {
    exchange: String,
    symbol: String,
    short_pct: String,
}

/// `GET /v1/crowd/summary` (optionally for one `exchange`): with nothing tracked yet the
/// averages, extremes and `updated_at` are null.
#[utoipa::path(
    get,
    path = "/v1/crowd/summary",
    tag = "crowd",
    params(
        ("exchange" = Option<String>, Query, description = "binance, bybit, okx or hyperliquid", pattern = "^(binance|bybit|okx|hyperliquid)$"),
    ),
    responses((status = 200, description = "Averages and extremes", body = Envelope<Summary>))
)]
pub async fn summary(State(state): State<AppState>, ApiQuery(q): ApiQuery<SummaryQuery>) -> Result<Data<Summary>, ApiError> {
    let filter = market_filter(q.exchange.as_deref(), None)?;
    let (s, longed, shorted) = market_data::crowd_summary(&state.services, &filter).await?;
    Ok(Data::new(Summary {
        total_symbols_tracked: s.tracked,
        avg_long_pct: s.avg_long_ppm.map(share),
        avg_short_pct: s.avg_short_ppm.map(share),
        most_longed: longed.map(|r: CrowdRow| Longed { long_pct: share(r.long_ppm as i64), exchange: r.exchange, symbol: r.symbol }),
        most_shorted: shorted.map(|r: CrowdRow| Shorted { short_pct: share(r.short_ppm as i64), exchange: r.exchange, symbol: r.symbol }),
        updated_at: s.updated_at,
    }))
}

#[derive(Deserialize)]
pub struct DetailQuery {
    hours: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = CrowdDetail)]
pub struct Detail {
    exchange: String,
    symbol: String,
    long_pct: String,
    short_pct: String,
    net_position: String,
    /// Two decimals; null where the venue gave no open interest.
    open_interest_usd: Option<String>,
    history: Vec<Point>,
    updated_at: DateTime<Utc>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = CrowdPoint)]
struct Point {
    long_pct: String,
    short_pct: String,
    timestamp: DateTime<Utc>,
}

/// `GET /v1/crowd/{exchange}/{symbol}`: the latest reading and the last `hours` (default 24)
/// of history, oldest first.
#[utoipa::path(
    get,
    path = "/v1/crowd/{exchange}/{symbol}",
    tag = "crowd",
    params(
        ("exchange" = String, Path, description = "binance, bybit, okx or hyperliquid"),
        ("symbol" = String, Path, description = "The venue symbol, e.g. BTCUSDT"),
        ("hours" = Option<i64>, Query, description = "History to show, 1 to 8760, default 24", minimum = 1, maximum = 8760),
    ),
    responses(
        (status = 200, description = "The latest reading and its history, oldest first", body = Envelope<Detail>),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
    )
)]
pub async fn detail(
    State(state): State<AppState>,
    ApiPath((exchange, symbol)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<DetailQuery>,
) -> Result<Data<Detail>, ApiError> {
    let hours = match q.hours.as_deref() {
        None => HISTORY_HOURS,
        Some(h) => h
            .parse::<i64>()
            .ok()
            .filter(|h| (1..=MAX_HISTORY_HOURS).contains(h))
            .ok_or_else(|| ApiError::InvalidInput(format!("hours must be an integer from 1 to {MAX_HISTORY_HOURS}, got {h:?}")))?,
    };
    let (latest, history) = market_data::crowd_detail(&state.services, &exchange, &symbol, Utc::now() - Duration::hours(hours)).await?;
    Ok(Data::new(Detail {
        net_position: net(net_position_ppm(latest.long_ppm, latest.short_ppm)),
        long_pct: share(latest.long_ppm as i64),
        short_pct: share(latest.short_ppm as i64),
        open_interest_usd: latest.open_interest_cents.map(|c| places(c as i128, 2, 2)),
        history: history
            .into_iter()
            .map(|(timestamp, long, short)| Point { long_pct: share(long as i64), short_pct: share(short as i64), timestamp })
            .collect(),
        exchange: latest.exchange,
        symbol: latest.symbol,
        updated_at: latest.updated_at,
    }))
}
