//! The projection on real Postgres: a market's life as the program's events describe it,
//! delivered as confirmed transactions — once, twice, out of order, failed, mixed with
//! instructions that are not events.

mod common;

use anchor_lang::prelude::Pubkey;
use common::*;
use funding_market::events::{DepositSwept, MarketClosed, MarketCreated, MarketFinalized, PositionSettled, TradeExecuted, UserCreated};
use funding_market::state::{Outcome, Side};
use indexer::projection::{PROJECTION_LOCK, Projector};
use solana_instruction_error::InstructionError;
use solana_transaction_error::TransactionError;
use sqlx::postgres::PgArguments;
use sqlx::{Arguments, PgPool};

/// A market row linked to a program address (its events are projected without its creation).
async fn seed_linked_market(db: &PgPool) -> (uuid::Uuid, Pubkey) {
    let (market_id, market) = (seed_market(db).await, Pubkey::new_unique());
    sqlx::query("UPDATE markets SET onchain_address = $2 WHERE id = $1").bind(market_id).bind(market.to_string()).execute(db).await.unwrap();
    (market_id, market)
}

/// A small deterministic generator (xorshift) from `state`: `next(n)` is in `0..n`. A failure
/// can be replayed.
fn xorshift(mut state: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    }
}

/// The order `len` ledger entries are delivered in: a little out of order (`swaps` neighbours
/// swapped) and some twice (`repeats` entries delivered again somewhere).
fn deliveries(len: usize, swaps: usize, repeats: usize, next: &mut impl FnMut(u64) -> u64) -> Vec<usize> {
    let mut delivery: Vec<usize> = (0..len).collect();
    for _ in 0..swaps {
        let i = next(delivery.len() as u64 - 1) as usize;
        delivery.swap(i, i + 1);
    }
    for _ in 0..repeats {
        let i = next(delivery.len() as u64) as usize;
        delivery.insert(next(delivery.len() as u64) as usize, delivery[i]);
    }
    delivery
}

/// One copy of a test's markets and wallets and its ledger's transactions in them.
struct World {
    markets: Vec<(uuid::Uuid, Pubkey)>,
    wallets: Vec<Pubkey>,
    txs: Vec<chain_client::ConfirmedTransaction>,
}

impl World {
    /// Copy `n` of a ledger (two new rounds of `first`'s series, four new wallets): entry `i`,
    /// at its slot and position in the block, is the transaction "{name}-{i}" holding the events
    /// `events` makes of it with this copy's market addresses and wallets.
    async fn new<E>(
        db: &PgPool,
        first: uuid::Uuid,
        n: i32,
        name: &str,
        ledger: &[(E, u64, u32)],
        events: impl Fn(&E, &[Pubkey], &[Pubkey]) -> Vec<Vec<u8>>,
    ) -> World {
        let mut markets = Vec::new();
        for round in 0..2 {
            markets.push(linked_round(db, first, 10 + round + 2 * n).await);
        }
        let addresses: Vec<Pubkey> = markets.iter().map(|(_, address)| *address).collect();
        let wallets: Vec<Pubkey> = (0..4).map(|_| Pubkey::new_unique()).collect();
        let txs = ledger
            .iter()
            .enumerate()
            .map(|(i, (entry, slot, index))| {
                let mut t = tx(&format!("{name}-{i}"), *slot, events(entry, &addresses, &wallets));
                t.transaction_index = Some(*index);
                t
            })
            .collect();
        World { markets, wallets, txs }
    }
}

/// `t` as a buy or sell (`sell`) of YES or NO (`no`) for `amount`, with a 1% fee.
fn ordered(mut t: TradeExecuted, no: bool, sell: bool, amount: u64) -> TradeExecuted {
    (t.side, t.is_buy, t.amount, t.fee) = (if no { Side::No } else { Side::Yes }, !sell, amount, amount / 100);
    t
}

/// Another round of `first`'s series (round `round`), linked to a program address.
async fn linked_round(db: &PgPool, first: uuid::Uuid, round: i32) -> (uuid::Uuid, Pubkey) {
    let (id, address) = (uuid::Uuid::new_v4(), Pubkey::new_unique());
    sqlx::query(
        "INSERT INTO markets (id, series_id, round_number, open_ts, close_ts, settlement_ts, status, liquidity_b, q_yes, q_no, yes_price_ppm, ou_prior_ppm, ou_confidence_ppm, onchain_address)
         SELECT $1, series_id, $2, open_ts, close_ts, settlement_ts + $2 * interval '1 hour', status, liquidity_b, 0, 0, 500000, 500000, 0, $4 FROM markets WHERE id = $3",
    )
    .bind(id)
    .bind(round)
    .bind(first)
    .bind(address.to_string())
    .execute(db)
    .await
    .unwrap();
    (id, address)
}

