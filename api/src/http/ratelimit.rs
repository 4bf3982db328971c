//! Rate limits shared by every replica through Redis: fixed windows, counted in this process and
//! reconciled with Redis in batches (`services::rate_counts`), so a request costs no Redis round trip except the
//! first of its bucket's window here.
//!
//! Buckets: trading routes 10/s per user; other requests with valid credentials 300/min per API
//! key (per user for tokens); everything else 60/min per client IP. `/health` is exempt (load
//! balancers poll it); so are deposit webhooks that carry the configured secret, while those
//! that do not are refused before their body is read and counted per IP like failed API keys.
//! Every other response, errors included, carries `X-RateLimit-Limit`,
//! `-Remaining` and `-Reset` (Unix seconds); over the limit: 429 `RATE_LIMITED` + `Retry-After`.
//!
//! Client IPs are bucketed as IPv4 addresses and IPv6 /64 networks (one subscriber's
//! allocation: counting per IPv6 address would give every client 2^64 buckets).
//!
//! An API key costs a Postgres look-up to resolve, so a client sending random keys could make
//! every request a query. Failed API-key look-ups are therefore counted per client IP, and once
//! an IP has had as many in a minute as the public limit, its requests carrying an API key are
//! refused (429) before the look-up. A client with a valid key never fails one. The WebSocket's
//! `auth` message counts and obeys the same bucket (`key_lookups_refused`, `count_key_failure`).
//!
//! The embedded chain's `/rpc` (not part of `/v1`, and without credentials) has a bucket of
//! its own: `FM_RATE_RPC_PER_SEC` per client IP.
//!
//! If Redis does not answer a window's first sync within 250 ms the request is served unlimited
//! (fail open: an outage of the limiter must not become an outage of the API) without the three
//! headers, and a warning is logged.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::{ConnectInfo, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{Extensions, HeaderMap, HeaderName, HeaderValue, Method};
use axum::response::{IntoResponse, Response};
use client_limits::IpBucket;
use ipnet::IpNet;
use tower::{Layer, Service};

use super::auth::{self, Identity};
use super::error::ApiError;
use super::{AppState, ResponseFuture};
use crate::domain::caller::AuthMethod;
use crate::services::rate_counts::{self, Who, WindowKey, unix_now};

const REDIS_BUDGET: Duration = Duration::from_millis(250);

/// The client's address as limits count it (IPv4, or an IPv6 /64), for handlers that keep limits
/// of their own (the WebSocket's connections per IP). An extractor: the handlers that take it
/// work it out as the limiter does; no other request carries it.
#[derive(Clone, Copy, Debug)]
pub struct ClientIp(pub IpBucket);

impl FromRequestParts<AppState> for ClientIp {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<ClientIp, Infallible> {
        Ok(ClientIp(IpBucket::of(client_ip(&parts.extensions, &parts.headers, &state.http.trusted_proxies))))
    }
}

/// A bucket a request is counted in: its kind (`ip`, `key`, `user`, `trade`, `rpc`, `keyfail`,
/// `webhookfail`; the label of `fm_rate_limited_total`) and whose it is.
struct Bucket {
    kind: &'static str,
    who: Who,
    limit: u32,
    window_secs: u64,
}

/// The layer putting every route behind the limiter (`authenticate_and_limit`). It is a service
/// of its own rather than axum's `from_fn`, which boxes the service under it for each request
/// besides the request's future.
#[derive(Clone)]
pub struct LimitLayer(pub AppState);

impl<S> Layer<S> for LimitLayer {
    type Service = Limited<S>;

    fn layer(&self, inner: S) -> Limited<S> {
        Limited { inner, state: self.0.clone() }
    }
}

/// A route behind the limiter.
#[derive(Clone)]
pub struct Limited<S> {
    inner: S,
    state: AppState,
}

impl<S> Service<Request> for Limited<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        // The service made ready is the one called; its clone waits for the next request.
        let ready = self.inner.clone();
        let next = Next(std::mem::replace(&mut self.inner, ready));
        let state = self.state.clone();
        Box::pin(async move { Ok(authenticate_and_limit(&state, req, next).await) })
    }
}

