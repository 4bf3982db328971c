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
use crate::services::api_keys;
use crate::store::api_keys::ApiKeyRow;

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateRequest {
    #[serde(default)]
    label: String,
}

/// A key as listed: never the secret.
#[derive(Serialize)]
pub struct ApiKeyRecord {
    id: Uuid,
    key_prefix: String,
    label: String,
    created_at: DateTime<Utc>,
}

impl From<ApiKeyRow> for ApiKeyRecord {
    fn from(r: ApiKeyRow) -> ApiKeyRecord {
        ApiKeyRecord { id: r.id, key_prefix: r.key_prefix, label: r.label, created_at: r.created_at }
    }
}

/// A new key with its secret, shown once.
#[derive(Serialize)]
pub struct CreatedApiKey {
    #[serde(flatten)]
    record: ApiKeyRecord,
    key: String,
}

pub async fn create(State(state): State<AppState>, TokenCaller(caller): TokenCaller, ApiJsonOrEmpty(req): ApiJsonOrEmpty<CreateRequest>) -> Result<Data<CreatedApiKey>, ApiError> {
    let (record, key) = api_keys::create(&state.services, caller.user_id, &req.label).await?;
    Ok(Data(StatusCode::CREATED, CreatedApiKey { record: record.into(), key }, Meta::default()))
}

pub async fn list(State(state): State<AppState>, TokenCaller(caller): TokenCaller) -> Result<Data<Vec<ApiKeyRecord>>, ApiError> {
    Ok(Data::new(api_keys::list(&state.services, caller.user_id).await?.into_iter().map(ApiKeyRecord::from).collect()))
}

#[derive(Serialize)]
pub struct Revoked {
    id: Uuid,
    revoked: bool,
}

pub async fn revoke(State(state): State<AppState>, TokenCaller(caller): TokenCaller, ApiPath(id): ApiPath<Uuid>) -> Result<Data<Revoked>, ApiError> {
    api_keys::revoke(&state.services, caller.user_id, id).await?;
    Ok(Data::new(Revoked { id, revoked: true }))
}
