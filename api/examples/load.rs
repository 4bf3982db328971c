//! The read-path benchmark: seeds 4,000 series (each with an open round and 25 settled ones:
//! 100,000 settled markets) and 100,000 traders with a day of statistics each into a fresh
//! database, serves the real application and a bare axum handler, and drives each with the
//! same load generator in the same run: requests/s and latency percentiles. Before that, the
//! server's own time a request: the same routers called in this process, one request at a time,
//! with no sockets and no load generator, beside the bare handler called the same way (where a
//! row's time goes on the server).
//!
//! `bash scripts/bench-api.sh` (release build; needs Postgres and Redis: scripts/setup.sh).
//! `LOAD_SCALE=10` multiplies the settled history and the traders by 10 (1,000,000 each), to
//! see whether a request's cost stays flat as they grow. `LOAD_ROWS=quote,prices` drives only
//! the rows whose label holds one of those words (after the bare handler's own row), to profile
//! or compare a few rows without the whole table. Requests ask for gzip (`Accept-Encoding:
//! gzip`, as browsers do; kept pages are answered compressed); `LOAD_ENCODING=identity` asks for
//! none.
//! Rate limits are raised out of the way but still counted (in process, reconciled with Redis).

use std::time::{Duration, Instant};

use api::domain::series::SeriesSpec;
use api::store::series;
use api::store::{self as db, cache::Redis};
use api::{AppState, Config, exchanges::Exchange};
use axum::Router;
use sqlx::postgres::PgPoolOptions;

mod support;

use support::{CONNECTIONS, SECONDS, Table, bare_handler, resident_mb, serve, wanted};

const SERIES: usize = 4_000;

/// The label column's width.
const W: usize = 58;

