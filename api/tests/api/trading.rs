//! Custodial trading on the embedded chain with real keys: faucet, deposit address, buys and
//! sells through the program, idempotency, the refusals, balances that equal the chain, and
//! many simultaneous trades from one user that can afford only a few.

use std::time::Duration;

use api::app::config::default_series;
use api::chain::OnChain;
use api::store::series;
use chrono::{DateTime, Utc};
use funding_market::client;
use localnet::EmbeddedChain;
use localnet::GenesisParams;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::helpers::*;

pub struct Trading {
    pub app: TestApp,
    pub chain: EmbeddedChain,
    pub db: PgPool,
}

pub async fn trading(db: &PgPool, request_timeout: Duration) -> Trading {
    let mut config = config();
    config.http.request_timeout = request_timeout;
    trading_with(db, config).await
}

/// `trading` with a configuration of the test's own.
pub async fn trading_with(db: &PgPool, config: api::app::config::Config) -> Trading {
    series::ensure(db, &default_series()).await.unwrap();
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let onchain = OnChain::embedded(&chain, db.clone()).await.unwrap();
    let app = spawn(state_with(config, db.clone(), &redis_url()).with_onchain(onchain)).await;
    Trading { app, chain, db: db.clone() }
}

/// An open market of `binance-btcusdt` (b = 100 USDC, prior 0.5) closing in 55 minutes.
pub async fn open_market(db: &PgPool, status: &str) -> Uuid {
    let now = Utc::now();
    insert_round(db, "binance-btcusdt", now - chrono::Duration::minutes(5), now + chrono::Duration::minutes(55), now + chrono::Duration::minutes(60), status)
        .await
}

/// A round of series `slug` as the scheduler makes it (b = 100 USDC, prior 0.5), with its
/// program address, in `status`.
pub async fn insert_round(db: &PgPool, slug: &str, open: DateTime<Utc>, close: DateTime<Utc>, settlement: DateTime<Utc>, status: &str) -> Uuid {
    let id = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO markets (id, series_id, round_number, open_ts, close_ts, settlement_ts, status, liquidity_b, q_yes, q_no,
                              yes_price_ppm, ou_prior_ppm, ou_confidence_ppm, onchain_address)
         SELECT $1, s.id, (SELECT coalesce(max(round_number), 0) + 1 FROM markets), $3, $4, $5, $6, 100000000, 0, 0, 500000, 500000, 0, $7
         FROM series s WHERE s.slug = $2",
    )
    .bind(id)
    .bind(slug)
    .bind(open)
    .bind(close)
    .bind(settlement)
    .bind(status)
    .bind(client::market_pda(id.as_bytes()).to_string())
    .execute(db)
    .await
    .unwrap();
    id
}

impl Trading {
    /// A request with the caller's token and, as a careful client sends on every request, fresh
    /// anti-replay headers (endpoints that do not check them ignore them).
    pub async fn call(&self, method: reqwest::Method, path: &str, token: &str, body: Option<Value>, key: Option<&str>) -> (u16, Value) {
        let mut request = self
            .app
            .http
            .request(method, format!("{}{path}", self.app.base))
            .bearer_auth(token)
            .header("x-request-nonce", uuid::Uuid::new_v4().simple().to_string())
            .header("x-request-timestamp", chrono::Utc::now().timestamp().to_string());
        if let Some(body) = body {
            request = request.json(&body);
        }
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        let response = request.send().await.unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, token, Some(body), None).await
    }

    pub async fn get(&self, path: &str, token: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, token, None, None).await
    }

    /// The wallet's vault on chain, micro-USDC.
    pub async fn vault(&self, wallet: &str) -> u64 {
        let vault = client::vault_pda(&wallet.parse().unwrap());
        let account = self.chain.account(&vault.to_string()).await.unwrap().unwrap();
        token_amount(&account.data)
    }

    pub async fn faucet(&self, wallet: &str, amount: &str) -> (u16, Value) {
        let r = self.app.post_json("/v1/dev/faucet", json!({"wallet_address": wallet, "amount": amount})).await;
        (r.status().as_u16(), r.json().await.unwrap())
    }
}

