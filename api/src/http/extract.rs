//! axum's extractors with their rejections turned into `INVALID_INPUT` envelopes, so a
//! malformed body, query string or path parameter gets the contract's error, never axum's
//! plain-text one.
//!
//! They also refuse NUL characters anywhere in what they extract: Postgres `text` cannot hold
//! one, so a NUL that reached a query would fail it (a 500 for a client's input).

use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use serde::de::DeserializeOwned;

use super::error::ApiError;
use crate::domain::market::Side;
use crate::domain::money;

/// A JSON body (`Content-Type: application/json`).
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json(req.headers()) {
            return Err(ApiError::InvalidInput("Expected request with `Content-Type: application/json`".into()));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| ApiError::InvalidInput(rejection.body_text()))?;
        json_body(&bytes).map(ApiJson)
    }
}

/// A query string.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        refuse_encoded_nul("query string", parts.uri.query().unwrap_or(""))?;
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
        refuse_encoded_nul("path", parts.uri.path())?;
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
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| ApiError::InvalidInput(rejection.body_text()))?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(ApiJsonOrEmpty(T::default()));
        }
        json_body(&bytes).map(ApiJsonOrEmpty)
    }
}

/// `Content-Type: application/json` (or `application/<x>+json`), parameters allowed, as
/// axum's `Json` accepts it.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else { return false };
    let essence = value.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    essence.strip_prefix("application/").is_some_and(|subtype| subtype == "json" || subtype.ends_with("+json"))
}

/// A JSON body as `T`, deserialized once from its bytes, with the path of the field at fault in
/// the message ("keys.auth: invalid type: …", as axum's `Json` says it); refused if any string
/// in it holds a NUL.
fn json_body<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    refuse_json_nul(bytes)?;
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| ApiError::InvalidInput(format!("invalid JSON body: {e}")))?;
    deserializer.end().map_err(|e| ApiError::InvalidInput(format!("invalid JSON body: {e}")))?;
    Ok(value)
}

/// Refuses a JSON text with a NUL in any string. JSON can carry one only as the escape `\u0000`
/// (raw control characters are invalid), so the bytes are scanned for that escape — a
/// backslash that is not itself escaped, i.e. ending an odd run of backslashes.
pub fn refuse_json_nul(bytes: &[u8]) -> Result<(), ApiError> {
    let mut backslashes = 0usize;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\\' {
            backslashes += 1;
            continue;
        }
        if b == b'u' && backslashes % 2 == 1 && bytes.get(i + 1..i + 5) == Some(b"0000") {
            return Err(ApiError::InvalidInput("the body must not contain NUL (\\u0000) characters".into()));
        }
        backslashes = 0;
    }
    Ok(())
}

/// Refuses a URI part carrying a percent-encoded NUL (a raw one cannot be in a URI).
fn refuse_encoded_nul(part: &str, raw: &str) -> Result<(), ApiError> {
    let bytes = raw.as_bytes();
    let nul = bytes.windows(3).any(|w| w[0] == b'%' && w[1] == b'0' && w[2] == b'0');
    if nul { Err(ApiError::InvalidInput(format!("the {part} must not contain NUL (%00) characters"))) } else { Ok(()) }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_is_found_only_as_an_escape() {
        for nul in [r#"{"a":"\u0000"}"#, r#"{"a\u0000":1}"#, r#"["x\\\u0000"]"#] {
            assert!(refuse_json_nul(nul.as_bytes()).is_err(), "{nul}");
        }
        // An escaped backslash followed by the text u0000, and look-alikes, are not NULs.
        for fine in [r#"{"a":"\\u0000"}"#, r#"{"a":"u0000"}"#, r#"{"a":"\u0001"}"#, r#"{"a":"\n"}"#] {
            assert!(refuse_json_nul(fine.as_bytes()).is_ok(), "{fine}");
        }
    }

    #[test]
    fn json_content_types() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, v.parse().unwrap());
            is_json(&h)
        };
        assert!(with("application/json") && with("application/json; charset=utf-8") && with("Application/JSON") && with("application/merge-patch+json"));
        assert!(!with("text/plain") && !with("application/jsonx") && !with("application/x-www-form-urlencoded"));
        assert!(!is_json(&HeaderMap::new()));
    }
}
