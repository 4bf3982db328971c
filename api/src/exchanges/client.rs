//! JSON over HTTP with timeouts, retried by the service's one policy (`http_retry`):
//! transport errors, 5xx and 429 (honouring a short `Retry-After`) are absorbed here, so a
//! venue's brief trouble never reaches the collector.

use std::time::Duration;

use serde::de::DeserializeOwned;

/// Four attempts 200 ms, 400 ms, 800 ms apart; a `Retry-After` past 10 s is not waited.
const RETRY: http_retry::Policy =
    http_retry::Policy { attempts: 4, first_backoff: Duration::from_millis(200), max_retry_after: Duration::from_secs(10) };

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
    /// The venue has not published what was asked (yet, or any more): the oracle asks again.
    #[error("not published: {0}")]
    NotPublished(String),
}

impl From<http_retry::Failure> for ExchangeError {
    fn from(f: http_retry::Failure) -> Self {
        match f {
            http_retry::Failure::Transport(e) => ExchangeError::Transport(e.to_string()),
            http_retry::Failure::RateLimited => ExchangeError::RateLimited,
            http_retry::Failure::Status { status, body } => ExchangeError::Status { status, body },
        }
    }
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

    pub fn base(&self) -> &str {
        &self.base
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str, query: &[(&str, String)]) -> Result<T, ExchangeError> {
        self.send(|| self.client.get(format!("{}{path}", self.base)).query(query)).await
    }

    pub async fn post<T: DeserializeOwned>(&self, path: &str, body: &serde_json::Value) -> Result<T, ExchangeError> {
        self.send(|| self.client.post(format!("{}{path}", self.base)).json(body)).await
    }

    async fn send<T: DeserializeOwned>(&self, request: impl Fn() -> reqwest::RequestBuilder) -> Result<T, ExchangeError> {
        let response = RETRY.send(request).await?;
        let bytes = response.bytes().await.map_err(|e| ExchangeError::Transport(e.to_string()))?;
        serde_json::from_slice(&bytes).map_err(|e| ExchangeError::Format(e.to_string()))
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
