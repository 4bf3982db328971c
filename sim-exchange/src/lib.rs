//! A simulated exchange for local runs and tests: Binance, Bybit, OKX and Hyperliquid's public
//! funding endpoints, in their real response formats (envelopes, string-typed numbers, paging
//! order and limits, error shapes), over seeded deterministic data (`model`).
//!
//! Each settled rate is published at its settlement time on every host the simulation serves
//! ([`router_for`] gives host `n` its router; the service's oracle reads several) and on every
//! endpoint: the history lists it, and the current endpoint's rate field shows the last settled
//! rate (`lastFundingRate` on Binance) until the next settlement.
//!
//! Faults on demand:
//! - `POST /sim/faults` `{"venue": "binance", "status": 429, "count": 2, "retry_after_secs": 1}`
//!   answers the venue's next two requests with that status (on every host).
//! - `POST /sim/settlement-faults` `{"venue": "okx", "kind": "wrong" | "missing", "host": 1,
//!   "endpoint": "history" | "current"}` makes one source (or, without `host` / `endpoint`,
//!   several) publish a wrong rate or none; `{"venue": "okx", "kind": "late", "secs": 60}`
//!   publishes every settlement that late on all its sources. `DELETE` clears them all.

pub mod model;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use model::{HOUR_MS, MINUTE_MS, decimal};
pub use model::{Model, SimSymbol};

pub struct Sim {
    pub model: Model,
    faults: Mutex<HashMap<String, Fault>>,
    settlement_faults: Mutex<Vec<SettlementFault>>,
    /// Fixed clock for tests (Unix ms); [`WALL_CLOCK`] follows the wall clock.
    now_ms: AtomicI64,
    /// Requests answered (or failed on purpose) by path, over every host: what a test reads to
    /// tell how often a venue was asked.
    requests: Mutex<HashMap<String, u64>>,
}

const WALL_CLOCK: i64 = i64::MIN;

#[derive(Clone, Debug, Deserialize)]
pub struct Fault {
    pub venue: String,
    pub status: u16,
    pub count: u32,
    #[serde(default)]
    pub retry_after_secs: Option<u64>,
}

/// A fault in how a venue publishes its settled rates.
#[derive(Clone, Debug, Deserialize)]
pub struct SettlementFault {
    pub venue: String,
    #[serde(flatten)]
    pub kind: SettlementFaultKind,
    /// The host (0 = the first) the fault is on; every host when absent.
    #[serde(default)]
    pub host: Option<usize>,
    /// The endpoint the fault is on; both when absent.
    #[serde(default)]
    pub endpoint: Option<Endpoint>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SettlementFaultKind {
    /// A rate that disagrees with the truth (its negation less 1e-4).
    Wrong,
    /// No rate: the history omits it, the current endpoint answers 503.
    Missing,
    /// Every settlement published `secs` late (on every host and endpoint of the venue).
    Late { secs: i64 },
}

/// Where a settled rate is published.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    History,
    Current,
}

/// Which host of the simulation a request reached.
#[derive(Clone, Copy, Debug)]
struct Host(usize);

impl Sim {
    pub fn new(model: Model) -> Sim {
        Sim {
            model,
            faults: Mutex::new(HashMap::new()),
            settlement_faults: Mutex::new(Vec::new()),
            now_ms: AtomicI64::new(WALL_CLOCK),
            requests: Mutex::new(HashMap::new()),
        }
    }

    /// How many requests of `path` the venues' endpoints have had, over every host.
    pub fn requests(&self, path: &str) -> u64 {
        self.requests.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    /// A simulation whose clock stands still at `now_ms` (move it with [`Sim::set_now`]).
    pub fn at(model: Model, now_ms: i64) -> Sim {
        let sim = Sim::new(model);
        sim.set_now(now_ms);
        sim
    }

    /// Sets the fixed clock.
    pub fn set_now(&self, now_ms: i64) {
        self.now_ms.store(now_ms, Ordering::SeqCst);
    }

    pub fn now(&self) -> i64 {
        match self.now_ms.load(Ordering::SeqCst) {
            WALL_CLOCK => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64),
            fixed => fixed,
        }
    }

    /// Adds a settlement fault (as `POST /sim/settlement-faults` does).
    pub fn add_settlement_fault(&self, fault: SettlementFault) {
        self.settlement_faults.lock().unwrap().push(fault);
    }

    pub fn clear_settlement_faults(&self) {
        self.settlement_faults.lock().unwrap().clear();
    }

    /// How late the venue publishes, ms.
    fn lag_ms(&self, venue: &str) -> i64 {
        let faults = self.settlement_faults.lock().unwrap();
        faults
            .iter()
            .filter(|f| f.venue == venue)
            .filter_map(|f| if let SettlementFaultKind::Late { secs } = f.kind { Some(secs * 1000) } else { None })
            .max()
            .unwrap_or(0)
    }

