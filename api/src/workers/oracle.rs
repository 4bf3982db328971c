//! The oracle (`services::oracle`) as a singleton worker: one pass every period.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::{Pass, Worker, WorkerResult, every};
use crate::services::Services;
use crate::services::oracle::Oracle;

/// "FMORACLE": the advisory-lock key of the oracle.
pub const ORACLE_LOCK: i64 = 0x464D_4F52_4143_4C45;

pub struct OracleWorker {
    pub oracle: Oracle,
    pub services: Services,
    pub period: Duration,
}

impl Worker for OracleWorker {
    fn name(&self) -> &'static str {
        "oracle"
    }

    fn singleton_key(&self) -> Option<i64> {
        Some(ORACLE_LOCK)
    }

    fn run(self: Arc<Self>, cancel: CancellationToken) -> BoxFuture<'static, WorkerResult> {
        async move {
            every(self.name(), self.period, &cancel, || async {
                let report = self.oracle.run_once(&self.services, Utc::now()).await.map_err(|e| e.to_string())?;
                if report.settled + report.voided + report.failed > 0 {
                    tracing::info!(?report, "oracle pass");
                }
                // Rounds decided: more may be due beyond this pass's page.
                Ok(if report.settled + report.voided > 0 { Pass::Busy } else { Pass::Idle })
            })
            .await
        }
        .boxed()
    }
}
