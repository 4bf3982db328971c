//! The follow loop over a chain source: everything after the cursor, in order, once — and a
//! crash at any point resumes with no gap and no duplicate.

mod common;

use std::sync::Arc;
use std::time::Duration;

use anchor_lang::prelude::Pubkey;
use chain_client::ChainError;
use chain_client::{ChainSource, ConfirmedTransaction, SignatureInfo};
use common::*;
use funding_market::events::MarketCreated;
use indexer::follow::Indexer;
use indexer::projection::Projector;
use solana_instruction_error::InstructionError;
use solana_transaction_error::TransactionError;
use sqlx::PgPool;
use uuid::Uuid;

/// A source over an in-memory ledger (a stand-in for the RPC or embedded chain, which have
/// their own tests); `visible` limits how much of it has "confirmed" so far.
struct Ledger {
    txs: Vec<ConfirmedTransaction>,
    visible: std::sync::atomic::AtomicUsize,
    /// Every signature the source was asked for, in order.
    read: std::sync::Mutex<Vec<String>>,
}

/// The shared ledger as a source.
#[derive(Clone)]
struct Source(Arc<Ledger>);

impl ChainSource for Source {
    async fn signatures_after(&self, _: &str, cursor: Option<&str>) -> Result<Vec<SignatureInfo>, ChainError> {
        let visible = &self.0.txs[..self.0.visible.load(std::sync::atomic::Ordering::SeqCst)];
        let start = cursor.and_then(|c| visible.iter().position(|t| t.signature == c)).map_or(0, |i| i + 1);
        Ok(visible[start..]
            .iter()
            .map(|t| SignatureInfo { signature: t.signature.clone(), slot: t.slot, failed: t.err.is_some(), block_time: t.block_time })
            .collect())
    }

    async fn transaction(&self, signature: &str) -> Result<Option<ConfirmedTransaction>, ChainError> {
        tokio::task::yield_now().await;
        self.0.read.lock().unwrap().push(signature.to_owned());
        Ok(self.0.txs.iter().find(|t| t.signature == signature).cloned())
    }
}

/// A market's creation and then `n` trades, one per transaction; every 7th transaction failed.
fn ledger(market_id: Uuid, market: Pubkey, n: u64) -> Arc<Ledger> {
    let created = MarketCreated {
        market,
        market_id: *market_id.as_bytes(),
        series: [0; 32],
        open_ts: T,
        close_ts: T + 3300,
        settlement_ts: T + 3600,
        b: 200_000_000,
        q_yes: 0,
        q_no: 0,
        subsidy: 1,
        yes_price: 500_000,
        no_price: 500_000,
        ts: T,
    };
    let mut txs = vec![tx("create", 1, vec![event_data(&created)])];
    let wallet = Pubkey::new_unique();
    let mut count = 0;
    for i in 1..=n {
        let mut t = tx(&format!("trade-{i}"), 1 + i, vec![event_data(&trade(market, wallet, count + 1, (count + 1) * 10, (count + 1) * 10, 1_000))]);
        if i % 7 == 0 {
            t.err = Some(TransactionError::InstructionError(0, InstructionError::Custom(6010)));
        } else {
            count += 1;
        }
        txs.push(t);
    }
    let visible = std::sync::atomic::AtomicUsize::new(txs.len());
    Arc::new(Ledger { txs, visible, read: Default::default() })
}

async fn state(db: &PgPool, market_id: Uuid) -> (i64, i64, i32, i64) {
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM chain_events").fetch_one(db).await.unwrap();
    let trades: i64 = sqlx::query_scalar("SELECT count(*) FROM trades").fetch_one(db).await.unwrap();
    let (count, q): (i32, i64) = sqlx::query_as("SELECT trade_count, q_yes FROM markets WHERE id = $1").bind(market_id).fetch_one(db).await.unwrap();
    (events, trades, count, q)
}

/// Applies the ledger's transactions `signatures` ahead, in that order, as their sender would.
async fn apply_ahead(projector: &Projector, source: &Ledger, signatures: &[&str]) {
    for signature in signatures {
        projector.apply_ahead(source.txs.iter().find(|t| t.signature == *signature).unwrap()).await.unwrap();
    }
}

