//! Every response is an envelope with the contract's code, whatever went wrong.

use std::time::Duration;

use api::ApiError;
use api::http::envelope::Data;
use api::http::extract::{ApiJson, ApiPath, ApiQuery};
use axum::Router;
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::Value;
use sqlx::PgPool;

use crate::helpers::*;

async fn error_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let body: Value = response.json().await.expect("an envelope, not plain text");
    assert_eq!(body["data"], Value::Null);
    assert!(body["meta"].is_object());
    assert_eq!(body["error"]["status"], status);
    (status, body["error"].clone())
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn unknown_routes_are_not_found(db: PgPool) {
    let app = spawn(state(db, &redis_url())).await;
    for path in ["/nope", "/v1", "/v1/markets/unknown/thing", "/health/"] {
        let (status, error) = error_of(app.get(path).await).await;
        assert_eq!((status, error["code"].as_str()), (404, Some("NOT_FOUND")), "{path}");
        assert!(error["message"].as_str().unwrap().contains(path));
    }
}

/// Found by the contract fuzzing: a NUL reached Postgres (which refuses it in text) and came
/// back as a 500. Now it is refused where it is parsed, in a path, a query or a JSON body.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn nul_characters_are_invalid_input(db: PgPool) {
    let app = spawn(state(db, &redis_url())).await;
    for path in ["/v1/quote?series_id=a%00b&side=yes&amount=1", "/v1/series/btc%00", "/v1/intervals/binance/BTC%00USDT", "/v1/crowd/leaderboard?search=%00"] {
        let (status, error) = error_of(app.get(path).await).await;
        assert_eq!((status, error["code"].as_str()), (400, Some("INVALID_INPUT")), "{path}");
        assert!(error["message"].as_str().unwrap().contains("NUL"), "{path}: {error}");
    }
    let (status, error) = error_of(app.post_json("/v1/auth/challenge", serde_json::json!({"wallet_address": "9WzDXwBbmkg8\u{0}"})).await).await;
    assert_eq!((status, error["code"].as_str()), (400, Some("INVALID_INPUT")));
    let (status, error) = error_of(app.post_json("/v1/auth/challenge", serde_json::json!({"wallet_address": "x", "a\u{0}": 1})).await).await;
    assert_eq!((status, error["code"].as_str()), (400, Some("INVALID_INPUT")));
    assert!(error["message"].as_str().unwrap().contains("NUL"), "{error}");
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn wrong_methods_are_invalid_input_and_name_the_allowed_ones(db: PgPool) {
    let app = spawn(state(db, &redis_url())).await;
    let response = app.http.delete(format!("{}/health", app.base)).send().await.unwrap();
    let allow = response.headers().get("allow").unwrap().to_str().unwrap().to_owned();
    assert!(allow.contains("GET"));
    let (status, error) = error_of(response).await;
    assert_eq!((status, error["code"].as_str()), (400, Some("INVALID_INPUT")));
    assert!(error["message"].as_str().unwrap().contains("DELETE"));
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn request_ids_are_issued_or_echoed(db: PgPool) {
    let app = spawn(state(db, &redis_url())).await;
    let issued = app.get("/health").await;
    let id = issued.headers().get("x-request-id").unwrap().to_str().unwrap();
    assert_eq!(uuid::Uuid::parse_str(id).unwrap().get_version_num(), 4);
    let echoed = app.http.get(format!("{}/nope", app.base)).header("x-request-id", "trace-me-42").send().await.unwrap();
    assert_eq!(echoed.headers().get("x-request-id").unwrap(), "trace-me-42");
}

// A router of test-only handlers behind the service's real middleware and extractors.

#[derive(Deserialize)]
struct Order {
    side: String,
    usdc_amount: String,
}

#[derive(Deserialize)]
struct Page {
    #[allow(dead_code)]
    limit: u32,
}

fn probes(timeout: Duration) -> Router {
    let routes = Router::new()
        .route("/json", post(|ApiJson(o): ApiJson<Order>| async move { Data::new(format!("{} {}", o.side, o.usdc_amount)) }))
        .route("/query", get(|ApiQuery(p): ApiQuery<Page>| async move { Data::new(p.limit) }))
        .route("/path/{id}", get(|ApiPath(id): ApiPath<uuid::Uuid>| async move { Data::new(id) }))
        .route("/panic", get(|| async { if true { panic!("secret panic detail") } else { Data::new(()) } }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Data::new(())
            }),
        )
        .route("/internal", get(|| async { Err::<Data<()>, _>(ApiError::internal("password=hunter2 at db01")) }))
        .route("/limited", get(|| async { Err::<Data<()>, _>(ApiError::RateLimited { retry_after_secs: 7 }) }));
    api::http::middleware::apply(routes, timeout, None)
}

