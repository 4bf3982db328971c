//! Custodial trading (`POST /v1/markets/{id}/trade`, `…/sell`), the deposit address, the
//! balance, and the test-USDC faucet (`services::trading`).

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::market::Side;
use crate::domain::money::{self, micros};
use crate::http::AppState;
use crate::http::auth::AnyCaller;
use crate::http::envelope::Data;
use crate::http::error::ApiError;
use crate::http::extract::{ApiJson, ApiPath, amount, side};
use crate::http::idempotency::Pending;
use crate::http::idempotency::idempotent;
use crate::http::openapi::{Envelope, ErrorEnvelope};
use crate::services::trading::{self, BuyOrder, SellOrder, Traded};
use crate::services::{ServiceError, Services};

#[derive(Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BuyBody {
    #[schema(pattern = "^(yes|no)$", example = "yes")]
    side: String,
    /// USDC to spend, fee included: at least 1.000000 (the program's minimum trade; less is 400
    /// INVALID_INPUT).
    #[schema(pattern = "^[0-9]{1,12}(\\.[0-9]{1,6})?$", example = "10.50")]
    usdc_amount: String,
    #[serde(default)]
    #[schema(pattern = "^[0-9]{1,12}(\\.[0-9]{1,6})?$", example = "10.50")]
    min_shares: Option<String>,
}

#[derive(Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SellBody {
    #[schema(pattern = "^(yes|no)$", example = "yes")]
    side: String,
    /// Shares to sell. The USDC they return must come to at least 1.000000 (the program's minimum
    /// trade; less is 400 INVALID_INPUT).
    #[schema(pattern = "^[0-9]{1,12}(\\.[0-9]{1,6})?$", example = "10.50")]
    shares: String,
    #[serde(default)]
    #[schema(pattern = "^[0-9]{1,12}(\\.[0-9]{1,6})?$", example = "10.50")]
    min_usdc_out: Option<String>,
}

/// The contract's "result of placing a trade" (selling reports `cost_usdc` as the USDC
/// received before the fee).
#[derive(Serialize, utoipa::ToSchema)]
pub struct TradeResult {
    trade_id: Uuid,
    side: Side,
    shares: String,
    price_per_share: String,
    cost_usdc: String,
    fee_usdc: String,
    new_yes_price: String,
    new_no_price: String,
}

impl From<Traded> for TradeResult {
    fn from(t: Traded) -> TradeResult {
        TradeResult {
            trade_id: t.trade_id,
            side: t.side,
            shares: micros(t.shares as i64),
            price_per_share: micros(t.price_per_share),
            cost_usdc: micros(t.cost as i64),
            fee_usdc: micros(t.fee as i64),
            new_yes_price: micros(t.yes_price as i64),
            new_no_price: micros(t.no_price as i64),
        }
    }
}

/// The trade a crashed attempt sent, if it landed.
async fn recover(services: &Services, signature: String) -> Result<Option<TradeResult>, ServiceError> {
    Ok(trading::recover(services, &signature).await?.map(TradeResult::from))
}

#[utoipa::path(
    post,
    path = "/v1/markets/{id}/trade",
    tag = "trading",
    request_body = BuyBody,
    params(
        ("id" = uuid::Uuid, Path, description = "The market id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe: the same key with the same body returns the first answer (24 h)"),
    ),
    security(("bearer" = []), ("api_key" = [])),
    responses(
        (status = 200, description = "The trade", body = Envelope<TradeResult>),
        (status = 202, description = "Sent but not yet confirmed (`status: pending` and the transaction's signature): repeat the request with the same Idempotency-Key for the result", body = Envelope<Pending>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 409, description = "IDEMPOTENCY_KEY_REUSED (another body) or IDEMPOTENCY_KEY_IN_USE (the first request still runs)", body = ErrorEnvelope),
        (status = 422, description = "MARKET_CLOSED, INSUFFICIENT_BALANCE, INSUFFICIENT_SHARES or SLIPPAGE_EXCEEDED", body = ErrorEnvelope),
    )
)]
pub async fn buy(
    State(state): State<AppState>,
    AnyCaller(caller): AnyCaller,
    ApiPath(id): ApiPath<Uuid>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<BuyBody>,
) -> Result<Response, ApiError> {
    let order = BuyOrder {
        side: side(&body.side)?,
        usdc_amount: amount("usdc_amount", &body.usdc_amount)?,
        min_shares: body.min_shares.as_deref().map(|s| amount("min_shares", s)).transpose()?.unwrap_or(0),
    };
    let s = &state.services;
    let route = format!("POST /v1/markets/{id}/trade");
    idempotent(
        s,
        &caller,
        &headers,
        &route,
        &body,
        |log| async { trading::buy(s, &caller, id, order, log).await.map(TradeResult::from) },
        |signature| recover(s, signature),
    )
    .await
}

