//! The funding-rate prediction markets API: axum `/v1` routes, their middleware, and the
//! handles to Postgres and Redis they run on.
//!
//! Layout: `config` (environment), `envelope` + `error` (the `{data, meta, error}` contract),
//! `extract` (extractors whose rejections are envelope errors), `middleware` (request ids,
//! tracing, timeouts, panics), `db` and `cache` (Postgres pool and migrations, Redis
//! connection), `auth` (sign-in, tokens, API keys, anti-replay), `ratelimit`, `users`,
//! `routes` (one module per resource), `startup` (wiring and serving).

pub mod auth;
pub mod cache;
pub mod config;
pub mod cosign;
pub mod db;
pub mod envelope;
pub mod error;
pub mod exchanges;
pub mod markets;
pub mod extract;
pub mod idempotency;
pub mod middleware;
pub mod onchain;
pub mod portfolio;
pub mod money;
pub mod prior;
pub mod ratelimit;
pub mod routes;
pub mod startup;
pub mod state;
pub mod telemetry;
pub mod users;

pub use config::Config;
pub use error::ApiError;
pub use state::AppState;
