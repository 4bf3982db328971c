//! What every route runs behind: CORS, and the edge (`Edge`): the request id, the request's
//! span, its metrics, a deadline, panic recovery, and a last-resort envelope for error
//! responses that did not come from a handler.
//!
//! The edge is one service with one boxed future rather than a layer for each of its parts:
//! each `from_fn` layer clones the service under it and boxes a future per request, and a
//! read answered from memory spent more on that than on its own work.

use std::any::Any;
use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::Response;
use futures_util::FutureExt;
use tower::{Layer, Service};
use tower_http::cors::{AllowOrigin, CorsLayer};
use tracing::Instrument;

use super::encoding;
use super::envelope::{Enveloped, error_response};

/// The request id header: taken from the client when present, otherwise a new UUID v4; echoed
/// on the response and recorded on every log line of the request.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Wraps `routes` in the service's middleware, outermost first. CORS is outermost, so a
/// preflight is answered for every route before authentication and rate limits see it.
pub fn apply(routes: Router, request_timeout: Duration, cors_origins: Option<&[String]>) -> Router {
    routes.layer(EdgeLayer { request_timeout }).layer(cors(cors_origins))
}

/// The layer putting `Edge` over each route.
#[derive(Clone, Copy, Debug)]
pub struct EdgeLayer {
    /// A request still running after this is abandoned with 500 `INTERNAL_ERROR`.
    pub request_timeout: Duration,
}

impl<S> Layer<S> for EdgeLayer {
    type Service = Edge<S>;

    fn layer(&self, inner: S) -> Edge<S> {
        Edge { inner, request_timeout: self.request_timeout }
    }
}

/// A route behind the edge. For each request, in order:
/// - its id: the client's `X-Request-Id`, or a new UUID v4; echoed on the response;
/// - a `request` span (method, path, id) over everything the request does until its response
///   is ready, closed by an INFO line with its status and latency (ERROR for a 5xx);
/// - a deadline: still running after `request_timeout`, it answers 500 `INTERNAL_ERROR`;
/// - a panic in the route answers 500 `INTERNAL_ERROR`, its message going to the log only;
/// - an error response that did not come from a handler gets the envelope (`envelope_stray`);
/// - a kept body is answered gzip-compressed when the request takes it (`encoding`);
/// - it is counted and timed by method, route and status (`record`).
#[derive(Clone, Debug)]
pub struct Edge<S> {
    inner: S,
    request_timeout: Duration,
}

impl<S> Service<Request> for Edge<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        let started = Instant::now();
        let id = match req.headers().get(&REQUEST_ID) {
            Some(id) => id.clone(),
            None => {
                let id = new_request_id();
                req.headers_mut().insert(REQUEST_ID, id.clone());
                id
            }
        };
        let span = tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id = %id.to_str().unwrap_or(""));
        let route = req.extensions().get::<MatchedPath>().cloned();
        let gzip = encoding::accepts_gzip(req.headers());
        let (method, uri) = (req.method().clone(), req.uri().clone());
        let limit = self.request_timeout;
        let called = {
            let _entered = span.enter();
            tracing::debug!("started processing request");
            std::panic::catch_unwind(AssertUnwindSafe(|| self.inner.call(req)))
        };
        let answered = async move {
            let outcome = match called {
                Ok(future) => AssertUnwindSafe(tokio::time::timeout(limit, future)).catch_unwind().await,
                Err(panic) => Err(panic),
            };
            let response = match outcome {
                Ok(Ok(Ok(response))) => envelope_stray(response, &method, &uri),
                Ok(Ok(Err(infallible))) => match infallible {},
                Ok(Err(_elapsed)) => past_deadline(limit),
                Err(panic) => panic_response(panic),
            };
            let mut response = encoding::negotiate(response, gzip);
            if !response.headers().contains_key(&REQUEST_ID) {
                response.headers_mut().insert(REQUEST_ID, id);
            }
            let elapsed = started.elapsed();
            let (status, latency_ms) = (response.status().as_u16(), elapsed.as_secs_f64() * 1e3);
            if response.status().is_server_error() {
                tracing::error!(status, latency_ms, "response failed");
            } else {
                tracing::info!(status, latency_ms, "finished processing request");
            }
            record(&method, route.as_ref(), response.status(), elapsed);
            Ok(response)
        };
        Box::pin(answered.instrument(span))
    }
}

/// A new request id: a UUID v4 from the thread's generator (no system call per request).
fn new_request_id() -> HeaderValue {
    let uuid = uuid::Builder::from_random_bytes(rand::random()).into_uuid();
    let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
    HeaderValue::from_str(uuid.hyphenated().encode_lower(&mut text)).expect("a UUID is a valid header value")
}

