//! Custodial trading, the deposit address, the balance and the test-USDC faucet. Every trade
//! goes through the program: the operator signs `buy_shares` / `sell_shares` for the caller's
//! wallet, so there is one price per market whoever trades. A trade's signature is recorded in
//! its `SignatureLog` before it is sent (the idempotency key keeps it, so a retry after a crash
//! asks the chain instead of trading twice).

use anchor_lang::prelude::Pubkey;
use chrono::Utc;
use funding_market::client;
use funding_market::events::TradeExecuted;
use uuid::Uuid;

use super::deposits;
use super::idempotency::SignatureLog;
use super::{ServiceError, Services};
use crate::chain::{OnChain, Signed};
use crate::domain::caller::Caller;
use crate::domain::market::{MarketStatus, Side, per_share};
use crate::domain::money::{self, micros};
use crate::store::deposits as deposit_store;
use crate::store::markets::{MarketPlan, TraderAmount};
use crate::store::{faucet, markets, operator_budget, positions};

/// The faucet's cap per wallet and UTC day: 10,000 test USDC.
pub const FAUCET_DAILY_CAP: u64 = 10_000 * 1_000_000;

/// A trade as the program executed it (integers; `cost` is the USDC paid for a buy, received
/// before the fee for a sell).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Traded {
    pub trade_id: Uuid,
    pub side: Side,
    pub shares: u64,
    pub price_per_share: i64,
    pub cost: u64,
    pub fee: u64,
    pub yes_price: u64,
    pub no_price: u64,
}

pub struct BuyOrder {
    pub side: Side,
    pub usdc_amount: u64,
    pub min_shares: u64,
}

pub struct SellOrder {
    pub side: Side,
    pub shares: u64,
    pub min_usdc_out: u64,
}

fn wallet_key(caller: &Caller) -> Result<Pubkey, ServiceError> {
    caller.wallet.parse().map_err(|_| ServiceError::internal(format!("stored wallet {} is not an address", caller.wallet)))
}

/// The id of the trade row the projection made of event `e` of transaction `signature`, read
/// back: the trade of that wallet, market, side, direction and size (a transaction may hold
/// several). For a transaction that may have been projected before trade ids were derived from
/// the event (`events::trade_id`): a recovery, a wallet's own trade.
pub(super) async fn projected_trade_id(s: &Services, signature: &str, e: &TradeExecuted) -> Result<Uuid, ServiceError> {
    let (wallet, market_address) = (e.wallet.to_string(), e.market.to_string());
    let trade =
        markets::TradeInTransaction { signature, wallet: &wallet, market_address: &market_address, side: e.side.into(), is_buy: e.is_buy, shares: e.shares };
    markets::trade_id(&s.db, &trade).await?.ok_or_else(|| ServiceError::internal(format!("trade {signature} was not projected")))
}

/// The trade row `trade_id` (projected when it landed) and the event's figures.
fn traded(trade_id: Uuid, e: &TradeExecuted) -> Traded {
    Traded {
        trade_id,
        side: e.side.into(),
        shares: e.shares,
        price_per_share: per_share(e.amount as i64, e.shares as i64),
        cost: e.amount,
        fee: e.fee,
        yes_price: e.yes_price,
        no_price: e.no_price,
    }
}

/// What was read of market `id` with the trader's side of it, or 404 if there is no such market.
fn known<T>(id: Uuid, read: Option<(MarketPlan, T)>) -> Result<(MarketPlan, T), ServiceError> {
    read.ok_or_else(|| ServiceError::NotFound(format!("market {id} not found")))
}

/// A market ready to trade: open, and on chain (created now if it is not yet).
async fn open_market(s: &Services, onchain: &OnChain, plan: &MarketPlan) -> Result<(), ServiceError> {
    if plan.status != MarketStatus::Open {
        return Err(ServiceError::MarketClosed(format!("the market is {}, not open", plan.status)));
    }
    markets::link(&s.db, plan).await?;
    onchain.ensure_market(plan).await?;
    Ok(())
}