#[tokio::main]
async fn main() {
    let admin = std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres:postgres@127.0.0.1:5432/postgres".into());
    let url = format!("{}/fm_bench", admin.rsplit_once('/').unwrap().0);
    let scale: i32 = std::env::var("LOAD_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    // Settled rounds per series, and traders.
    let (rounds, traders) = (25 * scale, 100_000 * scale);
    let mut conn = PgPoolOptions::new().max_connections(1).connect(&admin).await.unwrap();
    sqlx::query("DROP DATABASE IF EXISTS fm_bench").execute(&conn).await.unwrap();
    conn.close().await;
    conn = db::pool(&url, 32, Duration::from_secs(5)).unwrap();
    db::prepare(&url, &conn).await.unwrap();

    // 4,000 series across the venues, each with an open round settling in an hour.
    let specs: Vec<SeriesSpec> =
        (0..SERIES).map(|i| SeriesSpec { exchange: Exchange::ALL[i % 4], symbol: format!("S{i:04}USDT"), interval_minutes: 480 }).collect();
    let seeding = Instant::now();
    series::ensure(&conn, &specs).await.unwrap();
    let seeded_in = seeding.elapsed();
    let again = Instant::now();
    series::ensure(&conn, &specs).await.unwrap();
    println!(
        "seeding {SERIES} series: {:.0} ms new, {:.0} ms when they all exist (every start-up)",
        seeded_in.as_secs_f64() * 1e3,
        again.elapsed().as_secs_f64() * 1e3
    );
    sqlx::query(
        "INSERT INTO markets (id, series_id, round_number, open_ts, close_ts, settlement_ts, status, liquidity_b, q_yes, q_no,
                              yes_price_ppm, ou_prior_ppm, ou_confidence_ppm)
         SELECT gen_random_uuid(), id, 1, now() - interval '1 hour', now() + interval '55 minutes', now() + interval '1 hour',
                'open', liquidity_b, 0, 0, 500000, 500000, 0 FROM series",
    )
    .execute(&conn)
    .await
    .unwrap();
    let market: uuid::Uuid = sqlx::query_scalar("SELECT id FROM markets LIMIT 1").fetch_one(&conn).await.unwrap();
    // The quoted market's history: 100 trades and their price points (a full page of each).
    sqlx::query(
        "WITH trade AS (
             INSERT INTO trades (id, market_id, wallet, side, is_buy, shares, amount, fee, yes_price_ppm, created_at)
             SELECT gen_random_uuid(), $1, 'trader' || n, CASE WHEN n % 2 = 0 THEN 'yes' ELSE 'no' END, true, 2000000 + n, 1000000, 10000,
                    500000 + n, now() - make_interval(secs => 100 - n)
             FROM generate_series(1, 100) n)
         INSERT INTO market_prices (market_id, at, yes_price_ppm) SELECT $1, now() - make_interval(secs => 100 - n), 500000 + n FROM generate_series(1, 100) n",
    )
    .bind(market)
    .execute(&conn)
    .await
    .unwrap();
    let slug: String = sqlx::query_scalar("SELECT slug FROM series ORDER BY slug OFFSET 1234 LIMIT 1").fetch_one(&conn).await.unwrap();
    let traded_slug: String =
        sqlx::query_scalar("SELECT s.slug FROM series s JOIN markets m ON m.series_id = s.id WHERE m.id = $1").bind(market).fetch_one(&conn).await.unwrap();
    // Four rounds ahead of each open one: 20,000 unfinished markets in all.
    sqlx::query(
        "INSERT INTO markets (id, series_id, round_number, open_ts, close_ts, settlement_ts, status, liquidity_b, q_yes, q_no,
                              yes_price_ppm, ou_prior_ppm, ou_confidence_ppm)
         SELECT gen_random_uuid(), id, $1 + 1 + k, now() + make_interval(hours => 8 * k - 7), now() + make_interval(hours => 8 * k + 1, mins => -5),
                now() + make_interval(hours => 8 * k + 1), 'pending', liquidity_b, 0, 0, 500000, 500000, 0
         FROM series CROSS JOIN generate_series(1, 4) k",
    )
    .bind(rounds)
    .execute(&conn)
    .await
    .unwrap();
    // The settled history and the traders the listing and the leaderboard must stay fast over.
    let seeding = Instant::now();
    sqlx::query(
        "INSERT INTO markets (id, series_id, round_number, open_ts, close_ts, settlement_ts, status, liquidity_b, q_yes, q_no,
                              yes_price_ppm, ou_prior_ppm, ou_confidence_ppm, outcome, actual_rate, settled_at)
         SELECT gen_random_uuid(), s.id, 1 + k, now() - make_interval(hours => 8 * k + 8), now() - make_interval(hours => 8 * k, mins => 5),
                now() - make_interval(hours => 8 * k), 'settled', s.liquidity_b, 0, 0, 500000, 500000, 0,
                CASE WHEN k % 2 = 0 THEN 'yes' ELSE 'no' END, CASE WHEN k % 2 = 0 THEN 100 ELSE -100 END, now() - make_interval(hours => 8 * k)
         FROM series s CROSS JOIN generate_series(1, $1) k",
    )
    .bind(rounds)
    .execute(&conn)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO trader_stats (wallet, day, volume, trades, realized_pnl, settled, wins)
         SELECT 'trader' || i, current_date - (i % 30), 1000000 * (1 + i % 997), 1 + i % 13, (i::BIGINT * 7919) % 20000000 - 10000000, i % 11, (i % 11) / 2
         FROM generate_series(1, $1) i",
    )
    .bind(traders)
    .execute(&conn)
    .await
    .unwrap();
    sqlx::query("VACUUM ANALYZE").execute(&conn).await.unwrap();
    println!("seeding {} settled markets and {traders} traders: {:.1} s", rounds as usize * SERIES, seeding.elapsed().as_secs_f64());

    let mut config = Config::from_env().unwrap();
    config.http.rate_public_per_min = u32::MAX;
    // Counts of their own: the millions of requests from 127.0.0.1 must not use up a local
    // service's limit for that address in the same Redis (it answered 429 for the rest of the
    // minute after a run).
    config.redis.namespace = format!("fmbench-{}", uuid::Uuid::new_v4().simple());
    let redis = Redis::new(&config.redis.url, config.http.health_timeout, &config.redis.namespace).unwrap();
    // The service records its metrics by default (`FM_METRICS_ADDR`): so does the harness, or
    // every request's counting and timing would go to a recorder that keeps nothing.
    api::app::metrics::recorder();
    let state = AppState::new(&config, conn.clone(), redis);
    let state_for_limits = state.clone();
    let services = state.services.clone();
    let app_router = api::http::app(state);
    let app = serve(app_router.clone()).await;
    // Every unfinished market's row in the market cache (once its listener is up), as a service
    // quoting all of them holds it.
    let unfinished: Vec<uuid::Uuid> = sqlx::query_scalar("SELECT id FROM markets WHERE status IN ('pending', 'open')").fetch_all(&conn).await.unwrap();
    while services.market_cache.len() < unfinished.len() {
        for id in &unfinished {
            services.market_cache.market(&conn, *id).await.unwrap();
        }
    }
    println!("{} unfinished markets held by the market cache; resident memory {} MB", services.market_cache.len(), resident_mb());
    let bare_router = bare_handler();
    let bare = serve(bare_router.clone()).await;

    // The quiet rows, each with its router, where it is served and its path: the bare handler
    // behind the service's middleware, its rate limiter, and both (what a request costs before
    // its own route's work), then each read with nothing changing.
    let limit = api::http::ratelimit::LimitLayer(state_for_limits.clone());
    let mut rows: Vec<(&str, Router, String, String)> = Vec::new();
    for (label, router) in [
        ("  ...behind the middleware", api::http::middleware::apply(bare_handler(), config.http.request_timeout, None)),
        ("  ...behind the rate limiter", bare_handler().layer(limit.clone())),
        ("  ...behind both", api::http::middleware::apply(bare_handler().layer(limit), config.http.request_timeout, None)),
    ] {
        rows.push((label, router.clone(), serve(router).await, "/".into()));
    }
    let offset_half = rounds as usize * SERIES / 2;
    let quiet: Vec<(&str, String)> = vec![
        ("GET /v1/series?limit=50", "/v1/series?limit=50".into()),
        ("GET /v1/series?limit=50&page=60", "/v1/series?limit=50&page=60".into()),
        ("GET /v1/markets/{id}/quote", format!("/v1/markets/{market}/quote?side=yes&amount=25")),
        ("GET /v1/markets/{id}", format!("/v1/markets/{market}")),
        ("GET /v1/series/{slug}", format!("/v1/series/{slug}")),
        ("GET /v1/markets?limit=100", "/v1/markets?limit=100".into()),
        ("GET /v1/markets?status=settled&limit=100", "/v1/markets?status=settled&limit=100".into()),
        ("  ...&offset=(half of them)", format!("/v1/markets?status=settled&limit=100&offset={offset_half}")),
        ("  ...&offset=99999999", "/v1/markets?status=settled&limit=100&offset=99999999".into()),
        ("GET /v1/leaderboard?period=all&limit=100", "/v1/leaderboard?period=all&limit=100".into()),
        ("  ...&sort_by=win_rate", "/v1/leaderboard?period=all&limit=100&sort_by=win_rate".into()),
        ("GET /v1/leaderboard?period=7d&limit=100", "/v1/leaderboard?period=7d&limit=100".into()),
        ("  ...period=30d", "/v1/leaderboard?period=30d&limit=100".into()),
        ("  ...period=24h", "/v1/leaderboard?period=24h&limit=100".into()),
        ("GET /v1/series/{slug}/rounds", format!("/v1/series/{slug}/rounds")),
        ("GET /v1/markets/{id}/trades?limit=100", format!("/v1/markets/{market}/trades?limit=100")),
        ("GET /v1/markets/{id}/prices", format!("/v1/markets/{market}/prices")),
    ];
    rows.extend(quiet.into_iter().map(|(label, path)| (label, app_router.clone(), app.clone(), path)));

    // The server's own cost of a request: the routers called in this process, one request at a
    // time, with no sockets, no HTTP parsing and no load generator sharing the cores.
    println!(
        "server time a request, in process (one request at a time, no sockets; the median of {IN_PROCESS_SLICES} slices of {} ms, alternating with the bare handler's):",
        IN_PROCESS_SLICE.as_millis()
    );
    println!("  {:<W$} {:>9} {:>7} {:>9}", "", "µs", "x bare", "bare µs");
    let mut bare_in_process = InProcess::new(bare_router.clone(), "/");
    for (label, router, _, path) in &rows {
        if wanted(label) {
            let (row, bare) = in_process(&mut bare_in_process, &mut InProcess::new(router.clone(), path)).await;
            println!("  {:<W$} {row:>9.2} {:>6.2}x {bare:>9.2}", label.trim_start(), row / bare);
        }
    }

    println!("{SERIES} series, {CONNECTIONS} connections, {SECONDS} s each, load generator in the same process");
    let table = Table::start(format!("{bare}/"), W).await;
    for (label, _, base, path) in &rows {
        table.row(label, &format!("{base}{path}")).await;
    }
    // The leaderboard while traders trade: a trader's day changes every 100 ms (each change
    // notified), so rankings are read again after each.
    let day_changes = "UPDATE trader_stats SET volume = volume + 1, trades = trades + 1 WHERE wallet = 'trader30' AND day = current_date";
    for (label, period) in
        [("  ...7d, a day changing every 100 ms", "7d"), ("  ...30d, a day changing every 100 ms", "30d"), ("  ...all, a day changing every 100 ms", "all")]
    {
        table.row_while_changing(label, &format!("{app}/v1/leaderboard?period={period}&limit=100"), statement(&conn, day_changes)).await;
    }
    // The market's reads while it is traded every 100 ms (each change notified), so kept rows
    // and pages are read again after each. Each change also drops the market's oldest price
    // point, so its price history stays the 100 points of the quiet row: the prices page lists
    // every point, and a history grown by every change would measure a bigger page, not churn.
    let trades = format!(
        "WITH trade AS (INSERT INTO trades (id, market_id, wallet, side, is_buy, shares, amount, fee, yes_price_ppm, created_at)
                        VALUES (gen_random_uuid(), '{market}', 'trader1', 'yes', true, 2000000, 1000000, 10000, 500100, now())),
              price AS (INSERT INTO market_prices (market_id, at, yes_price_ppm) VALUES ('{market}', now(), 500100) ON CONFLICT DO NOTHING),
              oldest AS (DELETE FROM market_prices WHERE market_id = '{market}'
                           AND at = (SELECT min(at) FROM market_prices WHERE market_id = '{market}'))
         UPDATE markets SET total_volume = total_volume + 1000000, trade_count = trade_count + 1 WHERE id = '{market}'"
    );
    for (label, url) in [
        ("GET /v1/markets?limit=100, traded every 100 ms", format!("{app}/v1/markets?limit=100")),
        ("  .../{id}, traded every 100 ms", format!("{app}/v1/markets/{market}")),
        ("  .../{id}/quote, traded every 100 ms", format!("{app}/v1/markets/{market}/quote?side=yes&amount=25")),
        ("  .../{id}/trades, traded every 100 ms", format!("{app}/v1/markets/{market}/trades?limit=100")),
        ("  .../{id}/prices, traded every 100 ms", format!("{app}/v1/markets/{market}/prices")),
        ("GET /v1/series?limit=50, traded every 100 ms", format!("{app}/v1/series?limit=50")),
        ("GET /v1/series/{slug} (its series), traded every 100 ms", format!("{app}/v1/series/{traded_slug}")),
        ("  .../rounds, traded every 100 ms", format!("{app}/v1/series/{traded_slug}/rounds")),
        ("GET /v1/markets?status=open&limit=100, traded every 100 ms", format!("{app}/v1/markets?status=open&limit=100")),
        ("  ...status=settled&offset=(half), traded every 100 ms", format!("{app}/v1/markets?status=settled&limit=100&offset={offset_half}")),
    ] {
        table.row_while_changing(label, &url, statement(&conn, &trades)).await;
    }
    // One market's reads while a hundred other open markets each take a trade every 100 ms:
    // nothing a market's pages or its series' settled rounds show changes, so they should cost
    // what the quiet rows do.
    let others_trade = format!(
        "WITH others AS (SELECT id FROM markets WHERE status = 'open' AND id <> '{market}' ORDER BY id LIMIT 100),
              trade AS (INSERT INTO trades (id, market_id, wallet, side, is_buy, shares, amount, fee, yes_price_ppm, created_at)
                        SELECT gen_random_uuid(), id, 'trader2', 'yes', true, 2000000, 1000000, 10000, 500100, now() FROM others)
         UPDATE markets SET total_volume = total_volume + 1000000, trade_count = trade_count + 1 WHERE id IN (SELECT id FROM others)"
    );
    for (label, url) in [
        ("  .../{id}, 100 others traded every 100 ms", format!("{app}/v1/markets/{market}")),
        ("  .../{id}/quote, 100 others traded every 100 ms", format!("{app}/v1/markets/{market}/quote?side=yes&amount=25")),
        ("  .../{id}/trades, 100 others traded every 100 ms", format!("{app}/v1/markets/{market}/trades?limit=100")),
        ("  .../{id}/prices, 100 others traded every 100 ms", format!("{app}/v1/markets/{market}/prices")),
        ("  its series' rounds, 100 others traded every 100 ms", format!("{app}/v1/series/{traded_slug}/rounds")),
    ] {
        table.row_while_changing(label, &url, statement(&conn, &others_trade)).await;
    }
    conn.close().await;
}

