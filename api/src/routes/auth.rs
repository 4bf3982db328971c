//! `POST /v1/auth/challenge` and `POST /v1/auth/verify`: Sign-In With Solana.

use axum::extract::State;
use chrono::{DateTime, SecondsFormat, Utc};
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

use crate::auth::siws::SignInMessage;
use crate::auth::wallet::{SignatureError, WalletAddress};
use crate::envelope::Data;
use crate::extract::ApiJson;
use crate::{ApiError, AppState, users};

#[derive(Deserialize)]
pub struct ChallengeRequest {
    wallet_address: String,
}

#[derive(Serialize)]
pub struct Challenge {
    nonce: String,
    message: String,
    expires_at: String,
}

/// What Redis keeps of an issued challenge until it is redeemed or expires.
#[derive(Serialize, Deserialize)]
struct Issued {
    wallet: String,
    message: String,
    expires_at: DateTime<Utc>,
}

fn challenge_key(state: &AppState, nonce: &str) -> String {
    format!("{}:siws:{nonce}", state.config.redis_namespace)
}

fn parse_wallet(s: &str) -> Result<WalletAddress, ApiError> {
    WalletAddress::parse(s).ok_or_else(|| {
        ApiError::InvalidInput("wallet_address must be the base58 of a 32-byte ed25519 public key".into())
    })
}

pub async fn challenge(State(state): State<AppState>, ApiJson(req): ApiJson<ChallengeRequest>) -> Result<Data<Challenge>, ApiError> {
    let wallet = parse_wallet(&req.wallet_address)?;
    let config = &state.config;
    let nonce = hex::encode(rand::random::<[u8; 16]>());
    let issued_at = Utc::now();
    let expires_at = issued_at + config.challenge_ttl;
    let message = SignInMessage {
        domain: &config.siws_domain,
        address: wallet.as_str(),
        uri: &config.siws_uri,
        chain_id: &config.siws_chain_id,
        nonce: &nonce,
        issued_at,
        expiration: expires_at,
    }
    .to_string();
    let issued = Issued { wallet: wallet.as_str().to_owned(), message: message.clone(), expires_at };
    let mut conn = state.redis.connection().await?;
    let _: () = conn
        .set_ex(challenge_key(&state, &nonce), serde_json::to_string(&issued).map_err(ApiError::internal)?, config.challenge_ttl.as_secs())
        .await?;
    Ok(Data::new(Challenge { nonce, message, expires_at: expires_at.to_rfc3339_opts(SecondsFormat::Millis, true) }))
}

#[derive(Deserialize)]
pub struct VerifyRequest {
    wallet_address: String,
    signature: String,
    nonce: String,
}

#[derive(Serialize)]
pub struct Token {
    token: String,
    expires_at: String,
}

/// Redeems a challenge: the signature must verify over the exact message issued for this
/// wallet and nonce. The nonce is deleted only by a successful redemption (so a bad attempt
/// cannot burn someone's challenge), and the delete decides races: one redemption wins.
pub async fn verify(State(state): State<AppState>, ApiJson(req): ApiJson<VerifyRequest>) -> Result<Data<Token>, ApiError> {
    let wallet = parse_wallet(&req.wallet_address)?;
    let unknown = || ApiError::Unauthorized("unknown, expired or already used nonce".into());
    if req.nonce.len() != 32 || !req.nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(unknown());
    }
    let key = challenge_key(&state, &req.nonce);
    let mut conn = state.redis.connection().await?;
    let stored: Option<String> = conn.get(&key).await?;
    let issued: Issued = serde_json::from_str(&stored.ok_or_else(unknown)?).map_err(ApiError::internal)?;
    if issued.wallet != wallet.as_str() {
        return Err(ApiError::Unauthorized("this nonce was issued to another wallet".into()));
    }
    if Utc::now() >= issued.expires_at {
        return Err(unknown());
    }
    wallet.verify(issued.message.as_bytes(), &req.signature).map_err(|e| match e {
        SignatureError::NotBase58 | SignatureError::WrongLength => ApiError::InvalidInput(e.to_string()),
        SignatureError::Mismatch => ApiError::Unauthorized(e.to_string()),
    })?;
    let redeemed: u64 = conn.del(&key).await?;
    if redeemed == 0 {
        return Err(unknown());
    }
    let user = users::sign_in(&state.db, wallet.as_str()).await?;
    let (token, expires_at) = state.tokens.issue(user.id, &user.wallet_address, Utc::now());
    Ok(Data::new(Token { token, expires_at: expires_at.to_rfc3339_opts(SecondsFormat::Millis, true) }))
}
