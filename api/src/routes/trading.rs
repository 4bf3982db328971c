//! Custodial trading (`POST /v1/markets/{id}/trade`, `…/sell`), the deposit address, the
//! balance, and the test-USDC faucet. Every trade goes through the program: the operator signs
//! `buy_shares` / `sell_shares` for the caller's wallet, so there is one price per market
//! whoever trades.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use funding_market::client;
use funding_market::events::TradeExecuted;
use funding_market::state::Side;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::Caller;
use crate::auth::extract::AnyCaller;
use crate::envelope::{self, Data};
use crate::extract::{ApiJson, ApiPath};
use crate::idempotency::{self, Claim, IdempotencyKey};
use crate::money::{self, micros};
use crate::onchain::{MarketPlan, OnChain, OnChainError, TradeRefusal};
use crate::{ApiError, AppState};

/// The faucet's cap per wallet and UTC day: 10,000 test USDC.
pub const FAUCET_DAILY_CAP: u64 = 10_000 * 1_000_000;

fn onchain(state: &AppState) -> Result<&OnChain, ApiError> {
    state.onchain.as_ref().ok_or_else(|| ApiError::internal("no chain configured"))
}

fn wallet_key(caller: &Caller) -> Result<anchor_lang::prelude::Pubkey, ApiError> {
    caller.wallet.parse().map_err(|_| ApiError::internal(format!("stored wallet {} is not an address", caller.wallet)))
}

fn side(s: &str) -> Result<Side, ApiError> {
    match s {
        "yes" => Ok(Side::Yes),
        "no" => Ok(Side::No),
        _ => Err(ApiError::InvalidInput("side must be yes or no".into())),
    }
}

fn amount(field: &str, value: &str) -> Result<u64, ApiError> {
    money::parse_micros(value).map_err(|e| ApiError::InvalidInput(format!("{field} {e}")))
}

