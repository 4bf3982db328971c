//! API keys of a signed-in user: create (the secret is returned once), list, revoke.

use uuid::Uuid;

use super::{ServiceError, Services};
use crate::domain::api_key::{self, MAX_ACTIVE_PER_USER, MAX_LABEL, Scopes};
use crate::domain::caller::Caller;
use crate::store::api_keys::{self, ApiKeyRow};

/// A new key with `scopes` (named; none named: `Scopes::DEFAULT`).
pub async fn create(s: &Services, user_id: Uuid, label: &str, scopes: Option<&[String]>) -> Result<(ApiKeyRow, String), ServiceError> {
    let label = label.trim();
    if label.chars().count() > MAX_LABEL {
        return Err(ServiceError::InvalidInput(format!("label must be at most {MAX_LABEL} characters")));
    }
    let scopes = match scopes {
        Some(names) => Scopes::parse(names.iter().map(String::as_str)).map_err(ServiceError::InvalidInput)?,
        None => Scopes::DEFAULT,
    };
    let key = api_key::generate();
    match api_keys::create(&s.db, user_id, &key, label, scopes).await? {
        Some(record) => Ok((record, key)),
        None => Err(ServiceError::InvalidInput(format!("at most {MAX_ACTIVE_PER_USER} active API keys; revoke one first"))),
    }
}

pub async fn list(s: &Services, user_id: Uuid) -> Result<Vec<ApiKeyRow>, ServiceError> {
    Ok(api_keys::list(&s.db, user_id).await?)
}

/// Someone else's key, like a missing one, is `NotFound`: ids of other users' keys leak nothing.
pub async fn revoke(s: &Services, user_id: Uuid, id: Uuid) -> Result<(), ServiceError> {
    if api_keys::revoke(&s.db, user_id, id).await? { Ok(()) } else { Err(ServiceError::NotFound(format!("no active API key {id}"))) }
}

/// The owner of an active key (the key already checked well-formed).
pub async fn caller_for_key(s: &Services, key: &str) -> Result<Option<Caller>, ServiceError> {
    Ok(api_keys::find_caller(&s.db, key).await?)
}
