//! The wallet-signed path: `GET /v1/markets/{id}/ensure-onchain`, `POST …/co-sign`,
//! `POST /v1/trade/confirm` (`services::wallet_flow`, where the refusal codes are listed).

use axum::extract::State;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::market::Side;
use crate::domain::money::micros;
use crate::http::AppState;
use crate::http::auth::{ReplayChecked, TokenCaller};
use crate::http::envelope::Data;
use crate::http::error::ApiError;
use crate::http::extract::{ApiJson, ApiPath, amount, side};
use crate::http::openapi::{Envelope, ErrorEnvelope};
use crate::services::wallet_flow::{self, Ensured};

/// Whether a market exists on chain: `ready` with its address, or `needs_cosign` with the
/// creation transaction for the wallet to sign (then `co-sign`).
#[derive(Serialize, utoipa::ToSchema)]
pub struct Readiness {
    market_id: Uuid,
    /// `ready` or `needs_cosign`.
    #[schema(pattern = "^(ready|needs_cosign)$")]
    status: &'static str,
    /// The market's program-derived address, when `ready`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pda: Option<String>,
    /// The creation transaction, base64, when `needs_cosign`.
    #[serde(skip_serializing_if = "Option::is_none")]
    transaction: Option<String>,
}

#[utoipa::path(
    get,
    path = "/v1/markets/{id}/ensure-onchain",
    tag = "wallet",
    params(("id" = uuid::Uuid, Path, description = "The market id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "ready (with the PDA) or needs_cosign (with a transaction to sign)", body = Envelope<Readiness>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 422, description = "MARKET_CLOSED: the market no longer takes trades", body = ErrorEnvelope),
    )
)]
pub async fn ensure_onchain(State(state): State<AppState>, TokenCaller(caller): TokenCaller, ApiPath(id): ApiPath<Uuid>) -> Result<Data<Readiness>, ApiError> {
    Ok(Data::new(match wallet_flow::ensure_onchain(&state.services, &caller, id).await? {
        Ensured::Ready { pda } => Readiness { market_id: id, status: "ready", pda: Some(pda), transaction: None },
        Ensured::NeedsCosign { transaction } => Readiness { market_id: id, status: "needs_cosign", pda: None, transaction: Some(transaction) },
    }))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CoSignBody {
    transaction: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct CoSigned {
    transaction: String,
}

#[utoipa::path(
    post,
    path = "/v1/markets/{id}/co-sign",
    tag = "wallet",
    request_body = CoSignBody,
    params(("id" = uuid::Uuid, Path, description = "The market id")),
    security(("bearer" = [], "request_nonce" = [], "request_timestamp" = [])),
    responses(
        (status = 200, description = "The transaction, co-signed", body = Envelope<CoSigned>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 422, description = "REPLAY_DETECTED, or a refusal of the transaction (the code says which)", body = ErrorEnvelope),
    )
)]
pub async fn co_sign(
    State(state): State<AppState>,
    TokenCaller(caller): TokenCaller,
    _: ReplayChecked,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<CoSignBody>,
) -> Result<Data<CoSigned>, ApiError> {
    let transaction = wallet_flow::co_sign(&state.services, &caller, id, &body.transaction).await?;
    Ok(Data::new(CoSigned { transaction }))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfirmBody {
    #[schema(format = Uuid)]
    market_id: String,
    #[schema(pattern = "^[1-9A-HJ-NP-Za-km-z]{64,88}$")]
    tx_sig: String,
    #[schema(pattern = "^(yes|no)$", example = "yes")]
    side: String,
    #[schema(pattern = "^[0-9]{1,12}(\\.[0-9]{1,6})?$", example = "10.50")]
    shares: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Confirmed {
    trade_id: Uuid,
    side: Side,
    shares: String,
    cost_usdc: String,
    fee_usdc: String,
    new_yes_price: String,
    new_no_price: String,
}

#[utoipa::path(
    post,
    path = "/v1/trade/confirm",
    tag = "wallet",
    request_body = ConfirmBody,
    security(("bearer" = [], "request_nonce" = [], "request_timestamp" = [])),
    responses(
        (status = 200, description = "The trade the transaction made", body = Envelope<Confirmed>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 422, description = "REPLAY_DETECTED, or the transaction is not the trade described (the code says which)", body = ErrorEnvelope),
    )
)]
pub async fn confirm(
    State(state): State<AppState>,
    TokenCaller(caller): TokenCaller,
    _: ReplayChecked,
    ApiJson(body): ApiJson<ConfirmBody>,
) -> Result<Data<Confirmed>, ApiError> {
    let market_id: Uuid = body.market_id.parse().map_err(|_| ApiError::InvalidInput("market_id must be a UUID".into()))?;
    let side = side(&body.side)?;
    let shares = amount("shares", &body.shares)?;
    let c = wallet_flow::confirm(&state.services, &caller, market_id, &body.tx_sig, side, shares).await?;
    Ok(Data::new(Confirmed {
        trade_id: c.trade_id,
        side: c.side,
        shares: micros(c.shares as i64),
        cost_usdc: micros(c.cost as i64),
        fee_usdc: micros(c.fee as i64),
        new_yes_price: micros(c.yes_price as i64),
        new_no_price: micros(c.no_price as i64),
    }))
}