/// The route under the limiter, called at most once.
struct Next<S>(S);

impl<S: Service<Request, Response = Response, Error = Infallible>> Next<S> {
    async fn run(mut self, req: Request) -> Response {
        match self.0.call(req).await {
            Ok(response) => response,
            Err(infallible) => match infallible {},
        }
    }
}

/// Identifies the caller, counts the request in its bucket, and refuses it when over.
async fn authenticate_and_limit<S: Service<Request, Response = Response, Error = Infallible>>(state: &AppState, mut req: Request, next: Next<S>) -> Response {
    // Health checks are exempt (load balancers poll them).
    if req.uri().path() == "/health" {
        return next.run(req).await;
    }
    let now = unix_now();
    let ip = IpBucket::of(client_ip(req.extensions(), req.headers(), &state.http.trusted_proxies));
    if req.uri().path() == WEBHOOK_PATH {
        return webhook(state, ip, now, req, next).await;
    }
    if req.uri().path() == "/rpc" {
        let bucket = Bucket { kind: "rpc", who: Who::Ip(ip), limit: state.http.rate_rpc_per_sec, window_secs: 1 };
        return limited(state, &bucket, now, req, next).await;
    }
    // Only requests with an API key cost a look-up, so only they are counted for failures.
    let failures = req.headers().contains_key(auth::API_KEY_HEADER).then(|| key_failures(state, ip));
    if let Some(failures) = &failures
        && let Some(refusal) = refuse_when_over(state, failures, now).await
    {
        return refusal;
    }
    let identity = auth::identify(state, req.headers()).await;
    if let Some(failures) = failures.filter(|_| matches!(identity, Identity::Invalid(_))) {
        // Counted for the next request; this one is answered (and counted) as usual.
        let _ = count(state, &failures, now).await;
    }
    let bucket = bucket_for(state, &identity, req.method(), req.uri().path(), ip);
    // A request without an identity is taken as anonymous (`auth`): only others are inserted.
    if !matches!(identity, Identity::Anonymous) {
        req.extensions_mut().insert(identity);
    }
    limited(state, &bucket, now, req, next).await
}

const WEBHOOK_PATH: &str = "/v1/webhooks/deposits";

/// The deposit webhook: a delivery with the configured `Authorization` is served unlimited (a
/// provider's bursts must not be refused). Any other is answered 401 here, before its body is
/// read, and counted per client IP; past the public limit in a minute, 429 until the window ends.
async fn webhook<S: Service<Request, Response = Response, Error = Infallible>>(
    state: &AppState,
    ip: IpBucket,
    now: u64,
    req: Request,
    next: Next<S>,
) -> Response {
    if auth::webhook_authorized(req.headers(), state.http.deposit_webhook_auth.as_deref()) {
        return next.run(req).await;
    }
    let failures = Bucket { kind: "webhookfail", who: Who::Ip(ip), limit: state.http.rate_public_per_min, window_secs: 60 };
    if let Some(refusal) = refuse_when_over(state, &failures, now).await {
        return refusal;
    }
    let mut response = ApiError::Unauthorized("the webhook's Authorization is missing or wrong".into()).into_response();
    if let Ok(used) = count(state, &failures, now).await {
        set_headers(response.headers_mut(), failures.limit as u64, (failures.limit as u64).saturating_sub(used), failures.reset(now));
    }
    response
}

/// Counts the request in `bucket` and serves it, or refuses it when over the limit.
async fn limited<S: Service<Request, Response = Response, Error = Infallible>>(
    state: &AppState,
    bucket: &Bucket,
    now: u64,
    req: Request,
    next: Next<S>,
) -> Response {
    let reset = bucket.reset(now);
    let Ok(count) = count(state, bucket, now).await else {
        tracing::warn!("rate limiter unavailable, serving unlimited");
        return next.run(req).await;
    };
    let mut response = if count > bucket.limit as u64 {
        metrics::counter!("fm_rate_limited_total", "bucket" => bucket.kind).increment(1);
        ApiError::RateLimited { retry_after_secs: reset.saturating_sub(now).max(1) }.into_response()
    } else {
        next.run(req).await
    };
    let remaining = (bucket.limit as u64).saturating_sub(count);
    set_headers(response.headers_mut(), bucket.limit as u64, remaining, reset);
    response
}