/// Buys for the caller; the signature goes to `log` before the transaction is sent.
pub async fn buy(s: &Services, caller: &Caller, id: Uuid, order: BuyOrder, log: SignatureLog<'_>) -> Result<Traded, ServiceError> {
    let onchain = s.onchain()?;
    let terms = onchain.terms();
    if order.usdc_amount < terms.min_trade {
        return Err(ServiceError::InvalidInput(format!("usdc_amount must be at least {}", money::places(terms.min_trade as i128, 6, 2))));
    }
    let fee = terms.fee(order.usdc_amount).ok_or_else(|| ServiceError::InvalidInput("usdc_amount is too large".into()))?;
    let wallet = wallet_key(caller)?;
    // The market and the balance in one read (with the other trades' of the moment); the
    // balance cannot change by the market being created on chain.
    let (plan, available) = known(id, s.trade_plans.read(id, &caller.wallet, TraderAmount::Spendable).await?)?;
    open_market(s, onchain, &plan).await?;
    // Amounts parse up to u64::MAX micro-USDC: compare without overflowing.
    if available < order.usdc_amount.saturating_add(fee) {
        let shown = |v: u64| money::places(v as i128, 6, 6);
        return Err(ServiceError::InsufficientBalance(format!(
            "{} USDC plus a {} USDC fee exceeds the available balance",
            shown(order.usdc_amount),
            shown(fee)
        )));
    }
    let signed = onchain.sign_buy(id, &wallet, order.side, order.usdc_amount, order.min_shares).await?;
    log.sending(&signed.signature).await?;
    submit(s, id, signed).await
}

/// Sells for the caller; the signature goes to `log` before the transaction is sent.
pub async fn sell(s: &Services, caller: &Caller, id: Uuid, order: SellOrder, log: SignatureLog<'_>) -> Result<Traded, ServiceError> {
    let onchain = s.onchain()?;
    let wallet = wallet_key(caller)?;
    let (plan, held) = known(id, s.trade_plans.read(id, &caller.wallet, TraderAmount::Shares(order.side)).await?)?;
    open_market(s, onchain, &plan).await?;
    if held < order.shares {
        return Err(ServiceError::InsufficientShares(format!("the position holds {} {} shares", micros(held as i64), order.side.as_str())));
    }
    let signed = onchain.sign_sell(id, &wallet, order.side, order.shares, order.min_usdc_out).await?;
    log.sending(&signed.signature).await?;
    submit(s, id, signed).await
}

/// Sends a signed trade in `market` and waits for it to be confirmed and projected, at most
/// `Services::answer_within` (then `Pending`: a confirmation can take up to a minute on a
/// cluster, and the projection may wait behind an indexer batch). The sending runs in a task
/// of its own, so it carries on to the end whether or not the answer still waits for it.
/// Once projected, the market's held row is dropped: the caller's next read shows its trade
/// (other processes see it when the notice arrives).
async fn submit(s: &Services, market: Uuid, signed: Signed) -> Result<Traded, ServiceError> {
    let signature = signed.signature.clone();
    let services = s.clone();
    let sending = tokio::spawn(async move {
        // Projected by this submit (or already by the indexer, with the same derived id).
        let trade = services.onchain()?.submit_trade(&signed).await?;
        services.market_cache.forget(market);
        Ok(traded(trade.id, &trade.event))
    });
    match tokio::time::timeout(s.answer_within, sending).await {
        Ok(finished) => finished.map_err(ServiceError::internal)?,
        Err(_) => Err(ServiceError::Pending { signature }),
    }
}

/// The trade of a transaction sent earlier, if it landed (crash recovery of an idempotent
/// request).
pub async fn recover(s: &Services, signature: &str) -> Result<Option<Traded>, ServiceError> {
    match s.onchain()?.landed_trade(signature).await? {
        Some(trade) => Ok(Some(traded(projected_trade_id(s, signature, &trade.event).await?, &trade.event))),
        None => Ok(None),
    }
}