/// Counts the request by method, route (the matched pattern, `/v1/markets/{id}`; `unmatched`
/// for unknown paths, so clients cannot multiply the series) and status, and times it.
fn record(method: &Method, route: Option<&MatchedPath>, status: StatusCode, elapsed: Duration) {
    let route = route.map_or("unmatched", MatchedPath::as_str).to_owned();
    let method = method.as_str().to_owned();
    let status = status.as_str().to_owned();
    metrics::histogram!("fm_http_request_duration_seconds", "method" => method.clone(), "route" => route.clone()).record(elapsed.as_secs_f64());
    metrics::counter!("fm_http_requests_total", "method" => method, "route" => route, "status" => status).increment(1);
}

/// What a request still running after the deadline answers.
fn past_deadline(limit: Duration) -> Response {
    tracing::error!(timeout_ms = limit.as_millis() as u64, "request timed out");
    let message = format!("the request did not complete within {} ms", limit.as_millis());
    error_response(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL_ERROR", message)
}

/// Request headers a browser front end may send: credentials, anti-replay, idempotency.
const ALLOWED_HEADERS: [HeaderName; 6] = [
    header::AUTHORIZATION,
    header::CONTENT_TYPE,
    HeaderName::from_static("x-api-key"),
    HeaderName::from_static("x-request-nonce"),
    HeaderName::from_static("x-request-timestamp"),
    HeaderName::from_static("idempotency-key"),
];

/// Response headers a browser front end may read.
const EXPOSED_HEADERS: [HeaderName; 5] = [
    HeaderName::from_static("x-ratelimit-limit"),
    HeaderName::from_static("x-ratelimit-remaining"),
    HeaderName::from_static("x-ratelimit-reset"),
    header::RETRY_AFTER,
    REQUEST_ID,
];

/// Cross-origin access for browser front ends: `origins` (exact `scheme://host[:port]`), or any
/// origin when `None` — safe for this API, which authenticates with bearer tokens and keys,
/// never cookies, so no credentials mode is offered. Preflights are cached 10 minutes.
pub fn cors(origins: Option<&[String]>) -> CorsLayer {
    let allow = match origins {
        None => AllowOrigin::any(),
        Some(list) => AllowOrigin::list(list.iter().filter_map(|o| HeaderValue::from_str(o).ok())),
    };
    CorsLayer::new()
        .allow_origin(allow)
        .allow_methods([Method::GET, Method::POST, Method::PATCH, Method::DELETE, Method::OPTIONS])
        .allow_headers(ALLOWED_HEADERS)
        .expose_headers(EXPOSED_HEADERS)
        .max_age(Duration::from_secs(600))
}

/// A panicking handler answers 500 `INTERNAL_ERROR`; the panic message goes to the log only.
fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let detail = panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
    tracing::error!(panic = %detail, "handler panicked");
    error_response(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL_ERROR", "internal server error".into())
}

/// Error responses produced outside our handlers (axum's 404 for an unknown route, its 405
/// for a wrong method, a body-limit 413) get the envelope too, with a message that says what
/// was wrong. Wrong methods answer 400 `INVALID_INPUT` (the contract has no 405 code), keeping
/// the `Allow` header.
fn envelope_stray(response: Response, method: &Method, uri: &Uri) -> Response {
    let path = uri.path();
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || response.extensions().get::<Enveloped>().is_some() {
        return response;
    }
    let allow = response.headers().get(header::ALLOW).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let enveloped = match status {
        StatusCode::NOT_FOUND => error_response(status, "NOT_FOUND", format!("no route for {method} {path}")),
        StatusCode::METHOD_NOT_ALLOWED => {
            let message = format!("method {method} is not allowed on {path} (allowed: {allow})");
            error_response(StatusCode::BAD_REQUEST, "INVALID_INPUT", message)
        }
        StatusCode::PAYLOAD_TOO_LARGE => error_response(StatusCode::BAD_REQUEST, "INVALID_INPUT", "request body too large".into()),
        StatusCode::TOO_MANY_REQUESTS => error_response(status, "RATE_LIMITED", "too many requests".into()),
        s if s.is_client_error() => {
            let reason = s.canonical_reason().unwrap_or("bad request").to_lowercase();
            error_response(StatusCode::BAD_REQUEST, "INVALID_INPUT", reason)
        }
        _ => error_response(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL_ERROR", "internal server error".into()),
    };
    // Keep the original's headers (Allow, rate-limit headers, request id…): only the status,
    // the body and its type change.
    let (mut parts, _) = response.into_parts();
    let (new, body) = enveloped.into_parts();
    parts.status = new.status;
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.extend(new.headers);
    parts.extensions.extend(new.extensions);
    Response::from_parts(parts, body)
}
