//! Money in: USDC sent to a user's deposit address is detected — from a webhook
//! (`record_reported`) or by reconciliation reading the chain (`reconcile`) — recorded once per
//! (transaction, address), and swept into the vault (`sweep_deposit`, permissionless) once the
//! address holds the minimum deposit; less waits there and adds up. The sweep is the credit:
//! the vault balance moves only with the USDC itself, so a webhook can tell us where to look
//! but never creates a balance.

use anchor_lang::prelude::Pubkey;
use chain_client::{ChainSource, token};
use indexer::deposits::{self as ledger, Source};

use super::{ServiceError, Services};
use crate::chain::{OnChainError, Refusal};
use crate::domain::caller::Caller;
use crate::services::Page;
use crate::store::deposits::{self, DepositRow, WatchedAddress};
use crate::store::positions;

/// USDC a transaction put into a token account, as a webhook reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportedTransfer {
    pub signature: String,
    pub slot: u64,
    pub token_account: String,
    /// Base units (micro-USDC): the account's raw balance change.
    pub amount: u64,
}

/// What a webhook delivery amounted to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    /// Transfers recorded for the first time.
    pub new: usize,
    /// Transfers already recorded (a repeated delivery).
    pub repeated: usize,
    /// The wallets whose deposit addresses received something.
    pub wallets: Vec<String>,
}

/// Records reported transfers into deposit addresses (others are not ours and are skipped).
pub async fn record_reported(s: &Services, reported: &[ReportedTransfer]) -> Result<Recorded, ServiceError> {
    let addresses: Vec<String> = reported.iter().map(|r| r.token_account.clone()).collect();
    let owners = deposits::owners(&s.db, &addresses).await?;
    let mut recorded = Recorded::default();
    for r in reported {
        let Some(wallet) = owners.get(&r.token_account) else {
            tracing::info!(signature = %r.signature, account = %r.token_account, "webhook transfer to an account that is no deposit address; ignored");
            continue;
        };
        let mut db = s.db.begin().await?;
        let new = ledger::record_transfer(&mut db, &r.signature, &r.token_account, wallet, r.amount, r.slot, Source::Webhook).await?;
        db.commit().await?;
        if new {
            recorded.new += 1
        } else {
            recorded.repeated += 1
        }
        if !recorded.wallets.contains(wallet) {
            recorded.wallets.push(wallet.clone());
        }
    }
    Ok(recorded)
}

