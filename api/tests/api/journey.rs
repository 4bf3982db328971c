//! A trader's whole journey on the embedded chain with real keys: sign in, faucet, a custodial
//! buy and sell, the wallet-signed path on a second market, then positions, balance, history,
//! portfolio and — after both markets settle — the leaderboard, each checked against the chain.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use funding_market::client;
use funding_market::state::{Position, Side};
use indexer::follow::Indexer;
use indexer::projection::Projector;
use serde_json::{Value, json};
use solana_keypair::Keypair;
use solana_signer::Signer;
use solana_transaction::Transaction;
use sqlx::PgPool;
use uuid::Uuid;

use crate::helpers::*;
use crate::trading::{Trading, micros, open_market, trading};

fn replay(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    request.header("X-Request-Nonce", Uuid::new_v4().to_string()).header("X-Request-Timestamp", chrono::Utc::now().timestamp().to_string())
}

async fn post_replay(t: &Trading, path: &str, token: &str, body: Value) -> (u16, Value) {
    let response = replay(t.app.http.post(format!("{}{path}", t.app.base)).bearer_auth(token).json(&body)).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

async fn send(t: &Trading, ixs: &[anchor_lang::solana_program::instruction::Instruction], payer: &Keypair) -> String {
    let (blockhash, _) = t.chain.latest_blockhash().await.unwrap();
    let tx = Transaction::new_signed_with_payer(ixs, Some(&payer.pubkey()), &[payer], blockhash.parse().unwrap());
    t.chain.send_and_confirm(&bincode::serialize(&tx).unwrap()).await.unwrap()
}

async fn position(t: &Trading, market: Uuid, wallet: &anchor_lang::prelude::Pubkey) -> Position {
    let account = t.chain.account(&client::position_pda(&client::market_pda(market.as_bytes()), wallet).to_string()).await.unwrap().unwrap();
    client::decode(&account.data).unwrap()
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn from_sign_in_to_the_leaderboard_through_both_paths(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let key = wallet();
    let wallet = address(&key);
    let keypair = Keypair::new_from_array(key.to_bytes());
    let token = t.app.sign_in(&key).await;
    let (status, _) = t.call(reqwest::Method::PATCH, "/v1/users/me", &token, Some(json!({"display_name": "  Alice  "})), None).await;
    assert_eq!(status, 200);
    assert_eq!(t.faucet(&wallet, "200").await.0, 200);

    // Custodial: buy YES on market A, sell a third back.
    let a = open_market(&db, "open").await;
    let (status, bought) = t.post(&format!("/v1/markets/{a}/trade"), &token, json!({"side": "yes", "usdc_amount": "30"})).await;
    assert_eq!(status, 200, "{bought}");
    let third = micros(&bought["data"]["shares"]) / 3;
    let (status, sold) =
        t.post(&format!("/v1/markets/{a}/sell"), &token, json!({"side": "yes", "shares": format!("{}.{:06}", third / 1_000_000, third % 1_000_000)})).await;
    assert_eq!(status, 200, "{sold}");

    // Wallet-signed: market B created through co-sign, then a NO buy the wallet signs itself.
    // Its row predates program addresses (as rows made before they were recorded): confirm
    // links it.
    let b = open_market(&db, "open").await;
    sqlx::query("UPDATE markets SET onchain_address = NULL WHERE id = $1").bind(b).execute(&db).await.unwrap();
    let (_, ensured) = t.get(&format!("/v1/markets/{b}/ensure-onchain"), &token).await;
    let mut create: Transaction = bincode::deserialize(&BASE64.decode(ensured["data"]["transaction"].as_str().unwrap()).unwrap()).unwrap();
    let blockhash = create.message.recent_blockhash;
    create.partial_sign(&[&keypair], blockhash);
    let (status, cosigned) =
        post_replay(&t, &format!("/v1/markets/{b}/co-sign"), &token, json!({"transaction": BASE64.encode(bincode::serialize(&create).unwrap())})).await;
    assert_eq!(status, 200, "{cosigned}");
    t.chain.send_and_confirm(&BASE64.decode(cosigned["data"]["transaction"].as_str().unwrap()).unwrap()).await.unwrap();
    let me = keypair.pubkey();
    let signature = send(&t, &[client::buy_shares(me, me, b.as_bytes(), Side::No, 25_000_000, 0)], &keypair).await;
    let no_shares = position(&t, b, &me).await.no_shares;
    let (status, confirmed) = post_replay(
        &t,
        "/v1/trade/confirm",
        &token,
        json!({"market_id": b, "tx_sig": signature, "side": "no", "shares": format!("{}.{:06}", no_shares / 1_000_000, no_shares % 1_000_000)}),
    )
    .await;
    assert_eq!(status, 200, "{confirmed}");

    // Positions: one side in each market, exactly the chain's shares.
    let (_, positions) = t.get("/v1/users/me/positions", &token).await;
    let positions = positions["data"].as_array().unwrap().clone();
    assert_eq!(positions.len(), 2, "{positions:?}");
    let on_a = positions.iter().find(|p| p["market_id"] == a.to_string()).unwrap();
    let on_b = positions.iter().find(|p| p["market_id"] == b.to_string()).unwrap();
    assert_eq!((on_a["side"].as_str(), micros(&on_a["shares"]) as u64), (Some("yes"), position(&t, a, &me).await.yes_shares));
    assert_eq!((on_b["side"].as_str(), micros(&on_b["shares"]) as u64), (Some("no"), no_shares));
    for p in [on_a, on_b] {
        assert_eq!((p["symbol"].as_str(), p["exchange"].as_str()), (Some("BTCUSDT"), Some("binance")));
        assert!(micros(&p["current_price"]) > 0 && micros(&p["avg_price"]) > 0);
    }
    // Balance: the vault, plus what the open positions cost; nothing lost on the way.
    let (_, balance) = t.get("/v1/users/me/balance", &token).await;
    let balance = &balance["data"];
    assert_eq!(micros(&balance["usdc_balance"]) as u64, t.vault(&wallet).await);
    let sold_net = micros(&sold["data"]["cost_usdc"]) - micros(&sold["data"]["fee_usdc"]);
    assert_eq!(micros(&balance["locked_in_positions"]), 30_300_000 - sold_net + 25_250_000);
    assert_eq!(micros(&balance["total"]), 200_000_000, "what the faucet gave, in the vault or at cost in positions");
    // History: three trades, newest first.
    let (_, history) = t.get("/v1/users/me/history?limit=10", &token).await;
    let kinds: Vec<(&str, &str)> = history["data"].as_array().unwrap().iter().map(|h| (h["kind"].as_str().unwrap(), h["side"].as_str().unwrap())).collect();
    assert_eq!(kinds, vec![("buy", "no"), ("sell", "yes"), ("buy", "yes")]);
    assert_eq!(history["meta"]["total"], 3);
    let (_, portfolio) = t.get("/v1/portfolio", &token).await;
    assert_eq!((portfolio["data"]["total_trades"].as_i64(), portfolio["data"]["open_positions"].as_i64()), (Some(3), Some(2)));
    assert_eq!(portfolio["data"]["realized_pnl"], "0.000000");

    // Both markets settle YES: market A pays, market B's NO loses. The indexer follows.
    t.chain.set_clock_offset(3_700);
    let oracle = t.chain.keys().oracle.insecure_clone();
    let operator = t.chain.keys().operator.insecure_clone();
    for market in [a, b] {
        send(&t, &[client::resolve_market(oracle.pubkey(), market.as_bytes(), 42)], &oracle).await;
        let rent_payer = position(&t, market, &me).await.rent_payer;
        send(&t, &[client::settle_position(market.as_bytes(), me, rent_payer)], &operator).await;
    }
    Indexer::new(t.chain.clone(), Projector::new(db.clone(), &funding_market::ID), &funding_market::ID.to_string()).run_once().await.unwrap();
    let (_, positions) = t.get("/v1/users/me/positions", &token).await;
    assert_eq!(positions["data"], json!([]));
    let (_, balance) = t.get("/v1/users/me/balance", &token).await;
    assert_eq!(micros(&balance["data"]["usdc_balance"]) as u64, t.vault(&wallet).await);
    let yes_left = micros(&bought["data"]["shares"]) - third;
    let realized = (sold_net + yes_left) - 30_300_000 - 25_250_000;
    let (_, portfolio) = t.get("/v1/portfolio", &token).await;
    assert_eq!(micros(&portfolio["data"]["total_pnl"]), realized, "{portfolio}");
    assert_eq!(portfolio["data"]["win_rate"], "0.5000", "A won, B lost");

    // The leaderboard: Alice, by every measure, with her display name.
    for query in ["", "?period=24h", "?period=7d&sort_by=volume", "?period=30d&sort_by=win_rate&limit=5", "?period=all&sort_by=pnl"] {
        let body: Value = t.app.get(&format!("/v1/leaderboard{query}")).await.json().await.unwrap();
        let first = &body["data"][0];
        assert_eq!(
            (first["rank"].as_i64(), first["wallet_address"].as_str(), first["display_name"].as_str()),
            (Some(1), Some(wallet.as_str()), Some("Alice")),
            "{query}: {body}"
        );
        assert_eq!((micros(&first["total_pnl"]), first["total_trades"].as_i64(), first["win_rate"].as_str()), (realized, Some(3), Some("0.5000")));
        let volume = 30_000_000 + micros(&sold["data"]["cost_usdc"]) + 25_000_000;
        assert_eq!(micros(&first["total_volume"]), volume);
    }
    for bad in ["?period=1y", "?sort_by=luck", "?limit=101", "?limit=0"] {
        let response = t.app.get(&format!("/v1/leaderboard{bad}")).await;
        assert_eq!(code_of(response).await, (400, "INVALID_INPUT".to_owned()), "{bad}");
    }
    // Empty, and names that would spoof another on the leaderboard (a right-to-left override,
    // a zero-width space).
    for bad in ["", "Alice\u{202E}ecilA", "Al\u{200B}ice"] {
        let (status, _) = t.call(reqwest::Method::PATCH, "/v1/users/me", &token, Some(json!({"display_name": bad})), None).await;
        assert_eq!(status, 400, "{bad:?}");
    }
    let (_, me_now) = t.get("/v1/users/me", &token).await;
    assert_eq!((me_now["data"]["display_name"].as_str(), me_now["data"]["usdc_balance"].clone()), (Some("Alice"), balance["data"]["usdc_balance"].clone()));
}