#[sqlx::test(migrations = "../migrations")]
async fn a_market_life_is_projected_once_whatever_the_delivery(db: PgPool) {
    let market_id = seed_market(&db).await;
    let (market, wallet) = (Pubkey::new_unique(), Pubkey::new_unique());
    let projector = Projector::new(db.clone(), &funding_market::ID);
    let created = market_created(market, market_id);
    let txs = vec![
        tx(
            "sig-user",
            10,
            vec![event_data(&UserCreated { wallet, user: Pubkey::new_unique(), deposit: Pubkey::new_unique(), vault: Pubkey::new_unique(), ts: T })],
        ),
        tx("sig-deposit", 11, vec![event_data(&DepositSwept { wallet, amount: 50_000_000, vault_balance: 50_000_000, ts: T })]),
        tx("sig-create", 12, vec![event_data(&created)]),
        tx("sig-trade-1", 13, vec![event_data(&trade(market, wallet, 1, 10_000_000, 10_000_000, 44_950_000))]),
        // Two events in one transaction get their own indexes.
        tx(
            "sig-trade-2",
            14,
            vec![
                event_data(&trade(market, wallet, 2, 20_000_000, 20_000_000, 39_900_000)),
                event_data(&trade(market, wallet, 3, 30_000_000, 30_000_000, 34_850_000)),
            ],
        ),
    ];
    let mut new = 0;
    for t in &txs {
        new += projector.apply(t).await.unwrap();
    }
    assert_eq!(new, 6);
    // Every delivery again, and an old trade out of order: nothing changes.
    for t in &txs {
        assert_eq!(projector.apply(t).await.unwrap(), 0);
    }
    let mut late = tx("sig-late", 9, vec![event_data(&trade(market, wallet, 0, 1, 1, 1))]);
    late.signature = "sig-old-trade".into();
    projector.apply(&late).await.unwrap();
    // A failed transaction's events are ignored.
    let mut failed = tx("sig-failed", 15, vec![event_data(&trade(market, wallet, 9, 99, 99, 99))]);
    failed.err = Some(TransactionError::InstructionError(0, InstructionError::Custom(6007)));
    assert_eq!(projector.apply(&failed).await.unwrap(), 0);

    let (q_yes, price, volume, count, address): (i64, i32, i64, i32, String) =
        sqlx::query_as("SELECT q_yes, yes_price_ppm, total_volume, trade_count, onchain_address FROM markets WHERE id = $1")
            .bind(market_id)
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!((q_yes, price, volume, count, address), (30_000_000, 510_003, 15_000_000, 3, market.to_string()));
    let trades: i64 = sqlx::query_scalar("SELECT count(*) FROM trades WHERE market_id = $1").bind(market_id).fetch_one(&db).await.unwrap();
    assert_eq!(trades, 4, "three trades, plus the out-of-order one recorded as history but not as state");
    let position: (i64, i64) =
        sqlx::query_as("SELECT yes_shares, no_shares FROM positions WHERE wallet = $1").bind(wallet.to_string()).fetch_one(&db).await.unwrap();
    assert_eq!(position, (30_000_000, 0), "the late trade did not regress the position");
    let balance: i64 = sqlx::query_scalar("SELECT balance FROM vault_balances WHERE wallet = $1").bind(wallet.to_string()).fetch_one(&db).await.unwrap();
    assert_eq!(balance, 34_850_000);
    let deposits: i64 = sqlx::query_scalar("SELECT sum(amount)::bigint FROM deposits").fetch_one(&db).await.unwrap();
    assert_eq!(deposits, 50_000_000);
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM chain_events").fetch_one(&db).await.unwrap();
    assert_eq!(events, 7);
    assert_eq!(projector.cursor().await.unwrap().as_deref(), Some("sig-failed"), "the cursor moves past failed transactions too");

    // Resolution and settlement.
    let resolved = MarketFinalized { market, voided: false, outcome: Outcome::Yes, actual_rate: 123_000_000, fees_to_treasury: 150_000, ts: T + 3600 };
    let settled = PositionSettled {
        market,
        wallet,
        yes_shares: 30_000_000,
        no_shares: 0,
        payout: 30_000_000,
        user_vault_balance: 64_850_000,
        voided: false,
        ts: T + 3700,
    };
    projector.apply(&tx("sig-resolve", 20, vec![event_data(&resolved)])).await.unwrap();
    projector.apply(&tx("sig-settle", 21, vec![event_data(&settled)])).await.unwrap();
    projector.apply(&tx("sig-resolve", 20, vec![event_data(&resolved)])).await.unwrap();
    let (status, outcome, rate): (String, String, i64) =
        sqlx::query_as("SELECT status, outcome, actual_rate FROM markets WHERE id = $1").bind(market_id).fetch_one(&db).await.unwrap();
    assert_eq!((status.as_str(), outcome.as_str(), rate), ("settled", "yes", 123_000_000));
    let (rounds, yes_rounds, series_volume): (i32, i32, i64) =
        sqlx::query_as("SELECT total_rounds, yes_rounds, total_volume FROM series").fetch_one(&db).await.unwrap();
    assert_eq!((rounds, yes_rounds, series_volume), (1, 1, 15_000_000), "statistics counted once");
    let open_positions: i64 = sqlx::query_scalar("SELECT count(*) FROM positions").fetch_one(&db).await.unwrap();
    assert_eq!(open_positions, 0);
    let payout: i64 = sqlx::query_scalar("SELECT payout FROM settlements").fetch_one(&db).await.unwrap();
    assert_eq!(payout, 30_000_000);
    let balance: i64 = sqlx::query_scalar("SELECT balance FROM vault_balances WHERE wallet = $1").bind(wallet.to_string()).fetch_one(&db).await.unwrap();
    assert_eq!(balance, 64_850_000);
}

#[sqlx::test(migrations = "../migrations")]
async fn events_of_unknown_markets_are_kept_not_lost(db: PgPool) {
    let projector = Projector::new(db.clone(), &funding_market::ID);
    let stray = trade(Pubkey::new_unique(), Pubkey::new_unique(), 1, 1, 1, 1);
    assert_eq!(projector.apply(&tx("sig-stray", 5, vec![event_data(&stray)])).await.unwrap(), 1);
    let kept: (String, Vec<u8>) = sqlx::query_as("SELECT kind, data FROM chain_events").fetch_one(&db).await.unwrap();
    assert_eq!(kept.0, "TradeExecuted");
    assert!(indexer::events::decode(&kept.1).is_some(), "the raw event can be projected again later");
}