    /// The time up to which the venue has published its settlements.
    fn published_until(&self, venue: &str) -> i64 {
        self.now() - self.lag_ms(venue)
    }

    /// What `host`'s `endpoint` says the rate settled at `t` was (`None`: the source is missing).
    fn published(&self, s: &SimSymbol, t: i64, host: Host, endpoint: Endpoint) -> Option<i64> {
        let truth = self.model.rate_at(s, t);
        let faults = self.settlement_faults.lock().unwrap();
        let here = |f: &&SettlementFault| f.venue == s.venue && f.host.is_none_or(|h| h == host.0) && f.endpoint.is_none_or(|e| e == endpoint);
        match faults.iter().filter(here).map(|f| f.kind).find(|k| !matches!(k, SettlementFaultKind::Late { .. })) {
            Some(SettlementFaultKind::Missing) => None,
            Some(SettlementFaultKind::Wrong) => Some(-truth - 100_000_000),
            _ => Some(truth),
        }
    }

    /// The current endpoint's view: the last settled rate as published there and the next
    /// settlement, or `None` when the source is missing.
    fn current(&self, s: &SimSymbol, host: Host) -> Option<(i64, i64)> {
        let until = self.published_until(s.venue);
        let last = self.model.last_settlement(s, until);
        self.published(s, last, host, Endpoint::Current).map(|rate| (rate, self.model.next_settlement(s, until)))
    }
}

fn source_missing() -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, "simulated missing source").into_response()
}

/// About twenty series across the four venues (the service's default set uses the same).
pub fn default_symbols() -> Vec<SimSymbol> {
    let mut out = Vec::new();
    for (venue, interval_minutes, symbols) in [
        ("binance", 480, &["BTCUSDT", "ETHUSDT", "SOLUSDT", "DOGEUSDT", "XRPUSDT", "1000PEPEUSDT"][..]),
        ("bybit", 480, &["BTCUSDT", "ETHUSDT", "SOLUSDT", "WIFUSDT", "SUIUSDT"][..]),
        ("okx", 480, &["BTCUSDT", "ETHUSDT", "SOLUSDT", "TONUSDT"][..]),
        ("hyperliquid", 60, &["BTCUSDC", "ETHUSDC", "SOLUSDC", "HYPEUSDC", "AVAXUSDC"][..]),
    ] {
        out.extend(symbols.iter().map(|s| SimSymbol::new(venue, s, interval_minutes)));
    }
    out
}

/// The simulation as served on its first host.
pub fn router(sim: Arc<Sim>) -> Router {
    router_for(sim, 0)
}

/// The simulation as served on host `host` (0, 1, …): the same data, each host's own
/// settlement faults.
pub fn router_for(sim: Arc<Sim>, host: usize) -> Router {
    Router::new()
        .route("/fapi/v1/fundingRate", get(binance_history))
        .route("/fapi/v1/premiumIndex", get(binance_premium_index))
        .route("/fapi/v1/fundingInfo", get(binance_funding_info))
        .route("/futures/data/globalLongShortAccountRatio", get(binance_long_short))
        .route("/fapi/v1/openInterest", get(binance_open_interest))
        .route("/v5/market/funding/history", get(bybit_history))
        .route("/v5/market/account-ratio", get(bybit_account_ratio))
        .route("/v5/market/open-interest", get(bybit_open_interest))
        .route("/api/v5/rubik/stat/contracts/long-short-account-ratio-contract", get(okx_long_short))
        .route("/api/v5/public/open-interest", get(okx_open_interest))
        .route("/v5/market/tickers", get(bybit_tickers))
        .route("/v5/market/instruments-info", get(bybit_instruments))
        .route("/api/v5/public/instruments", get(okx_instruments))
        .route("/api/v5/public/funding-rate", get(okx_current))
        .route("/api/v5/public/funding-rate-history", get(okx_history))
        .route("/info", post(hyperliquid_info))
        .layer(from_fn_with_state(sim.clone(), inject_faults))
        .layer(Extension(Host(host)))
        .route("/sim/faults", post(set_fault))
        .route("/sim/settlement-faults", post(add_settlement_fault).delete(clear_settlement_faults))
        .with_state(sim)
}

async fn set_fault(State(sim): State<Arc<Sim>>, Json(fault): Json<Fault>) -> StatusCode {
    sim.faults.lock().unwrap().insert(fault.venue.clone(), fault);
    StatusCode::NO_CONTENT
}

async fn add_settlement_fault(State(sim): State<Arc<Sim>>, Json(fault): Json<SettlementFault>) -> StatusCode {
    sim.add_settlement_fault(fault);
    StatusCode::NO_CONTENT
}

async fn clear_settlement_faults(State(sim): State<Arc<Sim>>) -> StatusCode {
    sim.clear_settlement_faults();
    StatusCode::NO_CONTENT
}

