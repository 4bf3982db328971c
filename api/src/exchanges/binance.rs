//! Binance USDⓈ-M futures: `/fapi/v1/fundingRate`, `/fapi/v1/premiumIndex`, `/fapi/v1/fundingInfo`.

use serde::Deserialize;

use super::client::{ExchangeError, Http, rate};
use super::{CurrentFunding, FundingPoint};

const PAGE: usize = 1000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FundingRow {
    funding_rate: String,
    funding_time: i64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PremiumIndex {
    last_funding_rate: String,
    next_funding_time: i64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FundingInfo {
    symbol: String,
    funding_interval_hours: u32,
}

pub async fn history(http: &Http, symbol: &str, start_ms: i64, end_ms: i64) -> Result<Vec<FundingPoint>, ExchangeError> {
    let mut points = Vec::new();
    let mut from = start_ms;
    loop {
        let query = [
            ("symbol", symbol.to_owned()),
            ("startTime", from.to_string()),
            ("endTime", end_ms.to_string()),
            ("limit", PAGE.to_string()),
        ];
        let rows: Vec<FundingRow> = http.get("/fapi/v1/fundingRate", &query).await?;
        let full = rows.len() == PAGE;
        for row in rows {
            points.push(FundingPoint { time_ms: row.funding_time, rate: rate("fundingRate", &row.funding_rate)? });
        }
        match points.last() {
            Some(last) if full => from = last.time_ms + 1,
            _ => return Ok(points),
        }
    }
}

pub async fn current(http: &Http, symbol: &str) -> Result<CurrentFunding, ExchangeError> {
    let index: PremiumIndex = http.get("/fapi/v1/premiumIndex", &[("symbol", symbol.to_owned())]).await?;
    // Only symbols whose interval was adjusted are listed; the rest settle every 8 hours.
    let adjusted: Vec<FundingInfo> = http.get("/fapi/v1/fundingInfo", &[]).await?;
    let interval_hours = adjusted.iter().find(|i| i.symbol == symbol).map_or(8, |i| i.funding_interval_hours);
    Ok(CurrentFunding {
        rate: rate("lastFundingRate", &index.last_funding_rate)?,
        next_funding_ms: index.next_funding_time,
        interval_hours,
    })
}
