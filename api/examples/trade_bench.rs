//! Custodial trading throughput: `POST /v1/markets/{id}/trade` through the real service on the
//! embedded chain (each trade is a program transaction: preflight, execution, durable ledger
//! and accounts, projection), by 16 signed-in traders for 10 s on one market and then across
//! ten markets; beside `pgbench` (TPC-B-like, same Postgres, same client count) in the same run.
//!
//! `TRADE_BENCH_GROWTH=10`: then trades on, unmeasured, until the service holds ten times the
//! trades the two phases made (its ledger, trades, price points and positions grown with them),
//! and measures both phases again: a trade's cost as the history grows, at 1× and 10×.
//!
//! `bash scripts/bench-trading.sh` (release build; needs Postgres, Redis and pgbench).

use std::time::{Duration, Instant};

mod support;

use api::domain::money::micros;
use api::services::trading::FAUCET_DAILY_CAP;
use chrono::Utc;
use serde_json::json;
use sqlx::postgres::PgPoolOptions;
use uuid::Uuid;

use support::{HostCpu, Turns};

const TRADERS: usize = 16;
const SECONDS: u64 = 10;
/// What every trade spends (micro-USDC), the protocol's fee on top.
const TRADE_USDC: u64 = 1_000_000;

/// Trades a trader of the growth phases makes before its set is replaced: four fifths of what
/// the faucet's day affords at `TRADE_USDC` and its fee, the rest a margin for the phase in flight.
fn trades_a_set() -> usize {
    let cost = TRADE_USDC + lmsr::fee(TRADE_USDC, lmsr::FEE_BPS).expect("the protocol's fee is in range");
    (FAUCET_DAILY_CAP / cost * 4 / 5) as usize
}

/// What one phase measured: each trade's start (ms into the phase) and latency (ms), and the
/// turns and the host as they were when it began and ended.
struct Phase {
    trades: Vec<(f64, f64)>,
    began: Moment,
    ended: Moment,
}

/// The turns' counts and the host's CPU time at one moment.
struct Moment {
    at: Instant,
    turns: Turns,
    host: Option<HostCpu>,
}

impl Moment {
    fn now() -> Moment {
        Moment { at: Instant::now(), turns: Turns::now(), host: HostCpu::now() }
    }
}

impl Phase {
    /// The p50 and p99 latencies (ms) of the trades that started at or after `from_ms`.
    fn p50_p99(&self, from_ms: f64) -> (f64, f64) {
        let mut latencies: Vec<f64> = self.trades.iter().filter(|(start, _)| *start >= from_ms).map(|(_, ms)| *ms).collect();
        latencies.sort_by(f64::total_cmp);
        (support::quantile(&latencies, 0.5), support::quantile(&latencies, 0.99))
    }

    fn trades_per_second(&self) -> f64 {
        self.trades.len() as f64 / SECONDS as f64
    }

    /// The phase's line, and a second one for the trades after its first second: the first
    /// trades of 16 traders at once wait for the pool's new connections and their first
    /// statements, which a running service has behind it.
    fn print(&self, label: &str) {
        let tps = self.trades_per_second();
        let (p50, p99) = self.p50_p99(0.0);
        println!("  {label:<13} {tps:>7.0} trades/s   p50 {p50:.1} ms   p99 {p99:.1} ms");
        let (p50, p99) = self.p50_p99(1_000.0);
        println!("    after its first second:      p50 {p50:.1} ms   p99 {p99:.1} ms");
        self.ended.turns.print(&self.began.turns, self.ended.at - self.began.at);
        if let Some(shares) = HostCpu::shares(self.began.host, self.ended.host) {
            println!("    host CPU: {shares}");
        }
    }

    /// Appends the trades to `TRADE_BENCH_LATENCIES` (if set) as `phase,start_ms,latency_ms`
    /// lines: where the slow trades fall in time tells a stall from a queue.
    fn save(&self, phase: &str) {
        let Ok(path) = std::env::var("TRADE_BENCH_LATENCIES") else { return };
        use std::io::Write;
        let mut out = std::io::BufWriter::new(std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap());
        for (start, ms) in &self.trades {
            writeln!(out, "{phase},{start:.3},{ms:.3}").unwrap();
        }
    }
}