fn venue_of(path: &str) -> &'static str {
    match path {
        p if p.starts_with("/fapi") || p.starts_with("/futures") => "binance",
        p if p.starts_with("/v5") => "bybit",
        p if p.starts_with("/api/v5") => "okx",
        _ => "hyperliquid",
    }
}

async fn inject_faults(State(sim): State<Arc<Sim>>, req: Request, next: Next) -> Response {
    let venue = venue_of(req.uri().path());
    *sim.requests.lock().unwrap().entry(req.uri().path().to_owned()).or_default() += 1;
    let fault = {
        let mut faults = sim.faults.lock().unwrap();
        match faults.get_mut(venue) {
            Some(f) if f.count > 0 => {
                f.count -= 1;
                Some(f.clone())
            }
            _ => None,
        }
    };
    let Some(fault) = fault else { return next.run(req).await };
    let status = StatusCode::from_u16(fault.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, "simulated fault").into_response();
    if let Some(after) = fault.retry_after_secs {
        response.headers_mut().insert("retry-after", after.into());
    }
    response
}

type Params = Query<HashMap<String, String>>;

fn param(q: &HashMap<String, String>, name: &str) -> Option<i64> {
    q.get(name).and_then(|v| v.parse().ok())
}

/// The settlements in [start, end] the venue has published, with the rate `host`'s history
/// shows for each (a missing source omits them).
fn rows_between(sim: &Sim, s: &SimSymbol, host: Host, start: Option<i64>, end: Option<i64>, limit: usize) -> Vec<(i64, i64)> {
    let now = sim.published_until(s.venue);
    let end = end.unwrap_or(now);
    // Without a start, the most recent `limit` settlements.
    let start = start.unwrap_or(end - limit as i64 * s.interval_minutes * MINUTE_MS);
    sim.model.settlements(s, start, end, now).into_iter().filter_map(|t| sim.published(s, t, host, Endpoint::History).map(|rate| (t, rate))).collect()
}

// --- Binance -------------------------------------------------------------------------------

fn binance_invalid_symbol() -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({"code": -1121, "msg": "Invalid symbol."}))).into_response()
}

/// One symbol's settlements or, without `symbol`, every contract's, ascending, at most `limit`
/// from `startTime` on (without `startTime`: the latest `limit`, of the last eight hours when no
/// symbol is named).
async fn binance_history(State(sim): State<Arc<Sim>>, Extension(host): Extension<Host>, Query(q): Params) -> Response {
    let limit = param(&q, "limit").unwrap_or(100).clamp(1, 1000) as usize;
    let (start, end) = (param(&q, "startTime"), param(&q, "endTime"));
    let row = |s: &SimSymbol, t: i64, r: i64| json!({"symbol": s.symbol, "fundingRate": decimal(r, 8), "fundingTime": t, "markPrice": "34287.54619963"});
    let rows: Vec<Value> = match q.get("symbol") {
        Some(symbol) => {
            let Some(s) = sim.model.find("binance", symbol) else { return binance_invalid_symbol() };
            rows_between(&sim, s, host, start, end, limit).into_iter().take(limit).map(|(t, r)| row(s, t, r)).collect()
        }
        None => {
            let window_start = start.or_else(|| Some(end.unwrap_or_else(|| sim.published_until("binance")) - 8 * HOUR_MS));
            let mut all: Vec<(i64, &SimSymbol, i64)> = sim
                .model
                .listed("binance")
                .flat_map(|s| rows_between(&sim, s, host, window_start, end, limit).into_iter().map(move |(t, r)| (t, s, r)))
                .collect();
            all.sort_by(|a, b| (a.0, &a.1.symbol).cmp(&(b.0, &b.1.symbol)));
            let skip = if start.is_none() { all.len().saturating_sub(limit) } else { 0 };
            all.into_iter().skip(skip).take(limit).map(|(t, s, r)| row(s, t, r)).collect()
        }
    };
    Json(rows).into_response()
}

/// One symbol's premium index, or (without `symbol`) every perp's, as an array.
async fn binance_premium_index(State(sim): State<Arc<Sim>>, Extension(host): Extension<Host>, Query(q): Params) -> Response {
    let now = sim.now();
    let index = |s: &SimSymbol| {
        let (rate, next) = sim.current(s, host)?;
        let mark = sim.model.mark_price_e8(s, now);
        Some(json!({
            "symbol": s.symbol, "markPrice": decimal(mark * 10_000, 8), "indexPrice": decimal(mark * 10_000, 8),
            "estimatedSettlePrice": decimal(mark * 10_000, 8), "lastFundingRate": decimal(rate, 8),
            "nextFundingTime": next, "interestRate": "0.00010000", "time": now,
        }))
    };
    match q.get("symbol") {
        Some(symbol) => {
            let Some(s) = sim.model.find("binance", symbol) else { return binance_invalid_symbol() };
            let Some(row) = index(s) else { return source_missing() };
            Json(row).into_response()
        }
        None => Json(sim.model.listed("binance").filter_map(index).collect::<Vec<_>>()).into_response(),
    }
}

