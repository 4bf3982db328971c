//! OKX v5 perpetual swaps: `/api/v5/public/funding-rate` (one swap, or every swap with
//! `instId=ANY`), `/api/v5/public/funding-rate-history`, `/api/v5/public/instruments`,
//! `/api/v5/public/open-interest`, `/api/v5/rubik/stat/contracts/long-short-account-ratio-contract`.

use std::collections::HashMap;

use serde::Deserialize;

use super::client::{ExchangeError, Http, decimal_scaled, int, rate};
use super::{CrowdReading, CurrentFunding, FundingPoint, ListedPerp, split_symbol};

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
    /// Present in every row; read where one request answers for every swap (`instId=ANY`).
    #[serde(default)]
    inst_id: String,
    funding_rate: String,
    funding_time: String,
    next_funding_time: String,
    /// `settled` once the previous settlement is done, `processing` while it runs.
    #[serde(default)]
    sett_state: String,
    /// The previous settlement's rate (with `settState` = `settled`).
    #[serde(default)]
    sett_funding_rate: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Instrument {
    inst_id: String,
    state: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OpenInterest {
    inst_id: String,
    #[serde(default)]
    oi_usd: String,
}

/// `BTC-USDT-SWAP` → `BTCUSDT`.
fn symbol_of(inst_id: &str) -> Option<String> {
    let (base, quote) = inst_id.strip_suffix("-SWAP")?.split_once('-')?;
    Some(format!("{base}{quote}"))
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
    Ok(CurrentFunding { rate: rate("fundingRate", &row.funding_rate)?, next_funding_ms: funding, interval_hours: ((next - funding) / 3_600_000).max(1) as u32 })
}

/// The previous settlement and its rate, from `settFundingRate`: a rate the venue has charged,
/// not a prediction. The previous settlement is `fundingTime` less the interval
/// (`nextFundingTime − fundingTime`); while `settState` is not `settled` it is not published.
pub async fn last_settled(http: &Http, symbol: &str) -> Result<FundingPoint, ExchangeError> {
    let rows: Vec<Current> = get(http, "/api/v5/public/funding-rate", &[("instId", inst_id(symbol)?)]).await?;
    let row = rows.into_iter().next().ok_or_else(|| ExchangeError::UnknownSymbol(symbol.to_owned()))?;
    settled_point(&row)?.ok_or_else(|| ExchangeError::NotPublished(format!("settState is {:?}", row.sett_state)))
}

/// Every swap's previous settlement and its rate, as [`last_settled`] reads one, from one request
/// (`instId=ANY` answers every swap in one list). A swap whose settlement is still processing is
/// left out: not published yet.
pub async fn last_settled_of_all(http: &Http) -> Result<Vec<(String, FundingPoint)>, ExchangeError> {
    let rows: Vec<Current> = get(http, "/api/v5/public/funding-rate", &[("instId", "ANY".to_owned())]).await?;
    let mut points = Vec::with_capacity(rows.len());
    for row in &rows {
        if let (Some(symbol), Some(point)) = (symbol_of(&row.inst_id), settled_point(row)?) {
            points.push((symbol, point));
        }
    }
    Ok(points)
}

/// A row's previous settlement (`fundingTime` less the interval) and `settFundingRate`; `None`
/// while `settState` is not `settled`.
fn settled_point(row: &Current) -> Result<Option<FundingPoint>, ExchangeError> {
    if row.sett_state != "settled" || row.sett_funding_rate.is_empty() {
        return Ok(None);
    }
    let funding = int("fundingTime", &row.funding_time)?;
    let next = int("nextFundingTime", &row.next_funding_time)?;
    Ok(Some(FundingPoint { time_ms: funding - (next - funding), rate: rate("settFundingRate", &row.sett_funding_rate)? }))
}

/// The live perpetual swaps, each swap's interval from its current funding (`nextFundingTime −
/// fundingTime`, one request a swap: OKX has no bulk form), open interest from one bulk request.
/// A swap whose funding OKX refuses (delisted since the instruments were read) is left out.
pub async fn listing(http: &Http) -> Result<Vec<ListedPerp>, ExchangeError> {
    let instruments: Vec<Instrument> = get(http, "/api/v5/public/instruments", &[("instType", "SWAP".to_owned())]).await?;
    let interest: Vec<OpenInterest> = get(http, "/api/v5/public/open-interest", &[("instType", "SWAP".to_owned())]).await?;
    let mut usd = HashMap::new();
    for oi in &interest {
        if !oi.oi_usd.is_empty() {
            usd.insert(oi.inst_id.as_str(), i64::try_from(decimal_scaled("oiUsd", &oi.oi_usd, 2)?).ok());
        }
    }
    let mut perps = Vec::new();
    for instrument in instruments.iter().filter(|i| i.state == "live") {
        let Some(symbol) = symbol_of(&instrument.inst_id) else { continue };
        let rows: Vec<Current> = match get(http, "/api/v5/public/funding-rate", &[("instId", instrument.inst_id.clone())]).await {
            Ok(rows) => rows,
            Err(ExchangeError::Api { code, message }) => {
                tracing::info!(inst_id = %instrument.inst_id, %code, %message, "okx: no funding for a listed swap; left out");
                continue;
            }
            Err(e) => return Err(e),
        };
        let Some(row) = rows.first() else { continue };
        let gap_ms = int("nextFundingTime", &row.next_funding_time)? - int("fundingTime", &row.funding_time)?;
        if gap_ms <= 0 {
            return Err(ExchangeError::Format(format!("{}: nextFundingTime is not after fundingTime", instrument.inst_id)));
        }
        perps.push(ListedPerp {
            symbol,
            interval_minutes: (gap_ms / 60_000) as u32,
            mark_price_e8: None,
            open_interest_cents: usd.get(instrument.inst_id.as_str()).copied().flatten(),
        });
    }
    Ok(perps)
}

/// The latest 5-minute ratio of accounts long to accounts short (`[[ts, ratio]]`, newest
/// first): long share = ratio ÷ (1 + ratio), rounded to the nearest millionth.
pub async fn crowd(http: &Http, perp: &ListedPerp) -> Result<Option<CrowdReading>, ExchangeError> {
    let query = [("instId", inst_id(&perp.symbol)?), ("period", "5m".to_owned()), ("limit", "1".to_owned())];
    let rows: Vec<(String, String)> = get(http, "/api/v5/rubik/stat/contracts/long-short-account-ratio-contract", &query).await?;
    let Some((ts, ratio)) = rows.first() else { return Ok(None) };
    let ratio_e8 = decimal_scaled("ratio", ratio, 8)?;
    let long_ppm = ((ratio_e8 * 2_000_000 / (ratio_e8 + 100_000_000) + 1) / 2) as u32;
    Ok(Some(CrowdReading { long_ppm, short_ppm: 1_000_000 - long_ppm, timestamp_ms: int("ts", ts)?, open_interest_cents: perp.open_interest_cents }))
}
