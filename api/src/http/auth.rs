//! Who is calling. [`identify`] resolves the request's credentials once (in the rate-limit
//! middleware, which needs them for its buckets), which stores the [`Identity`] in the request
//! unless it is anonymous (a request without one is); the extractors apply each endpoint's
//! policy to it. [`ReplayChecked`] enforces anti-replay.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method};

use super::AppState;
use super::error::ApiError;
use crate::domain::api_key::{self, Scope};
use crate::domain::caller::{AuthMethod, Caller};
use crate::services::api_keys;
use crate::services::replay::{self, WINDOW_SECS};

pub const API_KEY_HEADER: &str = "x-api-key";
pub const NONCE_HEADER: &str = "x-request-nonce";
pub const TIMESTAMP_HEADER: &str = "x-request-timestamp";

/// What the credentials on a request amount to.
#[derive(Clone, Debug)]
pub enum Identity {
    Anonymous,
    Authenticated(Caller),
    /// Credentials were sent but are not valid: endpoints that need a caller answer this error.
    Invalid(ApiError),
}

/// Resolves the request's credentials. An `X-API-Key` header wins over `Authorization`.
pub async fn identify(state: &AppState, headers: &HeaderMap) -> Identity {
    if let Some(key) = headers.get(API_KEY_HEADER) {
        let Some(key) = key.to_str().ok().filter(|k| api_key::is_well_formed(k)) else {
            return Identity::Invalid(ApiError::Unauthorized("malformed API key".into()));
        };
        return match api_keys::caller_for_key(&state.services, key).await {
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
    match state.services.tokens.verify(token) {
        Ok(claims) => Identity::Authenticated(Caller { user_id: claims.sub, wallet: claims.wallet, method: AuthMethod::Token }),
        Err(e) => Identity::Invalid(ApiError::Unauthorized(format!("invalid access token: {e}"))),
    }
}

fn identity(parts: &Parts) -> Identity {
    // Set by the rate-limit middleware, which every `/v1` route runs behind, for every caller
    // that is not anonymous.
    parts.extensions.get::<Identity>().cloned().unwrap_or(Identity::Anonymous)
}

/// A caller signed in with a wallet (JWT). API keys are refused.
pub struct TokenCaller(pub Caller);

impl<S: Send + Sync> FromRequestParts<S> for TokenCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        match identity(parts) {
            Identity::Authenticated(caller) if caller.method == AuthMethod::Token => Ok(TokenCaller(caller)),
            Identity::Authenticated(_) => {
                Err(ApiError::Unauthorized("this endpoint needs a wallet sign-in token (Authorization: Bearer); API keys are not accepted".into()))
            }
            Identity::Invalid(e) => Err(e),
            Identity::Anonymous => Err(ApiError::Unauthorized("missing Authorization: Bearer <token>".into())),
        }
    }
}

/// The scope a request needs of an API key: `read` for `GET` and `HEAD`, `trade` for the rest
/// (withdrawals take [`WithdrawCaller`], which needs `withdraw`).
fn scope_for(parts: &Parts) -> Scope {
    if parts.method == Method::GET || parts.method == Method::HEAD { Scope::Read } else { Scope::Trade }
}

/// Refuses a key that lacks `scope`.
fn in_scope(caller: Caller, scope: Scope) -> Result<Caller, ApiError> {
    if caller.may(scope) {
        Ok(caller)
    } else {
        Err(ApiError::Unauthorized(format!("this API key lacks the `{}` scope (keys are made with their scopes: POST /v1/api-keys)", scope.as_str())))
    }
}

/// A caller with a JWT or an API key in the request's scope.
pub struct AnyCaller(pub Caller);

impl<S: Send + Sync> FromRequestParts<S> for AnyCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        match identity(parts) {
            Identity::Authenticated(caller) => Ok(AnyCaller(in_scope(caller, scope_for(parts))?)),
            Identity::Invalid(e) => Err(e),
            Identity::Anonymous => Err(ApiError::Unauthorized("missing credentials: send Authorization: Bearer <token> or X-API-Key".into())),
        }
    }
}

/// A caller with an API key (for bot-only endpoints). Tokens are refused.
pub struct KeyCaller(pub Caller);

impl<S: Send + Sync> FromRequestParts<S> for KeyCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        match identity(parts) {
            Identity::Authenticated(caller) if matches!(caller.method, AuthMethod::ApiKey { .. }) => Ok(KeyCaller(in_scope(caller, scope_for(parts))?)),
            Identity::Authenticated(_) => Err(ApiError::Unauthorized("this endpoint needs an API key (X-API-Key)".into())),
            Identity::Invalid(e) => Err(e),
            Identity::Anonymous => Err(ApiError::Unauthorized("missing X-API-Key".into())),
        }
    }
}