impl Bucket {
    /// When the current window ends (Unix seconds).
    fn reset(&self, now: u64) -> u64 {
        (now / self.window_secs + 1) * self.window_secs
    }

    /// The current window.
    fn window(&self, now: u64) -> WindowKey {
        WindowKey { kind: self.kind, who: self.who, window: now / self.window_secs }
    }
}

/// The bucket of `ip`'s failed API-key look-ups: HTTP requests' and WebSocket `auth` messages'
/// alike.
fn key_failures(state: &AppState, ip: IpBucket) -> Bucket {
    Bucket { kind: "keyfail", who: Who::Ip(ip), limit: state.http.rate_public_per_min, window_secs: 60 }
}

/// Whether `ip`'s API keys are refused before their look-up now (its failed look-ups this
/// minute reached the public limit), for the WebSocket's `auth` message. Fails open.
pub(crate) async fn key_lookups_refused(state: &AppState, ip: IpBucket) -> bool {
    let now = unix_now();
    let bucket = key_failures(state, ip);
    let over = at_limit(state, &bucket, now).await;
    if over {
        metrics::counter!("fm_rate_limited_total", "bucket" => bucket.kind).increment(1);
    }
    over
}

/// Counts a failed API-key look-up of `ip` (the WebSocket's `auth` message).
pub(crate) async fn count_key_failure(state: &AppState, ip: IpBucket) {
    let _ = count(state, &key_failures(state, ip), unix_now()).await;
}

/// Whether `bucket` is already at its limit in this window (it is read, not counted). Fails open
/// like the limiter.
async fn at_limit(state: &AppState, bucket: &Bucket, now: u64) -> bool {
    let used = state.limits.peek(&state.services.redis, bucket.window(now), bucket.reset(now), 2 * bucket.window_secs, REDIS_BUDGET).await;
    used.is_ok_and(|used| used >= bucket.limit as u64)
}

/// A 429 if `bucket` is already at its limit in this window (it is read, not counted). Fails
/// open like the limiter.
async fn refuse_when_over(state: &AppState, bucket: &Bucket, now: u64) -> Option<Response> {
    if !at_limit(state, bucket, now).await {
        return None;
    }
    let reset = bucket.reset(now);
    metrics::counter!("fm_rate_limited_total", "bucket" => bucket.kind).increment(1);
    let mut response = ApiError::RateLimited { retry_after_secs: reset.saturating_sub(now).max(1) }.into_response();
    set_headers(response.headers_mut(), bucket.limit as u64, 0, reset);
    Some(response)
}

/// Counts the request in `bucket`'s current window; the window's count with it.
async fn count(state: &AppState, bucket: &Bucket, now: u64) -> Result<u64, rate_counts::Unavailable> {
    // The key lives twice the window in Redis, so it outlives clock skew between replicas.
    state.limits.add(&state.services.redis, bucket.window(now), bucket.reset(now), 2 * bucket.window_secs, REDIS_BUDGET).await
}

fn bucket_for(state: &AppState, identity: &Identity, method: &Method, path: &str, ip: IpBucket) -> Bucket {
    let settings = &state.http;
    match identity {
        Identity::Authenticated(caller) if is_trading(method, path) => {
            Bucket { kind: "trade", who: Who::Id(caller.user_id), limit: settings.rate_trade_per_sec, window_secs: 1 }
        }
        Identity::Authenticated(caller) => {
            let (kind, who) = match caller.method {
                AuthMethod::ApiKey { key_id, .. } => ("key", Who::Id(key_id)),
                AuthMethod::Token => ("user", Who::Id(caller.user_id)),
            };
            Bucket { kind, who, limit: settings.rate_auth_per_min, window_secs: 60 }
        }
        Identity::Anonymous | Identity::Invalid(_) => Bucket { kind: "ip", who: Who::Ip(ip), limit: settings.rate_public_per_min, window_secs: 60 },
    }
}

/// `POST /v1/markets/{id}/trade` and `/sell`.
fn is_trading(method: &Method, path: &str) -> bool {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    method == Method::POST && matches!(segments.as_slice(), ["", "v1", "markets", id, "trade" | "sell"] if !id.is_empty())
}