pub fn micros(v: &Value) -> i64 {
    let s = v.as_str().unwrap_or_else(|| panic!("not a decimal string: {v}"));
    let (sign, digits) = s.strip_prefix('-').map_or((1, s), |rest| (-1, rest));
    let (int, frac) = digits.split_once('.').unwrap();
    sign * (int.parse::<i64>().unwrap() * 1_000_000 + frac.parse::<i64>().unwrap())
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_trader_funds_buys_and_sells_through_the_program(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let key = wallet();
    let wallet = address(&key);
    let token = t.app.sign_in(&key).await;

    let (status, deposit) = t.get("/v1/deposit/address", &token).await;
    assert_eq!(status, 200, "{deposit}");
    assert_eq!(deposit["data"]["address"], client::deposit_pda(&wallet.parse().unwrap()).to_string());
    assert_eq!(
        (deposit["data"]["chain"].as_str(), deposit["data"]["token"].as_str(), deposit["data"]["min_deposit"].as_str()),
        (Some("solana"), Some("USDC"), Some("1.00"))
    );

    let (status, funded) = t.faucet(&wallet, "100").await;
    assert_eq!(status, 200, "{funded}");
    assert_eq!(funded["data"]["usdc_balance"], "100.000000");
    let (_, balance) = t.get("/v1/users/me/balance", &token).await;
    assert_eq!(balance["data"], json!({"usdc_balance": "100.000000", "locked_in_positions": "0.000000", "total": "100.000000"}));

    let market = open_market(&db, "open").await;
    // The market row is held in memory; the trader reads its own trades in it at once, without
    // the notice other processes wait for (switched off here to show it).
    sqlx::query("ALTER TABLE markets DISABLE TRIGGER notify_market_terms_update").execute(&db).await.unwrap();
    let shown = || async { t.app.get(&format!("/v1/markets/{market}")).await.json::<Value>().await.unwrap()["data"].clone() };
    assert_eq!(shown().await["trade_count"], 0);
    let (status, bought) = t.post(&format!("/v1/markets/{market}/trade"), &token, json!({"side": "yes", "usdc_amount": "10"})).await;
    assert_eq!(status, 200, "{bought}");
    let trade = &bought["data"];
    let after = shown().await;
    assert_eq!((&after["trade_count"], &after["yes_price"], &after["total_volume"]), (&json!(1), &trade["new_yes_price"], &json!("10.000000")));
    // Held now (the first read may have come before the listener was up): a change no notice
    // announces is not shown.
    let waiting = std::time::Instant::now();
    loop {
        let before = shown().await;
        sqlx::query("UPDATE markets SET ou_confidence_ppm = ou_confidence_ppm + 1 WHERE id = $1").bind(market).execute(&db).await.unwrap();
        if shown().await == before {
            break;
        }
        assert!(waiting.elapsed() < Duration::from_secs(2), "the market row is never held");
    }
    assert_eq!((trade["side"].as_str(), trade["cost_usdc"].as_str(), trade["fee_usdc"].as_str()), (Some("yes"), Some("10.000000"), Some("0.100000")));
    assert!(micros(&trade["shares"]) > 10_000_000, "at 0.5 a share, 10 USDC buys more than 10 shares");
    assert!(micros(&trade["new_yes_price"]) > 500_000);
    assert_eq!(micros(&trade["new_yes_price"]) + micros(&trade["new_no_price"]), 1_000_000);
    let (_, balance) = t.get("/v1/users/me/balance", &token).await;
    assert_eq!(balance["data"], json!({"usdc_balance": "89.900000", "locked_in_positions": "10.100000", "total": "100.000000"}));
    assert_eq!(t.vault(&wallet).await, 89_900_000, "the projection equals the chain");
    let listed: Value = t.app.get(&format!("/v1/markets/{market}/trades")).await.json().await.unwrap();
    assert_eq!(listed["data"][0]["trade_id"], trade["trade_id"]);

    // Selling half the shares, then more than are left.
    let half = micros(&trade["shares"]) / 2;
    let half = format!("{}.{:06}", half / 1_000_000, half % 1_000_000);
    let (status, sold) = t.post(&format!("/v1/markets/{market}/sell"), &token, json!({"side": "yes", "shares": half})).await;
    assert_eq!(status, 200, "{sold}");
    assert!(micros(&sold["data"]["new_yes_price"]) < micros(&trade["new_yes_price"]));
    let after = shown().await;
    assert_eq!((&after["trade_count"], &after["yes_price"]), (&json!(2), &sold["data"]["new_yes_price"]));
    let (status, too_many) = t.post(&format!("/v1/markets/{market}/sell"), &token, json!({"side": "yes", "shares": "1000"})).await;
    assert_eq!((status, too_many["error"]["code"].as_str()), (422, Some("INSUFFICIENT_SHARES")));
    let (status, none_held) = t.post(&format!("/v1/markets/{market}/sell"), &token, json!({"side": "no", "shares": "1"})).await;
    assert_eq!((status, none_held["error"]["code"].as_str()), (422, Some("INSUFFICIENT_SHARES")));
    let onchain_vault = t.vault(&wallet).await;
    let (_, balance) = t.get("/v1/users/me/balance", &token).await;
    assert_eq!(micros(&balance["data"]["usdc_balance"]) as u64, onchain_vault);

    // Refusals.
    let path = format!("/v1/markets/{market}/trade");
    for (body, status, code) in [
        (json!({"side": "maybe", "usdc_amount": "5"}), 400, "INVALID_INPUT"),
        (json!({"side": "yes", "usdc_amount": "0.5"}), 400, "INVALID_INPUT"),
        (json!({"side": "yes", "usdc_amount": "-5"}), 400, "INVALID_INPUT"),
        (json!({"side": "yes", "usdc_amount": "1.0000001"}), 400, "INVALID_INPUT"),
        (json!({"side": "yes", "usdc_amount": 5}), 400, "INVALID_INPUT"),
        (json!({"side": "yes"}), 400, "INVALID_INPUT"),
        (json!({"side": "yes", "usdc_amount": "5", "leverage": "10"}), 400, "INVALID_INPUT"),
        (json!({"side": "yes", "usdc_amount": "500"}), 422, "INSUFFICIENT_BALANCE"),
        (json!({"side": "yes", "usdc_amount": "18446744073709.551615"}), 422, "INSUFFICIENT_BALANCE"),
        (json!({"side": "yes", "usdc_amount": "5", "min_shares": "1000"}), 422, "SLIPPAGE_EXCEEDED"),
    ] {
        let (got, body) = t.post(&path, &token, body.clone()).await;
        assert_eq!((got, body["error"]["code"].as_str()), (status, Some(code)), "{body}");
    }
    let closed = open_market(&db, "closed").await;
    let (status, body) = t.post(&format!("/v1/markets/{closed}/trade"), &token, json!({"side": "no", "usdc_amount": "5"})).await;
    assert_eq!((status, body["error"]["code"].as_str()), (422, Some("MARKET_CLOSED")));
    let (status, body) = t.post(&format!("/v1/markets/{}/trade", Uuid::new_v4()), &token, json!({"side": "no", "usdc_amount": "5"})).await;
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("NOT_FOUND")));
    let anonymous = t.app.post_json(&path, json!({"side": "no", "usdc_amount": "5"})).await;
    assert_eq!(anonymous.status().as_u16(), 401);
    assert_eq!(t.vault(&wallet).await, onchain_vault, "no refusal moved money");
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn an_idempotency_key_trades_once(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let key = wallet();
    let wallet = address(&key);
    let token = t.app.sign_in(&key).await;
    t.faucet(&wallet, "50").await;
    let market = open_market(&db, "open").await;
    let path = format!("/v1/markets/{market}/trade");
    let body = json!({"side": "no", "usdc_amount": "5"});

    let (status, first) = t.call(reqwest::Method::POST, &path, &token, Some(body.clone()), Some("order-1")).await;
    assert_eq!(status, 200, "{first}");
    let (status, again) = t.call(reqwest::Method::POST, &path, &token, Some(body.clone()), Some("order-1")).await;
    assert_eq!((status, &again), (200, &first), "the same answer, not a second trade");
    assert_eq!(t.vault(&wallet).await, 50_000_000 - 5_050_000);
    let (status, other) = t.call(reqwest::Method::POST, &path, &token, Some(json!({"side": "no", "usdc_amount": "6"})), Some("order-1")).await;
    assert_eq!((status, other["error"]["code"].as_str()), (409, Some("IDEMPOTENCY_KEY_REUSED")));
    // A refusal is an answer too: replayed, not retried.
    let (status, refused) = t.call(reqwest::Method::POST, &path, &token, Some(json!({"side": "no", "usdc_amount": "45"})), Some("order-2")).await;
    assert_eq!((status, refused["error"]["code"].as_str()), (422, Some("INSUFFICIENT_BALANCE")));
    t.faucet(&wallet, "100").await;
    let (status, replayed) = t.call(reqwest::Method::POST, &path, &token, Some(json!({"side": "no", "usdc_amount": "45"})), Some("order-2")).await;
    assert_eq!((status, replayed), (422, refused));
    // Keys are per user: another user's "order-1" is theirs.
    let other_key = wallet_key_funded(&t, "20").await;
    let (status, theirs) = t.call(reqwest::Method::POST, &path, &other_key, Some(body), Some("order-1")).await;
    assert_eq!(status, 200, "{theirs}");
    assert_ne!(theirs["data"]["trade_id"], first["data"]["trade_id"]);
    for bad in ["", "has space", &"k".repeat(256)] {
        let (status, body) = t.call(reqwest::Method::POST, &path, &token, Some(json!({"side": "no", "usdc_amount": "1"})), Some(bad)).await;
        assert_eq!((status, body["error"]["code"].as_str()), (400, Some("INVALID_INPUT")), "{bad:?}");
    }
}