#[tokio::test]
async fn malformed_bodies_are_invalid_input() {
    let app = serve(probes(Duration::from_secs(5))).await;
    let url = format!("{}/json", app.base);
    let cases: Vec<(&str, Option<&str>)> = vec![
        ("{\"side\": \"yes\",", Some("application/json")),                   // truncated
        ("{\"side\": 1, \"usdc_amount\": \"5\"}", Some("application/json")), // wrong type
        ("{\"side\": \"yes\"}", Some("application/json")),                   // missing field
        ("side=yes", Some("application/x-www-form-urlencoded")),             // not JSON
        ("{\"side\": \"yes\", \"usdc_amount\": \"5\"}", None),               // no content type
    ];
    for (body, content_type) in cases {
        let mut request = app.http.post(&url).body(body.to_owned());
        if let Some(ct) = content_type {
            request = request.header("content-type", ct);
        }
        let (status, error) = error_of(request.send().await.unwrap()).await;
        assert_eq!((status, error["code"].as_str()), (400, Some("INVALID_INPUT")), "{body}");
        assert!(!error["message"].as_str().unwrap().is_empty());
    }
    let ok = app.http.post(&url).json(&serde_json::json!({"side": "yes", "usdc_amount": "5"})).send().await.unwrap();
    assert_eq!(ok.status(), 200);
    let oversized = app.http.post(&url).header("content-type", "application/json").body(vec![b' '; 3 << 20]).send().await.unwrap();
    assert_eq!(error_of(oversized).await.1["code"], "INVALID_INPUT");
}

#[tokio::test]
async fn bad_query_strings_and_paths_are_invalid_input() {
    let app = serve(probes(Duration::from_secs(5))).await;
    for path in ["/query?limit=abc", "/query", "/query?limit=-1", "/path/not-a-uuid"] {
        let (status, error) = error_of(app.get(path).await).await;
        assert_eq!((status, error["code"].as_str()), (400, Some("INVALID_INPUT")), "{path}");
    }
    assert_eq!(app.get("/query?limit=10").await.status(), 200);
}

#[tokio::test]
async fn panics_and_internal_errors_are_500_without_internals() {
    let app = serve(probes(Duration::from_secs(5))).await;
    for path in ["/panic", "/internal"] {
        let (status, error) = error_of(app.get(path).await).await;
        assert_eq!((status, error["code"].as_str()), (500, Some("INTERNAL_ERROR")));
        let message = error["message"].as_str().unwrap();
        assert!(!message.contains("secret") && !message.contains("hunter2"), "{message}");
    }
    // The server survived the panic.
    assert_eq!(app.get("/query?limit=1").await.status(), 200);
}

#[tokio::test]
async fn requests_past_the_deadline_are_500() {
    let app = serve(probes(Duration::from_millis(200))).await;
    let (status, error) = error_of(app.get("/slow").await).await;
    assert_eq!((status, error["code"].as_str()), (500, Some("INTERNAL_ERROR")));
    assert!(error["message"].as_str().unwrap().contains("200 ms"));
}

#[tokio::test]
async fn rate_limited_carries_retry_after() {
    let app = serve(probes(Duration::from_secs(5))).await;
    let response = app.get("/limited").await;
    assert_eq!(response.headers().get("retry-after").unwrap(), "7");
    let (status, error) = error_of(response).await;
    assert_eq!((status, error["code"].as_str()), (429, Some("RATE_LIMITED")));
}
