//! Signs in to a running service with a fresh wallet key and prints an access token.
//!
//! `cargo run -p api --example sign_in -- http://127.0.0.1:8080`
//! (A wallet app does the signing step itself; this does it with ed25519-dalek.)

use ed25519_dalek::{Signer, SigningKey};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = std::env::args().nth(1).unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let http = reqwest::Client::new();
    let key = SigningKey::from_bytes(&rand::random());
    let wallet = bs58::encode(key.verifying_key().as_bytes()).into_string();

    // 1. Ask for a challenge.
    let challenge: Value = http.post(format!("{base}/v1/auth/challenge")).json(&json!({"wallet_address": wallet})).send().await?.json().await?;
    let (nonce, message) = (challenge["data"]["nonce"].as_str().unwrap(), challenge["data"]["message"].as_str().unwrap());
    println!("message to sign:\n{message}\n");

    // 2. Sign its exact UTF-8 bytes; base58 the 64-byte signature.
    let signature = bs58::encode(key.sign(message.as_bytes()).to_bytes()).into_string();

    // 3. Redeem it for a token.
    let verified: Value = http
        .post(format!("{base}/v1/auth/verify"))
        .json(&json!({"wallet_address": wallet, "signature": signature, "nonce": nonce}))
        .send()
        .await?
        .json()
        .await?;
    let token = verified["data"]["token"].as_str().ok_or(format!("sign-in failed: {verified}"))?;
    println!("wallet:     {wallet}\ntoken:      {token}\nexpires_at: {}", verified["data"]["expires_at"]);

    let me: Value = http.get(format!("{base}/v1/users/me")).bearer_auth(token).send().await?.json().await?;
    println!("/v1/users/me: {me}");
    Ok(())
}
