//! `GET /v1/leaderboard`: traders ranked over a period by realized P&L, win rate or volume,
//! from the per-day statistics the projection keeps (`trader_stats`).

use axum::extract::State;
use chrono::Utc;
use serde::{Deserialize, Serialize};

use crate::envelope::Data;
use crate::extract::ApiQuery;
use crate::money::{micros, ppm};
use crate::portfolio::{self, SortBy};
use crate::{ApiError, AppState};

pub const MAX_LIMIT: i64 = 100;

#[derive(Deserialize)]
pub struct LeaderboardQuery {
    period: Option<String>,
    sort_by: Option<String>,
    limit: Option<String>,
}

#[derive(Serialize)]
pub struct Entry {
    rank: usize,
    wallet_address: String,
    display_name: Option<String>,
    total_pnl: String,
    win_rate: String,
    total_trades: i64,
    total_volume: String,
}

pub async fn leaderboard(State(state): State<AppState>, ApiQuery(q): ApiQuery<LeaderboardQuery>) -> Result<Data<Vec<Entry>>, ApiError> {
    let days = match q.period.as_deref().unwrap_or("all") {
        "24h" => Some(1),
        "7d" => Some(7),
        "30d" => Some(30),
        "all" => None,
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
        Some(l) => l.parse::<i64>().ok().filter(|l| (1..=MAX_LIMIT).contains(l)).ok_or_else(|| ApiError::InvalidInput(format!("limit must be an integer from 1 to {MAX_LIMIT}")))?,
    };
    // Whole UTC days: "24h" is today and yesterday's statistics, and so on.
    let since = days.map(|d| Utc::now().date_naive() - chrono::Days::new(d));
    let rows = portfolio::leaderboard(&state.db, since, sort, limit).await?;
    let entries = rows
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let totals = portfolio::Totals { realized_pnl: r.realized_pnl, volume: r.volume, trades: r.trades, settled: r.settled, wins: r.wins };
            Entry {
                rank: i + 1,
                wallet_address: r.wallet,
                display_name: r.display_name,
                total_pnl: micros(r.realized_pnl),
                win_rate: ppm(totals.win_rate_ppm(), 4),
                total_trades: r.trades,
                total_volume: micros(r.volume),
            }
        })
        .collect();
    Ok(Data::new(entries))
}
