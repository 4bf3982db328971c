//! Who is calling: Sign-In With Solana, access tokens (JWT), API keys, and anti-replay.
//!
//! [`identify`] resolves the caller once per request (in the rate-limit middleware, which needs
//! it for its buckets) and stores the [`Identity`] in the request; the extractors in
//! [`extract`] only apply each endpoint's policy to it.

pub mod api_key;
pub mod extract;
pub mod jwt;
pub mod replay;
pub mod siws;
pub mod wallet;

use axum::http::HeaderMap;
use uuid::Uuid;

use crate::{ApiError, AppState};

/// An authenticated caller.
#[derive(Clone, Debug)]
pub struct Caller {
    pub user_id: Uuid,
    pub wallet: String,
    pub method: AuthMethod,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMethod {
    /// `Authorization: Bearer <JWT>` from a wallet sign-in.
    Token,
    /// `X-API-Key`, with the key's id (its rate-limit bucket).
    ApiKey { key_id: Uuid },
}

/// What the credentials on a request amount to.
#[derive(Clone, Debug)]
pub enum Identity {
    Anonymous,
    Authenticated(Caller),
    /// Credentials were sent but are not valid: endpoints that need a caller answer this error.
    Invalid(ApiError),
}

pub const API_KEY_HEADER: &str = "x-api-key";

/// Resolves the request's credentials. An `X-API-Key` header wins over `Authorization`.
pub async fn identify(state: &AppState, headers: &HeaderMap) -> Identity {
    if let Some(key) = headers.get(API_KEY_HEADER) {
        let Some(key) = key.to_str().ok().filter(|k| api_key::is_well_formed(k)) else {
            return Identity::Invalid(ApiError::Unauthorized("malformed API key".into()));
        };
        return match api_key::find_caller(&state.db, key).await {
            Ok(Some(caller)) => Identity::Authenticated(caller),
            Ok(None) => Identity::Invalid(ApiError::Unauthorized("unknown or revoked API key".into())),
            Err(e) => Identity::Invalid(e.into()),
        };
    }
    let Some(authorization) = headers.get(axum::http::header::AUTHORIZATION) else {
        return Identity::Anonymous;
    };
    let token = authorization.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")).map(str::trim);
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return Identity::Invalid(ApiError::Unauthorized("Authorization must be 'Bearer <token>'".into()));
    };
    match state.tokens.verify(token) {
        Ok(claims) => Identity::Authenticated(Caller { user_id: claims.sub, wallet: claims.wallet, method: AuthMethod::Token }),
        Err(e) => Identity::Invalid(ApiError::Unauthorized(format!("invalid access token: {e}"))),
    }
}
