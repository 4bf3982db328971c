//! Money out: a withdrawal request reserves its amount at once and waits in a
//! queue; the queue worker (`process`) sends it with the operator's signature (`withdraw`, the
//! program checks the vault) and records how it ended.
//!
//! States: pending → processing (the signed transaction and its signature recorded before it is
//! sent) → confirmed (final on chain) | failed (refused or failed on chain; the reservation is
//! released and the reason kept). A crash anywhere is safe: a processing withdrawal is resent
//! as the same signed transaction, which the chain runs at most once, and is only signed anew
//! once its blockhash has expired without it landing — when it can no longer land.

use anchor_lang::prelude::Pubkey;
use chrono::Utc;
use futures_util::StreamExt;
use uuid::Uuid;

use super::{Page, ServiceError, Services};
use crate::chain::money::{self, Payee};
use crate::chain::{OnChain, Signed};
use crate::domain::caller::Caller;
use crate::domain::money::places;
use crate::domain::wallet::WalletAddress;
use crate::store::withdrawals::{self, AccountBudget, BudgetSpent, NewWithdrawal, Queued, WithdrawalRow};

/// The smallest withdrawal: the program's minimum deposit (1.00 USDC), so a withdrawal is never
/// dust that costs more to send than it moves.
fn minimum(onchain: &OnChain) -> u64 {
    onchain.terms().min_deposit
}

/// Withdrawals a user may make in a UTC day to destinations whose token account the operator
/// creates (and pays the rent of); withdrawals to existing token accounts are not limited.
pub const NEW_TOKEN_ACCOUNTS_PER_USER_PER_DAY: u32 = 3;

/// A withdrawal request as the caller gave it.
pub struct Request<'a> {
    pub amount: u64,
    pub destination: &'a str,
    pub idempotency_key: Option<&'a str>,
}

/// Queues a withdrawal of the caller's USDC to `destination` (a wallet or a USDC token
/// account). The same idempotency key answers the withdrawal it made before.
pub async fn request(s: &Services, caller: &Caller, request: Request<'_>) -> Result<WithdrawalRow, ServiceError> {
    let onchain = s.onchain()?;
    let minimum = minimum(onchain);
    if request.amount < minimum {
        return Err(ServiceError::InvalidInput(format!("amount must be at least {} USDC", places(minimum as i128, 6, 2))));
    }
    let destination: Pubkey =
        request.destination.trim().parse().map_err(|_| ServiceError::InvalidInput("destination is not a Solana address (base58, 32 bytes)".into()))?;
    let wallet: Pubkey = caller.wallet.parse().map_err(ServiceError::internal)?;
    if destination == funding_market::client::vault_pda(&wallet) || destination == funding_market::client::deposit_pda(&wallet) {
        return Err(ServiceError::InvalidInput("destination is your own vault or deposit address; give a wallet or another USDC token account".into()));
    }
    let payee: Payee = onchain.payee(&destination).await?;
    // A token account made for an address without a key (a program-derived address) could
    // never be spent from: the USDC would be lost.
    if payee.create_for.is_some() && WalletAddress::parse(&destination.to_string()).is_none() {
        return Err(ServiceError::InvalidInput(
            "destination has no key (it is off the ed25519 curve, as program-derived addresses are) and holds no USDC token account: \
             give a wallet or an existing USDC token account"
                .into(),
        ));
    }
    let queued = withdrawals::queue(
        &s.db,
        NewWithdrawal {
            user_id: caller.user_id,
            wallet: &caller.wallet,
            amount: request.amount,
            destination: &destination.to_string(),
            token_account: &payee.token_account.to_string(),
            create_account: payee.create_for.is_some(),
            idempotency_key: request.idempotency_key,
            account_budget: AccountBudget { per_day: s.token_accounts_per_day, per_user_per_day: NEW_TOKEN_ACCOUNTS_PER_USER_PER_DAY },
        },
    )
    .await?;
    match queued {
        Queued::Created(row) | Queued::Existing(row) => Ok(row),
        Queued::AccountBudgetSpent(whose) => {
            let now = Utc::now();
            let tomorrow = now.date_naive().succ_opt().and_then(|d| d.and_hms_opt(0, 0, 0)).map_or(now, |t| t.and_utc());
            let whose = match whose {
                BudgetSpent::User => format!("you have had {NEW_TOKEN_ACCOUNTS_PER_USER_PER_DAY} today"),
                BudgetSpent::Service => "the service has paid for as many as it does in a day".to_owned(),
            };
            Err(ServiceError::BudgetSpent {
                retry_after_secs: (tomorrow - now).num_seconds().max(1) as u64,
                message: format!(
                    "this destination needs a USDC token account, which the service pays for (about 0.002 SOL of rent), and {whose}: \
                     withdraw to an existing USDC token account, or retry after 00:00 UTC"
                ),
            })
        }
        Queued::Insufficient { available } => Err(ServiceError::InsufficientBalance(format!(
            "{} USDC exceeds the available balance of {} USDC",
            places(request.amount as i128, 6, 6),
            places(available as i128, 6, 6)
        ))),
    }
}

/// One of the caller's withdrawals (anyone else's is not found).
pub async fn get(s: &Services, caller: &Caller, id: Uuid) -> Result<WithdrawalRow, ServiceError> {
    withdrawals::get(&s.db, caller.user_id, id).await?.ok_or_else(|| ServiceError::NotFound(format!("withdrawal {id} not found")))
}

pub async fn list(s: &Services, caller: &Caller, page: Page) -> Result<Vec<WithdrawalRow>, ServiceError> {
    Ok(withdrawals::list(&s.db, caller.user_id, page.limit, page.offset).await?)
}

