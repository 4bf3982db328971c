//! Anti-replay headers and Redis rate limits, against real Redis.

use std::time::{Duration, Instant};

use api::http::auth::ReplayChecked;
use api::http::auth::TokenCaller;
use api::http::envelope::Data;
use api::http::ratelimit::LimitLayer;
use axum::Router;
use axum::routing::post;
use sqlx::PgPool;

use crate::helpers::*;

/// A Replay-marked endpoint (the contract's co-sign, confirm and push use the same extractor),
/// and its state.
async fn replayed_app(db: PgPool) -> (TestApp, api::AppState) {
    let state = state(db, &redis_url());
    let routes = Router::new()
        .route("/v1/replayed", post(|TokenCaller(_): TokenCaller, _: ReplayChecked| async { Data::new(true) }))
        .layer(LimitLayer(state.clone()))
        .with_state(state.clone());
    (serve(api::http::middleware::apply(routes, Duration::from_secs(5), None)).await, state)
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
    let (app, state) = replayed_app(db).await;
    let token = token_for_new_user(&state).await;
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
    type Case = (&'static str, Option<String>, Option<i64>, u16, &'static str);
    let cases: [Case; 9] = [
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
    // Extremes a fuzzer sends: any i64 is a timestamp far out of the window, never a 500.
    for extreme in [i64::MIN.to_string(), i64::MAX.to_string(), "-1".into(), "0".into()] {
        assert_eq!(code_of(send(Some(nonce()), Some(extreme.clone())).await.unwrap()).await, (422, "REPLAY_DETECTED".to_owned()), "{extreme}");
    }
    for malformed in ["99999999999999999999", "-99999999999999999999", "1e9", "+-1", ""] {
        assert_eq!(code_of(send(Some(nonce()), Some(malformed.into())).await.unwrap()).await, (400, "INVALID_INPUT".to_owned()), "{malformed:?}");
    }
    let uuid = uuid::Uuid::new_v4().to_string();
    assert_eq!(send(Some(uuid), at(-299)).await.unwrap().status(), 200);
    assert_eq!(send(Some("ab".repeat(32)), at(0)).await.unwrap().status(), 200);
}

/// Fires `n` requests at once; retries if the burst straddled a window boundary (the reset
/// headers differ), from the start of a window the burst did not touch, so the count is exact.
/// (Retrying at once counted the retry in a window the straddling burst had partly spent: a
/// full-suite run saw 0 of 8 admitted where 3 were due.)
async fn burst<F, Fut>(n: usize, request: F) -> Vec<(u16, reqwest::header::HeaderMap)>
where
    F: Fn(reqwest::Client) -> Fut + Clone,
    Fut: Future<Output = reqwest::Result<reqwest::Response>> + Send + 'static,
{
    for _ in 0..3 {
        let results = concurrently(n, request.clone()).await;
        let resets: std::collections::BTreeSet<u64> =
            results.iter().map(|(_, h)| h.get("x-ratelimit-reset").and_then(|v| v.to_str().ok()?.parse().ok()).unwrap_or(0)).collect();
        if resets.len() == 1 {
            return results;
        }
        // The burst's later requests spent the next window: the retry starts in a fresh one.
        let last = resets.last().copied().unwrap_or(0);
        while (chrono::Utc::now().timestamp() as u64) < last {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    panic!("every burst straddled a window boundary");
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn public_requests_are_limited_per_ip_exactly(db: PgPool) {
    let mut config = config();
    config.http.rate_public_per_min = 5;
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

/// Two replicas (one Redis namespace) share one limit: what one admitted is counted by the other
/// once the counts are reconciled, and neither asks Redis per request.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn replicas_share_a_limit_through_redis(db: PgPool) {
    let mut config = config();
    config.http.rate_public_per_min = 10;
    config.http.rate_sync_every = Duration::from_millis(50);
    let one = spawn(state_with(config.clone(), db.clone(), &redis_url())).await;
    let other = spawn(state_with(config, db, &redis_url())).await;
    // Inside one window, so both replicas count in the same one.
    let window_left = 60 - chrono::Utc::now().timestamp() % 60;
    if window_left < 10 {
        tokio::time::sleep(Duration::from_secs(window_left as u64)).await;
    }
    let remaining = |r: &reqwest::Response| r.headers()["x-ratelimit-remaining"].to_str().unwrap().parse::<u64>().unwrap();
    for expected in (4..10).rev() {
        let r = one.get("/v1/no-such-route").await;
        assert_eq!((r.status().as_u16(), remaining(&r)), (404, expected));
    }
    // Reconciled within a few passes: the other replica starts from six.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(other.get("/v1/no-such-route").await.status().as_u16());
    }
    assert_eq!(statuses, [404, 404, 404, 404, 429, 429], "the other replica admits only the rest of the limit");
    // And the first replica learns of the other's four at its next passes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = one.get("/v1/no-such-route").await;
    assert_eq!((r.status().as_u16(), remaining(&r)), (429, 0));
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn keys_and_users_have_their_own_buckets_and_trading_is_per_second(db: PgPool) {
    let mut config = config();
    config.http.rate_auth_per_min = 3;
    config.http.rate_trade_per_sec = 2;
    config.http.rate_public_per_min = 1_000;
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
        .layer(LimitLayer(state.clone()))
        .with_state(state.clone());
    let app = serve(api::http::middleware::apply(routes, Duration::from_secs(5), None)).await;
    let user = api::store::users::sign_in(&state.services.db, &address(&wallet())).await.unwrap();
    let token = state.services.tokens.issue(user.id, &user.wallet_address, chrono::Utc::now()).0;
    let (_, key) = api::services::api_keys::create(&state.services, user.id, "bot", None).await.unwrap();
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

/// Resolving an API key is a Postgres query: once an IP has failed as many look-ups in a minute
/// as the public limit, its keyed requests are refused before the query. Shown with the key
/// table locked, so a look-up could not answer at all.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn random_api_keys_stop_costing_queries_at_the_ip_limit(db: PgPool) {
    let mut config = config();
    config.http.rate_public_per_min = 5;
    config.http.request_timeout = Duration::from_secs(30);
    let app = spawn(state_with(config, db.clone(), &redis_url())).await;
    let with_random_key = || {
        let key = api::domain::api_key::generate();
        let request = app.http.get(format!("{}/v1/users/me", app.base)).header("x-api-key", key);
        async move { request.send().await.unwrap() }
    };
    // Inside one window, so the five failures and the refusal are counted together.
    let window_left = 60 - chrono::Utc::now().timestamp() % 60;
    if window_left < 10 {
        tokio::time::sleep(Duration::from_secs(window_left as u64)).await;
    }
    for _ in 0..5 {
        assert_eq!(code_of(with_random_key().await).await, (401, "UNAUTHORIZED".to_owned()));
    }
    let mut lock = db.begin().await.unwrap();
    sqlx::query("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE").execute(&mut *lock).await.unwrap();
    let refused = tokio::time::timeout(Duration::from_secs(20), with_random_key()).await.expect("answered without the key table");
    assert_eq!(code_of(refused).await.0, 429);
    lock.rollback().await.unwrap();
}

/// A nonce is remembered for as long as a request carrying it could pass the timestamp check
/// (one stamped 300 s ahead passes until 600 s after first use), and it is the caller's own:
/// another caller's use does not spend it.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn nonces_outlive_their_timestamps_and_belong_to_their_caller(db: PgPool) {
    let (app, state) = replayed_app(db).await;
    let (alice, bob) = (token_for_new_user(&state).await, token_for_new_user(&state).await);
    let send = |token: &str, nonce: &str, ahead: i64| {
        app.http
            .post(format!("{}/v1/replayed", app.base))
            .bearer_auth(token)
            .header("x-request-nonce", nonce)
            .header("x-request-timestamp", (chrono::Utc::now().timestamp() + ahead).to_string())
            .send()
    };
    let shared = nonce();
    assert_eq!(send(&alice, &shared, 298).await.unwrap().status(), 200);
    assert_eq!(send(&bob, &shared, 0).await.unwrap().status(), 200, "Bob's nonce is not Alice's");
    assert_eq!(code_of(send(&alice, &shared, 0).await.unwrap()).await.0, 422);
    assert_eq!(code_of(send(&bob, &shared, 0).await.unwrap()).await.0, 422);

    let mut redis = state.services.redis.connection().await.unwrap();
    let pattern = state.services.redis.key("replay", "*");
    let keys: Vec<String> = redis::cmd("KEYS").arg(&pattern).query_async(&mut redis).await.unwrap();
    assert_eq!(keys.len(), 2);
    for key in keys {
        let ttl: i64 = redis::cmd("TTL").arg(&key).query_async(&mut redis).await.unwrap();
        // Alice's request passes until 600 s from now; its nonce must still be there then.
        assert!(ttl > 600, "{key} is forgotten after {ttl} s");
    }
}

/// The embedded chain's `/rpc` has a bucket of its own per client IP, and refuses oversized
/// bodies unread.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn the_local_rpc_is_rate_limited_and_bounded(db: PgPool) {
    use localnet::EmbeddedChain;
    use localnet::GenesisParams;
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let onchain = api::chain::OnChain::embedded(&chain, db.clone()).await.unwrap();
    let mut config = config();
    config.http.rate_rpc_per_sec = 3;
    let app = spawn(state_with(config, db, &redis_url()).with_onchain(onchain)).await;
    let base = app.base.clone();
    let results =
        burst(8, move |http| http.post(format!("{base}/rpc")).json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "getHealth"})).send()).await;
    assert_eq!(results.iter().filter(|(s, _)| *s == 200).count(), 3, "3 per second");
    assert_eq!(results.iter().filter(|(s, _)| *s == 429).count(), 5);
    assert!(results.iter().all(|(_, h)| h["x-ratelimit-limit"] == "3"));

    tokio::time::sleep(Duration::from_millis(1100)).await;
    let huge = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "getMultipleAccounts", "params": [vec!["x".repeat(100); 1000]]});
    let refused = app.http.post(format!("{}/rpc", app.base)).json(&huge).send().await.unwrap();
    let (status, body): (u16, serde_json::Value) = (refused.status().as_u16(), refused.json().await.unwrap());
    assert_eq!((status, body["error"]["message"].as_str()), (400, Some("request body too large")));
}