/// Two trades in the same second, delivered newest first: the price point of that second stays
/// the newer trade's.
#[sqlx::test(migrations = "../migrations")]
async fn a_late_trade_does_not_overwrite_a_newer_price_point(db: PgPool) {
    let (market_id, market) = seed_linked_market(&db).await;
    let wallet = Pubkey::new_unique();
    let projector = Projector::new(db.clone(), &funding_market::ID);
    let mut newer = trade(market, wallet, 2, 20, 20, 1);
    let mut older = trade(market, wallet, 1, 10, 10, 1);
    newer.ts = T;
    older.ts = T;
    projector.apply(&tx("newer", 11, vec![event_data(&newer)])).await.unwrap();
    projector.apply(&tx("older", 10, vec![event_data(&older)])).await.unwrap();
    let price: i32 = sqlx::query_scalar("SELECT yes_price_ppm FROM market_prices WHERE market_id = $1").bind(market_id).fetch_one(&db).await.unwrap();
    assert_eq!(price, newer.yes_price as i32);
}

/// A trade the service sent itself is recorded at once without moving the cursor; when the
/// indexer then delivers everything in order, the earlier transaction is not skipped and the
/// one applied ahead is not applied twice.
#[sqlx::test(migrations = "../migrations")]
async fn applied_ahead_leaves_the_cursor_and_is_not_applied_twice(db: PgPool) {
    let (market_id, market) = seed_linked_market(&db).await;
    let wallet = Pubkey::new_unique();
    let projector = Projector::new(db.clone(), &funding_market::ID);
    let created = MarketCreated { subsidy: 1, ..market_created(market, market_id) };
    let creation = tx("creation", 9, vec![event_data(&created)]);
    let first = tx("first", 10, vec![event_data(&trade(market, wallet, 1, 10, 10, 900))]);
    let second = tx("second", 11, vec![event_data(&trade(market, wallet, 2, 20, 20, 800))]);
    projector.apply_ahead(&second).await.unwrap();
    let recorded: i64 = sqlx::query_scalar("SELECT count(*) FROM chain_events").fetch_one(&db).await.unwrap();
    assert_eq!(recorded, 1);
    assert_eq!(projector.cursor().await.unwrap(), None);
    assert_eq!(projector.apply(&creation).await.unwrap(), 1);
    let q_yes: i64 = sqlx::query_scalar("SELECT q_yes FROM markets WHERE id = $1").bind(market_id).fetch_one(&db).await.unwrap();
    assert_eq!(q_yes, 20, "the creation, delivered after a trade, does not reset q");
    assert_eq!(projector.apply(&first).await.unwrap(), 1);
    assert_eq!(projector.apply(&second).await.unwrap(), 0);
    assert_eq!(projector.cursor().await.unwrap().as_deref(), Some("second"));
    let (trades, balance): (i64, i64) = sqlx::query_as("SELECT (SELECT count(*) FROM trades), (SELECT balance FROM vault_balances WHERE wallet = $1)")
        .bind(wallet.to_string())
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!((trades, balance), (2, 800), "both trades once; the balance of the later one");
}

/// The indexer's batches and transactions applied ahead (a request projecting its own trade)
/// at the same time, on the same market and wallets, often the very same transaction: every
/// projection completes (they used to deadlock) and each event counts once.
#[sqlx::test(migrations = "../migrations")]
async fn batches_and_ahead_projections_run_side_by_side(db: PgPool) {
    let (market_id, market) = seed_linked_market(&db).await;
    let wallets: Vec<Pubkey> = (0..6).map(|_| Pubkey::new_unique()).collect();
    let txs: Vec<_> =
        (1..=240u64).map(|n| tx(&format!("sig-{n}"), n, vec![event_data(&trade(market, wallets[n as usize % 6], n, n * 10, n * 10, 1_000 + n))])).collect();
    let txs = std::sync::Arc::new(txs);
    let batches = {
        let (db, txs) = (db.clone(), txs.clone());
        tokio::spawn(async move {
            let projector = Projector::new(db, &funding_market::ID);
            for chunk in txs.chunks(12) {
                projector.apply_batch(chunk).await.unwrap();
            }
        })
    };
    let ahead: Vec<_> = (0..4)
        .map(|k| {
            let (db, txs) = (db.clone(), txs.clone());
            tokio::spawn(async move {
                let projector = Projector::new(db, &funding_market::ID);
                for t in txs.iter().skip(k).step_by(4) {
                    projector.apply_ahead(t).await.unwrap();
                }
            })
        })
        .collect();
    batches.await.unwrap();
    for a in ahead {
        a.await.unwrap();
    }
    let (events, trades, count): (i64, i64, i32) =
        sqlx::query_as("SELECT (SELECT count(*) FROM chain_events), (SELECT count(*) FROM trades), (SELECT trade_count FROM markets WHERE id = $1)")
            .bind(market_id)
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!((events, trades, count), (240, 240, 240));
}

