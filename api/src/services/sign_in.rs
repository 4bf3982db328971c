//! Sign-In With Solana: a challenge per wallet (kept in Redis until redeemed or expired), and
//! its redemption for an access token.

use chrono::{DateTime, Utc};
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

use super::{ServiceError, Services};
use crate::domain::siws::SignInMessage;
use crate::domain::wallet::{SignatureError, WalletAddress};
use crate::store::users;

/// A challenge to sign.
pub struct Challenge {
    pub nonce: String,
    pub message: String,
    pub expires_at: DateTime<Utc>,
}

/// An access token.
pub struct Token {
    pub token: String,
    pub expires_at: DateTime<Utc>,
}

/// What Redis keeps of an issued challenge until it is redeemed or expires.
#[derive(Serialize, Deserialize)]
struct Issued {
    wallet: String,
    message: String,
    expires_at: DateTime<Utc>,
}

fn parse_wallet(s: &str) -> Result<WalletAddress, ServiceError> {
    WalletAddress::parse(s).ok_or_else(|| ServiceError::InvalidInput("wallet_address must be the base58 of a 32-byte ed25519 public key".into()))
}

pub async fn challenge(s: &Services, wallet: &str) -> Result<Challenge, ServiceError> {
    let wallet = parse_wallet(wallet)?;
    let settings = &s.sign_in;
    let nonce = hex::encode(rand::random::<[u8; 16]>());
    let issued_at = Utc::now();
    let expires_at = issued_at + settings.challenge_ttl;
    let message = SignInMessage {
        domain: &settings.domain,
        address: wallet.as_str(),
        uri: &settings.uri,
        chain_id: &settings.chain_id,
        nonce: &nonce,
        issued_at,
        expiration: expires_at,
    }
    .to_string();
    let issued = Issued { wallet: wallet.as_str().to_owned(), message: message.clone(), expires_at };
    let mut conn = s.redis.connection().await?;
    let _: () =
        conn.set_ex(s.redis.key("siws", &nonce), serde_json::to_string(&issued).map_err(ServiceError::internal)?, settings.challenge_ttl.as_secs()).await?;
    Ok(Challenge { nonce, message, expires_at })
}

/// Redeems a challenge: the signature must verify over the exact message issued for this
/// wallet and nonce. The nonce is deleted only by a successful redemption (so a bad attempt
/// cannot burn someone's challenge), and the delete decides races: one redemption wins.
pub async fn verify(s: &Services, wallet: &str, signature: &str, nonce: &str) -> Result<Token, ServiceError> {
    let wallet = parse_wallet(wallet)?;
    let unknown = || ServiceError::Unauthorized("unknown, expired or already used nonce".into());
    if nonce.len() != 32 || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(unknown());
    }
    let key = s.redis.key("siws", nonce);
    let mut conn = s.redis.connection().await?;
    let stored: Option<String> = conn.get(&key).await?;
    let issued: Issued = serde_json::from_str(&stored.ok_or_else(unknown)?).map_err(ServiceError::internal)?;
    if issued.wallet != wallet.as_str() {
        return Err(ServiceError::Unauthorized("this nonce was issued to another wallet".into()));
    }
    if Utc::now() >= issued.expires_at {
        return Err(unknown());
    }
    wallet.verify(issued.message.as_bytes(), signature).map_err(|e| match e {
        SignatureError::NotBase58 | SignatureError::WrongLength => ServiceError::InvalidInput(e.to_string()),
        SignatureError::Mismatch => ServiceError::Unauthorized(e.to_string()),
    })?;
    let redeemed: u64 = conn.del(&key).await?;
    if redeemed == 0 {
        return Err(unknown());
    }
    let user = users::sign_in(&s.db, wallet.as_str()).await?;
    let (token, expires_at) = s.tokens.issue(user.id, &user.wallet_address, Utc::now());
    Ok(Token { token, expires_at })
}
