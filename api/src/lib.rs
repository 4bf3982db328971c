//! The funding-rate prediction markets service: the `/v1` HTTP API, its background workers and
//! the transactions it sends, in layers with one direction of dependency:
//!
//! ```text
//! app/        config, state, start-up by role, telemetry          (wires everything)
//! http/       router, envelope, errors, extractors, middleware, rate limits, one module per resource
//! workers/    supervisor, singleton locks, one module per background job
//! services/   use cases (trading, wallet flow, sign-in, markets, users, settlement), ServiceError
//! chain/      transactions the service signs and sends, the co-sign check, typed chain errors
//! exchanges/  venue adapters speaking Binance, Bybit, OKX and Hyperliquid's formats
//! store/      all SQL (one module per table family) and the Redis connection
//! domain/     pure types and rules: money, rates, Side, MarketStatus, quotes, prior, portfolio
//! ```
//!
//! http and workers → services → {store, chain, exchanges, domain}; domain depends on nothing
//! in the crate (`tests/api/layers.rs` checks the rules that can be checked by reading).

pub mod app;
pub mod chain;
pub mod domain;
pub mod exchanges;
pub mod http;
pub mod operator;
pub mod services;
pub mod store;
pub mod workers;

pub use app::config::Config;
pub use app::state::AppState;
pub use http::error::ApiError;

/// Every binary of the service (the server, the operator command, the benchmarks, the tests)
/// allocates with mimalloc: under load glibc's malloc serialised the request threads on its
/// arena locks.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