async fn binance_funding_info(State(sim): State<Arc<Sim>>) -> Response {
    let now = sim.now();
    let adjusted: Vec<Value> = sim
        .model
        .listed("binance")
        .filter(|s| sim.model.interval_at(s, now) != 8)
        .map(|s| {
            json!({"symbol": s.symbol, "adjustedFundingRateCap": "0.02500000", "adjustedFundingRateFloor": "-0.02500000",
                        "fundingIntervalHours": sim.model.interval_at(s, now), "disclaimer": false})
        })
        .collect();
    Json(adjusted).into_response()
}

/// Period names to milliseconds (Binance `5m…1d`, Bybit `5min…1d`, OKX `5m…1D`).
fn period_ms(period: Option<&String>) -> Option<i64> {
    let p = period.map(String::as_str).unwrap_or("5m");
    Some(match p {
        "5m" | "5min" => 300_000,
        "15m" | "15min" => 900_000,
        "30m" | "30min" => 1_800_000,
        "1h" | "1H" => HOUR_MS,
        "2h" | "2H" => 2 * HOUR_MS,
        "4h" | "4H" => 4 * HOUR_MS,
        "6h" | "6H" => 6 * HOUR_MS,
        "12h" | "12H" => 12 * HOUR_MS,
        "1d" | "1D" => 24 * HOUR_MS,
        _ => return None,
    })
}

/// The last `limit` period boundaries up to now, oldest first.
fn periods(now: i64, step: i64, limit: usize) -> Vec<i64> {
    let last = now.div_euclid(step) * step;
    (0..limit as i64).rev().map(|i| last - i * step).collect()
}

/// ppm → decimal string with four places.
fn ratio4(ppm: i64) -> String {
    format!("{}.{:04}", ppm / 1_000_000, ppm % 1_000_000 / 100)
}

async fn binance_long_short(State(sim): State<Arc<Sim>>, Query(q): Params) -> Response {
    let Some(s) = q.get("symbol").and_then(|sym| sim.model.find("binance", sym)) else { return binance_invalid_symbol() };
    let Some(step) = period_ms(q.get("period")) else {
        return (StatusCode::BAD_REQUEST, Json(json!({"code": -1120, "msg": "Invalid period."}))).into_response();
    };
    let limit = param(&q, "limit").unwrap_or(30).clamp(1, 500) as usize;
    let rows: Vec<Value> = periods(sim.now(), step, limit)
        .into_iter()
        .map(|t| {
            let long = sim.model.long_share_ppm(s, t) / 100 * 100;
            let short = 1_000_000 - long;
            json!({"symbol": s.symbol, "longShortRatio": ratio4(long * 1_000_000 / short), "longAccount": ratio4(long),
                   "shortAccount": ratio4(short), "timestamp": t.to_string()})
        })
        .collect();
    Json(rows).into_response()
}

async fn binance_open_interest(State(sim): State<Arc<Sim>>, Query(q): Params) -> Response {
    let Some(s) = q.get("symbol").and_then(|sym| sim.model.find("binance", sym)) else { return binance_invalid_symbol() };
    let now = sim.now();
    let oi = sim.model.open_interest_milli(s, now);
    Json(json!({"openInterest": format!("{}.{:03}", oi / 1000, oi % 1000), "symbol": s.symbol, "time": now})).into_response()
}

// --- Bybit ---------------------------------------------------------------------------------

fn bybit(ret_code: i64, ret_msg: &str, result: Value, now: i64) -> Response {
    Json(json!({"retCode": ret_code, "retMsg": ret_msg, "result": result, "retExtInfo": {}, "time": now})).into_response()
}

async fn bybit_history(State(sim): State<Arc<Sim>>, Extension(host): Extension<Host>, Query(q): Params) -> Response {
    let now = sim.now();
    let Some(s) = q.get("symbol").and_then(|sym| sim.model.find("bybit", sym)) else {
        return bybit(10001, "params error: symbol invalid", json!({}), now);
    };
    let (start, end) = (param(&q, "startTime"), param(&q, "endTime"));
    if start.is_some() && end.is_none() {
        return bybit(10001, "params error: endTime is required with startTime", json!({}), now);
    }
    let limit = param(&q, "limit").unwrap_or(200).clamp(1, 200) as usize;
    let mut rows = rows_between(&sim, s, host, start, end, limit);
    rows.reverse(); // newest first
    let list: Vec<Value> =
        rows.into_iter().take(limit).map(|(t, r)| json!({"symbol": s.symbol, "fundingRate": decimal(r, 8), "fundingRateTimestamp": t.to_string()})).collect();
    bybit(0, "OK", json!({"category": "linear", "list": list}), now)
}

