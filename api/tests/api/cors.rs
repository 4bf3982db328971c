//! CORS for browser front ends on other origins: preflights answered for every route (before
//! authentication and rate limits), the rate-limit, retry and request-id headers exposed; any
//! origin by default, only the configured ones otherwise.

use reqwest::Method;
use sqlx::PgPool;

use crate::helpers::*;

async fn preflight(app: &TestApp, path: &str, origin: &str, method: &str, headers: &str) -> reqwest::Response {
    app.http
        .request(Method::OPTIONS, format!("{}{path}", app.base))
        .header("Origin", origin)
        .header("Access-Control-Request-Method", method)
        .header("Access-Control-Request-Headers", headers)
        .send()
        .await
        .unwrap()
}

fn header(response: &reqwest::Response, name: &str) -> String {
    response.headers().get(name).map(|v| v.to_str().unwrap().to_lowercase()).unwrap_or_default()
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn any_origin_may_call_by_default(db: PgPool) {
    let app = spawn(state(db, &redis_url())).await;
    let origin = "https://app.example.com";
    for (path, method, headers) in [
        ("/v1/series", "GET", "authorization"),
        ("/v1/markets/0b3d5c38-4f1e-4f57-9d5e-3f1c2c0f2a11/trade", "POST", "authorization,content-type,idempotency-key"),
        ("/v1/push/subscribe", "POST", "authorization,content-type,x-request-nonce,x-request-timestamp"),
        ("/v1/api-keys/0b3d5c38-4f1e-4f57-9d5e-3f1c2c0f2a11", "DELETE", "x-api-key"),
        ("/v1/users/me", "PATCH", "authorization,content-type"),
    ] {
        let response = preflight(&app, path, origin, method, headers).await;
        assert_eq!(response.status(), 200, "{method} {path}");
        assert_eq!(header(&response, "access-control-allow-origin"), "*", "{method} {path}");
        assert!(header(&response, "access-control-allow-methods").contains(&method.to_lowercase()), "{method} {path}");
        for asked in headers.split(',') {
            assert!(header(&response, "access-control-allow-headers").contains(asked), "{asked} for {method} {path}");
        }
        assert_eq!(header(&response, "access-control-max-age"), "600");
    }
    // The actual request: readable by the page, with the limit headers exposed.
    let response = app.http.get(format!("{}/v1/series", app.base)).header("Origin", origin).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "access-control-allow-origin"), "*");
    let exposed = header(&response, "access-control-expose-headers");
    for name in ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after", "x-request-id"] {
        assert!(exposed.contains(name), "{name} not exposed: {exposed}");
    }
    // Errors carry them too (a page must read a 401's envelope).
    let refused = app.http.get(format!("{}/v1/users/me", app.base)).header("Origin", origin).send().await.unwrap();
    assert_eq!((refused.status().as_u16(), header(&refused, "access-control-allow-origin")), (401, "*".to_owned()));
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn only_configured_origins_when_listed(db: PgPool) {
    let mut config = config();
    config.http.cors_origins = Some(vec!["https://app.example.com".into(), "http://localhost:5173".into()]);
    let app = spawn(state_with(config, db, &redis_url())).await;
    for allowed in ["https://app.example.com", "http://localhost:5173"] {
        let response = preflight(&app, "/v1/series", allowed, "GET", "authorization").await;
        assert_eq!(header(&response, "access-control-allow-origin"), allowed);
        assert!(header(&response, "vary").contains("origin"));
    }
    let response = preflight(&app, "/v1/series", "https://evil.example", "GET", "authorization").await;
    assert_eq!(header(&response, "access-control-allow-origin"), "", "an unlisted origin is not allowed");
    let response = app.http.get(format!("{}/v1/series", app.base)).header("Origin", "https://evil.example").send().await.unwrap();
    assert_eq!(header(&response, "access-control-allow-origin"), "");

    // The setting is checked at start.
    let parse = |value: &str| api::Config::from_lookup(|name| (name == "FM_CORS_ORIGINS").then(|| value.to_owned()));
    assert_eq!(parse("*").unwrap().http.cors_origins, None);
    assert_eq!(
        parse("https://a.example/, http://localhost:3000").unwrap().http.cors_origins,
        Some(vec!["https://a.example".into(), "http://localhost:3000".into()])
    );
    for bad in ["a.example", "https://a.example/app", "ftp://a.example", "https://*.example"] {
        assert!(parse(bad).unwrap_err().to_string().contains("FM_CORS_ORIGINS"), "{bad}");
    }
}
