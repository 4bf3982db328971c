//! The exchange adapters against the simulated exchange over real HTTP: every venue's history
//! (across its paging) and current rate equal the simulation's exactly; 429s and 5xx are
//! retried; venue errors come back as errors.

use std::sync::Arc;
use std::time::{Duration, Instant};

use api::exchanges::{CrowdReading, Exchange, ExchangeClient, ExchangeError, FundingRate, ListedPerp};
use sim_exchange::model::{DAY_MS, EPOCH_MS, HOUR_MS};
use sim_exchange::{Model, Sim, default_symbols};

use crate::helpers::serve;

/// 100 days and 5.5 hours after the grid starts: a fixed clock.
const NOW: i64 = EPOCH_MS + 100 * DAY_MS + 5 * HOUR_MS + 30 * 60_000;

async fn sim() -> (String, Arc<Sim>) {
    let sim = Arc::new(Sim::at(Model::new(42, default_symbols()), NOW));
    let app = serve(sim_exchange::router(sim.clone())).await;
    (app.base, sim)
}

fn client(exchange: Exchange, base: &str) -> ExchangeClient {
    ExchangeClient::new(exchange, base, Duration::from_secs(5))
}

#[tokio::test]
async fn every_venue_returns_the_simulated_history_exactly_across_pages() {
    let (base, sim) = sim().await;
    for (exchange, symbol, days) in [
        (Exchange::Binance, "BTCUSDT", 40),
        (Exchange::Bybit, "ETHUSDT", 90),       // > 200 rows: pages backwards
        (Exchange::Okx, "SOLUSDT", 45),         // > 100 rows: pages with `after`
        (Exchange::Hyperliquid, "BTCUSDC", 30), // hourly, > 500 rows
    ] {
        let s = sim.model.find(exchange.id(), symbol).unwrap().clone();
        let (start, end) = (NOW - days * DAY_MS, NOW);
        let got = client(exchange, &base).funding_history(symbol, start, end).await.unwrap();
        let expected: Vec<(i64, i64)> = sim.model.settlements(&s, start, end, NOW).into_iter().map(|t| (t, sim.model.rate_at(&s, t))).collect();
        assert!(expected.len() > 100, "{exchange:?}: the case must span pages");
        let got: Vec<(i64, i64)> = got.iter().map(|p| (p.time_ms, p.rate.0)).collect();
        assert_eq!(got, expected, "{exchange:?}");
    }
}

/// Binance's history asked without a symbol: every contract settled in the window, each exactly
/// as its own history shows it, from one request; a window holding more rows than a page is
/// said to be incomplete. The venues whose history needs a symbol have no such read.
#[tokio::test]
async fn binance_answers_for_every_contract_at_once() {
    let (base, sim) = sim().await;
    let binance = client(Exchange::Binance, &base);
    let btc = sim.model.find("binance", "BTCUSDT").unwrap().clone();
    let settled = sim.model.last_settlement(&btc, NOW);
    let (start, end) = (settled - 60_000, settled + 60_000);
    let all = binance.history_of_all(start, end).await.unwrap().unwrap();
    assert!(all.complete);
    let mut expected = 0;
    for s in sim.model.listed("binance") {
        let own = binance.funding_history(&s.symbol, start, end).await.unwrap();
        assert_eq!(all.points.get(&s.symbol).cloned().unwrap_or_default(), own, "{}", s.symbol);
        expected += own.len();
    }
    assert!(all.points.contains_key("BTCUSDT") && expected >= 2, "the window holds several contracts' settlement");
    assert_eq!(all.points.values().map(Vec::len).sum::<usize>(), expected, "nothing but the listed contracts");
    // 500 contracts settle more rows in a day than one page holds: the read says it is not whole.
    let wide = Arc::new(Sim::at(Model::with_universe(42, default_symbols(), 500), NOW));
    let wide = serve(sim_exchange::router(wide)).await;
    let day = client(Exchange::Binance, &wide.base).history_of_all(NOW - DAY_MS, NOW).await.unwrap().unwrap();
    assert!(!day.complete);
    assert_eq!(day.points.values().map(Vec::len).sum::<usize>(), 1_000);
    for exchange in [Exchange::Bybit, Exchange::Okx, Exchange::Hyperliquid] {
        assert!(client(exchange, &base).history_of_all(start, end).await.is_none(), "{exchange:?} is asked per symbol");
    }
}

