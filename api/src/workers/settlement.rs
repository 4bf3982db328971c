//! The settlement crank (`services::settlement::pay_out`) as a singleton worker: every period,
//! each finalized round not yet paid out gets one crank step. A step is safe to repeat, so a
//! crash (or a hand-over to another replica) anywhere only means the next step finishes it.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use tokio_util::sync::CancellationToken;

use super::{Pass, Worker, WorkerResult, every};
use crate::chain::Crank;
use crate::services::Services;
use crate::services::settlement;

/// "FMCRANK_": the advisory-lock key of the settlement crank.
pub const CRANK_LOCK: i64 = 0x464D_4352_414E_4B5F;

/// Rounds taken per pass (oldest settlement first); the rest wait for the next pass.
const ROUNDS_PER_PASS: i64 = 1_000;
/// Rounds paid out at once. Each waits on its own confirmations; side by side they keep the
/// chain busy (it orders transactions one at a time and commits whatever is waiting together),
/// and a round's payouts are its own.
const CONCURRENT_ROUNDS: usize = 128;

pub struct SettlementWorker {
    pub services: Services,
    pub period: Duration,
}

impl Worker for SettlementWorker {
    fn name(&self) -> &'static str {
        "settlement"
    }

    fn singleton_key(&self) -> Option<i64> {
        Some(CRANK_LOCK)
    }

    fn run(self: Arc<Self>, cancel: CancellationToken) -> BoxFuture<'static, WorkerResult> {
        async move {
            every(self.name(), self.period, &cancel, || async {
                let due = settlement::awaiting_payout(&self.services, ROUNDS_PER_PASS).await.map_err(|e| e.to_string())?;
                // Rounds not started when shutdown comes wait for the next process.
                let services = &self.services;
                let steps = futures_util::stream::iter(due).take_while(|_| std::future::ready(!cancel.is_cancelled())).map(|market_id| async move {
                    // One round's trouble (a chain hiccup) must not hold up the others.
                    match settlement::pay_out(services, market_id, Utc::now()).await {
                        Ok(Crank::Closed) => {
                            tracing::info!(%market_id, "round paid out");
                            true
                        }
                        Ok(Crank::Waiting { settled, open }) => {
                            tracing::info!(%market_id, settled, open, "round waiting for positions to be indexed");
                            false
                        }
                        Err(e) => {
                            tracing::warn!(%market_id, error = %e, "settlement crank step failed; retried next pass");
                            false
                        }
                    }
                });
                let closed = steps.buffer_unordered(CONCURRENT_ROUNDS).filter(|closed| std::future::ready(*closed)).count().await;
                // Rounds closed: more may be waiting (finalized since, or beyond this page). A
                // round left waiting does not count, so one stuck round never spins the loop.
                Ok(if closed > 0 { Pass::Busy } else { Pass::Idle })
            })
            .await
        }
        .boxed()
    }
}
