//! Roles in one binary (`FM_ROLES`): two `serve` replicas and two `workers` processes on one
//! Postgres and Redis. The scheduler (a singleton) runs in exactly one workers process; when
//! that process is killed with SIGKILL the other takes the job over within seconds; no round is
//! ever created twice, and both replicas serve what the workers made.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use sqlx::{Connection, PgConnection};

use crate::helpers::*;

/// A `funding-api` process whose log lines are collected, killed (SIGKILL) on drop.
struct Process {
    child: Child,
    lines: Arc<Mutex<Vec<Value>>>,
}

impl Process {
    fn start(database_url: &str, roles: &str, port: u16) -> Process {
        let mut child = Command::new(env!("CARGO_BIN_EXE_funding-api"))
            .env("FM_ROLES", roles)
            .env("FM_BIND_ADDR", format!("127.0.0.1:{port}"))
            .env("FM_METRICS_ADDR", "127.0.0.1:0")
            .env("FM_PUBSUB_ADDR", "off")
            .env("DATABASE_URL", database_url)
            .env("REDIS_URL", redis_url())
            .env("RUST_LOG", "info")
            .env("FM_LOG_FORMAT", "json")
            .env("FM_SERIES", "binance:BTCUSDT,bybit:ETHUSDT")
            .env("FM_SCHEDULER_PERIOD_SECS", "1")
            .env("FM_RATE_PUBLIC_PER_MIN", "100000")
            // The serve replicas read; no chain is needed (and the embedded chain has one
            // writer per database): an RPC chain without keys, never called.
            .env("FM_CHAIN", "rpc")
            .env("FM_RPC_URL", "http://127.0.0.1:9")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stdout = child.stdout.take().unwrap();
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    sink.lock().unwrap().push(v);
                }
            }
        });
        Process { child, lines }
    }

    /// How many times this process took the scheduler's singleton lock.
    fn scheduler_takeovers(&self) -> usize {
        self.lines.lock().unwrap().iter().filter(|l| l["message"] == "singleton lock taken" && l["worker"] == "scheduler").count()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn wait_until(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    check()
}

async fn healthy(port: u16) -> bool {
    let client = reqwest::Client::new();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        if let Ok(r) = client.get(format!("http://127.0.0.1:{port}/health")).send().await {
            return r.status() == 200;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn singleton_jobs_run_once_across_processes_and_move_when_the_holder_dies() {
    let name = format!("fm_roles_{}", uuid::Uuid::new_v4().simple());
    let database_url = database_url(&name);

    // The first replica creates the database and applies the migrations.
    let (p1, p2) = (free_port(), free_port());
    let serve_a = Process::start(&database_url, "serve", p1);
    assert!(healthy(p1).await, "first serve replica did not come up");
    let serve_b = Process::start(&database_url, "serve", p2);
    assert!(healthy(p2).await, "second serve replica did not come up");
    let workers = [Process::start(&database_url, "workers", free_port()), Process::start(&database_url, "workers", free_port())];

    // Exactly one workers process takes the scheduler; the other waits.
    assert!(wait_until(Duration::from_secs(30), || workers.iter().map(Process::scheduler_takeovers).sum::<usize>() == 1).await, "no scheduler ran");
    tokio::time::sleep(Duration::from_secs(5)).await; // several lock polls of the other
    let takeovers: Vec<usize> = workers.iter().map(Process::scheduler_takeovers).collect();
    assert_eq!(takeovers.iter().sum::<usize>(), 1, "the scheduler ran in both workers processes: {takeovers:?}");
    let holder = takeovers.iter().position(|n| *n == 1).unwrap();

    // Both replicas serve what the scheduler made.
    let client = reqwest::Client::new();
    for port in [p1, p2] {
        let started = Instant::now();
        loop {
            let body: Value = client.get(format!("http://127.0.0.1:{port}/v1/series")).send().await.unwrap().json().await.unwrap();
            if body["data"].as_array().is_some_and(|s| s.len() == 2 && s.iter().all(|s| !s["current_round"].is_null())) {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(20), "replica on {port} does not show the rounds: {body}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    // SIGKILL the holder: the other process takes the job over within seconds.
    let [mut w0, mut w1] = workers;
    let (dead, survivor) = if holder == 0 { (&mut w0, &mut w1) } else { (&mut w1, &mut w0) };
    dead.child.kill().unwrap();
    dead.child.wait().unwrap();
    let killed_at = Instant::now();
    assert!(wait_until(Duration::from_secs(15), || survivor.scheduler_takeovers() == 1).await, "the job was not taken over");
    let handover = killed_at.elapsed();
    assert!(handover < Duration::from_secs(15));

    // No round was ever created twice.
    let mut db = PgConnection::connect(&database_url).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (total, distinct): (i64, i64) =
        sqlx::query_as("SELECT count(*), count(DISTINCT (series_id, settlement_ts)) FROM markets").fetch_one(&mut db).await.unwrap();
    assert!(total > 0);
    assert_eq!(total, distinct);
    drop((serve_a, serve_b, w0, w1));
    db.close().await.unwrap();
    let mut admin = PgConnection::connect(&admin_url()).await.unwrap();
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut admin).await.unwrap();
}
