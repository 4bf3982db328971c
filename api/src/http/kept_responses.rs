//! Market-data responses kept in memory (`GET /v1/intervals…` and `GET /v1/crowd…`): a
//! successful response is kept with the market data's version it was read at
//! (`services::market_data::current`), and the same request — path and query — gets the same
//! bytes while that version holds, for at most `MAX_AGE`: the endpoints' windows ("the last 24
//! hours", "the last 90 days") move with the clock, not only with the collectors. Requests are
//! authenticated, counted and limited before this layer, so a kept response costs its caller
//! what a read one does.
//!
//! A response read while a change commits was read at the older version, which the change's
//! notice ends: it is never served after the notice arrives.
//!
//! A page (path and query) is read by one request at a time (`RenderedPages::get_or_render`):
//! after a change, the requests for it are answered the page before the change while the first
//! one reads it, within `READ_GRACE`, or wait for that read and take its bytes, instead of each
//! reading Postgres. An answer that is not kept (an error, a 404) is each request's own, read
//! in turn with the others of its path and query.

use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::envelope::Rendered;
use super::error::ApiError;
use super::rendered::RenderedPages;
use crate::services::market_data;

/// How long a response is served at most, even if the data did not change.
pub const MAX_AGE: Duration = Duration::from_secs(10);

/// How long after a request last found a page current the page before a change is answered
/// while the change is read. A collector's reading tells where a venue stood at its sweep, not
/// at the request, so a page one read behind tells a client nothing less; waiting costs every
/// request for the page the read, and the largest page (a month of a perp's history) reads
/// thousands of rows. A read that outlasts this is waited for.
pub const READ_GRACE: Duration = Duration::from_millis(250);

/// The market-data responses kept, by path and query.
pub type KeptResponses = RenderedPages<String>;

/// The store the layer keeps them in.
pub fn kept_responses() -> KeptResponses {
    RenderedPages::with_max_age(MAX_AGE).with_render_grace(READ_GRACE)
}

/// The layer over the market-data routes.
pub async fn keep_market_data(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if request.method() != Method::GET {
        return next.run(request).await;
    }
    // Taken before the read: a change the read misses moves it, so its answer is never served.
    let current = market_data::current(&state.services);
    let key = request.uri().path_and_query().map_or_else(|| request.uri().path().to_owned(), |pq| pq.as_str().to_owned());
    // An answer that is not kept comes back as the error, to be answered as it is.
    let render = async {
        let response = next.run(request).await;
        // What is kept is answered as an enveloped JSON 200 (`Rendered`): only such are kept.
        let json = response.headers().get(header::CONTENT_TYPE).is_some_and(|t| t == "application/json");
        if response.status() != StatusCode::OK || !json {
            return Err(response);
        }
        match axum::body::to_bytes(response.into_body(), usize::MAX).await {
            Ok(body) => Ok((body, current.version)),
            Err(e) => Err(ApiError::internal(format_args!("reading a market-data response: {e}")).into_response()),
        }
    };
    match state.market_data_responses.get_or_render(key, current, render).await {
        Ok(kept) => Rendered(kept).into_response(),
        Err(response) => response,
    }
}