/// A deposit webhook without the secret is answered 401 from its headers alone (a caller cannot
/// make the service read 2 MiB bodies it will refuse), and an IP's failures are limited like
/// failed API keys; the provider, with the secret, is never limited by them.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn webhooks_without_the_secret_are_refused_before_their_body_and_limited(db: PgPool) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut config = config();
    config.http.rate_public_per_min = 3;
    let app = spawn(state_with(config, db, &redis_url())).await;
    let addr = app.base.trim_start_matches("http://").to_owned();

    // Headers announcing a 1 MiB body that never comes: the answer must not wait for it.
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /v1/webhooks/deposits HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\nauthorization: Bearer wrong\r\ncontent-length: 1048576\r\n\r\n["
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 4096];
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut answer))
        .await
        .expect("a webhook without the secret is answered before its body arrives")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]).to_string();
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(answer.contains("UNAUTHORIZED"), "{answer}");
    drop(stream);

    let post = |auth: Option<&'static str>| {
        let mut request = app.http.post(format!("{}/v1/webhooks/deposits", app.base)).json(&serde_json::json!([]));
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        request.send()
    };
    // One failure above, two more allowed in this minute, then 429. Nine failures in all: even
    // if a window boundary falls among them, at least three are refused.
    let mut statuses = Vec::new();
    for auth in [None, Some("Bearer wrong"), None, Some("Bearer also wrong"), None, Some("x"), None, Some("y")] {
        statuses.push(code_of(post(auth).await.unwrap()).await);
    }
    let refused = statuses.iter().filter(|s| s.0 == 429).count();
    assert!(statuses.iter().all(|s| *s == (401, "UNAUTHORIZED".to_owned()) || *s == (429, "RATE_LIMITED".to_owned())), "{statuses:?}");
    assert!(refused >= 3, "an IP's failed webhooks are limited: {statuses:?}");
    // The provider's delivery from the same IP is still served (no chain here: not 401 or 429).
    let served = post(Some(WEBHOOK_AUTH)).await.unwrap().status().as_u16();
    assert!(served != 401 && served != 429, "{served}");
}
