//! Hyperliquid: `POST /info` with `fundingHistory` and `metaAndAssetCtxs`. Funding settles
//! every hour.

use serde::Deserialize;
use serde_json::json;

use super::http::{ExchangeError, Http, rate};
use super::{CurrentFunding, FundingPoint, split_symbol};

/// Rows per `fundingHistory` answer; a full page means there may be more.
const PAGE: usize = 500;
const HOUR_MS: i64 = 3_600_000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FundingRow {
    funding_rate: String,
    time: i64,
}

#[derive(Deserialize)]
struct Meta {
    universe: Vec<Asset>,
}

#[derive(Deserialize)]
struct Asset {
    name: String,
}

#[derive(Deserialize)]
struct AssetCtx {
    funding: String,
}

/// `BTCUSDC` / `BTCUSD` → `BTC` (Hyperliquid names coins only).
fn coin(symbol: &str) -> Result<&str, ExchangeError> {
    split_symbol(symbol).map(|(base, _)| base).ok_or_else(|| ExchangeError::UnknownSymbol(symbol.to_owned()))
}

pub async fn history(http: &Http, symbol: &str, start_ms: i64, end_ms: i64) -> Result<Vec<FundingPoint>, ExchangeError> {
    let coin = coin(symbol)?;
    let mut points = Vec::new();
    let mut from = start_ms;
    loop {
        let body = json!({"type": "fundingHistory", "coin": coin, "startTime": from, "endTime": end_ms});
        let rows: Vec<FundingRow> = http.post("/info", &body).await?;
        let full = rows.len() == PAGE;
        for row in rows {
            points.push(FundingPoint { time_ms: row.time, rate: rate("fundingRate", &row.funding_rate)? });
        }
        match points.last() {
            Some(last) if full => from = last.time_ms + 1,
            _ => return Ok(points),
        }
    }
}

pub async fn current(http: &Http, symbol: &str) -> Result<CurrentFunding, ExchangeError> {
    let coin = coin(symbol)?;
    let (meta, contexts): (Meta, Vec<AssetCtx>) = http.post("/info", &json!({"type": "metaAndAssetCtxs"})).await?;
    let index = meta.universe.iter().position(|a| a.name == coin).ok_or_else(|| ExchangeError::UnknownSymbol(symbol.to_owned()))?;
    let ctx = contexts.get(index).ok_or_else(|| ExchangeError::Format("asset contexts shorter than the universe".into()))?;
    let now = chrono::Utc::now().timestamp_millis();
    Ok(CurrentFunding { rate: rate("funding", &ctx.funding)?, next_funding_ms: (now / HOUR_MS + 1) * HOUR_MS, interval_hours: 1 })
}
