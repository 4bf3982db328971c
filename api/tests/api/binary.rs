//! The real `funding-api` binary: it creates its database, applies the migrations, serves
//! `/health`, and drains and exits 0 on SIGTERM.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sqlx::{Connection, PgConnection};

use crate::helpers::*;

/// The service process, killed if the test ends early (a failed assertion must not leave it
/// running: it would hold the test runner's output open and hang CI).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn starts_creates_its_database_and_stops_on_sigterm() {
    let name = format!("fm_binary_{}", uuid::Uuid::new_v4().simple());
    let database_url = database_url(&name);
    let (port, metrics_port, pubsub_port) = (free_port(), free_port(), free_port());
    let mut child = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_funding-api"))
            .env("FM_BIND_ADDR", format!("127.0.0.1:{port}"))
            .env("FM_METRICS_ADDR", format!("127.0.0.1:{metrics_port}"))
            .env("FM_PUBSUB_ADDR", format!("127.0.0.1:{pubsub_port}"))
            .env("DATABASE_URL", &database_url)
            .env("REDIS_URL", redis_url())
            .env("RUST_LOG", "warn")
            // One series outside the simulator's own default set: the embedded simulator must
            // serve whatever is configured.
            .env("FM_SERIES", "binance:BTCUSDT,okx:LINKUSDT")
            .env("FM_RATE_PUBLIC_PER_MIN", "100000")
            .env("FM_SIM_PERPS_PER_VENUE", "100")
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );

    let client = reqwest::Client::new();
    let started = Instant::now();
    let mut status = 0;
    while started.elapsed() < Duration::from_secs(30) {
        if let Ok(r) = client.get(format!("http://127.0.0.1:{port}/health")).send().await {
            status = r.status().as_u16();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 200, "the service did not come up healthy");

    // The embedded chain's PubSub answers beside it.
    {
        use futures_util::{SinkExt, StreamExt};
        let (mut socket, _) = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{pubsub_port}")).await.expect("pubsub listens");
        let request = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "slotSubscribe"}).to_string();
        socket.send(tokio_tungstenite::tungstenite::Message::Text(request.into())).await.unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(10), socket.next()).await.unwrap().unwrap().unwrap();
        let answer: serde_json::Value = serde_json::from_str(answer.to_text().unwrap()).unwrap();
        assert!(answer["result"].as_u64().is_some(), "{answer}");
    }

    // The scheduler's first pass gives every configured series a round.
    let mut rounds = Vec::new();
    let mut last = serde_json::Value::Null;
    while started.elapsed() < Duration::from_secs(30) {
        last = client.get(format!("http://127.0.0.1:{port}/v1/series")).send().await.unwrap().json().await.unwrap();
        if let Some(cards) = last["data"].as_array() {
            rounds = cards.iter().map(|c| (c["slug"].as_str().unwrap().to_owned(), !c["current_round"].is_null())).collect();
            if rounds.len() == 2 && rounds.iter().all(|(_, has)| *has) {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    rounds.sort();
    assert_eq!(rounds, [("binance-btcusdt".to_owned(), true), ("okx-linkusdt".to_owned(), true)], "last answer: {last}");

    // The collectors' first passes track every perp the simulated venues list, and the crowd of
    // the three venues that publish a ratio.
    let mut tracked = (0, 0);
    while started.elapsed() < Duration::from_secs(60) {
        let threaded: serde_json::Value =
            client.get(format!("http://127.0.0.1:{port}/v1/intervals/threaded?limit=1")).send().await.unwrap().json().await.unwrap();
        let crowd: serde_json::Value = client.get(format!("http://127.0.0.1:{port}/v1/crowd/summary")).send().await.unwrap().json().await.unwrap();
        tracked = (threaded["meta"]["total"].as_u64().unwrap(), crowd["data"]["total_symbols_tracked"].as_u64().unwrap());
        if tracked == (400, 300) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert_eq!(tracked, (400, 300), "perps and crowd tracked by the running collectors");

    // Metrics on the admin address (not on the API's): requests by route and status with
    // latencies, every worker's passes, the pool.
    let metrics = client.get(format!("http://127.0.0.1:{metrics_port}/metrics")).send().await.unwrap().text().await.unwrap();
    for expected in [
        r#"fm_http_requests_total{method="GET",route="/v1/series",status="200"}"#,
        r#"fm_http_request_duration_seconds_bucket{method="GET",route="/v1/crowd/summary",le="0.005"}"#,
        r#"fm_worker_passes_total{worker="scheduler"}"#,
        r#"fm_worker_runs_total{worker="collector-binance"}"#,
        r#"fm_db_pool_connections{state="in_use"}"#,
        "fm_indexer_lag_slots 0",
        "fm_indexer_lag_transactions 0",
    ] {
        assert!(metrics.contains(expected), "{expected} missing from:\n{metrics}");
    }
    assert_eq!(client.get(format!("http://127.0.0.1:{port}/metrics")).send().await.unwrap().status(), 404, "not on the API's address");

    let mut db = PgConnection::connect(&database_url).await.unwrap();
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations WHERE success").fetch_one(&mut db).await.unwrap();
    assert_eq!(applied as usize, api::store::MIGRATOR.iter().count());
    db.close().await.unwrap();

    let killed = Command::new("kill").args(["-TERM", &child.0.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let exit = loop {
        if let Some(exit) = child.0.try_wait().unwrap() {
            break exit;
        }
        assert!(Instant::now() < deadline, "did not stop within 10 s of SIGTERM");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(exit.success(), "exit status {exit}");

    let mut admin = PgConnection::connect(&admin_url()).await.unwrap();
    sqlx::query(&format!("DROP DATABASE {name}")).execute(&mut admin).await.unwrap();
}
