//! Catch-up benchmark: 100,000 trade events (one per transaction, across 100 markets and 1,000
//! wallets) indexed from an in-memory chain source into a fresh database `fm_bench_indexer`,
//! then the same rows the projection appended (`chain_events`, `trades`) copied out and loaded
//! with a raw `COPY` into tables of the same shape and indexes, in the same run; and, beside
//! that reference, every other row the projection left (price points, positions, balances,
//! traders' days and totals, stream events), loaded the same way.
//!
//! Then groups of trades applied ahead (`Projector::apply_ahead`, as the service projects its
//! own trades: one statement and one commit a group) of 1 to 16 transactions sent at once, each
//! size timed over `GROUPS` groups: what a group costs, and so what larger groups save.
//!
//! `bash scripts/bench-indexer.sh` (release build; needs Postgres: scripts/setup.sh). The batch
//! (chain transactions per database transaction) is the indexer's own (`follow::BATCH`) unless
//! `CATCHUP_BATCH` names another.

use std::sync::Arc;
use std::time::Instant;

use anchor_lang::prelude::Pubkey;
use anchor_lang::{Event, event::EVENT_IX_TAG_LE};
use chain_client::{ChainError, ChainSource, ConfirmedTransaction, InnerInstruction, Instruction, SignatureInfo};
use funding_market::events::{MarketCreated, TradeExecuted};
use funding_market::state::Side;
use indexer::follow::Indexer;
use indexer::projection::Projector;
use sqlx::PgConnection;
use sqlx::postgres::PgPoolOptions;
use uuid::Uuid;

const EVENTS: usize = 100_000;
const MARKETS: usize = 100;
const WALLETS: usize = 1_000;
const T: i64 = 1_800_000_000;
/// Groups applied ahead, of each size.
const GROUPS: usize = 300;
/// The tables the projection appends a row to for each trade, whose COPY is the reference.
const APPENDED: &[&str] = &["chain_events", "trades"];
/// The other tables it writes: a row per key (position, wallet, trader's day) or per second and
/// market (price points), and the stream's rows (one per trigger firing).
const PROJECTED: &[&str] = &["market_prices", "positions", "vault_balances", "trader_stats", "trader_totals", "stream_events"];

struct Ledger(Vec<ConfirmedTransaction>);

#[derive(Clone)]
struct Source(Arc<Ledger>);

impl ChainSource for Source {
    async fn signatures_after(&self, _: &str, cursor: Option<&str>) -> Result<Vec<SignatureInfo>, ChainError> {
        let txs = &self.0.0;
        let start = cursor.and_then(|c| txs.iter().position(|t| t.signature == c)).map_or(0, |i| i + 1);
        Ok(txs[start..].iter().map(|t| SignatureInfo { signature: t.signature.clone(), slot: t.slot, failed: false, block_time: t.block_time }).collect())
    }

    async fn transaction(&self, signature: &str) -> Result<Option<ConfirmedTransaction>, ChainError> {
        // Signatures are "tx-{index}": a lookup as cheap as a node's cache hit.
        let index: usize = signature[3..].parse().unwrap();
        Ok(self.0.0.get(index).cloned())
    }
}

fn event_tx(index: usize, events: Vec<Vec<u8>>) -> ConfirmedTransaction {
    let program = funding_market::ID.to_string();
    let inner = events
        .into_iter()
        .map(|data| InnerInstruction { outer_index: 0, instruction: Instruction { program_id: program.clone(), accounts: vec![], data } })
        .collect();
    ConfirmedTransaction {
        signature: format!("tx-{index}"),
        slot: 1 + index as u64,
        transaction_index: None,
        block_time: Some(T),
        err: None,
        signers: vec![],
        instructions: vec![],
        inner_instructions: inner,
    }
}

/// What loading tables with `COPY` took: the loads' seconds (not the copying out) and rows.
struct Copied {
    secs: f64,
    rows: u64,
}

