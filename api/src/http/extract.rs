//! axum's extractors with their rejections turned into `INVALID_INPUT` envelopes, so a
//! malformed body, query string or path parameter gets the contract's error, never axum's
//! plain-text one.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::Json;
use serde::de::DeserializeOwned;

use super::error::ApiError;
use crate::domain::market::Side;
use crate::domain::money;

/// A JSON body (`Content-Type: application/json`).
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        Json::<T>::from_request(req, state)
            .await
            .map(|Json(v)| ApiJson(v))
            .map_err(|rejection: JsonRejection| ApiError::InvalidInput(rejection.body_text()))
    }
}

/// A query string.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(v)| ApiQuery(v))
            .map_err(|rejection: QueryRejection| ApiError::InvalidInput(rejection.body_text()))
    }
}

/// Path parameters.
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(v)| ApiPath(v))
            .map_err(|rejection: PathRejection| ApiError::InvalidInput(rejection.body_text()))
    }
}

/// A JSON body that may also be absent (no body at all means `T::default()`), for endpoints
/// whose contract sends no body but which accept optional fields.
pub struct ApiJsonOrEmpty<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for ApiJsonOrEmpty<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|rejection| ApiError::InvalidInput(rejection.body_text()))?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(ApiJsonOrEmpty(T::default()));
        }
        serde_json::from_slice(&bytes)
            .map(ApiJsonOrEmpty)
            .map_err(|e| ApiError::InvalidInput(format!("invalid JSON body: {e}")))
    }
}

/// `yes` or `no`, or `INVALID_INPUT` naming the field.
pub fn side(s: &str) -> Result<Side, ApiError> {
    Side::parse(s).ok_or_else(|| ApiError::InvalidInput(format!("side must be yes or no, got {s:?}")))
}

/// One of a fixed set of names (a `status`, an `exchange` filter), or `INVALID_INPUT` naming the
/// field and listing every name it may take.
pub fn one_of<T: Copy>(field: &str, value: &str, all: &[T], name: fn(T) -> &'static str) -> Result<T, ApiError> {
    all.iter().copied().find(|t| name(*t) == value).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|t| name(*t)).collect();
        ApiError::InvalidInput(format!("{field} must be one of {}, got {value:?}", names.join(", ")))
    })
}

/// A positive amount with at most six decimals, in millionths, or `INVALID_INPUT` naming the
/// field.
pub fn amount(field: &str, value: &str) -> Result<u64, ApiError> {
    money::parse_micros(value).map_err(|e| ApiError::InvalidInput(format!("{field} {e}")))
}