async fn wallet_key_funded(t: &Trading, usdc: &str) -> String {
    let key = wallet();
    let token = t.app.sign_in(&key).await;
    assert_eq!(t.faucet(&address(&key), usdc).await.0, 200);
    token
}

/// 500 simultaneous 1-USDC buys from one user whose balance covers exactly 10 (fees included):
/// exactly 10 succeed, the rest are refused for the balance, and Postgres equals the vault.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn simultaneous_trades_never_overdraw(db: PgPool) {
    let t = trading(&db, Duration::from_secs(120)).await;
    let key = wallet();
    let wallet = address(&key);
    let token = t.app.sign_in(&key).await;
    assert_eq!(t.faucet(&wallet, "10.1").await.0, 200);
    let market = open_market(&db, "open").await;
    let url = format!("{}/v1/markets/{market}/trade", t.app.base);
    let tasks: Vec<_> = (0..500)
        .map(|_| {
            let (http, url, token) = (t.app.http.clone(), url.clone(), token.clone());
            tokio::spawn(async move {
                let r = http.post(url).bearer_auth(token).json(&json!({"side": "yes", "usdc_amount": "1"})).send().await.unwrap();
                let status = r.status().as_u16();
                let body: Value = r.json().await.unwrap();
                (status, body["error"]["code"].as_str().unwrap_or("").to_owned())
            })
        })
        .collect();
    let mut ok = 0;
    for task in tasks {
        match task.await.unwrap() {
            (200, _) => ok += 1,
            (422, code) if code == "INSUFFICIENT_BALANCE" => {}
            other => panic!("unexpected answer {other:?}"),
        }
    }
    assert_eq!(ok, 10);
    assert_eq!(t.vault(&wallet).await, 0);
    let projected: i64 = sqlx::query_scalar("SELECT balance FROM vault_balances WHERE wallet = $1").bind(&wallet).fetch_one(&t.db).await.unwrap();
    assert_eq!(projected, 0);
    let trades: i64 = sqlx::query_scalar("SELECT count(*) FROM trades WHERE wallet = $1").bind(&wallet).fetch_one(&t.db).await.unwrap();
    assert_eq!(trades, 10);
}

