//! What the service benchmarks share: a fresh database with the service running on it (embedded
//! chain, no scheduler), and markets inserted as the scheduler makes them.
#![allow(dead_code)]

use api::Config;
use api::app::startup::Application;
use api::chain::AnyChain;
use chrono::{DateTime, Utc};
use ed25519_dalek::Signer;
use localnet::EmbeddedChain;
use serde_json::{Value, json};
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;
use std::time::Duration;
use uuid::Uuid;

/// The running service: its base URL, its chain, and a pool on its database.
pub struct Service {
    pub base: String,
    pub chain: EmbeddedChain,
    pub db: PgPool,
}

/// Drops and recreates database `name` next to `DATABASE_URL`'s, and serves the application on
/// it at a free port with public rate limits out of the way; `tune` adjusts the configuration.
pub async fn serve_fresh(name: &str, tune: impl FnOnce(&mut Config)) -> Service {
    let admin = std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres:postgres@127.0.0.1:5432/postgres".into());
    let url = format!("{}/{name}", admin.rsplit_once('/').unwrap().0);
    let conn = PgPoolOptions::new().max_connections(1).connect(&admin).await.unwrap();
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name}")).execute(&conn).await.unwrap();
    conn.close().await;

    let mut config = Config::from_env().unwrap();
    config.database.url = url.clone();
    config.server.bind_addr = "127.0.0.1:0".parse().unwrap();
    config.workers.scheduler = false;
    config.http.rate_public_per_min = u32::MAX;
    config.server.metrics_addr = None;
    config.server.pubsub_addr = None;
    tune(&mut config);
    let app = Application::build(config).await.unwrap();
    let base = format!("http://{}", app.local_addr().expect("the serve role listens"));
    let Some(AnyChain::Embedded(chain)) = app.chain().cloned() else { unreachable!("the default chain is embedded") };
    tokio::spawn(app.run_until(std::future::pending()));
    let db = PgPoolOptions::new().max_connections(2).connect(&url).await.unwrap();
    Service { base, chain, db }
}

/// A series for the benchmark's markets (b = `liquidity_b` micro-USDC).
pub async fn series(db: &PgPool, liquidity_b: i64) -> Uuid {
    let id = Uuid::new_v4();
    sqlx::query("INSERT INTO series (id, exchange, symbol, slug, display_name, tier, liquidity_b, interval_hours) VALUES ($1, 'binance', 'BTCUSDT', 'binance-btcusdt', 'BTC/USDT', 1, $2, 1)")
        .bind(id)
        .bind(liquidity_b)
        .execute(db)
        .await
        .unwrap();
    id
}

/// An open market of `series` (prior 0.5) with its program address, as the scheduler makes it.
pub async fn open_market(
    db: &PgPool,
    series: Uuid,
    round: i32,
    open: DateTime<Utc>,
    close: DateTime<Utc>,
    settlement: DateTime<Utc>,
    liquidity_b: i64,
) -> Uuid {
    let id = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO markets (id, series_id, round_number, open_ts, close_ts, settlement_ts, status, liquidity_b, q_yes, q_no, yes_price_ppm, ou_prior_ppm, ou_confidence_ppm, onchain_address)
         VALUES ($1, $2, $3, $4, $5, $6, 'open', $7, 0, 0, 500000, 500000, 0, $8)",
    )
    .bind(id)
    .bind(series)
    .bind(round)
    .bind(open)
    .bind(close)
    .bind(settlement)
    .bind(liquidity_b)
    .bind(funding_market::client::market_pda(id.as_bytes()).to_string())
    .execute(db)
    .await
    .unwrap();
    id
}

/// Signs in as `key`'s wallet through the API (challenge, signature, verify): the wallet
/// address and its access token.
pub async fn sign_in(http: &reqwest::Client, base: &str, key: &ed25519_dalek::SigningKey) -> (String, String) {
    let wallet = bs58::encode(key.verifying_key().as_bytes()).into_string();
    let challenge: Value = http.post(format!("{base}/v1/auth/challenge")).json(&json!({"wallet_address": wallet})).send().await.unwrap().json().await.unwrap();
    let message = challenge["data"]["message"].as_str().unwrap();
    let signature = bs58::encode(key.sign(message.as_bytes()).to_bytes()).into_string();
    let body = json!({"wallet_address": wallet, "signature": signature, "nonce": challenge["data"]["nonce"]});
    let verified: Value = http.post(format!("{base}/v1/auth/verify")).json(&body).send().await.unwrap().json().await.unwrap();
    (wallet, verified["data"]["token"].as_str().unwrap().to_owned())
}

