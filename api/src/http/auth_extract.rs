//! Extractors that apply an endpoint's authentication policy to the request's [`Identity`].

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::{AuthMethod, Caller, Identity};
use crate::ApiError;

fn identity(parts: &Parts) -> Identity {
    // Set by the rate-limit middleware, which every `/v1` route runs behind.
    parts.extensions.get::<Identity>().cloned().unwrap_or(Identity::Anonymous)
}

/// A caller signed in with a wallet (JWT). API keys are refused.
pub struct TokenCaller(pub Caller);

impl<S: Send + Sync> FromRequestParts<S> for TokenCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        match identity(parts) {
            Identity::Authenticated(caller) if caller.method == AuthMethod::Token => Ok(TokenCaller(caller)),
            Identity::Authenticated(_) => Err(ApiError::Unauthorized(
                "this endpoint needs a wallet sign-in token (Authorization: Bearer); API keys are not accepted".into(),
            )),
            Identity::Invalid(e) => Err(e),
            Identity::Anonymous => Err(ApiError::Unauthorized("missing Authorization: Bearer <token>".into())),
        }
    }
}

/// A caller with a JWT or an API key.
pub struct AnyCaller(pub Caller);

impl<S: Send + Sync> FromRequestParts<S> for AnyCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        match identity(parts) {
            Identity::Authenticated(caller) => Ok(AnyCaller(caller)),
            Identity::Invalid(e) => Err(e),
            Identity::Anonymous => Err(ApiError::Unauthorized(
                "missing credentials: send Authorization: Bearer <token> or X-API-Key".into(),
            )),
        }
    }
}

/// A caller with an API key (for bot-only endpoints). Tokens are refused.
pub struct KeyCaller(pub Caller);

impl<S: Send + Sync> FromRequestParts<S> for KeyCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        match identity(parts) {
            Identity::Authenticated(caller) if matches!(caller.method, AuthMethod::ApiKey { .. }) => Ok(KeyCaller(caller)),
            Identity::Authenticated(_) => Err(ApiError::Unauthorized("this endpoint needs an API key (X-API-Key)".into())),
            Identity::Invalid(e) => Err(e),
            Identity::Anonymous => Err(ApiError::Unauthorized("missing X-API-Key".into())),
        }
    }
}
