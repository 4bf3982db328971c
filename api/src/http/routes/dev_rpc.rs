//! `POST /rpc` (embedded chain only): the chain answering Solana JSON-RPC, so a wallet can build,
//! sign and send its own transactions against the local service exactly as against a cluster
//! (`localnet` speaks the formats). Not under `/v1`: it
//! is the local chain's node, not part of the API. Rate limited per client IP
//! (`FM_RATE_RPC_PER_SEC`); bodies over [`MAX_BODY_BYTES`] are refused unread (400 `INVALID_INPUT`, "request body too large", as everywhere), each
//! method has a mainnet node's limits (`localnet::json_rpc`), and the answer to
//! one request, a whole batch's, holds at most `localnet::MAX_RESPONSE_BYTES`
//! (a request past it is answered with the `-32012` error instead).

use crate::chain::AnyChain;
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::openapi::ErrorEnvelope;

/// The largest request body: a `getMultipleAccounts` of 100 keys is about 5 KB, a
/// `sendTransaction` under 2 KB.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A JSON-RPC 2.0 message, or a batch of them (an array, answered by an array).
#[derive(serde::Serialize, utoipa::ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum JsonRpc {
    #[schema(value_type = Object)]
    One(Value),
    #[schema(value_type = Vec<Object>)]
    Batch(Vec<Value>),
}

#[utoipa::path(
    post,
    path = "/rpc",
    tag = "chain",
    request_body(content = JsonRpc, description = "A Solana JSON-RPC 2.0 request, or a batch"),
    responses(
        (status = 200, description = "The JSON-RPC 2.0 answer, or an array of them for a batch (errors inside, as a node answers)", body = JsonRpc),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
    )
)]
pub async fn rpc(State(state): State<AppState>, body: Bytes) -> Response {
    let Some(AnyChain::Embedded(chain)) = state.services.onchain.as_ref().map(|o| o.chain()) else {
        return ApiError::NotFound("/rpc exists only on the embedded chain".into()).into_response();
    };
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return Json(json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": format!("Parse error: {e}")}, "id": null})).into_response(),
    };
    Json(chain.json_rpc(&request).await).into_response()
}