/// Concurrent clients of the HTTP load generator, and how long it drives each URL.
pub const CONNECTIONS: usize = 32;
pub const SECONDS: u64 = 10;

/// Serves `router` on a free local port; its base URL.
pub async fn serve(router: axum::Router) -> String {
    let listener = api::app::startup::listen(([127, 0, 0, 1], 0).into()).unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router.into_make_service_with_connect_info::<std::net::SocketAddr>()).await.unwrap();
    });
    format!("http://{addr}")
}

/// The `q` quantile (0 to 1) of samples sorted ascending, by rank (the sample at
/// `len * q`, the last for `q = 1`): what every benchmark here prints.
pub fn quantile<T: Copy>(sorted: &[T], q: f64) -> T {
    sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)]
}

/// A row's throughput as a multiple of the bare handler's, and its p99 as one of the bare
/// handler's p99 (`bare`: the bare handler's requests a second and p99), as two columns.
fn ratios(bare: (f64, f64), rps: f64, p99: f64) -> String {
    format!("{:>6.2}x {:>8.2}x", rps / bare.0, p99 / bare.1)
}

/// `CONNECTIONS` concurrent clients for `SECONDS`: (requests/s, p50, p99, p99.9) in ms.
async fn drive(url: String) -> (f64, f64, f64, f64) {
    let client = load_client();
    let mut latencies = latencies(&client, &url, std::time::Duration::from_secs(SECONDS)).await;
    statistics(&mut latencies, SECONDS as f64)
}

/// The load generator's client. It asks for gzip as browsers and HTTP libraries do, unless
/// `LOAD_ENCODING=identity`, and reads the bytes as they come, without inflating them, as load
/// generators do (wrk, ab): the inflating is the client's work, not the service's.
fn load_client() -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    if std::env::var("LOAD_ENCODING").as_deref() != Ok("identity") {
        headers.insert(reqwest::header::ACCEPT_ENCODING, reqwest::header::HeaderValue::from_static("gzip"));
    }
    reqwest::Client::builder().pool_max_idle_per_host(CONNECTIONS).no_gzip().no_brotli().no_deflate().default_headers(headers).build().unwrap()
}

/// Slices `drive_beside` alternates, and how long each slice of the row and of the reference
/// lasts: the row gets `SECONDS` in all, the reference half that.
pub const SLICES: u32 = 5;

/// Drives `url` and the `reference` URL (the bare handler) in alternating slices with the same
/// clients, so both see the machine alike even when its speed changes during a run (a shared
/// host's does; docs/performance.md): the row's statistics and the reference's, each as
/// `drive` gives them.
async fn drive_beside(reference: &str, url: &str) -> ((f64, f64, f64, f64), (f64, f64, f64, f64)) {
    use std::time::Duration;
    let client = load_client();
    let row_slice = Duration::from_secs(SECONDS) / SLICES;
    let reference_slice = row_slice / 2;
    let (mut row, mut bare) = (Vec::new(), Vec::new());
    for _ in 0..SLICES {
        bare.extend(latencies(&client, reference, reference_slice).await);
        row.extend(latencies(&client, url, row_slice).await);
    }
    let seconds = |slice: Duration| (slice * SLICES).as_secs_f64();
    (statistics(&mut row, seconds(row_slice)), statistics(&mut bare, seconds(reference_slice)))
}

/// The bare handler: the envelope's smallest answer, with no middleware (the reads' reference).
pub fn bare_handler() -> axum::Router {
    axum::Router::new().route("/", axum::routing::get(|| async { axum::Json(json!({"data": {"ok": true}, "meta": {}, "error": null})) }))
}