/// Slices `in_process` alternates between a router and the bare handler, and how long each lasts.
const IN_PROCESS_SLICES: u32 = 9;
const IN_PROCESS_SLICE: Duration = Duration::from_millis(150);

/// A router called in this process with one request built as the load generator sends it (from
/// 127.0.0.1, asking for gzip unless `LOAD_ENCODING=identity`).
struct InProcess {
    service: axum::routing::RouterIntoService<axum::body::Body>,
    path: String,
    gzip: bool,
}

impl InProcess {
    fn new(router: Router, path: &str) -> InProcess {
        let gzip = std::env::var("LOAD_ENCODING").as_deref() != Ok("identity");
        // `with_state` turns every handler into its route, layers applied, once, as serving
        // does (`into_make_service…`); without it the router would do that per request.
        InProcess { service: router.with_state(()).into_service(), path: path.to_owned(), gzip }
    }

    /// Requests one after another for `period`, each called and its body read to the end: the
    /// mean microseconds a request.
    async fn per_request(&mut self, period: Duration) -> f64 {
        use tower::{Service, ServiceExt};
        let peer = axum::extract::ConnectInfo(std::net::SocketAddr::from(([127, 0, 0, 1], 40_000)));
        let (started, mut requests) = (Instant::now(), 0u64);
        while started.elapsed() < period {
            for _ in 0..32 {
                let mut request = axum::http::Request::get(&self.path);
                if self.gzip {
                    request = request.header(axum::http::header::ACCEPT_ENCODING, "gzip");
                }
                let request = request.extension(peer).body(axum::body::Body::empty()).unwrap();
                let response = self.service.ready().await.unwrap().call(request).await.unwrap();
                assert!(response.status().is_success(), "{}: {}", self.path, response.status());
                axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
            }
            requests += 32;
        }
        started.elapsed().as_secs_f64() * 1e6 / requests as f64
    }
}

/// The median microseconds a request of `row` and of `bare` (the bare handler), over
/// `IN_PROCESS_SLICES` slices of each, alternating, after a slice of each to warm them: a host
/// whose speed drifts moves both alike.
async fn in_process(bare: &mut InProcess, row: &mut InProcess) -> (f64, f64) {
    bare.per_request(IN_PROCESS_SLICE).await;
    row.per_request(IN_PROCESS_SLICE).await;
    let (mut bares, mut rows) = (Vec::new(), Vec::new());
    for _ in 0..IN_PROCESS_SLICES {
        bares.push(bare.per_request(IN_PROCESS_SLICE).await);
        rows.push(row.per_request(IN_PROCESS_SLICE).await);
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (median(rows), median(bares))
}

/// A change that runs `sql` on `conn` (for `Table::row_while_changing`).
fn statement(conn: &sqlx::PgPool, sql: &str) -> impl FnMut(u64) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Send + 'static {
    let (conn, sql) = (conn.clone(), sql.to_owned());
    move |_| {
        let (conn, sql) = (conn.clone(), sql.clone());
        Box::pin(async move {
            sqlx::query(&sql).execute(&conn).await.unwrap();
        })
    }
}
