//! OKX v5 perpetual swaps: `/api/v5/public/funding-rate`, `/api/v5/public/funding-rate-history`.

use serde::Deserialize;

use super::client::{ExchangeError, Http, int, rate};
use super::{CurrentFunding, FundingPoint, split_symbol};

const PAGE: usize = 100;

#[derive(Deserialize)]
struct Envelope<T> {
    code: String,
    msg: String,
    data: Vec<T>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HistoryRow {
    funding_rate: String,
    #[serde(default)]
    realized_rate: String,
    funding_time: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Current {
    funding_rate: String,
    funding_time: String,
    next_funding_time: String,
}

/// `BTCUSDT` → `BTC-USDT-SWAP`.
fn inst_id(symbol: &str) -> Result<String, ExchangeError> {
    let (base, quote) = split_symbol(symbol).ok_or_else(|| ExchangeError::UnknownSymbol(symbol.to_owned()))?;
    Ok(format!("{base}-{quote}-SWAP"))
}

async fn get<T: for<'de> Deserialize<'de>>(http: &Http, path: &str, query: &[(&str, String)]) -> Result<Vec<T>, ExchangeError> {
    let envelope: Envelope<T> = http.get(path, query).await?;
    if envelope.code != "0" {
        return Err(ExchangeError::Api { code: envelope.code, message: envelope.msg });
    }
    Ok(envelope.data)
}

/// Newest first, 100 a page; `after` asks for rows older than a funding time.
pub async fn history(http: &Http, symbol: &str, start_ms: i64, end_ms: i64) -> Result<Vec<FundingPoint>, ExchangeError> {
    let inst = inst_id(symbol)?;
    let mut points = Vec::new();
    let mut after = end_ms + 1;
    loop {
        let query = [("instId", inst.clone()), ("after", after.to_string()), ("limit", PAGE.to_string())];
        let rows: Vec<HistoryRow> = get(http, "/api/v5/public/funding-rate-history", &query).await?;
        let full = rows.len() == PAGE;
        for row in rows {
            // The realized rate is what was charged; fall back to the announced one.
            let settled = if row.realized_rate.is_empty() { &row.funding_rate } else { &row.realized_rate };
            points.push(FundingPoint { time_ms: int("fundingTime", &row.funding_time)?, rate: rate("realizedRate", settled)? });
        }
        match points.iter().map(|p| p.time_ms).min() {
            Some(oldest) if full && oldest > start_ms => after = oldest,
            _ => return Ok(points),
        }
    }
}

/// OKX's `fundingTime` is the settlement the current `fundingRate` applies to; the interval is
/// the gap to `nextFundingTime`.
pub async fn current(http: &Http, symbol: &str) -> Result<CurrentFunding, ExchangeError> {
    let rows: Vec<Current> = get(http, "/api/v5/public/funding-rate", &[("instId", inst_id(symbol)?)]).await?;
    let row = rows.into_iter().next().ok_or_else(|| ExchangeError::UnknownSymbol(symbol.to_owned()))?;
    let funding = int("fundingTime", &row.funding_time)?;
    let next = int("nextFundingTime", &row.next_funding_time)?;
    Ok(CurrentFunding {
        rate: rate("fundingRate", &row.funding_rate)?,
        next_funding_ms: funding,
        interval_hours: ((next - funding) / 3_600_000).max(1) as u32,
    })
}
