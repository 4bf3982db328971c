//! Ending rounds and paying them out on the embedded chain: a resolved round pays every winner
//! exactly 1 micro-USDC per micro-share and losers nothing; a void refunds every position
//! exactly what it paid; the crank, interrupted part-way, finishes without paying anyone twice;
//! a round no one traded settles off chain with nothing to pay.

use std::time::Duration;

use api::chain::{Crank, OnChain};
use api::domain::rate::FundingRate;
use api::services::settlement::{self, Verdict};
use api::services::{ServiceError, Services};
use chrono::Utc;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::helpers::*;
use crate::trading::{Trading, micros, open_market, trading};

pub struct Trader {
    pub wallet: String,
    pub token: String,
}

pub async fn trader(t: &Trading, usdc: &str) -> Trader {
    let key = wallet();
    let token = t.app.sign_in(&key).await;
    let wallet = address(&key);
    assert_eq!(t.faucet(&wallet, usdc).await.0, 200);
    Trader { wallet, token }
}

/// Buys and returns the micro-shares bought.
pub async fn buy(t: &Trading, who: &Trader, market: Uuid, side: &str, usdc: &str) -> i64 {
    let (status, body) = t.post(&format!("/v1/markets/{market}/trade"), &who.token, json!({"side": side, "usdc_amount": usdc})).await;
    assert_eq!(status, 200, "{body}");
    micros(&body["data"]["shares"])
}

pub async fn services(t: &Trading) -> Services {
    let onchain = OnChain::embedded(&t.chain, t.db.clone()).await.unwrap();
    state_with(config(), t.db.clone(), &redis_url()).with_onchain(onchain).services.clone()
}

/// The round past its settlement time, on chain and in Postgres (as the scheduler leaves it).
async fn reach_settlement(t: &Trading, market: Uuid) {
    t.chain.set_clock_offset(3_700);
    sqlx::query("UPDATE markets SET status = 'resolving' WHERE id = $1").bind(market).execute(&t.db).await.unwrap();
}

