//! The market-data read benchmark: 4,000 tracked perps (1,000 a venue) with 30 days of interval
//! changes and of crowd history at the collectors' default 15-minute sweep (2,880 readings each
//! of the 3,000 perps with a ratio: 8.6 million rows), seeded into a fresh database; the eight
//! `/v1/intervals…` and `/v1/crowd…` endpoints and a bare axum handler driven by the same load
//! generator in the same run.
//!
//! `bash scripts/bench-market-data.sh` (release build; needs Postgres and Redis).

use std::time::{Duration, Instant};

use api::store::{self as db, cache::Redis};
use api::{AppState, Config};
use axum::Router;
use axum::routing::get;
use sqlx::postgres::PgPoolOptions;

mod support;

use support::{CONNECTIONS, SECONDS, drive, serve};

const SEED: &[&str] = &[
    // 4,000 perps: a quarter per venue; Hyperliquid hourly, a fifth of the rest at 4 h.
    "INSERT INTO perps (exchange, symbol, interval_minutes, first_seen_at, last_seen_at)
     SELECT (ARRAY['binance','bybit','okx','hyperliquid'])[i % 4 + 1], format('S%sUSDT', lpad(i::text, 4, '0')),
            CASE WHEN i % 4 = 3 THEN 60 WHEN i % 5 = 0 THEN 240 ELSE 480 END, now() - interval '30 days', now()
     FROM generate_series(0, 3999) i",
    // Zero to five changes each over the 30 days (8h ↔ 4h), about 7,500 in all.
    "INSERT INTO interval_changes (exchange, symbol, from_minutes, to_minutes, changed_at)
     SELECT p.exchange, p.symbol, CASE WHEN k % 2 = 0 THEN 480 ELSE 240 END, CASE WHEN k % 2 = 0 THEN 240 ELSE 480 END,
            now() - interval '30 days' + k * interval '5 days' + (abs(hashtext(p.symbol)) % 86400) * interval '1 second'
     FROM perps p, generate_series(0, 4) k WHERE p.exchange <> 'hyperliquid' AND k < abs(hashtext(p.symbol)) % 6",
    "UPDATE perps p SET change_count = c.n, last_changed_at = c.last
     FROM (SELECT exchange, symbol, count(*)::int AS n, max(changed_at) AS last FROM interval_changes GROUP BY 1, 2) c
     WHERE p.exchange = c.exchange AND p.symbol = c.symbol",
    // A reading every 15 minutes for 30 days.
    "INSERT INTO crowd_history (exchange, symbol, ts, long_ppm, short_ppm)
     SELECT p.exchange, p.symbol, ts, l, 1000000 - l
     FROM perps p, generate_series(date_trunc('minute', now()) - interval '30 days', now(), interval '15 minutes') ts,
          LATERAL (SELECT 300000 + abs(hashtext(p.symbol || ts::text)) % 400000 AS l) r
     WHERE p.exchange <> 'hyperliquid'",
    "INSERT INTO crowd_latest (exchange, symbol, long_ppm, short_ppm, open_interest_cents, observed_at, updated_at)
     SELECT DISTINCT ON (exchange, symbol) exchange, symbol, long_ppm, short_ppm, 1000000 + abs(hashtext(symbol)) % 10000000000, ts, now()
     FROM crowd_history ORDER BY exchange, symbol, ts DESC",
    "VACUUM ANALYZE",
];

#[tokio::main]
async fn main() {
    let admin = std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres:postgres@127.0.0.1:5432/postgres".into());
    let url = format!("{}/fm_bench_market_data", admin.rsplit_once('/').unwrap().0);
    let conn = PgPoolOptions::new().max_connections(1).connect(&admin).await.unwrap();
    sqlx::query("DROP DATABASE IF EXISTS fm_bench_market_data").execute(&conn).await.unwrap();
    conn.close().await;
    let pool = db::pool(&url, 32, Duration::from_secs(5)).unwrap();
    db::prepare(&url, &pool).await.unwrap();
    let seeding = Instant::now();
    for statement in SEED {
        sqlx::query(statement).execute(&pool).await.unwrap();
    }
    let count = |table: &'static str| {
        let pool = pool.clone();
        async move { sqlx::query_scalar::<_, i64>(&format!("SELECT count(*) FROM {table}")).fetch_one(&pool).await.unwrap() }
    };
    println!(
        "seeded {} perps, {} interval changes, {} crowd readings in {:.0} s",
        count("perps").await,
        count("interval_changes").await,
        count("crowd_history").await,
        seeding.elapsed().as_secs_f64()
    );

    let mut config = Config::from_env().unwrap();
    config.http.rate_public_per_min = u32::MAX;
    // Counts of their own: the millions of requests from 127.0.0.1 must not use up a local
    // service's limit for that address in the same Redis (it answered 429 for the rest of the
    // minute after a run).
    config.redis.namespace = format!("fmbench-{}", uuid::Uuid::new_v4().simple());
    let redis = Redis::new(&config.redis.url, config.http.health_timeout, &config.redis.namespace).unwrap();
    let app = serve(api::http::app(AppState::new(&config, pool.clone(), redis))).await;
    let bare = serve(Router::new().route("/", get(|| async { axum::Json(serde_json::json!({"data": {"ok": true}, "meta": {}, "error": null})) }))).await;

    println!("{CONNECTIONS} connections, {SECONDS} s each, load generator in the same process");
    println!("{:<48} {:>10} {:>9} {:>9} {:>9} {:>7} {:>9}", "endpoint", "req/s", "p50 ms", "p99 ms", "p99.9 ms", "x bare", "p99/bare");
    // The bare handler's row (the first) is the reference of every row's ratios.
    let mut reference: Option<(f64, f64)> = None;
    for (label, path) in [
        ("bare axum handler", String::new()),
        ("GET /v1/intervals", "/v1/intervals".into()),
        ("GET /v1/intervals/stats", "/v1/intervals/stats".into()),
        ("GET /v1/intervals/threaded", "/v1/intervals/threaded".into()),
        ("GET /v1/intervals/threaded?search=S12&sort=symbol", "/v1/intervals/threaded?search=S12&sort=symbol".into()),
        ("GET /v1/intervals/{exchange}/{symbol}", "/v1/intervals/binance/S0000USDT".into()),
        ("GET /v1/intervals/{exchange}/{symbol}/analysis", "/v1/intervals/binance/S0000USDT/analysis".into()),
        ("GET /v1/crowd/leaderboard", "/v1/crowd/leaderboard".into()),
        ("GET /v1/crowd/summary", "/v1/crowd/summary".into()),
        ("GET /v1/crowd/{exchange}/{symbol} (24 h: 96 points)", "/v1/crowd/binance/S0000USDT".into()),
        ("GET /v1/crowd/{exchange}/{symbol}?hours=720", "/v1/crowd/binance/S0000USDT?hours=720".into()),
    ] {
        let url = if path.is_empty() { format!("{bare}/") } else { format!("{app}{path}") };
        let (rps, p50, p99, p999) = drive(url).await;
        let bare = *reference.get_or_insert((rps, p99));
        println!("{label:<48} {rps:>10.0} {p50:>9.2} {p99:>9.2} {p999:>9.2} {}", support::ratios(bare, rps, p99));
    }
    pool.close().await;
}