/// OKX's `settFundingRate` is the rate charged at the previous settlement (a witness for the
/// oracle), for one swap or, from one request (`instId=ANY`), for every swap; the other venues
/// have no such field and say so rather than offer a prediction.
#[tokio::test]
async fn okx_reports_its_last_settlement_and_the_others_have_none() {
    let (base, sim) = sim().await;
    let okx = client(Exchange::Okx, &base);
    let s = sim.model.find("okx", "BTCUSDT").unwrap().clone();
    let settled = okx.last_settled("BTCUSDT").await.unwrap();
    let last = sim.model.last_settlement(&s, NOW);
    assert_eq!((settled.time_ms, settled.rate), (last, FundingRate(sim.model.rate_at(&s, last))));
    let all = okx.last_settled_of_all().await.unwrap().unwrap();
    assert!(all.complete);
    let mut listed = 0;
    for s in sim.model.listed("okx") {
        assert_eq!(all.points.get(&s.symbol).cloned().unwrap_or_default(), [okx.last_settled(&s.symbol).await.unwrap()], "{}", s.symbol);
        listed += 1;
    }
    assert_eq!(all.points.len(), listed, "every swap, nothing else");
    assert_eq!(sim.requests("/api/v5/public/funding-rate"), 2 + listed as u64, "all of them in one request");
    for exchange in [Exchange::Binance, Exchange::Bybit, Exchange::Hyperliquid] {
        assert!(matches!(client(exchange, &base).last_settled("BTCUSDT").await, Err(ExchangeError::NotPublished(_))), "{exchange:?}");
        assert!(client(exchange, &base).last_settled_of_all().await.is_none(), "{exchange:?}");
    }
}

#[tokio::test]
async fn every_venue_reports_the_current_rate_and_interval() {
    let (base, sim) = sim().await;
    for (exchange, symbol) in [(Exchange::Binance, "ETHUSDT"), (Exchange::Bybit, "BTCUSDT"), (Exchange::Okx, "BTCUSDT"), (Exchange::Hyperliquid, "ETHUSDC")] {
        let s = sim.model.find(exchange.id(), symbol).unwrap().clone();
        let current = client(exchange, &base).current(symbol).await.unwrap();
        // The rate field shows the last settled rate until the next settlement.
        let last = sim.model.last_settlement(&s, NOW);
        assert_eq!(current.rate, FundingRate(sim.model.rate_at(&s, last)), "{exchange:?}");
        assert_eq!(current.interval_hours as i64, sim.model.interval_at(&s, NOW), "{exchange:?}");
        assert_eq!(current.next_funding_ms, sim.model.next_settlement(&s, NOW), "{exchange:?}");
        assert!(current.next_funding_ms > NOW);
    }
}

async fn fault(base: &str, venue: &str, status: u16, count: u32, retry_after: Option<u64>) {
    let body = serde_json::json!({"venue": venue, "status": status, "count": count, "retry_after_secs": retry_after});
    let r = reqwest::Client::new().post(format!("{base}/sim/faults")).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 204);
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried() {
    let (base, _) = sim().await;
    fault(&base, "binance", 429, 2, Some(1)).await;
    let started = Instant::now();
    client(Exchange::Binance, &base).funding_history("BTCUSDT", NOW - DAY_MS, NOW).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(2), "Retry-After was honoured");
    fault(&base, "bybit", 503, 2, None).await;
    client(Exchange::Bybit, &base).current("BTCUSDT").await.unwrap();
    // A venue that keeps refusing ends in an error, not an endless wait.
    fault(&base, "okx", 429, 10, Some(0)).await;
    assert!(matches!(client(Exchange::Okx, &base).current("BTCUSDT").await, Err(ExchangeError::RateLimited)));
    fault(&base, "hyperliquid", 429, 1, Some(3600)).await;
    assert!(matches!(client(Exchange::Hyperliquid, &base).current("BTCUSDC").await, Err(ExchangeError::RateLimited)));
}