pub struct DepositAddress {
    pub address: String,
    pub min_deposit: u64,
}

/// The caller's deposit account. Their user accounts are created on chain first if needed, the
/// operator paying the rent within its daily budget (`Services::new_users_per_day`); once that is
/// spent, 429 until the next UTC day, or the wallet creates them itself (`create_user` paid by
/// the wallet) and this answers at once.
pub async fn deposit_address(s: &Services, caller: &Caller) -> Result<DepositAddress, ServiceError> {
    let onchain = s.onchain()?;
    let wallet = wallet_key(caller)?;
    if !onchain.user_exists(&wallet).await? {
        let now = Utc::now();
        let day = now.date_naive();
        if !operator_budget::reserve_user(&s.db, day, s.new_users_per_day).await? {
            let tomorrow = day.succ_opt().and_then(|d| d.and_hms_opt(0, 0, 0)).map_or(now, |t| t.and_utc());
            return Err(ServiceError::BudgetSpent {
                retry_after_secs: (tomorrow - now).num_seconds().max(1) as u64,
                message: "the service has paid for as many new users' accounts today as it does in a day; create yours from your wallet \
                          (the program's create_user, about 0.0057 SOL of rent) or retry after 00:00 UTC"
                    .into(),
            });
        }
        if let Err(e) = onchain.ensure_user(&wallet).await {
            operator_budget::release_user(&s.db, day).await?;
            return Err(e.into());
        }
    }
    let address = client::deposit_pda(&wallet).to_string();
    deposit_store::watch(&s.db, &address, &caller.wallet).await?;
    Ok(DepositAddress { address, min_deposit: onchain.terms().min_deposit })
}

/// Available USDC (the vault) and the cost basis of open positions, micro-USDC.
pub struct Balance {
    pub available: i64,
    pub locked: i64,
}

pub async fn balance(s: &Services, caller: &Caller) -> Result<Balance, ServiceError> {
    let (available, locked) = positions::balance(&s.db, &caller.wallet).await?;
    Ok(Balance { available: available as i64, locked })
}

pub struct FaucetGrant {
    pub wallet: String,
    pub amount: u64,
    pub usdc_balance: u64,
    pub remaining_today: u64,
}

/// Test USDC for a wallet (embedded chain only; `FAUCET_DAILY_CAP` per wallet and UTC day).
pub async fn faucet(s: &Services, wallet: &str, amount: u64) -> Result<FaucetGrant, ServiceError> {
    let onchain = s.onchain()?;
    if !matches!(onchain.chain(), crate::chain::AnyChain::Embedded(_)) {
        return Err(ServiceError::NotFound("the faucet exists only on the embedded chain".into()));
    }
    let wallet: Pubkey = wallet.parse().map_err(|_| ServiceError::InvalidInput("wallet_address is not a Solana address".into()))?;
    let over_cap = || ServiceError::InvalidInput(format!("the faucet gives at most {} USDC per wallet per day", micros(FAUCET_DAILY_CAP as i64)));
    if amount > FAUCET_DAILY_CAP {
        return Err(over_cap());
    }
    let day = Utc::now().date_naive();
    // Reserved under the cap first, so concurrent requests cannot exceed it.
    let granted = faucet::reserve(&s.db, &wallet.to_string(), day, amount, FAUCET_DAILY_CAP).await?.ok_or_else(over_cap)?;
    // Minted into the deposit address, then found and swept like any deposit (below the
    // minimum it waits there, as real dust does).
    if let Err(e) = onchain.mint_test_usdc(&wallet, amount).await {
        faucet::release(&s.db, &wallet.to_string(), day, amount).await?;
        return Err(e.into());
    }
    let address = client::deposit_pda(&wallet).to_string();
    let wallet = wallet.to_string();
    deposit_store::watch(&s.db, &address, &wallet).await?;
    let usdc_balance = deposits::reconcile_wallet(s, &wallet).await?;
    Ok(FaucetGrant { wallet, amount, usdc_balance, remaining_today: FAUCET_DAILY_CAP - granted })
}
