//! The wallet-signed path (contract "On-chain integration"): `ensure-onchain` hands out the
//! market's `create_market` for the wallet to pay, `co-sign` adds the authority's signature to
//! exactly that transaction, and `trade/confirm` records a trade the wallet sent itself once it
//! is confirmed on chain.
//!
//! Refusal codes beyond the contract (all 422): `COSIGN_REFUSED` (not exactly the expected
//! transaction, or a stale blockhash), `TRANSACTION_NOT_FOUND` (the chain does not know the
//! signature at `confirmed`), `TRANSACTION_FAILED`, `NOT_YOUR_TRANSACTION` (the caller did not
//! sign it), `TRADE_MISMATCH` (no trade of the caller on that market with that side and
//! shares); `PDA_NOT_FOUND` for a market not on chain.

use axum::extract::State;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use funding_market::client;
use funding_market::state::Side;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use solana_transaction::Transaction;
use solana_transaction::versioned::VersionedTransaction;
use uuid::Uuid;

use crate::auth::extract::TokenCaller;
use crate::auth::replay::ReplayChecked;
use crate::cosign::{self, MAX_TRANSACTION};
use crate::envelope::Data;
use crate::extract::{ApiJson, ApiPath};
use crate::money::{self, micros};
use crate::onchain::{self, MarketPlan, OnChain};
use crate::{ApiError, AppState};

fn onchain(state: &AppState) -> Result<&OnChain, ApiError> {
    state.onchain.as_ref().ok_or_else(|| ApiError::internal("no chain configured"))
}

fn chain_error(e: impl std::fmt::Display) -> ApiError {
    ApiError::internal(e)
}

fn refused(code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::Refused { code, message: message.into() }
}

async fn plan(state: &AppState, id: Uuid) -> Result<MarketPlan, ApiError> {
    MarketPlan::load(&state.db, id).await?.ok_or_else(|| ApiError::NotFound(format!("market {id} not found")))
}

/// A market the program can still create: pending or open.
fn creatable(plan: &MarketPlan) -> Result<(), ApiError> {
    match plan.status.as_str() {
        "pending" | "open" => Ok(()),
        other => Err(ApiError::MarketClosed(format!("the market is {other}"))),
    }
}

