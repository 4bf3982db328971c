//! The route table: `/health` at the root, everything else under `/v1`, all behind the
//! authentication and rate-limit middleware (which exempts `/health`), and the embedded
//! chain's `/rpc` behind a rate limit of its own.

mod api_keys;
mod auth;
mod crowd;
mod dev_rpc;
mod docs;
mod health;
mod intervals;
pub mod leaderboard;
pub mod markets;
mod money;
mod push;
pub mod series;
mod trading;
mod users;
mod wallet_flow;
pub mod ws;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use utoipa::OpenApi;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;

use super::AppState;
use super::error::ApiError;
use super::extract::one_of;
use super::openapi::{self, ApiDoc};
use super::ratelimit::LimitLayer;
use crate::domain::exchange::Exchange;
use crate::domain::market_data::PerpFilter;

/// The largest `/v1` request body: every contract body is a few hundred bytes (a co-sign's
/// transaction under 2 KB).
pub const BODY_BYTES: usize = 64 * 1024;

/// The largest deposit-webhook delivery: a provider batches up to 100 enhanced transactions.
pub const WEBHOOK_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Longest symbol search accepted (venue symbols are at most ~20 characters).
const MAX_SEARCH: usize = 32;

/// The `exchange` and `search` filters of the market-data listings.
fn market_filter(exchange: Option<&str>, search: Option<&str>) -> Result<PerpFilter, ApiError> {
    let exchange = exchange.map(|e| one_of("exchange", e, &Exchange::ALL, Exchange::id)).transpose()?;
    let search = match search.map(str::trim) {
        Some(s) if s.chars().count() > MAX_SEARCH => return Err(ApiError::InvalidInput(format!("search must be at most {MAX_SEARCH} characters"))),
        Some("") | None => None,
        Some(s) => Some(s.to_owned()),
    };
    Ok(PerpFilter { exchange: exchange.map(|e| e.id().to_owned()), search })
}

/// The route table and its OpenAPI document, built together: each `routes!` adds a handler's
/// route and its `#[utoipa::path]` description.
pub fn router(state: AppState) -> Router {
    let (router, _) = documented(state);
    router
}

/// The routes and the document describing them (served at `/v1/openapi.json`).
pub fn documented(state: AppState) -> (Router, utoipa::openapi::OpenApi) {
    // Market-data responses are kept in memory while the data holds (`kept_responses`).
    let kept = from_fn_with_state(state.clone(), crate::http::kept_responses::keep_market_data);
    let document = docs::Document::default();
    // The `/v1` routes carry their whole path rather than being nested under `/v1`: a nested
    // route strips the prefix from every request's URI before its handler sees it.
    let v1 = OpenApiRouter::new()
        .routes(routes!(auth::challenge))
        .routes(routes!(auth::verify))
        .routes(routes!(api_keys::create, api_keys::list))
        .routes(routes!(api_keys::revoke))
        .routes(routes!(users::me, users::update_me))
        .routes(routes!(users::positions))
        .routes(routes!(users::history))
        .routes(routes!(users::overview))
        .routes(routes!(leaderboard::leaderboard))
        .routes(routes!(intervals::changes).layer(kept.clone()))
        .routes(routes!(intervals::stats).layer(kept.clone()))
        .routes(routes!(intervals::threaded).layer(kept.clone()))
        .routes(routes!(intervals::detail).layer(kept.clone()))
        .routes(routes!(intervals::analysis).layer(kept.clone()))
        .routes(routes!(crowd::leaderboard).layer(kept.clone()))
        .routes(routes!(crowd::summary).layer(kept.clone()))
        .routes(routes!(crowd::detail).layer(kept))
        .routes(routes!(series::list))
        .routes(routes!(series::get))
        .routes(routes!(series::rounds))
        .routes(routes!(markets::list))
        .routes(routes!(markets::get))
        .routes(routes!(markets::trades))
        .routes(routes!(markets::quote))
        .routes(routes!(markets::prices))
        .routes(routes!(markets::resolution))
        .routes(routes!(markets::series_quote))
        .routes(routes!(trading::buy))
        .routes(routes!(trading::sell))
        .routes(routes!(trading::deposit_address))
        .routes(routes!(trading::balance))
        .routes(routes!(trading::faucet))
        .routes(routes!(money::deposits))
        .routes(routes!(money::withdraw))
        .routes(routes!(money::withdrawals))
        .routes(routes!(money::withdrawal))
        .routes(routes!(wallet_flow::ensure_onchain))
        .routes(routes!(wallet_flow::co_sign))
        .routes(routes!(wallet_flow::confirm))
        .routes(routes!(push::subscribe))
        .routes(routes!(push::unsubscribe))
        .routes(routes!(push::vapid_public_key))
        .routes(routes!(ws::upgrade))
        .routes(routes!(docs::openapi_json).layer(axum::Extension(document.clone())))
        .layer(DefaultBodyLimit::max(BODY_BYTES))
        .routes(routes!(money::deposit_webhook).layer(DefaultBodyLimit::max(WEBHOOK_BODY_BYTES)));
    let (router, mut spec) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(health::health))
        .merge(v1)
        .routes(routes!(dev_rpc::rpc).layer(DefaultBodyLimit::max(dev_rpc::MAX_BODY_BYTES)))
        .split_for_parts();
    // The frame's modifier ran before the paths were added: run it again over them.
    utoipa::Modify::modify(&openapi::Shared, &mut spec);
    let json = axum::body::Bytes::from(spec.to_json().expect("the OpenAPI document serializes"));
    document.0.set(json).expect("the document is set once");
    let router = router
        .route("/docs", axum::routing::get(docs::page))
        .route("/docs/{asset}", axum::routing::get(docs::asset))
        .layer(LimitLayer(state.clone()))
        .with_state(state);
    (router, spec)
}
