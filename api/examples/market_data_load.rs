//! The market-data read benchmark: 4,000 tracked perps (1,000 a venue) with 30 days of interval
//! changes and of crowd history at the collectors' default 15-minute sweep (2,880 readings each
//! of the 3,000 perps with a ratio: 8.6 million rows), seeded into a fresh database; the eight
//! `/v1/intervals…` and `/v1/crowd…` endpoints and a bare axum handler driven by the same load
//! generator in the same run, each row in slices alternating with the bare handler's. Each row
//! is driven quiet, then while the collectors' data changes every 100 ms: a venue's listing with
//! one perp's interval changed, and a crowd reading of that perp, each written by the
//! collectors' own store functions (so each change is notified as theirs are). The month of
//! crowd history, the largest page, is also driven beside a bare handler answering its own
//! bytes. `LOAD_ROWS` selects rows (`support::wanted`). The database is dropped at the end
//! unless `KEEP_DATABASE` is set.
//!
//! `bash scripts/bench-market-data.sh` (release build; needs Postgres and Redis).

use std::time::{Duration, Instant};

use api::store::crowd::{self, Reading};
use api::store::intervals;
use api::store::{self as db, cache::Redis};
use api::{AppState, Config};
use sqlx::postgres::PgPoolOptions;

mod support;

use support::{CONNECTIONS, SECONDS, Table, bare_handler, bare_handler_answering, serve};

const SEED: &[&str] = &[
    // 4,000 perps: a quarter per venue; Hyperliquid hourly, a fifth of the rest at 4 h.
    "INSERT INTO perps (exchange, symbol, interval_minutes, first_seen_at)
     SELECT (ARRAY['binance','bybit','okx','hyperliquid'])[i % 4 + 1], format('S%sUSDT', lpad(i::text, 4, '0')),
            CASE WHEN i % 4 = 3 THEN 60 WHEN i % 5 = 0 THEN 240 ELSE 480 END, now() - interval '30 days'
     FROM generate_series(0, 3999) i",
    // Zero to five changes each over the 30 days (8h ↔ 4h), about 7,500 in all.
    "INSERT INTO interval_changes (exchange, symbol, from_minutes, to_minutes, changed_at)
     SELECT p.exchange, p.symbol, CASE WHEN k % 2 = 0 THEN 480 ELSE 240 END, CASE WHEN k % 2 = 0 THEN 240 ELSE 480 END,
            now() - interval '30 days' + k * interval '5 days' + (abs(hashtext(p.symbol)) % 86400) * interval '1 second'
     FROM perps p, generate_series(0, 4) k WHERE p.exchange <> 'hyperliquid' AND k < abs(hashtext(p.symbol)) % 6",
    "UPDATE perps p SET change_count = c.n, last_changed_at = c.last
     FROM (SELECT exchange, symbol, count(*)::int AS n, max(changed_at) AS last FROM interval_changes GROUP BY 1, 2) c
     WHERE p.exchange = c.exchange AND p.symbol = c.symbol",
    // The stats page's totals, as the collectors' recording keeps them.
    "INSERT INTO interval_changes_by_exchange (exchange, changes)
     SELECT exchange, sum(change_count) FROM perps GROUP BY exchange HAVING sum(change_count) > 0",
    "INSERT INTO interval_changes_by_symbol (symbol, changes)
     SELECT symbol, sum(change_count) FROM perps GROUP BY symbol HAVING sum(change_count) > 0",
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
    // The service records its metrics by default (`FM_METRICS_ADDR`): so does the harness.
    api::app::metrics::recorder();
    let app = serve(api::http::app(AppState::new(&config, pool.clone(), redis))).await;
    let bare = serve(bare_handler()).await;

    println!("{CONNECTIONS} connections, {SECONDS} s each, load generator in the same process");
    let table = Table::start(format!("{bare}/"), W).await;
    let rows = [
        ("GET /v1/intervals", "/v1/intervals"),
        ("GET /v1/intervals/stats", "/v1/intervals/stats"),
        ("GET /v1/intervals/threaded", "/v1/intervals/threaded"),
        ("GET /v1/intervals/threaded?search=S12&sort=symbol", "/v1/intervals/threaded?search=S12&sort=symbol"),
        ("GET /v1/intervals/{exchange}/{symbol}", "/v1/intervals/binance/S0000USDT"),
        ("GET /v1/intervals/{exchange}/{symbol}/analysis", "/v1/intervals/binance/S0000USDT/analysis"),
        ("GET /v1/crowd/leaderboard", "/v1/crowd/leaderboard"),
        ("GET /v1/crowd/summary", "/v1/crowd/summary"),
        ("GET /v1/crowd/{exchange}/{symbol} (24 h: 96 points)", "/v1/crowd/binance/S0000USDT"),
        ("GET /v1/crowd/{exchange}/{symbol}?hours=720", "/v1/crowd/binance/S0000USDT?hours=720"),
    ];
    for (label, path) in rows {
        table.row(label, &format!("{app}{path}")).await;
    }
    // The largest page beside a bare handler answering its own bytes: what is left of its
    // ratio once writing and reading the bytes costs both sides alike.
    let month = format!("{app}/v1/crowd/binance/S0000USDT?hours=720");
    let (month_bytes, length) = bare_handler_answering(&month).await;
    let month_table = table.against(format!("{}/", serve(month_bytes).await));
    let beside_its_bytes = format!("GET /v1/crowd/{{exchange}}/{{symbol}}?hours=720 against a bare handler answering its {length} bytes");
    month_table.row(&beside_its_bytes, &month).await;

    // The same rows while the collectors' data changes every 100 ms.
    let listing: Vec<(String, i32)> =
        sqlx::query_as("SELECT symbol, interval_minutes FROM perps WHERE exchange = 'binance' ORDER BY symbol").fetch_all(&pool).await.unwrap();
    println!("each change below: Binance's listing ({} perps) with S0000USDT's interval changed, and a crowd reading of S0000USDT", listing.len());
    for (label, path) in rows {
        table.row_while_changing(&format!("{label}, changing every 100 ms"), &format!("{app}{path}"), collectors_writing(&pool, &listing)).await;
    }
    month_table.row_while_changing(&format!("{beside_its_bytes}, changing every 100 ms"), &month, collectors_writing(&pool, &listing)).await;
    pool.close().await;
    // Its 8.6 million readings take over a gigabyte; `KEEP_DATABASE=1` keeps it to look into.
    if std::env::var_os("KEEP_DATABASE").is_none() {
        let conn = PgPoolOptions::new().max_connections(1).connect(&admin).await.unwrap();
        sqlx::query("DROP DATABASE fm_bench_market_data WITH (FORCE)").execute(&conn).await.unwrap();
    }
}