/// One symbol's ticker, or (without `symbol`) every linear perp's.
async fn bybit_tickers(State(sim): State<Arc<Sim>>, Extension(host): Extension<Host>, Query(q): Params) -> Response {
    let now = sim.now();
    let ticker = |s: &SimSymbol| {
        let (rate, next) = sim.current(s, host)?;
        let (mark, oi) = (sim.model.mark_price_e8(s, now), sim.model.open_interest_milli(s, now));
        Some(json!({
            "symbol": s.symbol, "fundingRate": decimal(rate, 8),
            "nextFundingTime": next.to_string(),
            "fundingIntervalHour": sim.model.interval_at(s, now).to_string(),
            "markPrice": decimal(mark * 10_000, 8), "indexPrice": decimal(mark * 10_000, 8),
            "openInterest": format!("{}.{:03}", oi / 1000, oi % 1000),
            "openInterestValue": usd(oi as i128 * mark as i128 / 1_000),
        }))
    };
    let list: Vec<Value> = match q.get("symbol") {
        Some(symbol) => {
            let Some(s) = sim.model.find("bybit", symbol) else { return bybit(10001, "params error: symbol invalid", json!({}), now) };
            let Some(row) = ticker(s) else { return source_missing() };
            vec![row]
        }
        None => sim.model.listed("bybit").filter_map(ticker).collect(),
    };
    bybit(0, "OK", json!({"category": "linear", "list": list}), now)
}

/// A USD amount in 1e-8 as a decimal string with two places (truncated).
fn usd(e8: i128) -> String {
    format!("{}.{:02}", e8 / 100_000_000, e8 % 100_000_000 / 1_000_000)
}

/// `instruments-info`: the linear perps, `limit` (default 500, at most 1000) a page, paged by an
/// opaque `cursor` (`nextPageCursor`, empty on the last page).
async fn bybit_instruments(State(sim): State<Arc<Sim>>, Query(q): Params) -> Response {
    let now = sim.now();
    if q.get("category").map(String::as_str) != Some("linear") {
        return bybit(10001, "params error: category only support linear", json!({}), now);
    }
    let Some(limit) = q.get("limit").map_or(Some(500), |l| l.parse::<usize>().ok().filter(|l| (1..=1000).contains(l))) else {
        return bybit(10001, "params error: limit invalid", json!({}), now);
    };
    let offset = match q.get("cursor").filter(|c| !c.is_empty()) {
        None => 0,
        Some(cursor) => match cursor.strip_prefix("next=").and_then(|o| o.parse::<usize>().ok()) {
            Some(offset) => offset,
            None => return bybit(10001, "params error: cursor invalid", json!({}), now),
        },
    };
    let listed: Vec<&SimSymbol> = sim.model.listed("bybit").collect();
    let list: Vec<Value> = listed
        .iter()
        .skip(offset)
        .take(limit)
        .map(|s| {
            let base = model::base_of(&s.symbol);
            json!({"symbol": s.symbol, "contractType": "LinearPerpetual", "status": "Trading", "baseCoin": base,
                   "quoteCoin": &s.symbol[base.len()..], "launchTime": model::EPOCH_MS.to_string(), "deliveryTime": "0",
                   "fundingInterval": sim.model.interval_ms_at(s, now) / MINUTE_MS, "settleCoin": &s.symbol[base.len()..],
                   "upperFundingRate": "0.02", "lowerFundingRate": "-0.02", "isPreListing": false})
        })
        .collect();
    let next = if offset + limit < listed.len() { format!("next={}", offset + limit) } else { String::new() };
    bybit(0, "OK", json!({"category": "linear", "list": list, "nextPageCursor": next}), now)
}

async fn bybit_account_ratio(State(sim): State<Arc<Sim>>, Query(q): Params) -> Response {
    let now = sim.now();
    let Some(s) = q.get("symbol").and_then(|sym| sim.model.find("bybit", sym)) else {
        return bybit(10001, "params error: symbol invalid", json!({}), now);
    };
    let Some(step) = period_ms(q.get("period")) else { return bybit(10001, "params error: period invalid", json!({}), now) };
    let limit = param(&q, "limit").unwrap_or(50).clamp(1, 500) as usize;
    let mut list: Vec<Value> = periods(now, step, limit)
        .into_iter()
        .map(|t| {
            let buy = sim.model.long_share_ppm(s, t) / 10_000 * 10_000;
            json!({"symbol": s.symbol, "buyRatio": ratio4(buy).trim_end_matches('0').to_owned(),
                   "sellRatio": ratio4(1_000_000 - buy).trim_end_matches('0').to_owned(), "timestamp": t.to_string()})
        })
        .collect();
    list.reverse(); // newest first
    bybit(0, "OK", json!({"list": list, "nextPageCursor": ""}), now)
}

