//! The wallet-signed path (contract "On-chain integration"): `ensure_onchain` hands out the
//! market's `create_market` for the wallet to pay, `co_sign` adds the authority's signature to
//! exactly that transaction, and `confirm` records a trade the wallet sent itself once it is
//! confirmed on chain.
//!
//! Refusal codes beyond the contract (all 422): `COSIGN_REFUSED` (not exactly the expected
//! transaction, or a stale blockhash), `TRANSACTION_NOT_FOUND` (the chain does not know the
//! signature at `confirmed`), `TRANSACTION_FAILED`, `NOT_YOUR_TRANSACTION` (the caller did not
//! sign it), `TRADE_MISMATCH` (no trade of the caller on that market with that side and
//! shares); `PDA_NOT_FOUND` for a market not on chain.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use funding_market::client;
use solana_transaction::Transaction;
use solana_transaction::versioned::VersionedTransaction;
use uuid::Uuid;

use super::{ServiceError, Services};
use crate::chain;
use crate::chain::cosign::{self, MAX_TRANSACTION};
use crate::domain::caller::Caller;
use crate::domain::market::Side;
use crate::store::markets::{self, MarketPlan};

async fn plan(s: &Services, id: Uuid) -> Result<MarketPlan, ServiceError> {
    markets::plan(&s.db, id).await?.ok_or_else(|| ServiceError::NotFound(format!("market {id} not found")))
}

/// A market the program can still create: pending or open.
fn creatable(plan: &MarketPlan) -> Result<(), ServiceError> {
    if plan.status.is_creatable() { Ok(()) } else { Err(ServiceError::MarketClosed(format!("the market is {}", plan.status))) }
}

fn wallet_of(caller: &Caller) -> Result<anchor_lang::prelude::Pubkey, ServiceError> {
    caller.wallet.parse().map_err(ServiceError::internal)
}

/// Where a market stands for the wallet path.
pub enum Ensured {
    /// On chain at this address.
    Ready { pda: String },
    /// Not yet: this unsigned `create_market` (base64 wire), paid by the caller, needs the
    /// authority's co-signature.
    NeedsCosign { transaction: String },
}

pub async fn ensure_onchain(s: &Services, caller: &Caller, id: Uuid) -> Result<Ensured, ServiceError> {
    let onchain = s.onchain()?;
    let plan = plan(s, id).await?;
    let pda = client::market_pda(id.as_bytes());
    if onchain.chain().account(&pda.to_string()).await?.is_some() {
        return Ok(Ensured::Ready { pda: pda.to_string() });
    }
    creatable(&plan)?;
    let wallet = wallet_of(caller)?;
    let (blockhash, _) = onchain.chain().latest_blockhash().await?;
    let message = solana_message::Message::new_with_blockhash(
        &[onchain.create_market_instruction(&plan, &wallet)],
        Some(&wallet),
        &blockhash.parse().map_err(ServiceError::internal)?,
    );
    let wire = bincode::serialize(&Transaction::new_unsigned(message)).map_err(ServiceError::internal)?;
    Ok(Ensured::NeedsCosign { transaction: BASE64.encode(wire) })
}

/// The caller's `create_market` transaction (base64), co-signed by the authority.
pub async fn co_sign(s: &Services, caller: &Caller, id: Uuid, transaction: &str) -> Result<String, ServiceError> {
    let onchain = s.onchain()?;
    // Base64 of the largest transaction a cluster accepts, and not a byte more.
    if transaction.len() > MAX_TRANSACTION.div_ceil(3) * 4 {
        return Err(ServiceError::InvalidInput(format!("transaction is larger than {MAX_TRANSACTION} bytes")));
    }
    let wire = BASE64.decode(transaction.trim()).map_err(|_| ServiceError::InvalidInput("transaction is not base64".into()))?;
    let mut tx: VersionedTransaction = bincode::deserialize(&wire).map_err(|_| ServiceError::InvalidInput("transaction is not a Solana transaction".into()))?;
    if bincode::serialized_size(&tx).ok() != Some(wire.len() as u64) {
        return Err(ServiceError::InvalidInput("transaction has trailing bytes".into()));
    }
    let plan = plan(s, id).await?;
    creatable(&plan)?;
    let wallet = wallet_of(caller)?;
    let expected = onchain.create_market_instruction(&plan, &wallet);
    cosign::check(&tx, &expected, &wallet, &onchain.authority()).map_err(|r| ServiceError::refused("COSIGN_REFUSED", r.to_string()))?;
    let blockhash = tx.message.recent_blockhash().to_string();
    if !onchain.chain().is_blockhash_valid(&blockhash).await? {
        return Err(ServiceError::refused("COSIGN_REFUSED", "the blockhash is not recent; ask ensure-onchain for a new transaction"));
    }
    onchain.authority_sign(&mut tx).map_err(ServiceError::internal)?;
    Ok(BASE64.encode(bincode::serialize(&tx).map_err(ServiceError::internal)?))
}

/// A trade the caller's wallet sent itself, as the program executed it.
pub struct Confirmed {
    pub trade_id: Uuid,
    pub side: Side,
    pub shares: u64,
    pub cost: u64,
    pub fee: u64,
    pub yes_price: u64,
    pub no_price: u64,
}

/// Records a trade the caller's wallet sent itself. Idempotent per signature: the events are
/// projected once whoever sees them first (this call or the indexer), and the answer is
/// rebuilt from the chain every time.
pub async fn confirm(s: &Services, caller: &Caller, market_id: Uuid, signature: &str, side: Side, shares: u64) -> Result<Confirmed, ServiceError> {
    let onchain = s.onchain()?;
    if bs58::decode(signature).into_vec().map(|b| b.len()) != Ok(64) {
        return Err(ServiceError::InvalidInput("tx_sig must be a base58 transaction signature".into()));
    }
    let market = plan(s, market_id).await?;
    let pda = client::market_pda(market_id.as_bytes());
    if onchain.chain().account(&pda.to_string()).await?.is_none() {
        return Err(ServiceError::PdaNotFound(format!("market {market_id} has no program account yet; call ensure-onchain")));
    }
    markets::link(&s.db, &market).await?;
    let Some(tx) = onchain.landed(signature).await? else {
        return Err(ServiceError::refused("TRANSACTION_NOT_FOUND", "the chain has no confirmed transaction with this signature"));
    };
    if let Some(err) = &tx.err {
        return Err(ServiceError::refused("TRANSACTION_FAILED", format!("the transaction failed on chain: {err}")));
    }
    if !tx.signers.contains(&caller.wallet) {
        return Err(ServiceError::refused("NOT_YOUR_TRANSACTION", "the transaction was not signed by the caller's wallet"));
    }
    let trade = chain::trades_in(&tx)
        .map(|trade| trade.event)
        .find(|e| e.market == pda && e.wallet.to_string() == caller.wallet && Side::from(e.side) == side && e.shares == shares)
        .ok_or_else(|| ServiceError::refused("TRADE_MISMATCH", "the transaction holds no trade of the caller on this market with this side and shares"))?;
    let trade_id = super::trading::projected_trade_id(s, &tx.signature, &trade).await?;
    Ok(Confirmed { trade_id, side, shares: trade.shares, cost: trade.amount, fee: trade.fee, yes_price: trade.yes_price, no_price: trade.no_price })
}
