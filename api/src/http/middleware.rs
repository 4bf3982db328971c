//! What every route runs behind, the edge (`Edge`): CORS, the request id, the request's span,
//! its metrics, a deadline, panic recovery, and a last-resort envelope for error responses that
//! did not come from a handler.
//!
//! The edge is one service with one boxed future rather than a layer for each of its parts:
//! each layer clones the service under it per request and most box a future, and a read
//! answered from memory spent more on that than on its own work. For the same reason what it
//! adds to every answer is made once: the CORS headers when the router is built, a route's
//! metric handles on its first request.

use std::any::Any;
use std::convert::Infallible;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::Response;
use futures_util::FutureExt;
use metrics::{Counter, Histogram};
use tower::{Layer, Service};
use tracing::Instrument;

use super::ResponseFuture;
use super::cors::Cors;
use super::encoding;
use super::envelope::{Enveloped, error_response};

/// The request id header: taken from the client when present, otherwise a new UUID v4; echoed
/// on the response and recorded on every log line of the request.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Puts every route of `routes` behind the edge: CORS for `cors_origins` (any origin when
/// `None`), and a deadline of `request_timeout`.
pub fn apply(routes: Router, request_timeout: Duration, cors_origins: Option<&[String]>) -> Router {
    routes.layer(EdgeLayer { request_timeout, cors: Cors::new(cors_origins) })
}

/// The layer putting `Edge` over each route.
#[derive(Clone, Debug)]
pub struct EdgeLayer {
    /// A request still running after this is abandoned with 500 `INTERNAL_ERROR`.
    pub request_timeout: Duration,
    /// Which origins browser front ends may call from.
    pub cors: Cors,
}

impl<S> Layer<S> for EdgeLayer {
    type Service = Edge<S>;

    fn layer(&self, inner: S) -> Edge<S> {
        let parts = EdgeParts { request_timeout: self.request_timeout, cors: self.cors.clone(), metrics: OnceLock::new() };
        Edge { inner, parts: Arc::new(parts) }
    }
}

/// A route behind the edge. For each request, in order:
/// - a preflight (`OPTIONS`) is answered from the CORS policy, before anything else sees it;
///   every other answer carries its `Vary`, and those to a cross-origin request (one with
///   `Origin`) the origin allowed and the headers exposed (`cors`);
/// - its id: the client's `X-Request-Id`, or a new UUID v4; echoed on the response;
/// - a `request` span (method, path, id) over everything the request does until its response
///   is ready, closed by an INFO line with its status and latency (ERROR for a 5xx);
/// - a deadline: still running after `request_timeout`, it answers 500 `INTERNAL_ERROR`;
/// - a panic in the route answers 500 `INTERNAL_ERROR`, its message going to the log only;
/// - an error response that did not come from a handler gets the envelope (`envelope_stray`);
/// - a kept body is answered gzip-compressed when the request takes it (`encoding`);
/// - it is counted and timed by method, route and status (`RouteMetrics`).
#[derive(Clone, Debug)]
pub struct Edge<S> {
    inner: S,
    /// What the edge of one endpoint keeps, shared by its clones (one per request).
    parts: Arc<EdgeParts>,
}

#[derive(Debug)]
struct EdgeParts {
    request_timeout: Duration,
    cors: Cors,
    /// The metric handles of this edge's route, kept from its first request.
    metrics: OnceLock<RouteMetrics>,
}

