//! The layers every route runs behind: CORS, request ids, tracing, a deadline, panic recovery,
//! and a last-resort envelope for error responses that did not come from a handler.

use std::any::Any;
use std::time::Duration;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::Response;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::Level;

use super::envelope::{Enveloped, error_response};

/// The request id header: taken from the client when present, otherwise a new UUID; echoed on
/// the response and recorded on every log line of the request.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Wraps `routes` in the service's middleware, outermost first. CORS is outermost, so a
/// preflight is answered for every route before authentication and rate limits see it.
pub fn apply(routes: Router, request_timeout: Duration, cors_origins: Option<&[String]>) -> Router {
    let stack = ServiceBuilder::new()
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &Request| {
                    let id = req.headers().get(&REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or("");
                    tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id = %id)
                })
                .on_response(DefaultOnResponse::new().level(Level::INFO)),
        )
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(from_fn(record))
        .layer(from_fn(envelope_stray_errors))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(from_fn_with_state(request_timeout, deadline));
    routes.layer(stack).layer(cors(cors_origins))
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

/// Counts each request by method, route (the matched pattern, `/v1/markets/{id}`; `unmatched`
/// for unknown paths, so clients cannot multiply the series) and status, and times it.
async fn record(req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = req.method().as_str().to_owned();
    let started = std::time::Instant::now();
    let response = next.run(req).await;
    let status = response.status().as_u16().to_string();
    metrics::histogram!("fm_http_request_duration_seconds", "method" => method.clone(), "route" => route.clone()).record(started.elapsed().as_secs_f64());
    metrics::counter!("fm_http_requests_total", "method" => method, "route" => route, "status" => status).increment(1);
    response
}

/// A request still running after the deadline is abandoned with 500 `INTERNAL_ERROR`.
async fn deadline(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(response) => response,
        Err(_) => {
            tracing::error!(timeout_ms = limit.as_millis() as u64, "request timed out");
            let message = format!("the request did not complete within {} ms", limit.as_millis());
            error_response(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL_ERROR", message)
        }
    }
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
async fn envelope_stray_errors(req: Request, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_owned());
    let response = next.run(req).await;
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
