//! Cross-origin access for browser front ends (the Fetch standard's CORS protocol): which origins
//! may call, the preflight's answer, and the headers every other answer carries. The edge
//! (`middleware::Edge`) applies it, first of all it does, so every route's preflight is answered
//! before authentication and rate limits see the request.
//!
//! Any origin by default (`Access-Control-Allow-Origin: *`): safe for this API, which
//! authenticates with bearer tokens and keys, never cookies, so no credentials mode is offered.
//! With a list (exact `scheme://host[:port]`), an answer names the request's `Origin` when the
//! list holds it, and allows none otherwise. A request without `Origin` (not a browser's
//! cross-origin one) gets only the `Vary`. Every header value is made once, when the router is
//! built; a request only clones them.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Response, header};

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
    super::middleware::REQUEST_ID,
];

/// The methods a preflight allows.
const ALLOWED_METHODS: [Method; 5] = [Method::GET, Method::POST, Method::PATCH, Method::DELETE, Method::OPTIONS];

/// How long a browser may cache a preflight's answer (seconds).
const MAX_AGE_SECS: u32 = 600;

/// The request headers a preflight's answer depends on besides its path: the origin, and the
/// method and headers it asks for (caches must not give one origin's answer to another).
const PREFLIGHT_VARY: HeaderValue = HeaderValue::from_static("origin, access-control-request-method, access-control-request-headers");

/// What any other answer's CORS headers depend on: the request's `Origin` (named or absent).
const ANSWER_VARY: HeaderValue = HeaderValue::from_static("origin");

/// The service's CORS policy, its header values made once.
#[derive(Clone, Debug)]
pub struct Cors(Arc<Policy>);

#[derive(Debug)]
struct Policy {
    /// The origins allowed; `None`: any.
    origins: Option<Vec<HeaderValue>>,
    allow_methods: HeaderValue,
    allow_headers: HeaderValue,
    expose_headers: HeaderValue,
    max_age: HeaderValue,
}

impl Cors {
    /// `origins` (exact `scheme://host[:port]`; entries that are not header values are left
    /// out), or any origin when `None`.
    pub fn new(origins: Option<&[String]>) -> Cors {
        Cors(Arc::new(Policy {
            origins: origins.map(|list| list.iter().filter_map(|o| HeaderValue::from_str(o).ok()).collect()),
            allow_methods: joined(ALLOWED_METHODS.iter().map(Method::as_str)),
            allow_headers: joined(ALLOWED_HEADERS.iter().map(HeaderName::as_str)),
            expose_headers: joined(EXPOSED_HEADERS.iter().map(HeaderName::as_str)),
            max_age: HeaderValue::from(MAX_AGE_SECS),
        }))
    }

    /// The `Access-Control-Allow-Origin` value for a request from `origin`, if it is a
    /// cross-origin request (it has one) from an allowed origin.
    fn allowed_for(&self, origin: Option<&HeaderValue>) -> Option<HeaderValue> {
        let origin = origin?;
        match &self.0.origins {
            None => Some(HeaderValue::from_static("*")),
            Some(list) => list.contains(origin).then(|| origin.clone()),
        }
    }

    /// The answer to a preflight (any `OPTIONS` request): 200 with an empty body, the methods
    /// and headers allowed, and how long to keep them; the origin allowed, as for any answer,
    /// when the request names one. It reaches no route.
    pub fn preflight(&self, request: &HeaderMap) -> Response<Body> {
        let mut response = Response::new(Body::empty());
        let headers = response.headers_mut();
        headers.insert(header::VARY, PREFLIGHT_VARY);
        if let Some(origin) = self.allowed_for(request.get(header::ORIGIN)) {
            headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        }
        headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, self.0.allow_methods.clone());
        headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, self.0.allow_headers.clone());
        headers.insert(header::ACCESS_CONTROL_MAX_AGE, self.0.max_age.clone());
        response
    }

    /// Adds to an answer (not a preflight's) that it varies by `Origin` (after any `Vary` of its
    /// own) and, for a cross-origin request from an allowed origin, the origin allowed to read it
    /// and the headers it may read. A request without `Origin` is not a cross-origin one (a
    /// browser sends it on every such request): bots, SDKs and servers get no `Access-Control-*`
    /// header, and `Vary` keeps caches from giving their answer to a page.
    pub fn decorate(&self, origin: Option<&HeaderValue>, response: &mut HeaderMap) {
        response.append(header::VARY, ANSWER_VARY);
        if let Some(origin) = self.allowed_for(origin) {
            response.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            response.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, self.0.expose_headers.clone());
        }
    }
}

/// Header names or methods as one comma-separated value.
fn joined<'a>(names: impl Iterator<Item = &'a str>) -> HeaderValue {
    HeaderValue::from_str(&names.collect::<Vec<_>>().join(",")).expect("header names and methods are header values")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(value: &'static str) -> HeaderValue {
        HeaderValue::from_static(value)
    }

    #[test]
    fn any_origin_by_default() {
        let cors = Cors::new(None);
        let mut headers = HeaderMap::new();
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
        cors.decorate(Some(&origin("https://anywhere.example")), &mut headers);
        assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        let vary: Vec<_> = headers.get_all(header::VARY).iter().collect();
        assert_eq!(vary, ["accept-encoding", "origin"], "the answer's own Vary is kept");
        let exposed = headers[header::ACCESS_CONTROL_EXPOSE_HEADERS].to_str().unwrap();
        assert_eq!(exposed, "x-ratelimit-limit,x-ratelimit-remaining,x-ratelimit-reset,retry-after,x-request-id");
        // Not a cross-origin request: no Access-Control header, but the Vary all the same.
        let mut headers = HeaderMap::new();
        cors.decorate(None, &mut headers);
        assert!(!headers.contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN) && !headers.contains_key(header::ACCESS_CONTROL_EXPOSE_HEADERS));
        assert_eq!(headers[header::VARY], "origin");
    }

    #[test]
    fn a_listed_origin_is_named_and_others_are_not_allowed() {
        let cors = Cors::new(Some(&["https://app.example.com".into(), "bad\nvalue".into()]));
        let mut headers = HeaderMap::new();
        cors.decorate(Some(&origin("https://app.example.com")), &mut headers);
        assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "https://app.example.com");
        for other in [Some(origin("https://evil.example.com")), Some(origin("https://app.example.com:8443")), None] {
            let mut headers = HeaderMap::new();
            cors.decorate(other.as_ref(), &mut headers);
            assert!(!headers.contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN), "{other:?}");
            assert_eq!(headers[header::VARY], "origin");
        }
    }

    #[test]
    fn a_preflight_lists_what_is_allowed() {
        let mut request = HeaderMap::new();
        request.insert(header::ORIGIN, origin("http://localhost:5173"));
        let response = Cors::new(Some(&["http://localhost:5173".into()])).preflight(&request);
        let headers = response.headers();
        assert_eq!(response.status(), 200);
        assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "http://localhost:5173");
        assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_METHODS], "GET,POST,PATCH,DELETE,OPTIONS");
        assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_HEADERS], "authorization,content-type,x-api-key,x-request-nonce,x-request-timestamp,idempotency-key");
        assert_eq!(headers[header::ACCESS_CONTROL_MAX_AGE], "600");
        assert_eq!(headers[header::VARY], PREFLIGHT_VARY);
    }
}
