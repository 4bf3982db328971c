//! Money in and out: the deposit webhook (`POST /v1/webhooks/deposits`, Helius enhanced
//! transactions), `GET /v1/deposits`, `POST /v1/withdraw`, `GET /v1/withdrawals/{id}` and
//! `GET /v1/withdrawals` (`services::deposits`, `services::withdrawals`).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::money::micros;
use crate::http::AppState;
use crate::http::auth::{self, AnyCaller, WithdrawCaller};
use crate::http::envelope::Data;
use crate::http::error::ApiError;
use crate::http::extract::{ApiJson, ApiPath, ApiQuery, amount, refuse_json_nul};
use crate::http::idempotency::{self, idempotent};
use crate::http::openapi::{Envelope, ErrorEnvelope};
use crate::http::page::PageQuery;
use crate::services::deposits::{self, ReportedTransfer};
use crate::services::withdrawals::{self, Request};
use crate::store::deposits::DepositRow;
use crate::store::withdrawals::WithdrawalRow;

const MAX_LIMIT: i64 = 100;

/// One transaction of a Helius enhanced-transaction delivery: only what deposits need (the
/// float `tokenAmount` of `tokenTransfers` is never read: amounts come from `rawTokenAmount`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnhancedTransaction {
    signature: String,
    slot: u64,
    #[serde(default)]
    transaction_error: Option<serde_json::Value>,
    #[serde(default)]
    account_data: Vec<AccountData>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AccountData {
    #[serde(default)]
    token_balance_changes: Vec<TokenBalanceChange>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TokenBalanceChange {
    token_account: String,
    mint: String,
    raw_token_amount: RawTokenAmount,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTokenAmount {
    token_amount: String,
    decimals: u8,
}

/// The USDC that went into token accounts in a delivery: positive balance changes of the USDC
/// mint (6 decimals) in transactions that succeeded. How many changes were ignored, and why,
/// is logged.
fn usdc_received(delivery: Vec<EnhancedTransaction>, usdc_mint: &str) -> (Vec<ReportedTransfer>, usize) {
    let mut received = Vec::new();
    let mut ignored = 0;
    for tx in delivery {
        if tx.transaction_error.as_ref().is_some_and(|e| !e.is_null()) {
            tracing::info!(signature = %tx.signature, "deposit webhook: failed transaction ignored");
            ignored += 1;
            continue;
        }
        for change in tx.account_data.into_iter().flat_map(|a| a.token_balance_changes) {
            if change.mint != usdc_mint || change.raw_token_amount.decimals != 6 {
                tracing::info!(signature = %tx.signature, mint = %change.mint, "deposit webhook: not USDC; ignored");
                ignored += 1;
                continue;
            }
            match change.raw_token_amount.token_amount.parse::<i128>() {
                // At most i64::MAX: what a BIGINT column holds (far beyond USDC's supply).
                Ok(amount) if amount > 0 && amount <= i64::MAX as i128 => received.push(ReportedTransfer {
                    signature: tx.signature.clone(),
                    slot: tx.slot,
                    token_account: change.token_account,
                    amount: amount as u64,
                }),
                // Money leaving an account (a sweep) is no deposit.
                Ok(amount) if amount <= 0 => {}
                _ => {
                    tracing::warn!(signature = %tx.signature, amount = %change.raw_token_amount.token_amount, "deposit webhook: raw amount is not an integer in range; ignored");
                    ignored += 1;
                }
            }
        }
    }
    (received, ignored)
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct WebhookReceipt {
    /// Deposits recorded for the first time.
    recorded: usize,
    /// Deposits this delivery repeated.
    repeated: usize,
    /// Balance changes that were not USDC received by a successful transaction.
    ignored: usize,
}

#[utoipa::path(
    post,
    path = "/v1/webhooks/deposits",
    tag = "money",
    request_body(content = Vec<Object>, description = "A Helius enhanced-transaction delivery (a JSON array)"),
    security(("webhook_secret" = [])),
    responses(
        (status = 200, description = "What the delivery recorded", body = Envelope<WebhookReceipt>),
        (status = 401, description = "UNAUTHORIZED: the Authorization is not the configured secret", body = ErrorEnvelope),
    )
)]
pub async fn deposit_webhook(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Result<Data<WebhookReceipt>, ApiError> {
    // Checked before the body is read by the limiter (`ratelimit`); again here, so the
    // handler is safe wherever it is mounted.
    if !auth::webhook_authorized(&headers, state.http.deposit_webhook_auth.as_deref()) {
        return Err(ApiError::Unauthorized("the webhook's Authorization is missing or wrong".into()));
    }
    refuse_json_nul(&body)?;
    let delivery: Vec<EnhancedTransaction> =
        serde_json::from_slice(&body).map_err(|e| ApiError::InvalidInput(format!("expected a JSON array of enhanced transactions: {e}")))?;
    let services = &state.services;
    let (received, ignored) = usdc_received(delivery, &services.onchain()?.usdc_mint().to_string());
    let recorded = deposits::record_reported(services, &received).await?;
    // Swept after the answer (the provider wants it fast); reconciliation is the safety net.
    for wallet in recorded.wallets.clone() {
        let services = services.clone();
        tokio::spawn(async move {
            if let Err(e) = deposits::reconcile_wallet(&services, &wallet).await {
                tracing::warn!(%wallet, error = %e, "sweep after a deposit webhook failed; reconciliation will retry");
            }
        });
    }
    Ok(Data::new(WebhookReceipt { recorded: recorded.new, repeated: recorded.repeated, ignored }))
}

/// A deposit (beyond the contract): `detected` until a sweep moves it into the vault, then
/// `credited`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Deposit {
    amount: String,
    status: &'static str,
    signature: String,
    address: String,
    slot: i64,
    detected_by: String,
    detected_at: DateTime<Utc>,
    sweep_signature: Option<String>,
    credited_at: Option<DateTime<Utc>>,
}

impl From<DepositRow> for Deposit {
    fn from(d: DepositRow) -> Deposit {
        Deposit {
            amount: micros(d.amount),
            status: if d.sweep_signature.is_some() { "credited" } else { "detected" },
            signature: d.signature,
            address: d.address,
            slot: d.slot,
            detected_by: d.source,
            detected_at: d.detected_at,
            sweep_signature: d.sweep_signature,
            credited_at: d.credited_at,
        }
    }
}

#[utoipa::path(
    get,
    path = "/v1/deposits",
    tag = "money",
    params(PageQuery),
    security(("bearer" = []), ("api_key" = [])),
    responses(
        (status = 200, description = "The caller's deposits, newest first", body = Envelope<Vec<Deposit>>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
    )
)]
pub async fn deposits(State(state): State<AppState>, AnyCaller(caller): AnyCaller, ApiQuery(q): ApiQuery<PageQuery>) -> Result<Data<Vec<Deposit>>, ApiError> {
    let page = q.resolve(MAX_LIMIT)?;
    let rows = deposits::list(&state.services, &caller, page).await?;
    Ok(Data::new(rows.into_iter().map(Deposit::from).collect()))
}