#[tokio::test]
async fn unknown_symbols_are_errors_in_each_venues_shape() {
    let (base, _) = sim().await;
    let binance = client(Exchange::Binance, &base).current("NOPEUSDT").await;
    assert!(matches!(binance, Err(ExchangeError::Status { status: 400, .. })), "{binance:?}");
    let bybit = client(Exchange::Bybit, &base).current("NOPEUSDT").await;
    assert!(matches!(bybit, Err(ExchangeError::Api { ref code, .. }) if code == "10001"), "{bybit:?}");
    let okx = client(Exchange::Okx, &base).funding_history("NOPEUSDT", NOW - DAY_MS, NOW).await;
    assert!(matches!(okx, Err(ExchangeError::Api { ref code, .. }) if code == "51001"), "{okx:?}");
    let hl = client(Exchange::Hyperliquid, &base).current("NOPEUSDC").await;
    assert!(matches!(hl, Err(ExchangeError::UnknownSymbol(_))), "{hl:?}");
    assert!(client(Exchange::Hyperliquid, &base).funding_history("NOPEUSDC", NOW - DAY_MS, NOW).await.unwrap().is_empty());
    let unreachable = ExchangeClient::new(Exchange::Binance, "http://127.0.0.1:9", Duration::from_millis(300));
    assert!(matches!(unreachable.current("BTCUSDT").await, Err(ExchangeError::Transport(_))));
}