/// Runs `indexer`'s follow loop (a pass an hour, no confirmations: only what the test does
/// wakes it) until the returned sender is used or dropped.
fn follow_in_background(indexer: &Arc<Indexer<Source>>) -> (tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let indexer = indexer.clone();
    let following = tokio::spawn(async move { indexer.follow(Duration::from_secs(3600), None, async { stopped.await.unwrap_or(()) }).await });
    (stop, following)
}

/// The stored cursor once it is `signature`, polled for up to 30 s (else the last one read).
async fn stored_cursor_reaching(projector: &Projector, signature: &str) -> Option<String> {
    let mut cursor = None;
    for _ in 0..3_000 {
        cursor = projector.cursor().await.unwrap();
        if cursor.as_deref() == Some(signature) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cursor
}

#[sqlx::test(migrations = "../migrations")]
async fn follows_new_transactions_as_they_confirm(db: PgPool) {
    let market_id = seed_market(&db).await;
    let source = ledger(market_id, Pubkey::new_unique(), 20);
    source.visible.store(8, std::sync::atomic::Ordering::SeqCst);
    let program = funding_market::ID.to_string();
    let indexer = Indexer::new(Source(source.clone()), Projector::new(db.clone(), &funding_market::ID), &program);
    let first = indexer.run_once().await.unwrap();
    assert_eq!((first.transactions, first.events), (8, 7), "creation + 6 trades; the 7th trade failed");
    assert_eq!(indexer.run_once().await.unwrap().transactions, 0, "nothing new");
    source.visible.store(21, std::sync::atomic::Ordering::SeqCst);
    let second = indexer.run_once().await.unwrap();
    assert_eq!(second.transactions, 13);
    assert_eq!(state(&db, market_id).await, (1 + 18, 18, 18, 180));
}

/// What the service applied ahead with the indexer's own projector is passed without being read
/// (or recorded again), the cursor moving past it; the projection ends as if all were read.
#[sqlx::test(migrations = "../migrations")]
async fn what_was_applied_ahead_is_passed_unread(db: PgPool) {
    let market_id = seed_market(&db).await;
    let source = ledger(market_id, Pubkey::new_unique(), 20);
    let program = funding_market::ID.to_string();
    let projector = Projector::new(db.clone(), &funding_market::ID);
    // The market's creation first (as the service creates it before trading it), then trades
    // out of order, a failed one among them, and the last (the cursor must still reach it).
    let ahead = ["create", "trade-5", "trade-3", "trade-7", "trade-20"];
    apply_ahead(&projector, &source, &ahead).await;
    // The cursor written by every pass, so the test can see where each left it.
    let indexer = Indexer::new(Source(source.clone()), projector.clone(), &program).with_batch(6).with_cursor_every(Duration::ZERO);
    let progress = indexer.run_once().await.unwrap();
    assert_eq!(progress.transactions, 21, "every listed transaction passed");
    let read = source.read.lock().unwrap().clone();
    let expected: Vec<String> = source.txs.iter().map(|t| t.signature.clone()).filter(|s| !ahead.contains(&s.as_str())).collect();
    assert_eq!(read, expected, "read in order, none applied ahead");
    assert_eq!(projector.cursor().await.unwrap().as_deref(), Some("trade-20"));
    assert_eq!(state(&db, market_id).await, (1 + 18, 18, 18, 180));
    assert_eq!(indexer.run_once().await.unwrap().transactions, 0, "nothing new");

    // A projector that did not apply them (another process's) reads everything.
    let other = Projector::new(db.clone(), &funding_market::ID);
    sqlx::query("DELETE FROM chain_cursor").execute(&db).await.unwrap();
    source.read.lock().unwrap().clear();
    assert_eq!(
        Indexer::new(Source(source.clone()), other, &program).run_once().await.unwrap(),
        indexer::follow::Progress { transactions: 21, events: 0, waits_for_sender: false }
    );
    assert_eq!(source.read.lock().unwrap().len(), 21);
    assert_eq!(state(&db, market_id).await, (1 + 18, 18, 18, 180));
}

/// Passes that only pass transactions applied ahead (nearly every pass of a process that
/// trades), or read and apply a few (`FOLLOWING_BATCH`: following the chain), move the cursor in
/// memory and write it at most every `cursor_every` (an hour here), and when the follow loop
/// stops; a catch-up batch writes it with its projection. Nothing is read twice either way.
#[sqlx::test(migrations = "../migrations")]
async fn passes_following_the_chain_write_the_cursor_lazily(db: PgPool) {
    let market_id = seed_market(&db).await;
    let source = ledger(market_id, Pubkey::new_unique(), 9);
    let program = funding_market::ID.to_string();
    let projector = Projector::new(db.clone(), &funding_market::ID);
    let indexer = Arc::new(Indexer::new(Source(source.clone()), projector.clone(), &program).with_cursor_every(Duration::from_secs(3600)));
    let ahead = |signatures: &'static [&'static str]| apply_ahead(&projector, &source, signatures);
    let stored = || async { projector.cursor().await.unwrap() };
    let visible = |n: usize| source.visible.store(n, std::sync::atomic::Ordering::SeqCst);

    visible(2);
    ahead(&["create", "trade-1"]).await;
    assert_eq!(indexer.run_once().await.unwrap().transactions, 2);
    assert_eq!(stored().await.as_deref(), Some("trade-1"), "the first write is due at once");
    visible(4);
    ahead(&["trade-2", "trade-3"]).await;
    assert_eq!(indexer.run_once().await.unwrap().transactions, 2);
    assert_eq!(stored().await.as_deref(), Some("trade-1"), "not due: in memory only");
    assert_eq!(indexer.run_once().await.unwrap().transactions, 0, "the next pass starts past what was passed");
    assert!(source.read.lock().unwrap().is_empty(), "nothing read");

    // A pass that reads a few (trade-4 to 6, applied by nobody) applies them and leaves the
    // cursor in memory too.
    visible(7);
    assert_eq!(indexer.run_once().await.unwrap(), indexer::follow::Progress { transactions: 3, events: 3, waits_for_sender: false });
    assert_eq!(stored().await.as_deref(), Some("trade-1"), "not due: in memory only");
    assert_eq!(*source.read.lock().unwrap(), ["trade-4", "trade-5", "trade-6"]);

    // Passed by the follow loop, not due: written when the loop stops.
    visible(9);
    ahead(&["trade-7", "trade-8"]).await;
    let (stop, following) = follow_in_background(&indexer);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(stored().await.as_deref(), Some("trade-1"), "passed, not yet written");
    let _ = stop.send(());
    following.await.unwrap();
    assert_eq!(stored().await.as_deref(), Some("trade-8"));
    assert_eq!(source.read.lock().unwrap().len(), 3, "nothing read twice, nothing applied ahead read");
    assert_eq!(state(&db, market_id).await, (1 + 7, 7, 7, 70));

    // A restart from a stored cursor behind what was applied (a crash before it was written)
    // re-reads those transactions and finds their events recorded: nothing changes.
    let restarted = Indexer::new(Source(source.clone()), Projector::new(db.clone(), &funding_market::ID), &program);
    sqlx::query("UPDATE chain_cursor SET signature = 'trade-1', slot = 2").execute(&db).await.unwrap();
    assert_eq!(restarted.run_once().await.unwrap(), indexer::follow::Progress { transactions: 7, events: 0, waits_for_sender: false });
    assert_eq!(state(&db, market_id).await, (1 + 7, 7, 7, 70));
}

