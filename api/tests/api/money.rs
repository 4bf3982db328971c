//! Money in and out on the embedded chain: deposits found by reconciliation (the faucet's
//! path) and by the webhook, swept once they reach the minimum, credited once however often
//! they are reported; withdrawals reserved at once, sent by the queue, confirmed on chain to a
//! wallet (its token account created) or a token account; refusals; and many simultaneous
//! withdrawals against a balance that covers a few.

use std::time::Duration;

use api::services::{deposits, withdrawals};
use funding_market::client;
use serde_json::{Value, json};
use solana_signer::Signer;
use sqlx::PgPool;

use crate::helpers::*;
use crate::settlement::{Trader, balance, buy, services, trader};
use crate::trading::{Trading, micros, open_market, trading};

async fn withdraw(t: &Trading, who: &Trader, amount: &str, destination: &str) -> (u16, Value) {
    t.post("/v1/withdraw", &who.token, json!({"amount": amount, "destination": destination})).await
}

/// USDC in a token account on chain (0 if it does not exist).
async fn token_balance(t: &Trading, account: &str) -> u64 {
    t.chain.account(account).await.unwrap().map_or(0, |a| token_amount(&a.data))
}

fn fresh_address() -> String {
    solana_keypair::Keypair::new().pubkey().to_string()
}

fn ata(owner: &str, t: &Trading) -> String {
    api::chain::money::associated_token_account(&owner.parse().unwrap(), &t.chain.mint()).to_string()
}

async fn deposits_of(t: &Trading, who: &Trader) -> Vec<Value> {
    let (status, body) = t.get("/v1/deposits", &who.token).await;
    assert_eq!(status, 200, "{body}");
    body["data"].as_array().unwrap().clone()
}

