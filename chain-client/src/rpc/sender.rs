//! The transport under `solana-rpc-client`'s `RpcClient`: JSON-RPC over HTTP with the
//! service's one retry policy (`http_retry`) in place of the stock `HttpSender`'s, whose
//! fixed five 429-retries wait up to two minutes and never retry a 5xx.
//!
//! A JSON-RPC error object is decoded as the stock sender decodes it (a preflight failure's
//! data into `RpcSimulateTransactionResult`), so `RpcClient` callers see the same errors.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::Value;
use solana_rpc_client::rpc_sender::{RpcSender, RpcTransportStats};
use solana_rpc_client_api::client_error::{ErrorKind, Result as ClientResult};
use solana_rpc_client_api::custom_error::JSON_RPC_SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE;
use solana_rpc_client_api::error_object::RpcErrorObject;
use solana_rpc_client_api::request::{RpcError, RpcRequest, RpcResponseErrorData};
use solana_rpc_client_api::response::RpcSimulateTransactionResult;

/// Five attempts 200 ms, 400 ms, 800 ms, 1.6 s apart; a `Retry-After` past 10 s is not waited.
const RETRY: http_retry::Policy = http_retry::Policy { attempts: 5, first_backoff: Duration::from_millis(200), max_retry_after: Duration::from_secs(10) };

pub struct RetryingSender {
    url: String,
    http: reqwest::Client,
    next_id: AtomicU64,
    stats: Mutex<RpcTransportStats>,
}

impl RetryingSender {
    pub fn new(url: &str, timeout: Duration) -> RetryingSender {
        let http = reqwest::Client::builder().timeout(timeout).build().expect("a plain reqwest client builds");
        RetryingSender { url: url.to_owned(), http, next_id: AtomicU64::new(1), stats: Mutex::new(RpcTransportStats::default()) }
    }
}

#[async_trait]
impl RpcSender for RetryingSender {
    async fn send(&self, request: RpcRequest, params: Value) -> ClientResult<Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = request.build_request_json(id, params).to_string();
        let started = Instant::now();
        let sent = RETRY.send(|| self.http.post(&self.url).header(reqwest::header::CONTENT_TYPE, "application/json").body(body.clone())).await;
        {
            let mut stats = self.stats.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            stats.request_count += 1;
            stats.elapsed_time += started.elapsed();
        }
        // The policy's verdict travels as an I/O error's payload; `ChainError` unwraps it.
        let response = sent.map_err(|failure| ErrorKind::Io(std::io::Error::other(failure)))?;
        let mut json: Value = response.json().await.map_err(ErrorKind::Reqwest)?;
        if json["error"].is_object() {
            return Err(response_error(json["error"].take()).into());
        }
        Ok(json["result"].take())
    }

    fn get_transport_stats(&self) -> RpcTransportStats {
        self.stats.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    fn url(&self) -> String {
        self.url.clone()
    }
}

/// A JSON-RPC error object, typed.
fn response_error(mut error: Value) -> RpcError {
    match serde_json::from_value::<RpcErrorObject>(error.clone()) {
        Ok(RpcErrorObject { code, message }) => {
            let data = match code {
                JSON_RPC_SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE => serde_json::from_value::<RpcSimulateTransactionResult>(error["data"].take())
                    .map_or(RpcResponseErrorData::Empty, RpcResponseErrorData::SendTransactionPreflightFailure),
                _ => RpcResponseErrorData::Empty,
            };
            RpcError::RpcResponseError { code, message, data }
        }
        Err(e) => RpcError::RpcRequestError(format!("undecodable RPC error object {error}: {e}")),
    }
}
