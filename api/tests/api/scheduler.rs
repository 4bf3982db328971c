//! The round scheduler against real Postgres and the simulated exchange, on a fixed clock.

use std::sync::Arc;
use std::time::Duration;

use api::app::config::default_series;
use api::domain::series::SeriesSpec;
use api::exchanges::{Exchange, ExchangeClient};
use api::services::scheduler::Scheduler;
use api::store::rounds::advance_statuses;
use api::store::series;
use chrono::{DateTime, TimeZone, Utc};
use sim_exchange::model::{DAY_MS, EPOCH_MS, HOUR_MS};
use sim_exchange::{Model, Sim, SimSymbol};
use sqlx::PgPool;
use uuid::Uuid;

use crate::helpers::serve;

/// 100 days into the simulation, 30 minutes past an hour.
const NOW: i64 = EPOCH_MS + 100 * DAY_MS + 5 * HOUR_MS + 30 * 60_000;

fn at(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).unwrap()
}

async fn scheduler_for(db: &PgPool, symbols: Vec<SimSymbol>) -> (Scheduler, String) {
    let app = serve(sim_exchange::router(Arc::new(Sim::at(Model::new(42, symbols), NOW)))).await;
    let venues = Exchange::ALL.iter().map(|e| ExchangeClient::new(*e, &app.base, Duration::from_secs(5))).collect();
    (Scheduler::new(db.clone(), venues, Duration::from_secs(24 * 3600)), app.base)
}

#[derive(sqlx::FromRow, Debug)]
struct Round {
    id: Uuid,
    round_number: i32,
    open_ts: DateTime<Utc>,
    close_ts: DateTime<Utc>,
    settlement_ts: DateTime<Utc>,
    status: String,
    void_reason: Option<String>,
    liquidity_b: i64,
    q_yes: i64,
    q_no: i64,
    yes_price_ppm: i32,
    ou_prior_ppm: i32,
    ou_confidence_ppm: i32,
}

