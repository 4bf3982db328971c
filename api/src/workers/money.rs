//! Money in and out as singleton workers: deposit reconciliation (`services::deposits`) and
//! the withdrawal queue (`services::withdrawals`). Both are safe to repeat and to interrupt
//! anywhere; the advisory lock keeps one of each across replicas (the queue also claims its
//! rows with `SKIP LOCKED`, so even two would not take the same withdrawal).

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::{Pass, Worker, WorkerResult, every};
use crate::services::{Services, deposits, withdrawals};

/// "FMDEPOSI": the advisory-lock key of deposit reconciliation.
pub const DEPOSIT_LOCK: i64 = 0x464D_4445_504F_5349;
/// "FMWITHDR": the advisory-lock key of the withdrawal queue.
pub const WITHDRAWAL_LOCK: i64 = 0x464D_5749_5448_4452;

/// Reads every deposit address each period: records deposits no webhook reported, sweeps
/// what reached the minimum.
pub struct DepositWorker {
    pub services: Services,
    pub period: Duration,
}

impl Worker for DepositWorker {
    fn name(&self) -> &'static str {
        "deposits"
    }

    fn singleton_key(&self) -> Option<i64> {
        Some(DEPOSIT_LOCK)
    }

    fn run(self: Arc<Self>, cancel: CancellationToken) -> BoxFuture<'static, WorkerResult> {
        async move {
            every(self.name(), self.period, &cancel, || async {
                deposits::reconcile(&self.services).await.map_err(|e| e.to_string())?;
                Ok(Pass::Idle)
            })
            .await
        }
        .boxed()
    }
}

/// Works the withdrawal queue.
pub struct WithdrawalWorker {
    pub services: Services,
    pub period: Duration,
}

impl Worker for WithdrawalWorker {
    fn name(&self) -> &'static str {
        "withdrawals"
    }

    fn singleton_key(&self) -> Option<i64> {
        Some(WITHDRAWAL_LOCK)
    }

    fn run(self: Arc<Self>, cancel: CancellationToken) -> BoxFuture<'static, WorkerResult> {
        async move {
            every(self.name(), self.period, &cancel, || async {
                let ended = withdrawals::process(&self.services).await.map_err(|e| e.to_string())?;
                // Some ended: more may be queued behind them.
                Ok(if ended > 0 { Pass::Busy } else { Pass::Idle })
            })
            .await
        }
        .boxed()
    }
}
