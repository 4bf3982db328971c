//! Anti-replay headers and Redis rate limits, against real Redis.

use std::time::{Duration, Instant};

use api::http::auth::TokenCaller;
use api::http::auth::ReplayChecked;
use api::http::envelope::Data;
use api::http::ratelimit::authenticate_and_limit;
use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::routing::post;
use sqlx::PgPool;

use crate::helpers::*;

/// A Replay-marked endpoint (the contract's co-sign, confirm and push use the same extractor).
async fn replayed_app(db: PgPool) -> (TestApp, String) {
    let state = state(db, &redis_url());
    let routes = Router::new()
        .route("/v1/replayed", post(|TokenCaller(_): TokenCaller, _: ReplayChecked| async { Data::new(true) }))
        .layer(from_fn_with_state(state.clone(), authenticate_and_limit))
        .with_state(state.clone());
    let app = serve(api::http::middleware::apply(routes, Duration::from_secs(5))).await;
    (app, token_for_new_user(&state).await)
}

/// A user row and an access token from the state's own issuer (what `/v1/auth/verify` does).
async fn token_for_new_user(state: &api::AppState) -> String {
    let user = api::store::users::sign_in(&state.services.db, &address(&wallet())).await.unwrap();
    state.services.tokens.issue(user.id, &user.wallet_address, chrono::Utc::now()).0
}

fn nonce() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn replay_headers_are_single_use_and_fresh(db: PgPool) {
    let (app, token) = replayed_app(db).await;
    let send = |nonce: Option<String>, ts: Option<String>| {
        let mut r = app.http.post(format!("{}/v1/replayed", app.base)).header("authorization", format!("Bearer {token}"));
        if let Some(n) = nonce {
            r = r.header("x-request-nonce", n);
        }
        if let Some(t) = ts {
            r = r.header("x-request-timestamp", t);
        }
        r.send()
    };
    // Timestamps are taken when each request is sent (offsets from that moment), so a slow
    // machine cannot move a case across the 300 s boundary; the future case is 302 because the
    // server's second may have ticked since the client's.
    let at = |offset: i64| Some((chrono::Utc::now().timestamp() + offset).to_string());
    let fresh = nonce();
    assert_eq!(send(Some(fresh.clone()), at(0)).await.unwrap().status(), 200);
    let cases: [(&str, Option<String>, Option<i64>, u16, &str); 9] = [
        ("reused nonce", Some(fresh.clone()), Some(0), 422, "REPLAY_DETECTED"),
        ("reused nonce, other case", Some(fresh.to_uppercase()), Some(0), 422, "REPLAY_DETECTED"),
        ("stale timestamp", Some(nonce()), Some(-301), 422, "REPLAY_DETECTED"),
        ("future timestamp", Some(nonce()), Some(302), 422, "REPLAY_DETECTED"),
        ("non-numeric timestamp", Some(nonce()), None, 400, "INVALID_INPUT"),
        ("missing timestamp", Some(nonce()), None, 400, "INVALID_INPUT"),
        ("missing nonce", None, Some(0), 400, "INVALID_INPUT"),
        ("short nonce", Some("abc123".into()), Some(0), 400, "INVALID_INPUT"),
        ("non-hex nonce", Some("z".repeat(32)), Some(0), 400, "INVALID_INPUT"),
    ];
    for (what, n, offset, status, code) in cases {
        let ts = match (what, offset) {
            ("non-numeric timestamp", _) => Some("yesterday".to_owned()),
            (_, Some(offset)) => at(offset),
            (_, None) => None,
        };
        assert_eq!(code_of(send(n, ts).await.unwrap()).await, (status, code.to_owned()), "{what}");
    }
    let uuid = uuid::Uuid::new_v4().to_string();
    assert_eq!(send(Some(uuid), at(-299)).await.unwrap().status(), 200);
    assert_eq!(send(Some("ab".repeat(32)), at(0)).await.unwrap().status(), 200);
}