async fn rounds(db: &PgPool, slug: &str) -> Vec<Round> {
    sqlx::query_as(
        "SELECT m.id, round_number, open_ts, close_ts, settlement_ts, status, void_reason, m.liquidity_b, q_yes, q_no, yes_price_ppm, ou_prior_ppm, ou_confidence_ppm
         FROM markets m JOIN series s ON s.id = m.series_id WHERE s.slug = $1 ORDER BY settlement_ts",
    )
    .bind(slug)
    .fetch_all(db)
    .await
    .unwrap()
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn creates_the_next_rounds_with_priors_and_nothing_twice(db: PgPool) {
    series::ensure(&db, &default_series()).await.unwrap();
    assert_eq!(series::ensure(&db, &default_series()).await.unwrap(), 0, "series are seeded once");
    let (scheduler, _) = scheduler_for(&db, sim_exchange::default_symbols()).await;
    let report = scheduler.run_once(at(NOW)).await.unwrap();
    assert!(report.skipped.is_empty(), "{report:?}");
    let again = scheduler.run_once(at(NOW)).await.unwrap();
    assert_eq!((again.created, again.voided), (0, 0), "idempotent");

    let sim = Model::new(42, sim_exchange::default_symbols());
    let btc = sim.find("binance", "BTCUSDT").unwrap().clone();
    let rs = rounds(&db, "binance-btcusdt").await;
    let interval = sim.interval_at(&btc, NOW) * HOUR_MS;
    assert_eq!(rs[0].settlement_ts, at(sim.next_settlement(&btc, NOW)));
    assert!(rs.len() >= 3 && rs.windows(2).all(|w| (w[1].settlement_ts - w[0].settlement_ts).num_milliseconds() == interval));
    assert_eq!(rs[0].open_ts, at(NOW), "the first round opens now");
    for (i, r) in rs.iter().enumerate() {
        assert_eq!(r.round_number as usize, i + 1);
        assert_eq!(r.close_ts, r.settlement_ts - chrono::Duration::minutes(5));
        if i > 0 {
            assert_eq!(r.open_ts, rs[i - 1].settlement_ts, "a round opens when the previous settles");
        }
        assert_eq!(r.liquidity_b, 200_000_000, "tier 1");
        // The opening state is the LMSR's for the prior, and the price the state's.
        let opening = lmsr::Lmsr::opening(200_000_000, (r.ou_prior_ppm as u32).clamp(1, 999_999)).unwrap();
        assert_eq!((r.q_yes as u64, r.q_no as u64), (opening.q(lmsr::Side::Yes), opening.q(lmsr::Side::No)));
        assert_eq!(r.yes_price_ppm as u64, opening.prices_micro().0);
        assert!((0..=1_000_000).contains(&r.ou_confidence_ppm));
    }
    assert_eq!(rs[0].status, "open");
    assert!(rs[1..].iter().all(|r| r.status == "pending"));
    assert!(rs.iter().any(|r| r.ou_confidence_ppm > 0), "60 days of history inform the prior");
    // Hourly series get a day of rounds.
    assert!(rounds(&db, "hyperliquid-btcusdc").await.len() >= 24);
    let prices: i64 = sqlx::query_scalar("SELECT count(*) FROM market_prices").fetch_one(&db).await.unwrap();
    let markets: i64 = sqlx::query_scalar("SELECT count(*) FROM markets").fetch_one(&db).await.unwrap();
    assert_eq!(prices, markets, "each round starts its price history");
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn two_replicas_never_create_a_round_twice(db: PgPool) {
    series::ensure(&db, &default_series()).await.unwrap();
    let (a, _) = scheduler_for(&db, sim_exchange::default_symbols()).await;
    let (b, _) = scheduler_for(&db, sim_exchange::default_symbols()).await;
    let (ra, rb) = tokio::join!(a.run_once(at(NOW)), b.run_once(at(NOW)));
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    let total: i64 = sqlx::query_scalar("SELECT count(*) FROM markets").fetch_one(&db).await.unwrap();
    assert_eq!(ra.created + rb.created, total as u64);
    let distinct: i64 = sqlx::query_scalar("SELECT count(DISTINCT (series_id, settlement_ts)) FROM markets").fetch_one(&db).await.unwrap();
    assert_eq!(distinct, total);
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn statuses_follow_the_clock(db: PgPool) {
    series::ensure(&db, &default_series()[..1]).await.unwrap(); // binance BTCUSDT
    let (scheduler, _) = scheduler_for(&db, sim_exchange::default_symbols()).await;
    scheduler.run_once(at(NOW)).await.unwrap();
    let rs = rounds(&db, "binance-btcusdt").await;
    let (first, second) = (&rs[0], &rs[1]);
    let status = |id: Uuid| {
        let db = db.clone();
        async move { sqlx::query_scalar::<_, String>("SELECT status FROM markets WHERE id = $1").bind(id).fetch_one(&db).await.unwrap() }
    };
    advance_statuses(&db, first.close_ts - chrono::Duration::seconds(1)).await.unwrap();
    assert_eq!(status(first.id).await, "open");
    advance_statuses(&db, first.close_ts).await.unwrap();
    assert_eq!(status(first.id).await, "closed");
    assert_eq!(status(second.id).await, "pending");
    advance_statuses(&db, first.settlement_ts).await.unwrap();
    assert_eq!((status(first.id).await.as_str(), status(second.id).await.as_str()), ("resolving", "open"));
    assert_eq!(advance_statuses(&db, first.settlement_ts).await.unwrap(), 0, "nothing left to move");
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn an_interval_change_voids_the_rounds_that_no_longer_settle(db: PgPool) {
    let spec = SeriesSpec { exchange: Exchange::Bybit, symbol: "SUIUSDT".into(), interval_minutes: 60 };
    series::ensure(&db, &[spec]).await.unwrap();
    let hourly = vec![SimSymbol::new("bybit", "SUIUSDT", 60)];
    let (scheduler, _) = scheduler_for(&db, hourly).await;
    scheduler.run_once(at(NOW)).await.unwrap();
    let before = rounds(&db, "bybit-suiusdt").await;
    assert!(before.len() >= 24);

    // The exchange moves the symbol to 4-hour funding.
    let four_hourly = vec![SimSymbol::new("bybit", "SUIUSDT", 240)];
    let (scheduler, _) = scheduler_for(&db, four_hourly).await;
    let report = scheduler.run_once(at(NOW)).await.unwrap();
    let after = rounds(&db, "bybit-suiusdt").await;
    let on_4h_grid = |t: &DateTime<Utc>| t.timestamp_millis() / HOUR_MS % 4 == 0;
    // Marked to be voided (the oracle voids them on chain and the crank refunds them), and
    // closed to trading at once.
    for r in &after {
        assert_eq!(r.void_reason.is_some(), !on_4h_grid(&r.settlement_ts), "{r:?}");
        if r.void_reason.is_some() {
            assert_eq!((r.status.as_str(), r.void_reason.as_deref()), ("closed", Some("interval_change")), "{r:?}");
        }
    }
    assert_eq!(report.voided as usize, after.iter().filter(|r| r.void_reason.is_some()).count());
    // The clock does not reopen them.
    advance_statuses(&db, at(NOW)).await.unwrap();
    assert!(rounds(&db, "bybit-suiusdt").await.iter().filter(|r| r.void_reason.is_some()).all(|r| r.status == "closed"));
    assert_eq!(report.created, 0, "every 4-hour time already had a round");
    let interval: i16 = sqlx::query_scalar("SELECT interval_hours FROM series WHERE slug = 'bybit-suiusdt'").fetch_one(&db).await.unwrap();
    assert_eq!(interval, 4);
}

/// A pass reads the clock, then asks the venue; when the venue answers after one of its
/// settlements it has already rolled its next funding time past that round. The round was
/// settled by the venue, not removed by an interval change: it is resolved, never voided.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_pass_that_straddles_a_settlement_voids_nothing(db: PgPool) {
    let spec = SeriesSpec { exchange: Exchange::Bybit, symbol: "SUIUSDT".into(), interval_minutes: 60 };
    series::ensure(&db, &[spec]).await.unwrap();
    let sim = Arc::new(Sim::at(Model::new(42, vec![SimSymbol::new("bybit", "SUIUSDT", 60)]), NOW));
    let app = serve(sim_exchange::router(sim.clone())).await;
    let venues = Exchange::ALL.iter().map(|e| ExchangeClient::new(*e, &app.base, Duration::from_secs(5))).collect();
    let scheduler = Scheduler::new(db.clone(), venues, Duration::from_secs(24 * 3600));
    scheduler.run_once(at(NOW)).await.unwrap();
    let first = rounds(&db, "bybit-suiusdt").await.remove(0);
    let settlement = first.settlement_ts.timestamp_millis();

    // The venue answers a second after the first round's settlement; the pass's clock was read
    // a second before it (a pass that started then and reached this venue late).
    sim.set_now(settlement + 1_000);
    let report = scheduler.run_once(at(settlement - 1_000)).await.unwrap();
    assert_eq!(report.voided, 0, "{report:?}");
    assert!(rounds(&db, "bybit-suiusdt").await.iter().all(|r| r.void_reason.is_none()));

    // The next pass, on the venue's time, moves the round on to be resolved.
    let report = scheduler.run_once_with(&|| at(settlement + 1_000)).await.unwrap();
    assert_eq!(report.voided, 0, "{report:?}");
    let after = rounds(&db, "bybit-suiusdt").await;
    assert_eq!((after[0].id, after[0].status.as_str(), after[0].void_reason.as_deref()), (first.id, "resolving", None));
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn an_exchange_outage_skips_only_its_series(db: PgPool) {
    series::ensure(&db, &default_series()).await.unwrap();
    let (scheduler, base) = scheduler_for(&db, sim_exchange::default_symbols()).await;
    let body = serde_json::json!({"venue": "okx", "status": 503, "count": 1000});
    reqwest::Client::new().post(format!("{base}/sim/faults")).json(&body).send().await.unwrap();
    let report = scheduler.run_once(at(NOW)).await.unwrap();
    assert_eq!(report.skipped.len(), 4, "{report:?}");
    assert!(report.skipped.iter().all(|s| s.starts_with("okx-")));
    let okx: i64 =
        sqlx::query_scalar("SELECT count(*) FROM markets m JOIN series s ON s.id = m.series_id WHERE s.exchange = 'okx'").fetch_one(&db).await.unwrap();
    let others: i64 = sqlx::query_scalar("SELECT count(*) FROM markets").fetch_one(&db).await.unwrap();
    assert_eq!(okx, 0);
    assert!(others > 0);
}
