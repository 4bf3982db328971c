//! Binance USDⓈ-M futures: `/fapi/v1/fundingRate`, `/fapi/v1/premiumIndex`, `/fapi/v1/fundingInfo`,
//! `/futures/data/globalLongShortAccountRatio`, `/fapi/v1/openInterest`.

use std::collections::HashMap;

use serde::Deserialize;

use super::client::{ExchangeError, Http, decimal_scaled, e8_to_cents, fraction_ppm, millis, rate};
use super::{CrowdReading, CurrentFunding, FundingPoint, ListedPerp};

const PAGE: usize = 1000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FundingRow {
    funding_rate: String,
    funding_time: i64,
}

/// A `fundingRate` row asked without a symbol (every contract's).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct VenueFundingRow {
    symbol: String,
    funding_rate: String,
    funding_time: i64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PremiumIndex {
    last_funding_rate: String,
    next_funding_time: i64,
}

/// A row of `premiumIndex` without a symbol (every contract).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IndexRow {
    symbol: String,
    mark_price: String,
    next_funding_time: i64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AccountRatio {
    long_account: String,
    short_account: String,
    timestamp: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OpenInterest {
    open_interest: String,
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
        let query = [("symbol", symbol.to_owned()), ("startTime", from.to_string()), ("endTime", end_ms.to_string()), ("limit", PAGE.to_string())];
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

/// Every contract's settlements in [start_ms, end_ms] from one request (`fundingRate` without a
/// symbol), and whether that is all of them: the venue answers at most `limit` rows from
/// `startTime` on, and rows of one settlement share its time, so a full page cannot be paged.
pub async fn history_of_all(http: &Http, start_ms: i64, end_ms: i64) -> Result<(Vec<(String, FundingPoint)>, bool), ExchangeError> {
    let query = [("startTime", start_ms.to_string()), ("endTime", end_ms.to_string()), ("limit", PAGE.to_string())];
    let rows: Vec<VenueFundingRow> = http.get("/fapi/v1/fundingRate", &query).await?;
    let complete = rows.len() < PAGE;
    let points = rows
        .into_iter()
        .map(|row| Ok((row.symbol, FundingPoint { time_ms: row.funding_time, rate: rate("fundingRate", &row.funding_rate)? })))
        .collect::<Result<_, ExchangeError>>()?;
    Ok((points, complete))
}

pub async fn current(http: &Http, symbol: &str) -> Result<CurrentFunding, ExchangeError> {
    let index: PremiumIndex = http.get("/fapi/v1/premiumIndex", &[("symbol", symbol.to_owned())]).await?;
    // Only symbols whose interval was adjusted are listed; the rest settle every 8 hours.
    let adjusted: Vec<FundingInfo> = http.get("/fapi/v1/fundingInfo", &[]).await?;
    let interval_hours = adjusted.iter().find(|i| i.symbol == symbol).map_or(8, |i| i.funding_interval_hours);
    Ok(CurrentFunding { rate: rate("lastFundingRate", &index.last_funding_rate)?, next_funding_ms: index.next_funding_time, interval_hours })
}

/// Every perpetual (`premiumIndex` lists delivery contracts too: `BTCUSDT_251226`, and those
/// with no funding time), with the interval from `fundingInfo`.
pub async fn listing(http: &Http) -> Result<Vec<ListedPerp>, ExchangeError> {
    let rows: Vec<IndexRow> = http.get("/fapi/v1/premiumIndex", &[]).await?;
    let adjusted: Vec<FundingInfo> = http.get("/fapi/v1/fundingInfo", &[]).await?;
    let hours: HashMap<&str, u32> = adjusted.iter().map(|i| (i.symbol.as_str(), i.funding_interval_hours)).collect();
    rows.iter()
        .filter(|r| !r.symbol.contains('_') && r.next_funding_time > 0)
        .map(|r| {
            Ok(ListedPerp {
                symbol: r.symbol.clone(),
                interval_minutes: hours.get(r.symbol.as_str()).copied().unwrap_or(8) * 60,
                mark_price_e8: Some(decimal_scaled("markPrice", &r.mark_price, 8)? as i64),
                open_interest_cents: None,
            })
        })
        .collect()
}

/// The latest 5-minute global account ratio, and open interest (contracts × the listing's
/// mark price).
pub async fn crowd(http: &Http, perp: &ListedPerp) -> Result<Option<CrowdReading>, ExchangeError> {
    let query = [("symbol", perp.symbol.clone()), ("period", "5m".to_owned()), ("limit", "1".to_owned())];
    let rows: Vec<AccountRatio> = http.get("/futures/data/globalLongShortAccountRatio", &query).await?;
    let Some(latest) = rows.last() else { return Ok(None) };
    let open_interest_cents = match perp.mark_price_e8 {
        Some(mark) => {
            let oi: OpenInterest = http.get("/fapi/v1/openInterest", &[("symbol", perp.symbol.clone())]).await?;
            e8_to_cents(decimal_scaled("openInterest", &oi.open_interest, 8)? * mark as i128 / 100_000_000)
        }
        None => None,
    };
    Ok(Some(CrowdReading {
        long_ppm: fraction_ppm("longAccount", &latest.long_account)?,
        short_ppm: fraction_ppm("shortAccount", &latest.short_account)?,
        timestamp_ms: millis("timestamp", &latest.timestamp)?,
        open_interest_cents,
    }))
}