/// A trade the chain has not confirmed when the answer is due (here: the embedded chain's
/// ledger is locked, so the transaction cannot be persisted) is answered 202 "pending" with its
/// signature, never the deadline's 500; the same request with the same Idempotency-Key then
/// answers the trade, executed once.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_trade_slower_than_the_deadline_is_answered_pending_then_known(db: PgPool) {
    // A 6 s deadline: the answer waits 4 s for the chain (room for a busy test machine).
    let t = trading(&db, Duration::from_secs(6)).await;
    let key = wallet();
    let wallet = address(&key);
    let token = t.app.sign_in(&key).await;
    assert_eq!(t.faucet(&wallet, "50").await.0, 200);
    let market = open_market(&db, "open").await;
    let path = format!("/v1/markets/{market}/trade");
    let (status, _) = t.post(&path, &token, json!({"side": "yes", "usdc_amount": "1"})).await;
    assert_eq!(status, 200, "the market is on chain before the ledger is locked");

    let mut lock = db.begin().await.unwrap();
    sqlx::query("LOCK TABLE embedded_ledger IN EXCLUSIVE MODE").execute(&mut *lock).await.unwrap();
    let body = json!({"side": "no", "usdc_amount": "10"});
    let (status, pending) = t.call(reqwest::Method::POST, &path, &token, Some(body.clone()), Some("slow-1")).await;
    assert_eq!(status, 202, "{pending}");
    assert_eq!(pending["data"]["status"], "pending");
    let signature = pending["data"]["tx_sig"].as_str().unwrap().to_owned();
    assert_eq!(pending["error"], Value::Null);
    // Still unconfirmed: the retry says so rather than trading again.
    let (status, busy) = t.call(reqwest::Method::POST, &path, &token, Some(body.clone()), Some("slow-1")).await;
    assert_eq!((status, busy["error"]["code"].as_str()), (409, Some("IDEMPOTENCY_KEY_IN_USE")));
    lock.rollback().await.unwrap();

    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let traded = loop {
        let (status, answer) = t.call(reqwest::Method::POST, &path, &token, Some(body.clone()), Some("slow-1")).await;
        match status {
            200 => break answer,
            409 if std::time::Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            _ => panic!("{status} {answer}"),
        }
    };
    assert_eq!((traded["data"]["side"].as_str(), traded["data"]["cost_usdc"].as_str()), (Some("no"), Some("10.000000")));
    let trade_signature: String = sqlx::query_scalar("SELECT signature FROM trades WHERE id = $1")
        .bind(traded["data"]["trade_id"].as_str().unwrap().parse::<Uuid>().unwrap())
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(trade_signature, signature);
    let trades: i64 = sqlx::query_scalar("SELECT count(*) FROM trades WHERE wallet = $1").bind(&wallet).fetch_one(&db).await.unwrap();
    assert_eq!(trades, 2, "executed once");
    assert_eq!(t.vault(&wallet).await, 50_000_000 - 1_010_000 - 10_100_000);
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn the_faucet_has_a_daily_cap(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let wallet = address(&wallet());
    assert_eq!(t.faucet(&wallet, "9999").await.0, 200);
    let (status, body) = t.faucet(&wallet, "2").await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("INVALID_INPUT")));
    let (status, body) = t.faucet(&wallet, "1").await;
    assert_eq!((status, body["data"]["remaining_today"].as_str()), (200, Some("0.000000")));
    assert_eq!(t.vault(&wallet).await, 10_000_000_000);
    for (bad, amount) in [("not-an-address", "1"), (wallet.as_str(), "-1"), (wallet.as_str(), "abc")] {
        let (status, body) = t.faucet(bad, amount).await;
        assert_eq!((status, body["error"]["code"].as_str()), (400, Some("INVALID_INPUT")), "{bad} {amount}");
    }
    let stranger = address(&crate::helpers::wallet());
    for amount in ["10001", "18446744073709.551615"] {
        let (status, body) = t.faucet(&stranger, amount).await;
        assert_eq!((status, body["error"]["code"].as_str()), (400, Some("INVALID_INPUT")), "one grant above the cap: {amount}");
    }
    // Below the minimum deposit the grant waits in the deposit address as dust (it counts
    // against the allowance), and is swept once more arrives.
    let (status, body) = t.faucet(&stranger, "0.5").await;
    assert_eq!((status, body["data"]["usdc_balance"].as_str()), (200, Some("0.000000")), "{body}");
    let (status, body) = t.faucet(&stranger, "9999.5").await;
    assert_eq!(
        (status, body["data"]["usdc_balance"].as_str(), body["data"]["remaining_today"].as_str()),
        (200, Some("10000.000000"), Some("0.000000")),
        "{body}"
    );
}