async fn bybit_open_interest(State(sim): State<Arc<Sim>>, Query(q): Params) -> Response {
    let now = sim.now();
    let Some(s) = q.get("symbol").and_then(|sym| sim.model.find("bybit", sym)) else {
        return bybit(10001, "params error: symbol invalid", json!({}), now);
    };
    let Some(step) = period_ms(q.get("intervalTime")) else { return bybit(10001, "params error: intervalTime invalid", json!({}), now) };
    let limit = param(&q, "limit").unwrap_or(50).clamp(1, 200) as usize;
    let mut list: Vec<Value> = periods(now, step, limit)
        .into_iter()
        .map(|t| {
            let oi = sim.model.open_interest_milli(s, t);
            json!({"openInterest": format!("{}.{:03}", oi / 1000, oi % 1000), "timestamp": t.to_string()})
        })
        .collect();
    list.reverse();
    bybit(0, "OK", json!({"symbol": s.symbol, "category": "linear", "list": list, "nextPageCursor": ""}), now)
}

// --- OKX -----------------------------------------------------------------------------------

fn okx_symbol<'a>(sim: &'a Sim, q: &HashMap<String, String>) -> Option<&'a SimSymbol> {
    let inst = q.get("instId")?;
    let symbol = inst.strip_suffix("-SWAP")?.replace('-', "");
    sim.model.find("okx", &symbol)
}

fn okx_error() -> Response {
    Json(json!({"code": "51001", "msg": "Instrument ID does not exist", "data": []})).into_response()
}

/// One swap's funding, or (`instId=ANY`) every swap's in one list; a swap whose source is
/// missing on this host is left out of the list.
async fn okx_current(State(sim): State<Arc<Sim>>, Extension(host): Extension<Host>, Query(q): Params) -> Response {
    let now = sim.now();
    let row = |s: &SimSymbol| {
        let (rate, funding_time) = sim.current(s, host)?;
        let next = sim.model.next_settlement(s, funding_time);
        let rate = decimal(rate, 8);
        Some(json!({
            "instType": "SWAP", "instId": okx_inst_id(s), "fundingRate": rate, "nextFundingRate": "",
            "fundingTime": funding_time.to_string(), "nextFundingTime": next.to_string(),
            "minFundingRate": "-0.0075", "maxFundingRate": "0.0075", "settState": "settled",
            "settFundingRate": rate, "premium": "0.0001", "method": "current_period", "ts": now.to_string(),
        }))
    };
    if q.get("instId").is_some_and(|i| i == "ANY") {
        let data: Vec<Value> = sim.model.listed("okx").filter_map(row).collect();
        return Json(json!({"code": "0", "msg": "", "data": data})).into_response();
    }
    let Some(s) = okx_symbol(&sim, &q) else { return okx_error() };
    let Some(row) = row(s) else { return source_missing() };
    Json(json!({"code": "0", "msg": "", "data": [row]})).into_response()
}

/// Newest first; `after` = rows older than that time, `before` = newer.
async fn okx_history(State(sim): State<Arc<Sim>>, Extension(host): Extension<Host>, Query(q): Params) -> Response {
    let Some(s) = okx_symbol(&sim, &q) else { return okx_error() };
    let limit = param(&q, "limit").unwrap_or(100).clamp(1, 100) as usize;
    let end = param(&q, "after").map(|a| a - 1);
    let start = param(&q, "before").map(|b| b + 1).or(Some(model::EPOCH_MS));
    let mut rows = rows_between(&sim, s, host, start, end, limit);
    rows.reverse();
    let data: Vec<Value> = rows
        .into_iter()
        .take(limit)
        .map(|(t, r)| {
            json!({"instType": "SWAP", "instId": q["instId"], "fundingRate": decimal(r, 8),
                             "realizedRate": decimal(r, 8), "fundingTime": t.to_string(), "method": "current_period"})
        })
        .collect();
    Json(json!({"code": "0", "msg": "", "data": data})).into_response()
}

/// `data: [[ts, ratio], …]` newest first, arrays of strings.
async fn okx_long_short(State(sim): State<Arc<Sim>>, Query(q): Params) -> Response {
    let Some(s) = okx_symbol(&sim, &q) else { return okx_error() };
    let Some(step) = period_ms(q.get("period")) else {
        return Json(json!({"code": "51000", "msg": "Parameter period error", "data": []})).into_response();
    };
    let mut data: Vec<Value> = periods(sim.now(), step, 100)
        .into_iter()
        .map(|t| {
            let long = sim.model.long_share_ppm(s, t) / 100 * 100;
            json!([t.to_string(), ratio4(long * 1_000_000 / (1_000_000 - long))])
        })
        .collect();
    data.reverse();
    Json(json!({"code": "0", "msg": "", "data": data})).into_response()
}