/// The label column's width.
const W: usize = 76;

/// The n-th change: Binance's `listing` recorded with S0000USDT's interval switched between 8 h
/// and 4 h (one change recorded), and a reading of S0000USDT observed now, both as the
/// collectors record them. Each change also drops S0000USDT's interval changes beyond its five
/// newest and its oldest crowd reading of the last 24 hours, so its pages (24 hours, 30 days)
/// keep their size while their contents change: a page grown by every change would measure a
/// bigger page, not churn.
fn collectors_writing(
    pool: &sqlx::PgPool,
    listing: &[(String, i32)],
) -> impl FnMut(u64) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Send + 'static {
    let (pool, mut listing) = (pool.clone(), listing.to_vec());
    move |n| {
        let (symbol, minutes) = &mut listing[0];
        assert_eq!(symbol, "S0000USDT");
        *minutes = if *minutes == 480 { 240 } else { 480 };
        let (pool, listing) = (pool.clone(), listing.clone());
        Box::pin(async move {
            let now = chrono::Utc::now();
            intervals::record_listing(&pool, "binance", &listing, now).await.unwrap();
            let long_ppm = 300_000 + (n % 400_000) as i32;
            let reading = Reading { long_ppm, short_ppm: 1_000_000 - long_ppm, open_interest_cents: Some(1_000_000), observed_at: now };
            crowd::record(&pool, "binance", "S0000USDT", reading, now).await.unwrap();
            sqlx::query(
                "WITH changes AS (
                     DELETE FROM interval_changes WHERE exchange = 'binance' AND symbol = 'S0000USDT'
                       AND changed_at < (SELECT changed_at FROM interval_changes WHERE exchange = 'binance' AND symbol = 'S0000USDT'
                                         ORDER BY changed_at DESC OFFSET 4 LIMIT 1))
                 DELETE FROM crowd_history WHERE exchange = 'binance' AND symbol = 'S0000USDT'
                   AND ts = (SELECT min(ts) FROM crowd_history WHERE exchange = 'binance' AND symbol = 'S0000USDT'
                               AND ts >= now() - interval '24 hours')",
            )
            .execute(&pool)
            .await
            .unwrap();
        })
    }
}
