//! `/v1/users/me…` and `/v1/portfolio`: who the caller is, their positions, trades and results
//! (`services::users` finds them, `domain::portfolio` computes; this module shapes the
//! contract's fields).

use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::markets::TradeItem;
use crate::domain::market::Side;
use crate::domain::money::{micros, ppm};
use crate::domain::portfolio::OpenPosition;
use crate::http::AppState;
use crate::http::auth::AnyCaller;
use crate::http::envelope::Data;
use crate::http::error::ApiError;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::openapi::{Envelope, ErrorEnvelope};
use crate::http::page::PageQuery;
use crate::services::users::{self, Profile as Found};

const MAX_LIMIT: i64 = 100;

#[derive(Serialize, utoipa::ToSchema)]
pub struct Profile {
    id: Uuid,
    wallet_address: String,
    display_name: Option<String>,
    usdc_balance: String,
    created_at: DateTime<Utc>,
    last_active_at: DateTime<Utc>,
}

impl From<Found> for Profile {
    fn from(f: Found) -> Profile {
        Profile {
            id: f.user.id,
            wallet_address: f.user.wallet_address,
            display_name: f.user.display_name,
            usdc_balance: micros(f.usdc_balance as i64),
            created_at: f.user.created_at,
            last_active_at: f.user.last_active_at,
        }
    }
}

#[utoipa::path(
    get,
    path = "/v1/users/me",
    tag = "users",
    security(("bearer" = []), ("api_key" = [])),
    responses(
        (status = 200, description = "The caller's profile", body = Envelope<Profile>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
    )
)]
pub async fn me(State(state): State<AppState>, AnyCaller(caller): AnyCaller) -> Result<Data<Profile>, ApiError> {
    Ok(Data::new(users::profile(&state.services, caller.user_id).await?.into()))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileUpdate {
    display_name: Option<String>,
}

/// Sets (or, with `null`, clears) the caller's display name.
#[utoipa::path(
    patch,
    path = "/v1/users/me",
    tag = "users",
    request_body = ProfileUpdate,
    security(("bearer" = []), ("api_key" = [])),
    responses(
        (status = 200, description = "The updated profile", body = Envelope<Profile>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
    )
)]
pub async fn update_me(State(state): State<AppState>, AnyCaller(caller): AnyCaller, ApiJson(body): ApiJson<ProfileUpdate>) -> Result<Data<Profile>, ApiError> {
    Ok(Data::new(users::set_display_name(&state.services, caller.user_id, body.display_name.as_deref()).await?.into()))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Position {
    market_id: Uuid,
    symbol: String,
    exchange: String,
    side: Side,
    shares: String,
    avg_price: String,
    current_price: String,
    unrealized_pnl: String,
    settlement_ts: DateTime<Utc>,
}

impl From<OpenPosition> for Position {
    fn from(p: OpenPosition) -> Position {
        Position {
            shares: micros(p.shares),
            avg_price: micros(p.avg_price()),
            current_price: micros(p.price_ppm),
            unrealized_pnl: micros(p.unrealized_pnl()),
            market_id: p.market_id,
            symbol: p.symbol,
            exchange: p.exchange,
            side: p.side,
            settlement_ts: p.settlement_ts,
        }
    }
}

#[utoipa::path(
    get,
    path = "/v1/users/me/positions",
    tag = "users",
    security(("bearer" = []), ("api_key" = [])),
    responses(
        (status = 200, description = "Open positions", body = Envelope<Vec<Position>>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
    )
)]
pub async fn positions(State(state): State<AppState>, AnyCaller(caller): AnyCaller) -> Result<Data<Vec<Position>>, ApiError> {
    let open = users::positions(&state.services, &caller).await?;
    Ok(Data::new(open.into_iter().map(Position::from).collect()))
}

/// A trade of the caller's history: the market's trade item with its market.
#[derive(Serialize, utoipa::ToSchema)]
pub struct HistoryItem {
    market_id: Uuid,
    #[serde(flatten)]
    trade: TradeItem,
}

#[utoipa::path(
    get,
    path = "/v1/users/me/history",
    tag = "users",
    params(PageQuery),
    security(("bearer" = []), ("api_key" = [])),
    responses(
        (status = 200, description = "The caller's trades, newest first", body = Envelope<Vec<HistoryItem>>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
    )
)]
pub async fn history(
    State(state): State<AppState>,
    AnyCaller(caller): AnyCaller,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> Result<Data<Vec<HistoryItem>>, ApiError> {
    let page = q.resolve(MAX_LIMIT)?;
    let (rows, total) = users::history(&state.services, &caller, page).await?;
    let items = rows.into_iter().map(|t| HistoryItem { market_id: t.market_id, trade: TradeItem::from(t) }).collect();
    Ok(Data::paged(items, page.meta(total)))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Portfolio {
    /// Realized (at settlements) plus unrealized (open positions at current prices).
    total_pnl: String,
    realized_pnl: String,
    unrealized_pnl: String,
    win_rate: String,
    total_trades: i64,
    open_positions: usize,
    positions: Vec<Position>,
}

#[utoipa::path(
    get,
    path = "/v1/portfolio",
    tag = "users",
    security(("bearer" = []), ("api_key" = [])),
    responses(
        (status = 200, description = "P&L, win rate and open positions", body = Envelope<Portfolio>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
    )
)]
pub async fn overview(State(state): State<AppState>, AnyCaller(caller): AnyCaller) -> Result<Data<Portfolio>, ApiError> {
    let users::Portfolio { totals, open } = users::portfolio(&state.services, &caller).await?;
    let unrealized: i64 = open.iter().map(OpenPosition::unrealized_pnl).sum();
    Ok(Data::new(Portfolio {
        total_pnl: micros(totals.realized_pnl + unrealized),
        realized_pnl: micros(totals.realized_pnl),
        unrealized_pnl: micros(unrealized),
        win_rate: ppm(totals.win_rate_ppm(), 4),
        total_trades: totals.trades,
        open_positions: open.len(),
        positions: open.into_iter().map(Position::from).collect(),
    }))
}