/// A batch larger than `FOLLOWING_BATCH` is catching up: it moves the stored cursor in its own
/// commit, however long until the cursor of small passes falls due.
#[sqlx::test(migrations = "../migrations")]
async fn a_catch_up_batch_writes_the_cursor_with_its_projection(db: PgPool) {
    let market_id = seed_market(&db).await;
    let n = indexer::follow::FOLLOWING_BATCH as u64 + 10;
    let source = ledger(market_id, Pubkey::new_unique(), n);
    let program = funding_market::ID.to_string();
    let projector = Projector::new(db.clone(), &funding_market::ID);
    let indexer = Indexer::new(Source(source.clone()), projector.clone(), &program).with_cursor_every(Duration::from_secs(3600));
    source.visible.store(2, std::sync::atomic::Ordering::SeqCst);
    indexer.run_once().await.unwrap();
    assert_eq!(projector.cursor().await.unwrap().as_deref(), Some("trade-1"), "the first write is due at once");
    source.visible.store(source.txs.len(), std::sync::atomic::Ordering::SeqCst);
    assert_eq!(indexer.run_once().await.unwrap().transactions as u64, n - 1);
    assert_eq!(projector.cursor().await.unwrap(), Some(format!("trade-{n}")));
    let trades = n - n / 7;
    assert_eq!(state(&db, market_id).await, (1 + trades as i64, trades as i64, trades as i32, trades as i64 * 10));
}