/// A group of trades applied ahead is one statement, a transaction of its own: it still waits
/// for the projection lock (held here, as an indexer's batch holds it) before touching a row,
/// and goes on once the lock is released.
#[sqlx::test(migrations = "../migrations")]
async fn trades_applied_ahead_wait_for_the_projection_lock(db: PgPool) {
    let (market_id, market) = seed_linked_market(&db).await;
    let mut holder = db.acquire().await.unwrap();
    sqlx::query("SELECT pg_advisory_lock($1)").bind(PROJECTION_LOCK).execute(&mut *holder).await.unwrap();
    let projector = Projector::new(db.clone(), &funding_market::ID);
    let t = tx("sig-1", 1, vec![event_data(&trade(market, Pubkey::new_unique(), 1, 10, 10, 900))]);
    let applying = tokio::spawn({
        let (projector, t) = (projector.clone(), t.clone());
        async move { projector.apply_ahead(&t).await }
    });
    // Its request for the lock shows as waiting (the trade's classid/objid are the key's halves;
    // this test's database only: the other tests share the server and the key).
    let mut waits = 0;
    loop {
        let waiting: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                            AND ((classid::BIGINT << 32) | objid::BIGINT) = $1)",
        )
        .bind(PROJECTION_LOCK)
        .fetch_one(&db)
        .await
        .unwrap();
        if waiting {
            break;
        }
        waits += 1;
        assert!(waits < 500, "the group never asked for the projection lock");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let count = || sqlx::query_scalar::<_, i64>("SELECT (SELECT count(*) FROM chain_events) + (SELECT count(*) FROM trades)").fetch_one(&db);
    assert_eq!(count().await.unwrap(), 0, "nothing recorded while the lock is held elsewhere");
    sqlx::query("SELECT pg_advisory_unlock($1)").bind(PROJECTION_LOCK).execute(&mut *holder).await.unwrap();
    applying.await.unwrap().unwrap();
    assert_eq!(count().await.unwrap(), 2);
    let trade_count: i32 = sqlx::query_scalar("SELECT trade_count FROM markets WHERE id = $1").bind(market_id).fetch_one(&db).await.unwrap();
    assert_eq!(trade_count, 1);
}

