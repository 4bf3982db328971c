//! Both trading paths against a running local service (embedded chain), as a wallet app does
//! them: sign in with a fresh key, get test USDC, trade through the API (custodial), then
//! create a market through ensure-onchain and co-sign, buy with a transaction the wallet signs
//! and sends itself (over the service's `/rpc`), confirm it, and print the portfolio.
//!
//! `cargo run -p api --example wallet_trade -- http://127.0.0.1:8080`

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use chain_client::RpcChain;
use ed25519_dalek::Signer as _;
use funding_market::client;
use funding_market::state::{Position, Side};
use serde_json::{Value, json};
use solana_keypair::Keypair;
use solana_signer::Signer;
use solana_transaction::Transaction;
use std::time::Duration;
use uuid::Uuid;

type Error = Box<dyn std::error::Error>;

async fn call(http: &reqwest::Client, request: reqwest::RequestBuilder) -> Result<Value, Error> {
    let response = http.execute(request.build()?).await?;
    let status = response.status();
    let body: Value = response.json().await?;
    if !status.is_success() {
        return Err(format!("{status}: {body}").into());
    }
    Ok(body["data"].clone())
}

fn replay(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    request.header("X-Request-Nonce", Uuid::new_v4().to_string()).header("X-Request-Timestamp", chrono::Utc::now().timestamp().to_string())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let base = std::env::args().nth(1).unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let http = reqwest::Client::new();
    let rpc = RpcChain::new(&format!("{base}/rpc"), Duration::from_secs(30));

    // Sign in: the wallet signs the challenge message.
    let key = ed25519_dalek::SigningKey::from_bytes(&rand::random());
    let wallet = Keypair::new_from_array(key.to_bytes());
    let address = wallet.pubkey().to_string();
    let challenge = call(&http, http.post(format!("{base}/v1/auth/challenge")).json(&json!({"wallet_address": address}))).await?;
    let signature = bs58::encode(key.sign(challenge["message"].as_str().unwrap().as_bytes()).to_bytes()).into_string();
    let verified =
        call(&http, http.post(format!("{base}/v1/auth/verify")).json(&json!({"wallet_address": address, "signature": signature, "nonce": challenge["nonce"]})))
            .await?;
    let token = verified["token"].as_str().unwrap().to_owned();
    println!("signed in as {address}");

    let funded = call(&http, http.post(format!("{base}/v1/dev/faucet")).json(&json!({"wallet_address": address, "amount": "100"}))).await?;
    println!("faucet: balance {} USDC", funded["usdc_balance"]);

    let markets = call(&http, http.get(format!("{base}/v1/markets?status=open&limit=2"))).await?;
    let markets = markets.as_array().ok_or("no market list")?;
    if markets.len() < 2 {
        return Err("need two open markets (the scheduler opens rounds within a minute of start)".into());
    }
    let (custodial_market, wallet_market) = (markets[0]["id"].as_str().unwrap(), markets[1]["id"].as_str().unwrap());

    // Custodial: the service signs for the wallet.
    let trade = call(
        &http,
        http.post(format!("{base}/v1/markets/{custodial_market}/trade"))
            .bearer_auth(&token)
            .header("Idempotency-Key", Uuid::new_v4().to_string())
            .json(&json!({"side": "yes", "usdc_amount": "10"})),
    )
    .await?;
    println!("custodial buy: {trade}");

    // Wallet-signed: make sure the market is on chain (co-signed creation if not)…
    let ensured = call(&http, http.get(format!("{base}/v1/markets/{wallet_market}/ensure-onchain")).bearer_auth(&token)).await?;
    if ensured["status"] == "needs_cosign" {
        let mut tx: Transaction = bincode::deserialize(&BASE64.decode(ensured["transaction"].as_str().unwrap())?)?;
        let blockhash = tx.message.recent_blockhash;
        tx.partial_sign(&[&wallet], blockhash);
        let cosigned = call(
            &http,
            replay(http.post(format!("{base}/v1/markets/{wallet_market}/co-sign")).bearer_auth(&token))
                .json(&json!({"transaction": BASE64.encode(bincode::serialize(&tx)?)})),
        )
        .await?;
        let created = rpc.send_and_confirm(&BASE64.decode(cosigned["transaction"].as_str().unwrap())?, Duration::from_secs(30)).await?;
        println!("market created on chain: {created}");
    }
    // …then buy with the wallet's own transaction and confirm it.
    let market_id: Uuid = wallet_market.parse()?;
    let (blockhash, _) = rpc.latest_blockhash().await?;
    let me = wallet.pubkey();
    let buy = Transaction::new_signed_with_payer(
        &[client::buy_shares(me, me, market_id.as_bytes(), Side::No, 15_000_000, 0)],
        Some(&me),
        &[&wallet],
        blockhash.parse()?,
    );
    let sent = rpc.send_and_confirm(&bincode::serialize(&buy)?, Duration::from_secs(30)).await?;
    let position = rpc.account(&client::position_pda(&client::market_pda(market_id.as_bytes()), &me).to_string()).await?.ok_or("no position")?;
    let shares = client::decode::<Position>(&position.data)?.no_shares;
    let confirmed = call(
        &http,
        replay(http.post(format!("{base}/v1/trade/confirm")).bearer_auth(&token)).json(&json!({
        "market_id": wallet_market, "tx_sig": sent, "side": "no", "shares": format!("{}.{:06}", shares / 1_000_000, shares % 1_000_000)})),
    )
    .await?;
    println!("wallet-signed buy confirmed: {confirmed}");

    let portfolio = call(&http, http.get(format!("{base}/v1/portfolio")).bearer_auth(&token)).await?;
    println!("portfolio: {}", serde_json::to_string_pretty(&portfolio)?);
    Ok(())
}
