//! Lag benchmark: from a transaction's confirmation on the embedded chain to its trade being
//! visible through the API (`GET /v1/markets/{id}` showing the new trade count), with the
//! indexer running inside the service as it does locally. 300 sequential buys on one market by
//! one wallet; the client polls the API every 0.5 ms after each confirmation.
//!
//! `bash scripts/bench-indexer.sh` (release build; needs Postgres and Redis: scripts/setup.sh).

use std::time::{Duration, Instant};

mod support;

use api::chain::errors::Refusal;
use funding_market::client;
use funding_market::instructions::CreateMarketParams;
use funding_market::state::Side;
use solana_keypair::Keypair;
use solana_signer::Signer;
use solana_transaction::Transaction;
use solana_transaction_error::TransactionError;

const TRADES: usize = 300;
const MEMORY_TRADES: usize = 5_000;
const USDC: u64 = 1_000_000;

async fn send(chain: &localnet::EmbeddedChain, ixs: &[anchor_lang::solana_program::instruction::Instruction], payer: &Keypair, signers: &[&Keypair]) -> String {
    let (blockhash, _) = chain.latest_blockhash().await.unwrap();
    let mut all = vec![payer];
    all.extend_from_slice(signers);
    let tx = Transaction::new_signed_with_payer(ixs, Some(&payer.pubkey()), &all, blockhash.parse().unwrap());
    chain.send_and_confirm(&bincode::serialize(&tx).unwrap()).await.unwrap()
}

/// The aim for a confirmed change to show through the API, p99 (docs/performance.md).
const VISIBLE_WITHIN_MS: f64 = 10.0;

/// `samples` sorted, and their p50, p90, p99 and maximum as a line.
fn percentiles(mut samples: Vec<f64>) -> (Vec<f64>, String) {
    samples.sort_by(f64::total_cmp);
    let p = |q: f64| support::quantile(&samples, q);
    let line = format!("p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms", p(0.5), p(0.9), p(0.99), samples[samples.len() - 1]);
    (samples, line)
}

#[tokio::main]
async fn main() {
    let support::Service { base, chain, db } = support::serve_fresh("fm_bench_lag", |_| {}).await;

    // A market the service knows, created on chain; a wallet with USDC in its vault.
    let now = chain.clock().await.unwrap().unix_timestamp;
    let at = |offset: i64| chrono::DateTime::from_timestamp(now + offset, 0).unwrap();
    let series = support::series(&db, 1_000_000_000).await;
    let market_id = support::open_market(&db, series, 1, at(-60), at(3240), at(3540), 1_000_000_000).await;
    let id = *market_id.as_bytes();
    let (authority, operator) = (chain.keys().authority.insecure_clone(), chain.keys().operator.insecure_clone());
    let params = CreateMarketParams {
        market_id: id,
        series: [0; 32],
        open_ts: now - 60,
        close_ts: now + 3240,
        settlement_ts: now + 3540,
        b: 1_000 * USDC,
        prior_ppm: 500_000,
    };
    send(&chain, &[client::create_market(authority.pubkey(), operator.pubkey(), chain.mint(), params)], &operator, &[&authority]).await;
    let wallet = Keypair::new();
    chain.airdrop(&wallet.pubkey(), 10_000_000_000).await.unwrap();
    send(&chain, &[client::create_user(wallet.pubkey(), wallet.pubkey(), chain.mint())], &wallet, &[]).await;
    chain.mint_usdc(&client::deposit_pda(&wallet.pubkey()), 1_000_000 * USDC).await.unwrap();
    // The service's deposit reconciliation sweeps what it sees too (the sweep is
    // permissionless): a sweep refused as already processed or as below the minimum found the
    // deposit swept, as the service itself takes it (`services::deposits`).
    let (blockhash, _) = chain.latest_blockhash().await.unwrap();
    let sweep =
        Transaction::new_signed_with_payer(&[client::sweep_deposit(wallet.pubkey())], Some(&operator.pubkey()), &[&operator], blockhash.parse().unwrap());
    match chain.send_and_confirm(&bincode::serialize(&sweep).unwrap()).await {
        Ok(_) => {}
        Err(chain_client::ChainError::Rpc { err: Some(err), .. } | chain_client::ChainError::TransactionFailed { err, .. })
            if err == TransactionError::AlreadyProcessed || matches!(api::chain::errors::refusal(&err), Some(Refusal::BelowMinimumDeposit)) => {}
        Err(e) => panic!("sweeping the deposit: {e}"),
    }

    let http = reqwest::Client::new();
    let trade_count = || async {
        let body: serde_json::Value = http.get(format!("{base}/v1/markets/{market_id}")).send().await.unwrap().json().await.unwrap();
        body["data"]["trade_count"].as_i64().unwrap_or(-1)
    };
    let (mut confirm, mut lag) = (Vec::new(), Vec::new());
    for n in 1..=TRADES {
        let started = Instant::now();
        // A different amount each time: identical transactions within a blockhash's life are
        // one transaction.
        send(&chain, &[client::buy_shares(wallet.pubkey(), wallet.pubkey(), &id, Side::Yes, USDC + n as u64, 0)], &wallet, &[]).await;
        let confirmed = Instant::now();
        while trade_count().await < n as i64 {
            // Off the runtime's workers: tokio's timer counts in whole milliseconds, so its
            // sleep of 0.5 ms lasts about one.
            tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_micros(500))).await.unwrap();
        }
        confirm.push((confirmed - started).as_secs_f64() * 1e3);
        lag.push(confirmed.elapsed().as_secs_f64() * 1e3);
    }
    // Memory per transaction in a long-running process: resident set over many more buys.
    let rss = || {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok()))
            .unwrap_or(0)
    };
    let memory_trades: usize = std::env::var("LAG_MEMORY_TRADES").ok().and_then(|v| v.parse().ok()).unwrap_or(MEMORY_TRADES);
    let before = rss();
    let started = Instant::now();
    for n in 0..memory_trades {
        if n > 0 && n % 20_000 == 0 {
            println!("  after {n} buys ({:.0} s): {} KiB", started.elapsed().as_secs_f64(), rss());
        }
        // Both sides in turn, so the market stays inside the LMSR's domain.
        let side = if n % 2 == 0 { Side::No } else { Side::Yes };
        send(&chain, &[client::buy_shares(wallet.pubkey(), wallet.pubkey(), &id, side, USDC + n as u64, 0)], &wallet, &[]).await;
    }
    let after = rss();
    println!("{TRADES} buys on the embedded chain, indexer in the service (woken by each confirmation)");
    println!("send -> confirmed (durable):            {}", percentiles(confirm).1);
    let (lag, line) = percentiles(lag);
    println!("confirmed -> visible in GET /v1/markets: {line}");
    println!("  p99 against the {VISIBLE_WITHIN_MS} ms aim: {:.2}x", support::quantile(&lag, 0.99) / VISIBLE_WITHIN_MS);
    println!(
        "resident memory over {memory_trades} more buys: {before} KiB -> {after} KiB ({:.0} bytes per transaction)",
        (after as f64 - before as f64) * 1024.0 / memory_trades as f64
    );
}