/// Many requests projecting their own trades at once through one projector: they are applied
/// in groups (fewer commits than trades), every caller returns only once its trade is
/// projected, each trade counts once, and the state is the latest trade's whatever order the
/// requests arrived in.
#[sqlx::test(migrations = "../migrations")]
async fn trades_applied_ahead_at_once_are_applied_in_groups(db: PgPool) {
    let (market_id, market) = seed_linked_market(&db).await;
    let projector = Projector::new(db.clone(), &funding_market::ID);
    let wallets: Vec<Pubkey> = (0..4).map(|_| Pubkey::new_unique()).collect();
    // Sent newest first, so arrival order is the reverse of chain order.
    let tasks: Vec<_> = (1..=60u64)
        .rev()
        .map(|n| {
            let (projector, db) = (projector.clone(), db.clone());
            let t = tx(&format!("sig-{n}"), n, vec![event_data(&trade(market, wallets[n as usize % 4], n, n * 10, n * 10, 1_000 + n))]);
            tokio::spawn(async move {
                projector.apply_ahead(&t).await.unwrap();
                let projected: i64 = sqlx::query_scalar("SELECT count(*) FROM trades WHERE signature = $1").bind(&t.signature).fetch_one(&db).await.unwrap();
                assert_eq!(projected, 1, "{} answered before it was projected", t.signature);
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let (trades, count, q_yes, commits): (i64, i32, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM trades), trade_count, q_yes, (SELECT count(DISTINCT xmin::TEXT) FROM chain_events) FROM markets WHERE id = $1",
    )
    .bind(market_id)
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!((trades, count, q_yes), (60, 60, 600));
    assert!(commits < 60, "{commits} commits for 60 trades: not grouped");
    for (i, wallet) in wallets.iter().enumerate() {
        let last = (57..=60u64).find(|n| *n as usize % 4 == i).unwrap();
        let balance: i64 = sqlx::query_scalar("SELECT balance FROM vault_balances WHERE wallet = $1").bind(wallet.to_string()).fetch_one(&db).await.unwrap();
        assert_eq!(balance, 1_000 + last as i64, "wallet {i}: the balance after its latest trade");
    }
}

/// A transaction whose projection fails, applied ahead together with others: it fails its own
/// caller only; the others' trades are projected and their callers answered.
#[sqlx::test(migrations = "../migrations")]
async fn a_failing_transaction_applied_ahead_fails_only_its_own_caller(db: PgPool) {
    let (market_id, market) = seed_linked_market(&db).await;
    let projector = Projector::new(db.clone(), &funding_market::ID);
    let wallet = Pubkey::new_unique();
    // A trade of no shares breaks the trades table's check: its statement fails.
    let broken = TradeExecuted { shares: 0, ..trade(market, wallet, 21, 210, 210, 1_021) };
    let mut txs = vec![tx("sig-broken", 21, vec![event_data(&broken)])];
    txs.extend((1..=20u64).map(|n| tx(&format!("sig-{n}"), n, vec![event_data(&trade(market, wallet, n, n * 10, n * 10, 1_000 + n))])));
    let tasks: Vec<_> = txs
        .into_iter()
        .map(|t| {
            let projector = projector.clone();
            tokio::spawn(async move { (t.signature.clone(), projector.apply_ahead(&t).await.is_ok()) })
        })
        .collect();
    for task in tasks {
        let (signature, applied) = task.await.unwrap();
        assert_eq!(applied, signature != "sig-broken", "{signature}");
    }
    let (trades, count, commits): (i64, i32, i64) =
        sqlx::query_as("SELECT (SELECT count(*) FROM trades), trade_count, (SELECT count(DISTINCT xmin::TEXT) FROM chain_events) FROM markets WHERE id = $1")
            .bind(market_id)
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!((trades, count), (20, 20));
    assert_eq!(commits, 20, "the group failed, so each was applied on its own");
}

/// Two trades of one wallet in one slot (a cluster packs many transactions in a slot), projected
/// in reverse order: the vault balance is the one after the transaction that came later in the
/// block, not the one projected last.
#[sqlx::test(migrations = "../migrations")]
async fn same_slot_balances_follow_the_block_order(db: PgPool) {
    let market_id = seed_market(&db).await;
    let (market, wallet) = (Pubkey::new_unique(), Pubkey::new_unique());
    let projector = Projector::new(db.clone(), &funding_market::ID);
    let created = market_created(market, market_id);
    projector.apply(&tx("sig-create", 12, vec![event_data(&created)])).await.unwrap();
    let mut first = tx("sig-first", 40, vec![event_data(&trade(market, wallet, 1, 10_000_000, 10_000_000, 44_950_000))]);
    first.transaction_index = Some(3);
    let mut second = tx("sig-second", 40, vec![event_data(&trade(market, wallet, 2, 20_000_000, 20_000_000, 39_900_000))]);
    second.transaction_index = Some(7);
    projector.apply(&second).await.unwrap();
    projector.apply(&first).await.unwrap();
    let balance: i64 = sqlx::query_scalar("SELECT balance FROM vault_balances WHERE wallet = $1").bind(wallet.to_string()).fetch_one(&db).await.unwrap();
    assert_eq!(balance, 39_900_000, "the balance after the later transaction of the slot");
    // A deposit in a later slot still moves it.
    let deposit = DepositSwept { wallet, amount: 5_000_000, vault_balance: 44_900_000, ts: T };
    projector.apply(&tx("sig-deposit", 41, vec![event_data(&deposit)])).await.unwrap();
    let balance: i64 = sqlx::query_scalar("SELECT balance FROM vault_balances WHERE wallet = $1").bind(wallet.to_string()).fetch_one(&db).await.unwrap();
    assert_eq!(balance, 44_900_000);
}

/// A run of trades projected in one statement gives the tables that projecting them one at a
/// time gives: the same deliveries — trades of two markets and four wallets, several in a
/// second and in a slot, deposits between them, delivered out of order and repeated — applied
/// one transaction at a time to one copy of the markets and in batches of seven to another.
#[sqlx::test(migrations = "../migrations")]
async fn a_batch_projects_what_one_at_a_time_projects(db: PgPool) {
    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    // The ledger, as indexes: (market, wallet, count in its market, slot, position in the block, ts, balance).
    enum Step {
        Trade { market: usize, wallet: usize, count: u64, ts: i64, balance: u64, position: u64, no: bool, sell: bool, amount: u64 },
        Deposit { wallet: usize, balance: u64 },
        Payout { market: usize, wallet: usize, payout: u64, voided: bool, balance: u64 },
        Finalize { market: usize, voided: bool },
        Close { market: usize },
    }
    let mut counts = [0u64; 2];
    let mut ledger = Vec::new();
    let mut slot = 100u64;
    for i in 0..160u64 {
        if next(4) != 0 {
            slot += 1;
        }
        let step = if next(10) == 0 {
            Step::Deposit { wallet: next(4) as usize, balance: 1_000 + next(1_000) }
        } else {
            let market = next(2) as usize;
            counts[market] += 1;
            Step::Trade {
                market,
                wallet: next(4) as usize,
                count: counts[market],
                ts: T + i as i64 / 3,
                balance: 1_000 + next(1_000),
                position: next(50),
                no: next(3) == 0,
                sell: next(4) == 0,
                amount: 1_000_000 + next(5_000_000),
            }
        };
        ledger.push((step, slot, (i % 5) as u32));
    }
    // Then one market is resolved, the other voided, every position is paid and both close.
    for market in 0..2 {
        slot += 1;
        ledger.push((Step::Finalize { market, voided: market == 1 }, slot, 0));
        for wallet in 0..4 {
            slot += next(2);
            let step = Step::Payout { market, wallet, payout: next(3) * 1_000_000, voided: market == 1, balance: 2_000 + next(1_000) };
            ledger.push((step, slot, wallet as u32));
        }
        ledger.push((Step::Close { market }, slot, 4));
    }
    let delivery = deliveries(ledger.len(), 60, 30, &mut next);

    let first = seed_market(&db).await;
    let mut worlds = Vec::new();
    for (n, name) in ["one-at-a-time", "batched"].into_iter().enumerate() {
        worlds.push(
            World::new(&db, first, n as i32, name, &ledger, |step, markets, wallets| {
                vec![match *step {
                    Step::Trade { market, wallet, count, ts, balance, position, no, sell, amount } => {
                        let mut t = ordered(trade(markets[market], wallets[wallet], count, position, count * 7, balance), no, sell, amount);
                        t.ts = ts;
                        event_data(&t)
                    }
                    Step::Deposit { wallet, balance } => event_data(&DepositSwept { wallet: wallets[wallet], amount: 1, vault_balance: balance, ts: T }),
                    Step::Payout { market, wallet, payout, voided, balance } => event_data(&PositionSettled {
                        market: markets[market],
                        wallet: wallets[wallet],
                        yes_shares: payout,
                        no_shares: 0,
                        payout,
                        voided,
                        user_vault_balance: balance,
                        ts: T + 100,
                    }),
                    Step::Finalize { market, voided } => event_data(&MarketFinalized {
                        market: markets[market],
                        voided,
                        outcome: if voided { Outcome::No } else { Outcome::Yes },
                        actual_rate: if voided { 0 } else { 123_000_000 },
                        fees_to_treasury: 0,
                        ts: T + 90,
                    }),
                    Step::Close { market } => event_data(&MarketClosed { market: markets[market], returned_to_treasury: 0, ts: T + 110 }),
                }]
            })
            .await,
        );
    }

    // Every table the trades touch, with markets and wallets named by their index.
    async fn tables(db: &PgPool, world: &World) -> Vec<String> {
        let mut rows = Vec::new();
        for (m, (id, _)) in world.markets.iter().enumerate() {
            let market: (i64, i64, i32, i64, i32) =
                sqlx::query_as("SELECT q_yes, q_no, yes_price_ppm, total_volume, trade_count FROM markets WHERE id = $1").bind(id).fetch_one(db).await.unwrap();
            rows.push(format!("market {m} {market:?}"));
            let end: (String, Option<String>, Option<i64>, bool, bool) =
                sqlx::query_as("SELECT status, outcome, actual_rate, settled_at IS NOT NULL, paid_out_at IS NOT NULL FROM markets WHERE id = $1")
                    .bind(id)
                    .fetch_one(db)
                    .await
                    .unwrap();
            rows.push(format!("end {m} {end:?}"));
            let prices: Vec<(chrono::DateTime<chrono::Utc>, i32)> =
                sqlx::query_as("SELECT at, yes_price_ppm FROM market_prices WHERE market_id = $1 ORDER BY at").bind(id).fetch_all(db).await.unwrap();
            rows.push(format!("prices {m} {prices:?}"));
            let trades: (i64, Option<i64>) =
                sqlx::query_as("SELECT count(*), sum(amount)::BIGINT FROM trades WHERE market_id = $1").bind(id).fetch_one(db).await.unwrap();
            rows.push(format!("trades {m} {trades:?}"));
            for (w, wallet) in world.wallets.iter().enumerate() {
                let position: Option<(i64, i64, i64, i64, i64)> =
                    sqlx::query_as("SELECT yes_shares, no_shares, last_trade_count, yes_basis, no_basis FROM positions WHERE market_id = $1 AND wallet = $2")
                        .bind(id)
                        .bind(wallet.to_string())
                        .fetch_optional(db)
                        .await
                        .unwrap();
                rows.push(format!("position {m} {w} {position:?}"));
                let settled: Option<(i64, bool)> = sqlx::query_as("SELECT payout, voided FROM settlements WHERE market_id = $1 AND wallet = $2")
                    .bind(id)
                    .bind(wallet.to_string())
                    .fetch_optional(db)
                    .await
                    .unwrap();
                let notices: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox WHERE market_id = $1 AND wallet = $2")
                    .bind(id)
                    .bind(wallet.to_string())
                    .fetch_one(db)
                    .await
                    .unwrap();
                rows.push(format!("settled {m} {w} {settled:?} {notices}"));
            }
        }
        for (w, wallet) in world.wallets.iter().enumerate() {
            let balance: Option<(i64, i64, i32)> = sqlx::query_as("SELECT balance, slot, tx_index FROM vault_balances WHERE wallet = $1")
                .bind(wallet.to_string())
                .fetch_optional(db)
                .await
                .unwrap();
            let stats: Vec<(chrono::NaiveDate, i64, i32, i64, i32, i32)> =
                sqlx::query_as("SELECT day, volume, trades, realized_pnl, settled, wins FROM trader_stats WHERE wallet = $1 ORDER BY day")
                    .bind(wallet.to_string())
                    .fetch_all(db)
                    .await
                    .unwrap();
            rows.push(format!("wallet {w} {balance:?} {stats:?}"));
        }
        rows
    }
    // Compared after every batch, not only at the end (later events overwrite earlier states).
    let projector = Projector::new(db.clone(), &funding_market::ID);
    let mut one = Vec::new();
    for (k, chunk) in delivery.chunks(7).enumerate() {
        for &i in chunk {
            projector.apply(&worlds[0].txs[i]).await.unwrap();
        }
        let batch: Vec<_> = chunk.iter().map(|&i| worlds[1].txs[i].clone()).collect();
        projector.apply_batch(&batch).await.unwrap();
        let batched;
        (one, batched) = (tables(&db, &worlds[0]).await, tables(&db, &worlds[1]).await);
        for (a, b) in one.iter().zip(&batched) {
            assert_eq!(a, b, "after batch {k}");
        }
        // A position's cost basis is what its trades add up to, however they were delivered
        // (a position paid and then re-opened by a late trade aside).
        let off: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM positions p, LATERAL (
                 SELECT COALESCE(sum(CASE WHEN is_buy THEN amount + fee ELSE -(amount - fee) END) FILTER (WHERE side = 'yes'), 0)::BIGINT AS yes,
                        COALESCE(sum(CASE WHEN is_buy THEN amount + fee ELSE -(amount - fee) END) FILTER (WHERE side = 'no'), 0)::BIGINT AS no
                 FROM trades t WHERE t.market_id = p.market_id AND t.wallet = p.wallet) f
             WHERE NOT EXISTS (SELECT 1 FROM settlements s WHERE s.market_id = p.market_id AND s.wallet = p.wallet)
               AND (p.yes_basis, p.no_basis) IS DISTINCT FROM (f.yes, f.no)",
        )
        .fetch_one(&db)
        .await
        .unwrap();
        assert_eq!(off, 0, "cost bases after batch {k}");
    }
    assert!(one.iter().any(|r| r.starts_with("prices 0 [(")), "the deliveries made price points");
    assert!(one.iter().any(|r| r.starts_with("settled 0 ") && r.contains("Some(")), "the deliveries paid positions");
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM chain_events").fetch_one(&db).await.unwrap();
    assert_eq!(events, 2 * ledger.len() as i64, "every event recorded once in each world");
}

/// Trades caught up (one statement of a batch's transaction), applied ahead (a statement that is
/// its own transaction) and applied in the embedded chain's ledger write (part of the ledger's
/// statement) make the same stream events on every channel in the same order and
/// the same trader totals, all written by the tables' triggers and none by the trade statement,
/// over transactions of several trades each in two markets — positions new and old in one
/// statement, balances that change, stay the same or are stale, deliveries repeated.
#[sqlx::test(migrations = "../migrations")]
async fn every_way_of_applying_trades_streams_the_same_events(db: PgPool) {
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    // Each transaction's trades: (market, wallet, count in its market, balance after, no, sell, amount).
    let mut counts = [0u64; 2];
    let mut amount = 1_000_000u64;
    let mut ledger = Vec::new();
    for i in 0..50u64 {
        let trades: Vec<_> = (0..1 + next(5))
            .map(|_| {
                let market = next(2) as usize;
                counts[market] += 1;
                amount += 1 + next(1_000);
                (market, next(4) as usize, counts[market], 1_000 + next(3), next(3) == 0, next(4) == 0, amount)
            })
            .collect();
        ledger.push((trades, 100 + i, (i % 3) as u32));
    }
    let delivery = deliveries(ledger.len(), 15, 10, &mut next);

    let first = seed_market(&db).await;
    let mut worlds = Vec::new();
    for (n, name) in ["batched", "ahead", "in_ledger"].into_iter().enumerate() {
        worlds.push(
            World::new(&db, first, n as i32, name, &ledger, |trades, markets, wallets| {
                trades
                    .iter()
                    .map(|&(market, wallet, count, balance, no, sell, amount)| {
                        event_data(&ordered(trade(markets[market], wallets[wallet], count, count * 3, count * 7, balance), no, sell, amount))
                    })
                    .collect()
            })
            .await,
        );
    }

    // The markets' own events (inserted above) aside.
    let before: i64 = sqlx::query_scalar("SELECT COALESCE(max(id), 0) FROM stream_events").fetch_one(&db).await.unwrap();
    sqlx::query("CREATE TABLE ledger_rows (n INT)").execute(&db).await.unwrap();
    let projector = Projector::new(db.clone(), &funding_market::ID);
    for &i in &delivery {
        projector.apply_batch(std::slice::from_ref(&worlds[0].txs[i])).await.unwrap();
        projector.apply_ahead(&worlds[1].txs[i]).await.unwrap();
        // As the embedded chain's ledger write applies them: part of a statement of the
        // caller's, after its own rows and parameters (the ledger's).
        let mut arguments = PgArguments::default();
        arguments.add(i as i32).unwrap();
        let part = projector.in_ledger(&[&worlds[2].txs[i]], &mut arguments).unwrap().expect("a group of trades is applied in the ledger write");
        let sql = format!("WITH own AS (INSERT INTO ledger_rows (n) VALUES ($1) RETURNING n), {} SELECT (SELECT n FROM own), {}", part.ctes, part.applied);
        let (own, applied): (i32, bool) = sqlx::query_as_with(&sql, arguments).fetch_one(&db).await.unwrap();
        assert_eq!(own, i as i32, "the caller's own rows are written");
        assert!(applied, "the projection lock is free");
    }

    // Each world's stream, channel by channel in order, and its totals, with markets, wallets
    // and trades named by their index (a trade by its amount). Which of the world's events a
    // statement wrote itself (command 0 of its transaction) and which a trigger after it.
    async fn seen(db: &PgPool, world: &World, before: i64) -> (Vec<String>, Vec<String>, (i64, i64)) {
        let mut names: Vec<(String, String)> = Vec::new();
        for (m, (id, _)) in world.markets.iter().enumerate() {
            names.push((format!("market:{id}"), format!("market:{m}")));
            names.push((id.to_string(), format!("m{m}")));
        }
        for (w, wallet) in world.wallets.iter().enumerate() {
            names.push((format!("account:{wallet}"), format!("account:{w}")));
        }
        let channels: Vec<String> = names.iter().filter(|(from, _)| from.contains(':')).map(|(from, _)| from.clone()).collect();
        let events: Vec<(String, String, serde_json::Value, bool)> = sqlx::query_as(
            "SELECT x.event->>'channel', x.event->>'kind', x.event->'ref', e.cmin::TEXT = '0'
                 FROM stream_events e, jsonb_array_elements(e.events) WITH ORDINALITY AS x(event, n)
                 WHERE x.event->>'channel' = ANY($1) AND e.id > $2 ORDER BY 1, e.id, x.n",
        )
        .bind(&channels)
        .bind(before)
        .fetch_all(db)
        .await
        .unwrap();
        let amounts: Vec<(uuid::Uuid, i64)> = sqlx::query_as("SELECT id, amount FROM trades").fetch_all(db).await.unwrap();
        let name = |text: &str| names.iter().find(|(from, _)| from == text).map(|(_, to)| to.clone()).unwrap_or_else(|| text.to_string());
        let mut by_statement = (0, 0);
        let stream = events
            .iter()
            .map(|(channel, kind, reference, statement)| {
                *if *statement { &mut by_statement.0 } else { &mut by_statement.1 } += 1;
                let reference = match reference.get("trade_ids") {
                    Some(ids) => format!(
                        "{:?}",
                        ids.as_array()
                            .unwrap()
                            .iter()
                            .map(|id| amounts.iter().find(|(t, _)| t.to_string() == id.as_str().unwrap()).unwrap().1)
                            .collect::<Vec<_>>()
                    ),
                    None => reference.get("market_id").map(|id| name(id.as_str().unwrap())).unwrap_or_default(),
                };
                format!("{} {kind} {reference}", name(channel))
            })
            .collect::<Vec<_>>();
        // Channel by channel as the worlds name them (stable: each channel's own order kept).
        let mut stream = stream;
        stream.sort_by_key(|event| event.split(' ').next().unwrap().to_string());
        let wallets: Vec<String> = world.wallets.iter().map(|w| w.to_string()).collect();
        let totals: Vec<(String, i64, i64)> = sqlx::query_as("SELECT wallet, volume, trades FROM trader_totals WHERE wallet = ANY($1) ORDER BY wallet")
            .bind(&wallets)
            .fetch_all(db)
            .await
            .unwrap();
        let mut totals: Vec<String> = totals.iter().map(|(w, volume, trades)| format!("{} {volume} {trades}", name(&format!("account:{w}")))).collect();
        totals.sort();
        (stream, totals, by_statement)
    }
    let (batched, batched_totals, batched_writers) = seen(&db, &worlds[0], before).await;
    let (ahead, ahead_totals, ahead_writers) = seen(&db, &worlds[1], before).await;
    let (in_ledger, in_ledger_totals, in_ledger_writers) = seen(&db, &worlds[2], before).await;
    for (writers, way) in [(batched_writers, "caught up"), (ahead_writers, "applied ahead"), (in_ledger_writers, "in a ledger write")] {
        assert_eq!(writers.0, 0, "{way}, the triggers write every event");
        assert!(writers.1 > 0, "{way}, the triggers wrote events");
    }
    assert!(
        batched.iter().any(|e| e.contains(" positions")) && batched.iter().any(|e| e.contains(" balance")) && batched.iter().any(|e| e.contains(" market m"))
    );
    assert_eq!(batched.len(), ahead.len(), "{batched:#?}\n{ahead:#?}");
    for (a, b) in batched.iter().zip(&ahead) {
        assert_eq!(a, b, "{:#?}", batched.iter().zip(&ahead).filter(|(a, b)| a != b).take(10).collect::<Vec<_>>());
    }
    assert_eq!(batched_totals.len(), 4);
    assert_eq!(batched_totals, ahead_totals);
    assert_eq!(in_ledger, ahead, "in a ledger write as applied ahead");
    assert_eq!(in_ledger_totals, ahead_totals);
}

/// A market deleted (by hand: the service never deletes one) while a group of its trades is
/// applied ahead: the foreign key's check of the group's trade waits for the delete, then finds
/// the market gone and fails the group, so nothing references the deleted market; caught up,
/// the trade is kept as an event of an unknown market.
#[sqlx::test(migrations = "../migrations")]
async fn a_market_deleted_under_a_group_applied_ahead_is_not_referenced(db: PgPool) {
    let (market_id, market) = seed_linked_market(&db).await;
    let mut deleting = db.begin().await.unwrap();
    sqlx::query("DELETE FROM markets WHERE id = $1").bind(market_id).execute(&mut *deleting).await.unwrap();
    let projector = Projector::new(db.clone(), &funding_market::ID);
    let t = tx("sig-1", 1, vec![event_data(&trade(market, Pubkey::new_unique(), 1, 10, 10, 900))]);
    let applying = tokio::spawn({
        let (projector, t) = (projector.clone(), t.clone());
        async move { projector.apply_ahead(&t).await }
    });
    // It reaches the market and waits on the delete's row lock (without the lock it would
    // finish here, referencing the market the delete then removes). Waits in this test's
    // database only: the other tests share the server.
    let mut waited = false;
    for _ in 0..250 {
        waited = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock')")
            .fetch_one(&db)
            .await
            .unwrap();
        if waited || applying.is_finished() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(waited, "the group did not wait for the market's delete");
    deleting.commit().await.unwrap();
    let refused = applying.await.unwrap().expect_err("the market is gone");
    assert_eq!(refused.as_database_error().and_then(|e| e.code()).as_deref(), Some("23503"), "{refused}");
    projector.apply_batch(std::slice::from_ref(&t)).await.unwrap();
    let (events, referencing): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM chain_events),
                (SELECT count(*) FROM trades) + (SELECT count(*) FROM positions) + (SELECT count(*) FROM market_prices)",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!((events, referencing), (1, 0), "the trade kept as an event, nothing left referencing the deleted market");
}

/// A run of trades longer than one statement records (10,000) is applied as several: each
/// statement's stream row stays within what the WebSocket replicas remember to drop, and the
/// tables are what one statement would leave.
#[sqlx::test(migrations = "../migrations")]
async fn a_long_run_of_trades_is_several_statements(db: PgPool) {
    let (market_id, market) = seed_linked_market(&db).await;
    let wallet = Pubkey::new_unique();
    let projector = Projector::new(db.clone(), &funding_market::ID);
    let count = 10_001;
    let txs: Vec<_> = (1..=count).map(|n| tx(&format!("t{n}"), n + 10, vec![event_data(&trade(market, wallet, n, n, n, 1_000_000 - n))])).collect();
    assert_eq!(projector.apply_batch(&txs).await.unwrap(), count as usize);
    let rows: Vec<i64> = sqlx::query_scalar(
        "SELECT sum(jsonb_array_length(x.event->'ref'->'trade_ids'))::BIGINT
         FROM stream_events e, jsonb_array_elements(e.events) AS x(event) WHERE x.event->>'kind' = 'trade' GROUP BY e.id ORDER BY e.id",
    )
    .fetch_all(&db)
    .await
    .unwrap();
    assert_eq!(rows, [20_000, 2], "two rows: the market's and the trader's updates of 10,000 trades, then of one");
    let (trades, trade_count, yes_shares, balance): (i64, i32, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM trades), m.trade_count, p.yes_shares, b.balance
         FROM markets m, positions p, vault_balances b WHERE m.id = $1 AND p.market_id = m.id AND b.wallet = p.wallet",
    )
    .bind(market_id)
    .fetch_one(&db)
    .await
    .unwrap();
    let position_after_last = trade(market, wallet, count, count, count, 1_000_000 - count).position_yes as i64;
    assert_eq!((trades, trade_count, yes_shares, balance), (count as i64, count as i32, position_after_last, (1_000_000 - count) as i64));
}
