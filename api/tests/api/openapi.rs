//! The OpenAPI document (`GET /v1/openapi.json`) and the rendered documentation (`GET /docs`).
//! The document is built with the router, so every route is in it; these tests check the other
//! direction (every documented operation is served), that it is a well-formed 3.1 document
//! whose references resolve, and what every operation must say. The contract fuzzing
//! (`scripts/contract-fuzz.sh`) checks the live answers against it.

use std::collections::HashSet;

use serde_json::Value;
use sqlx::PgPool;

use crate::helpers::*;

const METHODS: [&str; 5] = ["get", "post", "patch", "delete", "put"];

async fn document(app: &TestApp) -> Value {
    let response = app.get("/v1/openapi.json").await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    response.json().await.unwrap()
}

/// Every `$ref` in `value`.
fn refs<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                found.push(r);
            }
            map.values().for_each(|v| refs(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
        _ => {}
    }
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn the_document_is_openapi_3_1_and_every_reference_resolves(db: PgPool) {
    let app = spawn(state(db, &redis_url())).await;
    let doc = document(&app).await;
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["info"]["title"].as_str().unwrap().contains("prediction markets"));
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let mut found = Vec::new();
    refs(&doc, &mut found);
    assert!(found.len() > 100, "{}", found.len());
    for r in found {
        let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("unexpected reference {r}"));
        assert!(schemas.contains_key(name), "{r} does not resolve");
    }
    // The envelope: data, meta, error — error null on success, data null on failure.
    let market = &schemas["Envelope_Market"];
    assert_eq!(market["properties"]["error"]["type"], "null");
    assert!(market["properties"]["data"]["required"].as_array().unwrap().contains(&"yes_price".into()), "{market}");
    let error = &schemas["ErrorEnvelope"];
    assert_eq!(error["properties"]["data"]["type"], "null");
    assert_eq!(schemas["ErrorBody"]["required"], serde_json::json!(["code", "message", "status"]));
    let schemes = doc["components"]["securitySchemes"].as_object().unwrap();
    assert_eq!(schemes["bearer"]["scheme"], "bearer");
    assert_eq!((schemes["api_key"]["in"].as_str(), schemes["api_key"]["name"].as_str()), (Some("header"), Some("X-API-Key")));
    assert_eq!(schemes["request_nonce"]["name"], "X-Request-Nonce");
    assert_eq!(schemes["request_timestamp"]["name"], "X-Request-Timestamp");
    // Every error code of the contract, with its status, is stated.
    let description = doc["info"]["description"].as_str().unwrap();
    for code in ["INVALID_INPUT 400", "UNAUTHORIZED 401", "NOT_FOUND 404", "MARKET_CLOSED", "INSUFFICIENT_BALANCE", "RATE_LIMITED 429", "INTERNAL_ERROR 500"] {
        assert!(description.contains(code), "{code}");
    }
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn every_operation_states_its_errors_security_and_a_unique_id(db: PgPool) {
    let app = spawn(state(db, &redis_url())).await;
    let doc = document(&app).await;
    let paths = doc["paths"].as_object().unwrap();
    assert_eq!(paths.len(), 47, "{:?}", paths.keys().collect::<Vec<_>>());
    let mut ids = HashSet::new();
    let mut operations = 0;
    for (path, item) in paths {
        for method in METHODS {
            let Some(op) = item.get(method) else { continue };
            operations += 1;
            let name = format!("{method} {path}");
            assert!(ids.insert(op["operationId"].as_str().unwrap().to_owned()), "duplicate operationId at {name}");
            let responses = op["responses"].as_object().unwrap();
            assert!(responses.keys().any(|s| s.starts_with('2') || s == "101"), "{name} has no success");
            for status in ["400", "429", "500"] {
                assert_eq!(responses[status]["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/ErrorEnvelope", "{name} {status}");
            }
            assert!(responses.values().all(|r| r["headers"].get("X-RateLimit-Remaining").is_some()), "{name}");
            // What needs a caller says which credentials, and can answer 401 (as can a sign-in
            // with a bad signature).
            let secured = op.get("security").and_then(Value::as_array).is_some_and(|s| !s.is_empty());
            let refusable = responses.contains_key("401") && path != "/v1/auth/verify";
            assert_eq!(secured, refusable, "{name}: security and 401 go together");
        }
    }
    assert_eq!(operations, 49);
    let trade = &paths["/v1/markets/{id}/trade"]["post"];
    assert_eq!(trade["security"], serde_json::json!([{"bearer": []}, {"api_key": []}]));
    assert!(trade["parameters"].as_array().unwrap().iter().any(|p| p["name"] == "Idempotency-Key" && p["in"] == "header"));
    assert_eq!(paths["/v1/push/subscribe"]["post"]["security"], serde_json::json!([{"bearer": [], "request_nonce": [], "request_timestamp": []}]));
    assert_eq!(paths["/v1/api-keys"]["post"]["security"], serde_json::json!([{"bearer": []}]));
    let withdraw = &paths["/v1/withdraw"]["post"];
    assert_eq!(withdraw["security"], serde_json::json!([{"bearer": [], "request_nonce": [], "request_timestamp": []}, {"api_key": []}]));
    // The credential headers are parameters too, over their whole range, so generated requests
    // carry them with extreme values (a timestamp of i64::MIN once answered 500).
    let header = |op: &Value, name: &str| op["parameters"].as_array().unwrap().iter().find(|p| p["name"] == name && p["in"] == "header").cloned();
    let timestamp = header(withdraw, "X-Request-Timestamp").expect("the timestamp header is a parameter");
    assert_eq!((&timestamp["schema"]["minimum"], &timestamp["schema"]["maximum"]), (&serde_json::json!(i64::MIN), &serde_json::json!(i64::MAX)));
    assert!(header(withdraw, "X-Request-Nonce").is_some() && header(withdraw, "X-API-Key").is_some());
    assert!(header(trade, "X-API-Key").is_some() && header(trade, "X-Request-Timestamp").is_none());
    assert!(paths["/v1/series"]["get"].get("security").is_none(), "public");
    // Found by a fuzzing run with a random seed: ensure-onchain answers MARKET_CLOSED for a
    // closed market, and the document did not say so.
    assert!(paths["/v1/markets/{id}/ensure-onchain"]["get"]["responses"].get("422").is_some());
    // Found by CI's fuzzing run: /rpc answers a batch with an array, which the document's
    // `object` did not allow.
    let rpc = doc["components"]["schemas"]["JsonRpc"]["oneOf"].as_array().expect("one message or a batch");
    let types: Vec<&str> = rpc.iter().map(|s| s["type"].as_str().unwrap_or("")).collect();
    assert_eq!(types, ["object", "array"], "{rpc:?}");
    assert_eq!(paths["/rpc"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/JsonRpc");
}

/// The router serves every documented operation (the other direction holds by construction).
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn every_documented_operation_is_served(db: PgPool) {
    let app = spawn(state(db, &redis_url())).await;
    let doc = document(&app).await;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let concrete = path.replace("{exchange}", "binance").replace("{symbol}", "BTCUSDT").replace(['{', '}'], "");
        for method in METHODS.into_iter().filter(|m| item.get(*m).is_some()) {
            let request = app
                .http
                .request(method.to_uppercase().parse().unwrap(), format!("{}{concrete}", app.base))
                .header("content-type", "application/json")
                .body("{}");
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let body: Value = response.json().await.unwrap_or(Value::Null);
            let message = body["error"]["message"].as_str().unwrap_or("");
            assert!(!message.starts_with("no route"), "{method} {path}: {message}");
            assert!(status != 405 && status < 500, "{method} {path}: {status} {body}");
        }
    }
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn the_documentation_page_is_served_with_its_renderer_from_here(db: PgPool) {
    let app = spawn(state(db, &redis_url())).await;
    let page = app.get("/docs").await;
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = page.text().await.unwrap();
    assert!(!html.contains("http://") && !html.contains("https://"), "nothing from elsewhere: {html}");
    for asset in ["/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css", "/docs/init.js"] {
        assert!(html.contains(asset), "{asset}");
        let response = app.get(asset).await;
        assert_eq!(response.status(), 200, "{asset}");
        assert!(response.bytes().await.unwrap().len() > 50, "{asset}");
    }
    let init = app.get("/docs/init.js").await.text().await.unwrap();
    assert!(init.contains("/v1/openapi.json") && init.contains("validatorUrl: null"));
    assert_eq!(app.get("/docs/other.js").await.status(), 404);
}
