//! `POST /v1/auth/challenge` and `POST /v1/auth/verify`: Sign-In With Solana
//! (`services::sign_in`).

use axum::extract::State;
use chrono::SecondsFormat;
use serde::{Deserialize, Serialize};

use crate::http::AppState;
use crate::http::envelope::Data;
use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use crate::http::openapi::{Envelope, ErrorEnvelope};
use crate::services::sign_in;

#[derive(Deserialize, utoipa::ToSchema)]
pub struct ChallengeRequest {
    #[schema(pattern = "^[1-9A-HJ-NP-Za-km-z]{32,44}$", example = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM")]
    wallet_address: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Challenge {
    nonce: String,
    message: String,
    expires_at: String,
}

/// Step 1 of wallet sign-in: a nonce and the message to sign with the wallet.
#[utoipa::path(
    post,
    path = "/v1/auth/challenge",
    tag = "auth",
    request_body = ChallengeRequest,
    responses((status = 200, description = "The challenge", body = Envelope<Challenge>))
)]
pub async fn challenge(State(state): State<AppState>, ApiJson(req): ApiJson<ChallengeRequest>) -> Result<Data<Challenge>, ApiError> {
    let c = sign_in::challenge(&state.services, &req.wallet_address).await?;
    Ok(Data::new(Challenge { nonce: c.nonce, message: c.message, expires_at: c.expires_at.to_rfc3339_opts(SecondsFormat::Millis, true) }))
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct VerifyRequest {
    #[schema(pattern = "^[1-9A-HJ-NP-Za-km-z]{32,44}$", example = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM")]
    wallet_address: String,
    #[schema(pattern = "^[1-9A-HJ-NP-Za-km-z]{64,88}$")]
    signature: String,
    #[schema(pattern = "^[0-9a-f]{32}$")]
    nonce: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Token {
    token: String,
    expires_at: String,
}

/// Step 3: the signed challenge redeemed for an access token.
#[utoipa::path(
    post,
    path = "/v1/auth/verify",
    tag = "auth",
    request_body = VerifyRequest,
    responses(
        (status = 200, description = "The token", body = Envelope<Token>),
        (status = 401, description = "UNAUTHORIZED: bad signature, unknown or expired nonce", body = ErrorEnvelope),
    )
)]
pub async fn verify(State(state): State<AppState>, ApiJson(req): ApiJson<VerifyRequest>) -> Result<Data<Token>, ApiError> {
    let t = sign_in::verify(&state.services, &req.wallet_address, &req.signature, &req.nonce).await?;
    Ok(Data::new(Token { token: t.token, expires_at: t.expires_at.to_rfc3339_opts(SecondsFormat::Millis, true) }))
}
