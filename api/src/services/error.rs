//! What a use case can fail with, in the domain's words. The HTTP layer gives each its status
//! and contract code (`http::error`, one `From<ServiceError> for ApiError`); workers log them.

use crate::chain::{OnChainError, Refusal};

#[derive(Clone, Debug, thiserror::Error)]
pub enum ServiceError {
    /// The request is malformed or out of range.
    #[error("{0}")]
    InvalidInput(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    NotFound(String),
    /// The market is not open for trading.
    #[error("{0}")]
    MarketClosed(String),
    #[error("{0}")]
    InsufficientBalance(String),
    #[error("{0}")]
    InsufficientShares(String),
    /// The price moved past the caller's bound.
    #[error("{0}")]
    SlippageExceeded(String),
    /// An anti-replay nonce reused, or its timestamp outside the window.
    #[error("{0}")]
    ReplayDetected(String),
    /// The market has no program account yet.
    #[error("{0}")]
    PdaNotFound(String),
    #[error("{0}")]
    IdempotencyKeyReused(String),
    #[error("{0}")]
    IdempotencyKeyInUse(String),
    /// Understood and refused, with a code of its own (co-sign and confirm refusals).
    #[error("{message}")]
    Refused { code: &'static str, message: String },
    /// A budget the service keeps (per day) is spent; retry after this many seconds.
    #[error("{message}")]
    BudgetSpent { retry_after_secs: u64, message: String },
    /// A transaction was sent and not confirmed within the time the answer may take
    /// (`Services::answer_within`): it may execute yet. Not a failure — the request's
    /// `Idempotency-Key` answers the outcome once the chain has it.
    #[error("transaction {signature} was sent and is not confirmed yet")]
    Pending { signature: String },
    /// A fault of ours; the text is for the log only.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ServiceError {
    pub fn internal(cause: impl std::fmt::Display) -> ServiceError {
        ServiceError::Internal(cause.to_string())
    }

    pub fn refused(code: &'static str, message: impl Into<String>) -> ServiceError {
        ServiceError::Refused { code, message: message.into() }
    }
}

impl From<sqlx::Error> for ServiceError {
    fn from(e: sqlx::Error) -> Self {
        ServiceError::internal(format_args!("postgres: {e}"))
    }
}

impl From<redis::RedisError> for ServiceError {
    fn from(e: redis::RedisError) -> Self {
        ServiceError::internal(format_args!("redis: {e}"))
    }
}

/// The one mapping of chain refusals to what the caller is told, for every path that sends or
/// confirms a transaction.
impl From<Refusal> for ServiceError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::InsufficientBalance => ServiceError::InsufficientBalance("not enough USDC for the amount and the fee".into()),
            Refusal::InsufficientShares => ServiceError::InsufficientShares("the position holds fewer shares".into()),
            Refusal::MarketClosed => ServiceError::MarketClosed("the market is not open for trading".into()),
            Refusal::Slippage => ServiceError::SlippageExceeded("the price moved past the bound given".into()),
            Refusal::TooSmall => ServiceError::InvalidInput("the trade is below the minimum or buys no shares".into()),
            Refusal::TooLarge => ServiceError::InvalidInput("the trade is larger than the market can take".into()),
            Refusal::BelowMinimumDeposit => ServiceError::InvalidInput("the deposit is below the minimum".into()),
            Refusal::AlreadyExists => ServiceError::internal("an account the transaction creates exists already"),
        }
    }
}

impl From<OnChainError> for ServiceError {
    fn from(e: OnChainError) -> Self {
        match e {
            OnChainError::Refused(r) => r.into(),
            OnChainError::NoFaucet => ServiceError::NotFound("the faucet exists only on the embedded chain".into()),
            OnChainError::BadDestination(why) => ServiceError::InvalidInput(why.to_string()),
            other => ServiceError::internal(other),
        }
    }
}

impl From<chain_client::ChainError> for ServiceError {
    fn from(e: chain_client::ChainError) -> Self {
        crate::chain::refused(e).into()
    }
}
