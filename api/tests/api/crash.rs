//! SIGKILL in the middle of settlement and of the withdrawal queue (the second test, below).
//! Settlement: the real binary runs the oracle, the settlement crank and
//! the indexer over 50 traded rounds past their settlement time on the embedded chain (which
//! lives in Postgres, so it survives the process), and is killed with SIGKILL at a random moment
//! 20 times, restarted after each; the rounds close a few at a time, before each run, as the
//! scheduler closes them over the hours; then it runs to the end. No position is paid twice or
//! missed, and the Postgres view — vault balances, settlements, positions, market statuses —
//! equals the chain.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anchor_lang::prelude::Pubkey;
use api::app::config::default_series;
use api::chain::OnChain;
use api::domain::market::Side;
use api::store::{markets, series};
use chrono::{DateTime, TimeZone, Utc};
use funding_market::client;
use funding_market::state::Position;
use localnet::EmbeddedChain;
use localnet::GenesisParams;
use sim_exchange::{Model, default_symbols};
use solana_keypair::Keypair;
use solana_signer::Signer;
use sqlx::PgPool;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use uuid::Uuid;

use crate::helpers::*;
use crate::trading::insert_round;

const MARKETS: usize = 50;
/// Every fifth round is voided (its settlement time "no longer exists"): refunds, not payouts.
const VOID_EVERY: usize = 5;
const WALLETS: usize = 4;
/// Traders in every settled round: 800 positions to pay (160 payout transactions), enough work
/// that the kills, each landing a few transactions into a run, come while work is left (with 4,
/// runs sometimes finished before the twentieth kill; with 8, once the crank paid 32 rounds at
/// once and the chain committed in groups, a fresh-clone CI run had 14 of 20 kills mid-work;
/// with 16, another had 14 of 20 again, on a slow machine under the whole suite — see
/// `MAX_STEPS`).
const SETTLING_WALLETS: usize = 16;
const KILLS: usize = 20;
/// A run is killed once it has made between 1 and this many steps of progress (see `progress`),
/// plus up to 4 ms (about two transactions on the embedded chain): a random point inside the
/// work, never in the start-up alone. Longer waits let a run finish so much that most kills
/// came after the work was done (8 of 20 in a run on a fast day). Once the crank has marked
/// every round, what is left is the indexer's catch-up of the payouts killed runs sent — one
/// statement, so the next run finishes it; runs must therefore be cut short while the crank
/// still has rounds to do (8 steps and 150 ms let a CI run on a 2-core EPYC under the whole
/// suite finish the crank's part in 14 runs; since then the rounds also close a few before each
/// run, so no run can get ahead of the kills).
const MAX_STEPS: i64 = 4;
/// A kill lands at most this long (ms) after the child's first step of progress (a run pays
/// about three rounds in 100 ms here).
const MAX_WORK_MS: u64 = 100;

/// What a position is owed at settlement, from its on-chain account before any payout.
struct Owed {
    market: Uuid,
    wallet: Pubkey,
    payout: u64,
}

/// The service with the oracle, the crank and the indexer (no scheduler, no HTTP) on `db_url`;
/// its embedded simulator publishes the venues' settled rates.
fn start(db_url: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_funding-api"))
        .env("DATABASE_URL", db_url)
        .env("REDIS_URL", redis_url())
        .env("FM_ROLES", "workers,indexer")
        .env("FM_METRICS_ADDR", "127.0.0.1:0")
        .env("FM_SCHEDULER", "false")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the funding-api binary")
}

/// Keeps draining the child's output so a full pipe never blocks it.
fn drain(child: &mut Child) {
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
}

/// How far settlement has come: (rounds finalized, rounds paid out, positions paid).
#[derive(Clone, Copy, Debug, PartialEq, Eq, sqlx::FromRow)]
struct Progress {
    finalized: i64,
    paid_out: i64,
    positions_paid: i64,
}

impl Progress {
    fn steps(&self) -> i64 {
        self.finalized + self.paid_out + self.positions_paid
    }
}