/// A local server answering with samples in each venue's documented format (not the simulator):
/// Binance's delivery contracts and symbols absent from `fundingInfo`, Bybit's cursor pages with
/// dated futures and a pre-launch perp, OKX's suspended swaps and a refused instrument,
/// Hyperliquid's predictions of other venues, and each venue's error envelope.
async fn documented_formats() -> String {
    use axum::extract::Query;
    use axum::routing::{get, post};
    use axum::{Json, Router};
    use serde_json::{Value, json};
    use std::collections::HashMap;
    type Q = Query<HashMap<String, String>>;

    let router = Router::new()
        .route("/fapi/v1/premiumIndex", get(|| async { Json(json!([
            {"symbol": "BTCUSDT", "markPrice": "11793.63104562", "indexPrice": "11781.80495970", "estimatedSettlePrice": "11781.16138815",
             "lastFundingRate": "0.00038246", "interestRate": "0.00010000", "nextFundingTime": 1597392000000u64, "time": 1597370495002u64},
            {"symbol": "BLZUSDT", "markPrice": "0.05123000", "indexPrice": "0.05120000", "estimatedSettlePrice": "0.05119000",
             "lastFundingRate": "-0.00012000", "interestRate": "0.00010000", "nextFundingTime": 1597384800000u64, "time": 1597370495002u64},
            {"symbol": "BTCUSDT_251226", "markPrice": "11900.10000000", "indexPrice": "11781.80495970", "estimatedSettlePrice": "11781.16138815",
             "lastFundingRate": "", "interestRate": "", "nextFundingTime": 0, "time": 1597370495002u64}
        ])) }))
        .route("/fapi/v1/fundingInfo", get(|| async { Json(json!([
            {"symbol": "BLZUSDT", "adjustedFundingRateCap": "0.02500000", "adjustedFundingRateFloor": "-0.02500000", "fundingIntervalHours": 4, "disclaimer": false}
        ])) }))
        .route("/futures/data/globalLongShortAccountRatio", get(|Query(q): Q| async move {
            match q["symbol"].as_str() {
                "BTCUSDT" => Json(json!([{"symbol": "BTCUSDT", "longShortRatio": "1.9559", "longAccount": "0.6617", "shortAccount": "0.3382", "timestamp": "1583139900000"}])).into_response(),
                "BLZUSDT" => Json(json!([])).into_response(),
                _ => (axum::http::StatusCode::BAD_REQUEST, Json(json!({"code": -1121, "msg": "Invalid symbol."}))).into_response(),
            }
        }))
        .route("/fapi/v1/openInterest", get(|| async { Json(json!({"openInterest": "10659.509", "symbol": "BTCUSDT", "time": 1589437530011u64})) }))
        .route("/v5/market/instruments-info", get(|Query(q): Q| async move {
            let instrument = |symbol: &str, kind: &str, status: &str, minutes: u32| json!({
                "symbol": symbol, "contractType": kind, "status": status, "baseCoin": "X", "quoteCoin": "USDT",
                "launchTime": "1585526400000", "deliveryTime": "0", "deliveryFeeRate": "", "priceScale": "2",
                "leverageFilter": {"minLeverage": "1", "maxLeverage": "100.00", "leverageStep": "0.01"},
                "priceFilter": {"minPrice": "0.10", "maxPrice": "199999.80", "tickSize": "0.10"},
                "lotSizeFilter": {"maxOrderQty": "100.000", "minOrderQty": "0.001", "qtyStep": "0.001"},
                "unifiedMarginTrade": true, "fundingInterval": minutes, "settleCoin": "USDT", "copyTrading": "both",
                "upperFundingRate": "0.00375", "lowerFundingRate": "-0.00375", "isPreListing": false});
            let (list, next) = match q.get("cursor").map(String::as_str) {
                None => (vec![instrument("BTCUSDT", "LinearPerpetual", "Trading", 480), instrument("BTC-26DEC25", "LinearFutures", "Trading", 0)],
                         "first%3D1%26last%3D2"),
                Some("first%3D1%26last%3D2") => (vec![instrument("ETHUSDT", "LinearPerpetual", "Trading", 240), instrument("NEWUSDT", "LinearPerpetual", "PreLaunch", 480)], ""),
                Some(_) => return Json(json!({"retCode": 10001, "retMsg": "params error: cursor invalid", "result": {}, "retExtInfo": {}, "time": 1})),
            };
            Json(json!({"retCode": 0, "retMsg": "OK", "result": {"category": "linear", "list": list, "nextPageCursor": next}, "retExtInfo": {}, "time": 1}))
        }))
        .route("/v5/market/tickers", get(|| async { Json(json!({"retCode": 0, "retMsg": "OK", "result": {"category": "linear", "list": [
            {"symbol": "BTCUSDT", "lastPrice": "63000.10", "openInterest": "51234.1", "openInterestValue": "3227750000.00", "fundingRate": "0.0001", "nextFundingTime": "1700000000000"},
            {"symbol": "ETHUSDT", "lastPrice": "3000.10", "openInterest": "1000", "openInterestValue": "3000100.5", "fundingRate": "0.0001", "nextFundingTime": "1700000000000"}
        ]}, "retExtInfo": {}, "time": 1})) }))
        .route("/v5/market/account-ratio", get(|Query(q): Q| async move {
            match q["symbol"].as_str() {
                "BTCUSDT" => Json(json!({"retCode": 0, "retMsg": "OK", "result": {"list": [{"symbol": "BTCUSDT", "buyRatio": "0.49", "sellRatio": "0.51", "timestamp": "1696262400000"}], "nextPageCursor": "lastid%3D0"}, "retExtInfo": {}, "time": 1})),
                _ => Json(json!({"retCode": 10001, "retMsg": "params error: symbol invalid", "result": {}, "retExtInfo": {}, "time": 1})),
            }
        }))
        .route("/api/v5/public/instruments", get(|| async { Json(json!({"code": "0", "msg": "", "data": [
            {"instType": "SWAP", "instId": "BTC-USDT-SWAP", "uly": "BTC-USDT", "instFamily": "BTC-USDT", "settleCcy": "USDT", "ctVal": "0.01", "ctType": "linear", "state": "live"},
            {"instType": "SWAP", "instId": "ETH-USD-SWAP", "uly": "ETH-USD", "instFamily": "ETH-USD", "settleCcy": "ETH", "ctVal": "10", "ctType": "inverse", "state": "live"},
            {"instType": "SWAP", "instId": "OLD-USDT-SWAP", "uly": "OLD-USDT", "instFamily": "OLD-USDT", "settleCcy": "USDT", "ctVal": "1", "ctType": "linear", "state": "suspend"},
            {"instType": "SWAP", "instId": "GONE-USDT-SWAP", "uly": "GONE-USDT", "instFamily": "GONE-USDT", "settleCcy": "USDT", "ctVal": "1", "ctType": "linear", "state": "live"}
        ]})) }))
        .route("/api/v5/public/open-interest", get(|| async { Json(json!({"code": "0", "msg": "", "data": [
            {"instType": "SWAP", "instId": "BTC-USDT-SWAP", "oi": "2216113.01", "oiCcy": "22161.1301", "oiUsd": "1946871541.7", "ts": "1701417600000"}
        ]})) }))
        .route("/api/v5/public/funding-rate", get(|Query(q): Q| async move {
            let row = |inst: &str, funding: &str, next: &str| json!({"code": "0", "msg": "", "data": [{
                "instType": "SWAP", "instId": inst, "fundingRate": "0.0001", "nextFundingRate": "", "fundingTime": funding,
                "nextFundingTime": next, "minFundingRate": "-0.0075", "maxFundingRate": "0.0075", "settState": "settled",
                "settFundingRate": "0.0001", "premium": "0.0001", "method": "current_period", "ts": "1701417600000"}]});
            Json(match q["instId"].as_str() {
                "BTC-USDT-SWAP" => row("BTC-USDT-SWAP", "1700000000000", "1700028800000"),
                "ETH-USD-SWAP" => row("ETH-USD-SWAP", "1700000000000", "1700014400000"),
                _ => json!({"code": "51001", "msg": "Instrument ID does not exist", "data": []}),
            })
        }))
        .route("/api/v5/rubik/stat/contracts/long-short-account-ratio-contract", get(|Query(q): Q| async move {
            Json(match q["instId"].as_str() {
                "BTC-USDT-SWAP" => json!({"code": "0", "msg": "", "data": [["1701417600000", "1.1739"], ["1701417300000", "1.1684"]]}),
                _ => json!({"code": "51001", "msg": "Instrument ID does not exist", "data": []}),
            })
        }))
        .route("/info", post(|Json(body): Json<Value>| async move {
            match body["type"].as_str() {
                Some("predictedFundings") => Json(json!([
                    ["BTC", [["BinPerp", {"fundingRate": "0.0001", "nextFundingTime": 1733961600000u64, "fundingIntervalHours": 8}],
                             ["HlPerp", {"fundingRate": "0.0000125", "nextFundingTime": 1733958000000u64, "fundingIntervalHours": 1}],
                             ["BybitPerp", null]]],
                    ["ONLYBIN", [["BinPerp", {"fundingRate": "0.0001", "nextFundingTime": 1733961600000u64, "fundingIntervalHours": 8}]]],
                    ["kPEPE", [["HlPerp", {"fundingRate": "-0.00001", "nextFundingTime": 1733958000000u64, "fundingIntervalHours": 1}]]]
                ])).into_response(),
                _ => (axum::http::StatusCode::UNPROCESSABLE_ENTITY, "Failed to deserialize the JSON body").into_response(),
            }
        }));
    use axum::response::IntoResponse;
    serve(router).await.base
}

