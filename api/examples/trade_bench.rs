//! Custodial trading throughput: `POST /v1/markets/{id}/trade` through the real service on the
//! embedded chain (each trade is a program transaction: preflight, execution, durable ledger
//! and accounts, projection), by 16 signed-in traders for 10 s on one market and then across
//! ten markets; beside `pgbench` (TPC-B-like, same Postgres, same client count) in the same run.
//!
//! `bash scripts/bench-trading.sh` (release build; needs Postgres, Redis and pgbench).

use std::time::{Duration, Instant};

mod support;

use chrono::Utc;
use serde_json::json;
use sqlx::postgres::PgPoolOptions;
use uuid::Uuid;

const TRADERS: usize = 16;
const SECONDS: u64 = 10;

/// `TRADERS` clients buying 1 USDC at a time for `SECONDS`, trader i on `markets[i % n]`:
/// (trades/s, p50 ms, p99 ms).
async fn drive(http: &reqwest::Client, base: &str, tokens: &[String], markets: &[Uuid]) -> (f64, f64, f64) {
    let deadline = Instant::now() + Duration::from_secs(SECONDS);
    let tasks: Vec<_> = tokens
        .iter()
        .enumerate()
        .map(|(i, token)| {
            let (http, url, token) = (http.clone(), format!("{base}/v1/markets/{}/trade", markets[i % markets.len()]), token.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    let started = Instant::now();
                    let r = http.post(&url).bearer_auth(&token).json(&json!({"side": if i % 2 == 0 { "yes" } else { "no" }, "usdc_amount": "1"})).send().await.unwrap();
                    assert_eq!(r.status().as_u16(), 200, "{}", r.text().await.unwrap());
                    latencies.push(started.elapsed().as_secs_f64() * 1e3);
                }
                latencies
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort_by(f64::total_cmp);
    let p = |q: f64| all[((all.len() as f64 * q) as usize).min(all.len() - 1)];
    (all.len() as f64 / SECONDS as f64, p(0.5), p(0.99))
}

#[tokio::main]
async fn main() {
    let support::Service { base, db, .. } = support::serve_fresh("fm_bench_trade", |config| {
        config.rate_auth_per_min = u32::MAX;
        config.rate_trade_per_sec = u32::MAX;
        config.request_timeout = Duration::from_secs(60);
    })
    .await;
    let http = reqwest::Client::builder().pool_max_idle_per_host(TRADERS).build().unwrap();

    // Ten open markets (rows as the scheduler makes them), each created on chain by a first trade.
    let series = support::series(&db, 1_000_000_000).await;
    let now = Utc::now();
    let mut markets = Vec::new();
    for round in 0..10 {
        let minutes = chrono::Duration::minutes;
        markets.push(support::open_market(&db, series, round + 1, now - minutes(1), now + minutes(55 + round as i64), now + minutes(60 + round as i64), 1_000_000_000).await);
    }
    let mut tokens = Vec::new();
    for _ in 0..TRADERS {
        let (wallet, token) = support::sign_in(&http, &base, &ed25519_dalek::SigningKey::from_bytes(&rand::random())).await;
        let r = http.post(format!("{base}/v1/dev/faucet")).json(&json!({"wallet_address": wallet, "amount": "10000"})).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200);
        tokens.push(token);
    }
    for market in &markets {
        let r = http.post(format!("{base}/v1/markets/{market}/trade")).bearer_auth(&tokens[0]).json(&json!({"side": "yes", "usdc_amount": "1"})).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200);
    }

    println!("custodial trades, {TRADERS} traders, {SECONDS} s each, 1 USDC buys, release build, embedded chain");
    let (tps, p50, p99) = drive(&http, &base, &tokens, &markets[..1]).await;
    println!("  one market:   {tps:>7.0} trades/s   p50 {p50:.1} ms   p99 {p99:.1} ms");
    let (tps, p50, p99) = drive(&http, &base, &tokens, &markets).await;
    println!("  ten markets:  {tps:>7.0} trades/s   p50 {p50:.1} ms   p99 {p99:.1} ms");

    // pgbench on the same Postgres, same number of clients.
    let admin = std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres:postgres@127.0.0.1:5432/postgres".into());
    let pg = format!("{}/fm_bench_pgbench", admin.rsplit_once('/').unwrap().0);
    let admin_conn = PgPoolOptions::new().max_connections(1).connect(&admin).await.unwrap();
    sqlx::query("DROP DATABASE IF EXISTS fm_bench_pgbench").execute(&admin_conn).await.unwrap();
    sqlx::query("CREATE DATABASE fm_bench_pgbench").execute(&admin_conn).await.unwrap();
    let run = |args: &[&str]| std::process::Command::new("pgbench").args(args).arg(&pg).output();
    match run(&["-i", "-q", "-s", "10"]) {
        Ok(init) if init.status.success() => {
            let out = run(&["-c", &TRADERS.to_string(), "-j", "2", "-T", &SECONDS.to_string()]).expect("pgbench runs");
            let text = String::from_utf8_lossy(&out.stdout);
            for line in text.lines().filter(|l| l.starts_with("tps") || l.contains("latency average")) {
                println!("  pgbench (TPC-B-like, scale 10, {TRADERS} clients): {line}");
            }
        }
        _ => println!("  pgbench not available: skipped"),
    }
}