pub async fn balance(t: &Trading, who: &Trader) -> Value {
    t.get("/v1/users/me/balance", &who.token).await.1["data"].clone()
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_resolved_round_pays_each_winning_share_one_usdc(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let (a, b, c) = (trader(&t, "100").await, trader(&t, "100").await, trader(&t, "100").await);
    let market = open_market(&db, "open").await;
    let a_yes = buy(&t, &a, market, "yes", "10").await;
    assert!(buy(&t, &b, market, "no", "7").await > 0);
    let c_yes = buy(&t, &c, market, "yes", "3").await + buy(&t, &c, market, "yes", "2").await;
    let before = [t.vault(&a.wallet).await, t.vault(&b.wallet).await, t.vault(&c.wallet).await];
    let s = services(&t).await;

    let early = settlement::finalize(&s, market, Verdict::Settled(FundingRate(5)), Utc::now()).await;
    assert!(matches!(early, Err(ServiceError::MarketClosed(_))), "an open round is not finalized: {early:?}");
    reach_settlement(&t, market).await;
    settlement::finalize(&s, market, Verdict::Settled(FundingRate(5)), Utc::now()).await.unwrap();
    settlement::finalize(&s, market, Verdict::Settled(FundingRate(-5)), Utc::now()).await.unwrap(); // settled already: no change
    let shown: Value = t.app.get(&format!("/v1/markets/{market}")).await.json().await.unwrap();
    assert_eq!((shown["data"]["status"].as_str(), shown["data"]["outcome"].as_str()), (Some("settled"), Some("yes")), "{shown}");

    assert_eq!(settlement::pay_out(&s, market, Utc::now()).await.unwrap(), Crank::Closed);
    assert_eq!(t.vault(&a.wallet).await, before[0] + a_yes as u64, "1 micro-USDC per winning micro-share");
    assert_eq!(t.vault(&b.wallet).await, before[1], "the losing side gets nothing");
    assert_eq!(t.vault(&c.wallet).await, before[2] + c_yes as u64);
    for (who, vault) in [(&a, before[0] + a_yes as u64), (&b, before[1]), (&c, before[2] + c_yes as u64)] {
        let shown = balance(&t, who).await;
        assert_eq!((micros(&shown["usdc_balance"]) as u64, micros(&shown["locked_in_positions"])), (vault, 0), "the projection equals the chain");
    }
    assert!(t.chain.account(&funding_market::client::market_pda(market.as_bytes()).to_string()).await.unwrap().is_none(), "the market is closed");
    let paid_out: Option<chrono::DateTime<Utc>> =
        sqlx::query_scalar("SELECT paid_out_at FROM markets WHERE id = $1").bind(market).fetch_one(&db).await.unwrap();
    assert!(paid_out.is_some());
    // Again: nothing left to pay, nothing paid twice.
    assert_eq!(settlement::pay_out(&s, market, Utc::now()).await.unwrap(), Crank::Closed);
    assert_eq!(t.vault(&a.wallet).await, before[0] + a_yes as u64);
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_void_refunds_every_position_what_it_paid(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let (a, b) = (trader(&t, "100").await, trader(&t, "50").await);
    let market = open_market(&db, "open").await;
    buy(&t, &a, market, "yes", "10").await;
    buy(&t, &b, market, "no", "5").await;
    buy(&t, &b, market, "yes", "1.5").await;
    let s = services(&t).await;
    reach_settlement(&t, market).await;
    settlement::finalize(&s, market, Verdict::Void, Utc::now()).await.unwrap();
    let shown: Value = t.app.get(&format!("/v1/markets/{market}")).await.json().await.unwrap();
    assert_eq!(shown["data"]["status"], "voided", "{shown}");
    assert_eq!(settlement::pay_out(&s, market, Utc::now()).await.unwrap(), Crank::Closed);
    assert_eq!(t.vault(&a.wallet).await, 100_000_000, "the amount and the fee back");
    assert_eq!(t.vault(&b.wallet).await, 50_000_000);
    assert_eq!(balance(&t, &b).await, json!({"usdc_balance": "50.000000", "locked_in_positions": "0.000000", "total": "50.000000"}));
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn an_interrupted_crank_finishes_without_paying_twice(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let market = open_market(&db, "open").await;
    let mut traders = Vec::new();
    for i in 0..20 {
        let who = trader(&t, "20").await;
        let shares = buy(&t, &who, market, if i % 2 == 0 { "yes" } else { "no" }, "2").await;
        traders.push((who, shares));
    }
    let before: Vec<u64> = futures_util::future::join_all(traders.iter().map(|(w, _)| t.vault(&w.wallet))).await;
    let s = services(&t).await;
    reach_settlement(&t, market).await;
    settlement::finalize(&s, market, Verdict::Settled(FundingRate(-1)), Utc::now()).await.unwrap(); // NO wins
    // A crank that knew only some positions (as after a crash, or before the indexer caught up)
    // pays those and waits.
    let onchain = s.onchain.as_ref().unwrap();
    let some: Vec<_> = traders[..5].iter().map(|(w, _)| w.wallet.parse().unwrap()).collect();
    assert_eq!(onchain.crank(market, &some).await.unwrap(), Crank::Waiting { settled: 5, open: 15 });
    assert_eq!(onchain.crank(market, &some).await.unwrap(), Crank::Waiting { settled: 0, open: 15 }, "paid once");
    let ledger = || async { sqlx::query_scalar::<_, i64>("SELECT count(*) FROM embedded_ledger").fetch_one(&db).await.unwrap() };
    let sent_before = ledger().await;
    assert_eq!(settlement::pay_out(&s, market, Utc::now()).await.unwrap(), Crank::Closed);
    assert_eq!(ledger().await - sent_before, 2, "several positions per transaction");
    // The 15 positions left in as few transactions as the 1,232-byte limit allows, filled in
    // order: twelve custodial positions to a `settle_positions` (the operator pays the fee and
    // gets every rent back), then the last three with close_market riding along (every open
    // position was in hand). Each transaction also carries the memo, and no compute-unit limit
    // (the default covers them).
    let sent: Vec<Value> = sqlx::query_scalar("SELECT instructions FROM embedded_ledger ORDER BY seq DESC LIMIT 2").fetch_all(&db).await.unwrap();
    let program = funding_market::ID.to_string();
    let shape = |instructions: &Value| -> Vec<usize> {
        // Per program instruction, its accounts: settle_positions has 5 and a triple a position.
        instructions.as_array().unwrap().iter().filter(|ix| ix["program_id"] == program.as_str()).map(|ix| ix["accounts"].as_array().unwrap().len()).collect()
    };
    let close_accounts = 8;
    assert_eq!([shape(&sent[1]), shape(&sent[0])], [vec![5 + 3 * 12], vec![5 + 3 * 3, close_accounts]]);
    assert!(sent.iter().all(|tx| tx.as_array().unwrap().len() == shape(tx).len() + 1), "the memo and nothing else beside them");
    for (i, ((who, shares), before)) in traders.iter().zip(before).enumerate() {
        let won = if i % 2 == 1 { *shares as u64 } else { 0 };
        assert_eq!(t.vault(&who.wallet).await, before + won, "trader {i}");
    }
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_round_no_one_traded_settles_off_chain(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let market = open_market(&db, "resolving").await;
    let s = services(&t).await;
    settlement::finalize(&s, market, Verdict::Settled(FundingRate(0)), Utc::now()).await.unwrap();
    let shown: Value = t.app.get(&format!("/v1/markets/{market}")).await.json().await.unwrap();
    assert_eq!((shown["data"]["status"].as_str(), shown["data"]["outcome"].as_str()), (Some("settled"), Some("no")), "exactly 0 is NO: {shown}");
    let paid_out: Option<chrono::DateTime<Utc>> =
        sqlx::query_scalar("SELECT paid_out_at FROM markets WHERE id = $1").bind(market).fetch_one(&db).await.unwrap();
    assert!(paid_out.is_some(), "nothing to pay");
    assert!(
        sqlx::query_scalar::<_, Uuid>("SELECT id FROM markets WHERE paid_out_at IS NULL AND status IN ('settled','voided')")
            .fetch_all(&db)
            .await
            .unwrap()
            .is_empty()
    );
}

/// The oracle's pass ends its rounds together (`finalize_all`): several resolves in one
/// transaction; a round the chain refuses (here: its on-chain settlement time not reached) fails
/// alone, the transaction retried one round at a time; a round never traded settles off chain.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn rounds_finalized_together_fail_one_at_a_time(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let a = trader(&t, "100").await;
    let (due, early, untraded) = (open_market(&db, "open").await, open_market(&db, "open").await, open_market(&db, "open").await);
    // `early` settles two hours later on chain: still too early once the clock passes `due`'s.
    sqlx::query("UPDATE markets SET close_ts = close_ts + interval '2 hours', settlement_ts = settlement_ts + interval '2 hours' WHERE id = $1")
        .bind(early)
        .execute(&db)
        .await
        .unwrap();
    let a_yes = buy(&t, &a, due, "yes", "4").await as u64;
    buy(&t, &a, early, "yes", "4").await;
    let s = services(&t).await;
    t.chain.set_clock_offset(3_700);
    sqlx::query("UPDATE markets SET status = 'resolving'").execute(&db).await.unwrap();
    let before = t.vault(&a.wallet).await;

    let verdicts = [due, early, untraded].map(|id| (id, Verdict::Settled(FundingRate(7))));
    let results = settlement::finalize_all(&s, &verdicts, Utc::now()).await;
    let result = |id: Uuid| results.iter().find(|(r, _)| *r == id).map(|(_, r)| r.is_ok()).unwrap();
    assert_eq!((result(due), result(early), result(untraded)), (true, false, true), "{results:?}");
    let status = |id: Uuid| {
        let db = db.clone();
        async move { sqlx::query_scalar::<_, String>("SELECT status FROM markets WHERE id = $1").bind(id).fetch_one(&db).await.unwrap() }
    };
    assert_eq!((status(due).await, status(early).await, status(untraded).await), ("settled".into(), "resolving".into(), "settled".into()));
    assert_eq!(settlement::pay_out(&s, due, Utc::now()).await.unwrap(), Crank::Closed);
    assert_eq!(t.vault(&a.wallet).await, before + a_yes);
    // Once its time comes it ends like any other, and a repeat changes nothing.
    t.chain.set_clock_offset(3_700 + 7_200);
    let again = settlement::finalize_all(&s, &verdicts, Utc::now()).await;
    assert!(again.iter().all(|(_, r)| r.is_ok()), "{again:?}");
    assert_eq!(status(early).await, "settled");
}

/// `period=24h` is the last 24 hours, to the second: trades and settlements count while they
/// are younger than a day, whatever the UTC days (`7d` adds up whole days).
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn the_24_hour_leaderboard_is_the_last_24_hours(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let (a, b) = (trader(&t, "100").await, trader(&t, "100").await);
    let market = open_market(&db, "open").await;
    buy(&t, &a, market, "yes", "10").await;
    buy(&t, &b, market, "no", "7").await;
    let s = services(&t).await;
    reach_settlement(&t, market).await;
    settlement::finalize(&s, market, Verdict::Settled(FundingRate(5)), Utc::now()).await.unwrap();
    assert_eq!(settlement::pay_out(&s, market, Utc::now()).await.unwrap(), Crank::Closed);

    let board = |period: &'static str| {
        let app = &t.app;
        async move {
            // A new second: the 24-hour window moves with the clock.
            tokio::time::sleep(Duration::from_millis(1_100)).await;
            let body: Value = app.get(&format!("/v1/leaderboard?period={period}&limit=100")).await.json().await.unwrap();
            let entries = body["data"].as_array().unwrap().iter();
            entries
                .map(|e| (e["wallet_address"].as_str().unwrap().to_owned(), e["total_pnl"].clone(), e["total_volume"].clone(), e["win_rate"].clone()))
                .collect::<Vec<_>>()
        }
    };
    let all = board("all").await;
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(board("24h").await, all, "trades and the settlement of the last minute");
    let shift = |hours: i64| {
        let db = db.clone();
        async move {
            for table in [
                "UPDATE trades SET created_at = now() - make_interval(hours => $1::INT)",
                "UPDATE settlements SET at = now() - make_interval(hours => $1::INT)",
            ] {
                sqlx::query(table).bind(hours as i32).execute(&db).await.unwrap();
            }
        }
    };
    shift(23).await;
    assert_eq!(board("24h").await, all, "23 hours ago is within the window");
    shift(25).await;
    assert_eq!(board("24h").await, vec![], "25 hours ago is not, though the day's statistics are today's");
    assert_eq!(board("7d").await, all);
}
