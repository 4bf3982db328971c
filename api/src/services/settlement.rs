//! Settling a round that never reached the chain (no one traded it): its outcome is written
//! by the same writer the chain projection uses for `MarketFinalized`
//! (`indexer::projection::finalize_market`), so there is one writer of a settlement.

use chrono::{DateTime, Utc};
use indexer::projection::{Finalized, finalize_market};
use uuid::Uuid;

use super::{ServiceError, Services};
use crate::domain::market::MarketStatus;
use crate::domain::rate::FundingRate;
use crate::store::markets;

/// Settles `market_id` with the consensus `rate` (YES iff positive; exactly 0 is NO) at `at`.
/// Only a round awaiting resolution (closed or resolving) settles; anything else is
/// `MarketClosed`.
pub async fn settle_offchain(s: &Services, market_id: Uuid, rate: FundingRate, at: DateTime<Utc>) -> Result<(), ServiceError> {
    let mut tx = s.db.begin().await?;
    let (series_id, status) = markets::lock_status(&mut tx, market_id).await?.ok_or_else(|| ServiceError::NotFound(format!("no market {market_id}")))?;
    if !matches!(status, MarketStatus::Closed | MarketStatus::Resolving) {
        return Err(ServiceError::MarketClosed(format!("market {market_id} is {status}, not awaiting resolution")));
    }
    finalize_market(&mut tx, market_id, series_id, Finalized::Settled { yes: rate.is_positive(), actual_rate: rate.0 }, at).await?;
    tx.commit().await?;
    Ok(())
}