fn chain_error(e: OnChainError) -> ApiError {
    match e {
        OnChainError::Refused(TradeRefusal::InsufficientBalance) => ApiError::InsufficientBalance("not enough USDC for the amount and the fee".into()),
        OnChainError::Refused(TradeRefusal::InsufficientShares) => ApiError::InsufficientShares("the position holds fewer shares".into()),
        OnChainError::Refused(TradeRefusal::MarketClosed) => ApiError::MarketClosed("the market is not open for trading".into()),
        OnChainError::Refused(TradeRefusal::Slippage) => ApiError::SlippageExceeded("the price moved past the bound given".into()),
        OnChainError::Refused(TradeRefusal::TooSmall) => ApiError::InvalidInput("the trade is below the minimum or buys no shares".into()),
        OnChainError::NoFaucet => ApiError::NotFound("the faucet exists only on the embedded chain".into()),
        other => ApiError::internal(other),
    }
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BuyBody {
    side: String,
    usdc_amount: String,
    #[serde(default)]
    min_shares: Option<String>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SellBody {
    side: String,
    shares: String,
    #[serde(default)]
    min_usdc_out: Option<String>,
}

/// The contract's "result of placing a trade" (selling reports `cost_usdc` as the USDC
/// received before the fee).
#[derive(Serialize)]
struct TradeResult {
    trade_id: Uuid,
    side: &'static str,
    shares: String,
    price_per_share: String,
    cost_usdc: String,
    fee_usdc: String,
    new_yes_price: String,
    new_no_price: String,
}

async fn trade_result(state: &AppState, signature: &str, e: &TradeExecuted) -> Result<TradeResult, ApiError> {
    let trade_id: Uuid = sqlx::query_scalar("SELECT id FROM trades WHERE signature = $1 AND wallet = $2")
        .bind(signature)
        .bind(e.wallet.to_string())
        .fetch_one(&state.db)
        .await?;
    let price = money::per_share(e.amount as i64, e.shares as i64);
    Ok(TradeResult {
        trade_id,
        side: if e.side == Side::Yes { "yes" } else { "no" },
        shares: micros(e.shares as i64),
        price_per_share: micros(price),
        cost_usdc: micros(e.amount as i64),
        fee_usdc: micros(e.fee as i64),
        new_yes_price: micros(e.yes_price as i64),
        new_no_price: micros(e.no_price as i64),
    })
}

/// A market ready to trade: known, open, and on chain.
async fn open_market(state: &AppState, onchain: &OnChain, id: Uuid) -> Result<(), ApiError> {
    let plan = MarketPlan::load(&state.db, id).await?.ok_or_else(|| ApiError::NotFound(format!("market {id} not found")))?;
    if plan.status != "open" {
        return Err(ApiError::MarketClosed(format!("the market is {}, not open", plan.status)));
    }
    plan.link(&state.db).await?;
    onchain.ensure_market(&plan).await.map_err(chain_error)?;
    Ok(())
}

async fn available(state: &AppState, wallet: &str) -> Result<u64, ApiError> {
    let balance: Option<i64> = sqlx::query_scalar("SELECT balance FROM vault_balances WHERE wallet = $1").bind(wallet).fetch_optional(&state.db).await?;
    Ok(balance.unwrap_or(0) as u64)
}

/// Runs a trade under its `Idempotency-Key` (if any): the same key and body answer the first
/// response again; a crash after sending is recovered from the chain (see `idempotency`).
async fn idempotent<F, Fut>(state: &AppState, caller: &Caller, headers: &HeaderMap, route: &str, body: &impl Serialize, run: F) -> Result<Response, ApiError>
where
    F: FnOnce(Option<IdempotencyKey>) -> Fut,
    Fut: Future<Output = Result<TradeResult, ApiError>>,
{
    let Some(key) = idempotency::key(headers)? else {
        return run(None).await.map(|r| Data::new(r).into_response());
    };
    let key = IdempotencyKey { user_id: caller.user_id, key };
    let fingerprint = idempotency::fingerprint(route, body);
    let outcome = match key.claim(&state.db, &fingerprint).await? {
        Claim::Replay { status, body } => {
            return Ok(envelope::stored(StatusCode::from_u16(status).unwrap_or(StatusCode::OK), body));
        }
        Claim::Recover { signature } => match onchain(state)?.landed_trade(&signature).await.map_err(chain_error)? {
            Some(trade) => trade_result(state, &signature, &trade).await,
            None => run(Some(IdempotencyKey { user_id: key.user_id, key: key.key.clone() })).await,
        },
        Claim::Run => run(Some(IdempotencyKey { user_id: key.user_id, key: key.key.clone() })).await,
    };
    match outcome {
        Ok(result) => {
            key.finish(&state.db, 200, &envelope::data_json(&result)).await?;
            Ok(Data::new(result).into_response())
        }
        // A fault of ours may have left a transaction in flight: keep the key unfinished so a
        // retry recovers it from the chain; if nothing was sent, forget it.
        Err(e @ ApiError::Internal(_)) => {
            key.release(&state.db).await?;
            Err(e)
        }
        Err(e) => {
            key.finish(&state.db, e.status().as_u16(), &envelope::error_json(e.status(), e.code(), &e.to_string())).await?;
            Err(e)
        }
    }
}

pub async fn buy(
    State(state): State<AppState>,
    AnyCaller(caller): AnyCaller,
    ApiPath(id): ApiPath<Uuid>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<BuyBody>,
) -> Result<Response, ApiError> {
    let side = side(&body.side)?;
    let usdc = amount("usdc_amount", &body.usdc_amount)?;
    let min_shares = body.min_shares.as_deref().map(|s| amount("min_shares", s)).transpose()?.unwrap_or(0);
    let onchain = onchain(&state)?.clone();
    let config = onchain.program_config();
    if usdc < config.min_trade {
        return Err(ApiError::InvalidInput(format!("usdc_amount must be at least {}", money::places(config.min_trade as i128, 6, 2))));
    }
    let fee = lmsr::fee(usdc, config.fee_bps).map_err(ApiError::internal)?;
    let wallet = wallet_key(&caller)?;
    let route = format!("POST /v1/markets/{id}/trade");
    let (state, onchain, caller) = (&state, &onchain, &caller);
    idempotent(state, caller, &headers, &route, &body, |key| async move {
        open_market(state, onchain, id).await?;
        // Amounts parse up to u64::MAX micro-USDC: compare without overflowing.
        if available(state, &caller.wallet).await? < usdc.saturating_add(fee) {
            let shown = |v: u64| money::places(v as i128, 6, 6);
            return Err(ApiError::InsufficientBalance(format!("{} USDC plus a {} USDC fee exceeds the available balance", shown(usdc), shown(fee))));
        }
        let signed = onchain.sign_buy(id, &wallet, side, usdc, min_shares).await.map_err(chain_error)?;
        if let Some(key) = &key {
            key.sending(&state.db, &signed.signature).await?;
        }
        let trade = onchain.submit_trade(&signed).await.map_err(chain_error)?;
        trade_result(state, &signed.signature, &trade).await
    })
    .await
}

pub async fn sell(
    State(state): State<AppState>,
    AnyCaller(caller): AnyCaller,
    ApiPath(id): ApiPath<Uuid>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<SellBody>,
) -> Result<Response, ApiError> {
    let side = side(&body.side)?;
    let shares = amount("shares", &body.shares)?;
    let min_out = body.min_usdc_out.as_deref().map(|s| amount("min_usdc_out", s)).transpose()?.unwrap_or(0);
    let onchain = onchain(&state)?.clone();
    let wallet = wallet_key(&caller)?;
    let route = format!("POST /v1/markets/{id}/sell");
    let (state, onchain, caller, side_name) = (&state, &onchain, &caller, body.side.as_str());
    idempotent(state, caller, &headers, &route, &body, |key| async move {
        open_market(state, onchain, id).await?;
        let held: Option<(i64, i64)> = sqlx::query_as("SELECT yes_shares, no_shares FROM positions WHERE market_id = $1 AND wallet = $2")
            .bind(id)
            .bind(&caller.wallet)
            .fetch_optional(&state.db)
            .await?;
        let held = held.map_or(0, |(yes, no)| if side == Side::Yes { yes } else { no }) as u64;
        if held < shares {
            return Err(ApiError::InsufficientShares(format!("the position holds {} {side_name} shares", micros(held as i64))));
        }
        let signed = onchain.sign_sell(id, &wallet, side, shares, min_out).await.map_err(chain_error)?;
        if let Some(key) = &key {
            key.sending(&state.db, &signed.signature).await?;
        }
        let trade = onchain.submit_trade(&signed).await.map_err(chain_error)?;
        trade_result(state, &signed.signature, &trade).await
    })
    .await
}

#[derive(Serialize)]
pub struct DepositAddress {
    address: String,
    chain: &'static str,
    token: &'static str,
    min_deposit: String,
}

/// The caller's deposit account (their user accounts are created on chain first if needed).
pub async fn deposit_address(State(state): State<AppState>, AnyCaller(caller): AnyCaller) -> Result<Data<DepositAddress>, ApiError> {
    let onchain = onchain(&state)?;
    let wallet = wallet_key(&caller)?;
    onchain.ensure_user(&wallet).await.map_err(chain_error)?;
    Ok(Data::new(DepositAddress {
        address: client::deposit_pda(&wallet).to_string(),
        chain: "solana",
        token: "USDC",
        min_deposit: money::places(onchain.program_config().min_deposit as i128, 6, 2),
    }))
}

#[derive(Serialize)]
pub struct Balance {
    usdc_balance: String,
    locked_in_positions: String,
    total: String,
}

/// Available USDC (the vault), the cost basis of open positions (`crate::portfolio`), and both.
pub async fn balance(State(state): State<AppState>, AnyCaller(caller): AnyCaller) -> Result<Data<Balance>, ApiError> {
    let available = available(&state, &caller.wallet).await? as i64;
    let locked: i64 = crate::portfolio::open_positions(&state.db, &caller.wallet).await?.iter().map(|p| p.basis).sum();
    Ok(Data::new(Balance { usdc_balance: micros(available), locked_in_positions: micros(locked), total: micros(available + locked) }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaucetBody {
    wallet_address: String,
    amount: String,
}

#[derive(Serialize)]
pub struct FaucetResult {
    wallet_address: String,
    amount: String,
    usdc_balance: String,
    remaining_today: String,
}

/// Test USDC for a wallet (embedded chain only; `FAUCET_DAILY_CAP` per wallet and UTC day).
pub async fn faucet(State(state): State<AppState>, ApiJson(body): ApiJson<FaucetBody>) -> Result<Data<FaucetResult>, ApiError> {
    let onchain = onchain(&state)?;
    if !matches!(onchain.chain(), indexer::chain::AnyChain::Embedded(_)) {
        return Err(ApiError::NotFound("the faucet exists only on the embedded chain".into()));
    }
    let wallet: anchor_lang::prelude::Pubkey = body.wallet_address.parse().map_err(|_| ApiError::InvalidInput("wallet_address is not a Solana address".into()))?;
    let amount = amount("amount", &body.amount)?;
    let over_cap = || ApiError::InvalidInput(format!("the faucet gives at most {} USDC per wallet per day", micros(FAUCET_DAILY_CAP as i64)));
    if amount > FAUCET_DAILY_CAP {
        return Err(over_cap());
    }
    let day = Utc::now().date_naive();
    // Reserve the amount under the cap first, so concurrent requests cannot exceed it: no row
    // comes back when the day's grants would pass it.
    let granted: Option<i64> = sqlx::query_scalar(
        "INSERT INTO faucet_grants (wallet, day, amount) VALUES ($1, $2, $3)
         ON CONFLICT (wallet, day) DO UPDATE SET amount = faucet_grants.amount + EXCLUDED.amount
         WHERE faucet_grants.amount + EXCLUDED.amount <= $4
         RETURNING amount",
    )
    .bind(wallet.to_string())
    .bind(day)
    .bind(amount as i64)
    .bind(FAUCET_DAILY_CAP as i64)
    .fetch_optional(&state.db)
    .await?;
    let granted = granted.ok_or_else(over_cap)? as u64;
    match onchain.faucet(&wallet, amount).await {
        Ok(balance) => Ok(Data::new(FaucetResult {
            wallet_address: wallet.to_string(),
            amount: micros(amount as i64),
            usdc_balance: micros(balance as i64),
            remaining_today: micros((FAUCET_DAILY_CAP - granted) as i64),
        })),
        Err(e) => {
            // The grant did not reach the vault (anything minted waits in the deposit account and
            // is swept with the next deposit): give the allowance back.
            refund_faucet(&state, &wallet, day, amount).await?;
            Err(chain_error(e))
        }
    }
}

async fn refund_faucet(state: &AppState, wallet: &anchor_lang::prelude::Pubkey, day: chrono::NaiveDate, amount: u64) -> Result<(), ApiError> {
    sqlx::query("UPDATE faucet_grants SET amount = amount - $3 WHERE wallet = $1 AND day = $2")
        .bind(wallet.to_string())
        .bind(day)
        .bind(amount as i64)
        .execute(&state.db)
        .await?;
    Ok(())
}
