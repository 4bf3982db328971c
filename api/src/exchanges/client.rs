//! JSON over HTTP with timeouts, retried by the service's one policy (`http_retry`):
//! transport errors, 5xx and 429 (honouring a short `Retry-After`) are absorbed here, so a
//! venue's brief trouble never reaches the collector.

use std::time::Duration;

use serde::de::DeserializeOwned;

/// Four attempts 200 ms, 400 ms, 800 ms apart; a `Retry-After` past 10 s is not waited.
const RETRY: http_retry::Policy = http_retry::Policy { attempts: 4, first_backoff: Duration::from_millis(200), max_retry_after: Duration::from_secs(10) };

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
    /// The host's published budgets, kept by every request (`None`: unpaced, the simulator).
    pacer: Option<std::sync::Arc<super::limits::Pacer>>,
}

impl Http {
    pub fn new(base: &str, timeout: Duration) -> Http {
        let client = reqwest::Client::builder().timeout(timeout).build().expect("a plain reqwest client builds");
        Http { base: base.trim_end_matches('/').to_owned(), client, pacer: None }
    }

    /// The same host, every request paced by `pacer`.
    pub fn paced(self, pacer: super::limits::Pacer) -> Http {
        Http { pacer: Some(std::sync::Arc::new(pacer)), ..self }
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str, query: &[(&str, String)]) -> Result<T, ExchangeError> {
        self.pace(path).await;
        self.send(|| self.client.get(format!("{}{path}", self.base)).query(query)).await
    }

    pub async fn post<T: DeserializeOwned>(&self, path: &str, body: &serde_json::Value) -> Result<T, ExchangeError> {
        self.pace(path).await;
        self.send(|| self.client.post(format!("{}{path}", self.base)).json(body)).await
    }

    async fn pace(&self, path: &str) {
        if let Some(pacer) = &self.pacer {
            pacer.wait(path).await;
        }
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

/// Parses a fraction in [0, 1] carried as a decimal string (`"0.6617"`) into millionths,
/// rounded half up past the sixth decimal.
pub fn fraction_ppm(field: &str, value: &str) -> Result<u32, ExchangeError> {
    let e6 = decimal_scaled(field, value, 6)?;
    u32::try_from(e6).ok().filter(|ppm| *ppm <= 1_000_000).ok_or_else(|| ExchangeError::Format(format!("{field}: not a fraction: {value:?}")))
}

/// A non-negative decimal string as an integer in units of 10^-`places`, rounded half up.
pub fn decimal_scaled(field: &str, value: &str, places: u32) -> Result<i128, ExchangeError> {
    let bad = || ExchangeError::Format(format!("{field}: not a non-negative decimal: {value:?}"));
    let (whole, frac) = value.split_once('.').unwrap_or((value, ""));
    if whole.is_empty() && frac.is_empty() || !whole.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) || whole.len() > 24 {
        return Err(bad());
    }
    let whole: i128 = if whole.is_empty() { 0 } else { whole.parse().map_err(|_| bad())? };
    let mut scaled = whole * 10i128.pow(places);
    for (i, digit) in frac.bytes().take(places as usize + 1).enumerate() {
        let d = (digit - b'0') as i128;
        match (i as u32).cmp(&places) {
            std::cmp::Ordering::Less => scaled += d * 10i128.pow(places - 1 - i as u32),
            _ => scaled += (d >= 5) as i128,
        }
    }
    Ok(scaled)
}

/// Milliseconds carried as a number or a string (Binance's statistics send either).
pub fn millis(field: &str, value: &serde_json::Value) -> Result<i64, ExchangeError> {
    match value {
        serde_json::Value::Number(n) => n.as_i64().ok_or_else(|| ExchangeError::Format(format!("{field}: not an integer: {n}"))),
        serde_json::Value::String(s) => int(field, s),
        other => Err(ExchangeError::Format(format!("{field}: not a time: {other}"))),
    }
}

/// A USD amount in 1e-8 → cents (truncated: open interest is shown, never paid).
pub fn e8_to_cents(e8: i128) -> Option<i64> {
    i64::try_from(e8 / 1_000_000).ok()
}

/// Parses an integer carried as a string (Bybit and OKX send milliseconds as strings).
pub fn int(field: &str, value: &str) -> Result<i64, ExchangeError> {
    value.parse().map_err(|_| ExchangeError::Format(format!("{field}: not an integer: {value:?}")))
}
