//! `GET /v1/leaderboard`: traders ranked over a period by realized P&L, win rate or volume,
//! from the per-day statistics the projection keeps (`trader_stats`). The rankings come from
//! memory (`services::leaderboard_cache`); a page rendered while they held one version is kept
//! and served as bytes while that version holds (`http::rendered`).

use axum::extract::State;
use serde::{Deserialize, Serialize};

use crate::domain::money::{micros, ppm};
use crate::domain::portfolio::{Period, PeriodStart, SortBy, Totals};
use crate::http::AppState;
use crate::http::envelope::{Data, Rendered};
use crate::http::error::ApiError;
use crate::http::extract::ApiQuery;
use crate::http::openapi::Envelope;
use crate::services::users;
use crate::store::positions::LeaderRow;

pub const MAX_LIMIT: i64 = 100;
// The cache holds what the largest page shows.
const _: () = assert!(MAX_LIMIT <= crate::services::leaderboard_cache::TOP);

/// A leaderboard page: the period's first day (`None`: all time), the order, the limit.
pub type BoardKey = (Option<PeriodStart>, SortBy, i64);

#[derive(Deserialize)]
pub struct LeaderboardQuery {
    period: Option<String>,
    sort_by: Option<String>,
    limit: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = LeaderboardEntry)]
pub struct Entry {
    rank: usize,
    wallet_address: String,
    display_name: Option<String>,
    total_pnl: String,
    win_rate: String,
    total_trades: i64,
    total_volume: String,
}

impl Entry {
    /// The entry of the trader ranked `i + 1`.
    fn ranked((i, r): (usize, LeaderRow)) -> Entry {
        let totals = Totals { realized_pnl: r.realized_pnl, volume: r.volume, trades: r.trades, settled: r.settled, wins: r.wins };
        Entry {
            rank: i + 1,
            wallet_address: r.wallet,
            display_name: r.display_name,
            total_pnl: micros(r.realized_pnl),
            win_rate: ppm(totals.win_rate_ppm(), 4),
            total_trades: r.trades,
            total_volume: micros(r.volume),
        }
    }
}

#[utoipa::path(
    get,
    path = "/v1/leaderboard",
    tag = "leaderboard",
    params(
        ("period" = Option<String>, Query, description = "24h (the last 24 hours), 7d or 30d (today and the 7 or 30 UTC days before), or all (default)", pattern = "^(24h|7d|30d|all)$"),
        ("sort_by" = Option<String>, Query, description = "pnl (default), win_rate or volume", pattern = "^(pnl|win_rate|volume)$"),
        ("limit" = Option<i64>, Query, description = "1 to 100, default 50", minimum = 1, maximum = 100),
    ),
    responses((status = 200, description = "Traders ranked", body = Envelope<Vec<Entry>>))
)]
pub async fn leaderboard(State(state): State<AppState>, ApiQuery(q): ApiQuery<LeaderboardQuery>) -> Result<Rendered, ApiError> {
    let period = match q.period.as_deref().unwrap_or("all") {
        "24h" => Period::Day,
        "7d" => Period::Week,
        "30d" => Period::Month,
        "all" => Period::All,
        other => return Err(ApiError::InvalidInput(format!("period must be 24h, 7d, 30d or all, got {other:?}"))),
    };
    let sort = match q.sort_by.as_deref().unwrap_or("pnl") {
        "pnl" => SortBy::Pnl,
        "win_rate" => SortBy::WinRate,
        "volume" => SortBy::Volume,
        other => return Err(ApiError::InvalidInput(format!("sort_by must be pnl, win_rate or volume, got {other:?}"))),
    };
    let limit = match q.limit.as_deref() {
        None => 50,
        Some(l) => l
            .parse::<i64>()
            .ok()
            .filter(|l| (1..=MAX_LIMIT).contains(l))
            .ok_or_else(|| ApiError::InvalidInput(format!("limit must be an integer from 1 to {MAX_LIMIT}")))?,
    };
    let start = users::leaderboard_start(period);
    let current = users::leaderboard_version(&state.services);
    let body = state
        .leaderboard_pages
        .get_or_render((start, sort, limit), current, async {
            let board = users::leaderboard(&state.services, start, sort, limit).await?;
            Ok::<_, ApiError>((Data::new(board.rows.into_iter().enumerate().map(Entry::ranked).collect::<Vec<_>>()).body(), board.version))
        })
        .await?;
    Ok(Rendered(body))
}