/// `TRADERS` traders signed in, each given the faucet's day of test USDC.
async fn traders(http: &reqwest::Client, base: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    for _ in 0..TRADERS {
        let (wallet, token) = support::sign_in(http, base, &ed25519_dalek::SigningKey::from_bytes(&rand::random())).await;
        let r = http
            .post(format!("{base}/v1/dev/faucet"))
            .json(&json!({"wallet_address": wallet, "amount": micros(FAUCET_DAILY_CAP as i64)}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        tokens.push(token);
    }
    tokens
}

/// Trades on `markets` (unmeasured phases) until the service holds `growth` times the trades it
/// held, with traders of their own, a new set every `trades_a_set()` trades a trader.
async fn grow(http: &reqwest::Client, base: &str, db: &sqlx::PgPool, markets: &[Uuid], growth: i64) {
    let count = || async { sqlx::query_scalar::<_, i64>("SELECT count(*) FROM trades").fetch_one(db).await.unwrap() };
    let aim = count().await * growth;
    let (started, per_set, mut spent, mut tokens) = (Instant::now(), trades_a_set(), 0, Vec::new());
    loop {
        let held = count().await;
        println!("  growing: {held} of {aim} trades ({:.0} s)", started.elapsed().as_secs_f64());
        if held >= aim {
            break;
        }
        if tokens.is_empty() || spent > per_set {
            (tokens, spent) = (traders(http, base).await, 0);
        }
        spent += drive(http, base, &tokens, markets).await.trades.len() / TRADERS;
    }
}

/// The one-market and ten-market phases' throughput against `references` (trades a second).
fn print_ratios(label: &str, one: &Phase, ten: &Phase, references: (f64, f64)) {
    println!("  {label}: one market {:.2}x, ten markets {:.2}x", one.trades_per_second() / references.0, ten.trades_per_second() / references.1);
}

/// `TRADERS` clients buying `TRADE_USDC` at a time for `SECONDS`, trader i on `markets[i % n]`.
async fn drive(http: &reqwest::Client, base: &str, tokens: &[String], markets: &[Uuid]) -> Phase {
    let began = Moment::now();
    let (start, deadline) = (began.at, began.at + Duration::from_secs(SECONDS));
    let tasks: Vec<_> = tokens
        .iter()
        .enumerate()
        .map(|(i, token)| {
            let (http, url, token) = (http.clone(), format!("{base}/v1/markets/{}/trade", markets[i % markets.len()]), token.clone());
            tokio::spawn(async move {
                let mut trades = Vec::new();
                while Instant::now() < deadline {
                    let started = Instant::now();
                    let r = http
                        .post(&url)
                        .bearer_auth(&token)
                        .json(&json!({"side": if i % 2 == 0 { "yes" } else { "no" }, "usdc_amount": micros(TRADE_USDC as i64)}))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status().as_u16(), 200, "{}", r.text().await.unwrap());
                    trades.push(((started - start).as_secs_f64() * 1e3, started.elapsed().as_secs_f64() * 1e3));
                }
                trades
            })
        })
        .collect();
    let mut trades = Vec::new();
    for t in tasks {
        trades.extend(t.await.unwrap());
    }
    Phase { trades, began, ended: Moment::now() }
}

#[tokio::main]
async fn main() {
    // Metrics recorded as a deployed service records them (it serves them by default), and read
    // here for the turns.
    api::app::metrics::recorder();
    let support::Service { base, db, .. } = support::serve_fresh("fm_bench_trade", |config| {
        config.http.rate_auth_per_min = u32::MAX;
        config.http.rate_trade_per_sec = u32::MAX;
        config.http.request_timeout = Duration::from_secs(60);
    })
    .await;
    let http = reqwest::Client::builder().pool_max_idle_per_host(TRADERS).build().unwrap();

    // Ten open markets (rows as the scheduler makes them), each created on chain by a first trade.
    let series = support::series(&db, 1_000_000_000).await;
    let now = Utc::now();
    let mut markets = Vec::new();
    for round in 0..10 {
        let minutes = chrono::Duration::minutes;
        markets.push(
            support::open_market(&db, series, round + 1, now - minutes(1), now + minutes(55 + round as i64), now + minutes(60 + round as i64), 1_000_000_000)
                .await,
        );
    }
    let tokens = traders(&http, &base).await;
    for market in &markets {
        let r = http
            .post(format!("{base}/v1/markets/{market}/trade"))
            .bearer_auth(&tokens[0])
            .json(&json!({"side": "yes", "usdc_amount": micros(TRADE_USDC as i64)}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
    }

    println!("custodial trades, {TRADERS} traders, {SECONDS} s each, {} USDC buys, release build, embedded chain", micros(TRADE_USDC as i64));
    let one = drive(&http, &base, &tokens, &markets[..1]).await;
    one.print("one market:");
    one.save("one");
    let ten = drive(&http, &base, &tokens, &markets).await;
    ten.print("ten markets:");
    ten.save("ten");
    let growth: i64 = std::env::var("TRADE_BENCH_GROWTH").ok().and_then(|n| n.parse().ok()).unwrap_or(1);
    let grown = match growth {
        2.. => {
            println!("growing the history {growth}x (TRADE_BENCH_GROWTH)");
            grow(&http, &base, &db, &markets, growth).await;
            let one_grown = drive(&http, &base, &tokens, &markets[..1]).await;
            one_grown.print(&format!("one, {growth}x:"));
            let ten_grown = drive(&http, &base, &tokens, &markets).await;
            ten_grown.print(&format!("ten, {growth}x:"));
            print_ratios(&format!("at {growth}x against 1x"), &one_grown, &ten_grown, (one.trades_per_second(), ten.trades_per_second()));
            Some((one_grown, ten_grown))
        }
        _ => None,
    };

    // pgbench on the same Postgres, same number of clients.
    let admin = std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres:postgres@127.0.0.1:5432/postgres".into());
    let pg = format!("{}/fm_bench_pgbench", admin.rsplit_once('/').unwrap().0);
    let admin_conn = PgPoolOptions::new().max_connections(1).connect(&admin).await.unwrap();
    sqlx::query("DROP DATABASE IF EXISTS fm_bench_pgbench").execute(&admin_conn).await.unwrap();
    sqlx::query("CREATE DATABASE fm_bench_pgbench").execute(&admin_conn).await.unwrap();
    let run = |args: &[&str]| std::process::Command::new("pgbench").args(args).arg(&pg).output();
    match run(&["-i", "-q", "-s", "10"]) {
        Ok(init) if init.status.success() => {
            let host = HostCpu::now();
            let out = run(&["-c", &TRADERS.to_string(), "-j", "2", "-T", &SECONDS.to_string()]).expect("pgbench runs");
            let text = String::from_utf8_lossy(&out.stdout);
            for line in text.lines().filter(|l| l.starts_with("tps") || l.contains("latency average")) {
                println!("  pgbench (TPC-B-like, scale 10, {TRADERS} clients): {line}");
            }
            if let Some(shares) = HostCpu::shares(host, HostCpu::now()) {
                println!("  pgbench's host CPU: {shares}");
            }
            // pgbench's line: `tps = <transactions a second> (without initial connection time)`.
            let pgbench_tps = text.lines().find_map(|l| l.strip_prefix("tps = ")?.split_whitespace().next()?.parse::<f64>().ok());
            match pgbench_tps {
                Some(reference) => {
                    print_ratios("ratio to pgbench", &one, &ten, (reference, reference));
                    if let Some((one_grown, ten_grown)) = &grown {
                        print_ratios(&format!("at {growth}x, to pgbench"), one_grown, ten_grown, (reference, reference));
                    }
                }
                None => println!("  pgbench printed no tps: no ratio"),
            }
        }
        _ => println!("  pgbench not available: skipped"),
    }
}
