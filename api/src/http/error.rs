//! The API's error type: one variant per contract error code, each with its HTTP status.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::envelope::error_response;
use crate::services::ServiceError;

/// Everything a handler can fail with. Client errors carry a message that says what was wrong;
/// `Internal` carries the cause for the log only, never for the client.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: bad parameters, body, method or header.
    #[error("{0}")]
    InvalidInput(String),
    /// 401: missing or invalid authentication.
    #[error("{0}")]
    Unauthorized(String),
    /// 404: no such resource or route.
    #[error("{0}")]
    NotFound(String),
    /// 422: the market is not open for trading.
    #[error("{0}")]
    MarketClosed(String),
    /// 422: not enough USDC.
    #[error("{0}")]
    InsufficientBalance(String),
    /// 422: an anti-replay nonce was reused or its timestamp is outside the window.
    #[error("{0}")]
    ReplayDetected(String),
    /// 422: the market has no program-derived address on chain yet.
    #[error("{0}")]
    PdaNotFound(String),
    /// 409 `IDEMPOTENCY_KEY_REUSED`: an `Idempotency-Key` already used with another request.
    #[error("{0}")]
    IdempotencyKeyReused(String),
    /// 409 `IDEMPOTENCY_KEY_IN_USE`: the first request with this key is still running.
    #[error("{0}")]
    IdempotencyKeyInUse(String),
    /// 422 `SLIPPAGE_EXCEEDED`: the trade would not meet the caller's `min_shares` /
    /// `min_usdc_out` at the current price (beyond the contract).
    #[error("{0}")]
    SlippageExceeded(String),
    /// 422 `INSUFFICIENT_SHARES`: selling more shares than the position holds (beyond the
    /// contract).
    #[error("{0}")]
    InsufficientShares(String),
    /// 422 with a code of its own, beyond the contract (co-sign and confirm refusals): the request was understood and refused.
    #[error("{message}")]
    Refused { code: &'static str, message: String },
    /// 429: over a rate limit; retry after this many seconds.
    #[error("rate limit exceeded, retry in {retry_after_secs} s")]
    RateLimited { retry_after_secs: u64 },
    /// 429 `RATE_LIMITED` too: a daily budget of the service is spent (the message says which
    /// and what the caller can do instead).
    #[error("{message}")]
    BudgetSpent { retry_after_secs: u64, message: String },
    /// 500: a fault of ours; the cause is logged, the client sees a generic message.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::InvalidInput(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::IdempotencyKeyReused(_) | ApiError::IdempotencyKeyInUse(_) => StatusCode::CONFLICT,
            ApiError::MarketClosed(_)
            | ApiError::SlippageExceeded(_)
            | ApiError::Refused { .. }
            | ApiError::InsufficientShares(_)
            | ApiError::InsufficientBalance(_)
            | ApiError::ReplayDetected(_)
            | ApiError::PdaNotFound(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::RateLimited { .. } | ApiError::BudgetSpent { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The contract's error code.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::InvalidInput(_) => "INVALID_INPUT",
            ApiError::Unauthorized(_) => "UNAUTHORIZED",
            ApiError::NotFound(_) => "NOT_FOUND",
            ApiError::MarketClosed(_) => "MARKET_CLOSED",
            ApiError::InsufficientBalance(_) => "INSUFFICIENT_BALANCE",
            ApiError::ReplayDetected(_) => "REPLAY_DETECTED",
            ApiError::PdaNotFound(_) => "PDA_NOT_FOUND",
            ApiError::IdempotencyKeyReused(_) => "IDEMPOTENCY_KEY_REUSED",
            ApiError::IdempotencyKeyInUse(_) => "IDEMPOTENCY_KEY_IN_USE",
            ApiError::SlippageExceeded(_) => "SLIPPAGE_EXCEEDED",
            ApiError::Refused { code, .. } => code,
            ApiError::InsufficientShares(_) => "INSUFFICIENT_SHARES",
            ApiError::RateLimited { .. } | ApiError::BudgetSpent { .. } => "RATE_LIMITED",
            ApiError::Internal(_) => "INTERNAL_ERROR",
        }
    }

    /// What the client is told: the message, except for our own faults (logged, not shown).
    pub fn public_message(&self) -> String {
        match self {
            ApiError::Internal(cause) => {
                tracing::error!(%cause, "internal error");
                "internal server error".to_owned()
            }
            other => other.to_string(),
        }
    }

    /// Wraps any error as `Internal`, keeping its text for the log.
    pub fn internal(cause: impl std::fmt::Display) -> ApiError {
        ApiError::Internal(cause.to_string())
    }
}

/// The one mapping from what a use case failed with to the contract's status and code.
impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::InvalidInput(m) => ApiError::InvalidInput(m),
            ServiceError::Unauthorized(m) => ApiError::Unauthorized(m),
            ServiceError::NotFound(m) => ApiError::NotFound(m),
            ServiceError::MarketClosed(m) => ApiError::MarketClosed(m),
            ServiceError::InsufficientBalance(m) => ApiError::InsufficientBalance(m),
            ServiceError::InsufficientShares(m) => ApiError::InsufficientShares(m),
            ServiceError::SlippageExceeded(m) => ApiError::SlippageExceeded(m),
            ServiceError::ReplayDetected(m) => ApiError::ReplayDetected(m),
            ServiceError::PdaNotFound(m) => ApiError::PdaNotFound(m),
            ServiceError::IdempotencyKeyReused(m) => ApiError::IdempotencyKeyReused(m),
            ServiceError::IdempotencyKeyInUse(m) => ApiError::IdempotencyKeyInUse(m),
            ServiceError::Refused { code, message } => ApiError::Refused { code, message },
            ServiceError::BudgetSpent { retry_after_secs, message } => ApiError::BudgetSpent { retry_after_secs, message },
            ServiceError::Internal(m) => ApiError::Internal(m),
            // Answered 202 by `http::idempotency`, the one path that sends trades; anywhere
            // else it would be a fault of ours.
            e @ ServiceError::Pending { .. } => ApiError::internal(e),
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        ApiError::internal(format_args!("postgres: {e}"))
    }
}

impl From<redis::RedisError> for ApiError {
    fn from(e: redis::RedisError) -> Self {
        ApiError::internal(format_args!("redis: {e}"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let message = self.public_message();
        let mut response = error_response(self.status(), self.code(), message);
        if let ApiError::RateLimited { retry_after_secs } | ApiError::BudgetSpent { retry_after_secs, .. } = self {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
        }
        response
    }
}
