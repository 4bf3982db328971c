//! `POST /v1/auth/challenge` and `POST /v1/auth/verify`: Sign-In With Solana
//! (`services::sign_in`).

use axum::extract::State;
use chrono::SecondsFormat;
use serde::{Deserialize, Serialize};

use crate::http::AppState;
use crate::http::envelope::Data;
use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use crate::services::sign_in;

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

pub async fn challenge(State(state): State<AppState>, ApiJson(req): ApiJson<ChallengeRequest>) -> Result<Data<Challenge>, ApiError> {
    let c = sign_in::challenge(&state.services, &req.wallet_address).await?;
    Ok(Data::new(Challenge { nonce: c.nonce, message: c.message, expires_at: c.expires_at.to_rfc3339_opts(SecondsFormat::Millis, true) }))
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

pub async fn verify(State(state): State<AppState>, ApiJson(req): ApiJson<VerifyRequest>) -> Result<Data<Token>, ApiError> {
    let t = sign_in::verify(&state.services, &req.wallet_address, &req.signature, &req.nonce).await?;
    Ok(Data::new(Token { token: t.token, expires_at: t.expires_at.to_rfc3339_opts(SecondsFormat::Millis, true) }))
}
