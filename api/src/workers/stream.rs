//! The stream publisher as a singleton worker: woken by the triggers' `NOTIFY fm_stream` (and
//! every period in case a notification was missed), it publishes every new event to Redis
//! (`services::stream`), deleting each as it is published.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use sqlx::Postgres;
use sqlx::pool::PoolConnection;
use sqlx::postgres::PgListener;
use tokio_util::sync::CancellationToken;

use super::{Worker, WorkerResult};
use crate::services::{Services, stream};

/// "FMSTREAM": the advisory-lock key of the stream publisher.
pub const STREAM_LOCK: i64 = 0x464D_5354_5245_414D;
/// The least time from one round of publishing to the next. Each committed projection group
/// notifies; under load (hundreds of groups a second) a round for each was a claim, a numbering
/// and a commit for every three or four trades. A notification that comes sooner than this
/// after the last round waits out the rest, and the notifications of that moment are one round.
/// An idle stream publishes at once; a busy one delays an event by at most this much.
pub const MIN_ROUND_GAP: Duration = Duration::from_millis(10);

pub struct StreamWorker {
    pub services: Services,
    /// The longest wait without a notification.
    pub period: Duration,
}

impl Worker for StreamWorker {
    fn name(&self) -> &'static str {
        "stream"
    }

    fn singleton_key(&self) -> Option<i64> {
        Some(STREAM_LOCK)
    }

    fn run(self: Arc<Self>, cancel: CancellationToken) -> BoxFuture<'static, WorkerResult> {
        async move {
            let mut listener = PgListener::connect_with(&self.services.db).await.map_err(|e| e.to_string())?;
            listener.listen("fm_stream").await.map_err(|e| e.to_string())?;
            let mut last_round: Option<Instant> = None;
            // Kept from one batch to the next; after a failure, taken again from the pool.
            let mut connection: Option<PoolConnection<Postgres>> = None;
            while !cancel.is_cancelled() {
                if let Some(wait) = last_round.and_then(|at| MIN_ROUND_GAP.checked_sub(at.elapsed())) {
                    tokio::time::sleep(wait).await;
                }
                // What was notified meanwhile is published by this round.
                while let Ok(Ok(_)) = tokio::time::timeout(Duration::ZERO, listener.recv()).await {}
                last_round = Some(Instant::now());
                loop {
                    let published = async {
                        let db = match &mut connection {
                            Some(db) => db,
                            None => connection.insert(self.services.db.acquire().await?),
                        };
                        stream::publish_on(&self.services, db).await
                    };
                    match published.await {
                        // A publisher that lost its lock stops between batches, leaving the rest to the next.
                        Ok(batch) if batch.more && !cancel.is_cancelled() => continue,
                        Ok(_) => break,
                        Err(e) => {
                            connection = None;
                            tracing::warn!(error = %e, "publishing the stream failed; retrying");
                            break;
                        }
                    }
                }
                tokio::select! {
                    _ = cancel.cancelled() => break,
                    notified = tokio::time::timeout(self.period, listener.recv()) => {
                        // A broken listener reconnects by itself on the next recv; the period
                        // covers what it missed meanwhile.
                        if let Ok(Err(e)) = notified {
                            tracing::warn!(error = %e, "stream listener failed");
                            tokio::time::sleep(Duration::from_millis(200)).await;
                        }
                    }
                }
            }
            Ok(())
        }
        .boxed()
    }
}