/// The socket's peer, unless it is a trusted proxy: then `X-Forwarded-For` is walked from the
/// right (each proxy appends the address it saw) to the first address that is not a trusted
/// proxy. An entry that is not an address ends the walk at the last trusted hop: a proxy never
/// writes one, so it and everything left of it are the client's own word.
fn client_ip(extensions: &Extensions, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let peer = extensions.get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(addr)| addr.ip().to_canonical()).unwrap_or(IpAddr::from([0, 0, 0, 0]));
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|range| range.contains(ip));
    let mut hop = peer;
    for entry in forwarded_for(headers).into_iter().rev() {
        if !is_trusted(&hop) {
            break;
        }
        match entry.parse::<IpAddr>() {
            Ok(ip) => hop = ip.to_canonical(),
            Err(_) => break,
        }
    }
    hop
}

/// The `X-Forwarded-For` entries, left to right, across every such header.
fn forwarded_for(headers: &HeaderMap) -> Vec<&str> {
    headers.get_all("x-forwarded-for").iter().flat_map(|v| v.to_str().unwrap_or("?").split(',')).map(str::trim).collect()
}

const LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
const REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
const RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

fn set_headers(headers: &mut HeaderMap, limit: u64, remaining: u64, reset: u64) {
    headers.insert(LIMIT, HeaderValue::from(limit));
    headers.insert(REMAINING, HeaderValue::from(remaining));
    headers.insert(RESET, HeaderValue::from(reset));
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

    /// The client address of a request from `peer`, forwarded for `forwarded`, as text.
    fn ip_of(peer: &str, forwarded: Option<&str>, proxies: &[IpNet]) -> String {
        let req = request_from(peer, forwarded);
        client_ip(req.extensions(), req.headers(), proxies).to_string()
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let proxies: Vec<IpNet> = vec!["10.0.0.1/32".parse().unwrap(), "10.0.0.2/32".parse().unwrap()];
        let ip = |peer, fwd| ip_of(peer, fwd, &proxies);
        // A direct client cannot spoof its address.
        assert_eq!(ip("203.0.113.9", Some("1.1.1.1")), "203.0.113.9");
        // Behind proxies: the right-most address that is not a proxy (left entries are the client's word).
        assert_eq!(ip("10.0.0.1", Some("1.1.1.1, 198.51.100.7, 10.0.0.2")), "198.51.100.7");
        assert_eq!(ip("10.0.0.1", None), "10.0.0.1");
        assert_eq!(ip("10.0.0.1", Some("garbage")), "10.0.0.1");
    }

    #[test]
    fn trusted_proxies_are_ranges() {
        let proxies: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap(), "fd00::/8".parse().unwrap()];
        let ip = |peer, fwd| ip_of(peer, fwd, &proxies);
        assert_eq!(ip("10.9.8.7", Some("198.51.100.7, 10.1.1.1")), "198.51.100.7");
        assert_eq!(ip("fd12::1", Some("2001:db8::5, fd00::9")), "2001:db8::5");
        // An IPv4 peer seen through an IPv6 socket is the same peer.
        assert_eq!(ip("::ffff:10.0.0.3", Some("198.51.100.8")), "198.51.100.8");
        assert_eq!(ip("11.0.0.1", Some("198.51.100.7")), "11.0.0.1");
    }

    #[test]
    fn an_unparsable_forwarded_entry_ends_the_walk() {
        let proxies: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let ip = |peer, fwd| ip_of(peer, fwd, &proxies);
        // Left of the garbage is the client's word: not believed.
        assert_eq!(ip("10.0.0.1", Some("1.1.1.1, garbage")), "10.0.0.1");
        assert_eq!(ip("10.0.0.1", Some("1.1.1.1, garbage, 10.0.0.2")), "10.0.0.2");
        assert_eq!(ip("10.0.0.1", Some("1.1.1.1, , 10.0.0.2")), "10.0.0.2");
        assert_eq!(ip("10.0.0.1", Some("garbage, 198.51.100.7")), "198.51.100.7");
    }
}