fn listed(symbol: &str, interval_minutes: u32, mark_price_e8: Option<i64>, open_interest_cents: Option<i64>) -> ListedPerp {
    ListedPerp { symbol: symbol.into(), interval_minutes, mark_price_e8, open_interest_cents }
}

#[tokio::test]
async fn listings_and_crowd_in_each_venues_documented_format() {
    let base = documented_formats().await;

    let binance = client(Exchange::Binance, &base);
    let perps = binance.listing().await.unwrap();
    assert_eq!(
        perps,
        [listed("BTCUSDT", 480, Some(1_179_363_104_562), None), listed("BLZUSDT", 240, Some(5_123_000), None)],
        "delivery contracts left out; absent from fundingInfo = 8 h"
    );
    let btc = binance.crowd(&perps[0]).await.unwrap().unwrap();
    // 10,659.509 BTC × 11,793.63104562 = 125,714,316.2734… USD.
    assert_eq!(btc, CrowdReading { long_ppm: 661_700, short_ppm: 338_200, timestamp_ms: 1_583_139_900_000, open_interest_cents: Some(12_571_431_627) });
    assert_eq!(binance.crowd(&perps[1]).await.unwrap(), None, "no ratio published yet");
    let refused = binance.crowd(&listed("NOPEUSDT", 480, None, None)).await;
    assert!(matches!(refused, Err(ExchangeError::Status { status: 400, .. })), "{refused:?}");

    let bybit = client(Exchange::Bybit, &base);
    let perps = bybit.listing().await.unwrap();
    assert_eq!(
        perps,
        [listed("BTCUSDT", 480, None, Some(322_775_000_000)), listed("ETHUSDT", 240, None, Some(300_010_050))],
        "both pages; futures and pre-launch left out"
    );
    let reading = bybit.crowd(&perps[0]).await.unwrap().unwrap();
    assert_eq!(reading, CrowdReading { long_ppm: 490_000, short_ppm: 510_000, timestamp_ms: 1_696_262_400_000, open_interest_cents: Some(322_775_000_000) });
    let refused = bybit.crowd(&listed("NOPEUSDT", 480, None, None)).await;
    assert!(matches!(refused, Err(ExchangeError::Api { ref code, .. }) if code == "10001"), "{refused:?}");

    let okx = client(Exchange::Okx, &base);
    let perps = okx.listing().await.unwrap();
    assert_eq!(perps, [listed("BTCUSDT", 480, None, Some(194_687_154_170)), listed("ETHUSD", 240, None, None)], "suspended and refused swaps left out");
    let reading = okx.crowd(&perps[0]).await.unwrap().unwrap();
    // 1.1739 accounts long per account short: 1.1739 / 2.1739 = 0.5399972…
    assert_eq!(reading, CrowdReading { long_ppm: 539_997, short_ppm: 460_003, timestamp_ms: 1_701_417_600_000, open_interest_cents: Some(194_687_154_170) });
    let refused = okx.crowd(&perps[1]).await;
    assert!(matches!(refused, Err(ExchangeError::Api { ref code, .. }) if code == "51001"), "{refused:?}");

    let hyperliquid = client(Exchange::Hyperliquid, &base);
    assert_eq!(
        hyperliquid.listing().await.unwrap(),
        [listed("BTCUSDC", 60, None, None), listed("kPEPEUSDC", 60, None, None)],
        "only coins with a Hyperliquid perp"
    );
    assert!(!hyperliquid.has_crowd_data());
    assert_eq!(hyperliquid.crowd(&listed("BTCUSDC", 60, None, None)).await.unwrap(), None);
}