/// A caller who may withdraw: a sign-in token with fresh anti-replay headers (a captured
/// request cannot be sent again), or an API key with the `withdraw` scope.
pub struct WithdrawCaller(pub Caller);

impl FromRequestParts<AppState> for WithdrawCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let caller = authenticated(parts)?;
        if caller.method == AuthMethod::Token {
            use_fresh_nonce(parts, state, &caller).await?;
            return Ok(WithdrawCaller(caller));
        }
        Ok(WithdrawCaller(in_scope(caller, Scope::Withdraw)?))
    }
}

/// Proof that the request carried a fresh nonce (`X-Request-Nonce`, used once by its caller)
/// and a timestamp within ±300 s (`X-Request-Timestamp`). Missing or malformed headers are 400
/// `INVALID_INPUT`; a reused nonce or a timestamp outside the window 422 `REPLAY_DETECTED`.
/// Only for endpoints that need a caller (the nonce is bound to it).
pub struct ReplayChecked;

impl FromRequestParts<AppState> for ReplayChecked {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let caller = authenticated(parts)?;
        use_fresh_nonce(parts, state, &caller).await?;
        Ok(ReplayChecked)
    }
}

/// The request's caller, whatever the credentials; 401 without valid ones.
fn authenticated(parts: &Parts) -> Result<Caller, ApiError> {
    match identity(parts) {
        Identity::Authenticated(caller) => Ok(caller),
        Identity::Invalid(e) => Err(e),
        Identity::Anonymous => Err(ApiError::Unauthorized("missing credentials: send Authorization: Bearer <token> or X-API-Key".into())),
    }
}

/// Checks the anti-replay headers and spends the nonce for `caller`.
async fn use_fresh_nonce(parts: &Parts, state: &AppState, caller: &Caller) -> Result<(), ApiError> {
    let nonce = check_headers(&parts.headers, chrono::Utc::now().timestamp())?;
    replay::use_nonce(&state.services, caller.user_id, nonce).await?;
    Ok(())
}

/// Validates the two headers against `now` (Unix seconds); returns the nonce.
pub fn check_headers(headers: &HeaderMap, now: i64) -> Result<&str, ApiError> {
    let header = |name: &str| {
        headers
            .get(name)
            .map(|v| v.to_str().map_err(|_| ApiError::InvalidInput(format!("{name} must be ASCII"))))
            .transpose()?
            .ok_or_else(|| ApiError::InvalidInput(format!("missing {name} header")))
    };
    let nonce = header(NONCE_HEADER)?;
    let timestamp = header(TIMESTAMP_HEADER)?;
    if !is_valid_nonce(nonce) {
        return Err(ApiError::InvalidInput(format!("{NONCE_HEADER} must be 32-64 hex characters or a UUID")));
    }
    let ts: i64 = timestamp.parse().map_err(|_| ApiError::InvalidInput(format!("{TIMESTAMP_HEADER} must be Unix seconds")))?;
    // Any i64 parses, so the difference is taken without overflow: `now - i64::MIN` does not fit.
    if now.abs_diff(ts) > WINDOW_SECS.unsigned_abs() {
        let skew = i128::from(now) - i128::from(ts);
        return Err(ApiError::ReplayDetected(format!("{TIMESTAMP_HEADER} is {skew} s from the server clock (allowed ±{WINDOW_SECS} s)")));
    }
    Ok(nonce)
}

fn is_valid_nonce(nonce: &str) -> bool {
    let hex = (32..=64).contains(&nonce.len()) && nonce.bytes().all(|b| b.is_ascii_hexdigit());
    hex || uuid::Uuid::try_parse(nonce).is_ok_and(|_| nonce.len() == 36)
}

/// Compares a deposit webhook's `Authorization` with the configured value in constant time
/// (both hashed first, so neither the content nor the length leaks through timing). `None`
/// configured: nothing is authorized.
pub fn webhook_authorized(headers: &HeaderMap, expected: Option<&str>) -> bool {
    use sha2::{Digest, Sha256};
    let (Some(expected), Some(given)) = (expected, headers.get(axum::http::header::AUTHORIZATION)) else { return false };
    let (a, b) = (Sha256::digest(expected.as_bytes()), Sha256::digest(given.as_bytes()));
    a.iter().zip(b.iter()).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_webhook_secret_must_match_exactly() {
        let mut headers = HeaderMap::new();
        assert!(!webhook_authorized(&headers, Some("secret")));
        headers.insert("authorization", "secret".parse().unwrap());
        assert!(webhook_authorized(&headers, Some("secret")));
        assert!(!webhook_authorized(&headers, Some("secret2")));
        assert!(!webhook_authorized(&headers, None));
        headers.insert("authorization", "Secret".parse().unwrap());
        assert!(!webhook_authorized(&headers, Some("secret")));
    }
}