/// The service on an RPC chain (here: another service's embedded chain behind its `/rpc`),
/// with its keys from keypair files: custodial trades go through JSON-RPC; the faucet does not
/// exist there.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn custodial_trading_over_json_rpc(db: PgPool) {
    use api::chain::AnyChain;
    use api::chain::ServiceKeys;
    use chain_client::RpcChain;
    let local = trading(&db, Duration::from_secs(10)).await;
    let dir = std::env::temp_dir().join(format!("fm-keys-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, key: &solana_keypair::Keypair| {
        let path = dir.join(name);
        std::fs::write(&path, serde_json::to_string(&key.to_bytes().to_vec()).unwrap()).unwrap();
        path
    };
    let (operator, authority, mint) =
        (write("operator.json", &local.chain.keys().operator), write("authority.json", &local.chain.keys().authority), local.chain.mint().to_string());
    let oracle = write("oracle.json", &local.chain.keys().oracle);
    let rpc = AnyChain::Rpc(RpcChain::new(&format!("{}/rpc", local.app.base), Duration::from_secs(10)));
    let remote = OnChain::connect(rpc.clone(), ServiceKeys::load(&operator, &authority, Some(&oracle), &mint).unwrap(), db.clone()).await.unwrap();
    let app = spawn(state_with(config(), db.clone(), &redis_url()).with_onchain(remote)).await;

    let key = wallet();
    let wallet = address(&key);
    let token = app.sign_in(&key).await;
    assert_eq!(local.faucet(&wallet, "20").await.0, 200, "funded on the chain itself");
    let refused = app.post_json("/v1/dev/faucet", json!({"wallet_address": wallet, "amount": "1"})).await;
    assert_eq!(code_of(refused).await, (404, "NOT_FOUND".to_owned()));
    let market = open_market(&db, "open").await;
    let response = app
        .http
        .post(format!("{}/v1/markets/{market}/trade", app.base))
        .bearer_auth(&token)
        .json(&json!({"side": "yes", "usdc_amount": "5"}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(local.vault(&wallet).await, 20_000_000 - 5_050_000);
    // Keys that are not the program config's are refused at start.
    let wrong = ServiceKeys::load(&authority, &authority, None, &mint).unwrap();
    assert!(OnChain::connect(rpc, wrong, db.clone()).await.is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Many traders at once on one market while the indexer follows the same chain: the indexer's
/// batches and the requests' own projections touch the same rows (they deadlocked once; the
/// projection test `batches_and_ahead_projections_run_side_by_side` reproduces that reliably);
/// every trade succeeds and the projection ends equal to the chain.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn traders_and_the_indexer_side_by_side(db: PgPool) {
    let t = trading(&db, Duration::from_secs(60)).await;
    let indexer =
        indexer::follow::Indexer::new(t.chain.clone(), indexer::projection::Projector::new(db.clone(), &funding_market::ID), &funding_market::ID.to_string());
    let confirmations = t.chain.subscribe();
    let following = tokio::spawn(async move { indexer.follow(Duration::from_millis(5), Some(confirmations), std::future::pending()).await });
    let market = open_market(&db, "open").await;
    let mut traders = Vec::new();
    for _ in 0..8 {
        let key = wallet();
        let token = t.app.sign_in(&key).await;
        assert_eq!(t.faucet(&address(&key), "50").await.0, 200);
        traders.push((address(&key), token));
    }
    let tasks: Vec<_> = traders
        .iter()
        .enumerate()
        .map(|(i, (_, token))| {
            let (http, url, token) = (t.app.http.clone(), format!("{}/v1/markets/{market}/trade", t.app.base), token.clone());
            tokio::spawn(async move {
                let mut statuses = Vec::new();
                for _ in 0..6 {
                    let body = json!({"side": if i % 2 == 0 { "yes" } else { "no" }, "usdc_amount": "2"});
                    statuses.push(http.post(&url).bearer_auth(&token).json(&body).send().await.unwrap().status().as_u16());
                }
                statuses
            })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), vec![200; 6]);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    following.abort();
    for (wallet, _) in &traders {
        let projected: i64 = sqlx::query_scalar("SELECT balance FROM vault_balances WHERE wallet = $1").bind(wallet).fetch_one(&db).await.unwrap();
        assert_eq!(projected as u64, t.vault(wallet).await);
    }
    let (count, trades): (i32, i64) = sqlx::query_as("SELECT trade_count, (SELECT count(*) FROM trades WHERE market_id = $1) FROM markets WHERE id = $1")
        .bind(market)
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!((count, trades), (48, 48));
}

/// A service without a trading chain (a cluster whose keys were not configured) has no faucet:
/// 404, not a 500.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn the_faucet_is_not_found_without_a_chain(db: PgPool) {
    let app = spawn(state(db, &redis_url())).await;
    let refused = app.post_json("/v1/dev/faucet", json!({"wallet_address": address(&wallet()), "amount": "0.5"})).await;
    assert_eq!(code_of(refused).await, (404, "NOT_FOUND".to_owned()));
}

/// The operator pays for at most its daily budget of new users' accounts; past it the deposit
/// address answers 429 with a way out, which works: a wallet that creates its own accounts gets
/// its address at once, and users that exist cost nothing.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn the_operator_pays_for_a_daily_budget_of_new_users(db: PgPool) {
    let mut config = config();
    config.operator.new_users_per_day = 2;
    let t = trading_with(&db, config).await;
    let mut tokens = Vec::new();
    let mut keys = Vec::new();
    for _ in 0..3 {
        let key = wallet();
        tokens.push(t.app.sign_in(&key).await);
        keys.push(key);
    }
    for token in &tokens[..2] {
        assert_eq!(t.get("/v1/deposit/address", token).await.0, 200);
    }
    let response = t.app.get_with("/v1/deposit/address", ("authorization", &format!("Bearer {}", tokens[2]))).await;
    let retry_after: u64 = response.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=86_400).contains(&retry_after));
    let (status, body): (u16, Value) = (response.status().as_u16(), response.json().await.unwrap());
    assert_eq!((status, body["error"]["code"].as_str()), (429, Some("RATE_LIMITED")));
    assert!(body["error"]["message"].as_str().unwrap().contains("create_user"), "{body}");
    // Users that exist cost nothing.
    assert_eq!(t.get("/v1/deposit/address", &tokens[0]).await.0, 200);

    // The third wallet pays for its own accounts.
    let payer = solana_keypair::Keypair::new_from_array(keys[2].to_bytes());
    let wallet = solana_signer::Signer::pubkey(&payer);
    t.chain.airdrop(&wallet, 1_000_000_000).await.unwrap();
    let (blockhash, _) = t.chain.latest_blockhash().await.unwrap();
    let create = client::create_user(wallet, wallet, t.chain.mint());
    let tx = solana_transaction::Transaction::new_signed_with_payer(&[create], Some(&wallet), &[&payer], blockhash.parse().unwrap());
    t.chain.send_and_confirm(&bincode::serialize(&tx).unwrap()).await.unwrap();
    let (status, address) = t.get("/v1/deposit/address", &tokens[2]).await;
    assert_eq!(status, 200, "{address}");
    assert_eq!(address["data"]["address"], client::deposit_pda(&wallet).to_string());
    let paid: i32 = sqlx::query_scalar("SELECT users FROM operator_paid_users").fetch_one(&db).await.unwrap();
    assert_eq!(paid, 2);
}

