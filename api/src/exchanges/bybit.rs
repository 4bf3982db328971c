//! Bybit v5 linear perpetuals: `/v5/market/funding/history`, `/v5/market/tickers`.

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::client::{ExchangeError, Http, int, rate};
use super::{CurrentFunding, FundingPoint};

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
struct List<T> {
    list: Vec<T>,
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
    Ok(CurrentFunding {
        rate: rate("fundingRate", &ticker.funding_rate)?,
        next_funding_ms: int("nextFundingTime", &ticker.next_funding_time)?,
        interval_hours,
    })
}
