//! The worker runtime: restarts after a panic, a shutdown that lets the job in hand finish,
//! and a singleton job that runs in one supervisor at a time and moves when its holder stops.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use api::workers::{Supervisor, Worker, WorkerResult, singleton};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

fn database_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres:postgres@127.0.0.1:5432/postgres".into())
}

/// Counts its runs; panics on the first; each run does `job_ms` of work and records when it
/// finished it, then waits for cancellation.
struct Probe {
    runs: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
    running: Arc<AtomicUsize>,
    most_at_once: Arc<AtomicUsize>,
    panic_first: bool,
    job_ms: u64,
    key: Option<i64>,
}

impl Probe {
    fn new(panic_first: bool, job_ms: u64, key: Option<i64>) -> Probe {
        Probe { runs: Arc::default(), finished: Arc::default(), running: Arc::default(), most_at_once: Arc::default(), panic_first, job_ms, key }
    }

    fn sharing(&self, key: i64) -> Probe {
        Probe {
            runs: Arc::default(),
            finished: Arc::default(),
            running: self.running.clone(),
            most_at_once: self.most_at_once.clone(),
            key: Some(key),
            ..*self
        }
    }
}

impl Worker for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }

    fn singleton_key(&self) -> Option<i64> {
        self.key
    }

    fn run(self: Arc<Self>, cancel: CancellationToken) -> BoxFuture<'static, WorkerResult> {
        async move {
            let n = self.runs.fetch_add(1, Ordering::SeqCst);
            if self.panic_first && n == 0 {
                panic!("the probe's first run fails");
            }
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_at_once.fetch_max(now, Ordering::SeqCst);
            // The job in hand: not interrupted by cancellation.
            tokio::time::sleep(Duration::from_millis(self.job_ms)).await;
            self.finished.fetch_add(1, Ordering::SeqCst);
            cancel.cancelled().await;
            self.running.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        }
        .boxed()
    }
}

#[tokio::test]
async fn a_panicking_worker_is_restarted_and_shutdown_waits_for_the_job_in_hand() {
    let supervisor = Supervisor::new(&database_url());
    let probe = Probe::new(true, 400, None);
    let (runs, finished) = (probe.runs.clone(), probe.finished.clone());
    supervisor.spawn(probe);
    // The first run panics; after the 1 s backoff it runs again (not before).
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "no restart before the backoff");
    assert!(eventually(Duration::from_secs(10), || runs.load(Ordering::SeqCst) == 2).await, "restarted after the panic");
    assert_eq!(finished.load(Ordering::SeqCst), 0, "the second run's 400 ms job is in hand");
    supervisor.shutdown(Duration::from_secs(5)).await;
    assert_eq!(finished.load(Ordering::SeqCst), 1, "shutdown let the job finish");
}

#[tokio::test]
async fn a_singleton_runs_in_one_supervisor_and_moves_when_its_holder_stops() {
    let key = rand::random::<i64>();
    let first = Probe::new(false, 10, Some(key));
    let second = first.sharing(key);
    let (runs_a, runs_b, most) = (first.runs.clone(), second.runs.clone(), first.most_at_once.clone());
    let (a, b) = (Supervisor::new(&database_url()), Supervisor::new(&database_url()));
    a.spawn(first);
    assert!(eventually(Duration::from_secs(10), || runs_a.load(Ordering::SeqCst) == 1).await, "the first supervisor takes it");
    b.spawn(second);
    tokio::time::sleep(singleton_poll() * 2).await; // the second tries the lock at least twice
    assert_eq!((runs_a.load(Ordering::SeqCst), runs_b.load(Ordering::SeqCst)), (1, 0), "only the holder runs it");
    let db = sqlx::PgPool::connect(&database_url()).await.unwrap();
    assert!(singleton::is_held(&db, key).await.unwrap());

    // The holder stops (its lock is released); the other takes the job within a poll or two.
    a.shutdown(Duration::from_secs(5)).await;
    assert!(eventually(singleton_poll() * 5, || runs_b.load(Ordering::SeqCst) == 1).await, "taken over within a few polls");
    assert_eq!(most.load(Ordering::SeqCst), 1, "never two at once");
    b.shutdown(Duration::from_secs(5)).await;
    assert!(!singleton::is_held(&db, key).await.unwrap(), "released on shutdown");
}

/// Whether `check` holds within `limit` (polled every 20 ms).
async fn eventually(limit: Duration, check: impl Fn() -> bool) -> bool {
    let started = tokio::time::Instant::now();
    while started.elapsed() < limit {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    check()
}

fn singleton_poll() -> Duration {
    api::workers::LOCK_POLL
}
