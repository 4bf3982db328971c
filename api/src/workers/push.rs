//! The push sender as a singleton worker: each pass fans new outbox events out to the users'
//! subscriptions and sends every delivery due (`services::push`). Safe to interrupt anywhere:
//! the fan-out commits with the events it marks, and a delivery is marked as soon as the push
//! service answers.

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::{Pass, Worker, WorkerResult, every};
use crate::services::Services;
use crate::services::push::{self, PushSender};

/// "FMPUSHER": the advisory-lock key of the push sender.
pub const PUSH_LOCK: i64 = 0x464D_5055_5348_4552;

pub struct PushWorker {
    pub services: Services,
    pub sender: PushSender,
    pub period: Duration,
}

impl Worker for PushWorker {
    fn name(&self) -> &'static str {
        "push"
    }

    fn singleton_key(&self) -> Option<i64> {
        Some(PUSH_LOCK)
    }

    fn run(self: Arc<Self>, cancel: CancellationToken) -> BoxFuture<'static, WorkerResult> {
        async move {
            every(self.name(), self.period, &cancel, || async {
                let done = push::deliver(&self.services, &self.sender).await.map_err(|e| e.to_string())?;
                Ok(if done.busy() { Pass::Busy } else { Pass::Idle })
            })
            .await
        }
        .boxed()
    }
}