/// Fires `n` requests at once; retries once if the burst straddled a window boundary (the
/// reset headers differ), so the count is exact.
async fn burst<F, Fut>(n: usize, request: F) -> Vec<(u16, reqwest::header::HeaderMap)>
where
    F: Fn(reqwest::Client) -> Fut + Clone,
    Fut: Future<Output = reqwest::Result<reqwest::Response>> + Send + 'static,
{
    for _ in 0..3 {
        let results = concurrently(n, request.clone()).await;
        let resets: std::collections::BTreeSet<_> =
            results.iter().map(|(_, h)| h.get("x-ratelimit-reset").cloned()).collect();
        if resets.len() == 1 {
            return results;
        }
    }
    panic!("every burst straddled a window boundary");
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn public_requests_are_limited_per_ip_exactly(db: PgPool) {
    let mut config = config();
    config.rate_public_per_min = 5;
    let app = spawn(state_with(config, db, &redis_url())).await;
    let base = app.base.clone();
    let results = burst(20, move |http| http.get(format!("{base}/v1/no-such-route")).send()).await;
    let limited: Vec<_> = results.iter().filter(|(s, _)| *s == 429).collect();
    assert_eq!(results.len() - limited.len(), 5, "exactly the limit passes");
    for (status, headers) in &results {
        assert_eq!(headers["x-ratelimit-limit"], "5", "on every response, {status} included");
        assert!(headers.contains_key("x-ratelimit-remaining") && headers.contains_key("x-ratelimit-reset"));
    }
    let (_, h) = limited[0];
    let retry: u64 = h["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry));
    assert_eq!(h["x-ratelimit-remaining"], "0");
    // /health is exempt.
    assert_eq!(app.get("/health").await.status(), 200);
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn keys_and_users_have_their_own_buckets_and_trading_is_per_second(db: PgPool) {
    let mut config = config();
    config.rate_auth_per_min = 3;
    config.rate_trade_per_sec = 2;
    config.rate_public_per_min = 1_000;
    let app = spawn(state_with(config, db, &redis_url())).await;
    let token = app.sign_in(&wallet()).await;
    let other = app.sign_in(&wallet()).await;

    let base = app.base.clone();
    let t = token.clone();
    let results = burst(6, move |http| http.get(format!("{base}/v1/users/me")).bearer_auth(&t).send()).await;
    assert_eq!(results.iter().filter(|(s, _)| *s == 200).count(), 3);
    assert_eq!(results.iter().filter(|(s, _)| *s == 429).count(), 3);
    // Another user is unaffected.
    assert_eq!(app.get_with("/v1/users/me", ("authorization", &format!("Bearer {other}"))).await.status(), 200);

    let base = app.base.clone();
    let results = burst(5, move |http| http.post(format!("{base}/v1/markets/m-1/trade")).bearer_auth(&token).send()).await;
    assert_eq!(results.iter().filter(|(s, _)| *s != 429).count(), 2, "trading: 2 per second");
    assert!(results.iter().all(|(_, h)| h["x-ratelimit-limit"] == "2"));
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_dead_redis_neither_blocks_nor_hangs_requests(db: PgPool) {
    let dead = format!("redis://127.0.0.1:{}", free_port());
    let state = state(db, &dead);
    let token = token_for_new_user(&state).await;
    let app = spawn(state).await;
    let started = Instant::now();
    let r = app.get_with("/v1/users/me", ("authorization", &format!("Bearer {token}"))).await;
    // Limiter fails open; sign-in, which needs Redis for its nonce, fails closed with a 500.
    assert_eq!(r.status(), 200);
    assert!(!r.headers().contains_key("x-ratelimit-remaining"));
    let (status, code) = code_of(app.post_json("/v1/auth/challenge", serde_json::json!({"wallet_address": address(&wallet())})).await).await;
    assert_eq!((status, code.as_str()), (500, "INTERNAL_ERROR"));
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
}

/// Each extractor admits exactly its credentials.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn extractors_admit_exactly_their_credentials(db: PgPool) {
    use api::http::auth::{AnyCaller, KeyCaller};
    use axum::routing::get;
    let state = state(db, &redis_url());
    let routes = Router::new()
        .route("/v1/token-only", get(|TokenCaller(c): TokenCaller| async move { Data::new(c.user_id) }))
        .route("/v1/key-only", get(|KeyCaller(c): KeyCaller| async move { Data::new(c.user_id) }))
        .route("/v1/any", get(|AnyCaller(c): AnyCaller| async move { Data::new(c.user_id) }))
        .layer(from_fn_with_state(state.clone(), authenticate_and_limit))
        .with_state(state.clone());
    let app = serve(api::http::middleware::apply(routes, Duration::from_secs(5))).await;
    let user = api::store::users::sign_in(&state.services.db, &address(&wallet())).await.unwrap();
    let token = state.services.tokens.issue(user.id, &user.wallet_address, chrono::Utc::now()).0;
    let (_, key) = api::services::api_keys::create(&state.services, user.id, "bot").await.unwrap();
    let bearer = format!("Bearer {token}");
    let (jwt, api_key) = (("authorization", bearer.as_str()), ("x-api-key", key.as_str()));
    for (path, header, expected) in [
        ("/v1/token-only", jwt, 200),
        ("/v1/token-only", api_key, 401),
        ("/v1/key-only", api_key, 200),
        ("/v1/key-only", jwt, 401),
        ("/v1/any", jwt, 200),
        ("/v1/any", api_key, 200),
    ] {
        let response = app.get_with(path, header).await;
        assert_eq!(response.status(), expected, "{path} with {}", header.0);
        if expected == 200 {
            let body: serde_json::Value = response.json().await.unwrap();
            assert_eq!(body["data"], user.id.to_string());
        }
    }
    for path in ["/v1/token-only", "/v1/key-only", "/v1/any"] {
        assert_eq!(code_of(app.get(path).await).await, (401, "UNAUTHORIZED".into()));
    }
}
