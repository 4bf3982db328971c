//! The follow loop: from the stored cursor, every new program transaction of a chain source,
//! in order, through the projection. Each transaction commits with the cursor, so a crash at any
//! point resumes exactly where the last commit left off: no gap, no duplicate.

use std::time::Duration;

use tokio::sync::watch;

use crate::chain::ChainSource;
use crate::chain::rpc::ChainError;
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

pub struct Indexer<S> {
    source: S,
    projector: Projector,
    program: String,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub transactions: usize,
    pub events: usize,
}

impl<S: ChainSource> Indexer<S> {
    pub fn new(source: S, projector: Projector, program: &str) -> Indexer<S> {
        Indexer { source, projector, program: program.to_owned() }
    }

    /// Applies everything the source has after the cursor.
    pub async fn run_once(&self) -> Result<Progress, FollowError> {
        let cursor = self.projector.cursor().await?;
        let signatures = self.source.signatures_after(&self.program, cursor.as_deref()).await?;
        let mut progress = Progress::default();
        for info in signatures {
            // A listed signature the node cannot return yet stops the pass; the next resumes here.
            let tx = self.source.transaction(&info.signature).await?.ok_or_else(|| FollowError::NotYetAvailable(info.signature.clone()))?;
            progress.events += self.projector.apply(&tx).await?;
            progress.transactions += 1;
        }
        Ok(progress)
    }

    /// Follows forever: a pass every `period`, or as soon as `confirmations` changes (the
    /// embedded chain announces each confirmed transaction, so its lag is one pass, not a
    /// poll). Errors are logged and retried.
    pub async fn follow(&self, period: Duration, mut confirmations: Option<watch::Receiver<i64>>) {
        loop {
            match self.run_once().await {
                Ok(p) if p.transactions > 0 => tracing::debug!(?p, "indexed"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "indexer pass failed; retrying"),
            }
            match confirmations.as_mut() {
                Some(rx) => {
                    tokio::select! {
                        changed = rx.changed() => if changed.is_err() { confirmations = None },
                        _ = tokio::time::sleep(period) => {}
                    }
                }
                None => tokio::time::sleep(period).await,
            }
        }
    }
}