/// The reads of trades made at the same moment go to Postgres together
/// (`services::trade_plans`): each read gets its own market's plan and its own trader's
/// amount — what the wallet can spend less its queued withdrawals (a buy), the shares it holds
/// of the side (a sell, 0 without a position) — and a market that does not exist reads as
/// none, as each read alone answers; so does every read in one statement.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn reads_of_concurrent_trades_each_get_their_own_answer(db: PgPool) {
    use api::domain::market::Side;
    use api::store::markets::{self, TradeRead, TraderAmount};

    series::ensure(&db, &default_series()).await.unwrap();
    let markets_open = [open_market(&db, "open").await, open_market(&db, "closed").await];
    let wallets: Vec<String> = (0..6).map(|_| solana_signer::Signer::pubkey(&solana_keypair::Keypair::new()).to_string()).collect();
    for (i, wallet) in wallets.iter().enumerate() {
        let i = i as i64;
        sqlx::query("INSERT INTO vault_balances (wallet, balance, slot, tx_index, updated_at) VALUES ($1, $2, 1, 0, now())")
            .bind(wallet)
            .bind(1_000_000 * (i + 1))
            .execute(&db)
            .await
            .unwrap();
        // Every wallet but the last holds a position in the first market; the even ones in the
        // second too.
        for (k, market) in markets_open.iter().enumerate() {
            if i == 5 || (k == 1 && i % 2 == 1) {
                continue;
            }
            sqlx::query(
                "INSERT INTO positions (market_id, wallet, yes_shares, no_shares, last_trade_count, updated_at, yes_basis, no_basis)
                 VALUES ($1, $2, $3, $4, 1, now(), 0, 0)",
            )
            .bind(market)
            .bind(wallet)
            .bind(10 * (i + 1) + k as i64)
            .bind(100 * (i + 1) + k as i64)
            .execute(&db)
            .await
            .unwrap();
        }
    }
    // The first wallet has 0.25 USDC of its 1 USDC queued to be withdrawn.
    sqlx::query(
        "WITH u AS (INSERT INTO users (id, wallet_address) VALUES (gen_random_uuid(), $1) RETURNING id)
         INSERT INTO withdrawals (id, user_id, wallet, amount, destination, token_account, create_account, status)
         SELECT gen_random_uuid(), u.id, $1, 250000, $1, $1, false, 'pending' FROM u",
    )
    .bind(&wallets[0])
    .execute(&db)
    .await
    .unwrap();

    let services = services(&db);
    let amounts = [TraderAmount::Spendable, TraderAmount::Shares(Side::Yes), TraderAmount::Shares(Side::No)];
    let reads: Vec<(Uuid, String, TraderAmount)> = (0..90)
        .map(|n| {
            let market = if n % 10 == 9 { Uuid::new_v4() } else { markets_open[n % 2] };
            (market, wallets[n % wallets.len()].clone(), amounts[n % 3])
        })
        .collect();
    let tasks: Vec<_> = reads
        .iter()
        .cloned()
        .map(|(market, wallet, amount)| {
            let plans = services.trade_plans.clone();
            tokio::spawn(async move { plans.read(market, &wallet, amount).await.unwrap() })
        })
        .collect();
    // All of them in one statement too, whatever groups the tasks made.
    let as_one: Vec<TradeRead> = reads.iter().map(|(market, wallet, amount)| TradeRead { market: *market, wallet: wallet.clone(), amount: *amount }).collect();
    let in_one = markets::plans_for_traders(&mut db.acquire().await.unwrap(), &as_one).await.unwrap();
    assert_eq!(in_one.len(), reads.len());
    for (((market, wallet, amount), task), in_one) in reads.into_iter().zip(tasks).zip(in_one) {
        let grouped = task.await.unwrap();
        let alone = markets::plan_for_trader(&db, TradeRead { market, wallet: wallet.clone(), amount }).await.unwrap();
        let i = wallets.iter().position(|w| *w == wallet).unwrap() as u64;
        let k = markets_open.iter().position(|m| *m == market);
        let expected = k.map(|k| match amount {
            TraderAmount::Spendable => 1_000_000 * (i + 1) - if i == 0 { 250_000 } else { 0 },
            _ if i == 5 || (k == 1 && i % 2 == 1) => 0,
            TraderAmount::Shares(Side::Yes) => 10 * (i + 1) + k as u64,
            TraderAmount::Shares(Side::No) => 100 * (i + 1) + k as u64,
        });
        let got = |read: &Option<(markets::MarketPlan, u64)>| read.as_ref().map(|(plan, amount)| (plan.id, *amount));
        assert_eq!(got(&grouped), k.map(|k| (markets_open[k], expected.unwrap())), "{market} {wallet} {amount:?}");
        assert_eq!(got(&grouped), got(&alone), "{market} {wallet} {amount:?}");
        assert_eq!(got(&in_one), got(&alone), "{market} {wallet} {amount:?}");
    }
}

