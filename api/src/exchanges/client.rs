//! JSON over HTTP with timeouts, and retries with exponential backoff on transport errors, 5xx
//! and 429 (honouring `Retry-After`, capped), so a venue's brief trouble is absorbed here.

use std::time::Duration;

use serde::de::DeserializeOwned;

/// Attempts per request (the first plus retries).
const ATTEMPTS: u32 = 4;
const BACKOFF: Duration = Duration::from_millis(200);
/// The longest `Retry-After` we wait inside one call; beyond it the caller gets `RateLimited`.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    #[error("transport error: {0}")]
    Transport(String),
    #[error("HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("rate limited by the exchange")]
    RateLimited,
    #[error("exchange error {code}: {message}")]
    Api { code: String, message: String },
    #[error("unexpected response: {0}")]
    Format(String),
    #[error("unknown symbol {0}")]
    UnknownSymbol(String),
}

#[derive(Clone)]
pub struct Http {
    base: String,
    client: reqwest::Client,
}

impl Http {
    pub fn new(base: &str, timeout: Duration) -> Http {
        let client = reqwest::Client::builder().timeout(timeout).build().expect("a plain reqwest client builds");
        Http { base: base.trim_end_matches('/').to_owned(), client }
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str, query: &[(&str, String)]) -> Result<T, ExchangeError> {
        self.send(|| self.client.get(format!("{}{path}", self.base)).query(query)).await
    }

    pub async fn post<T: DeserializeOwned>(&self, path: &str, body: &serde_json::Value) -> Result<T, ExchangeError> {
        self.send(|| self.client.post(format!("{}{path}", self.base)).json(body)).await
    }

    async fn send<T: DeserializeOwned>(&self, request: impl Fn() -> reqwest::RequestBuilder) -> Result<T, ExchangeError> {
        let mut last = ExchangeError::Transport("no attempt".into());
        for attempt in 0..ATTEMPTS {
            let mut wait = BACKOFF * 2u32.pow(attempt);
            match request().send().await {
                Err(e) => last = ExchangeError::Transport(e.to_string()),
                Ok(response) if response.status().as_u16() == 429 => {
                    let retry_after = response
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<u64>().ok())
                        .map(Duration::from_secs);
                    if let Some(after) = retry_after {
                        if after > MAX_RETRY_AFTER {
                            return Err(ExchangeError::RateLimited);
                        }
                        wait = after;
                    }
                    last = ExchangeError::RateLimited;
                }
                Ok(response) if response.status().is_server_error() => {
                    let status = response.status().as_u16();
                    last = ExchangeError::Status { status, body: response.text().await.unwrap_or_default() };
                }
                Ok(response) if !response.status().is_success() => {
                    let status = response.status().as_u16();
                    return Err(ExchangeError::Status { status, body: response.text().await.unwrap_or_default() });
                }
                Ok(response) => {
                    let bytes = response.bytes().await.map_err(|e| ExchangeError::Transport(e.to_string()))?;
                    return serde_json::from_slice(&bytes).map_err(|e| ExchangeError::Format(e.to_string()));
                }
            }
            if attempt + 1 < ATTEMPTS {
                tracing::debug!(attempt, error = %last, "exchange request failed, retrying");
                tokio::time::sleep(wait).await;
            }
        }
        Err(last)
    }
}

/// Parses a decimal-string field or fails with the field's name.
pub fn rate(field: &str, value: &str) -> Result<crate::domain::rate::FundingRate, ExchangeError> {
    crate::domain::rate::FundingRate::parse(value).map_err(|e| ExchangeError::Format(format!("{field}: {e}")))
}

/// Parses an integer carried as a string (Bybit and OKX send milliseconds as strings).
pub fn int(field: &str, value: &str) -> Result<i64, ExchangeError> {
    value.parse().map_err(|_| ExchangeError::Format(format!("{field}: not an integer: {value:?}")))
}