/// A bare handler answering what `url` answered the load generator once (a success): its
/// headers (but those hyper writes itself) and its body, gzip-compressed where the service
/// compressed it. Beside a large page it tells the cost of the page's bytes (writing them, the
/// load generator reading them) from the cost of the service's work. With the body's length.
pub async fn bare_handler_answering(url: &str) -> (axum::Router, usize) {
    let response = load_client().get(url).send().await.unwrap();
    assert!(response.status().is_success(), "{url}: {}", response.status());
    let mut headers = response.headers().clone();
    for written_by_hyper in [reqwest::header::DATE, reqwest::header::CONTENT_LENGTH, reqwest::header::TRANSFER_ENCODING, reqwest::header::CONNECTION] {
        headers.remove(written_by_hyper);
    }
    let body = response.bytes().await.unwrap();
    let length = body.len();
    let router = axum::Router::new().route("/", axum::routing::get(move || std::future::ready((headers.clone(), body.clone()))));
    (router, length)
}

/// The table the read harnesses print: each row driven beside the bare handler at `bare` (as
/// `drive_beside`), with its resident memory and ratios, the label column `width` wide.
pub struct Table {
    bare: String,
    width: usize,
}

impl Table {
    /// Drives the bare handler at `bare` alone, and prints the table's head and its row.
    pub async fn start(bare: String, width: usize) -> Table {
        println!("each row's ratios are to the bare handler driven in {SLICES} slices alternating with the row's (its req/s in the last column)");
        println!(
            "{:<width$} {:>10} {:>9} {:>9} {:>9} {:>8} {:>7} {:>9} {:>10}",
            "endpoint", "req/s", "p50 ms", "p99 ms", "p99.9 ms", "RSS MB", "x bare", "p99/bare", "bare req/s"
        );
        let (rps, p50, p99, p999) = drive(bare.clone()).await;
        println!("{:<width$} {rps:>10.0} {p50:>9.2} {p99:>9.2} {p999:>9.2} {:>8}", "bare axum handler", resident_mb());
        Table { bare, width }
    }

    /// The same table with its rows driven beside another reference at `bare` (printed by the
    /// caller as a row of its own), such as `bare_handler_answering`'s.
    pub fn against(&self, bare: String) -> Table {
        Table { bare, width: self.width }
    }

    /// Drives `url` and prints its row labelled `label`, if `LOAD_ROWS` wants it (`wanted`).
    pub async fn row(&self, label: &str, url: &str) {
        if !wanted(label) {
            return;
        }
        let ((rps, p50, p99, p999), reference) = drive_beside(&self.bare, url).await;
        let (bare, width) = (reference.0, self.width);
        println!("{label:<width$} {rps:>10.0} {p50:>9.2} {p99:>9.2} {p999:>9.2} {:>8} {} {bare:>10.0}", resident_mb(), ratios((bare, reference.2), rps, p99));
    }

    /// The same while `change` runs every 100 ms, each call given how many ran before it. Each
    /// change is awaited before the next 100 ms begins, as a writer that commits and then waits
    /// does.
    pub async fn row_while_changing<F, Fut>(&self, label: &str, url: &str, mut change: F)
    where
        F: FnMut(u64) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        if !wanted(label) {
            return;
        }
        let changing = tokio::spawn(async move {
            for n in 0.. {
                change(n).await;
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        });
        self.row(label, url).await;
        changing.abort();
    }
}

/// Whether the row `label` is driven: every row, or those `LOAD_ROWS` names (comma-separated
/// words, any of which the label holds).
pub fn wanted(label: &str) -> bool {
    std::env::var("LOAD_ROWS").map_or(true, |rows| rows.split(',').any(|word| !word.is_empty() && label.contains(word)))
}

/// This process's resident memory (service and load generator together) in MB, from /proc.
pub fn resident_mb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: u64 = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(0);
    kb / 1024
}