pub async fn ensure_onchain(State(state): State<AppState>, TokenCaller(caller): TokenCaller, ApiPath(id): ApiPath<Uuid>) -> Result<Data<Value>, ApiError> {
    let onchain = onchain(&state)?;
    let plan = plan(&state, id).await?;
    let pda = client::market_pda(id.as_bytes());
    if onchain.chain().account(&pda.to_string()).await.map_err(chain_error)?.is_some() {
        return Ok(Data::new(json!({"market_id": id, "pda": pda.to_string(), "status": "ready"})));
    }
    creatable(&plan)?;
    let wallet = caller.wallet.parse().map_err(ApiError::internal)?;
    let (blockhash, _) = onchain.chain().latest_blockhash().await.map_err(chain_error)?;
    let message = solana_message::Message::new_with_blockhash(
        &[onchain.create_market_instruction(&plan, &wallet)],
        Some(&wallet),
        &blockhash.parse().map_err(ApiError::internal)?,
    );
    let unsigned = Transaction::new_unsigned(message);
    let wire = bincode::serialize(&unsigned).map_err(ApiError::internal)?;
    Ok(Data::new(json!({"market_id": id, "status": "needs_cosign", "transaction": BASE64.encode(wire)})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoSignBody {
    transaction: String,
}

#[derive(Serialize)]
pub struct CoSigned {
    transaction: String,
}

pub async fn co_sign(
    State(state): State<AppState>,
    TokenCaller(caller): TokenCaller,
    _: ReplayChecked,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<CoSignBody>,
) -> Result<Data<CoSigned>, ApiError> {
    let onchain = onchain(&state)?;
    // Base64 of the largest transaction a cluster accepts, and not a byte more.
    if body.transaction.len() > MAX_TRANSACTION.div_ceil(3) * 4 {
        return Err(ApiError::InvalidInput(format!("transaction is larger than {MAX_TRANSACTION} bytes")));
    }
    let wire = BASE64.decode(body.transaction.trim()).map_err(|_| ApiError::InvalidInput("transaction is not base64".into()))?;
    let mut tx: VersionedTransaction = bincode::deserialize(&wire).map_err(|_| ApiError::InvalidInput("transaction is not a Solana transaction".into()))?;
    if bincode::serialized_size(&tx).ok() != Some(wire.len() as u64) {
        return Err(ApiError::InvalidInput("transaction has trailing bytes".into()));
    }
    let plan = plan(&state, id).await?;
    creatable(&plan)?;
    let wallet = caller.wallet.parse().map_err(ApiError::internal)?;
    let expected = onchain.create_market_instruction(&plan, &wallet);
    cosign::check(&tx, &expected, &wallet, &onchain.authority()).map_err(|r| refused("COSIGN_REFUSED", r.to_string()))?;
    let blockhash = tx.message.recent_blockhash().to_string();
    if !onchain.chain().is_blockhash_valid(&blockhash).await.map_err(chain_error)? {
        return Err(refused("COSIGN_REFUSED", "the blockhash is not recent; ask ensure-onchain for a new transaction"));
    }
    onchain.authority_sign(&mut tx).map_err(ApiError::internal)?;
    let wire = bincode::serialize(&tx).map_err(ApiError::internal)?;
    Ok(Data::new(CoSigned { transaction: BASE64.encode(wire) }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfirmBody {
    market_id: String,
    tx_sig: String,
    side: String,
    shares: String,
}

#[derive(Serialize)]
pub struct Confirmed {
    trade_id: Uuid,
    side: String,
    shares: String,
    cost_usdc: String,
    fee_usdc: String,
    new_yes_price: String,
    new_no_price: String,
}

/// Records a trade the caller's wallet sent itself. Idempotent per signature: the events are
/// projected once whoever sees them first (this call or the indexer), and the answer is
/// rebuilt from the chain every time.
pub async fn confirm(State(state): State<AppState>, TokenCaller(caller): TokenCaller, _: ReplayChecked, ApiJson(body): ApiJson<ConfirmBody>) -> Result<Data<Confirmed>, ApiError> {
    let onchain = onchain(&state)?;
    let market_id: Uuid = body.market_id.parse().map_err(|_| ApiError::InvalidInput("market_id must be a UUID".into()))?;
    let side = match body.side.as_str() {
        "yes" => Side::Yes,
        "no" => Side::No,
        _ => return Err(ApiError::InvalidInput("side must be yes or no".into())),
    };
    let shares = money::parse_micros(&body.shares).map_err(|e| ApiError::InvalidInput(format!("shares {e}")))?;
    if bs58::decode(&body.tx_sig).into_vec().map(|b| b.len()) != Ok(64) {
        return Err(ApiError::InvalidInput("tx_sig must be a base58 transaction signature".into()));
    }
    let market = plan(&state, market_id).await?;
    let pda = client::market_pda(market_id.as_bytes());
    if onchain.chain().account(&pda.to_string()).await.map_err(chain_error)?.is_none() {
        return Err(ApiError::PdaNotFound(format!("market {market_id} has no program account yet; call ensure-onchain")));
    }
    market.link(&state.db).await?;
    let Some(tx) = onchain.landed(&body.tx_sig).await.map_err(chain_error)? else {
        return Err(refused("TRANSACTION_NOT_FOUND", "the chain has no confirmed transaction with this signature"));
    };
    if tx.err.is_some() {
        return Err(refused("TRANSACTION_FAILED", "the transaction failed on chain"));
    }
    if !tx.signers.contains(&caller.wallet) {
        return Err(refused("NOT_YOUR_TRANSACTION", "the transaction was not signed by the caller's wallet"));
    }
    let trade = onchain::trades_in(&tx)
        .find(|e| e.market == pda && e.wallet.to_string() == caller.wallet && e.side == side && e.shares == shares)
        .ok_or_else(|| refused("TRADE_MISMATCH", "the transaction holds no trade of the caller on this market with this side and shares"))?;
    let trade_id: Uuid = sqlx::query_scalar("SELECT id FROM trades WHERE signature = $1 AND wallet = $2 AND shares = $3 LIMIT 1")
        .bind(&tx.signature)
        .bind(&caller.wallet)
        .bind(trade.shares as i64)
        .fetch_one(&state.db)
        .await?;
    Ok(Data::new(Confirmed {
        trade_id,
        side: body.side,
        shares: micros(trade.shares as i64),
        cost_usdc: micros(trade.amount as i64),
        fee_usdc: micros(trade.fee as i64),
        new_yes_price: micros(trade.yes_price as i64),
        new_no_price: micros(trade.no_price as i64),
    }))
}