/// `BTCUSDT` → `BTC-USDT-SWAP`.
fn okx_inst_id(s: &SimSymbol) -> String {
    let base = model::base_of(&s.symbol);
    format!("{base}-{}-SWAP", &s.symbol[base.len()..])
}

/// One swap's open interest, or (without `instId`) every swap's.
async fn okx_open_interest(State(sim): State<Arc<Sim>>, Query(q): Params) -> Response {
    let now = sim.now();
    let row = |s: &SimSymbol| {
        let (oi, mark) = (sim.model.open_interest_milli(s, now), sim.model.mark_price_e8(s, now));
        let oi_text = format!("{}.{:03}", oi / 1000, oi % 1000);
        json!({"instType": "SWAP", "instId": okx_inst_id(s), "oi": oi_text, "oiCcy": oi_text,
               "oiUsd": usd(oi as i128 * mark as i128 / 1_000), "ts": now.to_string()})
    };
    let data: Vec<Value> = match q.get("instId") {
        Some(_) => match okx_symbol(&sim, &q) {
            Some(s) => vec![row(s)],
            None => return okx_error(),
        },
        None => sim.model.listed("okx").map(row).collect(),
    };
    Json(json!({"code": "0", "msg": "", "data": data})).into_response()
}

/// `instruments?instType=SWAP`: every perpetual swap, live.
async fn okx_instruments(State(sim): State<Arc<Sim>>, Query(q): Params) -> Response {
    if q.get("instType").map(String::as_str) != Some("SWAP") {
        return Json(json!({"code": "51000", "msg": "Parameter instType error", "data": []})).into_response();
    }
    let data: Vec<Value> = sim
        .model
        .listed("okx")
        .map(|s| {
            let base = model::base_of(&s.symbol);
            let family = format!("{base}-{}", &s.symbol[base.len()..]);
            json!({"instType": "SWAP", "instId": okx_inst_id(s), "uly": family, "instFamily": family,
                   "settleCcy": &s.symbol[base.len()..], "ctVal": "1", "ctValCcy": base, "ctType": "linear",
                   "state": "live", "listTime": model::EPOCH_MS.to_string(), "lever": "50"})
        })
        .collect();
    Json(json!({"code": "0", "msg": "", "data": data})).into_response()
}

// --- Hyperliquid ---------------------------------------------------------------------------

fn hl_symbol<'a>(sim: &'a Sim, coin: &str) -> Option<&'a SimSymbol> {
    sim.model.find("hyperliquid", &format!("{coin}USDC"))
}