/// `CONNECTIONS` concurrent clients of `client` asking for `url` for `period`: each answer's
/// latency in microseconds.
async fn latencies(client: &reqwest::Client, url: &str, period: std::time::Duration) -> Vec<u64> {
    use std::time::Instant;
    let deadline = Instant::now() + period;
    let tasks: Vec<_> = (0..CONNECTIONS)
        .map(|_| {
            let (client, url) = (client.clone(), url.to_owned());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    let started = Instant::now();
                    let response = client.get(&url).send().await.unwrap();
                    assert!(response.status().is_success(), "{url}: {}", response.status());
                    response.bytes().await.unwrap();
                    latencies.push(started.elapsed().as_micros() as u64);
                }
                latencies
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all
}

/// Requests/s over `seconds`, and p50, p99 and p99.9 in ms, of `latencies` (in microseconds).
fn statistics(latencies: &mut [u64], seconds: f64) -> (f64, f64, f64, f64) {
    latencies.sort_unstable();
    let pct = |p: f64| quantile(latencies, p) as f64 / 1000.0;
    (latencies.len() as f64 / seconds, pct(0.50), pct(0.99), pct(0.999))
}

/// The one-at-a-time turns as the service's metrics count them at one moment: the `_sum` and
/// `_count` series of the group queues' sizes and work (`fm_group_size`, `fm_group_work_seconds`)
/// and of the bank's turn (`fm_chain_turn_seconds`), by their text.
pub struct Turns(std::collections::HashMap<String, f64>);

impl Turns {
    pub fn now() -> Turns {
        let shown = api::app::metrics::recorder().render();
        let series = shown
            .lines()
            .filter(|l| l.starts_with("fm_group_") || l.starts_with("fm_chain_turn_seconds"))
            .filter_map(|l| l.rsplit_once(' '))
            .filter(|(key, _)| key.contains("_sum{") || key.contains("_count{"))
            .filter_map(|(key, value)| Some((key.to_owned(), value.parse().ok()?)))
            .collect();
        Turns(series)
    }

    pub fn since(&self, before: &Turns, key: &str) -> f64 {
        self.0.get(key).copied().unwrap_or(0.0) - before.0.get(key).copied().unwrap_or(0.0)
    }

    /// How busy each turn was between `before` and now (`elapsed`), and a group queue's mean
    /// group: near 100 % a turn is what the trades wait for.
    pub fn print(&self, before: &Turns, elapsed: Duration) {
        let busy = |key: &str| 100.0 * self.since(before, key) / elapsed.as_secs_f64();
        let mut line = String::from("    turns busy:");
        for queue in ["trade_reads", "chain_ledger", "projection"] {
            let groups = self.since(before, &format!("fm_group_size_count{{queue=\"{queue}\"}}"));
            let items = self.since(before, &format!("fm_group_size_sum{{queue=\"{queue}\"}}"));
            let work = busy(&format!("fm_group_work_seconds_sum{{queue=\"{queue}\"}}"));
            line += &format!(" {queue} {work:.0} % ({:.1} a group),", items / groups.max(1.0));
        }
        let (transactions, slots) = (busy("fm_chain_turn_seconds_sum{held_for=\"transaction\"}"), busy("fm_chain_turn_seconds_sum{held_for=\"slot\"}"));
        println!("{line} bank {transactions:.0} % (+ slot clock {slots:.1} %)");
    }
}

/// The CPU time of the whole host, from `/proc/stat` (Linux; `None` elsewhere), in clock ticks.
/// On a virtual machine the hypervisor may give our cores' time to other guests ("steal"):
/// a phase then runs slower with nothing of ours changed, and pgbench, run after the trades,
/// may have had another share of the cores than they did. Seen here: 0-4 % stolen in the
/// phases of one day's runs, while `vmstat` showed 50-61 % during one pgbench run of that day.
#[derive(Clone, Copy)]
pub struct HostCpu {
    idle: u64,
    steal: u64,
    total: u64,
}

impl HostCpu {
    pub fn now() -> Option<HostCpu> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        // `cpu  user nice system idle iowait irq softirq steal ...` (guest time is within user).
        let ticks: Vec<u64> = stat.lines().next()?.split_whitespace().skip(1).take(8).map(|t| t.parse().ok()).collect::<Option<_>>()?;
        let [user, nice, system, idle, iowait, irq, softirq, steal] = ticks[..] else { return None };
        Some(HostCpu { idle: idle + iowait, steal, total: user + nice + system + idle + iowait + irq + softirq + steal })
    }

    /// The shares of the host's CPU time from `before` to `after` left idle and taken by the
    /// hypervisor (`None` where `/proc/stat` could not be read).
    pub fn shares(before: Option<HostCpu>, after: Option<HostCpu>) -> Option<String> {
        let (before, after) = (before?, after?);
        let total = after.total.saturating_sub(before.total).max(1) as f64;
        let share = |now: u64, then: u64| 100.0 * now.saturating_sub(then) as f64 / total;
        Some(format!("idle {:.0} %, stolen by the hypervisor {:.0} %", share(after.idle, before.idle), share(after.steal, before.steal)))
    }
}
