//! Market data: the collectors over the simulated universe (every venue's real formats over
//! HTTP, real Postgres), an interval change of a configured series reaching the scheduler, and
//! the eight public endpoints' shapes, paging, sorting and filters.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use api::domain::market_data::interval_label;
use api::domain::series::SeriesSpec;
use api::exchanges::{Exchange, ExchangeClient};
use api::services::collector::Collector;
use api::services::scheduler::Scheduler;
use api::store::{crowd, intervals, series};
use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;
use sim_exchange::model::{DAY_MS, EPOCH_MS, HOUR_MS, MINUTE_MS};
use sim_exchange::{Model, Sim, SimSymbol, default_symbols};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use crate::helpers::{TestApp, code_of, redis_url, serve, spawn, state};

const PER_VENUE: usize = 150;

fn at(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).unwrap()
}

fn collector(db: &PgPool, exchange: Exchange, base: &str, scheduler: Option<Arc<Scheduler>>) -> Collector {
    Collector::new(db.clone(), ExchangeClient::new(exchange, base, Duration::from_secs(5)), scheduler, chrono::Duration::days(30))
}

/// The simulation at `now_ms`, served.
async fn simulated(now_ms: i64) -> (Arc<Sim>, String) {
    let sim = Arc::new(Sim::at(Model::with_universe(42, default_symbols(), PER_VENUE), now_ms));
    let base = serve(sim_exchange::router(sim.clone())).await.base;
    (sim, base)
}

/// What the collectors recorded: the listings 21 days apart, the later at 12:30 today (so the
/// crowd's history falls within a day of the real clock, and no settlement asked about lies on
/// the next day, whose interval may differ), two crowd sweeps 15 minutes apart.
struct Collected {
    sim: Arc<Sim>,
    /// (exchange, symbol) → (from, to) minutes, computed from the model.
    expected_changes: HashMap<(String, String), (i64, i64)>,
}

async fn collect(db: &PgPool) -> Collected {
    let now = Utc::now().timestamp_millis().div_euclid(DAY_MS) * DAY_MS + 12 * HOUR_MS + 30 * MINUTE_MS;
    let then = now - 21 * DAY_MS;
    let (sim, base) = simulated(then).await;
    let collectors: Vec<Collector> = Exchange::ALL.iter().map(|e| collector(db, *e, &base, None)).collect();
    for c in &collectors {
        let (listing, report) = c.collect_intervals(&|| at(then)).await.unwrap();
        assert_eq!(
            (listing.len(), report.new, report.changes.len()),
            (PER_VENUE, PER_VENUE, 0),
            "{:?}: first sight records, changes nothing",
            c.venue().exchange()
        );
        let (_, again) = c.collect_intervals(&|| at(then)).await.unwrap();
        assert_eq!((again.new, again.changes.len(), again.delisted), (0, 0, 0), "a listing recorded twice changes nothing");
    }
    sim.set_now(now);
    let minutes = |s: &SimSymbol, t: i64| (sim.model.interval_ms_at(s, t) / MINUTE_MS).max(60);
    let mut expected_changes = HashMap::new();
    for c in &collectors {
        let exchange = c.venue().exchange().id();
        let (listing, report) = c.collect_intervals(&|| at(now)).await.unwrap();
        let got: BTreeSet<(String, i32, i32)> = report.changes.iter().map(|c| (c.symbol.clone(), c.from_minutes, c.to_minutes)).collect();
        let mut expected = BTreeSet::new();
        for s in sim.model.listed(exchange) {
            let (from, to) = (minutes(s, then), minutes(s, now));
            if from != to {
                expected.insert((s.symbol.clone(), from as i32, to as i32));
                expected_changes.insert((exchange.to_owned(), s.symbol.clone()), (from, to));
            }
        }
        assert_eq!(got, expected, "{exchange}: exactly the model's changes");
        let sweep = c.collect_crowd(&listing, &CancellationToken::new()).await.unwrap();
        let readable = if exchange == "hyperliquid" { 0 } else { PER_VENUE };
        assert_eq!((sweep.recorded, sweep.skipped, sweep.cancelled), (readable, 0, false), "{exchange}");
    }
    assert!(expected_changes.len() > 5, "the universe's intervals changed in three weeks: {}", expected_changes.len());
    // A second sweep a quarter of an hour later: a second point of history each.
    sim.set_now(now + 15 * MINUTE_MS);
    for c in &collectors[..3] {
        let (listing, _) = c.collect_intervals(&|| at(now)).await.unwrap();
        assert_eq!(c.collect_crowd(&listing, &CancellationToken::new()).await.unwrap().recorded, PER_VENUE);
        assert_eq!(c.collect_crowd(&listing, &CancellationToken::new()).await.unwrap().recorded, PER_VENUE, "a sweep repeated is harmless");
    }
    Collected { sim, expected_changes }
}

