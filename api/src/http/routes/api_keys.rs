//! `/v1/api-keys`: create (the secret is shown once), list (prefixes only), revoke. JWT only
//! (`services::api_keys`).

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::http::AppState;
use crate::http::auth::TokenCaller;
use crate::http::envelope::{Data, Meta};
use crate::http::error::ApiError;
use crate::http::extract::{ApiJsonOrEmpty, ApiPath};
use crate::http::openapi::{Envelope, ErrorEnvelope};
use crate::services::api_keys;
use crate::store::api_keys::ApiKeyRow;

#[derive(Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRequest {
    #[serde(default)]
    label: String,
    /// What the key may do: `read` (GET endpoints), `trade` (every other endpoint a key may
    /// call, but withdrawals), `withdraw` (`POST /v1/withdraw`). Default `["read", "trade"]`.
    scopes: Option<Vec<String>>,
}

/// A key as listed: never the secret.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ApiKeyRecord {
    id: Uuid,
    key_prefix: String,
    label: String,
    /// `read`, `trade` and/or `withdraw`.
    scopes: Vec<String>,
    created_at: DateTime<Utc>,
}

impl From<ApiKeyRow> for ApiKeyRecord {
    fn from(r: ApiKeyRow) -> ApiKeyRecord {
        ApiKeyRecord { id: r.id, key_prefix: r.key_prefix, label: r.label, scopes: r.scopes, created_at: r.created_at }
    }
}

/// A new key with its secret, shown once.
#[derive(Serialize, utoipa::ToSchema)]
pub struct CreatedApiKey {
    #[serde(flatten)]
    record: ApiKeyRecord,
    key: String,
}

#[utoipa::path(
    post,
    path = "/v1/api-keys",
    tag = "auth",
    request_body(content = Option<CreateRequest>, description = "Optional label; an empty body is allowed"),
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The key, with its secret (shown once)", body = Envelope<CreatedApiKey>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    TokenCaller(caller): TokenCaller,
    ApiJsonOrEmpty(req): ApiJsonOrEmpty<CreateRequest>,
) -> Result<Data<CreatedApiKey>, ApiError> {
    let (record, key) = api_keys::create(&state.services, caller.user_id, &req.label, req.scopes.as_deref()).await?;
    Ok(Data(StatusCode::CREATED, CreatedApiKey { record: record.into(), key }, Meta::default()))
}

#[utoipa::path(
    get,
    path = "/v1/api-keys",
    tag = "auth",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The caller's keys (prefixes only)", body = Envelope<Vec<ApiKeyRecord>>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
    )
)]
pub async fn list(State(state): State<AppState>, TokenCaller(caller): TokenCaller) -> Result<Data<Vec<ApiKeyRecord>>, ApiError> {
    Ok(Data::new(api_keys::list(&state.services, caller.user_id).await?.into_iter().map(ApiKeyRecord::from).collect()))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Revoked {
    id: Uuid,
    revoked: bool,
}

#[utoipa::path(
    delete,
    path = "/v1/api-keys/{id}",
    tag = "auth",
    params(("id" = uuid::Uuid, Path, description = "The key id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Revoked", body = Envelope<Revoked>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
    )
)]
pub async fn revoke(State(state): State<AppState>, TokenCaller(caller): TokenCaller, ApiPath(id): ApiPath<Uuid>) -> Result<Data<Revoked>, ApiError> {
    api_keys::revoke(&state.services, caller.user_id, id).await?;
    Ok(Data::new(Revoked { id, revoked: true }))
}
