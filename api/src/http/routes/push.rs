//! Web push: `POST /v1/push/subscribe`, `POST /v1/push/unsubscribe` (JWT and anti-replay, as
//! the contract says) and `GET /v1/push/vapid-public-key` (beyond the contract: the browser
//! needs it as `applicationServerKey` to subscribe). `services::push` does the work.

use axum::extract::State;
use serde::{Deserialize, Serialize};

use crate::http::AppState;
use crate::http::auth::{ReplayChecked, TokenCaller};
use crate::http::envelope::Data;
use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use crate::http::openapi::{Envelope, ErrorEnvelope};
use crate::services::push;

/// A browser's `PushSubscription.toJSON()`.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubscribeBody {
    #[schema(pattern = "^https://", example = "https://push.example.com/send/abc")]
    endpoint: String,
    keys: Keys,
    /// Sent by browsers (usually null); push services end expired subscriptions with 404/410,
    /// which removes them, so it is not kept.
    #[serde(default, rename = "expirationTime")]
    _expiration_time: Option<serde_json::Value>,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Keys {
    p256dh: String,
    auth: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Subscribed {
    subscribed: bool,
}

#[utoipa::path(
    post,
    path = "/v1/push/subscribe",
    tag = "push",
    request_body = SubscribeBody,
    security(("bearer" = [], "request_nonce" = [], "request_timestamp" = [])),
    responses(
        (status = 200, description = "Subscribed", body = Envelope<Subscribed>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
        (status = 422, description = "REPLAY_DETECTED: the nonce was used before or the timestamp is outside ±300 s", body = ErrorEnvelope),
    )
)]
pub async fn subscribe(
    State(state): State<AppState>,
    TokenCaller(caller): TokenCaller,
    _: ReplayChecked,
    ApiJson(body): ApiJson<SubscribeBody>,
) -> Result<Data<Subscribed>, ApiError> {
    push::subscribe(&state.services, caller.user_id, &body.endpoint, &body.keys.p256dh, &body.keys.auth).await?;
    Ok(Data::new(Subscribed { subscribed: true }))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UnsubscribeBody {
    #[schema(pattern = "^https://")]
    endpoint: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Unsubscribed {
    unsubscribed: bool,
}

#[utoipa::path(
    post,
    path = "/v1/push/unsubscribe",
    tag = "push",
    request_body = UnsubscribeBody,
    security(("bearer" = [], "request_nonce" = [], "request_timestamp" = [])),
    responses(
        (status = 200, description = "Unsubscribed", body = Envelope<Unsubscribed>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
        (status = 422, description = "REPLAY_DETECTED: the nonce was used before or the timestamp is outside ±300 s", body = ErrorEnvelope),
    )
)]
pub async fn unsubscribe(
    State(state): State<AppState>,
    TokenCaller(caller): TokenCaller,
    _: ReplayChecked,
    ApiJson(body): ApiJson<UnsubscribeBody>,
) -> Result<Data<Unsubscribed>, ApiError> {
    push::unsubscribe(&state.services, caller.user_id, &body.endpoint).await?;
    Ok(Data::new(Unsubscribed { unsubscribed: true }))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct VapidPublicKey {
    /// The uncompressed P-256 point, base64url without padding.
    public_key: String,
}

#[utoipa::path(
    get,
    path = "/v1/push/vapid-public-key",
    tag = "push",
    responses(
        (status = 200, description = "The key a browser subscribes with", body = Envelope<VapidPublicKey>),
    )
)]
pub async fn vapid_public_key(State(state): State<AppState>) -> Result<Data<VapidPublicKey>, ApiError> {
    Ok(Data::new(VapidPublicKey { public_key: push::vapid_key(&state.services).await?.public.clone() }))
}