#[derive(Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WithdrawBody {
    /// USDC to withdraw: at least 1.000000 (less is 400 INVALID_INPUT).
    #[schema(pattern = "^[0-9]{1,12}(\\.[0-9]{1,6})?$", example = "10.50")]
    amount: String,
    #[schema(pattern = "^[1-9A-HJ-NP-Za-km-z]{32,44}$", example = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM")]
    destination: String,
}

/// The contract's withdrawal, with every field once known (`chain_tx_sig` from processing,
/// `confirmed_at` once confirmed, `failure_reason` once failed).
#[derive(Serialize, utoipa::ToSchema)]
pub struct Withdrawal {
    id: Uuid,
    amount: String,
    destination: String,
    token_account: String,
    status: String,
    created_at: DateTime<Utc>,
    chain_tx_sig: Option<String>,
    confirmed_at: Option<DateTime<Utc>>,
    failure_reason: Option<String>,
}

impl From<WithdrawalRow> for Withdrawal {
    fn from(w: WithdrawalRow) -> Withdrawal {
        Withdrawal {
            id: w.id,
            amount: micros(w.amount),
            destination: w.destination,
            token_account: w.token_account,
            status: w.status,
            created_at: w.created_at,
            chain_tx_sig: w.signature,
            confirmed_at: w.confirmed_at,
            failure_reason: w.failure,
        }
    }
}