async fn progress(db: &PgPool) -> Progress {
    sqlx::query_as(
        "SELECT count(*) FILTER (WHERE status IN ('settled', 'voided')) AS finalized, count(*) FILTER (WHERE paid_out_at IS NOT NULL) AS paid_out,
                (SELECT count(*) FROM settlements) AS positions_paid
         FROM markets",
    )
    .fetch_one(db)
    .await
    .unwrap()
}

async fn vault(chain: &EmbeddedChain, wallet: &Pubkey) -> u64 {
    token_amount(&chain.account(&client::vault_pda(wallet).to_string()).await.unwrap().unwrap().data)
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn sigkill_twenty_times_while_settling_fifty_rounds_pays_every_position_once(db: PgPool) {
    series::ensure(&db, &default_series()).await.unwrap();
    // The last 50 hourly settlements of Hyperliquid BTC, the oldest first: every one published
    // by the simulator the service starts (same seed, same symbols).
    let sim = Model::new(42, default_symbols());
    let btc = sim.find("hyperliquid", "BTCUSDC").unwrap().clone();
    let last = sim.last_settlement(&btc, Utc::now().timestamp_millis());
    let settlements: Vec<DateTime<Utc>> = (0..MARKETS as i64).rev().map(|i| Utc.timestamp_millis_opt(last - i * 3_600_000).unwrap()).collect();

    // Trading, in process, each round ten minutes before its settlement on the chain's clock.
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let onchain = OnChain::embedded(&chain, db.clone()).await.unwrap();
    let wallets: Vec<Pubkey> = (0..SETTLING_WALLETS).map(|_| Keypair::new().pubkey()).collect();
    for w in &wallets {
        onchain.mint_test_usdc(w, 1_000_000_000).await.unwrap();
        onchain.sweep(w).await.unwrap();
    }
    let mut rounds = Vec::new();
    for (i, settlement) in settlements.iter().enumerate() {
        let id =
            insert_round(&db, "hyperliquid-btcusdc", *settlement - chrono::Duration::hours(1), *settlement - chrono::Duration::minutes(5), *settlement, "open")
                .await;
        chain.set_clock_offset((*settlement - chrono::Duration::minutes(10) - Utc::now()).num_seconds());
        onchain.ensure_market(&markets::plan(&db, id).await.unwrap().unwrap()).await.unwrap();
        for (j, w) in wallets.iter().enumerate() {
            let side = if j % 2 == 0 { Side::Yes } else { Side::No };
            let usdc = 1_000_000 * (1 + ((i + j) % 4) as u64);
            let signed = onchain.sign_buy(id, w, side, usdc, 1).await.unwrap();
            onchain.submit_trade(&signed).await.unwrap();
        }
        rounds.push(id);
    }
    // Past settlement; some marked to be voided. They stay open until their run (below).
    let voided: Vec<Uuid> = rounds.iter().step_by(VOID_EVERY).copied().collect();
    sqlx::query("UPDATE markets SET void_reason = 'interval_change' WHERE id = ANY($1)").bind(&voided).execute(&db).await.unwrap();

    // What each position is owed: its winning shares, or on a void what it paid in (the market
    // holds every buy and the subsidy, so every claim is covered in full).
    let mut owed = Vec::new();
    for (market, settlement) in rounds.iter().zip(&settlements) {
        let yes = sim.rate_at(&btc, settlement.timestamp_millis()) > 0;
        let address = client::market_pda(market.as_bytes());
        for w in &wallets {
            let account = chain.account(&client::position_pda(&address, w).to_string()).await.unwrap().unwrap();
            let p: Position = client::decode(&account.data).unwrap();
            let payout = if voided.contains(market) {
                p.refund_claim()
            } else if yes {
                p.yes_shares
            } else {
                p.no_shares
            };
            owed.push(Owed { market: *market, wallet: *w, payout });
        }
    }
    let mut before = HashMap::new();
    for w in &wallets {
        before.insert(*w, vault(&chain, w).await);
    }
    drop(onchain);
    drop(chain); // the chain is the child's now (one writer per database)

    let name: String = sqlx::query_scalar("SELECT current_database()").fetch_one(&db).await.unwrap();
    let url = database_url(&name);
    // A round's steps: finalized, paid out, and one per position paid.
    let steps_of = |rounds: usize| (rounds * (2 + SETTLING_WALLETS)) as i64;
    let done = steps_of(MARKETS);
    let mut at_kill = Vec::new();
    for run in 0..KILLS {
        // Each killed run finds a few rounds newly closed (oldest first), as the scheduler closes
        // them over the hours, besides what earlier runs left: every run has work of its own, so
        // how fast a run gets through it (the crank pays 32 rounds side by side) cannot use up
        // the work before the twentieth kill. With all 50 closed before the first run, a CI run
        // under the whole suite finished everything in 14 runs and failed the mid-work check.
        let released = (run + 1) * MARKETS / KILLS;
        sqlx::query("UPDATE markets SET status = 'closed' WHERE id = ANY($1) AND status = 'open'").bind(&rounds[..released]).execute(&db).await.unwrap();
        let work = steps_of(released);
        let mut child = start(&url);
        drain(&mut child);
        let from = progress(&db).await.steps();
        let kill_at = from + 1 + (rand::random::<u64>() % MAX_STEPS as u64) as i64;
        // Or at most this long after the child's first step: progress comes in bursts (an
        // indexer batch projects hundreds of payouts at once), and a fast crank would otherwise
        // finish between two kills.
        let cut = Duration::from_millis(rand::random::<u64>() % MAX_WORK_MS);
        let started = Instant::now();
        let mut working_since = None;
        loop {
            let now = progress(&db).await.steps();
            if now > from && working_since.is_none() {
                working_since = Some(Instant::now());
            }
            if now >= kill_at.min(work) || working_since.is_some_and(|t: Instant| t.elapsed() >= cut) {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(120), "no progress within 2 min ({now} of {work} steps)");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_micros(rand::random::<u64>() % 4_000)).await;
        child.start_kill().unwrap(); // SIGKILL
        child.wait().await.unwrap();
        at_kill.push((progress(&db).await, work));
    }
    eprintln!(
        "(finalized, paid out, positions paid; the closed rounds' steps) at each SIGKILL: {:?}",
        at_kill.iter().map(|(p, work)| (p.finalized, p.paid_out, p.positions_paid, *work)).collect::<Vec<_>>()
    );
    // Mid-work: some of the closed rounds' steps were not done when the kill came.
    let mid_work = at_kill.iter().filter(|(p, work)| p.steps() < *work).count();
    assert!(mid_work >= KILLS * 3 / 4, "most kills must land while work is left: {at_kill:?}");

    // Then a run to the end.
    let mut child = start(&url);
    drain(&mut child);
    let started = Instant::now();
    // Every round closed and every payout projected: a round whose payouts a killed run sent is
    // marked paid out by the crank as soon as it finds it closed on chain, before the indexer
    // has projected those payouts.
    while progress(&db).await.steps() < done {
        assert!(started.elapsed() < Duration::from_secs(180), "not paid out and projected within 3 min: {:?}", progress(&db).await);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();

    // The chain: every market and position account closed, every wallet paid exactly.
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    for market in &rounds {
        let address = client::market_pda(market.as_bytes());
        assert!(chain.account(&address.to_string()).await.unwrap().is_none(), "market {market} closed on chain");
        for w in &wallets {
            assert!(chain.account(&client::position_pda(&address, w).to_string()).await.unwrap().is_none(), "position paid and closed");
        }
    }
    for w in &wallets {
        let due: u64 = owed.iter().filter(|o| o.wallet == *w).map(|o| o.payout).sum();
        assert_eq!(vault(&chain, w).await, before[w] + due, "wallet {w}: every position paid exactly once");
        let projected: i64 = sqlx::query_scalar("SELECT balance FROM vault_balances WHERE wallet = $1").bind(w.to_string()).fetch_one(&db).await.unwrap();
        assert_eq!(projected as u64, before[w] + due, "wallet {w}: Postgres's vault balance is the chain's");
    }

    // Postgres: one settlement per position with the amount paid, no position left, every round
    // finished as decided.
    let rows: Vec<(Uuid, String, i64, bool)> = sqlx::query_as("SELECT market_id, wallet, payout, voided FROM settlements").fetch_all(&db).await.unwrap();
    assert_eq!(rows.len(), MARKETS * SETTLING_WALLETS);
    for o in &owed {
        let row = rows.iter().find(|r| r.0 == o.market && r.1 == o.wallet.to_string()).expect("a settlement row per position");
        assert_eq!((row.2 as u64, row.3), (o.payout, voided.contains(&o.market)), "market {} wallet {}", o.market, o.wallet);
    }
    let open: i64 = sqlx::query_scalar("SELECT count(*) FROM positions").fetch_one(&db).await.unwrap();
    assert_eq!(open, 0, "no position left open in Postgres");
    for (market, settlement) in rounds.iter().zip(&settlements) {
        let (status, actual): (String, Option<i64>) =
            sqlx::query_as("SELECT status, actual_rate FROM markets WHERE id = $1").bind(market).fetch_one(&db).await.unwrap();
        if voided.contains(market) {
            assert_eq!(status, "voided");
        } else {
            assert_eq!((status.as_str(), actual), ("settled", Some(sim.rate_at(&btc, settlement.timestamp_millis()))));
        }
    }
}

/// Enough work that most kills land while some is left: a run ends several withdrawals between
/// the step a kill waits for and the kill itself (16 are sent at once and the chain commits them
/// in groups), about five a kill here; with 200 a CI run under the whole suite's load once had
/// fewer than 37 of 50 kills mid-work.
const WITHDRAWALS: usize = 300;
const WITHDRAWAL_KILLS: usize = 50;

/// How far the queue has come: withdrawals sent (processing) and ended (confirmed or failed).
async fn queue_progress(db: &PgPool) -> (i64, i64) {
    sqlx::query_as("SELECT count(*) FILTER (WHERE status = 'processing'), count(*) FILTER (WHERE status IN ('confirmed', 'failed')) FROM withdrawals")
        .fetch_one(db)
        .await
        .unwrap()
}

/// SIGKILL in the middle of the withdrawal queue: 300 withdrawals from four wallets — one of
/// which empties most of its vault on chain behind the queue's back, so some of its requests
/// must fail — worked by the real binary, killed at random 50 times. Every withdrawal ends
/// confirmed or failed; each confirmed one left the vault exactly once (the vaults on chain
/// are what the confirmed amounts say), each failed one not at all; every destination holds
/// exactly what was confirmed to it; and Postgres's balances are the chain's.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn sigkill_fifty_times_while_sending_three_hundred_withdrawals_sends_each_at_most_once(db: PgPool) {
    use api::store::withdrawals::{AccountBudget, NewWithdrawal, Queued, queue};

    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let onchain = OnChain::embedded(&chain, db.clone()).await.unwrap();
    let wallets: Vec<Pubkey> = (0..WALLETS).map(|_| Keypair::new().pubkey()).collect();
    let destinations: Vec<Pubkey> = (0..5).map(|_| Keypair::new().pubkey()).collect();
    let mut users = Vec::new();
    for w in &wallets {
        onchain.mint_test_usdc(w, 250_000_000).await.unwrap();
        onchain.sweep(w).await.unwrap();
        let id = Uuid::new_v4();
        sqlx::query("INSERT INTO users (id, wallet_address) VALUES ($1, $2)").bind(id).bind(w.to_string()).execute(&db).await.unwrap();
        users.push(id);
    }
    // 75 a wallet (186 USDC), 1 to 4 USDC each, to five wallets (their token accounts created on the way).
    for i in 0..WITHDRAWALS {
        let (w, user) = (i % WALLETS, users[i % WALLETS]);
        let destination = destinations[i % destinations.len()];
        let payee = onchain.payee(&destination).await.unwrap();
        let new = NewWithdrawal {
            user_id: user,
            wallet: &wallets[w].to_string(),
            amount: 1_000_000 * (1 + ((i / WALLETS) % 4) as u64),
            destination: &destination.to_string(),
            token_account: &payee.token_account.to_string(),
            create_account: payee.create_for.is_some(),
            idempotency_key: None,
            account_budget: AccountBudget { per_day: 1_000, per_user_per_day: 5 },
        };
        assert!(matches!(queue(&db, new).await.unwrap(), Queued::Created(_)));
    }
    // The last wallet spends 100 of its 250 USDC with a withdrawal the queue does not know.
    let spender = wallets[WALLETS - 1];
    let outside = Keypair::new().pubkey();
    let signed = onchain.sign_withdrawals(&[(spender, onchain.payee(&outside).await.unwrap(), 100_000_000)]).await.unwrap();
    onchain.submit(&signed[0]).await.unwrap();
    let mut before = HashMap::new();
    for w in &wallets {
        before.insert(*w, vault(&chain, w).await);
    }
    drop(onchain);
    drop(chain);

    let name: String = sqlx::query_scalar("SELECT current_database()").fetch_one(&db).await.unwrap();
    let url = database_url(&name);
    let start_queue = |url: &str| {
        let mut child = start(url);
        drain(&mut child);
        child
    };
    let mut at_kill = Vec::new();
    for _ in 0..WITHDRAWAL_KILLS {
        let mut child = start_queue(&url);
        // Killed once 1 or 2 more withdrawals have ended, plus up to 10 ms: mid-claim, mid-send or
        // mid-record.
        let kill_at = queue_progress(&db).await.1 + 1 + (rand::random::<u64>() % 2) as i64;
        let started = Instant::now();
        loop {
            let (_, ended) = queue_progress(&db).await;
            if ended >= kill_at.min(WITHDRAWALS as i64) {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(120), "no progress within 2 min ({ended} of {WITHDRAWALS} ended)");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(rand::random::<u64>() % 10)).await;
        child.start_kill().unwrap();
        child.wait().await.unwrap();
        at_kill.push(queue_progress(&db).await);
    }
    eprintln!("(processing, ended) at each SIGKILL: {at_kill:?}");
    let mid_work = at_kill.iter().filter(|(_, ended)| *ended < WITHDRAWALS as i64).count();
    assert!(mid_work >= WITHDRAWAL_KILLS * 3 / 4, "most kills must land while work is left: {at_kill:?}");

    let mut child = start_queue(&url);
    let started = Instant::now();
    while queue_progress(&db).await.1 < WITHDRAWALS as i64 {
        assert!(started.elapsed() < Duration::from_secs(180), "not every withdrawal ended within 3 min: {:?}", queue_progress(&db).await);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Let the indexer catch up before the Postgres view is compared.
    tokio::time::sleep(Duration::from_secs(2)).await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();

    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let ended: Vec<(String, String, i64, String, Option<String>)> =
        sqlx::query_as("SELECT wallet, destination, amount, status, signature FROM withdrawals").fetch_all(&db).await.unwrap();
    assert!(ended.iter().all(|w| w.3 == "confirmed" || w.3 == "failed"), "every withdrawal ended");
    let failed = ended.iter().filter(|w| w.3 == "failed").count();
    assert!(failed > 0, "the spender's withdrawals beyond its vault failed");
    for w in &wallets {
        let confirmed: u64 = ended.iter().filter(|r| r.0 == w.to_string() && r.3 == "confirmed").map(|r| r.2 as u64).sum();
        assert_eq!(vault(&chain, w).await, before[w] - confirmed, "wallet {w}: the vault lost exactly the confirmed withdrawals");
        let projected: i64 = sqlx::query_scalar("SELECT balance FROM vault_balances WHERE wallet = $1").bind(w.to_string()).fetch_one(&db).await.unwrap();
        assert_eq!(projected as u64, before[w] - confirmed, "wallet {w}: Postgres's vault balance is the chain's");
    }
    let mint = chain.mint();
    for d in &destinations {
        let confirmed: u64 = ended.iter().filter(|r| r.1 == d.to_string() && r.3 == "confirmed").map(|r| r.2 as u64).sum();
        let account = api::chain::money::associated_token_account(d, &mint).to_string();
        let held = chain.account(&account).await.unwrap().map_or(0, |a| token_amount(&a.data));
        assert_eq!(held, confirmed, "destination {d} holds exactly what was confirmed to it");
    }
    // One Withdrawn event per confirmed withdrawal, with its signature; none for a failed one.
    for (_, _, amount, status, signature) in &ended {
        let events: Vec<i64> = sqlx::query_scalar("SELECT amount FROM chain_withdrawals WHERE signature = $1").bind(signature).fetch_all(&db).await.unwrap();
        match status.as_str() {
            "confirmed" => assert_eq!(events, vec![*amount]),
            _ => assert!(events.is_empty()),
        }
    }
}