impl<S> Service<Request> for Edge<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        if req.method() == Method::OPTIONS {
            return Box::pin(std::future::ready(Ok(self.parts.cors.preflight(req.headers()))));
        }
        let started = Instant::now();
        let origin = req.headers().get(header::ORIGIN).cloned();
        let id = req.headers().get(&REQUEST_ID).cloned().unwrap_or_else(new_request_id);
        let span = tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id = %id.to_str().unwrap_or(""));
        let route = req.extensions().get::<MatchedPath>().cloned();
        let gzip = encoding::accepts_gzip(req.headers());
        let (method, uri) = (req.method().clone(), req.uri().clone());
        let parts = self.parts.clone();
        let called = {
            let _entered = span.enter();
            tracing::debug!("started processing request");
            std::panic::catch_unwind(AssertUnwindSafe(|| self.inner.call(req)))
        };
        let answered = async move {
            let outcome = match called {
                Ok(future) => AssertUnwindSafe(tokio::time::timeout(parts.request_timeout, future)).catch_unwind().await,
                Err(panic) => Err(panic),
            };
            let response = match outcome {
                Ok(Ok(Ok(response))) => envelope_stray(response, &method, &uri),
                Ok(Ok(Err(infallible))) => match infallible {},
                Ok(Err(_elapsed)) => past_deadline(parts.request_timeout),
                Err(panic) => panic_response(panic),
            };
            let mut response = encoding::negotiate(response, gzip);
            parts.cors.decorate(origin.as_ref(), response.headers_mut());
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
            let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
            RouteMetrics::record(&parts.metrics, &method, route, response.status(), elapsed);
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

/// A route's request metrics: `fm_http_requests_total` by method, route (the matched pattern,
/// `/v1/markets/{id}`; `unmatched` for unknown paths, so clients cannot multiply the series) and
/// status, and `fm_http_request_duration_seconds` by method and route.
///
/// An edge stands before one endpoint, so its requests share a method and a route: their handles
/// are made on the first request (a registry look-up by labels) and kept, a counter for each
/// status the API answers. A request of another method or route than the first (a method
/// router's fallback answers several methods), or of another status, is counted through the
/// registry.
#[derive(Debug)]
struct RouteMetrics {
    method: Method,
    route: String,
    duration: Histogram,
    /// The counter of each of `STATUSES`, made on its first request.
    by_status: [OnceLock<Counter>; STATUSES.len()],
}

/// The statuses whose counters a route keeps: those the API answers.
const STATUSES: [u16; 14] = [200, 201, 202, 204, 304, 400, 401, 403, 404, 409, 413, 422, 429, 500];

impl RouteMetrics {
    fn record(kept: &OnceLock<RouteMetrics>, method: &Method, route: &str, status: StatusCode, elapsed: Duration) {
        let kept = kept.get_or_init(|| RouteMetrics {
            method: method.clone(),
            route: route.to_owned(),
            duration: duration(method, route),
            by_status: Default::default(),
        });
        if kept.method != method || kept.route != route {
            duration(method, route).record(elapsed.as_secs_f64());
            requests(method, route, status).increment(1);
            return;
        }
        kept.duration.record(elapsed.as_secs_f64());
        match STATUSES.iter().position(|&s| s == status.as_u16()) {
            Some(i) => kept.by_status[i].get_or_init(|| requests(method, route, status)).increment(1),
            None => requests(method, route, status).increment(1),
        }
    }
}

/// The registry's latency histogram of `method` requests of `route`.
fn duration(method: &Method, route: &str) -> Histogram {
    metrics::histogram!("fm_http_request_duration_seconds", "method" => method.as_str().to_owned(), "route" => route.to_owned())
}

/// The registry's counter of `method` requests of `route` answered `status`.
fn requests(method: &Method, route: &str, status: StatusCode) -> Counter {
    metrics::counter!("fm_http_requests_total", "method" => method.as_str().to_owned(), "route" => route.to_owned(), "status" => status.as_str().to_owned())
}

/// What a request still running after the deadline answers.
fn past_deadline(limit: Duration) -> Response {
    tracing::error!(timeout_ms = limit.as_millis() as u64, "request timed out");
    let message = format!("the request did not complete within {} ms", limit.as_millis());
    error_response(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL_ERROR", message)
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

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::extract::Path;
    use axum::routing::get;
    use tower::ServiceExt;

    use super::*;

    /// The count a rendered metrics page gives `series` (0 when it has none).
    fn count(shown: &str, series: &str) -> u64 {
        shown.lines().find_map(|line| line.strip_prefix(series)?.trim().parse::<f64>().ok()).unwrap_or(0.0) as u64
    }

    #[test]
    fn requests_are_counted_by_method_route_and_status() {
        // A recorder of the test's own, for this thread: the requests run on it.
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let shown = metrics::with_local_recorder(&recorder, || {
            tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(requests());
            recorder.handle().render()
        });
        let requests =
            |method: &str, status: u16| count(&shown, &format!(r#"fm_http_requests_total{{method="{method}",route="/edge-test/{{id}}",status="{status}"}}"#));
        assert_eq!((requests("GET", 200), requests("GET", 404), requests("GET", 400)), (2, 1, 1), "{shown}");
        assert_eq!((requests("POST", 400), requests("PUT", 400)), (1, 2), "{shown}");
        assert_eq!(requests("OPTIONS", 200), 0, "a preflight reaches no route: {shown}");
        let timed = |method: &str| count(&shown, &format!(r#"fm_http_request_duration_seconds_count{{method="{method}",route="/edge-test/{{id}}"}}"#));
        assert_eq!((timed("GET"), timed("POST"), timed("PUT")), (4, 1, 2), "{shown}");
    }

    async fn requests() {
        let routes = Router::new().route(
            "/edge-test/{id}",
            get(|Path(id): Path<u32>| async move {
                match id {
                    0 => StatusCode::NOT_FOUND,
                    7 => StatusCode::IM_A_TEAPOT,
                    _ => StatusCode::OK,
                }
            }),
        );
        // `with_state` makes each route once, as serving does: its edge, and the handles it
        // keeps, then serve every request.
        let app = apply(routes, Duration::from_secs(5), None).with_state(());
        // The first request of the GET endpoint's edge makes its handles; a status of its own
        // (404) and one outside those kept (418, enveloped as 400) are counted too; the method
        // router's fallback answers POST and PUT (400 `INVALID_INPUT`) behind an edge of its own.
        for (method, path, status) in [
            (Method::GET, "/edge-test/1", 200),
            (Method::GET, "/edge-test/2", 200),
            (Method::GET, "/edge-test/0", 404),
            (Method::GET, "/edge-test/7", 400),
            (Method::POST, "/edge-test/1", 400),
            (Method::PUT, "/edge-test/1", 400),
            (Method::PUT, "/edge-test/2", 400),
            (Method::OPTIONS, "/edge-test/2", 200),
        ] {
            let request = Request::builder().method(method.clone()).uri(path).body(Body::empty()).unwrap();
            let response = app.clone().oneshot(request).await.unwrap();
            assert_eq!(response.status().as_u16(), status, "{method} {path}");
        }
    }
}
