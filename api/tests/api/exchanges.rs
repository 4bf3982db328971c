//! The exchange adapters against the simulated exchange over real HTTP: every venue's history
//! (across its paging) and current rate equal the simulation's exactly; 429s and 5xx are
//! retried; venue errors come back as errors.

use std::sync::Arc;
use std::time::{Duration, Instant};

use api::exchanges::{Exchange, ExchangeClient, ExchangeError, FundingRate};
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
        (Exchange::Bybit, "ETHUSDT", 90),        // > 200 rows: pages backwards
        (Exchange::Okx, "SOLUSDT", 45),          // > 100 rows: pages with `after`
        (Exchange::Hyperliquid, "BTCUSDC", 30),  // hourly, > 500 rows
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
