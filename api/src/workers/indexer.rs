//! The indexer as a worker: follows the program on the chain into Postgres. Not a singleton:
//! two processes following at once are harmless (every event is recorded once, the cursor only
//! moves forward under the projection lock), only wasteful — run it in one role.

use std::sync::Arc;
use std::time::Duration;

use crate::chain::AnyChain;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use indexer::follow::Indexer;
use indexer::projection::Projector;
use tokio_util::sync::CancellationToken;

use super::{Worker, WorkerResult};

pub struct IndexerWorker {
    chain: AnyChain,
    indexer: Indexer<AnyChain>,
    period: Duration,
}

impl IndexerWorker {
    /// `projector`: the service's own where it trades (`OnChain::projector`), so what it
    /// applied ahead is passed without being read back.
    pub fn new(chain: AnyChain, projector: Projector, period: Duration) -> IndexerWorker {
        let program = funding_market::ID.to_string();
        let indexer = Indexer::new(chain.clone(), projector, &program);
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