/// A cursor passed and left unwritten is written when it falls due even if nothing wakes the
/// follow loop again (its next pass is an hour away): a process whose trading stops does not
/// keep it in memory until it stops.
#[sqlx::test(migrations = "../migrations")]
async fn a_cursor_left_unwritten_is_written_when_due_while_idle(db: PgPool) {
    let market_id = seed_market(&db).await;
    let source = ledger(market_id, Pubkey::new_unique(), 3);
    let program = funding_market::ID.to_string();
    let projector = Projector::new(db.clone(), &funding_market::ID);
    let indexer = Arc::new(Indexer::new(Source(source.clone()), projector.clone(), &program).with_cursor_every(Duration::from_secs(2)));
    let visible = |n: usize| source.visible.store(n, std::sync::atomic::Ordering::SeqCst);

    visible(2);
    apply_ahead(&projector, &source, &["create", "trade-1"]).await;
    indexer.run_once().await.unwrap();
    visible(4);
    apply_ahead(&projector, &source, &["trade-2", "trade-3"]).await;
    assert_eq!(indexer.run_once().await.unwrap().transactions, 2);
    assert_eq!(projector.cursor().await.unwrap().as_deref(), Some("trade-1"), "within two seconds of the last write: in memory");

    let (stop, following) = follow_in_background(&indexer);
    assert_eq!(stored_cursor_reaching(&projector, "trade-3").await.as_deref(), Some("trade-3"), "written while the loop waits");
    assert!(!following.is_finished());
    let _ = stop.send(());
    following.await.unwrap();
    assert!(source.read.lock().unwrap().is_empty(), "nothing read");
}

/// A transaction this process is still sending is left to its sender: the pass stops before
/// it, and the follow loop (with no other wake-up due for an hour) resumes as soon as the sender
/// has applied it, passing it unread.
#[sqlx::test(migrations = "../migrations")]
async fn a_transaction_being_sent_is_left_to_its_sender(db: PgPool) {
    let market_id = seed_market(&db).await;
    let source = ledger(market_id, Pubkey::new_unique(), 10);
    let program = funding_market::ID.to_string();
    let projector = Projector::new(db.clone(), &funding_market::ID);
    let sending = projector.sending("trade-4");
    let indexer = Arc::new(Indexer::new(Source(source.clone()), projector.clone(), &program));
    let first = indexer.run_once().await.unwrap();
    assert_eq!((first.transactions, first.waits_for_sender), (4, true), "the creation and three trades, then trade-4 is left");
    assert_eq!(projector.cursor().await.unwrap().as_deref(), Some("trade-3"));
    assert_eq!(*source.read.lock().unwrap(), ["create", "trade-1", "trade-2", "trade-3"]);

    let (stop, following) = follow_in_background(&indexer);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(projector.cursor().await.unwrap().as_deref(), Some("trade-3"), "still left to the sender");
    projector.apply_ahead(&source.txs[4]).await.unwrap();
    drop(sending);
    assert_eq!(stored_cursor_reaching(&projector, "trade-10").await.as_deref(), Some("trade-10"), "woken by the sender, not by the hourly pass");
    let _ = stop.send(());
    following.await.unwrap();
    assert!(!source.read.lock().unwrap().iter().any(|s| s == "trade-4"), "applied by its sender, never read");
    assert_eq!(state(&db, market_id).await, (1 + 9, 9, 9, 90));
}

