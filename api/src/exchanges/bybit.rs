//! Bybit v5 linear perpetuals: `/v5/market/funding/history`, `/v5/market/tickers`,
//! `/v5/market/instruments-info`, `/v5/market/account-ratio`.

use std::collections::HashMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::client::{ExchangeError, Http, decimal_scaled, fraction_ppm, int, rate};
use super::{CrowdReading, CurrentFunding, FundingPoint, ListedPerp};

/// Instruments a page (the most Bybit allows).
const INSTRUMENTS_PAGE: usize = 1000;

const PAGE: usize = 200;

/// Bybit's envelope. `result` is `{}` on errors, so it is parsed only once `retCode` is 0.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    ret_code: i64,
    ret_msg: String,
    #[serde(default)]
    result: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct List<T> {
    list: Vec<T>,
    /// The next page's cursor; empty (or absent) on the last page.
    #[serde(default)]
    next_page_cursor: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Instrument {
    symbol: String,
    contract_type: String,
    status: String,
    /// Minutes between settlements.
    funding_interval: u32,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TickerValue {
    symbol: String,
    #[serde(default)]
    open_interest_value: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AccountRatio {
    buy_ratio: String,
    sell_ratio: String,
    timestamp: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FundingRow {
    funding_rate: String,
    funding_rate_timestamp: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Ticker {
    funding_rate: String,
    next_funding_time: String,
    funding_interval_hour: Option<String>,
}

async fn get<T: DeserializeOwned>(http: &Http, path: &str, query: &[(&str, String)]) -> Result<List<T>, ExchangeError> {
    let envelope: Envelope = http.get(path, query).await?;
    if envelope.ret_code != 0 {
        return Err(ExchangeError::Api { code: envelope.ret_code.to_string(), message: envelope.ret_msg });
    }
    serde_json::from_value(envelope.result).map_err(|e| ExchangeError::Format(format!("result: {e}")))
}

/// Newest first, 200 a page: pages walk backwards by moving `endTime` below the oldest row.
pub async fn history(http: &Http, symbol: &str, start_ms: i64, end_ms: i64) -> Result<Vec<FundingPoint>, ExchangeError> {
    let mut points = Vec::new();
    let mut to = end_ms;
    loop {
        let query = [
            ("category", "linear".to_owned()),
            ("symbol", symbol.to_owned()),
            ("startTime", start_ms.to_string()),
            ("endTime", to.to_string()),
            ("limit", PAGE.to_string()),
        ];
        let page: List<FundingRow> = get(http, "/v5/market/funding/history", &query).await?;
        let full = page.list.len() == PAGE;
        for row in page.list {
            let time_ms = int("fundingRateTimestamp", &row.funding_rate_timestamp)?;
            points.push(FundingPoint { time_ms, rate: rate("fundingRate", &row.funding_rate)? });
        }
        match points.iter().map(|p| p.time_ms).min() {
            Some(oldest) if full && oldest > start_ms => to = oldest - 1,
            _ => return Ok(points),
        }
    }
}

pub async fn current(http: &Http, symbol: &str) -> Result<CurrentFunding, ExchangeError> {
    let query = [("category", "linear".to_owned()), ("symbol", symbol.to_owned())];
    let page: List<Ticker> = get(http, "/v5/market/tickers", &query).await?;
    let ticker = page.list.into_iter().next().ok_or_else(|| ExchangeError::UnknownSymbol(symbol.to_owned()))?;
    let interval_hours = match ticker.funding_interval_hour {
        Some(h) => int("fundingIntervalHour", &h)? as u32,
        None => 8,
    };
    Ok(CurrentFunding { rate: rate("fundingRate", &ticker.funding_rate)?, next_funding_ms: int("nextFundingTime", &ticker.next_funding_time)?, interval_hours })
}

/// The linear perpetuals trading now (`instruments-info` also lists dated futures and
/// instruments being listed or settled), through every page, with open interest from the
/// tickers (`openInterestValue`, USD).
pub async fn listing(http: &Http) -> Result<Vec<ListedPerp>, ExchangeError> {
    let mut instruments = Vec::new();
    let mut cursor = String::new();
    loop {
        let mut query = vec![("category", "linear".to_owned()), ("limit", INSTRUMENTS_PAGE.to_string())];
        if !cursor.is_empty() {
            query.push(("cursor", cursor.clone()));
        }
        let page: List<Instrument> = get(http, "/v5/market/instruments-info", &query).await?;
        instruments.extend(page.list.into_iter().filter(|i| i.contract_type == "LinearPerpetual" && i.status == "Trading"));
        match page.next_page_cursor.is_empty() || page.next_page_cursor == cursor {
            true => break,
            false => cursor = page.next_page_cursor,
        }
    }
    let tickers: List<TickerValue> = get(http, "/v5/market/tickers", &[("category", "linear".to_owned())]).await?;
    let mut value = HashMap::new();
    for t in &tickers.list {
        if !t.open_interest_value.is_empty() {
            value.insert(t.symbol.as_str(), i64::try_from(decimal_scaled("openInterestValue", &t.open_interest_value, 2)?).ok());
        }
    }
    Ok(instruments
        .into_iter()
        .map(|i| ListedPerp {
            open_interest_cents: value.get(i.symbol.as_str()).copied().flatten(),
            symbol: i.symbol,
            interval_minutes: i.funding_interval,
            mark_price_e8: None,
        })
        .collect())
}

/// The latest 5-minute account ratio (`buyRatio` = share of accounts long).
pub async fn crowd(http: &Http, perp: &ListedPerp) -> Result<Option<CrowdReading>, ExchangeError> {
    let query = [("category", "linear".to_owned()), ("symbol", perp.symbol.clone()), ("period", "5min".to_owned()), ("limit", "1".to_owned())];
    let page: List<AccountRatio> = get(http, "/v5/market/account-ratio", &query).await?;
    let Some(latest) = page.list.first() else { return Ok(None) };
    Ok(Some(CrowdReading {
        long_ppm: fraction_ppm("buyRatio", &latest.buy_ratio)?,
        short_ppm: fraction_ppm("sellRatio", &latest.sell_ratio)?,
        timestamp_ms: int("timestamp", &latest.timestamp)?,
        open_interest_cents: perp.open_interest_cents,
    }))
}
