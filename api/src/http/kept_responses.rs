//! Market-data responses kept in memory (`GET /v1/intervals…` and `GET /v1/crowd…`): a
//! successful response is kept with the market data's version it was read at
//! (`services::market_data::version`), and the same request — path and query — gets the same
//! bytes while that version holds, for at most `MAX_AGE`: the endpoints' windows ("the last 24
//! hours", "the last 90 days") move with the clock, not only with the collectors. Requests are
//! authenticated, counted and limited before this layer, so a kept response costs its caller
//! what a read one does.
//!
//! A response read while a change commits was read at the older version, which the change's
//! notice ends: it is never served after the notice arrives.

use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::encoding::Compressible;
use super::envelope::Rendered;
use super::error::ApiError;
use super::rendered::RenderedPages;
use crate::services::market_data;

/// How long a response is served at most, even if the data did not change.
pub const MAX_AGE: Duration = Duration::from_secs(10);

/// The market-data responses kept, by path and query.
pub type KeptResponses = RenderedPages<String>;

/// The store the layer keeps them in.
pub fn kept_responses() -> KeptResponses {
    RenderedPages::with_max_age(MAX_AGE)
}

/// The layer over the market-data routes.
pub async fn keep_market_data(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let version = match *request.method() {
        Method::GET => market_data::version(&state.services),
        _ => None,
    };
    let Some(version) = version else { return next.run(request).await };
    let key = request.uri().path_and_query().map_or_else(|| request.uri().path().to_owned(), |pq| pq.as_str().to_owned());
    if let Some(body) = state.market_data_responses.get(&key, version) {
        return Rendered(body).into_response();
    }
    let response = next.run(request).await;
    // What is kept is answered as an enveloped JSON 200 (`Rendered`): only such are kept.
    let json = response.headers().get(header::CONTENT_TYPE).is_some_and(|t| t == "application/json");
    if response.status() != StatusCode::OK || !json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(body) => body,
        Err(e) => return ApiError::internal(format_args!("reading a market-data response: {e}")).into_response(),
    };
    let kept = state.market_data_responses.put(key, version, body);
    let mut response = Response::from_parts(parts, Body::from(kept.identity()));
    response.extensions_mut().insert(Compressible(kept));
    response
}
