//! The follow loop: from the stored cursor, every new program transaction of a chain source,
//! in order, through the projection. Each transaction commits with the cursor, so a crash at any
//! point resumes exactly where the last commit left off: no gap, no duplicate.

use std::time::Duration;

use tokio::sync::watch;

use crate::chain::{ChainError, ChainSource, ConfirmedTransaction, SignatureInfo};
use crate::projection::Projector;

#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    #[error(transparent)]
    Chain(#[from] ChainError),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error("the source lists {0} but cannot return it yet")]
    NotYetAvailable(String),
}

/// Transactions per database transaction while catching up. Per-row work on the rows a batch
/// upserts (a position, a vault balance, a trader's day and total) is paid once per key in the
/// batch, so larger batches catch up faster (100,000 trade events over 1,000 wallets: 16.2 s
/// at 500, 10.6 s at 5,000, 10.3 s at 10,000; README "Indexer catch-up"). A batch holds the
/// projection lock while it is applied (about half a second at 5,000), so a trade the service
/// projects itself waits at most that long during a catch-up; following the chain, batches
/// hold what is new.
pub const BATCH: usize = 5_000;
/// Transactions requested from the source at once (in order).
pub const FETCH_AHEAD: usize = 16;

pub struct Indexer<S> {
    source: S,
    projector: Projector,
    program: String,
    batch: usize,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub transactions: usize,
    pub events: usize,
}

/// The service's metrics of how far the projection is behind the chain, from a pass's listing
/// of what is not yet applied: `fm_indexer_lag_transactions`, `fm_indexer_lag_slots` (from the
/// oldest to the newest unapplied transaction, 0 when caught up) and `fm_indexer_lag_seconds`
/// (how old the oldest unapplied transaction is).
fn record_lag(pending: &[SignatureInfo]) {
    let (slots, seconds) = match (pending.first(), pending.last()) {
        (Some(oldest), Some(newest)) => {
            let age = oldest.block_time.map_or(0, |t| (chrono::Utc::now().timestamp() - t).max(0));
            (newest.slot.saturating_sub(oldest.slot) + 1, age)
        }
        _ => (0, 0),
    };
    metrics::gauge!("fm_indexer_lag_transactions").set(pending.len() as f64);
    metrics::gauge!("fm_indexer_lag_slots").set(slots as f64);
    metrics::gauge!("fm_indexer_lag_seconds").set(seconds as f64);
}

impl<S: ChainSource> Indexer<S> {
    pub fn new(source: S, projector: Projector, program: &str) -> Indexer<S> {
        Indexer { source, projector, program: program.to_owned(), batch: BATCH }
    }

    /// Transactions per database transaction (default `BATCH`).
    pub fn with_batch(self, batch: usize) -> Indexer<S> {
        Indexer { batch: batch.max(1), ..self }
    }

    /// Applies everything the source has after the cursor, a batch per database transaction
    /// (a crash loses at most the batch in flight, which the next pass applies again from the
    /// cursor). Each batch's transactions are fetched `FETCH_AHEAD` at a time, in order, while
    /// the batch before it is applied: with a node's RPC the fetching, with the embedded chain
    /// Postgres, is what takes the time, and one need not wait for the other.
    pub async fn run_once(&self) -> Result<Progress, FollowError> {
        let cursor = self.projector.cursor().await?;
        let signatures = self.source.signatures_after(&self.program, cursor.as_deref()).await?;
        record_lag(&signatures);
        let mut progress = Progress::default();
        let mut chunks = signatures.chunks(self.batch);
        let mut fetched = match chunks.next() {
            Some(chunk) => Some(self.fetch(chunk).await),
            None => None,
        };
        while let Some(this) = fetched.take() {
            let (batch, stopped) = this?;
            let applied = match chunks.next().filter(|_| stopped.is_none()) {
                Some(next) => {
                    let (applied, next) = tokio::join!(self.projector.apply_batch(&batch), self.fetch(next));
                    fetched = Some(next);
                    applied
                }
                None => self.projector.apply_batch(&batch).await,
            };
            progress.events += applied?;
            progress.transactions += batch.len();
            if let Some(signature) = stopped {
                return Err(FollowError::NotYetAvailable(signature));
            }
        }
        // Caught up with what the pass listed.
        record_lag(&[]);
        Ok(progress)
    }

    /// The transactions of `chunk`, in order, up to the first the node cannot return yet (a
    /// listed signature it cannot return ends the pass after what precedes it; the next pass
    /// resumes there), which is returned beside them.
    async fn fetch(&self, chunk: &[SignatureInfo]) -> Result<(Vec<ConfirmedTransaction>, Option<String>), FollowError> {
        let mut batch = Vec::with_capacity(chunk.len());
        for window in chunk.chunks(FETCH_AHEAD) {
            let signatures: Vec<&str> = window.iter().map(|info| info.signature.as_str()).collect();
            for (info, fetched) in window.iter().zip(self.source.transactions(&signatures).await?) {
                match fetched {
                    Some(tx) => batch.push(tx),
                    None => return Ok((batch, Some(info.signature.clone()))),
                }
            }
        }
        Ok((batch, None))
    }

    /// Follows until `stop` completes: a pass every `period`, or as soon as `confirmations`
    /// changes (the embedded chain announces each confirmed transaction, so its lag is one
    /// pass, not a poll). Errors are logged and retried. `stop` is only looked at between
    /// passes: a batch in flight is committed (or fails) whole.
    pub async fn follow(&self, period: Duration, mut confirmations: Option<watch::Receiver<i64>>, stop: impl Future<Output = ()>) {
        tokio::pin!(stop);
        loop {
            match self.run_once().await {
                Ok(p) if p.transactions > 0 => tracing::debug!(?p, "indexed"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "indexer pass failed; retrying"),
            }
            match confirmations.as_mut() {
                Some(rx) => {
                    tokio::select! {
                        _ = &mut stop => return,
                        changed = rx.changed() => if changed.is_err() { confirmations = None },
                        _ = tokio::time::sleep(period) => {}
                    }
                }
                None => tokio::select! {
                    _ = &mut stop => return,
                    _ = tokio::time::sleep(period) => {}
                },
            }
        }
    }
}
