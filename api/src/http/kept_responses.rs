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

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::error::ApiError;
use crate::services::market_data;

/// How long a response is served at most, even if the data did not change.
pub const MAX_AGE: Duration = Duration::from_secs(10);
/// Bytes of responses kept at most; past it the map starts over. Bounded by size, not count:
/// a month of one perp's crowd history is 230 KB, and a client can ask for thousands of them.
const CAPACITY_BYTES: usize = 32 << 20;

#[derive(Default)]
pub struct KeptResponses(Mutex<Held>);

#[derive(Default)]
struct Held {
    responses: HashMap<String, Kept>,
    /// The kept bodies' bytes.
    bytes: usize,
}

struct Kept {
    version: u64,
    at: Instant,
    headers: HeaderMap,
    body: Bytes,
}

impl KeptResponses {
    fn get(&self, key: &str, version: u64) -> Option<Response> {
        let held = self.0.lock().unwrap();
        let kept = held.responses.get(key).filter(|k| k.version == version && k.at.elapsed() < MAX_AGE)?;
        let mut response = Response::new(Body::from(kept.body.clone()));
        *response.headers_mut() = kept.headers.clone();
        Some(response)
    }

    fn put(&self, key: String, version: u64, headers: HeaderMap, body: Bytes) {
        let mut held = self.0.lock().unwrap();
        if held.bytes + body.len() > CAPACITY_BYTES {
            held.responses.clear();
            held.bytes = 0;
        }
        held.bytes += body.len();
        if let Some(replaced) = held.responses.insert(key, Kept { version, at: Instant::now(), headers, body }) {
            held.bytes -= replaced.body.len();
        }
    }
}

/// The layer over the market-data routes.
pub async fn keep_market_data(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let version = match *request.method() {
        Method::GET => market_data::version(&state.services),
        _ => None,
    };
    let Some(version) = version else { return next.run(request).await };
    let key = request.uri().path_and_query().map_or_else(|| request.uri().path().to_owned(), |pq| pq.as_str().to_owned());
    if let Some(kept) = state.market_data_responses.get(&key, version) {
        return kept;
    }
    let response = next.run(request).await;
    if response.status() != StatusCode::OK {
        return response;
    }
    let (parts, body) = response.into_parts();
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(body) => body,
        Err(e) => return ApiError::internal(format_args!("reading a market-data response: {e}")).into_response(),
    };
    state.market_data_responses.put(key, version, parts.headers.clone(), body.clone());
    Response::from_parts(parts, Body::from(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_bytes_stay_under_the_capacity_and_the_latest_is_served() {
        let kept = KeptResponses::default();
        let month = Bytes::from(vec![b'x'; 230_000]);
        for i in 0..1_000 {
            kept.put(format!("/v1/crowd/binance/S{i:04}USDT?hours=720"), 7, HeaderMap::new(), month.clone());
            let held = kept.0.lock().unwrap();
            assert!(held.bytes <= CAPACITY_BYTES, "{} bytes kept after {i}", held.bytes);
            assert_eq!(held.bytes, held.responses.values().map(|k| k.body.len()).sum::<usize>());
        }
        assert!(kept.get("/v1/crowd/binance/S0999USDT?hours=720", 7).is_some());
        assert!(kept.get("/v1/crowd/binance/S0999USDT?hours=720", 8).is_none(), "another version is not served");
        // Replacing a response counts its bytes once.
        kept.put("/v1/crowd/binance/S0999USDT?hours=720".into(), 8, HeaderMap::new(), month.clone());
        let held = kept.0.lock().unwrap();
        assert_eq!(held.bytes, held.responses.values().map(|k| k.body.len()).sum::<usize>());
    }
}
