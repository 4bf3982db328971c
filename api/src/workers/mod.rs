//! Background jobs: each a [`Worker`] with a `run(cancel)` loop, all under one [`Supervisor`].
//!
//! - Shutdown cancels the token: a worker finishes the job it is in and returns; the supervisor
//!   waits for all of them (bounded by the caller's grace period).
//! - A worker that fails or panics is logged and started again after a backoff that doubles
//!   from 1 s to 60 s (reset once it has run for a minute).
//! - A singleton worker (one that must run once across every replica) runs only while this
//!   process holds its Postgres session advisory lock, on a connection of its own that never
//!   returns to the pool (`singleton`). When the holder dies its session ends, the lock is free,
//!   and another process's supervisor — polling every `LOCK_POLL` — takes the job over.

pub mod collectors;
pub mod indexer;
pub mod money;
pub mod oracle;
pub mod push;
pub mod scheduler;
pub mod settlement;
pub mod singleton;
pub mod stream;

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How often a process that does not hold a singleton's lock tries to take it.
pub const LOCK_POLL: Duration = Duration::from_secs(2);
const BACKOFF_START: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// A worker that ran this long before failing starts again without waiting.
const HEALTHY_RUN: Duration = Duration::from_secs(60);

pub type WorkerResult = Result<(), String>;

/// A background job.
pub trait Worker: Send + Sync + 'static {
    /// Names the worker in logs and metrics.
    fn name(&self) -> &'static str;

    /// The advisory-lock key of a job that must run in one process at a time; `None` for a job
    /// every replica runs.
    fn singleton_key(&self) -> Option<i64> {
        None
    }

    /// Runs until `cancel` fires (then returns `Ok` after the job in hand is done), or fails.
    fn run(self: Arc<Self>, cancel: CancellationToken) -> BoxFuture<'static, WorkerResult>;
}

/// What a pass of a periodic job found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Nothing more to do now: the next pass after the period.
    Idle,
    /// It made progress and more may be waiting (a backlog): the next pass at once.
    Busy,
}

/// Runs `job` every `period` until `cancel` fires — at once again after a `Busy` pass, so a
/// backlog (4,000 rounds due together) is worked through without a period's pause between
/// pages. A failing pass is logged and the loop goes on (the job is idempotent, the next pass
/// retries it).
pub async fn every<F, Fut>(name: &'static str, period: Duration, cancel: &CancellationToken, mut job: F) -> WorkerResult
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Pass, String>>,
{
    while !cancel.is_cancelled() {
        let outcome = job().await;
        metrics::counter!("fm_worker_passes_total", "worker" => name).increment(1);
        match outcome {
            Ok(Pass::Busy) => continue,
            Ok(Pass::Idle) => {}
            Err(e) => {
                metrics::counter!("fm_worker_failures_total", "worker" => name, "kind" => "pass").increment(1);
                tracing::warn!(worker = name, error = %e, "pass failed; retrying next period")
            }
        }
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(period) => {}
        }
    }
    Ok(())
}

/// Starts workers and stops them together.
pub struct Supervisor {
    cancel: CancellationToken,
    tracker: TaskTracker,
    /// Where singleton locks are taken (each on a connection of its own).
    database_url: String,
}

impl Supervisor {
    pub fn new(database_url: &str) -> Supervisor {
        Supervisor { cancel: CancellationToken::new(), tracker: TaskTracker::new(), database_url: database_url.to_owned() }
    }

    /// The token every worker watches (cancelled by `shutdown`).
    pub fn cancellation(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Starts `worker` under supervision.
    pub fn spawn<W: Worker>(&self, worker: W) {
        let worker = Arc::new(worker);
        let cancel = self.cancel.clone();
        let url = self.database_url.clone();
        self.tracker.spawn(async move {
            match worker.singleton_key() {
                None => supervise(worker, cancel).await,
                Some(key) => singleton::run_while_holding(&url, key, worker.name(), &cancel, |held| supervise(worker.clone(), held)).await,
            }
        });
    }

    /// Cancels every worker and waits up to `grace` for them to finish their current job.
    pub async fn shutdown(self, grace: Duration) {
        self.cancel.cancel();
        self.tracker.close();
        if tokio::time::timeout(grace, self.tracker.wait()).await.is_err() {
            tracing::warn!(grace_ms = grace.as_millis() as u64, "workers still running after the grace period; abandoning them");
        }
    }
}

/// Runs `worker` until `cancel`, restarting it with backoff when it fails or panics.
async fn supervise<W: Worker>(worker: Arc<W>, cancel: CancellationToken) {
    let name = worker.name();
    let mut backoff = BACKOFF_START;
    while !cancel.is_cancelled() {
        let started = tokio::time::Instant::now();
        tracing::info!(worker = name, "worker started");
        metrics::counter!("fm_worker_runs_total", "worker" => name).increment(1);
        let outcome = std::panic::AssertUnwindSafe(worker.clone().run(cancel.clone())).catch_unwind().await;
        if !matches!(outcome, Ok(Ok(()))) {
            let kind = if outcome.is_err() { "panic" } else { "run" };
            metrics::counter!("fm_worker_failures_total", "worker" => name, "kind" => kind).increment(1);
        }
        match outcome {
            Ok(Ok(())) if cancel.is_cancelled() => break,
            Ok(Ok(())) => tracing::warn!(worker = name, "worker returned before shutdown; restarting"),
            Ok(Err(e)) => tracing::error!(worker = name, error = %e, "worker failed"),
            Err(panic) => tracing::error!(worker = name, panic = %panic_message(&panic), "worker panicked"),
        }
        if started.elapsed() >= HEALTHY_RUN {
            backoff = BACKOFF_START;
        }
        tracing::info!(worker = name, backoff_ms = backoff.as_millis() as u64, "restarting worker after backoff");
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
    tracing::info!(worker = name, "worker stopped");
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default()
}
