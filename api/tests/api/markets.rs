//! Series, markets, rounds, trades, prices and quotes through the HTTP API on real Postgres.

use std::sync::Arc;
use std::time::Duration;

use api::app::config::default_series;
use api::domain::market::MarketStatus;
use api::exchanges::{Exchange, ExchangeClient, FundingRate};
use api::services::scheduler::Scheduler;
use api::services::settlement::{self, Verdict};
use api::store::series;
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{Connection, PgPool};
use uuid::Uuid;

use crate::helpers::*;

async fn series_id(db: &PgPool, slug: &str) -> Uuid {
    sqlx::query_scalar("SELECT id FROM series WHERE slug = $1").bind(slug).fetch_one(db).await.unwrap()
}

/// A round of `slug` with explicit times, status and prior (b = 200 USDC, opening q from prior).
async fn insert_market(db: &PgPool, slug: &str, number: i32, settlement: DateTime<Utc>, status: &str, prior_ppm: u32) -> Uuid {
    let opening = lmsr::Lmsr::opening(200_000_000, prior_ppm).unwrap();
    let id = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO markets (id, series_id, round_number, open_ts, close_ts, settlement_ts, status, liquidity_b, q_yes, q_no,
                              yes_price_ppm, ou_prior_ppm, ou_confidence_ppm)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 200000000, $8, $9, $10, $11, 123456)",
    )
    .bind(id)
    .bind(series_id(db, slug).await)
    .bind(number)
    .bind(settlement - chrono::Duration::hours(8))
    .bind(settlement - chrono::Duration::minutes(5))
    .bind(settlement)
    .bind(status)
    .bind(opening.q(lmsr::Side::Yes) as i64)
    .bind(opening.q(lmsr::Side::No) as i64)
    .bind(opening.prices_micro().0 as i32)
    .bind(prior_ppm as i32)
    .execute(db)
    .await
    .unwrap();
    id
}

async fn json(app: &TestApp, path: &str) -> (u16, Value) {
    let r = app.get(path).await;
    (r.status().as_u16(), r.json().await.unwrap())
}