#[utoipa::path(
    post,
    path = "/v1/withdraw",
    tag = "money",
    request_body = WithdrawBody,
    params(
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe: the same key with the same body returns the first answer (24 h)"),
    ),
    security(("bearer" = [], "request_nonce" = [], "request_timestamp" = []), ("api_key" = [])),
    description = "A sign-in token needs the anti-replay headers too; an API key needs the `withdraw` scope. At least 1.000000 USDC.",
    responses(
        (status = 200, description = "The withdrawal, pending", body = Envelope<Withdrawal>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials, or an API key without the `withdraw` scope", body = ErrorEnvelope),
        (status = 409, description = "IDEMPOTENCY_KEY_REUSED (another body) or IDEMPOTENCY_KEY_IN_USE (the first request still runs)", body = ErrorEnvelope),
        (status = 422, description = "INSUFFICIENT_BALANCE, REPLAY_DETECTED, or a refusal of the destination or amount", body = ErrorEnvelope),
    )
)]
pub async fn withdraw(
    State(state): State<AppState>,
    WithdrawCaller(caller): WithdrawCaller,
    headers: HeaderMap,
    ApiJson(body): ApiJson<WithdrawBody>,
) -> Result<Response, ApiError> {
    let amount = amount("amount", &body.amount)?;
    let key = idempotency::key(&headers)?;
    let s = &state.services;
    let request = Request { amount, destination: &body.destination, idempotency_key: key.as_deref() };
    idempotent(
        s,
        &caller,
        &headers,
        "POST /v1/withdraw",
        &body,
        |_| async { withdrawals::request(s, &caller, request).await.map(Withdrawal::from) },
        // Nothing is sent by the request itself: a retry finds the row its key made.
        |_| async { Ok(None) },
    )
    .await
}

#[utoipa::path(
    get,
    path = "/v1/withdrawals/{id}",
    tag = "money",
    params(("id" = uuid::Uuid, Path, description = "The withdrawal id")),
    security(("bearer" = []), ("api_key" = [])),
    responses(
        (status = 200, description = "The withdrawal", body = Envelope<Withdrawal>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
    )
)]
pub async fn withdrawal(State(state): State<AppState>, AnyCaller(caller): AnyCaller, ApiPath(id): ApiPath<Uuid>) -> Result<Data<Withdrawal>, ApiError> {
    Ok(Data::new(withdrawals::get(&state.services, &caller, id).await?.into()))
}

#[utoipa::path(
    get,
    path = "/v1/withdrawals",
    tag = "money",
    params(PageQuery),
    security(("bearer" = []), ("api_key" = [])),
    responses(
        (status = 200, description = "The caller's withdrawals, newest first", body = Envelope<Vec<Withdrawal>>),
        (status = 401, description = "UNAUTHORIZED: missing or invalid credentials", body = ErrorEnvelope),
    )
)]
pub async fn withdrawals(
    State(state): State<AppState>,
    AnyCaller(caller): AnyCaller,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> Result<Data<Vec<Withdrawal>>, ApiError> {
    let page = q.resolve(MAX_LIMIT)?;
    Ok(Data::new(withdrawals::list(&state.services, &caller, page).await?.into_iter().map(Withdrawal::from).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_usdc_received_by_successful_transactions_counts() {
        let delivery: Vec<EnhancedTransaction> = serde_json::from_value(serde_json::json!([
            {"signature": "a", "slot": 7, "transactionError": null, "accountData": [
                {"account": "x", "tokenBalanceChanges": [
                    {"userAccount": "u", "tokenAccount": "dep", "mint": "USDC", "rawTokenAmount": {"tokenAmount": "1500000", "decimals": 6}},
                    {"userAccount": "v", "tokenAccount": "src", "mint": "USDC", "rawTokenAmount": {"tokenAmount": "-1500000", "decimals": 6}},
                    {"userAccount": "u", "tokenAccount": "dep", "mint": "BONK", "rawTokenAmount": {"tokenAmount": "5", "decimals": 5}},
                    {"userAccount": "u", "tokenAccount": "dep", "mint": "USDC", "rawTokenAmount": {"tokenAmount": "9223372036854775808", "decimals": 6}},
                    {"userAccount": "u", "tokenAccount": "dep", "mint": "USDC", "rawTokenAmount": {"tokenAmount": "1.5", "decimals": 6}}
                ]}]},
            {"signature": "b", "slot": 8, "transactionError": {"InstructionError": [0, "Custom"]}, "accountData": [
                {"account": "x", "tokenBalanceChanges": [
                    {"userAccount": "u", "tokenAccount": "dep", "mint": "USDC", "rawTokenAmount": {"tokenAmount": "9", "decimals": 6}}]}]},
            {"signature": "c", "slot": 9, "type": "TRANSFER", "nativeTransfers": []}
        ]))
        .unwrap();
        let (received, ignored) = usdc_received(delivery, "USDC");
        assert_eq!(received, vec![ReportedTransfer { signature: "a".into(), slot: 7, token_account: "dep".into(), amount: 1_500_000 }]);
        assert_eq!(ignored, 4);
    }
}
