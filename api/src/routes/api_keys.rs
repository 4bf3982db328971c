//! `/v1/api-keys`: create (the secret is shown once), list (prefixes only), revoke. JWT only.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::api_key::{self, ApiKeyRecord, CreatedApiKey, MAX_ACTIVE_PER_USER};
use crate::auth::extract::TokenCaller;
use crate::envelope::{Data, Meta};
use crate::extract::{ApiJsonOrEmpty, ApiPath};
use crate::{ApiError, AppState};

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateRequest {
    #[serde(default)]
    label: String,
}

pub async fn create(
    State(state): State<AppState>,
    TokenCaller(caller): TokenCaller,
    ApiJsonOrEmpty(req): ApiJsonOrEmpty<CreateRequest>,
) -> Result<Data<CreatedApiKey>, ApiError> {
    let label = req.label.trim();
    if label.chars().count() > 64 {
        return Err(ApiError::InvalidInput("label must be at most 64 characters".into()));
    }
    match api_key::create(&state.db, caller.user_id, label).await? {
        Some(created) => Ok(Data(StatusCode::CREATED, created, Meta::default())),
        None => Err(ApiError::InvalidInput(format!("at most {MAX_ACTIVE_PER_USER} active API keys; revoke one first"))),
    }
}

pub async fn list(State(state): State<AppState>, TokenCaller(caller): TokenCaller) -> Result<Data<Vec<ApiKeyRecord>>, ApiError> {
    Ok(Data::new(api_key::list(&state.db, caller.user_id).await?))
}

#[derive(Serialize)]
pub struct Revoked {
    id: Uuid,
    revoked: bool,
}

/// Someone else's key, like a missing one, is `NOT_FOUND`: ids of other users' keys leak nothing.
pub async fn revoke(
    State(state): State<AppState>,
    TokenCaller(caller): TokenCaller,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Data<Revoked>, ApiError> {
    if api_key::revoke(&state.db, caller.user_id, id).await? {
        Ok(Data::new(Revoked { id, revoked: true }))
    } else {
        Err(ApiError::NotFound(format!("no active API key {id}")))
    }
}
