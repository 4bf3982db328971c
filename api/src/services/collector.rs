//! Market-data collection for one venue (run by its collector worker, `workers::collectors`):
//! the venue's whole listing with every perp's funding interval, recorded with its changes; and a
//! sweep of every listed perp's crowd positioning, paced by the venue's published limits (the
//! client does the pacing: `exchanges::limits`).
//!
//! Both are idempotent: a listing recorded twice changes nothing the second time, and a crowd
//! reading is keyed by the venue's bucket time. A sweep cut off (SIGKILL, shutdown) loses only
//! the readings not yet taken; the next one starts over.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::{TimeZone, Utc};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use crate::exchanges::{ExchangeClient, ExchangeError, ListedPerp};
use crate::services::scheduler::{Clock, Scheduler};
use crate::store::crowd::{self, Reading};
use crate::store::intervals::{self, ListingReport};

#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error(transparent)]
    Exchange(#[from] ExchangeError),
    #[error("postgres: {0}")]
    Db(#[from] sqlx::Error),
    #[error("{0}")]
    Refused(String),
}

/// What a crowd sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    pub recorded: usize,
    /// Perps the venue had no ratio for, or whose answer was refused (logged).
    pub skipped: usize,
    pub pruned: u64,
    /// The sweep stopped early for a shutdown.
    pub cancelled: bool,
}

pub struct Collector {
    db: PgPool,
    venue: ExchangeClient,
    /// Replans configured series whose interval changed (where this process schedules).
    scheduler: Option<Arc<Scheduler>>,
    /// How long crowd history is kept.
    retention: chrono::Duration,
}

impl Collector {
    pub fn new(db: PgPool, venue: ExchangeClient, scheduler: Option<Arc<Scheduler>>, retention: chrono::Duration) -> Collector {
        Collector { db, venue, scheduler, retention }
    }

    pub fn venue(&self) -> &ExchangeClient {
        &self.venue
    }

    /// Reads the venue's listing and records it (intervals, their changes, delistings). Changes
    /// of configured series are handed to the scheduler at once.
    /// `clock` is read once the venue has answered (and again by the scheduler's replanning).
    pub async fn collect_intervals(&self, clock: Clock<'_>) -> Result<(Vec<ListedPerp>, ListingReport), CollectError> {
        let mut listing = self.venue.listing().await?;
        let now = clock();
        // A venue that lists nothing is answering wrongly: recording it would delist every perp.
        if listing.is_empty() {
            return Err(CollectError::Refused(format!("{}: the listing is empty; nothing recorded", self.venue.exchange().id())));
        }
        let mut seen = HashSet::new();
        listing.retain(|p| p.interval_minutes > 0 && seen.insert(p.symbol.clone()));
        let pairs: Vec<(String, i32)> = listing.iter().map(|p| (p.symbol.clone(), p.interval_minutes as i32)).collect();
        let exchange = self.venue.exchange().id();
        let report = intervals::record_listing(&self.db, exchange, &pairs, now).await?;
        for change in &report.changes {
            tracing::info!(exchange, symbol = %change.symbol, from = change.from_minutes, to = change.to_minutes, "funding interval changed");
        }
        if let (Some(scheduler), false) = (&self.scheduler, report.changes.is_empty()) {
            let symbols: Vec<&str> = report.changes.iter().map(|c| c.symbol.as_str()).collect();
            match scheduler.replan(exchange, &symbols, clock).await {
                Ok((0, 0)) => {}
                Ok((created, voided)) => tracing::info!(exchange, created, voided, "series replanned after an interval change"),
                Err(e) => tracing::warn!(exchange, error = %e, "replanning after an interval change failed; the scheduler's next pass does it"),
            }
        }
        Ok((listing, report))
    }

    /// Reads and records every listed perp's crowd positioning, then prunes history past the
    /// retention. A perp's refused answer is skipped; a transport failure or the venue's rate
    /// limit ends the sweep (the next one starts over).
    pub async fn collect_crowd(&self, listing: &[ListedPerp], cancel: &CancellationToken) -> Result<SweepReport, CollectError> {
        let mut report = SweepReport::default();
        if !self.venue.has_crowd_data() {
            return Ok(report);
        }
        let exchange = self.venue.exchange().id();
        for perp in listing {
            if cancel.is_cancelled() {
                report.cancelled = true;
                return Ok(report);
            }
            let reading = match self.venue.crowd(perp).await {
                Ok(Some(reading)) => reading,
                Ok(None) => {
                    report.skipped += 1;
                    continue;
                }
                // A perp the venue will not answer for. Not 418: Binance's ban of an IP that went
                // on after 429s, which must end the sweep like the 429 itself.
                Err(
                    e @ (ExchangeError::Api { .. }
                    | ExchangeError::Format(_)
                    | ExchangeError::UnknownSymbol(_)
                    | ExchangeError::Status { status: 400..=417 | 419..=499, .. }),
                ) => {
                    tracing::info!(exchange, symbol = %perp.symbol, error = %e, "no crowd reading for this perp");
                    report.skipped += 1;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let Some(observed_at) = Utc.timestamp_millis_opt(reading.timestamp_ms).single() else {
                report.skipped += 1;
                continue;
            };
            let reading = Reading {
                long_ppm: reading.long_ppm as i32,
                short_ppm: reading.short_ppm as i32,
                open_interest_cents: reading.open_interest_cents.filter(|c| *c >= 0),
                observed_at,
            };
            crowd::record(&self.db, exchange, &perp.symbol, reading, Utc::now()).await?;
            report.recorded += 1;
        }
        report.pruned = crowd::prune(&self.db, Utc::now() - self.retention).await?;
        Ok(report)
    }
}