async fn json(app: &TestApp, path: &str) -> Value {
    let r = app.get(path).await;
    assert_eq!(r.status(), 200, "{path}");
    r.json().await.unwrap()
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn the_interval_endpoints(db: PgPool) {
    let collected = collect(&db).await;
    let app = spawn(state(db.clone(), &redis_url())).await;
    let total_perps = 4 * PER_VENUE as u64;
    let changes = collected.expected_changes.len() as u64;

    // Threaded: every perp, most changed first, zero-indexed pages of 30.
    let t = json(&app, "/v1/intervals/threaded").await;
    assert_eq!((t["meta"]["page"].as_u64(), t["meta"]["limit"].as_u64(), t["meta"]["total"].as_u64()), (Some(0), Some(30), Some(total_perps)));
    let rows = t["data"].as_array().unwrap();
    assert_eq!(rows.len(), 30);
    assert!(rows.windows(2).all(|w| w[0]["change_count"].as_i64() >= w[1]["change_count"].as_i64()));
    let first = &rows[0];
    assert_eq!(first["change_count"], 1);
    let key = (first["exchange"].as_str().unwrap().to_owned(), first["symbol"].as_str().unwrap().to_owned());
    let (from, to) = collected.expected_changes[&key];
    assert_eq!(first["current_interval"], interval_label(to as i32));
    assert!(first["last_changed_at"].is_string());
    let unchanged = &json(&app, "/v1/intervals/threaded?order=asc&limit=1").await["data"][0];
    assert_eq!((unchanged["change_count"].as_i64(), unchanged["last_changed_at"].is_null()), (Some(0), true));
    let by_symbol = json(&app, "/v1/intervals/threaded?sort=symbol&order=asc&limit=200&page=1").await;
    let symbols: Vec<&str> = by_symbol["data"].as_array().unwrap().iter().map(|r| r["symbol"].as_str().unwrap()).collect();
    assert_eq!((symbols.len(), by_symbol["meta"]["page"].as_u64()), (200, Some(1)));
    assert!(symbols.windows(2).all(|w| w[0] <= w[1]));
    let btc = json(&app, "/v1/intervals/threaded?exchange=okx&search=btc").await;
    assert_eq!(btc["meta"]["total"], 1);
    assert_eq!((btc["data"][0]["symbol"].as_str(), btc["data"][0]["exchange"].as_str()), (Some("BTCUSDT"), Some("okx")));
    // A search is a substring, not a pattern: `_`, `%` and `\` match only themselves, as
    // `strpos` counts them.
    for (search, query) in [("USDT", "usdt"), ("_", "_"), ("%", "%25"), ("T_U", "t_u"), ("\\", "%5C"), ("\\%", "%5C%25")] {
        let expected: i64 = sqlx::query_scalar("SELECT count(*) FROM perps WHERE strpos(upper(symbol), $1) > 0").bind(search).fetch_one(&db).await.unwrap();
        let found = json(&app, &format!("/v1/intervals/threaded?search={query}")).await;
        assert_eq!(found["meta"]["total"].as_i64(), Some(expected), "{search}");
        // Of these, only USDT is part of a symbol: a `_` or `%` taken as a pattern would match.
        assert_eq!(expected > 0, search == "USDT", "{search}");
    }
    for bad in ["sort=volume", "order=up", "page=-1", "limit=0", "limit=201", "exchange=ftx", "page=x"] {
        let (status, code) = code_of(app.get(&format!("/v1/intervals/threaded?{bad}")).await).await;
        assert_eq!((status, code.as_str()), (400, "INVALID_INPUT"), "{bad}");
    }

    // Every change, newest first.
    let list = json(&app, "/v1/intervals?limit=200").await;
    assert_eq!(list["meta"]["total"].as_u64(), Some(changes));
    let item = &list["data"][0];
    assert!(item["id"].is_string() && item["from_interval"].as_str().unwrap().ends_with('h'));
    let keys: BTreeSet<&str> = item.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, BTreeSet::from(["id", "exchange", "symbol", "from_interval", "to_interval", "changed_at"]));
    let bybit = json(&app, "/v1/intervals?exchange=bybit").await;
    assert!(bybit["data"].as_array().unwrap().iter().all(|c| c["exchange"] == "bybit"));

    // Stats.
    let stats = json(&app, "/v1/intervals/stats").await["data"].clone();
    assert_eq!(stats["total_changes"].as_u64(), Some(changes));
    let per_exchange = stats["exchanges"].as_object().unwrap();
    assert_eq!(per_exchange.len(), 4);
    assert_eq!(per_exchange["hyperliquid"], 0, "Hyperliquid is hourly throughout");
    assert_eq!(per_exchange.values().map(|v| v.as_u64().unwrap()).sum::<u64>(), changes);
    let most = stats["most_changed_symbols"].as_array().unwrap();
    assert!(!most.is_empty() && most.len() <= 10 && most.windows(2).all(|w| w[0]["changes"].as_i64() >= w[1]["changes"].as_i64()));

    // One perp: its history and analysis (any case of the symbol).
    let path = format!("/v1/intervals/{}/{}", key.0, key.1.to_lowercase());
    let detail = json(&app, &path).await["data"].clone();
    assert_eq!((detail["symbol"].as_str(), detail["current_interval"].as_str()), (Some(key.1.as_str()), Some(interval_label(to as i32).as_str())));
    assert_eq!(detail["history"].as_array().unwrap().len(), 1);
    assert_eq!(detail["history"][0]["from_interval"], interval_label(from as i32));
    let analysis = json(&app, &format!("{path}/analysis")).await["data"].clone();
    assert_eq!(analysis["total_changes"], 1);
    assert_eq!(analysis["most_common_direction"], format!("{}_to_{}", interval_label(from as i32), interval_label(to as i32)));
    assert_eq!(analysis["avg_days_between_changes"], 21.0, "first seen 21 days before the change");
    let octaves = ((to as f64) / (from as f64)).log2().abs();
    // Octaves per 30 days over the days since first seen (21, give or take the hours between
    // 12:30 and the real clock).
    let score = analysis["volatility_score"].as_f64().unwrap();
    assert!(score >= octaves * 30.0 / 21.6 - 0.01 && score <= octaves * 30.0 / 20.4 + 0.01, "{score} for {octaves} octaves");
    for missing in ["/v1/intervals/binance/NOPEUSDT", "/v1/intervals/ftx/BTCUSDT", "/v1/intervals/binance/NOPEUSDT/analysis"] {
        assert_eq!(code_of(app.get(missing).await).await, (404, "NOT_FOUND".to_owned()), "{missing}");
    }
    drop(collected.sim);
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn the_crowd_endpoints(db: PgPool) {
    let collected = collect(&db).await;
    let app = spawn(state(db.clone(), &redis_url())).await;
    let tracked = 3 * PER_VENUE as u64; // Hyperliquid publishes no ratio

    let board = json(&app, "/v1/crowd/leaderboard").await;
    assert_eq!((board["meta"]["page"].as_u64(), board["meta"]["limit"].as_u64(), board["meta"]["total"].as_u64()), (Some(0), Some(30), Some(tracked)));
    let rows = board["data"].as_array().unwrap();
    let pct = |v: &Value| -> f64 { v.as_str().unwrap().parse().unwrap() };
    assert!(rows.windows(2).all(|w| pct(&w[0]["short_pct"]) >= pct(&w[1]["short_pct"])), "most shorted first");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["rank"].as_u64(), Some(i as u64 + 1));
        assert!(r["long_pct"].as_str().unwrap().len() == 6 && r["exchange"] != "hyperliquid", "{r}");
        assert!((pct(&r["net_position"]) - (pct(&r["long_pct"]) - pct(&r["short_pct"]))).abs() < 1e-9);
        assert!(r["updated_at"].is_string());
    }
    let page1 = json(&app, "/v1/crowd/leaderboard?page=1&limit=10").await;
    assert_eq!(page1["data"][0]["rank"], 11);
    let longed = json(&app, "/v1/crowd/leaderboard?sort=most_longed&exchange=bybit&limit=200").await;
    assert_eq!(longed["meta"]["total"].as_u64(), Some(PER_VENUE as u64));
    let lrows = longed["data"].as_array().unwrap();
    assert!(lrows.iter().all(|r| r["exchange"] == "bybit") && lrows.windows(2).all(|w| pct(&w[0]["long_pct"]) >= pct(&w[1]["long_pct"])));
    let eth = json(&app, "/v1/crowd/leaderboard?search=eth").await;
    assert!(eth["data"].as_array().unwrap().iter().all(|r| r["symbol"].as_str().unwrap().contains("ETH")) && eth["meta"]["total"].as_u64() >= Some(3));
    for bad in ["sort=loudest", "page=-2", "limit=1000", "exchange=kraken", &format!("search={}", "x".repeat(40))] {
        let (status, code) = code_of(app.get(&format!("/v1/crowd/leaderboard?{bad}")).await).await;
        assert_eq!((status, code.as_str()), (400, "INVALID_INPUT"), "{bad}");
    }

    let summary = json(&app, "/v1/crowd/summary").await["data"].clone();
    assert_eq!(summary["total_symbols_tracked"].as_u64(), Some(tracked));
    assert!((0.3..0.7).contains(&pct(&summary["avg_long_pct"])) && summary["updated_at"].is_string());
    let top_long = &json(&app, "/v1/crowd/leaderboard?sort=most_longed&limit=1").await["data"][0];
    assert_eq!((&summary["most_longed"]["symbol"], &summary["most_longed"]["long_pct"]), (&top_long["symbol"], &top_long["long_pct"]));
    assert_eq!(summary["most_shorted"]["short_pct"], rows[0]["short_pct"]);
    assert_eq!(json(&app, "/v1/crowd/summary?exchange=okx").await["data"]["total_symbols_tracked"], PER_VENUE);

    // One perp: the latest reading equals the model's, with two points of history oldest first.
    let detail = json(&app, "/v1/crowd/bybit/ETHUSDT").await["data"].clone();
    let s = collected.sim.model.find("bybit", "ETHUSDT").unwrap();
    let history = detail["history"].as_array().unwrap();
    assert_eq!(history.len(), 2, "{detail}");
    let last: DateTime<Utc> = history[1]["timestamp"].as_str().unwrap().parse().unwrap();
    assert!(last > history[0]["timestamp"].as_str().unwrap().parse::<DateTime<Utc>>().unwrap());
    let long = collected.sim.model.long_share_ppm(s, last.timestamp_millis()) / 10_000 * 10_000;
    assert_eq!(detail["long_pct"], api::domain::money::ppm(long, 4));
    assert_eq!(detail["history"][1]["long_pct"], detail["long_pct"]);
    assert!(pct(&detail["open_interest_usd"]) > 0.0 && detail["open_interest_usd"].as_str().unwrap().split('.').nth(1).unwrap().len() == 2);
    assert_eq!(json(&app, "/v1/crowd/bybit/ETHUSDT?hours=48").await["data"]["history"].as_array().unwrap().len(), 2);
    assert_eq!(code_of(app.get("/v1/crowd/bybit/ETHUSDT?hours=0").await).await.0, 400);
    for missing in ["/v1/crowd/hyperliquid/BTCUSDC", "/v1/crowd/binance/NOPEUSDT", "/v1/crowd/kraken/BTCUSD"] {
        assert_eq!(code_of(app.get(missing).await).await, (404, "NOT_FOUND".to_owned()), "{missing}");
    }

    // Responses are kept in memory while the data holds: answered with the collectors' tables
    // locked. Each is asked once more first: on a loaded machine the requests above can be
    // over `MAX_AGE` old by now, and a response that old is rightly not served.
    let kept_paths = ["/v1/crowd/summary", "/v1/crowd/bybit/ETHUSDT", "/v1/crowd/leaderboard?page=1&limit=10"];
    for path in kept_paths {
        assert_eq!(app.get(path).await.status(), 200, "{path}");
    }
    let mut lock = db.begin().await.unwrap();
    sqlx::query("LOCK TABLE perps, interval_changes, crowd_latest, crowd_history IN ACCESS EXCLUSIVE MODE").execute(&mut *lock).await.unwrap();
    for path in kept_paths {
        let kept = tokio::time::timeout(Duration::from_secs(2), app.get(path)).await;
        assert!(kept.is_ok_and(|r| r.status() == 200), "{path} answered without a query");
    }
    lock.rollback().await.unwrap();

    // After a change, the requests for one page read it once: the first reads Postgres, the
    // others wait for its answer instead of each reading. The change is heard once another
    // page shows it; then, with the tables locked, eight requests for the page keep one
    // backend waiting on the lock, and all eight get what it read.
    let observed: DateTime<Utc> =
        sqlx::query_scalar("SELECT observed_at FROM crowd_latest WHERE exchange = 'bybit' AND symbol = 'ETHUSDT'").fetch_one(&db).await.unwrap();
    let reading = crowd::Reading { long_ppm: 123_400, short_ppm: 876_600, open_interest_cents: None, observed_at: observed + chrono::Duration::minutes(15) };
    crowd::record(&db, "bybit", "ETHUSDT", reading, Utc::now()).await.unwrap();
    let shown = api::domain::money::ppm(123_400, 4);
    let changed = std::time::Instant::now();
    while json(&app, "/v1/crowd/bybit/ETHUSDT?hours=48").await["data"]["long_pct"] != shown {
        assert!(changed.elapsed() < Duration::from_secs(1), "a reading not shown within a second");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The page before the change was last answered longer ago than the grace in which it may
    // stand in for the new one, so every request waits for the read.
    tokio::time::sleep(api::http::kept_responses::READ_GRACE * 2).await;
    let mut lock = db.begin().await.unwrap();
    sqlx::query("LOCK TABLE perps, interval_changes, crowd_latest, crowd_history IN ACCESS EXCLUSIVE MODE").execute(&mut *lock).await.unwrap();
    let app = Arc::new(app);
    let asked: Vec<_> = (0..8)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move { json(&app, "/v1/crowd/bybit/ETHUSDT").await })
        })
        .collect();
    let waiting = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
            .fetch_one(&db)
            .await
            .unwrap()
    };
    while waiting().await == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Time for the other seven to reach Postgres too, were they to read.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(waiting().await, 1, "one read of the page after the change");
    lock.rollback().await.unwrap();
    for answer in asked {
        assert_eq!(answer.await.unwrap()["data"]["long_pct"], shown);
    }

    // A perp the venue stops listing leaves the crowd data (its history stays until retention),
    // in every response within a second of the change (its notice ends the kept responses).
    let keep: Vec<(String, i32)> =
        sqlx::query_as("SELECT symbol, interval_minutes FROM perps WHERE exchange = 'bybit' AND symbol <> 'ETHUSDT'").fetch_all(&db).await.unwrap();
    let report = intervals::record_listing(&db, "bybit", &keep, Utc::now()).await.unwrap();
    assert_eq!((report.delisted, report.new, report.changes.len()), (1, 0, 0));
    let changed = std::time::Instant::now();
    while code_of(app.get("/v1/crowd/bybit/ETHUSDT").await).await.0 != 404
        || json(&app, "/v1/crowd/summary").await["data"]["total_symbols_tracked"].as_u64() != Some(tracked - 1)
    {
        assert!(changed.elapsed() < Duration::from_secs(1), "a delisting not shown within a second");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(json(&app, "/v1/intervals/bybit/ETHUSDT").await["data"]["symbol"], "ETHUSDT", "its interval history stays");
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn an_interval_change_of_a_configured_series_is_replanned_at_once(db: PgPool) {
    // Binance BTCUSDT (a configured series) runs at 4 h on some days: find a 4 h day followed by
    // an 8 h day.
    let model = Model::new(42, default_symbols());
    let btc = model.find("binance", "BTCUSDT").unwrap().clone();
    let day = (1..200).find(|d| model.interval_at(&btc, EPOCH_MS + d * DAY_MS) == 4 && model.interval_at(&btc, EPOCH_MS + (d + 1) * DAY_MS) == 8).unwrap();
    let noon = EPOCH_MS + day * DAY_MS + 12 * HOUR_MS + 30 * MINUTE_MS;
    let (sim, base) = simulated(noon).await;
    series::ensure(&db, &[SeriesSpec { exchange: Exchange::Binance, symbol: "BTCUSDT".into(), interval_minutes: 480 }]).await.unwrap();
    let venues: Vec<ExchangeClient> = Exchange::ALL.iter().map(|e| ExchangeClient::new(*e, &base, Duration::from_secs(5))).collect();
    let scheduler = Arc::new(Scheduler::new(db.clone(), venues, Duration::from_secs(24 * 3600)));
    scheduler.run_once(at(noon)).await.unwrap();
    let binance = collector(&db, Exchange::Binance, &base, Some(scheduler.clone()));
    binance.collect_intervals(&|| at(noon)).await.unwrap();

    // Just past midnight the venue is back at 8 h: the 04:00 and 12:00 rounds of the next day
    // no longer settle.
    let midnight = EPOCH_MS + (day + 1) * DAY_MS + 30 * MINUTE_MS;
    sim.set_now(midnight);
    let (_, report) = binance.collect_intervals(&|| at(midnight)).await.unwrap();
    assert!(report.changes.iter().any(|c| c.symbol == "BTCUSDT" && (c.from_minutes, c.to_minutes) == (240, 480)), "{report:?}");
    let voided: Vec<DateTime<Utc>> = sqlx::query_scalar(
        "SELECT m.settlement_ts FROM markets m JOIN series s ON s.id = m.series_id
         WHERE s.slug = 'binance-btcusdt' AND m.void_reason = 'interval_change' ORDER BY 1",
    )
    .fetch_all(&db)
    .await
    .unwrap();
    let next_day = EPOCH_MS + (day + 1) * DAY_MS;
    assert_eq!(voided, [at(next_day + 4 * HOUR_MS), at(next_day + 12 * HOUR_MS)], "voided by the collector's replan, before any scheduler pass");
}

/// A venue's refusal of one perp skips it; its rate limit (429, retried first) or Binance's IP
/// ban (418) ends the sweep at once instead of going on asking.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_rate_limited_or_banned_sweep_stops_at_once(db: PgPool) {
    let (_, base) = simulated(Utc::now().timestamp_millis()).await;
    let c = collector(&db, Exchange::Binance, &base, None);
    let (listing, _) = c.collect_intervals(&Utc::now).await.unwrap();
    for (status, retry_after) in [(418, None), (429, Some(0))] {
        let body = serde_json::json!({"venue": "binance", "status": status, "count": 1000, "retry_after_secs": retry_after});
        assert_eq!(reqwest::Client::new().post(format!("{base}/sim/faults")).json(&body).send().await.unwrap().status(), 204);
        let swept = c.collect_crowd(&listing, &CancellationToken::new()).await;
        assert!(swept.is_err(), "{status}: the sweep went on: {swept:?}");
        let recorded: i64 = sqlx::query_scalar("SELECT count(*) FROM crowd_latest").fetch_one(&db).await.unwrap();
        assert_eq!(recorded, 0, "{status}");
        let body = serde_json::json!({"venue": "binance", "status": status, "count": 0, "retry_after_secs": retry_after});
        reqwest::Client::new().post(format!("{base}/sim/faults")).json(&body).send().await.unwrap();
    }
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_listing_writes_only_the_perps_it_changes(db: PgPool) {
    let listing = |perps: &[(&str, i32)]| perps.iter().map(|(s, m)| (s.to_string(), *m)).collect::<Vec<_>>();
    // Each perp's row version: a row written again gets a new one.
    let versions = || async {
        sqlx::query_as::<_, (String, String)>("SELECT symbol, xmin::text FROM perps WHERE exchange = 'okx' ORDER BY symbol")
            .fetch_all(&db)
            .await
            .unwrap()
            .into_iter()
            .collect::<HashMap<_, _>>()
    };
    let perp = |symbol: &'static str| {
        let db = db.clone();
        async move {
            sqlx::query_as::<_, (i32, bool, i32, Option<DateTime<Utc>>)>(
                "SELECT interval_minutes, listed, change_count, last_changed_at FROM perps WHERE exchange = 'okx' AND symbol = $1",
            )
            .bind(symbol)
            .fetch_one(&db)
            .await
            .unwrap()
        }
    };
    let t = |minute: i64| at(EPOCH_MS + minute * MINUTE_MS);

    let first = intervals::record_listing(&db, "okx", &listing(&[("A", 480), ("B", 480), ("C", 240)]), t(0)).await.unwrap();
    assert_eq!((first.new, first.changes.len(), first.relisted, first.delisted), (3, 0, 0, 0));
    let before = versions().await;
    let again = intervals::record_listing(&db, "okx", &listing(&[("A", 480), ("B", 480), ("C", 240)]), t(5)).await.unwrap();
    assert!(again.is_empty(), "{again:?}");
    assert_eq!(versions().await, before, "a listing that changes nothing writes no row");

    // A's interval changes and C leaves the listing: B is not written.
    let report = intervals::record_listing(&db, "okx", &listing(&[("A", 240), ("B", 480)]), t(10)).await.unwrap();
    assert_eq!(report.changes, vec![intervals::RecordedChange { symbol: "A".into(), from_minutes: 480, to_minutes: 240 }]);
    assert_eq!((report.new, report.relisted, report.delisted), (0, 0, 1));
    let after = versions().await;
    assert_eq!(after["B"], before["B"], "an unchanged perp is not written");
    assert_ne!(after["A"], before["A"]);
    assert_eq!(perp("A").await, (240, true, 1, Some(t(10))));
    assert_eq!(perp("C").await, (240, false, 0, None));

    // C listed again at its old interval: relisted, no change; then at another: a change.
    let back = intervals::record_listing(&db, "okx", &listing(&[("A", 240), ("B", 480), ("C", 240)]), t(15)).await.unwrap();
    assert_eq!((back.new, back.changes.len(), back.relisted, back.delisted), (0, 0, 1, 0));
    assert_eq!(perp("C").await, (240, true, 0, None));
    intervals::record_listing(&db, "okx", &listing(&[("A", 240), ("B", 480)]), t(20)).await.unwrap();
    let changed = intervals::record_listing(&db, "okx", &listing(&[("A", 240), ("B", 480), ("C", 480)]), t(25)).await.unwrap();
    assert_eq!(changed.changes, vec![intervals::RecordedChange { symbol: "C".into(), from_minutes: 240, to_minutes: 480 }]);
    assert_eq!((changed.new, changed.relisted, changed.delisted), (0, 1, 0));
    assert_eq!(perp("C").await, (480, true, 1, Some(t(25))));
    let recorded: Vec<(String, i32, i32, DateTime<Utc>)> =
        sqlx::query_as("SELECT symbol, from_minutes, to_minutes, changed_at FROM interval_changes WHERE exchange = 'okx' ORDER BY id")
            .fetch_all(&db)
            .await
            .unwrap();
    assert_eq!(recorded, vec![("A".into(), 480, 240, t(10)), ("C".into(), 240, 480, t(25))]);
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn the_stats_totals_count_every_recorded_change(db: PgPool) {
    // Four venues recording at once, round after round, each switching the same symbols'
    // intervals (so the symbols' totals are shared rows), a different subset in turn.
    let symbols = ["AUSDT", "BUSDT", "CUSDT", "DUSDT", "EUSDT"];
    let rounds = 12usize;
    let record = |venue: usize| {
        let db = db.clone();
        async move {
            let exchange = Exchange::ALL[venue].id();
            for round in 0..=rounds {
                // Round 0 lists every symbol at 8 h; then symbol i switches on the rounds where
                // (round + venue + i) is even, from the interval it held.
                // Each venue lists them in an order of its own.
                let mut listing: Vec<(String, i32)> = symbols
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let switches = (1..=round).filter(|r| (r + venue + i).is_multiple_of(2)).count();
                        (s.to_string(), if switches.is_multiple_of(2) { 480 } else { 240 })
                    })
                    .collect();
                listing.rotate_left(venue);
                if !venue.is_multiple_of(2) {
                    listing.reverse();
                }
                intervals::record_listing(&db, exchange, &listing, at(EPOCH_MS + round as i64 * MINUTE_MS)).await.unwrap();
            }
        }
    };
    tokio::join!(record(0), record(1), record(2), record(3));

    // The totals are the sums over the perps' own counts, and over the changes recorded.
    let by_exchange: Vec<(String, i64)> =
        sqlx::query_as("SELECT exchange, changes FROM interval_changes_by_exchange ORDER BY exchange").fetch_all(&db).await.unwrap();
    let summed: Vec<(String, i64)> =
        sqlx::query_as("SELECT exchange, count(*) FROM interval_changes GROUP BY exchange ORDER BY exchange").fetch_all(&db).await.unwrap();
    assert_eq!(by_exchange, summed);
    assert_eq!(by_exchange.len(), 4);
    let by_symbol: Vec<(String, i64)> =
        sqlx::query_as("SELECT symbol, changes FROM interval_changes_by_symbol ORDER BY changes DESC, symbol").fetch_all(&db).await.unwrap();
    let summed: Vec<(String, i64)> =
        sqlx::query_as("SELECT symbol, sum(change_count)::bigint AS n FROM perps GROUP BY symbol HAVING sum(change_count) > 0 ORDER BY n DESC, symbol")
            .fetch_all(&db)
            .await
            .unwrap();
    assert_eq!(by_symbol, summed);
    // Symbol i switched on venue v in the rounds 1..=12 where (round + v + i) is even: 6 each.
    assert_eq!(by_symbol.iter().map(|(_, n)| *n).collect::<Vec<_>>(), vec![24; 5]);

    // The page reads them: every venue, and the most changed symbols in order.
    intervals::record_listing(&db, "okx", &[("AUSDT".into(), 60)], at(EPOCH_MS + 60 * MINUTE_MS)).await.unwrap();
    let app = spawn(state(db.clone(), &redis_url())).await;
    let stats = json(&app, "/v1/intervals/stats").await["data"].clone();
    assert_eq!(stats["total_changes"], 4 * 5 * 6 + 1);
    assert_eq!(stats["exchanges"]["okx"], 5 * 6 + 1);
    assert_eq!(stats["exchanges"]["hyperliquid"], 5 * 6);
    let most: Vec<(String, i64)> =
        stats["most_changed_symbols"].as_array().unwrap().iter().map(|s| (s["symbol"].as_str().unwrap().to_owned(), s["changes"].as_i64().unwrap())).collect();
    assert_eq!(most[0], ("AUSDT".to_owned(), 25));
    assert_eq!(most[1..].iter().map(|(s, n)| (s.as_str(), *n)).collect::<Vec<_>>(), [("BUSDT", 24), ("CUSDT", 24), ("DUSDT", 24), ("EUSDT", 24)]);
}