async fn hyperliquid_info(State(sim): State<Arc<Sim>>, Extension(host): Extension<Host>, Json(body): Json<Value>) -> Response {
    let now = sim.now();
    match body["type"].as_str() {
        Some("fundingHistory") => {
            let coin = body["coin"].as_str().unwrap_or_default();
            let Some(s) = hl_symbol(&sim, coin) else { return Json(json!([])).into_response() };
            let Some(start) = body["startTime"].as_i64() else {
                return (StatusCode::UNPROCESSABLE_ENTITY, "Failed to deserialize the JSON body").into_response();
            };
            let rows: Vec<Value> = rows_between(&sim, s, host, Some(start), body["endTime"].as_i64(), 500)
                .into_iter()
                .take(500)
                .map(|(t, r)| json!({"coin": coin, "fundingRate": decimal(r, 8), "premium": "0.0003", "time": t}))
                .collect();
            Json(rows).into_response()
        }
        Some("predictedFundings") => {
            let mut coins = Vec::new();
            for s in sim.model.listed("hyperliquid") {
                let coin = s.symbol.strip_suffix("USDC").unwrap_or(&s.symbol);
                let Some((rate, next)) = sim.current(s, host) else { return source_missing() };
                let hl = json!({"fundingRate": decimal(rate, 8), "nextFundingTime": next,
                                "fundingIntervalHours": sim.model.interval_at(s, now)});
                coins.push(json!([coin, [["BinPerp", null], ["HlPerp", hl]]]));
            }
            Json(coins).into_response()
        }
        Some("metaAndAssetCtxs") => {
            let (universe, contexts): (Vec<Value>, Vec<Value>) = sim
                .model
                .listed("hyperliquid")
                .map(|s| {
                    let coin = s.symbol.strip_suffix("USDC").unwrap_or(&s.symbol);
                    let oi = sim.model.open_interest_milli(s, now);
                    let oi = format!("{}.{:03}", oi / 1000, oi % 1000);
                    let mark = decimal(sim.model.mark_price_e8(s, now) * 10_000, 8);
                    (
                        json!({"name": coin, "szDecimals": 5, "maxLeverage": 40}),
                        json!({"funding": decimal(sim.model.rate_at(s, now), 8),
                            "openInterest": oi,
                            "markPx": mark, "oraclePx": mark, "midPx": mark, "premium": "0.0003", "dayNtlVlm": "1000000.0"}),
                    )
                })
                .unzip();
            Json(json!([{"universe": universe}, contexts])).into_response()
        }
        _ => (StatusCode::UNPROCESSABLE_ENTITY, "Failed to deserialize the JSON body").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    const NOW: i64 = model::EPOCH_MS + 50 * model::DAY_MS + 123_456;

    async fn get_json(path: &str) -> (StatusCode, Value) {
        let sim = Arc::new(Sim::at(Model::new(3, default_symbols()), NOW));
        let response = router(sim).oneshot(axum::http::Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    async fn universe_json(path: &str) -> Value {
        let sim = Arc::new(Sim::at(Model::with_universe(3, default_symbols(), 520), NOW));
        let response = router(sim).oneshot(axum::http::Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
        serde_json::from_slice(&response.into_body().collect().await.unwrap().to_bytes()).unwrap()
    }

    #[tokio::test]
    async fn listings_of_the_whole_universe() {
        let all = universe_json("/fapi/v1/premiumIndex").await;
        assert_eq!(all.as_array().unwrap().len(), 520);
        assert!(all[0]["markPrice"].as_str().unwrap().parse::<f64>().unwrap() > 1000.0, "BTC first");
        let info = universe_json("/fapi/v1/fundingInfo").await;
        assert!(info.as_array().unwrap().iter().all(|r| r["fundingIntervalHours"] != 8));

        let first = universe_json("/v5/market/instruments-info?category=linear&limit=500").await;
        assert_eq!(first["result"]["list"].as_array().unwrap().len(), 500);
        let cursor = first["result"]["nextPageCursor"].as_str().unwrap().to_owned();
        let second = universe_json(&format!("/v5/market/instruments-info?category=linear&limit=500&cursor={cursor}")).await;
        assert_eq!(second["result"]["list"].as_array().unwrap().len(), 20);
        assert_eq!(second["result"]["nextPageCursor"], "");
        assert!(second["result"]["list"][0]["fundingInterval"].as_i64().unwrap() % 60 == 0);
        assert_eq!(universe_json("/v5/market/instruments-info?category=linear&cursor=bogus").await["retCode"], 10001);
        let tickers = universe_json("/v5/market/tickers?category=linear").await;
        assert_eq!(tickers["result"]["list"].as_array().unwrap().len(), 520);

        let okx = universe_json("/api/v5/public/instruments?instType=SWAP").await;
        assert_eq!(okx["data"].as_array().unwrap().len(), 520);
        assert!(okx["data"][0]["instId"].as_str().unwrap().ends_with("-USDT-SWAP"));
        let oi = universe_json("/api/v5/public/open-interest?instType=SWAP").await;
        assert!(oi["data"][5]["oiUsd"].as_str().unwrap().contains('.'));
    }

    #[tokio::test]
    async fn positioning_and_open_interest_in_each_venues_shape() {
        let (_, b) = get_json("/futures/data/globalLongShortAccountRatio?symbol=BTCUSDT&period=1h&limit=3").await;
        let rows = b.as_array().unwrap();
        assert_eq!(rows.len(), 3);
        let long: f64 = rows[0]["longAccount"].as_str().unwrap().parse().unwrap();
        let short: f64 = rows[0]["shortAccount"].as_str().unwrap().parse().unwrap();
        assert!((long + short - 1.0).abs() < 1e-9 && (0.3..0.7).contains(&long));
        assert!(rows[0]["timestamp"].as_str().unwrap().parse::<i64>().unwrap() < rows[2]["timestamp"].as_str().unwrap().parse().unwrap());
        let (status, _) = get_json("/futures/data/globalLongShortAccountRatio?symbol=BTCUSDT&period=7m").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let (_, oi) = get_json("/fapi/v1/openInterest?symbol=ETHUSDT").await;
        assert!(oi["openInterest"].as_str().unwrap().contains('.'));

        let (_, by) = get_json("/v5/market/account-ratio?category=linear&symbol=BTCUSDT&period=5min&limit=2").await;
        assert_eq!(by["retCode"], 0);
        assert_eq!(by["result"]["list"].as_array().unwrap().len(), 2);
        let (_, boi) = get_json("/v5/market/open-interest?category=linear&symbol=BTCUSDT&intervalTime=1h&limit=4").await;
        assert_eq!(boi["result"]["list"].as_array().unwrap().len(), 4);

        let (_, okx) = get_json("/api/v5/rubik/stat/contracts/long-short-account-ratio-contract?instId=BTC-USDT-SWAP&period=5m").await;
        let first = &okx["data"][0];
        assert!(first[0].is_string() && first[1].as_str().unwrap().parse::<f64>().unwrap() > 0.0);
        let (_, ooi) = get_json("/api/v5/public/open-interest?instType=SWAP&instId=ETH-USDT-SWAP").await;
        assert_eq!(ooi["code"], "0");
        assert!(ooi["data"][0]["oi"].is_string());
    }
}
