//! Rate limits in Redis, shared by every replica: fixed windows counted atomically by a Lua
//! script (INCR and EXPIRE in one step).
//!
//! Buckets: trading routes 10/s per user; other requests with valid credentials 300/min per API
//! key (per user for tokens); everything else 60/min per client IP. `/health` is exempt (load
//! balancers poll it). Every other response, errors included, carries `X-RateLimit-Limit`,
//! `-Remaining` and `-Reset` (Unix seconds); over the limit: 429 `RATE_LIMITED` + `Retry-After`.
//!
//! If Redis does not answer within 250 ms the request is served unlimited (fail open: an outage
//! of the limiter must not become an outage of the API) without the three headers, and a
//! warning is logged.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::auth::{self, Identity};
use super::error::ApiError;
use crate::domain::caller::AuthMethod;

const REDIS_BUDGET: Duration = Duration::from_millis(250);

static COUNT_SCRIPT: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
    redis::Script::new(
        "local n = redis.call('INCR', KEYS[1]) \
         if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end \
         return n",
    )
});

/// A bucket a request is counted in.
struct Bucket {
    key: String,
    limit: u32,
    window_secs: u64,
}

/// Identifies the caller, counts the request in its bucket, and refuses it when over.
pub async fn authenticate_and_limit(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    // Health checks, and webhooks (authenticated by their own secret, and a provider's bursts
    // must not be refused).
    if matches!(req.uri().path(), "/health" | "/v1/webhooks/deposits") {
        return next.run(req).await;
    }
    let identity = auth::identify(&state, req.headers()).await;
    let ip = client_ip(&req, &state.http.trusted_proxies);
    let bucket = bucket_for(&state, &identity, req.method(), req.uri().path(), ip);
    req.extensions_mut().insert(identity);

    let now = chrono::Utc::now().timestamp() as u64;
    let window = now / bucket.window_secs;
    let reset = (window + 1) * bucket.window_secs;
    let key = state.services.redis.key("rl", &format!("{}:{window}", bucket.key));
    let counted = tokio::time::timeout(REDIS_BUDGET, count(&state, &key, bucket.window_secs)).await;
    let count = match counted {
        Ok(Ok(n)) => n,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "rate limiter unavailable, serving unlimited");
            return next.run(req).await;
        }
        Err(_) => {
            tracing::warn!("rate limiter timed out, serving unlimited");
            return next.run(req).await;
        }
    };
    let mut response = if count > bucket.limit as u64 {
        ApiError::RateLimited { retry_after_secs: reset.saturating_sub(now).max(1) }.into_response()
    } else {
        next.run(req).await
    };
    let remaining = (bucket.limit as u64).saturating_sub(count);
    set_headers(response.headers_mut(), bucket.limit as u64, remaining, reset);
    response
}

async fn count(state: &AppState, key: &str, window_secs: u64) -> Result<u64, redis::RedisError> {
    let mut conn = state.services.redis.connection().await?;
    // Twice the window, so a key outlives clock skew between replicas.
    COUNT_SCRIPT.key(key).arg(2 * window_secs).invoke_async(&mut conn).await
}

fn bucket_for(state: &AppState, identity: &Identity, method: &Method, path: &str, ip: IpAddr) -> Bucket {
    let config = &state.http;
    match identity {
        Identity::Authenticated(caller) if is_trading(method, path) => {
            Bucket { key: format!("trade:{}", caller.user_id), limit: config.rate_trade_per_sec, window_secs: 1 }
        }
        Identity::Authenticated(caller) => {
            let who = match caller.method {
                AuthMethod::ApiKey { key_id } => format!("key:{key_id}"),
                AuthMethod::Token => format!("user:{}", caller.user_id),
            };
            Bucket { key: who, limit: config.rate_auth_per_min, window_secs: 60 }
        }
        Identity::Anonymous | Identity::Invalid(_) => {
            Bucket { key: format!("ip:{ip}"), limit: config.rate_public_per_min, window_secs: 60 }
        }
    }
}

/// `POST /v1/markets/{id}/trade` and `/sell`.
fn is_trading(method: &Method, path: &str) -> bool {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    method == Method::POST
        && matches!(segments.as_slice(), ["", "v1", "markets", id, "trade" | "sell"] if !id.is_empty())
}

/// The socket's peer, unless it is a trusted proxy: then the right-most address in
/// `X-Forwarded-For` that is not itself a trusted proxy.
fn client_ip(req: &Request, trusted: &[IpAddr]) -> IpAddr {
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip())
        .unwrap_or(IpAddr::from([0, 0, 0, 0]));
    if !trusted.contains(&peer) {
        return peer;
    }
    forwarded_for(req.headers())
        .into_iter()
        .rev()
        .find(|ip| !trusted.contains(ip))
        .unwrap_or(peer)
}

fn forwarded_for(headers: &HeaderMap) -> Vec<IpAddr> {
    headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

fn set_headers(headers: &mut HeaderMap, limit: u64, remaining: u64, reset: u64) {
    headers.insert("x-ratelimit-limit", HeaderValue::from(limit));
    headers.insert("x-ratelimit-remaining", HeaderValue::from(remaining));
    headers.insert("x-ratelimit-reset", HeaderValue::from(reset));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trading_routes() {
        assert!(is_trading(&Method::POST, "/v1/markets/abc/trade"));
        assert!(is_trading(&Method::POST, "/v1/markets/abc/sell/"));
        assert!(!is_trading(&Method::GET, "/v1/markets/abc/trade"));
        assert!(!is_trading(&Method::POST, "/v1/markets//trade"));
        assert!(!is_trading(&Method::POST, "/v1/markets/abc/quote"));
    }

    fn request_from(peer: &str, forwarded: Option<&str>) -> Request {
        let mut builder = Request::builder().uri("/v1/series");
        if let Some(f) = forwarded {
            builder = builder.header("x-forwarded-for", f);
        }
        let mut req = builder.body(axum::body::Body::empty()).unwrap();
        req.extensions_mut().insert(ConnectInfo(SocketAddr::new(peer.parse().unwrap(), 40_000)));
        req
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let proxies: Vec<IpAddr> = vec!["10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap()];
        let ip = |peer, fwd| client_ip(&request_from(peer, fwd), &proxies).to_string();
        // A direct client cannot spoof its address.
        assert_eq!(ip("203.0.113.9", Some("1.1.1.1")), "203.0.113.9");
        // Behind proxies: the right-most address that is not a proxy (left entries are the client's word).
        assert_eq!(ip("10.0.0.1", Some("1.1.1.1, 198.51.100.7, 10.0.0.2")), "198.51.100.7");
        assert_eq!(ip("10.0.0.1", None), "10.0.0.1");
        assert_eq!(ip("10.0.0.1", Some("garbage")), "10.0.0.1");
    }
}
