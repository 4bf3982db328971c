//! The route table: `/health` at the root, everything else under `/v1`, all behind the
//! authentication and rate-limit middleware (which exempts `/health`), and the embedded
//! chain's `/rpc` behind a rate limit of its own.

mod api_keys;
mod auth;
mod crowd;
mod dev_rpc;
mod health;
mod intervals;
mod leaderboard;
mod markets;
mod money;
mod push;
mod series;
mod trading;
mod users;
mod wallet_flow;
pub mod ws;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use axum::routing::{delete, get, post};

use super::AppState;
use super::error::ApiError;
use super::extract::one_of;
use crate::domain::exchange::Exchange;
use crate::domain::market_data::PerpFilter;
use super::ratelimit::authenticate_and_limit;

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

pub fn router(state: AppState) -> Router {
    let v1 = Router::new()
        .route("/auth/challenge", post(auth::challenge))
        .route("/auth/verify", post(auth::verify))
        .route("/api-keys", post(api_keys::create).get(api_keys::list))
        .route("/api-keys/{id}", delete(api_keys::revoke))
        .route("/users/me", get(users::me).patch(users::update_me))
        .route("/users/me/positions", get(users::positions))
        .route("/users/me/history", get(users::history))
        .route("/portfolio", get(users::overview))
        .route("/leaderboard", get(leaderboard::leaderboard))
        .route("/intervals", get(intervals::changes))
        .route("/intervals/stats", get(intervals::stats))
        .route("/intervals/threaded", get(intervals::threaded))
        .route("/intervals/{exchange}/{symbol}", get(intervals::detail))
        .route("/intervals/{exchange}/{symbol}/analysis", get(intervals::analysis))
        .route("/crowd/leaderboard", get(crowd::leaderboard))
        .route("/crowd/summary", get(crowd::summary))
        .route("/crowd/{exchange}/{symbol}", get(crowd::detail))
        .route("/series", get(series::list))
        .route("/series/{slug}", get(series::get))
        .route("/series/{slug}/rounds", get(series::rounds))
        .route("/markets", get(markets::list))
        .route("/markets/{id}", get(markets::get))
        .route("/markets/{id}/trades", get(markets::trades))
        .route("/markets/{id}/quote", get(markets::quote))
        .route("/markets/{id}/prices", get(markets::prices))
        .route("/markets/{id}/resolution", get(markets::resolution))
        .route("/quote", get(markets::series_quote))
        .route("/markets/{id}/trade", post(trading::buy))
        .route("/markets/{id}/sell", post(trading::sell))
        .route("/deposit/address", get(trading::deposit_address))
        .route("/users/me/balance", get(trading::balance))
        .route("/dev/faucet", post(trading::faucet))
        .route("/deposits", get(money::deposits))
        .route("/webhooks/deposits", post(money::deposit_webhook).layer(DefaultBodyLimit::max(WEBHOOK_BODY_BYTES)))
        .route("/withdraw", post(money::withdraw))
        .route("/withdrawals", get(money::withdrawals))
        .route("/withdrawals/{id}", get(money::withdrawal))
        .route("/markets/{id}/ensure-onchain", get(wallet_flow::ensure_onchain))
        .route("/markets/{id}/co-sign", post(wallet_flow::co_sign))
        .route("/trade/confirm", post(wallet_flow::confirm))
        .route("/push/subscribe", post(push::subscribe))
        .route("/push/unsubscribe", post(push::unsubscribe))
        .route("/push/vapid-public-key", get(push::vapid_public_key))
        .route("/ws", get(ws::upgrade))
        .layer(DefaultBodyLimit::max(BODY_BYTES));
    Router::new()
        .route("/health", get(health::health))
        .nest("/v1", v1)
        .route("/rpc", post(dev_rpc::rpc).layer(DefaultBodyLimit::max(dev_rpc::MAX_BODY_BYTES)))
        .layer(from_fn_with_state(state.clone(), authenticate_and_limit))
        .with_state(state)
}