/// Brings one deposit address up to date against its on-chain `balance`: sweeps it once it
/// holds the minimum deposit, then reads the transactions it has not read yet — always after a
/// sweep (whoever made it), else only when the balance holds more than the recorded transfers
/// explain (a webhook missed). The read comes after the sweep because a sweep takes whatever
/// the address holds when it lands: a transfer arriving between a read and the sweep would be
/// swept unrecorded, and the emptied address would give no later pass a reason to read again
/// (two sweeps set off at once by a repeated webhook delivery did exactly that). Read after,
/// the history holds every transfer the sweep took, and each is credited by it as it is
/// recorded (`indexer::deposits::match_sweeps`). Dust that waits below the minimum is not read
/// again pass after pass.
async fn reconcile_address(s: &Services, watched: &WatchedAddress, balance: u64) -> Result<(), ServiceError> {
    let onchain = s.onchain()?;
    let sweeping = balance >= onchain.terms().min_deposit;
    if sweeping {
        let wallet: Pubkey = watched.wallet.parse().map_err(ServiceError::internal)?;
        match onchain.sweep(&wallet).await {
            // `BelowMinimumDeposit`: swept meanwhile by someone else (the sweep is permissionless).
            Ok(_) | Err(OnChainError::Refused(Refusal::BelowMinimumDeposit)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    if sweeping || balance as i64 > watched.unswept {
        read_history(s, watched).await?;
    }
    Ok(())
}

/// Whether a deposit address needs `reconcile_address`: it holds something, or sweeps took more
/// than its recorded transfers (`unswept` below zero: a transfer was swept unrecorded — its
/// history read failed after the sweep, or another sweep took it — and only a read of the
/// emptied address records it).
fn needs_reconciling(watched: &WatchedAddress, balance: u64) -> bool {
    balance > 0 || watched.unswept < 0
}

/// Records every transfer into the address since its cursor, then moves the cursor.
async fn read_history(s: &Services, watched: &WatchedAddress) -> Result<(), ServiceError> {
    let chain = s.onchain()?.chain();
    let signatures = chain.signatures_after(&watched.address, watched.cursor.as_deref()).await?;
    for info in signatures.iter().filter(|i| !i.failed) {
        let Some(tx) = chain.transaction(&info.signature).await? else { continue };
        let change = token::balance_change(&tx, &watched.address);
        if change <= 0 {
            continue;
        }
        let mut db = s.db.begin().await?;
        let new = ledger::record_transfer(&mut db, &tx.signature, &watched.address, &watched.wallet, change as u64, tx.slot, Source::Reconciliation).await?;
        db.commit().await?;
        if new {
            tracing::info!(wallet = %watched.wallet, signature = %tx.signature, amount = change as u64, "deposit found by reconciliation");
        }
    }
    if let Some(last) = signatures.last() {
        deposits::advance_cursor(&s.db, &watched.address, watched.cursor.as_deref(), &last.signature).await?;
    }
    Ok(())
}

/// Addresses read per pass step (one `getMultipleAccounts` call each 100).
const ADDRESSES_PER_STEP: i64 = 500;

/// One reconciliation pass over every deposit address: balances read in batches, each address
/// with money waiting brought up to date. How many addresses it acted on.
pub async fn reconcile(s: &Services) -> Result<usize, ServiceError> {
    let onchain = s.onchain()?;
    let mut after: Option<String> = None;
    let mut acted = 0;
    loop {
        let page = deposits::watched(&s.db, after.as_deref(), ADDRESSES_PER_STEP).await?;
        let Some(last) = page.last() else { break };
        after = Some(last.address.clone());
        let keys: Vec<Pubkey> = page.iter().map(|w| w.address.parse()).collect::<Result<_, _>>().map_err(ServiceError::internal)?;
        let balances = onchain.token_balances(&keys).await?;
        for (watched, balance) in page.iter().zip(balances) {
            let balance = balance.unwrap_or(0);
            if !needs_reconciling(watched, balance) {
                continue;
            }
            // One address's trouble must not hold up the others.
            match reconcile_address(s, watched, balance).await {
                Ok(_) => acted += 1,
                Err(e) => tracing::warn!(wallet = %watched.wallet, error = %e, "deposit reconciliation failed; retried next pass"),
            }
        }
        if (page.len() as i64) < ADDRESSES_PER_STEP {
            break;
        }
    }
    Ok(acted)
}

/// Reconciles one wallet's deposit address now (after the faucet, or a webhook naming it): its
/// available balance afterwards.
pub async fn reconcile_wallet(s: &Services, wallet: &str) -> Result<u64, ServiceError> {
    let onchain = s.onchain()?;
    if let Some(watched) = deposits::watched_wallet(&s.db, wallet).await? {
        let address: Pubkey = watched.address.parse().map_err(ServiceError::internal)?;
        let balance = onchain.token_balances(&[address]).await?.pop().flatten().unwrap_or(0);
        if needs_reconciling(&watched, balance) {
            reconcile_address(s, &watched, balance).await?;
        }
    }
    Ok(positions::available_balance(&s.db, wallet).await?)
}

/// The caller's deposits, newest first.
/// One of the caller's deposits (the WebSocket's deposit updates).
pub async fn get(s: &Services, caller: &Caller, signature: &str, address: &str) -> Result<DepositRow, ServiceError> {
    deposits::get(&s.db, &caller.wallet, signature, address).await?.ok_or_else(|| ServiceError::NotFound(format!("no deposit {signature} to {address}")))
}

pub async fn list(s: &Services, caller: &Caller, page: Page) -> Result<Vec<DepositRow>, ServiceError> {
    Ok(deposits::list(&s.db, &caller.wallet, page.limit, page.offset).await?)
}