#[tokio::test]
async fn the_simulated_universe_lists_every_perp_in_each_venues_format() {
    let sim = Arc::new(Sim::at(Model::with_universe(42, default_symbols(), 520), NOW));
    let base = serve(sim_exchange::router(sim.clone())).await.base;
    for exchange in Exchange::ALL {
        let perps = client(exchange, &base).listing().await.unwrap();
        assert_eq!(perps.len(), 520, "{exchange:?}: Bybit across two pages");
        for perp in perps.iter().step_by(37) {
            let s = sim.model.find(exchange.id(), &perp.symbol).unwrap();
            assert_eq!(perp.interval_minutes as i64 * 60_000, sim.model.interval_ms_at(s, NOW).max(HOUR_MS), "{exchange:?} {}", perp.symbol);
        }
        if exchange != Exchange::Hyperliquid {
            let reading = client(exchange, &base).crowd(&perps[3]).await.unwrap().unwrap();
            let s = sim.model.find(exchange.id(), &perps[3].symbol).unwrap();
            let truth = sim.model.long_share_ppm(s, reading.timestamp_ms) as u32;
            assert!(truth.abs_diff(reading.long_ppm) <= 10_000, "{exchange:?}: {} vs {truth}", reading.long_ppm);
            assert!(reading.open_interest_cents.unwrap() > 0);
        }
    }
}
