//! How a chain call fails, the same for the RPC chain and the embedded chain. A transaction's
//! failure is Solana's own `TransactionError`, decoded once here (from a preflight refusal or a
//! landed transaction's status), so callers match on types, never on JSON.

use solana_rpc_client_api::client_error::{Error as ClientError, ErrorKind};
use solana_rpc_client_api::request::{RpcError, RpcResponseErrorData};
use solana_rpc_client_api::response::RpcSimulateTransactionResult;
use solana_transaction_error::TransactionError;

#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    #[error("transport error: {0}")]
    Transport(String),
    #[error("HTTP {0}")]
    Http(u16),
    #[error("rate limited by the RPC node")]
    RateLimited,
    /// The node answered with a JSON-RPC error object. `err` is the transaction error of a
    /// refused `sendTransaction` (code -32002, preflight failure): the transaction never landed;
    /// `preflight` is the node's report of that failed simulation (its `data`: the program's
    /// logs, the compute units it used, its fee).
    #[error("RPC error {code}: {message}")]
    Rpc { code: i64, message: String, err: Option<TransactionError>, preflight: Option<Box<RpcSimulateTransactionResult>> },
    #[error("unexpected response: {0}")]
    Format(String),
    /// The transaction landed (and paid its fee) but failed.
    #[error("transaction {signature} failed: {err}")]
    TransactionFailed { signature: String, err: TransactionError },
    #[error("transaction {0} was not confirmed in time")]
    NotConfirmed(String),
}

impl ChainError {
    /// The transaction error a failure carries: a preflight refusal or a landed failure.
    pub fn transaction_error(&self) -> Option<&TransactionError> {
        match self {
            ChainError::Rpc { err, .. } => err.as_ref(),
            ChainError::TransactionFailed { err, .. } => Some(err),
            _ => None,
        }
    }

    /// A request parameter the node would refuse (JSON-RPC "invalid params").
    pub fn invalid_params(message: impl Into<String>) -> ChainError {
        ChainError::Rpc { code: -32602, message: message.into(), err: None, preflight: None }
    }
}

impl From<&http_retry::Failure> for ChainError {
    fn from(f: &http_retry::Failure) -> Self {
        match f {
            http_retry::Failure::Transport(e) => ChainError::Transport(e.to_string()),
            http_retry::Failure::RateLimited => ChainError::RateLimited,
            http_retry::Failure::Status { status, .. } => ChainError::Http(*status),
        }
    }
}

impl From<ClientError> for ChainError {
    fn from(e: ClientError) -> Self {
        match *e.kind {
            // What the sender's retry policy gave up on travels as an I/O error's payload.
            ErrorKind::Io(io) => match io.get_ref().and_then(|inner| inner.downcast_ref::<http_retry::Failure>()) {
                Some(failure) => failure.into(),
                None => ChainError::Transport(io.to_string()),
            },
            ErrorKind::Reqwest(e) => ChainError::Transport(e.to_string()),
            ErrorKind::RpcError(RpcError::RpcResponseError { code, message, data }) => {
                let (err, preflight) = match data {
                    RpcResponseErrorData::SendTransactionPreflightFailure(result) => (result.err.clone().map(TransactionError::from), Some(Box::new(result))),
                    _ => (None, None),
                };
                ChainError::Rpc { code, message, err, preflight }
            }
            ErrorKind::TransactionError(err) => ChainError::Format(format!("transaction error without a signature: {err}")),
            other => ChainError::Format(other.to_string()),
        }
    }
}