#[utoipa::path(
    post,
    path = "/v1/markets/{id}/sell",
    tag = "trading",
    request_body = SellBody,
    params(
        ("id" = uuid::Uuid, Path, description = "The market id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe: the same key with the same body returns the first answer (24 h)"),
    ),
    security(("bearer" = []), ("api_key" = [])),
    responses(
        (status = 200, description = "The trade (cost_usdc: USDC received before the fee)", body = Envelope<TradeResult>),
        (status = 202, description = "Sent but not yet confirmed (`status: pending` and the transaction's signature): repeat the request with the same Idempotency-Key for the result", body = Envelope<Pending>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 409, description = "IDEMPOTENCY_KEY_REUSED (another body) or IDEMPOTENCY_KEY_IN_USE (the first request still runs)", body = ErrorEnvelope),
        (status = 422, description = "MARKET_CLOSED, INSUFFICIENT_BALANCE, INSUFFICIENT_SHARES or SLIPPAGE_EXCEEDED", body = ErrorEnvelope),
    )
)]
pub async fn sell(
    State(state): State<AppState>,
    AnyCaller(caller): AnyCaller,
    ApiPath(id): ApiPath<Uuid>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<SellBody>,
) -> Result<Response, ApiError> {
    let order = SellOrder {
        side: side(&body.side)?,
        shares: amount("shares", &body.shares)?,
        min_usdc_out: body.min_usdc_out.as_deref().map(|s| amount("min_usdc_out", s)).transpose()?.unwrap_or(0),
    };
    let s = &state.services;
    let route = format!("POST /v1/markets/{id}/sell");
    idempotent(
        s,
        &caller,
        &headers,
        &route,
        &body,
        |log| async { trading::sell(s, &caller, id, order, log).await.map(TradeResult::from) },
        |signature| recover(s, signature),
    )
    .await
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct DepositAddress {
    address: String,
    chain: &'static str,
    token: &'static str,
    min_deposit: String,
}

#[utoipa::path(
    get,
    path = "/v1/deposit/address",
    tag = "money",
    security(("bearer" = []), ("api_key" = [])),
    responses(
        (status = 200, description = "Where to send USDC", body = Envelope<DepositAddress>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
    )
)]
pub async fn deposit_address(State(state): State<AppState>, AnyCaller(caller): AnyCaller) -> Result<Data<DepositAddress>, ApiError> {
    let d = trading::deposit_address(&state.services, &caller).await?;
    Ok(Data::new(DepositAddress { address: d.address, chain: "solana", token: "USDC", min_deposit: money::places(d.min_deposit as i128, 6, 2) }))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Balance {
    usdc_balance: String,
    locked_in_positions: String,
    total: String,
}

impl From<trading::Balance> for Balance {
    fn from(b: trading::Balance) -> Balance {
        Balance { usdc_balance: micros(b.available), locked_in_positions: micros(b.locked), total: micros(b.available + b.locked) }
    }
}

#[utoipa::path(
    get,
    path = "/v1/users/me/balance",
    tag = "users",
    security(("bearer" = []), ("api_key" = [])),
    responses(
        (status = 200, description = "The caller's USDC", body = Envelope<Balance>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
    )
)]
pub async fn balance(State(state): State<AppState>, AnyCaller(caller): AnyCaller) -> Result<Data<Balance>, ApiError> {
    Ok(Data::new(trading::balance(&state.services, &caller).await?.into()))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FaucetBody {
    #[schema(pattern = "^[1-9A-HJ-NP-Za-km-z]{32,44}$", example = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM")]
    wallet_address: String,
    #[schema(pattern = "^[0-9]{1,12}(\\.[0-9]{1,6})?$", example = "10.50")]
    amount: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct FaucetResult {
    wallet_address: String,
    amount: String,
    usdc_balance: String,
    remaining_today: String,
}

#[utoipa::path(
    post,
    path = "/v1/dev/faucet",
    tag = "money",
    request_body = FaucetBody,
    responses(
        (status = 200, description = "Test USDC granted", body = Envelope<FaucetResult>),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
    )
)]
pub async fn faucet(State(state): State<AppState>, ApiJson(body): ApiJson<FaucetBody>) -> Result<Data<FaucetResult>, ApiError> {
    let amount = amount("amount", &body.amount)?;
    let g = trading::faucet(&state.services, &body.wallet_address, amount).await?;
    Ok(Data::new(FaucetResult {
        wallet_address: g.wallet,
        amount: micros(g.amount as i64),
        usdc_balance: micros(g.usdc_balance as i64),
        remaining_today: micros(g.remaining_today as i64),
    }))
}
