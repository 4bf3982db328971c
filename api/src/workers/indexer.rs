//! The indexer as a worker: follows the program on the chain into Postgres. Not a singleton:
//! two processes following at once are harmless (every event is recorded once, the cursor only
//! moves forward under the projection lock), only wasteful — run it in one role.

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use indexer::chain::AnyChain;
use indexer::follow::Indexer;
use indexer::projection::Projector;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use super::{Worker, WorkerResult};

pub struct IndexerWorker {
    chain: AnyChain,
    indexer: Indexer<AnyChain>,
    period: Duration,
}

impl IndexerWorker {
    pub fn new(chain: AnyChain, db: PgPool, period: Duration) -> IndexerWorker {
        let program = funding_market::ID.to_string();
        let indexer = Indexer::new(chain.clone(), Projector::new(db, &funding_market::ID), &program);
        IndexerWorker { chain, indexer, period }
    }
}

impl Worker for IndexerWorker {
    fn name(&self) -> &'static str {
        "indexer"
    }

    fn run(self: Arc<Self>, cancel: CancellationToken) -> BoxFuture<'static, WorkerResult> {
        async move {
            // The embedded chain announces each confirmation: one pass per change, not a poll.
            let confirmations = match &self.chain {
                AnyChain::Embedded(c) => Some(c.subscribe()),
                AnyChain::Rpc(_) => None,
            };
            self.indexer.follow(self.period, confirmations, cancel.cancelled()).await;
            Ok(())
        }
        .boxed()
    }
}