async fn outbox(t: &Trading, kind: &str, wallet: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM outbox WHERE kind = $1 AND wallet = $2").bind(kind).bind(wallet).fetch_one(&t.db).await.unwrap()
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn deposit_trade_withdraw_with_exact_balances(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let s = services(&t).await;
    let alice = trader(&t, "25").await;
    let (status, address) = t.get("/v1/deposit/address", &alice.token).await;
    assert_eq!(status, 200);
    let address = address["data"]["address"].as_str().unwrap().to_owned();

    // The faucet minted to the deposit address; reconciliation found the transfer and swept it.
    let found = deposits_of(&t, &alice).await;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0]["amount"].as_str(), found[0]["status"].as_str(), found[0]["detected_by"].as_str()),
        (Some("25.000000"), Some("credited"), Some("reconciliation"))
    );
    assert_eq!(found[0]["address"].as_str(), Some(address.as_str()));
    assert!(found[0]["sweep_signature"].is_string() && found[0]["credited_at"].is_string());
    assert_eq!(token_balance(&t, &address).await, 0);
    assert_eq!(outbox(&t, "deposit_confirmed", &alice.wallet).await, 1);

    // Trade: 10 USDC and a 0.1 fee leave the vault.
    let market = open_market(&db, "open").await;
    buy(&t, &alice, market, "yes", "10").await;
    assert_eq!(micros(&balance(&t, &alice).await["usdc_balance"]), 14_900_000);

    // Withdraw 4.5 to a wallet that has nothing on chain: reserved at once.
    let bob = fresh_address();
    let (status, created) = withdraw(&t, &alice, "4.5", &bob).await;
    assert_eq!(status, 200, "{created}");
    let w = &created["data"];
    assert_eq!((w["status"].as_str(), w["amount"].as_str(), w["destination"].as_str()), (Some("pending"), Some("4.500000"), Some(bob.as_str())));
    assert_eq!(w["token_account"].as_str(), Some(ata(&bob, &t).as_str()));
    let after = balance(&t, &alice).await;
    assert_eq!(micros(&after["usdc_balance"]), 10_400_000, "reserved at once");
    assert_eq!(micros(&after["total"]), micros(&after["usdc_balance"]) + micros(&after["locked_in_positions"]));
    assert_eq!(t.vault(&alice.wallet).await, 14_900_000, "nothing sent yet");

    // The queue sends it: the wallet's token account is created and paid.
    assert_eq!(withdrawals::process(&s).await.unwrap(), 1);
    let id = w["id"].as_str().unwrap();
    let (status, done) = t.get(&format!("/v1/withdrawals/{id}"), &alice.token).await;
    assert_eq!(status, 200);
    let done = &done["data"];
    assert_eq!(done["status"].as_str(), Some("confirmed"), "{done}");
    assert!(done["chain_tx_sig"].is_string() && done["confirmed_at"].is_string());
    assert_eq!(token_balance(&t, &ata(&bob, &t)).await, 4_500_000);
    assert_eq!(t.vault(&alice.wallet).await, 10_400_000);
    assert_eq!(micros(&balance(&t, &alice).await["usdc_balance"]), 10_400_000, "the vault fell as the reservation ended");
    assert_eq!(outbox(&t, "withdrawal_confirmed", &alice.wallet).await, 1);

    // Again to the same wallet (its account exists now) and straight to that token account.
    assert_eq!(withdraw(&t, &alice, "1", &bob).await.0, 200);
    let (status, direct) = withdraw(&t, &alice, "2.25", &ata(&bob, &t)).await;
    assert_eq!((status, direct["data"]["token_account"].as_str()), (200, Some(ata(&bob, &t).as_str())));
    assert_eq!(withdrawals::process(&s).await.unwrap(), 2);
    assert_eq!(token_balance(&t, &ata(&bob, &t)).await, 7_750_000);
    assert_eq!(t.vault(&alice.wallet).await, 7_150_000);
    assert_eq!(micros(&balance(&t, &alice).await["usdc_balance"]), 7_150_000);
    let (_, listed) = t.get("/v1/withdrawals", &alice.token).await;
    let statuses: Vec<&str> = listed["data"].as_array().unwrap().iter().map(|w| w["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["confirmed"; 3]);

    // Another user cannot see it.
    let mallory = trader(&t, "1").await;
    let (status, body) = t.get(&format!("/v1/withdrawals/{id}"), &mallory.token).await;
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("NOT_FOUND")));
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn dust_waits_in_the_deposit_address_until_it_adds_up(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let s = services(&t).await;
    let alice = trader(&t, "0.4").await;
    let address = client::deposit_pda(&alice.wallet.parse().unwrap()).to_string();
    assert_eq!(micros(&balance(&t, &alice).await["usdc_balance"]), 0);
    assert_eq!(token_balance(&t, &address).await, 400_000, "below 1.00: it waits");
    let waiting = deposits_of(&t, &alice).await;
    assert_eq!((waiting.len(), waiting[0]["status"].as_str()), (1, Some("detected")));
    // Reconciliation passes leave it alone.
    deposits::reconcile(&s).await.unwrap();
    assert_eq!(token_balance(&t, &address).await, 400_000);

    assert_eq!(t.faucet(&alice.wallet, "0.7").await.0, 200);
    assert_eq!(token_balance(&t, &address).await, 0);
    assert_eq!(t.vault(&alice.wallet).await, 1_100_000);
    assert_eq!(micros(&balance(&t, &alice).await["usdc_balance"]), 1_100_000);
    let credited = deposits_of(&t, &alice).await;
    assert_eq!(credited.len(), 2);
    assert!(credited.iter().all(|d| d["status"] == "credited"), "{credited:?}");
    assert_eq!(credited[0]["sweep_signature"], credited[1]["sweep_signature"], "one sweep took both");
}

