//! The wallet-signed path: `GET /v1/markets/{id}/ensure-onchain`, `POST …/co-sign`,
//! `POST /v1/trade/confirm` (`services::wallet_flow`, where the refusal codes are listed).

use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::domain::market::Side;
use crate::domain::money::micros;
use crate::http::AppState;
use crate::http::auth::{ReplayChecked, TokenCaller};
use crate::http::envelope::Data;
use crate::http::error::ApiError;
use crate::http::extract::{ApiJson, ApiPath, amount, side};
use crate::services::wallet_flow::{self, Ensured};

pub async fn ensure_onchain(State(state): State<AppState>, TokenCaller(caller): TokenCaller, ApiPath(id): ApiPath<Uuid>) -> Result<Data<Value>, ApiError> {
    Ok(Data::new(match wallet_flow::ensure_onchain(&state.services, &caller, id).await? {
        Ensured::Ready { pda } => json!({"market_id": id, "pda": pda, "status": "ready"}),
        Ensured::NeedsCosign { transaction } => json!({"market_id": id, "status": "needs_cosign", "transaction": transaction}),
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoSignBody {
    transaction: String,
}

#[derive(Serialize)]
pub struct CoSigned {
    transaction: String,
}

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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfirmBody {
    market_id: String,
    tx_sig: String,
    side: String,
    shares: String,
}

#[derive(Serialize)]
pub struct Confirmed {
    trade_id: Uuid,
    side: Side,
    shares: String,
    cost_usdc: String,
    fee_usdc: String,
    new_yes_price: String,
    new_no_price: String,
}

pub async fn confirm(State(state): State<AppState>, TokenCaller(caller): TokenCaller, _: ReplayChecked, ApiJson(body): ApiJson<ConfirmBody>) -> Result<Data<Confirmed>, ApiError> {
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
