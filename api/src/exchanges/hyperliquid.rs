//! Hyperliquid: `POST /info` with `fundingHistory`, and `predictedFundings` for the next rate,
//! settlement time and interval of Hyperliquid's own perp (`HlPerp`; the answer also lists other
//! venues' predictions).

use serde::Deserialize;
use serde_json::json;

use super::client::{ExchangeError, Http, rate};
use super::{CurrentFunding, FundingPoint, ListedPerp, split_symbol};

/// Rows per `fundingHistory` answer; a full page means there may be more.
const PAGE: usize = 500;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FundingRow {
    funding_rate: String,
    time: i64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Predicted {
    funding_rate: String,
    next_funding_time: i64,
    funding_interval_hours: u32,
}

/// `[[coin, [[venue, prediction | null], …]], …]`.
type PredictedFundings = Vec<(String, Vec<(String, Option<Predicted>)>)>;

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
    let all: PredictedFundings = http.post("/info", &json!({"type": "predictedFundings"})).await?;
    let prediction = all
        .into_iter()
        .find(|(name, _)| name == coin)
        .and_then(|(_, venues)| venues.into_iter().find(|(venue, _)| venue == "HlPerp"))
        .and_then(|(_, p)| p)
        .ok_or_else(|| ExchangeError::UnknownSymbol(symbol.to_owned()))?;
    Ok(CurrentFunding {
        rate: rate("fundingRate", &prediction.funding_rate)?,
        next_funding_ms: prediction.next_funding_time,
        interval_hours: prediction.funding_interval_hours,
    })
}

/// Every coin with a Hyperliquid perp (`HlPerp` in `predictedFundings`; the answer also carries
/// other venues' predictions), as `<COIN>USDC`.
pub async fn listing(http: &Http) -> Result<Vec<ListedPerp>, ExchangeError> {
    let all: PredictedFundings = http.post("/info", &json!({"type": "predictedFundings"})).await?;
    Ok(all
        .into_iter()
        .filter_map(|(coin, venues)| {
            let (_, prediction) = venues.into_iter().find(|(venue, _)| venue == "HlPerp")?;
            let prediction = prediction?;
            Some(ListedPerp {
                symbol: format!("{coin}USDC"),
                interval_minutes: prediction.funding_interval_hours * 60,
                mark_price_e8: None,
                open_interest_cents: None,
            })
        })
        .collect())
}
