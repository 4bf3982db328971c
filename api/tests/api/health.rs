//! `/health` reports each component from a real round trip, and turns 503 when one is down.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::PgPool;

use crate::helpers::*;

async fn health(app: &TestApp) -> (u16, Value) {
    let response = app.get("/health").await;
    (response.status().as_u16(), response.json().await.unwrap())
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn ok_when_postgres_and_redis_answer(db: PgPool) {
    let app = spawn(state(db, &redis_url())).await;
    let (status, body) = health(&app).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["status"], "ok");
    assert_eq!(body["data"]["components"], json!({"postgres": "ok", "redis": "ok"}));
    assert!(body["data"]["timestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(body["error"], Value::Null);
    assert!(body["meta"].is_object());
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn unavailable_when_redis_is_unreachable(db: PgPool) {
    let dead = format!("redis://127.0.0.1:{}", free_port());
    let app = spawn(state(db, &dead)).await;
    let started = Instant::now();
    let (status, body) = health(&app).await;
    assert_eq!(status, 503);
    assert_eq!(body["data"]["status"], "degraded");
    assert_eq!(body["data"]["components"], json!({"postgres": "ok", "redis": "down"}));
    assert!(started.elapsed() < Duration::from_secs(5), "a dead Redis must not hang /health");
}

#[tokio::test]
async fn unavailable_when_postgres_is_unreachable() {
    let dead = format!("postgres://postgres:postgres@127.0.0.1:{}/none", free_port());
    let db = api::store::pool(&dead, 2, Duration::from_millis(500)).unwrap();
    let app = spawn(state(db, &redis_url())).await;
    let (status, body) = health(&app).await;
    assert_eq!(status, 503);
    assert_eq!(body["data"]["components"], json!({"postgres": "down", "redis": "ok"}));
}

/// A real redis-server is stopped under the running service and started again: `/health`
/// follows it down and back up, because the connection manager reconnects by itself.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn follows_redis_being_stopped_and_restarted(db: PgPool) {
    let port = free_port();
    let redis = RedisServer::start(port).await;
    let app = spawn(state(db, &format!("redis://127.0.0.1:{port}"))).await;
    assert_eq!(health(&app).await.0, 200);

    redis.stop();
    let (status, body) = health(&app).await;
    assert_eq!(status, 503);
    assert_eq!(body["data"]["components"]["redis"], "down");

    let _redis = RedisServer::start(port).await;
    let mut last = (0, Value::Null);
    for _ in 0..50 {
        last = health(&app).await;
        if last.0 == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(last.0, 200, "did not reconnect: {}", last.1);
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn migrations_create_the_users_table(db: PgPool) {
    let wallet = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin";
    sqlx::query("INSERT INTO users (id, wallet_address) VALUES ($1, $2)").bind(uuid::Uuid::new_v4()).bind(wallet).execute(&db).await.unwrap();
    let duplicate = sqlx::query("INSERT INTO users (id, wallet_address) VALUES ($1, $2)").bind(uuid::Uuid::new_v4()).bind(wallet).execute(&db).await;
    assert!(duplicate.is_err(), "one user per wallet");
}

/// With a chain, `/health` reports it too: the embedded chain is ok while it persists what lands.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn the_chain_is_a_component(db: PgPool) {
    let t = crate::trading::trading(&db, Duration::from_secs(10)).await;
    let (status, body) = health(&t.app).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["components"], json!({"postgres": "ok", "redis": "ok", "chain": "ok"}));
}