/// Copies each of `tables` out and loads it with `COPY` into a new table of the same columns and
/// indexes (`copy_<table>`).
async fn copy_through(conn: &mut PgConnection, tables: &[&str]) -> Copied {
    use futures_util::StreamExt;
    let mut copied = Copied { secs: 0.0, rows: 0 };
    for table in tables {
        sqlx::query(&format!("CREATE TABLE copy_{table} (LIKE {table} INCLUDING ALL)")).execute(&mut *conn).await.unwrap();
        let mut out = conn.copy_out_raw(&format!("COPY {table} TO STDOUT")).await.unwrap();
        let mut bytes = Vec::new();
        while let Some(chunk) = out.next().await {
            bytes.extend_from_slice(&chunk.unwrap());
        }
        drop(out);
        let started = Instant::now();
        let mut copy_in = conn.copy_in_raw(&format!("COPY copy_{table} FROM STDIN")).await.unwrap();
        copy_in.send(bytes.as_slice()).await.unwrap();
        copied.rows += copy_in.finish().await.unwrap();
        copied.secs += started.elapsed().as_secs_f64();
    }
    copied
}

fn event_data(event: &impl Event) -> Vec<u8> {
    [EVENT_IX_TAG_LE, &event.data()].concat()
}

#[tokio::main]
async fn main() {
    let admin = std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres:postgres@127.0.0.1:5432/postgres".into());
    let url = format!("{}/fm_bench_indexer", admin.rsplit_once('/').unwrap().0);
    let conn = PgPoolOptions::new().max_connections(1).connect(&admin).await.unwrap();
    sqlx::query("DROP DATABASE IF EXISTS fm_bench_indexer").execute(&conn).await.unwrap();
    sqlx::query("CREATE DATABASE fm_bench_indexer").execute(&conn).await.unwrap();
    conn.close().await;
    let db = PgPoolOptions::new().max_connections(4).connect(&url).await.unwrap();
    indexer::MIGRATOR.run(&db).await.unwrap();

    // The service's markets; their creation events come first in the ledger.
    let series = Uuid::new_v4();
    sqlx::query("INSERT INTO series (id, exchange, symbol, slug, display_name, tier, liquidity_b, interval_hours) VALUES ($1, 'binance', 'BTCUSDT', 'binance-btcusdt', 'BTC/USDT', 1, 100000000, 1)")
        .bind(series)
        .execute(&db)
        .await
        .unwrap();
    let mut txs = Vec::with_capacity(EVENTS + MARKETS);
    let mut markets = Vec::new();
    for round in 0..MARKETS {
        let id = Uuid::new_v4();
        sqlx::query(
            "INSERT INTO markets (id, series_id, round_number, open_ts, close_ts, settlement_ts, status, liquidity_b, q_yes, q_no, yes_price_ppm, ou_prior_ppm, ou_confidence_ppm)
             VALUES ($1, $2, $3, now(), now() + interval '55 minutes', now() + interval '1 hour', 'open', 100000000, 0, 0, 500000, 500000, 0)",
        )
        .bind(id)
        .bind(series)
        .bind(round as i32 + 1)
        .execute(&db)
        .await
        .unwrap();
        let address = Pubkey::new_unique();
        let created = MarketCreated {
            market: address,
            market_id: *id.as_bytes(),
            series: [0; 32],
            open_ts: T,
            close_ts: T + 3300,
            settlement_ts: T + 3600,
            b: 100_000_000,
            q_yes: 0,
            q_no: 0,
            subsidy: 1,
            yes_price: 500_000,
            no_price: 500_000,
            ts: T,
        };
        txs.push(event_tx(txs.len(), vec![event_data(&created)]));
        markets.push(address);
    }
    let wallets: Vec<Pubkey> = (0..WALLETS).map(|_| Pubkey::new_unique()).collect();
    let mut counts = vec![0u64; MARKETS];
    // The i-th trade: in market i % MARKETS, by wallet i % WALLETS.
    let mut trade = |i: usize| {
        let m = i % MARKETS;
        counts[m] += 1;
        let n = counts[m];
        event_data(&TradeExecuted {
            market: markets[m],
            wallet: wallets[i % WALLETS],
            side: if i.is_multiple_of(3) { Side::No } else { Side::Yes },
            is_buy: true,
            shares: 10_000_000,
            amount: 5_000_000,
            fee: 50_000,
            q_yes: n * 10_000_000,
            q_no: 0,
            yes_price: 500_000 + n,
            no_price: 500_000 - n,
            volume: n * 5_000_000,
            trade_count: n,
            position_yes: n,
            position_no: 0,
            vault_balance: 1,
            user_vault_balance: 1_000_000_000,
            ts: T + (i / 50) as i64,
        })
    };
    for i in 0..EVENTS {
        txs.push(event_tx(txs.len(), vec![trade(i)]));
    }
    let source = Source(Arc::new(Ledger(txs)));
    let batch = std::env::var("CATCHUP_BATCH").map_or(indexer::follow::BATCH, |b| b.parse().expect("CATCHUP_BATCH is a number"));
    let indexer = Indexer::new(source, Projector::new(db.clone(), &funding_market::ID), &funding_market::ID.to_string()).with_batch(batch);

    let started = Instant::now();
    let progress = indexer.run_once().await.unwrap();
    let indexed_in = started.elapsed().as_secs_f64();
    assert_eq!(progress.events, EVENTS + MARKETS);
    let trades: i64 = sqlx::query_scalar("SELECT count(*) FROM trades").fetch_one(&db).await.unwrap();
    assert_eq!(trades as usize, EVENTS);

    // The same appended rows, out and back in with COPY (same columns, same indexes); then
    // the rest of what the projection left, the same way.
    let mut conn = db.acquire().await.unwrap();
    let appended = copy_through(&mut conn, APPENDED).await;
    let projected = copy_through(&mut conn, PROJECTED).await;
    drop(conn);

    // Groups applied ahead: k transactions of one market (by up to ten wallets: the trade
    // generator's wallet is i % WALLETS for i a multiple of MARKETS), sent at once.
    let projector = Projector::new(db.clone(), &funding_market::ID);
    let mut next = EVENTS + MARKETS;
    let mut ahead = Vec::new();
    for k in [1usize, 2, 4, 8, 16] {
        let started = Instant::now();
        for _ in 0..GROUPS {
            let group: Vec<ConfirmedTransaction> = (0..k)
                .map(|j| {
                    next += 1;
                    event_tx(next, vec![trade(j * MARKETS)])
                })
                .collect();
            futures_util::future::try_join_all(group.iter().map(|tx| projector.apply_ahead(tx))).await.unwrap();
        }
        ahead.push((k, started.elapsed().as_secs_f64() * 1e3 / GROUPS as f64));
    }

    let events = (EVENTS + MARKETS) as f64;
    println!("{EVENTS} trade events + {MARKETS} market creations, one per transaction, {MARKETS} markets, {WALLETS} wallets");
    println!("indexer (decode, record once, project markets/trades/positions/prices/balances/stats, cursor; {batch} chain transactions per DB transaction):");
    println!("  {indexed_in:.2} s, {:.0} events/s", events / indexed_in);
    println!("raw COPY of the same chain_events + trades rows into tables with the same indexes:");
    println!("  {:.2} s, {:.0} rows/s ({:.0} events/s)", appended.secs, appended.rows as f64 / appended.secs, events / appended.secs);
    println!("ratio of catch-up to COPY: {:.2}x", appended.secs / indexed_in);
    let all = appended.secs + projected.secs;
    println!("raw COPY of every row the projection left ({}: {} rows more), the same way:", PROJECTED.join(", "), projected.rows);
    println!("  {all:.2} s, {:.0} rows/s; ratio of catch-up to it: {:.2}x", (appended.rows + projected.rows) as f64 / all, all / indexed_in);
    println!("groups applied ahead (one statement and commit a group; {GROUPS} groups of each size, one market):");
    for (k, ms) in ahead {
        println!("  {k:>2} transactions a group: {ms:.2} ms a group, {:.3} ms a trade", ms / k as f64);
    }
    db.close().await;
}
