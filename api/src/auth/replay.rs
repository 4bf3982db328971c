//! Anti-replay for endpoints marked Replay: `X-Request-Nonce` used once, `X-Request-Timestamp`
//! within ±300 s. Nonces live in Redis so every replica sees them.

use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::request::Parts;

use crate::{ApiError, AppState};

pub const NONCE_HEADER: &str = "x-request-nonce";
pub const TIMESTAMP_HEADER: &str = "x-request-timestamp";
/// Accepted clock skew either way, seconds.
pub const WINDOW_SECS: i64 = 300;

/// Proof that the request carried a fresh, never-seen nonce. Missing or malformed headers are
/// 400 `INVALID_INPUT`; a reused nonce or a timestamp outside the window 422 `REPLAY_DETECTED`.
pub struct ReplayChecked;

impl FromRequestParts<AppState> for ReplayChecked {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let nonce = check_headers(&parts.headers, chrono::Utc::now().timestamp())?;
        // Remembered for twice the window: a nonce can never be replayed while its timestamp
        // could still pass. Lower-cased so hex case variants are the same nonce.
        let key = format!("{}:replay:{}", state.config.redis_namespace, nonce.to_ascii_lowercase());
        let mut conn = state.redis.connection().await?;
        let fresh: Option<String> = redis::cmd("SET")
            .arg(&key)
            .arg(1)
            .arg("NX")
            .arg("EX")
            .arg(2 * WINDOW_SECS)
            .query_async(&mut conn)
            .await?;
        match fresh {
            Some(_) => Ok(ReplayChecked),
            None => Err(ApiError::ReplayDetected("X-Request-Nonce was already used".into())),
        }
    }
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
    let ts: i64 = timestamp
        .parse()
        .map_err(|_| ApiError::InvalidInput(format!("{TIMESTAMP_HEADER} must be Unix seconds")))?;
    if (now - ts).abs() > WINDOW_SECS {
        return Err(ApiError::ReplayDetected(format!(
            "{TIMESTAMP_HEADER} is {} s from the server clock (allowed ±{WINDOW_SECS} s)",
            now - ts
        )));
    }
    Ok(nonce)
}

fn is_valid_nonce(nonce: &str) -> bool {
    let hex = (32..=64).contains(&nonce.len()) && nonce.bytes().all(|b| b.is_ascii_hexdigit());
    hex || uuid::Uuid::try_parse(nonce).is_ok_and(|_| nonce.len() == 36)
}