async fn app_with_series(db: &PgPool) -> TestApp {
    series::ensure(db, &default_series()).await.unwrap();
    spawn(state(db.clone(), &redis_url())).await
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn series_are_listed_filtered_and_paged(db: PgPool) {
    let app = app_with_series(&db).await;
    let (status, body) = json(&app, "/v1/series").await;
    assert_eq!(status, 200);
    let cards = body["data"].as_array().unwrap();
    assert_eq!(cards.len(), 20);
    assert_eq!(body["meta"], serde_json::json!({"page": 1, "limit": 50, "total": 20}));
    assert_eq!(cards[0]["tier"], 1, "tier 1 first");
    let btc = cards.iter().find(|c| c["slug"] == "binance-btcusdt").unwrap();
    assert_eq!((btc["display_name"].as_str(), btc["symbol"].as_str(), btc["exchange"].as_str()), (Some("BTC/USDT"), Some("BTCUSDT"), Some("binance")));
    assert_eq!(
        (btc["total_volume"].as_str(), btc["yes_rate"].as_str(), btc["avg_funding_rate"].as_str()),
        (Some("0.000000"), Some("0.00"), Some("0.00000000"))
    );
    assert_eq!(btc["current_round"], Value::Null);

    let (_, page2) = json(&app, "/v1/series?limit=5&page=2").await;
    assert_eq!(page2["data"].as_array().unwrap().len(), 5);
    assert_eq!(page2["meta"]["page"], 2);
    assert_eq!(page2["data"][0]["slug"], cards[5]["slug"]);
    let (_, tail) = json(&app, "/v1/series?offset=18&limit=5").await;
    assert_eq!(tail["data"].as_array().unwrap().len(), 2);
    let (_, okx) = json(&app, "/v1/series?exchange=okx").await;
    assert_eq!(okx["meta"]["total"], 4);
    for (path, parameter) in [
        ("/v1/series?limit=201", "limit"),
        ("/v1/series?limit=0", "limit"),
        ("/v1/series?page=0", "page"),
        ("/v1/series?limit=abc", "limit"),
        ("/v1/series?exchange=ftx", "exchange"),
        ("/v1/series?page=1&offset=3", "offset"),
    ] {
        let (status, body) = json(&app, path).await;
        assert_eq!((status, body["error"]["code"].as_str()), (400, Some("INVALID_INPUT")), "{path}");
        assert!(body["error"]["message"].as_str().unwrap().contains(parameter), "{path}: {}", body["error"]["message"]);
    }
    let (status, body) = json(&app, "/v1/series/binance-nopeusdt").await;
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("NOT_FOUND")));
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn settlements_update_series_statistics_incrementally(db: PgPool) {
    let app = app_with_series(&db).await;
    let now = Utc::now();
    // Six past rounds settle: + + - + + +  (rates in 1e-12).
    let rates = [100_000_000i64, 50_000_000, -20_000_000, 10_000_000, 30_000_000, 40_000_000];
    for (i, rate) in rates.iter().enumerate() {
        let settlement = now - chrono::Duration::hours(8 * (6 - i as i64));
        let id = insert_market(&db, "binance-btcusdt", i as i32 + 1, settlement, "resolving", 500_000).await;
        sqlx::query("UPDATE markets SET total_volume = 1500000 WHERE id = $1").bind(id).execute(&db).await.unwrap();
        settlement::settle_offchain(&services(&db), id, Verdict::Settled(FundingRate(*rate)), settlement + chrono::Duration::minutes(1)).await.unwrap();
        assert!(settlement::settle_offchain(&services(&db), id, Verdict::Settled(FundingRate(*rate)), settlement).await.is_err(), "settles once");
    }
    let current = insert_market(&db, "binance-btcusdt", 7, now + chrono::Duration::hours(2), "open", 640_000).await;

    let (_, card) = json(&app, "/v1/series/binance-btcusdt").await;
    let card = &card["data"];
    assert_eq!((card["total_rounds"].as_i64(), card["yes_rate"].as_str()), (Some(6), Some("83.33")));
    assert_eq!((card["longest_yes_streak"].as_i64(), card["longest_no_streak"].as_i64()), (Some(3), Some(1)));
    assert_eq!((card["last_outcome"].as_str(), card["total_volume"].as_str()), (Some("yes"), Some("9.000000")));
    assert_eq!(card["avg_funding_rate"], "0.00003500", "mean of the six rates");
    let round = &card["current_round"];
    assert_eq!((round["id"].as_str(), round["status"].as_str()), (Some(current.to_string().as_str()), Some("open")));
    assert_eq!(round["ou_prior"], "0.6400");
    assert_eq!(round["ou_confidence"], "0.1235");
    let (yes, no) = (round["yes_price"].as_str().unwrap(), round["no_price"].as_str().unwrap());
    assert_eq!((yes.len(), no.len()), (8, 8), "six decimals");
    assert_eq!(yes.parse::<f64>().unwrap() + no.parse::<f64>().unwrap(), 1.0);

    let (_, rounds) = json(&app, "/v1/series/binance-btcusdt/rounds?limit=4").await;
    let items = rounds["data"].as_array().unwrap();
    assert_eq!((items.len(), rounds["meta"]["total"].as_i64()), (4, Some(6)));
    assert_eq!(items[0]["round_number"], 6, "latest first");
    assert_eq!((items[0]["outcome"].as_str(), items[0]["actual_rate"].as_str()), (Some("yes"), Some("0.00004000")));
    assert_eq!(items[3]["outcome"], "no");
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn markets_are_listed_by_status_and_found_by_id(db: PgPool) {
    let app = app_with_series(&db).await;
    let now = Utc::now();
    let open = insert_market(&db, "okx-ethusdt", 1, now + chrono::Duration::hours(3), "open", 500_000).await;
    let pending = insert_market(&db, "okx-ethusdt", 2, now + chrono::Duration::hours(11), "pending", 500_000).await;
    let settled = insert_market(&db, "okx-btcusdt", 1, now - chrono::Duration::hours(1), "resolving", 500_000).await;
    settlement::settle_offchain(&services(&db), settled, Verdict::Settled(FundingRate(-5)), now).await.unwrap();

    let (_, all) = json(&app, "/v1/markets").await;
    assert_eq!(all["meta"]["total"], 3);
    let order: Vec<&str> = all["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(order, [open.to_string(), pending.to_string(), settled.to_string()], "unfinished soonest first, then finished");
    let (_, only_pending) = json(&app, "/v1/markets?status=pending").await;
    assert_eq!(only_pending["data"][0]["id"], pending.to_string());
    assert_eq!(only_pending["meta"]["total"], 1);
    let (_, only_open) = json(&app, "/v1/markets?status=open").await;
    assert_eq!(only_open["data"].as_array().unwrap().len(), 1);
    let (_, m) = json(&app, &format!("/v1/markets/{open}")).await;
    let m = &m["data"];
    assert_eq!((m["symbol"].as_str(), m["exchange"].as_str(), m["tier"].as_i64()), (Some("ETHUSDT"), Some("okx"), Some(1)));
    assert!(m["question"].as_str().unwrap().contains("ETHUSDT") && m["question"].as_str().unwrap().contains("OKX"));
    assert!(m.get("outcome").is_none() && m.get("actual_rate").is_none() && m.get("settled_at").is_none());
    let (_, s) = json(&app, &format!("/v1/markets/{settled}")).await;
    assert_eq!((s["data"]["status"].as_str(), s["data"]["outcome"].as_str()), (Some("settled"), Some("no")));
    assert_eq!(s["data"]["actual_rate"], "-0.000000000005", "exact, sign kept");
    assert!(s["data"]["settled_at"].is_string());

    for (path, status, parameter) in [
        ("/v1/markets?status=live", 400, "status"),
        ("/v1/markets?limit=101", 400, "limit"),
        ("/v1/markets/not-a-uuid", 400, "id"),
        ("/v1/markets/not-a-uuid/quote?side=yes&amount=5", 400, "id"),
    ] {
        let (got, body) = json(&app, path).await;
        assert_eq!(got, status, "{path}");
        assert!(body["error"]["message"].as_str().unwrap().contains(parameter), "{path}");
    }
    let (status, _) = json(&app, &format!("/v1/markets/{}", Uuid::new_v4())).await;
    assert_eq!(status, 404);
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn quotes_are_the_programs_fill_and_refuse_bad_input(db: PgPool) {
    let app = app_with_series(&db).await;
    let now = Utc::now();
    let open = insert_market(&db, "bybit-solusdt", 1, now + chrono::Duration::hours(3), "open", 640_000).await;
    let closed = insert_market(&db, "bybit-solusdt", 2, now + chrono::Duration::minutes(3), "closed", 500_000).await;

    let (status, q) = json(&app, &format!("/v1/markets/{open}/quote?side=no&amount=25.5")).await;
    assert_eq!(status, 200, "{q}");
    let opening = lmsr::Lmsr::opening(200_000_000, 640_000).unwrap();
    let fill = opening.buy(lmsr::Side::No, 25_500_000).unwrap();
    let q = &q["data"];
    assert_eq!(q["shares"], api::domain::money::micros(fill.amount_out as i64));
    assert_eq!(q["max_payout"], q["shares"]);
    assert_eq!((q["fee_usdc"].as_str(), q["total_cost"].as_str(), q["amount"].as_str()), (Some("0.255000"), Some("25.755000"), Some("25.500000")));
    let (new_yes, new_no) = fill.after.prices_micro();
    assert_eq!(
        (q["new_yes_price"].clone(), q["new_no_price"].clone()),
        (api::domain::money::micros(new_yes as i64).into(), api::domain::money::micros(new_no as i64).into())
    );
    let impact = new_no as i64 - opening.prices_micro().1 as i64;
    assert!(impact > 0);
    assert_eq!(q["price_impact"], api::domain::money::micros(impact));

    let (_, by_slug) = json(&app, "/v1/quote?series_id=bybit-solusdt&side=no&amount=25.5").await;
    assert_eq!(by_slug["data"]["shares"], q["shares"]);
    let id = series_id(&db, "bybit-solusdt").await;
    let (_, by_id) = json(&app, &format!("/v1/quote?series_id={id}&side=no&amount=25.5")).await;
    assert_eq!(by_id["data"]["shares"], q["shares"]);

    for (query, parameter) in [
        ("side=maybe&amount=5", "side"),
        ("amount=5", "side"),
        ("side=yes", "amount"),
        ("side=yes&amount=abc", "amount"),
        ("side=yes&amount=-5", "amount"),
        ("side=yes&amount=0.99", "amount"),
        ("side=yes&amount=1.0000001", "amount"),
        ("side=yes&amount=100000000000", "amount"),
    ] {
        let (status, body) = json(&app, &format!("/v1/markets/{open}/quote?{query}")).await;
        assert_eq!((status, body["error"]["code"].as_str()), (400, Some("INVALID_INPUT")), "{query}");
        assert!(body["error"]["message"].as_str().unwrap().contains(parameter), "{query}: {body}");
    }
    let (status, body) = json(&app, &format!("/v1/markets/{closed}/quote?side=yes&amount=5")).await;
    assert_eq!((status, body["error"]["code"].as_str()), (422, Some("MARKET_CLOSED")));
    let (status, body) = json(&app, "/v1/quote?series_id=okx-tonusdt&side=yes&amount=5").await;
    assert_eq!((status, body["error"]["code"].as_str()), (422, Some("MARKET_CLOSED")), "no open round");
    let (status, _) = json(&app, "/v1/quote?series_id=okx-nopeusdt&side=yes&amount=5").await;
    assert_eq!(status, 404);
    let (status, _) = json(&app, "/v1/quote?side=yes&amount=5").await;
    assert_eq!(status, 400);
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn trades_and_price_history_are_served(db: PgPool) {
    let app = app_with_series(&db).await;
    let market = insert_market(&db, "binance-ethusdt", 1, Utc::now() + chrono::Duration::hours(1), "open", 500_000).await;
    for (i, (side, shares, amount)) in [("yes", 20_000_000i64, 10_000_000i64), ("no", 5_000_000, 2_600_000)].into_iter().enumerate() {
        let at = Utc::now() - chrono::Duration::minutes(10 - i as i64);
        sqlx::query("INSERT INTO trades (id, market_id, side, is_buy, shares, amount, fee, yes_price_ppm, created_at) VALUES ($1, $2, $3, true, $4, $5, $6, 510000, $7)")
            .bind(Uuid::new_v4()).bind(market).bind(side).bind(shares).bind(amount).bind(amount / 100).bind(at)
            .execute(&db).await.unwrap();
        sqlx::query("INSERT INTO market_prices (market_id, at, yes_price_ppm) VALUES ($1, $2, $3)")
            .bind(market)
            .bind(at)
            .bind(510_000 + i as i32)
            .execute(&db)
            .await
            .unwrap();
    }
    let (_, trades) = json(&app, &format!("/v1/markets/{market}/trades")).await;
    let items = trades["data"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(trades["meta"]["total"], 2, "the total counts the rows listed");
    assert_eq!((items[0]["side"].as_str(), items[0]["price_usdc"].as_str(), items[0]["fee_usdc"].as_str()), (Some("no"), Some("0.520000"), Some("0.026000")));
    assert_eq!((items[1]["shares"].as_str(), items[1]["price_usdc"].as_str()), (Some("20.000000"), Some("0.500000")));
    let (_, prices) = json(&app, &format!("/v1/markets/{market}/prices")).await;
    let points = prices["data"].as_array().unwrap();
    assert_eq!((points[0]["yes_price"].as_str(), points[1]["no_price"].as_str()), (Some("0.510000"), Some("0.489999")));
}

/// The embedded default: the scheduler on the simulated exchange at wall-clock time gives every
/// series a current round, visible through the API.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn the_scheduler_makes_series_live(db: PgPool) {
    let app = app_with_series(&db).await;
    let sim = serve(sim_exchange::router(Arc::new(sim_exchange::Sim::new(sim_exchange::Model::new(42, sim_exchange::default_symbols()))))).await;
    let venues = Exchange::ALL.iter().map(|e| ExchangeClient::new(*e, &sim.base, Duration::from_secs(5))).collect();
    let report = Scheduler::new(db.clone(), venues, Duration::from_secs(8 * 3600)).run_once(Utc::now()).await.unwrap();
    assert!(report.skipped.is_empty() && report.created >= 40, "{report:?}");
    let (_, body) = json(&app, "/v1/series").await;
    for card in body["data"].as_array().unwrap() {
        let status = card["current_round"]["status"].as_str().unwrap_or("none");
        assert!(status == "open" || status == "pending", "{}: {status}", card["slug"]);
    }
}

/// Replicas start together and each ensures the configured series: run at once, every call
/// succeeds and each series exists once (concurrent inserts used to collide on the slug index within a few rounds,
/// which `ON CONFLICT (exchange, symbol)` does not absorb, failing a replica's start-up).
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn series_are_ensured_by_concurrent_replicas(db: PgPool) {
    for _ in 0..200 {
        sqlx::query("DELETE FROM series").execute(&db).await.unwrap();
        let calls: Vec<_> = (0..8)
            .map(|_| {
                tokio::spawn({
                    let db = db.clone();
                    async move { series::ensure(&db, &default_series()).await }
                })
            })
            .collect();
        let mut created = 0;
        for call in calls {
            created += call.await.unwrap().expect("every replica starts");
        }
        assert_eq!(created, default_series().len() as u64, "each series created by exactly one replica");
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM series").fetch_one(&db).await.unwrap();
        assert_eq!(count, default_series().len() as i64);
    }
}

/// The listing as one query over the whole table would give it (what `list_markets` answered
/// before it read counts and partial indexes): the reference the paged answers are checked
/// against.
async fn listing_by_full_sort(db: &PgPool, status: Option<&str>) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT id::text FROM markets WHERE ($1::text IS NULL OR status = $1)
         ORDER BY CASE WHEN status IN ('settled', 'voided') THEN 1 ELSE 0 END,
                  CASE WHEN status IN ('settled', 'voided') THEN -extract(epoch FROM settlement_ts) ELSE extract(epoch FROM settlement_ts) END,
                  id",
    )
    .bind(status)
    .fetch_all(db)
    .await
    .unwrap()
}

/// Pages the listing through the API at several sizes and statuses and compares it with the
/// full sort (and `total` with the count).
async fn check_listing(app: &TestApp, db: &PgPool) {
    for status in [None, Some("open"), Some("settled"), Some("voided"), Some("pending")] {
        let full = listing_by_full_sort(db, status).await;
        let filter = status.map(|s| format!("&status={s}")).unwrap_or_default();
        for limit in [1, 5, 7, 100] {
            let mut paged = Vec::new();
            for page in 1..=(full.len() / limit + 2) {
                let (code, body) = json(app, &format!("/v1/markets?limit={limit}&page={page}{filter}")).await;
                assert_eq!(code, 200);
                assert_eq!(body["meta"]["total"], full.len(), "{filter} limit {limit} page {page}");
                paged.extend(body["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_owned()));
            }
            assert_eq!(paged, full, "{filter} limit {limit}");
        }
        let (code, body) = json(app, &format!("/v1/markets?limit=100&offset=99999999{filter}")).await;
        assert_eq!((code, body["data"].as_array().unwrap().len(), body["meta"]["total"].as_u64()), (200, 0, Some(full.len() as u64)));
    }
}

/// Every page, of every size tried, is the matching slice of the full sort, and `total` is the
/// count — across statuses moving, the count rows being compacted, and offsets past the end.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn market_pages_are_slices_of_the_full_listing(db: PgPool) {
    let app = app_with_series(&db).await;
    let now = Utc::now();
    let statuses = ["pending", "open", "closed", "resolving", "settled", "voided"];
    let slugs = ["okx-ethusdt", "okx-btcusdt", "binance-btcusdt"];
    let mut ids = Vec::new();
    for i in 0..36 {
        // Three series share each settlement time, so ties are broken by id.
        let settlement = now + chrono::Duration::hours((i / 3) as i64 - 6);
        ids.push(insert_market(&db, slugs[i % 3], i as i32 + 1, settlement, statuses[(i * 7) % 6], 500_000).await);
    }
    check_listing(&app, &db).await;
    // Statuses move (the count rows grow), then are compacted to one row per status.
    sqlx::query("UPDATE markets SET status = 'settled' WHERE status IN ('closed', 'resolving')").execute(&db).await.unwrap();
    sqlx::query("UPDATE markets SET status = 'voided' WHERE id = $1").bind(ids[0]).execute(&db).await.unwrap();
    sqlx::query("DELETE FROM markets WHERE id = $1").bind(ids[1]).execute(&db).await.unwrap();
    check_listing(&app, &db).await;
    api::store::markets::compact_status_counts(&db).await.unwrap();
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM market_status_counts").fetch_one(&db).await.unwrap();
    let statuses_present: i64 = sqlx::query_scalar("SELECT count(DISTINCT status) FROM markets").fetch_one(&db).await.unwrap();
    assert_eq!(rows, statuses_present, "one row per status after compaction");
    check_listing(&app, &db).await;
    // Many status changes between scheduler passes: the listing that finds their rows has
    // them folded, and answers the same throughout.
    for _ in 0..20 {
        sqlx::query("UPDATE markets SET status = CASE status WHEN 'open' THEN 'closed' WHEN 'closed' THEN 'open' ELSE status END").execute(&db).await.unwrap();
    }
    check_listing(&app, &db).await;
    let started = std::time::Instant::now();
    loop {
        let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM market_status_counts").fetch_one(&db).await.unwrap();
        if rows <= statuses_present + 1 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{rows} count rows were never folded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    check_listing(&app, &db).await;
}

/// One trade's figures added to a trader's day, as the projection adds them: (volume,
/// realized P&L, settled, wins).
async fn add_a_trade(db: &PgPool, wallet: &str, day: chrono::NaiveDate, trade: (i64, i64, i32, i32)) {
    add_trades(db, &[((wallet.to_owned(), day), trade)]).await;
}

/// One statement adding a trade to each (wallet, day), as the projection's batch does: days new
/// and days already there at once. The keys must differ (one statement cannot upsert a row twice).
/// A trader's day, and what it adds: volume, P&L, settled and won positions.
type DayTrades = ((String, chrono::NaiveDate), (i64, i64, i32, i32));

async fn add_trades(db: &PgPool, trades: &[DayTrades]) {
    let (mut wallets, mut days, mut volumes, mut pnls, mut settled, mut wins) = (vec![], vec![], vec![], vec![], vec![], vec![]);
    for ((wallet, day), (volume, pnl, s, w)) in trades {
        wallets.push(wallet.clone());
        days.push(*day);
        volumes.push(*volume);
        pnls.push(*pnl);
        settled.push(*s);
        wins.push(*w);
    }
    sqlx::query(
        "INSERT INTO trader_stats (wallet, day, volume, trades, realized_pnl, settled, wins)
         SELECT * FROM unnest($1::TEXT[], $2::DATE[], $3::BIGINT[], $4::INT[], $5::BIGINT[], $6::INT[], $7::INT[])
         ON CONFLICT (wallet, day) DO UPDATE SET volume = trader_stats.volume + EXCLUDED.volume, trades = trader_stats.trades + 1,
             realized_pnl = trader_stats.realized_pnl + EXCLUDED.realized_pnl, settled = trader_stats.settled + EXCLUDED.settled,
             wins = trader_stats.wins + EXCLUDED.wins",
    )
    .bind(wallets)
    .bind(days)
    .bind(volumes)
    .bind(vec![1i32; trades.len()])
    .bind(pnls)
    .bind(settled)
    .bind(wins)
    .execute(db)
    .await
    .unwrap();
}

fn random_trade(rng: &mut impl rand::Rng) -> (i64, i64, i32, i32) {
    (rng.random_range(1_000_000..50_000_000i64), rng.random_range(-20_000_000..20_000_000i64), rng.random_range(0..3i32), rng.random_range(0..2i32))
}

/// The all-time totals the triggers keep equal the sum of every trader's days, after each of a
/// random mix of statements as the projection and operators issue them: one day upserted, many
/// days upserted at once (some inserted, some updated, as a batch of trades does), one day or
/// many deleted, days moved to another wallet, and every day truncated (alone, then with the
/// totals).
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn trader_totals_are_the_sum_of_their_days(db: PgPool) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(19);
    let wallet = |rng: &mut rand::rngs::StdRng| format!("w{}", rng.random_range(0..20));
    let day = |rng: &mut rand::rngs::StdRng| chrono::NaiveDate::from_ymd_opt(2026, 11, rng.random_range(1..=20)).unwrap();
    for step in 0..400 {
        match step {
            200 => drop(sqlx::query("TRUNCATE trader_stats").execute(&db).await.unwrap()),
            300 => drop(sqlx::query("TRUNCATE trader_stats, trader_totals").execute(&db).await.unwrap()),
            _ => {}
        }
        match rng.random_range(0..20) {
            0 => {
                let (w, d) = (wallet(&mut rng), day(&mut rng));
                sqlx::query("DELETE FROM trader_stats WHERE wallet = $1 AND day = $2").bind(w).bind(d).execute(&db).await.unwrap();
            }
            1 => {
                let d = day(&mut rng);
                sqlx::query("DELETE FROM trader_stats WHERE day <= $1 AND wallet < 'w1'").bind(d).execute(&db).await.unwrap();
            }
            2 => {
                // Days of one wallet moved to another (merging where the other has the day).
                let (from, to) = (wallet(&mut rng), wallet(&mut rng));
                sqlx::query("UPDATE trader_stats SET wallet = $2 WHERE wallet = $1 AND NOT EXISTS (SELECT 1 FROM trader_stats o WHERE o.wallet = $2 AND o.day = trader_stats.day)")
                    .bind(from)
                    .bind(to)
                    .execute(&db)
                    .await
                    .unwrap();
            }
            3..=7 => {
                // A batch: up to 30 (wallet, day) rows, one statement, as the projection writes them.
                let rows: std::collections::BTreeMap<(String, chrono::NaiveDate), (i64, i64, i32, i32)> =
                    (0..rng.random_range(1..30)).map(|_| ((wallet(&mut rng), day(&mut rng)), random_trade(&mut rng))).collect();
                add_trades(&db, &rows.into_iter().collect::<Vec<_>>()).await;
            }
            _ => {
                let (w, d) = (wallet(&mut rng), day(&mut rng));
                add_a_trade(&db, &w, d, random_trade(&mut rng)).await;
            }
        }
        let differing: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM (
                 (SELECT wallet, sum(volume)::BIGINT, sum(trades)::BIGINT, sum(realized_pnl)::BIGINT, sum(settled)::BIGINT, sum(wins)::BIGINT
                  FROM trader_stats GROUP BY wallet
                  EXCEPT SELECT wallet, volume, trades, realized_pnl, settled, wins FROM trader_totals)
                 UNION ALL
                 (SELECT wallet, volume, trades, realized_pnl, settled, wins FROM trader_totals
                  EXCEPT SELECT wallet, sum(volume)::BIGINT, sum(trades)::BIGINT, sum(realized_pnl)::BIGINT, sum(settled)::BIGINT, sum(wins)::BIGINT
                  FROM trader_stats GROUP BY wallet)) d",
        )
        .fetch_one(&db)
        .await
        .unwrap();
        assert_eq!(differing, 0, "totals differ from the days after step {step}");
    }
    let traders: i64 = sqlx::query_scalar("SELECT count(DISTINCT wallet) FROM trader_stats").fetch_one(&db).await.unwrap();
    assert!(traders > 5, "the mix left {traders} traders");
}

/// The leaderboard's rankings come from memory while nothing changes: every period and
/// ordering equals Postgres's ranking (held, and answered with `trader_stats` locked); a change
/// to a trader's day or a display name is ranked within a second (the test prints the slowest);
/// concurrent requests after a change all get the new ranking.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn leaderboard_rankings_follow_changes_from_memory(db: PgPool) {
    use api::domain::portfolio::{Period, SortBy};
    use api::services::users;
    // The service's ranking of `period` (today's start), as rows.
    async fn leaderboard(
        services: &api::services::Services,
        period: Period,
        sort: SortBy,
        limit: i64,
    ) -> Result<Vec<api::store::positions::LeaderRow>, api::services::ServiceError> {
        Ok(users::leaderboard(services, users::leaderboard_start(period), sort, limit).await?.rows)
    }
    use rand::{Rng, SeedableRng};
    let state = state(db.clone(), &redis_url());
    let services = state.services.clone();
    let app = spawn(state).await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(23);
    let today = Utc::now().date_naive();
    // 150 traders over 40 days (more than a ranking holds), some with names.
    for w in 0..150 {
        let wallet = format!("{w:0>32}");
        if w % 3 == 0 {
            sqlx::query("INSERT INTO users (id, wallet_address, display_name) VALUES ($1, $2, $3)")
                .bind(Uuid::new_v4())
                .bind(&wallet)
                .bind(format!("trader {w}"))
                .execute(&db)
                .await
                .unwrap();
        }
        for _ in 0..4 {
            let day = today - chrono::Days::new(rng.random_range(0..40));
            add_a_trade(&db, &wallet, day, random_trade(&mut rng)).await;
        }
    }
    let periods = [Period::Day, Period::Week, Period::Month, Period::All];
    let sorts = [SortBy::Pnl, SortBy::WinRate, SortBy::Volume];
    let from_postgres = |period: Period, sort: SortBy, limit: i64| {
        let db = db.clone();
        async move { api::store::positions::leaderboard(&db, period.start(Utc::now()), sort, limit).await.unwrap() }
    };
    let all_equal = || {
        let services = services.clone();
        async move {
            for period in periods {
                for sort in sorts {
                    for limit in [1, 37, 100] {
                        if leaderboard(&services, period, sort, limit).await.unwrap() != from_postgres(period, sort, limit).await {
                            return false;
                        }
                    }
                }
            }
            true
        }
    };
    // Held once the listener is up (a read before it is not kept).
    let started = std::time::Instant::now();
    while services.leaderboard.current_rankings() < periods.len() * sorts.len() {
        assert!(started.elapsed() < Duration::from_secs(5), "the rankings were never held");
        assert!(all_equal().await, "a ranking differs from Postgres's");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(all_equal().await);
    // Served without Postgres.
    let mut lock = db.begin().await.unwrap();
    sqlx::query("LOCK TABLE trader_stats, trader_totals, users IN ACCESS EXCLUSIVE MODE").execute(&mut *lock).await.unwrap();
    let held = tokio::time::timeout(Duration::from_secs(2), leaderboard(&services, Period::All, SortBy::Pnl, 100)).await;
    assert!(held.is_ok_and(|r| r.is_ok_and(|r| r.len() == 100)), "a held ranking is served without a query");
    lock.rollback().await.unwrap();

    // Changes: a trader jumps to the top today, another's day is deleted, a name changes.
    let mut slowest = Duration::ZERO;
    for round in 0..12i64 {
        let wallet = format!("{:0>32}", rng.random_range(0..150));
        match round % 3 {
            0 => add_a_trade(&db, &wallet, today, (900_000_000 + round, 400_000_000 + round, 2, 2)).await,
            1 => {
                sqlx::query("DELETE FROM trader_stats WHERE wallet = (SELECT wallet FROM trader_totals ORDER BY realized_pnl DESC LIMIT 1)")
                    .execute(&db)
                    .await
                    .unwrap();
            }
            _ => {
                sqlx::query(
                    "UPDATE users SET display_name = $2 WHERE wallet_address = (SELECT wallet FROM trader_totals ORDER BY realized_pnl DESC LIMIT 1 OFFSET $1)",
                )
                .bind(round)
                .bind(format!("renamed {round}"))
                .execute(&db)
                .await
                .unwrap();
            }
        }
        let committed = std::time::Instant::now();
        let expected = from_postgres(Period::Week, SortBy::Pnl, 100).await;
        let expected_all = from_postgres(Period::All, SortBy::Pnl, 100).await;
        // The API's pages too (rendered once per ranking version and kept).
        let shown =
            |rows: &[api::store::positions::LeaderRow]| rows.iter().map(|r| (r.wallet.clone(), r.display_name.clone(), r.realized_pnl)).collect::<Vec<_>>();
        let served = |query: &'static str| {
            let app = &app;
            async move {
                let body: serde_json::Value = app.get(&format!("/v1/leaderboard?{query}")).await.json().await.unwrap();
                let entries = body["data"].as_array().unwrap().iter();
                entries
                    .map(|e| {
                        (
                            e["wallet_address"].as_str().unwrap().to_owned(),
                            e["display_name"].as_str().map(str::to_owned),
                            crate::trading::micros(&e["total_pnl"]),
                        )
                    })
                    .collect::<Vec<_>>()
            }
        };
        while leaderboard(&services, Period::Week, SortBy::Pnl, 100).await.unwrap() != expected
            || leaderboard(&services, Period::All, SortBy::Pnl, 100).await.unwrap() != expected_all
            || served("period=7d&limit=100").await != shown(&expected)
            || served("period=all&sort_by=pnl&limit=100").await != shown(&expected_all)
        {
            assert!(committed.elapsed() < Duration::from_secs(1), "round {round}: a change not ranked within a second");
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        slowest = slowest.max(committed.elapsed());
    }
    println!("slowest change-to-ranking: {slowest:?}");
    // Many requests at once after a change: one read, every answer the new ranking.
    add_a_trade(&db, &format!("{:0>32}", 7), today, (1, 2_000_000_000, 1, 1)).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let expected = from_postgres(Period::Week, SortBy::Pnl, 100).await;
    assert_eq!(expected[0].wallet, format!("{:0>32}", 7));
    let answers = futures_util::future::join_all((0..32).map(|_| leaderboard(&services, Period::Week, SortBy::Pnl, 100))).await;
    assert!(answers.into_iter().all(|a| a.unwrap() == expected));
    assert!(all_equal().await);
}

/// The all-time, 7- and 30-day rankings come from books of every trader's totals that re-read
/// only the traders a notice names: after each of a random mix of changes (one trader's day
/// today, a day inside the 30 days only or before them, a trader's days deleted, the first 150
/// traders of each order and period sent to the bottom at once, a change to more traders than a
/// notice can name, a display name), every ordering of the three periods equals Postgres's
/// within a second, ties included (wallets differing only in case rank in byte order); a change
/// naming its traders does not read the whole book again, one naming none does. More traders in
/// each period than a book keeps in its lists of firsts, and enough of them sent down that the
/// lists run short and are ranked again.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn booked_rankings_catch_up_with_the_traders_named(db: PgPool) {
    use api::domain::portfolio::{Period, SortBy};
    use api::services::users;
    use rand::{Rng, SeedableRng};
    let services = services(&db);
    let mut rng = rand::rngs::StdRng::seed_from_u64(29);
    let today = Utc::now().date_naive();
    // 2,000 traders, a tenth of them tied (the same one trade), wallets alike but for case.
    let wallet = |w: usize| format!("{}{w:0>31}", if w.is_multiple_of(2) { 'a' } else { 'A' });
    let mut days = Vec::new();
    for w in 0..2_000 {
        let trade = if w < 200 { (5_000_000, 1_000_000, 1, 1) } else { random_trade(&mut rng) };
        days.push(((wallet(w), today - chrono::Days::new(rng.random_range(0..35))), trade));
    }
    add_trades(&db, &days).await;
    for w in (0..2_000).step_by(5) {
        sqlx::query("INSERT INTO users (id, wallet_address, display_name) VALUES ($1, $2, $3)")
            .bind(Uuid::new_v4())
            .bind(wallet(w))
            .bind(format!("trader {w}"))
            .execute(&db)
            .await
            .unwrap();
    }
    let periods = [Period::Week, Period::Month, Period::All];
    let sorts = [SortBy::Pnl, SortBy::WinRate, SortBy::Volume];
    let all_equal = || {
        let (services, db) = (services.clone(), db.clone());
        async move {
            for period in periods {
                for sort in sorts {
                    let start = users::leaderboard_start(period);
                    let served = users::leaderboard(&services, start, sort, 100).await.unwrap().rows;
                    if served != api::store::positions::leaderboard(&db, start, sort, 100).await.unwrap() {
                        return false;
                    }
                }
            }
            true
        }
    };
    let started = std::time::Instant::now();
    while services.leaderboard.current_rankings() < periods.len() * sorts.len() {
        assert!(started.elapsed() < Duration::from_secs(5), "the rankings were never held");
        all_equal().await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(all_equal().await, "a ranking differs from Postgres's");
    for round in 0..40u64 {
        let whole_reads = services.leaderboard.whole_book_reads();
        let w = rng.random_range(0..2_000);
        let caught_up = match round % 8 {
            0 => {
                add_a_trade(&db, &wallet(w), today, (rng.random_range(1..900_000_000), rng.random_range(-9..900_000_000), 1, 1)).await;
                true
            }
            // Inside the 30 days, outside the 7; or before both (all time only).
            1 => {
                let back = if round % 16 == 1 { 20 } else { 32 };
                add_a_trade(&db, &wallet(w), today - chrono::Days::new(back), (900_000_000, 900_000_000, 3, 0)).await;
                true
            }
            2 => {
                let top: String = sqlx::query_scalar("SELECT wallet FROM trader_totals ORDER BY volume DESC LIMIT 1").fetch_one(&db).await.unwrap();
                sqlx::query("DELETE FROM trader_stats WHERE wallet = $1").bind(top).execute(&db).await.unwrap();
                true
            }
            4..=6 => {
                // Past the TOP traders a list of firsts keeps beyond the shown, in every period,
                // in statements whose notices can name their traders.
                let mut first = Vec::new();
                for period in periods {
                    let start = users::leaderboard_start(period);
                    for sort in sorts {
                        let ranked = api::store::positions::leaderboard(&db, start, sort, 150).await.unwrap();
                        first.extend(ranked.into_iter().map(|r| r.wallet));
                    }
                }
                first.sort();
                first.dedup();
                for some in first.chunks(150) {
                    sqlx::query("UPDATE trader_stats SET realized_pnl = realized_pnl - 1000000000000, volume = 0, wins = 0 WHERE wallet = ANY($1)")
                        .bind(some)
                        .execute(&db)
                        .await
                        .unwrap();
                }
                true
            }
            // 2,000 wallets of 32 characters do not fit in one notice.
            3 => {
                sqlx::query("UPDATE trader_stats SET volume = volume + 1 + (wallet > 'a0000000000000000000000000000200')::INT").execute(&db).await.unwrap();
                false
            }
            _ => {
                sqlx::query("UPDATE users SET display_name = $2 WHERE wallet_address = $1")
                    .bind(wallet(w / 5 * 5))
                    .bind(format!("renamed {round}"))
                    .execute(&db)
                    .await
                    .unwrap();
                true
            }
        };
        let committed = std::time::Instant::now();
        while !all_equal().await {
            assert!(committed.elapsed() < Duration::from_secs(1), "round {round}: a change not ranked within a second");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let read_whole = services.leaderboard.whole_book_reads() > whole_reads;
        assert_eq!(read_whole, !caught_up, "round {round}: a book read whole: {read_whole}");
    }
}

/// Quotes and market rows come from the in-memory market cache: a change to a market's row
/// reaches them within a second (in practice a millisecond or two; the test prints what it saw),
/// a cached market is quoted with Postgres unable to answer, and once changes stop every quote
/// equals one computed from the row and every served row is the row.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn quotes_follow_the_market_row_from_memory(db: PgPool) {
    use api::domain::market::Side;
    use api::services::markets::quote;
    series::ensure(&db, &default_series()).await.unwrap();
    let services = services(&db);
    let now = Utc::now();
    let slugs = ["okx-ethusdt", "okx-btcusdt", "binance-btcusdt", "bybit-solusdt", "okx-tonusdt"];
    let mut ids = Vec::new();
    for (i, slug) in slugs.iter().enumerate() {
        ids.push(insert_market(&db, slug, 1, now + chrono::Duration::hours(3), "open", 300_000 + 100_000 * i as u32).await);
    }
    let amount = 10_000_000;
    let from_row = |id: Uuid| {
        let (db, services) = (db.clone(), services.clone());
        async move {
            let priced = api::store::markets::market(&db, id).await.unwrap().unwrap().priced();
            api::domain::quote::buy(&priced, &services.terms(), Side::Yes, amount, Utc::now()).unwrap()
        }
    };
    // Held once the listener is up (a read before it is not kept).
    let started = std::time::Instant::now();
    while services.market_cache.len() < ids.len() {
        assert!(started.elapsed() < Duration::from_secs(5), "the cache never filled");
        for id in &ids {
            quote(&services, *id, Side::Yes, amount).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Served without Postgres.
    let mut lock = db.begin().await.unwrap();
    sqlx::query("LOCK TABLE markets IN ACCESS EXCLUSIVE MODE").execute(&mut *lock).await.unwrap();
    let held = tokio::time::timeout(Duration::from_secs(2), quote(&services, ids[0], Side::Yes, amount)).await;
    assert!(held.is_ok_and(|q| q.is_ok()), "a held market is quoted without a query");
    lock.rollback().await.unwrap();

    let mut slowest = Duration::ZERO;
    for round in 0..40u64 {
        let id = ids[(round % ids.len() as u64) as usize];
        sqlx::query("UPDATE markets SET q_yes = q_yes + $2, q_no = q_no + $3 WHERE id = $1")
            .bind(id)
            .bind((round as i64 % 7) * 1_000_000 + 1)
            .bind((round as i64 % 5) * 1_000_000)
            .execute(&db)
            .await
            .unwrap();
        let committed = std::time::Instant::now();
        let expected = from_row(id).await;
        while quote(&services, id, Side::Yes, amount).await.unwrap().1 != expected {
            assert!(committed.elapsed() < Duration::from_secs(1), "round {round}: a change not quoted within a second");
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        slowest = slowest.max(committed.elapsed());
    }
    println!("slowest change-to-quote: {slowest:?}");
    for id in &ids {
        assert_eq!(quote(&services, *id, Side::Yes, amount).await.unwrap().1, from_row(*id).await);
    }
    // Whole rows (`GET /v1/markets/{id}`) too: a change to a column only the row shows (volume,
    // trades, prior, outcome) is served within a second, and every held row is Postgres's.
    let row = |id: Uuid| {
        let db = db.clone();
        async move { format!("{:?}", api::store::markets::market(&db, id).await.unwrap().unwrap()) }
    };
    let held = |id: Uuid| {
        let services = services.clone();
        async move { format!("{:?}", api::services::markets::market(&services, id).await.unwrap()) }
    };
    for (i, id) in ids.iter().enumerate() {
        let change = [
            "UPDATE markets SET total_volume = total_volume + 1, trade_count = trade_count + 1 WHERE id = $1",
            "UPDATE markets SET ou_prior_ppm = 612000, ou_confidence_ppm = 51000 WHERE id = $1",
            "UPDATE markets SET outcome = 'yes', actual_rate = 1234, settled_at = now() WHERE id = $1",
        ][i % 3];
        sqlx::query(change).bind(id).execute(&db).await.unwrap();
        let committed = std::time::Instant::now();
        while held(*id).await != row(*id).await {
            assert!(committed.elapsed() < Duration::from_secs(1), "{change}: not served within a second");
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
    }
    for id in &ids {
        assert_eq!(held(*id).await, row(*id).await);
    }
    // A market that closes is refused from the cache as from the row.
    sqlx::query("UPDATE markets SET status = 'closed' WHERE id = $1").bind(ids[1]).execute(&db).await.unwrap();
    let refused = std::time::Instant::now();
    while quote(&services, ids[1], Side::Yes, amount).await.is_ok() {
        assert!(refused.elapsed() < Duration::from_secs(1), "a closed market still quoted after a second");
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
}

/// `GET /v1/markets/{id}` and its quotes are kept rendered by the market's version: each
/// change to the row is served within a second, in the market and in its quote, as Postgres's
/// row renders and fills it; and a kept quote is refused once the market's trading window has
/// closed, though no change to its row moved the version.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn market_and_quote_bodies_follow_changes(db: PgPool) {
    use api::domain::market::Side;
    use api::domain::money::micros;
    use api::http::routes::markets::Market;
    series::ensure(&db, &default_series()).await.unwrap();
    let state = state(db.clone(), &redis_url());
    let terms = state.services.terms();
    let app = spawn(state).await;
    let now = Utc::now();
    let market = insert_market(&db, "okx-ethusdt", 1, now + chrono::Duration::hours(3), "open", 450_000).await;
    let amount = 10_000_000;
    // What Postgres's row renders to, and the shares and new YES price it fills the quote with.
    let expected = || {
        let db = db.clone();
        async move {
            let row = api::store::markets::market(&db, market).await.unwrap().unwrap();
            let fill = api::domain::quote::buy(&row.priced(), &terms, Side::Yes, amount, Utc::now()).unwrap();
            (serde_json::to_value(Market::from(row)).unwrap(), micros(fill.shares as i64), micros(fill.new_yes_price as i64))
        }
    };
    let served = || {
        let base = app.base.clone();
        async move {
            let get = |path: String| async move { reqwest::get(path).await.unwrap().json::<Value>().await.unwrap() };
            let row = get(format!("{base}/v1/markets/{market}")).await;
            let quote = get(format!("{base}/v1/markets/{market}/quote?side=yes&amount=10")).await;
            let text = |field: &str| quote["data"][field].as_str().unwrap_or_default().to_owned();
            (row["data"].clone(), text("shares"), text("new_yes_price"))
        }
    };
    let mut slowest = Duration::ZERO;
    for round in 0..12i64 {
        // Served (and kept) before the change.
        served().await;
        sqlx::query("UPDATE markets SET q_yes = q_yes + $2, q_no = q_no + $3, total_volume = total_volume + 1, trade_count = trade_count + 1 WHERE id = $1")
            .bind(market)
            .bind((round % 7) * 1_000_000 + 1)
            .bind((round % 5) * 1_000_000)
            .execute(&db)
            .await
            .unwrap();
        let committed = std::time::Instant::now();
        let want = expected().await;
        while served().await != want {
            assert!(committed.elapsed() < Duration::from_secs(1), "round {round}: a change not served within a second");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        slowest = slowest.max(committed.elapsed());
    }
    println!("slowest change-to-body: {slowest:?}");
    // A market whose trading window closes two seconds from now, its quote kept before then.
    let closing = insert_market(&db, "okx-btcusdt", 1, Utc::now() + chrono::Duration::minutes(5) + chrono::Duration::seconds(2), "open", 500_000).await;
    let quote = format!("/v1/markets/{closing}/quote?side=yes&amount=10");
    let started = std::time::Instant::now();
    loop {
        let (status, _) = json(&app, &quote).await;
        assert!(status == 200 || started.elapsed() < Duration::from_secs(1), "the new market was never quoted: {status}");
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(2_100).saturating_sub(started.elapsed())).await;
    let (status, body) = json(&app, &quote).await;
    assert_eq!((status, body["error"]["code"].as_str()), (422, Some("MARKET_CLOSED")), "a kept quote served past the close: {body}");
}

/// The series listing, and a series by slug, are served from memory once loaded: every page
/// and card equals the one Postgres gives, a change to a series or to a round a card shows is
/// listed within a second (the test prints the slowest), and a page is answered with the series
/// table locked.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn series_listing_follows_changes_from_memory(db: PgPool) {
    series::ensure(&db, &default_series()).await.unwrap();
    let state = state(db.clone(), &redis_url());
    let services = state.services.clone();
    let app = spawn(state).await;
    let cards = services.series_cards.clone();
    let pages: [(Option<&str>, i64, i64); 5] = [(None, 50, 0), (None, 5, 5), (Some("okx"), 3, 1), (Some("binance"), 200, 0), (None, 10, 1000)];
    // The held cards, and the rendered pages the API answers (kept by the cards' version), both
    // equal to what Postgres gives.
    let same_as_postgres = |db: PgPool, cards: Arc<api::services::series_cards::SeriesCards>, app: &TestApp| {
        let base = app.base.clone();
        async move {
            for (exchange, limit, offset) in pages {
                let held = cards.page(&db, exchange, limit, offset).await.unwrap();
                let read = series::list_series(&db, exchange, limit, offset).await.unwrap();
                if format!("{:?}", (&held.rows, held.total)) != format!("{read:?}") {
                    return false;
                }
                let filter = exchange.map(|e| format!("&exchange={e}")).unwrap_or_default();
                let served: Value = reqwest::get(format!("{base}/v1/series?limit={limit}&offset={offset}{filter}")).await.unwrap().json().await.unwrap();
                let rendered: Vec<api::http::routes::series::SeriesCard> = read.0.into_iter().map(Into::into).collect();
                if served["data"] != serde_json::to_value(rendered).unwrap() || served["meta"]["total"] != read.1 {
                    return false;
                }
            }
            // One series by slug (`GET /v1/series/{slug}`): the held card, or Postgres's row
            // for a series that is not active or does not exist.
            for slug in ["okx-ethusdt", "binance-btcusdt", "no-such-series"] {
                let held = cards.by_slug(&db, slug).await.unwrap().map(|(card, _version)| card);
                let read = series::series_by_slug(&db, slug).await.unwrap();
                if format!("{held:?}") != format!("{read:?}") {
                    return false;
                }
                let served: Value = reqwest::get(format!("{base}/v1/series/{slug}")).await.unwrap().json().await.unwrap();
                let expected = read.map_or(Value::Null, |r| serde_json::to_value(api::http::routes::series::SeriesCard::from(r)).unwrap());
                if served["data"] != expected {
                    return false;
                }
            }
            true
        }
    };
    let started = std::time::Instant::now();
    while cards.is_empty() {
        assert!(started.elapsed() < Duration::from_secs(5), "the cards were never loaded");
        cards.page(&db, None, 1, 0).await.unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(same_as_postgres(db.clone(), cards.clone(), &app).await);
    let mut lock = db.begin().await.unwrap();
    sqlx::query("LOCK TABLE series IN ACCESS EXCLUSIVE MODE").execute(&mut *lock).await.unwrap();
    let held = tokio::time::timeout(Duration::from_secs(2), cards.page(&db, None, 50, 0)).await;
    assert!(held.is_ok_and(|page| page.is_ok()), "a page is answered without a query");
    lock.rollback().await.unwrap();

    let now = Utc::now();
    let market = insert_market(&db, "okx-ethusdt", 1, now + chrono::Duration::hours(3), "open", 500_000).await;
    let changes = [
        "UPDATE markets SET yes_price_ppm = 612345, total_volume = total_volume + 5000000, trade_count = trade_count + 1 WHERE id = $1",
        "UPDATE markets SET status = 'closed' WHERE id = $1",
        "UPDATE series SET total_rounds = total_rounds + 1, yes_rounds = yes_rounds + 1, last_outcome = 'yes' WHERE id = (SELECT series_id FROM markets WHERE id = $1)",
        "UPDATE series SET active = false WHERE id = (SELECT series_id FROM markets WHERE id = $1)",
        "UPDATE series SET active = true WHERE id = (SELECT series_id FROM markets WHERE id = $1)",
        "DELETE FROM markets WHERE id = $1",
    ];
    let mut slowest = Duration::ZERO;
    for change in changes {
        sqlx::query(change).bind(market).execute(&db).await.unwrap();
        slowest = slowest.max(listed_within_a_second(|| same_as_postgres(db.clone(), cards.clone(), &app), change).await);
    }
    println!("slowest change-to-listing: {slowest:?}");
}

/// How long after a change `same_as_postgres` took to hold (at most a second).
async fn listed_within_a_second<F: std::future::Future<Output = bool>>(same_as_postgres: impl Fn() -> F, change: &str) -> Duration {
    let committed = std::time::Instant::now();
    while !same_as_postgres().await {
        assert!(committed.elapsed() < Duration::from_secs(1), "not listed within a second: {change}");
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    committed.elapsed()
}

/// Waits (at most 5 s) for the market cache to listen: pages are kept by its version from then.
async fn market_cache_listening(services: &api::services::Services, db: &PgPool) {
    let started = std::time::Instant::now();
    while services.market_cache.version(db).is_none() {
        assert!(started.elapsed() < Duration::from_secs(5), "the market cache never listened");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The requests that miss a market together wait for the first one's read and take the row it
/// kept: with `markets` locked, one of eight concurrent reads waits on the lock in Postgres (the
/// others wait for it here), and once the lock goes all eight have the one row it read. A change
/// this process makes itself (`forget`) raises the floor the market routes pass to their kept
/// pages to the version after it.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn requests_missing_a_market_together_read_it_once(db: PgPool) {
    series::ensure(&db, &default_series()).await.unwrap();
    let id = insert_market(&db, "okx-ethusdt", 2, Utc::now() + chrono::Duration::hours(3), "open", 400_000).await;
    let services = services(&db);
    market_cache_listening(&services, &db).await;
    // The lock and the look at Postgres's backends on connections of their own: reads side by
    // side would take the pool's.
    let (mut locker, mut observer) =
        (sqlx::PgConnection::connect_with(&db.connect_options()).await.unwrap(), sqlx::PgConnection::connect_with(&db.connect_options()).await.unwrap());
    let mut lock = locker.begin().await.unwrap();
    sqlx::query("LOCK TABLE markets IN ACCESS EXCLUSIVE MODE").execute(&mut *lock).await.unwrap();
    let reads: Vec<_> = (0..8)
        .map(|_| {
            let (cache, db) = (services.market_cache.clone(), db.clone());
            tokio::spawn(async move { cache.market(&db, id).await.unwrap().expect("the market exists") })
        })
        .collect();
    let mut blocked_reads = async || -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
            .fetch_one(&mut observer)
            .await
            .unwrap()
    };
    let started = std::time::Instant::now();
    while blocked_reads().await == 0 {
        assert!(started.elapsed() < Duration::from_secs(5), "no read reached Postgres");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Every request has had time to miss the market and ask for its turn by now.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(blocked_reads().await, 1, "one read of the market in Postgres, not one per request");
    lock.rollback().await.unwrap();
    let mut rows = Vec::new();
    for read in reads {
        rows.push(read.await.unwrap());
    }
    assert!(rows.iter().all(|row| Arc::ptr_eq(row, &rows[0]) && row.id == id), "every request takes the row the first one read");

    let before = services.market_cache.version(&db).unwrap();
    services.market_cache.forget(id);
    let after = services.market_cache.version(&db).unwrap();
    assert!(after > before);
    assert_eq!(services.market_cache.own_change_version(), after);
    for status in [None, Some(MarketStatus::Open)] {
        assert_eq!(api::services::markets::listing_version(&services, status).floor, after, "the market routes' pages are floored at the change");
    }
    for status in [MarketStatus::Settled, MarketStatus::Closed] {
        let listing = api::services::markets::listing_version(&services, Some(status));
        assert!(listing.version.is_some_and(|v| v < after) && listing.floor < after, "the {status:?} listing keeps its version and floor");
    }
    let market_version = api::services::markets::market_version(&services, id);
    assert_eq!((market_version.version, market_version.floor), (Some(after), after), "and the market's own pages");
    let other = api::services::markets::market_version(&services, Uuid::new_v4());
    assert!(other.version.is_some_and(|v| v < after) && other.floor < after, "another market's pages keep their version and floor");
}

/// The market listing (`GET /v1/markets`) is kept rendered by the market rows' version (a page of
/// one status but open by that status' notices): every page served equals Postgres's; a change to a listed row, to a status (and
/// with it the totals), to a series a row shows, a new market and a removed one are served
/// within a second (the test prints the slowest); a page already served is served again with
/// `markets` locked.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn market_listing_follows_changes_from_memory(db: PgPool) {
    series::ensure(&db, &default_series()).await.unwrap();
    let state = state(db.clone(), &redis_url());
    let services = state.services.clone();
    let app = spawn(state).await;
    let now = Utc::now();
    let slugs = ["okx-ethusdt", "okx-btcusdt", "binance-btcusdt", "bybit-solusdt"];
    let mut ids = Vec::new();
    for (i, slug) in slugs.iter().enumerate() {
        let i = i as i64;
        ids.push(insert_market(&db, slug, 2, now + chrono::Duration::hours(3 + i), "open", 400_000 + 50_000 * i as u32).await);
        ids.push(insert_market(&db, slug, 1, now - chrono::Duration::hours(5 + i), "settled", 500_000).await);
    }
    let pages: [(Option<MarketStatus>, i64, i64); 10] = [
        (None, 100, 0),
        (None, 3, 2),
        (None, 2, 7),
        (Some(MarketStatus::Open), 2, 1),
        (Some(MarketStatus::Settled), 100, 0),
        (Some(MarketStatus::Settled), 2, 1),
        (Some(MarketStatus::Voided), 10, 0),
        (Some(MarketStatus::Closed), 10, 0),
        (Some(MarketStatus::Resolving), 10, 0),
        (Some(MarketStatus::Pending), 10, 0),
    ];
    let base = app.base.clone();
    let same_as_postgres = || {
        let (db, base) = (db.clone(), base.clone());
        async move {
            for (status, limit, offset) in pages {
                let read = api::store::markets::list_markets(&db, status, limit, offset).await.unwrap();
                let filter = status.map(|s| format!("&status={}", s.as_str())).unwrap_or_default();
                let served: Value = reqwest::get(format!("{base}/v1/markets?limit={limit}&offset={offset}{filter}")).await.unwrap().json().await.unwrap();
                let rendered: Vec<api::http::routes::markets::Market> = read.rows.into_iter().map(Into::into).collect();
                if served["data"] != serde_json::to_value(rendered).unwrap() || served["meta"]["total"] != read.total {
                    return false;
                }
            }
            true
        }
    };
    // Pages are kept once the market cache listens.
    market_cache_listening(&services, &db).await;
    assert!(same_as_postgres().await);
    let mut lock = db.begin().await.unwrap();
    sqlx::query("LOCK TABLE markets IN ACCESS EXCLUSIVE MODE").execute(&mut *lock).await.unwrap();
    let kept = tokio::time::timeout(Duration::from_secs(2), reqwest::get(format!("{base}/v1/markets?limit=3&offset=2"))).await;
    assert!(kept.is_ok_and(|r| r.is_ok_and(|r| r.status() == 200)), "a page served before is served again without a query");
    lock.rollback().await.unwrap();

    let changes = [
        "UPDATE markets SET yes_price_ppm = 612345, total_volume = total_volume + 5000000, trade_count = trade_count + 1 WHERE id = $1",
        "UPDATE markets SET status = 'pending' WHERE id = $1",
        "UPDATE markets SET status = 'closed' WHERE id = $1",
        "UPDATE markets SET yes_price_ppm = 612000 WHERE id = $1",
        "UPDATE markets SET status = 'resolving' WHERE id = $1",
        "UPDATE markets SET status = 'settled', outcome = 'yes', actual_rate = 1234, settled_at = now() WHERE id = $1",
        "UPDATE markets SET total_volume = total_volume + 1 WHERE id = $1",
        "UPDATE markets SET status = 'voided', outcome = NULL, actual_rate = NULL WHERE id = $1",
        "UPDATE series SET symbol = symbol || 'X' WHERE id = (SELECT series_id FROM markets WHERE id = $1)",
        "DELETE FROM markets WHERE id = $1",
    ];
    let mut slowest = Duration::ZERO;
    for change in changes {
        sqlx::query(change).bind(ids[2]).execute(&db).await.unwrap();
        slowest = slowest.max(listed_within_a_second(&same_as_postgres, change).await);
    }
    insert_market(&db, "okx-ethusdt", 3, now + chrono::Duration::hours(1), "open", 450_000).await;
    slowest = slowest.max(listed_within_a_second(&same_as_postgres, "a new market").await);
    println!("slowest change-to-listing: {slowest:?}");
}

/// A statement that changes several of an account's positions appends one `positions` stream
/// event for the account (the event only says they changed; the WebSocket renders them all).
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_statement_streams_one_positions_event_per_account(db: PgPool) {
    series::ensure(&db, &default_series()).await.unwrap();
    let settlement = Utc::now() + chrono::Duration::hours(3);
    let markets = [
        insert_market(&db, "okx-ethusdt", 1, settlement, "open", 500_000).await,
        insert_market(&db, "okx-btcusdt", 1, settlement, "open", 500_000).await,
        insert_market(&db, "binance-btcusdt", 1, settlement, "open", 500_000).await,
    ];
    let events = |db: PgPool| async move {
        let rows: Vec<(String,)> =
            sqlx::query_as("SELECT channel FROM unpublished_events WHERE kind = 'positions' ORDER BY channel").fetch_all(&db).await.unwrap();
        let rows: Vec<String> = rows.into_iter().map(|(c,)| c).collect();
        sqlx::query("DELETE FROM stream_events").execute(&db).await.unwrap();
        rows
    };
    sqlx::query(
        "INSERT INTO positions (market_id, wallet, yes_shares, no_shares, last_trade_count, updated_at)
         SELECT m, w, 1, 0, 1, now() FROM unnest($1::uuid[]) m, unnest(ARRAY['alice', 'bob']) w WHERE w = 'alice' OR m = $1[1]",
    )
    .bind(&markets[..])
    .execute(&db)
    .await
    .unwrap();
    assert_eq!(events(db.clone()).await, ["account:alice", "account:bob"]);
    sqlx::query("UPDATE positions SET yes_shares = yes_shares + 1 WHERE wallet = 'alice'").execute(&db).await.unwrap();
    assert_eq!(events(db.clone()).await, ["account:alice"]);
    sqlx::query("DELETE FROM positions").execute(&db).await.unwrap();
    assert_eq!(events(db.clone()).await, ["account:alice", "account:bob"]);
}

/// Trades, price points and positions reference their market by foreign key: a row of a missing
/// market fails its whole statement with 23503, a referenced market can be neither deleted,
/// truncated nor given another id, and a delete racing an insert waits for it (and fails once it
/// committed), as an insert racing a delete waits for that (and fails once it committed).
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn market_references_are_enforced(db: PgPool) {
    series::ensure(&db, &default_series()).await.unwrap();
    let settlement = Utc::now() + chrono::Duration::hours(1);
    let market = insert_market(&db, "binance-btcusdt", 1, settlement, "open", 500_000).await;
    let code = |result: Result<sqlx::postgres::PgQueryResult, sqlx::Error>| match result {
        Ok(_) => "ok".to_owned(),
        Err(e) => e.as_database_error().and_then(|d| d.code()).map(|c| c.into_owned()).unwrap_or_else(|| e.to_string()),
    };
    let trade = |markets: Vec<Uuid>| {
        sqlx::query(
            "INSERT INTO trades (id, market_id, wallet, side, is_buy, shares, amount, fee, yes_price_ppm)
             SELECT gen_random_uuid(), m, 'w', 'yes', true, 1, 1, 0, 500000 FROM unnest($1::uuid[]) AS m",
        )
        .bind(markets)
    };
    let price = |markets: Vec<Uuid>| {
        sqlx::query("INSERT INTO market_prices (market_id, at, yes_price_ppm) SELECT m, now() + n * interval '1 second', 500000 FROM unnest($1::uuid[]) WITH ORDINALITY AS t(m, n)")
            .bind(markets)
    };
    let position = |markets: Vec<Uuid>| {
        sqlx::query("INSERT INTO positions (market_id, wallet, yes_shares, no_shares, last_trade_count, updated_at) SELECT m, 'w' || n, 1, 0, 1, now() FROM unnest($1::uuid[]) WITH ORDINALITY AS t(m, n)")
            .bind(markets)
    };
    let count = |table: &'static str| {
        let db = db.clone();
        async move { sqlx::query_scalar::<_, i64>(&format!("SELECT count(*) FROM {table}")).fetch_one(&db).await.unwrap() }
    };

    // A missing market fails the statement, whichever row names it.
    let unknown = Uuid::new_v4();
    assert_eq!(code(trade(vec![market, unknown, market]).execute(&db).await), "23503");
    assert_eq!(code(price(vec![market, unknown]).execute(&db).await), "23503");
    assert_eq!(code(position(vec![unknown]).execute(&db).await), "23503");
    assert_eq!((count("trades").await, count("market_prices").await, count("positions").await), (0, 0, 0));
    assert_eq!(code(trade(vec![market, market]).execute(&db).await), "ok");
    assert_eq!(code(price(vec![market]).execute(&db).await), "ok");
    assert_eq!(code(position(vec![market]).execute(&db).await), "ok");
    // Moving a row to a missing market fails too.
    assert_eq!(code(sqlx::query("UPDATE trades SET market_id = $1").bind(unknown).execute(&db).await), "23503");
    assert_eq!(code(sqlx::query("UPDATE positions SET market_id = $1").bind(unknown).execute(&db).await), "23503");

    // A referenced market stays, whatever references it; an unreferenced one goes.
    let delete = |id: Uuid| sqlx::query("DELETE FROM markets WHERE id = $1").bind(id);
    assert_eq!(code(delete(market).execute(&db).await), "23503");
    assert_eq!(code(sqlx::query("TRUNCATE markets").execute(&db).await), "0A000", "a referenced table is not truncated alone");
    assert_eq!(code(sqlx::query("UPDATE markets SET id = $1 WHERE id = $2").bind(unknown).bind(market).execute(&db).await), "23503");
    for table in ["trades", "market_prices"] {
        sqlx::query(&format!("DELETE FROM {table}")).execute(&db).await.unwrap();
        assert_eq!(code(delete(market).execute(&db).await), "23503", "still referenced from positions");
    }
    sqlx::query("DELETE FROM positions").execute(&db).await.unwrap();
    assert_eq!(code(sqlx::query("UPDATE markets SET status = 'closed' WHERE id = $1").bind(market).execute(&db).await), "ok");
    assert_eq!(code(delete(market).execute(&db).await), "ok");

    // A delete waits for the insert that locked its market, then fails.
    let raced = insert_market(&db, "binance-btcusdt", 2, settlement + chrono::Duration::hours(1), "open", 500_000).await;
    let mut inserting = db.begin().await.unwrap();
    trade(vec![raced]).execute(&mut *inserting).await.unwrap();
    let deleting = tokio::spawn({
        let db = db.clone();
        async move { code(delete(raced).execute(&db).await) }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!deleting.is_finished(), "the delete waits for the inserting transaction");
    inserting.commit().await.unwrap();
    assert_eq!(deleting.await.unwrap(), "23503");

    // An insert waits for the delete of its market, then fails.
    let gone = insert_market(&db, "binance-btcusdt", 3, settlement + chrono::Duration::hours(2), "open", 500_000).await;
    let mut deleting = db.begin().await.unwrap();
    delete(gone).execute(&mut *deleting).await.unwrap();
    let inserting = tokio::spawn({
        let db = db.clone();
        async move { code(trade(vec![gone]).execute(&db).await) }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!inserting.is_finished(), "the insert waits for the deleting transaction");
    deleting.commit().await.unwrap();
    assert_eq!(inserting.await.unwrap(), "23503");
}

/// A market's trades and prices, a series' rounds and the settled and closed markets' listings
/// are kept rendered by their market's, series' and status' versions: every page served equals
/// Postgres's; a trade projected with its market's row, one projected behind its market's count
/// (the row unchanged), a price point alone, a removed trade, a settlement and a new settled
/// round are each served within a second (the test prints the slowest); a page already served is
/// served again with the tables locked, and after a trade on another market.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn market_history_follows_changes_from_memory(db: PgPool) {
    use api::http::routes::markets::{Market, SettledRound, TradeItem};
    use api::store::markets::{TradesOf, list_markets, price_history, settled_rounds, trades};
    series::ensure(&db, &default_series()).await.unwrap();
    let state = state(db.clone(), &redis_url());
    let services = state.services.clone();
    let app = spawn(state).await;
    let now = Utc::now();
    let slug = "okx-ethusdt";
    let series = series_id(&db, slug).await;
    let market = insert_market(&db, slug, 5, now + chrono::Duration::hours(3), "open", 450_000).await;
    let open_round = insert_market(&db, slug, 4, now - chrono::Duration::minutes(1), "closed", 500_000).await;
    for round in 1..=3 {
        insert_market(&db, slug, round, now - chrono::Duration::hours(8 * (4 - round as i64)), "settled", 500_000).await;
    }
    sqlx::query(
        "INSERT INTO trades (id, market_id, wallet, side, is_buy, shares, amount, fee, yes_price_ppm, created_at)
         SELECT gen_random_uuid(), $1, 'w', 'yes', true, n, 1000000, 20000, 500000 + n, now() + n * interval '1 ms' FROM generate_series(1, 4) n",
    )
    .bind(market)
    .execute(&db)
    .await
    .unwrap();
    let base = app.base.clone();
    let same_as_postgres = || {
        let (db, base) = (db.clone(), base.clone());
        async move {
            let served = |path: String| {
                let base = base.clone();
                async move { reqwest::get(format!("{base}{path}")).await.unwrap().json::<Value>().await.unwrap() }
            };
            for (limit, offset) in [(100, 0), (2, 1)] {
                let (rows, total) = trades(&db, TradesOf::Market(market), limit, offset).await.unwrap();
                let rendered: Vec<TradeItem> = rows.into_iter().map(Into::into).collect();
                let page = served(format!("/v1/markets/{market}/trades?limit={limit}&offset={offset}")).await;
                if page["data"] != serde_json::to_value(rendered).unwrap() || page["meta"]["total"] != total {
                    return false;
                }
                let (rows, total) = settled_rounds(&db, series, limit, offset).await.unwrap();
                let rendered: Vec<SettledRound> = rows.into_iter().map(Into::into).collect();
                let page = served(format!("/v1/series/{slug}/rounds?limit={limit}&offset={offset}")).await;
                if page["data"] != serde_json::to_value(rendered).unwrap() || page["meta"]["total"] != total {
                    return false;
                }
                for status in [MarketStatus::Settled, MarketStatus::Closed] {
                    let listed = list_markets(&db, Some(status), limit, offset).await.unwrap();
                    let rendered: Vec<Market> = listed.rows.into_iter().map(Into::into).collect();
                    let page = served(format!("/v1/markets?status={}&limit={limit}&offset={offset}", status.as_str())).await;
                    if page["data"] != serde_json::to_value(rendered).unwrap() || page["meta"]["total"] != listed.total {
                        return false;
                    }
                }
            }
            let points: Vec<Value> = price_history(&db, market, 10_000)
                .await
                .unwrap()
                .into_iter()
                .map(|(at, yes)| {
                    serde_json::json!({"timestamp": at, "yes_price": api::domain::money::micros(yes as i64), "no_price": api::domain::money::micros(1_000_000 - yes as i64)})
                })
                .collect();
            served(format!("/v1/markets/{market}/prices")).await["data"] == Value::Array(points)
        }
    };
    market_cache_listening(&services, &db).await;
    assert!(same_as_postgres().await);
    // The pages served, asked for again with their tables locked: answered only if kept.
    let served_without_a_query = async |after: &str| {
        let mut lock = db.begin().await.unwrap();
        sqlx::query("LOCK TABLE markets, trades, market_prices IN ACCESS EXCLUSIVE MODE").execute(&mut *lock).await.unwrap();
        for path in [
            format!("/v1/markets/{market}/trades?limit=2&offset=1"),
            format!("/v1/markets/{market}/prices"),
            format!("/v1/series/{slug}/rounds?limit=100&offset=0"),
            "/v1/markets?status=settled&limit=2&offset=1".to_owned(),
            "/v1/markets?status=closed&limit=100&offset=0".to_owned(),
        ] {
            let kept = tokio::time::timeout(Duration::from_secs(2), reqwest::get(format!("{base}{path}"))).await;
            assert!(kept.is_ok_and(|r| r.is_ok_and(|r| r.status() == 200)), "{path} read again {after}");
        }
        lock.rollback().await.unwrap();
    };
    served_without_a_query("with nothing changed").await;
    // A trade on another market (an unsettled round of the series), once heard, leaves this
    // market's pages, the series' rounds and the settled and closed listings kept.
    let heard_before = services.market_cache.version(&db).unwrap();
    sqlx::query(
        "INSERT INTO trades (id, market_id, wallet, side, is_buy, shares, amount, fee, yes_price_ppm, created_at)
         VALUES (gen_random_uuid(), $1, 'w', 'yes', true, 1, 1000000, 20000, 500001, now())",
    )
    .bind(open_round)
    .execute(&db)
    .await
    .unwrap();
    let started = std::time::Instant::now();
    while services.market_cache.version(&db).unwrap() == heard_before {
        assert!(started.elapsed() < Duration::from_secs(1), "the other market's trade was not heard within a second");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    served_without_a_query("after another market's trade").await;

    let trade = |count: i32| {
        format!(
            "INSERT INTO trades (id, market_id, wallet, side, is_buy, shares, amount, fee, yes_price_ppm, created_at)
             VALUES (gen_random_uuid(), $1, 'w', 'yes', true, {count}, 1000000, 20000, {}, now() + interval '{count} ms')",
            500_000 + count
        )
    };
    let changes = [
        // A trade projected with its market's row and its price point (one statement).
        (
            market,
            format!(
                "WITH trade AS ({}), price AS (INSERT INTO market_prices (market_id, at, yes_price_ppm) VALUES ($1, now(), 500005))
                 UPDATE markets SET trade_count = 5, total_volume = total_volume + 1000000 WHERE id = $1",
                trade(5)
            ),
        ),
        // One behind its market's count: the row stays as it is.
        (market, trade(3)),
        (market, "INSERT INTO market_prices (market_id, at, yes_price_ppm) VALUES ($1, now() - interval '1 minute', 499000)".to_owned()),
        (market, "DELETE FROM trades WHERE id = (SELECT id FROM trades WHERE market_id = $1 ORDER BY created_at LIMIT 1)".to_owned()),
        (open_round, "UPDATE markets SET status = 'settled', outcome = 'no', actual_rate = -50, settled_at = now() WHERE id = $1".to_owned()),
    ];
    let mut slowest = Duration::ZERO;
    for (id, change) in changes {
        sqlx::query(&change).bind(id).execute(&db).await.unwrap();
        slowest = slowest.max(listed_within_a_second(&same_as_postgres, &change).await);
    }
    insert_market(&db, slug, 6, now - chrono::Duration::hours(40), "settled", 500_000).await;
    slowest = slowest.max(listed_within_a_second(&same_as_postgres, "a new settled round").await);
    println!("slowest change-to-history: {slowest:?}");
}