/// The ledger row's and the trade event's transaction ids (`xmin`), if written.
async fn writers_of(db: &PgPool, signature: &str) -> (Option<String>, Option<String>) {
    sqlx::query_as(
        "SELECT (SELECT xmin::TEXT FROM embedded_ledger WHERE signature = $1),
                (SELECT min(xmin::TEXT) FROM chain_events WHERE signature = $1)",
    )
    .bind(signature)
    .fetch_one(db)
    .await
    .unwrap()
}

/// A trade the service sends on the embedded chain is projected in the database transaction
/// that writes its ledger row (one commit: both rows carry its `xmin`). While another
/// projection (a catch-up batch) holds the projection lock, the ledger is written without
/// waiting for it, and the trade is projected on its own once the lock is free — its sender
/// answered only then.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn trades_are_projected_in_their_ledger_write_unless_the_projection_is_locked(db: PgPool) {
    use api::domain::market::Side;
    use solana_signer::Signer;
    series::ensure(&db, &default_series()).await.unwrap();
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let onchain = OnChain::embedded(&chain, db.clone()).await.unwrap();
    let wallet = solana_keypair::Keypair::new().pubkey();
    onchain.mint_test_usdc(&wallet, 100_000_000).await.unwrap();
    onchain.sweep(&wallet).await.unwrap();
    let market = open_market(&db, "open").await;
    onchain.ensure_market(&api::store::markets::plan(&db, market).await.unwrap().unwrap()).await.unwrap();

    let first = onchain.sign_buy(market, &wallet, Side::Yes, 2_000_000, 1).await.unwrap();
    onchain.submit_trade(&first).await.unwrap();
    let (ledger, event) = writers_of(&db, &first.signature).await;
    assert!(ledger.is_some(), "the ledger row is written");
    assert_eq!(ledger, event, "one commit for the ledger row and the trade's projection");

    let mut catch_up = db.begin().await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(indexer::projection::PROJECTION_LOCK).execute(&mut *catch_up).await.unwrap();
    let second = onchain.sign_buy(market, &wallet, Side::No, 2_000_000, 1).await.unwrap();
    let signature = second.signature.clone();
    let sending = tokio::spawn({
        let onchain = onchain.clone();
        async move { onchain.submit_trade(&second).await }
    });
    let started = std::time::Instant::now();
    loop {
        let (ledger, event) = writers_of(&db, &signature).await;
        if ledger.is_some() {
            assert_eq!(event, None, "not projected while the lock is held");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the ledger row was held up by the projection lock");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!sending.is_finished(), "the sender waits for its trade's projection");
    catch_up.rollback().await.unwrap();
    sending.await.unwrap().unwrap();
    let (ledger, event) = writers_of(&db, &signature).await;
    assert!(event.is_some(), "projected once the lock is free");
    assert_ne!(ledger, event, "in a transaction of its own");
    let (yes, no): (i64, i64) = sqlx::query_as("SELECT yes_shares, no_shares FROM positions WHERE market_id = $1 AND wallet = $2")
        .bind(market)
        .bind(wallet.to_string())
        .fetch_one(&db)
        .await
        .unwrap();
    assert!(yes > 0 && no > 0, "both trades in the position: {yes} {no}");
}
