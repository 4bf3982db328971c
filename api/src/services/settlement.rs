//! Ending a round and paying it out.
//!
//! [`finalize`] takes the oracle's verdict. A round with a program account is resolved or
//! voided on chain, signed by the oracle key; the projection of the program's
//! `MarketFinalized` then writes the outcome, so there is one writer of a settlement
//! (`indexer::projection::finalize_market`). A round that never reached the chain (no one
//! traded it) is settled in Postgres by that same writer, with nothing to pay.
//!
//! [`pay_out`] is one step of the settlement crank: every position of a finalized market paid
//! (winners 1 micro-USDC per micro-share, or the void refund), several per transaction, then
//! `close_market` returns the rest to the treasury. It reads what is still open from the
//! chain, so it is safe to repeat and to interrupt at any point: a position is paid once.

use anchor_lang::prelude::Pubkey;
use chrono::{DateTime, Utc};
use indexer::projection::{Finalized, RoundEnd, finalize_market};
use uuid::Uuid;

use super::{ServiceError, Services};
use crate::chain::{Crank, Finalization};
use crate::domain::market::MarketStatus;
use crate::domain::rate::FundingRate;
use crate::store::markets;

/// What the oracle decided about a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The consensus rate: YES iff it is positive (exactly 0 is NO).
    Settled(FundingRate),
    /// No consensus by the deadline, or the settlement time no longer exists.
    Void,
}

fn finalization(verdict: Verdict) -> Finalization {
    match verdict {
        Verdict::Settled(rate) => Finalization::Resolve { actual_rate: rate.0 },
        Verdict::Void => Finalization::Void,
    }
}

/// Ends `market_id` with `verdict` at `at`. Idempotent: a round already settled or voided is
/// left as it is; a round not yet closed is refused (`MarketClosed`).
pub async fn finalize(s: &Services, market_id: Uuid, verdict: Verdict, at: DateTime<Utc>) -> Result<(), ServiceError> {
    let plan = markets::plan(&s.db, market_id).await?.ok_or_else(|| ServiceError::NotFound(format!("no market {market_id}")))?;
    match plan.status {
        MarketStatus::Settled | MarketStatus::Voided => return Ok(()),
        MarketStatus::Closed | MarketStatus::Resolving => {}
        other => return Err(ServiceError::MarketClosed(format!("market {market_id} is {other}, not awaiting resolution"))),
    }
    if let Some(onchain) = &s.onchain
        && onchain.finalize_market(market_id, finalization(verdict)).await?
    {
        return Ok(());
    }
    settle_offchain(s, market_id, verdict, at).await
}

/// Ends many rounds at `at`, each with its verdict: on chain several to a transaction (the
/// oracle's pass), the rounds that never reached the chain in Postgres. Each round's result is
/// its own; like `finalize`, idempotent.
pub async fn finalize_all(s: &Services, verdicts: &[(Uuid, Verdict)], at: DateTime<Utc>) -> Vec<(Uuid, Result<(), ServiceError>)> {
    let Some(onchain) = &s.onchain else {
        let mut results = Vec::with_capacity(verdicts.len());
        for (id, verdict) in verdicts {
            results.push((*id, finalize(s, *id, *verdict, at).await));
        }
        return results;
    };
    let how: Vec<(Uuid, Finalization)> = verdicts.iter().map(|(id, v)| (*id, finalization(*v))).collect();
    let reached = match onchain.finalize_markets(&how).await {
        Ok(reached) => reached,
        Err(e) => return verdicts.iter().map(|(id, _)| (*id, Err(ServiceError::internal(&e)))).collect(),
    };
    let of: std::collections::HashMap<Uuid, Verdict> = verdicts.iter().copied().collect();
    let mut results = Vec::with_capacity(verdicts.len());
    for (id, onchain) in reached {
        let verdict = of[&id];
        let done = match onchain {
            Ok(true) => Ok(()),
            // No program account: never traded (settled off chain), or paid out and closed.
            Ok(false) => finalize(s, id, verdict, at).await,
            Err(e) => Err(e.into()),
        };
        results.push((id, done));
    }
    results
}

/// Settles a round that never reached the chain: the outcome through the projection's writer,
/// and nothing to pay. Only a round awaiting resolution (closed or resolving) settles; anything
/// else is `MarketClosed`.
pub async fn settle_offchain(s: &Services, market_id: Uuid, verdict: Verdict, at: DateTime<Utc>) -> Result<(), ServiceError> {
    let mut tx = s.db.begin().await?;
    let status = markets::lock_status(&mut tx, market_id).await?.ok_or_else(|| ServiceError::NotFound(format!("no market {market_id}")))?;
    if !matches!(status, MarketStatus::Closed | MarketStatus::Resolving) {
        return Err(ServiceError::MarketClosed(format!("market {market_id} is {status}, not awaiting resolution")));
    }
    let outcome = match verdict {
        Verdict::Settled(rate) => Finalized::Settled { yes: rate.is_positive(), actual_rate: rate.0 },
        Verdict::Void => Finalized::Voided,
    };
    finalize_market(&mut tx, RoundEnd { market_id, outcome, at, signature: None }).await?;
    markets::mark_paid_out(&mut *tx, market_id, at).await?;
    tx.commit().await?;
    Ok(())
}

/// Finalized rounds not yet paid out, oldest settlement first, at most `limit`.
pub async fn awaiting_payout(s: &Services, limit: i64) -> Result<Vec<Uuid>, ServiceError> {
    Ok(markets::awaiting_payout(&s.db, limit).await?)
}

/// One crank step for a finalized round: pays the positions the projection lists, closes the
/// market when none is left open on chain, and records the round paid out once it is closed.
pub async fn pay_out(s: &Services, market_id: Uuid, now: DateTime<Utc>) -> Result<Crank, ServiceError> {
    let wallets = markets::position_wallets(&s.db, market_id).await?;
    let wallets = wallets
        .iter()
        .map(|w| w.parse::<Pubkey>().map_err(|_| ServiceError::internal(format!("stored wallet {w:?} is not an address"))))
        .collect::<Result<Vec<_>, _>>()?;
    let crank = match &s.onchain {
        Some(onchain) => onchain.crank(market_id, &wallets).await?,
        // Without a chain nothing was ever on chain: settled off chain, nothing to pay.
        None => Crank::Closed,
    };
    if crank == Crank::Closed {
        markets::mark_paid_out(&s.db, market_id, now).await?;
    }
    Ok(crank)
}
