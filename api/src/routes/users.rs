//! `/v1/users/me…` and `/v1/portfolio`: who the caller is, their positions, trades and results
//! (`crate::portfolio` computes; this module shapes the contract's fields).

use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::page::PageQuery;
use crate::auth::extract::AnyCaller;
use crate::envelope::Data;
use crate::extract::{ApiJson, ApiQuery};
use super::markets::TradeItem;
use crate::markets::queries::{self, TradesOf};
use crate::money::{micros, ppm};
use crate::portfolio::{self, OpenPosition};
use crate::users;
use crate::{ApiError, AppState};

const MAX_LIMIT: i64 = 100;
/// Display names: 1 to 32 characters once trimmed, no control characters.
const MAX_DISPLAY_NAME: usize = 32;

#[derive(Serialize)]
pub struct Profile {
    id: Uuid,
    wallet_address: String,
    display_name: Option<String>,
    usdc_balance: String,
    created_at: DateTime<Utc>,
    last_active_at: DateTime<Utc>,
}

async fn profile(state: &AppState, user_id: Uuid) -> Result<Data<Profile>, ApiError> {
    let user = users::find(&state.db, user_id).await?.ok_or_else(|| ApiError::Unauthorized("the token's user does not exist".into()))?;
    let balance: Option<i64> = sqlx::query_scalar("SELECT balance FROM vault_balances WHERE wallet = $1").bind(&user.wallet_address).fetch_optional(&state.db).await?;
    Ok(Data::new(Profile {
        id: user.id,
        wallet_address: user.wallet_address,
        display_name: user.display_name,
        usdc_balance: micros(balance.unwrap_or(0)),
        created_at: user.created_at,
        last_active_at: user.last_active_at,
    }))
}

pub async fn me(State(state): State<AppState>, AnyCaller(caller): AnyCaller) -> Result<Data<Profile>, ApiError> {
    profile(&state, caller.user_id).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileUpdate {
    display_name: Option<String>,
}

/// Sets (or, with `null`, clears) the caller's display name.
pub async fn update_me(State(state): State<AppState>, AnyCaller(caller): AnyCaller, ApiJson(body): ApiJson<ProfileUpdate>) -> Result<Data<Profile>, ApiError> {
    let name = match body.display_name.as_deref().map(str::trim) {
        None => None,
        Some(n) if n.is_empty() || n.chars().count() > MAX_DISPLAY_NAME || n.chars().any(char::is_control) => {
            return Err(ApiError::InvalidInput(format!("display_name must be 1 to {MAX_DISPLAY_NAME} characters without control characters")));
        }
        Some(n) => Some(n.to_owned()),
    };
    sqlx::query("UPDATE users SET display_name = $2 WHERE id = $1").bind(caller.user_id).bind(name).execute(&state.db).await?;
    profile(&state, caller.user_id).await
}

#[derive(Serialize)]
pub struct Position {
    market_id: Uuid,
    symbol: String,
    exchange: String,
    side: String,
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

pub async fn positions(State(state): State<AppState>, AnyCaller(caller): AnyCaller) -> Result<Data<Vec<Position>>, ApiError> {
    let open = portfolio::open_positions(&state.db, &caller.wallet).await?;
    Ok(Data::new(open.into_iter().map(Position::from).collect()))
}

/// A trade of the caller's history: the market's trade item with its market.
#[derive(Serialize)]
pub struct HistoryItem {
    market_id: Uuid,
    #[serde(flatten)]
    trade: TradeItem,
}

pub async fn history(State(state): State<AppState>, AnyCaller(caller): AnyCaller, ApiQuery(q): ApiQuery<PageQuery>) -> Result<Data<Vec<HistoryItem>>, ApiError> {
    let page = q.resolve(MAX_LIMIT)?;
    let (rows, total) = queries::trades(&state.db, TradesOf::Wallet(&caller.wallet), page.limit, page.offset).await?;
    let items = rows.into_iter().map(|t| HistoryItem { market_id: t.market_id, trade: TradeItem::from(t) }).collect();
    Ok(Data::paged(items, page.meta(total)))
}

#[derive(Serialize)]
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

pub async fn overview(State(state): State<AppState>, AnyCaller(caller): AnyCaller) -> Result<Data<Portfolio>, ApiError> {
    let totals = portfolio::totals(&state.db, &caller.wallet).await?;
    let open = portfolio::open_positions(&state.db, &caller.wallet).await?;
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
