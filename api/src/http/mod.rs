//! The HTTP edge: the route table, the envelope and error mapping, extractors, middleware,
//! rate limits, authentication of requests, and one module per resource in `routes` (each
//! parses, calls one service, and shapes the contract's fields). No SQL and no business rule
//! here: handlers reach Postgres, Redis and the chain only through `services`.

pub mod auth;
pub mod cors;
pub mod encoding;
pub mod envelope;
pub mod error;
pub mod extract;
pub mod idempotency;
pub mod kept_responses;
pub mod middleware;
pub mod openapi;
pub mod page;
pub mod ratelimit;
pub mod rendered;
pub mod routes;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;

use crate::services::Services;

/// What a layer of ours (the edge, the limiter) answers a request with: one boxed future, the
/// route's under it, never an error (errors are responses).
pub type ResponseFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Result<axum::response::Response, std::convert::Infallible>> + Send>>;

/// What the HTTP layer needs of the configuration.
#[derive(Clone, Debug)]
pub struct HttpSettings {
    /// A request still running after this answers 500.
    pub request_timeout: Duration,
    /// How long `/health` waits for each component.
    pub health_timeout: Duration,
    /// Requests per minute per IP without credentials.
    pub rate_public_per_min: u32,
    /// Per minute per API key (per user for tokens).
    pub rate_auth_per_min: u32,
    /// Trading requests per second per user.
    pub rate_trade_per_sec: u32,
    /// `/rpc` requests per second per client IP.
    pub rate_rpc_per_sec: u32,
    /// How often this replica's rate-limit counts are reconciled with Redis.
    pub rate_sync_every: Duration,
    /// Proxies (address ranges) whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// The `Authorization` value deposit webhooks must carry (`None`: every delivery refused).
    pub deposit_webhook_auth: Option<String>,
    /// Origins browser front ends may call from (`None`: any).
    pub cors_origins: Option<Vec<String>>,
}

/// What every handler can reach (`AppParts`), behind one `Arc`: axum clones the state for
/// every request and every middleware that takes it, and a clone of the parts themselves was
/// some twenty reference counts to increment and decrement again, shared by every core.
#[derive(Clone)]
pub struct AppState(Arc<AppParts>);

impl std::ops::Deref for AppState {
    type Target = AppParts;

    fn deref(&self) -> &AppParts {
        &self.0
    }
}

impl From<AppParts> for AppState {
    fn from(parts: AppParts) -> AppState {
        AppState(Arc::new(parts))
    }
}

impl AppState {
    /// The parts, to change before serving (cloned if another handle to them exists).
    pub fn into_parts(self) -> AppParts {
        Arc::unwrap_or_clone(self.0)
    }
}

/// The use cases and the HTTP settings.
#[derive(Clone)]
pub struct AppParts {
    pub services: Services,
    pub http: Arc<HttpSettings>,
    /// This replica's WebSocket subscriptions.
    pub ws: Arc<routes::ws::hub::Hub>,
    /// Market listing pages already rendered, by the market rows' version.
    pub market_pages: Arc<rendered::RenderedPages<routes::markets::PageKey>>,
    /// Markets, quotes, markets' trades and prices already rendered, each by its market's
    /// version, and series' rounds, each by its series' (`MarketBody::version`).
    pub market_bodies: Arc<rendered::RenderedPages<routes::markets::MarketBody>>,
    /// Series listing pages and cards already rendered, by the cards' version.
    pub series_pages: Arc<rendered::RenderedPages<routes::series::SeriesBody>>,
    /// Leaderboard pages already rendered, by the rankings' version.
    pub leaderboard_pages: Arc<rendered::RenderedPages<routes::leaderboard::BoardKey>>,
    /// Market-data responses already read, by the market data's version.
    pub market_data_responses: Arc<kept_responses::KeptResponses>,
    /// This replica's rate-limit counts, reconciled with Redis in batches.
    pub limits: Arc<crate::services::rate_counts::WindowCounts>,
}

/// The whole HTTP application for `state`: routes behind the service's middleware.
pub fn app(state: AppState) -> Router {
    let timeout = state.http.request_timeout;
    let origins = state.http.cors_origins.clone();
    middleware::apply(routes::router(state), timeout, origins.as_deref())
}
