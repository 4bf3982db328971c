//! The round scheduler (`services::scheduler`) as a singleton worker: one pass every period.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::{Pass, Worker, WorkerResult, every};
use crate::services::scheduler::Scheduler;

/// "FMSCHEDU": the advisory-lock key of the scheduler.
pub const SCHEDULER_LOCK: i64 = 0x464D_5343_4845_4455;

/// The scheduler as a singleton worker, one pass every `period`.
pub struct SchedulerWorker {
    pub scheduler: Scheduler,
    pub period: Duration,
}

impl Worker for SchedulerWorker {
    fn name(&self) -> &'static str {
        "scheduler"
    }

    fn singleton_key(&self) -> Option<i64> {
        Some(SCHEDULER_LOCK)
    }

    fn run(self: Arc<Self>, cancel: CancellationToken) -> BoxFuture<'static, WorkerResult> {
        async move {
            every(self.name(), self.period, &cancel, || async {
                let report = self.scheduler.run_once_with(&Utc::now).await.map_err(|e| e.to_string())?;
                if report.created + report.voided > 0 || !report.skipped.is_empty() {
                    tracing::info!(?report, "scheduler run");
                }
                Ok(Pass::Idle)
            })
            .await
        }
        .boxed()
    }
}
