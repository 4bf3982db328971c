//! The response envelope of the contract: every body is `{data, meta, error}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::encoding::Compressible;
use super::rendered::KeptBody;

/// Pagination and similar facts about `data`; `{}` when nothing applies.
#[derive(Debug, Default, Serialize, utoipa::ToSchema)]
pub struct Meta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
}

/// The error member of the envelope.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// The contract's code: `INVALID_INPUT`, `UNAUTHORIZED`, `NOT_FOUND`, `RATE_LIMITED`, …
    #[schema(value_type = String, pattern = "^[A-Z_]+$")]
    pub code: &'static str,
    pub message: String,
    /// The HTTP status, repeated.
    #[schema(minimum = 400, maximum = 599)]
    pub status: u16,
}

#[derive(Debug, Serialize)]
struct Envelope<T> {
    data: Option<T>,
    meta: Meta,
    error: Option<ErrorBody>,
}

/// Marks a response whose body is already an envelope, so the last-resort middleware leaves
/// it alone (see `middleware::envelope_stray_errors`).
#[derive(Clone, Copy, Debug)]
pub struct Enveloped;

/// A successful response: `data` set, `error` null.
pub struct Data<T>(pub StatusCode, pub T, pub Meta);

impl<T: Serialize> Data<T> {
    pub fn new(data: T) -> Self {
        Data(StatusCode::OK, data, Meta::default())
    }

    /// A page of a list, with its pagination facts.
    pub fn paged(data: T, meta: Meta) -> Self {
        Data(StatusCode::OK, data, meta)
    }
}

/// The envelope borrowed, to render a body without consuming it.
#[derive(Serialize)]
struct EnvelopeRef<'a, T> {
    data: Option<&'a T>,
    meta: &'a Meta,
    error: Option<()>,
}

impl<T: Serialize> Data<T> {
    /// The body this answers with (status 200 bodies kept to be answered again).
    pub fn body(&self) -> axum::body::Bytes {
        let Data(_, data, meta) = self;
        serde_json::to_vec(&EnvelopeRef { data: Some(data), meta, error: None }).expect("an envelope serializes").into()
    }
}

/// A 200 answered with an envelope rendered before (`Data::body`) and kept: answered gzip-
/// compressed to a client that takes it (`encoding`).
pub struct Rendered(pub KeptBody);

impl IntoResponse for Rendered {
    fn into_response(self) -> Response {
        let Rendered(kept) = self;
        let mut response = with_marker(([(axum::http::header::CONTENT_TYPE, "application/json")], kept.identity()).into_response());
        response.extensions_mut().insert(Compressible(kept));
        response
    }
}

impl<T: Serialize> IntoResponse for Data<T> {
    fn into_response(self) -> Response {
        let Data(status, data, meta) = self;
        with_marker((status, Json(Envelope { data: Some(data), meta, error: None })).into_response())
    }
}

/// An error response: `data` null, `error` set.
pub fn error_response(status: StatusCode, code: &'static str, message: String) -> Response {
    let body = Envelope::<()> { data: None, meta: Meta::default(), error: Some(ErrorBody { code, message, status: status.as_u16() }) };
    with_marker((status, Json(body)).into_response())
}

fn with_marker(mut response: Response) -> Response {
    response.extensions_mut().insert(Enveloped);
    response
}

/// A whole envelope as JSON, for responses stored and answered again (idempotent requests).
pub fn stored(status: StatusCode, envelope: serde_json::Value) -> Response {
    with_marker((status, Json(envelope)).into_response())
}

/// The envelope of a successful response, as JSON.
pub fn data_json<T: Serialize>(data: &T) -> serde_json::Value {
    serde_json::json!({"data": data, "meta": {}, "error": null})
}

/// The envelope of an error response, as JSON.
pub fn error_json(status: StatusCode, code: &str, message: &str) -> serde_json::Value {
    serde_json::json!({"data": null, "meta": {}, "error": {"code": code, "message": message, "status": status.as_u16()}})
}