/// Found by the contract fuzzing: the same grant twice at once was the same transaction twice
/// (same instruction, signers and blockhash), and the second failed "already processed" (500).
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn equal_faucet_grants_at_once_are_both_made(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let alice = trader(&t, "1").await;
    let (a, b) = tokio::join!(t.faucet(&alice.wallet, "1.5"), t.faucet(&alice.wallet, "1.5"));
    assert_eq!((a.0, b.0), (200, 200), "{a:?} {b:?}");
    let (c, d) = (t.faucet(&alice.wallet, "2").await, t.faucet(&alice.wallet, "2").await);
    assert_eq!((c.0, d.0), (200, 200), "{c:?} {d:?}");
    assert_eq!(t.vault(&alice.wallet).await, 8_000_000);
    // Found by the same fuzzing: a program's address (here the System Program's) made the
    // airdrop fail on chain (500); it is not a wallet, and the faucet says so.
    for program in ["11111111111111111111111111111111", "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "SysvarC1ock11111111111111111111111111111111"] {
        let (status, body) = t.faucet(program, "1").await;
        assert_eq!((status, body["error"]["code"].as_str()), (400, Some("INVALID_INPUT")), "{program}: {body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("not a wallet"), "{body}");
    }
}

/// A Helius enhanced-transaction delivery of `signature`, which moved `raw` base units of
/// `mint` into `token_account`.
fn delivery(signature: &str, slot: u64, token_account: &str, owner: &str, mint: &str, raw: u64) -> Value {
    json!([{
        "description": "", "type": "TRANSFER", "source": "SYSTEM_PROGRAM", "fee": 5000, "feePayer": owner,
        "signature": signature, "slot": slot, "timestamp": 1_700_000_000,
        "nativeTransfers": [],
        "tokenTransfers": [{"fromUserAccount": owner, "toUserAccount": owner, "fromTokenAccount": "", "toTokenAccount": token_account,
                            "tokenAmount": raw as f64 / 1e6, "mint": mint, "tokenStandard": "Fungible"}],
        "accountData": [{"account": token_account, "nativeBalanceChange": 0, "tokenBalanceChanges": [
            {"userAccount": owner, "tokenAccount": token_account, "mint": mint, "rawTokenAmount": {"tokenAmount": raw.to_string(), "decimals": 6}}]}],
        "transactionError": null, "instructions": [], "events": {}
    }])
}

async fn post_webhook(t: &Trading, auth: Option<&str>, body: &Value) -> (u16, Value) {
    let mut request = t.app.http.post(format!("{}/v1/webhooks/deposits", t.app.base)).json(body);
    if let Some(auth) = auth {
        request = request.header("Authorization", auth);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn webhook_deliveries_are_authenticated_and_credited_once(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let s = services(&t).await;
    let alice = trader(&t, "1").await;
    let wallet = alice.wallet.parse().unwrap();
    let address = client::deposit_pda(&wallet).to_string();
    let usdc = t.chain.mint().to_string();

    // 3 USDC arrive from outside; the webhook reports them.
    let signature = t.chain.mint_usdc(&client::deposit_pda(&wallet), 3_000_000).await.unwrap();
    let slot = t.chain.status(&signature).await.unwrap().unwrap().0;
    let body = delivery(&signature, slot, &address, &alice.wallet, &usdc, 3_000_000);
    for auth in [None, Some("Bearer wrong"), Some("bearer test-webhook-secret")] {
        let (status, refused) = post_webhook(&t, auth, &body).await;
        assert_eq!((status, refused["error"]["code"].as_str()), (401, Some("UNAUTHORIZED")), "{auth:?}");
    }
    assert!(deposits_of(&t, &alice).await.len() == 1, "nothing recorded without the secret");
    let (status, receipt) = post_webhook(&t, Some(WEBHOOK_AUTH), &body).await;
    assert_eq!((status, &receipt["data"]), (200, &json!({"recorded": 1, "repeated": 0, "ignored": 0})));
    // Delivered again (providers repeat): credited once.
    let (_, receipt) = post_webhook(&t, Some(WEBHOOK_AUTH), &body).await;
    assert_eq!(receipt["data"], json!({"recorded": 0, "repeated": 1, "ignored": 0}));
    // Another mint, and a failed transaction, are ignored.
    let mut other = delivery(&signature, slot, &address, &alice.wallet, "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", 9_000_000);
    assert_eq!(post_webhook(&t, Some(WEBHOOK_AUTH), &other).await.1["data"], json!({"recorded": 0, "repeated": 0, "ignored": 1}));
    other = delivery(&fresh_address(), slot, &address, &alice.wallet, &usdc, 9_000_000);
    other[0]["transactionError"] = json!({"InstructionError": [0, {"Custom": 1}]});
    assert_eq!(post_webhook(&t, Some(WEBHOOK_AUTH), &other).await.1["data"], json!({"recorded": 0, "repeated": 0, "ignored": 1}));
    let (status, _) = post_webhook(&t, Some(WEBHOOK_AUTH), &json!({"not": "an array"})).await;
    assert_eq!(status, 400);

    // The webhook set off the sweep. Generous deadline: the suite runs 500-request tests beside
    // this one on two cores, and 5 s was once not enough in CI.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while t.vault(&alice.wallet).await != 4_000_000 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(t.vault(&alice.wallet).await, 4_000_000);
    let listed = deposits_of(&t, &alice).await;
    assert_eq!(listed.len(), 2);
    assert_eq!(
        (listed[0]["signature"].as_str(), listed[0]["detected_by"].as_str(), listed[0]["amount"].as_str()),
        (Some(signature.as_str()), Some("webhook"), Some("3.000000"))
    );

    // A deposit whose webhook never came: reconciliation finds it and sweeps it. The repeated
    // delivery above set off a second sweep, which may still be on its way and take this
    // deposit before any pass recorded it (it read the address's history before the deposit
    // arrived); then the next pass records it, credited by that sweep. Passes until then.
    let missed = t.chain.mint_usdc(&client::deposit_pda(&wallet), 2_500_000).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        deposits::reconcile(&s).await.unwrap();
        let listed = deposits_of(&t, &alice).await;
        let recorded = listed[0]["signature"].as_str() == Some(missed.as_str()) && listed[0]["status"].as_str() == Some("credited");
        if (recorded && micros(&balance(&t, &alice).await["usdc_balance"]) == 6_500_000) || tokio::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(t.vault(&alice.wallet).await, 6_500_000);
    assert_eq!(micros(&balance(&t, &alice).await["usdc_balance"]), 6_500_000);
    let listed = deposits_of(&t, &alice).await;
    assert_eq!(
        (listed[0]["signature"].as_str(), listed[0]["detected_by"].as_str(), listed[0]["status"].as_str()),
        (Some(missed.as_str()), Some("reconciliation"), Some("credited"))
    );
    // Its webhook arriving late changes nothing.
    let late = delivery(&missed, t.chain.status(&missed).await.unwrap().unwrap().0, &address, &alice.wallet, &usdc, 2_500_000);
    assert_eq!(post_webhook(&t, Some(WEBHOOK_AUTH), &late).await.1["data"]["repeated"], 1);
    assert_eq!(outbox(&t, "deposit_confirmed", &alice.wallet).await, 3);
}

/// A transfer swept before any pass recorded it (the sweep is permissionless; a read after it
/// can fail) is recorded by the next reconciliation pass — the emptied address's sweeps exceed
/// its recorded transfers — and credited by that sweep.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_transfer_swept_unrecorded_is_recorded_by_the_next_pass(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let s = services(&t).await;
    let alice = trader(&t, "1").await;
    let wallet = alice.wallet.parse().unwrap();
    let unseen = t.chain.mint_usdc(&client::deposit_pda(&wallet), 2_000_000).await.unwrap();
    s.onchain().unwrap().sweep(&wallet).await.unwrap();
    assert_eq!(t.vault(&alice.wallet).await, 3_000_000);
    assert_eq!(deposits_of(&t, &alice).await.len(), 1, "swept, not recorded");
    assert_eq!(deposits::reconcile(&s).await.unwrap(), 1);
    let listed = deposits_of(&t, &alice).await;
    assert_eq!(listed.len(), 2);
    let d = &listed[0];
    assert_eq!(
        (d["signature"].as_str(), d["detected_by"].as_str(), d["status"].as_str(), d["amount"].as_str()),
        (Some(unseen.as_str()), Some("reconciliation"), Some("credited"), Some("2.000000"))
    );
    assert_eq!(micros(&balance(&t, &alice).await["usdc_balance"]), 3_000_000);
    // Recorded: the next pass has nothing to do there.
    assert_eq!(deposits::reconcile(&s).await.unwrap(), 0);
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn withdrawal_refusals_say_why(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let alice = trader(&t, "5").await;
    let wallet = alice.wallet.parse().unwrap();
    let refused = [
        ("1", "not-an-address", 400, "INVALID_INPUT", "not a Solana address"),
        ("0.5", &fresh_address(), 400, "INVALID_INPUT", "at least 1.00"),
        ("-1", &fresh_address(), 400, "INVALID_INPUT", "amount"),
        ("1", &client::vault_pda(&wallet).to_string(), 400, "INVALID_INPUT", "your own vault"),
        ("1", &client::deposit_pda(&wallet).to_string(), 400, "INVALID_INPUT", "your own vault or deposit"),
        ("1", &t.chain.mint().to_string(), 400, "INVALID_INPUT", "neither a wallet nor a USDC token account"),
        ("1", &client::config_pda().to_string(), 400, "INVALID_INPUT", "neither a wallet nor a USDC token account"),
        ("5.000001", &fresh_address(), 422, "INSUFFICIENT_BALANCE", "available balance of 5.000000"),
        ("18446744073709.551615", &fresh_address(), 422, "INSUFFICIENT_BALANCE", "available balance of 5.000000"),
    ];
    for (amount, destination, status, code, why) in refused {
        let (answered, body) = withdraw(&t, &alice, amount, destination).await;
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert_eq!((answered, body["error"]["code"].as_str()), (status, Some(code)), "{amount} {destination}: {body}");
        assert!(message.contains(why), "{amount} {destination}: {message}");
    }
    let (status, body) = t.post("/v1/withdraw", &alice.token, json!({"amount": "1"})).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("INVALID_INPUT")));

    // The same Idempotency-Key makes one withdrawal, whatever the retries.
    let destination = fresh_address();
    let body = json!({"amount": "2", "destination": destination});
    let (first, again) = (
        t.call(reqwest::Method::POST, "/v1/withdraw", &alice.token, Some(body.clone()), Some("w-1")).await,
        t.call(reqwest::Method::POST, "/v1/withdraw", &alice.token, Some(body), Some("w-1")).await,
    );
    assert_eq!((first.0, again.0), (200, 200));
    assert_eq!(first.1["data"]["id"], again.1["data"]["id"]);
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM withdrawals").fetch_one(&db).await.unwrap();
    assert_eq!(rows, 1);
    assert_eq!(micros(&balance(&t, &alice).await["usdc_balance"]), 3_000_000);
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn simultaneous_withdrawals_never_overdraw(db: PgPool) {
    let t = trading(&db, Duration::from_secs(30)).await;
    let s = services(&t).await;
    let alice = trader(&t, "10.5").await;
    let destination = fresh_address();
    let requests = (0..500).map(|_| withdraw(&t, &alice, "1", &destination));
    let answers = futures_util::future::join_all(requests).await;
    let accepted = answers.iter().filter(|(status, _)| *status == 200).count();
    let refused = answers.iter().filter(|(_, body)| body["error"]["code"] == "INSUFFICIENT_BALANCE").count();
    assert_eq!((accepted, refused), (10, 490));
    assert_eq!(micros(&balance(&t, &alice).await["usdc_balance"]), 500_000);

    while withdrawals::process(&s).await.unwrap() > 0 {}
    let confirmed: i64 = sqlx::query_scalar("SELECT count(*) FROM withdrawals WHERE status = 'confirmed'").fetch_one(&db).await.unwrap();
    assert_eq!(confirmed, 10);
    assert_eq!(token_balance(&t, &ata(&destination, &t)).await, 10_000_000);
    assert_eq!(t.vault(&alice.wallet).await, 500_000);
    assert_eq!(micros(&balance(&t, &alice).await["usdc_balance"]), 500_000, "the vault equals Postgres");
}

/// Withdrawing needs more than reading or trading: a sign-in token with fresh anti-replay
/// headers, or an API key made with the `withdraw` scope. Keys made without scopes keep `read`
/// and `trade`.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn withdrawals_need_anti_replay_or_a_withdraw_key(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let alice = trader(&t, "10").await;
    let destination = fresh_address();
    let body = json!({"amount": "1", "destination": destination});
    let url = format!("{}/v1/withdraw", t.app.base);

    // A token alone, or with a stale timestamp, is refused; with fresh headers it withdraws.
    let bare = t.app.http.post(&url).bearer_auth(&alice.token).json(&body).send().await.unwrap();
    assert_eq!(code_of(bare).await, (400, "INVALID_INPUT".to_owned()));
    let stale = t
        .app
        .http
        .post(&url)
        .bearer_auth(&alice.token)
        .header("x-request-nonce", uuid::Uuid::new_v4().simple().to_string())
        .header("x-request-timestamp", (chrono::Utc::now().timestamp() - 3600).to_string())
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(code_of(stale).await, (422, "REPLAY_DETECTED".to_owned()));
    assert_eq!(withdraw(&t, &alice, "1", &destination).await.0, 200);

    // Keys: made with their scopes, listed with them; an unknown scope is refused.
    let make = |scopes: Value| {
        let mut request = json!({"label": "bot"});
        if !scopes.is_null() {
            request["scopes"] = scopes;
        }
        t.post("/v1/api-keys", &alice.token, request)
    };
    let (status, refused) = make(json!(["read", "admin"])).await;
    assert_eq!((status, refused["error"]["code"].as_str()), (400, Some("INVALID_INPUT")), "{refused}");
    assert_eq!(make(json!([])).await.0, 400);
    let (status, default) = make(Value::Null).await;
    assert_eq!((status, &default["data"]["scopes"]), (201, &json!(["read", "trade"])));
    let (_, reader) = make(json!(["read"])).await;
    let (_, withdrawer) = make(json!(["withdraw"])).await;
    let (_, listed) = t.get("/v1/api-keys", &alice.token).await;
    let scopes: Vec<&Value> = listed["data"].as_array().unwrap().iter().map(|k| &k["scopes"]).collect();
    assert_eq!(scopes, [&json!(["read", "trade"]), &json!(["read"]), &json!(["withdraw"])]);

    let with_key = |method: reqwest::Method, path: &str, key: &Value, body: Option<Value>| {
        let mut request = t.app.http.request(method, format!("{}{path}", t.app.base)).header("x-api-key", key.as_str().unwrap());
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.send()
    };
    let (default, reader, withdrawer) = (&default["data"]["key"], &reader["data"]["key"], &withdrawer["data"]["key"]);
    // read + trade: reads and trades, never withdraws.
    assert_eq!(with_key(reqwest::Method::GET, "/v1/users/me/balance", default, None).await.unwrap().status(), 200);
    let (status, code) = code_of(with_key(reqwest::Method::POST, "/v1/withdraw", default, Some(body.clone())).await.unwrap()).await;
    assert_eq!((status, code.as_str()), (401, "UNAUTHORIZED"));
    // read only: no writes.
    assert_eq!(with_key(reqwest::Method::GET, "/v1/users/me/balance", reader, None).await.unwrap().status(), 200);
    let answer = with_key(reqwest::Method::PATCH, "/v1/users/me", reader, Some(json!({"display_name": "reader"}))).await.unwrap();
    let answer: Value = answer.json().await.unwrap();
    assert_eq!(answer["error"]["code"], "UNAUTHORIZED", "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("`trade` scope"), "{answer}");
    // withdraw only: withdraws (no anti-replay headers needed), reads nothing.
    let answer = with_key(reqwest::Method::POST, "/v1/withdraw", withdrawer, Some(body.clone())).await.unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(with_key(reqwest::Method::GET, "/v1/users/me/balance", withdrawer, None).await.unwrap().status(), 401);
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM withdrawals").fetch_one(&db).await.unwrap();
    assert_eq!(rows, 2, "the token's and the withdraw key's");
}

/// Creating a destination's token account costs the operator rent: a user has three new ones a
/// day (a destination counts once however often it is paid), the service its daily budget; an
/// existing token account is never limited, and an address without a key is refused (its
/// token account could never be spent from).
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn withdrawals_cannot_farm_the_operators_rent(db: PgPool) {
    let mut config = config();
    config.operator.token_accounts_per_day = 4;
    let t = crate::trading::trading_with(&db, config).await;
    let (alice, bob) = (trader(&t, "20").await, trader(&t, "20").await);
    let wallets: Vec<String> = (0..4).map(|_| fresh_address()).collect();
    for wallet in &wallets[..3] {
        assert_eq!(withdraw(&t, &alice, "1", wallet).await.0, 200);
    }
    let (status, refused) = withdraw(&t, &alice, "1", &wallets[3]).await;
    assert_eq!((status, refused["error"]["code"].as_str()), (429, Some("RATE_LIMITED")), "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("you have had 3 today"), "{refused}");
    assert_eq!(withdraw(&t, &alice, "1", &wallets[0]).await.0, 200, "a destination counts once");
    // The service's budget (4) is spent by Bob's first new account.
    let (status, body) = withdraw(&t, &bob, "1", &wallets[3]).await;
    assert_eq!(status, 200, "{body}");
    let (status, refused) = withdraw(&t, &bob, "1", &fresh_address()).await;
    assert_eq!((status, refused["error"]["code"].as_str()), (429, Some("RATE_LIMITED")), "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("as many as it does in a day"), "{refused}");
    // Once sent, the accounts exist: paying one of them costs nothing, whoever pays it.
    let s = services(&t).await;
    while withdrawals::process(&s).await.unwrap() > 0 {}
    assert_eq!(token_balance(&t, &ata(&wallets[0], &t)).await, 2_000_000);
    assert_eq!(withdraw(&t, &bob, "1", &ata(&wallets[0], &t)).await.0, 200);
    assert_eq!(withdraw(&t, &bob, "1", &wallets[1]).await.0, 200, "a wallet whose account exists");

    // Off the curve, nothing there: refused before anything is reserved.
    let (pda, _) = anchor_lang::prelude::Pubkey::find_program_address(&[b"nobody"], &funding_market::ID);
    let (status, refused) = withdraw(&t, &alice, "1", &pda.to_string()).await;
    assert_eq!((status, refused["error"]["code"].as_str()), (400, Some("INVALID_INPUT")), "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("no key"), "{refused}");
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM withdrawals").fetch_one(&db).await.unwrap();
    assert_eq!(rows, 7);
}