/// The indexer task is killed at arbitrary points (between and inside database transactions)
/// and restarted; it ends exactly where an uninterrupted run ends.
#[sqlx::test(migrations = "../migrations")]
async fn a_crash_at_any_point_loses_and_repeats_nothing(db: PgPool) {
    let market_id = seed_market(&db).await;
    let source = ledger(market_id, Pubkey::new_unique(), 300);
    let program = funding_market::ID.to_string();
    for (i, kill_after_ms) in [3u64, 7, 11, 2, 13, 5, 17, 4, 9, 6].into_iter().enumerate() {
        let (task_db, source, program) = (db.clone(), source.clone(), program.clone());
        let task = tokio::spawn(async move {
            // Small batches, so kills land between and inside database transactions.
            Indexer::new(Source(source), Projector::new(task_db, &funding_market::ID), &program).with_batch(7).run_once().await.unwrap();
        });
        if i == 0 {
            // However loaded the machine, the first run is killed only once it has committed
            // something (so the runs are known to make progress), and mid-way.
            for _ in 0..5_000 {
                let events: i64 = sqlx::query_scalar("SELECT count(*) FROM chain_events").fetch_one(&db).await.unwrap();
                if events > 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(kill_after_ms)).await;
        task.abort();
        let _ = task.await;
    }
    let progress: i64 = sqlx::query_scalar("SELECT count(*) FROM chain_events").fetch_one(&db).await.unwrap();
    let trades = 300 - 300 / 7;
    assert!(progress > 0, "the interrupted runs made progress");
    assert!(progress < 1 + trades as i64, "and were really interrupted before the end");
    Indexer::new(Source(source.clone()), Projector::new(db.clone(), &funding_market::ID), &program).run_once().await.unwrap();
    assert_eq!(state(&db, market_id).await, (1 + trades as i64, trades as i64, trades, trades as i64 * 10));
    assert_eq!(Projector::new(db.clone(), &funding_market::ID).cursor().await.unwrap().as_deref(), Some("trade-300"));
}

/// A source that lists one signature it cannot return yet (a node that has not caught up).
#[derive(Clone)]
struct Withholding(Source, &'static str);

impl ChainSource for Withholding {
    async fn signatures_after(&self, program: &str, cursor: Option<&str>) -> Result<Vec<SignatureInfo>, ChainError> {
        self.0.signatures_after(program, cursor).await
    }

    async fn transaction(&self, signature: &str) -> Result<Option<ConfirmedTransaction>, ChainError> {
        if signature == self.1 { Ok(None) } else { self.0.transaction(signature).await }
    }
}

/// A pass that meets a transaction the node cannot return yet applies everything before it
/// (batches fetched while earlier ones are applied included) and nothing after; the next pass
/// resumes there.
#[sqlx::test(migrations = "../migrations")]
async fn a_transaction_not_yet_available_ends_the_pass_before_it(db: PgPool) {
    let market_id = seed_market(&db).await;
    let source = ledger(market_id, Pubkey::new_unique(), 30);
    let program = funding_market::ID.to_string();
    let projector = || Projector::new(db.clone(), &funding_market::ID);
    let withheld = Indexer::new(Withholding(Source(source.clone()), "trade-18"), projector(), &program).with_batch(4).with_cursor_every(Duration::ZERO);
    match withheld.run_once().await {
        Err(indexer::follow::FollowError::NotYetAvailable(signature)) => assert_eq!(signature, "trade-18"),
        other => panic!("expected the pass to stop at trade-18, got {other:?}"),
    }
    assert_eq!(projector().cursor().await.unwrap().as_deref(), Some("trade-17"));
    // Trades 1..=17 less the failed 7th and 14th.
    assert_eq!(state(&db, market_id).await, (1 + 15, 15, 15, 150));
    let rest = Indexer::new(Source(source), projector(), &program).with_batch(4).run_once().await.unwrap();
    assert_eq!(rest.transactions, 13);
    assert_eq!(state(&db, market_id).await, (1 + 26, 26, 26, 260));
}