/// Withdrawals taken from the queue per pass.
const PER_PASS: i64 = 200;
/// Withdrawals sent at once; each waits on its own confirmation.
const CONCURRENT: usize = 16;

/// One pass of the queue: every processing withdrawal brought forward (a crash or a slow
/// chain left it there), then pending ones signed, recorded as processing and sent. How many
/// reached an end (confirmed or failed).
pub async fn process(s: &Services) -> Result<usize, ServiceError> {
    let onchain = s.onchain()?;
    let resumed = withdrawals::processing(&s.db, PER_PASS).await?;
    let fresh = claim(s, onchain).await?;
    let rows = resumed.into_iter().map(|row| (row, false)).chain(fresh.into_iter().map(|row| (row, true)));
    let ended = futures_util::stream::iter(rows)
        .map(|(row, just_signed)| async move {
            match deliver(s, onchain, row.clone(), just_signed).await {
                Ok(ended) => ended,
                Err(e) => {
                    tracing::warn!(withdrawal = %row.id, error = %e, "withdrawal not delivered yet; retried next pass");
                    false
                }
            }
        })
        .buffer_unordered(CONCURRENT)
        .filter(|ended| std::future::ready(*ended))
        .count()
        .await;
    Ok(ended)
}

/// Pending withdrawals signed (on one blockhash) and recorded as processing, in one database
/// transaction that holds their rows (`SKIP LOCKED`: another worker takes others).
async fn claim(s: &Services, onchain: &OnChain) -> Result<Vec<WithdrawalRow>, ServiceError> {
    let mut tx = s.db.begin().await?;
    let mut claimed = withdrawals::claim_pending(&mut tx, PER_PASS).await?;
    let signed = sign(onchain, &claimed).await?;
    for (row, signed) in claimed.iter_mut().zip(signed) {
        withdrawals::mark_processing(&mut tx, row.id, &signed.signature, &signed.wire).await?;
        row.status = "processing".into();
        row.signature = Some(signed.signature);
        row.wire = Some(signed.wire);
    }
    tx.commit().await?;
    Ok(claimed)
}

/// Each row's `withdraw` transaction, signed.
async fn sign(onchain: &OnChain, rows: &[WithdrawalRow]) -> Result<Vec<Signed>, ServiceError> {
    let parse = |key: &str| key.parse::<Pubkey>().map_err(ServiceError::internal);
    let mut requests = Vec::with_capacity(rows.len());
    for row in rows {
        let create_for = if row.create_account { Some(parse(&row.destination)?) } else { None };
        requests.push((parse(&row.wallet)?, Payee { token_account: parse(&row.token_account)?, create_for }, row.amount as u64));
    }
    Ok(onchain.sign_withdrawals(&requests).await?)
}

/// Brings a processing withdrawal to its end if it can: whether it ended. One `just_signed`
/// this pass has never been sent, so it is sent at once; one resumed from an earlier pass (or
/// a crash) is first asked about: it may have landed, or its blockhash expired.
async fn deliver(s: &Services, onchain: &OnChain, row: WithdrawalRow, just_signed: bool) -> Result<bool, ServiceError> {
    let (Some(signature), Some(wire)) = (row.signature.clone(), row.wire.clone()) else {
        return Err(ServiceError::internal(format!("processing withdrawal {} has no transaction", row.id)));
    };
    let mut signed = Signed { wire, signature };
    if !just_signed {
        // Landed already (sent before a crash, or by another worker)?
        if let Some(outcome) = onchain.outcome(&signed.signature).await? {
            return settle(s, onchain, &row, &signed.signature, outcome).await;
        }
        if !onchain.still_valid(&signed.wire).await? {
            // Expired. Asked again now that it can no longer land: it may have landed just before.
            if let Some(outcome) = onchain.outcome(&signed.signature).await? {
                return settle(s, onchain, &row, &signed.signature, outcome).await;
            }
            // It never will: sign it anew.
            let fresh = sign(onchain, std::slice::from_ref(&row)).await?.pop().expect("one per row");
            if !withdrawals::replace_transaction(&s.db, row.id, &signed.signature, &fresh.signature, &fresh.wire).await? {
                return Ok(false);
            }
            signed = fresh;
        }
    }
    // Sent, confirmed and projected (the vault falls in Postgres before the reservation ends).
    match onchain.submit(&signed).await {
        Ok(_) => settle(s, onchain, &row, &signed.signature, Ok(())).await,
        Err(e) => {
            // Whatever the send said, the chain decides: it may have landed (a resend of a
            // transaction that already ran is refused as a duplicate).
            if let Some(outcome) = onchain.outcome(&signed.signature).await? {
                return settle(s, onchain, &row, &signed.signature, outcome).await;
            }
            match money::failure_of(&e) {
                // Refused before it could land (preflight): it will never run.
                Some(reason) => Ok(withdrawals::fail(&s.db, row.id, &signed.signature, &reason).await?),
                None => Err(e.into()),
            }
        }
    }
}

/// Records how a landed withdrawal ended: confirmed once final, failed with the chain's reason.
async fn settle(s: &Services, onchain: &OnChain, row: &WithdrawalRow, signature: &str, outcome: Result<(), String>) -> Result<bool, ServiceError> {
    match outcome {
        Ok(()) if onchain.is_finalized(signature).await? => Ok(withdrawals::confirm(&s.db, row.id, signature).await?),
        // Landed, not final yet: the next pass looks again.
        Ok(()) => Ok(false),
        Err(reason) => Ok(withdrawals::fail(&s.db, row.id, signature, &reason).await?),
    }
}
